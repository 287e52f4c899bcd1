//! The bench's "global" boundary with SegregatedFit: the crate's
//! `SegregatedFit` as this program's `#[global_allocator]`, the loops of
//! `benches/allocators/global.rs` (run by `scripts/bench`).

#[path = "../allocators/global.rs"]
mod global;

#[global_allocator]
static GLOBAL: allocasm::SegregatedFit = allocasm::SegregatedFit::new();

fn main() {
    global::run("SegregatedFit");
}
