//! The allocator benches of issue 6, in one criterion binary (one link
//! step): run them with `scripts/bench`, which turns criterion's estimates
//! into `reports/bench.md`.
//!
//! Every benchmark uses `iter_custom`: one criterion iteration is one
//! operation *per worker*, so criterion's per-iteration time is the
//! per-thread ns/op, and `threads / that` is the aggregate rate.
//!
//! Groups (criterion group / function id / thread count):
//! - `pair`: 16-byte reservations, each returned address folded into a
//!   checksum; the shared word (raw `fetch_add` on one `CachePadded` word,
//!   `PackedArena`) against the per-thread cursor (a raw private bump with a
//!   4 KiB refill from a shared word, `ThreadCursorArena`), 1..N threads.
//! - `scaling`: allocate/touch/free of 16..256-byte blocks with 32 live per
//!   worker, every thread-safe allocator and the peers, 1..N threads.
//! - `producer-consumer`: workers in pairs, one allocating 16..256-byte
//!   blocks and handing them over a ring, the other freeing them (a lone
//!   worker plays both roles in turns); the general-purpose allocators, and
//!   the same with no allocator at all (a fixed pool of blocks handed out in
//!   turn, frees ignored): the floor the ring and the moving cache lines set.
//! - `bump16`, `alloc-free64`, `chapter`: single-thread fast paths against
//!   their peers, and the chapter's opening program (allocate, touch, free
//!   64 bytes) with every allocator in its place.
//!
//! Boundaries: the crate's allocators, bumpalo and the `Vec` free list are
//! inlined into the measured loop (the allocator-api path); "system",
//! "mimalloc" and "SegregatedFit:call" are each behind an `#[inline(never)]`
//! `GlobalAlloc` call ([`subjects::Call`]), the boundary a
//! `#[global_allocator]` program reaches them through. The third boundary,
//! the global allocator itself, is `benches/examples/bench_global_*.rs`.
//!
//! Environment: `ALLOCASM_BENCH_THREADS` caps the thread counts (default:
//! the machine's parallelism, at most 16; 2 is always measured).

use core::alloc::Layout;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};
use crossbeam_utils::CachePadded;

mod pool;
mod subjects;

use pool::{WorkerPool, measure, measure_local};
use subjects::{Config, LocalAlloc, Subject, Visit, VisitShared};

/// Operations per worker between two resets: 16 MiB of 16-byte
/// reservations, so every arena fits a round in its first blocks.
const ROUND: u64 = 1 << 20;

const L16: Layout = Layout::new::<[u64; 2]>();
const L64: Layout = Layout::new::<[u64; 8]>();

/// 1, 2, 4, 8, 16 up to the cap, plus the cap itself; 2 always (the
/// pair's headline figure is taken there).
fn thread_counts() -> Vec<usize> {
    let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cap = std::env::var("ALLOCASM_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(machine)
        .clamp(1, 16);
    let mut counts: Vec<usize> = [1, 2, 4, 8, 16].into_iter().filter(|&t| t <= cap).collect();
    counts.extend([cap, 2]);
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The bare shared word: one `CachePadded` `AtomicU64` every worker bumps.
/// Also the refill word of the raw private bump.
#[derive(Default)]
struct SharedWord(CachePadded<AtomicU64>);

fn reset_word(w: &mut SharedWord) {
    *w.0.get_mut() = 0;
}

/// The hardware floor of the shared word: one relaxed `fetch_add` of 16
/// per reservation, the returned word folded into the checksum.
fn raw_fetch_add(word: &SharedWord, _worker: usize, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(word.0.fetch_add(16, Ordering::Relaxed));
    }
    sum
}

/// The hardware floor of the per-thread cursor: a private, non-atomic
/// cursor over a 4 KiB chunk; the shared word is touched once per refill
/// (every 256 reservations), as in the write-up.
fn raw_private_bump(word: &SharedWord, _worker: usize, n: u64) -> u64 {
    const CHUNK: u64 = 4096;
    let (mut ptr, mut end) = (0u64, 0u64);
    let mut sum = 0u64;
    for _ in 0..n {
        if ptr + 16 > end {
            ptr = refill(word, CHUNK);
            end = ptr + CHUNK;
        }
        sum = sum.wrapping_add(ptr);
        ptr += 16;
    }
    sum
}

#[cold]
#[inline(never)]
fn refill(word: &SharedWord, chunk: u64) -> u64 {
    word.0.fetch_add(chunk, Ordering::Relaxed)
}

/// 16-byte reservations from an allocator, addresses folded into the sum.
fn reserve16<S: Subject>(s: &S, worker: usize, n: u64) -> u64 {
    let mut local = s.local(worker);
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(local.alloc(L16).as_ptr() as u64);
    }
    sum
}

