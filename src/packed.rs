//! `PackedArena`: the write-up's packed-cursor arena.
//!
//! **Contract.** A thread-safe (`Send + Sync`) bump arena for allocations
//! that share a lifetime. Any thread allocates through `&self`; any thread
//! may give an allocation back with [`dealloc(ptr, size)`](PackedArena::dealloc)
//! passing the size it asked for, exactly once. Freed bytes are not reused
//! one by one: a block's bytes come back when *every* allocation in it has
//! been freed (its allocated-byte counter reaches zero), and then the block
//! is recycled into the rotation ([`DrainPolicy::Recycle`], the default) or
//! decommitted ([`DrainPolicy::Evict`]). [`reset`](PackedArena::reset)
//! (`&mut self`) empties the whole arena at once.
//!
//! **Fast path** ([`alloc`](PackedArena::alloc)). One compare rejects a
//! zero or over-large request; the size is aligned up to 16; then ONE
//! `fetch_add(Acquire)` on the cursor word ([`alloc_relaxed`](PackedArena::alloc_relaxed):
//! the write-up's `Relaxed`), a decode of the word it returned
//! (block index in bits 63..57, size factor in 56..55, position in 54..0,
//! see [`PackedArena::POSITION_BITS`] and friends), a fit check
//! `position + size <= stride`, and
//! `base + (block << stride_log2) + position`. No loop, no other shared
//! mutable state: `base`, the stride, `M` and `stride_log2` are read-only
//! after construction and sit together on the cache line after the
//! cursor's.
//!
//! **Blocks end at their slot's end.** Slot `i` of the reservation is
//! `stride` bytes at `base + (i << stride_log2)`; a block of size factor
//! `f` holds `block_size << f` bytes and is the *last* bytes of its slot, so
//! its positions start at `stride - (block_size << f)` and the fit check's
//! bound is the stride for every factor. The fast path never decodes the
//! factor: on an Intel Xeon the variable shift by it, dependent on the
//! locked add's result, cost about a tenth of the allocation
//! (docs/packed-x86.md). [`snapshot`](PackedArena::snapshot) reports
//! positions from the block's first byte. One atomic read-modify-write per allocation (`lock xadd` on
//! x86-64 for every ordering; `ldadda` / `ldadd` / `ldaddal` for Acquire /
//! Relaxed / SeqCst with LSE or on Apple silicon; `__aarch64_ldadd8_acq`
//! etc. with outline atomics; on 32-bit Arm, which has no atomic add, an
//! `ldrexd`/`strexd` retry loop written to fit its five scratch registers,
//! and a fit check on the word's 32-bit halves with the capacity loaded by
//! factor). The fast and slow paths return an `Attempt`
//! (the pointer and a one-word refusal) in two registers; the detailed
//! [`AllocError`] is built by the caller only when it asks for it, so the
//! hot path has no stack access and no frame (see the probes' listings).
//! [`dealloc`](PackedArena::dealloc) is one `fetch_sub(Release)` on the
//! block's counter.
//!
//! **Slow path** (`#[cold] #[inline(never)]`). Under the capacity lock: if no
//! other thread rotated since this thread's failed add, take a free block
//! (a recycled one, else a fresh slot), commit its pages, swap the cursor to
//! it with the caller's bytes already reserved at position 0, and add the
//! old block's final position (failed reservations included) to the old
//! block's counter. Every failed reservation is then unwound: subtracted from
//! its block's counter, or, when no free block remains and the position has
//! reached the limit `L`, removed from the cursor itself.
//!
//! **The overshoot envelope (a documented ceiling).** A failed `fetch_add`
//! still moved the position. Let `P = 2^55` (one past the largest position),
//! `C` the maximum number of concurrent entrants ([`PackedConfig::max_entrants`],
//! default 1024) and `M` the maximum aligned request
//! ([`PackedConfig::max_request`]); `L = P - C*M`. A request larger than `M`
//! is refused before it touches the cursor; at most `C` increments of at most
//! `M` can be outstanding above the limit, so the position stays below `P`
//! and never carries into the factor or block bits. **More than `C` threads
//! inside `alloc` at once is outside the contract and can corrupt the
//! cursor**; debug builds count entrants and refuse past `C` ([`AllocError::TooManyEntrants`]).
//!
//! **Memory ordering.** The safe entry points are free of data races: a
//! *recycled* block was last written by the threads that freed into it;
//! their `fetch_sub(Release)`s are acquired (a fence) by the thread whose
//! free drained the block, which releases the capacity lock; the rotating
//! thread takes the lock and publishes the block with a release swap of the
//! cursor; [`alloc`](PackedArena::alloc)'s `Acquire` add reads that swap (or
//! a later add in its release sequence), so the old owners' accesses happen
//! before the new owner's (a loom model checks it, and shows the race with
//! `Relaxed`). The write-up's `Relaxed` add is
//! [`alloc_relaxed`](PackedArena::alloc_relaxed), `unsafe`, whose caller
//! guarantees that ordering some other way (for example by never freeing
//! before `reset`, as [`ThreadCursorArena`](crate::ThreadCursorArena)
//! does); it relies otherwise on the address dependency (C++'s `consume`),
//! which CPUs honour but the Rust model does not. On x86-64 all three are
//! the same `lock xadd`. [`alloc_seqcst`](PackedArena::alloc_seqcst) is
//! the suite's third contrast.
//!
//! **Costs.** 8 bytes of hot mutable state (the cursor, on its own cache
//! line) and one line of read-only state; per block one padded counter and
//! one capacity word; one reservation of `max_blocks * stride` bytes of
//! address space (`stride = max(block_size << f, page)`, `f` the smallest
//! factor whose block holds `M`), committed block by block from the slot's end. Oversized requests strand the tail of
//! the block they rotate away from; realloc only shrinks in place;
//! [`owns`](PackedArena::owns) is O(blocks). Failure modes:
//! [`AllocError::ZeroSize`], [`AllocError::TooLarge`] (`size > M`),
//! [`AllocError::OutOfMemory`] (all `max_blocks` blocks in use),
//! [`AllocError::Os`] (commit refused); a bad [`PackedConfig`] is
//! [`AllocError::InvalidConfig`] naming its field.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, AtomicUsize, Mutex, Ordering, fence};
use crate::{AllocError, ConfigField, RawAllocator, align_up, sys};

/// What happens to a block whose every allocation has been freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DrainPolicy {
    /// Keep its pages committed and put it back into the rotation (warm).
    #[default]
    Recycle,
    /// Decommit its pages (give them back to the OS); the slot is
    /// recommitted if it is installed again.
    Evict,
}

/// Construction parameters of a [`PackedArena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedConfig {
    /// Capacity of a block at size factor 0, in bytes: a power of two, at
    /// least 16. A block installed with factor `f` holds `block_size << f`.
    pub block_size: usize,
    /// How many blocks may be in use at once: 1..=128 (7 index bits).
    pub max_blocks: usize,
    /// `M`: the largest request, rounded up to 16; at most `block_size << 3`.
    pub max_request: usize,
    /// `C`: the most threads that may be inside `alloc` at once (default
    /// 1024). Exceeding it is outside the contract (see the module docs).
    pub max_entrants: usize,
    /// What a drained block becomes.
    pub policy: DrainPolicy,
}

impl PackedConfig {
    /// Defaults for a block size: 128 blocks, `M = block_size`, `C = 1024`,
    /// [`DrainPolicy::Recycle`].
    pub const fn new(block_size: usize) -> Self {
        PackedConfig {
            block_size,
            max_blocks: 128,
            max_request: block_size,
            max_entrants: 1024,
            policy: DrainPolicy::Recycle,
        }
    }
}

impl Default for PackedConfig {
    /// 64 KiB blocks and the defaults of [`PackedConfig::new`].
    fn default() -> Self {
        PackedConfig::new(64 * 1024)
    }
}

/// A decoded snapshot of the cursor word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CursorSnapshot {
    /// Block index (bits 63..57).
    pub block: usize,
    /// Size factor (bits 56..55).
    pub factor: u32,
    /// Position, counted from the block's first byte (the word's bits
    /// 54..0 count from its slot's: a block ends where its slot ends); past
    /// the block's capacity once it is full.
    pub position: u64,
}

/// Counters of the capacity side (all taken under the capacity lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PackedStats {
    /// Blocks installed as current (including the first one).
    pub installs: u64,
    /// Drained blocks put back into the rotation.
    pub recycled: u64,
    /// Drained blocks decommitted.
    pub evicted: u64,
    /// Blocks currently in use (current or still holding allocations).
    pub blocks_in_use: usize,
}

/// State behind the capacity lock: which slots are free, what is committed.
#[derive(Debug)]
struct Capacity {
    /// Drained slots ready to install (their pages may still be committed).
    free: Vec<usize>,
    /// Slots `next_fresh..max_blocks` have never been installed.
    next_fresh: usize,
    /// Committed bytes per slot (a multiple of the page size, <= stride).
    committed: Vec<usize>,
    installs: u64,
    recycled: u64,
    evicted: u64,
    /// Bytes of failed reservations settled while the current block was
    /// current: losers on an exhausted arena (or one whose OS refused a
    /// new block) whose increments stay in the cursor below `L`. The
    /// rotation takes them off the final position it adds to the block's
    /// counter, and clears this. Kept here, not in the counter: up to `L`
    /// of them accumulate while the arena is exhausted (about 2^55 bytes),
    /// more than a word holds on 32-bit targets, and the counter's value
    /// must never pass through zero on the way (see [`Hot::counters`]).
    failed: u64,
}

