//! `FreeList`: the chapter's general-purpose free-list allocator: any size,
//! any order, first-fit or best-fit, splitting and coalescing.
//!
//! **Contract.** One block (borrowed or owned), cut into blocks of multiples
//! of 16 bytes. [`alloc`](FreeList::alloc) and [`free`](FreeList::free) go
//! through `&self`, in any order; [`reset`](FreeList::reset) takes `&mut self`.
//! `Send`, not `Sync`.
//!
//! **Layout.** The free blocks form a singly linked list kept in address order
//! (the chapter's `FreeBlockHeader { size, next }`, stored in the first 16 bytes
//! of each free block, with offsets instead of pointers). An allocated block
//! keeps a 16-byte header `{ start, size }` right before the pointer handed
//! out, so `free` needs only the pointer. Because the list is address-ordered,
//! `free` finds the block's two neighbours on the way to its insertion point
//! and merges with the one before, the one after, or both (coalescing); the
//! same walk detects a double free (the block overlaps a free one:
//! [`AllocError::DoubleFree`]). A large alignment leaves a gap before the
//! block; a gap of 32 bytes or more stays on the list as a free block.
//!
//! **Fast path** ([`alloc`](FreeList::alloc)): a walk of the free list; first
//! fit stops at the first block that fits, best fit walks the whole list for
//! the smallest block that fits. Then a split: the rest of the block (if at
//! least 32 bytes) stays free. No atomic, no call; a loop, by nature. For an
//! alignment of 16 or less (every block starts on a granule) the walk is one
//! size compare per block; larger alignments compute each block's padding.
//! [`free`](FreeList::free) walks to the insertion point: O(free blocks).
//! No slow path: when nothing fits, [`AllocError::OutOfMemory`] says how many
//! bytes are free in total (fragmentation shows as a refusal with more bytes
//! free than requested; [`stats`](FreeList::stats) shows the largest block).
//!
//! **Costs.** 16 bytes of header per allocation, sizes rounded up to 16, and
//! up to `align - 16` bytes of padding for alignments above 16 (kept on the
//! free list when at least 32 bytes). Up to 15 bytes at each end of a borrowed
//! buffer are skipped to align the blocks.

use core::alloc::Layout;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::buffer::Buffer;
use crate::{AllocError, RawAllocator};

/// Block granularity and alignment; also the size of each header.
const GRANULE: usize = 16;
/// Smallest block worth keeping on the list (a header and a granule).
const MIN_BLOCK: usize = 2 * GRANULE;
/// "No block" in a `next` link.
const NIL: usize = usize::MAX;

/// How [`FreeList::alloc`] chooses among the free blocks that fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FitPolicy {
    /// The first block (lowest address) that fits: fastest.
    #[default]
    FirstFit,
    /// The smallest block that fits (the lowest address among equals): walks
    /// the whole list, wastes less.
    BestFit,
}

/// A snapshot of the free list, so fragmentation is visible.
///
/// ```
/// use allocasm::{FitPolicy, FreeList};
///
/// let list = FreeList::new(1024, FitPolicy::FirstFit).unwrap();
/// let a = list.alloc(100, 8).unwrap();
/// let b = list.alloc(200, 8).unwrap();
/// // SAFETY: `a` and `b` came from `list` and are not used again.
/// unsafe {
///     list.free(a).unwrap();
///     list.free(b).unwrap();
/// }
/// let stats = list.stats();
/// assert_eq!(stats.free_blocks, 1); // coalesced back into one block
/// assert_eq!(stats.largest_free, list.capacity());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FreeListStats {
    /// Bytes in free blocks (headers included).
    pub free_bytes: usize,
    /// Size of the largest free block (headers included). A request of up to
    /// `largest_free - 16` bytes with alignment 16 or less fits.
    pub largest_free: usize,
    /// Number of free blocks.
    pub free_blocks: usize,
}

