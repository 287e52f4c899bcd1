//! The operating system's virtual memory: the only place with `cfg(unix)` or
//! `cfg(windows)`.
//!
//! Four operations, page-granular:
//! - [`reserve`]: address space with no access (nothing committed);
//! - [`commit`]: make a reserved range readable and writable;
//! - [`decommit`]: give the physical pages back, keep the addresses, no access;
//! - [`release`]: give the addresses back.
//!
//! Plus [`page_size`] and [`granularity`] (what one reservation is rounded to:
//! the page size on Unix, the 64 KiB allocation granularity on Windows),
//! [`map`] (reserve and commit in one system call), [`purge`] (drop the
//! physical pages of a committed range but keep it readable and writable),
//! [`remap`] (grow or shrink a mapping, moving it if needed: Linux's
//! `mremap`; `None` elsewhere) and [`shrink`] (unmap a mapping's tail in
//! place, on Unix); and two process-wide services for `SegregatedFit`:
//! [`at_fork`] (fork handlers) and [`write_stderr`] (a message without
//! allocating).
//!
//! Crate-private: [`PageAllocator`](crate::PageAllocator) is the public face
//! of this layer.

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

/// What one reservation is rounded to, in bytes (a power of two, a multiple
/// of [`page_size`]): the page size on Unix, the allocation granularity
/// (64 KiB) on Windows, where reserving less strands the rest of the
/// granule. Allocators that size their own reservations should size them to
/// this.
#[inline]
pub fn granularity() -> usize {
    imp::granularity()
}

/// Reserves and commits `len` bytes (a multiple of [`page_size`]) in one
/// system call: readable, writable, zeroed. Give it back with [`release`].
pub fn map(len: usize) -> Result<NonNull<u8>, AllocError> {
    imp::map(len)
}

/// Whether a [`purge`]d range reads as zeros afterwards (Linux's
/// `MADV_DONTNEED` on private anonymous memory; Miri's stand-in writes
/// them), not maybe its old bytes (other Unixes, Windows' `MEM_RESET`):
/// where not, the span allocator zeroes the words it needs zero before it
/// purges.
pub(crate) const PURGE_ZEROES: bool = cfg!(any(miri, target_os = "linux", target_os = "android"));

/// Drops the physical pages behind `len` bytes at `ptr` (page-aligned, inside
/// a committed range) while keeping the range readable and writable: reads
/// afterwards see zeros or the old bytes (on Windows, `MEM_RESET`: whatever
/// was there until the OS reclaims it), never fault.
///
/// # Safety
///
/// As for [`commit`]; the range must be committed, and its contents may be
/// lost.
pub unsafe fn purge(ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
    // SAFETY: forwarded contract.
    unsafe { imp::purge(ptr, len) }
}

/// Resizes the mapping of `old` bytes at `ptr` (one [`map`] or [`reserve`]
/// range, committed) to `new` bytes, moving it if needed (Linux `mremap`
/// with `MREMAP_MAYMOVE`): the new address, or `None` where the OS cannot
/// (every other target), in which case nothing changed.
///
/// # Safety
///
/// `ptr` and `old` are exactly those of one live mapping; on success the old
/// range must not be used again (unless the address is the same).
pub unsafe fn remap(ptr: NonNull<u8>, old: usize, new: usize) -> Option<NonNull<u8>> {
    // SAFETY: forwarded contract.
    unsafe { imp::remap(ptr, old, new) }
}

/// Gives the last `old - new` bytes of the mapping of `old` bytes at `ptr`
/// back to the OS (addresses and pages), keeping its first `new` bytes as
/// they are: `true` if done (the mapping is now `new` bytes long, to be
/// released with that length), `false` where the OS cannot release part of
/// a mapping (Windows, Miri) or refused, in which case nothing changed.
///
/// # Safety
///
/// `ptr` and `old` are exactly those of one live [`map`] or [`reserve`]
/// range; `new` is a non-zero multiple of [`granularity`] below `old`; nothing
/// uses the bytes past `new` afterwards.
pub unsafe fn shrink(ptr: NonNull<u8>, old: usize, new: usize) -> bool {
    debug_assert!(new > 0 && new < old && new.is_multiple_of(granularity()));
    // SAFETY: forwarded contract.
    unsafe { imp::shrink(ptr, old, new) }
}

/// Whether a [`map`] range may be released in parts, each with its own
/// [`release`] (Unix: `munmap` of any page range; not Windows, which
/// releases a reservation whole, nor Miri).
pub const SPLITS: bool = imp::SPLITS;

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

/// A process-wide fork handler: `prepare` runs in the forking thread before
/// `fork`, `parent` in the parent after it, `child` in the child (whose
/// only thread is the one that forked).
#[cfg(not(loom))]
pub(crate) type ForkHandler = unsafe extern "C" fn();

/// Registers fork handlers with the OS (`pthread_atfork`), once per call:
/// `true` if they will run on every `fork` from now on, `false` where the OS
/// has no `fork` (Windows) or cannot run them (Miri), or refused.
///
/// Never allocates through Rust's global allocator (glibc keeps the first
/// handlers in static storage; if a libc's registration does call `malloc`,
/// that is the C heap, or this crate's global allocator re-entered, which
/// callers must tolerate: see `segregated::fork`).
#[cfg(not(loom))]
pub(crate) fn at_fork(prepare: ForkHandler, parent: ForkHandler, child: ForkHandler) -> bool {
    imp::at_fork(prepare, parent, child)
}

/// Writes `msg` to standard error (fd 2) as one or more raw `write`s,
/// without allocating, buffering or locking: for messages from inside an
/// allocator, right before it aborts. Errors are ignored.
pub(crate) fn write_stderr(msg: &[u8]) {
    imp::write_stderr(msg)
}
