//! One asm build per profile and toolchain.
//!
//! ```text
//! rustup run <toolchain> cargo rustc --release --lib --features probes \
//!     --target <triple> --target-dir <root>/<toolchain>/<profile> \
//!     --manifest-path <Cargo.toml> --message-format=json-render-diagnostics \
//!     -- --emit asm <profile rustflags> [-C llvm-args=-x86-asm-syntax=intel]
//! ```
//!
//! Only the allocator library and its probes are compiled (the suite is a
//! crate of its own) and the extra arguments reach the final crate only,
//! so the `.s` files are this crate's alone. With several codegen units
//! rustc writes one `.s` per unit (`allocasm-<hash>.allocasm.<cgu>.rcgu.s`);
//! all of them are read. Every (toolchain, profile) pair has its own target
//! dir, so builds run in parallel ([`build_profiles`]) and a warm rebuild is
//! cargo's no-op that reuses the previous `.s` ([`AsmOutput::fresh`]).
//!
//! The child's environment is cleaned of what would change the build behind
//! the profile's back (`RUSTFLAGS`, `CARGO_TARGET_DIR`, a clippy or miri
//! wrapper, an outer jobserver).

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use super::artifacts::{Artifacts, LibraryOutputs};
use super::profile::Profile;
// The rustup side of a build lives in `crate::toolchain`; these names stay
// reachable here for the build's other callers.
use crate::toolchain::RustcVersion;
pub use crate::toolchain::{
    RustupGuard, ensure_target, ensure_target_with, forget_queries, install_targets,
    install_targets_with, installed_toolchains, resolve_toolchain, rustc_version, rustup_guard,
    tool,
};

/// Where and with what to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// A rustup toolchain (`1.95.0`, `nightly`, `beta`); `None` uses the one
    /// rustup selects for the crate (`RUSTUP_TOOLCHAIN`, then
    /// `rust-toolchain.toml`).
    pub toolchain: Option<String>,
    /// Root of the target dirs: each build uses `<root>/<toolchain>/<profile>`.
    pub target_root: PathBuf,
    /// The crate's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// Run `rustup target add` when the profile's target is not installed
    /// (otherwise that is a [`BuildError::TargetMissing`]).
    pub install_missing_target: bool,
}

impl BuildOptions {
    /// The options `profile` builds with: a toolchain named here (the
    /// command's `--toolchain`, `--from`, `--to`) wins; without one, the
    /// profile's own `toolchain` (a target whose std the pinned compiler
    /// lacks keeps the compiler that has it), else the one rustup selects.
    pub fn for_profile(&self, profile: &Profile) -> BuildOptions {
        match (&self.toolchain, &profile.toolchain) {
            (None, Some(own)) => BuildOptions {
                toolchain: Some(own.clone()),
                ..self.clone()
            },
            _ => self.clone(),
        }
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            toolchain: None,
            target_root: super::default_target_root(),
            manifest_path: super::project::current().manifest_path.clone(),
            install_missing_target: false,
        }
    }
}

/// Progress of a build, for progress bars and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildEvent {
    /// Running `rustup target add` for a missing target.
    InstallingTarget {
        /// Profile name.
        profile: String,
        /// The command being run.
        command: String,
    },
    /// cargo was started.
    Started {
        /// Profile name.
        profile: String,
        /// The full command line.
        command: String,
    },
    /// A line cargo wrote to stderr (`Compiling allocasm ...`, diagnostics).
    Cargo {
        /// Profile name.
        profile: String,
        /// The line, without newline.
        line: String,
    },
    /// The build ended and its `.s` files were read.
    Finished {
        /// Profile name.
        profile: String,
        /// Whether cargo found everything up to date (nothing recompiled).
        fresh: bool,
        /// Wall time of the build.
        elapsed: Duration,
    },
}

