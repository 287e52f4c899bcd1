//! The linked view: every probe disassembled from a linked executable.
//!
//! The `.s` view shows what the compiler emitted for the library. What an
//! executable runs can differ: the library is compiled position-independent
//! and the linker relaxes its thread-local accesses (`__tls_get_addr` becomes
//! `data16 … mov rax, fs:0x0`), and with fat LTO the library is compiled
//! again as part of the executable. So for each profile with a `[linked]`
//! table (see [`LinkedConfig`](super::profile::LinkedConfig)):
//!
//! ```text
//! cargo build --release -p allocasm-probe-bins --bin linked_probes --target <triple>
//!     --target-dir <root>/<toolchain>/<profile>-linked[-lto]
//!     (CARGO_PROFILE_RELEASE_LTO=false | fat, CARGO_ENCODED_RUSTFLAGS = [linked] rustflags)
//! llvm-objdump -d --no-show-raw-insn [-M intel] --no-print-imm-hex <exe>  and  -t, -R
//! ```
//!
//! `suite/probe-bins/linked_probes.rs` keeps every probe alive through a `#[used]`
//! array read by `main`. [`objdump::parse_objdump_with`] cuts each probe out
//! of the disassembly and yields the same [`Function`](super::parse::Function)
//! the `.s` parser does, so the one normalizer ([`normalize::normalize`])
//! makes its listing: snapshots, expectations and summaries work on both
//! views alike. The disassembler is found by [`objdump_for`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::artifacts::Artifacts;
use super::build::{self, BuildError, BuildEvent, BuildOptions};
use super::profile::{Arch, Profile};
use super::{ProbeListing, ProbeListings, normalize, objdump};
use allocasm::probes::Probe;

/// The executable that links every probe (`suite/probe-bins/linked_probes.rs`).
pub const EXAMPLE: &str = "linked_probes";

/// The workspace package of the suite's executables of the probes
/// (`suite/probe-bins`): the linked view's and the probe driver. A package
/// of its own, so that building them builds only the library, not the
/// dev-dependencies an example of `allocasm` would (criterion, proptest,
/// mimalloc's C sources…) for every profile and LTO setting.
pub const BIN_PACKAGE: &str = "allocasm-probe-bins";

/// How the executable is optimized across crates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lto {
    /// The crate's release profile as it is (no LTO): the library's code as
    /// compiled for the rlib, then linked.
    Off,
    /// `lto = "fat"`: the whole program recompiled as one module.
    Fat,
}

impl Lto {
    /// Both settings, in report order.
    pub const ALL: [Lto; 2] = [Lto::Off, Lto::Fat];

    /// The name used in paths and snapshots: `release` or `release-lto`.
    pub fn name(self) -> &'static str {
        match self {
            Lto::Off => "release",
            Lto::Fat => "release-lto",
        }
    }

    fn cargo_value(self) -> &'static str {
        match self {
            Lto::Off => "false",
            Lto::Fat => "fat",
        }
    }
}

impl fmt::Display for Lto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A linked executable of one profile and its disassembly.
#[derive(Debug, Clone)]
pub struct LinkedOutput {
    /// Profile name.
    pub profile: String,
    /// Target triple.
    pub triple: String,
    /// LTO setting.
    pub lto: Lto,
    /// The toolchain, as resolved.
    pub toolchain: String,
    /// `rustc -vV` of that toolchain.
    pub rustc_version: String,
    /// The `[linked]` rustflags.
    pub flags: Vec<String>,
    /// The executable.
    pub executable: PathBuf,
    /// The executable disassembled, its symbols and dynamic relocations
    /// (what each GOT slot holds), and the disassembler command.
    pub dump: objdump::Dump,
}

impl LinkedOutput {
    /// A header for listings and reports.
    pub fn header(&self) -> String {
        format!(
            "profile {} ({}) linked, {} · {} · flags: {} · disassembled by {}",
            self.profile,
            self.triple,
            match self.lto {
                Lto::Off => "release profile (no LTO)",
                Lto::Fat => "release profile with lto = \"fat\"",
            },
            self.rustc_version.lines().next().unwrap_or(""),
            build::flags_or_none(&self.flags),
            self.dump.command
        )
    }
}

/// The GNU triple of binutils for a Rust triple
/// (`riscv64gc-unknown-linux-gnu` → `riscv64-linux-gnu`).
pub fn gnu_triple(triple: &str) -> String {
    let mut parts = triple.split('-');
    let arch = parts.next().unwrap_or("");
    let arch = match arch {
        a if a.starts_with("riscv64") => "riscv64",
        a if a.starts_with("armv7") || a.starts_with("arm") || a.starts_with("thumb") => "arm",
        a => a,
    };
    let rest: Vec<&str> = parts.filter(|p| *p != "unknown").collect();
    format!("{arch}-{}", rest.join("-"))
}

