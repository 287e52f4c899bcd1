//! The integration tests, built as one binary: one module per topic.

mod chapter;
mod codegen;
mod conformance;
mod probes;