/// The packed-cursor arena: one `AtomicU64` cursor (block index in bits
/// 63..57, size factor in 56..55, position in 54..0); an allocation is one
/// `fetch_add`, a decode and a fit check. Sized frees feed per-block
/// counters; a block whose counter reaches zero is recycled or evicted.
///
/// **Ceiling.** At most [`PackedConfig::max_entrants`] (`C`) threads may be
/// inside `alloc` at once and no request may exceed `M`
/// ([`PackedConfig::max_request`]): then the overshoot of a full block stays
/// below `P = 2^55` (the limit `L = P - C*M` is [`PackedArena::limit`]).
/// More entrants can corrupt the cursor; debug builds refuse an entrant past `C` with
/// [`AllocError::TooManyEntrants`], before touching the cursor.
///
/// **Ordering.** [`alloc`](PackedArena::alloc) adds with `Acquire`, which
/// orders a *recycled* block's previous users before its new one;
/// [`alloc_relaxed`](PackedArena::alloc_relaxed) is the write-up's relaxed
/// add under a caller's contract. [`owns`](PackedArena::owns) is
/// O(blocks). `Send + Sync`.
///
/// **Layout** (`repr(C)`, checked by a test): the cursor alone on the
/// first cache line, the read-only fast-path state on the second, the
/// capacity lock and everything the slow path writes after them.
///
/// ```
/// use allocasm::PackedArena;
/// use std::sync::Arc;
///
/// let arena = Arc::new(PackedArena::new(64 << 10).unwrap());
/// let handles: Vec<_> = (0..4)
///     .map(|t| {
///         let arena = arena.clone();
///         std::thread::spawn(move || {
///             let p = arena.alloc(48).unwrap();
///             // SAFETY: 48 bytes of ours.
///             unsafe { p.as_ptr().write_bytes(t as u8, 48) };
///             // SAFETY: allocated above with 48 bytes, freed once.
///             unsafe { arena.dealloc(p, 48) };
///         })
///     })
///     .collect();
/// for h in handles {
///     h.join().unwrap();
/// }
/// assert!(arena.reserved_bytes() >= 64 << 10);
/// ```
#[repr(C)]
pub struct PackedArena {
    /// The one hot word: block index, size factor, position (see
    /// [`PackedArena::POSITION_BITS`]). Invariant: the block it names is
    /// installed (its `caps` entry is its capacity) and the position is below
    /// `P`; positions at or below the capacity were handed out in order.
    /// Alone on its cache line (`repr(C)`, padded): every allocation writes it.
    cursor: CachePadded<AtomicU64>,
    /// What the fast paths read besides the cursor, on the next line:
    /// written only by the constructor, so allocating cores keep it shared.
    hot: HotLine<Hot>,
    /// Per slot: capacity of the installed incarnation, 0 when the slot is
    /// free. Written under the capacity lock; read by `owns`/`try_dealloc`.
    caps: Box<[AtomicU64]>,
    capacity: Mutex<Capacity>,
    config: PackedConfig,
    /// Bytes reserved at `base`.
    reservation_len: usize,
    /// `L = P - C*M`: past it, a losing allocation on an exhausted arena
    /// removes its increment from the cursor. Read-only; only the slow path
    /// reads it, so it is not on the hot line.
    limit: u64,
    /// Threads inside `alloc` now (debug builds only), checked against `C`.
    #[cfg(debug_assertions)]
    entrants: AtomicUsize,
}

/// What [`Hot`] is padded to: `CachePadded`'s line on 64-bit targets (128
/// bytes on x86-64 and arm64, where the prefetcher pulls pairs of lines, 64
/// on riscv64). On 32-bit targets `CachePadded` is 32 bytes (32-bit Arm's
/// smallest line) and `Hot` carries the capacity per factor there (16
/// bytes), so it is 64-byte aligned and padded instead: one line of the
/// 64-byte-line cores (Cortex-A7, A15, A17, A53 and later in AArch32), two
/// lines of a 32-byte-line core, which nothing else shares either way.
#[cfg(target_pointer_width = "64")]
type HotLine<T> = CachePadded<T>;

/// See the 64-bit definition.
#[cfg(not(target_pointer_width = "64"))]
#[derive(Debug)]
#[repr(align(64))]
struct HotLine<T>(T);

#[cfg(not(target_pointer_width = "64"))]
impl<T> HotLine<T> {
    const fn new(t: T) -> Self {
        HotLine(t)
    }
}

#[cfg(not(target_pointer_width = "64"))]
impl<T> core::ops::Deref for HotLine<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The read-only hot state of a [`PackedArena`]: everything `alloc` and
/// `dealloc` read besides the cursor. Nothing writes it after construction,
/// so it stays in every allocating core's cache; the layout test checks it
/// fits one 64-byte line, padded ([`HotLine`]) so that nothing else shares it.
#[derive(Debug)]
struct Hot {
    /// Start of the reservation: slot `i` begins at `base + (i << stride_log2)`.
    base: NonNull<u8>,
    /// The stride (`1 << stride_log2`): the fit check's bound. A block sits
    /// at the end of its slot, its first byte at position `stride -
    /// capacity`, so every block of every size factor ends where the slot
    /// ends and the fit check is `position + size <= stride`, with no
    /// factor in it.
    end: usize,
    /// `M`, a multiple of 16.
    max_request: usize,
    /// Per slot: allocated bytes minus freed bytes, wrapping. Before the
    /// block is rotated out only frees subtract (the value is 0 or
    /// "negative", down to minus the block's capacity); the rotation adds
    /// the final position net of the failures settled meanwhile
    /// (`Capacity::failed`), after which the value reaches zero exactly
    /// once, when the last byte is accounted for. A word, not 64 bits: its
    /// true value stays within minus the capacity and the capacity plus
    /// `C * M` (the failed reservations of the threads inside `alloc` at
    /// the rotation, settled after it), which `with_config` keeps below
    /// 2^32 on 32-bit targets, so the wrapped word is zero only when the
    /// true value is. (On ARMv7 a word is what the free's `ldrex`/`strex`
    /// loop can subtract from in the five registers that need no saving,
    /// with `self` held for the drain's call; a 64-bit pair needs six.)
    /// The box is read-only; each counter has its own line.
    counters: Box<[CachePadded<AtomicUsize>]>,
    /// log2 of the distance between slots (`max(block_size << f, page)` for
    /// the largest factor `f` a request up to `M` needs).
    stride_log2: u32,
    /// Bytes reserved at `base`: the slots' count times the stride. The
    /// free's range check compares a pointer's offset with it before the
    /// shift, so the slot index is computed only for a pointer in range (on
    /// ARMv7 the check on the index held a sixth value).
    reserved: usize,
}

/// Why an allocation was refused, in one word. With the pointer it makes an
/// [`Attempt`], the fast and slow paths' answer.
///
/// Encoding: an OS error code as itself; the three other refusals as the
/// three most negative words (no OS reports those as error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Refusal(isize);

/// What the fast and slow paths return: the block, or `None` and why. Two
/// scalars, so it comes back in two registers (a 32-byte
/// `Result<_, AllocError>` comes back through memory, and the inlined fast
/// path then merges its own result through the stack too), and a caller
/// that only wants the pointer reads the first one as it is: no tag to
/// test. The caller builds the detailed [`AllocError`] with
/// [`PackedArena::describe`], off the hot path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempt {
    /// The allocation; `None` when refused.
    pub(crate) ptr: Option<NonNull<u8>>,
    /// Why it was refused (meaningless when `ptr` is `Some`).
    pub(crate) why: Refusal,
}

impl Attempt {
    #[inline(always)]
    pub(crate) const fn ok(p: NonNull<u8>) -> Attempt {
        Attempt {
            ptr: Some(p),
            why: Refusal::OUT_OF_MEMORY,
        }
    }

    #[inline(always)]
    pub(crate) const fn refused(why: Refusal) -> Attempt {
        Attempt { ptr: None, why }
    }
}

impl Refusal {
    /// A zero-byte request.
    pub(crate) const ZERO_SIZE: Refusal = Refusal(isize::MIN);
    /// Above `M`.
    pub(crate) const TOO_LARGE: Refusal = Refusal(isize::MIN + 1);
    /// Every block is in use.
    pub(crate) const OUT_OF_MEMORY: Refusal = Refusal(isize::MIN + 2);
    /// More than `max_entrants` threads inside at once (debug builds).
    pub(crate) const TOO_MANY_ENTRANTS: Refusal = Refusal(isize::MIN + 3);

    fn from_error(e: AllocError) -> Refusal {
        match e {
            AllocError::Os { code } => Refusal(code as isize),
            AllocError::ZeroSize => Refusal::ZERO_SIZE,
            AllocError::TooLarge { .. } => Refusal::TOO_LARGE,
            _ => Refusal::OUT_OF_MEMORY,
        }
    }
}

// SAFETY: the raw `base` pointer names memory the arena owns; all shared
// mutation goes through atomics or the capacity mutex, and handing out
// disjoint ranges to different threads is the arena's purpose.
unsafe impl Send for PackedArena {}
// SAFETY: as above: `&PackedArena` only exposes atomic or locked state.
unsafe impl Sync for PackedArena {}

impl core::fmt::Debug for PackedArena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PackedArena")
            .field("cursor", &self.snapshot())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// `P`: one past the largest position.
const P: u64 = 1 << PackedArena::POSITION_BITS;
const POSITION_MASK: u64 = P - 1;
const FACTOR_MASK: u64 = (1 << PackedArena::FACTOR_BITS) - 1;
const FACTOR_SHIFT: u32 = PackedArena::POSITION_BITS;
const BLOCK_SHIFT: u32 = PackedArena::POSITION_BITS + PackedArena::FACTOR_BITS;
const MAX_FACTOR: u32 = (1 << PackedArena::FACTOR_BITS) - 1;
/// Every block position and every reserved size is a multiple of this.
const GRAIN: usize = 16;

