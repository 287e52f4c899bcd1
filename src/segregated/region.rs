//! The span region of one [`SegregatedFit`](super::SegregatedFit): where
//! its size classes' spans come from, and the *handle base* the class
//! queues name blocks from.
//!
//! **64-bit targets.** One reservation of [`REGION_LEN`] (32 GiB of address
//! space, nothing committed; 64 MiB under Miri), made with the heap, before
//! it is published (so no thread sees a heap without one).
//! Spans are carved from it by a bump under a lock, each aligned to its own
//! (power-of-two) length and committed on its own, so a block's span is
//! found by masking its address. The reservation's start is the handle
//! base: every block lies less than 32 GiB above it, so a queue names a
//! block with 32 bits and keeps the other 32 of its front word for the
//! generation. The first span slot stays unused, so no block sits at the
//! base itself (handle 0 means "none"). On Windows a span is a commit inside
//! the reservation, page-granular: no 64 KiB allocation granule is stranded
//! per span, which is what sizing spans to the page size did when each span
//! was its own reservation.
//!
//! **The class map** (64-bit). The reservation's first [`MAP_LEN`] bytes
//! (2 MiB; 4 KiB under Miri) are a byte per [`SPAN_MIN`] (16 KiB) of the
//! reservation, committed with it: the tag of the span that covers those
//! 16 KiB (its class index plus one), 0 where no span is. The 16 KiB are
//! counted on absolute 16 KiB boundaries, where spans start, not from the
//! base, which is only page-aligned ([`granule`]). Spans start past
//! the map. `carve` writes the span's bytes before any of its blocks exists,
//! so [`tag_of`](Region::tag_of) names the class of any block from its
//! address alone: an unsized free (`SegregatedFit::class_of`) is a range
//! check and a byte load. Spans never change class (a trimmed span is reused
//! by its own class), so a byte is written once.
//!
//! **32-bit targets.** Every address fits a handle: the base is 0 and each
//! span is its own aligned mapping, sized to the allocation granularity of
//! the base allocator ([`sys::granularity`]), released one by one on drop.
//!
//! **Costs.** One lock per span and one commit per `COMMIT_STEP` of
//! spans (64-bit: the region is committed ahead, 4 MiB at a time on Unix,
//! where a `MAP_NORESERVE` commit of untouched pages costs nothing; per span
//! on Windows), one mapping per span
//! (32-bit); the region gives spans back to the OS only when the allocator
//! is dropped (`trim` purges their pages instead, keeping the addresses).

use core::ptr::NonNull;

use super::lock::SpinLock;
use super::queue::HandleBase;
#[cfg(target_pointer_width = "64")]
use super::span::SPAN_MIN;
// Plain core atomics, also under loom: the map lives in OS memory, is
// written once per span under the region lock, and is outside the model.
use crate::sync::{AtomicUsize, Ordering};
use crate::{AllocError, sys};
#[cfg(target_pointer_width = "64")]
use core::sync::atomic::AtomicU8;

/// The address space one allocator reserves for its spans.
#[cfg(all(target_pointer_width = "64", not(miri)))]
pub(crate) const REGION_LEN: usize = 1 << 35;
/// The address space one allocator reserves for its spans (Miri: its
/// stand-in backs the whole reservation with heap memory).
#[cfg(all(target_pointer_width = "64", miri))]
pub(crate) const REGION_LEN: usize = 64 << 20;

/// The class map's byte for `addr` in the reservation at `base`: the
/// number of [`SPAN_MIN`] granules (aligned to their length, as spans are)
/// between `base`'s and `addr`'s. The base is only page-aligned, so counting
/// granules from the base itself would split a span that starts on a
/// 16 KiB boundary between two bytes. Every address below the base's
/// granule gives a huge value (wrapping); an address of the reservation at
/// most `MAP_LEN`, and one of a span less (spans end within it on a granule
/// boundary).
#[cfg(target_pointer_width = "64")]
#[inline(always)]
fn granule(base: usize, addr: usize) -> usize {
    (addr / SPAN_MIN).wrapping_sub(base / SPAN_MIN)
}

/// The class map's bytes of the span `start..end` (aligned to its length,
/// at least [`SPAN_MIN`]) in the reservation at `base`.
#[cfg(target_pointer_width = "64")]
fn granules(base: usize, start: usize, end: usize) -> core::ops::Range<usize> {
    granule(base, start)..granule(base, end)
}

