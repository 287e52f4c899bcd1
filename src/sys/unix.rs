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

pub(super) const SPLITS: bool = true;

pub(super) fn granularity() -> usize {
    page_size()
}

pub(super) fn map(len: usize) -> Result<NonNull<u8>, AllocError> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing aliases nothing.
    let p = unsafe {
        mm::mmap_anonymous(
            core::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }
    .map_err(os_err)?;
    NonNull::new(p.cast::<u8>()).ok_or(AllocError::Os { code: 0 })
}

pub(super) unsafe fn purge(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // Linux's MADV_DONTNEED drops the pages at once (private anonymous pages
    // read as zero afterwards); elsewhere the POSIX advice lets the kernel
    // reclaim them. Either way the range stays mapped and accessible.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let advice = mm::Advice::LinuxDontNeed;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let advice = mm::Advice::DontNeed;
    // SAFETY: the caller guarantees the range is committed, ours, and that
    // its contents may be lost.
    unsafe { mm::madvise(ptr.as_ptr().cast::<c_void>(), len, advice) }.map_err(os_err)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) unsafe fn remap(ptr: NonNull<u8>, old: usize, new: usize) -> Option<NonNull<u8>> {
    // SAFETY: the caller guarantees `ptr..ptr+old` is exactly one live
    // mapping of ours.
    let p = unsafe {
        mm::mremap(
            ptr.as_ptr().cast::<c_void>(),
            old,
            new,
            mm::MremapFlags::MAYMOVE,
        )
    }
    .ok()?;
    NonNull::new(p.cast::<u8>())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) unsafe fn remap(_ptr: NonNull<u8>, _old: usize, _new: usize) -> Option<NonNull<u8>> {
    None
}

pub(super) unsafe fn shrink(ptr: NonNull<u8>, old: usize, new: usize) -> bool {
    // A Unix mapping may be unmapped in parts: the tail goes, the head
    // stays mapped as it was.
    // SAFETY: the caller guarantees `ptr..ptr+old` is one live mapping of
    // ours whose bytes past `new` nothing uses; `new < old`, page-aligned.
    unsafe { mm::munmap(ptr.as_ptr().add(new).cast::<c_void>(), old - new) }.is_ok()
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
    // Mapping fresh inaccessible anonymous pages over the range (MAP_FIXED)
    // drops the old physical pages on every Unix, unlike `madvise`, whose
    // "don't need" advice is binding on Linux only.
    // SAFETY: the caller guarantees the range is inside a live reservation of
    // ours and unused, so replacing its pages aliases nothing.
    let p = unsafe {
        mm::mmap_anonymous(
            ptr.as_ptr().cast::<c_void>(),
            len,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
        )
    }
    .map_err(os_err)?;
    debug_assert_eq!(p.cast::<u8>(), ptr.as_ptr());
    Ok(())
}

pub(super) unsafe fn release(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: the caller guarantees this is exactly one reservation, unused.
    unsafe { mm::munmap(ptr.as_ptr().cast::<c_void>(), len) }.map_err(os_err)
}

#[cfg(not(loom))]
pub(super) fn at_fork(
    prepare: super::ForkHandler,
    parent: super::ForkHandler,
    child: super::ForkHandler,
) -> bool {
    // SAFETY: three plain `extern "C"` functions that live as long as the
    // process (they are items of this crate, which is linked statically or
    // never unloaded while handlers are registered).
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}

pub(super) fn write_stderr(mut msg: &[u8]) {
    while !msg.is_empty() {
        // SAFETY: `msg` is valid for reads of its length; fd 2 is only
        // written to.
        let n = unsafe { libc::write(2, msg.as_ptr().cast::<c_void>(), msg.len()) };
        if n <= 0 {
            return;
        }
        msg = &msg[n as usize..];
    }
}
