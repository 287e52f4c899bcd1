//! llvm-mca's prediction per CPU: the cycles a block of instructions costs
//! when run in a loop, and what bounds it.
//!
//! [`analyze`] feeds a list of instruction lines (a probe's hot path,
//! `cfg::HotPath::lines`: the report gives the `.s` listing's, which
//! one call executes line for line where the fast case is its hot path) to
//! `llvm-mca -mtriple=<triple> -mcpu=<cpu> -iterations=100
//! -bottleneck-analysis` and reads back:
//!
//! - `block_rthroughput`: llvm-mca's *Block RThroughput*, the reciprocal
//!   throughput of the block from the resources and the dispatch width
//!   alone: the predicted cycles per call when calls overlap freely;
//! - `cycles_per_iteration`: the simulated *Total Cycles* over the
//!   iterations, which adds the loop-carried dependencies;
//! - the resource under most pressure and the bottleneck analysis (resource
//!   pressure or register/memory dependencies, with their share of cycles).
//!
//! The CPUs per architecture ([`cpus`]): x86-64 `znver4` and `alderlake`,
//! arm64 `neoverse-v2` and `apple-m4`, riscv64 `sifive-p670`, armv7
//! `cortex-a15`. LLVM's Apple models (`apple-m4` included) schedule like an
//! old core (Cyclone): their figure is indicative. llvm-mca does not model
//! calls (it assumes a fixed latency and ignores the callee) nor what an
//! atomic read-modify-write costs in the memory system (a `lock xadd` is a
//! few cycles of ALU and load/store ports to it, not the cache-line
//! ownership the write-up is about): it predicts the core's side only.
//!
//! The input is made assemblable: Rust paths in operands (demangled callee
//! names) become `sym`; a line llvm-mca still refuses is dropped and listed
//! in [`Mca::dropped`], never silently.
//!
//! llvm-mca comes with LLVM (Debian's `llvm-22`, Homebrew's `llvm`);
//! [`llvm_mca`] asks [`tools`](crate::tools), which takes `$LLVM_MCA`, the
//! compiler's LLVM major, else the newest found.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, bail};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::profile::Arch;

/// llvm-mca's iterations of the block.
pub const ITERATIONS: u32 = 100;

/// The CPU models per architecture, in report order.
pub fn cpus(arch: &Arch) -> &'static [&'static str] {
    match arch {
        Arch::X86_64 => &["znver4", "alderlake"],
        Arch::Aarch64 => &["neoverse-v2", "apple-m4"],
        Arch::Riscv64 => &["sifive-p670"],
        Arch::Arm => &["cortex-a15"],
        Arch::Other(_) => &[],
    }
}

/// Whether LLVM's model of `cpu` is known to be approximate (the Apple
/// cores are scheduled with the Cyclone model).
pub fn indicative(cpu: &str) -> bool {
    cpu.starts_with("apple-")
}

/// One llvm-mca run (`probes[].results[].mca[]` in the report; the
/// triple, dispatch width and top resource are left out there and in the
/// cache).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mca {
    /// The CPU model.
    pub cpu: String,
    /// Block RThroughput: predicted cycles per call, resources and dispatch
    /// width only.
    pub block_rthroughput: f64,
    /// Simulated cycles per iteration (loop-carried dependencies included).
    pub cycles_per_iteration: f64,
    /// Micro-ops of the block.
    pub uops: f64,
    /// Instructions of the block (after dropping refused lines).
    pub instructions: usize,
    /// What bounds the block: `dispatch width`, `resource <name>`, and the
    /// bottleneck analysis's line (`resource pressure 25%`, `register
    /// dependencies 45%`) when it found one.
    pub bottleneck: String,
    /// Lines llvm-mca could not assemble, dropped from the block.
    pub dropped: Vec<String>,
    /// Instructions the CPU's model has no scheduling information for:
    /// assembled but left out of the figures (llvm-mca's
    /// `-skip-unsupported-instructions=lack-sched`).
    pub skipped: Vec<String>,
    /// Whether the CPU's model is indicative only (Apple).
    pub indicative: bool,
    /// The triple given to llvm-mca.
    #[serde(skip)]
    pub triple: String,
    /// The model's dispatch width.
    #[serde(skip)]
    pub dispatch_width: u32,
    /// The resource under most pressure per iteration, and that pressure
    /// (cycles).
    #[serde(skip)]
    pub top_resource: Option<(String, f64)>,
}

