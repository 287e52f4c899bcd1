//! `LinearArena`: the chapter's linear allocator, "bump a pointer".
//!
//! **Contract.** One block of memory (borrowed from the caller with
//! [`with_buffer`](LinearArena::with_buffer), or owned and 16-aligned with
//! [`new`](LinearArena::new)) and one cursor into it. Allocations are never
//! freed one by one: [`reset`](LinearArena::reset) frees everything at once and
//! takes `&mut self`, so no block handed out through `&self` (or a collection
//! using the arena through `allocator_api2`) can outlive it. Allocation goes
//! through `&self` (the cursor is a `Cell`), so many live blocks can borrow the
//! arena at once. `Send` (it owns or exclusively borrows its block), not
//! `Sync`.
//!
//! **Fast path** ([`alloc`](LinearArena::alloc), `#[inline(always)]`): a
//! power-of-two test of the alignment, align the cursor up, one add with
//! carry that computes the new block's last byte (a zero size wraps and
//! carries out, so it is refused with the rest), one compare of that byte
//! against the end, one store of it as the new cursor. No atomic, no call,
//! no loop. Alignments above 4096 (`FAST_ALIGN`) take an out-of-line path,
//! where aligning up could wrap the address space. There is no slow path
//! otherwise: a request that does not fit is an
//! [`AllocError::OutOfMemory`], a zero size [`AllocError::ZeroSize`].
//!
//! **Costs.** No per-allocation metadata; padding to reach an alignment is
//! lost until the next reset. Failure modes: `BadAlignment`, `ZeroSize`,
//! `OutOfMemory` (with the bytes still available).

use core::alloc::Layout;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::AllocError;
use crate::buffer::Buffer;

/// A bump allocator over one block.
///
/// **Contract.** One block of memory (borrowed from the caller with
/// [`with_buffer`](LinearArena::with_buffer), or owned and 16-aligned with
/// [`new`](LinearArena::new)) and one cursor into it. Allocations are never
/// freed one by one: [`reset`](LinearArena::reset) frees everything at once and
/// takes `&mut self`, so no block handed out through `&self` (or a collection
/// using the arena through `allocator_api2`) can outlive it. Allocation goes
/// through `&self` (the cursor is a `Cell`), so many live blocks can borrow the
/// arena at once. `Send` (it owns or exclusively borrows its block), not
/// `Sync`.
///
/// **Costs.** No per-allocation metadata; padding to reach an alignment is
/// lost until the next reset. Failure modes: `BadAlignment`, `ZeroSize`,
/// `OutOfMemory` (with the bytes still available).
///
/// How the fast path compiles is in the source's header (`src/linear.rs`).
///
/// ```
/// use allocasm::LinearArena;
/// use allocator_api2::vec::Vec;
///
/// let mut arena = LinearArena::new(256).unwrap();
/// let a = arena.alloc(40, 8).unwrap();
/// let b = arena.alloc(30, 8).unwrap();
/// let c = arena.alloc(60, 8).unwrap();
/// assert_eq!(arena.offset_of(a), Some(0));
/// assert_eq!(arena.offset_of(b), Some(40));
/// assert_eq!(arena.offset_of(c), Some(72)); // 70 padded up to a multiple of 8
///
/// // Any collection that takes an `allocator_api2` allocator can use it.
/// let mut v = Vec::new_in(&arena);
/// v.extend_from_slice(&[1u32, 2, 3]);
/// assert_eq!(v.iter().sum::<u32>(), 6);
/// drop(v);
///
/// arena.reset(); // needs `&mut`: nothing borrowed from the arena is alive
/// let d = arena.alloc(10, 8).unwrap();
/// assert_eq!(arena.offset_of(d), Some(0));
/// ```
///
/// `repr(C)`, the cursor first and the end last, with the block between:
/// the bump's two loads are then not adjacent, so armv7 does not pair them
/// into an `ldrd`, which needs two consecutive registers it would have to
/// save.
#[derive(Debug)]
#[repr(C)]
pub struct LinearArena<'a> {
    /// The cursor, kept as the last byte handed out: `base + offset - 1`,
    /// where the offset is the bytes handed out so far (padding included),
    /// so `base - 1` (a wrapping pointer, never read through) when nothing
    /// is. Invariant: from `base - 1` up to `end - 1`, derived from `base`
    /// (so it carries the block's provenance). The last byte rather than
    /// the next free one: the bump's fit check computes it and stores it as
    /// it is. A pointer and the end's address rather than an offset and
    /// the length: the bump reads two words, not three.
    last: Cell<*mut u8>,
    /// The block. Invariant: never changes after construction.
    buffer: Buffer<'a>,
    /// Address one past the block's last usable byte: `base +
    /// buffer.len()`, kept at most `usize::MAX - (FAST_ALIGN - 1)`.
    end: usize,
}