const _: () =
    assert!(PackedArena::BLOCK_BITS + PackedArena::FACTOR_BITS + PackedArena::POSITION_BITS == 64);

#[inline(always)]
const fn encode(block: usize, factor: u32, position: u64) -> u64 {
    ((block as u64) << BLOCK_SHIFT) | ((factor as u64) << FACTOR_SHIFT) | position
}

/// The bits that name a block incarnation (index and factor).
#[inline(always)]
const fn block_bits(word: u64) -> u64 {
    word >> FACTOR_SHIFT
}

#[inline(always)]
const fn decode(word: u64) -> CursorSnapshot {
    CursorSnapshot {
        block: (word >> BLOCK_SHIFT) as usize,
        factor: ((word >> FACTOR_SHIFT) & FACTOR_MASK) as u32,
        position: word & POSITION_MASK,
    }
}

/// The fast path's fit check: `position + size <= stride` for the word
/// `seen` a `fetch_add` of `size` (a multiple of 16, at most `M`) returned.
/// Blocks sit at the end of their slots (a block of capacity `c` starts at
/// position `stride - c`), so the bound is the same for every size factor:
/// no decode of the factor, no shift by it.
#[inline(always)]
fn fits(hot: &Hot, seen: u64, size: usize) -> bool {
    #[cfg(target_pointer_width = "64")]
    {
        (seen & POSITION_MASK) + size as u64 <= hot.end as u64
    }
    // 32-bit targets: the same test in 32-bit halves. The stride fits a word
    // (the reservation does), so the block fits exactly when the position's
    // high bits are zero and its low word is at most the stride minus the
    // size (`size <= M <= stride`: no underflow). No 64-bit add: armv7 keeps
    // the word's halves, `self` and the size in its five scratch registers.
    #[cfg(not(target_pointer_width = "64"))]
    {
        let hi = (seen >> 32) as u32;
        let lo = seen as u32 as usize;
        hi << (64 - FACTOR_SHIFT) == 0 && lo <= hot.end - size
    }
}

/// The orderings of the allocation entry points, as const parameters.
pub(crate) const RELAXED: u8 = 0;
pub(crate) const ACQUIRE: u8 = 1;
pub(crate) const SEQCST: u8 = 2;

#[inline(always)]
const fn ordering(order: u8) -> Ordering {
    match order {
        RELAXED => Ordering::Relaxed,
        ACQUIRE => Ordering::Acquire,
        _ => Ordering::SeqCst,
    }
}

/// Locks, ignoring poisoning (the state stays consistent: every update under
/// the lock is completed before anything that can panic).
fn lock<T>(m: &Mutex<T>) -> impl core::ops::DerefMut<Target = T> + '_ {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Debug-build entrant count: decremented when the `alloc` call ends.
#[cfg(debug_assertions)]
struct Entrant<'a>(&'a AtomicUsize);

#[cfg(debug_assertions)]
impl Drop for Entrant<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PackedArena {
    /// Bits of the block index (63..57): up to 128 blocks.
    pub const BLOCK_BITS: u32 = 7;
    /// Bits of the size factor (56..55): capacities `block_size << 0..=3`.
    pub const FACTOR_BITS: u32 = 2;
    /// Bits of the position (54..0): `P = 2^55`.
    pub const POSITION_BITS: u32 = 55;
    /// The most blocks an arena can have (`1 << BLOCK_BITS`).
    pub const MAX_BLOCKS: usize = 1 << Self::BLOCK_BITS;

    /// An arena with `block_size`-byte blocks and the other defaults of
    /// [`PackedConfig::new`].
    ///
    /// ```
    /// let arena = allocasm::PackedArena::new(4096).unwrap();
    /// let p = arena.alloc(24).unwrap();
    /// assert_eq!(p.as_ptr() as usize % 16, 0);
    /// ```
    pub fn new(block_size: usize) -> Result<Self, AllocError> {
        Self::with_config(PackedConfig::new(block_size))
    }

    /// An arena with the given configuration. Reserves the address space of
    /// every slot and commits the first block.
    ///
    /// Refuses, with [`AllocError::InvalidConfig`] naming the field and its
    /// value: a `block_size` that is not a power of two of at least 16 (or
    /// so large that `block_size << 3` reaches a quarter of the cursor's
    /// position range), a `max_blocks` outside 1..=128 (or whose reservation
    /// does not fit the address space), a `max_request` outside
    /// 1..=`block_size << 3`, and a `max_entrants` that is zero or so large
    /// that `C*M` leaves no room below `P`.
    ///
    /// ```
    /// use allocasm::{AllocError, ConfigField, PackedArena, PackedConfig};
    /// let bad = PackedConfig { block_size: 1000, ..PackedConfig::new(4096) };
    /// assert_eq!(
    ///     PackedArena::with_config(bad).err(),
    ///     Some(AllocError::InvalidConfig { field: ConfigField::BlockSize, value: 1000 })
    /// );
    /// ```
    pub fn with_config(config: PackedConfig) -> Result<Self, AllocError> {
        let PackedConfig {
            block_size,
            max_blocks,
            max_request,
            max_entrants,
            ..
        } = config;
        let invalid = |field, value| AllocError::InvalidConfig { field, value };
        if !block_size.is_power_of_two() || block_size < GRAIN {
            return Err(invalid(ConfigField::BlockSize, block_size));
        }
        let largest = block_size
            .checked_shl(MAX_FACTOR)
            .filter(|&c| (c as u64) < P / 4);
        let largest = largest.ok_or(invalid(ConfigField::BlockSize, block_size))?;
        if max_blocks == 0 || max_blocks > Self::MAX_BLOCKS {
            return Err(invalid(ConfigField::MaxBlocks, max_blocks));
        }
        if max_request == 0 || align_up(max_request, GRAIN) > largest {
            return Err(invalid(ConfigField::MaxRequest, max_request));
        }
        let max_request = align_up(max_request, GRAIN);
        // L = P - C*M must leave a full largest block plus two requests below
        // it, so that a position that reached L can never fit again.
        // A block's counter is a word (see `Hot::counters`): its largest true
        // value, a full largest block plus `C` requests settled after the
        // rotation, must fit one too (a bound only 32-bit targets can reach).
        let reserve = (max_entrants as u64)
            .checked_mul(max_request as u64)
            .filter(|_| max_entrants > 0)
            .filter(|&r| (largest as u64).saturating_add(r) <= usize::MAX as u64);
        let limit = reserve
            .and_then(|r| P.checked_sub(r))
            .filter(|&l| l >= largest as u64 + 2 * max_request as u64);
        let limit = limit.ok_or(invalid(ConfigField::MaxEntrants, max_entrants))?;

        // The stride holds the largest block a request up to M installs
        // (`take_slot` never grows a block past what is committed, and never
        // commits past this), not `block_size << 3` regardless of M.
        let mut max_factor = 0;
        while block_size << max_factor < max_request {
            max_factor += 1;
        }
        let stride = (block_size << max_factor).max(sys::page_size());
        let reservation_len = stride
            .checked_mul(max_blocks)
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or(invalid(ConfigField::MaxBlocks, max_blocks))?;
        let base = sys::reserve(reservation_len)?;

        let arena = PackedArena {
            cursor: CachePadded::new(AtomicU64::new(0)),
            hot: HotLine::new(Hot {
                base,
                end: stride,
                max_request,
                counters: (0..max_blocks)
                    .map(|_| CachePadded::new(AtomicUsize::new(0)))
                    .collect(),
                stride_log2: stride.trailing_zeros(),
                reserved: reservation_len,
            }),
            caps: (0..max_blocks).map(|_| AtomicU64::new(0)).collect(),
            capacity: Mutex::new(Capacity {
                free: Vec::with_capacity(max_blocks),
                next_fresh: 0,
                committed: vec![0; max_blocks],
                installs: 0,
                recycled: 0,
                evicted: 0,
                failed: 0,
            }),
            config: PackedConfig {
                max_request,
                ..config
            },
            reservation_len,
            limit,
            #[cfg(debug_assertions)]
            entrants: AtomicUsize::new(0),
        };
        {
            let mut cap = lock(&arena.capacity);
            let (slot, factor) = arena
                .take_slot(&mut cap, 0)?
                .expect("a new arena has a free slot");
            arena
                .cursor
                .store(encode(slot, factor, arena.start(factor)), Ordering::Release);
        }
        Ok(arena)
    }

    /// Bytes of address space reserved: `max_blocks` slots of
    /// `max(block_size << f, page)` bytes, `f` the factor `M` needs.
    pub fn reserved_bytes(&self) -> usize {
        self.reservation_len
    }

    /// The configuration (with `max_request` rounded up to 16).
    pub fn config(&self) -> &PackedConfig {
        &self.config
    }

    /// `L = P - C*M`, the position past which a losing allocation on an
    /// exhausted arena removes its increment from the cursor.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The cursor word, decoded (a racy snapshot under concurrency), with
    /// the position counted from the block's first byte.
    pub fn snapshot(&self) -> CursorSnapshot {
        let w = decode(self.cursor.load(Ordering::Relaxed));
        CursorSnapshot {
            position: w.position.wrapping_sub(self.start(w.factor)),
            ..w
        }
    }

    /// Counters of the capacity side.
    pub fn stats(&self) -> PackedStats {
        let cap = lock(&self.capacity);
        PackedStats {
            installs: cap.installs,
            recycled: cap.recycled,
            evicted: cap.evicted,
            blocks_in_use: cap.next_fresh - cap.free.len(),
        }
    }

