//! `GuardZone`: every allocation in its own pages, fenced by inaccessible
//! guard pages, so overruns, underruns and uses after free fault at once.
//!
//! **Contract.** Thread-safe (`Send + Sync`); any thread may allocate and
//! free. Each allocation reserves `page + round(size) + page` bytes: the
//! first and last pages are never accessible (PROT_NONE / PAGE_NOACCESS).
//! With [`GuardSide::Trailing`] (the default) the data ends against the
//! trailing guard (up to `align - 1` bytes of slack when `size` is not a
//! multiple of `align`), so the first byte written past the end faults; with
//! [`GuardSide::Leading`] the data starts on the leading guard, so the first
//! byte before the start faults. [`dealloc`](GuardZone::dealloc) decommits
//! the pages (inaccessible from then on) and keeps the address range
//! reserved in a quarantine of the last [`GuardZone::QUARANTINE`] frees, so
//! a use after free faults instead of reaching a new allocation; older
//! ranges are released.
//!
//! **Fast path.** None: a debugging allocator. Every allocation is three
//! system calls (reserve, commit) and every free two (decommit, and a
//! release of the oldest quarantined range), plus a lock on a table of live
//! allocations that makes bad frees detectable.
//!
//! **Costs.** Two guard pages of address space per allocation and at least
//! one page of memory; a table entry per live allocation and per quarantined
//! range. Failure modes: [`AllocError::ZeroSize`], [`AllocError::TooLarge`]
//! (alignment above the page size, or a size that overflows),
//! [`AllocError::Os`]; a bad free is [`AllocError::ForeignPointer`],
//! [`AllocError::SizeMismatch`] or [`AllocError::DoubleFree`] from [`try_dealloc`](GuardZone::try_dealloc)
//! (a debug panic from [`dealloc`](GuardZone::dealloc), ignored in release).
//!
//! Under Miri the `sys` fallback cannot protect pages: guards do not fault
//! there (the fault tests skip under Miri).

use core::alloc::Layout;
use core::ptr::NonNull;
use std::collections::{BTreeMap, VecDeque};
// A plain std mutex: this allocator is lock-based by design and not modelled
// under loom.
use std::sync::Mutex;

use crate::{AllocError, RawAllocator, sys};

/// Which guard page the data is placed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuardSide {
    /// Data ends at the trailing guard: an overrun faults at once.
    #[default]
    Trailing,
    /// Data starts at the leading guard: an underrun faults at once.
    Leading,
}

/// One reservation: `guard | data pages | guard`.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Start of the reservation (the leading guard).
    start: NonNull<u8>,
    /// Length of the whole reservation.
    len: usize,
    /// The size that was asked for.
    size: usize,
}

#[derive(Debug, Default)]
struct Table {
    /// Live allocations by the pointer handed out.
    live: BTreeMap<usize, Span>,
    /// Freed, decommitted, still-reserved spans by the pointer handed out
    /// (oldest first in `order`).
    quarantine: BTreeMap<usize, Span>,
    order: VecDeque<usize>,
}

/// The guard-zone allocator: each allocation in its own pages between two
/// inaccessible guard pages, data against the trailing guard (overrun faults)
/// or the leading one (underrun faults); a free makes the pages inaccessible
/// and quarantines the range, so a use after free faults. Every call is a
/// system call: a debugging allocator. `Send + Sync`.
///
/// **Contract.** `alloc(size, align)` maps a fresh block (`align` up to the
/// page size); `dealloc(ptr, size)` with the same size makes it
/// inaccessible and quarantines it. An access past either end of the block
/// (on the guarded side) or after its free faults (SIGSEGV / an access
/// violation), instead of corrupting a neighbour.
///
/// ```
/// use allocasm::GuardZone;
///
/// let zone = GuardZone::new();
/// let p = zone.alloc(100, 8).unwrap();
/// // SAFETY: 100 bytes of ours; writing them is in bounds (byte 100 would
/// // fault: the block ends against the trailing guard page).
/// unsafe { p.as_ptr().write_bytes(0xab, 100) };
/// assert_eq!(zone.live(), 1);
/// // SAFETY: allocated above with 100 bytes, freed once, not used after.
/// unsafe { zone.dealloc(p, 100) };
/// assert_eq!(zone.live(), 0);
/// ```
#[derive(Debug)]
pub struct GuardZone {
    side: GuardSide,
    table: Mutex<Table>,
}

// SAFETY: the reservation pointers in the table are only used under the
// mutex, and the memory they name is owned by this allocator.
unsafe impl Send for GuardZone {}
// SAFETY: as above: all shared state is behind the mutex.
unsafe impl Sync for GuardZone {}

impl Default for GuardZone {
    fn default() -> Self {
        Self::new()
    }
}

impl GuardZone {
    /// How many freed ranges stay reserved (and faulting) before the oldest
    /// is released.
    pub const QUARANTINE: usize = 64;

    /// A guard-zone allocator with data against the trailing guard.
    pub fn new() -> Self {
        Self::with_side(GuardSide::Trailing)
    }

    /// A guard-zone allocator with data against the given guard.
    pub fn with_side(side: GuardSide) -> Self {
        GuardZone {
            side,
            table: Mutex::new(Table::default()),
        }
    }