/// The largest alignment the bump serves inline; larger ones take an
/// out-of-line path. The arena's end stays this far below the top of the
/// address space (less one), so that aligning the cursor up cannot wrap.
pub(crate) const FAST_ALIGN: usize = 4096;

/// The highest end an arena keeps: from a last byte below it, adding at
/// most [`FAST_ALIGN`] does not wrap.
const TOP: usize = usize::MAX - (FAST_ALIGN - 1);

// SAFETY: the arena owns its block or borrows it exclusively (`&'a mut`), so
// moving it to another thread moves sole access to the block with it. It is not
// `Sync`: the `Cell` cursor is updated without synchronisation.
unsafe impl Send for LinearArena<'_> {}

impl LinearArena<'static> {
    /// An arena owning a fresh, 16-aligned block of `capacity` bytes from the
    /// global allocator (the chapter's one `malloc` at startup).
    ///
    /// Errors: a zero `capacity` is [`AllocError::InvalidConfig`]; one the
    /// global allocator cannot serve is [`AllocError::TooLarge`] or
    /// [`AllocError::OutOfMemory`].
    pub fn new(capacity: usize) -> Result<Self, AllocError> {
        if capacity == 0 {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::Capacity,
                value: 0,
            });
        }
        Ok(LinearArena::build(Buffer::owned(capacity)?))
    }
}

impl<'a> LinearArena<'a> {
    /// An arena over the caller's bytes. Offsets count from `buffer`'s first
    /// byte, whatever its alignment.
    pub fn with_buffer(buffer: &'a mut [MaybeUninit<u8>]) -> Self {
        LinearArena::build(Buffer::borrowed(buffer))
    }

    fn build(buffer: Buffer<'a>) -> Self {
        // The end is kept at most `TOP`, so the bump's align-up cannot wrap.
        // No platform maps the top page of the address space, so this gives
        // up no byte of a real block; a block that starts there can only be
        // an empty slice made from a raw pointer, and is swapped for an
        // empty one at an ordinary address.
        let buffer = if buffer.base().as_ptr().addr() > TOP {
            Buffer::borrowed(&mut [])
        } else {
            buffer
        };
        let base = buffer.base().as_ptr();
        let end = (base.addr() + buffer.len()).min(TOP);
        LinearArena {
            last: Cell::new(base.wrapping_sub(1)),
            end,
            buffer,
        }
    }

