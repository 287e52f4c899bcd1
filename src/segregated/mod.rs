//! `SegregatedFit`: two-level segregated fit with per-thread caches in
//! front of a lock-free queue per size class (the write-up's
//! general-purpose allocator, v2).
//!
//! **Contract.** Any thread allocates and frees any block, in any order
//! (`Send + Sync`), with *sized* deallocation: `dealloc(ptr, layout)` must be
//! given the layout (or, through the `Allocator` trait, any size between the
//! request and the returned length) the block was allocated with, because the
//! class is recomputed from it by the same [`size_class`] function allocation
//! used. There is no per-allocation header: a live block is all the
//! caller's, a free block's first word is its list link. For callers that
//! do not keep the layout (a drop-in `free(p)`), the span region's *class
//! map*, a byte per 16 KiB written when a span is carved, names a block's
//! class from its address ([`class_of`], then [`dealloc_in`]; 64-bit
//! targets). Dropping
//! the allocator releases every span and every large block (blocks still in
//! use dangle). The allocator itself is one pointer to its heap (the class
//! state, mapped at the first allocation), so it may be moved freely.
//!
//! **Classes and alignment** ([`SizeClass`]). TLSF-style: first level
//! `floor(log2)` of the size in 8-byte granules, second level 8 subdivisions;
//! 88 classes from 8 bytes (a pointer, to hold the link) to 64 KiB. A request
//! is rounded up to its alignment before mapping, and every class a multiple
//! of `align` maps to has a block size that is a multiple of `align`; blocks
//! sit at multiples of the block size from an aligned span base. So any
//! alignment up to 4096 is honoured by the class itself. Requests above
//! 64 KiB (after that rounding) or aligned above 4096 take the **large
//! path** (`large.rs`): one mapping per block, one system call each way
//! (fewer: freed mappings are cached, bounded, and reused), a
//! 32-byte header at the block's tail (the one place this allocator has a
//! per-allocation header), page-aligned, grown in place or by `mremap`
//! (Linux) on `realloc`. Requests above
//! [`MAX_REQUEST`](SegregatedFit::MAX_REQUEST) are refused.
//!
//! **Fast path** (`cache.rs`). `alloc`: the class index (one `lzcnt`/`clz`,
//! shifts; folded away for a constant layout; through `GlobalAlloc`, whose
//! layouts are not constants, a byte of a 256-byte table for requests up to
//! 1 KiB aligned to at most 16, [`SizeClass::small`]), then pop the calling
//! thread's LIFO list for the class: compare the cache's owner with the
//! heap, load the head, load its link, store two words. `dealloc`: the
//! class index, then push onto that list below its cap. No atomic
//! read-modify-write, no lock, no call (the thread-local access is
//! `fs:`/`TPIDR_EL0`-relative where the code is position-dependent or linked
//! into an executable; a `__tls_get_addr`/TLSDESC call in a PIC library, the
//! TLV thunk call on macOS). A block freed by another thread
//! joins that thread's list.
//!
//! **Shared level: the run stacks and the class queues** (`runs.rs`,
//! `queue.rs` have the full protocols). A full cache gives `cap/2`
//! blocks as one *run* onto the class's run stack (one compare-exchange,
//! no walk: the list is a run already, see `cache.rs`), and an empty one
//! refills by taking a run back whole (two loads, one compare-exchange, no
//! walk: refilling through the queue reads every link, one dependent cache
//! miss per block once the blocks have gone cold). A span grown for a
//! refill is handed out as runs too, one linked per refill as it is
//! needed (so its pages are first touched then), its last blocks
//! queued. Everything
//! else goes through the class queue: partial flushes (thread exit), the
//! shared paths and their growth, and refills when no run is free, which
//! take up to `cap/2` blocks with one compare-exchange. The queue is
//! intrusive (a free block's first word is an `AtomicPtr` to the next) with
//! a *sequenced front*: a 32-bit generation beside a 32-bit block handle
//! (offset from the heap's span region, in granules), so a stale snapshot
//! cannot validate within any realistic preemption; a 64-bit word keeps the
//! CAS a `lock cmpxchg` / `casal`. [`alloc_shared`](SegregatedFit::alloc_shared)
//! and [`dealloc_shared`](SegregatedFit::dealloc_shared) bypass the caches
//! (the write-up's allocator as it was: a pop and a push per operation).
//!
//! **Slow path** (`#[cold]`, out of line). When a class queue yields
//! nothing, the allocator takes the class's growth lock (a spin lock that
//! never allocates, see `lock.rs`: std's mutex boxes itself on first use on
//! macOS, which recursed when installed as `#[global_allocator]`) and grows
//! only if the queue is *empty*, re-checked under the lock. A queue that
//! holds blocks none of which can be popped (a freeing thread preempted
//! between its swap and its link hides everything behind it) is waited
//! for, never grown: growing there mapped a span per retry for as long as
//! the freer was off-CPU. Growth reuses a trimmed span first, else carves a
//! span from the heap's region (`region.rs`): a power-of-two length of at
//! least 16 KiB, 8 blocks and the base allocator's granularity (64 KiB on
//! Windows), header at the tail, blocks linked in private memory and
//! published with one exchange. [`try_alloc`] never grows.
//! [`dealloc_batch`] publishes a caller-linked chain with one exchange.
//!
//! **Statistics and trimming.** [`stats`](SegregatedFit::stats) reports per
//! class the spans, the blocks free in the queue and the runs, those held
//! in thread caches and those in use; [`trim`](SegregatedFit::trim) flushes
//! the calling thread's cache, drains each class's runs and queue, purges
//! the pages of every span whose blocks were all free (the pages stay
//! mapped: stale queue readers may
//! still read them) and keeps the span for the next growth.
//!
//! **Fork.** On Unix, `pthread_atfork` handlers (`fork.rs`, registered when
//! the process's first heap is mapped) take every spin lock of every heap
//! before a `fork` and release them after it, in the parent and in the
//! child, so a child forked while another thread held one (growing a class,
//! on the large path, binding a thread cache) can allocate. A child
//! inherits the parent's other threads' cached blocks as leaks.
//!
//! **Costs.** Metadata: 48 bytes per span, 44 KiB of heap (four 128-byte
//! lines per class: front, back, run stack, growth state), the class map
//! (2 MiB committed at the start of the span region, a page of it touched
//! per 64 MiB of spans), 1.4 KiB per thread plus the
//! cached blocks. Waste: below 1/8 of the block above 128 bytes, plus each
//! span's tail remainder. Failures: `ZeroSize`, `Os` / `OutOfMemory` when the
//! OS refuses a span or a large block or the 32 GiB span region is full,
//! `TooLarge` above [`MAX_REQUEST`](SegregatedFit::MAX_REQUEST) (2^47 bytes
//! on 64-bit targets). In debug builds `dealloc` panics on a pointer that is
//! not a block of its class's spans ("foreign pointer") and on a block that
//! is already free, in whatever order it was freed ("double free": a bit
//! per block in the span's tail); `alloc` panics if it would hand out a
//! block that is not free. Release builds trust the caller (a foreign
//! pointer or a double free is then undefined behaviour, as the `unsafe`
//! contract says), unless built with the `hardened` feature
//! (`harden.rs`, docs/malloc-hardening.md; the drop-in malloc always is):
//! then a free block carries a secret tag that a second free finds, every
//! free list's links (the thread caches', the class queues', the runs') are
//! stored encoded with that secret and checked on pop, and [`locate`](SegregatedFit::locate) tells a block's start from
//! any other address for callers that cannot trust their pointers.
//!
//! [`size_class`]: SegregatedFit::size_class
//! [`class_of`]: SegregatedFit::class_of
//! [`dealloc_in`]: SegregatedFit::dealloc_in
//! [`try_alloc`]: SegregatedFit::try_alloc
//! [`dealloc_batch`]: SegregatedFit::dealloc_batch

#[cfg(not(loom))]
mod cache;
mod class;
#[cfg(not(loom))]
mod fork;
#[cfg(feature = "hardened")]
mod harden;
mod large;
mod lock;
mod queue;
mod region;
mod runs;
mod span;

use core::alloc::{GlobalAlloc, Layout};
use core::mem::size_of;
use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

pub use class::{GRANULE, MAX_CLASS_ALIGN, MAX_CLASS_SIZE, SizeClass};
#[doc(hidden)]
#[cfg(feature = "hardened")]
pub use harden::Line as AbortLine;
use large::{LargeBlocks, LargeCache};
use lock::SpinLock;
use queue::ClassQueue;
use region::Region;
#[cfg(not(loom))]
use runs::MIN_RUN_BLOCK;
use runs::RunStack;
use span::{Fresh, SpanHeader};

use crate::sync::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use crate::{AllocError, RawAllocator, sys};

/// The state of one size class.
#[derive(Debug)]
struct Class {
    /// The free blocks of this class.
    queue: ClassQueue,
    /// The full runs the thread caches flushed, taken back whole by their
    /// refills (classes of at least [`MIN_RUN_BLOCK`] bytes), on their own
    /// line.
    runs: CachePadded<RunStack>,
    /// The span list and the counters, on their own line.
    growth: CachePadded<Growth>,
}

/// `Growth::fresh_colour`'s flag: the fresh span is a trimmed one grown
/// again whose purge did not zero it (`span::purge`), so its unlinked
/// blocks may hold old bytes and `span::carve` does not check them.
const NOT_PRISTINE: u32 = 1 << 31;

/// The cold state of one size class. Its growth lock, under which the
/// fields marked so change, is in [`Heap::growth_locks`].
#[derive(Debug)]
struct Growth {
    /// The spans grown for this class, newest first (pushed under the
    /// growth lock, read without it).
    spans: AtomicPtr<SpanHeader>,
    /// How many of them are trimmed (under the growth lock).
    trimmed: AtomicUsize,
    /// Free blocks: in the queue, on the run stack, or in `fresh` not yet
    /// handed out, as counted by every growth, publish and take (wrapping:
    /// a take may be counted before the publish that preceded it).
    free: AtomicUsize,
    /// The span being handed out a batch at a time ([`span::carve`]), null
    /// when none (under the growth lock): its blocks from chain position
    /// `fresh_at` on are free but not linked, so its pages are first
    /// touched when its blocks are first needed.
    fresh: AtomicPtr<u8>,
    /// The chain positions of `fresh` handed out (under the growth lock).
    fresh_at: AtomicU32,
    /// The block `fresh`'s chain starts at, [`NOT_PRISTINE`] added when
    /// the span is not [`pristine`](span::Fresh::pristine) (under the
    /// growth lock).
    fresh_colour: AtomicU32,
    /// The address of the heap this class belongs to (its provenance
    /// exposed), written once before the heap is published. The shared
    /// pop's miss takes the class alone and finds its heap here, so the pop
    /// needs no register for the heap (see [`Heap::alloc_shared`]).
    home: usize,
}

/// The heap of one allocator: the class state, the large blocks and the
/// span region, in one mapping made at the first allocation.
///
/// Every field's initial state is all-zero bytes (atomics at 0, null
/// pointers, unlocked spin locks), so a zeroed mapping *is* a fresh heap.
#[derive(Debug)]
pub(crate) struct Heap {
    classes: [Class; SizeClass::COUNT],
    large: LargeBlocks,
    region: Region,
    /// The heap's secret (`hardened`, see `harden.rs`), drawn before the
    /// heap is published.
    #[cfg(feature = "hardened")]
    key: usize,
    /// The shape of a class's spans, for [`SegregatedFit::locate`], by the
    /// class map's byte ([`SizeClass::tag`]): written before the heap is
    /// published, read-only after. Every other byte, 0 (no span) among
    /// them, has the zeroed shape, of which no address is a block: a byte
    /// indexes it without a bounds check, and the drop-in `free` tests no
    /// tag before the shape. The fresh span's handing out reads a class's
    /// block count here. (32-bit targets keep no class map and read only
    /// that: there the array keeps its old length, and the fields after it
    /// their offsets.)
    shapes: [Shape; SHAPES],
    /// Freed large mappings kept for reuse (under `large`'s lock); last,
    /// so that the fields above keep their offsets.
    large_cache: LargeCache,
    /// Each class's growth lock, by class index: serializes growth and
    /// trimming of the class (queue operations never take it). Side by
    /// side, not on each class's line: `fork`'s handlers take and release
    /// every one (`fork.rs`), and after a `fork` every page they write is
    /// copied, in the parent and again in the child. Spread over the
    /// classes, they made a `fork` fault 15 pages into the parent and 33
    /// into a child that allocates once; side by side, 4 and 21.
    growth_locks: [SpinLock; SizeClass::COUNT],
}

/// The length of [`Heap::shapes`]: one per value of a class map byte.
const SHAPES: usize = if cfg!(target_pointer_width = "64") {
    256
} else {
    SizeClass::COUNT + 1
};

/// A class's span shape as [`SegregatedFit::locate`] tests a pointer
/// against it without a division.
///
/// The test is the exact divisibility test by a multiplicative inverse
/// (Granlund and Montgomery): write the block size as `odd << shift`; for
/// an offset `o`, `(o * odd⁻¹ mod 2^64).rotate_right(shift)` is `o / size`
/// when `size` divides `o`, and above `u64::MAX / size` otherwise. So one
/// compare against the block count tells both that `o` is a block's start
/// and that the block lies in the span: a multiply, a rotate and a compare.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(target_pointer_width = "64"),
    allow(
        dead_code,
        reason = "32-bit targets read only the block count (no class map)"
    )
)]
struct Shape {
    /// The span length minus one (spans are aligned to their length).
    mask: usize,
    /// The inverse of the block size's odd part, modulo 2^64.
    inverse: u64,
    /// Blocks per span.
    blocks: u32,
    /// How many times 2 divides the block size.
    shift: u32,
}

impl Shape {
    fn of(class: SizeClass) -> Shape {
        let g = span::geometry(class.block_size());
        let bs = class.block_size() as u64;
        let shift = bs.trailing_zeros();
        let odd = bs >> shift;
        // Newton's iteration: `x = odd` is right in its low 3 bits (odd
        // squares are 1 mod 8), and each step doubles that: 6, 12, 24,
        // 48, 96.
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        debug_assert_eq!(odd.wrapping_mul(inverse), 1);
        Shape {
            mask: g.len - 1,
            inverse,
            blocks: g.blocks as u32,
            shift,
        }
    }

