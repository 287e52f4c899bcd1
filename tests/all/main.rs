//! The integration tests: one binary, a module per topic.
mod conformance;
mod guard_zone;
mod packed;
mod thread_cursor;
mod unity;
