//! The allocator probes built as a shared library (`crate-type = ["cdylib"]`),
//! the code the `x86_64-linux-dylib` profile describes: default PIC, so a
//! thread-local goes through `__tls_get_addr@PLT` and the dynamic loader.
//!
//! The `#[unsafe(no_mangle)] extern "C"` probes of `allocasm::probes` are
//! exported as they are (a cdylib exports its dependencies' C symbols); the
//! probe driver (`suite/probe-bins/probe_driver.rs`) dlopens this library and calls
//! them through `dlsym`'s pointers. The functions below are the driver's
//! set-up for the per-thread cache probes: the cache is a thread-local of
//! *this* library, so filling it, and telling it a heap is gone (`Drop`),
//! must run this library's code (the driver's own copy of allocasm has its
//! own thread-locals). None is a probe, so no measured window opens at them.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use allocasm::SegregatedFit;

/// A new `SegregatedFit`, boxed; dropped by
/// [`allocasm_dylib_segregated_drop`].
#[allow(improper_ctypes_definitions)]
#[unsafe(no_mangle)]
pub extern "C" fn allocasm_dylib_segregated_new() -> *mut SegregatedFit {
    Box::into_raw(Box::new(SegregatedFit::new()))
}

/// Drops a heap of [`allocasm_dylib_segregated_new`]: its `Drop` makes this
/// library's per-thread caches forget it, so the next heap takes the
/// thread's primary cache.
///
/// # Safety
///
/// `a` came from [`allocasm_dylib_segregated_new`] and is dropped once.
#[allow(improper_ctypes_definitions)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn allocasm_dylib_segregated_drop(a: *mut SegregatedFit) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(a) });
}

/// `a.alloc` of `size` bytes aligned to 8, in this library; null on failure.
#[allow(improper_ctypes_definitions)]
#[unsafe(no_mangle)]
pub extern "C" fn allocasm_dylib_segregated_alloc(a: &SegregatedFit, size: usize) -> *mut u8 {
    match Layout::from_size_align(size, 8) {
        Ok(layout) => a.alloc(layout).map_or(ptr::null_mut(), NonNull::as_ptr),
        Err(_) => ptr::null_mut(),
    }
}

/// `a.dealloc` of a block of `size` bytes aligned to 8, in this library.
///
/// # Safety
///
/// `ptr` was allocated by `a` with `size` and alignment 8 and is freed once.
#[allow(improper_ctypes_definitions)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn allocasm_dylib_segregated_dealloc(
    a: &SegregatedFit,
    ptr: *mut u8,
    size: usize,
) {
    // SAFETY: the caller's contract; `Layout` is valid because `a`
    // allocated this size with alignment 8.
    unsafe {
        a.dealloc(
            NonNull::new_unchecked(ptr),
            Layout::from_size_align_unchecked(size, 8),
        )
    }
}