    /// Allocates `size` bytes aligned to 16: the fast path, one `fetch_add`
    /// with `Acquire` ordering (`lock xadd` on x86-64, `ldadda` with LSE).
    ///
    /// Errors: [`AllocError::ZeroSize`], [`AllocError::TooLarge`] when
    /// `size > max_request` (before the cursor is touched),
    /// [`AllocError::OutOfMemory`] when every block is in use,
    /// [`AllocError::Os`] when a block cannot be committed.
    #[inline(always)]
    pub fn alloc(&self, size: usize) -> Result<NonNull<u8>, AllocError> {
        // ORDERING: Acquire. A recycled block was last written by threads
        // whose frees (`fetch_sub(Release)`) the drainer acquired (fence)
        // before it released the capacity lock; the rotating thread took the
        // lock and published the block with a release swap of the cursor.
        // This add reads that swap (or a later add in its release sequence),
        // so the previous owners' accesses happen before ours.
        self.finish(self.alloc_with::<ACQUIRE>(size), size)
    }

    /// [`alloc`](Self::alloc) with the write-up's `Relaxed` add (`ldadd`
    /// with LSE, `__aarch64_ldadd8_relax` with outline atomics; still
    /// `lock xadd` on x86-64).
    ///
    /// # Safety
    ///
    /// A relaxed add does not order this thread after the previous users of
    /// a *recycled* block (that only holds through the address dependency,
    /// C++'s `consume`, which the Rust memory model does not recognise), so
    /// the caller guarantees that every access to the returned memory made
    /// before it was freed happens before this thread's accesses by other
    /// means: for example no `dealloc` ever brings a block of this arena
    /// back (allocations live until [`reset`](Self::reset) or drop), or the
    /// allocating thread synchronised with every thread that freed into
    /// the arena since. Blocks that were never recycled are always safe.
    #[inline(always)]
    pub unsafe fn alloc_relaxed(&self, size: usize) -> Result<NonNull<u8>, AllocError> {
        // ORDERING: Relaxed, under the caller's contract above; a fresh
        // block is ordered by the capacity lock the installing thread held
        // and the commit before it, as for the other entry points.
        self.finish(self.alloc_with::<RELAXED>(size), size)
    }

    /// [`alloc`](Self::alloc) with a `SeqCst` add: the same fast path, kept so
    /// the codegen suite can contrast the orderings (`ldaddal` with LSE).
    #[inline(always)]
    pub fn alloc_seqcst(&self, size: usize) -> Result<NonNull<u8>, AllocError> {
        self.finish(self.alloc_with::<SEQCST>(size), size)
    }

    /// The raw fast and slow path with the caller's ordering, refusals in
    /// registers (for [`ThreadCursorArena`](crate::ThreadCursorArena)).
    ///
    /// # Safety
    ///
    /// With `Relaxed`, the contract of [`alloc_relaxed`](Self::alloc_relaxed).
    #[inline(always)]
    pub(crate) unsafe fn alloc_raw<const ORDER: u8>(&self, size: usize) -> Attempt {
        self.alloc_with::<ORDER>(size)
    }

    /// The public answer for an [`Attempt`] at `size` bytes.
    #[inline(always)]
    fn finish(&self, a: Attempt, size: usize) -> Result<NonNull<u8>, AllocError> {
        match a.ptr {
            Some(p) => Ok(p),
            None => Err(self.describe(a.why, size)),
        }
    }

    /// The detailed error for a refusal of a `size`-byte request: built by
    /// the inlined caller, so a caller that only tests for success drops it.
    #[inline(always)]
    pub(crate) fn describe(&self, r: Refusal, size: usize) -> AllocError {
        match r {
            Refusal::ZERO_SIZE => AllocError::ZeroSize,
            Refusal::TOO_LARGE => AllocError::TooLarge {
                requested: size,
                max: self.hot.max_request,
            },
            Refusal::OUT_OF_MEMORY => AllocError::OutOfMemory {
                requested: align_up(size, GRAIN),
                available: 0,
            },
            Refusal::TOO_MANY_ENTRANTS => AllocError::TooManyEntrants {
                max: self.config.max_entrants,
            },
            Refusal(code) => AllocError::Os { code: code as i32 },
        }
    }

    #[inline(always)]
    fn alloc_with<const ORDER: u8>(&self, size: usize) -> Attempt {
        let hot = &*self.hot;
        // One compare refuses both 0 and anything above M, before the cursor
        // is touched; M is a multiple of 16 so the aligned size is <= M too.
        if size.wrapping_sub(1) >= hot.max_request {
            return Attempt::refused(if size == 0 {
                Refusal::ZERO_SIZE
            } else {
                Refusal::TOO_LARGE
            });
        }
        let size = align_up(size, GRAIN);
        #[cfg(debug_assertions)]
        let Some(_entrant) = self.enter() else {
            return Attempt::refused(Refusal::TOO_MANY_ENTRANTS);
        };
        let seen = crate::sync::fetch_add_u64(&self.cursor, size, ordering(ORDER));
        let w = decode(seen);
        if fits(hot, seen, size) {
            let size = size as u64;
            debug_assert!(
                w.block < hot.counters.len(),
                "cursor names block {} of {}",
                w.block,
                hot.counters.len()
            );
            debug_assert_eq!(
                w.position % GRAIN as u64,
                0,
                "position {:#x} is not a multiple of 16",
                w.position
            );
            // `position + size` is within the slot (<= stride), so both
            // fit a word: `usize` arithmetic, no 64-bit shift on 32-bit
            // targets.
            let offset = (w.block << hot.stride_log2) + w.position as usize;
            debug_assert!(offset as u64 + size <= self.reservation_len as u64);
            // SAFETY: the cursor only names installed blocks, whose slot lies
            // inside the reservation, and `position + size` is within the
            // block's capacity (<= stride), so the range is in bounds.
            let p = unsafe { hot.base.as_ptr().add(offset) };
            // SAFETY: in bounds of a non-null reservation, hence non-null.
            return Attempt::ok(unsafe { NonNull::new_unchecked(p) });
        }
        self.alloc_slow::<ORDER>(size, seen)
    }

