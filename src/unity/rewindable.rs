//! `Rewindable`: Unity's rewindable allocator: thread-safe bump allocation in
//! growing blocks, everything freed at once by a rewind.
//!
//! **Contract.** `Send + Sync`: any thread allocates through `&Rewindable`.
//! Nobody frees a single block ([`deallocate`] is a no-op); [`rewind`] (which
//! takes `&mut self`) frees everything at once, keeps the blocks that were
//! used since the previous rewind (ready for reuse, in order) and releases
//! the others. Every block is aligned to at least
//! [`Rewindable::MIN_ALIGN`] = 64 bytes. A version number, bumped by each
//! rewind, makes handles from [`alloc_handle`] detectably stale:
//! [`Rewindable::get`] answers [`AllocError::BadMarker`] for them.
//!
//! **Growth.** Blocks start at `initial_block` bytes and double up to
//! `max_block`; after that every new block is `max_block` bytes (linear
//! growth). A request that does not fit the next size gets a block doubled
//! further (still at most `max_block`); a request over `max_block` is
//! [`AllocError::TooLarge`].
//!
//! **Fast path** ([`Rewindable::try_alloc`]): an acquire load of the current
//! block pointer (a plain load on x86-64 and with `ldar` on arm64), a relaxed
//! load of that block's offset (the pre-check: a full block refuses without
//! touching the offset, so failures one after another never move it), one
//! relaxed `fetch_add` on the offset, a fit check, an add. One atomic
//! read-modify-write, no loop, no lock. (On 32-bit targets a reservation over
//! [`MAX_FAST_RESERVE`](super::MAX_FAST_RESERVE) takes a compare-and-swap
//! loop instead, so the overshoot bound of [`MAX_CAPACITY`] holds there.)
//!
//! **Slow path** (`#[cold]`): under the block lock, retry on the current
//! block (another thread may have installed it), else move to the next kept
//! block or map a new one, and publish it with a release store.
//!
//! **Costs.** A boxed 3-word block descriptor (plus its padded offset) per
//! block; blocks are page-granular memory from [`PageAllocator`]; no
//! per-allocation metadata; sizes round to 64. A failed `fetch_add` is not
//! undone, so the end of a block is wasted when it fills (at most one
//! request's worth per thread racing past the pre-check). Failures: zero size, bad alignment, over
//! `max_block` (`TooLarge`), the OS refusing a block (`Os`).
//!
//! [`deallocate`]: crate::RawAllocator::deallocate
//! [`rewind`]: Rewindable::rewind
//! [`alloc_handle`]: Rewindable::alloc_handle

use core::fmt;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::{MAX_CAPACITY, Reserved, needs_cas, reserve_cas};
use crate::sync::{AtomicPtr, AtomicUsize, Mutex, Ordering};
use crate::{AllocError, PageAllocator, align_up};

/// One block of memory.
struct Block {
    /// Next free byte. Invariant: a multiple of 64; may pass `capacity`
    /// (failed reservations are not undone), by at most one reservation per
    /// thread that passed the pre-check while the block still had room: so
    /// below `capacity + MAX_ENTRANTS * MAX_FAST_RESERVE`, which never wraps.
    offset: CachePadded<AtomicUsize>,
    /// Page-aligned start. Owned; released when the block is dropped.
    base: NonNull<u8>,
    /// Usable bytes: a multiple of 64.
    capacity: usize,
    /// Bytes of the mapping.
    mapped: usize,
}

impl Block {
    /// A new block, leaked from its `Box` so that its address can be shared
    /// (published in `Rewindable::current`) without a `Box` asserting unique
    /// ownership over it; [`Blocks`] frees it.
    fn new(capacity: usize) -> Result<NonNull<Block>, AllocError> {
        let mem = PageAllocator::new().alloc(capacity)?;
        let block = Box::new(Block {
            offset: CachePadded::new(AtomicUsize::new(0)),
            base: mem.cast(),
            capacity,
            mapped: mem.len(),
        });
        Ok(NonNull::from(Box::leak(block)))
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `base`/`mapped` are exactly the mapping made in `new`,
        // released once, here.
        unsafe { PageAllocator::new().dealloc(self.base, self.mapped) };
    }
}