    /// Whether `addr` (in a span of this class) is the start of a block.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    fn is_block(&self, addr: usize) -> bool {
        let off = (addr & self.mask) as u64;
        off.wrapping_mul(self.inverse).rotate_right(self.shift) < u64::from(self.blocks)
    }
}

/// What [`SegregatedFit::locate`] finds at an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Located {
    /// The start of a block of this size class (live, cached or free).
    Block(SizeClass),
    /// Inside a span of this class, but not at the start of one of its
    /// blocks (inside a block, or in the span's header).
    OffBlock(SizeClass),
    /// Inside the mapping of a live large block.
    Large {
        /// The mapping's first byte.
        start: usize,
        /// The mapping's length.
        len: usize,
        /// The address of the block's 32-byte header: a large block of
        /// `n` bytes starting at `b` has it at `b + n` rounded up to 8.
        header: usize,
    },
    /// None of this allocator's memory.
    Foreign,
}

impl Heap {
    /// The heap's address: the owner tag of the thread caches serving it.
    #[inline(always)]
    pub(crate) fn addr(&self) -> usize {
        ptr::from_ref(self).expose_provenance()
    }

    /// The growth lock of `class` ([`Heap::growth_locks`]).
    #[inline]
    fn growth_lock(&self, class: SizeClass) -> &SpinLock {
        &self.growth_locks[class.index()]
    }

    #[inline(always)]
    fn class(&self, class: SizeClass) -> &Class {
        debug_assert!(class.index() < SizeClass::COUNT);
        // SAFETY: a `SizeClass` is only made by `SizeClass::of` and
        // `SizeClass::from_index`, both of which keep the index below
        // `COUNT` (the compiler cannot see that through the shifts).
        unsafe { self.classes.get_unchecked(class.index()) }
    }

    /// The handle base of the queues.
    #[inline(always)]
    fn base(&self) -> usize {
        self.region.base()
    }

    /// The secret every free list's links are [`code`](queue::code)d with
    /// (`hardened`), 0 (links as they are) otherwise.
    #[inline(always)]
    pub(crate) fn key(&self) -> usize {
        #[cfg(feature = "hardened")]
        {
            self.key
        }
        #[cfg(not(feature = "hardened"))]
        {
            0
        }
    }

    /// Takes up to `max` blocks of `class`, growing the class if it has
    /// none free: `(first, last, n)`, a chain of `n >= 1` blocks linked
    /// through their first words. When `max` is the thread caches' batch for
    /// the class, a run flushed whole comes first (`RunStack`): `last` is
    /// then `None` and the chain is null-terminated, `n == max`; from the
    /// queue `last` is the chain's last block and its link is stale.
    #[allow(clippy::type_complexity)]
    pub(crate) fn take(
        &self,
        class: SizeClass,
        max: usize,
    ) -> Result<(NonNull<u8>, Option<NonNull<u8>>, usize), AllocError> {
        let c = self.class(class);
        let mut spins = 0;
        // A thread cache's refill (its batch, of a class that forms runs)
        // takes runs, and the fresh span hands it out in runs of `run`
        // blocks; 0: neither.
        #[cfg(not(loom))]
        let run = if max == cache::batch(class.index()) && uses_runs(class) {
            max
        } else {
            0
        };
        #[cfg(loom)]
        let run = 0;
        loop {
            // The queue reads the base after its `front` (see `HandleBase`),
            // as it did when the region came with the first growth and a
            // base read here could be 0; the region now comes with the heap.
            #[cfg(all(test, not(loom)))]
            queue::hooks::call(&hooks::BEFORE_POP);
            #[cfg(not(loom))]
            if run > 0
                && let Some(first) = c.runs.pop(&self.region)
            {
                c.growth.free.fetch_sub(max, Ordering::Relaxed);
                return Ok((first, None, max));
            }
            if max > 1
                && let Some((first, last, n)) = c.queue.pop_batch(&self.region, max)
            {
                c.growth.free.fetch_sub(n, Ordering::Relaxed);
                return Ok((first, Some(last), n));
            }
            if let Some(p) = c.queue.pop(&self.region) {
                c.growth.free.fetch_sub(1, Ordering::Relaxed);
                return Ok((p, Some(p), 1));
            }
            self.grow_or_wait(class, run, &mut spins)?;
        }
    }

    /// The queue yielded nothing: if its queue is empty (re-checked under
    /// the growth lock), publish a free run, else the next batch of the
    /// fresh span (growing the class when that is used up); otherwise wait
    /// a moment for the hidden blocks to appear. `run > 1` (a thread cache's
    /// refill): the fresh span's blocks go on the run stack as a run of that
    /// many, so the refill takes it with one compare-exchange instead of
    /// walking the queue's chain link by link (`lua5.4`: 26 M instructions
    /// in those walks, 520 a refill).
    #[cold]
    #[inline(never)]
    fn grow_or_wait(
        &self,
        class: SizeClass,
        run: usize,
        spins: &mut u32,
    ) -> Result<(), AllocError> {
        let c = self.class(class);
        {
            let _guard = self.growth_lock(class).lock();
            if c.queue.is_empty()
                && let Some(first) = c.runs.pop(self.base())
            {
                // No growth while runs are free: a caller that takes from
                // the queue alone (`alloc_shared`, a refill of another
                // length) gets one of them through the queue.
                // SAFETY: a run we popped: ours, null-terminated.
                let last = unsafe { run_last(first, self.key()) };
                // SAFETY: a chain of this class's blocks, ours, in the region.
                unsafe { c.queue.push(self.base(), first, last) };
                return Ok(());
            }
            if c.queue.is_empty() {
                // SAFETY: under the class's growth lock.
                unsafe { self.hand_out_fresh(class, run, true) }?;
                return Ok(());
            }
        }
        // Blocks are queued but none can be popped now: a producer sits
        // between its swap and its link, or an empty transition is in
        // flight. Growing would not make them reachable (the new span queues
        // up behind them); wait for the producer.
        lock::backoff(spins);
        Ok(())
    }

    /// Links the next batch of the class's fresh span (growing the class by
    /// a span when it has none left and `grow` says so) and publishes it: a
    /// run of `run` blocks on the run stack when `run > 1` and the span has
    /// that many left, else a chain on the queue (about a page's worth of
    /// blocks: callers that take from the queue alone, or the span's last
    /// blocks). `Ok(false)`: no fresh block and no growth.
    ///
    /// # Safety
    ///
    /// The caller holds the class's growth lock.
    #[cold]
    unsafe fn hand_out_fresh(
        &self,
        class: SizeClass,
        run: usize,
        grow: bool,
    ) -> Result<bool, AllocError> {
        let c = self.class(class);
        let bs = class.block_size();
        // The span's block count from the class's shape: `span::geometry`
        // asks the OS for the page size (a `sysconf` call) each time.
        let blocks = self.shapes[usize::from(class.tag())].blocks as usize;
        let mut at = c.growth.fresh_at.load(Ordering::Relaxed) as usize;
        let mut fresh = NonNull::new(c.growth.fresh.load(Ordering::Relaxed)).map(|base| {
            let colour = c.growth.fresh_colour.load(Ordering::Relaxed);
            Fresh {
                base,
                colour: (colour & !NOT_PRISTINE) as usize,
                pristine: colour & NOT_PRISTINE == 0,
            }
        });
        if at == blocks {
            fresh = None;
        }
        let fresh = match fresh {
            Some(f) => f,
            None if !grow => return Ok(false),
            None => {
                // A full region names the span's length; what was asked for
                // is a block of the class (`alloc_miss` narrows it to the
                // caller's size).
                let f = span::grow(
                    &self.region,
                    &c.growth.spans,
                    &c.growth.trimmed,
                    bs,
                    class.tag(),
                )
                .map_err(|e| for_request(e, bs))?;
                c.growth.free.fetch_add(blocks, Ordering::Relaxed);
                c.growth.fresh.store(f.base.as_ptr(), Ordering::Relaxed);
                let flag = if f.pristine { 0 } else { NOT_PRISTINE };
                c.growth
                    .fresh_colour
                    .store(f.colour as u32 | flag, Ordering::Relaxed);
                at = 0;
                f
            }
        };
        let want = if run > 1 { run } else { (4096 / bs).max(1) };
        // A coloured span's first batch ends where its chain wraps: those
        // blocks share the header's page (`span::first_block`).
        let left = if at == 0 && fresh.colour > 0 {
            blocks - fresh.colour
        } else {
            blocks - at
        };
        let n = want.min(left);
        // SAFETY: positions `at..at + n` of the fresh span are free and were
        // never handed out; ours under the growth lock (the caller).
        let (first, last) = unsafe { span::carve(fresh, bs, blocks, self.key(), at, n) };
        c.growth.fresh_at.store((at + n) as u32, Ordering::Relaxed);
        if n == run && run > 1 {
            // SAFETY: a null-terminated run of `run` blocks of this class
            // (`run` its batch, so it `uses_runs`), owned by nobody else, in
            // the region.
            unsafe { c.runs.push(self.base(), first) };
        } else {
            // SAFETY: a chain of this class's blocks, linked just above,
            // owned by nobody else, in the region.
            unsafe { c.queue.push(self.base(), first, last) };
        }
        Ok(true)
    }

    /// Publishes the chain `first..=last` of `n` blocks of `class`.
    ///
    /// # Safety
    ///
    /// The chain is linked through the blocks' first words, of blocks of
    /// this heap's `class`, owned by the caller and not used afterwards.
    #[inline]
    pub(crate) unsafe fn give(
        &self,
        class: SizeClass,
        first: NonNull<u8>,
        last: NonNull<u8>,
        n: usize,
    ) {
        let c = self.class(class);
        // Counted before the publish (the count is advisory and already
        // races with takes), so the push is the last thing done and its
        // cold empty transition a tail call: nothing is kept live across it
        // in a callee-saved register on the hot path.
        c.growth.free.fetch_add(n, Ordering::Relaxed);
        // SAFETY: the caller's chain.
        unsafe { c.queue.push(self.base(), first, last) };
    }

    /// Publishes the null-terminated run of `n` blocks of `class` starting
    /// at `first` whole (a thread cache's flush of its batch), for a refill
    /// to take back without walking it.
    ///
    /// # Safety
    ///
    /// As for [`give`](Self::give); `class` [`uses_runs`], and `n` is the
    /// caches' batch for it.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) unsafe fn give_run(&self, class: SizeClass, first: NonNull<u8>, n: usize) {
        debug_assert!(uses_runs(class) && n == cache::batch(class.index()));
        let c = self.class(class);
        c.growth.free.fetch_add(n, Ordering::Relaxed);
        // SAFETY: the caller's run.
        unsafe { c.runs.push(self.base(), first) };
    }

    /// One block of `class` from the queue, growing if it is empty; `None`
    /// with the reason in [`refusal`] (see `REFUSAL`).
    #[inline(always)]
    fn alloc_shared(&self, class: SizeClass) -> Option<NonNull<u8>> {
        let c = self.class(class);
        match c.queue.pop_fast(&self.region) {
            Some(p) => {
                c.growth.free.fetch_sub(1, Ordering::Relaxed);
                Some(p)
            }
            // The class's record alone, not its index nor the heap: the pop
            // already holds its address, and the miss finds the heap through
            // it (`Growth::home`), so neither stays live across the pop
            // (x86-64 Windows has seven scratch registers, and the loop with
            // the index needed eight; ARMv7's pop has five).
            None => Heap::alloc_shared_slow(c),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_shared_slow(c: &Class) -> Option<NonNull<u8>> {
        let heap = Heap::of(c);
        refuse(heap.take(heap.class_of(c), 1).map(|(p, _, _)| p))
    }

    /// The heap `c` belongs to.
    fn of(c: &Class) -> &Heap {
        debug_assert_ne!(c.growth.home, 0, "a class record of an unpublished heap");
        // SAFETY: every `&Class` is one of a published heap's records
        // (`Heap::class`), whose `home` `init_heap` set to that heap's
        // address, exposed, before publishing it; the heap lives as long as
        // the reference to its record.
        unsafe { &*ptr::with_exposed_provenance::<Heap>(c.growth.home) }
    }

    /// The size class whose record `c` is (one of `self.classes`).
    fn class_of(&self, c: &Class) -> SizeClass {
        // SAFETY: `c` is an element of `self.classes` (every `&Class` is
        // made by `class`): both pointers are in that array, and the
        // distance is a whole number of elements.
        let index = unsafe { (c as *const Class).offset_from(self.classes.as_ptr()) };
        SizeClass::from_index(index as usize).expect("a class record of this heap")
    }
}

/// Test hooks: a consumer can be stalled in `Heap::take` right before it
/// reads its class queue, and a test can look at the blocks `trim` holds.
/// Run with [`queue::hooks::call`].
#[cfg(all(test, not(loom)))]
mod hooks {
    use core::cell::Cell;

    std::thread_local! {
        /// Called by `Heap::take` on this thread before each round of pops.
        pub(super) static BEFORE_POP: Cell<Option<fn()>> = const { Cell::new(None) };
        /// Called by `trim_class` on this thread once it has drained a
        /// class's queue into its private chain.
        pub(super) static AFTER_DRAIN: Cell<Option<fn()>> = const { Cell::new(None) };
    }
}

/// Two-level segregated fit with per-thread caches and lock-free class
/// queues. See the [module docs](self).
///
/// ```
/// use std::alloc::Layout;
/// use allocasm::SegregatedFit;
///
/// let a = SegregatedFit::new();
/// let layout = Layout::from_size_align(100, 16).unwrap();
/// let p = a.alloc(layout).unwrap();
/// assert_eq!(p.as_ptr() as usize % 16, 0);
/// // SAFETY: allocated above with `layout`.
/// unsafe { a.dealloc(p, layout) };
/// // The block is back in this thread's cache: the next allocation of the
/// // class gets it again (LIFO).
/// assert_eq!(a.alloc(layout).unwrap(), p);
/// ```
#[derive(Debug)]
pub struct SegregatedFit {
    /// The heap, mapped at the first allocation (null until then).
    heap: AtomicPtr<Heap>,
    /// The name the `hardened` checks' abort lines start with, if not
    /// `allocasm` (see [`reporting_as`](Self::reporting_as)).
    #[cfg(feature = "hardened")]
    name: Option<&'static str>,
}

impl Default for SegregatedFit {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`SegregatedFit::stats`] reports for one size class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassStats {
    /// The class's block size in bytes.
    pub block_size: usize,
    /// Spans grown for the class (trimmed ones included).
    pub spans: usize,
    /// Of those, spans trimmed (pages purged, kept for the next growth).
    pub trimmed_spans: usize,
    /// Blocks in untrimmed spans.
    pub blocks: usize,
    /// Blocks free in the class queue and its run stack, and those of the
    /// span being handed out that are not linked yet (a span is linked a
    /// batch at a time).
    pub free: usize,
    /// Blocks held in thread caches.
    pub cached: usize,
    /// Blocks in use: `blocks - free - cached`.
    pub in_use: usize,
    /// Bytes in use: `in_use * block_size`.
    pub bytes_in_use: usize,
}

/// What [`SegregatedFit::stats`] reports: per class, and the totals.
/// Exact when no other thread allocates or frees meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegregatedStats {
    /// One entry per size class, indexed by [`SizeClass::index`].
    pub classes: [ClassStats; SizeClass::COUNT],
    /// Bytes of spans carved from the region (the address space committed
    /// at some point; trimmed spans included).
    pub span_bytes: usize,
    /// Live large blocks.
    pub large_blocks: usize,
    /// Bytes mapped for them.
    pub large_bytes: usize,
    /// Freed large mappings kept for reuse (not live: not in
    /// `large_blocks`); `trim` unmaps them.
    pub large_cached: usize,
    /// Their bytes (not in `large_bytes` nor `bytes_in_use`).
    pub large_cached_bytes: usize,
}

