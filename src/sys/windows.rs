//! Windows virtual memory through `windows-sys` (VirtualAlloc / VirtualFree).

use core::ffi::c_void;
use core::ptr::NonNull;

use windows_sys::Win32::Foundation::GetLastError;
use windows_sys::Win32::System::Memory::{
    MEM_COMMIT, MEM_DECOMMIT, MEM_RELEASE, MEM_RESERVE, MEM_RESET, PAGE_NOACCESS, PAGE_READWRITE,
    VirtualAlloc, VirtualFree,
};
use windows_sys::Win32::System::SystemInformation::{GetSystemInfo, SYSTEM_INFO};

use crate::AllocError;

fn last_err() -> AllocError {
    // SAFETY: GetLastError has no preconditions.
    let code = unsafe { GetLastError() };
    AllocError::Os { code: code as i32 }
}

pub(super) fn page_size() -> usize {
    // SAFETY: SYSTEM_INFO is plain data; GetSystemInfo fills it in.
    let mut info: SYSTEM_INFO = unsafe { core::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer.
    unsafe { GetSystemInfo(&mut info) };
    info.dwPageSize as usize
}

pub(super) const SPLITS: bool = false;

pub(super) fn granularity() -> usize {
    // SAFETY: SYSTEM_INFO is plain data; GetSystemInfo fills it in.
    let mut info: SYSTEM_INFO = unsafe { core::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer.
    unsafe { GetSystemInfo(&mut info) };
    info.dwAllocationGranularity as usize
}

pub(super) fn map(len: usize) -> Result<NonNull<u8>, AllocError> {
    // SAFETY: reserving and committing fresh address space aliases nothing.
    let p = unsafe {
        VirtualAlloc(
            core::ptr::null(),
            len,
            MEM_RESERVE | MEM_COMMIT,
            PAGE_READWRITE,
        )
    };
    NonNull::new(p.cast::<u8>()).ok_or_else(last_err)
}

pub(super) unsafe fn purge(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // MEM_RESET: the pages' contents are no longer of interest; they stay
    // committed and accessible, and are not written to the paging file.
    // SAFETY: the caller guarantees the range is committed and ours.
    let p = unsafe {
        VirtualAlloc(
            ptr.as_ptr().cast::<c_void>(),
            len,
            MEM_RESET,
            PAGE_READWRITE,
        )
    };
    if p.is_null() { Err(last_err()) } else { Ok(()) }
}

pub(super) unsafe fn remap(_ptr: NonNull<u8>, _old: usize, _new: usize) -> Option<NonNull<u8>> {
    None
}

pub(super) fn reserve(len: usize) -> Result<NonNull<u8>, AllocError> {
    // SAFETY: reserving fresh address space aliases nothing.
    let p = unsafe { VirtualAlloc(core::ptr::null(), len, MEM_RESERVE, PAGE_NOACCESS) };
    NonNull::new(p.cast::<u8>()).ok_or_else(last_err)
}

pub(super) unsafe fn commit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation.
    let p = unsafe {
        VirtualAlloc(
            ptr.as_ptr().cast::<c_void>(),
            len,
            MEM_COMMIT,
            PAGE_READWRITE,
        )
    };
    if p.is_null() { Err(last_err()) } else { Ok(()) }
}

pub(super) unsafe fn decommit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation.
    let ok = unsafe { VirtualFree(ptr.as_ptr().cast::<c_void>(), len, MEM_DECOMMIT) };
    if ok == 0 { Err(last_err()) } else { Ok(()) }
}

pub(super) unsafe fn release(ptr: NonNull<u8>, _len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees this is exactly one reservation, unused.
    let ok = unsafe { VirtualFree(ptr.as_ptr().cast::<c_void>(), 0, MEM_RELEASE) };
    if ok == 0 { Err(last_err()) } else { Ok(()) }
}

#[cfg(not(loom))]
/// Windows has no `fork`: nothing to register.
pub(super) fn at_fork(
    _prepare: super::ForkHandler,
    _parent: super::ForkHandler,
    _child: super::ForkHandler,
) -> bool {
    false
}

/// `VirtualFree(MEM_RELEASE)` releases a whole reservation only: keep it.
pub(super) unsafe fn shrink(_ptr: NonNull<u8>, _old: usize, _new: usize) -> bool {
    false
}

/// Through std's standard error, which is unbuffered: a write, no
/// allocation (the handle and its lock are static).
pub(super) fn write_stderr(msg: &[u8]) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg);
}
