//! `TempJob`: Unity's thread-safe linear allocator for data handed from job to
//! job, to be freed within 4 frames.
//!
//! **Contract.** `Send + Sync`: any thread allocates and frees through
//! `&TempJob`. Every block must be freed explicitly ([`TempJob::dealloc`]);
//! a block still live more than [`TempJob::MAX_AGE_FRAMES`] frames after the
//! frame it was made in is reported once by [`TempJob::end_frame`] as an
//! [`Overdue`] warning, written to stderr (or given to the hook set by
//! [`TempJob::on_overdue`]), and stays valid, as in Unity. Blocks are aligned to at
//! least [`TempJob::MIN_ALIGN`] = 16 bytes. When the pool is full, requests
//! overflow into the system heap (Unity: "overspill allocations in main
//! memory (malloc)"), counted by [`TempJob::overflow_count`] and capped by an
//! optional limit. Blocks still live when the `TempJob` is dropped are
//! reported as a [`LeakReport`] (stderr, or the hook set by
//! [`TempJob::on_leak`]); the drop then releases all memory, theirs included.
//!
//! **Fast path** ([`TempJob::try_alloc`]): a relaxed load of the offset (the
//! pre-check that keeps a full pool from growing the offset without bound),
//! one relaxed `fetch_add` of the reservation on the shared offset, a fit
//! check, then plain stores of a 16-byte record in front of the block
//! (requested size, frame, state). One atomic read-modify-write, no loop, no
//! lock, no call. The frame number is a plain field: only `end_frame(&mut
//! self)` changes it.
//!
//! **Where the per-block frame lives.** Not in a shared table: in the record
//! in front of the block, inside the block's own reservation, so allocating
//! touches no shared word but the offset, and freeing is one plain store to
//! the record (no atomic, no lock). The records chain through the pool
//! (padding for over-aligned blocks is a `PAD` record, a reservation cut by
//! the end of the pool leaves an `END` record), so [`TempJob::end_frame`],
//! which holds `&mut self` and therefore runs with no allocation in flight,
//! looks at what changed: the records live at the previous end of frame and
//! the records made since (O(live + new), not O(everything since the pool
//! was last empty); [`TempJob::end_frame_visits`] counts them). It then rolls
//! the offset back to the end of the last live block (0 when none is live),
//! so a long-lived block pins only the pool up to its own end.
//!
//! **Slow path** (`#[cold]`): the overflow. `std::alloc` plus an entry in a
//! `Mutex<HashMap>` keyed by address, holding the layout and frame, and an
//! entry in an allocation-order queue, so an end of frame looks only at the
//! overflow blocks reaching the age limit.
//!
//! **Costs.** 16 bytes of record per pool block (blocks round to 16); pool
//! memory comes back at an end of frame down to the end of the last live
//! block, so a long-lived block pins the pool below it (Unity's
//! "performance degradation": with the pool pinned, later requests
//! overflow). Per overflow block, a map entry. Failures:
//! zero size, bad alignment, overflow over its limit or refused by the heap
//! (`OutOfMemory`), a size beyond `isize::MAX` (`TooLarge`).

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;
use std::collections::HashMap;

use crossbeam_utils::CachePadded;

use super::{
    Leak, LeakHook, LeakReport, MAX_CAPACITY, Reserved, needs_cas, report_leaks, reserve_cas,
};
use crate::sync::{AtomicUsize, Mutex, Ordering, header_and_block};
use crate::{AllocError, PageAllocator, RawAllocator, align_up};

/// A block still live more than [`TempJob::MAX_AGE_FRAMES`] frames after the
/// frame it was allocated in: Unity's "allocation older than 4 frames"
/// warning. The block stays valid and must still be freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Overdue {
    /// Address of the block.
    pub address: usize,
    /// Requested size in bytes.
    pub size: usize,
    /// The frame it was allocated in.
    pub frame: u64,
    /// Frames since then (`TempJob::frame() - frame`).
    pub age: u64,
}

impl fmt::Display for Overdue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TempJob allocation at {:#x} ({} bytes) is {} frames old (allocated in frame {}): free TempJob memory within {} frames",
            self.address,
            self.size,
            self.age,
            self.frame,
            TempJob::MAX_AGE_FRAMES
        )
    }
}

/// The record in front of every pool block, and the padding and end markers
/// that keep the records a chain through the pool.
#[repr(C, align(16))]
struct Record {
    /// `LIVE`/`WARNED`/`FREED`: the requested size (the block spans
    /// `align_up(size, 16)` bytes after the record). `PAD`: bytes to skip
    /// after this record. `END`: unused.
    size: usize,
    /// The frame the block was made in (low 32 bits; ages use wrapping
    /// differences).
    frame: u32,
    /// One of the state constants below.
    state: u32,
}

const RECORD: usize = core::mem::size_of::<Record>();
const _: () = assert!(RECORD == 16);