/// The environment that cross-links (and runs) a Linux `triple` from this
/// host: `CARGO_TARGET_<TRIPLE>_LINKER` (Debian's `<gnu-triple>-gcc`) and
/// `CARGO_TARGET_<TRIPLE>_RUNNER` (`qemu-<arch> -L /usr/<gnu-triple>`).
/// Empty when the triple is the host's own architecture (a native build
/// needs neither) or not a Linux triple with a Debian cross toolchain. The
/// same pairs as `scripts/cross-env`, which the qemu test steps use: no
/// `.cargo/config.toml` sets them, so a host build never picks them up.
pub fn cross_env(triple: &str) -> Vec<(String, String)> {
    let native = Arch::from_triple(triple) == Arch::from_triple(std::env::consts::ARCH)
        && cfg!(target_os = "linux");
    let Some((qemu, _)) = crate::tools::arch_names(&Arch::from_triple(triple)) else {
        return Vec::new();
    };
    if native || !triple.contains("-linux-gnu") {
        return Vec::new();
    }
    let gnu = gnu_triple(triple);
    let var = format!(
        "CARGO_TARGET_{}",
        triple.to_uppercase().replace(['-', '.'], "_")
    );
    vec![
        (format!("{var}_LINKER"), format!("{gnu}-gcc")),
        (
            format!("{var}_RUNNER"),
            format!("qemu-{qemu} -L /usr/{gnu}"),
        ),
    ]
}

/// The disassembler for a profile: its `[linked] objdump`, else what
/// [`tools`](crate::tools) finds for its architecture
/// (`$ALLOCASM_OBJDUMP`, the toolchain's `llvm-objdump`, else GNU's
/// `<gnu-triple>-objdump` or the host's `objdump`).
pub fn objdump_for(profile: &Profile) -> Result<String, BuildError> {
    if let Some(o) = profile.linked.as_ref().and_then(|l| l.objdump.clone()) {
        return Ok(o);
    }
    let tool = crate::tools::Tool::Disassembler(profile.arch());
    match crate::tools::find(&tool) {
        Ok(found) => Ok(found.program()),
        Err(missing) => Err(BuildError::ToolMissing {
            program: tool.name(),
            error: format!(
                "no disassembler for {} (looked for {}): install it with `{}`, or set \
                 `objdump` in the profile's [linked] table or ALLOCASM_OBJDUMP",
                profile.triple,
                missing.looked_for,
                install_command(&[profile])
            ),
        }),
    }
}

/// The Debian packages that link a profile's linked view: the cross gcc
/// (which brings GNU's `<gnu-triple>-objdump`, the fallback disassembler,
/// with its binutils) and the target's C library; none for a native one.
pub fn debian_packages(triple: &str) -> Vec<&'static str> {
    match gnu_triple(triple).as_str() {
        "aarch64-linux-gnu" => vec!["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"],
        "riscv64-linux-gnu" => vec!["gcc-riscv64-linux-gnu", "libc6-dev-riscv64-cross"],
        "arm-linux-gnueabihf" => vec!["gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"],
        _ => vec![],
    }
}

/// What installs the linked views of `profiles`: the disassembler
/// (`rustup component add llvm-tools`) and, on Debian and Ubuntu, the
/// cross linkers (`&& sudo apt-get install ...`).
pub fn install_command(profiles: &[&Profile]) -> String {
    let disassembler =
        crate::tools::Tool::Disassembler(profiles.first().map_or(Arch::X86_64, |p| p.arch()))
            .install();
    let mut packages: Vec<&str> = profiles
        .iter()
        .flat_map(|p| debian_packages(&p.triple))
        .collect();
    packages.sort_unstable();
    packages.dedup();
    match crate::tools::Os::current() {
        crate::tools::Os::Debian | crate::tools::Os::Ubuntu if !packages.is_empty() => {
            format!(
                "{disassembler} && sudo apt-get install {}",
                packages.join(" ")
            )
        }
        _ => disassembler,
    }
}

/// Whether a linked build failed for want of something [`install_command`]
/// installs: the disassembler, or the cross linker.
pub fn missing_tools(error: &BuildError) -> bool {
    match error {
        BuildError::ToolMissing { program, .. } => program.ends_with("objdump"),
        BuildError::Cargo { stderr, .. } => {
            stderr.contains("linker `") && stderr.contains("not found")
        }
        _ => false,
    }
}

/// `<root>/<toolchain>/<profile>-linked` or `...-linked-lto`.
pub fn target_dir(opts: &BuildOptions, toolchain: &str, profile: &Profile, lto: Lto) -> PathBuf {
    let suffix = match lto {
        Lto::Off => "linked",
        Lto::Fat => "linked-lto",
    };
    opts.target_root
        .join(toolchain)
        .join(format!("{}-{suffix}", profile.name))
}

