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
//! never silent corruption. A *stale* marker (taken after an older marker that
//! has since been rolled back to) is caught in debug builds, which keep the
//! chain of live markers (one entry per distinct marker offset): it is
//! `BadMarker` even once the offset has grown past it again. Release builds
//! keep no chain (the check is two compares): there a stale marker below the
//! current offset is accepted and rolls back into whatever was allocated since,
//! so the LIFO order is the caller's to keep. A reset kills every marker except
//! those at offset 0. `Send`, not `Sync`.
//!
//! **Fast paths.** [`alloc`](StackAllocator::alloc) is the arena's bump: align,
//! compare, add, no atomic, no call. [`free_to_marker`](StackAllocator::free_to_marker)
//! is two compares (owner, offset) and one store (plus the chain check in
//! debug builds). No slow paths.
//!
//! **Costs.** One `usize` of identity per allocator; a `Marker` is two words
//! (three in debug builds). Marker ids come from a process-wide counter,
//! bumped once per constructed allocator (never on a fast path).

#[cfg(debug_assertions)]
use alloc::vec::Vec;
use core::alloc::Layout;
#[cfg(debug_assertions)]
use core::cell::{Cell, RefCell};
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::{AllocError, LinearArena};

/// Identity source for stack allocators, so a marker from one is refused by
/// another. Not part of any fast path (one relaxed add per constructor); plain
/// `core` atomic because it is a process-wide counter, not a lock-free
/// structure the loom models cover.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A saved position of a [`StackAllocator`].
///
/// `#[repr(C)]` so a probe can take it by value. Two words in release builds,
/// so it travels in two registers (the x86-64 System V ABI passes a larger
/// struct in memory, on the stack); debug builds add the serial their stale
/// marker check needs.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Marker {
    /// Offset from the start of the block when the marker was taken.
    offset: usize,
    /// Identity of the allocator that made it.
    owner: usize,
    /// Debug builds: the marker's place in the allocator's chain of live
    /// markers.
    #[cfg(debug_assertions)]
    serial: u64,
}

impl Marker {
    /// The saved offset, in bytes from the start of the block.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }
}

/// A LIFO allocator with markers.
///
/// **Contract.** Allocation through `&self` exactly as
/// [`LinearArena`](crate::LinearArena) (it is one, plus an identity).
/// [`marker`](StackAllocator::marker) saves the current offset;
/// [`free_to_marker`](StackAllocator::free_to_marker) takes `&mut self` (so no
/// block borrowed through `&self` is alive) and rolls the offset back. A marker
/// above the current offset, or taken from another stack allocator, is refused
/// with [`AllocError::BadMarker`] and changes nothing: LIFO misuse is an error,
/// never silent corruption. A *stale* marker (taken after an older marker that
/// has since been rolled back to) is caught in debug builds, which keep the
/// chain of live markers (one entry per distinct marker offset): it is
/// `BadMarker` even once the offset has grown past it again. Release builds
/// keep no chain (the check is two compares): there a stale marker below the
/// current offset is accepted and rolls back into whatever was allocated since,
/// so the LIFO order is the caller's to keep. A reset kills every marker except
/// those at offset 0. `Send`, not `Sync`.
///
/// **Costs.** One `usize` of identity per allocator; a `Marker` is two words
/// (three in debug builds). Marker ids come from a process-wide counter,
/// bumped once per constructed allocator (never on a fast path).
///
/// How the fast path compiles is in the source's header (`src/stack.rs`).
///
/// ```
/// use allocasm::StackAllocator;
///
/// let mut stack = StackAllocator::new(256).unwrap();
/// let _level = stack.alloc(64, 8).unwrap();
/// let frame = stack.marker();
/// let _path = stack.alloc(48, 8).unwrap();
/// assert_eq!(stack.used(), 112);
/// stack.free_to_marker(frame).unwrap();
/// assert_eq!(stack.used(), 64);
/// ```
#[derive(Debug)]
pub struct StackAllocator<'a> {
    /// The bump allocator underneath.
    arena: LinearArena<'a>,
    /// Identity stamped into every marker. Invariant: unique among live
    /// stack allocators (a process-wide counter).
    id: usize,
    /// Debug builds: the live markers, `(serial, offset)`, serials increasing
    /// and offsets strictly increasing (a marker at the offset of the last one
    /// reuses its serial). Invariant: every offset is `<= arena.used()`.
    #[cfg(debug_assertions)]
    chain: RefCell<Vec<(u64, usize)>>,
    /// Debug builds: the next serial.
    #[cfg(debug_assertions)]
    next_serial: Cell<u64>,
}