/// The bytes of the class map at the reservation's start: one per
/// [`SPAN_MIN`] of the reservation (the smallest span, aligned to its
/// length, so no 16 KiB holds two spans).
#[cfg(target_pointer_width = "64")]
pub(crate) const MAP_LEN: usize = REGION_LEN / SPAN_MIN;

/// How far ahead of its spans the region is committed (64-bit): spans are
/// carved in address order, so committing to the next multiple of this
/// takes one system call for many spans. On Unix the reservation is
/// `MAP_NORESERVE`, so committed but untouched pages cost neither memory nor
/// commit charge; on Windows a commit is charged, so there it is the
/// smallest span (every span's own commit, as before).
#[cfg(all(target_pointer_width = "64", unix))]
const COMMIT_STEP: usize = 4 << 20;
#[cfg(all(target_pointer_width = "64", not(unix)))]
const COMMIT_STEP: usize = SPAN_MIN;

/// The end of the committed part of the reservation at `base` when its
/// bump is at `next`: the next `COMMIT_STEP` boundary (absolute) at or past
/// it, but not past the reservation. Invariant (under the region lock):
/// `base..committed_end(base, next)` is committed.
#[cfg(target_pointer_width = "64")]
fn committed_end(base: usize, next: usize) -> usize {
    next.next_multiple_of(COMMIT_STEP)
        .min(base + REGION_LEN.next_multiple_of(sys::granularity()))
}

/// Where one allocator's spans come from. See the [module docs](self).
/// Its initial state is all-zero bytes (it lives in the zeroed heap).
#[derive(Debug)]
// On 32-bit targets only `carved` is used (each span is its own mapping).
#[cfg_attr(not(target_pointer_width = "64"), allow(dead_code))]
pub(crate) struct Region {
    /// Serializes the bump (and the reservation).
    pub(super) lock: SpinLock,
    /// The reservation's first byte, 0 until reserved (64-bit).
    base: AtomicUsize,
    /// `base / SPAN_MIN`, the granule of the class map's byte 0 (64-bit):
    /// [`tag_at`](Self::tag_at) reads it instead of shifting the base.
    #[cfg(target_pointer_width = "64")]
    first_granule: AtomicUsize,
    /// The next free address in the reservation (64-bit).
    next: AtomicUsize,
    /// Bytes carved so far.
    carved: AtomicUsize,
}

/// The base as a consumer of a class queue reads it: after its `front`
/// (see [`HandleBase`]).
impl HandleBase for &Region {
    #[inline(always)]
    fn get(self) -> usize {
        self.base()
    }
}

impl Region {
    /// The handle base of the class queues: the reservation's start (64-bit),
    /// 0 on 32-bit targets.
    #[inline(always)]
    pub(crate) fn base(&self) -> usize {
        #[cfg(target_pointer_width = "64")]
        {
            // ORDERING: Relaxed: the base is written once, before the first
            // span is carved; any thread holding a block of this allocator
            // got it through the queue's or the lock's acquire, which orders
            // it after that write, and so did a consumer that has just read
            // a queue's `front` naming a block with Acquire (the queue reads
            // the base only then: `HandleBase`). Read before that, it may
            // still be 0 while the span region is being reserved.
            self.base.load(Ordering::Relaxed)
        }
        #[cfg(not(target_pointer_width = "64"))]
        {
            0
        }
    }

    /// Bytes of spans carved so far.
    pub(crate) fn carved(&self) -> usize {
        self.carved.load(Ordering::Relaxed)
    }