/// A live block.
const LIVE: u32 = 0x4C49_5645;
/// A live block already reported overdue.
const WARNED: u32 = 0x5741_524E;
/// A freed block.
const FREED: u32 = 0x4652_4545;
/// Padding before an over-aligned block's record, or after its data.
const PAD: u32 = 0x5041_4444;
/// The pool ends here (a reservation that did not fit started here).
const END: u32 = 0x454E_4400;

// `crate::sync::header_and_block` is a block with its record.
const _: () = assert!(RECORD == 16 && TempJob::MIN_ALIGN == 16);

/// Writes a record at pool offset `at` of the pool at `base`.
///
/// # Safety
///
/// `at..at + 16` is inside the pool and inside the caller's reservation (or
/// the caller holds `&mut TempJob`); `at` is a multiple of 16.
#[inline(always)]
unsafe fn write_record(base: NonNull<u8>, at: usize, size: usize, frame: u32, state: u32) {
    // SAFETY: in bounds and exclusively the caller's, per the contract; the
    // base is page-aligned and `at % 16 == 0`, so the record is aligned.
    unsafe {
        base.add(at)
            .cast::<Record>()
            .write(Record { size, frame, state })
    };
}

std::thread_local! {
    /// The offset this thread's last refused compare-and-swap reservation
    /// saw (see `TempJob::try_alloc_cas`). No destructor, never lazy.
    static CAS_REFUSED_AT: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// An overflow block: where it came from, so it can be given back.
#[derive(Debug, Clone, Copy)]
struct OverflowBlock {
    /// The block (kept as a pointer, not only as the map's key, so that it
    /// is freed with its provenance).
    ptr: NonNull<u8>,
    layout: Layout,
    frame: u64,
    warned: bool,
}

#[derive(Debug, Default)]
struct Overflow {
    /// Live overflow blocks by address.
    blocks: HashMap<usize, OverflowBlock>,
    /// `(frame, address)` of every overflow block in allocation order (freed
    /// ones too, until they would have become overdue), so that an end of
    /// frame looks only at the blocks reaching the age limit.
    by_age: std::collections::VecDeque<(u64, usize)>,
    /// Sum of their sizes.
    bytes: usize,
    /// Addresses of the last [`RECENT_FREES`] overflow blocks freed (and not
    /// handed out again since), so that freeing one again is reported as a
    /// [`AllocError::DoubleFree`] rather than a foreign pointer.
    recently_freed: std::collections::VecDeque<usize>,
}

/// How many freed overflow addresses [`Overflow::recently_freed`] keeps.
const RECENT_FREES: usize = 64;

/// Unity's thread-safe linear allocator with 4-frame lifetimes. See the
/// [`unity`](crate::unity) overview; the full contract heads
/// `src/unity/temp_job.rs`.
///
/// ```
/// use allocasm::TempJob;
/// let mut job = TempJob::new(1 << 16).unwrap();
/// let p = job.alloc(100, 8).unwrap();
/// for _ in 0..4 {
///     assert!(job.end_frame().is_empty());
/// }
/// let late = job.end_frame(); // the fifth end of frame: 5 frames old
/// assert_eq!(late.len(), 1);
/// assert_eq!(late[0].address, p.as_ptr() as usize);
/// // SAFETY: `p` came from `job` and is live.
/// unsafe { job.dealloc(p).unwrap() };
/// assert!(job.end_frame().is_empty());
/// assert_eq!(job.used(), 0);
/// ```
pub struct TempJob {
    /// Next free byte of the pool. Invariant: a multiple of 16; may pass
    /// `capacity` (failed reservations are not undone) but stays below
    /// `capacity * (MAX_ENTRANTS + 2)`. Alone on its cache line.
    offset: CachePadded<AtomicUsize>,
    /// Start of the pool: page-aligned. Owned; released on drop.
    base: NonNull<u8>,
    /// Usable bytes: a multiple of 16, at most [`MAX_CAPACITY`].
    capacity: usize,
    /// Bytes of the mapping.
    mapped: usize,
    /// The current frame. Changed only by `end_frame(&mut self)`, so the
    /// fast path reads it as a plain field.
    frame: u64,
    /// Most bytes the overflow may hold at once.
    overflow_limit: usize,
    /// Overflow blocks (slow path only).
    overflow: Mutex<Overflow>,
    /// Requests served by the overflow since construction.
    overflow_count: AtomicUsize,
    /// Where a leak report goes (stderr when `None`).
    leak_hook: Option<LeakHook>,
    /// Where overdue warnings go (stderr when `None`).
    overdue_hook: Option<OverdueHook>,
    /// Pool offsets of the records live at the last end of frame (`&mut
    /// self` only).
    live_records: Vec<usize>,
    /// Pool offset up to which the last end of frame walked the records;
    /// records from here on are new.
    walked: usize,
    /// See [`TempJob::end_frame_visits`].
    end_frame_visits: usize,
}

/// Receives each [`Overdue`] warning of [`TempJob::end_frame`] (instead of
/// the default: one line on stderr per allocation, as Unity writes a warning
/// to the console).
pub type OverdueHook = Box<dyn Fn(&Overdue) + Send + Sync>;

// SAFETY: `base` is the pool this `TempJob` owns; the pool is written only
// inside reservations that one `fetch_add` gave to one caller, or under
// `&mut self`. The other shared state is atomics and a `Mutex`; `frame` and
// the rest change only under `&mut self`; the hook is `Send + Sync`.
unsafe impl Send for TempJob {}
// SAFETY: as above: every `&self` method touches the pool only inside its
// own reservation or a block the caller owns, and shared counters only
// through atomics or the `Mutex`.
unsafe impl Sync for TempJob {}

impl TempJob {
    /// Every block is aligned to at least this (Unity's documented minimum).
    pub const MIN_ALIGN: usize = 16;
    /// A block older than this many frames at an end of frame is reported.
    pub const MAX_AGE_FRAMES: u64 = 4;
    /// Unity's usual pool size: 64 MB ("most platforms").
    pub const DEFAULT_CAPACITY: usize = 64 << 20;
    /// Unity's pool size on small-memory systems: 16 MB.
    pub const SMALL_CAPACITY: usize = 16 << 20;

    /// A `TempJob` with a pool of `capacity` bytes (rounded down to a
    /// multiple of 16) and an unlimited overflow.
    ///
    /// Errors: a capacity under 32 bytes is [`AllocError::InvalidConfig`]
    /// naming `capacity`, over [`MAX_CAPACITY`] is [`AllocError::TooLarge`];
    /// the OS refusing the pool is [`AllocError::Os`].
    pub fn new(capacity: usize) -> Result<Self, AllocError> {
        if capacity < 2 * RECORD {
            return Err(AllocError::InvalidConfig {
                field: crate::ConfigField::Capacity,
                value: capacity,
            });
        }
        let capacity = capacity & !(Self::MIN_ALIGN - 1);
        if capacity > MAX_CAPACITY {
            return Err(AllocError::TooLarge {
                requested: capacity,
                max: MAX_CAPACITY,
            });
        }
        let block = PageAllocator::new().alloc(capacity)?;
        Ok(TempJob {
            offset: CachePadded::new(AtomicUsize::new(0)),
            base: block.cast(),
            capacity,
            mapped: block.len(),
            frame: 0,
            overflow_limit: usize::MAX,
            overflow: Mutex::new(Overflow::default()),
            overflow_count: AtomicUsize::new(0),
            leak_hook: None,
            overdue_hook: None,
            live_records: Vec::new(),
            walked: 0,
            end_frame_visits: 0,
        })
    }

    /// Caps the bytes the overflow may hold at once (0: no overflow, a full
    /// pool is an [`AllocError::OutOfMemory`]).
    pub fn with_overflow_limit(mut self, bytes: usize) -> Self {
        self.overflow_limit = bytes;
        self
    }

    /// Sends each overdue warning of [`end_frame`](Self::end_frame) to
    /// `hook` instead of stderr (each allocation is warned about once).
    pub fn on_overdue(mut self, hook: impl Fn(&Overdue) + Send + Sync + 'static) -> Self {
        self.overdue_hook = Some(Box::new(hook));
        self
    }

    /// Sends the leak report of the drop to `hook` instead of stderr.
    pub fn on_leak(mut self, hook: impl Fn(&LeakReport) + Send + Sync + 'static) -> Self {
        self.leak_hook = Some(Box::new(hook));
        self
    }

    /// The fast path: `size` bytes aligned to `max(align, 16)` from the
    /// pool, or an error without overflowing.
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::BadAlignment`], and
    /// [`AllocError::OutOfMemory`] when the pool has no room.
    #[inline(always)]
    pub fn try_alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let r = self.reserve(size, align);
        match r.ptr {
            Some(p) => Ok(p),
            None => Err(self.refusal(size, align, r.seen)),
        }
    }

    /// Why [`reserve`](Self::reserve) refused: from the arguments, or the
    /// room the offset it saw left. Arithmetic only, so a caller that only
    /// tests the pointer drops it.
    #[inline(always)]
    fn refusal(&self, size: usize, align: usize, seen: usize) -> AllocError {
        if size == 0 {
            AllocError::ZeroSize
        } else if !align.is_power_of_two() {
            AllocError::BadAlignment { align }
        } else {
            AllocError::OutOfMemory {
                requested: size,
                available: self.capacity.saturating_sub(seen),
            }
        }
    }

    /// The reservation: the block and its records, or `None` with the offset
    /// the refusal saw. Two scalars, in registers, also from the two calls
    /// off the fast path, so that each of them is a tail call where the
    /// caller only tests the pointer (no frame on the fast path).
    #[inline(always)]
    fn reserve(&self, size: usize, align: usize) -> Reserved {
        if size == 0 || !align.is_power_of_two() {
            return Reserved {
                ptr: crate::refused(),
                seen: 0,
            };
        }
        let cap = self.capacity;
        // Over-aligned blocks reserve the worst-case padding up front, so one
        // `fetch_add` always suffices.
        let extra = align.saturating_sub(Self::MIN_ALIGN);
        // The pre-check: a full pool refuses before touching the offset, so
        // only threads already past this load can push it beyond `cap`.
        // ORDERING: Relaxed: a hint only; the `fetch_add` below decides.
        let seen = self.offset.load(Ordering::Relaxed);
        if size > cap || extra > cap {
            return Reserved {
                ptr: crate::refused(),
                seen,
            };
        }
        // No overflow: size, extra <= cap <= MAX_CAPACITY.
        let need = header_and_block(size) + extra;
        if need > cap || seen > cap - need {
            return Reserved {
                ptr: crate::refused(),
                seen,
            };
        }
        if needs_cas(need) {
            return Reserved {
                ptr: self.try_alloc_cas(size, align, need),
                seen: CAS_REFUSED_AT.get(),
            };
        }
        // ORDERING: Relaxed. The add only has to hand out disjoint ranges
        // (its modification order does). Pool bytes are reused only after
        // `end_frame(&mut self)` rolls the offset back, and `&mut self` already orders
        // every earlier access (allocations, records, frees) before the
        // reuse; the records are read only under `&mut self` too.
        let (old, size) = if extra == 0 {
            // `need` is `(size + 31) & !15` here; from here on the size is
            // the one the add hands back (on armv7 nothing computed before
            // the loop is then held across it: see the function).
            crate::sync::fetch_add_header_block(&self.offset, size, Ordering::Relaxed)
        } else {
            (self.offset.fetch_add(need, Ordering::Relaxed), size)
        };
        // Recomputed from the size the add handed back (the same value),
        // and the capacity read again (on armv7 the add's block claims
        // memory; elsewhere LLVM reuses the first read).
        let need = header_and_block(size) + extra;
        let cap = self.capacity;
        debug_assert!(
            old.is_multiple_of(Self::MIN_ALIGN),
            "TempJob offset {old} not 16-aligned"
        );
        // Whether `old > cap - need`. On armv7 tested as `old + need > cap`,
        // on the offset the loop kept; elsewhere as written, with the
        // pre-check's `cap - need`, which LLVM keeps from before the add.
        // `old + need` cannot wrap: at most `MAX_ENTRANTS` threads are past
        // the pre-check with at most `MAX_FAST_RESERVE` each, and
        // `MAX_CAPACITY` leaves room for that.
        let end = old + need;
        let overshot = if cfg!(allocasm_arm_v7) {
            end > cap
        } else {
            old > cap - need
        };
        if overshot {
            return Reserved {
                ptr: self.overshot(size, end, extra),
                seen: old,
            };
        }
        Reserved {
            // SAFETY: `old..old + need` is this caller's reservation, inside
            // the pool (`old <= cap - need`).
            ptr: Some(unsafe { self.place(old, size, align, need) }),
            seen: old,
        }
    }

    /// The add at `old` went past the end of the pool: marks where the chain
    /// of records stops when the reservation straddles the end, and refuses.
    ///
    /// Always `None`. Out of line, and returning the pointer alone, so that
    /// its call is a tail call where the caller only tests the pointer:
    /// then nothing after the add returns a constant, which on armv7 held
    /// the null result in a register across the add's loop.
    ///
    /// Takes the reservation's end and the arguments of its size rather
    /// than its start: the fast path then computes the start and the size
    /// only on its way to success, and holds fewer values at the fit check.
    #[cold]
    #[inline(never)]
    fn overshot(&self, size: usize, end: usize, extra: usize) -> Option<NonNull<u8>> {
        let old = end - (header_and_block(size) + extra);
        if old < self.capacity {
            // This reservation straddles the end of the pool. `old + 16 <=
            // cap` (both are multiples of 16), and no other reservation
            // covers `old`.
            // SAFETY: inside the pool, in this caller's reservation.
            unsafe { write_record(self.base, old, 0, self.frame as u32, END) };
        }
        // Opaque, as `crate::refused`'s: where LLVM sees this body (LTO)
        // it would otherwise put the constant in place of the call's result.
        core::hint::black_box(None)
    }

    /// A reservation too large for the unconditional `fetch_add` (32-bit
    /// targets only): a compare-and-swap loop, which never overshoots.
    ///
    /// Returns the pointer alone, so that its call is a tail call where the
    /// caller only tests the pointer; a refusal leaves the offset it saw in
    /// this thread's `CAS_REFUSED_AT`, which the caller reads for the
    /// error (a plain thread-local read, dropped where the error is).
    #[cold]
    #[inline(never)]
    fn try_alloc_cas(&self, size: usize, align: usize, need: usize) -> Option<NonNull<u8>> {
        match reserve_cas(&self.offset, self.capacity, need) {
            // SAFETY: `old..old + need` is this caller's reservation, inside
            // the pool (`old <= cap - need`).
            Ok(old) => Some(unsafe { self.place(old, size, align, need) }),
            Err(seen) => {
                CAS_REFUSED_AT.set(seen);
                None
            }
        }
    }

    /// Writes the records of the block reserved at `old..old + need` and
    /// returns the block.
    ///
    /// # Safety
    ///
    /// `old..old + need` is the caller's reservation, inside the pool, with
    /// `need = 16 + align_up(size, 16) + align.saturating_sub(16)`.
    #[inline(always)]
    unsafe fn place(&self, old: usize, size: usize, align: usize, need: usize) -> NonNull<u8> {
        let base = self.base;
        let user = if align <= Self::MIN_ALIGN {
            old + RECORD
        } else {
            let addr = base.as_ptr() as usize;
            let user = align_up(addr + old + RECORD, align) - addr;
            let data_end = user + align_up(size, Self::MIN_ALIGN);
            let frame = self.frame as u32;
            // SAFETY: `old..old + need` is this caller's reservation inside
            // the pool; `user - RECORD >= old` and `data_end <= old + need`,
            // and a pad is at least 16 bytes when present (all offsets are
            // multiples of 16), so both pad records lie inside it.
            unsafe {
                if user - RECORD > old {
                    write_record(base, old, user - RECORD - old - RECORD, frame, PAD);
                }
                if data_end < old + need {
                    write_record(base, data_end, old + need - data_end - RECORD, frame, PAD);
                }
            }
            user
        };
        // SAFETY: `user - RECORD >= old` and `user + size <= old + need <=
        // cap`: the record and the block are inside this caller's
        // reservation.
        unsafe {
            let record = base.add(user - RECORD).cast::<Record>().as_ptr();
            // The size first, and the frame read after that store: the
            // store could be to `self` as far as the compiler knows, so
            // the frame is not loaded early and held (on armv7 the frame
            // and the state, stored as a pair, took two saved registers).
            (&raw mut (*record).size).write(size);
            (&raw mut (*record).frame).write(self.frame as u32);
            (&raw mut (*record).state).write(LIVE);
            base.add(user)
        }
    }

    /// Allocates `size` bytes aligned to `max(align, 16)`: from the pool, or
    /// from the overflow (counted) when the pool is full.
    #[inline(always)]
    pub fn alloc(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        match self.try_alloc(size, align) {
            Ok(p) => Ok(p),
            Err(AllocError::OutOfMemory { .. }) => self.alloc_overflow(size, align),
            Err(e) => Err(e),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_overflow(&self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let layout = crate::align::layout_for(size, align.max(Self::MIN_ALIGN))?;
        let mut overflow = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.overflow_limit.saturating_sub(overflow.bytes);
        if size > room {
            return Err(AllocError::OutOfMemory {
                requested: size,
                available: room,
            });
        }
        // SAFETY: `layout` has a non-zero size (checked by `try_alloc`).
        let ptr =
            NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or(AllocError::OutOfMemory {
                requested: size,
                available: 0,
            })?;
        // The heap may hand the address of a freed block out again: it is
        // live now, so freeing it is no longer a double free.
        if let Some(i) = overflow
            .recently_freed
            .iter()
            .position(|&a| a == ptr.as_ptr() as usize)
        {
            overflow.recently_freed.remove(i);
        }
        overflow.blocks.insert(
            ptr.as_ptr() as usize,
            OverflowBlock {
                ptr,
                layout,
                frame: self.frame,
                warned: false,
            },
        );
        overflow.bytes += size;
        overflow
            .by_age
            .push_back((self.frame, ptr.as_ptr() as usize));
        self.overflow_count.fetch_add(1, Ordering::Relaxed);
        Ok(ptr)
    }

    /// Frees a block.
    ///
    /// Errors (where detectable): [`AllocError::DoubleFree`] for a pool block
    /// already freed, or for one of the last 64 overflow blocks freed (unless
    /// the heap has handed its address out again);
    /// [`AllocError::ForeignPointer`] for a pointer that is neither a pool
    /// block nor a live overflow block.
    ///
    /// # Safety
    ///
    /// `ptr` came from this `TempJob` (or is a pointer outside its pool), and
    /// no other thread frees the same block at the same time.
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>) -> Result<(), AllocError> {
        let off = (ptr.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
        if off < self.capacity {
            if off < RECORD || !off.is_multiple_of(Self::MIN_ALIGN) {
                return Err(AllocError::ForeignPointer);
            }
            // SAFETY: `off - 16` is a 16-aligned offset inside the pool; for
            // a block of this pool it is the block's record, which only the
            // block's owner (the caller) writes after allocation.
            let record = unsafe { &mut *self.base.add(off - RECORD).cast::<Record>().as_ptr() };
            return match record.state {
                LIVE | WARNED => {
                    record.state = FREED;
                    Ok(())
                }
                FREED => Err(AllocError::DoubleFree),
                _ => Err(AllocError::ForeignPointer),
            };
        }
        let mut overflow = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        let Some(block) = overflow.blocks.remove(&(ptr.as_ptr() as usize)) else {
            return Err(
                if overflow.recently_freed.contains(&(ptr.as_ptr() as usize)) {
                    AllocError::DoubleFree
                } else {
                    AllocError::ForeignPointer
                },
            );
        };
        overflow.bytes -= block.layout.size();
        if overflow.recently_freed.len() == RECENT_FREES {
            overflow.recently_freed.pop_front();
        }
        overflow.recently_freed.push_back(ptr.as_ptr() as usize);
        drop(overflow);
        // SAFETY: the map held it, so it came from `std::alloc::alloc` with
        // this layout and is freed once (it left the map).
        unsafe { std::alloc::dealloc(ptr.as_ptr(), block.layout) };
        Ok(())
    }

    /// Ends the frame: advances the frame number and returns the blocks that
    /// just became overdue (older than [`MAX_AGE_FRAMES`](Self::MAX_AGE_FRAMES):
    /// a block made in frame `f` is reported by the end of frame that makes
    /// the frame number `f + 5`, once). When no pool block is live, the pool
    /// starts over at offset 0.
    ///
    /// `&mut self` means no allocation or free is in flight: the frame
    /// boundary is a synchronization point, as in Unity.
    pub fn end_frame(&mut self) -> Vec<Overdue> {
        self.frame += 1;
        let now = self.frame;
        let mut overdue = Vec::new();
        let mut visits = 0;
        let base = self.base;
        let limit = self.offset.load(Ordering::Relaxed).min(self.capacity);
        // What changed since the last end of frame: the blocks live then
        // (some freed since), and the records made since.
        let mut live = core::mem::take(&mut self.live_records);
        let mut check = |at: usize, r: &mut Record, keep: &mut Vec<usize>| {
            visits += 1;
            if matches!(r.state, LIVE | WARNED) {
                keep.push(at);
                let age = u64::from((now as u32).wrapping_sub(r.frame));
                if r.state == LIVE && age > Self::MAX_AGE_FRAMES {
                    r.state = WARNED;
                    overdue.push(Overdue {
                        address: base.as_ptr() as usize + at + RECORD,
                        size: r.size,
                        frame: now - age,
                        age,
                    });
                }
            }
        };
        let mut keep = Vec::with_capacity(live.len());
        for at in live.drain(..) {
            // SAFETY: `at` is the offset of a record that was live at the
            // last end of frame; the pool below `walked` was not reused since
            // (the offset only rolls back to the end of the last live block).
            let r = unsafe { &mut *base.add(at).cast::<Record>().as_ptr() };
            check(at, r, &mut keep);
        }
        let from = self.walked;
        self.walk_range(from, limit, |r, at| check(at, r, &mut keep));
        // Roll the pool back to the end of the last live block: everything
        // after it is free, so one long-lived block pins only itself (and
        // what was allocated before it), not the whole pool.
        let end = keep
            .iter()
            .map(|&at| {
                // SAFETY: a live record, as above.
                let r = unsafe { &*base.add(at).cast::<Record>().as_ptr() };
                at + RECORD + align_up(r.size, Self::MIN_ALIGN)
            })
            .max()
            .unwrap_or(0);
        // ORDERING: Relaxed: under `&mut self`, which orders every earlier
        // allocation and free before this reuse; whatever hands the
        // allocator to other threads again publishes the store.
        self.offset.store(end, Ordering::Relaxed);
        self.walked = end;
        self.live_records = keep;
        let mut overflow = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        // Overflow blocks in allocation order: only those reaching the age
        // limit now are looked at (each entry once).
        while let Some(&(frame, address)) = overflow.by_age.front() {
            if now - frame <= Self::MAX_AGE_FRAMES {
                break;
            }
            overflow.by_age.pop_front();
            visits += 1;
            if let Some(b) = overflow.blocks.get_mut(&address)
                && b.frame == frame
                && !b.warned
            {
                b.warned = true;
                overdue.push(Overdue {
                    address,
                    size: b.layout.size(),
                    frame: b.frame,
                    age: now - frame,
                });
            }
        }
        drop(overflow);
        overdue.sort_unstable_by_key(|o| o.address);
        for o in &overdue {
            match &self.overdue_hook {
                Some(h) => h(o),
                None => eprintln!("warning: {o}"),
            }
        }
        self.end_frame_visits = visits;
        overdue
    }

    /// Records and overflow entries the last [`end_frame`](Self::end_frame)
    /// looked at: the blocks live at the end of the frame before, the
    /// blocks made since, and the overflow blocks that reached the age
    /// limit; never the blocks freed long ago.
    pub fn end_frame_visits(&self) -> usize {
        self.end_frame_visits
    }

    /// Visits every block record of the pool at offsets `from..to` (`from`
    /// the start of a record) with the record's offset.
    fn walk_range(&mut self, from: usize, to: usize, mut visit: impl FnMut(&mut Record, usize)) {
        let mut at = from;
        while at < to {
            // SAFETY: `at` is a 16-aligned offset below `to <= capacity`
            // that starts a record: the chain starts at `from` (0, or the end
            // of a block) and every step below moves to the next record
            // written by a reservation that completed (`&mut self`: none is
            // in flight).
            let r = unsafe { &mut *self.base.add(at).cast::<Record>().as_ptr() };
            match r.state {
                PAD => at += RECORD + r.size,
                END => break,
                LIVE | WARNED | FREED => {
                    let size = r.size;
                    visit(r, at);
                    at += RECORD + align_up(size, Self::MIN_ALIGN);
                }
                other => {
                    debug_assert!(
                        false,
                        "TempJob: corrupt record {other:#x} at pool offset {at}"
                    );
                    break;
                }
            }
        }
    }

    /// Visits every block record of the pool (not the padding) with the
    /// block's address.
    fn walk(&mut self, mut visit: impl FnMut(&mut Record, usize)) {
        let limit = self.offset.load(Ordering::Relaxed).min(self.capacity);
        let base = self.base.as_ptr() as usize;
        self.walk_range(0, limit, |r, at| visit(r, base + at + RECORD));
    }

    /// What a drop would report now: every live block, pool and overflow.
    pub fn leaks(&mut self) -> LeakReport {
        let now = self.frame;
        let mut leaks = Vec::new();
        self.walk(|r, address| {
            if matches!(r.state, LIVE | WARNED) {
                let age = u64::from((now as u32).wrapping_sub(r.frame));
                leaks.push(Leak {
                    address,
                    size: r.size,
                    frame: now - age,
                });
            }
        });
        let overflow = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        for (&address, b) in &overflow.blocks {
            leaks.push(Leak {
                address,
                size: b.layout.size(),
                frame: b.frame,
            });
        }
        leaks.sort_unstable_by_key(|l| l.address);
        LeakReport {
            allocator: "TempJob",
            allocations: leaks.len(),
            bytes: leaks.iter().map(|l| l.size).sum(),
            leaks,
        }
    }

    /// The current frame number (0 until the first [`end_frame`](Self::end_frame)).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Bytes of the pool reserved so far (records and padding included).
    pub fn used(&self) -> usize {
        self.offset.load(Ordering::Relaxed).min(self.capacity)
    }

    /// Usable bytes of the pool.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Requests served by the overflow since construction.
    pub fn overflow_count(&self) -> usize {
        self.overflow_count.load(Ordering::Relaxed)
    }

    /// Whether `ptr` lies inside the pool.
    pub fn owns(&self, ptr: *const u8) -> bool {
        (ptr as usize).wrapping_sub(self.base.as_ptr() as usize) < self.capacity
    }
}

impl Drop for TempJob {
    fn drop(&mut self) {
        let report = self.leaks();
        report_leaks(self.leak_hook.as_ref(), &report);
        let mut overflow = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        for (_, b) in overflow.blocks.drain() {
            // SAFETY: every map entry is a live block from
            // `std::alloc::alloc(b.layout)`; the map is emptied here.
            unsafe { std::alloc::dealloc(b.ptr.as_ptr(), b.layout) };
        }
        // SAFETY: `base`/`mapped` are exactly the mapping made in `new`,
        // released once, here.
        unsafe { PageAllocator::new().dealloc(self.base, self.mapped) };
    }
}

impl fmt::Debug for TempJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TempJob")
            .field("base", &self.base)
            .field("capacity", &self.capacity)
            .field("used", &self.used())
            .field("frame", &self.frame)
            .field("overflow_count", &self.overflow_count())
            .finish()
    }
}

