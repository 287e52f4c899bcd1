//! allocator-api2 0.4's `Allocator` (what `Vec::new_in(&arena)` takes),
//! written once for the crate's allocators: [`allocator_api04!`] builds it
//! from a type's [`RawAllocator`] impl. A zero-size layout, which
//! `RawAllocator` refuses and `Allocator` must serve, gets a dangling,
//! aligned pointer and is never passed on. Each allocator then names what
//! differs: whether `deallocate` frees (a pool) or waits for a reset (an
//! arena), whether fresh memory comes zeroed from the OS, and whether a
//! block can be resized in place (a bump allocator's last block, a mapping
//! whose size still rounds to the same pages); otherwise `grow` and
//! `shrink` move the block, as the trait's defaults do.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use crate::RawAllocator;

/// `impl [generics] Type { option, ... }`: allocator-api2
/// 0.4's `Allocator` for `Type`, whose `allocate` serves a zero size with
/// [`dangling_for`] and anything else with `RawAllocator::allocate`. The
/// options add the methods that differ:
///
/// - `frees`: `deallocate` passes a non-zero-size block to
///   `RawAllocator::deallocate` (with the layout it has now: the
///   invocation's safety comment says why that is one it accepts);
///   `frees_in_bulk`: `deallocate` does nothing.
/// - `zeroed_by_os`: `allocate_zeroed` is `allocate` (fresh pages).
/// - `resizes_last(|s| arena)`: `grow` and `shrink` resize the block in
///   place through `arena.resize_last` (where `arena` is an expression of
///   `s`, the `&self` of the method) when it is the arena's last one, and
///   otherwise move it into `arena` ([`resize_or_move`], [`bump_shrink`]).
/// - `resizes_with(method)`: `grow` and `shrink` resize the block in place
///   when `self.method(ptr, old, new)` returns it, and otherwise move it
///   ([`resize_or_move`]).
/// - `grow_zeroed_in_place`: `grow_zeroed` is `grow` and a zeroed tail.
///
/// The invocation stands under a `// SAFETY:` comment that says why the
/// type keeps the trait's contract.
macro_rules! allocator_api04 {
    (impl [$($g:tt)*] $ty:ty { $($opt:ident $(($($arg:tt)*))?),* $(,)? }) => {
        // SAFETY: the invocation's comment gives the type's reasons; what
        // this adds is a dangling, aligned pointer for a zero-size layout,
        // never passed to the `RawAllocator`.
        unsafe impl<$($g)*> allocator_api2::alloc::Allocator for $ty {
            #[inline]
            fn allocate(
                &self,
                layout: ::core::alloc::Layout,
            ) -> Result<::core::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
                $crate::api04::allocate(self, layout)
            }

            $($crate::api04::allocator_api04!(@$opt $(($($arg)*))?);)*
        }
    };
    (@frees) => {
        #[inline]
        unsafe fn deallocate(&self, ptr: ::core::ptr::NonNull<u8>, layout: ::core::alloc::Layout) {
            if layout.size() != 0 {
                // SAFETY: a non-zero-size block of this allocator came from
                // `RawAllocator::allocate` (the invocation says why with
                // this layout), and the caller gives it back once.
                unsafe { $crate::RawAllocator::deallocate(self, ptr, layout) }
            }
        }
    };
    (@frees_in_bulk) => {
        #[inline]
        unsafe fn deallocate(
            &self,
            _ptr: ::core::ptr::NonNull<u8>,
            _layout: ::core::alloc::Layout,
        ) {
        }
    };
    (@zeroed_by_os) => {
        /// Fresh pages come zeroed from the OS: nothing to write.
        fn allocate_zeroed(
            &self,
            layout: ::core::alloc::Layout,
        ) -> Result<::core::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            allocator_api2::alloc::Allocator::allocate(self, layout)
        }
    };
    (@resizes_last(|$s:ident| $arena:expr)) => {
        $crate::api04::allocator_api04!(@resize(|$s| $arena, resize_last, bump_shrink));
    };
    (@resizes_with($method:ident)) => {
        $crate::api04::allocator_api04!(@resize(|s| s, $method, resize_or_move));
    };
    // `grow` through `resize_or_move` and `shrink` through `$shrink`, both
    // into `$arena` with `$arena.$method` as the in-place step.
    (@resize(|$s:ident| $arena:expr, $method:ident, $shrink:ident)) => {
        unsafe fn grow(
            &self,
            ptr: ::core::ptr::NonNull<u8>,
            old: ::core::alloc::Layout,
            new: ::core::alloc::Layout,
        ) -> Result<::core::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            let $s = self;
            let arena = $arena;
            let in_place = |p, o, n| arena.$method(p, o, n);
            // SAFETY: forwarded: `ptr` is a live block of this allocator
            // with `old`; the in-place step resizes only that block.
            unsafe { $crate::api04::resize_or_move(arena, in_place, ptr, old, new) }
        }

        unsafe fn shrink(
            &self,
            ptr: ::core::ptr::NonNull<u8>,
            old: ::core::alloc::Layout,
            new: ::core::alloc::Layout,
        ) -> Result<::core::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            let $s = self;
            let arena = $arena;
            let in_place = |p, o, n| arena.$method(p, o, n);
            // SAFETY: forwarded, as for `grow`.
            unsafe { $crate::api04::$shrink(arena, in_place, ptr, old, new) }
        }
    };
    (@grow_zeroed_in_place) => {
        unsafe fn grow_zeroed(
            &self,
            ptr: ::core::ptr::NonNull<u8>,
            old: ::core::alloc::Layout,
            new: ::core::alloc::Layout,
        ) -> Result<::core::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
            // SAFETY: forwarded, as for `grow`.
            let block = unsafe { allocator_api2::alloc::Allocator::grow(self, ptr, old, new)? };
            // SAFETY: the block has at least `new.size() >= old.size()` bytes.
            unsafe {
                block
                    .cast::<u8>()
                    .as_ptr()
                    .add(old.size())
                    .write_bytes(0, new.size() - old.size())
            };
            Ok(block)
        }
    };
}