/// A general-purpose allocator over one block.
///
/// **Contract.** One block (borrowed or owned), cut into blocks of multiples
/// of 16 bytes. [`alloc`](FreeList::alloc) and [`free`](FreeList::free) go
/// through `&self`, in any order; [`reset`](FreeList::reset) takes `&mut self`.
/// `Send`, not `Sync`.
///
/// **Costs.** 16 bytes of header per allocation, sizes rounded up to 16, and
/// up to `align - 16` bytes of padding for alignments above 16 (kept on the
/// free list when at least 32 bytes). Up to 15 bytes at each end of a borrowed
/// buffer are skipped to align the blocks.
///
/// How the fast path compiles is in the source's header (`src/free_list.rs`).
///
/// ```
/// use allocasm::{FitPolicy, FreeList};
///
/// let list = FreeList::new(4096, FitPolicy::FirstFit).unwrap();
/// let a = list.alloc(100, 8).unwrap();
/// let b = list.alloc(200, 16).unwrap();
/// assert_eq!(b.as_ptr() as usize % 16, 0);
/// // SAFETY: `a` came from this list and is freed once.
/// unsafe { list.free(a).unwrap() };
/// // The freed block is reused, in any order.
/// let c = list.alloc(64, 8).unwrap();
/// assert_eq!(c, a);
/// // SAFETY: as above.
/// unsafe {
///     list.free(b).unwrap();
///     list.free(c).unwrap();
/// }
/// assert_eq!(list.free_bytes(), list.capacity());
/// ```
#[derive(Debug)]
pub struct FreeList<'a> {
    /// The block.
    buffer: Buffer<'a>,
    /// Offset of the managed region in the block (aligns it to 16).
    lead: usize,
    /// Size of the managed region. Invariant: a multiple of 16, and
    /// `lead + capacity <= buffer.len()`.
    capacity: usize,
    /// Offset (from the region start) of the first free block, or `NIL`.
    /// Invariant: the list is in strictly increasing address order, no two
    /// free blocks touch (they would have been merged), every block is a
    /// multiple of 16 and at least 32 bytes, and all lie inside the region.
    head: Cell<usize>,
    /// Sum of the free blocks' sizes.
    free_bytes: Cell<usize>,
    /// The policy [`alloc`](FreeList::alloc) uses.
    policy: Cell<FitPolicy>,
}

// SAFETY: the list owns its block or borrows it exclusively, and keeps only
// offsets into it, so sending it sends sole access to everything it touches.
// Not `Sync`: `Cell`s are updated without synchronisation.
unsafe impl Send for FreeList<'_> {}

/// The header of a free block, at the block's start.
#[derive(Clone, Copy)]
#[repr(C)]
struct FreeHeader {
    size: usize,
    next: usize,
}

/// The header of an allocated block, in the 16 bytes before the pointer
/// handed out.
#[derive(Clone, Copy)]
#[repr(C)]
struct UsedHeader {
    start: usize,
    size: usize,
}

impl FreeList<'static> {
    /// A free list owning a fresh, 16-aligned block of `capacity` bytes
    /// (rounded down to a multiple of 16).
    ///
    /// Errors: a zero `capacity` is [`AllocError::InvalidConfig`]; one the
    /// global allocator cannot serve is [`AllocError::TooLarge`] or
    /// [`AllocError::OutOfMemory`].
    pub fn new(capacity: usize, policy: FitPolicy) -> Result<Self, AllocError> {
        if capacity == 0 {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::Capacity,
                value: 0,
            });
        }
        Ok(FreeList::build(Buffer::owned(capacity)?, policy))
    }
}

impl<'a> FreeList<'a> {
    /// A free list over the caller's bytes.
    pub fn with_buffer(buffer: &'a mut [MaybeUninit<u8>], policy: FitPolicy) -> Self {
        FreeList::build(Buffer::borrowed(buffer), policy)
    }

    fn build(buffer: Buffer<'a>, policy: FitPolicy) -> Self {
        let base = buffer.base().as_ptr() as usize;
        let lead = crate::align_up(base, GRANULE) - base;
        let capacity = buffer.len().saturating_sub(lead) & !(GRANULE - 1);
        let mut list = FreeList {
            buffer,
            lead,
            capacity,
            head: Cell::new(NIL),
            free_bytes: Cell::new(0),
            policy: Cell::new(policy),
        };
        list.reset();
        list
    }