/// The scaling workload: allocate a 16..256-byte block, write into it,
/// and free the block allocated 32 operations earlier (after reading it).
fn churn<S: Subject>(s: &S, worker: usize, n: u64) -> u64 {
    const LIVE: usize = 32;
    let mut local = s.local(worker);
    let mut live: [Option<(core::ptr::NonNull<u8>, Layout)>; LIVE] = [None; LIVE];
    let mut rng =
        0x9E37_79B9_7F4A_7C15u64 ^ (worker as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut sum = 0u64;
    for i in 0..n {
        let slot = i as usize % LIVE;
        if let Some((p, layout)) = live[slot].take() {
            // SAFETY: `p` is live and its first 8 bytes were written below.
            sum = sum.wrapping_add(unsafe { p.cast::<u64>().read() });
            // SAFETY: `p` came from this subject with `layout`, freed once.
            unsafe { local.free(p, layout) };
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let size = 16 * (1 + (rng % 16) as usize);
        // SAFETY: size is 16..=256 and 8 is a power of two.
        let layout = unsafe { Layout::from_size_align_unchecked(size, 8) };
        let p = local.alloc(layout);
        // SAFETY: `p` holds at least 16 bytes aligned to 8.
        unsafe { p.cast::<u64>().write(i) };
        live[slot] = Some((p, layout));
    }
    for (p, layout) in live.into_iter().flatten() {
        // SAFETY: each block left is live and came from this subject.
        unsafe { local.free(p, layout) };
    }
    sum
}

/// Capacity of one producer/consumer ring (a power of two).
const RING: usize = 256;

/// How many slots an end fills or drains before it publishes its index:
/// the ring's shared indices move once per batch, not once per block, so
/// the workload measures the allocators' cross-thread cost rather than two
/// cache lines bouncing between the cores on every block.
const RING_BATCH: u64 = 32;

/// A single-producer single-consumer ring of `(address, size)` pairs.
struct Ring {
    head: CachePadded<AtomicU64>,
    tail: CachePadded<AtomicU64>,
    slots: Box<[[AtomicU64; 2]]>,
}

impl Ring {
    fn new() -> Self {
        Ring {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            slots: (0..RING)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
        }
    }

    /// The producing end, starting where the last round left the ring.
    fn producer(&self) -> RingProducer<'_> {
        let tail = self.tail.load(Ordering::Relaxed);
        RingProducer {
            ring: self,
            tail,
            head: self.head.load(Ordering::Acquire),
        }
    }

    /// The consuming end, starting where the last round left the ring.
    fn consumer(&self) -> RingConsumer<'_> {
        let head = self.head.load(Ordering::Relaxed);
        RingConsumer {
            ring: self,
            head,
            tail: self.tail.load(Ordering::Acquire),
        }
    }
}

/// The producer's end: its own tail (published every [`RING_BATCH`]
/// pushes, before it waits, and when dropped) and the head as last seen.
struct RingProducer<'r> {
    ring: &'r Ring,
    tail: u64,
    head: u64,
}

