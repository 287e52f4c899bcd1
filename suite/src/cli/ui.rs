//! Terminal output: colors (`--color`), notes (`--quiet`, `--verbose`) and
//! the build progress: a bar on a terminal, and in a log (stderr not a
//! terminal, as in CI) one line per finished step instead.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::ColorWhen;

/// How to talk to the user.
#[derive(Debug, Clone)]
pub struct Ui {
    color: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// `--verbose`.
    pub verbose: bool,
    /// `--targets-dir`: where the profiles are.
    pub targets_dir: PathBuf,
    /// stderr is a terminal: the progress bar shows there.
    stderr_tty: bool,
}

impl Ui {
    /// From the global options.
    pub fn new(color: ColorWhen, quiet: bool, verbose: bool, targets_dir: PathBuf) -> Ui {
        let color = match color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        Ui {
            color,
            quiet,
            verbose,
            targets_dir,
            stderr_tty: std::io::stderr().is_terminal(),
        }
    }

    /// Progress goes to a log, not a terminal (and not `--quiet`): no bar,
    /// but one line per finished build with its time, so a log shows what
    /// a long run did and how long each part took.
    pub fn logs_progress(&self) -> bool {
        !self.quiet && !self.stderr_tty
    }

    /// Whether output to the terminal is coloured.
    pub fn colors(&self) -> bool {
        self.color
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Red (failures).
    pub fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }

    /// Green (passes).
    pub fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }

    /// Yellow (changes, warnings).
    pub fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }

    /// Cyan (headers of listings).
    pub fn cyan(&self, s: &str) -> String {
        self.paint("36", s)
    }

    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    /// Dim (secondary information).
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    /// A note on stderr, unless `--quiet`.
    pub fn note(&self, s: &str) {
        if !self.quiet {
            errln!("{s}");
        }
    }

    /// A progress bar of `len` steps on stderr: hidden with `--quiet` or when
    /// stderr is not a terminal.
    pub fn progress(&self, len: u64, prefix: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        if self.quiet || !self.stderr_tty {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:.bold} {spinner} [{bar:24}] {pos}/{len} {wide_msg}",
            )
            .expect("static progress template")
            .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress {
            bar,
            quiet: self.quiet,
        }
    }
}

/// A progress bar that can print above itself.
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
}

impl Progress {
    /// Prints a line to stderr above the bar (unless `--quiet`).
    pub fn println(&self, s: &str) {
        if !self.quiet {
            self.bar.suspend(|| errln!("{s}"));
        }
    }

    /// Sets the message after the bar.
    pub fn message(&self, s: String) {
        self.bar.set_message(s);
    }

    /// One step done.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
