//! `Pool`: the chapter's pool allocator: fixed-size slots and an intrusive
//! free list.
//!
//! **Contract.** One block cut into `capacity()` slots of `slot_size()` bytes,
//! each aligned to `slot_align()`. [`alloc`](Pool::alloc) hands out one slot,
//! [`free`](Pool::free) takes one back, in any order; both go through `&self`.
//! A slot size is rounded up to at least a pointer and to a multiple of the
//! slot alignment (itself at least a pointer's), because a free slot's first
//! word stores the address of the next free slot: the free list costs no
//! memory beyond the slots. `Send`, not `Sync`.
//!
//! **Double frees.** The chapter's exercise shows what freeing a slot twice
//! does to an unchecked pool: the slot links to itself, the list becomes a
//! cycle and the slots after it are lost. Here:
//! - in debug builds every pool keeps one bit per slot ("free"), and
//!   [`free`](Pool::free) refuses a slot that is already free with
//!   [`AllocError::DoubleFree`], leaving the list untouched
//!   ([`RawAllocator::deallocate`] and the `allocator_api2` impl panic
//!   instead, as they cannot return an error);
//! - in every build, [`free_checked`](Pool::free_checked) also refuses
//!   pointers outside the pool or off a slot boundary
//!   ([`AllocError::ForeignPointer`]) and double frees (with the bitmap in
//!   debug builds, by walking the free list in release builds: O(free slots)).
//! - in release builds, [`free`](Pool::free) checks nothing: it is the
//!   chapter's two stores, and a double free there breaks the caller's
//!   `unsafe` contract.
//!
//! **Fast paths.** `alloc`: a null test of the head, one load of the next
//! pointer, a store of the head, a decrement of the free count. `free`: a store
//! of the old head into the slot, a store of the head, an increment. No atomic,
//! no call, no loop. No slow path: an empty pool is [`AllocError::OutOfMemory`].
//!
//! **Costs.** No per-slot metadata in release builds (one bit per slot in
//! debug builds); up to `slot_align - 1` bytes of the block skipped to align
//! the first slot, and the tail that does not hold a whole slot.

#[cfg(debug_assertions)]
use alloc::boxed::Box;
use core::alloc::Layout;
use core::cell::Cell;
use core::mem::{MaybeUninit, align_of, size_of};
use core::ptr::{self, NonNull};

use crate::buffer::Buffer;
use crate::{AllocError, RawAllocator};

