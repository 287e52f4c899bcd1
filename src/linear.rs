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
//! power-of-two test of the alignment, align the cursor up, one compare of
//! `size - 1` against the room left (a zero size wraps and is refused by the
//! same compare), one add, one store of the cursor. No atomic, no call, no
//! loop. There is no slow path: a request that does not fit is an
//! [`AllocError::OutOfMemory`], a zero size [`AllocError::ZeroSize`].
//!
//! **Costs.** No per-allocation metadata; padding to reach an alignment is
//! lost until the next reset. Failure modes: `BadAlignment`, `ZeroSize`,
//! `OutOfMemory` (with the bytes still available).

use core::alloc::Layout;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::buffer::Buffer;
use crate::{AllocError, RawAllocator};

/// A bump allocator over one block. Its contract, fast path and costs are in the header of `src/linear.rs`.
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
    /// The next free byte: `base + offset`, where the offset is the bytes
    /// handed out so far (padding included). Invariant: from `base` up to
    /// `end`, derived from `base` (so it carries the block's provenance).
    /// A pointer and the end's address rather than an offset and the
    /// length: the bump reads two words, not three, and keeps four values
    /// live (armv7 has five scratch registers).
    cursor: Cell<*mut u8>,
    /// The block. Invariant: never changes after construction.
    buffer: Buffer<'a>,
    /// Address one past the block's last byte: `base + buffer.len()`.
    end: usize,
}

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
        let base = buffer.base().as_ptr();
        LinearArena {
            cursor: Cell::new(base),
            end: base.addr() + buffer.len(),
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
        let cursor = self.cursor.get();
        debug_assert!(
            cursor.addr() <= self.end,
            "cursor {cursor:p} past the end {:#x}",
            self.end
        );
        debug_assert!(align.is_power_of_two());
        // Bytes to the next multiple of `align`, and the room left.
        let padding = cursor.addr().wrapping_neg() & (align - 1);
        let room = self.end - cursor.addr();
        // `size - 1 < room - padding`: a zero size wraps and is refused too.
        if padding > room || size.wrapping_sub(1) >= room - padding {
            return Err(if size == 0 {
                AllocError::ZeroSize
            } else {
                AllocError::OutOfMemory {
                    requested: size,
                    available: room,
                }
            });
        }
        let start = cursor.wrapping_add(padding);
        // `padding + size <= room`: the new cursor is at most the end.
        self.cursor.set(start.wrapping_add(size));
        // SAFETY: `start` is inside the block (`padding < room`, as `size`
        // is non-zero), derived from the cursor, so from `base`; not null,
        // because the block is not at address 0.
        Ok(unsafe { NonNull::new_unchecked(start) })
    }

    /// Frees everything at once: the next allocation starts at offset 0 again.
    ///
    /// Takes `&mut self`, so no block or collection borrowing the arena can
    /// still be alive.
    #[inline]
    pub fn reset(&mut self) {
        self.cursor.set(self.buffer.base().as_ptr());
    }

    /// Bytes handed out since the last reset, padding included.
    #[inline]
    pub fn used(&self) -> usize {
        self.cursor.get().addr() - self.buffer.base().as_ptr().addr()
    }

    /// Size of the block in bytes.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buffer.len()
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
        self.cursor
            .set(self.buffer.base().as_ptr().wrapping_add(offset));
    }
}

impl RawAllocator for LinearArena<'_> {
    const FREES_INDIVIDUALLY: bool = false;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = self.alloc_layout(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    /// Does nothing: an arena frees only on [`reset`](LinearArena::reset).
    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
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
unsafe impl allocator_api2::alloc::Allocator for LinearArena<'_> {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            return Ok(NonNull::slice_from_raw_parts(dangling_for(layout), 0));
        }
        let ptr = self.alloc_layout(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    #[inline]
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}

    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // SAFETY: forwarded: `ptr` is a live block of this arena with `old`.
        unsafe { bump_grow(self, |p, o, n| self.resize_last(p, o, n), ptr, old, new) }
    }

    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // SAFETY: forwarded, as for `grow`.
        let block = unsafe { allocator_api2::alloc::Allocator::grow(self, ptr, old, new)? };
        // SAFETY: the block has `new.size() >= old.size()` bytes.
        unsafe {
            block
                .cast::<u8>()
                .as_ptr()
                .add(old.size())
                .write_bytes(0, new.size() - old.size())
        };
        Ok(block)
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // SAFETY: forwarded: `ptr` is a live block of this arena with `old`.
        unsafe { bump_shrink(self, |p, o, n| self.resize_last(p, o, n), ptr, old, new) }
    }
}

/// `grow` for a bump allocator: in place through `resize` when it can (the
/// last block), else a new block and a copy (the old one is left to the next
/// reset, as every freed block of a bump allocator is).
///
/// # Safety
///
/// As `Allocator::grow`: `ptr` is a live block of `a` allocated with `old`,
/// `new.size() >= old.size()`; `resize` resizes only a block of `a`.
#[inline]
pub(crate) unsafe fn bump_grow<A: allocator_api2::alloc::Allocator + ?Sized>(
    a: &A,
    resize: impl FnOnce(NonNull<u8>, Layout, Layout) -> Option<NonNull<u8>>,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
    debug_assert!(new.size() >= old.size());
    if let Some(p) = resize(ptr, old, new) {
        return Ok(NonNull::slice_from_raw_parts(p, new.size()));
    }
    let fresh = a.allocate(new)?;
    // SAFETY: the old block has `old.size()` bytes, the new one at least
    // that many, and they are distinct live blocks.
    unsafe {
        core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.cast::<u8>().as_ptr(), old.size());
        a.deallocate(ptr, old);
    }
    Ok(fresh)
}

/// `shrink` for a bump allocator: the last block gives its tail back; any
/// other block aligned for `new` stays where it is; otherwise a new block
/// and a copy.
///
/// # Safety
///
/// As `Allocator::shrink`: `ptr` is a live block of `a` allocated with
/// `old`, `new.size() <= old.size()`; `resize` resizes only a block of `a`.
#[inline]
pub(crate) unsafe fn bump_shrink<A: allocator_api2::alloc::Allocator + ?Sized>(
    a: &A,
    resize: impl FnOnce(NonNull<u8>, Layout, Layout) -> Option<NonNull<u8>>,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
    debug_assert!(new.size() <= old.size());
    if let Some(p) = resize(ptr, old, new) {
        return Ok(NonNull::slice_from_raw_parts(p, new.size()));
    }
    if (ptr.as_ptr() as usize).is_multiple_of(new.align()) {
        return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
    }
    let fresh = a.allocate(new)?;
    // SAFETY: both blocks have at least `new.size()` bytes and are distinct.
    unsafe {
        core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.cast::<u8>().as_ptr(), new.size());
        a.deallocate(ptr, old);
    }
    Ok(fresh)
}

/// A non-null pointer aligned to `layout.align()` with no provenance, for
/// zero-size blocks.
#[inline]
pub(crate) fn dangling_for(layout: Layout) -> NonNull<u8> {
    // `align` is non-zero, so the pointer is non-null.
    NonNull::new(core::ptr::without_provenance_mut(layout.align())).unwrap_or(NonNull::dangling())
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
    fn borrowed_buffer() {
        let mut bytes = [MaybeUninit::<u8>::uninit(); 32];
        let arena = LinearArena::with_buffer(&mut bytes);
        let p = arena.alloc(32, 1).unwrap();
        // SAFETY: 32 bytes were handed out at `p`.
        unsafe { p.as_ptr().write_bytes(7, 32) };
        assert!(arena.alloc(1, 1).is_err());
    }
}
