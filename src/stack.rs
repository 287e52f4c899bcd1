//! `StackAllocator`: a linear arena that can roll back to a saved
//! [`Marker`], freeing everything allocated after it (LIFO).
//!
//! **Contract.** Allocation through `&self` exactly as
//! [`LinearArena`](crate::LinearArena) (it is one, plus an identity).
//! [`marker`](StackAllocator::marker) saves the current offset;
//! [`free_to_marker`](StackAllocator::free_to_marker) takes `&mut self` (so no
//! block borrowed through `&self` is alive) and rolls the offset back. A marker
//! above the current offset, or taken from another stack allocator, is refused
//! with [`AllocError::BadMarker`] and changes nothing: LIFO misuse is an error,
//! never silent corruption. Known limit: markers are plain values (offset plus
//! owner), so a marker taken *after* an older one that was since rolled back to
//! is accepted again once the offset has grown past it; it then frees only
//! bytes above its offset, which the caller has already been told are gone.
//! `Send`, not `Sync`.
//!
//! **Fast paths.** [`alloc`](StackAllocator::alloc) is the arena's bump: align,
//! compare, add, no atomic, no call. [`free_to_marker`](StackAllocator::free_to_marker)
//! is two compares (owner, offset) and one store. No slow paths.
//!
//! **Costs.** One `usize` of identity per allocator; a `Marker` is two words.
//! Marker ids come from a process-wide counter, bumped once per constructed
//! allocator (never on a fast path).
//!
//! ```
//! use allocasm::StackAllocator;
//!
//! let mut stack = StackAllocator::new(256).unwrap();
//! let _level = stack.alloc(64, 8).unwrap();
//! let frame = stack.marker();
//! let _path = stack.alloc(48, 8).unwrap();
//! assert_eq!(stack.used(), 112);
//! stack.free_to_marker(frame).unwrap();
//! assert_eq!(stack.used(), 64);
//! ```

use core::alloc::Layout;
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::{AllocError, LinearArena, RawAllocator};

/// Identity source for stack allocators, so a marker from one is refused by
/// another. Not part of any fast path (one relaxed add per constructor); plain
/// `core` atomic because it is a process-wide counter, not a lock-free
/// structure the loom models cover.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A saved position of a [`StackAllocator`].
///
/// `#[repr(C)]` so a probe can take it by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Marker {
    /// Offset from the start of the block when the marker was taken.
    offset: usize,
    /// Identity of the allocator that made it.
    owner: usize,
}

impl Marker {
    /// The saved offset, in bytes from the start of the block.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }
}

/// A LIFO allocator with markers. See the [module docs](self).
#[derive(Debug)]
pub struct StackAllocator<'a> {
    /// The bump allocator underneath.
    arena: LinearArena<'a>,
    /// Identity stamped into every marker. Invariant: unique among live
    /// stack allocators (a process-wide counter).
    id: usize,
}

impl StackAllocator<'static> {
    /// A stack allocator owning a fresh, 16-aligned block of `capacity` bytes.
    pub fn new(capacity: usize) -> Result<Self, AllocError> {
        Ok(StackAllocator {
            arena: LinearArena::new(capacity)?,
            id: next_id(),
        })
    }
}

fn next_id() -> usize {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl<'a> StackAllocator<'a> {
    /// A stack allocator over the caller's bytes.
    pub fn with_buffer(buffer: &'a mut [MaybeUninit<u8>]) -> Self {
        StackAllocator {
            arena: LinearArena::with_buffer(buffer),
            id: next_id(),
        }
    }

    /// Allocates `size` bytes aligned to `align` (power of two, size non-zero).
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        self.arena.alloc(size, align)
    }

    /// [`alloc`](Self::alloc) for a `Layout`.
    #[inline(always)]
    pub fn alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.arena.alloc_layout(layout)
    }

    /// Saves the current position.
    #[inline]
    pub fn marker(&self) -> Marker {
        Marker {
            offset: self.arena.used(),
            owner: self.id,
        }
    }

    /// Frees everything allocated after `marker` was taken.
    ///
    /// A marker from another allocator, or above the current offset (it was
    /// taken after a position that has since been rolled back to), is
    /// [`AllocError::BadMarker`] and nothing changes.
    #[inline(always)]
    pub fn free_to_marker(&mut self, marker: Marker) -> Result<(), AllocError> {
        debug_assert!(self.arena.used() <= self.arena.capacity());
        if marker.owner != self.id || marker.offset > self.arena.used() {
            return Err(AllocError::BadMarker);
        }
        self.arena.set_offset(marker.offset);
        Ok(())
    }

    /// Frees everything (back to offset 0).
    #[inline]
    pub fn reset(&mut self) {
        self.arena.reset();
    }

    /// Bytes in use, padding included: the current offset.
    #[inline]
    pub fn used(&self) -> usize {
        self.arena.used()
    }

    /// Size of the block.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.arena.capacity()
    }

    /// Bytes not handed out yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.arena.remaining()
    }

    /// Offset of `ptr` from the start of the block, if it points into it.
    #[inline]
    pub fn offset_of(&self, ptr: NonNull<u8>) -> Option<usize> {
        self.arena.offset_of(ptr)
    }
}

impl RawAllocator for StackAllocator<'_> {
    const FREES_INDIVIDUALLY: bool = false;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = self.alloc_layout(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    /// Does nothing: bytes come back with [`free_to_marker`](StackAllocator::free_to_marker).
    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}

// SAFETY: as for `LinearArena`, which does the work: blocks stay valid until
// the allocator is dropped or rolled back, and rolling back needs `&mut self`.
unsafe impl allocator_api2::alloc::Allocator for StackAllocator<'_> {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        allocator_api2::alloc::Allocator::allocate(&self.arena, layout)
    }

    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_trace() {
        let mut stack = StackAllocator::new(256).unwrap();
        stack.alloc(64, 8).unwrap();
        let mark = stack.marker();
        stack.alloc(48, 8).unwrap();
        assert_eq!(stack.used(), 112);
        stack.free_to_marker(mark).unwrap();
        assert_eq!(stack.used(), 64);
        let next = stack.alloc(20, 8).unwrap();
        assert_eq!(stack.offset_of(next), Some(64));
    }

    #[test]
    fn misuse_is_refused() {
        let mut a = StackAllocator::new(128).unwrap();
        let mut b = StackAllocator::new(128).unwrap();
        a.alloc(16, 8).unwrap();
        let early = a.marker();
        a.alloc(16, 8).unwrap();
        let late = a.marker();
        b.alloc(64, 8).unwrap();
        assert_eq!(
            b.free_to_marker(late),
            Err(AllocError::BadMarker),
            "foreign marker"
        );
        assert_eq!(b.used(), 64);
        a.free_to_marker(early).unwrap();
        assert_eq!(
            a.free_to_marker(late),
            Err(AllocError::BadMarker),
            "marker above the offset"
        );
        assert_eq!(a.used(), 16);
    }
}
