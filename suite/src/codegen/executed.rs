//! What the CPU executes: instructions per call of every probe, counted in a
//! linked executable under qemu-user.
//!
//! `suite/probe-bins/probe_driver.rs` calls every probe in its warm fast case many
//! times. It is built like the linked view (`cargo build --release
//! -p allocasm-probe-bins --bin probe_driver --target <triple>`, the
//! profile's `[linked]` rustflags, or its own rustflags where it has no
//! `[linked]` table; release or fat LTO) into the linked view's target dir,
//! so the two share their dependencies' builds, and run as
//!
//! ```text
//! qemu-<arch> [-cpu <cpu>] -L /usr/<gnu-triple> -singlestep -d exec,nochain \
//!     -dfilter <the executable's code>,<the loader's PLT targets> -D <log> probe_driver all <calls>
//! ```
//!
//! (`qemu-x86_64` for x86_64: the same method on every profile). A
//! shared-library profile ([`shared_library`]: `x86_64-linux-dylib`) is
//! measured in a shared library: the cdylib [`DYLIB_PACKAGE`]
//! (`suite/dylib-probes`, the probes re-exported) is built with the
//! profile's own flags into the same target dir, the driver runs with
//! `ALLOCASM_PROBE_DYLIB=<the .so>` ([`DYLIB_ENV`]), dlopens it and calls its
//! probes, and the traced code is that library's (its PLT stubs included)
//! and the loader functions its PLT names (`__tls_get_addr`). With
//! `-singlestep` every translation block is one instruction and with
//! `nochain` every execution of a block goes through the loop that logs
//! `Trace ...: [.../<pc>/...]`, so the log is the exact sequence of executed
//! instructions inside the filtered ranges. qemu 7.2 (Debian 12) has no TCG
//! plugins; this needs none. A first, untraced run (`probe_driver base`)
//! tells where qemu loaded the executable and the dynamic loader.
//!
//! Each call is one *window* of that sequence: from the probe's entry to its
//! taken return, callees included (an outline-atomics helper such as
//! `__aarch64_ldadd8_relax`, armv7's `__aeabi_read_tp`, riscv64's
//! not-inlined `LocalKey::with`, a PLT stub and the loader's
//! `__tls_get_addr` behind it). Every function of the executable is traced,
//! and of the dynamic loader the functions the executable's PLT names; a
//! call that comes back without any return executing in between (into code
//! that was not traced) is counted in [`Executed::untraced_calls`], so a
//! short count never passes silently. The driver's set-up between calls uses
//! the library's API inlined into the driver, outside every window.
//!
//! The first [`MeasureOptions::warmup`] calls of each probe are dropped (the
//! first call of the thread cursor refills it); [`Executed::instructions`]
//! is the most frequent count of the rest, with its minimum and maximum.
//!
//! Stable API (the report and the tests use it):
//!
//! - [`build_driver`] (one profile, one [`Lto`]) and [`measure`] give an
//!   [`ExecutedSet`]: one [`Executed`] per probe, serde-serializable, with
//!   `instructions` (per call, helpers included), `in_probe`, `helpers`
//!   (how many each helper added), and `listing_path`: the probe's listing
//!   lines (normalized as the linked view normalizes them) in the order the
//!   call executed them.
//! - [`compare_path`]: the equality check of a probe's expected path
//!   (`&[String]`, the hot path's lines of [`driver_listings`]) against
//!   what was executed; its
//!   [`PathMismatch`] names the probe and profile and shows both sequences.
//! - [`measured_profiles`]: the profiles this applies to (Linux, run under
//!   qemu-user: the executable profiles and the shared-library one).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::artifacts::Artifacts;
use super::build::{self, BuildError, BuildEvent, BuildOptions};
use super::linked::{self, Lto};
use super::listing::Listing;
use super::profile::{Arch, Profile};
use super::{ProbeListings, normalize, objdump};
use allocasm::probes::Probe;

/// The executable that drives every probe (`suite/probe-bins/probe_driver.rs`).
pub const DRIVER: &str = "probe_driver";

/// The workspace package whose cdylib holds the probes of a shared-library
/// profile (`suite/dylib-probes`).
pub const DYLIB_PACKAGE: &str = "allocasm-dylib-probes";

/// The environment variable that makes the driver dlopen a shared library
/// and call its probes (`suite/probe-bins/probe_driver.rs`).
pub const DYLIB_ENV: &str = "ALLOCASM_PROBE_DYLIB";

/// How many instructions one helper (a callee of the probe) executed per
/// call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HelperCount {
    /// The callee's symbol (`__aarch64_ldadd8_relax`).
    pub function: String,
    /// Instructions it executed in one call of the probe.
    pub instructions: u64,
}

/// What one probe executed per call on one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Executed {
    /// The probe.
    pub probe: String,
    /// The profile.
    pub profile: String,
    /// `release` or `release-lto`.
    pub build: String,
    /// Instructions per call, callees included: the most frequent count of
    /// the measured calls.
    pub instructions: u64,
    /// Of those, in the probe's own body.
    pub in_probe: u64,
    /// Of those, in each callee, in call order.
    pub helpers: Vec<HelperCount>,
    /// The fewest instructions a measured call executed.
    pub min: u64,
    /// The most.
    pub max: u64,
    /// Calls measured (after the warm-up).
    pub calls: usize,
    /// Calls (per call) into code that was not traced (a shared library
    /// other than the loader): their instructions are missing from
    /// `instructions`. 0 on every profile measured so far.
    pub untraced_calls: u64,
    /// The probe's listing lines (the executable's listing, normalized) in
    /// the order one call executed them; empty when the disassembly and the
    /// listing could not be matched line for line.
    pub listing_path: Vec<String>,
    /// Every instruction one call executed, as disassembled; callees'
    /// prefixed with `<callee>: `.
    pub sequence: Vec<String>,
}