    /// Allocates `size` bytes aligned to `align` (the chapter's `Alloc`).
    ///
    /// `align` must be a power of two ([`AllocError::BadAlignment`]
    /// otherwise) and `size` non-zero ([`AllocError::ZeroSize`]).
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        self.bump(size, align)
    }

    /// [`alloc`](Self::alloc) for a `Layout` (whose alignment is always valid).
    #[inline(always)]
    pub fn alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.bump(layout.size(), layout.align())
    }

    /// The bump itself (`align` is a power of two): one compare refuses a
    /// zero size and a size that does not fit, and the refusal sorts out
    /// which it was, out of line.
    #[inline(always)]
    fn bump(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let last = self.last.get();
        debug_assert!(
            last.addr() < self.end,
            "last byte {last:p} at or past the end {:#x}",
            self.end
        );
        debug_assert!(align.is_power_of_two());
        if align > FAST_ALIGN {
            return self.bump_overaligned(size, align);
        }
        // The next free byte, `last + 1`, aligned up: no wrap, as it is at
        // most the end, which is at least `FAST_ALIGN - 1` below
        // `usize::MAX`.
        let start = (last.addr() + align) & !(align - 1);
        // The new block's last byte, `start + size - 1`: a zero size makes
        // `size - 1` wrap to `usize::MAX`, which the non-null start carries
        // out of, so one add with carry and one compare refuse a zero size,
        // a size past the address space and a size past the end. The byte
        // is also what the arena keeps, so no `+ 1` brings `size` back:
        // the check keeps four values besides `self` live (the start, the
        // last byte, the end and the null result), which armv7's five
        // scratch registers hold.
        match start.checked_add(size.wrapping_sub(1)) {
            Some(new_last) if new_last < self.end => {
                self.last.set(last.with_addr(new_last));
                // SAFETY: `last < start <= new_last < end`, so `start` is in
                // the block; `with_addr` keeps the block's provenance, which
                // `last` carries; not null, as `start > last >= 0`.
                Ok(unsafe { NonNull::new_unchecked(last.with_addr(start)) })
            }
            _ => Err(self.refusal(size)),
        }
    }

    /// The bump for an alignment above [`FAST_ALIGN`], where aligning the
    /// cursor up could wrap: the padding and the room are computed apart.
    #[cold]
    #[inline(never)]
    fn bump_overaligned(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let next = self.next();
        let padding = next.addr().wrapping_neg() & (align - 1);
        let room = self.end - next.addr();
        if padding > room || size.wrapping_sub(1) >= room - padding {
            return Err(self.refusal(size));
        }
        let start = next.wrapping_add(padding);
        // `padding + size <= room`: the new last byte is below the end.
        self.last.set(start.wrapping_add(size - 1));
        // SAFETY: `start` is inside the block (`padding < room`, as `size`
        // is non-zero), derived from the cursor, so from `base`; not null,
        // because the block is not at address 0.
        Ok(unsafe { NonNull::new_unchecked(start) })
    }

    /// The next free byte: one past the last byte handed out.
    #[inline(always)]
    fn next(&self) -> *mut u8 {
        self.last.get().wrapping_add(1)
    }

    /// Why a request for `size` bytes was refused.
    #[cold]
    fn refusal(&self, size: usize) -> AllocError {
        if size == 0 {
            AllocError::ZeroSize
        } else {
            AllocError::OutOfMemory {
                requested: size,
                available: self.end - self.next().addr(),
            }
        }
    }

    /// Frees everything at once: the next allocation starts at offset 0 again.
    ///
    /// Takes `&mut self`, so no block or collection borrowing the arena can
    /// still be alive.
    #[inline]
    pub fn reset(&mut self) {
        self.set_offset(0);
    }

    /// Bytes handed out since the last reset, padding included.
    #[inline]
    pub fn used(&self) -> usize {
        self.next().addr() - self.buffer.base().as_ptr().addr()
    }

    /// Bytes the block can serve: its size, except for a block reaching
    /// into the top 4 KiB of the address space, which no platform maps
    /// (the arena stops short of them).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.end - self.buffer.base().as_ptr().addr()
    }

    /// Bytes not handed out yet (an allocation with padding may fit fewer).
    #[inline]
    pub fn remaining(&self) -> usize {
        self.capacity() - self.used()
    }

    /// The first byte of the block: offsets are measured from here.
    #[inline]
    pub fn base(&self) -> NonNull<u8> {
        self.buffer.base()
    }

    /// Whether `ptr` points into this arena's block.
    #[inline]
    pub fn contains(&self, ptr: NonNull<u8>) -> bool {
        self.buffer.contains(ptr.as_ptr())
    }

    /// Offset of `ptr` from the start of the block, if it points into it.
    #[inline]
    pub fn offset_of(&self, ptr: NonNull<u8>) -> Option<usize> {
        self.contains(ptr)
            .then(|| ptr.as_ptr() as usize - self.base().as_ptr() as usize)
    }

    /// Resizes the block at `ptr` (allocated with `old`) to `new` in place
    /// when it is the last block handed out, `ptr` is aligned for `new`, and
    /// the new size fits: the offset moves to the block's new end. `None`
    /// otherwise (nothing changed).
    #[inline]
    pub(crate) fn resize_last(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Option<NonNull<u8>> {
        let start = self.offset_of(ptr)?;
        if old.size() == 0
            || start + old.size() != self.used()
            || !(ptr.as_ptr() as usize).is_multiple_of(new.align())
            || new.size() > self.capacity() - start
        {
            return None;
        }
        self.set_offset(start + new.size());
        Some(ptr)
    }

    /// Sets the offset back to `offset` (used by the stack allocator's
    /// rollback and by frame allocators).
    #[inline(always)]
    pub(crate) fn set_offset(&self, offset: usize) {
        debug_assert!(offset <= self.capacity());
        self.last.set(self.last_byte_at(offset));
    }

    /// Whether `offset` (at most the capacity) is at most the bytes in use:
    /// the last byte at that offset compared with the last byte handed
    /// out, the cursor as it is kept (`used()` would add one and take the
    /// base off).
    #[inline(always)]
    pub(crate) fn offset_in_use(&self, offset: usize) -> bool {
        debug_assert!(offset <= self.capacity());
        self.last_byte_at(offset).addr() <= self.last.get().addr()
    }

    /// `base + offset - 1`: the cursor as it is kept when `offset` bytes are
    /// in use (`offset` at most the capacity, so no wrap past the end).
    #[inline(always)]
    fn last_byte_at(&self, offset: usize) -> *mut u8 {
        self.buffer
            .base()
            .as_ptr()
            .wrapping_add(offset)
            .wrapping_sub(1)
    }
}