// SAFETY: a successful `allocate` hands out at least `layout.size()` bytes of
// the current frame's buffer, aligned, disjoint from every other live block,
// valid until its frame is recycled by `end_frame` (`&mut self`) or drop.
unsafe impl RawAllocator for TempJob {
    /// Pool bytes come back only when the whole pool is free at an end of
    /// frame.
    const FREES_INDIVIDUALLY: bool = false;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.alloc(layout.size(), layout.align())?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: the caller guarantees `ptr` is a live block of this
        // allocator.
        let r = unsafe { self.dealloc(ptr) };
        debug_assert!(r.is_ok(), "TempJob::deallocate({ptr:p}): {r:?}");
    }
}

// SAFETY: blocks from `alloc` are disjoint, live until freed, at least
// `layout.size()` bytes aligned to `layout.align()`; zero-size layouts get a
// dangling aligned pointer and are not freed. Copies of `&TempJob` are the
// same allocator.
crate::api04::allocator_api04! {
    impl [] &TempJob { frees }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A compare-and-swap reservation that finds no room returns `None` and
    /// leaves the offset it saw for the caller's error; one that fits
    /// places the block and its record (the path 32-bit targets take for
    /// large requests, called directly here on every target).
    #[test]
    fn a_refused_compare_and_swap_leaves_the_offset_it_saw() {
        let job = TempJob::new(4096).unwrap().on_leak(|_| {});
        let first = job.try_alloc(1000, 16).unwrap();
        let used = job.used();
        assert_eq!(used, header_and_block(1000));
        CAS_REFUSED_AT.set(usize::MAX);
        let need = header_and_block(4000);
        assert_eq!(job.try_alloc_cas(4000, 16, need), None);
        assert_eq!(CAS_REFUSED_AT.get(), used);
        assert_eq!(job.used(), used, "a refusal takes nothing");
        let need = header_and_block(2000);
        let p = job.try_alloc_cas(2000, 16, need).unwrap();
        assert_eq!(p.as_ptr() as usize, first.as_ptr() as usize + used);
        assert_eq!(job.used(), used + need);
        // SAFETY: both came from `job`, freed once each.
        unsafe {
            job.dealloc(first).unwrap();
            job.dealloc(p).unwrap();
        }
    }

    /// The size TempJob's add reserves is the record and the size rounded
    /// up to 16.
    #[test]
    fn a_block_takes_its_record_and_its_size_rounded_up() {
        for size in [1, 15, 16, 17, 31, 32, 33, 4095, 4096] {
            assert_eq!(header_and_block(size), RECORD + align_up(size, 16));
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::{END, Record, TempJob};
    use crate::AllocError;
    use crate::sync::Ordering;
    use loom::sync::Arc;

    /// A pool of `capacity` bytes (no overflow) and what two threads' 16-byte
    /// `try_alloc`s at once got (as addresses).
    #[allow(clippy::type_complexity)]
    fn two_allocate_at_once(
        capacity: usize,
    ) -> (
        Arc<TempJob>,
        Result<usize, AllocError>,
        Result<usize, AllocError>,
    ) {
        let job = Arc::new(
            TempJob::new(capacity)
                .unwrap()
                .with_overflow_limit(0)
                .on_leak(|_| {}),
        );
        let j2 = Arc::clone(&job);
        let t = loom::thread::spawn(move || j2.try_alloc(16, 16).map(|p| p.as_ptr() as usize));
        let a = job.try_alloc(16, 16).map(|p| p.as_ptr() as usize);
        let b = t.join().unwrap();
        (job, a, b)
    }

    /// Both threads pass the pre-check of a pool with room for one block;
    /// whichever adds second goes past the end. It gets the room the pool
    /// had left, and, its reservation straddling the end, leaves an `END`
    /// record there, so the walk of the pool stops at it (the unwritten
    /// record behind it would be corrupt).
    #[test]
    fn loom_the_thread_that_overshoots_marks_the_end() {
        loom::model(|| {
            let (job, a, b) = two_allocate_at_once(48);
            let (served, refused) = match (a, b) {
                (Ok(p), Err(e)) | (Err(e), Ok(p)) => (p, e),
                other => panic!("one block fits, not two or none: {other:?}"),
            };
            assert_eq!(
                refused,
                AllocError::OutOfMemory {
                    requested: 16,
                    available: 16
                }
            );
            let mut job = Arc::try_unwrap(job).ok().unwrap();
            if job.offset.load(Ordering::Relaxed) > 48 {
                // The second add went past the end, from offset 32.
                // SAFETY: offset 32 is inside the pool; no access is in
                // flight (`job` is owned here).
                let r = unsafe { &*job.base.add(32).cast::<Record>().as_ptr() };
                assert_eq!(r.state, END, "the straddling reservation marks the end");
            }
            assert_eq!(job.leaks().allocations, 1, "the walk stops at END");
            let p = core::ptr::NonNull::new(served as *mut u8).unwrap();
            // SAFETY: a live block of `job`, freed once.
            assert_eq!(unsafe { job.dealloc(p) }, Ok(()));
        });
    }

    /// Two threads bump the shared offset at once: distinct blocks, each
    /// record intact, and a third request that no longer fits is refused.
    #[test]
    fn loom_two_threads_share_the_pool() {
        loom::model(|| {
            let (job, a, b) = two_allocate_at_once(64);
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_ne!(a, b);
            assert!(job.try_alloc(16, 16).is_err());
            for p in [a, b] {
                let p = core::ptr::NonNull::new(p as *mut u8).unwrap();
                // SAFETY: both are live blocks of `job`, freed once each.
                assert_eq!(unsafe { job.dealloc(p) }, Ok(()));
            }
        });
    }
}
