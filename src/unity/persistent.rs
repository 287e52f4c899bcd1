//! `Persistent`: Unity's general-purpose allocator for indefinite lifetimes.
//!
//! **Contract.** Blocks live until freed explicitly, in any order, by any
//! thread the base allocator allows (`Persistent<A>` is `Send`/`Sync` exactly
//! when `A` is). Every block is aligned to at least
//! [`Persistent::MIN_ALIGN`] = 16 bytes. There is no fallback: "only limited
//! by the amount of free memory". With [`LeakDetection::Enabled`] live
//! blocks and bytes are counted and what is still live when the `Persistent`
//! is dropped is reported as a [`LeakReport`] (stderr, or the hook set by
//! [`Persistent::on_leak`]), as Unity's leak detection does. With
//! [`LeakDetection::Disabled`] nothing is counted or reported, as in a Unity
//! player build. The default is the build's: enabled with debug assertions
//! (development, tests), disabled without (release), see [`LeakDetection`].
//! Leaked blocks are not freed by the drop (the base allocator owns their
//! memory and may release it when it is dropped).
//!
//! **Fast path.** The base allocator's, with the alignment raised to 16, plus
//! a test of the mode (a load that no allocation writes). Counting adds two
//! relaxed `fetch_add`s on the live counters (one cache line of their own);
//! freeing is the base's free plus, counting, two relaxed `fetch_sub`s. Those
//! shared read-modify-writes are what counting costs: on a 64-byte pair over
//! `SegregatedFit` they made `Persistent` many times slower than its base,
//! which is why a release build does not count by default.
//!
//! **Slow path.** The base's (growth from the OS for `SegregatedFit`).
//!
//! **Costs.** Two counters and the mode; per block, whatever the base costs
//! at alignment 16. Failures: the base's, plus zero size and bad alignment.

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::{LeakDetection, LeakHook, LeakReport, report_leaks};
use crate::sync::{AtomicUsize, Ordering};
use crate::{AllocError, RawAllocator};

/// Live counters, kept together on their own cache line with the mode that
/// says whether they count.
#[derive(Debug)]
struct Live {
    /// Whether `alloc` and `dealloc` count (fixed at construction, so the
    /// counters never see a free whose allocation they did not count).
    counting: bool,
    /// Blocks allocated and not yet freed.
    allocations: AtomicUsize,
    /// Their requested bytes.
    bytes: AtomicUsize,
}

/// Unity's general-purpose allocator: a base allocator with a 16-byte minimum
/// alignment and optional leak counting ([`LeakDetection`]). See the
/// [`unity`](crate::unity) overview; the full contract heads
/// `src/unity/persistent.rs`.
///
/// ```
/// use allocasm::{LeakDetection, PageAllocator, Persistent};
/// let p = Persistent::with_leak_detection(PageAllocator::new(), LeakDetection::Enabled)
///     .on_leak(|_| {});
/// let block = p.alloc(100, 8).unwrap();
/// assert_eq!(block.as_ptr() as usize % 16, 0);
/// assert_eq!((p.live_allocations(), p.live_bytes()), (1, 100));
/// // SAFETY: `block` came from `p.alloc(100, 8)` and is live.
/// unsafe { p.dealloc(block, 100, 8) };
/// assert_eq!(p.live_allocations(), 0);
/// ```
pub struct Persistent<A: RawAllocator = crate::SegregatedFit> {
    /// Where the blocks come from.
    base: A,
    /// Live blocks and bytes. Invariant: when counting, they count exactly
    /// the blocks `alloc` returned that `dealloc` has not taken back; when
    /// not, they stay zero.
    live: CachePadded<Live>,
    /// Where a leak report goes (stderr when `None`).
    leak_hook: Option<LeakHook>,
}

impl Persistent {
    /// A `Persistent` over a fresh [`SegregatedFit`](crate::SegregatedFit),
    /// as Unity's is over its general-purpose heap, with the build's default
    /// [`LeakDetection`].
    ///
    /// ```
    /// use allocasm::{LeakDetection, Persistent};
    /// let p = Persistent::new();
    /// assert_eq!(p.leak_detection(), LeakDetection::default());
    /// let block = p.alloc(24, 8).unwrap();
    /// assert_eq!(block.as_ptr() as usize % 16, 0);
    /// // SAFETY: `block` came from `p.alloc(24, 8)` and is live.
    /// unsafe { p.dealloc(block, 24, 8) };
    /// assert_eq!(p.live_allocations(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_base(crate::SegregatedFit::new())
    }
}

impl Default for Persistent {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: RawAllocator> Persistent<A> {
    /// Every block is aligned to at least this (Unity's documented minimum).
    pub const MIN_ALIGN: usize = 16;

    /// A `Persistent` allocating from `base`, with the build's default
    /// [`LeakDetection`] (enabled with debug assertions, disabled without).
    pub fn with_base(base: A) -> Self {
        Self::with_leak_detection(base, LeakDetection::default())
    }