impl SegregatedStats {
    /// Bytes in use over every class and the large path (mapped bytes).
    pub fn bytes_in_use(&self) -> usize {
        self.classes.iter().map(|c| c.bytes_in_use).sum::<usize>() + self.large_bytes
    }

    /// Blocks held in thread caches, over every class.
    pub fn cached_blocks(&self) -> usize {
        self.classes.iter().map(|c| c.cached).sum()
    }
}

impl SegregatedFit {
    /// The largest request served from a size class (64 KiB).
    pub const MAX_CLASS_SIZE: usize = MAX_CLASS_SIZE;
    /// The largest alignment served from a size class (4096).
    pub const MAX_CLASS_ALIGN: usize = MAX_CLASS_ALIGN;
    /// The largest size the large path asks the OS for: 2^47 bytes on 64-bit
    /// targets, the whole user address space of x86_64 Linux, so nothing
    /// larger could ever be mapped; `isize::MAX` elsewhere. A larger size is
    /// [`TooLarge`](AllocError::TooLarge) naming this maximum; a size up to
    /// it is attempted (its mapping adds a 32-byte header and, aligned above
    /// the page size, the alignment), and what the OS cannot map is `Os`.
    pub const MAX_REQUEST: usize = if usize::BITS >= 64 {
        (1u64 << 47) as usize
    } else {
        isize::MAX as usize
    };