    /// Which guard the data is placed against.
    pub fn side(&self) -> GuardSide {
        self.side
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `size` bytes aligned to `align` (a power of two, at most the
    /// page size) in fresh pages between two guard pages.
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        crate::check_align(align)?;
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        let page = sys::page_size();
        if align > page {
            return Err(AllocError::TooLarge {
                requested: align,
                max: page,
            });
        }
        let too_large = AllocError::TooLarge {
            requested: size,
            max: isize::MAX as usize - 3 * page,
        };
        let data = size
            .checked_add(page - 1)
            .map(|n| n & !(page - 1))
            .ok_or(too_large)?;
        let len = data
            .checked_add(2 * page)
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or(too_large)?;
        let start = sys::reserve(len)?;
        // SAFETY: `page..page + data` lies inside the reservation just made.
        let data_start = unsafe { start.add(page) };
        // SAFETY: the data pages are inside the reservation, page-aligned.
        if let Err(e) = unsafe { sys::commit(data_start, data) } {
            // SAFETY: exactly the reservation above, unused.
            let _ = unsafe { sys::release(start, len) };
            return Err(e);
        }
        let offset = match self.side {
            GuardSide::Leading => 0,
            // Round down so the pointer stays aligned: the slack is at most
            // `align - 1` bytes.
            GuardSide::Trailing => (data - size) & !(align - 1),
        };
        // SAFETY: `offset + size <= data`, inside the committed pages.
        let ptr = unsafe { data_start.add(offset) };
        let span = Span { start, len, size };
        let mut t = self.table();
        // A reused address leaves the quarantine (it was released there).
        t.quarantine.remove(&ptr.as_ptr().addr());
        t.live.insert(ptr.as_ptr().addr(), span);
        Ok(ptr)
    }

    /// Frees an allocation: its pages become inaccessible at once and stay
    /// reserved while in the quarantine.
    ///
    /// A pointer that is not live here is a debug panic, and ignored in
    /// release builds; [`try_dealloc`](Self::try_dealloc) reports it.
    ///
    /// # Safety
    ///
    /// Nothing may access the block afterwards (an access faults; that is the
    /// point, but it is still a bug in the caller).
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: forwarded contract.
        let r = unsafe { self.try_dealloc(ptr, size) };
        debug_assert!(r.is_ok(), "GuardZone::dealloc({ptr:#p}, {size}): {r:?}");
    }

    /// A checked free: [`AllocError::DoubleFree`] for a pointer freed before
    /// (and still quarantined), [`AllocError::ForeignPointer`] for one this
    /// allocator does not know, [`AllocError::SizeMismatch`] (with both
    /// sizes) for a size other than the one allocated.
    ///
    /// # Safety
    ///
    /// As for [`dealloc`](Self::dealloc).
    pub unsafe fn try_dealloc(&self, ptr: NonNull<u8>, size: usize) -> Result<(), AllocError> {
        let key = ptr.as_ptr().addr();
        let mut t = self.table();
        let Some(span) = t.live.get(&key).copied() else {
            return Err(if t.quarantine.contains_key(&key) {
                AllocError::DoubleFree
            } else {
                AllocError::ForeignPointer
            });
        };
        if span.size != size {
            return Err(AllocError::SizeMismatch {
                allocated: span.size,
                freed: size,
            });
        }
        t.live.remove(&key);
        let page = sys::page_size();
        // SAFETY: the span is one reservation this allocator made; its data
        // pages are `start + page .. start + len - page`.
        let r = unsafe { sys::decommit(span.start.add(page), span.len - 2 * page) };
        debug_assert!(r.is_ok(), "decommit failed: {r:?}");
        t.quarantine.insert(key, span);
        t.order.push_back(key);
        while t.order.len() > Self::QUARANTINE {
            let old = t.order.pop_front().expect("non-empty");
            if let Some(s) = t.quarantine.remove(&old) {
                // SAFETY: one reservation of ours, decommitted, unused.
                let r = unsafe { sys::release(s.start, s.len) };
                debug_assert!(r.is_ok(), "release failed: {r:?}");
            }
        }
        Ok(())
    }

    /// Number of live allocations.
    pub fn live(&self) -> usize {
        self.table().live.len()
    }
}

impl Drop for GuardZone {
    fn drop(&mut self) {
        let t = self.table.get_mut().unwrap_or_else(|e| e.into_inner());
        for s in t.live.values().chain(t.quarantine.values()) {
            // SAFETY: one reservation of ours; `&mut self` means nothing
            // allocated here is used any more.
            let _ = unsafe { sys::release(s.start, s.len) };
        }
    }
}

// SAFETY: `allocate` maps a fresh guarded region of at least `layout.size()`
// bytes, aligned, disjoint from any other; it stays valid until `deallocate`
// unmaps it or the allocator is dropped.
unsafe impl RawAllocator for GuardZone {
    const FREES_INDIVIDUALLY: bool = true;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.alloc(layout.size(), layout.align())?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.dealloc(ptr, layout.size()) }
    }
}

// SAFETY: every block is in its own committed pages, aligned to `align <=
// page` (larger alignments are refused), valid until `deallocate` decommits
// it; the table behind the mutex makes `&GuardZone` shareable, and copies of
// `&GuardZone` are the same allocator. Zero-size layouts get a dangling
// aligned pointer and are not freed.
crate::api04::allocator_api04! {
    impl [] &GuardZone { frees, zeroed_by_os }
}
