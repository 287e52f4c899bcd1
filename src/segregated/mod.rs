//! `SegregatedFit`: two-level segregated fit with a lock-free queue per size
//! class (the write-up's general-purpose allocator).
//!
//! **Contract.** Any thread allocates and frees any block, in any order
//! (`Send + Sync`), with *sized* deallocation: `dealloc(ptr, layout)` must be
//! given the layout (or, through the `Allocator` trait, any size between the
//! request and the returned length) the block was allocated with, because the
//! class is recomputed from it by the same [`size_class`] function allocation
//! used. There is no per-allocation header and no side table: a live block is
//! all the caller's, a free block's first word is its queue link. Dropping
//! the allocator releases every span (blocks still in use dangle); large
//! allocations must be freed by the caller before that.
//!
//! **Classes and alignment** ([`SizeClass`]). TLSF-style: first level
//! `floor(log2)` of the size in 8-byte granules, second level 8 subdivisions;
//! 88 classes from 8 bytes (a pointer, to hold the link) to 64 KiB. A request
//! is rounded up to its alignment before mapping, and every class a multiple
//! of `align` maps to has a block size that is a multiple of `align`; blocks
//! sit at multiples of the block size from a page-aligned span base. So any
//! alignment up to 4096 is honoured by the class itself. Requests above
//! 64 KiB (after that rounding) or aligned above 4096 take the **large
//! path**: straight to the [`PageAllocator`] (`round(size)` bytes), and for
//! alignments above the page size an over-reservation whose base address is
//! kept in the word just below the returned block. Alignments are bounded
//! only by `isize::MAX`.
//!
//! **Fast path.** `alloc`: the class index (one `lzcnt`/`clz`, shifts), then
//! pop the class queue: two loads and one compare-exchange on the sequenced
//! front, retried on contention. `dealloc`: the class index, then push: one
//! store, one swap of the back pointer, one store linking the old tail. One
//! atomic read-modify-write per operation, no lock. See [`queue`] for the
//! queue, its empty transition and how the generation is packed (19 bits
//! beside a 45-bit address/8 in one `u64`: no 128-bit compare-exchange).
//!
//! **Slow path** (`#[cold]`, out of line). When a class is empty, `alloc`
//! takes the class's growth lock, pops again (another thread may have grown
//! or freed meanwhile), and only then grows: a span of exactly
//! `PageAllocator::round(want)` bytes (at least 16 KiB and 8 blocks), header
//! at the tail, blocks linked in private memory and published with one
//! exchange. [`try_alloc`] never grows: it pops or fails.
//! [`dealloc_batch`] publishes a caller-linked chain with one exchange.
//!
//! **Costs.** Metadata: 32 bytes per span, ~33 KiB of class state (three
//! 128-byte lines per class). Waste: below 1/8 of the block above 128 bytes,
//! plus each span's tail remainder. Failures: `ZeroSize`, `Os` / `OutOfMemory`
//! when the OS refuses a span, `TooLarge` when size plus alignment overflows.
//! In debug builds `dealloc` panics on a pointer that is not a block of its
//! class's spans ("foreign pointer") and on freeing the block that is
//! already the back of its queue ("double free"); release builds trust the
//! caller (a foreign pointer or a double free is then undefined behaviour,
//! as the `unsafe` contract says).
//!
//! [`size_class`]: SegregatedFit::size_class
//! [`try_alloc`]: SegregatedFit::try_alloc
//! [`dealloc_batch`]: SegregatedFit::dealloc_batch

mod class;
mod queue;
mod span;

use core::alloc::{GlobalAlloc, Layout};
use core::mem::size_of;
use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

pub use class::{GRANULE, MAX_CLASS_ALIGN, MAX_CLASS_SIZE, SizeClass};
use queue::ClassQueue;
use span::SpanHeader;

use crate::sync::{AtomicPtr, Mutex, Ordering};
use crate::{AllocError, PageAllocator, RawAllocator};

/// The state of one size class.
#[derive(Debug)]
struct Class {
    /// The free blocks of this class.
    queue: ClassQueue,
    /// Serializes growth of this class; queue operations never take it.
    growth: CachePadded<Mutex<()>>,
    /// The spans grown for this class, newest first (pushed under `growth`,
    /// read without it).
    spans: AtomicPtr<SpanHeader>,
}

