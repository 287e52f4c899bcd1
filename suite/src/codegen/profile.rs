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
//! calls = ['::alloc_slow$']       # the scope's callees, in order (lifts the kind's `forbid call`)
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    /// Under qemu-user (`qemu-<arch>`, as `scripts/cross-env` sets it up).
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
    /// epilogue is not one). `loop` is another name for it; in the `hot`
    /// scope it is a back edge between blocks of the hot path.
    BackwardBranch,
    /// A conditional branch (`jne`, `b.hs`, `cbz`, `bne`, `bnez`, a
    /// predicated return).
    CondBranch,
    /// A load or store relative to the stack or frame pointer (`push`/`pop`
    /// included), but for the frame record (`push rbp`/`pop rbp`) of a
    /// profile with `keeps_frame_pointers`, which is the target's.
    Stack,
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
            Class::CondBranch => "cond-branch",
            Class::Stack => "stack",
        }
    }

    /// Every class.
    pub const ALL: [Class; 7] = [
        Class::Atomic,
        Class::AtomicRmw,
        Class::Call,
        Class::Branch,
        Class::BackwardBranch,
        Class::CondBranch,
        Class::Stack,
    ];

    fn parse(s: &str) -> Option<Class> {
        if s == "loop" {
            return Some(Class::BackwardBranch);
        }
        Class::ALL.into_iter().find(|c| c.name() == s)
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

/// Where a rule looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// The hot path only ([`crate::codegen::cfg`]): entry to return through
    /// non-cold blocks.
    Hot,
    /// Every instruction of the function, cold blocks included.
    Function,
}

impl Scope {
    /// `hot` / `function`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Hot => "hot",
            Scope::Function => "function",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one step of a `check` sequence (or a count) matches on a line.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// A regex against the instruction's text.
    Pattern(Pattern),
    /// An instruction class, written `@atomic-rmw`, `@call`, `@cond-branch`,
    /// `@backward-branch`, `@stack`, ... in a sequence.
    Class(Class),
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matcher::Pattern(p) => write!(f, "{p}"),
            Matcher::Class(c) => write!(f, "@{c}"),
        }
    }
}

/// One step of an ordered `check` sequence (FileCheck's CHECK, CHECK-NEXT,
/// CHECK-NOT).
#[derive(Debug, Clone)]
pub enum Step {
    /// A later line matches (after the previous match).
    Check(Matcher),
    /// The very next instruction after the previous match matches.
    Next(Matcher),
    /// No line after the previous match, up to and including the next
    /// step's match, matches (to the end of the scope when it is the last
    /// step). Including the next match differs from FileCheck on purpose:
    /// `['@atomic-rmw', { not = '@loop' }, '@cond-branch']` must fail when the
    /// first conditional branch after the atomic is itself a retry branch.
    Not(Matcher),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Check(m) => write!(f, "{m}"),
            Step::Next(m) => write!(f, "next {m}"),
            Step::Not(m) => write!(f, "not {m}"),
        }
    }
}

/// One rule: checks over one scope.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Where it looks.
    pub scope: Scope,
    /// Where it was written: `""` for the probe's own table,
    /// `suite: concurrent` for `targets/suite.toml`'s `[kind.concurrent]`,
    /// `profile: concurrent` for the profile's `[kind.concurrent]`.
    pub origin: String,
    /// Patterns some line of the scope must match.
    pub has: Vec<Pattern>,
    /// Patterns no line of the scope may match.
    pub lacks: Vec<Pattern>,
    /// Classes no line of the scope may belong to.
    pub forbid: Vec<Class>,
    /// Classes some line of the scope must belong to.
    pub require: Vec<Class>,
    /// An ordered sequence (empty: none).
    pub check: Vec<Step>,
    /// Exact counts of classes in the scope (`loop` counts loops).
    pub count: BTreeMap<Class, usize>,
    /// The callees of the scope, in order, each matching its pattern
    /// (`None`: not checked).
    pub calls: Option<Vec<Pattern>>,
}

impl Rule {
    fn is_empty(&self) -> bool {
        self.has.is_empty()
            && self.lacks.is_empty()
            && self.forbid.is_empty()
            && self.require.is_empty()
            && self.check.is_empty()
            && self.count.is_empty()
            && self.calls.is_none()
    }
}