// SAFETY: a successful `allocate` bumps the offset past a block of at least
// `layout.size()` bytes inside the borrowed buffer, aligned, disjoint from
// every other live block, valid until `reset` (`&mut self`) or the buffer's
// borrow ends.
crate::raw_allocator::bulk_raw_allocator! {
    /// Does nothing: an arena frees only on [`reset`](LinearArena::reset).
    impl ['a] LinearArena<'a> { |a, layout| a.alloc_layout(layout) }
}

// SAFETY: blocks are carved from a buffer that does not move when the arena
// moves and stays valid until the arena is dropped; `reset` (the only way to
// reuse bytes) needs `&mut self`, which no live block or collection allows, as
// the allocator is used through `&LinearArena`. Blocks never overlap. A
// zero-size request gets a dangling, well-aligned pointer, as the trait expects.
// `grow`/`shrink` resize the last block in place (as bumpalo does): the block
// stays where it is and the offset moves to its new end, which nothing else
// was handed out beyond; any other block is moved (allocate + copy) on growth
// and kept where it is on a shrink.
crate::api04::allocator_api04! {
    impl ['a] LinearArena<'a> { frees_in_bulk, resizes_last(|a| a), grow_zeroed_in_place }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_offsets() {
        let mut arena = LinearArena::new(256).unwrap();
        let offs: Vec<usize> = [40, 30, 60]
            .iter()
            .map(|&n| arena.offset_of(arena.alloc(n, 8).unwrap()).unwrap())
            .collect();
        assert_eq!(offs, [0, 40, 72]);
        assert_eq!(arena.used(), 132);
        arena.reset();
        assert_eq!(arena.offset_of(arena.alloc(10, 8).unwrap()), Some(0));
    }

    #[test]
    fn refuses_bad_requests_without_moving() {
        let arena = LinearArena::new(64).unwrap();
        assert_eq!(
            arena.alloc(8, 3),
            Err(AllocError::BadAlignment { align: 3 })
        );
        assert_eq!(arena.alloc(0, 8), Err(AllocError::ZeroSize));
        assert_eq!(
            arena.alloc(65, 1),
            Err(AllocError::OutOfMemory {
                requested: 65,
                available: 64
            })
        );
        assert_eq!(
            arena.alloc(8, 1 << (usize::BITS - 2)).map(|_| ()),
            Err(AllocError::OutOfMemory {
                requested: 8,
                available: 64
            })
        );
        assert_eq!(arena.used(), 0);
        arena.alloc(64, 1).unwrap();
        assert_eq!(arena.remaining(), 0);
    }

    #[test]
    fn a_block_at_the_top_of_the_address_space_serves_nothing() {
        // The one block that can start in the top page: an empty slice at a
        // made-up address (non-null and aligned, so a valid slice). From
        // there the align-up would wrap to a low address that passes the
        // fit check.
        for addr in [usize::MAX - 64, TOP + 1, usize::MAX] {
            let ptr = core::ptr::without_provenance_mut::<MaybeUninit<u8>>(addr);
            // SAFETY: a zero-length slice needs only a non-null, aligned
            // pointer.
            let bytes = unsafe { core::slice::from_raw_parts_mut(ptr, 0) };
            let arena = LinearArena::with_buffer(bytes);
            assert_eq!(arena.capacity(), 0);
            assert_eq!(arena.used(), 0);
            for align in [1, 8, FAST_ALIGN, FAST_ALIGN * 2] {
                assert_eq!(
                    arena.alloc(1, align),
                    Err(AllocError::OutOfMemory {
                        requested: 1,
                        available: 0
                    }),
                    "{addr:#x} align {align}"
                );
            }
        }
    }

    #[test]
    fn borrowed_buffer() {
        let mut bytes = [MaybeUninit::<u8>::uninit(); 32];
        let arena = LinearArena::with_buffer(&mut bytes);
        let p = arena.alloc(32, 1).unwrap();
        // SAFETY: 32 bytes were handed out at `p`.
        unsafe { p.as_ptr().write_bytes(7, 32) };
        assert!(arena.alloc(1, 1).is_err());
    }
}