    /// An empty allocator. `const`, so it can be a `#[global_allocator]`
    /// static; it maps nothing until the first allocation.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SegregatedFit {
            heap: AtomicPtr::new(ptr::null_mut()),
            #[cfg(feature = "hardened")]
            name: None,
        }
    }

    /// This allocator, naming `name` at the start of the lines its
    /// `hardened` checks abort with (`allocasm` otherwise): the drop-in
    /// malloc's say `allocasm-malloc: free(): double free of 0x…`. The
    /// lines are the process's last words, so the name is process-wide:
    /// the first named allocator to map its heap sets it.
    ///
    /// ```
    /// use allocasm::SegregatedFit;
    ///
    /// static HEAP: SegregatedFit = SegregatedFit::new().reporting_as("my-malloc");
    /// ```
    #[cfg(all(feature = "hardened", not(loom)))]
    pub const fn reporting_as(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// An empty allocator (loom build: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        SegregatedFit {
            heap: AtomicPtr::new(ptr::null_mut()),
            #[cfg(feature = "hardened")]
            name: None,
        }
    }

    /// The size class shared by allocation and sized deallocation, or `None`
    /// for the large path. See [`SizeClass::of`].
    #[inline(always)]
    pub fn size_class(size: usize, align: usize) -> Option<SizeClass> {
        SizeClass::of(size, align)
    }

    /// The heap's address for the cache's owner compare (null before the
    /// first allocation: no cache has that owner).
    #[cfg(not(loom))]
    #[inline(always)]
    fn heap_addr(&self) -> usize {
        // ORDERING: Relaxed: only compared, never dereferenced.
        self.heap.load(Ordering::Relaxed).expose_provenance()
    }

    /// The heap, if mapped.
    #[inline]
    fn heap(&self) -> Option<&Heap> {
        // ORDERING: Acquire pairs with the Release of `init_heap`: the heap's
        // contents (zeroed memory from the OS) are visible.
        // SAFETY: a non-null heap was mapped by `init_heap` and lives until
        // the allocator is dropped.
        unsafe { self.heap.load(Ordering::Acquire).as_ref() }
    }

    /// The heap, mapping it on first use.
    #[inline]
    fn heap_or_init(&self) -> Result<&Heap, AllocError> {
        match self.heap() {
            Some(h) => Ok(h),
            None => self.init_heap(),
        }
    }

    #[cold]
    #[inline(never)]
    fn init_heap(&self) -> Result<&Heap, AllocError> {
        let len = heap_len();
        let mapping = sys::map(len)?;
        let fresh = mapping.cast::<Heap>();
        let home = fresh.as_ptr().expose_provenance();
        // SAFETY: a zeroed mapping of at least `size_of::<Heap>()` bytes,
        // page-aligned: a valid fresh heap (see `Heap`), not yet published,
        // so this is the only reference to it. The writes come before the
        // publish below, whose Release orders them before every reader's
        // Acquire.
        for c in &mut unsafe { &mut *fresh.as_ptr() }.classes {
            c.growth.home = home;
        }
        // SAFETY: as above.
        let shapes = unsafe { &mut (*fresh.as_ptr()).shapes };
        for i in 0..SizeClass::COUNT {
            let class = SizeClass::from_index(i).expect("class index");
            shapes[usize::from(class.tag())] = Shape::of(class);
        }
        #[cfg(feature = "hardened")]
        {
            let key = harden::new_key(home);
            // SAFETY: as above: not yet published, ours alone.
            let heap = unsafe { &mut *fresh.as_ptr() };
            heap.key = key;
            for (i, c) in heap.classes.iter_mut().enumerate() {
                let size = SizeClass::from_index(i).expect("class index").block_size();
                c.queue.set_key(key);
                c.runs.set_key(key, size);
            }
            if let Some(name) = self.name {
                harden::report_as(name);
            }
        }
        // The span region is reserved before the heap is published, so
        // that every published heap's is (`Region::tag_at` relies on it).
        #[cfg(target_pointer_width = "64")]
        {
            // SAFETY: as above: not yet published, ours alone.
            let region = unsafe { &(*fresh.as_ptr()).region };
            if let Err(e) = region.reserve() {
                // SAFETY: our mapping, never published nor listed.
                let _ = unsafe { sys::release(fresh.cast(), len) };
                return Err(e);
            }
        }
        // Listed before it is published, so no thread can hold one of its
        // locks across a `fork` that the handlers would not take.
        // SAFETY: a zeroed mapping of `heap_len()` bytes, at least a
        // `Mapped`, ours, unlisted; unlisted below or in `drop` before it
        // is released.
        #[cfg(not(loom))]
        unsafe {
            fork::link(mapping.cast())
        };
        // ORDERING: AcqRel: releases the fresh heap (zeroed by the OS) to
        // other threads; acquires a competitor's on failure.
        match self.heap.compare_exchange(
            ptr::null_mut(),
            fresh.as_ptr(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: a zeroed mapping of at least `size_of::<Heap>()` bytes,
            // page-aligned: a valid fresh heap (see `Heap`), now published.
            Ok(_) => Ok(unsafe { fresh.as_ref() }),
            Err(winner) => {
                // SAFETY: listed above, never published.
                #[cfg(not(loom))]
                unsafe {
                    fork::unlink(mapping.cast())
                };
                // SAFETY: our mapping, never published; its region (which
                // nothing carved from) with it.
                unsafe {
                    (*fresh.as_ptr()).region.release_all();
                    let _ = sys::release(fresh.cast(), len);
                }
                // SAFETY: the winner's heap, published with Release.
                Ok(unsafe { &*winner })
            }
        }
    }

    /// Allocates a block for `layout`: pops the calling thread's cache for
    /// its class, refilling it from the class queue (growing the class when
    /// the queue is empty) on a miss; large requests go to the OS.
    #[inline(always)]
    pub fn alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        self.alloc_or_none(layout).ok_or_else(refusal)
    }

    /// [`alloc`](Self::alloc) as a pointer (`GlobalAlloc::alloc` is this):
    /// `None` with the reason in `REFUSAL`, so a miss is a tail call. A zero
    /// size maps like one byte.
    #[inline(always)]
    fn alloc_or_none(&self, layout: Layout) -> Option<NonNull<u8>> {
        match Self::size_class(layout.size(), layout.align()) {
            Some(class) => self.alloc_in(class, layout),
            None => self.alloc_large(layout),
        }
    }

    /// `GlobalAlloc::alloc` for a request above 1 KiB or aligned above 16:
    /// out of line, so the small requests' path stays short.
    #[cold]
    #[inline(never)]
    fn alloc_not_small(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.alloc_or_none(layout)
    }

    /// `GlobalAlloc::dealloc` for a request above 1 KiB or aligned above
    /// 16, out of line.
    ///
    /// # Safety
    ///
    /// As for [`dealloc`](Self::dealloc).
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_not_small(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.dealloc(ptr, layout) }
    }

    /// `alloc` once the class is known (`allocate` reports the class's block
    /// size as the length, so it computes the class only once too).
    ///
    /// `None` with the reason in [`refusal`]: the hot path and the cold
    /// paths pass one pointer in a register (see `REFUSAL`).
    #[inline(always)]
    fn alloc_in(&self, class: SizeClass, layout: Layout) -> Option<NonNull<u8>> {
        #[cfg(not(loom))]
        if let Some(p) = cache::try_pop(self.heap_addr(), class.index()) {
            #[cfg(debug_assertions)]
            self.debug_check_alloc(class, p, layout);
            return Some(p);
        }
        self.alloc_miss(class, layout)
    }

    /// The cache missed: refill it, or (no cache on this thread) pop the
    /// queue. `None`: see [`refusal`].
    #[cold]
    #[inline(never)]
    fn alloc_miss(&self, class: SizeClass, layout: Layout) -> Option<NonNull<u8>> {
        let p = self.refill_or_pop(class, layout);
        if p.is_none() {
            // The refusal names the caller's size, not a span's or a
            // class's.
            REFUSAL.set(for_request(refusal(), layout.size()));
        }
        p
    }

    /// [`alloc_miss`](Self::alloc_miss)'s work: refill this thread's
    /// cache, or pop the queue.
    #[inline]
    fn refill_or_pop(&self, class: SizeClass, layout: Layout) -> Option<NonNull<u8>> {
        let heap = refuse(self.heap_or_init())?;
        #[cfg(not(loom))]
        let p = match refuse(cache::refill(heap, class))? {
            Some(p) => p,
            None => heap.alloc_shared(class)?,
        };
        #[cfg(loom)]
        let p = heap.alloc_shared(class)?;
        // SAFETY: a block of `class`, now ours.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_used(p, class)
        };
        #[cfg(debug_assertions)]
        self.debug_check_alloc(class, p, layout);
        let _ = layout;
        Some(p)
    }

    /// Allocates from the class queue directly, bypassing the thread cache:
    /// the write-up's allocator as it was (one compare-exchange on the
    /// sequenced front, retried on contention; growth when the queue is
    /// empty). Blocks may be freed with either `dealloc`.
    #[inline(always)]
    pub fn alloc_shared(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        self.alloc_shared_or_none(layout).ok_or_else(refusal)
    }

    /// [`alloc_shared`](Self::alloc_shared) for a non-zero `layout` as a
    /// pointer, as the write-up's listing returns it (and its probe reads
    /// it): `None` with the reason in `REFUSAL`, so a miss is a tail call.
    #[inline(always)]
    pub(crate) fn alloc_shared_or_none(&self, layout: Layout) -> Option<NonNull<u8>> {
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            return self.alloc_large(layout);
        };
        let p = match self.heap() {
            Some(heap) => heap.alloc_shared(class),
            None => self.alloc_shared_init(class),
        }?;
        // SAFETY: a block of `class`, now ours.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_used(p, class)
        };
        #[cfg(debug_assertions)]
        self.debug_check_alloc(class, p, layout);
        Some(p)
    }

    #[cold]
    #[inline(never)]
    fn alloc_shared_init(&self, class: SizeClass) -> Option<NonNull<u8>> {
        refuse(self.heap_or_init())?.alloc_shared(class)
    }

    /// Allocates a zeroed block: class blocks are cleared, large blocks are
    /// fresh mappings, already zero, or reused ones, cleared.
    pub fn alloc_zeroed(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() != 0 && Self::size_class(layout.size(), layout.align()).is_none() {
            return self.alloc_large_zeroed(layout).ok_or_else(refusal);
        }
        let p = self.alloc(layout)?;
        if Self::size_class(layout.size(), layout.align()).is_some() {
            // SAFETY: a block of at least `layout.size()` bytes, ours.
            unsafe { p.as_ptr().write_bytes(0, layout.size()) };
        }
        Ok(p)
    }

    /// Pops a block for `layout` from this thread's cache or the class queue,
    /// or fails with `OutOfMemory`; never grows and never calls the OS (so
    /// large requests fail too).
    pub fn try_alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        let empty = AllocError::OutOfMemory {
            requested: layout.size(),
            available: 0,
        };
        let class = Self::size_class(layout.size(), layout.align()).ok_or(empty)?;
        #[cfg(not(loom))]
        if let Some(p) = cache::try_pop_either(self.heap_addr(), class.index()) {
            #[cfg(debug_assertions)]
            self.debug_check_alloc(class, p, layout);
            return Ok(p);
        }
        let heap = self.heap().ok_or(empty)?;
        let c = heap.class(class);
        let p = match c.queue.pop(&heap.region) {
            Some(p) => p,
            None => {
                // The free blocks may all be in flushed runs: take one, keep
                // its first block, queue the rest. Or in the fresh span, not
                // linked yet: link a few onto the queue (no growth).
                let Some(first) = c.runs.pop(&heap.region) else {
                    let linked = {
                        let _guard = heap.growth_lock(class).lock();
                        // SAFETY: under the growth lock. No growth, so no
                        // error.
                        c.queue.is_empty()
                            && unsafe { heap.hand_out_fresh(class, 0, false) } == Ok(true)
                    };
                    if !linked {
                        return Err(empty);
                    }
                    return self.try_alloc(layout);
                };
                // SAFETY: a run we popped: ours, null-terminated.
                let second = queue::code(
                    unsafe { queue::link(first) }.load(Ordering::Relaxed),
                    heap.key(),
                );
                if let Some(second) = NonNull::new(second) {
                    // SAFETY: the rest of our run: blocks of this class.
                    unsafe {
                        c.queue
                            .push(heap.base(), second, run_last(second, heap.key()))
                    };
                }
                first
            }
        };
        c.growth.free.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: a block of `class`, now ours.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_used(p, class)
        };
        #[cfg(debug_assertions)]
        self.debug_check_alloc(class, p, layout);
        Ok(p)
    }

    /// The large path: straight to the OS. `None`: see [`refusal`].
    #[cold]
    #[inline(never)]
    fn alloc_large(&self, layout: Layout) -> Option<NonNull<u8>> {
        refuse(self.heap_or_init().and_then(|h| {
            h.large
                .alloc(&h.large_cache, layout, Self::MAX_REQUEST, false)
        }))
    }

    /// [`alloc_large`](Self::alloc_large) for `alloc_zeroed`: a reused
    /// mapping is cleared.
    #[cold]
    #[inline(never)]
    fn alloc_large_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        refuse(self.heap_or_init().and_then(|h| {
            h.large
                .alloc(&h.large_cache, layout, Self::MAX_REQUEST, true)
        }))
    }

    /// Gives a block back: pushes it onto the calling thread's cache for its
    /// class, flushing half of the cache to the class queue when it is full
    /// (large blocks go back to the OS).
    ///
    /// # Safety
    ///
    /// `ptr` was allocated by this allocator with `layout` (or a size that
    /// maps to the same class, see [`size_class`](Self::size_class)), is not
    /// freed twice, and is not used afterwards.
    ///
    /// Debug builds panic on a pointer that is not a block of the class's
    /// spans ("foreign pointer") and on a block that is already free
    /// ("double free").
    #[inline(always)]
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            // SAFETY: forwarded contract; the same layout maps to no class,
            // so `ptr` came from `alloc_large`.
            return unsafe { self.dealloc_large(ptr, layout) };
        };
        // SAFETY: forwarded contract; `class` is the one `layout` maps to.
        unsafe { self.dealloc_in(ptr, class) }
    }

    /// [`dealloc`](Self::dealloc) once the class is known: the *unsized*
    /// free, with the class from [`class_of`](Self::class_of) (as a
    /// drop-in `free(p)` does).
    ///
    /// # Safety
    ///
    /// `ptr` is a live block of `class` allocated by this allocator, not
    /// freed twice and not used afterwards.
    ///
    /// Debug builds panic as `dealloc`'s do.
    #[inline(always)]
    pub unsafe fn dealloc_in(&self, ptr: NonNull<u8>, class: SizeClass) {
        #[cfg(debug_assertions)]
        self.debug_check_free(class, ptr);
        #[cfg(not(loom))]
        if cache::try_push(self.heap_addr(), class.index(), ptr) {
            return;
        }
        self.dealloc_miss(class, ptr);
    }

    /// The size class of the span `ptr` lies in, or `None` when it lies in
    /// none of this allocator's spans (a large block, another allocator's
    /// memory, null, or nothing allocated yet). For a block of a class this
    /// is its class, whatever layout it was allocated with: with
    /// [`dealloc_in`](Self::dealloc_in) it frees a block without its
    /// layout, and [`SizeClass::block_size`] is the block's usable size.
    ///
    /// O(1): a range check and a byte load from the region's class map (a
    /// byte per 16 KiB of spans, written when a span is carved). 64-bit
    /// targets only (32-bit ones map each span on its own and keep no map).
    ///
    /// ```
    /// use allocasm::SegregatedFit;
    /// use core::alloc::Layout;
    ///
    /// let heap = SegregatedFit::new();
    /// let layout = Layout::from_size_align(100, 16).unwrap();
    /// let p = heap.alloc(layout).unwrap();
    /// let class = heap.class_of(p.as_ptr()).unwrap();
    /// assert_eq!(Some(class), SegregatedFit::size_class(100, 16));
    /// assert!(class.block_size() >= 100);
    /// assert_eq!(heap.class_of(core::ptr::null()), None);
    /// // SAFETY: a live block of that class, freed once.
    /// unsafe { heap.dealloc_in(p, class) };
    /// ```
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub fn class_of(&self, ptr: *const u8) -> Option<SizeClass> {
        let heap = self.heap()?;
        SizeClass::from_tag(heap.region.tag_of(ptr.addr()))
    }

    /// What `ptr` is to this allocator, without reading or trusting it: the
    /// start of a block of a size class, a pointer into a span off its
    /// blocks' starts, a pointer into a live large block's mapping, or none
    /// of its memory. For a free that cannot trust its caller (the drop-in
    /// `free`: see docs/malloc-hardening.md). The class case is O(1) (the
    /// class map's byte, a multiply for the block boundary); the large case
    /// walks the live large blocks under their lock.
    ///
    /// ```
    /// use allocasm::SegregatedFit;
    /// use allocasm::segregated::Located;
    /// use core::alloc::Layout;
    ///
    /// let heap = SegregatedFit::new();
    /// let layout = Layout::from_size_align(48, 16).unwrap();
    /// let p = heap.alloc(layout).unwrap();
    /// let class = SegregatedFit::size_class(48, 16).unwrap();
    /// assert_eq!(heap.locate(p.as_ptr()), Located::Block(class));
    /// assert_eq!(heap.locate(p.as_ptr().wrapping_add(16)), Located::OffBlock(class));
    /// let local = 0u8;
    /// assert_eq!(heap.locate(&local), Located::Foreign);
    /// // SAFETY: allocated above with `layout`.
    /// unsafe { heap.dealloc(p, layout) };
    /// ```
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub fn locate(&self, ptr: *const u8) -> Located {
        let Some(heap) = self.heap() else {
            return Located::Foreign;
        };
        let addr = ptr.addr();
        let tag = heap.region.tag_of(addr);
        if let Some(class) = SizeClass::from_tag(tag) {
            return if heap.shapes[usize::from(tag)].is_block(addr) {
                Located::Block(class)
            } else {
                Located::OffBlock(class)
            };
        }
        Self::locate_large(heap, addr)
    }

    /// The class of the block `ptr` is the start of, or `None`: anything
    /// else ([`locate`](Self::locate) says what). The drop-in `free`'s fast
    /// test: the class map's byte, the class's span shape, a multiply.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub fn block_at(&self, ptr: *const u8) -> Option<SizeClass> {
        Self::block_in(self.heap()?, ptr.addr())
    }

    /// [`block_at`](Self::block_at), and whether that block is free: a
    /// free of it now would abort as a double free. Always `false` without
    /// the `hardened` feature (no tags), and for the 8-byte class (no room
    /// for one). One load of the heap for both, as the drop-in `realloc`
    /// asks before it reads a block or hands it back as it is. A block whose
    /// tag is the key but whose first word is no coded link (a write after
    /// free overwrote it, or a live block holds a copy of the key) is free
    /// if this thread's cache holds it: that case walks the class's list,
    /// out of line. (Not a stable API: the `allocasm-malloc` library's.)
    ///
    /// # Safety
    ///
    /// If `ptr` is the start of a block of this allocator, no other thread
    /// writes that block meanwhile (it is the caller's, or free).
    #[doc(hidden)]
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub unsafe fn block_at_and_free(&self, ptr: *const u8) -> Option<(SizeClass, bool)> {
        let heap = self.heap()?;
        let class = Self::block_in(heap, ptr.addr())?;
        #[cfg(feature = "hardened")]
        if harden::tagged(class) {
            // SAFETY: the start of a block of this heap (checked), so not
            // null.
            let block = unsafe { NonNull::new_unchecked(ptr.cast_mut()) };
            // SAFETY: a block of `class` of this heap, at least `TAGGED_MIN`
            // bytes; no other thread writes it (the caller's contract).
            let free = unsafe { harden::tag_word(block) } == heap.key
                // SAFETY: as above.
                && (unsafe { harden::looks_free(block, heap.key, heap.base()) } || {
                    #[cfg(not(loom))]
                    let held = cache::holds(heap.addr(), class.index(), block);
                    #[cfg(loom)]
                    let held = false;
                    held
                });
            return Some((class, free));
        }
        Some((class, false))
    }

    /// [`block_at`](Self::block_at), and whether that block's tag is the
    /// key: `false` proves the block is not free (a free block always holds
    /// the key), `true` asks [`block_at_and_free`](Self::block_at_and_free).
    /// The drop-in `realloc`'s hit path: one compare. Always `false`
    /// without the `hardened` feature and for the 8-byte class. (Not a
    /// stable API: the `allocasm-malloc` library's.)
    ///
    /// # Safety
    ///
    /// As for [`block_at_and_free`](Self::block_at_and_free).
    #[doc(hidden)]
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub unsafe fn block_at_and_tagged(&self, ptr: *const u8) -> Option<(SizeClass, bool)> {
        let heap = self.heap()?;
        let class = Self::block_in(heap, ptr.addr())?;
        #[cfg(feature = "hardened")]
        if harden::tagged(class) {
            // SAFETY: as in `block_at_and_free`.
            let tagged = unsafe { harden::tag_word(NonNull::new_unchecked(ptr.cast_mut())) };
            return Some((class, tagged == heap.key));
        }
        Some((class, false))
    }

    /// [`block_at`](Self::block_at) in a heap the caller has loaded.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    fn block_in(heap: &Heap, addr: usize) -> Option<SizeClass> {
        let tag = Self::block_tag(heap, addr)?;
        // SAFETY: only a class's tag has a shape with blocks.
        Some(unsafe { SizeClass::from_tag_unchecked(tag as u8) })
    }

    /// The class map byte of the block `addr` is the start of, widened (so
    /// that a caller's `tag - 1` folds into its address arithmetic), or
    /// `None`.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    fn block_tag(heap: &Heap, addr: usize) -> Option<usize> {
        let tag = usize::from(heap.region.tag_at(addr)?);
        // A byte that names no class has the zeroed shape: no block.
        heap.shapes[tag].is_block(addr).then_some(tag)
    }

    /// The drop-in `free`'s hit path, for a caller that takes its own slow
    /// path: when `ptr` is the start of a block of a class
    /// ([`block_at`](Self::block_at)) and this thread's cache has room for
    /// it, the block goes there and this returns `true`; otherwise it
    /// returns `false` and nothing changed. No call: a caller whose slow
    /// path is a tail call needs no stack frame. The heap is loaded once
    /// for both the class map and the cache's owner test. (Not a stable
    /// API: the `allocasm-malloc` library's.)
    ///
    /// # Safety
    ///
    /// `ptr` is no block of this allocator, or a live one (allocated and
    /// not freed since); the `hardened` feature aborts on a second free of
    /// a block the cache took.
    #[doc(hidden)]
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub unsafe fn free_cached(&self, ptr: *mut u8) -> bool {
        let Some(heap) = self.heap() else {
            return false;
        };
        let Some(tag) = Self::block_tag(heap, ptr.addr()) else {
            return false;
        };
        // Only a class's tag has a shape with blocks: at least 1.
        let index = tag.wrapping_sub(1);
        // SAFETY: the start of a block (checked), so not null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        #[cfg(not(loom))]
        if cache::try_push(heap.addr(), index, ptr) {
            // Checked once the block is taken: a `false` leaves it to the
            // caller's slow path, which checks it there.
            #[cfg(debug_assertions)]
            self.debug_check_free(SizeClass::from_index(index).expect("a class's tag"), ptr);
            return true;
        }
        #[cfg(loom)]
        let _ = (ptr, index);
        false
    }

    /// The drop-in `malloc`'s hit path, for a caller that takes its own
    /// slow path: a block of `class` from this thread's cache, or `None`
    /// (the cache is empty, or serves another allocator) with nothing
    /// changed. No call, as for [`free_cached`](Self::free_cached). (Not
    /// a stable API: the `allocasm-malloc` library's.)
    #[doc(hidden)]
    #[inline(always)]
    pub fn alloc_cached(&self, class: SizeClass) -> Option<NonNull<u8>> {
        #[cfg(not(loom))]
        {
            let p = cache::try_pop(self.heap_addr(), class.index());
            #[cfg(debug_assertions)]
            if let Some(p) = p {
                let layout =
                    Layout::from_size_align(class.block_size(), class.align()).expect("layout");
                self.debug_check_alloc(class, p, layout);
            }
            p
        }
        #[cfg(loom)]
        {
            let _ = class;
            None
        }
    }

    /// The drop-in `realloc`'s hit path, for a caller that takes its own
    /// slow path: a block of class `to` from this thread's cache, `copy`
    /// run on it (while `old` is still the caller's), then `old` into the
    /// cache, with one thread-local look-up and one owner test for both
    /// (`alloc_cached`, the copy and `free_cached` made two, and left
    /// `old`'s double-free test to be made twice). `None`, with nothing
    /// changed and `copy` not run, where the cache cannot do both (empty,
    /// full, serving another allocator). No call, as for
    /// [`free_cached`](Self::free_cached). (Not a stable API: the
    /// `allocasm-malloc` library's.)
    ///
    /// # Safety
    ///
    /// `old` is the start of a live block of class `from` of this
    /// allocator, which [`block_at_and_free`](Self::block_at_and_free) just
    /// found not free (or [`block_at_and_tagged`](Self::block_at_and_tagged)
    /// untagged); it is no longer the caller's once this returns
    /// `Some`.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn realloc_cached(
        &self,
        old: NonNull<u8>,
        from: SizeClass,
        to: SizeClass,
        copy: impl FnOnce(NonNull<u8>),
    ) -> Option<NonNull<u8>> {
        #[cfg(not(loom))]
        {
            let fresh = cache::try_swap(self.heap_addr(), to.index(), from.index(), old, |p| {
                #[cfg(debug_assertions)]
                self.debug_check_alloc(
                    to,
                    p,
                    Layout::from_size_align(to.block_size(), to.align()).expect("layout"),
                );
                copy(p);
            });
            #[cfg(debug_assertions)]
            if fresh.is_some() {
                self.debug_check_free(from, old);
            }
            fresh
        }
        #[cfg(loom)]
        {
            let _ = (old, from, to, copy);
            None
        }
    }

    /// [`locate`](Self::locate) outside the span region: the live large
    /// blocks' list, out of line (the class case is the drop-in `free`'s
    /// hot path).
    #[cfg(target_pointer_width = "64")]
    #[cold]
    #[inline(never)]
    fn locate_large(heap: &Heap, addr: usize) -> Located {
        match heap.large.containing(addr) {
            Some((start, len, header)) => Located::Large { start, len, header },
            None => Located::Foreign,
        }
    }

    /// The cache was full (or serves another allocator, or there is none).
    #[cold]
    #[inline(never)]
    fn dealloc_miss(&self, class: SizeClass, ptr: NonNull<u8>) {
        let Some(heap) = self.heap() else {
            breach(
                b"SegregatedFit: free before any allocation (a foreign pointer or a wrong layout)",
            );
        };
        #[cfg(not(loom))]
        if cache::flush_and_push(heap, class, ptr) {
            return;
        }
        // SAFETY: the caller's block of this class.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_free(ptr, class, heap.key, heap.base())
        };
        // SAFETY: the caller's block of this class.
        unsafe { heap.give(class, ptr, ptr, 1) };
    }

    /// Frees a block straight onto its class queue, bypassing the thread
    /// cache (the write-up's push: a store, a swap, a store).
    ///
    /// # Safety
    ///
    /// As for [`dealloc`](Self::dealloc).
    #[inline(always)]
    pub unsafe fn dealloc_shared(&self, ptr: NonNull<u8>, layout: Layout) {
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            // SAFETY: forwarded contract.
            return unsafe { self.dealloc_large(ptr, layout) };
        };
        #[cfg(debug_assertions)]
        self.debug_check_free(class, ptr);
        // SAFETY: a block exists, so the heap does; published with Release
        // before the block was handed out.
        let heap = unsafe { &*self.heap.load(Ordering::Acquire) };
        // SAFETY: the caller's block of this class.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_free(ptr, class, heap.key, heap.base())
        };
        // SAFETY: the caller gives us a block of this class it owned.
        unsafe { heap.give(class, ptr, ptr, 1) };
    }

    /// The debug-build checks of an allocation: aligned, and free until now.
    #[cfg(debug_assertions)]
    #[cold]
    #[inline(never)]
    fn debug_check_alloc(&self, class: SizeClass, p: NonNull<u8>, layout: Layout) {
        assert!(
            p.as_ptr().addr().is_multiple_of(layout.align()),
            "{:#p} from class {} is not aligned to {}",
            p,
            class.index(),
            layout.align()
        );
        // SAFETY: `p` is a block of this class's spans.
        unsafe {
            span::debug_mark(
                p,
                span::geometry(class.block_size()),
                class.block_size(),
                false,
            )
        };
    }

    /// The debug-build checks of a free: the block must belong to the
    /// class, and must not be free already (in any order of frees: its bit
    /// in the span's bitmap).
    #[cfg(debug_assertions)]
    #[cold]
    #[inline(never)]
    fn debug_check_free(&self, class: SizeClass, ptr: NonNull<u8>) {
        let owned = self.heap().is_some_and(|h| {
            span::contains_block(&h.class(class).growth.spans, class.block_size(), ptr)
        });
        assert!(
            owned,
            "SegregatedFit: foreign pointer {ptr:#p}: not a block of class {} ({} bytes)",
            class.index(),
            class.block_size()
        );
        // SAFETY: a block of this class's spans (checked above).
        unsafe {
            span::debug_mark(
                ptr,
                span::geometry(class.block_size()),
                class.block_size(),
                true,
            )
        };
    }

    /// Frees a large block.
    ///
    /// # Safety
    ///
    /// `ptr` came from `alloc_large(layout)`.
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_large(&self, ptr: NonNull<u8>, layout: Layout) {
        let Some(heap) = self.heap() else {
            breach(
                b"SegregatedFit: free before any allocation (a foreign pointer or a wrong layout)",
            );
        };
        // SAFETY: forwarded contract.
        unsafe { heap.large.dealloc(&heap.large_cache, ptr, layout.size()) }
    }

    /// Links `blocks` into a chain for [`dealloc_batch`](Self::dealloc_batch)
    /// and returns its `(first, last)`, or `None` when `blocks` is empty.
    ///
    /// The chain layout: the first pointer-sized word of each block holds
    /// the address of the next block (written as an `AtomicPtr<u8>`); the
    /// last block's word is ignored (the batch free writes null there).
    /// Callers may also write that layout themselves.
    ///
    /// # Safety
    ///
    /// Every block is a live block of this allocator of one and the same
    /// class, owned by the caller, appearing once, and not used afterwards
    /// except by passing the chain to `dealloc_batch`.
    pub unsafe fn link_batch(
        blocks: impl IntoIterator<Item = NonNull<u8>>,
    ) -> Option<(NonNull<u8>, NonNull<u8>)> {
        let mut it = blocks.into_iter();
        let first = it.next()?;
        let mut last = first;
        for b in it {
            // SAFETY: `last` is a block of at least 8 bytes, 8-aligned, that
            // the caller owns.
            unsafe { queue::link(last) }.store(b.as_ptr(), Ordering::Relaxed);
            last = b;
        }
        Some((first, last))
    }

    /// Frees a chain of blocks of `class` that the caller linked through
    /// their own bytes (see [`link_batch`](Self::link_batch)): one publish
    /// to the class queue, no lock, whatever the length.
    ///
    /// # Safety
    ///
    /// `first..=last` is a chain in the [`link_batch`](Self::link_batch)
    /// layout of live blocks of this allocator, all of class `class` (as
    /// [`size_class`](Self::size_class) gave it for their layouts), each once;
    /// none is used afterwards.
    pub unsafe fn dealloc_batch(&self, first: NonNull<u8>, last: NonNull<u8>, class: SizeClass) {
        let heap = self
            .heap()
            .expect("SegregatedFit: free before any allocation");
        let mut n = 1;
        let mut b = first;
        while b != last {
            #[cfg(debug_assertions)]
            self.debug_check_free(class, b);
            // SAFETY: the caller linked the chain through live blocks.
            let next = unsafe { queue::link(b) }.load(Ordering::Relaxed);
            // `hardened`: each block tagged free (a double free aborts, as
            // `dealloc`'s does), its plain link coded as the queue's are.
            #[cfg(feature = "hardened")]
            // SAFETY: the caller's live block of `class`, given to us.
            unsafe {
                harden::mark_free(b, class, heap.key, heap.base());
                queue::link(b).store(queue::code(next, heap.key), Ordering::Relaxed);
            }
            b = NonNull::new(next).expect("SegregatedFit: the batch chain ends before `last`");
            n += 1;
        }
        #[cfg(debug_assertions)]
        self.debug_check_free(class, last);
        // SAFETY: as above.
        #[cfg(feature = "hardened")]
        unsafe {
            harden::mark_free(last, class, heap.key, heap.base())
        };
        // SAFETY: the caller's chain of this class's blocks.
        unsafe { heap.give(class, first, last, n) };
    }

    /// Whether `ptr` is a block of the class `layout` maps to (walks that
    /// class's spans: O(spans)), or, for the large path, a live large block
    /// of `layout.size()` (O(live large blocks)).
    pub fn owns(&self, ptr: NonNull<u8>, layout: Layout) -> bool {
        let Some(heap) = self.heap() else {
            return false;
        };
        match Self::size_class(layout.size(), layout.align()) {
            Some(class) => {
                span::contains_block(&heap.class(class).growth.spans, class.block_size(), ptr)
            }
            None => heap.large.contains(ptr, layout.size()),
        }
    }

    /// How many spans `class` has grown (trimmed ones included).
    pub fn span_count(&self, class: SizeClass) -> usize {
        self.heap()
            .map_or(0, |h| span::count(&h.class(class).growth.spans))
    }

    /// How many blocks one span of `class` holds.
    pub fn blocks_per_span(class: SizeClass) -> usize {
        span::geometry(class.block_size()).blocks
    }

    /// How many bytes one span of `class` is (a power of two, at least the
    /// base allocator's granularity).
    pub fn span_len(class: SizeClass) -> usize {
        span::geometry(class.block_size()).len
    }

    /// Per-class statistics: spans, free, cached and in-use blocks; plus the
    /// large path. Takes the cache registry lock once; exact when no other
    /// thread allocates or frees meanwhile.
    pub fn stats(&self) -> SegregatedStats {
        let mut s = SegregatedStats {
            classes: [ClassStats::default(); SizeClass::COUNT],
            span_bytes: 0,
            large_blocks: 0,
            large_bytes: 0,
            large_cached: 0,
            large_cached_bytes: 0,
        };
        let Some(heap) = self.heap() else {
            for (i, c) in s.classes.iter_mut().enumerate() {
                c.block_size = SizeClass::from_index(i).map_or(0, SizeClass::block_size);
            }
            return s;
        };
        let mut cached = [0usize; SizeClass::COUNT];
        #[cfg(not(loom))]
        cache::cached(heap.addr(), &mut cached);
        for (i, out) in s.classes.iter_mut().enumerate() {
            let class = SizeClass::from_index(i).expect("class index");
            let c = heap.class(class);
            let spans = span::count(&c.growth.spans);
            let trimmed = c.growth.trimmed.load(Ordering::Relaxed);
            let blocks = (spans - trimmed.min(spans)) * Self::blocks_per_span(class);
            let free = (c.growth.free.load(Ordering::Relaxed) as isize).max(0) as usize;
            let in_use = blocks.saturating_sub(free + cached[i]);
            *out = ClassStats {
                block_size: class.block_size(),
                spans,
                trimmed_spans: trimmed,
                blocks,
                free,
                cached: cached[i],
                in_use,
                bytes_in_use: in_use * class.block_size(),
            };
        }
        s.span_bytes = heap.region.carved();
        (s.large_blocks, s.large_bytes) = heap.large.usage();
        (s.large_cached, s.large_cached_bytes) = heap.large_cache.usage();
        s
    }

    /// Gives the pages of empty spans and the cached large mappings back to
    /// the OS and returns how many bytes that was. Flushes the calling thread's cache first; blocks in
    /// other threads' caches keep their spans. Each class's growth lock is
    /// held while its queue is drained and refilled, so allocations that
    /// miss their cache meanwhile wait for it.
    pub fn trim(&self) -> usize {
        let Some(heap) = self.heap() else {
            return 0;
        };
        #[cfg(not(loom))]
        cache::flush_current(heap);
        let mut purged = 0;
        for i in 0..SizeClass::COUNT {
            let class = SizeClass::from_index(i).expect("class index");
            // SAFETY: called on the class's own heap.
            purged += unsafe { trim_class(heap, class) };
        }
        purged + heap.large.release_cached(&heap.large_cache)
    }
}