/// A pool of fixed-size slots.
///
/// **Contract.** One block cut into `capacity()` slots of `slot_size()` bytes,
/// each aligned to `slot_align()`. [`alloc`](Pool::alloc) hands out one slot,
/// [`free`](Pool::free) takes one back, in any order; both go through `&self`.
/// A slot size is rounded up to at least a pointer and to a multiple of the
/// slot alignment (itself at least a pointer's), because a free slot's first
/// word stores the address of the next free slot: the free list costs no
/// memory beyond the slots. `Send`, not `Sync`.
///
/// **Double frees.** The chapter's exercise shows what freeing a slot twice
/// does to an unchecked pool: the slot links to itself, the list becomes a
/// cycle and the slots after it are lost. Here:
/// - in debug builds every pool keeps one bit per slot ("free"), and
///   [`free`](Pool::free) refuses a slot that is already free with
///   [`AllocError::DoubleFree`], leaving the list untouched
///   ([`RawAllocator::deallocate`] and the `allocator_api2` impl panic
///   instead, as they cannot return an error);
/// - in every build, [`free_checked`](Pool::free_checked) also refuses
///   pointers outside the pool or off a slot boundary
///   ([`AllocError::ForeignPointer`]) and double frees (with the bitmap in
///   debug builds, by walking the free list in release builds: O(free slots)).
/// - in release builds, [`free`](Pool::free) checks nothing: it is the
///   chapter's two stores, and a double free there breaks the caller's
///   `unsafe` contract.
///
/// **Costs.** No per-slot metadata in release builds (one bit per slot in
/// debug builds); up to `slot_align - 1` bytes of the block skipped to align
/// the first slot, and the tail that does not hold a whole slot.
///
/// How the fast path compiles is in the source's header (`src/pool.rs`).
///
/// ```
/// use allocasm::{AllocError, Pool};
///
/// let pool = Pool::new(16, 4, 4).unwrap(); // the chapter's 4 bullets of 16 bytes
/// let b0 = pool.alloc().unwrap();
/// let b1 = pool.alloc().unwrap();
/// // SAFETY: b1 came from this pool and is not used again.
/// unsafe { pool.free(b1).unwrap() };
/// assert_eq!(pool.alloc().unwrap(), b1); // the freed slot is reused at once
/// # let _ = b0;
/// ```
#[derive(Debug)]
#[repr(C)]
pub struct Pool<'a> {
    /// The block. Invariant: slots `0..capacity` lie at
    /// `base + first + i * slot_size`, inside the block.
    buffer: Buffer<'a>,
    /// Offset of slot 0 from the block's start (to align it).
    first: usize,
    /// Slot stride in bytes. Invariant: a non-zero multiple of `slot_align`,
    /// at least `size_of::<*mut u8>()`.
    slot_size: usize,
    /// Slot alignment. Invariant: a power of two, at least
    /// `align_of::<*mut u8>()`.
    slot_align: usize,
    /// Number of slots.
    capacity: usize,
    /// Number of slots on the free list. Invariant: `free <= capacity`.
    free: Cell<usize>,
    /// Head of the free list: the first free slot, or null when the pool is
    /// full. Invariant: every slot on the list is free, appears once, and its
    /// first word holds the next free slot (or null).
    head: Cell<*mut u8>,
    /// Debug builds: bit `i` set when slot `i` is free.
    #[cfg(debug_assertions)]
    free_bits: Box<[Cell<u64>]>,
}

// SAFETY: the pool owns its block or borrows it exclusively, and the raw head
// pointer points into that block, so sending the pool sends sole access to
// everything it touches. Not `Sync`: `Cell`s are updated without
// synchronisation.
unsafe impl Send for Pool<'_> {}

/// The slot stride and alignment for a request: at least a pointer, a
/// multiple of the alignment.
fn slot_geometry(slot_size: usize, slot_align: usize) -> Result<(usize, usize), AllocError> {
    crate::check_align(slot_align)?;
    if slot_size == 0 {
        return Err(AllocError::InvalidConfig {
            field: crate::ConfigField::SlotSize,
            value: 0,
        });
    }
    let align = slot_align.max(align_of::<*mut u8>());
    let size = crate::checked_align_up(slot_size.max(size_of::<*mut u8>()), align)?;
    Ok((size, align))
}

impl Pool<'static> {
    /// A pool owning a fresh block of `count` slots, each able to hold
    /// `slot_size` bytes aligned to `slot_align`.
    ///
    /// Errors: a `slot_align` that is not a power of two is
    /// [`AllocError::BadAlignment`]; a zero `slot_size` or `count` is
    /// [`AllocError::InvalidConfig`]; a block the global allocator cannot
    /// serve is [`AllocError::TooLarge`] or [`AllocError::OutOfMemory`].
    pub fn new(slot_size: usize, slot_align: usize, count: usize) -> Result<Self, AllocError> {
        let (size, align) = slot_geometry(slot_size, slot_align)?;
        if count == 0 {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::Count,
                value: 0,
            });
        }
        let len = size.checked_mul(count).ok_or(AllocError::TooLarge {
            requested: count,
            max: usize::MAX / size,
        })?;
        Ok(Pool::build(Buffer::owned_aligned(len, align)?, size, align))
    }

    /// A pool of `count` slots for values of type `T`.
    pub fn for_type<T>(count: usize) -> Result<Self, AllocError> {
        Pool::new(size_of::<T>().max(1), align_of::<T>(), count)
    }
}

