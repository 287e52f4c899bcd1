//! allocator-api2 0.2's `Allocator` for every allocator of the crate, beside
//! the 0.4 one the allocators implement themselves, so that crates still on
//! 0.2 (hashbrown up to 0.17, among others) take them:
//! `hashbrown::HashMap::new_in(&arena)`.
//!
//! The two versions define the same trait (the nightly `Allocator` as it was
//! when they were cut: the same six methods, the same safety contract), but
//! Rust sees two unrelated traits, and a type that implements one does not
//! implement the other. Each impl here forwards every method to the type's
//! 0.4 impl, so the two behave identically: a block from one may be grown,
//! shrunk or freed through the other. Both versions are re-exported
//! ([`allocator_api2`](crate::allocator_api2) and
//! [`allocator_api2_02`](crate::allocator_api2_02)) so a user can name the
//! trait and the collections of the version they need without a dependency
//! of their own.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator as Api04;
use allocator_api2_02::alloc::{AllocError as AllocError02, Allocator as Api02};

use crate::{
    FrameAllocator, FreeList, Guarded, LinearArena, Pool, RawAllocator, StackAllocator, Tracked,
};
#[cfg(feature = "std")]
use crate::{
    GuardZone, PackedArena, PageAllocator, SegregatedFit, ThreadCursorArena,
    unity::{Persistent, Rewindable, Temp, TempJob},
};

/// `impl [generics] Type [where ...]`: implements 0.2's `Allocator` for
/// `Type` by forwarding to its 0.4 impl.
macro_rules! forward_to_04 {
    ($($(#[$m:meta])* impl [$($g:tt)*] $ty:ty;)*) => {$(
        $(#[$m])*
        // SAFETY: every method forwards to the 0.4 impl of the same type,
        // whose contract (the same as 0.2's) that impl
        // upholds; the only change is the error type, a unit struct in both.
        unsafe impl<$($g)*> Api02 for $ty {
            #[inline]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError02> {
                Api04::allocate(self, layout).map_err(|_| AllocError02)
            }

            #[inline]
            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError02> {
                Api04::allocate_zeroed(self, layout).map_err(|_| AllocError02)
            }

            #[inline]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: forwarded: the caller upholds the same contract.
                unsafe { Api04::deallocate(self, ptr, layout) }
            }

            #[inline]
            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, AllocError02> {
                // SAFETY: forwarded: the caller upholds the same contract.
                unsafe { Api04::grow(self, ptr, old, new) }.map_err(|_| AllocError02)
            }

            #[inline]
            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, AllocError02> {
                // SAFETY: forwarded: the caller upholds the same contract.
                unsafe { Api04::grow_zeroed(self, ptr, old, new) }.map_err(|_| AllocError02)
            }

            #[inline]
            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, AllocError02> {
                // SAFETY: forwarded: the caller upholds the same contract.
                unsafe { Api04::shrink(self, ptr, old, new) }.map_err(|_| AllocError02)
            }
        }
    )*};
}

// The same receivers as the 0.4 impls: by value where the 0.4 impl is (a
// reference then gets 0.2's blanket `impl Allocator for &A`), by reference
// where it is.
forward_to_04! {
    #[cfg(feature = "std")]
    impl [] &ThreadCursorArena;
    #[cfg(feature = "std")]
    impl [] &PackedArena;
    #[cfg(feature = "std")]
    impl [] &GuardZone;
    #[cfg(feature = "std")]
    impl [F: RawAllocator] &Temp<F>;
    #[cfg(feature = "std")]
    impl [] &Rewindable;
    #[cfg(feature = "std")]
    impl [A: RawAllocator] &Persistent<A>;
    #[cfg(feature = "std")]
    impl [] &TempJob;
    #[cfg(feature = "std")]
    impl [] PageAllocator;
    impl ['a] LinearArena<'a>;
    impl ['a] Pool<'a>;
    #[cfg(feature = "std")]
    impl [] &SegregatedFit;
    impl ['a] StackAllocator<'a>;
    impl [A: RawAllocator] &Guarded<A>;
    impl ['a] FreeList<'a>;
    impl ['t, A: RawAllocator] &Tracked<'t, A>;
    impl [const N: usize] FrameAllocator<N>;
}
