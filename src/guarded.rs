//! `Guarded<A>`: guard bytes around every allocation and poison on free, the
//! chapter's debug tricks, over any allocator of the crate.
//!
//! **Contract.** Each allocation asks the wrapped allocator for `front + size
//! + width` bytes, where `width` is the guard width (default 4, as in the
//! chapter) and `front` is `width` rounded up to the requested alignment. The
//! `front` bytes before and the `width` bytes after the user's bytes are
//! filled with [`GUARD_BYTE`] (0xFE). [`check`](Guarded::check) and
//! [`check_all`](Guarded::check_all) compare them and report a
//! [`GuardViolation`] naming the allocation (its sequence number, address and
//! size), the side ([`GuardPosition::Front`] or [`GuardPosition::Back`]) and
//! the first byte that changed. Freeing a block checks it, then fills the
//! user's bytes with [`POISON_BYTE`] (0xDD) before handing it back;
//! [`reset`](Guarded::reset) poisons every live block, then runs the wrapped
//! allocator's bulk release. The wrapper records every live allocation (a map
//! from address to record) so `check_all` can find them. `Send` when the
//! wrapped allocator is; not `Sync` (the record is a `RefCell`).
//!
//! **Fast path.** None: this is a debugging allocator. Every allocation and
//! free does a map insertion or removal and fills `2 * width` (plus
//! alignment) bytes; a free also fills the user's bytes.
//!
//! **Costs.** `front + width` bytes per allocation in the wrapped allocator
//! and one map entry (about 64 bytes) on the heap.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::fmt;
use core::ptr::NonNull;

use crate::{AllocError, RawAllocator};

/// The guard pattern written around every allocation.
pub const GUARD_BYTE: u8 = 0xFE;
/// The poison pattern written over freed bytes.
pub const POISON_BYTE: u8 = 0xDD;
/// The chapter's guard width.
pub(crate) const DEFAULT_GUARD_WIDTH: usize = 4;

/// Which side of an allocation a guard was overwritten on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardPosition {
    /// The guard before the user's bytes (an underrun).
    Front,
    /// The guard after the user's bytes (an overrun).
    Back,
}

/// An overwritten guard: which allocation, which side, which byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GuardViolation {
    /// The allocation's sequence number: 0 for the wrapper's first
    /// allocation, 1 for the second, ...
    pub allocation: u64,
    /// Address of the user's bytes.
    pub address: usize,
    /// Size of the user's bytes.
    pub size: usize,
    /// Which guard changed.
    pub position: GuardPosition,
    /// Distance in bytes from the user's bytes to the first changed guard byte
    /// (0 is the byte right after the end for `Back`, right before the start
    /// for `Front`).
    pub distance: usize,
    /// What that byte holds now instead of [`GUARD_BYTE`].
    pub found: u8,
}

impl fmt::Display for GuardViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.position {
            GuardPosition::Front => "front",
            GuardPosition::Back => "back",
        };
        write!(
            f,
            "allocation #{} ({} bytes at {:#x}): {side} guard overwritten {} byte(s) {} the block (found {:#04x})",
            self.allocation,
            self.size,
            self.address,
            self.distance + 1,
            if self.position == GuardPosition::Front {
                "before"
            } else {
                "after"
            },
            self.found
        )
    }
}

impl core::error::Error for GuardViolation {}

/// One live allocation.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Sequence number.
    id: u64,
    /// The user's bytes.
    user: NonNull<u8>,
    /// Their length.
    size: usize,
    /// Bytes of front guard (`user - block`).
    front: usize,
    /// What the wrapped allocator handed out.
    block: NonNull<u8>,
    /// With this layout.
    layout: Layout,
}