    /// Frees everything: the region becomes one free block.
    pub fn reset(&mut self) {
        if self.capacity >= MIN_BLOCK {
            self.write_free(
                0,
                FreeHeader {
                    size: self.capacity,
                    next: NIL,
                },
            );
            self.head.set(0);
            self.free_bytes.set(self.capacity);
        } else {
            self.head.set(NIL);
            self.free_bytes.set(0);
        }
    }

    /// Pointer to region offset `off` (with the block's provenance).
    #[inline(always)]
    fn at(&self, off: usize) -> *mut u8 {
        debug_assert!(off <= self.capacity);
        self.buffer.base().as_ptr().wrapping_add(self.lead + off)
    }

    /// Address of the region start.
    #[inline(always)]
    fn region_addr(&self) -> usize {
        self.buffer.base().as_ptr() as usize + self.lead
    }

    #[inline(always)]
    fn read_free(&self, off: usize) -> FreeHeader {
        debug_assert!(
            off.is_multiple_of(GRANULE) && off + MIN_BLOCK <= self.capacity,
            "free block at {off}"
        );
        // SAFETY: `off` is a free block of the region (list invariant), so the
        // 16 bytes there are inside the block, 16-aligned, and hold a header
        // written by `write_free`.
        unsafe { self.at(off).cast::<FreeHeader>().read() }
    }

    #[inline(always)]
    fn write_free(&self, off: usize, header: FreeHeader) {
        debug_assert!(off.is_multiple_of(GRANULE) && off + header.size <= self.capacity);
        // SAFETY: the caller passes the start of a block of the region that no
        // allocation uses: 16-aligned, at least 32 bytes long.
        unsafe { self.at(off).cast::<FreeHeader>().write(header) }
    }

    #[inline(always)]
    fn set_next(&self, prev: usize, next: usize) {
        if prev == NIL {
            self.head.set(next);
        } else {
            let mut h = self.read_free(prev);
            h.next = next;
            self.write_free(prev, h);
        }
    }