    /// A fresh span of `len` bytes (a power of two, a multiple of the page
    /// size, at least [`SPAN_MIN`]), aligned to `len`, committed, zeroed,
    /// its bytes of the class map set to `tag` (non-zero).
    #[cfg(target_pointer_width = "64")]
    pub(crate) fn carve(&self, len: usize, tag: u8) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(len >= SPAN_MIN && tag != 0);
        let oom = AllocError::OutOfMemory {
            requested: len,
            available: 0,
        };
        #[cfg(all(test, not(loom)))]
        if hooks::CARVE_FAILS.with(core::cell::Cell::get) {
            return Err(oom);
        }
        let _guard = self.lock.lock();
        let base = self.reserve_locked()?;
        let next = self.next.load(Ordering::Relaxed);
        let start = next.next_multiple_of(len);
        let end = start.checked_add(len).ok_or(oom)?;
        if end > base + REGION_LEN {
            return Err(oom);
        }
        let span = NonNull::new(core::ptr::with_exposed_provenance_mut::<u8>(start)).ok_or(oom)?;
        // Everything below `committed_end(base, next)` is committed already;
        // commit on to the next `COMMIT_STEP` boundary past the span (one
        // `mprotect` per step, not per span: CPython's tests carved 6,412
        // spans, each its own `mprotect`, where glibc made 741 in all).
        let have = committed_end(base, next);
        let want = committed_end(base, end);
        if want > have {
            let from =
                NonNull::new(core::ptr::with_exposed_provenance_mut::<u8>(have)).ok_or(oom)?;
            // SAFETY: `have..want` lies inside our reservation (`want` is at
            // most its end), page-aligned, and nothing in it is carved yet
            // (everything carved lies below `next <= have`).
            unsafe { sys::commit(from, want - have)? };
        }
        for i in granules(base, start, end) {
            // ORDERING: Relaxed: a block of this span reaches another thread
            // only through the queue's or a lock's release, which orders it
            // after this store (see `tag_of`).
            self.map_byte(base, i).store(tag, Ordering::Relaxed);
        }
        self.next.store(end, Ordering::Relaxed);
        self.carved.fetch_add(len, Ordering::Relaxed);
        Ok(span)
    }

    /// Reserves the span region and commits its class map, if not done
    /// yet. A heap does this before it is published, so that the region of
    /// a heap any thread can see is reserved: [`tag_at`](Self::tag_at)
    /// tests no base for 0 (a zeroed region, as the tests make, reserves
    /// on its first [`carve`](Self::carve) instead).
    #[cfg(target_pointer_width = "64")]
    pub(crate) fn reserve(&self) -> Result<(), AllocError> {
        let _guard = self.lock.lock();
        self.reserve_locked().map(|_| ())
    }

    /// [`reserve`](Self::reserve) under the region lock; the base.
    #[cfg(target_pointer_width = "64")]
    fn reserve_locked(&self) -> Result<usize, AllocError> {
        let base = self.base.load(Ordering::Relaxed);
        if base != 0 {
            return Ok(base);
        }
        let len = REGION_LEN.next_multiple_of(sys::granularity());
        // Exposed: spans are made from addresses in the reservation
        // (`with_exposed_provenance_mut` in `carve`).
        let reserved = sys::reserve(len)?;
        // The map, and the reservation up to the first `COMMIT_STEP`
        // boundary past it (the invariant of `committed_end`).
        let first = committed_end(reserved.as_ptr().addr(), reserved.as_ptr().addr() + MAP_LEN)
            - reserved.as_ptr().addr();
        // SAFETY: the map is the reservation's first MAP_LEN bytes (a page
        // multiple: REGION_LEN / SPAN_MIN, both powers of two), and `first`
        // is at most MAP_LEN + COMMIT_STEP, inside it.
        if let Err(e) = unsafe { sys::commit(reserved, first) } {
            // SAFETY: the reservation just made; nobody has seen it.
            let _ = unsafe { sys::release(reserved, len) };
            return Err(e);
        }
        let base = reserved.as_ptr().expose_provenance();
        // Spans start past the map (so no block sits at the base, whose
        // handle would be 0).
        self.next.store(base + MAP_LEN, Ordering::Relaxed);
        self.first_granule.store(base / SPAN_MIN, Ordering::Relaxed);
        // ORDERING: Release pairs with the Acquire of `contains`; the queues
        // read it Relaxed (see `base`).
        self.base.store(base, Ordering::Release);
        Ok(base)
    }

    /// The class map's byte `i` of the reservation at `base`.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    fn map_byte(&self, base: usize, i: usize) -> &AtomicU8 {
        debug_assert!(i < MAP_LEN);
        // SAFETY: `base` is the live reservation's start (read from
        // `self.base`, non-zero); its first MAP_LEN bytes are committed
        // (`carve`) and only ever accessed as atomics; `i < MAP_LEN`.
        unsafe { &*core::ptr::with_exposed_provenance::<AtomicU8>(base + i) }
    }

    /// The tag `carve` gave the span covering `addr`, or 0: `addr` is not in
    /// a span of this region. The region is reserved (see `tag_at`).
    ///
    /// For the address of a block the caller got from this allocator, the
    /// byte was written before the block was published, and the caller's
    /// getting the block ordered it after that.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub(crate) fn tag_of(&self, addr: usize) -> u8 {
        self.tag_at(addr).unwrap_or(0)
    }

    /// [`tag_of`](Self::tag_of), with `None` for an address outside the
    /// reservation, so that a caller leaves at once. The region must be
    /// reserved: every published heap's is ([`reserve`](Self::reserve)).
    /// (Unreserved, the first granule reads 0 and a low address would index
    /// a map at address 0.)
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub(crate) fn tag_at(&self, addr: usize) -> Option<u8> {
        // ORDERING: Relaxed, as `base`: both were written before the heap
        // was published (`reserve`), which the caller's load of the heap
        // acquired.
        let first = self.first_granule.load(Ordering::Relaxed);
        let i = (addr / SPAN_MIN).wrapping_sub(first);
        if i >= MAP_LEN {
            return None;
        }
        let base = self.base();
        debug_assert!(
            base != 0 && i == granule(base, addr),
            "a published heap's region is reserved"
        );
        // ORDERING: Relaxed: see `tag_of`; any other address reads 0 or a
        // span's tag, both of which it may.
        Some(self.map_byte(base, i).load(Ordering::Relaxed))
    }

    /// A fresh span of `len` bytes (a power of two, a multiple of the
    /// granularity), aligned to `len`, committed, zeroed: its own mapping.
    /// (32-bit targets keep no class map: `_tag` is unused.)
    #[cfg(not(target_pointer_width = "64"))]
    pub(crate) fn carve(&self, len: usize, _tag: u8) -> Result<NonNull<u8>, AllocError> {
        #[cfg(all(test, not(loom)))]
        if hooks::CARVE_FAILS.with(core::cell::Cell::get) {
            return Err(AllocError::OutOfMemory {
                requested: len,
                available: 0,
            });
        }
        // Over-reserve by `len`, then keep the aligned part.
        let total = len.checked_mul(2).ok_or(AllocError::OutOfMemory {
            requested: len,
            available: 0,
        })?;
        let raw = sys::reserve(total)?;
        // SAFETY: `raw..raw+total` is the reservation just made.
        if let Err(e) = unsafe { sys::commit(raw, total) } {
            // SAFETY: as above; nothing else has seen it.
            let _ = unsafe { sys::release(raw, total) };
            return Err(e);
        }
        let addr = raw.as_ptr().addr();
        let start = addr.next_multiple_of(len);
        let span = raw.with_addr(core::num::NonZeroUsize::new(start).unwrap());
        // Exposed: span headers and bitmaps are reached from block addresses.
        let _ = span.as_ptr().expose_provenance();
        self.trim_mapping(raw, total, span, len);
        self.carved.fetch_add(len, Ordering::Relaxed);
        Ok(span)
    }

    /// Gives back the parts of `raw..raw+total` outside `span..span+len`.
    #[cfg(all(not(target_pointer_width = "64"), unix))]
    fn trim_mapping(&self, raw: NonNull<u8>, total: usize, span: NonNull<u8>, len: usize) {
        let head = span.as_ptr().addr() - raw.as_ptr().addr();
        let tail = total - head - len;
        // SAFETY: on Unix a mapping may be unmapped in parts; both pieces are
        // ours and unused.
        unsafe {
            if head > 0 {
                let _ = sys::release(raw, head);
            }
            if tail > 0 {
                let _ = sys::release(span.add(len), tail);
            }
        }
    }

    /// Where a mapping cannot be released in parts, the slack stays
    /// reserved (address space only: it is never touched).
    #[cfg(all(not(target_pointer_width = "64"), not(unix)))]
    fn trim_mapping(&self, _raw: NonNull<u8>, _total: usize, _span: NonNull<u8>, _len: usize) {}

    /// Releases one span (32-bit: each span is its own mapping; 64-bit: the
    /// region goes back whole in [`release_all`](Self::release_all)).
    ///
    /// # Safety
    ///
    /// The span came from [`carve`](Self::carve)`(len)` and nothing uses it.
    pub(crate) unsafe fn release_span(&self, span: NonNull<u8>, len: usize) {
        #[cfg(all(not(target_pointer_width = "64"), unix))]
        {
            // SAFETY: the caller's span is exactly the part of the mapping
            // `carve` kept.
            let _ = unsafe { sys::release(span, len) };
        }
        let _ = (span, len);
    }

    /// Releases the whole reservation (64-bit).
    ///
    /// # Safety
    ///
    /// Nothing uses any span afterwards, and no other thread uses the region.
    pub(crate) unsafe fn release_all(&self) {
        #[cfg(target_pointer_width = "64")]
        {
            let base = self.base.swap(0, Ordering::Acquire);
            if let Some(p) = NonNull::new(core::ptr::with_exposed_provenance_mut::<u8>(base)) {
                let len = REGION_LEN.next_multiple_of(sys::granularity());
                // SAFETY: exactly the reservation `carve` made; the caller
                // guarantees nothing uses it.
                let r = unsafe { sys::release(p, len) };
                debug_assert!(r.is_ok(), "release of the span region failed: {r:?}");
            }
        }
    }
}

