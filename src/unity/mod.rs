//! Unity's lifetime allocators (reference 002): one allocator per lifetime.
//!
//! | type | lifetime | freed | thread-safe | minimum alignment |
//! | --- | --- | --- | --- | --- |
//! | [`Temp`] | a frame or a job scope | whole, at [`Temp::end_frame`] / end of [`Temp::scope`]; a single free is a no-op | no (`!Sync`, one per thread) | 64 |
//! | [`TempJob`] | within 4 frames of creation | each allocation, explicitly; overdue ones are reported at [`TempJob::end_frame`] | yes | 16 |
//! | [`Persistent`] | indefinite | each allocation, explicitly | as its base | 16 |
//! | [`Rewindable`] | until [`Rewindable::rewind`] | everything at once | yes | 64 |
//!
//! Fallbacks follow Unity: a full [`Temp`] falls back to its fallback
//! allocator (a [`TempJob`] on the main thread), a full [`TempJob`] pool
//! overflows into the system heap (`malloc`); both fallbacks are counted.
//!
//! Leak detection follows Unity's native leak detection: [`TempJob`] and
//! [`Persistent`] report the allocations still live when they are dropped as
//! a [`LeakReport`], printed to stderr unless a hook was installed with
//! `on_leak` (tests use the hook to observe it). [`Persistent`]'s counting
//! can be switched off ([`LeakDetection`]), and is off by default in a
//! release build, as Unity's is in a player build.

use core::fmt;
use core::ptr::NonNull;

use crate::sync::{AtomicUsize, Ordering};

mod persistent;
mod rewindable;
mod temp;
mod temp_job;

pub use persistent::Persistent;
pub use rewindable::{Rewindable, RewindableHandle};
pub use temp::Temp;
pub use temp_job::{Overdue, OverdueHook, TempJob};

/// Whether an allocator counts its live blocks to report leaks when it is
/// dropped: Unity's `NativeLeakDetectionMode` (less its stack-trace mode),
/// taken by [`Persistent::with_leak_detection`].
///
/// Counting is not free: [`Persistent`] counts with two shared atomic
/// read-modify-writes per allocation and two per free, several times the
/// cost of a `SegregatedFit` fast path on its own. Unity counts in the
/// editor and not in a player build; here the default follows the build in
/// the same way: [`Enabled`](Self::Enabled) with debug assertions (a debug
/// build, `cargo test`), [`Disabled`](Self::Disabled) without (a release
/// build). Name the mode to get the same behaviour in both.
///
/// ```
/// use allocasm::LeakDetection;
/// let expected = if cfg!(debug_assertions) {
///     LeakDetection::Enabled
/// } else {
///     LeakDetection::Disabled
/// };
/// assert_eq!(LeakDetection::default(), expected);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeakDetection {
    /// Count nothing and report nothing: the base allocator's fast path
    /// plus one predictable test.
    Disabled,
    /// Count live blocks and bytes, and report what is still live on drop.
    Enabled,
}

impl Default for LeakDetection {
    /// [`Enabled`](Self::Enabled) with debug assertions, else
    /// [`Disabled`](Self::Disabled).
    fn default() -> Self {
        if cfg!(debug_assertions) {
            LeakDetection::Enabled
        } else {
            LeakDetection::Disabled
        }
    }
}

/// One allocation that was still live when its allocator was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Leak {
    /// Address of the block, as an integer (the block is never freed).
    pub address: usize,
    /// Size in bytes, as requested.
    pub size: usize,
    /// The frame it was allocated in (0 where the allocator has no frames).
    pub frame: u64,
}

/// What an allocator found still live when it was dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeakReport {
    /// The allocator's name (`"TempJob"`, `"Persistent"`).
    pub allocator: &'static str,
    /// Number of live allocations.
    pub allocations: usize,
    /// Live bytes, as requested.
    pub bytes: usize,
    /// Each leaked block, where the allocator tracks them individually
    /// ([`TempJob`] does; [`Persistent`] only counts, so this is empty).
    pub leaks: Vec<Leak>,
}

impl fmt::Display for LeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} allocation(s), {} byte(s) leaked (still live when the allocator was dropped)",
            self.allocator, self.allocations, self.bytes
        )?;
        for l in &self.leaks {
            write!(
                f,
                "\n  {:#x}: {} bytes, allocated in frame {}",
                l.address, l.size, l.frame
            )?;
        }
        Ok(())
    }
}

/// Receives the [`LeakReport`] of an allocator that is dropped with live
/// allocations (instead of the default: printing it to stderr).
pub type LeakHook = Box<dyn Fn(&LeakReport) + Send + Sync>;

