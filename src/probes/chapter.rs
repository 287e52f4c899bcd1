//! Probes for the chapter allocators: each calls exactly one fast path with a
//! constant alignment of 8 (the chapter's default), and returns the pointer
//! (null on failure) or an integer.

use core::ptr::{self, NonNull};

use crate::{FitPolicy, FrameAllocator, FreeList, LinearArena, Marker, Pool, StackAllocator};

/// The chapter's default alignment.
const ALIGN: usize = 8;

/// `LinearArena::alloc(size, 8)`.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_linear_alloc(arena: &LinearArena<'_>, size: usize) -> *mut u8 {
    arena
        .alloc(size, ALIGN)
        .map_or(ptr::null_mut(), NonNull::as_ptr)
}

/// `StackAllocator::alloc(size, 8)`.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_stack_alloc(stack: &StackAllocator<'_>, size: usize) -> *mut u8 {
    stack
        .alloc(size, ALIGN)
        .map_or(ptr::null_mut(), NonNull::as_ptr)
}

/// `StackAllocator::free_to_marker(marker)`: 1 when it rolled back, 0 when the
/// marker was refused.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_stack_free_to_marker(
    stack: &mut StackAllocator<'_>,
    marker: Marker,
) -> usize {
    stack.free_to_marker(marker).is_ok() as usize
}

/// `Pool::alloc()`.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_pool_alloc(pool: &Pool<'_>) -> *mut u8 {
    pool.alloc().map_or(ptr::null_mut(), NonNull::as_ptr)
}

/// `Pool::free(ptr)`: 1 when freed, 0 when refused (debug builds only refuse).
///
/// # Safety
///
/// `ptr` is null or a live slot of `pool`, not used afterwards (see
/// [`Pool::free`]).
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub unsafe extern "C" fn probe_pool_free(pool: &Pool<'_>, ptr: *mut u8) -> usize {
    let Some(ptr) = NonNull::new(ptr) else {
        return 0;
    };
    // SAFETY: the caller passes a live slot of `pool`.
    unsafe { pool.free(ptr) }.is_ok() as usize
}

/// `FreeList::alloc_with(size, 8, FirstFit)`: the first-fit walk.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C-unwind" fn probe_freelist_alloc(list: &FreeList<'_>, size: usize) -> *mut u8 {
    list.alloc_with(size, ALIGN, FitPolicy::FirstFit)
        .map_or(ptr::null_mut(), NonNull::as_ptr)
}

/// `FrameAllocator::<2>::alloc(size, 8)` (double buffering).
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_frame_alloc(frames: &FrameAllocator<2>, size: usize) -> *mut u8 {
    frames
        .alloc(size, ALIGN)
        .map_or(ptr::null_mut(), NonNull::as_ptr)
}