    /// Counts this thread in (debug builds); `None`, counted out again,
    /// when `max_entrants` threads are already inside.
    #[cfg(debug_assertions)]
    fn enter(&self) -> Option<Entrant<'_>> {
        let n = self.entrants.fetch_add(1, Ordering::Relaxed) + 1;
        let guard = Entrant(&self.entrants);
        (n <= self.config.max_entrants).then_some(guard)
    }

    /// The block that `seen` (a word returned by this thread's `fetch_add`)
    /// named was full. Rotate, retry on a block someone else installed, or
    /// report exhaustion; in every case unwind the failed reservation.
    /// Returns an [`Attempt`], in registers, so the inlined fast path that
    /// calls it keeps its result out of memory.
    #[cold]
    #[inline(never)]
    fn alloc_slow<const ORDER: u8>(&self, size: usize, mut seen: u64) -> Attempt {
        // (`size` is a word and the ordering a constant so that on 32-bit
        // targets every argument still travels in a register.)
        let size = size as u64;
        loop {
            let mut cap = lock(&self.capacity);
            // Rotations happen only under this lock. While our failed
            // increment is not unwound the block it hit cannot drain, so it
            // cannot be recycled and reinstalled: equal block bits mean the
            // very incarnation we added to.
            let current = self.cursor.load(Ordering::Relaxed);
            if block_bits(current) == block_bits(seen) {
                let failed = decode(seen);
                return match self.take_slot(&mut cap, self.factor_for(size)) {
                    Ok(Some((slot, factor))) => {
                        // Install with our bytes already reserved at the
                        // block's first byte.
                        let start = self.start(factor);
                        // ORDERING: AcqRel. Release publishes the block
                        // (taken under the lock, after its drain) to every
                        // Acquire add that reads this value; Acquire orders
                        // the old block's final position before the settle.
                        let old = self
                            .cursor
                            .swap(encode(slot, factor, start + size), Ordering::AcqRel);
                        debug_assert_eq!(block_bits(old), block_bits(seen));
                        // The old position, net of where its block started,
                        // counts our own failed `size` and the failures
                        // settled while the block was current, which we
                        // unwind in the same add.
                        let old = decode(old);
                        let unwound = size + core::mem::take(&mut cap.failed);
                        self.settle(
                            &mut cap,
                            failed.block,
                            old.position
                                .wrapping_sub(self.start(old.factor))
                                .wrapping_sub(unwound),
                        );
                        Attempt::ok(self.block_start(slot, factor))
                    }
                    Ok(None) => {
                        if failed.position + size >= self.limit {
                            self.undo(seen, size);
                        } else {
                            // The block is current: its rotation takes this
                            // off the position it settles.
                            cap.failed += size;
                        }
                        Attempt::refused(Refusal::OUT_OF_MEMORY)
                    }
                    Err(e) => {
                        cap.failed += size;
                        Attempt::refused(Refusal::from_error(e))
                    }
                };
            }
            // Another thread rotated after our add: its add to the old
            // block's counter included our failed reservation. Unwind it and
            // try the new block.
            self.settle(&mut cap, decode(seen).block, size.wrapping_neg());
            drop(cap);
            seen = self.cursor.fetch_add(size, ordering(ORDER));
            let w = decode(seen);
            if fits(&self.hot, seen, size as usize) {
                let offset = ((w.block as u64) << self.hot.stride_log2) + w.position;
                // SAFETY: as in the fast path: an installed block, in range.
                return Attempt::ok(unsafe {
                    NonNull::new_unchecked(self.hot.base.as_ptr().add(offset as usize))
                });
            }
        }
    }

    /// Removes this thread's increment from the cursor: the arena is
    /// exhausted and the position reached `L`. Called under the capacity
    /// lock, so no block can be installed meanwhile; the compare-exchange
    /// still checks the block bits, as the write-up prescribes.
    fn undo(&self, seen: u64, size: u64) {
        let mut current = self.cursor.load(Ordering::Relaxed);
        loop {
            if block_bits(current) != block_bits(seen) {
                // A new block was installed: the rotation counted us.
                let block = decode(seen).block;
                let size = size as usize;
                let prev = self.hot.counters[block].fetch_sub(size, Ordering::AcqRel);
                debug_assert_ne!(prev, size, "undo found a rotation under the capacity lock");
                return;
            }
            debug_assert!(decode(current).position >= size);
            match self.cursor.compare_exchange_weak(
                current,
                current - size,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => current = now,
            }
        }
    }

    /// Adds `delta` (wrapping) to a block's counter under the capacity lock;
    /// if that brings it to exactly zero, the block is drained.
    fn settle(&self, cap: &mut Capacity, block: usize, delta: u64) {
        // Wrapping to a word: the true sum stays within a word's range (see
        // `Hot::counters`), so the low bits carry it.
        let delta = delta as usize;
        let prev = self.hot.counters[block].fetch_add(delta, Ordering::AcqRel);
        if prev.wrapping_add(delta) == 0 {
            self.reclaim(cap, block);
        }
    }

    /// Smallest factor whose block holds `size`.
    fn factor_for(&self, size: u64) -> u32 {
        let mut f = 0;
        while (self.capacity_of(f) as u64) < size {
            f += 1;
        }
        debug_assert!(f <= MAX_FACTOR);
        f
    }

    /// The capacity of a block of size factor `factor`.
    fn capacity_of(&self, factor: u32) -> usize {
        self.config.block_size << factor
    }

    /// Where a block of size factor `factor` starts in its slot: blocks end
    /// where their slot ends (see [`fits`]), so at `stride - capacity`.
    fn start(&self, factor: u32) -> u64 {
        (self.hot.end - self.capacity_of(factor)) as u64
    }

    fn slot_start(&self, slot: usize) -> NonNull<u8> {
        // SAFETY: `slot < max_blocks`, so the slot's start lies inside the
        // reservation (non-null).
        unsafe { NonNull::new_unchecked(self.hot.base.as_ptr().add(slot << self.hot.stride_log2)) }
    }

    /// The first byte of the block of size factor `factor` in `slot`.
    fn block_start(&self, slot: usize, factor: u32) -> NonNull<u8> {
        // SAFETY: the block lies inside its slot (its capacity is at most the
        // stride), so its start is in the reservation (non-null).
        unsafe { self.slot_start(slot).add(self.start(factor) as usize) }
    }

    /// Takes a free slot and commits it for at least `need` factor.
    fn take_slot(&self, cap: &mut Capacity, need: u32) -> Result<Option<(usize, u32)>, AllocError> {
        let slot = match cap.free.pop() {
            Some(s) => s,
            None if cap.next_fresh < self.hot.counters.len() => {
                cap.next_fresh += 1;
                cap.next_fresh - 1
            }
            None => return Ok(None),
        };
        let page = sys::page_size();
        // Use what is already committed if it is larger than needed.
        let mut factor = need;
        while factor < MAX_FACTOR && self.capacity_of(factor + 1) <= cap.committed[slot] {
            factor += 1;
        }
        let capacity = self.capacity_of(factor);
        // Committed bytes count from the slot's end, where blocks end.
        let want = align_up(capacity, page);
        if cap.committed[slot] < want {
            let have = cap.committed[slot];
            let end = self.hot.end;
            // SAFETY: `have` and `want` are page multiples no larger than the
            // stride (a page multiple), so `end - want .. end - have` lies
            // inside this slot of the reservation.
            let r = unsafe { sys::commit(self.slot_start(slot).add(end - want), want - have) };
            if let Err(e) = r {
                cap.free.push(slot);
                return Err(e);
            }
            cap.committed[slot] = want;
        }
        debug_assert_eq!(
            self.hot.counters[slot].load(Ordering::Relaxed),
            0,
            "slot {slot} installed with a live counter"
        );
        self.caps[slot].store(capacity as u64, Ordering::Relaxed);
        cap.installs += 1;
        Ok(Some((slot, factor)))
    }

    /// A block's counter reached zero after its rotation: recycle or evict.
    fn reclaim(&self, cap: &mut Capacity, block: usize) {
        debug_assert_ne!(
            self.caps[block].load(Ordering::Relaxed),
            0,
            "block {block} drained twice"
        );
        debug_assert_ne!(
            decode(self.cursor.load(Ordering::Relaxed)).block,
            block,
            "the current block drained"
        );
        self.caps[block].store(0, Ordering::Relaxed);
        match self.config.policy {
            DrainPolicy::Recycle => cap.recycled += 1,
            DrainPolicy::Evict => {
                let len = cap.committed[block];
                // SAFETY: exactly the committed part of this slot (its last
                // `len` bytes), and no allocation in it is live (its counter
                // reached zero).
                let r =
                    unsafe { sys::decommit(self.slot_start(block).add(self.hot.end - len), len) };
                debug_assert!(r.is_ok(), "decommit failed: {r:?}");
                if r.is_ok() {
                    cap.committed[block] = 0;
                }
                cap.evicted += 1;
            }
        }
        cap.free.push(block);
    }

    /// Gives back `size` bytes at `ptr`: one `fetch_sub(Release)` on the
    /// block's counter. The thread that brings it to zero recycles or evicts
    /// the block under the capacity lock.
    ///
    /// A pointer outside the arena's reservation is ignored in release
    /// builds and panics in debug builds; use
    /// [`try_dealloc`](Self::try_dealloc) for a checked free.
    ///
    /// # Safety
    ///
    /// `ptr` came from this arena's `alloc` (or `alloc_seqcst`) with this
    /// `size` (or was shrunk to it), has not been freed since, no `reset`
    /// happened in between, and nothing uses it afterwards.
    #[inline(always)]
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, size: usize) {
        let size = align_up(size, GRAIN);
        let offset = ptr
            .as_ptr()
            .addr()
            .wrapping_sub(self.hot.base.as_ptr().addr());
        if offset >= self.hot.reserved {
            // The offset, not the pointer: the pointer then dies at the
            // subtraction (on ARMv7 it was a sixth value live at the range
            // check).
            return self.foreign(offset);
        }
        let block = offset >> self.hot.stride_log2;
        debug_assert!(size > 0, "dealloc of zero bytes");
        // No check of `caps` here: the relaxed fast path does not order this
        // thread after the block's installation, so a relaxed read could see
        // a stale 0. `drained` re-checks under the lock.
        debug_assert!(block < self.hot.counters.len());
        // SAFETY: `offset < reserved = counters.len() << stride_log2`, so
        // `block < counters.len()`.
        let counter = unsafe { self.hot.counters.get_unchecked(block) };
        if crate::sync::sub_usize_reaches_zero(counter, size, Ordering::Release) {
            self.drained(counter);
        }
    }

    #[cold]
    #[inline(never)]
    fn foreign(&self, offset: usize) {
        let addr = self.hot.base.as_ptr().addr().wrapping_add(offset);
        debug_assert!(
            false,
            "PackedArena::dealloc: {addr:#x} is not in this arena"
        );
    }

    #[cold]
    #[inline(never)]
    fn drained(&self, counter: &AtomicUsize) {
        // The counter, not its index, is what the free holds after its loop
        // (on ARMv7 the index would be a sixth register).
        // `counter` is an element of `self.hot.counters` (the free indexes
        // it), at offset 0 of its padding.
        let block = (ptr::from_ref(counter).addr() - self.hot.counters.as_ptr().addr())
            / size_of::<CachePadded<AtomicUsize>>();
        // Pairs with every other free's Release: all their accesses happen
        // before the block is reused.
        fence(Ordering::Acquire);
        let mut cap = lock(&self.capacity);
        let current = decode(self.cursor.load(Ordering::Relaxed)).block;
        // A real drain can only happen to a rotated, live block; anything
        // else is a zero-size or double free (the counter went through zero
        // by mistake), which must not recycle memory in use.
        if current == block || self.caps[block].load(Ordering::Relaxed) == 0 {
            debug_assert!(
                false,
                "block {block} drained while current or already free: zero-size or double free"
            );
            return;
        }
        self.reclaim(&mut cap, block);
    }

    /// A checked [`dealloc`](Self::dealloc): refuses a zero size, a pointer
    /// outside every installed block ([`AllocError::ForeignPointer`]) and a
    /// pointer into a block that has already drained
    /// ([`AllocError::DoubleFree`]: every allocation in it was freed).
    /// A second free into a block that is still live cannot be detected.
    ///
    /// # Safety
    ///
    /// As for [`dealloc`](Self::dealloc), except that a pointer the checks
    /// above refuse is harmless.
    pub unsafe fn try_dealloc(&self, ptr: NonNull<u8>, size: usize) -> Result<(), AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        let offset = ptr
            .as_ptr()
            .addr()
            .wrapping_sub(self.hot.base.as_ptr().addr());
        let block = offset >> self.hot.stride_log2;
        if block >= self.hot.counters.len() || !offset.is_multiple_of(GRAIN) {
            return Err(AllocError::ForeignPointer);
        }
        // Under the lock: the installation of this allocation's block (a
        // critical section whose cursor swap this allocation read from) is
        // then ordered before this read.
        let cap = {
            let _guard = lock(&self.capacity);
            self.caps[block].load(Ordering::Relaxed)
        };
        if cap == 0 {
            return Err(AllocError::DoubleFree);
        }
        // The block is the slot's last `cap` bytes.
        let within = (offset & (self.hot.end - 1)) as u64;
        let end = self.hot.end as u64;
        if within < end - cap || within + align_up(size, GRAIN) as u64 > end {
            return Err(AllocError::ForeignPointer);
        }
        // SAFETY: checked above as far as possible; the caller guarantees the rest.
        unsafe { self.dealloc(ptr, size) };
        Ok(())
    }

    /// Shrinks an allocation in place from `old_size` to `new_size` and
    /// returns the same pointer; the released tail is accounted as freed
    /// (its bytes come back with the block). Growing is refused with
    /// [`AllocError::TooLarge`]: the bytes after an arena allocation belong
    /// to whoever bumped next.
    ///
    /// # Safety
    ///
    /// `ptr` is a live allocation of `old_size` bytes from this arena; after
    /// success it is one of `new_size` bytes (free it with that size).
    pub unsafe fn realloc(
        &self,
        ptr: NonNull<u8>,
        old_size: usize,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError> {
        if new_size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if new_size > old_size {
            return Err(AllocError::TooLarge {
                requested: new_size,
                max: old_size,
            });
        }
        let released = align_up(old_size, GRAIN) - align_up(new_size, GRAIN);
        if released > 0 {
            // SAFETY: the counter counts `old_size` aligned for this block;
            // releasing the tail leaves `new_size` aligned outstanding.
            unsafe { self.dealloc(ptr, released) };
        }
        Ok(ptr)
    }

    /// Whether `ptr` lies inside one of the arena's installed blocks. Takes
    /// the capacity lock and walks the blocks: O(max_blocks). Meant for assertions and debugging tools,
    /// not hot paths (a faster index would be more shared state).
    pub fn owns(&self, ptr: *const u8) -> bool {
        // The lock orders this walk after every installation whose cursor
        // the caller's pointer came from.
        let _guard = lock(&self.capacity);
        let addr = ptr.addr();
        let base = self.hot.base.as_ptr().addr();
        self.caps.iter().enumerate().any(|(slot, cap)| {
            // A block is its slot's last `cap` bytes.
            let end = base + ((slot + 1) << self.hot.stride_log2);
            let cap = cap.load(Ordering::Relaxed) as usize;
            cap != 0 && addr >= end - cap && addr < end
        })
    }

    /// Empties the whole arena: every block becomes free and the first slot
    /// becomes current at position 0; committed pages stay committed.
    ///
    /// # Panics
    ///
    /// If the OS refuses to recommit the first slot after an eviction.
    pub fn reset(&mut self) {
        let mut cap = lock(&self.capacity);
        cap.failed = 0;
        for (c, k) in self.hot.counters.iter().zip(self.caps.iter()) {
            c.store(0, Ordering::Relaxed);
            k.store(0, Ordering::Relaxed);
        }
        let used = cap.next_fresh;
        cap.free.clear();
        // Popped from the end: slot 0 first, then 1, 2, ...
        cap.free.extend((0..used).rev());
        let (slot, factor) = self
            .take_slot(&mut cap, 0)
            .expect("recommit after reset")
            .expect("a free slot after reset");
        self.cursor
            .store(encode(slot, factor, self.start(factor)), Ordering::Release);
    }

    /// Bytes a [`Layout`] takes from the cursor: the size rounded to 16, plus
    /// `align - 16` of slack for alignments above 16.
    fn reserved(layout: Layout) -> Option<usize> {
        let extra = layout.align().saturating_sub(GRAIN);
        layout.size().checked_add(extra)
    }
}

