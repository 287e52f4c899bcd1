//! Spans: the region memory a size class grows by.
//!
//! **Layout.** A span's length is a power of two (at least [`SPAN_MIN`],
//! the base allocator's granularity and [`SPAN_MIN_BLOCKS`] blocks plus the
//! tail) and the span is aligned to it, so the span of a block is its
//! address masked ([`header_of`]). Blocks start at the span's first byte at
//! multiples of the block size, which keeps each block aligned as the class
//! promises. The [`SpanHeader`] goes at the *tail*, in the leftover space
//! where alignment does not matter (a header at the head would skew every
//! block by its size); debug builds put a bitmap of the span's free blocks
//! right below it (one bit per block: set while the block is free, in a
//! queue or a thread cache), which catches a double free in any order and a
//! block handed out twice.
//!
//! **Ownership.** Spans of a class form a singly linked list through their
//! headers, pushed under the class's growth lock and read without it (the
//! list fields are immutable once published). Spans are released only when
//! the allocator is dropped: while it lives, every block address stays
//! readable, which the lock-free queue relies on. `trim` purges an empty
//! span's pages (all but the one holding the header), which keeps them
//! mapped and readable, and marks it; growth reuses marked spans first.
//!
//! **Handing out.** A grown span is not linked at once: its class keeps it
//! as the *fresh* span and links a batch of it ([`carve`]) each time the
//! class runs out of free blocks, so a span's pages are first written when
//! its blocks are first needed (a process that uses a few blocks of many
//! classes no longer faults in every page of their spans).
//!
//! **Costs.** One header (48 bytes) per span plus, in debug builds, one bit
//! per block; the tail leftover modulo the block size.

use core::mem::size_of;
use core::ptr::{self, NonNull};

#[cfg(feature = "hardened")]
use super::harden;
use super::queue::{code, link};
use super::region::Region;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::{AllocError, sys};

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
    /// The span's first byte (aligned to `len`).
    pub(crate) base: *mut u8,
    /// The span's length (a power of two).
    pub(crate) len: usize,
    /// How many blocks the span was cut into.
    pub(crate) blocks: usize,
    /// `trim`'s count of the span's free blocks (under the growth lock).
    pub(crate) free: AtomicUsize,
    /// [`LIVE`], or the span is trimmed ([`TRIMMED`], [`TRIMMED_ZEROED`]):
    /// its blocks are in no queue, its pages purged; or [`TRIMMING`]
    /// (under the growth lock).
    pub(crate) trimmed: AtomicUsize,
}

/// `SpanHeader::trimmed`: the span's blocks are handed out and freed.
pub(crate) const LIVE: usize = 0;
/// `SpanHeader::trimmed`: purged, but not zeroed (the purge failed); its
/// blocks may hold old bytes.
pub(crate) const TRIMMED: usize = 1;
/// `SpanHeader::trimmed`: all its blocks came back, and `trim_class` is
/// about to purge it.
pub(crate) const TRIMMING: usize = 2;
/// `SpanHeader::trimmed`: purged, and every block's first word reads zero
/// again ([`purge`]), so it grows again `pristine`.
pub(crate) const TRIMMED_ZEROED: usize = 3;

const HEADER: usize = size_of::<SpanHeader>();

/// The shape of one class's spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// The span length: a power of two.
    pub(crate) len: usize,
    /// Blocks per span.
    pub(crate) blocks: usize,
    /// Bytes of the debug bitmap below the header (0 in release builds).
    /// Sized for the blocks that fit before the bitmap took its room, so
    /// it may have a word or two past the last block's (64 KiB spans of
    /// 8-byte blocks: 128 words for 8,058 blocks).
    pub(crate) bitmap: usize,
}

/// The geometry of a span of blocks of `block_size` bytes.
pub(crate) fn geometry(block_size: usize) -> Geometry {
    geometry_for(block_size, sys::granularity())
}

