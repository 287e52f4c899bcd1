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
//! Validity across frames: `begin_frame` needs `&mut self`, so a borrow
//! (a collection allocating through `allocator_api2`) cannot live across a
//! frame boundary. What must stay readable into the next frames is kept with
//! [`keep`](FrameAllocator::keep), which returns a [`FrameHandle`]: a
//! checked handle that survives `begin_frame` and that
//! [`get`](FrameAllocator::get) turns back into a slice while its frame is
//! alive (frames `f ..= f + N - 1`), and refuses with
//! [`AllocError::BadMarker`] once its buffer was reused. Since `get` and
//! allocation both take `&self`, frame N-1's data is readable while frame N
//! is built. Raw pointers from [`alloc`](FrameAllocator::alloc) follow the
//! same rule, unchecked.
//!
//! **Fast path** ([`alloc`](FrameAllocator::alloc)): index the live buffer
//! (no bounds check: the index is always `< N`), then the arena's bump: align,
//! compare, add. No atomic, no call. No slow path.
//!
//! **Costs.** N times the per-frame capacity; one index.

use alloc::vec::Vec;
use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::{AllocError, LinearArena};

/// Source of frame allocator ids (a unique number per allocator, not part of
/// any lock-free algorithm).
static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// A slice kept in one frame's buffer by [`FrameAllocator::keep`]: a token
/// that outlives `begin_frame`, read back with [`FrameAllocator::get`] while
/// its frame is alive.
#[derive(Debug)]
pub struct FrameHandle<T> {
    ptr: NonNull<T>,
    len: usize,
    /// The frame number it was kept in.
    frame: u64,
    /// The allocator it belongs to.
    owner: u64,
    _values: PhantomData<*const T>,
}

impl<T> Clone for FrameHandle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for FrameHandle<T> {}

impl<T> FrameHandle<T> {
    /// The frame number it was kept in (see [`FrameAllocator::frame_number`]).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// N linear arenas used round-robin, one per frame.
///
/// **Contract.** N [`LinearArena`]s of the same capacity, one of them live.
/// [`begin_frame`](FrameAllocator::begin_frame) (`&mut self`) moves to the
/// next buffer and resets only that one, so what was allocated in frame `f`
/// stays valid through frames `f + 1 ..= f + N - 1` (a reader such as the GPU
/// may still be using it) and is reused in frame `f + N`. The first
/// `begin_frame` lands on buffer 0. Allocation goes through `&self` into the
/// live buffer. `Send`, not `Sync`.
///
/// **Costs.** N times the per-frame capacity; one index.
///
/// How the fast path compiles is in the source's header (`src/frame.rs`).
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
///
/// Frame N-1's data stays readable while frame N is built: keep it with
/// [`keep`](Self::keep), read it back with [`get`](Self::get) (which
/// refuses once the buffer is reused).
///
/// ```
/// use allocasm::{AllocError, FrameAllocator};
/// use allocator_api2::vec::Vec;
///
/// let mut frames = FrameAllocator::<2>::new(4096).unwrap();
/// frames.begin_frame();
/// let positions = frames.keep(&[1.0f32, 2.0, 3.0]).unwrap();
///
/// frames.begin_frame();
/// // Frame N reads frame N-1 while it allocates its own data.
/// let previous = frames.get(positions).unwrap();
/// let mut next: Vec<f32, _> = Vec::new_in(&frames);
/// next.extend(previous.iter().map(|p| p + 0.5));
/// assert_eq!(next, [1.5, 2.5, 3.5]);
/// let kept = frames.keep(&next).unwrap();
/// drop(next);
///
/// frames.begin_frame(); // frame N-1's buffer is reused now
/// assert_eq!(frames.get(positions), Err(AllocError::BadMarker));
/// assert_eq!(frames.get(kept).unwrap(), [1.5, 2.5, 3.5]);
/// ```
#[derive(Debug)]
pub struct FrameAllocator<const N: usize> {
    /// The buffers.
    arenas: [LinearArena<'static>; N],
    /// The live buffer. Invariant: `current < N`.
    current: usize,
    /// Frames begun so far (plus `N` per `reset_all`): the data of frame
    /// `f` is alive while `frame - f < N`.
    frame: u64,
    /// Distinguishes this allocator's handles from another's.
    id: u64,
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
            frame: 0,
            id: NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
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
        self.frame += 1;
    }

    /// The number of the live frame: 0 before the first
    /// [`begin_frame`](Self::begin_frame), then one more per frame.
    #[inline]
    pub fn frame_number(&self) -> u64 {
        self.frame
    }

    /// Copies `values` into the live buffer and returns a handle that stays
    /// valid through the next `N - 1` frames: [`get`](Self::get) reads it
    /// back until its buffer is reused.
    pub fn keep<T: Copy>(&self, values: &[T]) -> Result<FrameHandle<T>, AllocError> {
        let ptr = if values.is_empty() || size_of::<T>() == 0 {
            NonNull::dangling()
        } else {
            let layout = Layout::array::<T>(values.len()).map_err(|_| AllocError::TooLarge {
                requested: values.len(),
                max: isize::MAX as usize / size_of::<T>(),
            })?;
            let p = self.alloc_layout(layout)?.cast::<T>();
            // SAFETY: `p` is a fresh block of `values.len()` `T`s, aligned
            // for `T`, distinct from `values`.
            unsafe { core::ptr::copy_nonoverlapping(values.as_ptr(), p.as_ptr(), values.len()) };
            p
        };
        Ok(FrameHandle {
            ptr,
            len: values.len(),
            frame: self.frame,
            owner: self.id,
            _values: PhantomData,
        })
    }

    /// Whether the frame `handle` was kept in is still alive (its buffer not
    /// yet reused).
    #[inline]
    pub fn is_alive<T>(&self, handle: FrameHandle<T>) -> bool {
        handle.owner == self.id && self.frame - handle.frame < N as u64
    }

    /// The values behind `handle`, or [`AllocError::BadMarker`] when its
    /// buffer has been reused (`N` frames later, or a `reset_all`) or it
    /// belongs to another allocator.
    pub fn get<T>(&self, handle: FrameHandle<T>) -> Result<&[T], AllocError> {
        if !self.is_alive(handle) {
            return Err(AllocError::BadMarker);
        }
        // SAFETY: `keep` copied `len` values there; the buffer of frame `f`
        // is reset only by the `begin_frame` that makes frame `f + N` (or a
        // `reset_all`, which moves `frame` on by N), both checked above and
        // both needing `&mut self`, which the returned borrow of `self`
        // excludes. The values are `Copy` (nothing to drop).
        Ok(unsafe { core::slice::from_raw_parts(handle.ptr.as_ptr(), handle.len) })
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
        // Every handle made so far is stale.
        self.frame += N as u64;
    }
}

// SAFETY: a successful `allocate` bumps the current frame's arena past a block
// of at least `layout.size()` bytes, aligned, disjoint from every other live
// block, valid until its frame comes round again in `begin_frame` or
// `reset_all` (both `&mut self`).
crate::raw_allocator::bulk_raw_allocator! {
    /// Does nothing: a frame's bytes come back N frames later.
    impl [const N: usize] FrameAllocator<N> { |f, layout| f.current().alloc_layout(layout) }
}

// SAFETY: blocks come from the live arena, whose buffer never moves and is
// reset only by `begin_frame`/`reset_all`, which need `&mut self`. The live
// buffer's last block is resized in place; a block of an older frame moves
// into the live buffer.
crate::api04::allocator_api04! {
    impl [const N: usize] FrameAllocator<N> { frees_in_bulk, resizes_last(|f| f.current()) }
}