impl Drop for PackedArena {
    fn drop(&mut self) {
        // SAFETY: exactly the reservation made in `with_config`; `&mut self`
        // means no allocation from it can be used any more (their lifetimes
        // are bounded by the arena's by the caller's contract).
        let r = unsafe { sys::release(self.hot.base, self.reservation_len) };
        debug_assert!(r.is_ok(), "release failed: {r:?}");
    }
}

// SAFETY: a successful `allocate` hands out a block of at least
// `layout.size()` bytes, aligned, disjoint from every other live block (the
// packed cursor is bumped atomically), valid until `reset` (`&mut self`) or
// drop; `deallocate` takes back exactly such blocks.
unsafe impl RawAllocator for PackedArena {
    /// A block's bytes come back when all its allocations are freed.
    const FREES_INDIVIDUALLY: bool = true;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let max = self.hot.max_request;
        let reserved = Self::reserved(layout).ok_or(AllocError::TooLarge {
            requested: layout.size(),
            max,
        })?;
        if reserved > max {
            return Err(AllocError::TooLarge {
                requested: reserved,
                max,
            });
        }
        let p = self.alloc(reserved)?;
        let aligned = align_up(p.as_ptr().addr(), layout.align()) - p.as_ptr().addr();
        // SAFETY: `aligned <= align - 16` (p is 16-aligned) and the block has
        // `reserved = size + align - 16` bytes, so the result is in range.
        let p = unsafe { p.add(aligned) };
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let reserved = Self::reserved(layout).unwrap_or(usize::MAX);
        debug_assert!(reserved <= self.hot.max_request);
        // SAFETY: `ptr` lies in the block `allocate` reserved `reserved`
        // bytes in; the caller guarantees it is live and freed once.
        unsafe { self.dealloc(ptr, reserved) }
    }
}

// SAFETY: blocks stay valid until freed, reset (which needs `&mut`, so no
// borrow can be alive) or the arena is dropped; `allocate` returns disjoint
// ranges; `shrink` keeps the block and accounts for the released tail.
unsafe impl allocator_api2::alloc::Allocator for &PackedArena {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            let dangling = core::ptr::without_provenance_mut::<u8>(layout.align());
            // SAFETY: an alignment is never zero.
            return Ok(NonNull::slice_from_raw_parts(
                unsafe { NonNull::new_unchecked(dangling) },
                0,
            ));
        }
        RawAllocator::allocate(*self, layout).map_err(Into::into)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: forwarded; the caller upholds the Allocator contract.
            unsafe { RawAllocator::deallocate(*self, ptr, layout) }
        }
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        let (Some(old_r), Some(new_r)) = (PackedArena::reserved(old), PackedArena::reserved(new))
        else {
            return Err(allocator_api2::alloc::AllocError);
        };
        if new.size() != 0 && ptr.as_ptr().addr().is_multiple_of(new.align()) && new_r <= old_r {
            let released = align_up(old_r, GRAIN) - align_up(new_r, GRAIN);
            if released > 0 {
                // SAFETY: the block counted `old_r`; `new_r` stays outstanding.
                unsafe { self.dealloc(ptr, released) };
            }
            return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
        }
        let fresh = allocator_api2::alloc::Allocator::allocate(self, new)?;
        // SAFETY: both blocks are live and distinct, `new.size() <= old.size()`.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.cast::<u8>().as_ptr(), new.size())
        };
        // SAFETY: `ptr` is live with `old` (the caller's contract).
        unsafe { allocator_api2::alloc::Allocator::deallocate(self, ptr, old) };
        Ok(fresh)
    }
}

#[cfg(test)]
impl PackedArena {
    /// Tests only: a block's counter, as a signed number.
    fn counter(&self, block: usize) -> i64 {
        self.hot.counters[block].load(Ordering::Relaxed) as isize as i64
    }

