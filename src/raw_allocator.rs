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
/// # Safety
///
/// The trait is `unsafe` because safe code of this crate trusts what an
/// implementation returns: the wrappers ([`Guarded`](crate::Guarded) writes
/// its guards into the block it gets, [`Tracked`](crate::Tracked),
/// [`Persistent`](crate::Persistent), [`Temp`](crate::Temp)) and their
/// `allocator_api2::alloc::Allocator` impls (whose callers, `Vec` and `Box`,
/// write up to the returned length) would otherwise write out of bounds
/// behind a safe API. An implementation must guarantee:
///
/// - a block that [`allocate`] (or [`allocate_aligned`]) returns as
///   `Ok(ptr)` is valid for reads and writes of `ptr.len()` bytes, with
///   `ptr.len() >= layout.size()`, and its address is a multiple of
///   `layout.align()`;
/// - it overlaps no other block of this allocator that is still live;
/// - it stays valid until it is given back with [`deallocate`], or until an
///   operation that takes the allocator by `&mut self` or by value (a reset,
///   a rewind, the end of a frame, drop) ends every block's life; nothing
///   reachable through `&self` invalidates it, and neither does moving the
///   allocator while a shared borrow of it is alive (which cannot happen);
/// - [`deallocate`] accepts every block `allocate` returned, with the same
///   layout, as long as its own `# Safety` section is met.
///
/// The trait's own methods may be called by safe code in any order; an
/// implementation must not rely on being called "correctly" for memory
/// safety, except through [`deallocate`]'s contract.
///
/// A safe impl no longer compiles:
///
/// ```compile_fail,E0200
/// use core::alloc::Layout;
/// use core::ptr::NonNull;
/// use allocasm::{AllocError, RawAllocator};
///
/// struct Liar;
///
/// impl RawAllocator for Liar {
///     const FREES_INDIVIDUALLY: bool = false;
///     fn allocate(&self, _layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
///         // A dangling pointer that claims to be 4096 bytes long.
///         Ok(NonNull::slice_from_raw_parts(NonNull::dangling(), 4096))
///     }
///     unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
/// }
/// ```
///
/// [`deallocate`]: RawAllocator::deallocate
/// [`allocate`]: RawAllocator::allocate
/// [`allocate_aligned`]: RawAllocator::allocate_aligned
pub unsafe trait RawAllocator {
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
        self.allocate(crate::align::layout_for(size, align)?)
    }
}

// SAFETY: forwards to `A`, which upholds the contract; a shared reference is
// the same allocator.
unsafe impl<A: RawAllocator + ?Sized> RawAllocator for &A {
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

/// `impl [generics] Type { |a, layout| block }`: `RawAllocator` for an
/// allocator that frees only in bulk (a reset, a rewind, the end of a
/// frame). `allocate` returns `block` (a `Result<NonNull<u8>, AllocError>`
/// computed from `a`, the allocator, and `layout`) as `layout.size()`
/// bytes; `deallocate` does nothing, and the doc comment before `impl`,
/// which says when the bytes come back, is its own.
///
/// The invocation stands under a `// SAFETY:` comment that says why the
/// blocks keep the trait's contract.
macro_rules! bulk_raw_allocator {
    ($(#[$doc:meta])* impl [$($g:tt)*] $ty:ty { |$a:ident, $layout:ident| $block:expr }) => {
        // SAFETY: the invocation's comment says why `$block` is a block of
        // at least `layout.size()` bytes that keeps the contract; the
        // `deallocate` that does nothing keeps it too.
        unsafe impl<$($g)*> $crate::RawAllocator for $ty {
            const FREES_INDIVIDUALLY: bool = false;

            #[inline]
            fn allocate(
                &self,
                $layout: ::core::alloc::Layout,
            ) -> Result<::core::ptr::NonNull<[u8]>, $crate::AllocError> {
                let $a = self;
                let ptr = $block?;
                Ok(::core::ptr::NonNull::slice_from_raw_parts(ptr, $layout.size()))
            }

            $(#[$doc])*
            #[inline]
            unsafe fn deallocate(
                &self,
                _ptr: ::core::ptr::NonNull<u8>,
                _layout: ::core::alloc::Layout,
            ) {
            }
        }
    };
}

pub(crate) use bulk_raw_allocator;
