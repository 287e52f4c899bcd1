//! The `allocasm` command: list the probes and profiles; show, snapshot,
//! check and report the assembly of every allocator probe; diff, history and
//! bisect it across compilers; verify-extractor against cargo-show-asm (see
//! `allocasm --help` and docs/cli.md).
//!
//! Thin on purpose: the commands live in [`cli`], the output kinds in
//! [`report`], the pipe-safe output macros in [`out`]; this only maps the
//! outcome to an exit code.

// Every line goes through `out`'s macros: std's print macros panic on a
// closed pipe (`allocasm check | head`).
#![warn(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod out;

mod cli;
mod report;

use std::process::ExitCode;

/// The command's own status, whether or not its reader read everything:
/// `allocasm check | head -1` exits 1 after a failed check, as unpiped (see
/// [`out`]).
fn main() -> ExitCode {
    let code = match cli::run(std::env::args_os()) {
        Ok(status) => status.code(),
        Err(error) => {
            error.print();
            error.code()
        }
    };
    out::flush();
    ExitCode::from(code)
}
