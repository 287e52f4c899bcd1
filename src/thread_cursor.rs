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
//! `@TLVPPAGE`.
//!
//! **Slow path** (`refill`, `#[cold] #[inline(never)]`). Takes a new chunk
//! (default 4 KiB, [`ThreadCursorConfig::chunk_size`]) from a backing
//! [`PackedArena`]: one shared `fetch_add` per chunk. Requests above half a
//! chunk go to the backing arena directly, so they do not strand a chunk.
//!
//! **Thread-local layout.** Each thread has `SLOTS` (8) cursor slots in a
//! const-initialised thread-local without `Drop` (so the fast path carries no
//! lazy-registration check); an arena uses slot `id % 8`, and the slot
//! records which arena (by a never-reused id) its chunk belongs to. A
//! second, `Drop`-carrying thread-local, touched only by refills, holds a
//! reference to each slot's owner so that a thread's exit credits the unused
//! tail of its chunk to that arena's [`exited_tail_bytes`](ThreadCursorStats::exited_tail_bytes)
//! (when its thread-local destructors run: `JoinHandle::join` waits for
//! them, the implicit join at the end of `std::thread::scope` does not).
//! Arenas whose ids collide modulo 8 on one thread take turns in the slot;
//! each takeover credits the evicted tail to its owner's
//! [`evicted_tail_bytes`](ThreadCursorStats::evicted_tail_bytes).
//!
//! **Costs.** Per thread and arena in use: up to one chunk of slack.
//! Unused tails are never silently lost: they are counted in
//! [`wasted_bytes`](ThreadCursorArena::wasted_bytes) (refill tails, tails of
//! exited threads, tails evicted by a colliding arena). The arena keeps a
//! reference-counted statistics block alive until every thread that used it
//! exits. Failure modes: [`AllocError::ZeroSize`], [`AllocError::TooLarge`]
//! (`size > block_size`), [`AllocError::OutOfMemory`] (the backing arena's
//! blocks are all in use), [`AllocError::Os`].

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::packed::{DrainPolicy, PackedConfig};
use crate::sync::{AtomicU64, Ordering};
use crate::{AllocError, PackedArena, RawAllocator, align_up};

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

/// Statistics shared between an arena and the threads that used it.
#[derive(Debug)]
struct Shared {
    /// The arena's current id (changes on reset).
    id: AtomicU64,
    chunks: AtomicU64,
    direct: AtomicU64,
    refill_tail: AtomicU64,
    exited_tail: AtomicU64,
    evicted_tail: AtomicU64,
}

/// Keeps each slot's owner alive and credits its unused tail when the thread
/// exits. Touched only by refills.
struct Owners {
    slots: [Option<Arc<CachePadded<Shared>>>; SLOTS],
}

impl Drop for Owners {
    fn drop(&mut self) {
        for (i, owner) in self.slots.iter_mut().enumerate() {
            let Some(shared) = owner.take() else { continue };
            // CURSORS has no destructor, so it is still accessible here.
            let _ = CURSORS.try_with(|cursors| {
                let c = &cursors[i];
                if c.owner.get() == shared.id.load(Ordering::Relaxed) {
                    shared
                        .exited_tail
                        .fetch_add(c.room() as u64, Ordering::Relaxed);
                }
                c.owner.set(0);
            });
        }
    }
}

std::thread_local! {
    static CURSORS: [Cursor; SLOTS] = const { [const { Cursor::empty() }; SLOTS] };
    static OWNERS: RefCell<Owners> = const { RefCell::new(Owners { slots: [const { None }; SLOTS] }) };
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

/// Statistics of a [`ThreadCursorArena`] since creation or the last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadCursorStats {
    /// Chunks taken from the shared word (one atomic add each).
    pub chunks: u64,
    /// Large requests served by the backing arena directly.
    pub direct: u64,
    /// Unused chunk tails left behind when a thread refilled.
    pub refill_tail_bytes: u64,
    /// Unused chunk tails of threads that exited.
    pub exited_tail_bytes: u64,
    /// Unused chunk tails evicted from a thread's slot by another arena
    /// whose id maps to the same slot.
    pub evicted_tail_bytes: u64,
}

