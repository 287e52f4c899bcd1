//! `MemoryTracker` and `Tracked<A>`: per-subsystem accounting, as in the
//! chapter's section on tracking allocations.
//!
//! **Contract.** A [`MemoryTracker`] keeps, per [`MemoryTag`], the bytes in
//! use now and the high-water mark (the most ever in use at once).
//! [`Tracked`] wraps any allocator of the crate (anything implementing
//! [`RawAllocator`]) and books every allocation and free made through it
//! under its tag, into a tracker it borrows, so many allocators can report into
//! one tracker. The tracker's counters are relaxed atomics: it is `Send` and
//! `Sync`, and a `Tracked` is `Sync` exactly when its allocator is.
//!
//! **Fast path.** The wrapped allocator's, plus two relaxed atomic
//! read-modify-writes per allocation (add to the tag's bytes, raise the
//! high-water mark) and one per free (plus one on the wrapper's own count, so
//! [`Tracked::reset`] can give back what a bulk reset freed). No probe: this
//! is a debugging aid around a fast path, not one.
//!
//! **Costs.** Two words per tag in the tracker, one per wrapper. Counts are of
//! requested bytes (`layout.size()`), not of padding or headers.

use alloc::string::String;
use core::alloc::Layout;
use core::fmt::{self, Write as _};
use core::ptr::NonNull;

use crate::sync::{AtomicUsize, Ordering};
use crate::{AllocError, RawAllocator};

/// Takes `bytes` off `counter`, stopping at zero: a compare-and-swap loop
/// (what `fetch_update` does; written out because that method is renamed
/// `try_update` from Rust 1.100 on, and the crate builds on 1.95 too). The
/// counters are statistics, so relaxed is enough: nothing is published
/// through them.
#[inline]
fn saturating_sub(counter: &AtomicUsize, bytes: usize) {
    let mut current = counter.load(Ordering::Relaxed);
    while let Err(now) = counter.compare_exchange_weak(
        current,
        current.saturating_sub(bytes),
        Ordering::Relaxed,
        Ordering::Relaxed,
    ) {
        current = now;
    }
}

/// The subsystem that owns an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryTag {
    /// Rigid bodies, collision data.
    Physics,
    /// Decoded sounds, mixing buffers.
    Audio,
    /// Frame data, command buffers.
    Rendering,
    /// Pathfinding scratch, behaviour state.
    AI,
    /// Everything without a more specific owner.
    General,
}

impl MemoryTag {
    /// Every tag, in report order.
    pub const ALL: [MemoryTag; 5] = [
        MemoryTag::Physics,
        MemoryTag::Audio,
        MemoryTag::Rendering,
        MemoryTag::AI,
        MemoryTag::General,
    ];

    /// Number of tags.
    pub const COUNT: usize = Self::ALL.len();

    /// The name used in reports.
    pub const fn name(self) -> &'static str {
        match self {
            MemoryTag::Physics => "Physics",
            MemoryTag::Audio => "Audio",
            MemoryTag::Rendering => "Rendering",
            MemoryTag::AI => "AI",
            MemoryTag::General => "General",
        }
    }

    #[inline(always)]
    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for MemoryTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes in use and high-water mark per tag.