/// Test hooks: this thread's span carving can be made to fail, as a full
/// region does.
#[cfg(all(test, not(loom)))]
pub(crate) mod hooks {
    use core::cell::Cell;

    std::thread_local! {
        /// `carve` on this thread fails with `OutOfMemory` while set.
        pub(crate) static CARVE_FAILS: Cell<bool> = const { Cell::new(false) };
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// Every byte of a span, and no byte outside it, maps to one of the
    /// class map bytes `carve` writes for it, wherever in its page the
    /// reservation starts. Before: counting 16 KiB from a base 4 KiB past
    /// a 16 KiB boundary put a span's last 4 KiB in its neighbour's byte
    /// (`class_of` named no class for them under Miri, whose reservation
    /// is page-aligned).
    #[test]
    fn a_spans_bytes_map_to_its_own_map_bytes_whatever_the_base() {
        const PAGE: usize = 4096;
        for base in (0..SPAN_MIN / PAGE).map(|k| (1 << 32) + k * PAGE) {
            let mut next = base + MAP_LEN;
            for len in [SPAN_MIN, SPAN_MIN, 2 * SPAN_MIN, 4 * SPAN_MIN, SPAN_MIN] {
                let start = next.next_multiple_of(len);
                let end = start + len;
                let own = granules(base, start, end);
                assert!(!own.is_empty() && own.end <= MAP_LEN, "{base:#x}: {own:?}");
                for addr in (start..end).step_by(PAGE / 2).chain([end - 1]) {
                    assert!(own.contains(&granule(base, addr)), "{base:#x}: {addr:#x}");
                }
                for addr in [start - 1, end] {
                    assert!(!own.contains(&granule(base, addr)), "{base:#x}: {addr:#x}");
                }
                next = end;
            }
            assert_eq!(granule(base, base), 0);
            assert!(granule(base, base - SPAN_MIN) >= MAP_LEN, "below the base");
            assert!(granule(base, base + REGION_LEN - 1) <= MAP_LEN);
        }
    }

    /// The region is committed ahead in `COMMIT_STEP`s, not per span: every
    /// span carved is still readable (zero) and writable at both ends, across
    /// step boundaries and for a span longer than a step. (An invariant
    /// test: a gap in the committed range would fault here.)
    #[test]
    #[cfg(not(any(loom, miri)))]
    fn every_span_is_committed_across_commit_steps() {
        // SAFETY: a region's initial state is all-zero bytes (it lives in
        // the zeroed heap); released below.
        let r: Region = unsafe { core::mem::zeroed() };
        let lens = [
            SPAN_MIN,
            1 << 20,
            SPAN_MIN,
            2 * COMMIT_STEP,
            SPAN_MIN,
            64 << 10,
        ];
        for (i, &len) in lens.iter().cycle().take(24).enumerate() {
            let p = r.carve(len, 1).expect("a span");
            for at in [0, len / 2, len - 1] {
                // SAFETY: inside the span just carved, ours.
                unsafe {
                    assert_eq!(p.as_ptr().add(at).read(), 0, "span {i} ({len} bytes)");
                    p.as_ptr().add(at).write(0xa5);
                }
            }
        }
        // SAFETY: nothing uses the spans any more.
        unsafe { r.release_all() };
    }
}