impl Executed {
    /// Instructions the callees added per call.
    pub fn helper_instructions(&self) -> u64 {
        self.helpers.iter().map(|h| h.instructions).sum()
    }
}

/// Every probe's measurement on one profile and build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutedSet {
    /// The profile.
    pub profile: String,
    /// `release` or `release-lto`.
    pub build: String,
    /// How it was measured, for the report (the qemu command).
    pub method: String,
    /// Per probe.
    pub probes: BTreeMap<String, Executed>,
    /// Probes of the registry that produced no measured call.
    pub missing: Vec<String>,
}

/// Options of [`measure`].
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Calls of each probe (warm-up included).
    pub calls: usize,
    /// Calls dropped at the start of each probe.
    pub warmup: usize,
    /// `-cpu` for qemu (`cortex-a53`: an Armv8.0 core without LSE, so the
    /// outline helpers take their LL/SC path); `None`: qemu's default
    /// (`max`, which has LSE).
    pub cpu: Option<String>,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            calls: 48,
            warmup: 8,
            cpu: None,
        }
    }
}

/// The executable built for one profile.
#[derive(Debug, Clone)]
pub struct Driver {
    /// The profile.
    pub profile: String,
    /// The build.
    pub lto: Lto,
    /// The executable.
    pub executable: PathBuf,
    /// A shared-library profile's cdylib of the probes ([`DYLIB_PACKAGE`]):
    /// the driver dlopens it and calls its probes, and what follows
    /// (disassembly, symbols, relocations) is the library's, not the
    /// executable's. `None`: the probes are the executable's.
    pub library: Option<PathBuf>,
    /// The code the probes are in (the executable, or `library`)
    /// disassembled, its symbols and its dynamic relocations (empty for a
    /// static executable: they name the GOT slots its calls go through, as
    /// the linked view does).
    pub dump: objdump::Dump,
}

/// A Linux profile of a shared library: no `[linked]` table and no
/// `relocation-model=pie`, so its code is rustc's default PIC (thread-locals
/// through `__tls_get_addr`). Linked into an executable the linker would
/// relax that code; its probes are measured in a cdylib
/// ([`DYLIB_PACKAGE`]) that the driver dlopens.
pub fn shared_library(profile: &Profile) -> bool {
    profile.triple.contains("-linux-")
        && profile.linked.is_none()
        && !profile
            .rustflags
            .iter()
            .any(|f| f.contains("relocation-model=pie"))
}

/// The Linux profiles qemu-user runs: those whose code, linked into an
/// executable, is what the profile describes (a `[linked]` table, or
/// `relocation-model=pie` in its flags), and the shared-library profiles
/// ([`shared_library`]), whose probes the driver calls in a cdylib.
pub fn measured_profiles(profiles: &[Profile]) -> Vec<&Profile> {
    profiles
        .iter()
        .filter(|p| p.triple.contains("-linux-") && runner(p).is_some())
        .collect()
}

/// The rustflags the driver is built with.
pub fn driver_flags(profile: &Profile) -> Vec<String> {
    match &profile.linked {
        Some(l) => l.rustflags.split_whitespace().map(str::to_string).collect(),
        None => profile.rustflags.clone(),
    }
}

/// qemu-user for a profile's architecture, and the sysroot for `-L`.
pub fn runner(profile: &Profile) -> Option<(String, Option<PathBuf>)> {
    let (qemu, _) = crate::tools::arch_names(&profile.arch())?;
    let sysroot = PathBuf::from("/usr").join(linked::gnu_triple(&profile.triple));
    let host = Arch::from_triple(std::env::consts::ARCH) == profile.arch();
    Some((
        format!("qemu-{qemu}"),
        (!host && sysroot.is_dir()).then_some(sysroot),
    ))
}

/// Builds `suite/probe-bins/probe_driver.rs` for a profile and disassembles it.
pub fn build_driver(
    profile: &Profile,
    opts: &BuildOptions,
    lto: Lto,
    progress: &dyn Fn(BuildEvent),
) -> Result<Driver, BuildError> {
    disassemble_driver(profile, build_driver_files(profile, opts, lto, progress)?)
}

/// What [`build_driver_files`] built: the files a [`Driver`] is read from.
#[derive(Debug, Clone)]
pub struct DriverFiles {
    /// The build.
    pub lto: Lto,
    /// The executable.
    pub executable: PathBuf,
    /// A shared-library profile's cdylib of the probes.
    pub library: Option<PathBuf>,
}

/// Builds the probe driver (and a shared-library profile's cdylib) without
/// disassembling them: enough to tell, by their bytes, whether a cached
/// measurement still holds.
pub fn build_driver_files(
    profile: &Profile,
    opts: &BuildOptions,
    lto: Lto,
    progress: &dyn Fn(BuildEvent),
) -> Result<DriverFiles, BuildError> {
    let (toolchain, rustc_vv) = build::prepare(profile, opts, progress)?;
    // The disassembler is needed on a miss (and a cached count is no
    // reason to hide that it is missing): say so before building.
    let objdump = linked::objdump_for(profile)?;
    if Command::new(&objdump)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_err()
    {
        return Err(BuildError::ToolMissing {
            program: objdump,
            error: "not found".to_string(),
        });
    }
    let dir = linked::target_dir(opts, &toolchain, profile, lto);
    let flags = driver_flags(profile);
    let selection = ["-p", linked::BIN_PACKAGE, "--bin", DRIVER];
    let mut cmd = linked::cargo_build(&toolchain, profile, opts, &selection, &dir, lto, &flags);
    let command = build::command_line(&cmd);
    let label = format!("{} ({lto}, {DRIVER})", profile.name);
    progress(BuildEvent::Started {
        profile: label.clone(),
        command: command.clone(),
    });
    let start = std::time::Instant::now();
    let json = build::run_cargo(&mut cmd, profile, &command, &dir, opts, &rustc_vv)?;
    let artifacts = Artifacts::parse(&json);
    let executable = artifacts
        .executable(DRIVER)
        .ok_or_else(|| BuildError::no_asm(profile, &dir))?;
    let mut fresh = artifacts.all_fresh();
    // A shared-library profile: the probes in the cdylib, built with the
    // same flags into the same target dir (so it shares allocasm's build).
    let library = if shared_library(profile) {
        let selection = ["-p", DYLIB_PACKAGE, "--lib"];
        let mut cmd = linked::cargo_build(&toolchain, profile, opts, &selection, &dir, lto, &flags);
        let command = build::command_line(&cmd);
        let json = build::run_cargo(&mut cmd, profile, &command, &dir, opts, &rustc_vv)?;
        let artifacts = Artifacts::parse(&json);
        fresh &= artifacts.all_fresh();
        let so = artifacts
            .cdylib("so")
            .ok_or_else(|| BuildError::no_asm(profile, &dir))?;
        Some(so)
    } else {
        None
    };
    progress(BuildEvent::Finished {
        profile: label,
        fresh,
        elapsed: start.elapsed(),
    });
    Ok(DriverFiles {
        lto,
        executable,
        library,
    })
}