impl RingProducer<'_> {
    fn push(&mut self, addr: u64, size: u64) {
        if self.tail - self.head == RING as u64 {
            self.head = self.ring.head.load(Ordering::Acquire);
            let mut spins = 0u32;
            while self.tail - self.head == RING as u64 {
                // The consumer may be waiting for what we have not published.
                self.ring.tail.store(self.tail, Ordering::Release);
                wait(&mut spins);
                self.head = self.ring.head.load(Ordering::Acquire);
            }
        }
        let slot = &self.ring.slots[self.tail as usize % RING];
        slot[0].store(addr, Ordering::Relaxed);
        slot[1].store(size, Ordering::Relaxed);
        self.tail += 1;
        if self.tail.is_multiple_of(RING_BATCH) {
            self.ring.tail.store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for RingProducer<'_> {
    fn drop(&mut self) {
        self.ring.tail.store(self.tail, Ordering::Release);
    }
}

/// The consumer's end: its own head (published every [`RING_BATCH`] pops,
/// before it waits, and when dropped) and the tail as last seen.
struct RingConsumer<'r> {
    ring: &'r Ring,
    head: u64,
    tail: u64,
}

impl RingConsumer<'_> {
    fn pop(&mut self) -> (u64, u64) {
        if self.head == self.tail {
            self.tail = self.ring.tail.load(Ordering::Acquire);
            let mut spins = 0u32;
            while self.head == self.tail {
                // The producer may be waiting for room we have not published.
                self.ring.head.store(self.head, Ordering::Release);
                wait(&mut spins);
                self.tail = self.ring.tail.load(Ordering::Acquire);
            }
        }
        let slot = &self.ring.slots[self.head as usize % RING];
        let v = (
            slot[0].load(Ordering::Relaxed),
            slot[1].load(Ordering::Relaxed),
        );
        self.head += 1;
        if self.head.is_multiple_of(RING_BATCH) {
            self.ring.head.store(self.head, Ordering::Release);
        }
        v
    }
}

impl Drop for RingConsumer<'_> {
    fn drop(&mut self) {
        self.ring.head.store(self.head, Ordering::Release);
    }
}