impl StackAllocator<'static> {
    /// A stack allocator owning a fresh, 16-aligned block of `capacity` bytes.
    pub fn new(capacity: usize) -> Result<Self, AllocError> {
        Ok(StackAllocator::build(LinearArena::new(capacity)?))
    }
}

fn next_id() -> usize {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl<'a> StackAllocator<'a> {
    /// A stack allocator over the caller's bytes.
    pub fn with_buffer(buffer: &'a mut [MaybeUninit<u8>]) -> Self {
        StackAllocator::build(LinearArena::with_buffer(buffer))
    }

    fn build(arena: LinearArena<'a>) -> Self {
        StackAllocator {
            arena,
            id: next_id(),
            #[cfg(debug_assertions)]
            chain: RefCell::new(Vec::new()),
            #[cfg(debug_assertions)]
            next_serial: Cell::new(1),
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
        let offset = self.arena.used();
        #[cfg(debug_assertions)]
        let serial = {
            let mut chain = self.chain.borrow_mut();
            match chain.last() {
                Some(&(serial, at)) if at == offset => serial,
                _ => {
                    let serial = self.next_serial.get();
                    self.next_serial.set(serial + 1);
                    chain.push((serial, offset));
                    serial
                }
            }
        };
        Marker {
            offset,
            owner: self.id,
            #[cfg(debug_assertions)]
            serial,
        }
    }

    /// Frees everything allocated after `marker` was taken.
    ///
    /// A marker from another allocator, or above the current offset (it was
    /// taken after a position that has since been rolled back to), is
    /// [`AllocError::BadMarker`] and nothing changes. Debug builds also refuse
    /// a stale marker that is below the offset again (see the header of
    /// `src/stack.rs`).
    #[inline(always)]
    pub fn free_to_marker(&mut self, marker: Marker) -> Result<(), AllocError> {
        debug_assert!(self.arena.used() <= self.arena.capacity());
        // A marker of this allocator was taken at an offset at most the
        // capacity, which `offset_in_use` needs.
        if marker.owner != self.id || !self.arena.offset_in_use(marker.offset) {
            return Err(AllocError::BadMarker);
        }
        #[cfg(debug_assertions)]
        {
            let chain = self.chain.get_mut();
            match chain.binary_search_by_key(&marker.serial, |&(serial, _)| serial) {
                Ok(i) if chain[i].1 == marker.offset => chain.truncate(i + 1),
                _ => return Err(AllocError::BadMarker),
            }
        }
        self.arena.set_offset(marker.offset);
        Ok(())
    }

    /// Frees everything (back to offset 0). Markers at offset 0 stay valid.
    #[inline]
    pub fn reset(&mut self) {
        self.arena.reset();
        #[cfg(debug_assertions)]
        self.chain.get_mut().retain(|&(_, offset)| offset == 0);
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

// SAFETY: a successful `allocate` bumps the stack's top past a block of at
// least `layout.size()` bytes of the borrowed buffer, aligned, disjoint from
// every other live block, valid until a `free_to_marker` below it or `reset`
// (both `&mut self`).
crate::raw_allocator::bulk_raw_allocator! {
    /// Does nothing: bytes come back with [`free_to_marker`](StackAllocator::free_to_marker).
    impl ['a] StackAllocator<'a> { |s, layout| s.alloc_layout(layout) }
}

// SAFETY: as for `LinearArena`, which does the work: blocks stay valid until
// the allocator is dropped or rolled back, and rolling back needs `&mut self`.
// The last block grows in place (markers taken since stay valid: rolling back
// to one needs `&mut self`, which ends the collection's borrow).
crate::api04::allocator_api04! {
    impl ['a] StackAllocator<'a> {
        frees_in_bulk,
        resizes_last(|s| &s.arena),
        grow_zeroed_in_place,
    }
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
