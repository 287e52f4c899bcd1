//! The bench's "global" boundary with mimalloc: `mimalloc::MiMalloc` as
//! this program's `#[global_allocator]`, the loops of
//! `benches/allocators/global.rs` (run by `scripts/bench`). Built with
//! `--cfg allocasm_no_mimalloc` (no C toolchain for the target) it only
//! says so.

#[cfg(not(allocasm_no_mimalloc))]
#[path = "../allocators/global.rs"]
mod global;

#[cfg(not(allocasm_no_mimalloc))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    #[cfg(not(allocasm_no_mimalloc))]
    global::run("mimalloc");
    #[cfg(allocasm_no_mimalloc)]
    eprintln!("bench_global_mimalloc: built without mimalloc (--cfg allocasm_no_mimalloc)");
}