impl Mca {
    /// `3.70 cycles/call on znver4 (resource Zn4ALU0)`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:.2} cycles/call on {}{} ({})",
            self.block_rthroughput,
            self.cpu,
            if self.indicative { "*" } else { "" },
            self.bottleneck
        );
        if !self.skipped.is_empty() {
            s.push_str(&format!("; skipped: {}", self.skipped.join(", ")));
        }
        if !self.dropped.is_empty() {
            s.push_str(&format!("; dropped: {}", self.dropped.join(", ")));
        }
        s
    }
}

/// The llvm-mca to run, as [`tools`](crate::tools) finds it: `$LLVM_MCA`,
/// else the one of the compiler's LLVM major (`llvm-mca-NN`), else the
/// newest found (`llvm-mca`, `llvm-mca-NN`, Homebrew's). `None` when none
/// is installed.
pub fn llvm_mca() -> Option<String> {
    crate::tools::find(&crate::tools::Tool::LlvmMca)
        .ok()
        .map(|f| f.program())
}

/// The triple and extra flags llvm-mca needs for a Rust target triple.
pub fn mca_target(triple: &str, arch: &Arch) -> (String, Vec<String>) {
    match arch {
        // `riscv64gc` is not an LLVM arch name; the CPU brings its
        // extensions, `+c` and friends are the target's baseline anyway.
        Arch::Riscv64 => (
            triple.replacen("riscv64gc", "riscv64", 1),
            vec!["-mattr=+m,+a,+f,+d,+c".to_string()],
        ),
        Arch::X86_64 => (
            triple.to_string(),
            vec!["-x86-asm-syntax=intel".to_string()],
        ),
        _ => (triple.to_string(), Vec::new()),
    }
}

fn rust_path_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[A-Za-z_<][\w<>{}#\[\]&*;$]*::[^\s,]*").expect("regex"))
}

/// The block as llvm-mca input: Intel syntax announced on x86, Rust paths
/// replaced by `sym`, objdump's `<sym+0x..>` comments dropped.
pub fn assembly(lines: &[String], arch: &Arch) -> String {
    static COMMENT: OnceLock<Regex> = OnceLock::new();
    let comment = COMMENT.get_or_init(|| Regex::new(r"\s*<[^>]*>").expect("regex"));
    let mut s = String::new();
    if *arch == Arch::X86_64 {
        s.push_str(".intel_syntax noprefix\n");
    }
    for l in lines {
        let l = rust_path_re().replace_all(l, |c: &regex::Captures<'_>| {
            // The path ends where the operand does: closing brackets it did
            // not open (`[x9, :gottprel_lo12:a::B]`, `%tls_ie_pcrel_hi(a::B)`)
            // stay.
            let m = &c[0];
            let mut end = m.len();
            while end > 0 {
                let head = &m[..end];
                let unbalanced = |open: char, close: char| {
                    head.ends_with(close)
                        && head.matches(close).count() > head.matches(open).count()
                };
                if unbalanced('[', ']') || unbalanced('(', ')') {
                    end -= 1;
                } else {
                    break;
                }
            }
            format!("sym{}", &m[end..])
        });
        let l = comment.replace_all(&l, "");
        s.push_str(l.trim());
        s.push('\n');
    }
    s
}

