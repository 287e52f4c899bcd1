//! The bench's "global" boundary: the same two loops in one program per
//! allocator, each with that allocator as its `#[global_allocator]`
//! (`benches/examples/bench_global_system.rs`, `bench_global_mimalloc.rs`,
//! `bench_global_segregated.rs`), so every allocation goes through
//! `std::alloc::alloc`, i.e. `__rust_alloc`, as in any Rust program that
//! installs it. `scripts/bench` runs the three in turn, in the same run as
//! the criterion benches, and reports the medians side by side.
//!
//! Usage: `bench_global_<allocator> [pairs per sample] [samples]` (default
//! 2^20 and 21). Prints one line per loop:
//! `global name=<allocator> workload=<loop> ns=<median ns per pair>
//! samples=<n> pairs=<per sample>`. The loops are the criterion bench's
//! `alloc-free64` (an immediate 64-byte allocate/free pair, the address
//! folded into a checksum) and `chapter` (allocate 64 bytes, write
//! `p[0] = i`, free).

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::time::Instant;

const L64: Layout = Layout::new::<[u64; 8]>();

/// `n` immediate 64-byte allocate/free pairs, the addresses into the sum
/// (a pointer that escapes into an integer keeps the pair from being
/// removed as unused).
#[inline(never)]
fn alloc_free64(n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        // SAFETY: `L64` has a non-zero size.
        let p = unsafe { alloc(L64) };
        if p.is_null() {
            handle_alloc_error(L64);
        }
        sum = sum.wrapping_add(p as u64);
        // SAFETY: `p` was just allocated with `L64`, freed once.
        unsafe { dealloc(p, L64) };
    }
    sum
}

/// The chapter's opening program: `new int[16]`, `p[0] = i`, `delete[]`.
#[inline(never)]
fn chapter(n: u64) -> u64 {
    for i in 0..n {
        // SAFETY: `L64` has a non-zero size.
        let p = unsafe { alloc(L64) };
        if p.is_null() {
            handle_alloc_error(L64);
        }
        // SAFETY: `p` holds 64 bytes aligned to 8.
        unsafe { p.cast::<u32>().write_volatile(i as u32) };
        // SAFETY: `p` was just allocated with `L64`, freed once.
        unsafe { dealloc(p, L64) };
    }
    n
}

/// The median ns per pair of `samples` timed runs of `f(pairs)`, after one
/// untimed run (the allocator's first block and the caches warm).
fn median_ns(f: fn(u64) -> u64, pairs: u64, samples: usize) -> f64 {
    std::hint::black_box(f(pairs));
    let mut t: Vec<f64> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f(std::hint::black_box(pairs)));
            start.elapsed().as_nanos() as f64 / pairs as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Runs both loops with this program's global allocator, named `name`.
pub fn run(name: &str) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("usage: bench_global_<allocator> [pairs per sample] [samples]");
                std::process::exit(2)
            })
        })
    };
    let pairs = arg(0, 1 << 20).max(1);
    let samples = arg(1, 21).max(1) as usize;
    for (workload, f) in [
        ("alloc-free64", alloc_free64 as fn(u64) -> u64),
        ("chapter", chapter),
    ] {
        let ns = median_ns(f, pairs, samples);
        println!(
            "global name={name} workload={workload} ns={ns:.4} samples={samples} pairs={pairs}"
        );
    }
}