/// Spin a little, then yield (the 2-core machine has other work).
fn wait(spins: &mut u32) {
    *spins += 1;
    if *spins < 100 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A subject and one ring per worker pair.
struct ProducerConsumer<S> {
    subject: S,
    rings: Vec<Ring>,
    workers: usize,
}

impl<S: Subject> ProducerConsumer<S> {
    fn reset(pc: &mut Self) {
        S::reset(&mut pc.subject);
    }
}

/// One 16..256-byte size from the xorshift state.
fn next_size(rng: &mut u64) -> usize {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    16 * (1 + (*rng % 16) as usize)
}

/// The producer/consumer workload: even worker `2k` allocates a block,
/// writes it and hands it to worker `2k + 1` through their ring, which reads
/// and frees it. One operation is one half of a block's life (its
/// allocation, or its free), so a pair does one block per operation and the
/// aggregate rate compares with a lone worker's, which does both halves of
/// 32 blocks in turn.
fn producer_consumer<S: Subject>(pc: &ProducerConsumer<S>, worker: usize, n: u64) -> u64 {
    let mut local = pc.subject.local(worker);
    let mut rng =
        0x9E37_79B9_7F4A_7C15u64 ^ (worker as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut sum = 0u64;
    let paired = worker + 1 < pc.workers || worker % 2 == 1;
    if !paired {
        // Alone: allocate 32, then free them, oldest first.
        let mut held = [(core::ptr::NonNull::<u8>::dangling(), L16); 32];
        let mut i = 0u64;
        while i < n {
            let k = (((n - i) / 2).clamp(1, 32)) as usize;
            for slot in held.iter_mut().take(k) {
                let size = next_size(&mut rng);
                // SAFETY: size is 16..=256 and 8 is a power of two.
                let layout = unsafe { Layout::from_size_align_unchecked(size, 8) };
                let p = local.alloc(layout);
                // SAFETY: `p` holds at least 16 bytes aligned to 8.
                unsafe { p.cast::<u64>().write(i) };
                *slot = (p, layout);
            }
            for &(p, layout) in held.iter().take(k) {
                // SAFETY: live, written above, freed once with its layout.
                unsafe {
                    sum = sum.wrapping_add(p.cast::<u64>().read());
                    local.free(p, layout);
                }
            }
            i += 2 * k as u64;
        }
        return sum;
    }
    let ring = &pc.rings[worker / 2];
    if worker.is_multiple_of(2) {
        let mut ring = ring.producer();
        for i in 0..n {
            let size = next_size(&mut rng);
            // SAFETY: size is 16..=256 and 8 is a power of two.
            let layout = unsafe { Layout::from_size_align_unchecked(size, 8) };
            let p = local.alloc(layout);
            // SAFETY: `p` holds at least 16 bytes aligned to 8.
            unsafe { p.cast::<u64>().write(i) };
            ring.push(p.as_ptr() as u64, size as u64);
        }
    } else {
        let mut ring = ring.consumer();
        for _ in 0..n {
            let (addr, size) = ring.pop();
            let p = core::ptr::NonNull::new(addr as *mut u8).expect("a block");
            // SAFETY: the producer allocated it with this size and align 8
            // and gave it up through the ring.
            unsafe {
                sum = sum.wrapping_add(p.cast::<u64>().read());
                local.free(p, Layout::from_size_align_unchecked(size as usize, 8));
            }
        }
    }
    sum
}

/// Blocks per worker of the producer/consumer floor (far more than a ring
/// holds, so a block is reused long after its consumer read it).
const FLOOR_BLOCKS: usize = 1024;

/// The producer/consumer workload's floor: no allocator at all. Each worker
/// hands out the 256-byte blocks of its own fixed pool in turn and a free
/// does nothing, so what is left is the ring and the blocks' cache lines
/// moving between the cores: what any allocator pays on top of nothing.
struct NoAllocator {
    pools: Vec<Box<[core::cell::UnsafeCell<[u64; 32]>]>>,
}

// SAFETY: a worker writes only blocks of its own pool; the consumer reads a
// block only after the ring handed it over (Release/Acquire on the ring's
// tail), and the producer reuses a block FLOOR_BLOCKS allocations later, at
// least FLOOR_BLOCKS - RING - RING_BATCH pops after the consumer read it,
// which the ring's head (Release by the consumer, Acquire by the producer
// before it wrote that far) orders.
unsafe impl Sync for NoAllocator {}

impl NoAllocator {
    fn new(workers: usize) -> Self {
        NoAllocator {
            pools: (0..workers)
                .map(|_| {
                    (0..FLOOR_BLOCKS)
                        .map(|_| core::cell::UnsafeCell::new([0u64; 32]))
                        .collect()
                })
                .collect(),
        }
    }
}

struct NoAllocatorLocal<'a> {
    pool: &'a [core::cell::UnsafeCell<[u64; 32]>],
    next: usize,
}

impl LocalAlloc for NoAllocatorLocal<'_> {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> core::ptr::NonNull<u8> {
        debug_assert!(layout.size() <= 256 && layout.align() <= 8);
        let b = self.pool[self.next % FLOOR_BLOCKS].get();
        self.next += 1;
        // SAFETY: an `UnsafeCell`'s pointer is never null.
        unsafe { core::ptr::NonNull::new_unchecked(b.cast()) }
    }

    #[inline(always)]
    unsafe fn free(&mut self, _ptr: core::ptr::NonNull<u8>, _layout: Layout) {}
}

impl Subject for NoAllocator {
    type Local<'a> = NoAllocatorLocal<'a>;

    fn local(&self, worker: usize) -> NoAllocatorLocal<'_> {
        NoAllocatorLocal {
            pool: &self.pools[worker],
            next: 0,
        }
    }

    fn reset(&mut self) {}
}

/// The name of the floor's row in the producer/consumer group.
const NO_ALLOCATOR: &str = "no allocator (the floor)";

/// Measures the producer/consumer workload for a subject on a pool.
struct OnPoolPc<'g, 'c, 'p> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    pool: &'p mut WorkerPool,
    name: &'g str,
}

impl VisitShared for OnPoolPc<'_, '_, '_> {
    type Out = ();
    fn visit<S: Subject + Send + Sync + 'static>(self, subject: S) {
        let workers = self.pool.workers();
        let pc = ProducerConsumer {
            subject,
            rings: (0..workers.div_ceil(2)).map(|_| Ring::new()).collect(),
            workers,
        };
        bench_threads(
            self.group,
            self.pool,
            self.name,
            (pc, ProducerConsumer::<S>::reset),
            SMALL_ROUND,
            producer_consumer::<S>,
        );
    }
}

