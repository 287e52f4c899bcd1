//! The large path of [`SegregatedFit`](super::SegregatedFit): requests no
//! size class serves (above 64 KiB, or aligned above 4096).
//!
//! **Contract.** Each large block is its own mapping, made with one system
//! call (reserve and commit together: `mmap` read-write, or
//! `VirtualAlloc(MEM_RESERVE | MEM_COMMIT)`) and given back with one
//! (`munmap` / `VirtualFree`). Its length is rounded to the base
//! allocator's granularity (the page, or 64 KiB on Windows), and the slack
//! is the block's room to grow in place. Live large blocks are kept in a
//! list under a spin lock (one per allocator, never allocating; it guards
//! four pointer writes, never a system call) so that dropping the allocator
//! releases them too, and so that debug builds can tell a foreign pointer
//! or a double free from a real large block.
//!
//! **Layout.** The block starts at the mapping's first byte, page-aligned
//! (for alignments above the granularity, at the first multiple of the
//! alignment, the mapping being that much longer). The 32-byte
//! [`LargeHeader`] sits at the block's *tail*, at `block + round8(size)`:
//! sized deallocation gives the size back, so the header is found from
//! `(block, size)`, and the block itself stays page-aligned.
//!
//! **Growth in place.** `realloc` to a size that still fits the mapping
//! moves the header and returns the same block; past the mapping, Linux
//! `mremap`s it (the kernel moves page tables, not bytes); elsewhere the
//! caller copies. Fresh mappings read as zero, so `alloc_zeroed` writes
//! nothing. A shrink that leaves 64 KiB or more of the mapping unused
//! unmaps that tail (Unix; Windows keeps it, as a reservation is released
//! whole), and `stats` counts the shorter mapping.
//!
//! **Costs.** 32 bytes plus rounding per block, one system call per
//! allocation and free, a lock around a list splice. Failures: `TooLarge`
//! for a size above [`MAX_REQUEST`](super::SegregatedFit::MAX_REQUEST)
//! (the header and the alignment's padding are not counted), `Os` when the
//! OS refuses.

use core::alloc::Layout;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use super::lock::SpinLock;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::{AllocError, sys};

/// The header at the tail of every large block.
#[repr(C)]
#[derive(Debug)]
struct LargeHeader {
    /// The mapping's first byte.
    base: *mut u8,
    /// The mapping's length.
    len: usize,
    /// The neighbours in the list of live large blocks.
    prev: *mut LargeHeader,
    next: *mut LargeHeader,
}

const HEADER: usize = size_of::<LargeHeader>();

/// The shortest tail a shrinking `realloc` gives back to the OS: a smaller
/// one stays mapped, room for the block to grow in place again.
const SHRINK_MIN: usize = 64 << 10;

/// Where the header of a block of `size` bytes sits, from the block.
#[inline]
fn header_offset(size: usize) -> usize {
    size.next_multiple_of(8)
}

/// The live large blocks of one allocator.
#[derive(Debug)]
pub(crate) struct LargeBlocks {
    pub(super) lock: SpinLock,
    /// The list head (under `lock`).
    head: AtomicPtr<LargeHeader>,
    /// Live large blocks and their mapped bytes (for `stats`).
    count: AtomicUsize,
    bytes: AtomicUsize,
}

impl LargeBlocks {
    /// How long the mapping of a block for `layout` is: the block, its
    /// header and (aligned above the granularity) the alignment's padding,
    /// rounded to the granularity.
    ///
    /// `TooLarge` only when `layout.size()` exceeds `max`: every size up to
    /// `max` is attempted (the header and the padding are the allocator's
    /// business, not counted against the limit the error names), and the
    /// OS refuses what it cannot map.
    fn extent(layout: Layout, max: usize) -> Result<usize, AllocError> {
        if layout.size() > max {
            return Err(AllocError::TooLarge {
                requested: layout.size(),
                max,
            });
        }
        let gran = sys::granularity();
        let pad = if layout.align() > gran {
            layout.align()
        } else {
            0
        };
        // Checked: on 32-bit targets `max` is `isize::MAX`, and a size near
        // it plus a large alignment's padding passes `usize::MAX`. No
        // mapping is that long: the address space is full.
        header_offset(layout.size())
            .checked_add(HEADER + pad)
            .and_then(|n| n.checked_next_multiple_of(gran))
            .ok_or(AllocError::OutOfMemory {
                requested: layout.size(),
                available: 0,
            })
    }