    /// Tests only: the failed reservations the current block's rotation
    /// will take off its final position.
    fn failed(&self) -> u64 {
        lock(&self.capacity).failed
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A tiny arena: 32-byte blocks, `M = 32`, one block, and `L` lowered
    /// to 96 so that the undo path is reachable (the real `L` is near 2^55).
    fn exhausted_with_low_limit() -> PackedArena {
        let config = PackedConfig {
            block_size: 32,
            max_blocks: 1,
            max_request: 32,
            max_entrants: 4,
            policy: DrainPolicy::Recycle,
        };
        let mut a = PackedArena::with_config(config).unwrap();
        assert_eq!(a.limit, P - 4 * 32);
        // 96 bytes into the block (positions count from the slot's start).
        a.limit = a.start(0) + 96;
        a
    }

    /// Past `max_entrants` threads inside at once a debug build refuses,
    /// naming the ceiling, before the cursor moves (it panicked before,
    /// and only after the count was taken). `C` entrants are simulated by
    /// the counter: holding `C` real threads inside `alloc` needs a hook in
    /// the fast path.
    #[cfg(debug_assertions)]
    #[test]
    fn past_max_entrants_a_debug_build_refuses_before_the_cursor() {
        let a = PackedArena::with_config(PackedConfig {
            max_entrants: 3,
            ..PackedConfig::new(4096)
        })
        .unwrap();
        a.entrants.store(3, Ordering::Relaxed);
        let before = a.snapshot();
        assert_eq!(a.alloc(24), Err(AllocError::TooManyEntrants { max: 3 }));
        assert_eq!(a.snapshot(), before, "the cursor moved");
        assert_eq!(a.entrants.load(Ordering::Relaxed), 3, "not counted out");
        a.entrants.store(2, Ordering::Relaxed);
        assert!(
            a.alloc(24).is_ok(),
            "the third entrant is inside the ceiling"
        );
        assert_eq!(a.entrants.load(Ordering::Relaxed), 2);
    }

    /// The fast path's state: the cursor alone on the first line, every
    /// read-only field it (and `dealloc`) reads on the next one, and nothing
    /// the slow path writes (caps, the capacity lock) on either.
    #[test]
    fn hot_state_is_one_line_and_the_cursor_another() {
        use core::mem::{align_of, offset_of, size_of};
        let line = size_of::<CachePadded<u8>>();
        assert!(line >= 32);
        // `Hot`'s own padding: CachePadded's on 64-bit targets, 64 bytes on
        // 32-bit ones (where CachePadded is 32).
        let hot_line = align_of::<HotLine<Hot>>();
        assert_eq!(size_of::<HotLine<Hot>>(), hot_line);
        assert!(hot_line >= line);
        assert_eq!(offset_of!(PackedArena, cursor), 0);
        let hot = offset_of!(PackedArena, hot);
        assert_eq!(hot, hot_line, "hot state right after the cursor's line");
        let fields = [
            offset_of!(Hot, base),
            offset_of!(Hot, end),
            offset_of!(Hot, max_request),
            offset_of!(Hot, counters),
            offset_of!(Hot, stride_log2),
            offset_of!(Hot, reserved),
        ];
        // One real cache line: 64 bytes (CachePadded pads to 128 where the
        // prefetcher pulls pairs of lines).
        let real = hot_line.min(64);
        assert!(
            size_of::<Hot>() <= real,
            "Hot is {} bytes",
            size_of::<Hot>()
        );
        for f in fields {
            let at = hot + f;
            assert_eq!(at / real, hot / real, "hot field at {at} leaves the line");
        }
        for cold in [
            offset_of!(PackedArena, caps),
            offset_of!(PackedArena, capacity),
            offset_of!(PackedArena, config),
            offset_of!(PackedArena, reservation_len),
            offset_of!(PackedArena, limit),
        ] {
            assert!(
                cold >= hot + hot_line,
                "slow-path state at {cold} shares a hot line"
            );
        }
        // And the offsets the listing reads are those: cursor at 0, the rest
        // at `hot + ..`.
        let a = PackedArena::new(4096).unwrap();
        let base = core::ptr::from_ref(&a).addr();
        assert_eq!(core::ptr::from_ref(&*a.cursor).addr() - base, 0);
        assert_eq!(
            core::ptr::from_ref(&a.hot.base).addr() - base,
            hot + fields[0]
        );
    }

    /// Every block ends where its slot ends, whatever its size factor, so
    /// the fit check's bound is the stride: a block of each factor takes
    /// exactly its capacity, its first allocation at `stride - capacity`,
    /// and the next one past the capacity goes to a new block.
    #[test]
    fn blocks_of_every_factor_end_at_their_slot_end() {
        let page = sys::page_size();
        let block_size = page;
        let a = PackedArena::with_config(PackedConfig {
            max_request: 3 * block_size,
            max_blocks: 8,
            ..PackedConfig::new(block_size)
        })
        .unwrap();
        let stride = 4 * block_size;
        assert_eq!(a.hot.end, stride);
        let slot = |p: NonNull<u8>| (p.as_ptr().addr() - a.hot.base.as_ptr().addr()) / stride;
        let within = |p: NonNull<u8>| (p.as_ptr().addr() - a.hot.base.as_ptr().addr()) % stride;
        // Factor 0 (the first block): starts three block sizes in.
        let p = a.alloc(16).unwrap();
        assert_eq!((slot(p), within(p)), (0, stride - block_size));
        let rest = a.alloc(block_size - 16).unwrap();
        assert_eq!(
            within(rest) + block_size - 16,
            stride,
            "fills to the slot's end"
        );
        assert_eq!(a.snapshot().position, block_size as u64);
        // The 16 bytes below the block are in the slot, not in the block.
        assert!(a.owns(p.as_ptr()) && !a.owns(p.as_ptr().wrapping_sub(16)));
        // A request of 3 block sizes installs a factor-2 block (4 sizes).
        let big = a.alloc(3 * block_size).unwrap();
        let s = a.snapshot();
        assert_eq!(
            (s.block, s.factor, s.position),
            (1, 2, 3 * block_size as u64)
        );
        assert_eq!((slot(big), within(big)), (1, 0));
        let last = a.alloc(block_size).unwrap();
        assert_eq!(within(last), 3 * block_size);
        // SAFETY: a live allocation of `block_size` bytes, the block's last.
        unsafe { last.as_ptr().write_bytes(1, block_size) };
        // Full: the next request rotates to a factor-0 block.
        let next = a.alloc(16).unwrap();
        assert_eq!((slot(next), within(next)), (2, stride - block_size));
        // SAFETY: each freed once with its size.
        unsafe {
            assert_eq!(a.try_dealloc(p, 16), Ok(()));
            assert_eq!(
                a.try_dealloc(next.sub(16), 16),
                Err(AllocError::ForeignPointer)
            );
            a.dealloc(rest, block_size - 16);
        }
        assert_eq!(a.stats().recycled, 1, "block 0 drained");
    }

    #[test]
    fn the_reservation_fits_the_largest_request() {
        let page = sys::page_size();
        let a = PackedArena::new(1 << 20).unwrap();
        assert_eq!(
            a.reserved_bytes(),
            128 << 20,
            "M = block_size: factor 0 slots"
        );
        let b = PackedArena::with_config(PackedConfig {
            max_request: 3 << 20,
            max_blocks: 4,
            ..PackedConfig::new(1 << 20)
        })
        .unwrap();
        assert_eq!(
            b.reserved_bytes(),
            4 * (4 << 20),
            "3 MiB needs block_size << 2"
        );
        let c = PackedArena::with_config(PackedConfig {
            max_blocks: 2,
            ..PackedConfig::new(32)
        })
        .unwrap();
        assert_eq!(c.reserved_bytes(), 2 * page, "at least a page per slot");
    }

    #[test]
    fn refusals_keep_their_detail() {
        let a = PackedArena::new(4096).unwrap();
        assert_eq!(a.alloc(0), Err(AllocError::ZeroSize));
        assert_eq!(
            a.alloc(5000),
            Err(AllocError::TooLarge {
                requested: 5000,
                max: 4096
            })
        );
        assert_eq!(
            a.describe(Refusal::from_error(AllocError::Os { code: 12 }), 64),
            AllocError::Os { code: 12 }
        );
        assert_eq!(
            a.describe(Refusal::OUT_OF_MEMORY, 24),
            AllocError::OutOfMemory {
                requested: 32,
                available: 0
            }
        );
    }

    #[test]
    fn below_the_limit_a_failure_is_kept_for_the_rotation() {
        let a = exhausted_with_low_limit();
        a.alloc(32).unwrap();
        assert!(matches!(a.alloc(32), Err(AllocError::OutOfMemory { .. })));
        assert_eq!(
            a.snapshot().position,
            64,
            "below L the increment stays in the cursor"
        );
        assert_eq!(a.failed(), 32, "and the rotation will take it off");
        assert_eq!(a.counter(0), 0, "the counter holds frees only");
    }

    /// Failed reservations on an exhausted arena sum to `2^32 - 16` bytes
    /// while the block's one allocation, 16 bytes, is live. Had they been
    /// unwound on the block's counter (a word, 32 bits on 32-bit targets),
    /// the free would take it through zero: a drain of the current block
    /// (the debug check panics; a rotation between the free and its drain
    /// would recycle a block in use). They wait for the rotation instead,
    /// and the free leaves the counter at minus its size.
    #[test]
    fn failures_while_exhausted_never_take_the_counter_through_zero() {
        const MIB: usize = 1 << 20;
        let a = PackedArena::with_config(PackedConfig {
            block_size: MIB,
            max_blocks: 1,
            max_request: MIB,
            max_entrants: 4,
            policy: DrainPolicy::Recycle,
        })
        .unwrap();
        let x = a.alloc(16).unwrap();
        // 4095 failures of 1 MiB and one of 1 MiB - 16 (Miri: 63 and one).
        let whole = if cfg!(miri) { 63 } else { 4095 };
        for size in core::iter::repeat_n(MIB, whole).chain([MIB - 16]) {
            assert!(matches!(a.alloc(size), Err(AllocError::OutOfMemory { .. })));
        }
        // SAFETY: x is live with 16 bytes, freed once.
        unsafe { a.dealloc(x, 16) };
        let s = a.stats();
        assert_eq!((s.recycled, s.evicted), (0, 0), "the current block drained");
        assert_eq!(a.counter(0), -16);
        assert_eq!(a.snapshot().block, 0);
        let failed = (whole as u64 + 1) * MIB as u64 - 16;
        assert_eq!(a.failed(), failed);
        if !cfg!(miri) {
            assert_eq!(failed + 16, 1 << 32, "the sum a 32-bit counter wraps at");
        }
    }

    /// A block's counter is a word: on 32-bit targets a configuration whose
    /// largest block plus `C * M` reaches 2^32 is refused, since the
    /// counter's true value could then pass a multiple of 2^32.
    #[cfg(target_pointer_width = "32")]
    #[test]
    fn a_word_counter_bounds_the_configuration_on_32_bit_targets() {
        let config = |max_entrants| PackedConfig {
            block_size: 1 << 20,
            max_blocks: 1,
            max_request: 1 << 20,
            max_entrants,
            policy: DrainPolicy::Recycle,
        };
        // The largest block is 1 MiB << 3 = 8 MiB: 4087 requests of 1 MiB
        // fit beside it below 2^32, 4088 reach it.
        assert!(PackedArena::with_config(config(4087)).is_ok());
        assert_eq!(
            PackedArena::with_config(config(4088)).err(),
            Some(AllocError::InvalidConfig {
                field: ConfigField::MaxEntrants,
                value: 4088
            })
        );
    }

    #[test]
    fn past_the_limit_a_failure_removes_its_increment() {
        let a = exhausted_with_low_limit();
        a.alloc(32).unwrap();
        let _ = a.alloc(32); // position 64, counter -32
        for _ in 0..5 {
            assert!(matches!(a.alloc(32), Err(AllocError::OutOfMemory { .. })));
            assert_eq!(
                a.snapshot().position,
                64,
                "past L the loser removes its increment"
            );
        }
        assert_eq!(a.failed(), 32, "undone increments are not counted");
        assert_eq!(a.counter(0), 0);
    }

    #[test]
    fn rotation_adds_the_final_position_net_of_failures() {
        let config = PackedConfig {
            block_size: 32,
            max_blocks: 2,
            max_request: 32,
            max_entrants: 4,
            policy: DrainPolicy::Recycle,
        };
        let a = PackedArena::with_config(config).unwrap();
        let x = a.alloc(16).unwrap();
        a.alloc(32).unwrap(); // rotates: block 0 keeps x's 16 bytes
        assert_eq!(a.counter(0), 16);
        assert!(a.alloc(32).is_err()); // exhausted: kept for block 1's rotation
        assert_eq!((a.counter(1), a.failed()), (0, 32));
        // SAFETY: x is live with 16 bytes.
        unsafe { a.dealloc(x, 16) };
        assert_eq!(a.counter(0), 0);
        assert_eq!(a.stats().recycled, 1);
        // Block 1 is at position 96 (32 live, 32 failed, and now this
        // request's 32): the rotation into block 0 settles 96 less the two
        // failures, its live bytes, and clears them.
        let y = a.alloc(32).unwrap();
        // (Reinstalled with the largest factor its committed page holds.)
        assert_eq!(y, a.block_start(0, a.snapshot().factor));
        assert_eq!((a.counter(1), a.failed()), (32, 0));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use loom::sync::Arc;
    use loom::thread;

    use super::*;

    fn tiny(max_blocks: usize) -> PackedArena {
        let config = PackedConfig {
            block_size: 32,
            max_blocks,
            max_request: 32,
            max_entrants: 4,
            policy: DrainPolicy::Recycle,
        };
        PackedArena::with_config(config).unwrap()
    }

    /// Raw pointers are not `Send`; the models pass addresses.
    fn addr(p: NonNull<u8>) -> usize {
        p.as_ptr().expose_provenance()
    }

    fn ptr(a: usize) -> NonNull<u8> {
        NonNull::new(core::ptr::with_exposed_provenance_mut(a)).unwrap()
    }

    /// The reuse hand-over: thread A writes its block and frees it (the
    /// block drains and is recycled), the main thread installs the recycled
    /// block, and thread B, started before that, allocates from it through
    /// the fast path. The block's bytes are modelled by a loom cell per
    /// slot, so loom checks that A's accesses happen before B's: with the
    /// safe entry point (`Acquire`) they do, in every interleaving.
    fn hand_over(alloc: fn(&PackedArena, usize) -> Result<NonNull<u8>, AllocError>) {
        use crate::sync::UnsafeCell;
        loom::model(move || {
            let a = Arc::new(tiny(2));
            let cells = Arc::new([UnsafeCell::new(0u8), UnsafeCell::new(0u8)]);
            let slot =
                move |a: &PackedArena, p: usize| (p - addr(a.slot_start(0))) >> a.hot.stride_log2;
            let x = addr(alloc(&a, 32).unwrap()); // block 0, full
            alloc(&a, 32).unwrap(); // rotates: block 1, full
            let owner = {
                let (a, cells) = (a.clone(), cells.clone());
                thread::spawn(move || {
                    // SAFETY (model): A owns block 0's bytes until it frees.
                    cells[slot(&a, x)].with_mut(|b| unsafe { *b = 1 });
                    // SAFETY: x is live with 32 bytes, freed once.
                    unsafe { a.dealloc(ptr(x), 32) };
                })
            };
            let taker = {
                let (a, cells) = (a.clone(), cells.clone());
                thread::spawn(move || {
                    if let Ok(p) = alloc(&a, 16) {
                        let p = addr(p);
                        // SAFETY (model): B owns the bytes it was handed.
                        cells[slot(&a, p)].with_mut(|b| unsafe { *b = 2 });
                    }
                })
            };
            owner.join().unwrap();
            // Block 0 drained: this rotation installs it again (unless B
            // already did, or B took the last free block).
            let _ = alloc(&a, 16);
            taker.join().unwrap();
        });
    }

    #[test]
    fn loom_reuse_hand_over_is_ordered_with_acquire() {
        hand_over(PackedArena::alloc);
    }

    /// The same model with the write-up's `Relaxed` add: loom reports the
    /// unordered accesses (the reason the safe API uses `Acquire`).
    #[test]
    #[should_panic(expected = "Causality violation: Concurrent write accesses to `UnsafeCell`")]
    fn loom_reuse_hand_over_races_with_relaxed() {
        // SAFETY: deliberately broken contract, inside loom's model only.
        hand_over(|a, n| unsafe { a.alloc_relaxed(n) });
    }

    /// Two threads race past the end of the last block with the position at
    /// the limit: both lose, both remove their increments, and the cursor
    /// ends where it was.
    #[test]
    fn loom_overshoot_past_the_limit_is_undone() {
        loom::model(|| {
            let mut a = tiny(1);
            // 96 bytes into the block (positions count from the slot's start).
            a.limit = a.start(0) + 96;
            let a = Arc::new(a);
            a.alloc(32).unwrap();
            assert!(a.alloc(32).is_err()); // position 64, 32 failed
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let a = a.clone();
                    thread::spawn(move || a.alloc(32).map(addr))
                })
                .collect();
            for h in hs {
                assert!(matches!(
                    h.join().unwrap(),
                    Err(AllocError::OutOfMemory { .. })
                ));
            }
            assert_eq!(a.snapshot().position, 64);
            assert_eq!((a.counter(0), a.failed()), (0, 32));
        });
    }