/// Runs llvm-mca on `lines` for `cpu`, dropping (and listing) lines it
/// refuses to assemble.
pub fn analyze(lines: &[String], triple: &str, arch: &Arch, cpu: &str) -> anyhow::Result<Mca> {
    let mca = llvm_mca().with_context(|| {
        format!(
            "llvm-mca is not installed: {} (or set LLVM_MCA)",
            crate::tools::Tool::LlvmMca.install()
        )
    })?;
    let (mtriple, extra) = mca_target(triple, arch);
    let mut kept: Vec<String> = lines.to_vec();
    let mut dropped = Vec::new();
    let header = usize::from(*arch == Arch::X86_64);
    let error_re = Regex::new(r"<stdin>:(\d+):\d+: error").expect("regex");
    for _ in 0..=lines.len() {
        if kept.is_empty() {
            bail!("llvm-mca ({cpu}) refused every line: {dropped:?}");
        }
        let input = assembly(&kept, arch);
        let mut child = Command::new(&mca)
            .arg(format!("-mtriple={mtriple}"))
            .arg(format!("-mcpu={cpu}"))
            .args(&extra)
            .arg(format!("-iterations={ITERATIONS}"))
            .arg("-bottleneck-analysis")
            // Instructions a model has no scheduling for (LLVM 22's
            // neoverse-v2 and apple-m4 lack LSE's `ldadd`, cortex-a15 the
            // register-list `push`/`pop`) are skipped and listed in
            // `skipped`, not an error.
            .arg("-skip-unsupported-instructions=lack-sched")
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {mca}"))?;
        child
            .stdin
            .take()
            .context("llvm-mca's stdin")?
            .write_all(input.as_bytes())?;
        let out = child.wait_with_output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            let mut r = parse(&String::from_utf8_lossy(&out.stdout))
                .with_context(|| format!("llvm-mca ({cpu}) output not understood"))?;
            r.cpu = cpu.to_string();
            r.triple = mtriple.clone();
            r.dropped = dropped;
            r.skipped = skipped_instructions(&stderr);
            r.indicative = indicative(cpu);
            return Ok(r);
        }
        // Drop the first refused line and try again.
        let line = error_re
            .captures(&stderr)
            .and_then(|c| c[1].parse::<usize>().ok())
            .filter(|&n| n > header && n - header <= kept.len())
            .with_context(|| format!("llvm-mca -mcpu={cpu} failed: {stderr}"))?;
        dropped.push(kept.remove(line - header - 1));
    }
    bail!("llvm-mca ({cpu}) kept refusing lines: {dropped:?}")
}