// Refusals. The allocation paths hand each other one pointer, `None`
// when refused, never a `Result<_, AllocError>`: that is 32 bytes, comes
// back from an out-of-line slow path through memory, and the inlined fast
// path then merged its own result into the same stack slot (a store of the
// pointer and the tag, a reload and a compare on every allocation). The
// cold path that refuses records why in this thread's `REFUSAL` ([`refuse`])
// and the public functions read it back ([`refusal`]) only when they build
// the `Err`; a caller that only tests the pointer (`GlobalAlloc`) never
// reads it.

std::thread_local! {
    /// Why the last allocation this thread's cold paths refused failed. A
    /// `const` cell without `Drop`: never lazily registered, never
    /// allocates, readable during thread exit.
    static REFUSAL: core::cell::Cell<AllocError> =
        const { core::cell::Cell::new(AllocError::OutOfMemory { requested: 0, available: 0 }) };
}

/// `Some` as it is; an `Err`'s reason goes to this thread's `REFUSAL`.
#[inline(always)]
fn refuse<T>(r: Result<T, AllocError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            REFUSAL.set(e);
            None
        }
    }
}

/// Why this thread's last refused allocation failed (see `REFUSAL`).
#[inline(always)]
fn refusal() -> AllocError {
    REFUSAL.get()
}

/// A breach of `dealloc`'s contract found where the allocator cannot go on:
/// writes `msg` to standard error without allocating and aborts. Never a
/// panic: `dealloc` runs inside `GlobalAlloc::dealloc`, out of which a
/// global allocator must not unwind (and a panic's message would allocate
/// from the allocator that just found itself misused).
#[cold]
#[inline(never)]
fn breach(msg: &[u8]) -> ! {
    sys::write_stderr(msg);
    sys::write_stderr(b"\n");
    std::process::abort()
}

/// Whether `class`'s blocks can form runs (`RunStack`: two words each).
#[cfg(not(loom))]
#[inline(always)]
const fn uses_runs(class: SizeClass) -> bool {
    class.block_size() >= MIN_RUN_BLOCK
}

/// The last block of the null-terminated chain starting at `first`, its
/// links coded with `key` (walks it: cold paths only).
///
/// # Safety
///
/// The chain is the caller's: blocks linked through their first words.
unsafe fn run_last(first: NonNull<u8>, key: usize) -> NonNull<u8> {
    let mut last = first;
    loop {
        // SAFETY: the caller's chain.
        let next = unsafe { queue::link(last) }.load(Ordering::Relaxed);
        match NonNull::new(queue::code(next, key)) {
            Some(next) => last = next,
            None => return last,
        }
    }
}

/// `e` as the refusal of a request of `requested` bytes: an `OutOfMemory`
/// names it (whatever length the level that refused asked the OS for);
/// other errors are as they are.
fn for_request(e: AllocError, requested: usize) -> AllocError {
    match e {
        AllocError::OutOfMemory { available, .. } => AllocError::OutOfMemory {
            requested,
            available,
        },
        e => e,
    }
}

