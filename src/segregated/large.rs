//! The large path of [`SegregatedFit`](super::SegregatedFit): requests no
//! size class serves (above 64 KiB, or aligned above 4096).
//!
//! **Contract.** Each large block is its own page-allocator reservation,
//! freed back to the OS by `dealloc`. Live large blocks are kept in a list
//! (under a mutex: every operation here is a system call anyway) so that
//! dropping the allocator releases them too, and so that debug builds can
//! tell a foreign pointer or a double free from a real large block.
//!
//! **Layout.** A reservation of `size + align + HEADER` bytes (rounded to
//! pages by the page allocator); the block starts at the first multiple of
//! `align` at least `HEADER` bytes above the base, and the [`LargeHeader`]
//! sits right below it. So a large block has a 32-byte header, unlike class
//! blocks; the header is found from the block pointer alone.
//!
//! **Costs.** 32 bytes plus alignment padding per block, a lock and two
//! system calls per allocation and free. Failures: `TooLarge` above
//! [`MAX_REQUEST`](super::SegregatedFit::MAX_REQUEST), `Os` when the OS
//! refuses.

use core::alloc::Layout;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use crate::sync::Mutex;
use crate::{AllocError, PageAllocator};

/// The header right below every large block.
#[repr(C)]
#[derive(Debug)]
struct LargeHeader {
    /// The reservation's first byte.
    base: *mut u8,
    /// The length passed to the page allocator.
    len: usize,
    /// The neighbours in the list of live large blocks.
    prev: *mut LargeHeader,
    next: *mut LargeHeader,
}

const HEADER: usize = size_of::<LargeHeader>();

/// The head of the list of live large blocks.
#[derive(Debug)]
struct List {
    head: *mut LargeHeader,
}

// SAFETY: the list is only reached through the mutex; the headers it points
// to live in reservations owned by the allocator.
unsafe impl Send for List {}

/// The live large blocks of one allocator.
#[derive(Debug)]
pub(crate) struct LargeBlocks {
    list: Mutex<List>,
}

impl LargeBlocks {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        LargeBlocks {
            list: Mutex::new(List {
                head: ptr::null_mut(),
            }),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        LargeBlocks {
            list: Mutex::new(List {
                head: ptr::null_mut(),
            }),
        }
    }

    fn lock(&self) -> impl core::ops::DerefMut<Target = List> + '_ {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Maps a large block for `layout`.
    pub(crate) fn alloc(&self, layout: Layout, max: usize) -> Result<NonNull<u8>, AllocError> {
        let too_large = AllocError::TooLarge {
            requested: layout.size(),
            max,
        };
        // No overflow: a `Layout`'s size and align are both <= isize::MAX,
        // and `max` is far below that.
        if layout.size() > max || layout.size() + layout.align() + HEADER > max {
            return Err(too_large);
        }
        let len = layout.size() + layout.align() + HEADER;
        let pages = PageAllocator::new();
        let base = pages.alloc(len)?.cast::<u8>();
        let offset =
            (base.as_ptr().addr() + HEADER).next_multiple_of(layout.align()) - base.as_ptr().addr();
        // SAFETY: `HEADER <= offset < HEADER + align`, so the block and the
        // header below it lie inside the `len` bytes reserved.
        let block = unsafe { base.add(offset) };
        // SAFETY: as above; the header slot is 8-aligned (block and HEADER
        // are multiples of 8) and unaliased.
        let header = unsafe { block.sub(HEADER) }.cast::<LargeHeader>().as_ptr();
        let mut list = self.lock();
        // SAFETY: the slot is ours; the old head (if any) is a live header
        // reached under the lock.
        unsafe {
            header.write(LargeHeader {
                base: base.as_ptr(),
                len,
                prev: ptr::null_mut(),
                next: list.head,
            });
            if let Some(old) = list.head.as_mut() {
                old.prev = header;
            }
        }
        list.head = header;
        Ok(block)
    }

    /// Unmaps a large block.
    ///
    /// # Safety
    ///
    /// `block` came from [`alloc`](Self::alloc) on this list and is not used
    /// afterwards. Debug builds panic if it is not a live large block.
    pub(crate) unsafe fn dealloc(&self, block: NonNull<u8>) {
        let mut list = self.lock();
        debug_assert!(
            list_contains(&list, block),
            "SegregatedFit: foreign pointer or double free {block:#p}: not a live large block"
        );
        // SAFETY: a live large block has its header right below it.
        let header = unsafe { block.as_ptr().sub(HEADER) }.cast::<LargeHeader>();
        // SAFETY: the header and its neighbours are live, reached under the lock.
        let (base, len) = unsafe {
            let h = &*header;
            match h.prev.as_mut() {
                Some(prev) => prev.next = h.next,
                None => list.head = h.next,
            }
            if let Some(next) = h.next.as_mut() {
                next.prev = h.prev;
            }
            (h.base, h.len)
        };
        drop(list);
        // SAFETY: the reservation `alloc` made, now unlinked and unused.
        unsafe { PageAllocator::new().dealloc(NonNull::new_unchecked(base), len) };
    }

    /// Whether `block` is a live large block (O(live large blocks)).
    pub(crate) fn contains(&self, block: NonNull<u8>) -> bool {
        list_contains(&self.lock(), block)
    }

    /// Unmaps every live large block.
    ///
    /// # Safety
    ///
    /// None of them is used afterwards.
    pub(crate) unsafe fn release_all(&self) {
        let mut list = self.lock();
        let mut h = core::mem::replace(&mut list.head, ptr::null_mut());
        while !h.is_null() {
            // SAFETY: a live header, read before its reservation goes away.
            let LargeHeader {
                base, len, next, ..
            } = unsafe { h.read() };
            // SAFETY: the reservation `alloc` made; the caller guarantees
            // nothing uses it.
            unsafe { PageAllocator::new().dealloc(NonNull::new_unchecked(base), len) };
            h = next;
        }
    }
}

fn list_contains(list: &List, block: NonNull<u8>) -> bool {
    let target = block.as_ptr().wrapping_sub(HEADER).cast::<LargeHeader>();
    let mut h = list.head;
    while !h.is_null() {
        if h == target {
            return true;
        }
        // SAFETY: live headers are reached under the lock the caller holds.
        h = unsafe { (*h).next };
    }
    false
}