fn number<T: std::str::FromStr>(text: &str, key: &str) -> Option<T> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads llvm-mca's text report (summary, bottleneck analysis, resource
/// pressure per iteration).
pub fn parse(text: &str) -> anyhow::Result<Mca> {
    let iterations: f64 = number(text, "Iterations:").context("no Iterations:")?;
    let total_insns: f64 = number(text, "Instructions:").context("no Instructions:")?;
    let cycles: f64 = number(text, "Total Cycles:").context("no Total Cycles:")?;
    let uops: f64 = number(text, "Total uOps:").context("no Total uOps:")?;
    let width: u32 = number(text, "Dispatch Width:").context("no Dispatch Width:")?;
    let rthroughput: f64 = number(text, "Block RThroughput:").context("no Block RThroughput:")?;

    // Resource names by index, then the per-iteration pressure row.
    let mut names: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines();
    for l in lines.by_ref() {
        if l.starts_with("Resources:") {
            break;
        }
    }
    for l in lines.by_ref() {
        let t = l.trim();
        if t.is_empty() {
            break;
        }
        if let Some((idx, name)) = t.split_once('-') {
            names.push((idx.trim().to_string(), name.trim().to_string()));
        }
    }
    let mut top: Option<(String, f64)> = None;
    for l in lines.by_ref() {
        if l.starts_with("Resource pressure per iteration:") {
            let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
            let values: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
            for (h, v) in header.iter().zip(&values) {
                let Ok(v) = v.parse::<f64>() else { continue };
                let idx = h.trim_matches(['[', ']']);
                let name = names
                    .iter()
                    .find(|(i, _)| i.trim_matches(['[', ']']) == idx)
                    .map_or(idx.to_string(), |(_, n)| n.clone());
                if top.as_ref().is_none_or(|(_, best)| v > *best) {
                    top = Some((name, v));
                }
            }
            break;
        }
    }

    let per_iter_uops = uops / iterations;
    let dispatch_bound = per_iter_uops / f64::from(width.max(1));
    let mut bottleneck = match &top {
        Some((name, p)) if *p > dispatch_bound + 1e-9 => format!("resource {name}"),
        _ => "dispatch width".to_string(),
    };
    if text.contains("No resource or data dependency bottlenecks discovered") {
        bottleneck.push_str("; no resource or dependency bottleneck found");
    } else {
        let share = |key: &str| -> Option<f64> {
            let l = text.lines().find(|l| l.trim_start().starts_with(key))?;
            let inner = l.split('[').nth(1)?.split('%').next()?;
            inner.trim().parse().ok()
        };
        let mut parts = Vec::new();
        for (key, label) in [
            ("Resource Pressure", "resource pressure"),
            ("- Register Dependencies", "register dependencies"),
            ("- Memory Dependencies", "memory dependencies"),
        ] {
            if let Some(s) = share(key).filter(|s| *s > 0.0) {
                parts.push((s, label));
            }
        }
        parts.sort_by(|a, b| b.0.total_cmp(&a.0));
        if let Some((s, label)) = parts.first() {
            bottleneck.push_str(&format!("; {label} {s:.0}% of cycles"));
        }
    }
    Ok(Mca {
        cpu: String::new(),
        triple: String::new(),
        instructions: (total_insns / iterations).round() as usize,
        uops: per_iter_uops,
        dispatch_width: width,
        block_rthroughput: rthroughput,
        cycles_per_iteration: cycles / iterations,
        top_resource: top,
        bottleneck,
        dropped: Vec::new(),
        skipped: Vec::new(),
        indicative: false,
    })
}