/// Why a build produced no assembly; each message says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// rustup (or cargo) is not on `PATH`.
    ToolMissing {
        /// The program.
        program: String,
        /// The OS error.
        error: String,
    },
    /// The toolchain is not installed.
    ToolchainMissing {
        /// The toolchain asked for.
        toolchain: String,
        /// Installed toolchains.
        installed: Vec<String>,
    },
    /// The target's standard library is not installed for the toolchain.
    TargetMissing {
        /// The toolchain.
        toolchain: String,
        /// The triple.
        triple: String,
    },
    /// rustup has no standard library of the target for this toolchain (the
    /// channel's manifest lacks it, or lists it as unavailable for
    /// download): the profile cannot be built with it. Not a failure of the
    /// code: commands say so per profile and go on with the others.
    NotAvailable {
        /// The toolchain.
        toolchain: String,
        /// The triple.
        triple: String,
    },
    /// A command other than the build failed (`rustup target add`, `rustc -vV`).
    Command {
        /// The command line.
        command: String,
        /// Its stderr.
        stderr: String,
    },
    /// `rustup target add` failed and the target is not installed.
    InstallFailed {
        /// The command line.
        command: String,
        /// The first error line rustup printed.
        first_error: String,
        /// What to run to repair it.
        fix: String,
    },
    /// cargo failed; `stderr` is cargo's own message.
    Cargo {
        /// Profile name.
        profile: String,
        /// The command line.
        command: String,
        /// cargo's stderr (rendered diagnostics).
        stderr: String,
    },
    /// cargo succeeded but no `.s` file of the crate was found.
    NoAsm {
        /// Profile name.
        profile: String,
        /// Where they were looked for.
        dir: PathBuf,
    },
    /// Reading a file failed.
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ToolMissing { program, error } => {
                write!(
                    f,
                    "cannot run `{program}` ({error}); install rustup from https://rustup.rs"
                )
            }
            BuildError::ToolchainMissing {
                toolchain,
                installed,
            } => write!(
                f,
                "toolchain `{toolchain}` is not installed (installed: {}); install it with \
                 `rustup toolchain install {toolchain} --profile minimal`",
                installed.join(", ")
            ),
            BuildError::TargetMissing { toolchain, triple } => write!(
                f,
                "target `{triple}` is not installed for toolchain `{toolchain}`; run \
                 `rustup target add {triple} --toolchain {toolchain}` (or pass the install option)"
            ),
            BuildError::NotAvailable { toolchain, triple } => write!(
                f,
                "not available for {toolchain}: rustup has no rust-std for {triple}"
            ),
            BuildError::Command { command, stderr } => write!(f, "`{command}` failed:\n{stderr}"),
            BuildError::InstallFailed {
                command,
                first_error,
                fix,
            } => write!(f, "`{command}` failed: {first_error}\nfix: {fix}"),
            BuildError::Cargo {
                profile,
                command,
                stderr,
            } => {
                write!(
                    f,
                    "the asm build of profile {profile} failed: `{command}`\n{stderr}"
                )
            }
            BuildError::NoAsm { profile, dir } => write!(
                f,
                "the asm build of profile {profile} left no .s file of the crate in {}; \
                 delete that directory's parent and build again",
                dir.display()
            ),
            BuildError::Io { path, error } => write!(f, "cannot read {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for BuildError {}

impl BuildError {
    /// The toolchain cannot build the profile at all (no rust-std for its
    /// target): a fact about the toolchain, not a failed build.
    pub fn is_not_available(&self) -> bool {
        matches!(self, BuildError::NotAvailable { .. })
    }

    /// [`BuildError::NoAsm`]: `profile`'s build left nothing to read in `dir`.
    pub(crate) fn no_asm(profile: &Profile, dir: &Path) -> BuildError {
        BuildError::NoAsm {
            profile: profile.name.clone(),
            dir: dir.to_path_buf(),
        }
    }
}

/// One `.s` file of the crate.
#[derive(Debug, Clone)]
pub struct AsmFile {
    /// Its path.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// The assembly of one profile built with one toolchain.
#[derive(Debug, Clone)]
pub struct AsmOutput {
    /// Profile name.
    pub profile: String,
    /// Target triple.
    pub triple: String,
    /// The toolchain, as resolved (`1.95.0`, `nightly`); `default` without
    /// rustup.
    pub toolchain: String,
    /// `rustc -vV` of that toolchain.
    pub rustc_version: String,
    /// The flags after `--emit asm`.
    pub flags: Vec<String>,
    /// The cargo command line.
    pub command: String,
    /// The target dir of this build.
    pub target_dir: PathBuf,
    /// Every `.s` of the crate, sorted by path.
    pub files: Vec<AsmFile>,
    /// Whether cargo reused the previous build.
    pub fresh: bool,
}

impl AsmOutput {
    /// The first line of `rustc -vV` (`rustc 1.95.0 (59807616e 2026-04-14)`).
    pub fn rustc_release(&self) -> &str {
        RustcVersion::parse(&self.rustc_version).release()
    }

    /// The `LLVM version:` of `rustc -vV`.
    pub fn llvm_version(&self) -> &str {
        RustcVersion::parse(&self.rustc_version).llvm()
    }

    /// The codegen-units setting, as said in listing headers: the count that
    /// was passed to rustc (the release profile's unless the profile sets
    /// one), and how many `.s` files that build wrote and the suite read.
    pub fn codegen_units(&self) -> String {
        let joined = self.flags.join(" ");
        let setting = joined
            .split("codegen-units=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or("?");
        let how = if setting == "1" {
            "local ThinLTO off"
        } else {
            "local ThinLTO on, as the release build"
        };
        format!(
            "codegen-units={setting} ({how}), {} .s file(s) read",
            self.files.len()
        )
    }

    /// A header for listings and reports: profile, triple, compiler, flags,
    /// codegen units.
    pub fn header(&self) -> String {
        format!(
            "profile {} ({}) · {} · LLVM {} · flags: {} · {}",
            self.profile,
            self.triple,
            self.rustc_release(),
            self.llvm_version(),
            flags_or_none(&self.flags),
            self.codegen_units()
        )
    }
}

/// Flags as a header shows them: `(none)` for none.
pub fn flags_or_none(flags: &[String]) -> String {
    if flags.is_empty() {
        "(none)".to_string()
    } else {
        flags.join(" ")
    }
}

pub(crate) fn command_line(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The target dir of one (toolchain, profile) build.
pub fn target_dir(opts: &BuildOptions, toolchain: &str, profile: &Profile) -> PathBuf {
    opts.target_root.join(toolchain).join(&profile.name)
}

/// Environment variables that would change the build behind the profile's
/// back, removed from the child's environment.
pub const SCRUBBED_ENV: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTC",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "CARGO",
    "MIRI_SYSROOT",
];

/// What every build of a profile does first, whatever it builds (the `.s`
/// view here, the linked view, the cargo-show-asm backend): resolve the
/// toolchain, make sure the profile's rustup target is there (installing it
/// when the options say so), and read `rustc -vV`. Returns the toolchain's
/// name and its version text.
pub fn prepare(
    profile: &Profile,
    opts: &BuildOptions,
    progress: &dyn Fn(BuildEvent),
) -> Result<(String, String), BuildError> {
    let toolchain = resolve_toolchain(&opts.for_profile(profile))?;
    ensure_target(
        &toolchain,
        &profile.triple,
        opts.install_missing_target,
        progress,
        &profile.name,
    )?;
    let rustc_version = rustc_version(&toolchain)?;
    Ok((toolchain, rustc_version))
}

/// The codegen units cargo's release profile builds the library with: the
/// manifest's `[profile.release] codegen-units`, else cargo's default, 16.
pub fn release_codegen_units(manifest_path: &Path) -> u32 {
    std::fs::read_to_string(manifest_path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| {
            t.get("profile")?
                .get("release")?
                .get("codegen-units")?
                .as_integer()
        })
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(16)
}

/// The flags after `--emit asm`: the profile's, and `-C codegen-units=N` with
/// the release profile's N unless the profile sets its own. Without an
/// explicit count, rustc builds ONE codegen unit with local ThinLTO off
/// whenever asm output is asked for, which is not what the release build
/// ships; with it, rustc partitions as the release build does (local ThinLTO
/// included) and writes one `.s` per unit, all of which are read.
pub fn asm_flags(profile: &Profile, manifest_path: &Path) -> Vec<String> {
    let mut flags = profile.build_flags();
    if profile.codegen_units().is_none() {
        flags.push("-C".into());
        flags.push(format!(
            "codegen-units={}",
            release_codegen_units(manifest_path)
        ));
    }
    flags
}

/// Builds one profile's assembly and reads every `.s` of the crate.
pub fn build_profile(
    profile: &Profile,
    opts: &BuildOptions,
    progress: &dyn Fn(BuildEvent),
) -> Result<AsmOutput, BuildError> {
    let (toolchain, rustc_version) = prepare(profile, opts, progress)?;
    let dir = target_dir(opts, &toolchain, profile);
    let flags = asm_flags(profile, &opts.manifest_path);

    let project = super::project::current();
    let mut cmd = tool(&toolchain, "cargo");
    cmd.args(["rustc", "--release", "--lib"]);
    if !project.features.is_empty() {
        cmd.arg("--features").arg(project.features.join(","));
    }
    cmd.args(["--target", &profile.triple])
        .arg("--target-dir")
        .arg(&dir)
        .arg("--manifest-path")
        .arg(&opts.manifest_path)
        .args([
            "--message-format=json-render-diagnostics",
            "--",
            "--emit",
            "asm",
        ])
        .args(&flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    let triple_var = format!(
        "CARGO_TARGET_{}_RUSTFLAGS",
        profile.triple.to_uppercase().replace(['-', '.'], "_")
    );
    cmd.env_remove(triple_var);
    let command = command_line(&cmd);
    progress(BuildEvent::Started {
        profile: profile.name.clone(),
        command: command.clone(),
    });

    let start = Instant::now();
    let started_at = SystemTime::now();
    let stamp = super::fresh::Stamp::of(&cmd, &dir, workspace_of(opts), &rustc_version);
    let replayed = stamp.replay();
    let ran_cargo = replayed.is_none();
    let json = match replayed {
        Some(json) => json,
        None => run_streaming(&mut cmd, profile, &command, &dir, progress)?,
    };

    let outputs = Artifacts::parse(&json)
        .library(&project.lib_name)
        .ok_or_else(|| BuildError::no_asm(profile, &dir))?;
    let fresh = outputs.fresh;
    let files = read_asm_files(&outputs, started_at)?;
    if files.is_empty() {
        return Err(BuildError::no_asm(profile, &outputs.dir));
    }
    if ran_cargo {
        let listed: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
        stamp.record(&json, &listed);
    }
    progress(BuildEvent::Finished {
        profile: profile.name.clone(),
        fresh,
        elapsed: start.elapsed(),
    });
    Ok(AsmOutput {
        profile: profile.name.clone(),
        triple: profile.triple.clone(),
        toolchain,
        rustc_version,
        flags,
        command,
        target_dir: dir,
        files,
        fresh,
    })
}

/// Runs a cargo build with piped output, passing each stderr line to
/// `progress` as it comes; returns cargo's stdout (its JSON messages).
fn run_streaming(
    cmd: &mut Command,
    profile: &Profile,
    command: &str,
    dir: &Path,
    progress: &dyn Fn(BuildEvent),
) -> Result<String, BuildError> {
    let mut child = cmd.spawn().map_err(|e| BuildError::ToolMissing {
        program: "cargo".into(),
        error: e.to_string(),
    })?;
    let stderr = child.stderr.take().expect("piped stderr");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let (stderr_text, json) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut json = String::new();
            let _ = stdout.read_to_string(&mut json);
            json
        });
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            progress(BuildEvent::Cargo {
                profile: profile.name.clone(),
                line: line.clone(),
            });
            text.push_str(&line);
            text.push('\n');
        }
        (text, reader.join().unwrap_or_default())
    });
    let status = child.wait().map_err(|e| BuildError::Io {
        path: dir.to_path_buf(),
        error: e.to_string(),
    })?;
    if !status.success() {
        return Err(BuildError::Cargo {
            profile: profile.name.clone(),
            command: command.to_string(),
            stderr: stderr_text,
        });
    }
    Ok(json)
}

