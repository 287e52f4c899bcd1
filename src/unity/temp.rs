//! `Temp`: Unity's per-thread stack allocator, freed whole at the end of a
//! frame or of a job scope.
//!
//! **Contract.** Each thread that needs scratch memory owns one `Temp` (it is
//! neither `Send` nor `Sync`: its allocations are only valid on the thread and
//! in the scope that made them). Nobody frees a single block: [`deallocate`]
//! is a no-op, as Unity documents ("doing so has no effect"). Everything goes
//! at once at [`Temp::end_frame`], or at the end of a [`Temp::scope`] (a job's
//! scope: it rolls back to where the scope started). Every block is aligned
//! to at least [`Temp::MIN_ALIGN`] = 64 bytes. When the buffer is full the
//! request goes to the fallback allocator `F` (Unity: `TempJob` on the main
//! thread), counted in [`Temp::fallback_count`]; those blocks are given back
//! to `F` at the same end of frame or scope.
//!
//! **Fast path** ([`Temp::try_alloc`]): a load of the offset, a compare of the
//! request against the room left, an add that rounds the size to 64 and a
//! store. No atomic, no call, no loop (see `probe_temp_alloc`).
//!
//! **Slow path** ([`Temp::alloc`] when the buffer is full): `#[cold]`, asks
//! the fallback, counts it, and records the block so the end of the frame can
//! return it.
//!
//! **Costs.** No per-block metadata; blocks round up to 64 bytes. The buffer
//! is page-granular memory from [`PageAllocator`] (rounded down to a multiple
//! of 64 for use). Each fallback block costs a `(pointer, Layout)` record.
//! Failures: the buffer could not be mapped (`Os`), zero size, bad alignment,
//! and whatever the fallback refuses.
//!
//! [`deallocate`]: RawAllocator::deallocate

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;

use crate::{AllocError, PageAllocator, RawAllocator, align_up};

/// Unity's per-thread stack allocator. See the [`unity`](crate::unity) overview; the
/// full contract heads `src/unity/temp.rs`.
///
/// ```
/// use allocasm::{Temp, TempJob};
/// let job = TempJob::new(1 << 16).unwrap();
/// let mut temp = Temp::new(4096, &job).unwrap();
/// let a = temp.alloc(100, 8).unwrap();
/// assert_eq!(a.as_ptr() as usize % 64, 0);
/// assert_eq!(temp.used(), 128);
/// temp.end_frame();
/// assert_eq!(temp.used(), 0);
/// ```
pub struct Temp<F: RawAllocator> {
    /// Start of the buffer: page-aligned, so offsets that are multiples of 64
    /// are 64-aligned addresses. Owned; released on drop.
    base: NonNull<u8>,
    /// Usable bytes: a multiple of [`Temp::MIN_ALIGN`], at most the mapping.
    capacity: usize,
    /// Bytes of the mapping (what is released on drop).
    mapped: usize,
    /// Next free byte. Invariant: `offset <= capacity` and
    /// `offset % MIN_ALIGN == 0`.
    offset: Cell<usize>,
    /// Where requests go when the buffer is full.
    fallback: F,
    /// Requests served by `fallback` since construction.
    fallback_count: Cell<usize>,
    /// Fallback blocks still to give back, in allocation order (scopes pop a
    /// suffix of it).
    fallback_blocks: RefCell<Vec<(NonNull<u8>, Layout)>>,
    /// Highest `offset` seen at a roll-back (end of frame or scope) since
    /// construction; [`Temp::high_water`] folds in the current offset.
    high_water: Cell<usize>,
}

impl<F: RawAllocator> Temp<F> {
    /// Every block is aligned to at least this (Unity's documented minimum).
    pub const MIN_ALIGN: usize = 64;
    /// Unity's default size for the main thread's `Temp` in players: 4 MB.
    pub const MAIN_THREAD_CAPACITY: usize = 4 << 20;
    /// Unity's default size for the main thread's `Temp` in the editor: 16 MB.
    pub const EDITOR_MAIN_THREAD_CAPACITY: usize = 16 << 20;
    /// Unity's default size for a worker thread's `Temp`: 256 KB.
    pub const WORKER_THREAD_CAPACITY: usize = 256 << 10;