/// The expectations of one probe on one profile (its `[probe.X]` table).
#[derive(Debug, Clone, Default)]
pub struct ProbeExpect {
    /// Its rules: the table's own (scope `hot` unless it says `scope`), then
    /// each `[[probe.X.rule]]`.
    pub rules: Vec<Rule>,
    /// At most this many instructions on the hot path.
    pub hot_max: Option<usize>,
    /// At most this many instructions from the entry through the fit check
    /// (the first conditional branch after the first atomic RMW).
    pub to_fit_check_max: Option<usize>,
    /// Why: shown with failures and in reports.
    pub why: Option<String>,
    /// `follow = true`: the hot-scoped rules and budgets see the hot path
    /// through the calls into the build ([`crate::codegen::follow`]), not
    /// the first frame alone.
    pub follow: bool,
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
    /// Expectations of any function of the build (`[function."path"]`
    /// tables), by the name as written: a part of its demangled path, as
    /// `allocasm show` takes it ([`crate::codegen::functions`]). No kind
    /// defaults apply.
    pub function_expect: BTreeMap<String, ProbeExpect>,
    /// Defaults per probe kind (`single-threaded`, `concurrent`): the suite's
    /// (`targets/suite.toml`) then the profile's own `[kind.X]`, applied to
    /// every probe of that kind; a probe's own `count` of a class in a scope
    /// replaces a default's count of it.
    pub kind_rules: BTreeMap<String, Vec<Rule>>,
    /// Calls that are cold slow paths where the object format does not say
    /// so (Mach-O, COFF have no `.text.unlikely`): the suite's `cold_calls`
    /// and the profile's.
    pub cold_calls: Vec<Pattern>,
    /// The classes of instructions for its architecture (built-in, or the
    /// file's `[instructions]` overrides).
    pub classes: InstructionClasses,
    /// The file it was loaded from.
    pub path: PathBuf,
    /// The `[linked]` table: present when the profile also has a linked
    /// view (its probes disassembled from a linked executable, see
    /// [`crate::codegen::linked`]).
    pub linked: Option<LinkedConfig>,
    /// The target keeps a frame pointer in every function (the file's
    /// `keeps_frame_pointers = true`; x86_64 macOS, where rustc does so even
    /// with `-C force-frame-pointers=no`): the frame record's save and
    /// restore (`push rbp` / `pop rbp`) are the target's, reported apart
    /// from the hot path's other stack accesses.
    pub keeps_frame_pointers: bool,
    /// The file's `toolchain = "1.95.0"`: the rustup toolchain this profile
    /// builds with when a command names none (its snapshots were taken with
    /// it). For a target whose standard library the pinned compiler lacks
    /// where the suite runs; `None` builds with the pinned one.
    pub toolchain: Option<String>,
}

/// A profile's `[linked]` table.
///
/// ```toml
/// [linked]
/// rustflags = ""                       # for the whole executable build (all crates)
/// objdump = "riscv64-linux-gnu-objdump"   # optional: the disassembler
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkedConfig {
    /// Extra rustflags for every crate of the executable's build, split on
    /// whitespace (the `.s` view's `relocation-model=pie` is not needed:
    /// an executable is pie already).
    pub rustflags: String,
    /// The disassembler; by default the toolchain's `llvm-objdump`, else
    /// GNU's `<gnu-triple>-objdump` (which the cross gcc packages bring) or
    /// the host's `objdump` for the host's own architecture.
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
    function: BTreeMap<String, RawExpect>,
    #[serde(default)]
    kind: BTreeMap<String, RawRule>,
    #[serde(default)]
    cold_calls: Vec<String>,
    #[serde(default)]
    instructions: Option<RawClasses>,
    #[serde(default)]
    linked: Option<LinkedConfig>,
    #[serde(default)]
    keeps_frame_pointers: bool,
    #[serde(default)]
    toolchain: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, deny_unknown_fields)]
