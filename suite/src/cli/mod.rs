//! The command line: clap derive definitions, dispatch, errors and exit codes.
//!
//! Every command goes through the codegen suite's one extractor and one
//! normalizer ([`allocasm_suite::codegen`]); this module only selects profiles and
//! probes, drives the builds (with a progress bar) and prints.

mod bisect;
mod cargo_show_asm;
mod check;
mod diff;
mod doctor;
mod history;
mod list;
mod measure;
mod reference;
mod report_cmd;
mod session;
mod show;
mod snapshot;
mod ui;
mod verify;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use allocasm_suite::codegen;
use allocasm_suite::codegen::project::{self, Project};
use allocasm_suite::render::{self, Doc, OutputFormat};
use clap::{Args, Parser, Subcommand, ValueEnum};

pub use ui::Ui;

/// Exit codes, as documented in `allocasm --help` and docs/cli.md.
pub mod exit {
    /// Everything ran and every expectation held.
    pub const OK: u8 = 0;
    /// An expectation failed (`check`), a regression or, with
    /// `--fail-on-change`, a change (`diff`), or the two backends disagree
    /// (`verify-extractor`).
    pub const FAILED: u8 = 1;
    /// Usage or configuration error: bad arguments, unknown probe or profile,
    /// malformed profile TOML.
    pub const USAGE: u8 = 2;
    /// Build or environment error: missing toolchain, target or tool, a
    /// failing build, an unwritable output directory.
    pub const ENVIRONMENT: u8 = 3;
}

