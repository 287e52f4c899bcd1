//! `--backend cargo-show-asm`: extraction through `cargo asm` (the
//! cargo-show-asm tool, `cargo install cargo-show-asm`), one invocation per
//! probe per profile, instead of the built-in extractor.
//!
//! cargo-show-asm picks the function out of the compiler's `.s`; its text is
//! then normalized by the suite's one normalizer, so the two backends can be
//! compared instruction for instruction (`allocasm verify-extractor`).
//!
//! It is run with `--keep-mangled`: its own demangler writes legacy
//! `{{closure}}`/`{{constant}}` paths that the normalizer would not see as
//! symbols; mangled, they go through the same demangling as the built-in
//! extractor's.
//!
//! On Mach-O it also drops the platform's leading `_` from Rust symbols;
//! [`function_from_output`] puts it back.
//!
//! cargo-show-asm always adds `-C debuginfo=2 -C codegen-units=1` to the
//! crate's flags ([`FORCED_FLAGS`]); the listings it yields are those of a
//! one-unit build, which can differ from the default build's (16 units).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Instant;

use allocasm::probes::Probe;
use allocasm_suite::codegen::build::{self, AsmFile, BuildError, BuildEvent, BuildOptions};
use allocasm_suite::codegen::parse::{Function, label_of};
use allocasm_suite::codegen::{
    AsmOutput, ObjectFormat, ProbeListing, ProbeListings, Profile, normalize,
};

/// The flags cargo-show-asm 0.2 appends to every build (seen with a
/// `RUSTC_WORKSPACE_WRAPPER` that logs rustc's arguments).
pub const FORCED_FLAGS: &[&str] = &["-C", "debuginfo=2", "-C", "codegen-units=1"];