struct RawRule {
    scope: Option<String>,
    has: Vec<String>,
    lacks: Vec<String>,
    forbid: Vec<String>,
    require: Vec<String>,
    check: Vec<RawStep>,
    count: BTreeMap<String, usize>,
    calls: Option<Vec<String>>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum RawStep {
    Check(String),
    Table(RawStepTable),
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, deny_unknown_fields)]
struct RawStepTable {
    next: Option<String>,
    not: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawExpect {
    scope: Option<String>,
    has: Vec<String>,
    lacks: Vec<String>,
    forbid: Vec<String>,
    require: Vec<String>,
    check: Vec<RawStep>,
    count: BTreeMap<String, usize>,
    calls: Option<Vec<String>>,
    rule: Vec<RawRule>,
    hot_max: Option<usize>,
    to_fit_check_max: Option<usize>,
    why: Option<String>,
    follow: bool,
}

/// `targets/suite.toml`: what every profile shares.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawSuite {
    kind: BTreeMap<String, RawRule>,
    cold_calls: Vec<String>,
}

/// The suite-wide part of the profiles: `targets/suite.toml`, if present.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    /// Rules per probe kind.
    pub kind_rules: BTreeMap<String, Vec<Rule>>,
    /// Cold slow-path callees.
    pub cold_calls: Vec<Pattern>,
}

/// The file name of the suite-wide defaults in the profiles directory.
pub const SUITE_FILE: &str = "suite.toml";

impl Suite {
    /// Parses `targets/suite.toml`'s text.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Suite> {
        let raw: RawSuite = parse_toml(text, path)?;
        let mut kind_rules = BTreeMap::new();
        for (kind, r) in &raw.kind {
            check_kind_name(kind, path)?;
            let rule = build_rule(r, &format!("suite: {kind}"), text, path, kind)?;
            kind_rules.insert(kind.clone(), vec![rule]);
        }
        let cold_calls = raw
            .cold_calls
            .iter()
            .map(|s| compile(s, text, path, "suite", "cold_calls"))
            .collect::<Result<_, _>>()?;
        Ok(Suite {
            kind_rules,
            cold_calls,
        })
    }

    /// Loads `dir/suite.toml`, or the empty suite when there is none.
    pub fn load(dir: &Path) -> anyhow::Result<Suite> {
        let path = dir.join(SUITE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Suite::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Suite::default()),
            Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
    }
}

/// A probe kind's name: in `[kind.<name>]`, the report and `allocasm list`.
pub fn kind_name(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::SingleThreaded => "single-threaded",
        ProbeKind::Concurrent => "concurrent",
    }
}

fn check_kind_name(kind: &str, path: &Path) -> anyhow::Result<()> {
    if [ProbeKind::SingleThreaded, ProbeKind::Concurrent]
        .map(kind_name)
        .contains(&kind)
    {
        Ok(())
    } else {
        bail!(
            "{}: [kind.{kind}]: unknown probe kind (expected single-threaded or concurrent)",
            path.display()
        )
    }
}

fn compile(s: &str, text: &str, path: &Path, probe: &str, field: &str) -> anyhow::Result<Pattern> {
    Pattern::new(s).map_err(|e| {
        let offset = text.find(s).unwrap_or(0);
        let (line, col) = line_col(text, offset);
        anyhow::anyhow!(
            "{}:{line}:{col}: probe {probe}: `{field}` pattern {s:?} is not a valid regex: {e}",
            path.display()
        )
    })
}