/// Disassembles what [`build_driver_files`] built.
pub fn disassemble_driver(profile: &Profile, files: DriverFiles) -> Result<Driver, BuildError> {
    let DriverFiles {
        lto,
        executable,
        library,
    } = files;
    let objdump = linked::objdump_for(profile)?;
    let code = library.as_deref().unwrap_or(&executable);
    let dump = objdump::dump(&objdump, &profile.arch(), code, false)?;
    Ok(Driver {
        profile: profile.name.clone(),
        lto,
        executable,
        library,
        dump,
    })
}

/// One instruction of the traced code.
#[derive(Debug, Clone)]
struct Insn {
    /// Index into [`CodeMap::functions`].
    function: usize,
    /// As disassembled, comment included.
    text: String,
}

/// One object of the traced process: its disassembly, its function
/// symbols, and where the run loaded it.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    /// `objdump -d --no-show-raw-insn` of it.
    pub disassembly: &'a str,
    /// `objdump -t` (or `-T` for a stripped shared object).
    pub symbols: &'a str,
    /// Run address minus symbol-table address.
    pub bias: i64,
    /// Only these functions (the dynamic loader's `__tls_get_addr`), or
    /// every function when `None`.
    pub only: Option<BTreeSet<String>>,
}

/// The traced code of a run, in the run's addresses: every function of the
/// executable (PLT stubs included), and the dynamic loader's functions the
/// probes reach through the PLT.
#[derive(Debug, Clone)]
pub struct CodeMap {
    /// `(name, start, end)`, sorted by start.
    functions: Vec<(String, u64, u64)>,
    /// Every instruction of those functions, by address.
    insns: BTreeMap<u64, Insn>,
    arch: Arch,
}

/// The PLT stubs of a disassembly (`000022e0 <__tls_get_addr@plt>:`):
/// name (with `@plt`) → (address, size up to the next stub).
fn plt_stubs(disassembly: &str) -> BTreeMap<String, (u64, u64)> {
    let mut heads: Vec<(u64, String)> = Vec::new();
    for line in disassembly.lines() {
        let Some((addr, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(name) = rest.strip_prefix('<').and_then(|r| r.strip_suffix(">:")) else {
            continue;
        };
        if let Ok(a) = u64::from_str_radix(addr, 16) {
            heads.push((a, name.to_string()));
        }
    }
    let mut out = BTreeMap::new();
    for (k, (a, name)) in heads.iter().enumerate() {
        if name.ends_with("@plt") {
            let end = heads.get(k + 1).map_or(a + 16, |n| n.0);
            out.insert(name.clone(), (*a, end.saturating_sub(*a).clamp(4, 64)));
        }
    }
    out
}

fn sym_ref_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:\b(?:0x)?[0-9a-f]+|\)) <([^>+]+)(?:\+0x[0-9a-f]+)?>").expect("regex")
    })
}

/// A direct call or a jump whose target is named (`bl 48d80 <sym>`,
/// `call 1234 <sym>`, riscv's `jalr ...(ra) # 1234 <sym>`).
fn is_call(arch: &Arch, text: &str) -> bool {
    let m = text.split_whitespace().next().unwrap_or("");
    match arch {
        Arch::X86_64 => m == "call",
        Arch::Aarch64 => m == "bl" || m == "blr",
        // `jal`/`jalr` link `ra` (objdump spells the non-linking forms `j`
        // and `jr`).
        Arch::Riscv64 => m == "jal" || m == "jalr",
        Arch::Arm => m == "bl" || m == "blx",
        Arch::Other(_) => false,
    }
}