/// The heap's mapping length: the heap and its link in the fork handlers'
/// list of heaps.
fn heap_len() -> usize {
    #[cfg(not(loom))]
    let size = size_of::<fork::Mapped>();
    #[cfg(loom)]
    let size = size_of::<Heap>();
    size.next_multiple_of(sys::page_size())
}

/// Trims one class (see [`SegregatedFit::trim`]).
///
/// # Safety
///
/// `class` is a class of `heap`.
unsafe fn trim_class(heap: &Heap, class: SizeClass) -> usize {
    let c = heap.class(class);
    if c.growth.spans.load(Ordering::Acquire).is_null() {
        return 0;
    }
    let _guard = heap.growth_lock(class).lock();
    let g = span::geometry(class.block_size());
    let base = heap.base();
    let key = heap.key();
    // 1. Drain the runs and the queue into a private chain, counting per
    // span. (Runs go to the queue first: the same loop then counts them.)
    while let Some(first) = c.runs.pop(base) {
        // SAFETY: a run we popped: ours, null-terminated, of this class.
        unsafe { c.queue.push(base, first, run_last(first, key)) };
    }
    // The private chain's links are coded as a free list's are: its blocks
    // keep their tags, and a free of one while it is here (another thread's
    // double free) must look free to `harden::mark_free` and abort, not push
    // the block a second time (with plain links it passed as a live block
    // that happened to hold the key, and the re-chain below handed it back
    // to the queue while a cache held it too).
    let mut chain: *mut u8 = ptr::null_mut();
    let mut drained = 0usize;
    while let Some(b) = c.queue.pop(base) {
        // SAFETY: a block we popped: ours.
        unsafe { queue::link(b) }.store(queue::code(chain, key), Ordering::Relaxed);
        chain = b.as_ptr();
        drained += 1;
        // SAFETY: a block of this class's spans.
        let h = unsafe { span::header_of(b, g).as_ref() };
        h.free.fetch_add(1, Ordering::Relaxed);
    }
    c.growth.free.fetch_sub(drained, Ordering::Relaxed);
    #[cfg(all(test, not(loom)))]
    queue::hooks::call(&hooks::AFTER_DRAIN);
    // The fresh span's blocks not handed out yet are free too (and in no
    // chain).
    let fresh = NonNull::new(c.growth.fresh.load(Ordering::Relaxed));
    let fresh_left = fresh.map_or(0, |f| {
        let left = g.blocks - c.growth.fresh_at.load(Ordering::Relaxed) as usize;
        // SAFETY: the fresh span's first block: a block of this class.
        unsafe { span::header_of(f, g).as_ref() }
            .free
            .fetch_add(left, Ordering::Relaxed);
        left
    });
    // 2. Mark the spans all of whose blocks came back (`TRIMMING`).
    let mut h = c.growth.spans.load(Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: published headers live until drop; `free`/`trimmed` are
        // ours under the lock.
        let span = unsafe { &*h };
        if span.trimmed.load(Ordering::Relaxed) == span::LIVE
            && span.free.load(Ordering::Relaxed) == span.blocks
        {
            span.trimmed.store(span::TRIMMING, Ordering::Relaxed);
        }
        span.free.store(0, Ordering::Relaxed);
        h = span.next;
    }
    // A trimmed fresh span is handed out no further (a growth reuses it).
    if let Some(f) = fresh
        // SAFETY: as above.
        && unsafe { span::header_of(f, g).as_ref() }.trimmed.load(Ordering::Relaxed) == span::TRIMMING
    {
        c.growth.fresh.store(ptr::null_mut(), Ordering::Relaxed);
        c.growth.fresh_at.store(0, Ordering::Relaxed);
        c.growth.free.fetch_sub(fresh_left, Ordering::Relaxed);
    }
    // 3. Re-chain the blocks of the spans that stay (before any purge: the
    // chain runs through the blocks).
    let (mut first, mut last): (*mut u8, *mut u8) = (ptr::null_mut(), ptr::null_mut());
    let mut kept = 0;
    let mut b = chain;
    while let Some(blk) = NonNull::new(b) {
        // SAFETY: our private chain.
        let next = queue::code(unsafe { queue::link(blk) }.load(Ordering::Relaxed), key);
        // SAFETY: a block of this class's spans.
        let h = unsafe { span::header_of(blk, g).as_ref() };
        if h.trimmed.load(Ordering::Relaxed) == span::LIVE {
            if first.is_null() {
                first = blk.as_ptr();
            } else {
                // SAFETY: `last` is a block of our chain, which goes back to
                // the queue: coded links.
                unsafe { queue::link(NonNull::new_unchecked(last)) }
                    .store(queue::code(blk.as_ptr(), key), Ordering::Relaxed);
            }
            last = blk.as_ptr();
            kept += 1;
        }
        b = next;
    }
    // 4. Purge the marked spans.
    let mut purged = 0;
    let mut h = c.growth.spans.load(Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: as above.
        let span = unsafe { &*h };
        if span.trimmed.load(Ordering::Relaxed) == span::TRIMMING {
            // SAFETY: every block of the span was drained above and is in no
            // chain any more.
            let (bytes, zeroed) = unsafe { span::purge(span, class.block_size()) };
            purged += bytes;
            let state = if zeroed {
                span::TRIMMED_ZEROED
            } else {
                span::TRIMMED
            };
            span.trimmed.store(state, Ordering::Relaxed);
            c.growth.trimmed.fetch_add(1, Ordering::Relaxed);
        }
        h = span.next;
    }
    // 5. Give the rest back.
    if let (Some(f), Some(l)) = (NonNull::new(first), NonNull::new(last)) {
        // SAFETY: a chain of this class's free blocks, ours.
        unsafe { heap.give(class, f, l, kept) };
    }
    purged
}

impl Drop for SegregatedFit {
    fn drop(&mut self) {
        let heap = self.heap.swap(ptr::null_mut(), Ordering::Acquire);
        let Some(hp) = NonNull::new(heap) else {
            return;
        };
        // SAFETY: our heap; `&mut self`: no other thread uses the allocator.
        let h = unsafe { hp.as_ref() };
        // Caches of other threads forget this heap's blocks (under the
        // registry lock, which also waits out a thread-exit flush).
        #[cfg(not(loom))]
        cache::forget(h.addr());
        // Out of the fork handlers' list before anything is released.
        // SAFETY: listed by `init_heap` when it was mapped.
        #[cfg(not(loom))]
        unsafe {
            fork::unlink(hp.cast())
        };
        for c in &h.classes {
            // SAFETY: the caller's blocks die with the allocator (see the
            // contract); nobody else uses the spans.
            unsafe { span::release_all(&h.region, &c.growth.spans) };
        }
        // SAFETY: as above.
        unsafe {
            h.large.release_all(&h.large_cache);
            h.region.release_all();
            let _ = sys::release(hp.cast(), heap_len());
        }
    }
}

// `SegregatedFit: Send + Sync` follows from its fields (atomics); this
// checks it at compile time.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SegregatedFit>();
};

// SAFETY: `allocate` returns a block of its class (`block_size() >=
// layout.size()`, aligned by the class) or a large block of `layout.size()`
// bytes, disjoint from every other live block, valid until deallocated or the
// allocator is dropped.
unsafe impl RawAllocator for SegregatedFit {
    const FREES_INDIVIDUALLY: bool = true;

    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::ZeroSize);
        }
        // The class once, for the block and for its length (a large block's
        // length is its request).
        let Some(class) = Self::size_class(layout.size(), layout.align()) else {
            let p = self.alloc_large(layout).ok_or_else(refusal)?;
            return Ok(NonNull::slice_from_raw_parts(p, layout.size()));
        };
        let p = self.alloc_in(class, layout).ok_or_else(refusal)?;
        Ok(NonNull::slice_from_raw_parts(p, class.block_size()))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.dealloc(ptr, layout) }
    }
}

// SAFETY: `alloc` returns blocks of at least `layout.size()` bytes aligned to
// `layout.align()` that no other live allocation overlaps, or null; `dealloc`
// takes back exactly such blocks; the allocator never allocates through the
// global allocator itself (its locks are spin locks, its memory comes from
// the OS, its thread-exit hook is a pthread key / FLS callback), so it can
// be the global allocator.
unsafe impl GlobalAlloc for SegregatedFit {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The pointer path, not `alloc`'s `Result`: nothing to build on a
        // refusal, and a cache miss is a tail call (no frame on the hot
        // path). A global allocator's layouts are not constants: requests
        // up to 1 KiB take their class from the table (`SizeClass::small`),
        // the rest the arithmetic, out of line.
        match SizeClass::small(layout.size(), layout.align()) {
            Some(class) => self.alloc_in(class, layout),
            None => self.alloc_not_small(layout),
        }
        .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        SegregatedFit::alloc_zeroed(self, layout).map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `GlobalAlloc` guarantees `ptr` is a non-null block allocated
        // here with `layout`.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        match SizeClass::small(layout.size(), layout.align()) {
            // SAFETY: the same class `alloc` computed for this layout
            // (`small` and `of` agree).
            Some(class) => unsafe { self.dealloc_in(ptr, class) },
            // SAFETY: forwarded contract.
            None => unsafe { self.dealloc_not_small(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = Self::size_class(layout.size(), layout.align());
        let new = Self::size_class(new_size, layout.align());
        if old.is_some() && old == new {
            // Same class: the block already holds `new_size` bytes.
            return ptr;
        }
        if old.is_none()
            && new.is_none()
            && new_size <= Self::MAX_REQUEST
            && let Some(heap) = self.heap()
        {
            // SAFETY: `ptr` is a live large block allocated with `layout`
            // (it maps to no class), and so does `new_size`.
            let grown = unsafe {
                heap.large.realloc(
                    NonNull::new_unchecked(ptr),
                    layout,
                    new_size,
                    Self::MAX_REQUEST,
                )
            };
            if let Some(p) = grown {
                return p.as_ptr();
            }
        }
        // SAFETY: `GlobalAlloc::realloc` guarantees `new_size`, rounded up to
        // `layout.align()`, does not overflow `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let Ok(new) = SegregatedFit::alloc(self, new_layout) else {
            return ptr::null_mut();
        };
        // SAFETY: both blocks are live, distinct and at least the copied
        // length; the old block is then freed with its own layout.
        unsafe {
            ptr::copy_nonoverlapping(ptr, new.as_ptr(), layout.size().min(new_size));
            SegregatedFit::dealloc(self, NonNull::new_unchecked(ptr), layout);
        }
        new.as_ptr()
    }
}

