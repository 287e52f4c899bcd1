//! The bench's "global" boundary with glibc's malloc: `std::alloc::System`
//! as this program's `#[global_allocator]`, the loops of
//! `benches/allocators/global.rs` (run by `scripts/bench`).

#[path = "../allocators/global.rs"]
mod global;

#[global_allocator]
static GLOBAL: std::alloc::System = std::alloc::System;

fn main() {
    global::run("system");
}