impl Class {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Class {
            queue: ClassQueue::new(),
            growth: CachePadded::new(Mutex::new(())),
            spans: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Class {
            queue: ClassQueue::new(),
            growth: CachePadded::new(Mutex::new(())),
            spans: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// Two-level segregated fit with lock-free class queues. See the
/// [module docs](self).
///
/// ```
/// use std::alloc::Layout;
/// use allocasm::SegregatedFit;
///
/// let a = SegregatedFit::new();
/// let layout = Layout::from_size_align(100, 16).unwrap();
/// let p = a.alloc(layout).unwrap();
/// assert_eq!(p.as_ptr() as usize % 16, 0);
/// // SAFETY: allocated above with `layout`.
/// unsafe { a.dealloc(p, layout) };
/// // The block is back in its class queue: a try_alloc finds it.
/// assert!(a.try_alloc(layout).is_ok());
/// ```
#[derive(Debug)]
pub struct SegregatedFit {
    /// One entry per size class, indexed by [`SizeClass::index`].
    classes: [Class; SizeClass::COUNT],
}

impl Default for SegregatedFit {
    fn default() -> Self {
        Self::new()
    }
}

impl SegregatedFit {
    /// The largest request served from a size class (64 KiB).
    pub const MAX_CLASS_SIZE: usize = MAX_CLASS_SIZE;
    /// The largest alignment served from a size class (4096).
    pub const MAX_CLASS_ALIGN: usize = MAX_CLASS_ALIGN;

    /// An empty allocator that grows from the [`PageAllocator`]. `const`, so
    /// it can be a `#[global_allocator]` static; it maps nothing until the
    /// first allocation.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SegregatedFit {
            classes: [const { Class::new() }; SizeClass::COUNT],
        }
    }

