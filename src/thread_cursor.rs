//! `ThreadCursorArena`: the write-up's fix for a shared cursor, a private
//! non-atomic cursor per thread inside a chunk.
//!
//! **Contract.** Thread-safe (`Send + Sync`); any thread allocates through
//! `&self`. Allocations share one lifetime: individual frees are no-ops, and
//! the memory comes back with [`reset`](ThreadCursorArena::reset) (`&mut
//! self`) or when the arena is dropped. Several arenas may be alive at once,
//! on any number of threads.
//!
//! **Fast path** ([`alloc`](ThreadCursorArena::alloc)). One thread-local
//! access (the thread's cursor slot for this arena), a compare of the slot's
//! owner with the arena's id, a compare of the request against the room left
//! in the chunk (which also refuses zero and oversized requests), and a
//! plain add. No atomic read-modify-write, no call. On x86-64 the access is
//! `fs:`-relative when the code is compiled as a position-independent
//! executable (`__tls_get_addr` in a PIC library's `.s`); on arm64 Linux it
//! is `TPIDR_EL0` (TLSDESC in PIC); on macOS it is a call through
//! `@TLVPPAGE`. The arena holds no interior mutability itself (the backing
//! arena is boxed), so in a caller's loop the compiler loads the arena's id
//! and slot once, not on every allocation: the bench's loop is 13
//! instructions on x86-64 with three loads (the slot's owner, cursor and
//! end) and one store, where it was 15 with five.
//!
//! **The handle** ([`local`](ThreadCursorArena::local)). A thread that
//! allocates many times can hold its cursor as a [`LocalCursor`]: its
//! `alloc` is the same compare and add without the thread-local lookup and
//! the owner compare, on the handle's two words (11 instructions on
//! x86-64, a tail call to the refill). It takes over the thread's chunk of
//! the arena and gives its own back to the slot when dropped. In a caller's
//! loop the two words stay in the handle, not in registers: the refill's
//! call takes the handle and may change them, so each allocation loads
//! both and stores the cursor (on the caller's stack, in L1). A refill that
//! returned the new chunk by value instead let the loop keep them in
//! registers, but it is no longer a tail call, and the fast path then sets
//! up a frame on five profiles (arm64 12 → 19 instructions, 4 of them
//! stack accesses), so the handle keeps the tail call.
//!
//! **Slow path** (`refill`, `#[cold] #[inline(never)]`). Takes a new chunk
//! (default 4 KiB, [`ThreadCursorConfig::chunk_size`]) from a backing
//! [`PackedArena`]: ONE shared atomic per refill, the backing cursor's
//! `fetch_add`. The statistics a refill updates (chunks, tails) are counted
//! in the refilling thread's own thread-local account and added to the
//! arena's shared counters once, when the thread exits. Requests above half
//! a chunk go to the backing arena directly, so they do not strand a chunk.
//!
//! **Thread-local layout.** Each thread has `SLOTS` (8) cursor slots in a
//! const-initialised thread-local without `Drop` (so the fast path carries no
//! lazy-registration check); an arena uses slot `id % 8`, and the slot
//! records which arena (by a never-reused id) its chunk belongs to. A
//! second, `Drop`-carrying thread-local, touched only by refills, holds one
//! account per arena the thread used: a weak reference to the arena's shared
//! statistics (cloned once per thread and arena, not per refill), the
//! thread's counts, and a *parked* chunk. Arenas whose ids collide modulo 8
//! take turns in the slot: the one that takes the slot parks the other's
//! chunk in that arena's account, and the other gets it back on its next
//! refill, so alternating between two colliding arenas costs a refill call
//! per switch and no memory (before parking, every switch burned a fresh
//! chunk). A thread's exit credits the unused tails (in the slot and
//! parked) to each arena's [`exited_tail_bytes`](ThreadCursorStats::exited_tail_bytes)
//! when its thread-local destructors run (`JoinHandle::join` waits for
//! them, the implicit join at the end of `std::thread::scope` does not).
//!
//! **Costs.** Per thread and arena in use: up to one chunk of slack, and
//! one account (a few words) until the thread exits or, for a dropped
//! arena, until the thread next meets a new arena. Unused tails are never
//! silently lost: they are counted in
//! [`wasted_bytes`](ThreadCursorArena::wasted_bytes) (refill tails, tails of
//! exited threads). [`stats`](ThreadCursorArena::stats) sees the counts of
//! exited threads and of the calling thread; a live thread's counts reach
//! other threads when it exits. The backing arena reserves `max_blocks * block_size` bytes of address space
//! (128 MiB by default). Failure modes: [`AllocError::ZeroSize`],
//! [`AllocError::TooLarge`] (`size > block_size`),
//! [`AllocError::OutOfMemory`] (the backing arena's blocks are all in use),
//! [`AllocError::Os`]; a bad [`ThreadCursorConfig`] is
//! [`AllocError::InvalidConfig`] naming its field.

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::sync::{Arc, Weak};

use crossbeam_utils::CachePadded;

use crate::packed::{Attempt, DrainPolicy, PackedConfig, RELAXED, Refusal};
use crate::sync::{AtomicU64, Ordering};
use crate::{AllocError, PackedArena, align_up};

/// Number of cursor slots per thread.
const SLOTS: usize = 8;
/// Alignment of every allocation and of every chunk boundary.
const GRAIN: usize = 16;

/// Arena ids: never reused, so a stale slot can never match a live arena.
/// Zero means "empty slot". A plain std atomic: it is a static (loom's
/// atomics cannot be), and no protocol depends on its ordering.
static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

/// One per-thread cursor: `ptr..end` is this thread's unused part of a chunk
/// of the arena with id `owner`. Invariant: `ptr <= end`, both 16-aligned,
/// when `owner != 0`.
struct Cursor {
    owner: Cell<u64>,
    ptr: Cell<*mut u8>,
    end: Cell<*mut u8>,
}

impl Cursor {
    const fn empty() -> Cursor {
        Cursor {
            owner: Cell::new(0),
            ptr: Cell::new(core::ptr::null_mut()),
            end: Cell::new(core::ptr::null_mut()),
        }
    }

    fn room(&self) -> usize {
        self.end.get().addr().wrapping_sub(self.ptr.get().addr())
    }
}

