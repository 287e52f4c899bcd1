//! `PageAllocator`: page-granular virtual memory straight from the OS.
//!
//! **Contract.** `alloc(n)` returns `round(n)` bytes of committed, zeroed,
//! page-aligned memory; `dealloc(ptr, n)` with the same `n` gives it back.
//! Any thread may allocate and free (`Send + Sync`; there is no state).
//! For finer control, [`reserve`](PageAllocator::reserve) /
//! [`commit`](PageAllocator::commit) / [`decommit`](PageAllocator::decommit) /
//! [`release`](PageAllocator::release) expose the four steps.
//!
//! **Fast path.** None: every call is a system call (mmap + mprotect, or
//! VirtualAlloc). This is the base allocator the others grow from.
//!
//! **Costs.** No metadata; each allocation wastes `round(n) - n` bytes, which
//! [`round`](PageAllocator::round) lets a caller size away (the segregated
//! allocator sizes its spans to exactly that answer). Failure: `AllocError::Os`.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::{AllocError, RawAllocator, sys};

/// Page-granular virtual memory from the OS.
///
/// `alloc(n)` returns `round(n)` bytes of committed, zeroed, page-aligned
/// memory; `dealloc(ptr, n)` with the same `n` gives it back. Every call is a
/// system call; there is no metadata. Any thread may allocate and free.
///
/// ```
/// use allocasm::PageAllocator;
///
/// let pages = PageAllocator::new();
/// let block = pages.alloc(10_000).unwrap();
/// assert_eq!(block.len(), pages.round(10_000).unwrap());
/// assert_eq!(block.cast::<u8>().as_ptr() as usize % pages.page_size(), 0);
/// // Fresh pages read as zero.
/// // SAFETY: `block` is ours, committed, `block.len()` bytes.
/// assert!(unsafe { block.as_ref() }.iter().all(|&b| b == 0));
/// // SAFETY: allocated above with the same `n`, not used afterwards.
/// unsafe { pages.dealloc(block.cast(), 10_000) };
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct PageAllocator;

impl PageAllocator {
    /// A page allocator (it has no state).
    pub const fn new() -> Self {
        PageAllocator
    }

    /// The OS page size in bytes.
    ///
    /// ```
    /// let page = allocasm::PageAllocator::new().page_size();
    /// assert!(page.is_power_of_two() && page >= 4096);
    /// ```
    #[inline]
    pub fn page_size(&self) -> usize {
        sys::page_size()
    }

    /// What one reservation of the OS is rounded to, in bytes (a power of
    /// two, a multiple of the page size): the page size on Unix, the 64 KiB
    /// allocation granularity on Windows.
    ///
    /// ```
    /// let pages = allocasm::PageAllocator::new();
    /// assert!(pages.granularity().is_multiple_of(pages.page_size()));
    /// ```
    #[inline]
    pub fn granularity(&self) -> usize {
        sys::granularity()
    }

    /// What a request of `n` bytes is rounded to: the next multiple of the
    /// page size (and at least one page). `None` on overflow.
    ///
    /// ```
    /// let pages = allocasm::PageAllocator::new();
    /// let p = pages.page_size();
    /// assert_eq!(pages.round(1), Some(p));
    /// assert_eq!(pages.round(p + 1), Some(2 * p));
    /// ```
    #[inline]
    pub fn round(&self, n: usize) -> Option<usize> {
        let page = self.page_size();
        let n = n.max(1).checked_add(page - 1)?;
        Some(n & !(page - 1))
    }

    /// `ptr`, a block of `old.size()` bytes, resized in place to `new`:
    /// when both sizes are non-zero and round to the same pages, and `new`
    /// asks for at most a page's alignment. `None` otherwise.
    fn same_pages(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Option<NonNull<u8>> {
        let fits = old.size() != 0 && new.size() != 0 && new.align() <= self.page_size();
        (fits && self.round(old.size()) == self.round(new.size())).then_some(ptr)
    }

    /// Reserves, then commits, `round(n)` bytes: page-aligned, zeroed.
    pub fn alloc(&self, n: usize) -> Result<NonNull<[u8]>, AllocError> {
        if n == 0 {
            return Err(AllocError::ZeroSize);
        }
        let len = self.round(n).ok_or(AllocError::TooLarge {
            requested: n,
            max: isize::MAX as usize,
        })?;
        let ptr = sys::reserve(len)?;
        // SAFETY: `ptr..ptr+len` is exactly the reservation just made.
        if let Err(e) = unsafe { sys::commit(ptr, len) } {
            // SAFETY: as above; nothing else has seen the range.
            let _ = unsafe { sys::release(ptr, len) };
            return Err(e);
        }
        // Exposed so that `dealloc` can release the whole mapping through a
        // pointer that only covers a part of it (a `Box<T, PageAllocator>`
        // hands back a pointer retagged to `size_of::<T>()` bytes).
        let _ = ptr.as_ptr().expose_provenance();
        Ok(NonNull::slice_from_raw_parts(ptr, len))
    }

    /// Gives back memory from [`alloc`](Self::alloc).
    ///
    /// # Safety
    ///
    /// `ptr` came from `alloc(n)` on a page allocator with this same `n` (or
    /// any `n` that rounds to the same length), and nothing uses it afterwards.
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, n: usize) {
        let len = self.round(n).expect("size was valid when allocated");
        // The mapping's own provenance (exposed by `alloc`): the caller's
        // pointer may be valid for only part of it.
        let whole = core::ptr::with_exposed_provenance_mut::<u8>(ptr.as_ptr().addr());
        // SAFETY: non-null: `ptr` is.
        let whole = unsafe { NonNull::new_unchecked(whole) };
        // SAFETY: the caller guarantees this is exactly one reservation.
        let r = unsafe { sys::release(whole, len) };
        debug_assert!(r.is_ok(), "release failed: {r:?}");
    }

