//! Miri's stand-in for virtual memory: page-aligned zeroed heap blocks, with
//! protection changes as no-ops. Only compiled under `cfg(miri)`.

use core::ptr::NonNull;
use std::alloc::{Layout, alloc_zeroed, dealloc};

use crate::AllocError;

const PAGE: usize = 4096;

pub(super) fn page_size() -> usize {
    PAGE
}

/// The largest reservation the stand-in backs: Miri aborts (rather than
/// failing) on a heap allocation larger than the host can give, where a real
/// `mmap` would return ENOMEM.
const MAX_RESERVATION: usize = 1 << 30;

pub(super) const SPLITS: bool = false;

pub(super) fn granularity() -> usize {
    PAGE
}

pub(super) fn map(len: usize) -> Result<NonNull<u8>, AllocError> {
    reserve(len)
}

pub(super) unsafe fn purge(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is committed and ours.
    unsafe { ptr.as_ptr().write_bytes(0, len) };
    Ok(())
}

pub(super) unsafe fn remap(_ptr: NonNull<u8>, _old: usize, _new: usize) -> Option<NonNull<u8>> {
    None
}

pub(super) fn reserve(len: usize) -> Result<NonNull<u8>, AllocError> {
    if len > MAX_RESERVATION {
        return Err(AllocError::Os { code: 12 });
    }
    let layout = Layout::from_size_align(len, PAGE).map_err(|_| AllocError::Os { code: 22 })?;
    // SAFETY: `len` is non-zero (callers reserve whole pages).
    NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(AllocError::Os { code: 12 })
}

pub(super) unsafe fn commit(_ptr: NonNull<u8>, _len: usize) -> Result<(), AllocError> {
    Ok(())
}

pub(super) unsafe fn decommit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation.
    unsafe { ptr.as_ptr().write_bytes(0, len) };
    Ok(())
}

pub(super) unsafe fn release(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees this is exactly one reservation.
    unsafe { dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(len, PAGE)) };
    Ok(())
}

#[cfg(not(loom))]
/// Miri runs no `fork` handlers: nothing to register.
pub(super) fn at_fork(
    _prepare: super::ForkHandler,
    _parent: super::ForkHandler,
    _child: super::ForkHandler,
) -> bool {
    false
}

/// The stand-in's ranges are heap blocks, freed whole: keep it.
pub(super) unsafe fn shrink(_ptr: NonNull<u8>, _old: usize, _new: usize) -> bool {
    false
}

/// Through std's standard error, which is unbuffered: a write, no
/// allocation (the handle and its lock are static).
pub(super) fn write_stderr(msg: &[u8]) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg);
}
