//! Profiles: one `targets/<name>.toml` per target configuration.
//!
//! A profile names a target triple and extra rustflags, says whether the
//! library's tests can run for it on the x86_64 Linux development machine,
//! and lists per-probe expectations. Adding a profile is adding a file:
//! [`Profile::load_all`] discovers every `*.toml` of the directory.
//!
//! ```toml
//! name = "aarch64-linux-lse"
//! triple = "aarch64-unknown-linux-gnu"
//! rustflags = "-C relocation-model=pie -C target-feature=+lse"
//! description = "arm64 Linux with LSE: inline ldadd"
//! run = "qemu-aarch64"            # "native" | "qemu-<arch>" | "none"
//!
//! [probe.probe_packed_alloc_relaxed]
//! has = ['^ldadd ', '^ubfx ']     # regexes (multi-line mode) the listing must match
//! lacks = ['^ldaddal ']           # regexes it must not match
//! forbid = ["call"]               # instruction classes that must be absent
//! allow_calls = ['alloc_slow']    # calls matching these are exempt from `forbid call`
//! require = []                    # instruction classes that must be present
//! no_backward_branch_before = '^cmp '   # no loop before the first line matching this
//! why = "one relaxed add, inline"
//!
//! [instructions]                   # optional: override the arch's classes
//! call = '^(bl|blr) '
//! ```
//!
//! Instruction classes (`atomic`, `atomic-rmw`, `call`, `branch`,
//! `backward-branch`) come from [`InstructionClasses::for_arch`], which a
//! profile can override with an `[instructions]` table.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use allocasm::probes::{Probe, ProbeKind};

/// The instruction set of a triple (its first component).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `x86_64-*` (listings use Intel syntax).
    X86_64,
    /// `aarch64-*` / `arm64-*`.
    Aarch64,
    /// `riscv64*`.
    Riscv64,
    /// 32-bit Arm: `arm*`, `thumb*`.
    Arm,
    /// Anything else (its profile must give `[instructions]`).
    Other(String),
}

impl Arch {
    /// The architecture of a target triple.
    pub fn from_triple(triple: &str) -> Arch {
        let first = triple.split('-').next().unwrap_or("");
        match first {
            "x86_64" => Arch::X86_64,
            "aarch64" | "arm64" | "arm64e" => Arch::Aarch64,
            a if a.starts_with("riscv64") => Arch::Riscv64,
            a if a.starts_with("arm") || a.starts_with("thumb") => Arch::Arm,
            other => Arch::Other(other.to_string()),
        }
    }

    /// The markers that start a comment in this architecture's assembly
    /// (`#` on x86, `//` on arm64 ELF/COFF and `;` on arm64 Mach-O, ...).
    pub fn comment_markers(&self, format: ObjectFormat) -> &'static [&'static str] {
        match (self, format) {
            (Arch::X86_64, _) => &["#"],
            (Arch::Aarch64, ObjectFormat::MachO) => &[";", "//"],
            (Arch::Aarch64, _) => &["//"],
            (Arch::Arm, _) => &["@"],
            (Arch::Riscv64, _) => &["#"],
            (Arch::Other(_), _) => &["#", "//", ";"],
        }
    }
}

/// The object format a triple's assembly is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectFormat {
    /// Linux and most Unixes: `.type f,@function`, `.size`, `.L` labels.
    Elf,
    /// Apple: symbols start with `_`, local labels with `L`/`l`.
    MachO,
    /// Windows: `.def f; .scl 2; .type 32; .endef`, `.seh_*`.
    Coff,
}

impl ObjectFormat {
    /// The object format of a target triple.
    pub fn from_triple(triple: &str) -> ObjectFormat {
        if triple.contains("-apple-") {
            ObjectFormat::MachO
        } else if triple.contains("-windows") || triple.contains("-uefi") {
            ObjectFormat::Coff
        } else {
            ObjectFormat::Elf
        }
    }
}

/// How the library's tests for a profile's triple run on the x86_64 Linux
/// development machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunMode {
    /// The host runs them directly.
    Native,
    /// Under qemu-user: the runner of `.cargo/config.toml` (`qemu-<arch>`).
    Qemu(String),
    /// They cannot run here (only the assembly is checked); CI runs them on
    /// a native runner.
    None,
}

