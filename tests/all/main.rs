//! The integration tests, built as one binary: one module per topic.

mod chapter;
mod conformance;
mod probes;