    /// Reserves `round(n)` bytes of address space with no access.
    pub fn reserve(&self, n: usize) -> Result<NonNull<[u8]>, AllocError> {
        let len = self.round(n).ok_or(AllocError::TooLarge {
            requested: n,
            max: isize::MAX as usize,
        })?;
        Ok(NonNull::slice_from_raw_parts(sys::reserve(len)?, len))
    }

    /// Commits `len` bytes at `ptr` (page-aligned, inside a reservation).
    ///
    /// # Safety
    ///
    /// `ptr..ptr+len` is page-aligned and lies inside one range returned by
    /// [`reserve`](Self::reserve) that has not been released. Fresh pages
    /// read as zero.
    pub unsafe fn commit(&self, ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
        // SAFETY: forwarded contract.
        unsafe { sys::commit(ptr, len) }
    }

    /// Decommits `len` bytes at `ptr`, keeping the addresses reserved.
    ///
    /// # Safety
    ///
    /// As for [`commit`](Self::commit); nothing may use the range afterwards
    /// until it is committed again (it is inaccessible, its physical pages
    /// given back).
    pub unsafe fn decommit(&self, ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
        // SAFETY: forwarded contract.
        unsafe { sys::decommit(ptr, len) }
    }

    /// Releases a whole reservation.
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly those of one [`reserve`](Self::reserve)
    /// call (`len` its rounded length), and nothing uses the range
    /// afterwards.
    pub unsafe fn release(&self, ptr: NonNull<u8>, len: usize) -> Result<(), AllocError> {
        // SAFETY: forwarded contract.
        unsafe { sys::release(ptr, len) }
    }
}

// SAFETY: `allocate` returns a fresh mapping of whole pages, at least
// `layout.size()` bytes, aligned, disjoint from any other, valid until
// `deallocate` unmaps it.
unsafe impl RawAllocator for PageAllocator {
    const FREES_INDIVIDUALLY: bool = true;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.align() > self.page_size() {
            return Err(AllocError::TooLarge {
                requested: layout.align(),
                max: self.page_size(),
            });
        }
        self.alloc(layout.size())
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from `allocate(layout)`.
        unsafe { self.dealloc(ptr, layout.size()) }
    }
}

// SAFETY: every block is its own mapping of `round(size)` bytes, page-aligned
// (so aligned to any `align <= page`), valid until `deallocate` releases
// exactly it; the allocator has no state, so copies are the same allocator.
// Zero-size layouts get a dangling aligned pointer and are not released. A
// block is resized in place only while its new size rounds to the same pages
// and its new alignment is at most a page, so it keeps its mapping and
// `deallocate` with the new layout releases exactly it.
crate::api04::allocator_api04! {
    impl [] PageAllocator { frees, zeroed_by_os, resizes_with(same_pages), grow_zeroed_in_place }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Allocator;

    /// A shrink to the same pages but an alignment above a page cannot keep
    /// the block where it is (a mapping is only page-aligned): it is
    /// refused, as such an allocation is. Before the check, the block was
    /// kept in place and handed back misaligned.
    #[test]
    fn a_shrink_to_more_than_page_alignment_is_not_kept_in_place() {
        let pages = PageAllocator::new();
        let page = pages.page_size();
        let old = Layout::from_size_align(page, 8).unwrap();
        let new = Layout::from_size_align(page, page * 2).unwrap();
        let block = Allocator::allocate(&pages, old).unwrap().cast::<u8>();
        // SAFETY: `block` is live with `old`, and `new` is no larger.
        match unsafe { pages.shrink(block, old, new) } {
            Ok(p) => panic!("shrunk to {p:p}, which is not aligned to {}", new.align()),
            // SAFETY: a refused shrink leaves the block live with `old`.
            Err(_) => unsafe { Allocator::deallocate(&pages, block, old) },
        }
    }
}
