//! Every rustup call of the suite, and what it knows about a toolchain.
//!
//! A build names a toolchain (`1.95.0`, `nightly`, `nightly-2026-06-14`) and a
//! target triple; this module turns that into something that can run: it asks
//! rustup which toolchains and targets are installed (each query once per
//! process, [`forget_queries`] after an install), installs a missing toolchain
//! or target one rustup process at a time ([`rustup_guard`]: two rustups on one
//! `RUSTUP_HOME` corrupt it), and runs a toolchain's programs ([`tool`]).
//! [`RustcVersion`] is `rustc -vV` read once into its fields, and [`Date`]
//! with [`scheduled_release`] is the release calendar `bisect` places
//! nightlies on. Nothing else in the suite's sources runs rustup.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::codegen::build::{BuildError, BuildEvent, BuildOptions, command_line};
use crate::codegen::profile::Profile;

/// `cmd`'s output; a program that cannot be started is [`BuildError::ToolMissing`].
pub(crate) fn output_of(cmd: &mut Command) -> Result<std::process::Output, BuildError> {
    cmd.output().map_err(|e| BuildError::ToolMissing {
        program: cmd.get_program().to_string_lossy().into_owned(),
        error: e.to_string(),
    })
}

/// What a read-only rustup or rustc query printed, by program and
/// arguments, for the rest of the process: a report asked `rustup target
/// list --installed`, `rustup show active-toolchain` and `rustc -vV` once
/// per profile and again per linked build and per probe driver (some 90
/// processes of 30 to 60 ms each, serialised under the rustup lock, before
/// any cargo ran). Only successful answers are kept, and every install
/// ([`forget_queries`]) drops them all.
static QUERIES: Mutex<Vec<(Vec<OsString>, std::process::Output)>> = Mutex::new(Vec::new());

/// The output of `cmd`, a query whose answer only an install changes, from
/// [`QUERIES`] when this process asked it before.
fn query(cmd: &mut Command) -> Result<std::process::Output, BuildError> {
    let mut key = vec![cmd.get_program().to_os_string()];
    key.extend(cmd.get_args().map(OsStr::to_os_string));
    if let Some(dir) = cmd.get_current_dir() {
        key.push(dir.as_os_str().to_os_string());
    }
    let known = |q: &Vec<(Vec<OsString>, std::process::Output)>| {
        q.iter().find(|(k, _)| *k == key).map(|(_, o)| o.clone())
    };
    if let Some(out) = known(&QUERIES.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(out);
    }
    let out = output_of(cmd)?;
    if out.status.success() {
        QUERIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key, out.clone()));
    }
    Ok(out)
}