// SAFETY: blocks stay valid until deallocated or until the allocator (which
// the reference borrows) is dropped; `deallocate` accepts any layout that
// "fits" a block (sizes between the request and the returned length map to
// the same class, see `SizeClass::of`; a large block's length is its
// request); zero-size requests get a dangling, aligned pointer and are never
// passed on.
unsafe impl allocator_api2::alloc::Allocator for &SegregatedFit {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            let dangling = ptr::without_provenance_mut::<u8>(layout.align());
            // SAFETY: an alignment is never zero.
            return Ok(NonNull::slice_from_raw_parts(
                unsafe { NonNull::new_unchecked(dangling) },
                0,
            ));
        }
        Ok(RawAllocator::allocate(*self, layout)?)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: forwarded contract; a fitting layout maps to the
            // block's class.
            unsafe { SegregatedFit::dealloc(self, ptr, layout) }
        }
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use crate::sync::AtomicBool;
    use std::time::{Duration, Instant};

    static STALLED: AtomicBool = AtomicBool::new(false);
    static RESUME: AtomicBool = AtomicBool::new(false);

    /// The stalled freer: parks between its swap and its link until told.
    fn stall() {
        STALLED.store(true, Ordering::SeqCst);
        while !RESUME.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    /// A thread cache that overflows flushes its batch as one run, and the
    /// next refill takes a run back whole, the newest first (`RunStack`),
    /// with no walk of the queue; the queue keeps only what growth put
    /// there. Before, every flush went to the queue and every refill walked
    /// it block by block.
    /// Allocates `n` blocks of `l` from `a`, then frees them all in order
    /// (on a fresh thread: its cache fills, then flushes runs); the blocks.
    pub(super) fn alloc_then_free(a: &SegregatedFit, l: Layout, n: usize) -> Vec<NonNull<u8>> {
        let blocks: Vec<_> = (0..n).map(|_| a.alloc(l).unwrap()).collect();
        for &p in &blocks {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc(p, l) };
        }
        blocks
    }

    /// A span grown for a thread cache's refill is handed out a run of
    /// the batch at a time, in chain order, each run linked only when a
    /// refill needs it; its last blocks (fewer than a batch) go through the
    /// queue, and only then does the class grow again. (It used to link the
    /// whole span at its growth, runs on the stack and the rest queued,
    /// touching every page of it at once.) A class's first span starts its
    /// chain in the page of its header, and its first batch ends at the
    /// span's end, in that page (before, the first run of 64-byte blocks
    /// touched two more pages).
    #[test]
    fn a_span_grown_for_a_refill_is_handed_out_a_run_at_a_time() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 8).unwrap();
        let class = SegregatedFit::size_class(64, 8).unwrap();
        let batch = cache::batch(class.index());
        let per_span = SegregatedFit::blocks_per_span(class);
        assert!(batch > 1 && per_span > 2 * batch && uses_runs(class));
        std::thread::scope(|s| {
            s.spawn(|| {
                // The first allocation grows the class's first span; the
                // refill took the blocks from the chain's start to the
                // span's end, all in the page of the span's header.
                let first = a.alloc(l).unwrap();
                let heap = a.heap().unwrap();
                let c = heap.class(class);
                assert_eq!(a.span_count(class), 1);
                assert!(c.runs.is_empty());
                let colour = c.growth.fresh_colour.load(Ordering::Relaxed) as usize;
                assert!(colour > 0, "the first span is coloured");
                assert_eq!(
                    c.growth.fresh_at.load(Ordering::Relaxed) as usize,
                    per_span - colour
                );
                let base = c.growth.fresh.load(Ordering::Relaxed).addr();
                let len = span::geometry(64).len;
                assert_eq!(first.as_ptr().addr(), base + colour * 64);
                assert_eq!(
                    first.as_ptr().addr() / 4096,
                    (base + len - 1) / 4096,
                    "the first block shares the header's page"
                );
                // What is left of that batch comes through the queue, then
                // the next refill takes a run from block 0 (the wrap).
                let (mut r, mut n);
                loop {
                    let last;
                    (r, last, n) = heap.take(class, batch).unwrap();
                    if last.is_none() {
                        break;
                    }
                }
                assert_eq!(
                    (r.as_ptr().addr(), n),
                    (base, batch),
                    "the run after the wrap"
                );
                // Each refill that follows takes the next run: `batch`
                // blocks at ascending addresses, in the chain's order.
                let key = heap.key();
                let mut prev = base - 64;
                let runs = colour / batch;
                assert!(
                    !colour.is_multiple_of(batch),
                    "the test wants leftover blocks"
                );
                for j in 1..=runs {
                    if j > 1 {
                        let last;
                        (r, last, n) = heap.take(class, batch).unwrap();
                        assert_eq!((last, n), (None, batch), "run {j} comes whole");
                    }
                    assert_eq!(r.as_ptr().addr(), prev + 64, "run {j} in chain order");
                    let mut b = r;
                    for k in 1..batch {
                        // SAFETY: a run we took: ours, null-terminated.
                        let next =
                            queue::code(unsafe { queue::link(b) }.load(Ordering::Relaxed), key);
                        let next = NonNull::new(next).expect("a whole run");
                        assert_eq!(next.as_ptr().addr(), r.as_ptr().addr() + k * 64);
                        b = next;
                    }
                    // SAFETY: as above.
                    let end = unsafe { queue::link(b) }.load(Ordering::Relaxed);
                    assert!(queue::code(end, key).is_null(), "null-terminated");
                    assert_eq!(
                        c.growth.fresh_at.load(Ordering::Relaxed) as usize,
                        per_span - colour + j * batch
                    );
                    prev = b.as_ptr().addr();
                }
                assert_eq!(a.span_count(class), 1, "no growth while the span lasts");
                // The leftover blocks come through the queue (a batch pop
                // leaves the last block to a single pop), then a run of the
                // next span.
                let mut leftover = 0;
                loop {
                    let (_, last, n) = heap.take(class, batch).unwrap();
                    if last.is_none() {
                        assert_eq!(n, batch);
                        break;
                    }
                    assert_eq!(a.span_count(class), 1, "{leftover} + {n} of the span");
                    leftover += n;
                }
                assert_eq!(leftover, colour % batch, "the leftover blocks");
                assert_eq!(a.span_count(class), 2);
            });
        });
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
    )]
    fn a_full_flush_goes_back_whole_and_a_refill_takes_it() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 8).unwrap();
        let class = SegregatedFit::size_class(64, 8).unwrap();
        let batch = cache::batch(class.index());
        assert!(batch > 1 && uses_runs(class));
        // A fresh thread: its cache starts empty and serves `a` alone.
        std::thread::scope(|s| {
            s.spawn(|| {
                let blocks = alloc_then_free(&a, l, 4 * batch);
                let heap = a.heap().unwrap();
                let c = heap.class(class);
                // The list takes `2 * batch` (its cap); past that, each
                // flush of `batch` makes room: at least two runs.
                let mut runs = Vec::new();
                while let Some(first) = c.runs.pop(heap.base()) {
                    let mut run = vec![first];
                    loop {
                        // SAFETY: a run we popped: ours, null-terminated.
                        let next = unsafe { queue::link(*run.last().unwrap()) };
                        match NonNull::new(queue::code(next.load(Ordering::Relaxed), heap.key())) {
                            Some(n) => run.push(n),
                            None => break,
                        }
                    }
                    runs.push(run);
                }
                assert!(runs.iter().all(|r| r.len() == batch), "each run whole");
                // The flushed runs hold our blocks; below them may lie runs
                // of the span the refills grew, never handed out.
                let ours = |r: &Vec<NonNull<u8>>| r.iter().all(|p| blocks.contains(p));
                let fresh = |r: &Vec<NonNull<u8>>| r.iter().all(|p| !blocks.contains(p));
                assert!(runs.iter().all(|r| ours(r) || fresh(r)), "runs kept whole");
                let flushed = runs.iter().filter(|r| ours(r)).count();
                assert!(flushed >= 2, "{flushed} flushed runs");
                let mut seen: Vec<_> = runs.iter().flatten().copied().collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), runs.len() * batch, "no block twice");
                // Back on the stack (newest last), then a refill's take
                // returns the newest run whole: no last block to terminate.
                for r in runs.iter().rev() {
                    // SAFETY: our run, as popped.
                    unsafe { heap.give_run(class, r[0], batch) };
                }
                let (first, last, n) = heap.take(class, batch).unwrap();
                assert_eq!((first, last, n), (runs[0][0], None, batch));
                // A take of another length (the shared pop's one block)
                // never sees runs directly; with the queue drained it gets
                // one through the queue instead of growing.
                // SAFETY: as above.
                unsafe { heap.give_run(class, first, batch) };
                while c.queue.pop(heap.base()).is_some() {}
                let spans = a.span_count(class);
                let (p, _, one) = heap.take(class, 1).unwrap();
                assert_eq!(one, 1);
                assert!(seen.contains(&p), "a block of a run, not a new span");
                assert_eq!(a.span_count(class), spans, "no growth while runs are free");
            });
        });
    }

    /// Fault 1: a freer preempted between its swap of the back pointer and
    /// its link hides every block behind it. An allocation that finds the
    /// class "unavailable" must wait, not grow: the first version grew a
    /// span per retry for as long as the freer was stalled (here: until the
    /// 32 GiB region ran out, or forever).
    #[test]
    fn a_stalled_freer_does_not_make_the_class_grow() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64 * 1024, 8).unwrap();
        let class = SegregatedFit::size_class(l.size(), l.align()).unwrap();
        let per_span = SegregatedFit::blocks_per_span(class);
        // Take every block of one span through the queue, so it is empty.
        let blocks: Vec<NonNull<u8>> = (0..per_span).map(|_| a.alloc_shared(l).unwrap()).collect();
        assert_eq!(a.span_count(class), 1);
        // SAFETY: the blocks were allocated above with `l`, each freed once.
        unsafe { a.dealloc_shared(blocks[0], l) };
        let freer = {
            let (a, b) = (
                &a as *const SegregatedFit as usize,
                blocks[1].as_ptr() as usize,
            );
            std::thread::spawn(move || {
                queue::hooks::AFTER_SWAP.with(|h| h.set(Some(stall)));
                // SAFETY: `a` outlives the thread (joined below); `b` is a
                // live block of `l`, freed once.
                unsafe {
                    (*(a as *const SegregatedFit))
                        .dealloc_shared(NonNull::new_unchecked(b as *mut u8), l)
                };
            })
        };
        while !STALLED.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // The queue holds blocks 0 and 1, neither reachable: 0's link to 1
        // is what the freer has not stored yet.
        let done = AtomicBool::new(false);
        let (spans_while_stalled, got) = std::thread::scope(|s| {
            let allocator = s.spawn(|| {
                let p = a.alloc(l).map(|p| p.as_ptr() as usize);
                done.store(true, Ordering::SeqCst);
                p
            });
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(200) && !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let spans = a.span_count(class);
            RESUME.store(true, Ordering::SeqCst);
            (spans, allocator.join().unwrap())
        });
        freer.join().unwrap();
        assert_eq!(
            spans_while_stalled, 1,
            "the class grew while a freer was stalled: {spans_while_stalled} spans"
        );
        let p = got.expect("the allocation completes once the freer resumes");
        assert!(p == blocks[0].as_ptr() as usize || p == blocks[1].as_ptr() as usize);
        assert_eq!(a.span_count(class), 1);
    }

    #[cfg(target_pointer_width = "64")]
    static POP_STALLED: AtomicBool = AtomicBool::new(false);
    #[cfg(target_pointer_width = "64")]
    static POP_RESUME: AtomicBool = AtomicBool::new(false);

    #[cfg(target_pointer_width = "64")]
    /// The stalled consumer: parks before its pops (once) until told.
    fn stall_before_pop() {
        pop_hook_off();
        POP_STALLED.store(true, Ordering::SeqCst);
        while !POP_RESUME.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    #[cfg(target_pointer_width = "64")]
    fn pop_hook_off() {
        hooks::BEFORE_POP.with(|h| h.set(None));
    }

    #[cfg(target_pointer_width = "64")]
    /// Sets `POP_RESUME` when dropped: the stalled consumer is released
    /// even when the test thread panics first (else the scope's join hangs).
    struct ResumeOnDrop;

    #[cfg(target_pointer_width = "64")]
    impl Drop for ResumeOnDrop {
        fn drop(&mut self) {
            POP_RESUME.store(true, Ordering::SeqCst);
        }
    }

    /// A consumer that reads the handle base before the heap's first growth
    /// and the queue's front after it must not name blocks from a stale
    /// base (0): it did, and dereferenced `handle * 8`, a few KiB above
    /// address 0: SIGSEGV. The handle base was then made to be read after
    /// a `front` that names a block; since the region is reserved with the
    /// heap, before the heap is published, no thread can see a heap whose
    /// base is 0 at all (the drop-in `free` relies on that). The pop that
    /// races the first growth must still get one of its blocks. 64-bit
    /// only: on 32-bit targets the base is always 0 (handles are addresses,
    /// each span its own mapping).
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_pop_racing_the_first_growth_reads_the_base_after_the_front() {
        let a = SegregatedFit::new();
        // Map the heap with a large block: no span carved, no growth yet.
        let big = Layout::from_size_align(256 * 1024, 8).unwrap();
        let p = a.alloc(big).unwrap();
        // SAFETY: allocated above with `big`.
        unsafe { a.dealloc(p, big) };
        let heap = a.heap().unwrap();
        let base = heap.base();
        assert_ne!(
            base, 0,
            "the heap's span region is reserved before it is published"
        );
        assert_eq!(heap.region.carved(), 0, "no span yet");
        let l = Layout::from_size_align(32, 8).unwrap();
        let (base_after_growth, got) = std::thread::scope(|s| {
            let consumer = s.spawn(|| {
                hooks::BEFORE_POP.with(|h| h.set(Some(stall_before_pop)));
                let p = a.alloc_shared(l).map(|p| p.as_ptr() as usize);
                pop_hook_off();
                p
            });
            let resume = ResumeOnDrop;
            while !POP_STALLED.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // The first growth: carves a span from the heap's region,
            // queues its blocks; one of them is ours.
            let mine = a.alloc_shared(l).unwrap();
            let base = heap.base();
            drop(resume);
            let got = consumer.join().unwrap().expect("a block");
            // SAFETY: allocated above with `l`.
            unsafe { a.dealloc_shared(mine, l) };
            (base, got)
        });
        assert_eq!(
            base_after_growth, base,
            "the growth keeps the heap's region"
        );
        let class = SegregatedFit::size_class(32, 8).unwrap();
        assert!(
            a.owns(NonNull::new(got as *mut u8).unwrap(), l),
            "{got:#x} is not a block of the class"
        );
        assert_eq!(a.span_count(class), 1, "the consumer grew the class");
    }

    /// A full span region refuses a span; the `OutOfMemory` names the
    /// caller's size. Before, it named the span's length (16 KiB for a
    /// 100-byte request). `alloc_shared`, whose miss is given no layout
    /// (it would change its fast path), names the class's block size.
    #[test]
    fn span_growth_out_of_memory_names_the_callers_size() {
        let a = SegregatedFit::new();
        let l = |n| Layout::from_size_align(n, 8).unwrap();
        region::hooks::CARVE_FAILS.with(|c| c.set(true));
        let alloc = a.alloc(l(100)).map(|_| ());
        let raw = RawAllocator::allocate(&a, l(200)).map(|_| ());
        let shared = a.alloc_shared(l(3000)).map(|_| ());
        region::hooks::CARVE_FAILS.with(|c| c.set(false));
        let oom = |requested| {
            Err(AllocError::OutOfMemory {
                requested,
                available: 0,
            })
        };
        assert_eq!(alloc, oom(100));
        assert_eq!(raw, oom(200));
        let block = SegregatedFit::size_class(3000, 8).unwrap().block_size();
        assert_eq!(shared, oom(block));
        // Carving again works.
        let p = a.alloc(l(100)).unwrap();
        // SAFETY: allocated just above with this layout.
        unsafe { a.dealloc(p, l(100)) };
    }

    /// Spans are aligned to 16 KiB or more, so blocks at the same index in
    /// the spans of different classes share L1 sets. The first blocks a
    /// class hands out (with LIFO caches, its hottest) start at a different
    /// cache line of the page for each small class. Before, every class
    /// started at offset 0, and the bench's random-pattern workload missed
    /// L1 8,599 times per million operations (reads); with the colours,
    /// 3,454.
    #[test]
    fn small_classes_hand_out_their_first_blocks_on_different_cache_lines() {
        let a = SegregatedFit::new();
        let mut lines = Vec::new();
        let mut held = Vec::new();
        for size in (16..=128).step_by(16) {
            let l = Layout::from_size_align(size, 8).unwrap();
            let class = SegregatedFit::size_class(size, 8).unwrap();
            let p = a.alloc(l).unwrap();
            assert!(
                p.as_ptr().addr().is_multiple_of(class.align()),
                "{p:p} breaks the class's alignment"
            );
            lines.push(((p.as_ptr().addr() % 4096) / 64, size));
            held.push((p, l));
        }
        let mut distinct: Vec<usize> = lines.iter().map(|&(line, _)| line).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            lines.len(),
            "(line in page, size): {lines:?}"
        );
        for (p, l) in held {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc(p, l) };
        }
    }
}

#[cfg(all(test, not(loom), not(miri), target_pointer_width = "64"))]
mod locate_tests {
    use super::*;