/// The `cargo asm` command for one probe of one profile.
pub fn command(profile: &Profile, opts: &BuildOptions, toolchain: &str, probe: &str) -> Command {
    let mut cmd = allocasm_suite::toolchain::tool(toolchain, "cargo");
    cmd.args(["asm", "--lib", "--release"]);
    let project = allocasm_suite::codegen::project::current();
    if !project.features.is_empty() {
        cmd.args(["--features", &project.features.join(",")]);
    }
    cmd.args(["--target", &profile.triple])
        .arg("--manifest-path")
        .arg(&opts.manifest_path)
        .arg("--target-dir")
        .arg(
            opts.target_root
                .join(toolchain)
                .join(format!("{}.cargo-show-asm", profile.name)),
        );
    // `-C a -C b` as cargo-show-asm spells it: `-C=a -C=b`; Intel syntax
    // through its own option.
    let flags = &profile.rustflags;
    let mut i = 0;
    while i < flags.len() {
        match flags[i].as_str() {
            "-C" if i + 1 < flags.len() => {
                cmd.arg(format!("-C={}", flags[i + 1]));
                i += 2;
            }
            f if f.starts_with("-C") => {
                cmd.arg(format!("-C={}", &f[2..]));
                i += 1;
            }
            other => {
                cmd.arg(other);
                i += 1;
            }
        }
    }
    if profile.arch() == allocasm_suite::codegen::Arch::X86_64 {
        cmd.arg("--intel");
    }
    // Symbols stay mangled so that the one normalizer demangles them (
    // cargo-show-asm's own demangling spells closures `{{closure}}`).
    cmd.args([
        "--silent",
        "--no-color",
        "--simplify",
        "--keep-mangled",
        probe,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for var in allocasm_suite::codegen::build::SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    cmd
}

fn line_of(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The function `name` in cargo-show-asm's output: its lines from the
/// function's label on.
pub fn function_from_output(text: &str, name: &str, format: ObjectFormat) -> Option<Function> {
    let wanted = match format {
        ObjectFormat::MachO => format!("_{name}"),
        _ => name.to_string(),
    };
    let start = text
        .lines()
        .position(|l| label_of(l).is_some_and(|label| label == wanted))?;
    let lines = text.lines().skip(start).map(|l| match format {
        ObjectFormat::MachO => restore_macho_prefix(l),
        _ => l.to_string(),
    });
    Some(Function {
        name: name.to_string(),
        format,
        lines: lines.collect(),
    })
}

/// cargo-show-asm drops Mach-O's leading `_` from the Rust symbols it
/// prints, even with `--keep-mangled` (`__ZN…` becomes `_ZN…`, `__RNv…`
/// becomes `_RNv…`); this puts it back so the normalizer sees what the
/// compiler wrote.
fn restore_macho_prefix(line: &str) -> String {
    static MANGLED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(^|[^\w$.])(_(?:ZN|R[A-Z])[\w$.]*)").expect("static regex")
    });
    MANGLED.replace_all(line, "${1}_$2").into_owned()
}

/// Extracts every probe of one profile through `cargo asm`.
pub fn build_profile(
    profile: &Profile,
    opts: &BuildOptions,
    probes: &[Probe],
    progress: &dyn Fn(BuildEvent),
) -> Result<(AsmOutput, ProbeListings), BuildError> {
    let (toolchain, rustc_version) = build::prepare(profile, opts, progress)?;
    let start = Instant::now();
    let mut found = BTreeMap::new();
    let mut missing = Vec::new();
    let mut files = Vec::new();
    let mut first_command = String::new();
    for probe in probes {
        let mut cmd = command(profile, opts, &toolchain, probe.name);
        let line = line_of(&cmd);
        if first_command.is_empty() {
            first_command = line.clone();
        }
        progress(BuildEvent::Started {
            profile: profile.name.clone(),
            command: line.clone(),
        });
        let out = cmd.output().map_err(|e| BuildError::ToolMissing {
            program: "rustup".into(),
            error: e.to_string(),
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            if stderr.contains("no such command") || stderr.contains("no such subcommand") {
                return Err(BuildError::ToolMissing {
                    program: "cargo asm".into(),
                    error: "cargo-show-asm is not installed; install it with \
                            `cargo install cargo-show-asm`"
                        .into(),
                });
            }
            if stderr.contains("could not compile") || stderr.contains("error[") {
                return Err(BuildError::Cargo {
                    profile: profile.name.clone(),
                    command: line,
                    stderr: stderr.into_owned(),
                });
            }
        }
        match function_from_output(&stdout, probe.name, profile.object_format()) {
            Some(raw) => {
                let listing = normalize::normalize(&raw, &profile.arch());
                files.push(AsmFile {
                    path: format!("cargo asm {}", probe.name).into(),
                    text: stdout.into_owned(),
                });
                found.insert(probe.name.to_string(), ProbeListing { raw, listing });
            }
            None => missing.push(probe.name.to_string()),
        }
    }
    progress(BuildEvent::Finished {
        profile: profile.name.clone(),
        fresh: false,
        elapsed: start.elapsed(),
    });
    let mut flags = profile.build_flags();
    flags.extend(FORCED_FLAGS.iter().map(|s| s.to_string()));
    let output = AsmOutput {
        profile: profile.name.clone(),
        triple: profile.triple.clone(),
        toolchain: toolchain.clone(),
        rustc_version,
        flags,
        command: first_command,
        target_dir: opts
            .target_root
            .join(&toolchain)
            .join(format!("{}.cargo-show-asm", profile.name)),
        files,
        fresh: false,
    };
    let listings = ProbeListings {
        profile: profile.name.clone(),
        probes: found,
        missing,
        ..Default::default()
    };
    Ok((output, listings))
}

/// [`build_profile`] for several profiles in parallel (one thread each; the
/// probes of one profile run one after another, as `cargo asm` locks its
/// target dir); a panicked build is its profile's error.
pub fn build_profiles(
    profiles: &[Profile],
    opts: &BuildOptions,
    probes: &[Probe],
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Vec<Result<(AsmOutput, ProbeListings), BuildError>> {
    build::in_parallel(
        profiles,
        |p| p,
        opts,
        progress,
        |p| build_profile(p, opts, probes, &|e| progress(e)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macho_prefix_is_restored_on_rust_symbols_only() {
        assert_eq!(
            restore_macho_prefix("\tbl _ZN8allocasm6packed5Arena7drained17h21d47c52f08a4fb3E"),
            "\tbl __ZN8allocasm6packed5Arena7drained17h21d47c52f08a4fb3E"
        );
        assert_eq!(
            restore_macho_prefix("\tbl _RNvCs1_4core5panic"),
            "\tbl __RNvCs1_4core5panic"
        );
        assert_eq!(restore_macho_prefix("\tbl _memcpy"), "\tbl _memcpy");
        assert_eq!(restore_macho_prefix("_probe_x:"), "_probe_x:");
    }

    #[test]
    fn the_function_starts_at_its_label() {
        let out = ".section __TEXT\n_probe_x:\n\tret\n";
        let f = function_from_output(out, "probe_x", ObjectFormat::MachO).unwrap();
        assert_eq!(f.lines, vec!["_probe_x:", "\tret"]);
        assert!(function_from_output(out, "probe_y", ObjectFormat::MachO).is_none());
    }
}