    /// An empty allocator (loom build: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        SegregatedFit {
            classes: core::array::from_fn(|_| Class::new()),
        }
    }

    /// The size class shared by allocation and sized deallocation, or `None`
    /// for the large path. See [`SizeClass::of`].
    #[inline(always)]
    pub fn size_class(size: usize, align: usize) -> Option<SizeClass> {
        SizeClass::of(size, align)
    }

    #[inline(always)]
    fn class(&self, class: SizeClass) -> &Class {
        // In range by construction of `SizeClass`; the compiler drops the
        // bounds check for the same reason.
        &self.classes[class.index()]
    }

    /// Allocates a block for `layout`: pops its class queue, growing the
    /// class when it is empty; large requests go to the page allocator.
    #[inline(always)]
    pub fn alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            return self.alloc_large(layout);
        };
        match self.class(class).queue.pop() {
            Some(p) => {
                debug_assert!(
                    p.as_ptr().addr().is_multiple_of(layout.align()),
                    "{:#p} from class {} is not aligned to {}",
                    p,
                    class.index(),
                    layout.align()
                );
                Ok(p)
            }
            None => self.alloc_slow(class),
        }
    }

    /// Pops a block for `layout` or fails with `OutOfMemory`; never grows
    /// and never calls the OS (so large requests fail too).
    #[inline(always)]
    pub fn try_alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let empty = AllocError::OutOfMemory {
            requested: layout.size(),
            available: 0,
        };
        let class = Self::size_class(layout.size(), layout.align()).ok_or(empty)?;
        self.class(class).queue.pop().ok_or(empty)
    }

    /// The class was empty: take its growth lock, re-check, grow, retry.
    #[cold]
    #[inline(never)]
    fn alloc_slow(&self, class: SizeClass) -> Result<NonNull<u8>, AllocError> {
        let c = self.class(class);
        loop {
            {
                let _guard = c.growth.lock().unwrap_or_else(|e| e.into_inner());
                // Re-check under the lock: ten threads that found the class
                // empty must not grow it ten times.
                if let Some(p) = c.queue.pop() {
                    return Ok(p);
                }
                let grown = span::grow(&c.spans, class.block_size())?;
                // SAFETY: a fresh chain of this class's blocks, linked by
                // `grow`, owned by nobody else, below 2^48 (checked there).
                unsafe { c.queue.push(grown.first, grown.last) };
            }
            // No block is reserved for us: pop like everyone else.
            if let Some(p) = c.queue.pop() {
                return Ok(p);
            }
        }
    }

    /// The large path: straight to the page allocator.
    #[cold]
    #[inline(never)]
    fn alloc_large(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let pages = PageAllocator::new();
        if layout.align() <= pages.page_size() {
            return Ok(pages.alloc(layout.size())?.cast());
        }
        let total = layout
            .size()
            .checked_add(layout.align())
            .ok_or(AllocError::TooLarge {
                requested: layout.size(),
                max: isize::MAX as usize - layout.align(),
            })?;
        let base = pages.alloc(total)?.cast::<u8>();
        // The first multiple of `align` strictly above `base`: at least a page
        // above it (room for the base word), and `size` bytes fit before
        // `base + total`.
        let offset = layout.align() - base.as_ptr().addr() % layout.align();
        // SAFETY: `offset <= align`, so `base + offset + size <= base + total`.
        let p = unsafe { base.add(offset) };
        // SAFETY: `offset >= page size >= 8` and `p` is 8-aligned, so the word
        // below `p` lies in the reservation's padding.
        unsafe { p.cast::<*mut u8>().sub(1).write(base.as_ptr()) };
        Ok(p)
    }

    /// Gives a block back: pushes it onto its class queue without any lock
    /// (large blocks go back to the page allocator).
    ///
    /// # Safety
    ///
    /// `ptr` was allocated by this allocator with `layout` (or a size that
    /// maps to the same class, see [`size_class`](Self::size_class)), is not
    /// freed twice, and is not used afterwards.
    ///
    /// Debug builds panic on a pointer that is not a block of the class's
    /// spans ("foreign pointer") and on a block that is already the back of
    /// its queue ("double free").
    #[inline(always)]
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            // SAFETY: forwarded contract; the same layout maps to no class,
            // so `ptr` came from `alloc_large`.
            return unsafe { self.dealloc_large(ptr, layout) };
        };
        let c = self.class(class);
        #[cfg(debug_assertions)]
        self.debug_check_free(c, class, ptr);
        // SAFETY: the caller gives us a block of this class it owned.
        unsafe { c.queue.push(ptr, ptr) };
    }

    /// The debug-build checks of a free: the block must belong to the
    /// class, and must not be the back of the queue already.
    #[cfg(debug_assertions)]
    #[cold]
    #[inline(never)]
    fn debug_check_free(&self, c: &Class, class: SizeClass, ptr: NonNull<u8>) {
        assert!(
            span::contains_block(&c.spans, class.block_size(), ptr),
            "SegregatedFit: foreign pointer {ptr:#p}: not a block of class {} ({} bytes)",
            class.index(),
            class.block_size()
        );
        assert!(
            c.queue.back() != ptr.as_ptr(),
            "SegregatedFit: double free of {ptr:#p}"
        );
    }

    /// Frees a large block.
    ///
    /// # Safety
    ///
    /// `ptr` came from `alloc_large(layout)`.
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_large(&self, ptr: NonNull<u8>, layout: Layout) {
        let pages = PageAllocator::new();
        debug_assert!(
            ptr.as_ptr().addr().is_multiple_of(pages.page_size()),
            "SegregatedFit: foreign pointer {ptr:#p}: a large block is page-aligned"
        );
        if layout.align() <= pages.page_size() {
            // SAFETY: `alloc_large` got it from `pages.alloc(size)`.
            return unsafe { pages.dealloc(ptr, layout.size()) };
        }
        // SAFETY: `alloc_large` stored the reservation's base just below.
        let base = unsafe { ptr.as_ptr().cast::<*mut u8>().sub(1).read() };
        // SAFETY: `base` came from `pages.alloc(size + align)`.
        unsafe { pages.dealloc(NonNull::new_unchecked(base), layout.size() + layout.align()) };
    }

    /// Links `blocks` into a chain for [`dealloc_batch`](Self::dealloc_batch)
    /// and returns its `(first, last)`, or `None` when `blocks` is empty.
    ///
    /// The chain layout: the first pointer-sized word of each block holds
    /// the address of the next block (written as an `AtomicPtr<u8>`); the
    /// last block's word is ignored (the batch free writes null there).
    /// Callers may also write that layout themselves.
    ///
    /// # Safety
    ///
    /// Every block is a live block of this allocator of one and the same
    /// class, owned by the caller, appearing once, and not used afterwards
    /// except by passing the chain to `dealloc_batch`.
    pub unsafe fn link_batch(
        blocks: impl IntoIterator<Item = NonNull<u8>>,
    ) -> Option<(NonNull<u8>, NonNull<u8>)> {
        let mut it = blocks.into_iter();
        let first = it.next()?;
        let mut last = first;
        for b in it {
            // SAFETY: `last` is a block of at least 8 bytes, 8-aligned, that
            // the caller owns.
            unsafe { queue::link(last) }.store(b.as_ptr(), Ordering::Relaxed);
            last = b;
        }
        Some((first, last))
    }

    /// Frees a chain of blocks of `class` that the caller linked through
    /// their own bytes (see [`link_batch`](Self::link_batch)): one publish,
    /// no lock, whatever the length.
    ///
    /// # Safety
    ///
    /// `first..=last` is a chain in the [`link_batch`](Self::link_batch)
    /// layout of live blocks of this allocator, all of class `class` (as
    /// [`size_class`](Self::size_class) gave it for their layouts), each once;
    /// none is used afterwards.
    pub unsafe fn dealloc_batch(&self, first: NonNull<u8>, last: NonNull<u8>, class: SizeClass) {
        let c = self.class(class);
        #[cfg(debug_assertions)]
        {
            let mut b = first;
            loop {
                self.debug_check_free(c, class, b);
                if b == last {
                    break;
                }
                // SAFETY: the caller linked the chain through live blocks.
                let next = unsafe { queue::link(b) }.load(Ordering::Relaxed);
                b = NonNull::new(next).expect("SegregatedFit: the batch chain ends before `last`");
            }
        }
        // SAFETY: the caller's chain of this class's blocks.
        unsafe { c.queue.push(first, last) };
    }

    /// Whether `ptr` is a block of the class `layout` maps to (walks that
    /// class's spans: O(spans)). Always false for the large path, which keeps
    /// no record of its blocks.
    pub fn owns(&self, ptr: NonNull<u8>, layout: Layout) -> bool {
        Self::size_class(layout.size(), layout.align()).is_some_and(|class| {
            span::contains_block(&self.class(class).spans, class.block_size(), ptr)
        })
    }

    /// How many spans `class` has grown.
    pub fn span_count(&self, class: SizeClass) -> usize {
        span::count(&self.class(class).spans)
    }

    /// How many blocks one span of `class` holds (the page size decides).
    pub fn blocks_per_span(class: SizeClass) -> usize {
        span::geometry(&PageAllocator::new(), class.block_size()).map_or(0, |(_, n)| n)
    }

    /// The usable length of a block allocated for `layout`.
    fn usable(layout: Layout) -> usize {
        match Self::size_class(layout.size(), layout.align()) {
            Some(c) => c.block_size(),
            None => {
                let pages = PageAllocator::new();
                if layout.align() <= pages.page_size() {
                    pages.round(layout.size()).unwrap_or(layout.size())
                } else {
                    layout.size()
                }
            }
        }
    }
}