    /// Two threads overshoot the end of block 0: exactly one rotates (and
    /// gets block 1), the other ends out of memory; every failed reservation
    /// is unwound, so block 0's counter is exactly its live bytes.
    #[test]
    fn loom_overshoot_at_block_end_rotates_once() {
        loom::model(|| {
            let a = Arc::new(tiny(2));
            let keep = a.alloc(16).unwrap();
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let a = a.clone();
                    thread::spawn(move || a.alloc(32).map(addr))
                })
                .collect();
            let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            let ok: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(ok.len(), 1, "{results:?}");
            assert_eq!(*ok[0], addr(a.block_start(1, 0)));
            assert_eq!(a.snapshot().block, 1);
            assert_eq!(a.counter(0), 16);
            assert_eq!((a.counter(1), a.failed()), (0, 32));
            // SAFETY: keep is live with 16 bytes.
            unsafe { a.dealloc(keep, 16) };
            assert_eq!(a.stats().recycled, 1);
        });
    }

    /// The undo at `L` races a drain: the last block is full with the
    /// position at the limit when one thread's allocation fails while
    /// another frees the only allocation of the other block. Either the free
    /// drained the block first and the allocation rotates into it, or the
    /// allocation found no free block and removed its increment from the
    /// cursor; in both cases every counter is exactly its block's live bytes.
    #[test]
    fn loom_undo_at_the_limit_races_a_drain() {
        // Which outcomes the schedules reached (plain std atomics: outside
        // the model).
        static ROTATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        static UNDONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        loom::model(|| {
            let mut a = tiny(2);
            a.limit = a.start(0) + 64; // (positions count from the slot's start)
            let a = Arc::new(a);
            let x = addr(a.alloc(32).unwrap()); // block 0, full
            let y = a.alloc(32).unwrap(); // rotates: block 1, position 32
            assert_eq!(y, a.block_start(1, 0));
            let free = {
                let a = a.clone();
                // SAFETY: `x` is live with 32 bytes, freed once.
                thread::spawn(move || unsafe { a.dealloc(ptr(x), 32) })
            };
            let alloc = {
                let a = a.clone();
                thread::spawn(move || a.alloc(32).map(addr))
            };
            free.join().unwrap();
            let got = alloc.join().unwrap();
            let s = a.snapshot();
            match got {
                Ok(p) => {
                    assert_eq!(
                        p,
                        addr(a.block_start(0, s.factor)),
                        "rotated into the drained block"
                    );
                    assert_eq!((s.block, s.position), (0, 32));
                    assert_eq!(a.counter(1), 32, "y is block 1's live bytes");
                    ROTATED.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Err(AllocError::OutOfMemory { .. }) => {
                    assert_eq!((s.block, s.position), (1, 32), "the increment was undone");
                    assert_eq!(a.counter(1), 0);
                    assert_eq!(a.counter(0), 0);
                    UNDONE.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => panic!("{e}"),
            }
            assert_eq!(a.stats().recycled, 1, "block 0 drained once");
        });
        assert!(
            ROTATED.load(std::sync::atomic::Ordering::Relaxed)
                && UNDONE.load(std::sync::atomic::Ordering::Relaxed),
            "the model must reach both the rotation and the undo"
        );
    }

    /// Two frees race the rotation of their block: the counter reaches zero
    /// exactly once, whoever gets there, and the block is recycled once.
    #[test]
    fn loom_counter_reaches_zero_exactly_once() {
        loom::model(|| {
            let a = Arc::new(tiny(2));
            let x = addr(a.alloc(16).unwrap());
            let y = addr(a.alloc(16).unwrap());
            let frees: Vec<_> = [x, y]
                .into_iter()
                .map(|p| {
                    let a = a.clone();
                    // SAFETY: each allocation is freed once, with its size.
                    thread::spawn(move || unsafe { a.dealloc(ptr(p), 16) })
                })
                .collect();
            let rotate = {
                let a = a.clone();
                thread::spawn(move || a.alloc(16).map(addr))
            };
            for h in frees {
                h.join().unwrap();
            }
            assert_eq!(rotate.join().unwrap(), Ok(addr(a.block_start(1, 0))));
            let s = a.stats();
            assert_eq!((s.recycled, s.blocks_in_use), (1, 1), "{s:?}");
            assert_eq!(a.counter(0), 0);
            assert_eq!(a.caps[0].load(Ordering::Relaxed), 0);
        });
    }
}
