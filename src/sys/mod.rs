//! The operating system's virtual memory: the only place with `cfg(unix)` or
//! `cfg(windows)`.
//!
//! Four operations, page-granular:
//! - [`reserve`]: address space with no access (nothing committed);
//! - [`commit`]: make a reserved range readable and writable;
//! - [`decommit`]: give the physical pages back, keep the addresses, no access;
//! - [`release`]: give the addresses back.
//!
//! Plus [`protect_none`] (make a committed range inaccessible, for guard pages)
//! and [`page_size`].

#[cfg(all(unix, not(miri)))]
mod unix;
#[cfg(all(unix, not(miri)))]
use unix as imp;

#[cfg(all(windows, not(miri)))]
mod windows;
#[cfg(all(windows, not(miri)))]
use windows as imp;

// Miri cannot run mmap/mprotect system calls: it gets page-aligned heap
// memory instead, where protection changes are no-ops (so guard pages do not
// fault under Miri, and the fault tests skip there).
#[cfg(miri)]
mod miri;
#[cfg(miri)]
use miri as imp;

use core::ptr::NonNull;

use crate::AllocError;

/// The size of a virtual-memory page, in bytes (a power of two).
#[inline]
pub fn page_size() -> usize {
    imp::page_size()
}

/// Reserves `len` bytes of address space (a multiple of [`page_size`]) with
/// no access.
pub fn reserve(len: usize) -> Result<NonNull<u8>, AllocError> {
    imp::reserve(len)
}

/// Makes `len` bytes at `ptr` readable and writable. Fresh pages read as zero.
///
/// # Safety
///
/// `ptr..ptr+len` is page-aligned and lies inside one range returned by
/// [`reserve`] that has not been released.
pub unsafe fn commit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: forwarded contract.
    unsafe { imp::commit(ptr, len) }
}

/// Returns the physical pages behind `len` bytes at `ptr` to the OS and makes
/// the range inaccessible; the addresses stay reserved.
///
/// # Safety
///
/// As for [`commit`]; nothing may use the range afterwards until it is
/// committed again.
pub unsafe fn decommit(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: forwarded contract.
    unsafe { imp::decommit(ptr, len) }
}

/// Makes `len` bytes at `ptr` inaccessible (PROT_NONE / PAGE_NOACCESS) without
/// giving the pages back: any access faults.
///
/// # Safety
///
/// As for [`commit`]; nothing may use the range afterwards.
pub unsafe fn protect_none(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: forwarded contract.
    unsafe { imp::protect_none(ptr, len) }
}

/// Gives back the whole reservation of `len` bytes at `ptr`.
///
/// # Safety
///
/// `ptr` and `len` are exactly those of one [`reserve`] call, and nothing uses
/// the range afterwards.
pub unsafe fn release(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: forwarded contract.
    unsafe { imp::release(ptr, len) }
}