    /// A `Temp` with `capacity` bytes (rounded down to a multiple of 64) that
    /// falls back to `fallback` when full.
    ///
    /// Errors: `capacity < 64` is [`AllocError::InvalidConfig`] naming
    /// `capacity`; a capacity no mapping can have is [`AllocError::TooLarge`];
    /// the OS refusing the buffer is [`AllocError::Os`].
    pub fn new(capacity: usize, fallback: F) -> Result<Self, AllocError> {
        if capacity < Self::MIN_ALIGN {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::Capacity,
                value: capacity,
            });
        }
        let capacity = capacity & !(Self::MIN_ALIGN - 1);
        let pages = PageAllocator::new();
        let block = pages.alloc(capacity)?;
        Ok(Temp {
            base: block.cast(),
            capacity,
            mapped: block.len(),
            offset: Cell::new(0),
            fallback,
            fallback_count: Cell::new(0),
            fallback_blocks: RefCell::new(Vec::new()),
            high_water: Cell::new(0),
        })
    }

    /// A main-thread `Temp` of Unity's player default size (4 MB).
    pub fn main_thread(fallback: F) -> Result<Self, AllocError> {
        Self::new(Self::MAIN_THREAD_CAPACITY, fallback)
    }

    /// A worker-thread `Temp` of Unity's default size (256 KB).
    pub fn worker_thread(fallback: F) -> Result<Self, AllocError> {
        Self::new(Self::WORKER_THREAD_CAPACITY, fallback)
    }

    /// The fast path: `size` bytes aligned to `max(align, 64)` from the
    /// buffer, or an error without falling back.
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::BadAlignment`], and
    /// [`AllocError::OutOfMemory`] when the buffer has no room (the caller
    /// decides whether to fall back: [`alloc`](Self::alloc) does).
    #[inline(always)]
    pub fn try_alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        if !align.is_power_of_two() {
            return Err(if size == 0 {
                AllocError::ZeroSize
            } else {
                AllocError::BadAlignment { align }
            });
        }
        let offset = self.offset.get();
        debug_assert!(
            offset <= self.capacity && offset.is_multiple_of(Self::MIN_ALIGN),
            "Temp offset {offset} out of range 0..={} or unaligned",
            self.capacity
        );
        let out = || AllocError::OutOfMemory {
            requested: size,
            available: self.capacity - offset,
        };
        let start = if align <= Self::MIN_ALIGN {
            // The base is page-aligned, so a 64-aligned offset is a
            // 64-aligned address: nothing to pad.
            offset
        } else {
            let base = self.base.as_ptr() as usize;
            // May wrap for absurd alignments; the range check rejects every
            // wrapped value (it lands below `offset` or above `capacity`).
            let start = align_up(base.wrapping_add(offset), align).wrapping_sub(base);
            if start < offset || start > self.capacity {
                return Err(out());
            }
            start
        };
        // `(size - 1) | 63` is the size rounded up to 64, minus one: for a
        // zero size it wraps to `usize::MAX`, and so it does for a size
        // within 63 of it. The block's last byte, `start + last`, then
        // overflows or lands at or past the capacity (a multiple of 64,
        // like `start`), so one add and one compare refuse a zero size, a
        // size that does not fit and an absurd one, and only the last
        // byte's offset stays live (not the size, its rounding and the room).
        let last = size.wrapping_sub(1) | (Self::MIN_ALIGN - 1);
        let end = match start.checked_add(last) {
            Some(last_byte) if last_byte < self.capacity => last_byte + 1,
            _ => {
                return Err(if size == 0 {
                    AllocError::ZeroSize
                } else {
                    out()
                });
            }
        };
        self.offset.set(end);
        // SAFETY: `start < end <= capacity <= mapped`: inside the buffer.
        Ok(unsafe { self.base.add(start) })
    }

    /// Allocates `size` bytes aligned to `max(align, 64)`: from the buffer,
    /// or from the fallback (counted) when the buffer is full.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        match self.try_alloc(size, align) {
            Ok(p) => Ok(p),
            Err(AllocError::OutOfMemory { .. }) => self.alloc_fallback(size, align),
            Err(e) => Err(e),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_fallback(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let layout = crate::align::layout_for(size, align.max(Self::MIN_ALIGN))?;
        let block = self.fallback.allocate(layout)?.cast::<u8>();
        self.fallback_count.set(self.fallback_count.get() + 1);
        self.fallback_blocks.borrow_mut().push((block, layout));
        Ok(block)
    }

    /// Ends the frame: the whole buffer is free again and every fallback
    /// block is given back to the fallback allocator.
    ///
    /// Taking `&mut self` ends every borrow of this `Temp` (collections built
    /// on `&Temp`); raw pointers from it must not be used afterwards.
    pub fn end_frame(&mut self) {
        self.note_high_water();
        self.offset.set(0);
        self.release_fallback_from(0);
    }

    /// Runs `job` with this `Temp` as a job's scope: everything `job`
    /// allocates (here or in the fallback) is freed when it returns, and the
    /// allocations made before the scope are untouched.
    ///
    /// ```
    /// use allocasm::{Temp, TempJob};
    /// let job = TempJob::new(1 << 16).unwrap();
    /// let mut temp = Temp::new(4096, &job).unwrap();
    /// temp.alloc(64, 64).unwrap();
    /// let inside = temp.scope(|t| {
    ///     t.alloc(1000, 64).unwrap();
    ///     t.used()
    /// });
    /// assert_eq!(inside, 64 + 1024);
    /// assert_eq!(temp.used(), 64);
    /// ```
    pub fn scope<R>(&mut self, job: impl FnOnce(&Self) -> R) -> R {
        let offset = self.offset.get();
        let blocks = self.fallback_blocks.borrow().len();
        let r = job(self);
        self.note_high_water();
        self.offset.set(offset);
        self.release_fallback_from(blocks);
        r
    }

    /// Folds the current offset into the high-water mark (kept off the fast
    /// path: done before every roll-back).
    fn note_high_water(&self) {
        self.high_water
            .set(self.high_water.get().max(self.offset.get()));
    }

    /// Gives back the fallback blocks recorded at index `from` and later.
    fn release_fallback_from(&mut self, from: usize) {
        let blocks = self.fallback_blocks.get_mut();
        for (ptr, layout) in blocks.drain(from..) {
            // SAFETY: `ptr` came from `self.fallback.allocate(layout)` and is
            // given back once: it leaves the list here. `&mut self` ends the
            // borrows through which it was handed out.
            unsafe { self.fallback.deallocate(ptr, layout) };
        }
    }

    /// Bytes of the buffer in use (a multiple of 64).
    pub fn used(&self) -> usize {
        self.offset.get()
    }

    /// Usable bytes of the buffer.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Highest [`used`](Self::used) reached since construction.
    pub fn high_water(&self) -> usize {
        self.high_water.get().max(self.offset.get())
    }

    /// Requests served by the fallback allocator since construction.
    pub fn fallback_count(&self) -> usize {
        self.fallback_count.get()
    }

    /// The fallback allocator.
    pub fn fallback(&self) -> &F {
        &self.fallback
    }

    /// Resizes the buffer block at `ptr` (allocated with `old`) to `new` in
    /// place when it is the last one handed out, aligned for `new`, and the
    /// rounded new size fits. `None` otherwise (nothing changed).
    fn resize_last(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Option<NonNull<u8>> {
        if old.size() == 0 || !self.owns(ptr.as_ptr()) {
            return None;
        }
        let start = ptr.as_ptr() as usize - self.base.as_ptr() as usize;
        if start + align_up(old.size(), Self::MIN_ALIGN) != self.offset.get()
            || !(ptr.as_ptr() as usize).is_multiple_of(new.align())
            || new.size() > self.capacity - start
        {
            return None;
        }
        // `capacity - start` is a multiple of 64, so the rounded size fits.
        self.offset
            .set(start + align_up(new.size(), Self::MIN_ALIGN));
        Some(ptr)
    }

    /// Whether `ptr` lies inside this `Temp`'s buffer.
    pub fn owns(&self, ptr: *const u8) -> bool {
        let base = self.base.as_ptr() as usize;
        (ptr as usize).wrapping_sub(base) < self.capacity
    }
}

