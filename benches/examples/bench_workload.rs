//! The two measurements of issue 6 that are not timings, as one program
//! that `scripts/bench` runs once per allocator:
//!
//! - `bench_workload l1 <allocator> <ops> [--baseline]`: the random
//!   allocation pattern run under cachegrind. 256 slots; each operation
//!   picks a slot at random: an occupied slot is read and freed, an empty
//!   one gets a fresh 16..128-byte block that is written. About 128 blocks
//!   of 72 bytes on average are live: the live data fits in L1, so the
//!   misses counted are the allocator's (its metadata, and where it places
//!   blocks), not the workload's. `--baseline` runs
//!   the same random numbers and slot bookkeeping (and builds the same
//!   allocator) but neither allocates, frees nor touches a block, so the
//!   difference of the two runs' D1 misses is what allocating and using the
//!   blocks cost.
//! - `bench_workload metadata <allocator> <count>`: `count` live 64-byte
//!   allocations, each fully written; prints the growth of the resident
//!   set (`/proc/self/statm`) over the payload, i.e. every byte the
//!   allocator made resident beyond what was asked for: headers, side
//!   tables, rounding slack, unused tails of touched pages.
//! - `bench_workload list`: the allocator names, one a line.

use core::alloc::Layout;
use core::ptr::NonNull;

#[allow(dead_code)]
#[path = "../allocators/subjects.rs"]
mod subjects;

use subjects::{Config, LocalAlloc, Subject, Visit};

fn usage() -> ! {
    eprintln!(
        "usage: bench_workload l1 <allocator> <ops> [--baseline] | metadata <allocator> <count> | list"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    match arg(0) {
        "list" => subjects::names().iter().for_each(|n| println!("{n}")),
        "l1" => {
            let run = L1 {
                ops: number(2),
                baseline: args.get(3).is_some_and(|a| a == "--baseline"),
            };
            let ops = number(2) as usize;
            // Half the operations allocate, 72 bytes on average (+16 for records).
            let cfg = Config {
                workers: 1,
                block: 128,
                bytes: ops * 96 + (1 << 20),
                live: 256,
            };
            let sum = subjects::with_subject(arg(1), cfg, run).unwrap_or_else(|| usage());
            println!("l1 {} checksum {sum}", arg(1));
        }
        "metadata" => {
            let count = number(2) as usize;
            // The pointer table is resident before the first reading, which
            // comes before the allocator is built: what it maps and touches
            // when it is made (a pool's free list, a size-class table) counts.
            let mut ptrs = vec![NonNull::<u8>::dangling(); count];
            std::hint::black_box(&mut ptrs);
            let run = Metadata {
                ptrs,
                before: resident(),
            };
            let cfg = Config {
                workers: 1,
                block: 64,
                bytes: count * 96 + (1 << 20),
                live: count,
            };
            let line = subjects::with_subject(arg(1), cfg, run).unwrap_or_else(|| usage());
            match line {
                Some(m) => println!(
                    "metadata {} count={} payload={} resident_growth={} per_alloc_bytes={:.4} percent={:.4}",
                    arg(1),
                    m.count,
                    m.payload,
                    m.growth,
                    m.per_alloc(),
                    m.percent()
                ),
                None => println!("metadata {} unavailable (no /proc/self/statm)", arg(1)),
            }
        }
        _ => usage(),
    }
}

struct L1 {
    ops: u64,
    baseline: bool,
}

impl Visit for L1 {
    type Out = u64;

    fn visit<S: Subject>(self, subject: S) -> u64 {
        const SLOTS: usize = 256;
        let mut slots: Vec<Option<(NonNull<u8>, Layout)>> = vec![None; SLOTS];
        let mut local = subject.local(0);
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut sum = 0u64;
        for i in 0..self.ops {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let slot = (rng >> 20) as usize % SLOTS;
            let size = 16 * (1 + (rng & 7) as usize);
            match slots[slot].take() {
                Some((p, layout)) if !self.baseline => {
                    // SAFETY: `p` is live and its first 8 bytes were written.
                    sum = sum.wrapping_add(unsafe { p.cast::<u64>().read() });
                    // SAFETY: `p` came from this subject with `layout`, once.
                    unsafe { local.free(p, layout) };
                }
                Some((p, _)) => sum = sum.wrapping_add(p.as_ptr() as u64),
                None => {
                    // SAFETY: 16..=128 bytes, alignment 8 is a power of two.
                    let layout = unsafe { Layout::from_size_align_unchecked(size, 8) };
                    let p = if self.baseline {
                        NonNull::<u64>::dangling().cast()
                    } else {
                        let p = local.alloc(layout);
                        // SAFETY: `p` holds at least 16 bytes aligned to 8.
                        unsafe { p.cast::<u64>().write(i) };
                        p
                    };
                    slots[slot] = Some((p, layout));
                }
            }
        }
        for (p, layout) in slots.into_iter().flatten() {
            if !self.baseline {
                // SAFETY: each block left is live and came from this subject.
                unsafe { local.free(p, layout) };
            }
        }
        std::hint::black_box(sum)
    }
}

struct Metadata {
    ptrs: Vec<NonNull<u8>>,
    before: Option<usize>,
}

struct Footprint {
    count: usize,
    payload: usize,
    growth: isize,
}

impl Footprint {
    fn per_alloc(&self) -> f64 {
        (self.growth - self.payload as isize) as f64 / self.count as f64
    }
    fn percent(&self) -> f64 {
        100.0 * (self.growth - self.payload as isize) as f64 / self.payload as f64
    }
}

/// Resident bytes of this process, from `/proc/self/statm` (Linux).
fn resident() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * allocasm::PageAllocator::new().page_size())
}

impl Visit for Metadata {
    type Out = Option<Footprint>;

    fn visit<S: Subject>(self, subject: S) -> Option<Footprint> {
        const L64: Layout = Layout::new::<[u64; 8]>();
        let Metadata { mut ptrs, before } = self;
        let before = before?;
        let mut local = subject.local(0);
        for p in ptrs.iter_mut() {
            let q = local.alloc(L64);
            // SAFETY: `q` holds 64 writable bytes.
            unsafe { q.as_ptr().write_bytes(0xA5, 64) };
            *p = q;
        }
        let after = resident()?;
        for &p in &ptrs {
            // SAFETY: each pointer is live and came from this subject.
            unsafe { local.free(p, L64) };
        }
        let count = ptrs.len();
        Some(Footprint {
            count,
            payload: count * 64,
            growth: after as isize - before as isize,
        })
    }
}
