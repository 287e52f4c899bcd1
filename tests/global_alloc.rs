//! `SegregatedFit` as the process's `#[global_allocator]`: every allocation
//! of this test binary (the test harness's own included) goes through it.
//! A multi-threaded workload of collections, strings, hash maps, channels
//! and threads runs to completion with checked results.
//!
//! Skipped under Miri: there the page allocator's stand-in takes its memory
//! from the global allocator, which would recurse.

//!
//! The allocator is wrapped in a re-entrancy check: an allocation or free
//! that starts while another is in progress on the same thread means the
//! allocator allocated through itself (as the first version did on macOS,
//! where std's mutex boxes its pthread mutex on first lock: a stack
//! overflow before `main`; the macOS CI job runs this test for that
//! reason). The check aborts with a message instead of recursing.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;

use allocasm::SegregatedFit;

/// `SegregatedFit` behind a per-thread "inside the allocator" flag.
struct Checked(SegregatedFit);

std::thread_local! {
    // `const`, no `Drop`: accessing it never allocates or registers anything.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the flag set; aborts if it was set already.
fn guarded<R>(f: impl FnOnce() -> R) -> R {
    if INSIDE.with(|c| c.replace(true)) {
        // No allocation here: write the message with a raw write(2)-like
        // path (eprintln would allocate its lock's buffer at most once, but
        // we are inside the allocator).
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SegregatedFit re-entered itself: it allocated through the global allocator\n",
        );
        std::process::abort();
    }
    let r = f();
    INSIDE.with(|c| c.set(false));
    r
}

// SAFETY: forwards to `SegregatedFit`'s `GlobalAlloc`, unchanged.
unsafe impl GlobalAlloc for Checked {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        guarded(|| unsafe { GlobalAlloc::alloc(&self.0, layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        guarded(|| unsafe { GlobalAlloc::alloc_zeroed(&self.0, layout) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        guarded(|| unsafe { GlobalAlloc::dealloc(&self.0, ptr, layout) })
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        guarded(|| unsafe { GlobalAlloc::realloc(&self.0, ptr, layout, new_size) })
    }
}

#[cfg(not(miri))]
#[global_allocator]
static GLOBAL: Checked = Checked(SegregatedFit::new());

fn scale() -> usize {
    let f = std::env::var("ALLOCASM_STRESS_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1.0);
    ((2_000.0 * f) as usize).max(10)
}

/// One worker: strings, vectors that grow (realloc across classes and into
/// the large path), a hash map, a B-tree, a deque; returns a checksum.
fn work(id: usize, n: usize) -> u64 {
    let mut words: Vec<String> = Vec::new();
    let mut map: HashMap<String, usize> = HashMap::new();
    let mut tree: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut deque: VecDeque<Box<[u64]>> = VecDeque::new();
    let mut big: Vec<u64> = Vec::new();
    for i in 0..n {
        let s = format!("thread {id} word {i} {}", "x".repeat(i % 97));
        *map.entry(s.clone()).or_default() += i;
        words.push(s);
        tree.insert(i, vec![(i % 251) as u8; i % 300 + 1]);
        deque.push_back(vec![i as u64; i % 50 + 1].into_boxed_slice());
        if deque.len() > 64 {
            let old = deque.pop_front().unwrap();
            assert!(old.iter().all(|&v| v == old[0]));
        }
        big.push(i as u64);
        if i % 500 == 499 {
            words.retain(|w| w.len() % 3 != 0);
            words.shrink_to_fit();
        }
    }
    for (i, bytes) in &tree {
        assert_eq!(bytes.len(), i % 300 + 1);
        assert!(bytes.iter().all(|&b| b == (i % 251) as u8));
    }
    assert_eq!(map.len(), n);
    assert_eq!(big.iter().sum::<u64>(), (n as u64 - 1) * n as u64 / 2);
    map.values().map(|&v| v as u64).sum::<u64>() + words.iter().map(|w| w.len() as u64).sum::<u64>()
}

#[test]
fn threads_collections_strings_to_completion() {
    let n = scale();
    let expected: Vec<u64> = (0..4).map(|id| work(id, n)).collect();
    let handles: Vec<_> = (0..4)
        .map(|id| thread::spawn(move || work(id, n)))
        .collect();
    let got: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        got, expected,
        "the same work gives the same answer on any thread"
    );
}

#[test]
fn blocks_cross_threads_through_channels() {
    let n = scale();
    let (tx, rx) = mpsc::channel::<Vec<String>>();
    let producers: Vec<_> = (0..3)
        .map(|id| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..n / 10 {
                    tx.send((0..10).map(|k| format!("{id}:{i}:{k}")).collect())
                        .unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let shared = Arc::new(Mutex::new(Vec::new()));
    let consumer = {
        let shared = shared.clone();
        thread::spawn(move || {
            let mut count = 0;
            for batch in rx {
                count += batch.len();
                // Freed on this thread, allocated on another.
                shared.lock().unwrap().push(batch.concat());
            }
            count
        })
    };
    for p in producers {
        p.join().unwrap();
    }
    let count = consumer.join().unwrap();
    assert_eq!(count, 3 * (n / 10) * 10);
    assert_eq!(shared.lock().unwrap().len(), 3 * (n / 10));
}

/// Many short-lived threads: each binds its cache on its first allocation
/// (registering its exit hook without allocating) and flushes it when it
/// exits; the blocks come back to the shared queues.
#[test]
#[cfg(not(miri))]
fn short_lived_threads_flush_their_caches() {
    for round in 0..20 {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                thread::spawn(move || {
                    let v: Vec<Box<[u8; 64]>> =
                        (0..200).map(|i| Box::new([(i + t) as u8; 64])).collect();
                    v.iter().map(|b| b[0] as usize).sum::<usize>()
                })
            })
            .collect();
        for h in handles {
            assert!(h.join().unwrap() > 0, "round {round}");
        }
    }
    let class = SegregatedFit::size_class(64, 8).unwrap();
    let st = GLOBAL.0.stats();
    // The main thread's cache and the test harness's threads may hold some
    // blocks; 80 exited threads' 200 blocks each must not all be stuck.
    assert!(
        st.classes[class.index()].cached < 4 * 200,
        "{:?}",
        st.classes[class.index()]
    );
    let _ = GLOBAL.0.trim();
}