/// The blocks, in order of use, and which one is current.
struct Blocks {
    /// Never empty. Sizes never decrease along the list. Each entry is a
    /// block from [`Block::new`], owned by this list (freed by `release` or
    /// drop); its address is stable, so `current` may point at it.
    list: Vec<NonNull<Block>>,
    /// Index of the block `Rewindable::current` points at.
    current: usize,
}

impl Blocks {
    /// The block at `i`.
    fn get(&self, i: usize) -> &Block {
        // SAFETY: every entry is a live block from `Block::new`, freed only
        // when it leaves the list.
        unsafe { self.list[i].as_ref() }
    }

    /// Frees a block that has left the list.
    ///
    /// # Safety
    ///
    /// `block` came from [`Block::new`], is no longer in the list, is not
    /// `Rewindable::current`, and nothing refers to it.
    unsafe fn release(block: NonNull<Block>) {
        // SAFETY: per the contract, this is the block's only owner.
        drop(unsafe { Box::from_raw(block.as_ptr()) });
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        for block in self.list.drain(..) {
            // SAFETY: the list owned it; the allocator is being dropped.
            unsafe { Blocks::release(block) };
        }
    }
}

/// A block handed out with the version it was made in, so a rewind makes it
/// detectably stale. See [`Rewindable::alloc_handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RewindableHandle {
    ptr: NonNull<u8>,
    version: u64,
    owner: u64,
}

// SAFETY: a handle is a token: its pointer is only dereferenced after
// `Rewindable::get` checked it against a live allocator.
unsafe impl Send for RewindableHandle {}
// SAFETY: as above; it has no interior mutability.
unsafe impl Sync for RewindableHandle {}

impl RewindableHandle {
    /// The version of the allocator when the block was made.
    pub fn version(&self) -> u64 {
        self.version
    }
}

/// Unity's rewindable allocator. See the [`unity`](crate::unity) overview; the
/// full contract heads `src/unity/rewindable.rs`.
///
/// ```
/// use allocasm::{AllocError, Rewindable};
/// let mut r = Rewindable::new(4096, 16384).unwrap();
/// let h = r.alloc_handle(100, 8).unwrap();
/// assert_eq!(r.get(h).unwrap().as_ptr() as usize % 64, 0);
/// r.rewind();
/// assert_eq!(r.get(h), Err(AllocError::BadMarker));
/// ```
pub struct Rewindable {
    /// The block the fast path bumps in. Invariant: points at
    /// `blocks.list[blocks.current]`, which stays alive until `rewind(&mut
    /// self)` or drop. Published with `Release` after the block is ready.
    current: CachePadded<AtomicPtr<Block>>,
    /// All blocks; the lock is taken only by the slow path and `&mut self`
    /// methods.
    blocks: Mutex<Blocks>,
    /// Size of the first block (a multiple of 64).
    initial_block: usize,
    /// Largest block (a multiple of 64, at most [`MAX_CAPACITY`]).
    max_block: usize,
    /// Bumped by every rewind; changed only under `&mut self`.
    version: u64,
    /// Distinguishes this allocator's handles from another's.
    id: u64,
}

// SAFETY: the blocks are owned memory reached through the `Mutex` or the
// published `current` pointer; `&self` methods write a block only inside a
// range one `fetch_add` reserved for the caller; `version` changes only under
// `&mut self`.
unsafe impl Send for Rewindable {}
// SAFETY: as above.
unsafe impl Sync for Rewindable {}

/// Source of allocator ids. Not part of any lock-free algorithm (a unique
/// number per allocator), hence not from `crate::sync`.
static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

