//! The one interface every allocator of the crate offers, so that wrappers
//! ([`Tracked`](crate::Tracked), [`Guarded`](crate::Guarded)) and the
//! conformance suite work over any of them.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::AllocError;

/// An allocator that hands out blocks through a shared reference.
///
/// Every allocator of the crate implements it. Allocators that free only in
/// bulk (arenas, frame allocators) implement [`deallocate`] as a no-op or as
/// accounting, and say so with [`RawAllocator::FREES_INDIVIDUALLY`].
///
/// [`deallocate`]: RawAllocator::deallocate
pub trait RawAllocator {
    /// Whether [`deallocate`](RawAllocator::deallocate) makes the block's bytes
    /// available to a later allocation (a pool, a free list), rather than
    /// waiting for a reset or a rewind.
    const FREES_INDIVIDUALLY: bool;

    /// Allocates `layout.size()` bytes aligned to `layout.align()`.
    ///
    /// A zero-size layout is refused with [`AllocError::ZeroSize`].
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError>;

    /// Gives a block back.
    ///
    /// # Safety
    ///
    /// `ptr` was returned by [`allocate`](RawAllocator::allocate) on this
    /// allocator with this `layout`, has not been given back since, and no
    /// reset or rewind has happened in between.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout);

    /// Allocates `size` bytes aligned to `align`, validating both: a
    /// non-power-of-two `align` is [`AllocError::BadAlignment`].
    fn allocate_aligned(&self, size: usize, align: usize) -> Result<NonNull<[u8]>, AllocError> {
        crate::check_align(align)?;
        let layout = Layout::from_size_align(size, align).map_err(|_| AllocError::TooLarge {
            requested: size,
            max: isize::MAX as usize,
        })?;
        self.allocate(layout)
    }
}

impl<A: RawAllocator + ?Sized> RawAllocator for &A {
    const FREES_INDIVIDUALLY: bool = A::FREES_INDIVIDUALLY;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        (**self).allocate(layout)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded; the caller upholds the contract for `A`.
        unsafe { (**self).deallocate(ptr, layout) }
    }
}