/// Drops every remembered query: after installing a toolchain or a target
/// (their lists change), and for tests whose stand-in rustup changes its
/// answers.
pub fn forget_queries() {
    QUERIES.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

fn has_rustup() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        Command::new("rustup")
            .arg("--version")
            .stderr(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `1.95.0-x86_64-unknown-linux-gnu` → `1.95.0`.
fn strip_host(name: &str) -> String {
    const ARCHES: &[&str] = &[
        "-x86_64-",
        "-aarch64-",
        "-i686-",
        "-riscv64gc-",
        "-powerpc64le-",
        "-s390x-",
        "-loongarch64-",
        "-armv7-",
        "-arm-",
    ];
    let cut = ARCHES.iter().filter_map(|a| name.find(a)).min();
    cut.map_or_else(|| name.to_string(), |i| name[..i].to_string())
}

/// Installed rustup toolchains, host suffix stripped.
pub fn installed_toolchains() -> Result<Vec<String>, BuildError> {
    let out = query(Command::new("rustup").args(["toolchain", "list"]))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(strip_host)
        .collect())
}

/// The toolchain a build will use: `opts.toolchain` checked to be installed,
/// or the one rustup selects in the crate's directory.
pub fn resolve_toolchain(opts: &BuildOptions) -> Result<String, BuildError> {
    if !has_rustup() {
        return Ok(opts
            .toolchain
            .clone()
            .unwrap_or_else(|| "default".to_string()));
    }
    match &opts.toolchain {
        Some(tc) => {
            let installed = installed_toolchains()?;
            let full: Vec<String> = {
                let out = query(Command::new("rustup").args(["toolchain", "list"]))?;
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                    .collect()
            };
            if installed.iter().any(|i| i == tc) || full.iter().any(|f| f == tc) {
                Ok(strip_host(tc))
            } else {
                Err(BuildError::ToolchainMissing {
                    toolchain: tc.clone(),
                    installed,
                })
            }
        }
        None => {
            let dir = opts.manifest_path.parent().unwrap_or(Path::new("."));
            let mut cmd = Command::new("rustup");
            cmd.args(["show", "active-toolchain"]).current_dir(dir);
            let out = query(&mut cmd)?;
            if !out.status.success() {
                return Err(BuildError::Command {
                    command: command_line(&cmd),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let name = text.split_whitespace().next().unwrap_or("default");
            Ok(strip_host(name))
        }
    }
}

/// A command that runs `program` of `toolchain` (through `rustup run` when
/// rustup is there).
pub fn tool(toolchain: &str, program: &str) -> Command {
    if has_rustup() && toolchain != "default" {
        let mut c = Command::new("rustup");
        c.args(["run", toolchain, program]);
        c
    } else {
        Command::new(program)
    }
}

/// `rustc -vV` of a toolchain.
pub fn rustc_version(toolchain: &str) -> Result<String, BuildError> {
    let mut cmd = tool(toolchain, "rustc");
    cmd.arg("-vV");
    let out = query(&mut cmd)?;
    if !out.status.success() {
        return Err(BuildError::Command {
            command: command_line(&cmd),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// Serialises every rustup call of this process that lists or installs
/// targets: rustup corrupts a toolchain when two of its processes install into
/// one `RUSTUP_HOME` at once ("could not rename 'downloaded' file", then
/// "detected conflict" on every later `target add`).
static RUSTUP_LOCK: Mutex<()> = Mutex::new(());

/// Holds the in-process lock and an advisory lock on a file shared by every
/// allocasm process using the same rustup home, so that two `allocasm`
/// commands started at once (or a test run next to a report) never run
/// rustup side by side either.
pub struct RustupGuard {
    _file: Option<std::fs::File>,
    _inner: MutexGuard<'static, ()>,
}

/// Takes the rustup lock (see [`RustupGuard`]); hold it across any rustup
/// call that installs or removes a toolchain or target.
pub fn rustup_guard() -> RustupGuard {
    let inner = RUSTUP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&home, &mut hasher);
    let path = std::env::temp_dir().join(format!(
        "allocasm-rustup-{:016x}.lock",
        std::hash::Hasher::finish(&hasher)
    ));
    // Best effort: without a writable temp dir the in-process lock still
    // keeps this process's own builds from racing.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()
        .filter(|f| f.lock().is_ok());
    RustupGuard {
        _file: file,
        _inner: inner,
    }
}

/// Makes sure `triple`'s standard library is installed for `toolchain`,
/// running `rustup target add` when `install` is set. Every rustup call goes
/// through one lock (see [`install_targets`] for installing before parallel
/// builds start).
pub fn ensure_target(
    toolchain: &str,
    triple: &str,
    install: bool,
    progress: &dyn Fn(BuildEvent),
    profile: &str,
) -> Result<(), BuildError> {
    if !has_rustup() || toolchain == "default" {
        return Ok(());
    }
    ensure_target_with(
        OsStr::new("rustup"),
        toolchain,
        triple,
        install,
        progress,
        profile,
    )
}

/// [`ensure_target`] with the rustup program named (a stand-in in tests).
pub fn ensure_target_with(
    rustup: &OsStr,
    toolchain: &str,
    triple: &str,
    install: bool,
    progress: &dyn Fn(BuildEvent),
    profile: &str,
) -> Result<(), BuildError> {
    let _guard = rustup_guard();
    let installed = |rustup: &OsStr| -> Result<Option<bool>, BuildError> {
        let out = query(Command::new(rustup).args([
            "target",
            "list",
            "--installed",
            "--toolchain",
            toolchain,
        ]))?;
        if !out.status.success() {
            // A linked custom toolchain cannot list targets: let cargo say.
            return Ok(None);
        }
        Ok(Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == triple),
        ))
    };
    if installed(rustup)? != Some(false) {
        return Ok(());
    }
    if !offered(rustup, toolchain, triple)? {
        return Err(BuildError::NotAvailable {
            toolchain: toolchain.to_string(),
            triple: triple.to_string(),
        });
    }
    if !install {
        return Err(BuildError::TargetMissing {
            toolchain: toolchain.to_string(),
            triple: triple.to_string(),
        });
    }
    let mut cmd = Command::new(rustup);
    cmd.args(["target", "add", triple, "--toolchain", toolchain]);
    let announce = |command| {
        progress(BuildEvent::InstallingTarget {
            profile: profile.to_string(),
            command,
        })
    };
    let Some(stderr) = change(&mut cmd, &announce)? else {
        return Ok(());
    };
    // rustup rolls back a failed install itself; if the target is listed
    // after all, it is usable.
    if installed(rustup)? == Some(true) {
        return Ok(());
    }
    if unavailable_for_download(&stderr) {
        return Err(BuildError::NotAvailable {
            toolchain: toolchain.to_string(),
            triple: triple.to_string(),
        });
    }
    Err(BuildError::InstallFailed {
        command: command_line(&cmd),
        first_error: first_error_line(&stderr),
        fix: install_fix(&stderr, toolchain, triple),
    })
}

/// Whether rustup's channel manifest for `toolchain` offers `triple`'s
/// standard library at all: `rustup target list` lists only the targets a
/// channel has (a target whose rust-std is unavailable for download is left
/// out). When the list cannot be read, the target counts as offered and the
/// install says what is wrong.
fn offered(rustup: &OsStr, toolchain: &str, triple: &str) -> Result<bool, BuildError> {
    let out = query(Command::new(rustup).args(["target", "list", "--toolchain", toolchain]))?;
    if !out.status.success() {
        return Ok(true);
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .any(|t| t == triple))
}

/// rustup's words for a component the channel does not have
/// (`component 'rust-std' for target '…' is unavailable for download for
/// channel '1.99.1'`).
fn unavailable_for_download(stderr: &str) -> bool {
    stderr.contains("is unavailable for download")
        || stderr.contains("does not support target")
        || stderr.contains("toolchain does not contain component")
}

/// The first line of rustup's stderr that says what went wrong.
fn first_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("error"))
        .or_else(|| lines.first())
        .map_or_else(|| "(rustup printed nothing)".to_string(), |l| l.to_string())
}

/// What to run after a failed `rustup target add`.
fn install_fix(stderr: &str, toolchain: &str, triple: &str) -> String {
    if stderr.contains("detected conflict") || stderr.contains("could not rename") {
        // What rustup says when an earlier install was interrupted or raced:
        // its records and the files on disk disagree. Reinstalling the
        // toolchain is the repair rustup's own docs give.
        format!(
            "the toolchain's install records are inconsistent (an interrupted or concurrent \
             install); repair it with `rustup toolchain uninstall {toolchain} && rustup toolchain \
             install {toolchain} --profile minimal`, then run the command again"
        )
    } else if stderr.contains("does not support target") || stderr.contains("not available") {
        format!(
            "toolchain `{toolchain}` has no `{triple}` standard library; use another toolchain \
             or leave this profile out (`-p`)"
        )
    } else {
        format!(
            "check the network and run `rustup target add {triple} --toolchain {toolchain}` by \
             hand (or `scripts/setup`), then run the command again"
        )
    }
}

/// Installs every missing target of `profiles` for the options' toolchain,
/// once per triple, one rustup process at a time, before any parallel build
/// starts (two profiles on one triple never install twice, and rustup never
/// runs twice at once). A no-op unless the options say to install.
pub fn install_targets(
    profiles: &[Profile],
    opts: &BuildOptions,
    progress: &dyn Fn(BuildEvent),
) -> Result<(), BuildError> {
    if !opts.install_missing_target || !has_rustup() {
        return Ok(());
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in profiles {
        let own = opts.for_profile(p);
        let toolchain = match resolve_toolchain(&own) {
            Ok(tc) => tc,
            // A profile's own toolchain (targets/*.toml) is part of the
            // project's set-up, like its targets: installed when asked to.
            Err(BuildError::ToolchainMissing { toolchain, .. })
                if opts.toolchain.is_none()
                    && p.toolchain.as_deref() == Some(toolchain.as_str()) =>
            {
                install_toolchain(&toolchain, &|command| {
                    progress(BuildEvent::InstallingTarget {
                        profile: p.name.clone(),
                        command,
                    })
                })?;
                toolchain
            }
            Err(e) => return Err(e),
        };
        if toolchain != "default" && seen.insert((toolchain.clone(), p.triple.clone())) {
            let rustup = OsStr::new("rustup");
            install_targets_with(rustup, &toolchain, std::slice::from_ref(p), progress)?;
        }
    }
    Ok(())
}

/// `rustup toolchain install <toolchain> --profile minimal`, under the
/// rustup lock; `announce` is told the command line before it runs. The
/// error carries rustup's first error line and the command to run by hand.
pub fn install_toolchain(toolchain: &str, announce: &dyn Fn(String)) -> Result<(), BuildError> {
    let mut cmd = Command::new("rustup");
    cmd.args(["toolchain", "install", toolchain, "--profile", "minimal"]);
    install_with(&mut cmd, &install_line(toolchain), announce)
}

/// Runs one installing rustup `cmd` under the rustup lock; a failure
/// carries rustup's first error line and `by_hand`, the line to run.
fn install_with(
    cmd: &mut Command,
    by_hand: &str,
    announce: &dyn Fn(String),
) -> Result<(), BuildError> {
    let _guard = rustup_guard();
    let Some(stderr) = change(cmd, announce)? else {
        return Ok(());
    };
    Err(BuildError::InstallFailed {
        command: command_line(cmd),
        first_error: first_error_line(&stderr),
        fix: format!("run `{by_hand}` by hand (or scripts/setup), then run the command again"),
    })
}

/// `rustup component add <component> --toolchain <tc>` (the report's
/// `llvm-tools`, for the toolchain's own llvm-objdump), under the rustup
/// lock.
pub fn add_component(
    toolchain: &str,
    component: &str,
    announce: &dyn Fn(String),
) -> Result<(), BuildError> {
    if !has_rustup() {
        return Ok(());
    }
    add_component_with("rustup".as_ref(), toolchain, component, announce)
}

/// [`add_component`] with this `rustup` program (tests use a stand-in).
pub fn add_component_with(
    rustup: &std::ffi::OsStr,
    toolchain: &str,
    component: &str,
    announce: &dyn Fn(String),
) -> Result<(), BuildError> {
    let mut cmd = Command::new(rustup);
    cmd.args(["component", "add", component, "--toolchain", toolchain]);
    let by_hand = format!("rustup component add {component} --toolchain {toolchain}");
    install_with(&mut cmd, &by_hand, announce)
}

/// `rustup toolchain uninstall <tc>`, under the rustup lock; the error is
/// rustup's stderr.
pub fn uninstall_toolchain(toolchain: &str, announce: &dyn Fn(String)) -> Result<(), String> {
    let _guard = rustup_guard();
    let mut cmd = Command::new("rustup");
    cmd.args(["toolchain", "uninstall", toolchain]);
    match change(&mut cmd, announce) {
        Ok(None) => Ok(()),
        Ok(Some(stderr)) => Err(stderr.trim().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs a rustup command that changes what is installed: announced first,
/// every remembered query dropped after (the lists changed, or may have on
/// a failure). `None` when it worked, else rustup's stderr.
fn change(cmd: &mut Command, announce: &dyn Fn(String)) -> Result<Option<String>, BuildError> {
    announce(command_line(cmd));
    let out = output_of(cmd);
    forget_queries();
    let out = out?;
    Ok((!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// The line that installs `toolchain`.
pub fn install_line(toolchain: &str) -> String {
    format!("rustup toolchain install {toolchain} --profile minimal")
}

/// Whether `toolchain` is installed (by its short or its full name).
pub fn is_installed(toolchain: &str) -> Result<bool, BuildError> {
    let opts = BuildOptions {
        toolchain: Some(toolchain.to_string()),
        ..BuildOptions::default()
    };
    match resolve_toolchain(&opts) {
        Ok(_) => Ok(true),
        Err(BuildError::ToolchainMissing { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Installs every missing target of `profiles` for `toolchain`, as
/// [`install_targets`] does, with the rustup program named (a stand-in in
/// tests). A target the toolchain does not offer is left to the profile's
/// own build to report.
pub fn install_targets_with(
    rustup: &OsStr,
    toolchain: &str,
    profiles: &[Profile],
    progress: &dyn Fn(BuildEvent),
) -> Result<(), BuildError> {
    let mut seen = std::collections::BTreeSet::new();
    for p in profiles {
        if seen.insert(p.triple.as_str()) {
            match ensure_target_with(rustup, toolchain, &p.triple, true, progress, &p.name) {
                // That profile's own build says so; the others go on.
                Err(BuildError::NotAvailable { .. }) => {}
                other => other?,
            }
        }
    }
    Ok(())
}

/// The fields of one toolchain's `rustc -vV` text (the one place that knows
/// its layout): the release line, the LLVM version, the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RustcVersion<'a> {
    /// The whole `rustc -vV` text.
    pub text: &'a str,
}

impl<'a> RustcVersion<'a> {
    /// Reads `rustc -vV`'s text.
    pub fn parse(text: &'a str) -> RustcVersion<'a> {
        RustcVersion { text }
    }

    /// The first line (`rustc 1.95.0 (59807616e 2026-04-14)`).
    pub fn release(self) -> &'a str {
        self.text.lines().next().unwrap_or("")
    }

    /// `LLVM version:`, or `unknown`.
    pub fn llvm(self) -> &'a str {
        self.field("LLVM version").unwrap_or("unknown")
    }

    /// A `name: value` field (`commit-hash`, `commit-date`, `host`).
    pub fn field(self, name: &str) -> Option<&'a str> {
        self.text.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix(": "))
                .map(str::trim)
        })
    }

    /// `commit-date` as a [`Date`].
    pub fn commit_date(self) -> Option<Date> {
        self.field("commit-date").and_then(Date::parse)
    }
}

/// A day, as days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(pub i64);

impl Date {
    /// From year, month (1-12), day.
    pub fn ymd(y: i64, m: i64, d: i64) -> Date {
        // Howard Hinnant's days_from_civil.
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Date(era * 146_097 + doe - 719_468)
    }

    /// `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.trim().splitn(3, '-');
        let y = it.next()?.parse().ok()?;
        let m: i64 = it.next()?.parse().ok()?;
        let d: i64 = it.next()?.parse().ok()?;
        ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| Date::ymd(y, m, d))
    }

    /// `days` later (earlier when negative).
    // A day count, not a `Date + Date`: `std::ops::Add` would read wrong.
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, days: i64) -> Date {
        Date(self.0 + days)
    }

    fn civil(self) -> (i64, i64, i64) {
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    /// `nightly-YYYY-MM-DD`.
    pub fn nightly(self) -> String {
        format!("nightly-{self}")
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = self.civil();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// `nightly-YYYY-MM-DD` → its date.
pub fn nightly_date(toolchain: &str) -> Option<Date> {
    toolchain.strip_prefix("nightly-").and_then(Date::parse)
}

/// `1.95.0` → `(1, 95, 0)`.
pub fn release(toolchain: &str) -> Option<(u32, u32, u32)> {
    let mut it = toolchain.split('.');
    let v = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    it.next().is_none().then_some(v)
}

/// The scheduled release date of `1.minor.0`: every six weeks since 1.1.0
/// (2015-06-25).
pub fn scheduled_release(minor: u32) -> Date {
    Date::ymd(2015, 6, 25).add((i64::from(minor) - 1) * 42)
}