const EXIT_CODES: &str = "\
Exit codes:
  0  success: everything ran and every expectation held
  1  check failed: an expectation failed (check), an expectation that held under --from fails
     under --to or, with --fail-on-change, any listing changed (diff), the backends disagree
     (verify-extractor), good and bad do not differ (bisect)
  2  usage or configuration error: bad arguments, unknown probe or profile, malformed
     targets/*.toml
  3  build or environment error: toolchain, rustup target or tool missing, a build failed, an
     output directory cannot be written; every build failed (history); a nightly to install
     without --install, or good or bad did not build (bisect)

A profile whose target a toolchain has no rust-std for (rustup offers none) is not available:
each command says so for that profile and goes on with the others; it is not a failure and
changes no exit code.";

/// The `--help` heading of the options every command takes, apart from the
/// command's own.
const GLOBAL: &str = "Global options";

/// allocasm: what each allocator fast path compiles to, on every target profile.
///
/// Builds every probe of the crate for every profile in targets/ (one `cargo rustc --emit asm`
/// per profile, in parallel, reused when warm), extracts and normalizes each probe's listing, and
/// checks it against the profile's expectations.
#[derive(Debug, Parser)]
#[command(
    name = "allocasm",
    version,
    term_width = 100,
    after_long_help = EXIT_CODES,
    propagate_version = true
)]
pub struct Cli {
    /// When to color the output
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true, help_heading = GLOBAL)]
    pub color: ColorWhen,
    /// Print only results and errors (no progress bar, no notes)
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Also print the cargo commands run and cargo's own output
    #[arg(short, long, global = true, help_heading = GLOBAL, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Directory of the profiles, one TOML per profile [default: the project's targets/]
    #[arg(long, value_name = "DIR", global = true, help_heading = GLOBAL)]
    pub targets_dir: Option<PathBuf>,
    /// The Cargo.toml of the workspace or package to work on [default: the workspace of the
    /// current directory]; its allocasm.toml says which package's probes to build
    #[arg(long, value_name = "PATH", global = true, help_heading = GLOBAL)]
    pub manifest_path: Option<PathBuf>,
    /// The command
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// Color when stdout is a terminal and NO_COLOR is unset
    Auto,
    /// Always color
    Always,
    /// Never color
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every probe (its allocator, operation, kind and what it should compile to) and profile
    ///
    /// With --functions, build the profiles and list every function their `.s` files hold
    /// (optionally those whose demangled path contains PATTERN), with sizes.
    List(list::ListArgs),
    /// Print one probe's listing on one or more profiles
    Show(show::ShowArgs),
    /// Compare every probe's listing with the project's snapshots (insta's .snap files)
    ///
    /// Per profile and probe, snapshots/<profile>/<probe>.snap under the project's root. A new
    /// or changed listing is written as <probe>.snap.new beside it (for `cargo insta review`)
    /// with a diff, and the command exits 1; --accept writes the .snap instead.
    Snapshot(snapshot::SnapshotArgs),
    /// Build every profile and check every expectation
    ///
    /// Prints one line per failure naming the probe, the profile and the pattern, followed by
    /// the listing. A probe missing from a profile's assembly is a failure.
    Check(check::CheckArgs),
    /// Write the asm report (Markdown, JSON, HTML) for every probe on every profile
    ///
    /// The header records `rustc -vV` (compiler and LLVM version), each profile's flags and
    /// codegen units, and the git commit. Per probe and profile: the listing, instruction count,
    /// atomic read-modify-writes, calls, how thread-local storage is reached, every
    /// expectation's result, and notes on the key instructions. A cross-profile summary comes
    /// first: probes down, profiles across, each cell the instruction count marked A (atomics), C
    /// (calls), L (loops). For profiles with a [linked] table, each listing is shown next to the
    /// probe disassembled from a linked executable (release profile, and fat LTO); --no-linked
    /// leaves that out. On the Linux profiles (x86_64-linux-dylib's probes in a cdylib) it also
    /// measures what the CPU executes:
    /// each probe's instructions per call under qemu-user (`-singlestep -d exec,nochain`, helpers
    /// counted apart) and llvm-mca's cycles per call for its hot path per CPU model, beside the
    /// hot path's count; a missing qemu-user or llvm-mca is a reason in the report, not an
    /// error. --no-executed leaves that out. `report` installs missing rustup targets itself
    /// (printing the command) unless --no-install is given.
    Report(report_cmd::ReportArgs),
    /// Build every profile with two toolchains and show what changed
    ///
    /// Per probe and profile: unchanged or changed, the instruction-count delta, a unified diff
    /// of the normalized listings (symbol mangling and label numbers never show up as changes),
    /// and each expectation's result under both compilers.
    Diff(diff::DiffArgs),
    /// Build every profile with a list of toolchains and tabulate each probe's hot path
    ///
    /// One table per profile: probes down, toolchains across (each named with its `rustc -vV`
    /// release line and LLVM version), each cell the hot path's instruction count, marked where
    /// it differs from the cell to its left; `—` a probe the build lacks; `n/a` a profile the
    /// toolchain cannot build, with the reason under the table. Exit 0 when the tables were
    /// printed, 3 when no profile built with any toolchain or a toolchain is not installed (the
    /// line to install it is printed; --install runs it).
    History(history::HistoryArgs),
    /// Find the first nightly whose hot path of one probe differs from a good toolchain's
    ///
    /// Between two releases far apart, first finds the consecutive pair where the probe's
    /// normalized hot path (--whole: the whole normalized listing) changes by building the
    /// releases between; then binary-searches the dated nightlies of that window (from the good
    /// release's commit-date less 7 weeks to the bad one's branch to beta, each end checked and
    /// widened if needed), skipping dates rustup has no toolchain for. Prints the last unchanged
    /// and the first changed nightly with their commit hashes and the unified diff. Exit 0 when
    /// a first changed nightly was found, 1 when good and bad do not differ, 3 on an
    /// environment error (a toolchain to install without --install, a failed build of good or
    /// bad).
    Bisect(bisect::BisectArgs),
    /// Check that `cargo asm` (cargo-show-asm) and the built-in extractor agree
    ///
    /// For every probe on every profile, extracts the function through `cargo asm` and through
    /// the built-in extractor, normalizes both with the one normalizer and compares the
    /// instruction sequences.
    VerifyExtractor(verify::VerifyArgs),
    /// List every outside tool: found or missing, path, version, what it enables, install line
    ///
    /// The disassembler, llvm-mca, qemu-user per architecture, the cross linkers, valgrind, a
    /// browser and the program bench's allocators and programs, each with the command that
    /// installs it on this OS. Exit 0 when every view this host can produce (linked views,
    /// executed counts, llvm-mca predictions) has its tools, 1 when some will be missing.
    Doctor,
    /// Print the command reference of docs/cli.md (generated from --help)
    #[command(hide = true)]
    HelpMarkdown(reference::ReferenceArgs),
}

/// Which profiles to build and where: flattened into every command that
/// builds profiles ([`BuildArgs`], `diff`, `history`).
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Profile to build (a targets/*.toml name); repeat or separate with commas. Default: all
    #[arg(short, long = "profile", value_name = "P", value_delimiter = ',')]
    pub profiles: Vec<String>,
    /// Install what a build lacks, one rustup call at a time: each profile's rustup target
    /// (`rustup target add`) and, for diff and history, a toolchain they name
    /// (`rustup toolchain install <tc> --profile minimal`)
    #[arg(long)]
    pub install: bool,
    /// Root of the per-toolchain, per-profile target dirs [default: target/allocasm-asm/]
    #[arg(long, value_name = "DIR")]
    pub target_root: Option<PathBuf>,
}

impl TargetArgs {
    /// The selected profiles (all by default), loaded and checked once.
    pub fn profiles(&self, ui: &Ui) -> Result<Vec<codegen::Profile>, CliError> {
        session::select_profiles(session::load_profiles(ui)?, &self.profiles)
    }

    /// Build options for `toolchain` (`None`: the one rustup selects).
    pub fn options(&self, toolchain: Option<String>) -> codegen::build::BuildOptions {
        session::build_options(toolchain, self.target_root.as_ref(), self.install)
    }
}

/// How a view is written: flattened into `diff`, `history` and `bisect`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format (json: the command's schema, see docs/)
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Write the output to this FILE instead of stdout (text without colour)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl OutputArgs {
    /// Writes `doc` rendered in the asked format (`json` for JSON) to
    /// `--out` (saying so unless quiet) or to stdout, coloured on a terminal.
    pub fn write(
        &self,
        ui: &Ui,
        doc: impl FnOnce() -> Doc,
        json: impl FnOnce() -> String,
    ) -> Result<(), CliError> {
        let text = match self.format {
            OutputFormat::Json => json(),
            format => render::render(&doc(), format, ui.colors() && self.out.is_none()),
        };
        match &self.out {
            Some(path) => {
                std::fs::write(path, text).map_err(|e| {
                    CliError::environment(format!("cannot write {}: {e}", path.display()))
                })?;
                ui.note(&format!("wrote {}", path.display()));
            }
            None => out!("{text}"),
        }
        Ok(())
    }
}

impl BuildArgs {
    /// Build options for `--toolchain`.
    pub fn options(&self) -> codegen::build::BuildOptions {
        self.target.options(self.toolchain.clone())
    }

    /// The selected profiles built with `--toolchain` and `--backend`.
    pub fn build(&self, ui: &Ui) -> Result<session::Builds, CliError> {
        let profiles = self.target.profiles(ui)?;
        session::build_one(ui, &profiles, self.options(), self.backend, false)
    }
}

/// Options shared by the commands that build profiles with one toolchain.
#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// rustup toolchain to build with (default: the one rust-toolchain.toml pins)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub toolchain: Option<String>,
    /// How listings are extracted from the compiler's output
    #[arg(long, value_enum, default_value_t = Backend::Builtin)]
    pub backend: Backend,
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// One `cargo rustc --emit asm` per profile, every probe extracted in one pass
    Builtin,
    /// One `cargo asm` (cargo-show-asm) per probe per profile
    CargoShowAsm,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Builtin => "builtin",
            Backend::CargoShowAsm => "cargo-show-asm",
        }
    }
}

/// How a command ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit 0.
    Ok,
    /// Exit 1: a check failed.
    Failed,
}

impl Status {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => exit::OK,
            Status::Failed => exit::FAILED,
        }
    }
}

/// A command that could not do its work; the message says how to fix it.
#[derive(Debug)]
pub struct CliError {
    code: u8,
    message: String,
    /// Already printed (clap's own help and errors).
    printed: bool,
}

impl CliError {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::unprinted(exit::USAGE, message.into())
    }

    /// A build or environment error (exit 3).
    pub fn environment(message: impl Into<String>) -> CliError {
        CliError::unprinted(exit::ENVIRONMENT, message.into())
    }

    fn unprinted(code: u8, message: String) -> CliError {
        CliError {
            code,
            message,
            printed: false,
        }
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// Prints the error to stderr (unless clap already did).
    pub fn print(&self) {
        if !self.printed {
            errln!("allocasm: error: {}", self.message);
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Parses `args` and runs the command.
pub fn run<I, T>(args: I) -> Result<Status, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Err(CliError {
                    code: exit::USAGE,
                    message: String::new(),
                    printed: true,
                })
            } else {
                Ok(Status::Ok)
            };
        }
    };
    if let Command::HelpMarkdown(args) = &cli.command {
        return reference::run(args);
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::environment(format!("cannot read the current directory: {e}")))?;
    let project = Project::discover(cli.manifest_path.as_deref(), &cwd)
        .map_err(|e| CliError::usage(format!("{e:#}")))?;
    project::set_current(project).map_err(|e| CliError::environment(format!("{e:#}")))?;
    let ui = Ui::new(
        cli.color,
        cli.quiet,
        cli.verbose,
        cli.targets_dir
            .unwrap_or_else(allocasm_suite::codegen::targets_dir),
    );
    match cli.command {
        Command::List(args) => list::run(&ui, &args),
        Command::Doctor => doctor::run(&ui),
        Command::Show(args) => show::run(&ui, &args),
        Command::Check(args) => check::run(&ui, &args),
        Command::Snapshot(args) => snapshot::run(&ui, &args),
        Command::Report(args) => report_cmd::run(&ui, &args),
        Command::Diff(args) => diff::run(&ui, &args),
        Command::History(args) => history::run(&ui, &args),
        Command::Bisect(args) => bisect::run(&ui, &args),
        Command::VerifyExtractor(args) => verify::run(&ui, &args),
        Command::HelpMarkdown(_) => unreachable!("handled before the project is found"),
    }
}

/// Fails unless `docs/<file>` is `T`'s JSON Schema as schemars generates
/// it; `ALLOCASM_UPDATE_SCHEMA=1` rewrites the file first.
#[cfg(test)]
pub(crate) fn check_schema<T: schemars::JsonSchema>(file: &str) {
    let path = codegen::manifest_dir().join("docs").join(file);
    let generated = serde_json::to_string_pretty(&schemars::schema_for!(T))
        .expect("a schema serializes")
        + "\n";
    if std::env::var_os("ALLOCASM_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).expect("write the schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/{file} is not {}'s schema: run \
         `ALLOCASM_UPDATE_SCHEMA=1 cargo test -p allocasm-suite --bin allocasm schema`",
        std::any::type_name::<T>()
    );
}