/// A bump arena with a private cursor per thread. See the [module docs](self).
pub struct ThreadCursorArena {
    /// Unique id (never reused; replaced on reset). Read-only between resets.
    id: u64,
    /// This arena's slot in every thread's cursor table: `id % SLOTS`.
    slot: usize,
    /// Bytes per chunk (power of two, multiple of 16).
    chunk_size: usize,
    /// Largest request (the backing arena's `M`).
    max_request: usize,
    /// Where chunks come from: its cursor is the shared word.
    backing: PackedArena,
    shared: Arc<CachePadded<Shared>>,
}

impl core::fmt::Debug for ThreadCursorArena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ThreadCursorArena")
            .field("id", &self.id)
            .field("chunk_size", &self.chunk_size)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl ThreadCursorArena {
    /// An arena with 4 KiB chunks from 1 MiB blocks (128 of them at most).
    pub fn new() -> Result<Self, AllocError> {
        Self::with_config(ThreadCursorConfig::default())
    }

    /// An arena with the given configuration; refuses a chunk size that is
    /// not a power of two in `16..=block_size` ([`AllocError::BadAlignment`]
    /// or [`AllocError::TooLarge`]) and whatever [`PackedArena::with_config`]
    /// refuses.
    pub fn with_config(config: ThreadCursorConfig) -> Result<Self, AllocError> {
        let ThreadCursorConfig {
            chunk_size,
            block_size,
            max_blocks,
        } = config;
        if !chunk_size.is_power_of_two() || chunk_size < GRAIN {
            return Err(AllocError::BadAlignment { align: chunk_size });
        }
        if chunk_size > block_size {
            return Err(AllocError::TooLarge {
                requested: chunk_size,
                max: block_size,
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
            id,
            slot: id as usize % SLOTS,
            chunk_size,
            max_request: block_size,
            backing,
            shared: Arc::new(CachePadded::new(Shared {
                id: AtomicU64::new(id),
                chunks: AtomicU64::new(0),
                direct: AtomicU64::new(0),
                refill_tail: AtomicU64::new(0),
                exited_tail: AtomicU64::new(0),
                evicted_tail: AtomicU64::new(0),
            })),
        })
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Allocates `size` bytes aligned to 16 from this thread's chunk: one
    /// thread-local access, a compare, an add.
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::TooLarge`] (`size`
    /// above the block size), [`AllocError::OutOfMemory`].
    #[inline(always)]
    pub fn alloc(&self, size: usize) -> Result<NonNull<u8>, AllocError> {
        let (id, slot) = (self.id, self.slot & (SLOTS - 1));
        CURSORS.with(|cursors| {
            let c = &cursors[slot];
            let ptr = c.ptr.get();
            // `size - 1 < room` refuses 0 and anything above the room left;
            // room is a multiple of 16, so the aligned size fits too.
            if c.owner.get() == id && size.wrapping_sub(1) < c.room() {
                debug_assert!(
                    ptr <= c.end.get() && ptr.addr() % GRAIN == 0,
                    "cursor {ptr:p} out of its chunk"
                );
                // SAFETY: `align_up(size, 16) <= room`, so the new cursor is
                // at most the chunk's end, in the same allocation.
                c.ptr.set(unsafe { ptr.add(align_up(size, GRAIN)) });
                // SAFETY: a cursor owned by a live arena is non-null.
                return Ok(unsafe { NonNull::new_unchecked(ptr) });
            }
            self.refill(cursors, size)
        })
    }

    /// This thread's chunk for this arena is missing, taken by another arena,
    /// or too small: take a new one (one shared `fetch_add`), or serve a
    /// large request directly.
    #[cold]
    #[inline(never)]
    fn refill(&self, cursors: &[Cursor; SLOTS], size: usize) -> Result<NonNull<u8>, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if size > self.max_request {
            return Err(AllocError::TooLarge {
                requested: size,
                max: self.max_request,
            });
        }
        let size = align_up(size, GRAIN);
        if size > self.chunk_size / 2 {
            self.shared.direct.fetch_add(1, Ordering::Relaxed);
            return self.backing.alloc(size);
        }
        let slot = self.slot;
        // Register as the slot's owner first: if this thread's
        // thread-locals are being torn down, do not cache a chunk whose tail
        // could not be credited; serve the request directly instead.
        let registered = OWNERS.try_with(|owners| {
            let mut owners = owners.borrow_mut();
            let c = &cursors[slot];
            match &owners.slots[slot] {
                Some(s) if Arc::ptr_eq(s, &self.shared) => {
                    if c.owner.get() == self.id {
                        self.shared
                            .refill_tail
                            .fetch_add(c.room() as u64, Ordering::Relaxed);
                    }
                }
                previous => {
                    if let Some(prev) = previous
                        && c.owner.get() == prev.id.load(Ordering::Relaxed)
                    {
                        prev.evicted_tail
                            .fetch_add(c.room() as u64, Ordering::Relaxed);
                    }
                    owners.slots[slot] = Some(Arc::clone(&self.shared));
                }
            }
            c.owner.set(0);
        });
        if registered.is_err() {
            self.shared.direct.fetch_add(1, Ordering::Relaxed);
            return self.backing.alloc(size);
        }
        let chunk = self.backing.alloc(self.chunk_size)?;
        self.shared.chunks.fetch_add(1, Ordering::Relaxed);
        let c = &cursors[slot];
        // SAFETY: the chunk is `chunk_size` bytes and `size <= chunk_size / 2`.
        unsafe {
            c.ptr.set(chunk.as_ptr().add(size));
            c.end.set(chunk.as_ptr().add(self.chunk_size));
        }
        c.owner.set(self.id);
        Ok(chunk)
    }

    /// Whether `ptr` lies in one of the backing arena's blocks (O(blocks)).
    pub fn owns(&self, ptr: *const u8) -> bool {
        self.backing.owns(ptr)
    }

    /// Statistics since creation or the last reset.
    pub fn stats(&self) -> ThreadCursorStats {
        let s = &self.shared;
        ThreadCursorStats {
            chunks: s.chunks.load(Ordering::Relaxed),
            direct: s.direct.load(Ordering::Relaxed),
            refill_tail_bytes: s.refill_tail.load(Ordering::Relaxed),
            exited_tail_bytes: s.exited_tail.load(Ordering::Relaxed),
            evicted_tail_bytes: s.evicted_tail.load(Ordering::Relaxed),
        }
    }

    /// Bytes of chunk tails that were left unused: refill tails, tails of
    /// exited threads and tails evicted by a colliding arena. Tails still
    /// held by live threads are not included.
    pub fn wasted_bytes(&self) -> u64 {
        let s = self.stats();
        s.refill_tail_bytes + s.exited_tail_bytes + s.evicted_tail_bytes
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
        self.id = next_id();
        self.slot = self.id as usize % SLOTS;
        let s = &self.shared;
        s.id.store(self.id, Ordering::Relaxed);
        for c in [
            &s.chunks,
            &s.direct,
            &s.refill_tail,
            &s.exited_tail,
            &s.evicted_tail,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl RawAllocator for ThreadCursorArena {
    /// Frees are no-ops; memory comes back with `reset`.
    const FREES_INDIVIDUALLY: bool = false;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let extra = layout.align().saturating_sub(GRAIN);
        let max = self.max_request;
        let reserved = layout
            .size()
            .checked_add(extra)
            .ok_or(AllocError::TooLarge {
                requested: layout.size(),
                max,
            })?;
        let p = self.alloc(reserved)?;
        let skip = align_up(p.as_ptr().addr(), layout.align()) - p.as_ptr().addr();
        // SAFETY: `p` is 16-aligned, so `skip <= align - 16 = extra`, inside
        // the `size + extra` bytes just reserved.
        let p = unsafe { p.add(skip) };
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}

// SAFETY: blocks stay valid until `reset` (needs `&mut`) or drop; `allocate`
// hands out disjoint ranges; deallocate is a no-op.
unsafe impl allocator_api2::alloc::Allocator for &ThreadCursorArena {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            let dangling = core::ptr::without_provenance_mut::<u8>(layout.align());
            // SAFETY: an alignment is never zero.
            return Ok(NonNull::slice_from_raw_parts(
                unsafe { NonNull::new_unchecked(dangling) },
                0,
            ));
        }
        RawAllocator::allocate(*self, layout).map_err(Into::into)
    }

    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}