/// Guard bytes and poison around any allocator.
///
/// **Contract.** Each allocation asks the wrapped allocator for `front + size
/// + width` bytes, where `width` is the guard width (default 4, as in the
/// chapter) and `front` is `width` rounded up to the requested alignment. The
/// `front` bytes before and the `width` bytes after the user's bytes are
/// filled with [`GUARD_BYTE`] (0xFE). [`check`](Guarded::check) and
/// [`check_all`](Guarded::check_all) compare them and report a
/// [`GuardViolation`] naming the allocation (its sequence number, address and
/// size), the side ([`GuardPosition::Front`] or [`GuardPosition::Back`]) and
/// the first byte that changed. Freeing a block checks it, then fills the
/// user's bytes with [`POISON_BYTE`] (0xDD) before handing it back;
/// [`reset`](Guarded::reset) poisons every live block, then runs the wrapped
/// allocator's bulk release. The wrapper records every live allocation (a map
/// from address to record) so `check_all` can find them. `Send` when the
/// wrapped allocator is; not `Sync` (the record is a `RefCell`).
///
/// **Costs.** `front + width` bytes per allocation in the wrapped allocator
/// and one map entry (about 64 bytes) on the heap.
///
/// How the fast path compiles is in the source's header (`src/guarded.rs`).
///
/// ```
/// use allocasm::{GuardPosition, Guarded, LinearArena, RawAllocator};
/// use std::alloc::Layout;
///
/// let guarded = Guarded::new(LinearArena::new(256).unwrap());
/// let health = guarded.allocate(Layout::array::<i32>(3).unwrap()).unwrap().cast::<i32>();
/// assert!(guarded.check(health.cast()).is_ok());
/// // SAFETY: one element past the end lands in the back guard, which is still
/// // inside the arena's buffer: a bug, but one this wrapper exists to catch.
/// unsafe { health.as_ptr().add(3).write_unaligned(999) };
/// let violation = guarded.check(health.cast()).unwrap_err();
/// assert_eq!(violation.position, GuardPosition::Back);
/// ```
#[derive(Debug)]
pub struct Guarded<A> {
    /// The allocator doing the work.
    inner: A,
    /// Back guard width (the front guard is this rounded up to the alignment).
    width: usize,
    /// Every live allocation, by user address. Invariant: the guards of each
    /// were written at allocation and the block is live in `inner`.
    live: RefCell<BTreeMap<usize, Record>>,
    /// Sequence number of the next allocation.
    next_id: Cell<u64>,
}

// SAFETY: the records' pointers point into blocks owned by `inner`; sending the
// wrapper sends `inner` (which must be `Send`) and the records with it. No
// record is shared with anything else.
unsafe impl<A: Send> Send for Guarded<A> {}

impl<A: RawAllocator> Guarded<A> {
    /// Wraps `inner` with the chapter's 4-byte guards.
    pub fn new(inner: A) -> Self {
        Self::with_width(inner, DEFAULT_GUARD_WIDTH)
    }