    /// Links a header into the list.
    ///
    /// # Safety
    ///
    /// `h` is a header slot of a live large block, not in the list.
    unsafe fn link(&self, h: *mut LargeHeader, base: *mut u8, len: usize) {
        let _guard = self.lock.lock();
        let head = self.head.load(Ordering::Relaxed);
        // SAFETY: the slot is ours; the old head (if any) is a live header
        // reached under the lock.
        unsafe {
            h.write(LargeHeader {
                base,
                len,
                prev: ptr::null_mut(),
                next: head,
            });
            if let Some(old) = head.as_mut() {
                old.prev = h;
            }
        }
        self.head.store(h, Ordering::Relaxed);
    }

    /// Unlinks a header from the list and returns its `(base, len)`.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live large block in the list.
    unsafe fn unlink(&self, h: *mut LargeHeader) -> (*mut u8, usize) {
        let _guard = self.lock.lock();
        debug_assert!(
            self.contains_locked(h),
            "SegregatedFit: foreign pointer or double free: not a live large block"
        );
        // SAFETY: the header and its neighbours are live, reached under the
        // lock.
        unsafe {
            let hh = &*h;
            match hh.prev.as_mut() {
                Some(prev) => prev.next = hh.next,
                None => self.head.store(hh.next, Ordering::Relaxed),
            }
            if let Some(next) = hh.next.as_mut() {
                next.prev = hh.prev;
            }
            (hh.base, hh.len)
        }
    }

    fn contains_locked(&self, target: *mut LargeHeader) -> bool {
        let mut h = self.head.load(Ordering::Relaxed);
        while !h.is_null() {
            if h == target {
                return true;
            }
            // SAFETY: live headers are reached under the lock the caller
            // holds.
            h = unsafe { (*h).next };
        }
        false
    }

    /// Maps a large block for `layout`: zeroed.
    pub(crate) fn alloc(&self, layout: Layout, max: usize) -> Result<NonNull<u8>, AllocError> {
        let len = Self::extent(layout, max)?;
        let base = sys::map(len)?;
        let offset = base.as_ptr().addr().next_multiple_of(layout.align()) - base.as_ptr().addr();
        // SAFETY: `offset < pad`, so the block, its `size` bytes and the
        // header after them lie inside the `len` bytes mapped.
        let block = unsafe { base.add(offset) };
        // SAFETY: as above; 8-aligned (block and the offset are multiples of
        // 8), unaliased.
        let h = unsafe { block.add(header_offset(layout.size())) }.cast::<LargeHeader>();
        // SAFETY: a fresh header slot.
        unsafe { self.link(h.as_ptr(), base.as_ptr(), len) };
        self.count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Ok(block)
    }

    /// Unmaps a large block.
    ///
    /// # Safety
    ///
    /// `block` came from [`alloc`](Self::alloc) (or `realloc`) on this list
    /// with `size`, and is not used afterwards. Debug builds panic if it is
    /// not a live large block.
    pub(crate) unsafe fn dealloc(&self, block: NonNull<u8>, size: usize) {
        let h = block
            .as_ptr()
            .wrapping_add(header_offset(size))
            .cast::<LargeHeader>();
        // SAFETY: a live large block has its header there.
        let (base, len) = unsafe { self.unlink(h) };
        self.count.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(len, Ordering::Relaxed);
        // SAFETY: the mapping `alloc` made, now unlinked and unused.
        let r = unsafe { sys::release(NonNull::new_unchecked(base), len) };
        debug_assert!(r.is_ok(), "release of a large block failed: {r:?}");
    }

