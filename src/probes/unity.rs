//! Probes for Unity's lifetime allocators: each calls one fast path with the
//! allocator's own minimum alignment as a constant, and returns null where the
//! fast path fails (no fallback, no growth: those are the slow paths).

use core::ptr::null_mut;

use crate::{Rewindable, Temp, TempJob};

/// `Rewindable::try_alloc(size, 64)`: one atomic add on the current block's
/// offset, then a fit check.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C-unwind" fn probe_rewindable_alloc(r: &Rewindable, size: usize) -> *mut u8 {
    match r.try_alloc(size, Rewindable::MIN_ALIGN) {
        Ok(p) => p.as_ptr(),
        Err(_) => null_mut(),
    }
}

/// `Temp::try_alloc(size, 64)`: the per-thread stack bump; null when the
/// buffer is full (the fallback is the caller's slow path, not probed).
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C" fn probe_temp_alloc(t: &Temp<&TempJob>, size: usize) -> *mut u8 {
    match t.try_alloc(size, 64) {
        Ok(p) => p.as_ptr(),
        Err(_) => null_mut(),
    }
}

/// `TempJob::try_alloc(size, 16)`: one atomic add on the shared pool offset,
/// a fit check, and the block's record; null when the pool is full (the
/// overflow is the slow path, not probed).
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C-unwind" fn probe_tempjob_alloc(j: &TempJob, size: usize) -> *mut u8 {
    match j.try_alloc(size, TempJob::MIN_ALIGN) {
        Ok(p) => p.as_ptr(),
        Err(_) => null_mut(),
    }
}
