//! The allocator library's integration tests, built as one binary: one module
//! per topic. (The codegen suite's tests are in `suite/tests/`.) Tests that
//! call the probes need the `probes` feature, which a workspace `cargo test`
//! turns on (the suite depends on it); `cargo test -p allocasm` alone leaves
//! them out.

mod chapter;
mod conformance;
mod guard_zone;
mod packed;
mod segregated;
mod stress;
mod thread_cursor;
mod unity;