    /// Wraps `inner` with guards of `width` bytes on each side (0 turns the
    /// guards off and keeps the poison).
    pub fn with_width(inner: A, width: usize) -> Self {
        Guarded {
            inner,
            width,
            live: RefCell::new(BTreeMap::new()),
            next_id: Cell::new(0),
        }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// The guard width.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of live allocations.
    pub fn live_count(&self) -> usize {
        self.live.borrow().len()
    }

    /// Checks the guards of the live allocation at `ptr`.
    ///
    /// # Panics
    ///
    /// If `ptr` is not a live allocation of this wrapper.
    pub fn check(&self, ptr: NonNull<u8>) -> Result<(), GuardViolation> {
        let live = self.live.borrow();
        let record = live
            .get(&(ptr.as_ptr() as usize))
            .unwrap_or_else(|| panic!("{ptr:p} is not a live allocation"));
        self.check_record(record)
    }

    /// Checks every live allocation; returns every violation, in address order
    /// (empty when all guards are intact).
    pub fn check_all(&self) -> Vec<GuardViolation> {
        self.live
            .borrow()
            .values()
            .filter_map(|r| self.check_record(r).err())
            .collect()
    }

    fn check_record(&self, r: &Record) -> Result<(), GuardViolation> {
        // SAFETY: `r` is live, so `block .. block + layout.size()` is memory of
        // `inner` handed to us, made of `front` guard bytes, `size` user bytes
        // and `width` guard bytes.
        let (front, back) = unsafe {
            (
                core::slice::from_raw_parts(r.block.as_ptr(), r.front),
                core::slice::from_raw_parts(r.user.as_ptr().add(r.size), self.width),
            )
        };
        let violation = |position, distance, found| GuardViolation {
            allocation: r.id,
            address: r.user.as_ptr() as usize,
            size: r.size,
            position,
            distance,
            found,
        };
        if let Some(i) = front.iter().rposition(|&b| b != GUARD_BYTE) {
            return Err(violation(GuardPosition::Front, r.front - 1 - i, front[i]));
        }
        if let Some(i) = back.iter().position(|&b| b != GUARD_BYTE) {
            return Err(violation(GuardPosition::Back, i, back[i]));
        }
        Ok(())
    }

    /// Checks the block's guards, poisons its bytes with 0xDD and gives it
    /// back to the wrapped allocator. The block is freed even when a guard was
    /// overwritten; the violation is returned.
    ///
    /// # Safety
    ///
    /// `ptr` is a live allocation of this wrapper, not used after this call.
    ///
    /// # Panics
    ///
    /// If `ptr` is not a live allocation of this wrapper.
    pub unsafe fn free(&self, ptr: NonNull<u8>) -> Result<(), GuardViolation> {
        let record = self
            .live
            .borrow_mut()
            .remove(&(ptr.as_ptr() as usize))
            .unwrap_or_else(|| panic!("{ptr:p} is not a live allocation"));
        let result = self.check_record(&record);
        // SAFETY: the record was live: its `size` user bytes are ours, and the
        // caller no longer uses them.
        unsafe { record.user.as_ptr().write_bytes(POISON_BYTE, record.size) };
        // SAFETY: `block` came from `inner.allocate(layout)` and is freed once
        // (its record is gone).
        unsafe { self.inner.deallocate(record.block, record.layout) };
        result
    }

    /// Poisons every live allocation with 0xDD, forgets them, then runs the
    /// wrapped allocator's bulk release (`|a| a.reset()`).
    pub fn reset(&mut self, release: impl FnOnce(&mut A)) {
        for record in core::mem::take(self.live.get_mut()).into_values() {
            // SAFETY: live until now; `&mut self` means no borrow of the
            // wrapper, and the reset ends every block's life.
            unsafe { record.user.as_ptr().write_bytes(POISON_BYTE, record.size) };
        }
        release(&mut self.inner);
    }
}

// SAFETY: the user block lies between the guards inside a block of `front +
// size + width` bytes from the inner allocator (whose `RawAllocator` contract
// guarantees that block), `layout.size()` bytes, aligned to `layout.align()`
// (the front is a multiple of it); valid until freed or `reset` (`&mut self`).
unsafe impl<A: RawAllocator> RawAllocator for Guarded<A> {
    const FREES_INDIVIDUALLY: bool = A::FREES_INDIVIDUALLY;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let too_large = AllocError::TooLarge {
            requested: layout.size(),
            max: isize::MAX as usize,
        };
        let front = crate::checked_align_up(self.width, layout.align())?;
        let total = front
            .checked_add(layout.size())
            .and_then(|n| n.checked_add(self.width))
            .ok_or(too_large)?;
        let outer = Layout::from_size_align(total, layout.align()).map_err(|_| too_large)?;
        let block = self.inner.allocate(outer)?.cast::<u8>();
        // SAFETY: `inner` handed out `total = front + size + width` bytes at
        // `block`; the front and back ranges are inside it.
        let user = unsafe {
            block.as_ptr().write_bytes(GUARD_BYTE, front);
            block
                .as_ptr()
                .add(front + layout.size())
                .write_bytes(GUARD_BYTE, self.width);
            block.add(front)
        };
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let record = Record {
            id,
            user,
            size: layout.size(),
            front,
            block,
            layout: outer,
        };
        self.live
            .borrow_mut()
            .insert(user.as_ptr() as usize, record);
        Ok(NonNull::slice_from_raw_parts(user, layout.size()))
    }

    /// Frees through [`Guarded::free`].
    ///
    /// # Panics
    ///
    /// If a guard of the block was overwritten (after freeing it), or `ptr` is
    /// not a live allocation.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded; the caller upholds `free`'s contract.
        if let Err(v) = unsafe { self.free(ptr) } {
            panic!("guard violation: {v}");
        }
    }
}

// SAFETY: `Guarded::allocate` hands out disjoint blocks of `layout.size()`
// bytes aligned to `layout.align()` inside blocks of the inner allocator,
// valid until freed (or the inner allocator's reset, which needs `&mut`);
// copies of `&Guarded` are the same allocator. Zero-size layouts get a
// dangling aligned pointer and are not freed.
crate::api04::allocator_api04! {
    impl [A: RawAllocator] &Guarded<A> { frees }
}