/// Statistics shared between an arena and the threads that used it. Threads
/// add to it only when they exit (and the arena's own thread reads its
/// account directly), so no refill touches this line.
#[derive(Debug)]
struct Shared {
    /// The arena's current id (changes on reset).
    id: AtomicU64,
    chunks: AtomicU64,
    direct: AtomicU64,
    refill_tail: AtomicU64,
    exited_tail: AtomicU64,
}

/// One thread's dealings with one arena (generation `id`): its counts since
/// the thread first refilled from that generation, and the chunk it parked
/// when a colliding arena took its slot.
struct Account {
    /// Weak: a dropped arena's account is recognisable (no strong count)
    /// and dropped when the thread next creates an account.
    shared: Weak<CachePadded<Shared>>,
    /// The arena generation the counts and the parked chunk belong to.
    id: u64,
    chunks: u64,
    refill_tail: u64,
    /// `ptr..end` of a chunk of generation `id` that a colliding arena
    /// displaced from the slot (empty when `ptr == end`).
    parked: (*mut u8, *mut u8),
}

impl Account {
    fn parked_room(&self) -> usize {
        self.parked.1.addr().wrapping_sub(self.parked.0.addr())
    }
}

/// The thread's accounts. Touched only by refills, `stats` and the thread's
/// exit, which adds every account's counts and unused tails to its arena.
struct Owners {
    accounts: Vec<Account>,
}

impl Drop for Owners {
    fn drop(&mut self) {
        // CURSORS has no destructor, so it is still accessible here.
        let _ = CURSORS.try_with(|cursors| {
            for acc in self.accounts.drain(..) {
                let mut tail = acc.parked_room() as u64;
                for c in cursors.iter().filter(|c| c.owner.get() == acc.id) {
                    tail += c.room() as u64;
                    c.owner.set(0);
                }
                // A dropped arena is gone; a reset one started over (this
                // generation's counts are void).
                let Some(s) = acc.shared.upgrade() else {
                    continue;
                };
                if s.id.load(Ordering::Relaxed) == acc.id {
                    s.chunks.fetch_add(acc.chunks, Ordering::Relaxed);
                    s.refill_tail.fetch_add(acc.refill_tail, Ordering::Relaxed);
                    s.exited_tail.fetch_add(tail, Ordering::Relaxed);
                }
            }
        });
    }
}

std::thread_local! {
    /// Why this thread's last refill failed (set just before it returns
    /// `None`; read by `alloc` right after). No destructor, never lazy.
    static LAST_REFUSAL: Cell<Refusal> = const { Cell::new(Refusal::OUT_OF_MEMORY) };
    static CURSORS: [Cursor; SLOTS] = const { [const { Cursor::empty() }; SLOTS] };
    static OWNERS: RefCell<Owners> = const { RefCell::new(Owners { accounts: Vec::new() }) };
}

/// Construction parameters of a [`ThreadCursorArena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadCursorConfig {
    /// Bytes a thread takes from the shared word at a time: a power of two,
    /// at least 16, at most `block_size`. Default 4 KiB.
    pub chunk_size: usize,
    /// Block size of the backing [`PackedArena`]; also the largest request.
    /// Default 1 MiB.
    pub block_size: usize,
    /// Blocks of the backing arena (1..=128). Default 128.
    pub max_blocks: usize,
}

impl Default for ThreadCursorConfig {
    fn default() -> Self {
        ThreadCursorConfig {
            chunk_size: 4096,
            block_size: 1 << 20,
            max_blocks: 128,
        }
    }
}

/// Statistics of a [`ThreadCursorArena`] since creation or the last reset:
/// the counts of threads that exited, plus the calling thread's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadCursorStats {
    /// Chunks taken from the shared word (one atomic add each).
    pub chunks: u64,
    /// Large requests served by the backing arena directly.
    pub direct: u64,
    /// Unused chunk tails left behind when a thread refilled.
    pub refill_tail_bytes: u64,
    /// Unused chunk tails (in the slot or parked) of threads that exited.
    pub exited_tail_bytes: u64,
}

/// A bump arena with a private, non-atomic cursor per thread inside a chunk
/// (default 4 KiB); only a refill touches the shared word (one `fetch_add`
/// of a backing [`PackedArena`] per chunk, and no other shared atomic). The
/// fast path is one thread-local access, a compare of the arena id, a
/// compare of the room left, and an add. Several arenas may be alive at
/// once; arenas that share a slot park each other's chunks instead of
/// dropping them. Chunk tails left by refills and by exiting threads are
/// counted in [`wasted_bytes`](ThreadCursorArena::wasted_bytes). Frees are
/// no-ops; [`reset`](ThreadCursorArena::reset) frees everything. `Send + Sync`.
///
/// **Contract.** A block lives until [`reset`](ThreadCursorArena::reset)
/// (`&mut self`) or the arena's drop; any thread may allocate through a
/// shared reference, and blocks may be used on any thread. Requests above
/// half a chunk go to the backing arena directly (counted in
/// [`stats`](ThreadCursorArena::stats)`().direct`); above the backing
/// arena's block size they are `TooLarge`.
///
/// ```
/// use allocasm::ThreadCursorArena;
/// use allocasm::allocator_api2::vec::Vec;
///
/// let mut arena = ThreadCursorArena::new().unwrap();
/// std::thread::scope(|s| {
///     for t in 0..4u32 {
///         let arena = &arena;
///         s.spawn(move || {
///             let mut v = Vec::new_in(arena);
///             v.extend(0..1000 * t);
///             assert_eq!(v.len(), 1000 * t as usize);
///         });
///     }
/// });
/// let p = arena.alloc(24).unwrap();
/// assert!(arena.owns(p.as_ptr()));
/// arena.reset(); // `&mut`: no block is borrowed any more
/// ```
#[repr(C)]
pub struct ThreadCursorArena {
    /// What the fast path reads, on its own line (first, `repr(C)`), which
    /// nothing but `reset` (`&mut self`) writes.
    hot: CachePadded<Hot>,
    /// Where chunks come from: its cursor is the shared word. Boxed, so
    /// that the arena itself holds no interior mutability (`Freeze`): a
    /// `&ThreadCursorArena` argument is then `noalias readonly`, and a
    /// caller's loop keeps the id and the slot in registers instead of
    /// loading them on every allocation (the cursor's store might have
    /// written them, as far as the compiler could tell).
    backing: Box<PackedArena>,
    shared: Arc<CachePadded<Shared>>,
}

