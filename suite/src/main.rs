//! The `allocasm` command: list, show, check, report and diff the assembly of
//! every allocator probe (see `allocasm --help` and README.md).
//!
//! Thin on purpose: the commands live in [`cli`], the output kinds in
//! [`report`]; this only maps the outcome to an exit code.

mod cli;
mod report;

use std::process::ExitCode;

fn main() -> ExitCode {
    exit_quietly_on_broken_pipe();
    match cli::run(std::env::args_os()) {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => {
            error.print();
            ExitCode::from(error.code())
        }
    }
}

/// `allocasm show ... | head` closes the pipe early; std's `println!` then
/// panics ("failed printing to stdout: Broken pipe"). The reader has what it
/// wanted, so that one panic ends the process quietly with status 0; every
/// other panic keeps the default report.
fn exit_quietly_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}