/// [`geometry`] where the base allocator hands out `granularity` bytes at
/// a time.
fn geometry_for(block_size: usize, granularity: usize) -> Geometry {
    let want = (block_size * SPAN_MIN_BLOCKS + HEADER).max(SPAN_MIN);
    // Sized to what the base allocator hands out: the granularity (64 KiB on
    // Windows, the page elsewhere), so nothing is stranded past a span.
    let len = want.max(granularity).next_power_of_two();
    let blocks = (len - HEADER) / block_size;
    let bitmap = if cfg!(debug_assertions) {
        blocks.div_ceil(64) * 8
    } else {
        0
    };
    Geometry {
        len,
        blocks: (len - HEADER - bitmap) / block_size,
        bitmap,
    }
}

/// A span being handed out a stretch of its chain at a time ([`carve`]):
/// its first byte and the block its chain starts at (see [`first_block`]).
/// The chain's blocks in order are `base + ((colour + k) mod blocks) *
/// block_size` for positions `k = 0, 1, ..`.
///
/// `pristine`: the first word of each block not linked yet reads zero,
/// as it did when the OS mapped the span: a span fresh from the region,
/// or a trimmed one whose purge zeroed them ([`purge`]; not on targets
/// where a purged page may keep its bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fresh {
    pub(crate) base: NonNull<u8>,
    pub(crate) colour: usize,
    pub(crate) pristine: bool,
}

/// The header of the span holding `block`, a block of a class with span
/// geometry `g`.
///
/// # Safety
///
/// `block` is a block of a span of that class (live, free or cached).
#[inline]
pub(crate) unsafe fn header_of(block: NonNull<u8>, g: Geometry) -> NonNull<SpanHeader> {
    let base = block.as_ptr().addr() & !(g.len - 1);
    // The span's own provenance (exposed when it was carved), not the
    // block's: a user's pointer may only cover the block.
    let h = ptr::with_exposed_provenance_mut::<SpanHeader>(base + g.len - HEADER);
    // SAFETY: spans are aligned to `len`, so `base` is the span's first byte
    // and the header its last HEADER bytes, never at address 0.
    unsafe { NonNull::new_unchecked(h) }
}