impl<'a> Pool<'a> {
    /// A pool over the caller's bytes: as many whole slots as fit after
    /// aligning the first one.
    pub fn with_buffer(
        buffer: &'a mut [MaybeUninit<u8>],
        slot_size: usize,
        slot_align: usize,
    ) -> Result<Self, AllocError> {
        let (size, align) = slot_geometry(slot_size, slot_align)?;
        Ok(Pool::build(Buffer::borrowed(buffer), size, align))
    }

    fn build(buffer: Buffer<'a>, slot_size: usize, slot_align: usize) -> Self {
        let base = buffer.base().as_ptr() as usize;
        let first = crate::align_up(base, slot_align) - base;
        let capacity = buffer.len().saturating_sub(first) / slot_size;
        let mut pool = Pool {
            buffer,
            first,
            slot_size,
            slot_align,
            capacity,
            head: Cell::new(ptr::null_mut()),
            free: Cell::new(0),
            #[cfg(debug_assertions)]
            free_bits: (0..capacity.div_ceil(64)).map(|_| Cell::new(0)).collect(),
        };
        pool.reset();
        pool
    }

    /// Pointer to slot `i` (`i <= capacity`), with the block's provenance.
    #[inline(always)]
    fn slot(&self, i: usize) -> *mut u8 {
        debug_assert!(i <= self.capacity);
        self.buffer
            .base()
            .as_ptr()
            .wrapping_add(self.first + i * self.slot_size)
    }