/// The arena holds no interior mutability itself (`Freeze`; see
/// `backing`): this fails to compile otherwise (a constant may not borrow a
/// temporary whose type could hold interior mutability). The compiler gives
/// a `&ThreadCursorArena` argument `noalias readonly` only then.
const _: &Option<ThreadCursorArena> = &none::<ThreadCursorArena>();

/// `None`, from a call: the compiler judges a call's result by its type.
const fn none<T>() -> Option<T> {
    None
}

/// `c`, addressed through a register: on x86-64 the thread's slot address
/// goes through an empty `asm!` (no instruction), so the slot's accesses
/// are `[reg + disp]` rather than `fs:`-relative with an index.
///
/// Measured in the bench's loop (`bump16`, loops aligned to 64 bytes so
/// that placement does not decide): 0.65 ns per allocation with
/// `fs:[base + slot + disp]` operands, 0.47-0.48 with the slot's address
/// computed once into a register (`mov fs:[0]`, two adds) and plain
/// operands. The allocation carries the cursor from its store to the next
/// allocation's load; that machine (an AMD EPYC) runs the chain faster with
/// the plain operand, for a reason not isolated. The probe pays one
/// instruction for it (x86_64-linux 16 → 17: the thread pointer is read
/// with its own `mov`); on the other x86-64 profiles, where the storage
/// comes from a call or `gs:`, the operands lose their index register at
/// the same count. Other targets reach it through a register already.
#[inline(always)]
fn in_register(c: &Cursor) -> &Cursor {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let mut addr = core::ptr::from_ref(c).expose_provenance();
        // SAFETY: a comment naming `addr`'s register: no instruction, so it
        // reads and writes nothing and leaves `addr` as it found it.
        unsafe {
            core::arch::asm!(
                "/* {0} */",
                inout(reg) addr,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        // SAFETY: `addr` is `c`'s address, whose provenance was exposed
        // just above: the same live `Cursor`.
        unsafe { &*core::ptr::with_exposed_provenance::<Cursor>(addr) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        c
    }
}

/// The fast path's read-only state of a [`ThreadCursorArena`].
#[derive(Debug)]
struct Hot {
    /// Unique id (never reused; replaced on reset). Read-only between resets.
    id: u64,
    /// This arena's slot in every thread's cursor table (`id % SLOTS` of
    /// the id it was created with) as its byte offset in the table, `slot *
    /// size_of::<Cursor>()`: the fast path adds it to the table's address
    /// with no mask, no bounds check and no multiply. Invariant: `slot <
    /// SLOTS`, so it is inside the table.
    slot_offset: usize,
    /// Bytes per chunk (power of two, multiple of 16).
    chunk_size: usize,
    /// Largest request (the backing arena's `M`).
    max_request: usize,
}

impl core::fmt::Debug for ThreadCursorArena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ThreadCursorArena")
            .field("id", &self.hot.id)
            .field("chunk_size", &self.hot.chunk_size)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl ThreadCursorArena {
    /// An arena with 4 KiB chunks from 1 MiB blocks (128 of them at most):
    /// 128 MiB of address space reserved.
    pub fn new() -> Result<Self, AllocError> {
        Self::with_config(ThreadCursorConfig::default())
    }

    /// An arena with the given configuration; refuses a chunk size that is
    /// not a power of two in `16..=block_size` ([`AllocError::InvalidConfig`]
    /// naming [`ConfigField::ChunkSize`](crate::ConfigField::ChunkSize)) and
    /// whatever [`PackedArena::with_config`] refuses (`block_size`,
    /// `max_blocks`). Reserves `max_blocks * max(block_size, page)` bytes.
    ///
    /// ```
    /// use allocasm::{AllocError, ConfigField, ThreadCursorArena, ThreadCursorConfig};
    /// let bad = ThreadCursorConfig { chunk_size: 1000, ..Default::default() };
    /// assert_eq!(
    ///     ThreadCursorArena::with_config(bad).err(),
    ///     Some(AllocError::InvalidConfig { field: ConfigField::ChunkSize, value: 1000 })
    /// );
    /// ```
    pub fn with_config(config: ThreadCursorConfig) -> Result<Self, AllocError> {
        let ThreadCursorConfig {
            chunk_size,
            block_size,
            max_blocks,
        } = config;
        if !chunk_size.is_power_of_two() || chunk_size < GRAIN || chunk_size > block_size {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::ChunkSize,
                value: chunk_size,
            });
        }
        let backing = PackedArena::with_config(PackedConfig {
            block_size,
            max_blocks,
            max_request: block_size,
            max_entrants: 1024,
            policy: DrainPolicy::Recycle,
        })?;
        let id = next_id();
        Ok(ThreadCursorArena {
            hot: CachePadded::new(Hot {
                id,
                slot_offset: id as usize % SLOTS * core::mem::size_of::<Cursor>(),
                chunk_size,
                max_request: block_size,
            }),
            backing: Box::new(backing),
            shared: Arc::new(CachePadded::new(Shared {
                id: AtomicU64::new(id),
                chunks: AtomicU64::new(0),
                direct: AtomicU64::new(0),
                refill_tail: AtomicU64::new(0),
                exited_tail: AtomicU64::new(0),
            })),
        })
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.hot.chunk_size
    }

    /// Bytes of address space the backing arena reserved.
    pub fn reserved_bytes(&self) -> usize {
        self.backing.reserved_bytes()
    }

    /// Allocates `size` bytes aligned to 16 from this thread's chunk: one
    /// thread-local access, a compare, an add.
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::TooLarge`] (`size`
    /// above the block size), [`AllocError::OutOfMemory`], [`AllocError::Os`].
    #[inline(always)]
    pub fn alloc(&self, size: usize) -> Result<NonNull<u8>, AllocError> {
        match self.attempt(size) {
            Some(p) => Ok(p),
            None => Err(self.refusal(size)),
        }
    }

    /// Why the fast path refused `size` bytes: from `size` itself, or the
    /// reason the refill left in this thread's `LAST_REFUSAL` (read only
    /// here, so a caller that only tests the pointer drops the read).
    #[inline(always)]
    fn refusal(&self, size: usize) -> AllocError {
        let why = if size == 0 {
            Refusal::ZERO_SIZE
        } else if size > self.hot.max_request {
            Refusal::TOO_LARGE
        } else {
            LAST_REFUSAL.get()
        };
        self.backing.describe(why, size)
    }

    /// This arena's cursor in a thread's table.
    #[inline(always)]
    fn cursor<'c>(&self, cursors: &'c [Cursor; SLOTS]) -> &'c Cursor {
        debug_assert!(
            self.hot
                .slot_offset
                .is_multiple_of(core::mem::size_of::<Cursor>())
                && self.hot.slot_offset < SLOTS * core::mem::size_of::<Cursor>()
        );
        // SAFETY: `slot_offset` is `slot * size_of::<Cursor>()` with
        // `slot < SLOTS` (set once, at construction): the start of one of
        // the table's cursors.
        unsafe { &*cursors.as_ptr().byte_add(self.hot.slot_offset) }
    }

    /// The fast path: the pointer, or `None` (the reason is then in
    /// `LAST_REFUSAL`, or follows from `size`).
    #[inline(always)]
    fn attempt(&self, size: usize) -> Option<NonNull<u8>> {
        let id = self.hot.id;
        let hit = CURSORS.with(|cursors| {
            let c = in_register(self.cursor(cursors));
            let ptr = c.ptr.get();
            // `size - 1 < room` refuses 0 and anything above the room left;
            // room is a multiple of 16, so the aligned size fits too.
            if c.owner.get() == id && size.wrapping_sub(1) < c.room() {
                debug_assert!(
                    ptr <= c.end.get() && ptr.addr().is_multiple_of(GRAIN),
                    "cursor {ptr:p} out of its chunk"
                );
                // SAFETY: `align_up(size, 16) <= room`, so the new cursor is
                // at most the chunk's end, in the same allocation.
                c.ptr.set(unsafe { ptr.add(align_up(size, GRAIN)) });
                // SAFETY: a cursor owned by a live arena is non-null.
                return Some(unsafe { NonNull::new_unchecked(ptr) });
            }
            None
        });
        match hit {
            Some(p) => Some(p),
            // Same arguments and result as the probe's: a tail call.
            None => self.refill(size),
        }
    }

    /// A chunk (or a direct allocation) from the backing arena.
    fn take(&self, size: usize) -> Attempt {
        // ORDERING: Relaxed, as the write-up's refill: a block is only
        // reused after `reset`, and `&mut self` orders every earlier access
        // before it; fresh blocks are published under the capacity lock.
        // SAFETY: the relaxed entry point's contract holds: nothing is ever
        // freed into the backing arena (frees are no-ops), so none of its
        // blocks is recycled before `reset`, which takes `&mut self`.
        unsafe { self.backing.alloc_raw::<RELAXED>(size) }
    }

    /// This thread's chunk for this arena is missing, parked by another
    /// arena, or too small: take the parked one back, or a new one (one
    /// shared `fetch_add`), or serve a large request directly.
    #[cold]
    #[inline(never)]
    ///
    /// Returns only the pointer, so that the fast path's call is a tail call
    /// (no frame on the fast path, even on Windows x64, where LLVM does not
    /// shrink-wrap); a refusal's reason goes to this thread's
    /// `LAST_REFUSAL`, which [`alloc`](Self::alloc) reads on its error path.
    fn refill(&self, size: usize) -> Option<NonNull<u8>> {
        let a = self.refill_attempt(size);
        if a.ptr.is_none() {
            LAST_REFUSAL.set(a.why);
        }
        a.ptr
    }

    fn refill_attempt(&self, size: usize) -> Attempt {
        self.refill_with(size, |owners, size| {
            // CURSORS has no destructor: accessible whenever OWNERS is.
            CURSORS.with(|cursors| self.refill_slot(self.cursor(cursors), owners, size))
        })
    }

    /// What every refill (the slot's and a [`LocalCursor`]'s) does around
    /// the chunk: refuse a zero or oversized request, serve one above half a
    /// chunk directly, else call `from_chunk` with this thread's accounts and
    /// the size rounded to 16; while the thread-locals are torn down, serve
    /// directly (a chunk whose tail could not be credited is not cached).
    #[inline(always)]
    fn refill_with(
        &self,
        size: usize,
        from_chunk: impl FnOnce(&RefCell<Owners>, usize) -> Attempt,
    ) -> Attempt {
        if size == 0 {
            return Attempt::refused(Refusal::ZERO_SIZE);
        }
        if size > self.hot.max_request {
            return Attempt::refused(Refusal::TOO_LARGE);
        }
        let size = align_up(size, GRAIN);
        let direct = || {
            self.shared.direct.fetch_add(1, Ordering::Relaxed);
            self.take(size)
        };
        if size > self.hot.chunk_size / 2 {
            // Rare by construction (a large request); not a refill.
            return direct();
        }
        OWNERS
            .try_with(|owners| from_chunk(owners, size))
            .unwrap_or_else(|_| direct())
    }

    /// [`refill`](Self::refill) with the thread's slot and accounts.
    fn refill_slot(&self, c: &Cursor, owners: &RefCell<Owners>, size: usize) -> Attempt {
        {
            let mut owners = owners.borrow_mut();
            let accounts = &mut owners.accounts;
            // The slot's current chunk: ours (exhausted for this request),
            // or another arena's, which is parked in its own account.
            let held = c.owner.get();
            let mut tail = 0;
            if held == self.hot.id {
                tail = c.room();
            } else if held != 0
                && let Some(other) = accounts.iter_mut().find(|a| a.id == held)
            {
                debug_assert_eq!(other.parked_room(), 0, "two chunks of one arena");
                other.parked = (c.ptr.get(), c.end.get());
            }
            c.owner.set(0);
            let acc = self.account(accounts);
            acc.refill_tail += tail as u64;
            let (ptr, end) = match self.next_chunk(acc, size) {
                Ok(chunk) => chunk,
                Err(refused) => return refused,
            };
            // SAFETY: `size <= end - ptr` (`next_chunk`'s promise).
            c.ptr.set(unsafe { ptr.add(size) });
            c.end.set(end);
            c.owner.set(self.hot.id);
            // SAFETY: a chunk pointer (or a parked one) is non-null.
            Attempt::ok(unsafe { NonNull::new_unchecked(ptr) })
        }
    }

    /// A chunk with room for `size` bytes (16-aligned, at most half a
    /// chunk) for the thread whose account is `acc`: the parked one if it
    /// has the room, else a new one from the backing arena (its one shared
    /// atomic). A parked chunk that is too small becomes a refill tail.
    /// `Ok((ptr, end))` with `size <= end - ptr`, or the backing arena's
    /// refusal.
    fn next_chunk(&self, acc: &mut Account, size: usize) -> Result<(*mut u8, *mut u8), Attempt> {
        debug_assert!(size <= self.hot.chunk_size / 2);
        let (ptr, end) = core::mem::replace(
            &mut acc.parked,
            (core::ptr::null_mut(), core::ptr::null_mut()),
        );
        if end.addr().wrapping_sub(ptr.addr()) >= size {
            return Ok((ptr, end));
        }
        acc.refill_tail += end.addr().wrapping_sub(ptr.addr()) as u64;
        let chunk = self.take(self.hot.chunk_size);
        let Some(chunk) = chunk.ptr else {
            return Err(chunk);
        };
        acc.chunks += 1;
        let chunk = chunk.as_ptr();
        // SAFETY: the chunk is `chunk_size` bytes.
        Ok((chunk, unsafe { chunk.add(self.hot.chunk_size) }))
    }

    /// This thread's account for this arena's current generation, created
    /// on first use (the one `Weak` clone per thread and arena). Creating
    /// one also drops the accounts of arenas that no longer exist.
    fn account<'a>(&self, accounts: &'a mut Vec<Account>) -> &'a mut Account {
        let i = match accounts
            .iter()
            .position(|a| Weak::as_ptr(&a.shared) == Arc::as_ptr(&self.shared))
        {
            Some(i) => i,
            None => {
                accounts.retain(|a| a.shared.strong_count() > 0);
                accounts.push(Account {
                    shared: Arc::downgrade(&self.shared),
                    id: self.hot.id,
                    chunks: 0,
                    refill_tail: 0,
                    parked: (core::ptr::null_mut(), core::ptr::null_mut()),
                });
                accounts.len() - 1
            }
        };
        let acc = &mut accounts[i];
        if acc.id != self.hot.id {
            // The arena was reset: the old generation's counts and chunk are void.
            acc.id = self.hot.id;
            acc.chunks = 0;
            acc.refill_tail = 0;
            acc.parked = (core::ptr::null_mut(), core::ptr::null_mut());
        }
        acc
    }

    /// This thread's cursor into the arena as a value the caller holds: a
    /// [`LocalCursor`]. Its [`alloc`](LocalCursor::alloc) is the same bump
    /// without the thread-local lookup and the owner compare, on the
    /// handle's own cursor and end (as a `bumpalo::Bump` the caller holds;
    /// see the module's notes on the handle). The handle takes over this
    /// thread's chunk of the arena, if the slot holds one, and gives its
    /// chunk back to the slot when dropped.
    ///
    /// ```
    /// use allocasm::ThreadCursorArena;
    /// let arena = ThreadCursorArena::new()?;
    /// let mut cursor = arena.local();
    /// let a = cursor.alloc(24)?;
    /// let b = cursor.alloc(8)?;
    /// assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 32); // 16-byte grains
    /// drop(cursor);
    /// // The chunk went back to this thread's slot: `alloc` goes on from it.
    /// assert_eq!(arena.alloc(1)?.as_ptr() as usize, b.as_ptr() as usize + 16);
    /// # Ok::<(), allocasm::AllocError>(())
    /// ```
    pub fn local(&self) -> LocalCursor<'_> {
        let id = self.hot.id;
        let (ptr, end) = CURSORS.with(|cursors| {
            let c = self.cursor(cursors);
            if c.owner.get() == id {
                c.owner.set(0);
                (c.ptr.get(), c.end.get())
            } else {
                (core::ptr::null_mut(), core::ptr::null_mut())
            }
        });
        LocalCursor {
            arena: self,
            ptr,
            end,
        }
    }

    /// A dropped [`LocalCursor`]'s chunk `ptr..end` (not empty) comes back
    /// to this thread. The thread keeps at most one chunk of an arena, in
    /// the slot or parked (a colliding arena's refill parks the slot's
    /// chunk, and there is room for one): of the handle's, the slot's and
    /// the parked one, the one with the most room stays, in the slot if the
    /// slot is free or this arena's, else parked. The others are counted
    /// as refill tails, or, while the thread-locals are torn down, the
    /// handle's as an exited thread's tail.
    fn give_back(&self, ptr: *mut u8, end: *mut u8) {
        fn room((p, e): (*mut u8, *mut u8)) -> usize {
            e.addr().wrapping_sub(p.addr())
        }
        let id = self.hot.id;
        let null = (core::ptr::null_mut(), core::ptr::null_mut());
        let kept = OWNERS.try_with(|owners| {
            CURSORS.with(|cursors| {
                let c = self.cursor(cursors);
                let mut owners = owners.borrow_mut();
                let acc = self.account(&mut owners.accounts);
                let (mut best, mut tail) = ((ptr, end), 0);
                let mut keep = |other: (*mut u8, *mut u8)| {
                    let lost = if room(other) > room(best) {
                        core::mem::replace(&mut best, other)
                    } else {
                        other
                    };
                    tail += room(lost);
                };
                if c.owner.get() == id {
                    keep((c.ptr.get(), c.end.get()));
                    c.owner.set(0);
                }
                keep(core::mem::replace(&mut acc.parked, null));
                if c.owner.get() == 0 {
                    c.ptr.set(best.0);
                    c.end.set(best.1);
                    c.owner.set(id);
                } else {
                    acc.parked = best;
                }
                acc.refill_tail += tail as u64;
            })
        });
        if kept.is_err() {
            self.shared
                .exited_tail
                .fetch_add(room((ptr, end)) as u64, Ordering::Relaxed);
        }
    }

    /// Resizes `ptr`'s block in place when it is the last one this
    /// thread's cursor handed out for this arena (its end, rounded to 16, is
    /// the cursor: any later block would have moved the cursor past it) and
    /// the new size fits the chunk; `None` otherwise (another thread's
    /// block, a direct allocation, a block that is not the last, a
    /// zero-size block: its pointer is dangling, not the arena's, as for
    /// [`LinearArena`](crate::LinearArena)'s).
    fn resize_last(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Option<NonNull<u8>> {
        if old.size() == 0 || !ptr.as_ptr().addr().is_multiple_of(new.align()) {
            return None;
        }
        let id = self.hot.id;
        CURSORS.with(|cursors| {
            let c = self.cursor(cursors);
            let cursor = c.ptr.get();
            let old_end = align_up(ptr.as_ptr().addr().checked_add(old.size())?, GRAIN);
            let new_end = align_up(ptr.as_ptr().addr().checked_add(new.size())?, GRAIN);
            if c.owner.get() != id || old_end != cursor.addr() || new_end > c.end.get().addr() {
                return None;
            }
            // The bytes between the two ends are this thread's: up to the
            // cursor they are the block's own, past it the chunk's unused
            // room, which no one else hands out. `with_addr` keeps the
            // cursor's provenance (the backing reservation).
            c.ptr.set(cursor.with_addr(new_end));
            Some(ptr)
        })
    }

    /// Whether `ptr` lies in one of the backing arena's blocks (O(blocks)).
    pub fn owns(&self, ptr: *const u8) -> bool {
        self.backing.owns(ptr)
    }

    /// Statistics since creation or the last reset: those of the threads
    /// that exited, plus the calling thread's own (another live thread's
    /// counts arrive when it exits).
    pub fn stats(&self) -> ThreadCursorStats {
        let s = &self.shared;
        let mut stats = ThreadCursorStats {
            chunks: s.chunks.load(Ordering::Relaxed),
            direct: s.direct.load(Ordering::Relaxed),
            refill_tail_bytes: s.refill_tail.load(Ordering::Relaxed),
            exited_tail_bytes: s.exited_tail.load(Ordering::Relaxed),
        };
        let _ = OWNERS.try_with(|owners| {
            let Ok(owners) = owners.try_borrow() else {
                return;
            };
            if let Some(acc) = owners.accounts.iter().find(|a| {
                Weak::as_ptr(&a.shared) == Arc::as_ptr(&self.shared) && a.id == self.hot.id
            }) {
                stats.chunks += acc.chunks;
                stats.refill_tail_bytes += acc.refill_tail;
            }
        });
        stats
    }

    /// Bytes of chunk tails that were left unused: refill tails and tails of
    /// exited threads. Tails still held by live threads are not included.
    pub fn wasted_bytes(&self) -> u64 {
        let s = self.stats();
        s.refill_tail_bytes + s.exited_tail_bytes
    }

    /// Frees everything at once. The arena takes a new id, so every thread's
    /// cached chunk of the old generation is ignored from now on; the
    /// statistics start over.
    ///
    /// # Panics
    ///
    /// As [`PackedArena::reset`].
    pub fn reset(&mut self) {
        self.backing.reset();
        self.hot.id = next_id();
        let s = &self.shared;
        s.id.store(self.hot.id, Ordering::Relaxed);
        for c in [&s.chunks, &s.direct, &s.refill_tail, &s.exited_tail] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// One thread's cursor into a [`ThreadCursorArena`], held by the caller
/// ([`ThreadCursorArena::local`]): `ptr..end` is the handle's own part of a
/// chunk. Its fast path is a compare of the request against the room left
/// and an add, on the handle's two words, with no thread-local access; a
/// refill is the arena's (one shared atomic per chunk, counted in this
/// thread's account). Frees are no-ops, as for the arena.
///
/// Borrows the arena, so the arena cannot be reset while a handle lives.
/// Not `Send`: dropping it hands its chunk back to the dropping thread's
/// slot, where only that thread's allocations find it.
pub struct LocalCursor<'a> {
    arena: &'a ThreadCursorArena,
    /// Next free byte of the handle's chunk (16-aligned), or null.
    ptr: *mut u8,
    /// End of the handle's chunk; `ptr <= end`, and both null when the
    /// handle holds no chunk.
    end: *mut u8,
}

impl core::fmt::Debug for LocalCursor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalCursor")
            .field("arena", &self.arena.hot.id)
            .field("room", &self.room())
            .finish()
    }
}