impl<'de> Deserialize<'de> for RunMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "native" => Ok(RunMode::Native),
            "none" => Ok(RunMode::None),
            q if q.starts_with("qemu-") && q.len() > 5 => Ok(RunMode::Qemu(q.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected \"native\", \"none\" or \"qemu-<arch>\", found {other:?}"
            ))),
        }
    }
}

impl fmt::Display for RunMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunMode::Native => f.write_str("native"),
            RunMode::Qemu(q) => f.write_str(q),
            RunMode::None => f.write_str("none"),
        }
    }
}

/// A regex from a profile, kept with its source text for messages.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    regex: Regex,
}

impl Pattern {
    /// Compiles `source` in multi-line mode (`^`/`$` match at line ends).
    pub fn new(source: &str) -> Result<Pattern, regex::Error> {
        let regex = RegexBuilder::new(source).multi_line(true).build()?;
        Ok(Pattern {
            source: source.to_string(),
            regex,
        })
    }

    /// The pattern as written in the profile.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// The compiled regex.
    pub fn regex(&self) -> &Regex {
        &self.regex
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

/// An instruction class, as used in `forbid` / `require`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Any atomic instruction: read-modify-writes, fences, acquire loads,
    /// release stores, outline-atomics calls.
    Atomic,
    /// Atomic read-modify-writes only (`lock xadd`, `ldadd`, `cas`,
    /// `ldxr`/`stxr`, `__aarch64_ldadd8_*`, ...).
    AtomicRmw,
    /// Calls, including tail calls (a branch to a symbol outside the function).
    Call,
    /// Any branch (conditional or not) within the function.
    Branch,
    /// A branch to a label defined earlier in the function that is reachable
    /// again from that label: a loop (a cold block jumping back to the shared
    /// epilogue is not one).
    BackwardBranch,
}

impl Class {
    /// The name used in profile files.
    pub fn name(self) -> &'static str {
        match self {
            Class::Atomic => "atomic",
            Class::AtomicRmw => "atomic-rmw",
            Class::Call => "call",
            Class::Branch => "branch",
            Class::BackwardBranch => "backward-branch",
        }
    }