/// Links positions `from..from + count` of the chain of `span` (whose
/// blocks are `block_size` bytes, `blocks` of them) through their first
/// words, the links [`code`]d with `key` as the queue stores them, the last
/// link null; returns the stretch's first and last blocks. A span is linked
/// this way a batch at a time, as its blocks are first needed, so that its
/// pages are first touched then (linking a whole span at its growth
/// touched every page of it: `/bin/echo` grew 18 spans and ran 39 K
/// instructions linking them). With `hardened`, each linked block of at
/// least two words (`harden::TAGGED_MIN`) is also tagged free (the key in
/// its second word, as a free tags it), so that a free of a linked block
/// that was never handed out is caught as the double free it is. And, in
/// a `pristine` span, a block about to be linked must still be as the OS
/// mapped it: a first word that is not zero means the program wrote a
/// block it did not hold (freed one never handed out, or one of a trimmed
/// span a second time, which put the block in a free list and maybe handed
/// it out; or wrote past the end of a block), and linking it would hand it
/// out a second time, so the process aborts ([`harden::written_unlinked`]).
/// The tag is stored first, so the page is faulted in by a write, not by
/// the read (a read of an untouched page maps the zero page, and the write
/// then faults again).
///
/// # Safety
///
/// `count > 0`, `from + count <= blocks`, and those positions' blocks are
/// ours alone (fresh, or trimmed, under the growth lock), in the span.
pub(crate) unsafe fn carve(
    span: Fresh,
    block_size: usize,
    blocks: usize,
    key: usize,
    from: usize,
    count: usize,
) -> (NonNull<u8>, NonNull<u8>) {
    let (n, r) = (blocks, span.colour);
    let to = from + count;
    debug_assert!(count > 0 && to <= n && r < n);
    // The chain starts at block `r` and wraps: r, r+1, .., n-1, 0, .., r-1
    // (a compare and a subtraction wrap a position, not a division).
    let at = |k: usize| {
        let i = r + k;
        let i = if i < n { i } else { i - n };
        // SAFETY: block `i < blocks` lies in the span.
        unsafe { span.base.add(i * block_size) }
    };
    // Tags a linked block free (`hardened`; the 8-byte class of 64-bit
    // targets has no room), and checks that nothing wrote it before.
    let tag = |p: NonNull<u8>| {
        #[cfg(feature = "hardened")]
        if block_size >= harden::TAGGED_MIN {
            // SAFETY: a block of the span of at least `TAGGED_MIN` bytes,
            // ours alone (the caller).
            unsafe { harden::tag(p) }.store(key, Ordering::Relaxed);
            // SAFETY: as above; the link word is read before it is written.
            #[cfg(not(loom))]
            if span.pristine && !unsafe { link(p) }.load(Ordering::Relaxed).is_null() {
                harden::written_unlinked(p, block_size);
            }
        }
        #[cfg(not(feature = "hardened"))]
        let _ = p;
    };
    // A stretch at a time: positions `k..end` whose blocks follow each other
    // in memory, up to the wrap (position `n - r`, block 0) or the end.
    // Within a stretch each link is the next block's address: a pointer
    // bump, an XOR and a store (the chain used to be linked block by block,
    // its position wrapped and multiplied out for each: 21 instructions a
    // block, 6.4 K a span in `lua5.4`).
    let mut k = from;
    while k < to {
        let wrap = if r + k < n { n - r } else { n };
        let end = to.min(wrap);
        let mut p = at(k);
        for _ in k + 1..end {
            // SAFETY: positions below `end` within one stretch are
            // consecutive blocks of the span, ours alone (the caller).
            let next = unsafe { p.add(block_size) };
            tag(p);
            // SAFETY: as above.
            unsafe { link(p) }.store(code(next.as_ptr(), key), Ordering::Relaxed);
            p = next;
        }
        let next = if end == to {
            ptr::null_mut()
        } else {
            at(end).as_ptr()
        };
        tag(p);
        // SAFETY: as above.
        unsafe { link(p) }.store(code(next, key), Ordering::Relaxed);
        k = end;
    }
    (at(from), at(to - 1))
}

/// Debug builds: marks every block of the span at `base` free in its
/// bitmap (a grown span's blocks are all free, linked or not).
///
/// # Safety
///
/// The span is ours alone (fresh, or trimmed under the growth lock).
#[cfg(debug_assertions)]
unsafe fn mark_all_free(base: NonNull<u8>, g: Geometry) {
    for w in 0..g.bitmap / 8 {
        // A spare word past the last block's gets no bit.
        let bits = g.blocks.saturating_sub(w * 64).min(64);
        let word = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        // SAFETY: the bitmap lies in the span (see `bitmap_word`).
        unsafe { bitmap_word(base, g, w) }.store(word, Ordering::Relaxed);
    }
}

/// The block a span's chain starts at, so that different classes hand out
/// their first (and, with LIFO caches, their hottest) blocks at different
/// offsets within a page: spans are aligned to at least 16 KiB, so without
/// it the first blocks of every small class share the same few L1 sets
/// (cache colouring, at no cost in blocks: the chain only starts later and
/// wraps). The colour is one of the 64 cache lines of a 4 KiB page, picked
/// by the block size (23 is odd, so consecutive sizes land 23 lines apart).
///
/// The chain starts in the span's last 4 KiB, the page its header is
/// written to at the growth, and the class's first batch ends where the
/// chain wraps (`Heap::hand_out_fresh`): a class of which a process uses
/// a few blocks touches one page of its span, not the header's page and
/// the first pages besides. Where no block starts at that line of the last
/// page (blocks of more than about 4 KiB), the chain starts at that line of
/// the first page.
///
/// Only a class's first span is coloured: a small heap's hottest blocks are
/// there. Later spans are linked in address order, so that spans carved one
/// after the other hand out one ascending run of addresses. The wrap cost
/// a jump back and a jump forward per span, and a program that builds large
/// structures walks them in that order: `lua5.4`'s binary trees at depth 16
/// ran 1.05 s with every span coloured, 1.02 s with none (AMD EPYC family
/// 26, docs/program-bench.md).
const fn first_block(block_size: usize, blocks: usize, len: usize) -> usize {
    let line = ((block_size / 8) * 23) % 64;
    let tail = (len - 4096 + line * 64).div_ceil(block_size);
    if tail < blocks {
        return tail;
    }
    let r = (line * 64).div_ceil(block_size);
    if r < blocks { r } else { 0 }
}