    /// Allocates `size` bytes aligned to `align` with the list's policy.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        self.alloc_with(size, align, self.policy.get())
    }

    /// [`alloc`](Self::alloc) for a `Layout`.
    #[inline(always)]
    pub fn alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.alloc_with(layout.size(), layout.align(), self.policy.get())
    }

    /// Allocates `size` bytes aligned to `align` with the given policy.
    #[inline(always)]
    pub fn alloc_with(
        &self,
        size: usize,
        align: usize,
        policy: FitPolicy,
    ) -> Result<NonNull<u8>, AllocError> {
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if size > self.capacity || align > self.capacity {
            return Err(self.out_of_memory(size));
        }
        if align <= GRANULE {
            return self.alloc_granule(size, policy);
        }
        let region = self.region_addr();
        // Where the user bytes would start in the free block at `off`, if the
        // request fits there.
        let fit = |off: usize, h: &FreeHeader| -> Option<usize> {
            let user = crate::align_up(region + off + GRANULE, align) - region;
            let end = crate::align_up(user + size, GRANULE);
            (end <= off + h.size).then_some(user)
        };
        let (mut prev, mut cur) = (NIL, self.head.get());
        // The chosen block: (prev, block, header, user offset).
        let mut best: Option<(usize, usize, FreeHeader, usize)> = None;
        while cur != NIL {
            let h = self.read_free(cur);
            debug_assert!(
                h.next == NIL || h.next > cur + h.size,
                "list out of order at {cur}"
            );
            if let Some(user) = fit(cur, &h) {
                match policy {
                    FitPolicy::FirstFit => {
                        best = Some((prev, cur, h, user));
                        break;
                    }
                    FitPolicy::BestFit => {
                        if best.is_none_or(|(_, _, b, _)| h.size < b.size) {
                            best = Some((prev, cur, h, user));
                        }
                    }
                }
            }
            prev = cur;
            cur = h.next;
        }
        let Some((prev, block, h, user)) = best else {
            return Err(self.out_of_memory(size));
        };
        Ok(self.carve(prev, block, h, user, size))
    }

    /// The refusal when nothing fits: how many bytes are free in all. Read
    /// here, not before the walk, so the walk does not keep it in a register.
    #[inline(always)]
    fn out_of_memory(&self, requested: usize) -> AllocError {
        AllocError::OutOfMemory {
            requested,
            available: self.free_bytes.get(),
        }
    }

    /// [`alloc_with`](Self::alloc_with) for an alignment of at most 16 (every
    /// `align` the chapter uses): every block starts on a granule, so the user
    /// bytes start right after the block's header and a block fits when it
    /// holds `need` bytes. The same choice and the same split as the general
    /// walk.
    ///
    /// First fit tries the list's first block inline, with no loop: the
    /// fast path needs no saved register on any profile (on 32-bit Arm
    /// through [`split_head`](Self::split_head)'s order; the walk's
    /// prev/cur/next rotation needs nine, two more than x86-64 Windows has
    /// scratch registers). When the first block is too
    /// small, or for best fit, the walk runs out of line, as a tail call.
    #[inline(always)]
    fn alloc_granule(&self, size: usize, policy: FitPolicy) -> Result<NonNull<u8>, AllocError> {
        // `size <= capacity`, so neither addition overflows.
        let need = crate::align_up(size, GRANULE) + GRANULE;
        let head = self.head.get();
        if policy == FitPolicy::FirstFit && head != NIL {
            let block = self.at(0).wrapping_add(head);
            // SAFETY: as in `read_free`: `head` is a free block of the
            // region; its header's first word is its size.
            let size = unsafe { block.cast::<usize>().read() };
            // Only a block that leaves a tail: then the split is certain
            // and the block's size is dead once the rest is known (a block
            // that fits exactly, rarer, goes to the walk).
            if size >= need && size - need >= MIN_BLOCK {
                return Ok(self.split_head(block, head, size - need, need));
            }
        }
        match self.walk_granule(need, policy) {
            Some(p) => Ok(p),
            None => Err(self.out_of_memory(size)),
        }
    }

    /// The whole walk of [`alloc_granule`](Self::alloc_granule): the first
    /// block that holds `need` bytes, or the smallest one. `None` when none
    /// does (the caller builds the error). Returns only the pointer, so the
    /// fast path's call is a tail call. Cold: for first fit it runs only
    /// when the first block cannot be split for the request.
    #[cold]
    #[inline(never)]
    fn walk_granule(&self, need: usize, policy: FitPolicy) -> Option<NonNull<u8>> {
        // Read once: the stores below go through the block's pointer, which
        // the compiler cannot tell apart from `self`'s fields, so `self.at`
        // would load them again after each store.
        let region = self.at(0);
        let (mut prev, mut cur) = (NIL, self.head.get());
        // The chosen block: (prev, block, header).
        let mut best: Option<(usize, usize, FreeHeader)> = None;
        while cur != NIL {
            // SAFETY: as in `read_free`: `cur` is a free block of the region.
            let h = unsafe { region.wrapping_add(cur).cast::<FreeHeader>().read() };
            debug_assert!(
                h.next == NIL || h.next > cur + h.size,
                "list out of order at {cur}"
            );
            if h.size >= need {
                match policy {
                    FitPolicy::FirstFit => {
                        best = Some((prev, cur, h));
                        break;
                    }
                    FitPolicy::BestFit => {
                        if best.is_none_or(|(_, _, b)| h.size < b.size) {
                            best = Some((prev, cur, h));
                        }
                    }
                }
            }
            prev = cur;
            cur = h.next;
        }
        let (prev, block, h) = best?;
        Some(self.take_granule(region, prev, block, h, need))
    }

    /// Takes `need` bytes (a multiple of 16, header included) from the front
    /// of the list's first block, at `block` (offset `head`), whose tail of
    /// `rest >= MIN_BLOCK` bytes stays free: the first-fit fast path's
    /// [`take_granule`](Self::take_granule), ordered for 32-bit Arm's five
    /// scratch registers. The tail's size is stored first, so the rest dies;
    /// `need` then goes through [`opaque_on_arm`](crate::sync::opaque_on_arm)
    /// and the block is computed again from the tail, so the block, the
    /// rest, the link, `need`, the offset and `self` are never live at once
    /// (holding all six saved four registers there). Elsewhere the block is
    /// the same value and LLVM keeps it.
    #[inline(always)]
    fn split_head(&self, block: *mut u8, head: usize, rest: usize, need: usize) -> NonNull<u8> {
        debug_assert!(rest >= MIN_BLOCK && (head + need).is_multiple_of(GRANULE));
        let tail = block.wrapping_add(need).cast::<FreeHeader>();
        #[cfg(all(target_arch = "arm", not(miri)))]
        let need = {
            // SAFETY: `[block + need, block + need + rest)` is the free
            // block's tail, 16-aligned and at least 32 bytes: no allocation
            // uses it.
            unsafe { (&raw mut (*tail).size).write(rest) };
            let need = crate::sync::opaque_on_arm(need);
            // SAFETY: `tail - need` is the list's first free block: its
            // header's link is inside the region, and the store above was
            // past it.
            let next = unsafe { (*tail.cast::<u8>().wrapping_sub(need).cast::<FreeHeader>()).next };
            // SAFETY: the tail's header, as above.
            unsafe { (&raw mut (*tail).next).write(next) };
            need
        };
        // Elsewhere the link is read first and the tail's header written
        // whole (one `stp` on arm64).
        #[cfg(not(all(target_arch = "arm", not(miri))))]
        // SAFETY: `block` is the list's first free block, and its tail as
        // above.
        unsafe {
            let next = (*block.cast::<FreeHeader>()).next;
            tail.write(FreeHeader { size: rest, next });
        }
        self.head.set(head + need);
        // The free byte count is loaded only now, after the head's store
        // (loaded early, it was a sixth value there), and the block is
        // computed once more from the tail (held since the link's load, it
        // was a sixth value at these stores).
        let need = crate::sync::opaque_on_arm(need);
        self.free_bytes.set(self.free_bytes.get() - need);
        let block = tail.cast::<u8>().wrapping_sub(need);
        // SAFETY: `block` is the 16-aligned start of the block just taken off
        // the list, at least 32 bytes long: the header is inside it and not
        // part of the user's bytes.
        unsafe {
            block.cast::<UsedHeader>().write(UsedHeader {
                start: head,
                size: need,
            })
        };
        // SAFETY: `block + 16 < block + need <= capacity`: inside the region,
        // and the region is not at address 0.
        unsafe { NonNull::new_unchecked(block.wrapping_add(GRANULE)) }
    }

    /// Takes `need` bytes (a multiple of 16, header included) from the
    /// front of the free block at `block` (header `h`, `h.size >= need`),
    /// whose predecessor on the list is `prev` (`NIL` for the head); the
    /// tail stays free if it can be a block. Returns the user pointer.
    #[inline(always)]
    fn take_granule(
        &self,
        region: *mut u8,
        prev: usize,
        block: usize,
        h: FreeHeader,
        need: usize,
    ) -> NonNull<u8> {
        debug_assert!(h.size >= need);
        // The tail stays free if it can be a block.
        let (used, link) = if h.size - need >= MIN_BLOCK {
            debug_assert!((block + need).is_multiple_of(GRANULE));
            // SAFETY: `[block + need, block + h.size)` is the free block's
            // tail, 16-aligned and at least 32 bytes: no allocation uses it.
            unsafe {
                region
                    .wrapping_add(block + need)
                    .cast::<FreeHeader>()
                    .write(FreeHeader {
                        size: h.size - need,
                        next: h.next,
                    })
            };
            (need, block + need)
        } else {
            (h.size, h.next)
        };
        if prev == NIL {
            self.head.set(link);
        } else {
            // SAFETY: `prev` is the free block before `block` on the list:
            // its header is inside the region and no allocation uses it.
            unsafe { (*region.wrapping_add(prev).cast::<FreeHeader>()).next = link };
        }
        self.free_bytes.set(self.free_bytes.get() - used);
        // SAFETY: `block` is the 16-aligned start of the block just taken off
        // the list, at least 32 bytes long: the header is inside it and not
        // part of the user's bytes.
        unsafe {
            region
                .wrapping_add(block)
                .cast::<UsedHeader>()
                .write(UsedHeader {
                    start: block,
                    size: used,
                })
        };
        // SAFETY: `block + 16 < block + used <= capacity`: inside the region,
        // and the region is not at address 0.
        unsafe { NonNull::new_unchecked(region.wrapping_add(block + GRANULE)) }
    }

    /// Takes `[user - 16, user + size)` (rounded to granules) out of the free
    /// block at `block`, putting the front gap and the tail back if they are
    /// big enough to be blocks.
    #[inline(always)]
    fn carve(
        &self,
        prev: usize,
        block: usize,
        h: FreeHeader,
        user: usize,
        size: usize,
    ) -> NonNull<u8> {
        let end = block + h.size;
        let front_gap = user - GRANULE - block;
        let used_start = if front_gap >= MIN_BLOCK {
            user - GRANULE
        } else {
            block
        };
        let alloc_end = crate::align_up(user + size, GRANULE);
        let used_end = if end - alloc_end >= MIN_BLOCK {
            alloc_end
        } else {
            end
        };
        // Relink in address order: [front] -> [tail] -> next.
        let mut link = h.next;
        if used_end < end {
            self.write_free(
                used_end,
                FreeHeader {
                    size: end - used_end,
                    next: link,
                },
            );
            link = used_end;
        }
        if used_start > block {
            self.write_free(
                block,
                FreeHeader {
                    size: used_start - block,
                    next: link,
                },
            );
            link = block;
        }
        self.set_next(prev, link);
        self.free_bytes
            .set(self.free_bytes.get() - (used_end - used_start));
        let header = self.at(user - GRANULE);
        // SAFETY: `user - 16 >= used_start` lies inside the block just taken
        // off the list, 16-aligned, and is not part of the user's bytes.
        unsafe {
            header.cast::<UsedHeader>().write(UsedHeader {
                start: used_start,
                size: used_end - used_start,
            })
        };
        // SAFETY: `user < used_end <= capacity`: inside the region, and the
        // region is not at address 0.
        unsafe { NonNull::new_unchecked(self.at(user)) }
    }

    /// Gives a block back, merging it with a free neighbour before it, after
    /// it, or both.
    ///
    /// A pointer that is not a live block of this list is refused with
    /// [`AllocError::ForeignPointer`] (not in the region, misaligned, or a
    /// header that makes no sense) or [`AllocError::DoubleFree`] (the block
    /// overlaps a free one), and nothing changes.
    ///
    /// # Safety
    ///
    /// `ptr` came from this list's `alloc` (or the trait impls) since the last
    /// reset, and nobody uses the block after this call. (Freeing it twice is
    /// detected as long as the block has not been handed out again since.)
    pub unsafe fn free(&self, ptr: NonNull<u8>) -> Result<(), AllocError> {
        let user = (ptr.as_ptr() as usize).wrapping_sub(self.region_addr());
        if !user.is_multiple_of(GRANULE) || user < GRANULE || user >= self.capacity {
            return Err(AllocError::ForeignPointer);
        }
        // Find the free blocks around the header: `prev` is the last one
        // starting at or before it, `cur` the first one after it. A header
        // inside a free block means the block was freed already (its header
        // may have been overwritten by a merge).
        let header = user - GRANULE;
        let (mut prev, mut cur) = (NIL, self.head.get());
        while cur != NIL && cur <= header {
            prev = cur;
            cur = self.read_free(cur).next;
        }
        let prev_end = if prev == NIL {
            0
        } else {
            prev + self.read_free(prev).size
        };
        if prev != NIL && prev_end > header {
            return Err(AllocError::DoubleFree);
        }
        // SAFETY: `16 <= user < capacity` and 16-aligned, so the 16 bytes
        // before it are inside the region and aligned for the header, and not
        // inside a free block (checked above). By the caller's promise `ptr`
        // came from `alloc`, which wrote a `UsedHeader` there; any bit pattern
        // is a valid pair of `usize`s, and they are validated next.
        let UsedHeader { start, size } = unsafe { self.at(header).cast::<UsedHeader>().read() };
        let valid = start.is_multiple_of(GRANULE)
            && size >= MIN_BLOCK
            && size.is_multiple_of(GRANULE)
            && start <= header
            && size <= self.capacity - start
            && user < start + size;
        if !valid {
            return Err(AllocError::ForeignPointer);
        }
        let end = start + size;
        if (prev != NIL && prev_end > start) || (cur != NIL && cur < end) {
            return Err(AllocError::DoubleFree);
        }
        // Merge with the next block if they touch.
        let (mut merged, mut next) = (size, cur);
        if cur != NIL && cur == end {
            let n = self.read_free(cur);
            merged += n.size;
            next = n.next;
        }
        // Merge into the previous block if they touch.
        match prev {
            p if p != NIL && p + self.read_free(p).size == start => {
                let ph = self.read_free(p);
                self.write_free(
                    p,
                    FreeHeader {
                        size: ph.size + merged,
                        next,
                    },
                );
            }
            _ => {
                self.write_free(start, FreeHeader { size: merged, next });
                self.set_next(prev, start);
            }
        }
        self.free_bytes.set(self.free_bytes.get() + size);
        Ok(())
    }

    /// Walks the free list: free bytes, largest free block, number of blocks.
    pub fn stats(&self) -> FreeListStats {
        let mut stats = FreeListStats::default();
        let mut cur = self.head.get();
        while cur != NIL {
            let h = self.read_free(cur);
            stats.free_bytes += h.size;
            stats.largest_free = stats.largest_free.max(h.size);
            stats.free_blocks += 1;
            cur = h.next;
        }
        debug_assert_eq!(stats.free_bytes, self.free_bytes.get());
        stats
    }

    /// Size of the managed region (a multiple of 16).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes in free blocks.
    #[inline]
    pub fn free_bytes(&self) -> usize {
        self.free_bytes.get()
    }

    /// The policy [`alloc`](Self::alloc) uses.
    #[inline]
    pub fn policy(&self) -> FitPolicy {
        self.policy.get()
    }

    /// Changes the policy for later allocations.
    #[inline]
    pub fn set_policy(&self, policy: FitPolicy) {
        self.policy.set(policy);
    }

    /// Offset of `ptr` from the start of the managed region, if inside it.
    pub fn offset_of(&self, ptr: NonNull<u8>) -> Option<usize> {
        let off = (ptr.as_ptr() as usize).wrapping_sub(self.region_addr());
        (off < self.capacity).then_some(off)
    }
}