    fn parse(s: &str) -> Option<Class> {
        [
            Class::Atomic,
            Class::AtomicRmw,
            Class::Call,
            Class::Branch,
            Class::BackwardBranch,
        ]
        .into_iter()
        .find(|c| c.name() == s)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Regexes that classify one normalized instruction (`mnemonic operands`,
/// whitespace folded) of an architecture.
#[derive(Debug, Clone)]
pub struct InstructionClasses {
    /// Atomic read-modify-writes.
    pub atomic_rmw: Pattern,
    /// Other atomic instructions (fences, acquire/release loads and stores);
    /// [`Class::Atomic`] is this or `atomic_rmw`.
    pub atomic_other: Pattern,
    /// Call instructions (tail calls are found from `branch` separately).
    pub call: Pattern,
    /// Branch instructions whose last operand is the target.
    pub branch: Pattern,
}

impl InstructionClasses {
    /// The built-in classes of an architecture, or `None` for
    /// [`Arch::Other`] (whose profile must give `[instructions]`).
    pub fn for_arch(arch: &Arch) -> Option<InstructionClasses> {
        let (rmw, other, call, branch) = match arch {
            Arch::X86_64 => (
                // `xchg` with a memory operand is locked without the prefix.
                r"^(lock\b|xchg\b.*\[|xadd\b|cmpxchg)",
                r"^(mfence|sfence)\b",
                r"^call\b",
                r"^j[a-z]+\b",
            ),
            Arch::Aarch64 => (
                concat!(
                    r"^(ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin|swp|casp?)[a-z]*\b",
                    r"|^(ld|st)[al]?x[rp][bh]?\b",
                    r"|^st(add|clr|eor|set|smax|smin|umax|umin)l?[bh]?\b",
                    r"|^bl __aarch64_(ldadd|ldclr|ldeor|ldset|swp|cas)",
                ),
                r"^(dmb|dsb|ldar[bh]?|ldapr[bh]?|stlr[bh]?)\b",
                r"^(bl|blr|blraa|blrab)\b",
                r"^(b|b\.[a-z]{2}|b(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|cbn?z|tbn?z|br)\b",
            ),
            Arch::Riscv64 => (
                // `amoadd.d` (one instruction, A extension), `lr.d`/`sc.d`
                // (a retry loop), with any `.aq`/`.rl`/`.aqrl` suffix.
                r"^(amo[a-z]+|lr|sc)\.",
                r"^fence\b",
                // `tail` is the assembler's tail-call pseudo-instruction.
                r"^(call|tail|jal|jalr)\b",
                r"^(j|jr|beqz?|bnez?|bltz?|bgez?|blez|bgtz|bltu|bgeu|bgt|ble|bgtu|bleu)\b",
            ),
            Arch::Arm => (
                // `ldrexd`/`strexd` for 64 bits (a retry loop: 32-bit Arm has
                // no single-instruction atomic add), ARMv8's `ldaex`/`stlex`
                // forms, and the libgcc/compiler-rt helpers.
                r"^(ldrex|strex|ldaex|stlex)[a-z]*\b|^(bl|blx) __(sync|atomic)_",
                r"^(dmb|dsb)\b",
                r"^(bl|blx)\b",
                r"^(b|bx|b(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|cbn?z)\b",
            ),
            Arch::Other(_) => return None,
        };
        let p = |s: &str| Pattern::new(s).expect("built-in instruction class regex");
        Some(InstructionClasses {
            atomic_rmw: p(rmw),
            atomic_other: p(other),
            call: p(call),
            branch: p(branch),
        })
    }
}

/// The expectations of one probe on one profile.
#[derive(Debug, Clone, Default)]
pub struct ProbeExpect {
    /// Patterns the normalized listing must match.
    pub has: Vec<Pattern>,
    /// Patterns it must not match.
    pub lacks: Vec<Pattern>,
    /// Instruction classes that must be absent.
    pub forbid: Vec<Class>,
    /// Calls matching one of these patterns (the probe's own cold slow
    /// paths, an outline-atomics helper) do not count for `forbid call`, so
    /// the rule reads "no call on the fast path".
    pub allow_calls: Vec<Pattern>,
    /// Instruction classes that must be present.
    pub require: Vec<Class>,
    /// No backward branch (no loop) before the first instruction matching
    /// this pattern (the pattern itself must match an instruction).
    pub no_backward_branch_before: Option<Pattern>,
    /// Why: shown with failures and in reports.
    pub why: Option<String>,
}

/// One `targets/*.toml`.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The profile's name (unique; snapshots live in `snapshots/<name>/`).
    pub name: String,
    /// The target triple.
    pub triple: String,
    /// Extra rustflags, one per element (the file's string split on
    /// whitespace).
    pub rustflags: Vec<String>,
    /// One line: what this profile models.
    pub description: String,
    /// How its tests run on the development machine.
    pub run: RunMode,
    /// Per-probe expectations, by probe name.
    pub expect: BTreeMap<String, ProbeExpect>,
    /// The classes of instructions for its architecture (built-in, or the
    /// file's `[instructions]` overrides).
    pub classes: InstructionClasses,
    /// The file it was loaded from.
    pub path: PathBuf,
    /// The `[linked]` table: present when the profile also has a linked
    /// view (its probes disassembled from a linked executable, see
    /// [`crate::codegen::linked`]).
    pub linked: Option<LinkedConfig>,
}

/// A profile's `[linked]` table.
///
/// ```toml
/// [linked]
/// rustflags = ""                       # for the whole executable build (all crates)
/// objdump = "riscv64-linux-gnu-objdump"   # optional: the disassembler
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkedConfig {
    /// Extra rustflags for every crate of the executable's build, split on
    /// whitespace (the `.s` view's `relocation-model=pie` is not needed:
    /// an executable is pie already).
    #[serde(default)]
    pub rustflags: String,
    /// The disassembler; by default `<gnu-triple>-objdump` (Debian's
    /// `binutils-<triple>`, which the cross gcc packages bring), or the
    /// host's `objdump` for the host's own architecture.
    #[serde(default)]
    pub objdump: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    triple: String,
    #[serde(default)]
    rustflags: String,
    description: String,
    run: RunMode,
    #[serde(default)]
    probe: BTreeMap<String, RawExpect>,
    #[serde(default)]
    instructions: Option<RawClasses>,
    #[serde(default)]
    linked: Option<LinkedConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    has: Vec<String>,
    #[serde(default)]
    lacks: Vec<String>,
    #[serde(default)]
    forbid: Vec<String>,
    #[serde(default)]
    allow_calls: Vec<String>,
    #[serde(default)]
    require: Vec<String>,
    #[serde(default)]
    no_backward_branch_before: Option<String>,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClasses {
    atomic_rmw: Option<String>,
    atomic_other: Option<String>,
    call: Option<String>,
    branch: Option<String>,
}

/// `line:column` (1-based) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, col)
}

impl Profile {
    /// Loads one profile file.
    pub fn load(path: &Path) -> anyhow::Result<Profile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read profile {}", path.display()))?;
        Profile::parse(&text, path)
    }

    /// Parses a profile's text; `path` is used in messages and kept.
    ///
    /// Errors name the file, the line and column, and what was expected.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Profile> {
        let raw: RawProfile = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            anyhow::anyhow!(
                "{}:{line}:{col}: {}",
                path.display(),
                e.message().trim_end()
            )
        })?;
        let at = |what: &str| format!("{}: {what}", path.display());
        let pattern = |probe: &str, field: &str, s: &str| {
            Pattern::new(s).map_err(|e| {
                let offset = text.find(s).unwrap_or(0);
                let (line, col) = line_col(text, offset);
                anyhow::anyhow!(
                    "{}:{line}:{col}: probe {probe}: `{field}` pattern {s:?} is not a valid regex: {e}",
                    path.display()
                )
            })
        };
        let mut expect = BTreeMap::new();
        for (probe, r) in &raw.probe {
            let class = |s: &String| {
                Class::parse(s).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: probe {probe}: unknown instruction class {s:?} \
                         (expected atomic, atomic-rmw, call, branch or backward-branch)",
                        path.display()
                    )
                })
            };
            let e = ProbeExpect {
                has: r
                    .has
                    .iter()
                    .map(|s| pattern(probe, "has", s))
                    .collect::<Result<_, _>>()?,
                lacks: r
                    .lacks
                    .iter()
                    .map(|s| pattern(probe, "lacks", s))
                    .collect::<Result<_, _>>()?,
                forbid: r.forbid.iter().map(class).collect::<Result<_, _>>()?,
                allow_calls: r
                    .allow_calls
                    .iter()
                    .map(|s| pattern(probe, "allow_calls", s))
                    .collect::<Result<_, _>>()?,
                require: r.require.iter().map(class).collect::<Result<_, _>>()?,
                no_backward_branch_before: r
                    .no_backward_branch_before
                    .as_deref()
                    .map(|s| pattern(probe, "no_backward_branch_before", s))
                    .transpose()?,
                why: r.why.clone(),
            };
            expect.insert(probe.clone(), e);
        }
        let arch = Arch::from_triple(&raw.triple);
        let mut classes = match (InstructionClasses::for_arch(&arch), &raw.instructions) {
            (Some(c), _) => c,
            (
                None,
                Some(RawClasses {
                    atomic_rmw: Some(r),
                    atomic_other: Some(o),
                    call: Some(c),
                    branch: Some(b),
                }),
            ) => InstructionClasses {
                atomic_rmw: pattern("[instructions]", "atomic_rmw", r)?,
                atomic_other: pattern("[instructions]", "atomic_other", o)?,
                call: pattern("[instructions]", "call", c)?,
                branch: pattern("[instructions]", "branch", b)?,
            },
            (None, _) => bail!(
                "{}",
                at(&format!(
                    "architecture {arch:?} has no built-in instruction classes: give all four of \
                     [instructions] atomic_rmw, atomic_other, call, branch"
                ))
            ),
        };
        if let Some(o) = &raw.instructions {
            if let Some(s) = &o.atomic_rmw {
                classes.atomic_rmw = pattern("[instructions]", "atomic_rmw", s)?;
            }
            if let Some(s) = &o.atomic_other {
                classes.atomic_other = pattern("[instructions]", "atomic_other", s)?;
            }
            if let Some(s) = &o.call {
                classes.call = pattern("[instructions]", "call", s)?;
            }
            if let Some(s) = &o.branch {
                classes.branch = pattern("[instructions]", "branch", s)?;
            }
        }
        Ok(Profile {
            name: raw.name,
            rustflags: raw
                .rustflags
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            triple: raw.triple,
            description: raw.description,
            run: raw.run,
            expect,
            classes,
            path: path.to_path_buf(),
            linked: raw.linked,
        })
    }

    /// Loads every `*.toml` of `dir`, sorted by profile name. Profile names
    /// must be unique and match their file's stem.
    pub fn load_all(dir: &Path) -> anyhow::Result<Vec<Profile>> {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read the profiles directory {}", dir.display()))?;
        let mut profiles = Vec::new();
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "toml") {
                profiles.push(Profile::load(&path)?);
            }
        }
        profiles.sort_by(|a, b| a.name.cmp(&b.name));
        for p in &profiles {
            let stem = p.path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if stem != p.name {
                bail!(
                    "{}: name {:?} differs from the file name {stem:?}",
                    p.path.display(),
                    p.name
                );
            }
        }
        if profiles.is_empty() {
            bail!("no profiles (*.toml) in {}", dir.display());
        }
        Ok(profiles)
    }

    /// Looks a profile up by name; the error lists the known names, nearest
    /// first.
    pub fn find<'a>(profiles: &'a [Profile], name: &str) -> anyhow::Result<&'a Profile> {
        if let Some(p) = profiles.iter().find(|p| p.name == name) {
            return Ok(p);
        }
        let mut names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        names.sort_by_key(|n| edit_distance(n, name));
        bail!(
            "unknown profile {name:?}; known profiles (nearest first): {}",
            names.join(", ")
        )
    }

    /// The architecture of the triple.
    pub fn arch(&self) -> Arch {
        Arch::from_triple(&self.triple)
    }

    /// The object format of the triple.
    pub fn object_format(&self) -> ObjectFormat {
        ObjectFormat::from_triple(&self.triple)
    }

    /// The rustflags the asm build passes: the profile's own, plus Intel
    /// syntax on x86.
    pub fn build_flags(&self) -> Vec<String> {
        let mut flags = self.rustflags.clone();
        if self.arch() == Arch::X86_64 {
            flags.push("-C".into());
            flags.push("llvm-args=-x86-asm-syntax=intel".into());
        }
        flags
    }

    /// The `-C codegen-units=N` the profile sets, if any.
    pub fn codegen_units(&self) -> Option<u32> {
        let joined = self.rustflags.join(" ");
        let rest = joined.split("codegen-units=").nth(1)?;
        rest.split_whitespace().next()?.parse().ok()
    }

    /// The expectations of one probe: the file's, or none.
    pub fn expect_for(&self, probe: &str) -> Option<&ProbeExpect> {
        self.expect.get(probe)
    }

    /// Checks that every `[probe.X]` table names a probe of `registry`.
    pub fn validate(&self, registry: &[Probe]) -> anyhow::Result<()> {
        for name in self.expect.keys() {
            if !registry.iter().any(|p| p.name == name) {
                let mut names: Vec<&str> = registry.iter().map(|p| p.name).collect();
                names.sort_by_key(|n| edit_distance(n, name));
                bail!(
                    "{}: [probe.{name}] names no probe of the registry; nearest: {}",
                    self.path.display(),
                    names.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(())
    }

    /// Suite-wide rules for a probe's kind: single-threaded probes forbid
    /// atomics and calls on every profile.
    pub fn suite_forbid(kind: ProbeKind) -> &'static [Class] {
        match kind {
            ProbeKind::SingleThreaded => &[Class::Atomic, Class::Call],
            ProbeKind::Concurrent => &[],
        }
    }
}

/// Levenshtein distance, for "did you mean" lists.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
