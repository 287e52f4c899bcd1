//! The command's output on stdout and stderr, safe to pipe into `head` or
//! `true`: once a reader has closed a stream, further output to it is
//! dropped quietly and the command goes on to exit with the status it would
//! have had (a failed `check` still exits 1), never 0 after a failure and
//! never a panic.
//!
//! std's `println!` panics when stdout is a closed pipe; every line of the
//! binary goes through [`outln!`], [`out!`] and [`errln!`] instead (clippy's
//! `print_stdout` and `print_stderr` lints keep it so). The first failed
//! write to a stream marks it closed: later writes skip it, so a closed
//! stdout costs one failed `write` and the rest of the run is the same as
//! with a reader.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout unless it is closed; a failed write (a reader that went
/// away: `EPIPE`) marks it closed.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    write_to(&mut std::io::stdout().lock(), &STDOUT_CLOSED, args);
}

/// Writes to stderr unless it is closed, as [`write_stdout`].
pub fn write_stderr(args: fmt::Arguments<'_>) {
    write_to(&mut std::io::stderr().lock(), &STDERR_CLOSED, args);
}

fn write_to(w: &mut impl Write, closed: &AtomicBool, args: fmt::Arguments<'_>) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if w.write_fmt(args).is_err() {
        closed.store(true, Ordering::Relaxed);
    }
}

/// Whether a write to stdout has failed (its reader is gone).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes what stdout still buffers (a last line without a newline), at
/// the end of the run; a reader that is gone is no error.
pub fn flush() {
    if !stdout_closed() && std::io::stdout().lock().flush().is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// `println!` that stops quietly when stdout is closed.
macro_rules! outln {
    () => {
        $crate::out::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that stops quietly when stdout is closed.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!($($arg)*))
    };
}

/// `eprintln!` that stops quietly when stderr is closed.
macro_rules! errln {
    () => {
        $crate::out::write_stderr(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader is gone.
    struct Closed(usize);

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_first_failed_write_closes_the_stream_for_good() {
        let closed = AtomicBool::new(false);
        let mut w = Closed(0);
        write_to(&mut w, &closed, format_args!("one\n"));
        assert!(closed.load(Ordering::Relaxed));
        write_to(&mut w, &closed, format_args!("two\n"));
        assert_eq!(w.0, 1, "no write after the stream closed");
    }
}
