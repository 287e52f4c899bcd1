//! A persistent worker pool for `iter_custom`: started once per thread
//! count, reused by every sample of every benchmark at that count, and the
//! measuring thread is itself worker 0, so `n` threads means `n` workers.
//!
//! One round: the measuring thread publishes a job and a new epoch on a
//! `CachePadded` word, runs its own share, then waits for every other
//! worker's `CachePadded` done word to show that epoch. The clock covers
//! release to last finish, so the figure is the aggregate wall time of all
//! workers. Idle workers spin, then yield, then sleep, so a pool kept
//! between benchmarks does not burn a core for long.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// What every worker runs in one round: `(worker index, operations)` to a
/// checksum the pool folds together so the work cannot be optimised away.
pub type Job = Arc<dyn Fn(usize, u64) -> u64 + Send + Sync>;

const EXIT: u64 = u64::MAX;

struct Shared {
    /// Bumped by the measuring thread to release a round; `EXIT` stops the pool.
    epoch: CachePadded<AtomicU64>,
    /// The job of the current round and the operations per worker.
    job: Mutex<Option<(Job, u64)>>,
    /// Per spawned worker (index `w - 1`): the last epoch it finished.
    done: Box<[CachePadded<AtomicU64>]>,
    /// Per spawned worker: its checksum of the last round.
    sums: Box<[CachePadded<AtomicU64>]>,
}

/// `workers - 1` spawned threads plus the calling thread.
pub struct WorkerPool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    epoch: u64,
}

/// Waits until `ready()` holds: spins first (a round follows the previous
/// one within microseconds), then yields, then sleeps.
fn wait_until(mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    let mut spins = 0u32;
    while !ready() {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else if start.elapsed() < Duration::from_millis(5) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl WorkerPool {
    /// Starts a pool of `workers` workers (at least one: the caller).
    pub fn new(workers: usize) -> Self {
        let workers = workers.max(1);
        let word = || CachePadded::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            epoch: word(),
            job: Mutex::new(None),
            done: (1..workers).map(|_| word()).collect(),
            sums: (1..workers).map(|_| word()).collect(),
        });
        let handles = (1..workers)
            .map(|w| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("bench-worker-{w}"))
                    .spawn(move || worker(&shared, w))
                    .expect("spawn a bench worker")
            })
            .collect();
        WorkerPool {
            shared,
            handles,
            epoch: 0,
        }
    }

    /// Number of workers, the calling thread included.
    pub fn workers(&self) -> usize {
        self.handles.len() + 1
    }

    /// Runs `job` with `ops` operations on every worker; returns the time
    /// from release to the last worker's finish and the folded checksum.
    /// Every worker has dropped its clone of `job` when this returns.
    pub fn run(&mut self, job: &Job, ops: u64) -> (Duration, u64) {
        *self.shared.job.lock().unwrap() = Some((Arc::clone(job), ops));
        self.epoch += 1;
        let epoch = self.epoch;
        let start = Instant::now();
        self.shared.epoch.store(epoch, Ordering::Release);
        let mut sum = job(0, ops);
        for done in self.shared.done.iter() {
            wait_until(|| done.load(Ordering::Acquire) == epoch);
        }
        let elapsed = start.elapsed();
        for s in self.shared.sums.iter() {
            sum = sum.wrapping_add(s.load(Ordering::Relaxed));
        }
        *self.shared.job.lock().unwrap() = None;
        (elapsed, sum)
    }
}

fn worker(shared: &Shared, w: usize) {
    let mut seen = 0;
    loop {
        wait_until(|| shared.epoch.load(Ordering::Acquire) != seen);
        seen = shared.epoch.load(Ordering::Acquire);
        if seen == EXIT {
            return;
        }
        let (job, ops) = shared
            .job
            .lock()
            .unwrap()
            .clone()
            .expect("a job for this epoch");
        let sum = job(w, ops);
        drop(job);
        shared.sums[w - 1].store(sum, Ordering::Relaxed);
        shared.done[w - 1].store(seen, Ordering::Release);
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.epoch.store(EXIT, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Measures `iters` operations per worker of `op` on `state`, in rounds of
/// at most `round` operations; between rounds (off the clock, no worker
/// running) `reset` gives the state back its memory, so arenas that never
/// reuse memory run in the same pages every round.
pub fn measure<S: Send + Sync + 'static>(
    pool: &mut WorkerPool,
    state: &mut Arc<S>,
    iters: u64,
    round: u64,
    reset: fn(&mut S),
    op: fn(&S, usize, u64) -> u64,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(round);
        left -= n;
        let s = Arc::clone(state);
        let job: Job = Arc::new(move |w, ops| op(&s, w, ops));
        let (t, sum) = pool.run(&job, n);
        std::hint::black_box(sum);
        total += t;
        drop(job);
        reset(Arc::get_mut(state).expect("every worker released the state"));
    }
    total
}

/// The single-thread form of [`measure`], for allocators that are not
/// `Sync`: runs on the calling thread only, no pool involved.
pub fn measure_local<S>(
    state: &mut S,
    iters: u64,
    round: u64,
    reset: fn(&mut S),
    op: impl Fn(&S, u64) -> u64,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(round);
        left -= n;
        let start = Instant::now();
        let sum = op(state, n);
        total += start.elapsed();
        std::hint::black_box(sum);
        reset(state);
    }
    total
}