/// `cargo build --release <selection>` for a profile's target (`-p
/// allocasm-probe-bins --bin <example>`, or `-p allocasm-dylib-probes
/// --lib`, the shared library of the probes), in its own target dir, with
/// the release profile's LTO set to `lto` and exactly `flags` as RUSTFLAGS
/// (the environment scrubbed of what would change the build): the linked
/// view's build and the executed count's driver builds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cargo_build(
    toolchain: &str,
    profile: &Profile,
    opts: &BuildOptions,
    selection: &[&str],
    dir: &Path,
    lto: Lto,
    flags: &[String],
) -> Command {
    let mut cmd = build::tool(toolchain, "cargo");
    cmd.args(["build", "--release"])
        .args(selection)
        .args([
            "--target",
            &profile.triple,
            "--message-format=json-render-diagnostics",
        ])
        .arg("--target-dir")
        .arg(dir)
        .arg("--manifest-path")
        .arg(&opts.manifest_path)
        .current_dir(opts.manifest_path.parent().unwrap_or(Path::new(".")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in build::SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    cmd.env("CARGO_PROFILE_RELEASE_LTO", lto.cargo_value());
    cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\u{1f}"));
    // The cross linker for a foreign Linux target, unless the caller chose
    // one: no config file sets it, so a native build links natively.
    for (var, value) in cross_env(&profile.triple) {
        if std::env::var_os(&var).is_none() {
            cmd.env(var, value);
        }
    }
    cmd
}

/// Builds `suite/probe-bins/linked_probes.rs` for a profile and disassembles it.
///
/// The profile must have a `[linked]` table; a foreign Linux target links
/// with Debian's cross gcc ([`cross_env`]).
pub fn build_linked(
    profile: &Profile,
    opts: &BuildOptions,
    lto: Lto,
    progress: &dyn Fn(BuildEvent),
) -> Result<LinkedOutput, BuildError> {
    let config = profile.linked.clone().unwrap_or_default();
    let (toolchain, rustc_version) = build::prepare(profile, opts, progress)?;
    let objdump = objdump_for(profile)?;
    let dir = target_dir(opts, &toolchain, profile, lto);
    let flags: Vec<String> = config
        .rustflags
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let selection = ["-p", BIN_PACKAGE, "--bin", EXAMPLE];
    let mut cmd = cargo_build(&toolchain, profile, opts, &selection, &dir, lto, &flags);
    let command = build::command_line(&cmd);
    progress(BuildEvent::Started {
        profile: format!("{} ({lto})", profile.name),
        command: command.clone(),
    });
    let start = Instant::now();
    let json = build::run_cargo(&mut cmd, profile, &command, &dir, opts, &rustc_version)?;
    let artifacts = Artifacts::parse(&json);
    let executable = artifacts
        .executable(EXAMPLE)
        .ok_or_else(|| BuildError::no_asm(profile, &dir))?;
    let fresh = artifacts.all_fresh();
    progress(BuildEvent::Finished {
        profile: format!("{} ({lto})", profile.name),
        fresh,
        elapsed: start.elapsed(),
    });

    let dump = objdump::dump(&objdump, &profile.arch(), &executable, true)?;
    Ok(LinkedOutput {
        profile: profile.name.clone(),
        triple: profile.triple.clone(),
        lto,
        toolchain,
        rustc_version,
        flags,
        executable: executable.clone(),
        dump,
    })
}

/// Both LTO settings of every profile with a `[linked]` table, one thread
/// per build; results in `(profile, lto)` order.
pub fn build_all_linked(
    profiles: &[Profile],
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Vec<(String, Lto, Result<LinkedOutput, BuildError>)> {
    let jobs: Vec<(&Profile, Lto)> = profiles
        .iter()
        .filter(|p| p.linked.is_some())
        .flat_map(|p| Lto::ALL.map(|l| (p, l)))
        .collect();
    let results = build::in_parallel(
        &jobs,
        |&(p, _)| p,
        opts,
        progress,
        |&(p, l)| build_linked(p, opts, l, &|e| progress(e)),
    );
    jobs.iter()
        .zip(results)
        .map(|(&(p, l), r)| (p.name.clone(), l, r))
        .collect()
}

/// Every probe's linked listing: the same [`ProbeListings`] as
/// [`super::extract_probes`] gives for the `.s` view.
pub fn extract_linked(profile: &Profile, out: &LinkedOutput, probes: &[Probe]) -> ProbeListings {
    let arch = profile.arch();
    let names: Vec<&str> = probes.iter().map(|p| p.name).collect();
    let functions = objdump::parse_objdump_with(
        &out.dump.disassembly,
        &out.dump.symbols,
        &out.dump.dynamic_relocs,
        &arch,
        &names,
    );
    let mut found = BTreeMap::new();
    for f in functions {
        let listing = normalize::normalize(&f, &arch);
        found.insert(f.name.clone(), ProbeListing { raw: f, listing });
    }
    let missing = names
        .iter()
        .filter(|n| !found.contains_key(**n))
        .map(|n| n.to_string())
        .collect();
    ProbeListings {
        profile: profile.name.clone(),
        probes: found,
        missing,
        ..Default::default()
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    #[test]
    fn gnu_triples_name_debians_binutils() {
        assert_eq!(gnu_triple("x86_64-unknown-linux-gnu"), "x86_64-linux-gnu");
        assert_eq!(
            gnu_triple("riscv64gc-unknown-linux-gnu"),
            "riscv64-linux-gnu"
        );
        assert_eq!(
            gnu_triple("armv7-unknown-linux-gnueabihf"),
            "arm-linux-gnueabihf"
        );
        assert_eq!(gnu_triple("aarch64-unknown-linux-gnu"), "aarch64-linux-gnu");
    }
}