impl CodeMap {
    /// The code of `objects` as the run loaded them.
    pub fn new(objects: &[Object<'_>], arch: &Arch) -> CodeMap {
        let mut functions: Vec<(String, u64, u64)> = Vec::new();
        let mut texts: Vec<BTreeMap<u64, String>> = Vec::new();
        for o in objects {
            let mut all: BTreeMap<u64, String> = BTreeMap::new();
            for line in o.disassembly.lines() {
                let Some((addr, text)) = objdump::insn_line(line) else {
                    continue;
                };
                // Data in the text (armv7's literal pools, `.word 0x...`) is
                // never executed and is no line of the listing.
                if text.trim_start().starts_with('.') {
                    continue;
                }
                all.insert(
                    addr.wrapping_add_signed(o.bias),
                    text.trim_end().to_string(),
                );
            }
            texts.push(all);
            let mut symbols = objdump::function_symbols(o.symbols);
            symbols.extend(plt_stubs(o.disassembly));
            for (name, (a, size)) in symbols {
                if o.only.as_ref().is_some_and(|only| !only.contains(&name)) {
                    continue;
                }
                let a = a.wrapping_add_signed(o.bias);
                functions.push((name, a, a + size));
            }
        }
        functions.sort_by_key(|f| (f.1, std::cmp::Reverse(f.2)));
        // Aliases and nested symbols: keep the first (widest) at an address.
        functions.dedup_by_key(|f| f.1);
        let mut insns = BTreeMap::new();
        for (i, (_, start, end)) in functions.iter().enumerate() {
            for all in &texts {
                for (a, t) in all.range(*start..*end) {
                    insns.entry(*a).or_insert(Insn {
                        function: i,
                        text: t.clone(),
                    });
                }
            }
        }
        CodeMap {
            functions,
            insns,
            arch: arch.clone(),
        }
    }

    /// The traced functions' names.
    pub fn function_names(&self) -> Vec<&str> {
        self.functions.iter().map(|f| f.0.as_str()).collect()
    }

    /// `-dfilter`'s argument: the traced functions' ranges, neighbours
    /// (less than 4 KiB apart) merged into one range.
    pub fn dfilter(&self) -> String {
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &(_, a, e) in &self.functions {
            match ranges.last_mut() {
                Some(last) if a <= last.1 + 4096 => last.1 = last.1.max(e),
                _ => ranges.push((a, e)),
            }
        }
        ranges
            .iter()
            .map(|(a, e)| format!("{a:#x}+{:#x}", e - a))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn function_at(&self, addr: u64) -> Option<usize> {
        let k = self.functions.partition_point(|f| f.1 <= addr);
        (k > 0 && addr < self.functions[k - 1].2).then(|| k - 1)
    }

    fn entry_of(&self, addr: u64, probes: &BTreeSet<&str>) -> Option<usize> {
        let f = self.function_at(addr)?;
        let (name, start, _) = &self.functions[f];
        (*start == addr && probes.contains(name.as_str())).then_some(f)
    }

    fn next_insn(&self, addr: u64) -> Option<u64> {
        self.insns.range(addr + 1..).next().map(|(a, _)| *a)
    }

    /// A function's name for reports: demangled, without its hash.
    fn display_name(&self, f: usize) -> String {
        format!("{:#}", rustc_demangle::demangle(&self.functions[f].0))
    }
}

/// One call of a probe: the addresses (the run's) it executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The probe.
    pub probe: String,
    /// Executed addresses in order.
    pub addrs: Vec<u64>,
    /// Calls to untraced functions.
    pub untraced_calls: u64,
    /// Whether it ended at the probe's return (false: a tail call left it,
    /// or the trace ended).
    pub returned: bool,
}

/// The executed PCs of a `-d exec` log (`Trace 0: 0x7f.. [cs_base/pc/flags/cflags] sym`).
pub fn parse_trace(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Trace ")?;
            let (_, fields) = rest.split_once('[')?;
            let pc = fields.split('/').nth(1)?;
            u64::from_str_radix(pc, 16).ok()
        })
        .collect()
}

/// A return, conditional ones included (armv7's `popcc {..., pc}`, `bxne
/// lr`): whether it was taken shows in the next executed address.
fn is_return_like(arch: &Arch, text: &str) -> bool {
    static ARM: OnceLock<Regex> = OnceLock::new();
    let t = text.trim();
    match arch {
        Arch::Arm => ARM
            .get_or_init(|| {
                Regex::new(
                    r"^(bx[a-z]{0,2}\s+lr\b|pop[a-z]{0,2}(\.w)?\s+\{.*\bpc\}|ldm[a-z]*\s+sp!.*\bpc\})",
                )
                .expect("regex")
            })
            .is_match(t),
        Arch::X86_64 => t.starts_with("ret"),
        Arch::Aarch64 => t == "ret" || t.starts_with("ret\t") || t.starts_with("ret "),
        Arch::Riscv64 => t == "ret" || t.starts_with("jr\tra") || t.starts_with("jr ra"),
        Arch::Other(_) => false,
    }
}

/// Cuts a trace (run addresses) into calls: a window opens at a probe's
/// entry and closes when the probe's own return is taken. A call whose
/// callee is not traced (it comes back without any return executing in
/// between) counts in [`Window::untraced_calls`].
pub fn windows(map: &CodeMap, pcs: &[u64], probes: &[&str]) -> Vec<Window> {
    let probes: BTreeSet<&str> = probes.iter().copied().collect();
    let mut out: Vec<Window> = Vec::new();
    let mut open: Option<(usize, Window)> = None;
    // Return addresses of the calls made in the window.
    let mut pending: Vec<u64> = Vec::new();
    let mut prev_returned = false;
    // The address after the probe's return-like instruction just executed:
    // seeing it next means the return was not taken.
    let mut fall_through: Option<u64> = None;
    for &addr in pcs {
        if let Some(next) = fall_through.take()
            && next != addr
            && let Some((_, mut w)) = open.take()
        {
            w.returned = true;
            out.push(w);
        }
        if let Some(f) = map.entry_of(addr, &probes) {
            if let Some((_, w)) = open.take() {
                out.push(w);
            }
            open = Some((
                f,
                Window {
                    probe: map.functions[f].0.clone(),
                    addrs: Vec::new(),
                    untraced_calls: 0,
                    returned: false,
                },
            ));
            pending.clear();
            prev_returned = false;
        }
        let Some((f, w)) = open.as_mut() else {
            continue;
        };
        if pending.last() == Some(&addr) {
            pending.pop();
            if !prev_returned {
                w.untraced_calls += 1;
            }
        }
        w.addrs.push(addr);
        let Some(insn) = map.insns.get(&addr) else {
            prev_returned = false;
            continue;
        };
        prev_returned = is_return_like(&map.arch, &insn.text);
        if insn.function == *f && prev_returned {
            fall_through = Some(map.next_insn(addr).unwrap_or(u64::MAX));
        }
        if is_call(&map.arch, &insn.text)
            && let Some(next) = map.next_insn(addr)
        {
            pending.push(next);
        }
    }
    if let Some((_, mut w)) = open {
        w.returned = fall_through.is_some();
        out.push(w);
    }
    out
}