impl<'a> LocalCursor<'a> {
    /// The arena this handle allocates from.
    pub fn arena(&self) -> &'a ThreadCursorArena {
        self.arena
    }

    /// Bytes left in the handle's chunk (a multiple of 16).
    pub fn room(&self) -> usize {
        self.end.addr().wrapping_sub(self.ptr.addr())
    }

    /// Allocates `size` bytes aligned to 16: a compare and an add while the
    /// chunk has room, else a refill. The errors are
    /// [`ThreadCursorArena::alloc`]'s.
    #[inline(always)]
    pub fn alloc(&mut self, size: usize) -> Result<NonNull<u8>, AllocError> {
        let ptr = self.ptr;
        // `size - 1 < room` refuses 0 and anything above the room left;
        // room is a multiple of 16, so the aligned size fits too.
        if size.wrapping_sub(1) < self.room() {
            // SAFETY: `align_up(size, 16) <= room`: the new cursor is at
            // most the chunk's end, in the same allocation.
            self.ptr = unsafe { ptr.add(align_up(size, GRAIN)) };
            // SAFETY: a handle with room holds a chunk: non-null.
            return Ok(unsafe { NonNull::new_unchecked(ptr) });
        }
        match self.refill(size) {
            Some(p) => Ok(p),
            None => Err(self.arena.refusal(size)),
        }
    }

    /// The chunk has no room for `size`: the arena's refill (or a direct
    /// allocation, or a refusal whose reason goes to this thread's
    /// `LAST_REFUSAL`, as the arena's own refill does). Returns only the
    /// pointer, so the fast path's call is a tail call: no frame on the
    /// fast path on any target.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, size: usize) -> Option<NonNull<u8>> {
        let arena = self.arena;
        let a = arena.refill_with(size, |owners, grains| {
            let mut owners = owners.borrow_mut();
            let acc = arena.account(&mut owners.accounts);
            // The handle's chunk is given up: its tail is a refill tail.
            acc.refill_tail += self.room() as u64;
            let (ptr, end) = match arena.next_chunk(acc, grains) {
                Ok(chunk) => chunk,
                Err(refused) => {
                    (self.ptr, self.end) = (core::ptr::null_mut(), core::ptr::null_mut());
                    return refused;
                }
            };
            // SAFETY: `grains <= end - ptr` (`next_chunk`'s promise).
            self.ptr = unsafe { ptr.add(grains) };
            self.end = end;
            // SAFETY: a chunk pointer (or a parked one) is non-null.
            Attempt::ok(unsafe { NonNull::new_unchecked(ptr) })
        });
        if a.ptr.is_none() {
            LAST_REFUSAL.set(a.why);
        }
        a.ptr
    }

    /// Allocates for `layout`, any power-of-two alignment (as
    /// [`RawAllocator::allocate`](crate::RawAllocator::allocate) on the
    /// arena); alignments up to 16 cost nothing more than
    /// [`alloc`](Self::alloc).
    #[inline(always)]
    pub fn alloc_layout(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let max = self.arena.hot.max_request;
        over_aligned(layout, max, |n| self.alloc(n))
    }
}