/// Runs a cargo build that prints JSON messages and returns them (stdout),
/// or replays the last run's when its stamp says nothing it read has
/// changed ([`super::fresh`]); a failed build is [`BuildError::Cargo`] with
/// its stderr.
pub(crate) fn run_cargo(
    cmd: &mut Command,
    profile: &Profile,
    command: &str,
    dir: &Path,
    opts: &BuildOptions,
    rustc_vv: &str,
) -> Result<String, BuildError> {
    let stamp = super::fresh::Stamp::of(cmd, dir, workspace_of(opts), rustc_vv);
    if let Some(json) = stamp.replay() {
        return Ok(json);
    }
    let out = cmd.output().map_err(|e| BuildError::ToolMissing {
        program: "cargo".into(),
        error: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(BuildError::Cargo {
            profile: profile.name.clone(),
            command: command.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let json = String::from_utf8_lossy(&out.stdout).into_owned();
    stamp.record(&json, &[]);
    Ok(json)
}

/// The workspace root the options build in (the manifest's directory).
pub(crate) fn workspace_of(opts: &BuildOptions) -> &Path {
    opts.manifest_path.parent().unwrap_or(Path::new("."))
}

/// Every `.s` of the library's crate and hash, in the directory cargo's
/// artifact message names: `<crate>-<hash>.s` (one codegen unit) or
/// `<crate>-<hash>.<cgu>.rcgu.s` (several). After a real rebuild, `.s`
/// files older than the build are stale units of an earlier partition and
/// are deleted.
fn read_asm_files(
    outputs: &LibraryOutputs,
    started_at: SystemTime,
) -> Result<Vec<AsmFile>, BuildError> {
    let dir = outputs.dir.as_path();
    let stem = outputs.stem.as_str();
    let io = |path: &Path, e: std::io::Error| BuildError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = entry.map_err(|e| io(dir, e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let ours = name == format!("{stem}.s")
            || (name.starts_with(&format!("{stem}.")) && name.ends_with(".rcgu.s"));
        if !ours {
            continue;
        }
        if !outputs.fresh {
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .map_err(|e| io(&path, e))?;
            if modified + Duration::from_secs(2) < started_at {
                let _ = std::fs::remove_file(&path);
                continue;
            }
        }
        let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        files.push(AsmFile { path, text });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Builds several profiles in parallel, one thread each; results in the
/// order of `profiles` ([`in_parallel`]).
pub fn build_profiles(
    profiles: &[Profile],
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Vec<Result<AsmOutput, BuildError>> {
    in_parallel(
        profiles,
        |p| p,
        opts,
        progress,
        |p| build_profile(p, opts, &|e| progress(e)),
    )
}

/// Runs `build` on every job, one thread each; results in the order of
/// `jobs`. The missing targets of the jobs' profiles (`profile_of`) are
/// installed first, serially ([`install_targets`]), so rustup never runs
/// twice at once; if that fails, every job reports it. A build thread that
/// panics is its job's error.
pub fn in_parallel<J: Sync, T: Send>(
    jobs: &[J],
    profile_of: impl Fn(&J) -> &Profile,
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildEvent) + Sync),
    build: impl Fn(&J) -> Result<T, BuildError> + Sync,
) -> Vec<Result<T, BuildError>> {
    let profiles: Vec<Profile> = jobs.iter().map(|j| profile_of(j).clone()).collect();
    if let Err(e) = install_targets(&profiles, opts, &|e| progress(e)) {
        return jobs.iter().map(|_| Err(e.clone())).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs.iter().map(|j| s.spawn(|| build(j))).collect();
        handles
            .into_iter()
            .zip(jobs)
            .map(|(h, j)| {
                h.join().unwrap_or_else(|_| {
                    Err(BuildError::Cargo {
                        profile: profile_of(j).name.clone(),
                        command: String::new(),
                        stderr: "the build thread panicked".into(),
                    })
                })
            })
            .collect()
    })
}
