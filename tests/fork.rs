//! `fork` while another thread is inside `SegregatedFit`, installed as the
//! process's `#[global_allocator]`: every child must be able to allocate.
//!
//! A hammer thread keeps the allocator's spin locks busy: the large-block
//! list (large allocations), every class's growth lock (`trim`, then growth
//! again), the span region (fresh classes), and the cache registry
//! (short-lived threads bind and retire their caches, `stats` walks them).
//! The main thread forks `1000 * ALLOCASM_STRESS_SCALE` times; each child
//! allocates and frees (small, large, growth, `trim`, `stats`) and exits
//! with `_exit`. The parent waits at most a second per child (ten under
//! qemu-user: `ALLOCASM_RUNNER`), then kills it and fails: a child forked
//! while the hammer held a lock spun forever on it, as nothing released it
//! in the child (there was no `pthread_atfork` handler).
//!
//! `harness = false`: no test-harness threads (whose locks a child would
//! also inherit); `main` is the test. Unix only.

#[cfg(all(unix, not(miri), not(loom)))]
#[global_allocator]
static GLOBAL: allocasm::SegregatedFit = allocasm::SegregatedFit::new();

#[cfg(not(all(unix, not(miri), not(loom))))]
fn main() {}

#[cfg(all(unix, not(miri), not(loom)))]
fn main() {
    imp::run();
}

#[cfg(all(unix, not(miri), not(loom)))]
mod imp {
    use std::alloc::Layout;
    use std::hint::black_box;
    use std::ptr::NonNull;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::thread;
    use std::time::{Duration, Instant};

    use super::GLOBAL;

    /// How many forks: 1000, times `ALLOCASM_STRESS_SCALE` (a number; `small`
    /// is 0.1), at least 20.
    fn forks() -> usize {
        let f = match std::env::var("ALLOCASM_STRESS_SCALE").as_deref() {
            Ok("small") => 0.1,
            Ok(s) => s.parse::<f64>().unwrap_or(1.0),
            Err(_) => 1.0,
        };
        ((1000.0 * f) as usize).max(20)
    }

    /// What a child does: every lock-taking path once, then `_exit(0)`.
    /// Never returns; never unwinds (a panic exits with 101).
    fn child() -> ! {
        let ok = std::panic::catch_unwind(|| {
            // Small blocks from the cache and the queues.
            let v: Vec<Box<[u64; 6]>> = (0..300).map(|i| Box::new([i as u64; 6])).collect();
            assert!(v.iter().enumerate().all(|(i, b)| b[5] == i as u64));
            drop(v);
            // The large-block list.
            let mut big = vec![1u8; 300 << 10];
            big[(300 << 10) - 1] = 2;
            assert_eq!(
                black_box(&big).iter().map(|&b| b as usize).sum::<usize>(),
                (300 << 10) + 1
            );
            big.resize(700 << 10, 3);
            drop(big);
            // Class growth (and the region): a class few programs use.
            let l = Layout::from_size_align(40_000, 8).unwrap();
            let blocks: Vec<NonNull<u8>> = (0..8).map(|_| GLOBAL.alloc(l).unwrap()).collect();
            for p in blocks {
                // SAFETY: allocated just above with `l`, freed once.
                unsafe { GLOBAL.dealloc(p, l) };
            }
            // Every class's growth lock, and the cache registry.
            GLOBAL.trim();
            let _ = black_box(GLOBAL.stats());
        })
        .is_ok();
        // SAFETY: `_exit` ends the child without running the parent's atexit
        // handlers or flushing its stdio buffers.
        unsafe { libc::_exit(if ok { 0 } else { 101 }) }
    }

    /// Keeps the allocator's locks busy until `stop`.
    fn hammer(stop: Arc<AtomicBool>, rounds: Arc<AtomicUsize>) {
        let sizes = [100_000usize, 300_000, 1 << 20];
        let mut i = 0usize;
        while !stop.load(Ordering::Relaxed) {
            // Large allocations: one link and one unlink each.
            let big: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![i as u8; n]).collect();
            black_box(&big);
            drop(big);
            // Growth: take a span's worth of a few classes, free, trim
            // (every class lock in turn), so the next round grows again.
            for size in [48usize, 1000, 9000] {
                let l = Layout::from_size_align(size, 8).unwrap();
                let blocks: Vec<NonNull<u8>> = (0..64).map(|_| GLOBAL.alloc(l).unwrap()).collect();
                for p in blocks {
                    // SAFETY: allocated just above with `l`, freed once.
                    unsafe { GLOBAL.dealloc(p, l) };
                }
            }
            GLOBAL.trim();
            // The cache registry: a thread binds its cache and retires it.
            if i.is_multiple_of(8) {
                thread::spawn(|| black_box(vec![0u8; 64]).len())
                    .join()
                    .unwrap();
                let _ = black_box(GLOBAL.stats());
            }
            i += 1;
            rounds.store(i, Ordering::Relaxed);
        }
    }

    /// How long a child may take: a second natively; ten under an emulator
    /// (`ALLOCASM_RUNNER` set, as scripts/test's qemu-user steps do), where
    /// a debug child took up to 0.65 s on two loaded cores and once over 1 s.
    fn limit() -> Duration {
        match std::env::var_os("ALLOCASM_RUNNER") {
            Some(r) if !r.is_empty() => Duration::from_secs(10),
            _ => Duration::from_secs(1),
        }
    }

    pub(super) fn run() {
        let n = forks();
        let limit = limit();
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicUsize::new(0));
        let h = {
            let (stop, rounds) = (stop.clone(), rounds.clone());
            thread::spawn(move || hammer(stop, rounds))
        };
        while rounds.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        let start = Instant::now();
        let mut slowest = Duration::ZERO;
        let mut failure = None;
        for k in 0..n {
            // SAFETY: the child only allocates, frees and `_exit`s.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
            if pid == 0 {
                child();
            }
            let t = Instant::now();
            let status = loop {
                let mut status = 0;
                // SAFETY: `pid` is our child; `status` a valid out-pointer.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                assert!(r >= 0, "waitpid: {}", std::io::Error::last_os_error());
                if r == pid {
                    break Some(status);
                }
                if t.elapsed() > limit {
                    // SAFETY: our child, not yet reaped.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    break None;
                }
                thread::sleep(Duration::from_micros(200));
            };
            slowest = slowest.max(t.elapsed());
            match status {
                Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => {}
                Some(s) => {
                    failure = Some(format!("child {k} of {n} failed: wait status {s:#x}"));
                    break;
                }
                None => {
                    failure = Some(format!(
                        "child {k} of {n} hung for {limit:?} inside the allocator (killed)"
                    ));
                    break;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        let hammered = rounds.load(Ordering::Relaxed);
        if let Some(f) = failure {
            eprintln!("fork: FAILED: {f} (hammer rounds: {hammered})");
            std::process::exit(1);
        }
        println!(
            "fork: {n} children allocated and exited in {:.2?} (slowest {slowest:.2?}, hammer rounds {hammered})",
            start.elapsed()
        );
    }
}