///
/// **Contract.** A [`MemoryTracker`] keeps, per [`MemoryTag`], the bytes in
/// use now and the high-water mark (the most ever in use at once).
/// [`Tracked`] wraps any allocator of the crate (anything implementing
/// [`RawAllocator`]) and books every allocation and free made through it
/// under its tag, into a tracker it borrows, so many allocators can report into
/// one tracker. The tracker's counters are relaxed atomics: it is `Send` and
/// `Sync`, and a `Tracked` is `Sync` exactly when its allocator is.
///
/// **Costs.** Two words per tag in the tracker, one per wrapper. Counts are of
/// requested bytes (`layout.size()`), not of padding or headers.
///
/// How the fast path compiles is in the source's header (`src/tracker.rs`).
///
/// ```
/// use allocasm::{LinearArena, MemoryTag, MemoryTracker, RawAllocator, Tracked};
/// use std::alloc::Layout;
///
/// let tracker = MemoryTracker::new();
/// let mut ai = Tracked::new(LinearArena::new(4096).unwrap(), &tracker, MemoryTag::AI);
/// ai.allocate(Layout::from_size_align(2048, 8).unwrap()).unwrap();
/// assert_eq!(tracker.current(MemoryTag::AI), 2048);
/// ai.reset(|arena| arena.reset());
/// assert_eq!((tracker.current(MemoryTag::AI), tracker.peak(MemoryTag::AI)), (0, 2048));
/// assert!(tracker.report().contains("AI: 0 bytes"));
/// ```
#[derive(Debug)]
pub struct MemoryTracker {
    /// Bytes in use per tag (indexed by `MemoryTag as usize`).
    current: [AtomicUsize; MemoryTag::COUNT],
    /// Highest value `current` ever had per tag. Invariant: `peak >= current`
    /// once every `track` call has returned.
    peak: [AtomicUsize; MemoryTag::COUNT],
}

impl Default for MemoryTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryTracker {
    /// A tracker with every count at zero.
    pub fn new() -> Self {
        MemoryTracker {
            current: core::array::from_fn(|_| AtomicUsize::new(0)),
            peak: core::array::from_fn(|_| AtomicUsize::new(0)),
        }
    }

    /// Books `bytes` more under `tag` (the chapter's `Track`).
    #[inline]
    pub fn track(&self, tag: MemoryTag, bytes: usize) {
        let now = self.current[tag.index()]
            .fetch_add(bytes, Ordering::Relaxed)
            .wrapping_add(bytes);
        self.peak[tag.index()].fetch_max(now, Ordering::Relaxed);
    }

    /// Books `bytes` fewer under `tag` (the chapter's `Untrack`). Never goes
    /// below zero.
    #[inline]
    pub fn untrack(&self, tag: MemoryTag, bytes: usize) {
        saturating_sub(&self.current[tag.index()], bytes);
    }

    /// Bytes in use under `tag`.
    pub fn current(&self, tag: MemoryTag) -> usize {
        self.current[tag.index()].load(Ordering::Relaxed)
    }

    /// The most bytes ever in use at once under `tag`.
    pub fn peak(&self, tag: MemoryTag) -> usize {
        self.peak[tag.index()].load(Ordering::Relaxed)
    }

    /// Bytes in use under all tags together.
    pub fn total(&self) -> usize {
        MemoryTag::ALL.iter().map(|&t| self.current(t)).sum()
    }

    /// One line per tag, `"<Tag>: <bytes> bytes"` (the chapter's
    /// `PrintReport`).
    pub fn report(&self) -> String {
        let mut out = String::new();
        for tag in MemoryTag::ALL {
            let _ = writeln!(out, "{tag}: {} bytes", self.current(tag));
        }
        out
    }

    /// One line per tag with the high-water mark:
    /// `"<Tag>: <bytes> bytes (peak <bytes> bytes)"`.
    pub fn report_with_peaks(&self) -> String {
        let mut out = String::new();
        for tag in MemoryTag::ALL {
            let _ = writeln!(
                out,
                "{tag}: {} bytes (peak {} bytes)",
                self.current(tag),
                self.peak(tag)
            );
        }
        out
    }
}