    /// Resizes a large block in place (within its mapping) or by remapping
    /// it (Linux); `None` when neither works (nothing changed: the caller
    /// allocates, copies and frees).
    ///
    /// # Safety
    ///
    /// `block` is a live large block of this list allocated with `layout`;
    /// `new_size` maps to the large path too and is at most `max`.
    pub(crate) unsafe fn realloc(
        &self,
        block: NonNull<u8>,
        layout: Layout,
        new_size: usize,
        max: usize,
    ) -> Option<NonNull<u8>> {
        let h = block
            .as_ptr()
            .wrapping_add(header_offset(layout.size()))
            .cast::<LargeHeader>();
        // SAFETY: the live header of this block; its base and len are
        // written only by the block's owner (us).
        let (base, len) = unsafe { ((*h).base, (*h).len) };
        let offset = block.as_ptr().addr() - base.addr();
        let fits = offset + header_offset(new_size) + HEADER <= len;
        if fits {
            // What the block needs now; past it, a tail of at least
            // `SHRINK_MIN` goes back to the OS (a smaller one stays, room to
            // grow in place).
            let keep =
                (offset + header_offset(new_size) + HEADER).next_multiple_of(sys::granularity());
            let trim = len - keep >= SHRINK_MIN;
            if !trim && header_offset(new_size) == header_offset(layout.size()) {
                return Some(block);
            }
            // SAFETY: ours; the new slot lies inside the mapping (`fits`),
            // and inside its first `keep` bytes, which a shrink keeps. The
            // old header is read (unlinked) before the tail goes.
            unsafe {
                let (base, len) = self.unlink(h);
                let len = if trim && sys::shrink(NonNull::new_unchecked(base), len, keep) {
                    self.bytes.fetch_sub(len - keep, Ordering::Relaxed);
                    keep
                } else {
                    len
                };
                let nh = block.add(header_offset(new_size)).cast::<LargeHeader>();
                self.link(nh.as_ptr(), base, len);
            }
            return Some(block);
        }
        if layout.align() > sys::page_size() {
            return None;
        }
        let new_layout = Layout::from_size_align(new_size, layout.align()).ok()?;
        let new_len = Self::extent(new_layout, max).ok()?;
        // SAFETY: unlinked while the mapping may move; relinked below either
        // way.
        unsafe { self.unlink(h) };
        let old_len = len;
        // SAFETY: `base..base+len` is exactly the block's mapping, live.
        let moved = unsafe { sys::remap(NonNull::new_unchecked(base), len, new_len) };
        let (base, len, block) = match moved {
            // The block sits at the mapping's start (align <= page).
            Some(b) => (b.as_ptr(), new_len, b),
            None => (base, len, block),
        };
        let hoff = header_offset(if moved.is_some() {
            new_size
        } else {
            layout.size()
        });
        // SAFETY: the header slot lies inside the (possibly moved) mapping.
        unsafe {
            let nh = block.add(hoff).cast::<LargeHeader>();
            self.link(nh.as_ptr(), base, len);
        }
        if moved.is_some() {
            self.bytes.fetch_add(new_len, Ordering::Relaxed);
            self.bytes.fetch_sub(old_len, Ordering::Relaxed);
        }
        moved.map(|_| block)
    }

    /// The mapping of the live large block that `addr` lies in, as
    /// `(mapping start, mapping length, header address)`, or `None`: no
    /// live large block holds `addr` (O(live large blocks), under the
    /// lock; reads only this list's headers, never `addr`).
    pub(crate) fn containing(&self, addr: usize) -> Option<(usize, usize, usize)> {
        let _guard = self.lock.lock();
        let mut h = self.head.load(Ordering::Relaxed);
        while !h.is_null() {
            // SAFETY: live headers are reached under the lock we hold.
            let hh = unsafe { &*h };
            let start = hh.base.addr();
            if addr.wrapping_sub(start) < hh.len {
                return Some((start, hh.len, h.addr()));
            }
            h = hh.next;
        }
        None
    }

    /// Whether `block` (of `size` bytes) is a live large block (O(live large
    /// blocks)).
    pub(crate) fn contains(&self, block: NonNull<u8>, size: usize) -> bool {
        let _guard = self.lock.lock();
        self.contains_locked(
            block
                .as_ptr()
                .wrapping_add(header_offset(size))
                .cast::<LargeHeader>(),
        )
    }

    /// Live large blocks and their mapped bytes.
    pub(crate) fn usage(&self) -> (usize, usize) {
        (
            self.count.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Unmaps every live large block.
    ///
    /// # Safety
    ///
    /// None of them is used afterwards.
    pub(crate) unsafe fn release_all(&self) {
        let _guard = self.lock.lock();
        let mut h = self.head.swap(ptr::null_mut(), Ordering::Relaxed);
        while !h.is_null() {
            // SAFETY: a live header, read before its mapping goes away.
            let (base, len, next) = unsafe { ((*h).base, (*h).len, (*h).next) };
            // SAFETY: the mapping `alloc` made; the caller guarantees nothing
            // uses it.
            unsafe {
                let _ = sys::release(NonNull::new_unchecked(base), len);
            }
            h = next;
        }
    }
}
