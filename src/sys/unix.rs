//! Unix virtual memory through `rustix` (mmap / mprotect / madvise / munmap).

use core::ffi::c_void;
use core::ptr::NonNull;

use rustix::mm::{self, MapFlags, MprotectFlags, ProtFlags};

use crate::AllocError;

fn os_err(e: rustix::io::Errno) -> AllocError {
    AllocError::Os {
        code: e.raw_os_error(),
    }
}

pub(super) fn page_size() -> usize {
    rustix::param::page_size()
}

pub(super) fn reserve(len: usize) -> Result<NonNull<u8>, AllocError> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing aliases nothing.
    let p = unsafe {
        mm::mmap_anonymous(
            core::ptr::null_mut(),
            len,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )
    }
    .map_err(os_err)?;
    NonNull::new(p.cast::<u8>()).ok_or(AllocError::Os { code: 0 })
}

pub(super) unsafe fn commit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation.
    unsafe {
        mm::mprotect(
            ptr.as_ptr().cast::<c_void>(),
            len,
            MprotectFlags::READ | MprotectFlags::WRITE,
        )
    }
    .map_err(os_err)
}

pub(super) unsafe fn decommit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation and
    // unused; MADV_DONTNEED drops the pages (they read as zero if recommitted).
    unsafe {
        mm::madvise(
            ptr.as_ptr().cast::<c_void>(),
            len,
            mm::Advice::LinuxDontNeed,
        )
    }
    .map_err(os_err)?;
    // SAFETY: as above.
    unsafe { protect_none(ptr, len) }
}

pub(super) unsafe fn protect_none(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees the range is inside a live reservation.
    unsafe { mm::mprotect(ptr.as_ptr().cast::<c_void>(), len, MprotectFlags::empty()) }
        .map_err(os_err)
}

pub(super) unsafe fn release(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees this is exactly one reservation, unused.
    unsafe { mm::munmap(ptr.as_ptr().cast::<c_void>(), len) }.map_err(os_err)
}