    /// A `Persistent` allocating from `base` that counts its live blocks and
    /// reports leaks on drop when `mode` is [`LeakDetection::Enabled`], and
    /// counts nothing when it is [`LeakDetection::Disabled`]. The mode is
    /// fixed for the allocator's life.
    ///
    /// ```
    /// use allocasm::{LeakDetection, Persistent, SegregatedFit};
    /// let p = Persistent::with_leak_detection(SegregatedFit::new(), LeakDetection::Disabled);
    /// let block = p.alloc(24, 8).unwrap();
    /// assert_eq!(p.live_allocations(), 0, "not counted");
    /// assert_eq!(p.leaks().allocations, 0, "so a drop reports nothing");
    /// // SAFETY: `block` came from `p.alloc(24, 8)` and is live.
    /// unsafe { p.dealloc(block, 24, 8) };
    /// ```
    pub fn with_leak_detection(base: A, mode: LeakDetection) -> Self {
        Persistent {
            base,
            live: CachePadded::new(Live {
                counting: mode == LeakDetection::Enabled,
                allocations: AtomicUsize::new(0),
                bytes: AtomicUsize::new(0),
            }),
            leak_hook: None,
        }
    }

    /// Whether this allocator counts live blocks and reports leaks.
    pub fn leak_detection(&self) -> LeakDetection {
        if self.live.counting {
            LeakDetection::Enabled
        } else {
            LeakDetection::Disabled
        }
    }

    /// Sends the leak report of the drop to `hook` instead of stderr.
    pub fn on_leak(mut self, hook: impl Fn(&LeakReport) + Send + Sync + 'static) -> Self {
        self.leak_hook = Some(Box::new(hook));
        self
    }

    /// The layout actually asked of the base.
    #[inline(always)]
    fn base_layout(size: usize, align: usize) -> Result<Layout, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        crate::check_align(align)?;
        crate::align::layout_for(size, align.max(Self::MIN_ALIGN))
    }

    /// Allocates `size` bytes aligned to `max(align, 16)`.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let layout = Self::base_layout(size, align)?;
        let block = self.base.allocate(layout)?.cast::<u8>();
        debug_assert!(
            (block.as_ptr() as usize).is_multiple_of(layout.align()),
            "base returned {block:p} for {layout:?}"
        );
        if self.live.counting {
            self.live.allocations.fetch_add(1, Ordering::Relaxed);
            self.live.bytes.fetch_add(size, Ordering::Relaxed);
        }
        Ok(block)
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`alloc`](Self::alloc) on this allocator with this
    /// `size` and `align`, and has not been freed since.
    #[inline(always)]
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        let layout = Layout::from_size_align(size, align.max(Self::MIN_ALIGN))
            .expect("the layout was valid when the block was allocated");
        // SAFETY: the caller guarantees `ptr` came from `alloc(size, align)`,
        // which asked the base for exactly `layout`.
        unsafe { self.base.deallocate(ptr, layout) };
        if self.live.counting {
            let was = self.live.allocations.fetch_sub(1, Ordering::Relaxed);
            debug_assert!(was > 0, "Persistent: more frees than allocations");
            self.live.bytes.fetch_sub(size, Ordering::Relaxed);
        }
    }

    /// Blocks allocated and not yet freed (0 when leak detection is
    /// disabled: nothing is counted).
    pub fn live_allocations(&self) -> usize {
        self.live.allocations.load(Ordering::Relaxed)
    }

    /// Requested bytes of the blocks not yet freed (0 when leak detection is
    /// disabled).
    pub fn live_bytes(&self) -> usize {
        self.live.bytes.load(Ordering::Relaxed)
    }

    /// What a drop would report now (nothing live when leak detection is
    /// disabled).
    pub fn leaks(&self) -> LeakReport {
        LeakReport {
            allocator: "Persistent",
            allocations: self.live_allocations(),
            bytes: self.live_bytes(),
            leaks: Vec::new(),
        }
    }

    /// The base allocator.
    pub fn base(&self) -> &A {
        &self.base
    }
}

impl<A: RawAllocator> Drop for Persistent<A> {
    fn drop(&mut self) {
        report_leaks(self.leak_hook.as_ref(), &self.leaks());
    }
}

impl<A: RawAllocator + fmt::Debug> fmt::Debug for Persistent<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Persistent")
            .field("base", &self.base)
            .field("leak_detection", &self.leak_detection())
            .field("live_allocations", &self.live_allocations())
            .field("live_bytes", &self.live_bytes())
            .finish()
    }
}

// SAFETY: forwards to the base allocator `A`, whose `RawAllocator` contract
// guarantees every block it returns; the wrapper only counts (or not).
unsafe impl<A: RawAllocator> RawAllocator for Persistent<A> {
    const FREES_INDIVIDUALLY: bool = A::FREES_INDIVIDUALLY;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.alloc(layout.size(), layout.align())?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded; `allocate(layout)` called `alloc(size, align)`.
        unsafe { self.dealloc(ptr, layout.size(), layout.align()) }
    }
}

// SAFETY: blocks from `alloc` are the base's blocks for a layout at least as
// strict as the one asked, live until `deallocate`; zero-size layouts get a
// dangling aligned pointer and are not freed. Copies of `&Persistent` are the
// same allocator.
crate::api04::allocator_api04! {
    impl [A: RawAllocator] &Persistent<A> { frees }
}