/// Immediate allocate/free pairs of 64 bytes, the address into the sum.
fn alloc_free64<S: Subject>(s: &S, n: u64) -> u64 {
    let mut local = s.local(0);
    let mut sum = 0u64;
    for _ in 0..n {
        let p = local.alloc(L64);
        sum = sum.wrapping_add(p.as_ptr() as u64);
        // SAFETY: `p` was just allocated with `L64`.
        unsafe { local.free(p, L64) };
    }
    sum
}

/// The chapter's opening program: `new int[16]`, `p[0] = i`, `delete[]`.
fn chapter<S: Subject>(s: &S, n: u64) -> u64 {
    let mut local = s.local(0);
    for i in 0..n {
        let p = local.alloc(L64);
        // SAFETY: `p` holds 64 bytes aligned to 8.
        unsafe { p.cast::<u32>().write_volatile(i as u32) };
        // SAFETY: `p` was just allocated with `L64`.
        unsafe { local.free(p, L64) };
    }
    n
}

/// Registers a multi-thread benchmark of `op` over `state` on `pool`.
fn bench_threads<S: Send + Sync + 'static>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    pool: &mut WorkerPool,
    name: &str,
    (state, reset): (S, fn(&mut S)),
    round: u64,
    op: fn(&S, usize, u64) -> u64,
) {
    let threads = pool.workers();
    let mut state = Arc::new(state);
    g.bench_function(BenchmarkId::new(name, threads), |b| {
        b.iter_custom(|iters| measure(pool, &mut state, iters, round, reset, op))
    });
}

/// Registers a single-thread benchmark (no pool; `!Sync` allocators too).
fn bench_local<S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    (mut state, reset): (S, fn(&mut S)),
    round: u64,
    op: fn(&S, u64) -> u64,
) {
    g.bench_function(BenchmarkId::new(name, 1), |b| {
        b.iter_custom(|iters| measure_local(&mut state, iters, round, reset, op))
    });
}

/// A thread-safe subject measured with `op` on a pool.
struct OnPool<'g, 'c, 'p> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    pool: &'p mut WorkerPool,
    name: &'g str,
    round: u64,
    op: Op,
}

/// A subject measured with `op` on the calling thread alone.
struct OnCaller<'g, 'c> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    name: &'g str,
    round: u64,
    op: Op,
}

/// The workloads a visitor can instantiate for any subject.
#[derive(Clone, Copy)]
enum Op {
    Reserve16,
    Churn,
    AllocFree64,
    Chapter,
}

impl VisitShared for OnPool<'_, '_, '_> {
    type Out = ();
    fn visit<S: Subject + Send + Sync + 'static>(self, subject: S) {
        let op: fn(&S, usize, u64) -> u64 = match self.op {
            Op::Reserve16 => reserve16::<S>,
            Op::Churn => churn::<S>,
            Op::AllocFree64 | Op::Chapter => {
                unreachable!("single-thread workloads run on the caller")
            }
        };
        bench_threads(
            self.group,
            self.pool,
            self.name,
            (subject, S::reset),
            self.round,
            op,
        );
    }
}

impl Visit for OnCaller<'_, '_> {
    type Out = ();
    fn visit<S: Subject>(self, subject: S) {
        let op: fn(&S, u64) -> u64 = match self.op {
            Op::Reserve16 => |s, n| reserve16(s, 0, n),
            Op::Churn => |s, n| churn(s, 0, n),
            Op::AllocFree64 => alloc_free64::<S>,
            Op::Chapter => chapter::<S>,
        };
        bench_local(self.group, self.name, (subject, S::reset), self.round, op);
    }
}

/// Operations per worker between two resets for the workloads that touch
/// their blocks (4 MiB of 64-byte blocks, 17 MiB of churn at most).
const SMALL_ROUND: u64 = 1 << 16;