    /// Hardened builds: a cached free block's link is stored XORed with the
    /// heap's key and the block carries the key as its tag; handing it out
    /// clears the tag. Before, the link was the plain address (a write
    /// after free steered the next allocation) and nothing marked a block
    /// free (a second free pushed it again).
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_cached_links_are_encoded_and_free_blocks_tagged() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(48, 16).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = a.alloc(l).unwrap();
                let q = a.alloc(l).unwrap();
                // SAFETY: allocated above with `l`, each freed once.
                unsafe {
                    a.dealloc(p, l);
                    a.dealloc(q, l);
                }
                let key = a.heap().unwrap().key;
                assert_eq!(key & 7, 7, "the key's low bits are set");
                // SAFETY: `q` is free in this thread's cache: its first two
                // words are the encoded link and the tag.
                let (link, tag) = unsafe {
                    let w = q.as_ptr().cast::<usize>();
                    (w.read(), w.add(1).read())
                };
                assert_ne!(link, p.as_ptr().addr(), "a plain link");
                assert_eq!(link ^ key, p.as_ptr().addr());
                assert_eq!(tag, key);
                let r = a.alloc(l).unwrap();
                assert_eq!(r, q);
                // SAFETY: `r` is ours now.
                assert_eq!(unsafe { r.as_ptr().cast::<usize>().add(1).read() }, 0);
                // SAFETY: allocated above with `l`.
                unsafe { a.dealloc(r, l) };
            });
        });
    }

    /// A free block whose first word a write after free overwrote still
    /// has its tag, but no link: `block_at_and_free` asks this thread's
    /// list, which holds it, and says free (the drop-in `realloc` then
    /// aborts). A live block holding a copy of the key is no list's, and
    /// is not free. `block_at_and_tagged` says "tagged" for both and only
    /// for them. (Before, the overwritten block read as live.)
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_a_tagged_block_without_its_link_is_free_if_the_list_holds_it() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(48, 16).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = a.alloc(l).unwrap();
                let q = a.alloc(l).unwrap();
                let live = a.alloc(l).unwrap();
                let plain = a.alloc(l).unwrap();
                let class = SegregatedFit::size_class(48, 16).unwrap();
                // SAFETY: allocated above with `l`, each freed once.
                unsafe {
                    a.dealloc(p, l);
                    a.dealloc(q, l);
                }
                let key = a.heap().unwrap().key;
                // SAFETY: `live` and `plain` are ours, 48 bytes each.
                unsafe {
                    let w = live.as_ptr().cast::<usize>();
                    w.write(0x4141_4141_4141_4141);
                    w.add(1).write(key);
                    plain.as_ptr().cast::<usize>().add(1).write(0);
                }
                let asked = |b: NonNull<u8>| {
                    // SAFETY: the four blocks asked about below are blocks
                    // of this allocator that no other thread writes.
                    unsafe {
                        (
                            a.block_at_and_free(b.as_ptr()),
                            a.block_at_and_tagged(b.as_ptr()),
                        )
                    }
                };
                let yes = Some((class, true));
                let no = Some((class, false));
                // `live` is no list's: the walk reads the whole list (q,
                // then p) and finds it nowhere.
                assert_eq!(asked(live), (no, yes));
                assert_eq!(asked(plain), (no, no));
                assert_eq!(asked(p), (yes, yes), "a free block with its link");
                // The write after free: `q` is the list's head, so the walk
                // finds it before it would read the link (a walk past an
                // overwritten link aborts as heap corruption, as a pop
                // would).
                let q_word = q.as_ptr().cast::<usize>();
                // SAFETY: `q` is free in this thread's cache; its link is
                // put back before anything reads the list again.
                let saved = unsafe { q_word.read() };
                // SAFETY: as above.
                unsafe { q_word.write(0x4141_4141_4141_4141) };
                let got = asked(q);
                // SAFETY: as above (back before a failed assert unwinds).
                unsafe { q_word.write(saved) };
                assert_eq!(got, (yes, yes), "a free block without its link");
                // SAFETY: the live blocks, freed once.
                unsafe {
                    a.dealloc(live, l);
                    a.dealloc(plain, l);
                }
            });
        });
    }

    /// The blocks `trim` holds in its private chain, between draining a
    /// class's queue and giving the blocks back, look free to a free: a
    /// double free from another thread in that window aborts. Before, the
    /// chain's links were plain: a drained block's tag matched but its
    /// first word did not decode to a link, so a free took it for a live
    /// block that held the key by chance and pushed it, and the re-chain
    /// then queued it too (one block, two owners).
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_blocks_trim_holds_still_look_free() {
        use std::sync::Mutex;
        static SEEN: Mutex<Vec<(usize, bool)>> = Mutex::new(Vec::new());
        static WATCH: Mutex<(Vec<usize>, usize, usize)> = Mutex::new((Vec::new(), 0, 0));
        fn look() {
            let (blocks, key, base) = &*WATCH.lock().unwrap();
            let mut seen = SEEN.lock().unwrap();
            for &b in blocks {
                // SAFETY: a 256-byte block of the watched heap, mapped
                // while the heap lives (trim holds it, or it is queued).
                let free =
                    unsafe { harden::is_free(NonNull::new(b as *mut u8).unwrap(), *key, *base) };
                seen.push((b, free));
            }
        }
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(256, 8).unwrap();
        // Through the shared level: the blocks go to the class queue, where
        // trim drains them from (a cache's blocks stay in the cache).
        let blocks: Vec<_> = (0..4).map(|_| a.alloc_shared(l).unwrap()).collect();
        // Live ones keep the span from being purged (its blocks stay mapped
        // and readable, as the hook reads them).
        let live: Vec<_> = (0..4).map(|_| a.alloc_shared(l).unwrap()).collect();
        for &p in &blocks {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc_shared(p, l) };
        }
        let heap = a.heap().unwrap();
        *WATCH.lock().unwrap() = (
            blocks.iter().map(|p| p.as_ptr().addr()).collect(),
            heap.key,
            heap.base(),
        );
        hooks::AFTER_DRAIN.with(|h| h.set(Some(look)));
        a.trim();
        hooks::AFTER_DRAIN.with(|h| h.set(None));
        let seen = std::mem::take(&mut *SEEN.lock().unwrap());
        assert!(!seen.is_empty(), "the hook ran");
        for (b, free) in seen {
            assert!(
                free,
                "{b:#x}, drained by trim, would be freed a second time"
            );
        }
        for p in blocks.iter().chain(&live) {
            // SAFETY: after the trim the freed blocks are queued again.
            assert!(unsafe { harden::is_free(*p, heap.key, heap.base()) } == blocks.contains(p));
        }
        for p in live {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc_shared(p, l) };
        }
    }

    /// A trimmed span reads as a fresh one on every target: every block's
    /// first word is zero after the trim, the header's page included (which
    /// the purge keeps resident: its blocks used to keep their coded
    /// links), and where a purge may keep old bytes (macOS, Windows) the
    /// purged pages too, so the span grows again `pristine` and its chain
    /// checks each block it links (`span::carve`).
    #[test]
    fn a_trimmed_span_reads_as_fresh() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(704, 16).unwrap();
        let class = SegregatedFit::size_class(704, 16).unwrap();
        let blocks: Vec<_> = (0..64).map(|_| a.alloc(l).unwrap()).collect();
        for &p in &blocks {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc(p, l) };
        }
        assert!(a.trim() > 0);
        let heap = a.heap().unwrap();
        let g = span::geometry(class.block_size());
        let mut h = heap.class(class).growth.spans.load(Ordering::Acquire);
        let mut spans = 0;
        while !h.is_null() {
            // SAFETY: a published header of this live heap.
            let span = unsafe { &*h };
            assert_eq!(span.trimmed.load(Ordering::Relaxed), span::TRIMMED_ZEROED);
            for i in 0..g.blocks {
                // SAFETY: block `i` of the span: mapped, unused.
                let w = unsafe { span.base.add(i * class.block_size()).cast::<usize>().read() };
                assert_eq!(w, 0, "block {i} of {} keeps {w:#x}", g.blocks);
            }
            spans += 1;
            h = span.next;
        }
        // 23 blocks a span where spans are 16 KiB (3 spans), 93 where the
        // granularity makes them 64 KiB (Windows: 1).
        assert_eq!(spans, 64usize.div_ceil(g.blocks));
        // Grown again, checked: every block comes back.
        let again: Vec<_> = (0..64).map(|_| a.alloc(l).unwrap()).collect();
        for p in again {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc(p, l) };
        }
    }

    /// A run's first block carries its double-free tag once the run is off
    /// the stack: a block of 24 bytes or more keeps it throughout (the
    /// stack's `below` word sits in its third word; it used to overwrite
    /// the tag, so a second free of that block went unseen while its run
    /// was stacked), and a 16-byte block, whose `below` is the tag's word,
    /// gets it back as the pop takes the run (it went unseen until the
    /// block was handed out and freed again).
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_popped_runs_carry_their_first_blocks_tag() {
        for size in [16, 48] {
            let a = SegregatedFit::new();
            let l = Layout::from_size_align(size, 16).unwrap();
            let class = SegregatedFit::size_class(size, 16).unwrap();
            let batch = cache::batch(class.index());
            std::thread::scope(|s| {
                s.spawn(|| {
                    let blocks = super::tests::alloc_then_free(&a, l, 4 * batch);
                    let heap = a.heap().unwrap();
                    let c = heap.class(class);
                    let mut runs = Vec::new();
                    while let Some(first) = c.runs.pop(heap.base()) {
                        // SAFETY: a free block of ours, popped: read only.
                        let tag = unsafe { harden::tag_word(first) };
                        assert_eq!(tag, heap.key, "{size} bytes: the run's first block");
                        runs.push(first);
                    }
                    // The runs the frees flushed, and below them maybe runs
                    // of a fresh span that a refill linked (tagged as it
                    // linked them) and another thread won.
                    let flushed = runs.iter().filter(|p| blocks.contains(p)).count();
                    assert!(flushed >= 2, "{size} bytes: {flushed} flushed runs");
                    for &first in runs.iter().rev() {
                        // SAFETY: our runs, as popped.
                        unsafe { heap.give_run(class, first, batch) };
                    }
                });
            });
        }
    }

    /// A live block whose second word holds the key by accident (stack
    /// bytes copied into it whole: the padding of a `Box`ed struct) is
    /// freed as any other, through the cache and through the shared path:
    /// its first word is no coded link. (The tag test alone aborted with a
    /// double free: the library's own tests did, with this allocator as a
    /// debug build's global allocator.) A true double free is still caught
    /// (`malloc/tests`, and the `should_panic` tests of `tests/all`).
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_a_live_block_holding_the_key_is_freed_as_any_other() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 16).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let key = {
                    let p = a.alloc(l).unwrap();
                    // SAFETY: ours, live, freed once.
                    unsafe { a.dealloc(p, l) };
                    a.heap().unwrap().key
                };
                for shared in [false, true] {
                    let p = if shared {
                        a.alloc_shared(l).unwrap()
                    } else {
                        a.alloc(l).unwrap()
                    };
                    // SAFETY: a live block of 64 bytes, ours: the program's
                    // data, as a copy from the stack could leave it.
                    unsafe {
                        let w = p.as_ptr().cast::<usize>();
                        w.write(0x1234_5678);
                        w.add(1).write(key);
                    }
                    // SAFETY: ours, live, freed once.
                    unsafe {
                        if shared {
                            a.dealloc_shared(p, l);
                        } else {
                            a.dealloc(p, l);
                        }
                    }
                    // The block went back: the cache's next allocation of
                    // the class gets it (newest first); the queue hands out
                    // its oldest, so the shared path is only freed again.
                    if !shared {
                        let q = a.alloc(l).unwrap();
                        assert_eq!(q, p);
                        // SAFETY: ours, live, freed once.
                        unsafe { a.dealloc(q, l) };
                    }
                }
            });
        });
    }

    /// `dealloc_batch` tags each block free and codes the chain's links as
    /// the queue stores them (it used to queue the caller's plain links and
    /// leave the blocks untagged: a double free of one went unseen, and a
    /// pop decoded the plain links to wild addresses).
    #[cfg(feature = "hardened")]
    #[test]
    fn hardened_dealloc_batch_tags_and_codes_its_chain() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(48, 16).unwrap();
        let class = SegregatedFit::size_class(48, 16).unwrap();
        let blocks: Vec<_> = (0..3).map(|_| a.alloc(l).unwrap()).collect();
        // SAFETY: live blocks of one class, each once.
        let (first, last) = unsafe { SegregatedFit::link_batch(blocks.iter().copied()) }.unwrap();
        // SAFETY: the chain just linked.
        unsafe { a.dealloc_batch(first, last, class) };
        let key = a.heap().unwrap().key;
        for w in blocks.windows(2) {
            // SAFETY: free blocks of ours, in the queue: read only.
            let (link, tag) = unsafe {
                let p = w[0].as_ptr().cast::<usize>();
                (p.read(), p.add(1).read())
            };
            assert_eq!(tag, key, "tagged free");
            assert_eq!(link ^ key, w[1].as_ptr().addr(), "a coded link");
        }
    }

    /// Every block of every class, at every alignment a class serves, is
    /// located as a block of its class; a byte past a block's start is not.
    #[test]
    fn every_class_block_is_located_and_nothing_between() {
        let a = SegregatedFit::new();
        for align in [8, 16, 64, 256, 4096] {
            for size in (8..=MAX_CLASS_SIZE).step_by(8) {
                let l = Layout::from_size_align(size, align).unwrap();
                let Some(class) = SegregatedFit::size_class(size, align) else {
                    continue;
                };
                let p = a.alloc(l).unwrap();
                assert_eq!(
                    a.locate(p.as_ptr()),
                    Located::Block(class),
                    "{size}/{align}: {p:p}"
                );
                assert_eq!(a.block_at(p.as_ptr()), Some(class));
                assert_eq!(a.block_at(p.as_ptr().wrapping_add(1)), None);
                assert_eq!(
                    a.locate(p.as_ptr().wrapping_add(class.block_size() / 2)),
                    Located::OffBlock(class),
                    "{size}/{align}: {p:p} + half a block"
                );
                // SAFETY: allocated above with `l`.
                unsafe { a.dealloc(p, l) };
            }
        }
    }

    /// The inverse test is exact: over whole spans of every class, an
    /// offset is a block's start exactly when it is a multiple of the
    /// block size below the span's blocks.
    #[test]
    fn the_block_boundary_test_is_exact_over_whole_spans() {
        for i in 0..SizeClass::COUNT {
            let class = SizeClass::from_index(i).unwrap();
            let s = Shape::of(class);
            let bs = class.block_size();
            assert!(s.mask < 1 << 21, "span of class {i}: offsets reach 2^21");
            for off in 0..=s.mask {
                let want = off % bs == 0 && off / bs < s.blocks as usize;
                assert_eq!(s.is_block(off), want, "class {i} ({bs}) offset {off}");
            }
        }
    }
}