/// An allocator whose traffic is booked under one tag.
///
/// **Contract.** Wraps any [`RawAllocator`] and books every allocation and
/// free made through it under its [`MemoryTag`], into a [`MemoryTracker`] it
/// borrows (many wrappers may book into one tracker). Blocks are the inner
/// allocator's, with its contract: lifetime, alignment, frees.
/// [`reset`](Tracked::reset) runs the inner allocator's bulk release and
/// gives back what was still booked. `Send`/`Sync` as the inner allocator.
///
/// **Costs.** One word per wrapper; two relaxed atomic read-modify-writes
/// per allocation and one (plus one on the wrapper's count) per free.
/// Counts are of requested bytes (`layout.size()`), not of padding or
/// headers.
///
/// ```
/// use allocasm::{MemoryTag, MemoryTracker, Pool, RawAllocator, Tracked};
/// use std::alloc::Layout;
///
/// let tracker = MemoryTracker::new();
/// let audio = Tracked::new(Pool::new(4096, 16, 8).unwrap(), &tracker, MemoryTag::Audio);
/// let l = Layout::from_size_align(4096, 16).unwrap();
/// let a = audio.allocate(l).unwrap();
/// let b = audio.allocate(l).unwrap();
/// assert_eq!(tracker.current(MemoryTag::Audio), 8192);
/// // SAFETY: allocated above with `l`, freed once.
/// unsafe { audio.deallocate(a.cast(), l) };
/// assert_eq!(audio.live_bytes(), 4096);
/// // SAFETY: as above.
/// unsafe { audio.deallocate(b.cast(), l) };
/// assert_eq!((tracker.current(MemoryTag::Audio), tracker.peak(MemoryTag::Audio)), (0, 8192));
/// ```
#[derive(Debug)]
pub struct Tracked<'t, A> {
    /// The allocator doing the work.
    inner: A,
    /// Where the bytes are booked.
    tracker: &'t MemoryTracker,
    /// Under which tag.
    tag: MemoryTag,
    /// Bytes booked through this wrapper and not yet given back.
    live: AtomicUsize,
}

impl<'t, A: RawAllocator> Tracked<'t, A> {
    /// Wraps `inner`, booking into `tracker` under `tag`.
    pub fn new(inner: A, tracker: &'t MemoryTracker, tag: MemoryTag) -> Self {
        Tracked {
            inner,
            tracker,
            tag,
            live: AtomicUsize::new(0),
        }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// The tag bytes are booked under.
    pub fn tag(&self) -> MemoryTag {
        self.tag
    }

    /// Bytes booked through this wrapper and not yet given back.
    pub fn live_bytes(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Runs a bulk release on the wrapped allocator (`|a| a.reset()`), then
    /// unbooks everything this wrapper had booked.
    pub fn reset(&mut self, release: impl FnOnce(&mut A)) {
        release(&mut self.inner);
        let live = self.live.swap(0, Ordering::Relaxed);
        self.tracker.untrack(self.tag, live);
    }

    /// Unwraps the allocator, unbooking whatever is still booked.
    pub fn into_inner(self) -> A {
        let live = self.live.load(Ordering::Relaxed);
        self.tracker.untrack(self.tag, live);
        self.inner
    }
}

// SAFETY: forwards to the inner allocator `A`, whose `RawAllocator` contract
// guarantees every block it returns; the wrapper only counts.
unsafe impl<A: RawAllocator> RawAllocator for Tracked<'_, A> {
    const FREES_INDIVIDUALLY: bool = A::FREES_INDIVIDUALLY;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let block = self.inner.allocate(layout)?;
        self.live.fetch_add(layout.size(), Ordering::Relaxed);
        self.tracker.track(self.tag, layout.size());
        Ok(block)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded; the caller upholds the contract for `A`.
        unsafe { self.inner.deallocate(ptr, layout) };
        saturating_sub(&self.live, layout.size());
        self.tracker.untrack(self.tag, layout.size());
    }
}

// SAFETY: blocks come from the inner allocator's `RawAllocator::allocate`
// (disjoint, `layout.size()` bytes aligned to `layout.align()`, valid until
// given back); the wrapper only adds bookkeeping through atomics. Copies of
// `&Tracked` are the same allocator. Zero-size layouts get a dangling aligned
// pointer, are not booked and not freed.
crate::api04::allocator_api04! {
    impl ['t, A: RawAllocator] &Tracked<'t, A> { frees }
}
