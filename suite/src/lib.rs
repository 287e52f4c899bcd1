//! # allocasm-suite
//!
//! The codegen suite of [allocasm](../allocasm/index.html): it compiles every
//! `#[inline(never)]` probe of the allocator library (its `probes` feature)
//! for every target profile in `targets/`, extracts and normalizes each
//! probe's listing, checks it against the profile's expectations, snapshots
//! it, and diffs two compilers. The `allocasm` command (`src/main.rs`) is its
//! front end; see [`codegen`] for the pipeline.
//!
//! It lives in a crate of its own so that a program depending on the
//! allocators pulls none of the suite's dependencies (clap, regex, toml,
//! serde, ...) and links none of the probes.

#![warn(missing_docs)]

pub mod bisect;
pub mod codegen;
pub mod diff;
pub mod history;
pub mod render;
pub mod toolchain;
pub mod tools;