/// `layout` from a 16-aligned bump `alloc` whose largest request is `max`:
/// a zero size is refused, an alignment above 16 reserves `align - 16`
/// bytes more and skips to the aligned address inside them.
#[inline(always)]
fn over_aligned(
    layout: Layout,
    max: usize,
    alloc: impl FnOnce(usize) -> Result<NonNull<u8>, AllocError>,
) -> Result<NonNull<u8>, AllocError> {
    if layout.size() == 0 {
        return Err(AllocError::ZeroSize);
    }
    let extra = layout.align().saturating_sub(GRAIN);
    let reserved = layout
        .size()
        .checked_add(extra)
        .ok_or(AllocError::TooLarge {
            requested: layout.size(),
            max,
        })?;
    let p = alloc(reserved)?;
    let skip = align_up(p.as_ptr().addr(), layout.align()) - p.as_ptr().addr();
    // SAFETY: `p` is 16-aligned, so `skip <= align - 16 = extra`, inside
    // the `size + extra` bytes just reserved.
    Ok(unsafe { p.add(skip) })
}

impl Drop for LocalCursor<'_> {
    fn drop(&mut self) {
        if self.room() != 0 {
            self.arena.give_back(self.ptr, self.end);
        }
    }
}

// SAFETY: a successful `allocate` hands out a block of the arena's current
// chunk, at least `layout.size()` bytes, aligned, owned by no other live block
// (each thread bumps its own cursor), valid until `reset`, which takes `&mut
// self`, or the arena is dropped.
crate::raw_allocator::bulk_raw_allocator! {
    /// Does nothing: memory comes back with `reset`.
    impl [] ThreadCursorArena {
        |a, layout| over_aligned(layout, a.hot.max_request, |n| a.alloc(n))
    }
}