/// Grows a class by one span: reuses a trimmed span if there is one (then
/// `trimmed` is decremented), else carves a fresh one from the region,
/// writes its tail header and pushes it onto `spans`. Links nothing: the
/// caller hands the span out with [`carve`]. `tag` is the class's byte in
/// the region's class map (its index plus one).
///
/// Must be called under the class's growth lock.
pub(crate) fn grow(
    region: &Region,
    spans: &AtomicPtr<SpanHeader>,
    trimmed: &AtomicUsize,
    block_size: usize,
    tag: u8,
) -> Result<Fresh, AllocError> {
    let g = geometry(block_size);
    if trimmed.load(Ordering::Relaxed) > 0 {
        let mut h = spans.load(Ordering::Acquire);
        while !h.is_null() {
            // SAFETY: published headers live until the allocator is dropped;
            // `trimmed` and the purged pages are ours under the lock.
            let span = unsafe { &*h };
            let t = span.trimmed.load(Ordering::Relaxed);
            if t == TRIMMED || t == TRIMMED_ZEROED {
                span.trimmed.store(LIVE, Ordering::Relaxed);
                trimmed.fetch_sub(1, Ordering::Relaxed);
                let base = NonNull::new(span.base).expect("span base");
                // SAFETY: a trimmed span's blocks are in no queue and no
                // cache: ours alone under the lock.
                #[cfg(debug_assertions)]
                unsafe {
                    mark_all_free(base, g)
                };
                return Ok(Fresh {
                    base,
                    colour: 0,
                    pristine: t == TRIMMED_ZEROED,
                });
            }
            h = span.next;
        }
    }
    let base = region.carve(g.len, tag)?;
    // The class's first span is the one coloured (see `first_block`).
    let colour = if spans.load(Ordering::Relaxed).is_null() {
        first_block(block_size, g.blocks, g.len)
    } else {
        0
    };
    // SAFETY: a fresh span, which only we can see.
    #[cfg(debug_assertions)]
    unsafe {
        mark_all_free(base, g)
    };
    // SAFETY: the header's slot is the last HEADER bytes of the span: in
    // bounds, 8-aligned (len is a page multiple, the header a multiple of 8),
    // and beyond the last block and the bitmap.
    let header = unsafe { base.add(g.len - HEADER) }.cast::<SpanHeader>();
    // SAFETY: as above; the slot is ours and unaliased.
    unsafe {
        header.write(SpanHeader {
            next: spans.load(Ordering::Relaxed),
            base: base.as_ptr(),
            len: g.len,
            blocks: g.blocks,
            free: AtomicUsize::new(0),
            trimmed: AtomicUsize::new(LIVE),
        });
    }
    // ORDERING: Release publishes the header to the lock-free readers of
    // the list (`contains_block`, `count`).
    spans.store(header.as_ptr(), Ordering::Release);
    Ok(Fresh {
        base,
        colour,
        pristine: true,
    })
}