impl Drop for SegregatedFit {
    fn drop(&mut self) {
        for c in &self.classes {
            // SAFETY: `&mut self`: no other thread uses the allocator, and
            // the caller's blocks die with it (see the contract).
            unsafe { span::release_all(&c.spans) };
        }
    }
}

// `SegregatedFit: Send + Sync` follows from its fields (atomics and mutexes);
// this checks it at compile time.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SegregatedFit>();
};

const _: () = assert!(size_of::<SpanHeader>().is_multiple_of(8));

impl RawAllocator for SegregatedFit {
    const FREES_INDIVIDUALLY: bool = true;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.alloc(layout)?;
        Ok(NonNull::slice_from_raw_parts(p, Self::usable(layout)))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.dealloc(ptr, layout) }
    }
}

// SAFETY: `alloc` returns blocks of at least `layout.size()` bytes aligned to
// `layout.align()` that no other live allocation overlaps, or null; `dealloc`
// takes back exactly such blocks; the allocator never allocates through the
// global allocator itself (its lock is a futex-style `Mutex`, its memory
// comes from the page allocator), so it can be the global allocator.
unsafe impl GlobalAlloc for SegregatedFit {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        SegregatedFit::alloc(self, layout).map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `GlobalAlloc` guarantees `ptr` is a non-null block allocated
        // here with `layout`.
        unsafe { SegregatedFit::dealloc(self, NonNull::new_unchecked(ptr), layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = Self::size_class(layout.size(), layout.align());
        if old.is_some() && old == Self::size_class(new_size, layout.align()) {
            // Same class: the block already holds `new_size` bytes.
            return ptr;
        }
        // SAFETY: `GlobalAlloc::realloc` guarantees `new_size`, rounded up to
        // `layout.align()`, does not overflow `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let Ok(new) = SegregatedFit::alloc(self, new_layout) else {
            return ptr::null_mut();
        };
        // SAFETY: both blocks are live, distinct and at least the copied
        // length; the old block is then freed with its own layout.
        unsafe {
            ptr::copy_nonoverlapping(ptr, new.as_ptr(), layout.size().min(new_size));
            SegregatedFit::dealloc(self, NonNull::new_unchecked(ptr), layout);
        }
        new.as_ptr()
    }
}

// SAFETY: blocks stay valid until deallocated or until the allocator (which
// the reference borrows) is dropped; `deallocate` accepts any layout that
// "fits" a block (sizes between the request and the returned length map to
// the same class, see `SizeClass::of`); zero-size requests get a dangling,
// aligned pointer and are never passed on.
unsafe impl allocator_api2::alloc::Allocator for &SegregatedFit {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            let dangling = ptr::without_provenance_mut::<u8>(layout.align());
            // SAFETY: an alignment is never zero.
            return Ok(NonNull::slice_from_raw_parts(
                unsafe { NonNull::new_unchecked(dangling) },
                0,
            ));
        }
        Ok(RawAllocator::allocate(*self, layout)?)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: forwarded contract; a fitting layout maps to the
            // block's class.
            unsafe { SegregatedFit::dealloc(self, ptr, layout) }
        }
    }
}
