//! The integration tests, built as one binary: one module per topic.

mod chapter;
mod cli;
mod codegen;
mod conformance;
mod probes;