/// The allocators of the pair: (name, shared word or per-thread cursor).
const PAIR: &[(&str, &str)] = &[("PackedArena", "shared"), ("ThreadCursorArena", "private")];
/// The 16-byte single-thread reservations beside the bare loops.
const BUMP16: &[&str] = &[
    "bumpalo",
    "LinearArena",
    "StackAllocator",
    "Rewindable",
    "ThreadCursorArena::local",
];
/// The general-purpose allocators of the producer/consumer workload.
const PRODUCER_CONSUMER: &[&str] = &[
    "system",
    "mimalloc",
    "SegregatedFit",
    subjects::SEGREGATED_CALL,
];
/// The 64-byte allocate/free pairs (with the `Vec` free list for `Pool`):
/// at the call boundary the peers and SegregatedFit behind the same call,
/// inlined the crate's allocators, bumpalo and the `Vec` free list.
const ALLOC_FREE64: &[&str] = &[
    "system",
    "mimalloc",
    subjects::SEGREGATED_CALL,
    "bumpalo",
    "SegregatedFit",
    "Pool",
    "Persistent",
    subjects::PERSISTENT_COUNTING,
    "PackedArena",
];

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let counts = thread_counts();

    let mut pair = c.benchmark_group("pair");
    for &t in &counts {
        let mut pool = WorkerPool::new(t);
        let word = || (SharedWord::default(), reset_word as fn(&mut SharedWord));
        bench_threads(
            &mut pair,
            &mut pool,
            "shared: raw fetch_add",
            word(),
            ROUND,
            raw_fetch_add,
        );
        bench_threads(
            &mut pair,
            &mut pool,
            "private: raw bump",
            word(),
            ROUND,
            raw_private_bump,
        );
        let cfg = Config {
            workers: t,
            block: 16,
            bytes: (ROUND as usize * 16 + (1 << 20)) * t,
            live: 0,
        };
        for &(name, kind) in PAIR {
            let label = format!("{kind}: {name}");
            let v = OnPool {
                group: &mut pair,
                pool: &mut pool,
                name: &label,
                round: ROUND,
                op: Op::Reserve16,
            };
            subjects::with_shared(name, cfg, v).expect("a known allocator");
        }
    }
    pair.finish();

    let mut scaling = c.benchmark_group("scaling");
    for &t in &counts {
        let mut pool = WorkerPool::new(t);
        let cfg = Config {
            workers: t,
            block: 256,
            bytes: (SMALL_ROUND as usize * 272 + (1 << 20)) * t,
            live: 32 * t,
        };
        for name in subjects::shared_names() {
            let v = OnPool {
                group: &mut scaling,
                pool: &mut pool,
                name,
                round: SMALL_ROUND,
                op: Op::Churn,
            };
            subjects::with_shared(name, cfg, v).expect("a known allocator");
        }
    }
    scaling.finish();

    let mut pcg = c.benchmark_group("producer-consumer");
    for &t in &counts {
        let mut pool = WorkerPool::new(t);
        let cfg = Config {
            workers: t,
            block: 256,
            bytes: (SMALL_ROUND as usize * 272 + (1 << 20)) * t,
            live: (RING + 32) * t,
        };
        for name in subjects::shared_names()
            .into_iter()
            .filter(|n| PRODUCER_CONSUMER.contains(n))
        {
            let v = OnPoolPc {
                group: &mut pcg,
                pool: &mut pool,
                name,
            };
            subjects::with_shared(name, cfg, v).expect("a known allocator");
        }
        OnPoolPc {
            group: &mut pcg,
            pool: &mut pool,
            name: NO_ALLOCATOR,
        }
        .visit(NoAllocator::new(t));
    }
    pcg.finish();

    let mut bump = c.benchmark_group("bump16");
    let word = || (SharedWord::default(), reset_word as fn(&mut SharedWord));
    bench_local(&mut bump, "raw fetch_add", word(), ROUND, |s, n| {
        raw_fetch_add(s, 0, n)
    });
    bench_local(&mut bump, "raw private bump", word(), ROUND, |s, n| {
        raw_private_bump(s, 0, n)
    });
    let cfg = Config {
        workers: 1,
        block: 16,
        bytes: ROUND as usize * 16 + (1 << 20),
        live: 0,
    };
    for &name in BUMP16.iter().chain(PAIR.iter().map(|(n, _)| n)) {
        let v = OnCaller {
            group: &mut bump,
            name,
            round: ROUND,
            op: Op::Reserve16,
        };
        subjects::with_subject(name, cfg, v).expect("a known allocator");
    }
    bump.finish();

    let mut af = c.benchmark_group("alloc-free64");
    let cfg = Config {
        workers: 1,
        block: 64,
        bytes: SMALL_ROUND as usize * 64 + (1 << 20),
        live: 64,
    };
    for &name in ALLOC_FREE64 {
        let v = OnCaller {
            group: &mut af,
            name,
            round: SMALL_ROUND,
            op: Op::AllocFree64,
        };
        // mimalloc is absent where it cannot be built.
        let _ = subjects::with_subject(name, cfg, v);
    }
    let list = subjects::VecFreeList::new(64, 64);
    bench_local(
        &mut af,
        "Vec free list",
        (list, Subject::reset),
        SMALL_ROUND,
        alloc_free64,
    );
    af.finish();

    let mut ch = c.benchmark_group("chapter");
    for name in subjects::names()
        .into_iter()
        .chain(subjects::CHAPTER_EXTRA.iter().copied())
    {
        let v = OnCaller {
            group: &mut ch,
            name,
            round: SMALL_ROUND,
            op: Op::Chapter,
        };
        subjects::with_subject(name, cfg, v).expect("a known allocator");
    }
    ch.finish();

    // TempJob's frame with one long-lived block pinning the pool: the end of
    // frame looks at what changed (the live block and the frame's new
    // records), so a pool pinned for 100,000 frames costs what a fresh one
    // does (it used to walk every record made since the pool was last empty).
    let mut tj = c.benchmark_group("tempjob-frame");
    for (label, frames_before) in [
        ("pinned, fresh", 0u32),
        ("pinned, after 100k frames", 100_000),
    ] {
        let mut job = allocasm::TempJob::new(1 << 20)
            .expect("a 1 MiB TempJob")
            .on_overdue(|_| {})
            .on_leak(|_| {});
        let pinned = job.alloc(64, 16).expect("the pinned block");
        for _ in 0..frames_before {
            tempjob_frame(&mut job);
        }
        tj.bench_function(label, |b| b.iter(|| tempjob_frame(&mut job)));
        // SAFETY: allocated above from `job`, freed once.
        unsafe { job.dealloc(pinned) }.expect("the pinned block frees");
        drop(job.end_frame());
    }
    tj.finish();

    // Two SegregatedFit heaps used alternately on one thread (a local heap
    // beside a global SegregatedFit, or Persistent over its own): each
    // thread's cache must serve both without flushing one for the other.
    let mut th = c.benchmark_group("two-heaps");
    let heaps = [
        allocasm::SegregatedFit::new(),
        allocasm::SegregatedFit::new(),
    ];
    let l64 = Layout::from_size_align(64, 8).expect("a layout");
    let pair = |h: &allocasm::SegregatedFit| {
        let p = h.alloc(l64).expect("a block");
        // SAFETY: a fresh 64-byte block, freed once with its layout.
        unsafe {
            p.as_ptr().write(1);
            h.dealloc(core::hint::black_box(p), l64);
        }
    };
    th.bench_function("SegregatedFit, one heap", |b| {
        b.iter(|| {
            pair(&heaps[0]);
            pair(&heaps[0]);
        })
    });
    th.bench_function("SegregatedFit, two heaps alternating", |b| {
        b.iter(|| {
            pair(&heaps[0]);
            pair(&heaps[1]);
        })
    });
    th.finish();

    c.final_summary();
}

/// One TempJob frame: 16 blocks of 64 bytes allocated, written, freed, and
/// the end of frame.
fn tempjob_frame(job: &mut allocasm::TempJob) -> usize {
    let mut blocks = [core::ptr::NonNull::<u8>::dangling(); 16];
    for (i, b) in blocks.iter_mut().enumerate() {
        *b = job.alloc(64, 16).expect("room in the pool");
        // SAFETY: a fresh 64-byte block.
        unsafe { b.as_ptr().write(i as u8) };
    }
    for b in blocks {
        // SAFETY: allocated above from `job`, freed once.
        unsafe { job.dealloc(core::hint::black_box(b)) }.expect("a live block");
    }
    job.end_frame().len()
}
