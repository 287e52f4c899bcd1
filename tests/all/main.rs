//! The integration tests, built as one binary: one module per topic.

mod chapter;
mod cli;
mod codegen;
mod conformance;
mod executed;
mod guard_zone;
mod linked;
mod packed;
mod probes;
mod segregated;
mod stress;
mod thread_cursor;
mod unity;
