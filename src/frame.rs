//! `FrameAllocator<N>`: the chapter's double-buffered frame allocator,
//! generalised to N buffers (2 = double, 3 = triple buffering).
//!
//! **Contract.** N [`LinearArena`]s of the same capacity, one of them live.
//! [`begin_frame`](FrameAllocator::begin_frame) (`&mut self`) moves to the
//! next buffer and resets only that one, so what was allocated in frame `f`
//! stays valid through frames `f + 1 ..= f + N - 1` (a reader such as the GPU
//! may still be using it) and is reused in frame `f + N`. The first
//! `begin_frame` lands on buffer 0. Allocation goes through `&self` into the
//! live buffer. `Send`, not `Sync`.
//!
//! Validity across frames is the caller's to respect with raw pointers:
//! `begin_frame` needs `&mut self`, so a collection borrowing the allocator
//! through `allocator_api2` cannot live across a frame boundary at all.
//!
//! **Fast path** ([`alloc`](FrameAllocator::alloc)): index the live buffer
//! (no bounds check: the index is always `< N`), then the arena's bump: align,
//! compare, add. No atomic, no call. No slow path.
//!
//! **Costs.** N times the per-frame capacity; one index.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::{AllocError, LinearArena, RawAllocator};

/// N linear arenas used round-robin, one per frame. Its contract, fast path and costs are in the header of `src/frame.rs`.
///
/// ```
/// use allocasm::FrameAllocator;
///
/// let mut frames = FrameAllocator::<2>::new(1024).unwrap();
/// let mut seen = Vec::new();
/// for _ in 0..4 {
///     frames.begin_frame();
///     frames.alloc(64, 8).unwrap();
///     seen.push(frames.current_index());
/// }
/// assert_eq!(seen, [0, 1, 0, 1]);
/// ```
#[derive(Debug)]
pub struct FrameAllocator<const N: usize> {
    /// The buffers.
    arenas: [LinearArena<'static>; N],
    /// The live buffer. Invariant: `current < N`.
    current: usize,
}

impl<const N: usize> FrameAllocator<N> {
    const NON_EMPTY: () = assert!(N > 0, "a frame allocator needs at least one buffer");

    /// N owned buffers of `capacity` bytes each. Before the first
    /// [`begin_frame`](Self::begin_frame) the live buffer is the last one, so
    /// the first frame writes into buffer 0 (as in the chapter).
    pub fn new(capacity: usize) -> Result<Self, AllocError> {
        let () = Self::NON_EMPTY;
        let mut arenas = Vec::with_capacity(N);
        for _ in 0..N {
            arenas.push(LinearArena::new(capacity)?);
        }
        Ok(Self::from_arenas(
            arenas
                .try_into()
                .unwrap_or_else(|_| unreachable!("N arenas were made")),
        ))
    }

    /// A frame allocator over arenas made by the caller (of any capacities).
    pub fn from_arenas(arenas: [LinearArena<'static>; N]) -> Self {
        let () = Self::NON_EMPTY;
        FrameAllocator {
            arenas,
            current: N - 1,
        }
    }

    /// Starts a frame: moves to the next buffer and resets it (only it).
    #[inline]
    pub fn begin_frame(&mut self) {
        self.current = if self.current + 1 == N {
            0
        } else {
            self.current + 1
        };
        self.arenas[self.current].reset();
    }

    /// The live buffer's index (`0..N`).
    #[inline]
    pub fn current_index(&self) -> usize {
        self.current
    }

    /// The live buffer.
    #[inline(always)]
    pub fn current(&self) -> &LinearArena<'static> {
        debug_assert!(self.current < N, "frame index {} out of {N}", self.current);
        // SAFETY: `current < N` is an invariant (set only by `from_arenas` and
        // `begin_frame`, both to values below N).
        unsafe { self.arenas.get_unchecked(self.current) }
    }

    /// Buffer `i`, for inspection.
    pub fn buffer(&self, i: usize) -> Option<&LinearArena<'static>> {
        self.arenas.get(i)
    }

    /// Allocates `size` bytes aligned to `align` in the live buffer.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        self.current().alloc(size, align)
    }

    /// [`alloc`](Self::alloc) for a `Layout`.
    #[inline(always)]
    pub fn alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.current().alloc_layout(layout)
    }

    /// Bytes used in the live buffer.
    #[inline]
    pub fn used(&self) -> usize {
        self.current().used()
    }

    /// Resets every buffer (all frames' allocations are gone).
    pub fn reset_all(&mut self) {
        for arena in &mut self.arenas {
            arena.reset();
        }
    }
}

impl<const N: usize> RawAllocator for FrameAllocator<N> {
    const FREES_INDIVIDUALLY: bool = false;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        RawAllocator::allocate(self.current(), layout)
    }

    /// Does nothing: a frame's bytes come back N frames later.
    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}

// SAFETY: blocks come from the live arena, whose buffer never moves and is
// reset only by `begin_frame`/`reset_all`, which need `&mut self`.
unsafe impl<const N: usize> allocator_api2::alloc::Allocator for FrameAllocator<N> {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        allocator_api2::alloc::Allocator::allocate(self.current(), layout)
    }

    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}

    /// In place for the live buffer's last block; a block of an older frame
    /// moves into the live buffer.
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        let live = self.current();
        // SAFETY: forwarded: `ptr` is a live block of one of the buffers;
        // `resize_last` touches it only if it is the live buffer's last.
        unsafe {
            crate::linear::bump_grow(live, |p, o, n| live.resize_last(p, o, n), ptr, old, new)
        }
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        let live = self.current();
        // SAFETY: as for `grow`.
        unsafe {
            crate::linear::bump_shrink(live, |p, o, n| live.resize_last(p, o, n), ptr, old, new)
        }
    }
}