impl<F: RawAllocator> Drop for Temp<F> {
    fn drop(&mut self) {
        self.release_fallback_from(0);
        // SAFETY: `base`/`mapped` are exactly the mapping made in `new`,
        // released once, here.
        unsafe { PageAllocator::new().dealloc(self.base, self.mapped) };
    }
}

impl<F: RawAllocator> core::fmt::Debug for Temp<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Temp")
            .field("base", &self.base)
            .field("capacity", &self.capacity)
            .field("used", &self.offset.get())
            .field("fallback_count", &self.fallback_count.get())
            .finish()
    }
}

// SAFETY: blocks come from the frame allocator `F` (whose `RawAllocator`
// contract they inherit), at least `layout.size()` bytes, aligned, valid until
// `end_frame` (`&mut self`) or drop.
crate::raw_allocator::bulk_raw_allocator! {
    /// A no-op, as in Unity: the block goes at the end of the frame or scope.
    impl [F: RawAllocator] Temp<F> { |t, layout| t.alloc(layout.size(), layout.align()) }
}

// SAFETY: blocks come from `alloc`, which hands out disjoint, live ranges of
// at least `layout.size()` bytes aligned to `layout.align()`; they stay valid
// until `end_frame`/`scope` end/drop, each of which needs `&mut Temp` or the
// `Temp` itself, so no `&Temp` (and no collection allocating through one) can
// outlive them. Zero-size layouts get a dangling, aligned pointer. Clones of
// `&Temp` are the same allocator. `grow`/`shrink` resize the last buffer block
// in place (the offset moves to its new rounded end, beyond which nothing was
// handed out); other blocks move on growth.
crate::api04::allocator_api04! {
    impl [F: RawAllocator] &Temp<F> { frees_in_bulk, resizes_last(|t| t) }
}