fn parse_class(s: &str, path: &Path, probe: &str) -> anyhow::Result<Class> {
    Class::parse(s).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: probe {probe}: unknown instruction class {s:?} (expected {})",
            path.display(),
            Class::ALL
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn matcher(s: &str, text: &str, path: &Path, probe: &str) -> anyhow::Result<Matcher> {
    match s.strip_prefix('@') {
        Some(c) => Ok(Matcher::Class(parse_class(c, path, probe)?)),
        None => Ok(Matcher::Pattern(compile(s, text, path, probe, "check")?)),
    }
}

fn build_rule(
    r: &RawRule,
    origin: &str,
    text: &str,
    path: &Path,
    probe: &str,
) -> anyhow::Result<Rule> {
    let scope = match r.scope.as_deref() {
        None | Some("hot") => Scope::Hot,
        Some("function") => Scope::Function,
        Some(other) => bail!(
            "{}: probe {probe}: unknown scope {other:?} (expected \"hot\" or \"function\")",
            path.display()
        ),
    };
    let pats = |v: &[String], field| {
        v.iter()
            .map(|s| compile(s, text, path, probe, field))
            .collect::<anyhow::Result<Vec<_>>>()
    };
    let classes = |v: &[String]| {
        v.iter()
            .map(|c| parse_class(c, path, probe))
            .collect::<anyhow::Result<Vec<_>>>()
    };
    let step = |step: &RawStep| {
        Ok(match step {
            RawStep::Check(s) => Step::Check(matcher(s, text, path, probe)?),
            RawStep::Table(RawStepTable {
                next: Some(s),
                not: None,
            }) => Step::Next(matcher(s, text, path, probe)?),
            RawStep::Table(RawStepTable {
                next: None,
                not: Some(s),
            }) => Step::Not(matcher(s, text, path, probe)?),
            RawStep::Table(_) => bail!(
                "{}: probe {probe}: a check step is a pattern, {{ next = \"…\" }} or {{ not = \"…\" }}",
                path.display()
            ),
        })
    };
    // Fields in the order the file's errors are looked for.
    Ok(Rule {
        scope,
        origin: origin.to_string(),
        has: pats(&r.has, "has")?,
        lacks: pats(&r.lacks, "lacks")?,
        forbid: classes(&r.forbid)?,
        require: classes(&r.require)?,
        check: r.check.iter().map(step).collect::<anyhow::Result<_>>()?,
        count: (r.count.iter())
            .map(|(c, &n)| Ok((parse_class(c, path, probe)?, n)))
            .collect::<anyhow::Result<_>>()?,
        calls: r.calls.as_deref().map(|v| pats(v, "calls")).transpose()?,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClasses {
    atomic_rmw: Option<String>,
    atomic_other: Option<String>,
    call: Option<String>,
    branch: Option<String>,
}

/// A TOML file's text as `T`; an error names `path:line:column` and what
/// was expected.
fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> anyhow::Result<T> {
    toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        anyhow::anyhow!(
            "{}:{line}:{col}: {}",
            path.display(),
            e.message().trim_end()
        )
    })
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
        let suite = Suite::load(path.parent().unwrap_or(Path::new(".")))?;
        Profile::load_with(path, &suite)
    }

    /// [`Profile::load`] with the suite-wide defaults already loaded.
    pub fn load_with(path: &Path, suite: &Suite) -> anyhow::Result<Profile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read profile {}", path.display()))?;
        Profile::parse_with(&text, path, suite)
    }

    /// Parses a profile's text; `path` is used in messages and kept.
    ///
    /// Errors name the file, the line and column, and what was expected.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Profile> {
        Profile::parse_with(text, path, &Suite::default())
    }

    /// [`Profile::parse`] with the suite-wide defaults.
    pub fn parse_with(text: &str, path: &Path, suite: &Suite) -> anyhow::Result<Profile> {
        let raw: RawProfile = parse_toml(text, path)?;
        let at = |what: &str| format!("{}: {what}", path.display());
        let pattern = |probe: &str, field: &str, s: &str| compile(s, text, path, probe, field);
        let expect_table = |probe: &str, r: &RawExpect| -> anyhow::Result<ProbeExpect> {
            let own = RawRule {
                scope: r.scope.clone(),
                has: r.has.clone(),
                lacks: r.lacks.clone(),
                forbid: r.forbid.clone(),
                require: r.require.clone(),
                check: r.check.clone(),
                count: r.count.clone(),
                calls: r.calls.clone(),
            };
            let mut rules = vec![build_rule(&own, "", text, path, probe)?];
            for extra in &r.rule {
                rules.push(build_rule(extra, "", text, path, probe)?);
            }
            rules.retain(|r| !r.is_empty());
            Ok(ProbeExpect {
                rules,
                hot_max: r.hot_max,
                to_fit_check_max: r.to_fit_check_max,
                why: r.why.clone(),
                follow: r.follow,
            })
        };
        let mut expect = BTreeMap::new();
        for (probe, r) in &raw.probe {
            expect.insert(probe.clone(), expect_table(probe, r)?);
        }
        let mut function_expect = BTreeMap::new();
        for (name, r) in &raw.function {
            function_expect.insert(name.clone(), expect_table(name, r)?);
        }
        let mut kind_rules: BTreeMap<String, Vec<Rule>> = suite.kind_rules.clone();
        for (kind, r) in &raw.kind {
            check_kind_name(kind, path)?;
            let rule = build_rule(r, &format!("profile: {kind}"), text, path, kind)?;
            kind_rules.entry(kind.clone()).or_default().push(rule);
        }
        let mut cold_calls = suite.cold_calls.clone();
        for s in &raw.cold_calls {
            cold_calls.push(pattern("cold_calls", "cold_calls", s)?);
        }
        let arch = Arch::from_triple(&raw.triple);
        let classes = match (InstructionClasses::for_arch(&arch), &raw.instructions) {
            (Some(c), None) => c,
            (Some(mut c), Some(o)) => {
                for (field, s, class) in [
                    ("atomic_rmw", &o.atomic_rmw, &mut c.atomic_rmw),
                    ("atomic_other", &o.atomic_other, &mut c.atomic_other),
                    ("call", &o.call, &mut c.call),
                    ("branch", &o.branch, &mut c.branch),
                ] {
                    if let Some(s) = s {
                        *class = pattern("[instructions]", field, s)?;
                    }
                }
                c
            }
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
            function_expect,
            kind_rules,
            cold_calls,
            classes,
            path: path.to_path_buf(),
            linked: raw.linked,
            keeps_frame_pointers: raw.keeps_frame_pointers,
            toolchain: raw.toolchain,
        })
    }

    /// Loads every `*.toml` of `dir`, sorted by profile name. Profile names
    /// must be unique and match their file's stem.
    pub fn load_all(dir: &Path) -> anyhow::Result<Vec<Profile>> {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read the profiles directory {}", dir.display()))?;
        let suite = Suite::load(dir)?;
        let mut profiles = Vec::new();
        for entry in entries {
            let path = entry?.path();
            let is_suite = path.file_name().is_some_and(|n| n == SUITE_FILE);
            if path.extension().is_some_and(|e| e == "toml") && !is_suite {
                profiles.push(Profile::load_with(&path, &suite)?);
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
        let names: Vec<&str> = by_likeness(name, profiles.iter().map(|p| p.name.as_str()))
            .into_iter()
            .map(|(_, n)| n)
            .collect();
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
                let names: Vec<&str> = by_likeness(name, registry.iter().map(|p| p.name))
                    .into_iter()
                    .map(|(_, n)| n)
                    .collect();
                bail!(
                    "{}: [probe.{name}] names no probe of the registry; nearest: {}",
                    self.path.display(),
                    names.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(())
    }

    /// Every rule that applies to `probe` here: its kind's defaults (the
    /// suite's, then the profile's), less the counts the probe's own rules
    /// restate for the same scope (a probe's `calls` list restates the call
    /// count and lifts the kind's `forbid = ["call"]` in that scope), then
    /// the probe's own rules.
    pub fn rules_for(&self, probe: &Probe) -> Vec<Rule> {
        let kind = kind_name(probe.kind);
        let own: &[Rule] = self
            .expect
            .get(probe.name)
            .map_or(&[], |e| e.rules.as_slice());
        let mut rules: Vec<Rule> = Vec::new();
        for d in self.kind_rules.get(kind).into_iter().flatten() {
            let mut d = d.clone();
            for r in own.iter().filter(|r| r.scope == d.scope) {
                for c in r.count.keys() {
                    d.count.remove(c);
                }
                if r.calls.is_some() {
                    // The probe lists its callees exactly: that replaces
                    // the kind's call count and its blanket ban on calls.
                    d.count.remove(&Class::Call);
                    d.forbid.retain(|&c| c != Class::Call);
                    d.calls = None;
                }
            }
            // Later defaults (the profile's) restate the suite's counts.
            for r in &mut rules {
                if r.scope == d.scope {
                    for c in d.count.keys() {
                        r.count.remove(c);
                    }
                }
            }
            rules.push(d);
        }
        rules.extend(own.iter().cloned());
        rules.retain(|r| !r.is_empty());
        rules
    }
}

/// `candidates` ordered by how alike they are to `name`, most alike first,
/// each with its likeness: strsim's normalized Damerau–Levenshtein
/// similarity (1.0 the same text, 0.0 nothing in common; a swap of two
/// neighbouring letters is one edit). Ties keep the order given.
pub fn by_likeness<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<(f64, &'a str)> {
    let mut all: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::normalized_damerau_levenshtein(name, c), c))
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all
}
