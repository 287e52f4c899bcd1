//! Probes for the segregated allocators.
//!
//! Each exports exactly one fast path of [`SegregatedFit`], with the
//! alignment fixed at 8 (the class granule), so the codegen suite can read
//! what it compiles to: the shared level (the write-up's class queue,
//! through [`SegregatedFit::alloc_shared`] / [`SegregatedFit::dealloc_shared`])
//! and the per-thread cached path in front of it ([`SegregatedFit::alloc`] /
//! [`SegregatedFit::dealloc`]).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};

use crate::SegregatedFit;

/// The two-level class index of a `size`-byte request aligned to 8
/// (`usize::MAX` for the large path): `lzcnt`/`bsr` on x86, `clz` on arm64,
/// shifts and compares, no loop, no call.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn probe_segregated_size_class(size: usize) -> usize {
    SegregatedFit::size_class(size, 8).map_or(usize::MAX, |c| c.index())
}

/// Pops a block of the class of `size` (align 8) from the class queue: the
/// class index, then one compare-exchange on the sequenced front in a retry
/// loop (on ARMv7 one `ldrexd`/`strexd` pair, no loop: a failed
/// store-exclusive takes the miss), and the relaxed add on the class's
/// free-block count. Growth, the last block and the large path are calls to
/// cold functions. Null on failure.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn probe_segregated_alloc(a: &SegregatedFit, size: usize) -> *mut u8 {
    match Layout::from_size_align(size, 8) {
        Ok(layout) if size != 0 => a
            .alloc_shared_or_none(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr),
        _ => ptr::null_mut(),
    }
}

/// Allocates a block of the class of `size` (align 8) from the calling
/// thread's cache: the class index, one thread-local access, a compare of
/// the cache's owner with the heap, the list head and its link loaded, two
/// stores. No atomic read-modify-write, no call on the hit path (the
/// thread-local access itself is a call on macOS: the TLV thunk). The miss
/// (refill from the queue) and the large path are cold tail calls. Through
/// `GlobalAlloc::alloc`, what `#[global_allocator]` users run. Null on
/// failure.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn probe_segregated_cached_alloc(a: &SegregatedFit, size: usize) -> *mut u8 {
    match Layout::from_size_align(size, 8) {
        // SAFETY: `GlobalAlloc::alloc` has no precondition beyond the
        // layout's non-zero size, which the guard checks.
        Ok(layout) if size != 0 => unsafe { GlobalAlloc::alloc(a, layout) },
        _ => ptr::null_mut(),
    }
}

/// Pushes the block `ptr` of `size` bytes (align 8) back onto its class
/// queue: one store, one swap of the back pointer, one store linking the old
/// tail, and the relaxed add on the class's free-block count (the empty
/// transition and the large path are cold calls).
///
/// # Safety
///
/// `ptr` was allocated by `a` with `size` and alignment 8, is not freed
/// twice, and is not used afterwards.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn probe_segregated_dealloc(
    a: &SegregatedFit,
    ptr: *mut u8,
    size: usize,
) {
    // SAFETY: forwarded contract; `Layout` is valid because `a` allocated
    // this size with alignment 8.
    unsafe {
        a.dealloc_shared(
            NonNull::new_unchecked(ptr),
            Layout::from_size_align_unchecked(size, 8),
        )
    }
}

/// Frees the block `ptr` of `size` bytes (align 8) into the calling
/// thread's cache: the class index, one thread-local access, the owner
/// compare, the count against the class's cap, three stores. No atomic
/// read-modify-write, no call on the hit path (macOS: the TLV thunk). A full
/// list (the flush to the queue) and the large path are cold calls.
///
/// # Safety
///
/// `ptr` was allocated by `a` with `size` and alignment 8, is not freed
/// twice, and is not used afterwards.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn probe_segregated_cached_dealloc(
    a: &SegregatedFit,
    ptr: *mut u8,
    size: usize,
) {
    // SAFETY: forwarded contract; `Layout` is valid because `a` allocated
    // this size with alignment 8.
    unsafe {
        a.dealloc(
            NonNull::new_unchecked(ptr),
            Layout::from_size_align_unchecked(size, 8),
        )
    }
}