pub(crate) use allocator_api04;

/// `Allocator::allocate` through `RawAllocator::allocate`: a zero size gets
/// [`dangling_for`] instead.
#[inline]
pub(crate) fn allocate<A: RawAllocator + ?Sized>(
    a: &A,
    layout: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    if layout.size() == 0 {
        return Ok(NonNull::slice_from_raw_parts(dangling_for(layout), 0));
    }
    Ok(a.allocate(layout)?)
}

/// A non-null pointer aligned to `layout.align()` with no provenance, for
/// zero-size blocks.
#[inline]
pub(crate) fn dangling_for(layout: Layout) -> NonNull<u8> {
    // `align` is non-zero, so the pointer is non-null.
    NonNull::new(core::ptr::without_provenance_mut(layout.align())).unwrap_or(NonNull::dangling())
}

/// `grow` and `shrink`: in place through `in_place` when it can, else a
/// new block and a copy (the old block is given back to `a`, which for a
/// bump allocator keeps it until the next reset).
///
/// # Safety
///
/// As `Allocator::grow` or `Allocator::shrink`: `ptr` is a live block of
/// `a` allocated with `old`; `in_place` resizes only that block, and
/// returns it only when it now has `new`'s size and alignment.
#[inline]
pub(crate) unsafe fn resize_or_move<A: Allocator + ?Sized>(
    a: &A,
    in_place: impl FnOnce(NonNull<u8>, Layout, Layout) -> Option<NonNull<u8>>,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    if let Some(p) = in_place(ptr, old, new) {
        return Ok(NonNull::slice_from_raw_parts(p, new.size()));
    }
    let fresh = a.allocate(new)?;
    // SAFETY: both blocks have at least the smaller size's bytes and are
    // distinct live blocks; the old one is given back once.
    unsafe {
        let len = old.size().min(new.size());
        core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.cast::<u8>().as_ptr(), len);
        a.deallocate(ptr, old);
    }
    Ok(fresh)
}

/// `shrink` for a bump allocator: the last block gives its tail back; any
/// other block aligned for `new` stays where it is; otherwise a new block
/// and a copy.
///
/// # Safety
///
/// As [`resize_or_move`] for a shrink; `resize` resizes only a block of
/// `a`.
#[inline]
pub(crate) unsafe fn bump_shrink<A: Allocator + ?Sized>(
    a: &A,
    resize: impl FnOnce(NonNull<u8>, Layout, Layout) -> Option<NonNull<u8>>,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    let keep = |p: NonNull<u8>, o, n: Layout| {
        resize(p, o, n).or_else(|| (p.as_ptr() as usize).is_multiple_of(n.align()).then_some(p))
    };
    // SAFETY: forwarded; a kept block is `ptr` itself, aligned for `new`,
    // with at least `new.size() <= old.size()` bytes.
    unsafe { resize_or_move(a, keep, ptr, old, new) }
}