impl Rewindable {
    /// Every block is aligned to at least this (Unity's documented minimum).
    pub const MIN_ALIGN: usize = 64;
    /// A default first block: 64 KiB.
    pub const DEFAULT_INITIAL_BLOCK: usize = 64 << 10;
    /// A default largest block: 64 MiB.
    pub const DEFAULT_MAX_BLOCK: usize = 64 << 20;

    /// A rewindable allocator whose first block has `initial_block` bytes,
    /// doubling up to `max_block` bytes (both rounded up to 64).
    ///
    /// Errors: a zero `initial_block`, or a `max_block` below
    /// `initial_block`, is [`AllocError::InvalidConfig`] naming the field;
    /// `max_block` over [`MAX_CAPACITY`] is [`AllocError::TooLarge`]; the OS
    /// refusing the first block is [`AllocError::Os`].
    pub fn new(initial_block: usize, max_block: usize) -> Result<Self, AllocError> {
        if initial_block == 0 {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::InitialBlock,
                value: 0,
            });
        }
        if max_block < initial_block {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::MaxBlock,
                value: max_block,
            });
        }
        if max_block > MAX_CAPACITY {
            return Err(AllocError::TooLarge {
                requested: max_block,
                max: MAX_CAPACITY,
            });
        }
        let initial_block = align_up(initial_block, Self::MIN_ALIGN);
        let max_block = align_up(max_block, Self::MIN_ALIGN);
        let first = Block::new(initial_block)?;
        let current = CachePadded::new(AtomicPtr::new(first.as_ptr()));
        Ok(Rewindable {
            current,
            blocks: Mutex::new(Blocks {
                list: vec![first],
                current: 0,
            }),
            initial_block,
            max_block,
            version: 0,
            id: NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
        })
    }

    /// Bumps in `block`: the shared body of the fast and the slow path.
    #[inline(always)]
    fn bump(block: &Block, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let cap = block.capacity;
        let extra = align.saturating_sub(Self::MIN_ALIGN);
        let out = |at: usize| AllocError::OutOfMemory {
            requested: size,
            available: cap.saturating_sub(at),
        };
        if size > cap || extra > cap {
            return Err(out(0));
        }
        // No overflow: size, extra <= cap <= MAX_CAPACITY.
        let need = align_up(size, Self::MIN_ALIGN) + extra;
        // Larger than a block, like a size above the capacity: the error
        // says what an empty block would have.
        if need > cap {
            return Err(out(0));
        }
        // The compare-and-swap before the pre-check, which it does itself:
        // on the fast path `size` is then dead before the offset is loaded,
        // one register fewer on 32-bit Arm.
        if needs_cas(need) {
            let r = Self::bump_cas(block, size, align, need);
            return r.ptr.ok_or_else(|| out(r.seen));
        }
        // The pre-check: a full block refuses before touching the offset,
        // so failures one after another never move it (only threads already
        // past this load can push it beyond `cap`; see `MAX_CAPACITY`).
        let seen = block.offset.load(Ordering::Relaxed);
        if seen > cap - need {
            return Err(out(seen));
        }
        // ORDERING: Relaxed. The add only has to hand out disjoint ranges of
        // the block. The block itself was published by the Release store of
        // `current` that the caller's Acquire load read (or under the
        // blocks lock); its bytes are reused only after `rewind(&mut self)`,
        // and `&mut self` orders every earlier access before that.
        let old = crate::sync::fetch_add_usize(&block.offset, need, Ordering::Relaxed);
        debug_assert!(
            old.is_multiple_of(Self::MIN_ALIGN),
            "Rewindable block offset {old} not 64-aligned"
        );
        // The capacity read again rather than `cap - need` held across the
        // add: on 32-bit Arm the add claims memory, and the load is one
        // register fewer in the loop (elsewhere the compiler reuses `cap`).
        if old > block.capacity - need {
            return Err(out(old));
        }
        Ok(Self::place(block, old, size, align))
    }

    /// A reservation too large for the unconditional `fetch_add` (32-bit
    /// targets only): a compare-and-swap loop, which never overshoots.
    #[cold]
    #[inline(never)]
    fn bump_cas(block: &Block, size: usize, align: usize, need: usize) -> Reserved {
        match reserve_cas(&block.offset, block.capacity, need) {
            Ok(old) => Reserved {
                ptr: Some(Self::place(block, old, size, align)),
                seen: old,
            },
            Err(seen) => Reserved { ptr: None, seen },
        }
    }

    /// The block at offset `old` of a reservation `old..old + need` that
    /// fits in `block`, aligned to `max(align, 64)`.
    #[inline(always)]
    fn place(block: &Block, old: usize, size: usize, align: usize) -> NonNull<u8> {
        let cap = block.capacity;
        let start = if align <= Self::MIN_ALIGN {
            old
        } else {
            let base = block.base.as_ptr() as usize;
            align_up(base + old, align) - base
        };
        debug_assert!(
            start + size <= cap,
            "Rewindable: block of {size} at {start} past {cap}"
        );
        // SAFETY: `start + size <= old + need <= cap`: inside the block, in
        // the range the reservation gave this caller.
        unsafe { block.base.add(start) }
    }

    /// The fast path: `size` bytes aligned to `max(align, 64)` from the
    /// current block, or an error without growing.
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::BadAlignment`], and
    /// [`AllocError::OutOfMemory`] when the current block has no room.
    #[inline(always)]
    pub fn try_alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        let block = self.current.load(Ordering::Acquire);
        // SAFETY: `current` always points at a live block of `blocks.list`
        // (published with Release once initialized); blocks are freed only
        // under `&mut self`, which no `&self` caller can overlap.
        let block = unsafe { &*block };
        Self::bump(block, size, align)
    }

    /// Allocates `size` bytes aligned to `max(align, 64)`, adding a block
    /// when the current one is full.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        match self.try_alloc(size, align) {
            Ok(p) => Ok(p),
            Err(AllocError::OutOfMemory { .. }) => self.alloc_slow(size, align),
            Err(e) => Err(e),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_slow(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let extra = align.saturating_sub(Self::MIN_ALIGN);
        let need = size
            .checked_add(Self::MIN_ALIGN - 1)
            .and_then(|s| s.checked_add(extra));
        let need = match need {
            Some(n) if n & !(Self::MIN_ALIGN - 1) <= self.max_block => n & !(Self::MIN_ALIGN - 1),
            _ => {
                return Err(AllocError::TooLarge {
                    requested: size,
                    max: self.max_block,
                });
            }
        };
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // Under the lock `current` cannot change: retry on it first
            // (another thread may have installed it while we waited).
            let block = blocks.get(blocks.current);
            match Self::bump(block, size, align) {
                Ok(p) => return Ok(p),
                Err(AllocError::OutOfMemory { .. }) => {}
                Err(e) => return Err(e),
            }
            self.advance(&mut blocks, need)?;
        }
    }

    /// Makes the next block with room for `need` bytes current: the next kept
    /// one that is large enough, else a new one.
    fn advance(&self, blocks: &mut Blocks, need: usize) -> Result<(), AllocError> {
        let mut next = blocks.current + 1;
        while next < blocks.list.len() && blocks.get(next).capacity < need {
            next += 1;
        }
        if next == blocks.list.len() {
            let last = blocks.get(blocks.list.len() - 1).capacity;
            let mut size = last.saturating_mul(2).min(self.max_block);
            while size < need {
                size = size.saturating_mul(2).min(self.max_block);
            }
            blocks.list.push(Block::new(size)?);
        }
        blocks.current = next;
        self.current
            .store(blocks.list[next].as_ptr(), Ordering::Release);
        Ok(())
    }

    /// Like [`alloc`](Self::alloc), but returns a handle that
    /// [`get`](Self::get) refuses after a rewind.
    pub fn alloc_handle(&self, size: usize, align: usize) -> Result<RewindableHandle, AllocError> {
        let ptr = self.alloc(size, align)?;
        Ok(RewindableHandle {
            ptr,
            version: self.version,
            owner: self.id,
        })
    }

    /// The block behind `handle`, or [`AllocError::BadMarker`] when a rewind
    /// made it stale or it belongs to another allocator.
    pub fn get(&self, handle: RewindableHandle) -> Result<NonNull<u8>, AllocError> {
        if handle.owner != self.id || handle.version != self.version {
            return Err(AllocError::BadMarker);
        }
        Ok(handle.ptr)
    }

    /// Frees everything at once: keeps the blocks that were used since the
    /// last rewind (emptied, in order, to be reused), releases the others
    /// (always keeping the first), and bumps the version.
    pub fn rewind(&mut self) {
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let old = core::mem::take(&mut blocks.list);
        for (i, block) in old.into_iter().enumerate() {
            // SAFETY: a live block of the list (it just left it, and is
            // either put back or released below).
            // ORDERING: Relaxed: `&mut self`, no allocation in flight.
            let offset = unsafe { block.as_ref() }.offset.load(Ordering::Relaxed);
            if i == 0 || offset > 0 {
                // SAFETY: as above.
                // ORDERING: Relaxed: `&mut self`; the Release store of
                // `current` below (and whatever shares the allocator again)
                // publishes the emptied block.
                unsafe { block.as_ref() }.offset.store(0, Ordering::Relaxed);
                blocks.list.push(block);
            } else {
                // SAFETY: it left the list; `current` points at a used block
                // (offset > 0) or the first, both kept; `&mut self` means no
                // caller holds a reference into it.
                unsafe { Blocks::release(block) };
            }
        }
        blocks.current = 0;
        self.current
            .store(blocks.list[0].as_ptr(), Ordering::Release);
        drop(blocks);
        self.version += 1;
    }

    /// The number of rewinds so far.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The capacities of the blocks, in order of use.
    pub fn block_sizes(&self) -> Vec<usize> {
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        (0..blocks.list.len())
            .map(|i| blocks.get(i).capacity)
            .collect()
    }

    /// Bytes handed out (with padding) in the blocks up to the current one.
    pub fn used(&self) -> usize {
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        (0..=blocks.current)
            .map(|i| {
                let b = blocks.get(i);
                b.offset.load(Ordering::Relaxed).min(b.capacity)
            })
            .sum()
    }

    /// Size of the first block.
    pub fn initial_block(&self) -> usize {
        self.initial_block
    }

    /// Size of the largest block.
    pub fn max_block(&self) -> usize {
        self.max_block
    }
}

impl fmt::Debug for Rewindable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rewindable")
            .field("block_sizes", &self.block_sizes())
            .field("version", &self.version)
            .finish()
    }
}

// SAFETY: a successful `allocate` bumps the current scope of the arena: at
// least `layout.size()` bytes, aligned, disjoint from every other live block,
// valid until `rewind` (`&mut self`) or drop.
crate::raw_allocator::bulk_raw_allocator! {
    /// A no-op: everything goes at the next rewind.
    impl [] Rewindable { |r, layout| r.alloc(layout.size(), layout.align()) }
}

// SAFETY: blocks from `alloc` are disjoint ranges reserved by `fetch_add`,
// aligned to `max(align, 64)`, valid until `rewind(&mut self)` or drop, which
// no `&Rewindable` borrow can outlive. Zero-size layouts get a dangling
// aligned pointer. Copies of `&Rewindable` are the same allocator.
crate::api04::allocator_api04! {
    impl [] &Rewindable { frees_in_bulk }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Rewindable;
    use crate::AllocError;
    use crate::sync::Ordering;

    /// The offset of the current block.
    fn offset(r: &Rewindable) -> usize {
        let blocks = r.blocks.lock().unwrap();
        blocks.get(blocks.current).offset.load(Ordering::Relaxed)
    }

    /// Failures one after another leave the offset where it was: without
    /// the pre-check each added its request, so enough of them wrapped the
    /// offset and a later request landed on a live block.
    #[test]
    fn sequential_failures_do_not_move_the_offset() {
        let r = Rewindable::new(4096, 4096).unwrap();
        r.try_alloc(4096, 64).unwrap();
        let full = offset(&r);
        for _ in 0..1000 {
            assert!(matches!(
                r.try_alloc(4096, 64),
                Err(AllocError::OutOfMemory { .. })
            ));
            assert!(matches!(
                r.try_alloc(64, 64),
                Err(AllocError::OutOfMemory { .. })
            ));
        }
        assert_eq!(offset(&r), full, "failed requests moved the offset");
    }

    /// What a refusal reports: the bytes left in the block when the request
    /// could fit an empty one, the whole block when even an empty one is
    /// too small (a size above it, or one whose alignment's padding takes
    /// it past the block).
    #[test]
    fn refusals_report_what_the_block_has_left() {
        let r = Rewindable::new(4096, 4096).unwrap();
        r.try_alloc(1024, 64).unwrap();
        let oom = |requested, available| {
            Err(AllocError::OutOfMemory {
                requested,
                available,
            })
        };
        assert_eq!(r.try_alloc(4000, 64), oom(4000, 3072));
        assert_eq!(r.try_alloc(4097, 64), oom(4097, 4096));
        assert_eq!(r.try_alloc(4000, 256), oom(4000, 4096));
        assert_eq!(offset(&r), 1024, "refusals moved the offset");
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::Rewindable;
    use loom::sync::Arc;

    /// `rewind` takes `&mut self`, so no allocation can race it in safe
    /// code; what can race is the hand-off after it: two threads allocate
    /// right after a rewind that kept two blocks. One gets the first block
    /// (its offset was reset), the other moves the allocator on to the kept
    /// second block under the lock (no new block is mapped), and the two
    /// blocks handed out are the kept blocks' starts.
    #[test]
    fn loom_allocations_race_after_a_rewind() {
        loom::model(|| {
            let mut r = Rewindable::new(64, 128).unwrap();
            let first = r.alloc(64, 64).unwrap().as_ptr() as usize;
            let second = r.alloc(64, 64).unwrap().as_ptr() as usize;
            r.rewind();
            assert_eq!(r.used(), 0);
            let r = Arc::new(r);
            let r2 = Arc::clone(&r);
            let t = loom::thread::spawn(move || r2.alloc(64, 64).unwrap().as_ptr() as usize);
            let a = r.alloc(64, 64).unwrap().as_ptr() as usize;
            let b = t.join().unwrap();
            let mut got = [a, b];
            got.sort_unstable();
            let mut want = [first, second];
            want.sort_unstable();
            assert_eq!(got, want, "the kept blocks, from their starts");
            assert_eq!(r.block_sizes(), vec![64, 128], "no block was added");
        });
    }

    /// Two threads race for a block with room for one request: exactly one
    /// wins it, the other installs the next block (doubled) under the lock,
    /// and the two blocks handed out are distinct.
    #[test]
    fn loom_two_threads_cross_a_block_end() {
        loom::model(|| {
            let r = Arc::new(Rewindable::new(64, 128).unwrap());
            let r2 = Arc::clone(&r);
            let t = loom::thread::spawn(move || r2.alloc(64, 64).unwrap().as_ptr() as usize);
            let a = r.alloc(64, 64).unwrap().as_ptr() as usize;
            let b = t.join().unwrap();
            assert_ne!(a, b);
            assert_eq!(r.block_sizes(), vec![64, 128]);
        });
    }
}
