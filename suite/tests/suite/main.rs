//! The codegen suite's integration tests, built as one binary: every probe of
//! the registry found and checked on every profile, the insta snapshots, the
//! linked view and the `allocasm` command itself.

mod any_crate;
mod bench_programs_script;
mod cli;
mod cli_output;
mod codegen;
mod cross;
mod executed;
mod fuzz;
mod linked;
mod need;
mod pipe;
mod probes;
mod report_html;
// Stand-in programs written as shell scripts: unix only.
#[cfg(unix)]
mod rustup;
#[cfg(unix)]
mod setup_script;
mod snapshots;