/// Delivers a non-empty report: to the hook if there is one, else to stderr.
fn report_leaks(hook: Option<&LeakHook>, report: &LeakReport) {
    if report.allocations == 0 {
        return;
    }
    match hook {
        Some(h) => h(report),
        None => eprintln!("{report}"),
    }
}

/// Largest capacity (block, pool or buffer) the atomic allocators accept.
///
/// A failed `fetch_add` leaves its increment on the offset. Two things bound
/// that overshoot: a pre-check (a relaxed load of the offset) refuses a
/// request before it touches the offset when the allocator is already full,
/// so sequential failures never move it; and only the at most
/// [`MAX_ENTRANTS`] threads already past their pre-check can push it beyond
/// the capacity, each by one reservation of at most [`MAX_FAST_RESERVE`]
/// bytes (larger reservations take a compare-and-swap, which never
/// overshoots). So the offset stays below `capacity + MAX_ENTRANTS *
/// MAX_FAST_RESERVE`, which must not wrap.
///
/// On 64-bit targets this is `usize::MAX / (MAX_ENTRANTS + 2)` (16 PiB, more
/// than any address space) and every reservation takes the `fetch_add`. On
/// 32-bit targets it is 1 GiB, so Unity's default sizes (64 MiB pools and
/// blocks) can be made there too; the fast path then serves reservations up
/// to [`MAX_FAST_RESERVE`] (2.94 MiB) with the `fetch_add`.
pub const MAX_CAPACITY: usize = if usize::BITS >= 64 {
    usize::MAX / (MAX_ENTRANTS + 2)
} else {
    1 << (usize::BITS - 2)
};

/// Largest reservation the atomic fast paths make with an unconditional
/// `fetch_add`; larger ones (only on 32-bit targets, where this is below
/// [`MAX_CAPACITY`]) reserve with a compare-and-swap loop instead. See
/// [`MAX_CAPACITY`] for the bound this keeps.
///
/// On 32-bit targets it is rounded down to a multiple of 64 KiB (2.94 MiB):
/// the constant is then `0x2f << 16`, which 32-bit Arm's compare takes as
/// an immediate, so the test needs no register on the fast path.
pub const MAX_FAST_RESERVE: usize = if usize::BITS >= 64 {
    MAX_CAPACITY
} else {
    ((usize::MAX - MAX_CAPACITY) / (MAX_ENTRANTS + 1)) & !0xffff
};

/// Whether a reservation of `need` bytes must take the compare-and-swap
/// (never true on 64-bit targets, where the compiler drops the test).
#[inline(always)]
pub(crate) const fn needs_cas(need: usize) -> bool {
    usize::BITS < 64 && need > MAX_FAST_RESERVE
}

/// What a reservation returns (Rewindable's compare-and-swap path,
/// TempJob's whole fast path): the block, or `None` and the offset it last
/// saw (for the error's `available`). Two scalars, so it comes back in two
/// registers; a 32-byte `Result<_, AllocError>` comes back through memory,
/// which put a stack adjustment and stack slots on 32-bit Arm's fast path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reserved {
    /// The block; `None` when the pool or block had no room.
    pub(crate) ptr: Option<NonNull<u8>>,
    /// The offset the refusal saw (meaningless when `ptr` is `Some`).
    pub(crate) seen: usize,
}

/// Reserves `need` bytes of the range `offset` counts in, below `cap`, with
/// a compare-and-swap loop that never overshoots (the 32-bit targets' path
/// for reservations above [`MAX_FAST_RESERVE`]): the reservation's start, or
/// the offset that left no room. `need <= cap`.
#[inline(always)]
pub(crate) fn reserve_cas(offset: &AtomicUsize, cap: usize, need: usize) -> Result<usize, usize> {
    // ORDERING: Relaxed, as the fast paths' fetch_add: the reservation is a
    // range of offsets, it publishes no data.
    let mut seen = offset.load(Ordering::Relaxed);
    loop {
        if seen > cap - need {
            return Err(seen);
        }
        match offset.compare_exchange_weak(seen, seen + need, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(old) => return Ok(old),
            Err(now) => seen = now,
        }
    }
}

/// Threads that may be inside one atomic fast path at the same moment
/// (the write-up's `C`): the bound behind [`MAX_CAPACITY`].
pub const MAX_ENTRANTS: usize = 1024;

const _: () = assert!(MAX_CAPACITY <= usize::MAX - MAX_ENTRANTS * MAX_FAST_RESERVE);
