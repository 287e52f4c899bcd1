//! Where PackedArena's fast path spends its cycles beside the bare
//! `fetch_add`: a bench-only copy of the fast path (`src/packed.rs`,
//! `alloc_with`) whose pieces can each be left out, measured in one run
//! beside the bare loop, with rounds interleaved so a busy machine biases
//! no variant (docs/packed-x86.md has the table and llvm-mca's view).
//!
//! The copy keeps the library's layout (the cursor alone on its line, the
//! read-only fields on the next), its word layout (block index 63..57,
//! factor 56..55, position 54..0) and its `Acquire` add; its slow path only
//! moves to the next block (single thread, nothing to free). The pieces:
//!
//! - `REQ`: the request check (`size - 1 >= M`, a load and a compare);
//! - `DEC`: the decode (factor, block, position); without it the word is
//!   the position in one block of fixed size;
//! - `FIT`: the fit check (`position + size <= block_size << factor`) and
//!   its branch to the slow path;
//! - `BASE`: `base` read from the hot line (else a constant);
//! - `GEOM`: `block_size` and `stride_log2` read from the hot line (else
//!   constants: a const-generic geometry);
//! - `EARLY`: the three fields read before the add, held there by an empty
//!   `asm!` (the form of 3eebb50).
//!
//! Run: `RUSTFLAGS='-C llvm-args=-align-loops=64' cargo bench -p
//! allocasm-benches --bench packed_ablation` (scripts/bench's flags; the
//! loops are the `#[inline(never)]` `loop_*` functions, which
//! scripts/packed-ablation-mca feeds to llvm-mca). `ABLATION_ROUNDS` sets
//! the number of interleaved rounds (default 3).

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::Criterion;
use crossbeam_utils::CachePadded;

const REQ: u8 = 1;
const DEC: u8 = 2;
const FIT: u8 = 4;
const BASE: u8 = 8;
const GEOM: u8 = 16;
const EARLY: u8 = 32;
/// The fit check on the add's result alone: blocks sit at the end of their
/// slot and a block's position starts at `2^K - capacity`, so a
/// reservation fits when `seen + size - 1` has no position bit at or above
/// `K` (one `lea`, one `test`); the address needs no factor either.
const MASK: u8 = 64;
/// The fit check on the position alone (`position + size <= block_size`,
/// no factor).
const NOFACTOR: u8 = 128;
const FULL: u8 = REQ | DEC | FIT | BASE | GEOM;

const POSITION_BITS: u32 = 55;
const FACTOR_SHIFT: u32 = POSITION_BITS;
const BLOCK_SHIFT: u32 = POSITION_BITS + 2;
const POSITION_MASK: u64 = (1 << POSITION_BITS) - 1;
/// `K` of [`MASK`]: positions count up to `2^K`.
const FIT_BITS: u32 = 48;
const FIT_MASK: u64 = POSITION_MASK & !((1 << FIT_BITS) - 1);
const FACTOR_MASK: u64 = 3;

/// The geometry the constants stand for: 4 MiB blocks (the bench's
/// `PackedArena::new(4 << 20)`), stride 4 MiB, 128 slots.
const BLOCK_SIZE: u64 = 4 << 20;
const STRIDE_LOG2: u32 = 22;
/// A made-up reservation address: the copy never touches its memory, it
/// only sums the addresses, as the bench's loops do.
const BASE_ADDR: usize = 0x7f00_0000_0000;

/// Reservations per measured round before the cursor is reset.
const ROUND: u64 = 1 << 20;

#[repr(C)]
struct Ablated {
    cursor: CachePadded<AtomicU64>,
    hot: CachePadded<Hot>,
}

#[repr(C)]
struct Hot {
    base: usize,
    /// [`MASK`]'s base: `base + stride - 2^K` (wrapping), so that slot
    /// `i`'s block (at the slot's end) is at `base_end + (i << stride_log2)
    /// + position`.
    base_end: usize,
    block_size: u64,
    max_request: usize,
    stride_log2: u32,
}