/// The listing of `probe` in the executable, and for each of the probe's
/// instruction addresses the index of its listing instruction (RISC-V's
/// `auipc ra` + `jalr (ra)` are one `call` line and `auipc t1` + `jr (t1)`
/// one `tail` line, as the linked view fuses them). `None` when the two cannot be matched line for line.
fn listing_index(
    map: &CodeMap,
    disassembly: &str,
    symtab: &str,
    relocs: &str,
    probe: &str,
) -> Option<(Listing, BTreeMap<u64, usize>)> {
    let f = objdump::parse_objdump_with(disassembly, symtab, relocs, &map.arch, &[probe])
        .into_iter()
        .next()?;
    let listing = normalize::normalize(&f, &map.arch);
    let n = listing.instructions().count();
    let fi = map.functions.iter().position(|x| x.0 == probe)?;
    let addrs: Vec<(u64, &Insn)> = map
        .insns
        .iter()
        .filter(|(_, i)| i.function == fi)
        .map(|(a, i)| (*a, i))
        .collect();
    let mut index = BTreeMap::new();
    let mut k = 0usize;
    let mut prev: Option<&str> = None;
    for (a, i) in &addrs {
        let code = i.text.split('#').next().unwrap_or("").trim_end();
        let fused = map.arch == Arch::Riscv64
            && k > 0
            && objdump::riscv_far_jump(&code.replace('\t', " "), prev).is_some();
        if fused {
            index.insert(*a, k - 1);
            prev = None;
            continue;
        }
        prev = Some(i.text.as_str());
        index.insert(*a, k);
        k += 1;
    }
    (k == n).then_some((listing, index))
}

/// Summarizes the windows of every probe: the first `warmup` calls of each
/// are dropped, the most frequent count of the rest is the figure. With the
/// executable's dynamic relocations (`objdump -R`) the listing lines of
/// calls through the GOT name their callee as the linked view's listing
/// does.
#[allow(clippy::too_many_arguments)]
pub fn summarize(
    map: &CodeMap,
    windows: &[Window],
    warmup: usize,
    disassembly: &str,
    symtab: &str,
    relocs: &str,
    profile: &str,
    build: &str,
) -> BTreeMap<String, Executed> {
    let mut by_probe: BTreeMap<&str, Vec<&Window>> = BTreeMap::new();
    for w in windows {
        by_probe.entry(w.probe.as_str()).or_default().push(w);
    }
    let mut out = BTreeMap::new();
    for (probe, ws) in by_probe {
        let steady: Vec<&Window> = ws.into_iter().skip(warmup).collect();
        if steady.is_empty() {
            continue;
        }
        let mut freq: BTreeMap<usize, usize> = BTreeMap::new();
        for w in &steady {
            *freq.entry(w.addrs.len()).or_default() += 1;
        }
        let mode = freq
            .iter()
            .max_by_key(|&(len, n)| (*n, std::cmp::Reverse(*len)))
            .map(|(len, _)| *len)
            .unwrap_or(0);
        let rep = steady
            .iter()
            .find(|w| w.addrs.len() == mode)
            .expect("the mode is some window's length");
        let fi = map.functions.iter().position(|f| f.0 == probe);
        let mut in_probe = 0u64;
        let mut helpers: Vec<HelperCount> = Vec::new();
        let mut sequence = Vec::new();
        for a in &rep.addrs {
            let f = map.function_at(*a);
            let text = map.insns.get(a).map_or_else(
                || format!("<{a:#x}>"),
                |i| strip_comment(&map.arch, &i.text),
            );
            if f == fi {
                in_probe += 1;
                sequence.push(text);
            } else {
                let name = f.map_or_else(|| "?".to_string(), |f| map.display_name(f));
                sequence.push(format!("{name}: {text}"));
                match helpers.iter_mut().find(|h| h.function == name) {
                    Some(h) => h.instructions += 1,
                    None => helpers.push(HelperCount {
                        function: name,
                        instructions: 1,
                    }),
                }
            }
        }
        let listing_path = listing_index(map, disassembly, symtab, relocs, probe)
            .map(|(listing, index)| {
                let insns: Vec<String> = listing.instructions().map(|i| i.text()).collect();
                let mut path = Vec::new();
                let mut last = None;
                for a in &rep.addrs {
                    if let Some(&k) = index.get(a) {
                        if last != Some(k) {
                            path.push(insns[k].clone());
                        }
                        last = Some(k);
                    } else {
                        last = None;
                    }
                }
                path
            })
            .unwrap_or_default();
        out.insert(
            probe.to_string(),
            Executed {
                probe: probe.to_string(),
                profile: profile.to_string(),
                build: build.to_string(),
                instructions: mode as u64,
                in_probe,
                helpers,
                min: steady.iter().map(|w| w.addrs.len()).min().unwrap_or(0) as u64,
                max: steady.iter().map(|w| w.addrs.len()).max().unwrap_or(0) as u64,
                calls: steady.len(),
                untraced_calls: rep.untraced_calls,
                listing_path,
                sequence,
            },
        );
    }
    out
}