// SAFETY: `allocate` carves a block of at least `layout.size()` bytes,
// aligned, from a free range of the borrowed buffer and takes it off the free
// list until `deallocate`; valid until `reset` (`&mut self`).
unsafe impl RawAllocator for FreeList<'_> {
    const FREES_INDIVIDUALLY: bool = true;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = self.alloc_layout(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    /// Frees the block; panics if it is foreign or already free.
    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded; the trait's contract is `free`'s.
        if let Err(e) = unsafe { self.free(ptr) } {
            panic!("FreeList::deallocate({ptr:p}): {e}");
        }
    }
}

// SAFETY: a block stays valid (inside the region, which never moves) until it
// is freed, or the list is reset (`&mut self`) or dropped; live blocks never
// overlap; alignment is honoured. Zero-size requests get a dangling, aligned
// pointer and are not freed to the list.
crate::api04::allocator_api04! {
    impl ['a] FreeList<'a> { frees }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_then_coalesce_both_sides() {
        let list = FreeList::new(1024, FitPolicy::FirstFit).unwrap();
        let a = list.alloc(48, 8).unwrap(); // block of 64
        let b = list.alloc(48, 8).unwrap();
        let c = list.alloc(48, 8).unwrap();
        assert_eq!(
            list.stats(),
            FreeListStats {
                free_bytes: 1024 - 192,
                largest_free: 1024 - 192,
                free_blocks: 1
            }
        );
        // SAFETY: all three are live blocks of `list`, not used afterwards.
        unsafe {
            list.free(a).unwrap();
            list.free(c).unwrap(); // merges with the tail
            assert_eq!(list.stats().free_blocks, 2);
            list.free(b).unwrap(); // merges with both neighbours
        }
        assert_eq!(
            list.stats(),
            FreeListStats {
                free_bytes: 1024,
                largest_free: 1024,
                free_blocks: 1
            }
        );
    }
}