impl Ablated {
    fn new() -> Ablated {
        Ablated {
            cursor: CachePadded::new(AtomicU64::new(0)),
            hot: CachePadded::new(Hot {
                base: BASE_ADDR,
                base_end: BASE_ADDR
                    .wrapping_add(1 << STRIDE_LOG2)
                    .wrapping_sub(1 << FIT_BITS),
                block_size: BLOCK_SIZE,
                max_request: BLOCK_SIZE as usize,
                stride_log2: STRIDE_LOG2,
            }),
        }
    }

    #[inline(always)]
    fn alloc<const V: u8>(&self, size: usize) -> usize {
        let hot = &*self.hot;
        if V & REQ != 0 && size.wrapping_sub(1) >= hot.max_request {
            refuse(size);
        }
        let size = (size + 15) & !15;
        let (mut e_base, mut e_bs, mut e_sl) = (0usize, 0u64, 0u32);
        if V & EARLY != 0 {
            (e_base, e_bs, e_sl) = (hot.base, hot.block_size, hot.stride_log2);
            // SAFETY: an empty instruction string: nothing runs; the block
            // only takes the three values in registers before the add.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                core::arch::asm!(
                    "/* {0} {1} {2:e} */",
                    in(reg) e_base,
                    in(reg) e_bs,
                    in(reg) e_sl,
                    options(nomem, nostack, preserves_flags)
                );
            }
        }
        // ORDERING: Acquire, as the library's `alloc` (nothing is freed here;
        // the ordering only keeps the copy's code the library's).
        let seen = self.cursor.fetch_add(size as u64, Ordering::Acquire);
        let load = |early: u64, field: u64, bit: u8, constant: u64| {
            if V & bit == 0 {
                constant
            } else if V & EARLY != 0 {
                early
            } else {
                field
            }
        };
        let base = load(e_base as u64, hot.base as u64, BASE, BASE_ADDR as u64) as usize;
        let block_size = load(e_bs, hot.block_size, GEOM, BLOCK_SIZE);
        let stride_log2 = load(
            e_sl as u64,
            hot.stride_log2 as u64,
            GEOM,
            STRIDE_LOG2 as u64,
        );
        if V & MASK != 0 {
            if (seen + size as u64 - 1) & FIT_MASK == 0 {
                let block = (seen >> BLOCK_SHIFT) as usize;
                return hot.base_end + (block << stride_log2) + (seen & POSITION_MASK) as usize;
            }
            return self.slow::<V>(size, seen);
        }
        if V & NOFACTOR != 0 {
            let position = seen & POSITION_MASK;
            if position + size as u64 <= block_size {
                let block = (seen >> BLOCK_SHIFT) as usize;
                return base + (block << stride_log2) + position as usize;
            }
            return self.slow::<V>(size, seen);
        }
        let (block, factor, position) = if V & DEC != 0 {
            (
                (seen >> BLOCK_SHIFT) as usize,
                ((seen >> FACTOR_SHIFT) & FACTOR_MASK) as u32,
                seen & POSITION_MASK,
            )
        } else {
            (0, 0, seen)
        };
        if V & FIT == 0 || position + size as u64 <= block_size << factor {
            return base + (block << stride_log2) + position as usize;
        }
        self.slow::<V>(size, seen)
    }

    /// The next block with `size` bytes reserved at its start (one thread:
    /// no race to settle, no counter to feed).
    #[cold]
    #[inline(never)]
    fn slow<const V: u8>(&self, size: usize, seen: u64) -> usize {
        let block = if V & DEC != 0 {
            ((seen >> BLOCK_SHIFT) as usize + 1) % 128
        } else {
            0
        };
        let start = if V & MASK != 0 {
            (1 << FIT_BITS) - self.hot.block_size
        } else {
            0
        };
        let word = ((block as u64) << BLOCK_SHIFT) | (start + size as u64);
        self.cursor.store(word, Ordering::Release);
        let base = if V & MASK != 0 {
            self.hot.base_end.wrapping_add(start as usize)
        } else {
            self.hot.base
        };
        base + (block << self.hot.stride_log2)
    }
}

#[cold]
#[inline(never)]
fn refuse(size: usize) -> ! {
    panic!("a {size}-byte request refused")
}