    /// Makes every slot free again, linked in address order (slot 0 first, as
    /// the chapter's `Init` does). Needs `&mut self`: no slot can be in use
    /// through a borrow.
    pub fn reset(&mut self) {
        let mut next = ptr::null_mut();
        for i in (0..self.capacity).rev() {
            let slot = self.slot(i);
            // SAFETY: slot `i < capacity` lies inside the block, is aligned to
            // `slot_align >= align_of::<*mut u8>()` and at least a pointer long.
            unsafe { slot.cast::<*mut u8>().write(next) };
            next = slot;
        }
        self.head.set(next);
        self.free.set(self.capacity);
        #[cfg(debug_assertions)]
        for (w, word) in self.free_bits.iter().enumerate() {
            let bits = (self.capacity - w * 64).min(64);
            word.set(if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            });
        }
    }

    /// Takes one slot off the free list (the chapter's `Alloc`).
    ///
    /// An empty pool is [`AllocError::OutOfMemory`].
    #[inline(always)]
    pub fn alloc(&self) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(self.free.get() <= self.capacity);
        let Some(slot) = NonNull::new(self.head.get()) else {
            return Err(AllocError::OutOfMemory {
                requested: self.slot_size,
                available: 0,
            });
        };
        debug_assert!(
            self.index_of(slot).is_some(),
            "free-list head {slot:#p} is not a slot of this pool"
        );
        // SAFETY: by the free-list invariant `slot` is a free slot of the
        // block, aligned for a pointer, whose first word holds the next free
        // slot.
        let next = unsafe { slot.as_ptr().cast::<*mut u8>().read() };
        self.head.set(next);
        self.free.set(self.free.get() - 1);
        #[cfg(debug_assertions)]
        self.mark(slot, false);
        Ok(slot)
    }

    /// Puts a slot back on the free list (the chapter's `Free`).
    ///
    /// Debug builds refuse a pointer that is not a slot of this pool
    /// ([`AllocError::ForeignPointer`]) and a slot that is already free
    /// ([`AllocError::DoubleFree`]), changing nothing. Release builds check
    /// nothing and always return `Ok`; use [`free_checked`](Self::free_checked)
    /// for the checks in every build.
    ///
    /// # Safety
    ///
    /// `ptr` was returned by [`alloc`](Self::alloc) (or the trait impls) on
    /// this pool, since the last reset, and is not used after this call. In
    /// release builds it must not have been freed already.
    #[inline(always)]
    pub unsafe fn free(&self, ptr: NonNull<u8>) -> Result<(), AllocError> {
        #[cfg(debug_assertions)]
        {
            let i = self.index_of(ptr).ok_or(AllocError::ForeignPointer)?;
            if self.is_marked_free(i) {
                return Err(AllocError::DoubleFree);
            }
            self.mark(ptr, true);
        }
        debug_assert!(self.free.get() < self.capacity);
        // SAFETY: the caller guarantees `ptr` is an allocated slot of this
        // pool (so inside the block, aligned for a pointer, a pointer long)
        // that nobody uses any more.
        unsafe { ptr.as_ptr().cast::<*mut u8>().write(self.head.get()) };
        self.head.set(ptr.as_ptr());
        self.free.set(self.free.get() + 1);
        Ok(())
    }

    /// [`free`](Self::free) with every check in every build: a pointer that is
    /// not a slot of this pool is [`AllocError::ForeignPointer`], a slot that
    /// is already free is [`AllocError::DoubleFree`]; either way nothing
    /// changes. Costs O(free slots) in release builds (a walk of the list).
    ///
    /// # Safety
    ///
    /// If `ptr` is an allocated slot of this pool, it is not used after this
    /// call.
    pub unsafe fn free_checked(&self, ptr: NonNull<u8>) -> Result<(), AllocError> {
        let i = self.index_of(ptr).ok_or(AllocError::ForeignPointer)?;
        if self.slot_is_free(i) {
            return Err(AllocError::DoubleFree);
        }
        // SAFETY: `ptr` is slot `i` of this pool and not free, so it was
        // handed out and (by the caller's promise) is no longer used.
        unsafe { self.free(ptr) }
    }

    /// Whether slot `i` is on the free list.
    fn slot_is_free(&self, i: usize) -> bool {
        #[cfg(debug_assertions)]
        {
            self.is_marked_free(i)
        }
        #[cfg(not(debug_assertions))]
        {
            let target = self.slot(i);
            let mut p = self.head.get();
            let mut steps = 0;
            while !p.is_null() && steps <= self.capacity {
                if p == target {
                    return true;
                }
                // SAFETY: `p` is on the free list, so it is a free slot whose
                // first word is the next free slot.
                p = unsafe { p.cast::<*mut u8>().read() };
                steps += 1;
            }
            false
        }
    }

    #[cfg(debug_assertions)]
    fn is_marked_free(&self, i: usize) -> bool {
        self.free_bits[i / 64].get() & (1 << (i % 64)) != 0
    }

    #[cfg(debug_assertions)]
    fn mark(&self, slot: NonNull<u8>, free: bool) {
        let i = self.index_of(slot).expect("slot of this pool");
        let word = &self.free_bits[i / 64];
        let bit = 1u64 << (i % 64);
        debug_assert_eq!(word.get() & bit != 0, !free, "slot {i} free state");
        word.set(if free {
            word.get() | bit
        } else {
            word.get() & !bit
        });
    }

    /// The slot index of `ptr`, if it is the start of one of this pool's slots.
    pub fn index_of(&self, ptr: NonNull<u8>) -> Option<usize> {
        let start = self.slot(0) as usize;
        let delta = (ptr.as_ptr() as usize).checked_sub(start)?;
        let i = delta / self.slot_size;
        (delta.is_multiple_of(self.slot_size) && i < self.capacity).then_some(i)
    }

    /// Number of slots.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of free slots.
    #[inline]
    pub fn free_count(&self) -> usize {
        self.free.get()
    }

    /// Bytes per slot (after rounding).
    #[inline]
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Alignment of every slot (after rounding).
    #[inline]
    pub fn slot_align(&self) -> usize {
        self.slot_align
    }

    /// Whether `layout` fits a slot.
    #[inline]
    fn fits(&self, layout: Layout) -> Result<(), AllocError> {
        if layout.size() > self.slot_size {
            return Err(AllocError::TooLarge {
                requested: layout.size(),
                max: self.slot_size,
            });
        }
        if layout.align() > self.slot_align {
            return Err(AllocError::TooLarge {
                requested: layout.align(),
                max: self.slot_align,
            });
        }
        Ok(())
    }
}

