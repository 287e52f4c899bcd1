//! The `allocasm` command: list, show, check, report and diff the assembly of
//! every allocator probe (see `allocasm --help` and README.md).
//!
//! Thin on purpose: the commands live in [`cli`], the output kinds in
//! [`report`]; this only maps the outcome to an exit code.

mod cli;
mod report;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run(std::env::args_os()) {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => {
            error.print();
            ExitCode::from(error.code())
        }
    }
}