/// The measured loops, one symbol each (for llvm-mca): 16-byte
/// reservations, addresses folded into the sum as the bench's `bump16`.
macro_rules! loops {
    ($($name:ident = $v:expr, $label:literal;)*) => {
        $(
            #[inline(never)]
            fn $name(a: &Ablated, n: u64) -> u64 {
                let mut sum = 0u64;
                for _ in 0..n {
                    sum = sum.wrapping_add(a.alloc::<{ $v }>(16) as u64);
                }
                sum
            }
        )*
        const VARIANTS: &[(&str, fn(&Ablated, u64) -> u64)] = &[$(($label, $name)),*];
    };
}

loops! {
    loop_full = FULL, "full (loads after the add)";
    loop_early = FULL | EARLY, "full, loads before the add (3eebb50)";
    loop_no_req = FULL & !REQ, "no request check";
    loop_no_dec = FULL & !DEC, "no decode (fixed stride)";
    loop_no_fit = FULL & !FIT, "no fit check";
    loop_const_base = FULL & !BASE, "base constant";
    loop_const_geom = FULL & !BASE & !GEOM, "base and geometry constant";
    loop_add_only = 0, "fetch_add + constant base only";
    loop_fit_nofactor = FULL | NOFACTOR, "fit check on the position only (no factor)";
    loop_fit_mask = FULL | MASK, "fit check by mask (blocks at slot end)";
}

/// The bare loop: one `fetch_add` of 16 per reservation, the returned word
/// folded into the sum (the bench's `raw fetch_add`).
#[inline(never)]
fn loop_bare(a: &Ablated, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(a.cursor.fetch_add(16, Ordering::Relaxed));
    }
    sum
}

/// The library's own `PackedArena::alloc` in the same loop.
#[inline(never)]
fn loop_library(a: &allocasm::PackedArena, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        let p = a.alloc(16).expect("a 16-byte reservation");
        sum = sum.wrapping_add(p.as_ptr() as u64);
    }
    sum
}

/// The cursor word of a fresh block 0 for a variant.
fn start(label: &str) -> u64 {
    if label.contains("by mask") {
        (1 << FIT_BITS) - BLOCK_SIZE
    } else {
        0
    }
}

fn timed(iters: u64, mut round: impl FnMut(u64) -> u64) -> std::time::Duration {
    let mut total = std::time::Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(ROUND);
        left -= n;
        let start = std::time::Instant::now();
        let sum = round(n);
        total += start.elapsed();
        std::hint::black_box(sum);
    }
    total
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let rounds: u32 = std::env::var("ABLATION_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let a = Ablated::new();
    // The variants that keep the fit check hand out the same addresses
    // (4 MiB blocks, stride 4 MiB: a block at its slot's end starts where
    // one at its start does), across a rotation too.
    let n = 3 * (BLOCK_SIZE / 16) / 2;
    let sums: Vec<_> = VARIANTS
        .iter()
        .filter(|(label, _)| !label.contains("no ") && !label.contains("only"))
        .map(|&(label, f)| {
            a.cursor.store(start(label), Ordering::Relaxed);
            (label, f(&a, n))
        })
        .collect();
    assert!(
        sums.iter().all(|s| s.1 == sums[0].1),
        "the variants disagree: {sums:?}"
    );
    let mut g = c.benchmark_group("packed-ablation");
    let mut lib = allocasm::PackedArena::new(4 << 20).expect("a PackedArena");
    for r in 1..=rounds {
        g.bench_function(format!("bare fetch_add/r{r}"), |b| {
            b.iter_custom(|iters| {
                timed(iters, |n| {
                    a.cursor.store(0, Ordering::Relaxed);
                    loop_bare(&a, n)
                })
            })
        });
        for &(label, f) in VARIANTS {
            g.bench_function(format!("{label}/r{r}"), |b| {
                b.iter_custom(|iters| {
                    timed(iters, |n| {
                        a.cursor.store(start(label), Ordering::Relaxed);
                        f(&a, n)
                    })
                })
            });
        }
        g.bench_function(format!("library PackedArena::alloc/r{r}"), |b| {
            b.iter_custom(|iters| {
                timed(iters, |n| {
                    lib.reset();
                    loop_library(&lib, n)
                })
            })
        });
    }
    g.finish();
    c.final_summary();
}
