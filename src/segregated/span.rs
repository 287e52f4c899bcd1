//! Spans: the page-allocator memory a size class grows by.
//!
//! **Layout.** A span is exactly `PageAllocator::round(want)` bytes, so no
//! rounding slack is stranded past it. Blocks start at the span's first byte
//! (page-aligned) at multiples of the block size, which keeps each block
//! aligned as the class promises. The [`SpanHeader`] goes at the *tail*, in
//! the leftover space where alignment does not matter; a header at the head
//! would skew every block by its size.
//!
//! **Ownership.** Spans of a class form a singly linked list through their
//! headers, pushed under the class's growth lock and read without it (the
//! headers are immutable once published). Spans are released only when the
//! allocator is dropped: while it lives, every block address stays mapped,
//! which the lock-free queue relies on.
//!
//! **Costs.** One header (32 bytes) per span; the tail leftover
//! (`len - header`) modulo the block size.

use core::mem::size_of;
use core::ptr::{self, NonNull};

use super::queue::link;
use crate::sync::{AtomicPtr, Ordering};
use crate::{AllocError, PageAllocator};

/// A span of at least this many bytes is requested.
pub(crate) const SPAN_MIN: usize = 16 * 1024;
/// A span holds at least this many blocks.
pub(crate) const SPAN_MIN_BLOCKS: usize = 8;

/// The bookkeeping of one span, stored at its tail.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct SpanHeader {
    /// The previously grown span of the same class (immutable once
    /// published).
    pub(crate) next: *mut SpanHeader,
    /// The span's first byte (page-aligned).
    pub(crate) base: *mut u8,
    /// The span's length: exactly what the page allocator rounded to.
    pub(crate) len: usize,
    /// How many blocks the span was cut into.
    pub(crate) blocks: usize,
}

/// A freshly grown span: its blocks linked privately, ready to publish.
pub(crate) struct Grown {
    pub(crate) first: NonNull<u8>,
    pub(crate) last: NonNull<u8>,
}

/// How long a span of blocks of `block_size` bytes is, and how many blocks it
/// holds.
pub(crate) fn geometry(
    pages: &PageAllocator,
    block_size: usize,
) -> Result<(usize, usize), AllocError> {
    let want = (block_size * SPAN_MIN_BLOCKS).max(SPAN_MIN) + size_of::<SpanHeader>();
    let len = pages.round(want).ok_or(AllocError::TooLarge {
        requested: want,
        max: isize::MAX as usize,
    })?;
    Ok((len, (len - size_of::<SpanHeader>()) / block_size))
}

/// Grows a class by one span: asks the page allocator for exactly the
/// rounded length, links the blocks through their first words in private
/// memory, writes the tail header and pushes it onto `spans`.
///
/// Must be called under the class's growth lock (the `spans` push is not
/// atomic against other growers).
pub(crate) fn grow(spans: &AtomicPtr<SpanHeader>, block_size: usize) -> Result<Grown, AllocError> {
    let pages = PageAllocator::new();
    let (len, blocks) = geometry(&pages, block_size)?;
    let span = pages.alloc(len)?;
    debug_assert_eq!(
        span.len(),
        len,
        "the page allocator rounded differently than it said"
    );
    let base = span.cast::<u8>();
    let end = base.as_ptr() as u64 + len as u64;
    if end > super::queue::ADDRESS_LIMIT {
        // The queue packs addresses into 45 bits (divided by 8).
        // SAFETY: just allocated with this length; nothing has seen it.
        unsafe { pages.dealloc(base, len) };
        return Err(AllocError::OutOfMemory {
            requested: block_size,
            available: 0,
        });
    }
    // SAFETY: `blocks * block_size <= len - header`, so every block lies in
    // the span; blocks are multiples of 8 bytes from a page-aligned base.
    let block = |i: usize| unsafe { base.add(i * block_size) };
    for i in 0..blocks - 1 {
        // SAFETY: block `i` lies in the fresh span, which only we can see.
        unsafe { link(block(i)) }.store(block(i + 1).as_ptr(), Ordering::Relaxed);
    }
    // SAFETY: as above.
    unsafe { link(block(blocks - 1)) }.store(ptr::null_mut(), Ordering::Relaxed);
    // SAFETY: the header's slot is the last `size_of::<SpanHeader>()` bytes
    // of the span: in bounds, 8-aligned (len is a page multiple, the header a
    // multiple of 8), and beyond the last block.
    let header = unsafe { base.add(len - size_of::<SpanHeader>()) }.cast::<SpanHeader>();
    // SAFETY: as above; the slot is ours and unaliased.
    unsafe {
        header.write(SpanHeader {
            next: spans.load(Ordering::Relaxed),
            base: base.as_ptr(),
            len,
            blocks,
        });
    }
    spans.store(header.as_ptr(), Ordering::Release);
    Ok(Grown {
        first: block(0),
        last: block(blocks - 1),
    })
}

/// Whether `ptr` is the start of a block of one of the spans in `spans`
/// (O(spans)).
pub(crate) fn contains_block(
    spans: &AtomicPtr<SpanHeader>,
    block_size: usize,
    ptr: NonNull<u8>,
) -> bool {
    let addr = ptr.as_ptr() as usize;
    let mut h = spans.load(Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: published headers are immutable and live until the
        // allocator is dropped.
        let span = unsafe { &*h };
        let base = span.base as usize;
        if addr >= base && addr < base + span.blocks * block_size {
            return (addr - base).is_multiple_of(block_size);
        }
        h = span.next;
    }
    false
}

/// Counts the spans in `spans`.
pub(crate) fn count(spans: &AtomicPtr<SpanHeader>) -> usize {
    let mut n = 0;
    let mut h = spans.load(Ordering::Acquire);
    while !h.is_null() {
        n += 1;
        // SAFETY: as in `contains_block`.
        h = unsafe { (*h).next };
    }
    n
}

/// Releases every span of the list to the page allocator.
///
/// # Safety
///
/// Nothing uses any block of these spans afterwards, and no other thread
/// touches the list.
pub(crate) unsafe fn release_all(spans: &AtomicPtr<SpanHeader>) {
    let pages = PageAllocator::new();
    let mut h = spans.swap(ptr::null_mut(), Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: a published header; read before its span goes away.
        let SpanHeader {
            next, base, len, ..
        } = unsafe { h.read() };
        // SAFETY: the span came from `pages.alloc(len)` and the caller
        // guarantees nothing uses it.
        unsafe { pages.dealloc(NonNull::new_unchecked(base), len) };
        h = next;
    }
}