// SAFETY: blocks stay valid until `reset` (needs `&mut`) or drop; `allocate`
// hands out disjoint ranges; deallocate is a no-op. `grow`/`shrink` resize
// this thread's last block in place (the cursor moves to its new end, and
// nothing was handed out beyond the cursor); any other block is moved on
// growth and kept where it is on a shrink.
crate::api04::allocator_api04! {
    impl [] &ThreadCursorArena { frees_in_bulk, resizes_last(|a| a) }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn small() -> ThreadCursorArena {
        ThreadCursorArena::with_config(ThreadCursorConfig {
            chunk_size: 1024,
            block_size: 16384,
            max_blocks: 4,
        })
        .unwrap()
    }

    /// The slot reached through a register is the slot itself (on x86-64
    /// through the empty `asm!`).
    #[test]
    fn the_slot_in_a_register_is_the_slot() {
        let c = Cursor::empty();
        assert!(core::ptr::eq(in_register(&c), &c));
    }

    /// A zero-size block is no block of the arena: `resize_last` must not
    /// grow one in place. Without the guard, a zero-size block whose
    /// (dangling) address fell inside the last block's 16-byte grain
    /// "ended" at the cursor and was grown over that block's tail.
    #[test]
    fn resize_last_refuses_a_zero_size_block() {
        let a = small();
        let last = a.alloc(16).unwrap();
        // SAFETY: 8 bytes into the 16-byte block just allocated.
        let inside = unsafe { last.add(8) };
        let zero = Layout::from_size_align(0, 8).unwrap();
        let grown = Layout::from_size_align(64, 8).unwrap();
        assert_eq!(
            a.resize_last(inside, zero, grown),
            None,
            "a zero-size block was grown over the last block's bytes"
        );
        // The last block itself still resizes in place.
        let l16 = Layout::from_size_align(16, 8).unwrap();
        assert_eq!(a.resize_last(last, l16, grown), Some(last));
    }

    #[test]
    fn hot_state_is_on_the_first_line() {
        use core::mem::{offset_of, size_of};
        assert_eq!(offset_of!(ThreadCursorArena, hot), 0);
        let line = size_of::<CachePadded<u8>>();
        assert!(size_of::<Hot>() <= line.min(64));
        assert!(offset_of!(ThreadCursorArena, backing) >= line);
        assert!(offset_of!(ThreadCursorArena, shared) >= line);
    }

    /// A refill's only shared atomic is the backing cursor's add: the
    /// statistics stay in the thread's account (the shared counters do not
    /// move until the thread exits) and the account is made once.
    #[test]
    fn a_refill_touches_no_shared_counter() {
        let a = small();
        for _ in 0..100 {
            a.alloc(400).unwrap(); // two per chunk: 50 refills
        }
        let s = &a.shared;
        assert_eq!(s.chunks.load(Ordering::Relaxed), 0);
        assert_eq!(s.refill_tail.load(Ordering::Relaxed), 0);
        assert_eq!(Arc::weak_count(&a.shared), 1, "one account for the thread");
        assert_eq!(Arc::strong_count(&a.shared), 1);
        assert_eq!(a.stats().chunks, 50);
        assert_eq!(a.stats().refill_tail_bytes, 49 * (1024 - 800));
    }

    /// Two arenas in the same slot, used alternately on one thread: each
    /// switch parks the other's chunk instead of burning a fresh one, so
    /// the chunks taken are what the bytes need (before parking, every
    /// allocation took a fresh chunk and 16 KiB * 4 of backing ran out
    /// after 64 of them).
    #[test]
    fn colliding_arenas_alternate_without_thrashing() {
        let a = small();
        let mut others = Vec::new();
        let b = loop {
            let b = small();
            if b.hot.slot_offset == a.hot.slot_offset {
                break b;
            }
            others.push(b);
        };
        drop(others);
        // 32 of the 64 chunks the backing holds; 4 under Miri (each switch
        // between the two arenas is the same code whatever the count).
        let n = if cfg!(miri) { 256 } else { 2_000 };
        for i in 0..n {
            let (x, y) = (a.alloc(16).unwrap(), b.alloc(16).unwrap());
            assert!(a.owns(x.as_ptr()) && b.owns(y.as_ptr()), "round {i}");
        }
        // 16-byte allocations, 64 per 1 KiB chunk.
        let need = (n as u64).div_ceil(64);
        for arena in [&a, &b] {
            let s = arena.stats();
            assert!(s.chunks <= need + 1, "{s:?}: {need} chunks needed");
            assert_eq!(s.refill_tail_bytes, 0, "{s:?}");
        }
    }

    /// A handle bumps 16-byte grains through its own chunk, refills like
    /// the arena (a chunk per refill, counted in the thread's account) and
    /// refuses what the arena refuses, with the same errors.
    #[test]
    fn a_local_cursor_bumps_refills_and_refuses_as_the_arena() {
        let a = small();
        let mut c = a.local();
        assert_eq!(c.room(), 0, "a fresh thread has no chunk");
        let x = c.alloc(24).unwrap();
        let y = c.alloc(1).unwrap();
        assert_eq!(y.as_ptr() as usize - x.as_ptr() as usize, 32);
        assert_eq!(c.room(), 1024 - 48);
        assert!(a.owns(x.as_ptr()) && x.as_ptr().addr().is_multiple_of(16));
        for _ in 0..100 {
            c.alloc(400).unwrap();
        }
        // 48 + 2 * 400 in the first chunk, then two 400s per chunk.
        assert_eq!(a.stats().chunks, 50);
        assert_eq!(a.stats().refill_tail_bytes, 49 * (1024 - 800) - 48);
        assert_eq!(c.alloc(0), a.alloc(0));
        assert_eq!(c.alloc(16385), a.alloc(16385));
        assert_eq!(
            c.alloc(16385),
            Err(AllocError::TooLarge {
                requested: 16385,
                max: 16384
            })
        );
        // Above half a chunk: served directly, the handle's chunk stays.
        let room = c.room();
        c.alloc(600).unwrap();
        assert_eq!((c.room(), a.stats().direct), (room, 1));
        let big = c
            .alloc_layout(Layout::from_size_align(8, 256).unwrap())
            .unwrap();
        assert!(big.as_ptr().addr().is_multiple_of(256));
    }

    /// Handles and `alloc` on two colliding arenas, handles made and dropped
    /// in between, on a thread that then exits: every byte of every chunk is
    /// handed out or counted as a tail, exactly (a chunk a handle held that
    /// went nowhere would break the sum).
    #[test]
    fn local_cursors_lose_no_chunk_bytes() {
        let roomy = || {
            ThreadCursorArena::with_config(ThreadCursorConfig {
                chunk_size: 1024,
                block_size: 1 << 16,
                max_blocks: 16,
            })
            .unwrap()
        };
        let a = roomy();
        let b = loop {
            let b = roomy();
            if b.hot.slot_offset == a.hot.slot_offset {
                break b;
            }
        };
        let handed = std::thread::scope(|s| {
            s.spawn(|| {
                let mut handed = [0u64; 2];
                let mut rng = 0x2545_F491_4F6C_DD1Du64;
                let mut handles: [Option<LocalCursor<'_>>; 2] = [None, None];
                // A few hundred random steps under Miri reach every branch.
                for _ in 0..if cfg!(miri) { 400 } else { 3000 } {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let which = (rng & 1) as usize;
                    let arena = [&a, &b][which];
                    let size = 1 + (rng >> 8) as usize % 300;
                    match (rng >> 4) % 8 {
                        0 => handles[which] = None,
                        1 => handles[which] = Some(arena.local()),
                        2..=4 => {
                            arena.alloc(size).unwrap();
                            handed[which] += align_up(size, GRAIN) as u64;
                        }
                        _ => {
                            let h = handles[which].get_or_insert_with(|| arena.local());
                            h.alloc(size).unwrap();
                            handed[which] += align_up(size, GRAIN) as u64;
                        }
                    }
                }
                handed
            })
            .join()
            .unwrap()
        });
        for (arena, handed) in [(&a, handed[0]), (&b, handed[1])] {
            let s = arena.stats();
            assert_eq!(
                s.chunks * 1024,
                handed + s.refill_tail_bytes + s.exited_tail_bytes,
                "{s:?}"
            );
            assert!(s.chunks > 0 && s.direct == 0, "{s:?}");
        }
    }

    /// A dropped handle's chunk goes back to the thread's slot, so `alloc`
    /// goes on where the handle stopped, and the next handle starts there.
    #[test]
    fn a_dropped_local_cursor_hands_its_chunk_to_the_slot() {
        let a = small();
        let x = a.alloc(16).unwrap();
        let mut c = a.local();
        let y = c.alloc(16).unwrap();
        assert_eq!(
            y.as_ptr(),
            x.as_ptr().wrapping_add(16),
            "took the slot's chunk"
        );
        drop(c);
        let z = a.alloc(16).unwrap();
        assert_eq!(z.as_ptr(), y.as_ptr().wrapping_add(16));
        let w = a.local().alloc(16).unwrap();
        assert_eq!(w.as_ptr(), z.as_ptr().wrapping_add(16));
        assert_eq!(a.stats().chunks, 1);
        assert_eq!(a.wasted_bytes(), 0);
    }
}