// SAFETY: `allocate` hands out one free slot of the pool's buffer, at least
// `layout.size()` bytes (larger layouts are refused), aligned, off the free
// list until `deallocate` puts it back; valid until `reset` (`&mut self`).
unsafe impl RawAllocator for Pool<'_> {
    const FREES_INDIVIDUALLY: bool = true;

    /// One slot, if `layout` fits in it ([`AllocError::TooLarge`] otherwise).
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        self.fits(layout)?;
        Ok(NonNull::slice_from_raw_parts(self.alloc()?, self.slot_size))
    }

    /// Frees the slot; panics in debug builds on a double or foreign free.
    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded; the trait's contract is `free`'s.
        if let Err(e) = unsafe { self.free(ptr) } {
            panic!("Pool::deallocate({ptr:p}): {e}");
        }
    }
}

// SAFETY: a slot stays valid (inside the block, which never moves) until it is
// freed or the pool is reset (`&mut self`) or dropped; slots never overlap; a
// slot is only handed out when the layout fits it (size and alignment).
// Zero-size requests get a dangling, aligned pointer and are never freed to
// the list.
crate::api04::allocator_api04! {
    impl ['a] Pool<'a> { frees }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_trace() {
        let pool = Pool::new(16, 4, 4).unwrap();
        assert_eq!((pool.capacity(), pool.slot_size()), (4, 16));
        let _b0 = pool.alloc().unwrap();
        let b1 = pool.alloc().unwrap();
        let _b2 = pool.alloc().unwrap();
        // SAFETY: b1 is a live slot of `pool`.
        unsafe { pool.free(b1).unwrap() };
        assert_eq!(pool.alloc().unwrap(), b1);
        pool.alloc().unwrap();
        assert_eq!(pool.free_count(), 0);
        assert!(matches!(pool.alloc(), Err(AllocError::OutOfMemory { .. })));
    }

    #[test]
    fn checked_free_catches_the_cycle_bug() {
        let pool = Pool::new(8, 8, 4).unwrap();
        let a = pool.alloc().unwrap();
        let _b = pool.alloc().unwrap();
        // SAFETY: `a` is live.
        unsafe { pool.free_checked(a).unwrap() };
        // SAFETY: the second free is refused before it touches anything.
        assert_eq!(unsafe { pool.free_checked(a) }, Err(AllocError::DoubleFree));
        // The list is intact: a, then the two untouched slots, then empty.
        let got: Vec<_> = (0..3).map(|_| pool.alloc().unwrap()).collect();
        assert_eq!(got[0], a);
        assert!(got[1] != got[2] && got[1] != a && got[2] != a);
        assert!(pool.alloc().is_err());
    }

    #[test]
    fn geometry_rounds_up() {
        let pool = Pool::new(3, 1, 2).unwrap();
        assert_eq!(pool.slot_size(), size_of::<*mut u8>());
        let pool = Pool::new(20, 16, 2).unwrap();
        assert_eq!((pool.slot_size(), pool.slot_align()), (32, 16));
        let pool = Pool::new(8, 256, 3).unwrap();
        for _ in 0..3 {
            assert_eq!(pool.alloc().unwrap().as_ptr() as usize % 256, 0);
        }
        assert_eq!(
            Pool::new(8, 3, 1).err(),
            Some(AllocError::BadAlignment { align: 3 })
        );
    }
}