/// The instructions llvm-mca says it skipped (`note: instruction: \t...`
/// after a warning about an unsupported instruction).
fn skipped_instructions(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_unsupported = false;
    for l in stderr.lines() {
        if l.starts_with("warning:") || l.starts_with("error:") {
            after_unsupported =
                l.contains("unsupported instruction") || l.contains("scheduling class");
        } else if let Some(i) = l.strip_prefix("note: instruction:")
            && after_unsupported
        {
            out.push(i.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Tool, need};

    const REPORT: &str = "\
Iterations:        100
Instructions:      600
Total Cycles:      344
Total uOps:        600

Dispatch Width:    6
uOps Per Cycle:    1.74
IPC:               1.74
Block RThroughput: 1.5


Cycles with backend pressure increase [ 45.93% ]
Throughput Bottlenecks: 
  Resource Pressure       [ 25.29% ]
  - Zn3ALU0  [ 25.29% ]
  Data Dependencies:      [ 45.06% ]
  - Register Dependencies [ 45.06% ]
  - Memory Dependencies   [ 0.00% ]

Resources:
[0]   - Zn3AGU0
[3]   - Zn3ALU0
[12.0] - Zn3FPP45
[12.1] - Zn3FPP45


Resource pressure per iteration:
[0]    [3]    [12.0] [12.1] 
1.33   1.50    -      -     

";

    #[test]
    fn the_report_is_read() {
        let m = parse(REPORT).unwrap();
        assert_eq!(m.instructions, 6);
        assert_eq!(m.dispatch_width, 6);
        assert!((m.block_rthroughput - 1.5).abs() < 1e-9);
        assert!((m.cycles_per_iteration - 3.44).abs() < 1e-9);
        assert_eq!(m.top_resource, Some(("Zn3ALU0".to_string(), 1.5)));
        assert_eq!(
            m.bottleneck,
            "resource Zn3ALU0; register dependencies 45% of cycles"
        );
    }

    #[test]
    fn rust_paths_become_symbols() {
        let lines = [
            "bl allocasm::packed::PackedArena::alloc_slow",
            "call std::thread::local::LocalKey<T>::with",
            "bl 48d80 <__aarch64_ldadd8_relax>",
            "ldr x9, [x9, :gottprel_lo12:allocasm::thread_cursor::CURSORS::{constant}::{closure}::VAL]",
            "auipc a3, %tls_ie_pcrel_hi(allocasm::thread_cursor::CURSORS::{closure}::VAL)",
            "call <[T]>::to_vec",
        ]
        .map(String::from);
        assert_eq!(
            assembly(&lines, &Arch::Aarch64),
            "bl sym\ncall sym\nbl 48d80\nldr x9, [x9, :gottprel_lo12:sym]\n\
             auipc a3, %tls_ie_pcrel_hi(sym)\ncall sym\n"
        );
        assert!(assembly(&lines, &Arch::X86_64).starts_with(".intel_syntax noprefix\n"));
    }

    #[test]
    fn every_profile_arch_has_its_cpus() {
        assert_eq!(cpus(&Arch::X86_64), ["znver4", "alderlake"]);
        assert_eq!(cpus(&Arch::Aarch64), ["neoverse-v2", "apple-m4"]);
        assert!(indicative("apple-m4") && !indicative("neoverse-v2"));
    }

    /// Needs llvm-mca 22 (scripts/setup installs it); skipped where it is
    /// missing, as the cross steps skip without their toolchains.
    #[test]
    fn a_locked_add_is_predicted_on_znver4() {
        if need("a_locked_add_is_predicted_on_znver4", &Tool::LlvmMca).is_none() {
            return;
        }
        let lines = [
            "mov rax, rsi",
            "lock xadd qword ptr [rdi], rax",
            "bl allocasm::x::y",
            "add rax, 16",
            "ret",
        ]
        .map(String::from);
        let m = analyze(&lines, "x86_64-unknown-linux-gnu", &Arch::X86_64, "znver4").unwrap();
        // `bl` is no x86 instruction: dropped, and said so.
        assert_eq!(m.dropped, ["bl allocasm::x::y"]);
        assert_eq!(m.instructions, 4);
        assert!(m.block_rthroughput > 0.0);
        assert!(m.skipped.is_empty(), "{m:?}");
    }

    /// LLVM 22's Neoverse V2 model has no scheduling for LSE's `ldadd`: it
    /// is skipped and the result says so (the report must not present the
    /// figure as the atomic's cost).
    #[test]
    fn an_instruction_without_scheduling_is_listed_as_skipped() {
        if need(
            "an_instruction_without_scheduling_is_listed_as_skipped",
            &Tool::LlvmMca,
        )
        .is_none()
        {
            return;
        }
        let lines = ["ldadd x1, x2, [x0]", "add x0, x0, #1"].map(String::from);
        let m = analyze(
            &lines,
            "aarch64-unknown-linux-gnu",
            &Arch::Aarch64,
            "neoverse-v2",
        )
        .unwrap();
        assert_eq!(m.skipped, ["ldadd x1, x2, [x0]"]);
        assert_eq!(m.instructions, 1);
    }

    #[test]
    fn skipped_notes_are_read() {
        let stderr = "warning: found a return instruction in the input assembly sequence.\n\
            note: program counter updates are ignored.\n\
            warning: found an unsupported instruction in the input assembly sequence, skipping\n\
            note: instruction: \tldadd\tx1, x2, [x0]\n";
        assert_eq!(skipped_instructions(stderr), ["ldadd x1, x2, [x0]"]);
    }
}
