//! The integration tests, built as one binary: one module per topic.

mod chapter;
mod codegen;
mod conformance;
mod guard_zone;
mod linked;
mod packed;
mod probes;
mod thread_cursor;