/// The instruction without objdump's comment (`\t# 1234 <sym>`, `\t// #16`,
/// `\t@ 0x5e000`, `\t; 0x..`), `<sym+0x..>` shortened to `<sym>`.
fn strip_comment(arch: &Arch, text: &str) -> String {
    let markers: &[&str] = match arch {
        Arch::X86_64 | Arch::Riscv64 => &["\t#", " #"],
        Arch::Aarch64 => &["\t//", " //"],
        Arch::Arm => &["\t@", "\t;"],
        Arch::Other(_) => &["\t#", "\t//", "\t@", "\t;"],
    };
    let mut t = text;
    for m in markers {
        if let Some((code, _)) = t.split_once(m) {
            t = code;
        }
    }
    let t = sym_ref_re().replace_all(t, |c: &regex::Captures| {
        // llvm-objdump's `jr -992(t1) <sym>` keeps its operand.
        let paren = if c[0].starts_with(')') { ") " } else { "" };
        format!("{paren}<{:#}>", rustc_demangle::demangle(&c[1]))
    });
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The dynamic loader of a run (`interp <address> <path>` printed by the
/// driver): its disassembly, dynamic symbols and load address.
fn loader_code(
    stdout: &str,
    sysroot: Option<&Path>,
    profile: &Profile,
) -> anyhow::Result<Option<(String, String, u64)>> {
    let Some((addr, path)) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("interp 0x"))
        .and_then(|r| r.split_once(' '))
    else {
        return Ok(None);
    };
    let base = u64::from_str_radix(addr, 16)?;
    let guest = Path::new(path.trim());
    let host = sysroot
        .map(|s| s.join(guest.strip_prefix("/").unwrap_or(guest)))
        .filter(|p| p.exists())
        .unwrap_or_else(|| guest.to_path_buf());
    let objdump = linked::objdump_for(profile)?;
    let mut disassembly = objdump::disassemble(&objdump, &profile.arch(), &host)?;
    // llvm-objdump 23 prints no instruction of Debian 12's x86-64 ld.so
    // (each function is `...`): GNU objdump, where there is one, reads it.
    if !disassembly.lines().any(|l| objdump::insn_line(l).is_some())
        && let Some(gnu) = objdump::gnu_objdump(&profile.arch())
    {
        disassembly = objdump::disassemble(&gnu, &profile.arch(), &host)?;
    }
    let dynsyms = objdump::run(&objdump, &["-T"], &host)?;
    Ok(Some((disassembly, dynsyms, base)))
}

/// Runs the driver under qemu with tracing and measures every probe.
pub fn measure(
    profile: &Profile,
    driver: &Driver,
    probes: &[Probe],
    opts: &MeasureOptions,
) -> anyhow::Result<ExecutedSet> {
    let (qemu, sysroot) = runner(profile)
        .with_context(|| format!("no qemu-user for {} ({})", profile.name, profile.triple))?;
    let names: Vec<&str> = probes.iter().map(|p| p.name).collect();
    let arch = profile.arch();
    let qemu_cmd = |extra: &[String], args: &[&str]| {
        let mut c = Command::new(&qemu);
        if let Some(cpu) = &opts.cpu {
            c.args(["-cpu", cpu]);
        }
        if let Some(s) = &sysroot {
            c.arg("-L").arg(s);
        }
        if let Some(lib) = &driver.library {
            c.env(DYLIB_ENV, lib);
        }
        c.args(extra).arg(&driver.executable).args(args);
        c
    };
    let base_line = |stdout: &[u8]| -> anyhow::Result<u64> {
        let text = String::from_utf8_lossy(stdout);
        let hex = text
            .lines()
            .find_map(|l| l.strip_prefix("base probe_linear_alloc 0x"))
            .context("the driver printed no base line")?;
        Ok(u64::from_str_radix(hex.trim(), 16)?)
    };
    let out = qemu_cmd(&[], &["base"]).output().with_context(|| {
        format!(
            "cannot run {qemu}: install it with `{}`{}",
            crate::tools::Tool::Qemu(profile.arch()).install(),
            crate::tools::or_setup()
        )
    })?;
    if !out.status.success() {
        bail!(
            "{qemu} {} base failed: {}",
            driver.executable.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runtime = base_line(&out.stdout)?;
    let symbols = objdump::function_symbols(&driver.dump.symbols);
    let &(linked_at, _) = symbols
        .get("probe_linear_alloc")
        .context("probe_linear_alloc is not in the probes' symbol table")?;
    let bias = runtime as i64 - linked_at as i64;
    let mut objects = vec![Object {
        disassembly: &driver.dump.disassembly,
        symbols: &driver.dump.symbols,
        bias,
        only: None,
    }];
    // What the executable calls through the PLT (`__tls_get_addr`, from a
    // probe or a callee) runs in the dynamic loader when the loader defines
    // it: trace those functions of it too.
    let through_plt: BTreeSet<String> = plt_stubs(&driver.dump.disassembly)
        .into_keys()
        .filter_map(|n| n.strip_suffix("@plt").map(str::to_string))
        .collect();
    let loader = if through_plt.is_empty() {
        None
    } else {
        loader_code(
            &String::from_utf8_lossy(&out.stdout),
            sysroot.as_deref(),
            profile,
        )?
    };
    if let Some((disassembly, dynsyms, base)) = &loader {
        objects.push(Object {
            disassembly,
            symbols: dynsyms,
            bias: *base as i64,
            only: Some(through_plt.clone()),
        });
    }
    let map = CodeMap::new(&objects, &arch);

    let log = std::env::temp_dir().join(format!(
        "allocasm-executed-{}-{}-{}.log",
        profile.name,
        driver.lto,
        std::process::id()
    ));
    let dfilter = map.dfilter();
    let extra: Vec<String> = [
        "-singlestep",
        "-d",
        "exec,nochain",
        "-dfilter",
        &dfilter,
        "-D",
        &log.to_string_lossy(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let calls = opts.calls.to_string();
    let out = qemu_cmd(&extra, &["all", &calls]).output()?;
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    if !out.status.success() {
        bail!(
            "the traced run of {} failed: {}",
            driver.executable.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if base_line(&out.stdout)? != runtime {
        bail!("the traced run loaded the driver elsewhere than the first run: the filter missed");
    }
    let pcs = parse_trace(&trace);
    let ws = windows(&map, &pcs, &names);
    let probes_out = summarize(
        &map,
        &ws,
        opts.warmup,
        &driver.dump.disassembly,
        &driver.dump.symbols,
        &driver.dump.dynamic_relocs,
        &profile.name,
        driver.lto.name(),
    );
    let missing = names
        .iter()
        .filter(|n| !probes_out.contains_key(**n))
        .map(|n| n.to_string())
        .collect();
    let (env, code) = match &driver.library {
        Some(lib) => (
            format!(
                "{DYLIB_ENV}={} ",
                lib.file_name().unwrap_or_default().to_string_lossy()
            ),
            "the shared library's code",
        ),
        None => (String::new(), "the executable's code"),
    };
    let method = format!(
        "{env}{qemu}{} -singlestep -d exec,nochain -dfilter <{code}, the loader's PLT targets> {DRIVER} all {} \
         (first {} calls of each probe dropped)",
        opts.cpu
            .as_ref()
            .map_or(String::new(), |c| format!(" -cpu {c}")),
        opts.calls,
        opts.warmup
    );
    Ok(ExecutedSet {
        profile: profile.name.clone(),
        build: driver.lto.name().to_string(),
        method,
        probes: probes_out,
        missing,
    })
}

/// The executed path differs from the expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMismatch {
    /// The probe.
    pub probe: String,
    /// The profile and build (`aarch64-linux release`).
    pub profile: String,
    /// The expected lines (the hot path).
    pub expected: Vec<String>,
    /// The executed lines of the probe's listing.
    pub executed: Vec<String>,
}

impl fmt::Display for PathMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} on {}: the listing says {} instructions, one call executed {}",
            self.probe,
            self.profile,
            self.expected.len(),
            self.executed.len()
        )?;
        let width = self
            .expected
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(8);
        writeln!(f, "  {:<width$} | executed", "expected")?;
        for k in 0..self.expected.len().max(self.executed.len()) {
            let e = self.expected.get(k).map_or("", String::as_str);
            let x = self.executed.get(k).map_or("", String::as_str);
            let mark = if e == x { ' ' } else { '≠' };
            writeln!(f, "{mark} {e:<width$} | {x}")?;
        }
        Ok(())
    }
}

/// Checks that one call executed exactly the `expected` lines of the probe's
/// listing (the hot path's lines; its helpers' instructions are counted
/// apart, in [`Executed::helpers`]).
pub fn compare_path(expected: &[String], executed: &Executed) -> Result<(), PathMismatch> {
    if expected == executed.listing_path.as_slice() {
        Ok(())
    } else {
        Err(PathMismatch {
            probe: executed.probe.clone(),
            profile: format!("{} {}", executed.profile, executed.build),
            expected: expected.to_vec(),
            executed: executed.listing_path.clone(),
        })
    }
}

/// The listings of the driver's own probes (the executable that was
/// measured), as the linked view extracts them.
pub fn driver_listings(profile: &Profile, driver: &Driver, probes: &[Probe]) -> ProbeListings {
    let out = linked::LinkedOutput {
        profile: profile.name.clone(),
        triple: profile.triple.clone(),
        lto: driver.lto,
        toolchain: String::new(),
        rustc_version: String::new(),
        flags: driver_flags(profile),
        executable: driver.executable.clone(),
        // GOT slots named as the linked view names them (a call to a cold
        // slow path through the GOT is then known to be cold); the executed
        // lines are read with the same relocations, so the two agree.
        dump: objdump::Dump {
            command: String::new(),
            ..driver.dump.clone()
        },
    };
    linked::extract_linked(profile, &out, probes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISASM: &str = "\
0000000000001000 <probe_a>:
    1000:\tstp\tx29, x30, [sp, #-16]!
    1004:\tbl\t2000 <__aarch64_ldadd8_relax>
    1008:\tb.hs\t1014 <probe_a+0x14>
    100c:\tldp\tx29, x30, [sp], #16
    1010:\tret
    1014:\tbl\t3000 <cold>
0000000000002000 <__aarch64_ldadd8_relax>:
    2000:\tldadd\tx0, x0, [x1]
    2004:\tret
0000000000003000 <cold>:
    3000:\tret
";
    const SYMTAB: &str = "\
0000000000001000 g     F .text\t0000000000000018              probe_a
0000000000002000 l     F .text\t0000000000000008              __aarch64_ldadd8_relax
0000000000003000 l     F .text\t0000000000000004              cold
";

    const BASE: u64 = 0x55_0000_0000;

    /// The code map of one object, loaded `bias` bytes from its addresses.
    fn code_map(disassembly: &str, symbols: &str, bias: u64, arch: Arch) -> CodeMap {
        let object = Object {
            disassembly,
            symbols,
            bias: bias as i64,
            only: None,
        };
        CodeMap::new(&[object], &arch)
    }

    fn map() -> CodeMap {
        code_map(DISASM, SYMTAB, BASE, Arch::Aarch64)
    }

    fn run(pcs: &[u64]) -> Vec<u64> {
        pcs.iter().map(|p| p + BASE).collect()
    }

    fn trace(pcs: &[u64]) -> String {
        pcs.iter()
            .map(|p| format!("Trace 0: 0x7f00 [0000000000000000/{p:016x}/00000001/00000201] \n"))
            .collect()
    }

    #[test]
    fn callees_are_traced_and_windows_count_them() {
        let map = map();
        assert_eq!(
            map.function_names(),
            ["probe_a", "__aarch64_ldadd8_relax", "cold"]
        );
        assert_eq!(map.dfilter(), "0x5500001000+0x2004");
        let call = [0x1000, 0x1004, 0x2000, 0x2004, 0x1008, 0x100c, 0x1010];
        // A helper run by the set-up between calls: outside every window.
        let setup = [0x2000, 0x2004];
        let mut pcs = Vec::new();
        for _ in 0..3 {
            pcs.extend(call);
            pcs.extend(setup);
        }
        let pcs = parse_trace(&trace(&run(&pcs)));
        let ws = windows(&map, &pcs, &["probe_a"]);
        assert_eq!(ws.len(), 3);
        assert!(
            ws.iter()
                .all(|w| w.returned && w.addrs.len() == 7 && w.untraced_calls == 0)
        );
        let s = summarize(&map, &ws, 1, DISASM, SYMTAB, "", "p", "release");
        let e = &s["probe_a"];
        assert_eq!((e.instructions, e.in_probe, e.calls), (7, 5, 2));
        assert_eq!(
            e.helpers,
            [HelperCount {
                function: "__aarch64_ldadd8_relax".into(),
                instructions: 2
            }]
        );
        assert_eq!(e.sequence[2], "__aarch64_ldadd8_relax: ldadd x0, x0, [x1]");
        assert_eq!(e.sequence[1], "bl <__aarch64_ldadd8_relax>");
    }

    #[test]
    fn a_call_into_untraced_code_is_counted() {
        // The helper's instructions are missing: the call comes back with no
        // return executed in between.
        let ws = windows(
            &map(),
            &run(&[0x1000, 0x1004, 0x1008, 0x100c, 0x1010]),
            &["probe_a"],
        );
        assert_eq!(ws[0].untraced_calls, 1);
        let ws = windows(
            &map(),
            &run(&[0x1000, 0x1004, 0x2000, 0x2004, 0x1008, 0x100c, 0x1010]),
            &["probe_a"],
        );
        assert_eq!(ws[0].untraced_calls, 0);
    }

    #[test]
    fn a_conditional_return_closes_the_window_only_when_taken() {
        const ARM: &str = "\
00001000 <probe_b>:
    1000:\tcmp\tr0, #1
    1004:\tpopcc\t{r4, pc}
    1008:\tmov\tr0, #0
    100c:\tpop\t{r4, pc}
00002000 <main>:
    2000:\tbl\t1000 <probe_b>
    2004:\tnop
";
        const SYMS: &str = "\
00001000 g     F .text\t00000010 probe_b
00002000 g     F .text\t00000008 main
";
        let map = code_map(ARM, SYMS, 0, Arch::Arm);
        // Taken: the window is the two instructions, `main` is outside.
        let ws = windows(&map, &[0x2000, 0x1000, 0x1004, 0x2004], &["probe_b"]);
        assert_eq!(ws.len(), 1);
        assert_eq!(ws[0].addrs, [0x1000, 0x1004]);
        assert!(ws[0].returned);
        // Not taken: it falls through to the unconditional return.
        let ws = windows(
            &map,
            &[0x1000, 0x1004, 0x1008, 0x100c, 0x2004],
            &["probe_b"],
        );
        assert_eq!(ws[0].addrs, [0x1000, 0x1004, 0x1008, 0x100c]);
    }

    #[test]
    fn plt_stubs_are_functions_of_the_code_map() {
        const DIS: &str = "\
000022e0 <__tls_get_addr@plt>:
    22e0:\tadd\tip, pc, #0, 12
    22e4:\tldr\tpc, [ip, #3044]!\t@ 0xbe4
000022ec <mmap64@plt>:
    22ec:\tadd\tip, pc, #0, 12
00003000 <probe_c>:
    3000:\tbl\t22e0 <__tls_get_addr@plt>
    3004:\tbx\tlr
";
        const SYMS: &str = "00003000 g     F .text\t00000008 probe_c\n";
        let map = code_map(DIS, SYMS, 0, Arch::Arm);
        assert_eq!(
            map.function_names(),
            ["__tls_get_addr@plt", "mmap64@plt", "probe_c"]
        );
        // The stub jumps into the (untraced) loader and comes back.
        let ws = windows(&map, &[0x3000, 0x22e0, 0x22e4, 0x3004], &["probe_c"]);
        assert_eq!(ws[0].untraced_calls, 1);
        assert_eq!(
            objdump::function_symbols(
                "0000c774 g    DF .text\t00000040  GLIBC_2.4   __tls_get_addr\n"
            ),
            BTreeMap::from([("__tls_get_addr".to_string(), (0xc774, 0x40))])
        );
    }

    #[test]
    fn the_mode_wins_and_min_max_show_the_rest() {
        let map = map();
        let fast = [0x1000u64, 0x1004, 0x2000, 0x2004, 0x1008, 0x100c, 0x1010];
        let slow = [
            0x1000u64, 0x1004, 0x2000, 0x2004, 0x1008, 0x1014, 0x3000, 0x100c, 0x1010,
        ];
        let mut pcs = Vec::new();
        for k in 0..5 {
            pcs.extend(if k == 2 { &slow[..] } else { &fast[..] });
        }
        let ws = windows(&map, &run(&pcs), &["probe_a"]);
        let e = &summarize(&map, &ws, 0, DISASM, SYMTAB, "", "p", "release")["probe_a"];
        assert_eq!((e.instructions, e.min, e.max, e.calls), (7, 7, 9, 5));
    }

    #[test]
    fn a_mismatch_names_the_probe_and_shows_both_paths() {
        let executed = Executed {
            probe: "probe_a".into(),
            profile: "aarch64-linux".into(),
            build: "release".into(),
            instructions: 3,
            in_probe: 3,
            helpers: vec![],
            min: 3,
            max: 3,
            calls: 1,
            untraced_calls: 0,
            listing_path: vec!["mov x0, x1".into(), "add x0, x0, #1".into(), "ret".into()],
            sequence: vec![],
        };
        let same: Vec<String> = executed.listing_path.clone();
        assert!(compare_path(&same, &executed).is_ok());
        let expected = vec!["mov x0, x1".to_string(), "ret".to_string()];
        let err = compare_path(&expected, &executed).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("probe_a on aarch64-linux release: the listing says 2"));
        assert!(text.contains("≠ ret"), "{text}");
        assert!(text.contains("| add x0, x0, #1"), "{text}");
    }
}