/// Word `w` of the debug bitmap of the span at `base`.
///
/// # Safety
///
/// `base` is the first byte of a live span of geometry `g`, `w < bitmap/8`.
#[cfg(debug_assertions)]
unsafe fn bitmap_word<'a>(base: NonNull<u8>, g: Geometry, w: usize) -> &'a AtomicU64Debug {
    // SAFETY: the bitmap is the `bitmap` bytes right below the header,
    // 8-aligned (the header's offset and size are multiples of 8).
    unsafe {
        &*base
            .as_ptr()
            .add(g.len - HEADER - g.bitmap + 8 * w)
            .cast::<AtomicU64Debug>()
    }
}

#[cfg(debug_assertions)]
type AtomicU64Debug = crate::sync::AtomicU64;

/// Debug builds: flips `block`'s free bit to `free`, panicking if it already
/// had that value (a double free, or a block handed out twice).
///
/// # Safety
///
/// `block` is a block of a live span of geometry `g`.
#[cfg(debug_assertions)]
pub(crate) unsafe fn debug_mark(block: NonNull<u8>, g: Geometry, block_size: usize, free: bool) {
    let base = block.as_ptr().addr() & !(g.len - 1);
    let index = (block.as_ptr().addr() - base) / block_size;
    // The span's own (exposed) provenance, as in `header_of`.
    let base = NonNull::new(ptr::with_exposed_provenance_mut::<u8>(base)).expect("span base");
    // SAFETY: the caller's block lies in a live span of this geometry.
    let word = unsafe { bitmap_word(base, g, index / 64) };
    let bit = 1u64 << (index % 64);
    if free {
        let old = word.fetch_or(bit, Ordering::Relaxed);
        // Hardened builds abort with the release build's message (no
        // panic: a drop-in `free` must not unwind, nor allocate to report).
        #[cfg(feature = "hardened")]
        if old & bit != 0 {
            super::harden::double_free(
                block,
                super::SizeClass::of(block_size, 1).map_or(0, |c| c.tag().into()),
            );
        }
        assert!(old & bit == 0, "SegregatedFit: double free of {block:#p}");
    } else {
        let old = word.fetch_and(!bit, Ordering::Relaxed);
        assert!(
            old & bit != 0,
            "SegregatedFit: {block:#p} handed out while in use"
        );
    }
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
        // SAFETY: published headers live until the allocator is dropped; the
        // fields read here are immutable once published.
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

/// Purges the pages of an empty span of blocks of `block_size` bytes (all
/// but the last page, which holds the header and the debug bitmap) and
/// returns how many bytes it gave back, and whether every block's first
/// word now reads zero, so that the span grows again `pristine` (see
/// [`carve`]): `false` only when the purge failed. The blocks that start in
/// the last page, which stays resident, get a zero first word after the
/// purge. Where a purge zeroes ([`sys::PURGE_ZEROES`]: Linux) that is all;
/// elsewhere (macOS's advice, Windows' `MEM_RESET`) a purged page may come
/// back with its old bytes, so the first words of the purged blocks are
/// zeroed before the purge too, and either outcome reads zero.
///
/// # Safety
///
/// None of the span's blocks is in a queue, a cache or in use; under the
/// class's growth lock.
pub(crate) unsafe fn purge(span: &SpanHeader, block_size: usize) -> (usize, bool) {
    let os_purge = |p: NonNull<u8>, n: usize| {
        // SAFETY: `purge_with` passes the span's pages but the last:
        // committed, page-aligned, unused (the caller's contract).
        unsafe { sys::purge(p, n) }
    };
    // SAFETY: forwarded; `sys::purge` zeroes what it purges exactly where
    // `PURGE_ZEROES` says so.
    unsafe { purge_with(span, block_size, sys::PURGE_ZEROES, os_purge) }
}

/// [`purge`] with the OS's purge and its outcome given: `zeroes`, whether
/// the range reads zero after `os_purge` (the tests give a purge that
/// keeps old bytes, as macOS's and Windows' may).
///
/// # Safety
///
/// As for [`purge`]; `os_purge` is called once with the span's pages but
/// the last (page-aligned, committed, unused) and reads as zeros
/// afterwards if `zeroes`.
unsafe fn purge_with(
    span: &SpanHeader,
    block_size: usize,
    zeroes: bool,
    os_purge: impl FnOnce(NonNull<u8>, usize) -> Result<(), AllocError>,
) -> (usize, bool) {
    let page = sys::page_size();
    let len = span.len - page;
    let base = NonNull::new(span.base).expect("span base");
    // A block's first word lies in the last page exactly when the block
    // starts there (words are 8-aligned, the page boundary page-aligned).
    let first_kept = len.div_ceil(block_size);
    let clear = |blocks: core::ops::Range<usize>| {
        for i in blocks {
            // SAFETY: block `i` of the span, unused (the caller's
            // contract); the purged ones are mapped and writable before
            // the purge and after it, the others stay resident.
            unsafe { link(base.add(i * block_size)) }.store(ptr::null_mut(), Ordering::Relaxed);
        }
    };
    if len > 0 {
        if !zeroes {
            clear(0..first_kept);
        }
        // The span's first `len - page` bytes are committed, page-aligned
        // and unused (the caller's contract); purging keeps them readable
        // for the queue's stale readers.
        if os_purge(base, len).is_err() {
            return (0, false);
        }
    }
    clear(first_kept..span.blocks);
    (len, true)
}

/// Releases every span of the list (to the region: see
/// [`Region::release_span`]).
///
/// # Safety
///
/// Nothing uses any block of these spans afterwards, and no other thread
/// touches the list.
pub(crate) unsafe fn release_all(region: &Region, spans: &AtomicPtr<SpanHeader>) {
    let mut h = spans.swap(ptr::null_mut(), Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: a published header; read before its span goes away.
        let (next, base, len) = unsafe { ((*h).next, (*h).base, (*h).len) };
        // SAFETY: the span came from `region.carve(len)` and the caller
        // guarantees nothing uses it.
        unsafe { region.release_span(NonNull::new_unchecked(base), len) };
        h = next;
    }
}

#[cfg(not(loom))]
const _: () = assert!(HEADER.is_multiple_of(8));

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A new span's bitmap marks exactly its blocks free, also where the
    /// bitmap has words past the last block's: a 64 KiB span of 8-byte
    /// blocks (Windows' granularity) has 8,058 blocks and 128 words, and
    /// `mark_all_free` underflowed on word 126 (every Windows debug build
    /// of a test that allocated 8 bytes).
    #[cfg(debug_assertions)]
    #[test]
    fn a_new_span_marks_its_blocks_free_and_no_more() {
        let g = geometry_for(8, 64 * 1024);
        // 8,058 blocks with a 64-bit header, 8,061 with a 32-bit one: the
        // bitmap is sized before it takes its room, so its last two words
        // are spare either way.
        let blocks = (64 * 1024 - HEADER - 1024) / 8;
        assert_eq!((g.len, g.blocks, g.bitmap), (64 * 1024, blocks, 1024));
        assert!((125 * 64..126 * 64).contains(&blocks));
        let mut words = vec![0u64; g.len / 8];
        let base = NonNull::new(words.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: a span of this test's own memory, ours alone.
        unsafe { mark_all_free(base, g) };
        let first = (g.len - HEADER - g.bitmap) / 8;
        let bitmap = &words[first..first + g.bitmap / 8];
        let set: u32 = bitmap.iter().map(|w| w.count_ones()).sum();
        assert_eq!(set as usize, g.blocks);
        assert_eq!(bitmap[125], (1 << (blocks - 125 * 64)) - 1);
        assert_eq!(&bitmap[126..], &[0, 0]);
    }

    /// `purge` leaves every block's first word zero whatever the OS does
    /// with the purged pages: where the purge keeps their old bytes
    /// (macOS's advice, Windows' `MEM_RESET`; here a purge that does
    /// nothing), the first words were zeroed before it, so the span grows
    /// again `pristine` and its chain checks every block it links.
    #[test]
    fn a_purge_that_keeps_old_bytes_still_leaves_first_words_zero() {
        let size = 704;
        let g = geometry(size);
        for zeroes in [false, true] {
            let mut words = vec![0x5a5a_5a5a_u64 as usize; g.len / size_of::<usize>()];
            let base = words.as_mut_ptr().cast::<u8>();
            let span = SpanHeader {
                next: ptr::null_mut(),
                base,
                len: g.len,
                blocks: g.blocks,
                free: AtomicUsize::new(0),
                trimmed: AtomicUsize::new(TRIMMING),
            };
            let mut purged = None;
            // SAFETY: a span of this test's own memory, unused; the purge
            // zeroes its range exactly when `zeroes` says so.
            let (bytes, zeroed) = unsafe {
                purge_with(&span, size, zeroes, |p, n| {
                    purged = Some((p.as_ptr(), n));
                    if zeroes {
                        // SAFETY: the span's own range.
                        p.as_ptr().write_bytes(0, n);
                    }
                    Ok(())
                })
            };
            let page = sys::page_size();
            assert_eq!(purged, Some((base, g.len - page)));
            assert_eq!((bytes, zeroed), (g.len - page, true));
            for i in 0..g.blocks {
                let w = words[i * size / size_of::<usize>()];
                assert_eq!(
                    w, 0,
                    "zeroes {zeroes}: block {i} of {} keeps {w:#x}",
                    g.blocks
                );
            }
        }
    }

    /// Every link `carve` writes, for block sizes whose spans start
    /// coloured at various blocks, the whole chain carved in stretches of
    /// several lengths: the chain is `r, r+1, .., n-1, 0, .., r-1`, each
    /// stretch null-terminated and its links coded with the key.
    #[test]
    fn carve_links_the_chain_a_stretch_at_a_time() {
        let key = 0x5a5a_c3c3_0000_0007_u64 as usize;
        let sizes: &[usize] = if cfg!(miri) {
            &[48, 4096]
        } else {
            &[16, 24, 48, 64, 96, 1024, 4096, 65536]
        };
        for &size in sizes {
            let g = geometry(size);
            let mut span = vec![0u64; g.len / 8];
            let base = NonNull::new(span.as_mut_ptr().cast::<u8>()).unwrap();
            let n = g.blocks;
            for colour in [0, first_block(size, n, g.len), n - 1] {
                for stretch in [1, 2, 3, 7, 64, n] {
                    let fresh = Fresh {
                        base,
                        colour,
                        pristine: false,
                    };
                    let expected = |k: usize| base.as_ptr().wrapping_add((colour + k) % n * size);
                    let follow = |b: NonNull<u8>| {
                        // SAFETY: a block of the buffer, linked above.
                        NonNull::new(code(unsafe { link(b) }.load(Ordering::Relaxed), key))
                    };
                    let what = format!("size {size} colour {colour} stretch {stretch}");
                    let mut from = 0;
                    while from < n {
                        let count = stretch.min(n - from);
                        // SAFETY: a span-sized buffer of our own.
                        let (first, last) = unsafe { carve(fresh, size, n, key, from, count) };
                        assert_eq!(first.as_ptr(), expected(from), "{what}");
                        assert_eq!(last.as_ptr(), expected(from + count - 1), "{what}");
                        let mut b = Some(first);
                        for k in from..from + count {
                            let here = b.unwrap_or_else(|| panic!("{what}: {from} ends early"));
                            assert_eq!(here.as_ptr(), expected(k), "{what}");
                            // Each linked block is tagged free (its second
                            // word the key), as a free tags it.
                            #[cfg(feature = "hardened")]
                            // SAFETY: a block of the buffer, 16 bytes or more.
                            assert_eq!(unsafe { harden::tag_word(here) }, key, "{what}: tag");
                            b = follow(here);
                        }
                        assert_eq!(b, None, "{what}: stretch at {from} is null-terminated");
                        from += count;
                    }
                }
            }
        }
    }
}
