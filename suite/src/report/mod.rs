//! The asm report: one data model ([`Report`], whose JSON form is the stable
//! schema documented in `docs/json-schema.md`) and one module per output
//! kind behind the [`Format`] trait: [`text`], [`markdown`], [`json`],
//! [`html`].

pub mod annotate;
pub mod html;
pub mod json;
pub mod markdown;
pub mod measured;
pub mod text;

use allocasm::probes::{Probe, ProbeKind};
use allocasm_suite::codegen::cfg::HotPath;
use allocasm_suite::codegen::expect;
use allocasm_suite::codegen::linked::{LinkedOutput, Lto};
use allocasm_suite::codegen::summary::{self, CrossProfile};
use allocasm_suite::codegen::{AsmOutput, Listing, ProbeListings, Profile, Summary};
use allocasm_suite::render::{Align, Cell, Mark, Table};
use serde::Serialize;

pub use annotate::{Annotation, Tag, TlsAccess};
pub use measured::{ExecutedReport, ExecutedSection, McaReport, Measurement};

/// The schema identifier written into every JSON report. Bumped only on an
/// incompatible change (see docs/json-schema.md).
pub const SCHEMA: &str = "allocasm-report/1";

/// One output kind: its `--format` name (`md`, `json`, `html`, `text`), the
/// file it is written to in the output directory, and its renderer.
pub struct Format {
    /// The `--format` name.
    pub name: &'static str,
    /// The file in the output directory.
    pub file_name: &'static str,
    /// The whole document.
    pub render: fn(&Report) -> String,
}

/// Every output kind, by `--format` name.
pub fn format(name: &str) -> Option<Format> {
    let (name, file_name, render): (_, _, fn(&Report) -> String) = match name {
        "text" | "txt" => ("text", "report.txt", text::render),
        "md" | "markdown" => ("md", "report.md", markdown::render),
        "json" => ("json", "report.json", json::render),
        "html" => ("html", "report.html", html::render),
        _ => return None,
    };
    Some(Format {
        name,
        file_name,
        render,
    })
}

/// The whole report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// `allocasm <version>`.
    pub generator: String,
    /// The commit the report was made from.
    pub git: Git,
    /// The compiler.
    pub compiler: Compiler,
    /// `builtin` or `cargo-show-asm`.
    pub backend: String,
    /// Every profile asked for, built or not.
    pub profiles: Vec<ProfileInfo>,
    /// Whether linked views were built (`false` with `--no-linked`).
    pub linked_views: bool,
    /// The cross-profile summary: probes down, profiles (and linked views)
    /// across.
    pub summary: CrossSummary,
    /// Every probe of the registry with its result on every profile.
    pub probes: Vec<ProbeReport>,
    /// What this suite can and cannot see: the table of the last mutation
    /// self-test (`scripts/test mutate`), `null` when it has not run here.
    pub mutations: Option<MutationTable>,
    /// What the CPU executes: per Linux profile, the executed
    /// instructions per call and llvm-mca's prediction per CPU, with the
    /// method, why a profile was not measured, and the cross-profile table
    /// (`hot-path instructions / executed / mca cycles`); `null` only
    /// before [`Report::attach_measurements`].
    pub executed: Option<ExecutedSection>,
    /// Counts.
    pub totals: Totals,
}

/// The cross-profile summary ([`summary::cross_profile`] of every view): one
/// row per probe, one column per profile's `.s` view and then one per linked
/// view, each cell the instruction count with a mark for atomics, calls and
/// loops.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CrossSummary {
    /// What the marks mean.
    pub legend: Vec<LegendEntry>,
    /// The columns: every profile's `.s` view (`view: "asm"`), then the
    /// linked views (`release`, `lto`) of the profiles that have one.
    pub columns: Vec<SummaryColumn>,
    /// One row per probe, registry order.
    pub rows: Vec<SummaryRow>,
}

/// One mark of the summary.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LegendEntry {
    /// `A`, `C`, `L`, `✅`, …
    pub mark: &'static str,
    /// What it means.
    pub meaning: &'static str,
}

/// A column of the summary.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SummaryColumn {
    /// The profile.
    pub profile: String,
    /// `asm` (the compiler's `.s`), `release` (linked executable, release
    /// profile) or `lto` (linked executable, fat LTO).
    pub view: &'static str,
}

impl SummaryColumn {
    /// `x86_64-linux`, `x86_64-linux linked` or `x86_64-linux linked+LTO`.
    pub fn title(&self) -> String {
        match self.view {
            "asm" => self.profile.clone(),
            "release" => format!("{} linked", self.profile),
            _ => format!("{} linked+LTO", self.profile),
        }
    }
}

/// Whether a probe has a listing in one view (`found`, `missing`,
/// `not-built` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeStatus {
    /// The probe's listing is there.
    Found,
    /// The build worked but the probe is not in its output.
    Missing,
    /// The build failed (or a tool it needs is absent).
    NotBuilt,
}

impl ProbeStatus {
    /// The JSON name (`not-built`).
    pub fn name(self) -> &'static str {
        match self {
            ProbeStatus::Found => "found",
            ProbeStatus::Missing => "missing",
            ProbeStatus::NotBuilt => "not-built",
        }
    }
}

impl std::fmt::Display for ProbeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a build worked (`built` or `failed` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BuildStatus {
    /// It built.
    Built,
    /// It failed: see the `error` beside it.
    Failed,
}

impl BuildStatus {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            BuildStatus::Built => "built",
            BuildStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for BuildStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One probe's row.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SummaryRow {
    /// The probe.
    pub probe: String,
    /// One cell per column, in the order of [`CrossSummary::columns`].
    pub cells: Vec<SummaryCell>,
}

/// One probe in one view.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SummaryCell {
    /// `found`, `missing` or `not-built`.
    pub status: ProbeStatus,
    /// `14 A C L (20)` ([`summary::Cell::text`]), `missing` or `not built`.
    pub text: String,
    /// Instructions on the hot path (found only).
    pub instructions: Option<usize>,
    /// Instructions of the whole function (found only).
    pub function_instructions: Option<usize>,
    /// At least one atomic instruction on the hot path.
    pub atomic: bool,
    /// At least one call on the hot path.
    pub call: bool,
    /// At least one loop on the hot path.
    #[serde(rename = "loop")]
    pub looped: bool,
    /// Every expectation held (`.s` view only; `null` for linked views,
    /// which have no expectations).
    pub passed: Option<bool>,
}

/// The mutation self-test's table (`target/mutate/mutations.json`, written
/// by `scripts/test mutate`): mutations down, profiles across.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MutationTable {
    /// The commit the self-test ran on.
    pub commit: String,
    /// The columns.
    pub profiles: Vec<String>,
    /// One row per mutation.
    pub rows: Vec<MutationRow>,
}

impl MutationTable {
    /// The table for the shared renderers: a caught mutation is good, a
    /// missed one bad, the others (blind, cold-only) muted.
    pub fn table(&self) -> Table {
        let mark = |c: &str| match c {
            "caught" => Mark::Good,
            c if c.contains("MISSED") => Mark::Bad,
            _ => Mark::Muted,
        };
        Table {
            columns: std::iter::once("mutation")
                .chain(self.profiles.iter().map(String::as_str))
                .map(|t| (t.to_string(), Align::Left))
                .collect(),
            rows: (self.rows.iter())
                .map(|row| {
                    std::iter::once(Cell::new(row.mutation.as_str(), Mark::Plain))
                        .chain(row.cells.iter().map(|c| Cell::new(c.as_str(), mark(c))))
                        .collect()
                })
                .collect(),
        }
    }
}

/// One mutation on every profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MutationRow {
    /// `relaxed-to-seqcst`, `cold-removed`, ...
    pub mutation: String,
    /// Per profile: `caught`, `blind` (same listing), `cold-only` (only
    /// cold blocks changed), `MISSED` (the hot path changed and `check`
    /// passed), or several of them (`blind/caught`) when the mutation's
    /// probes differ.
    pub cells: Vec<String>,
}

impl MutationTable {
    /// Reads `target/mutate/mutations.json`, if the self-test has run.
    pub fn load() -> Option<MutationTable> {
        let path = allocasm_suite::codegen::manifest_dir().join("target/mutate/mutations.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        let profiles: Vec<String> = v["profiles"]
            .as_array()?
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let rows = v["mutations"]
            .as_array()?
            .iter()
            .filter_map(|m| m.as_str())
            .map(|m| MutationRow {
                mutation: m.to_string(),
                cells: profiles
                    .iter()
                    .map(|prof| {
                        let mut verdicts: Vec<String> = v["table"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|r| r["mutation"] == m && r["profile"] == prof.as_str())
                            .flat_map(|r| r["probes"].as_array().cloned().unwrap_or_default())
                            .filter_map(|p| p["verdict"].as_str().map(str::to_string))
                            .collect();
                        verdicts.sort();
                        verdicts.dedup();
                        verdicts.join("/")
                    })
                    .collect(),
            })
            .collect();
        Some(MutationTable {
            commit: v["commit"].as_str().unwrap_or("").to_string(),
            profiles,
            rows,
        })
    }
}

/// What the mutation table's verdicts mean.
pub const MUTATION_LEGEND: &str = "caught: `check` failed naming the probe; blind: the listing did not change; cold-only: only cold blocks changed (the hot path is the same); MISSED: the hot path changed and `check` passed";

/// The legend of the summary's marks.
pub const LEGEND: &[LegendEntry] = &[
    LegendEntry {
        mark: "N",
        meaning: "instructions on the hot path (entry to return through non-cold blocks); (M): the whole function's",
    },
    LegendEntry {
        mark: "A",
        meaning: "atomic instruction on the hot path (read-modify-write, fence, acquire/release access, outline-atomics call)",
    },
    LegendEntry {
        mark: "C",
        meaning: "call on the hot path (tail calls, TLS thunks and outline-atomics helpers included)",
    },
    LegendEntry {
        mark: "L",
        meaning: "loop on the hot path",
    },
    LegendEntry {
        mark: "✅",
        meaning: "every expectation held (.s view)",
    },
    LegendEntry {
        mark: "❌",
        meaning: "an expectation failed, or the probe is missing (.s view)",
    },
];

/// Both linked views of one probe on one profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LinkedViews {
    /// In the executable built with the crate's release profile.
    pub release: LinkedView,
    /// In the executable built with `lto = "fat"`.
    pub lto: LinkedView,
}

impl LinkedViews {
    /// Both views with their titles, release first.
    pub fn both(&self) -> [(&'static str, &LinkedView); 2] {
        [
            ("linked, release", &self.release),
            ("linked, fat LTO", &self.lto),
        ]
    }
}

/// One probe disassembled from one linked executable.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LinkedView {
    /// `found`, `missing` (not in the executable) or `not-built` (the linked
    /// build or its disassembly failed: see `error`).
    pub status: ProbeStatus,
    /// Why there is no listing (not-built only), with the fix.
    pub error: Option<String>,
    /// Counts (found only).
    pub summary: Option<Counts>,
    /// The hot path (found only).
    pub hot_path: Option<HotPathReport>,
    /// How thread-local storage is reached (found only).
    pub tls: Option<TlsAccess>,
    /// The normalized listing.
    pub lines: Vec<ListingLine>,
    /// Notes on the key instructions.
    pub annotations: Vec<Annotation>,
}

impl LinkedView {
    /// The listing as text, like [`ProbeResult::listing_text`].
    pub fn listing_text(&self) -> String {
        lines_text(&self.lines)
    }

    /// Not built for want of a tool this host lacks (a cross linker, a
    /// disassembler): its error names the `apt-get install` line that
    /// brings it ([`allocasm_suite::codegen::linked::install_command`]).
    /// Absent, not failed: the code did nothing wrong.
    pub fn missing_tool(&self) -> bool {
        self.status == ProbeStatus::NotBuilt
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.contains("apt-get install"))
    }
}

/// A profile's two linked executables.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LinkedBuilds {
    /// With the crate's release profile.
    pub release: LinkedBuildInfo,
    /// With `lto = "fat"`.
    pub lto: LinkedBuildInfo,
}

/// One linked executable.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LinkedBuildInfo {
    /// `built` or `failed`.
    pub status: BuildStatus,
    /// Why it failed, with the fix.
    pub error: Option<String>,
    /// The `[linked]` rustflags (built only).
    pub flags: Vec<String>,
    /// The disassembler command (built only).
    pub disassembler: Option<String>,
}

/// One linked build for [`Report::new`].
pub struct LinkedBuild<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// Release profile as it is, or fat LTO.
    pub lto: Lto,
    /// The executable and its listings, or why there are none.
    pub outcome: Result<(&'a LinkedOutput, &'a ProbeListings), String>,
}

/// `git rev-parse HEAD` and whether the tree had uncommitted changes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Git {
    /// The commit hash, or `null` outside a git checkout.
    pub commit: Option<String>,
    /// Uncommitted changes were present.
    pub dirty: bool,
}

/// The compiler the listings come from.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Compiler {
    /// The rustup toolchain (`1.95.0`).
    pub toolchain: String,
    /// `rustc 1.95.0 (59807616e 2026-04-14)`.
    pub release: String,
    /// `22.1.2`.
    pub llvm: String,
    /// The full `rustc -vV`.
    pub rustc_vv: String,
}

/// One profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProfileInfo {
    /// Its name.
    pub name: String,
    /// The target triple.
    pub triple: String,
    /// What it models.
    pub description: String,
    /// The profile's rustflags.
    pub rustflags: Vec<String>,
    /// Every flag the asm build passed after `--emit asm`.
    pub build_flags: Vec<String>,
    /// The codegen-units setting and how many `.s` files were read.
    pub codegen_units: String,
    /// The compiler this profile was built with (`rustc -vV`'s first line)
    /// when it is not the report's: a profile with its own `toolchain` in
    /// its TOML. `None` when it is the report's compiler.
    pub compiler: Option<String>,
    /// `built` or `failed`.
    pub status: BuildStatus,
    /// Why the build failed.
    pub error: Option<String>,
    /// The build was reused (cargo had nothing to do).
    pub fresh: Option<bool>,
    /// The command that built it.
    pub command: Option<String>,
    /// Its linked executables; `null` when it has no linked view (no
    /// `[linked]` table, or `--no-linked`).
    pub linked: Option<LinkedBuilds>,
}

/// One probe on every profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProbeReport {
    /// The exported symbol.
    pub name: String,
    /// The allocator whose fast path it calls.
    pub allocator: String,
    /// The operation.
    pub operation: String,
    /// `single-threaded` or `concurrent`.
    pub kind: &'static str,
    /// What it should compile to.
    pub expect: String,
    /// One per profile, in the order of [`Report::profiles`].
    pub results: Vec<ProbeResult>,
}

/// One probe on one profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProbeResult {
    /// The profile's name.
    pub profile: String,
    /// `found`, `missing` (not in the assembly) or `not-built` (the profile's
    /// build failed).
    pub status: ProbeStatus,
    /// Counts (found only).
    pub summary: Option<Counts>,
    /// The hot path (found only): entry to return through non-cold blocks.
    pub hot_path: Option<HotPathReport>,
    /// How thread-local storage is reached (found only).
    pub tls: Option<TlsAccess>,
    /// The normalized listing, one entry per label or instruction.
    pub lines: Vec<ListingLine>,
    /// Notes on the key instructions.
    pub annotations: Vec<Annotation>,
    /// Every expectation with its result (a missing probe fails one).
    pub expectations: Vec<ExpectationResult>,
    /// Whether every expectation held.
    pub passed: bool,
    /// The probe in the profile's linked executables; `null` when the
    /// profile has no linked view.
    pub linked: Option<LinkedViews>,
    /// Instructions one call executed in the profile's probe driver (the
    /// linked release executable), helpers included; `null` where not
    /// measured (see `executed_reason`).
    pub executed: Option<ExecutedReport>,
    /// Why `executed` is `null`.
    pub executed_reason: Option<String>,
    /// llvm-mca's prediction of the hot path per CPU of the profile;
    /// `null` where not predicted (see `mca_reason`).
    pub mca: Option<Vec<McaReport>>,
    /// Why `mca` is `null`.
    pub mca_reason: Option<String>,
    /// With the profile's `follow = true` for the probe: the callees its
    /// hot path reaches in the build ([`allocasm_suite::codegen::follow`]);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed: Option<FollowedReport>,
}

/// The walk through a probe's calls, as reports carry it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FollowedReport {
    /// The depth limit.
    pub depth: usize,
    /// Each callee followed, in walk order.
    pub callees: Vec<FollowedCallee>,
    /// The calls not followed, with why (cold, recursive, indirect, ...).
    pub not_followed: Vec<String>,
    /// Instructions on the whole walk's hot paths.
    pub instructions: usize,
    /// Atomic instructions on them.
    pub atomics: usize,
    /// Atomic read-modify-writes on them.
    pub atomic_rmw: usize,
    /// Loops on them.
    pub loops: usize,
    /// Stack accesses on them.
    pub stack_accesses: usize,
    /// Calls on them whose callee has no body in the build.
    pub calls_leaving: Vec<String>,
}

/// One callee of a [`FollowedReport`].
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FollowedCallee {
    /// 1 for a callee of the probe, 2 for its callees, ...
    pub depth: usize,
    /// The caller's name.
    pub caller: String,
    /// The callee's demangled path, generic arguments kept.
    pub path: String,
    /// Its own hot path.
    pub hot_path: HotPathReport,
}

impl From<&allocasm_suite::codegen::follow::Followed> for FollowedReport {
    fn from(f: &allocasm_suite::codegen::follow::Followed) -> FollowedReport {
        FollowedReport {
            depth: f.depth,
            callees: f
                .callees
                .iter()
                .map(|c| FollowedCallee {
                    depth: c.depth,
                    caller: c.caller.clone(),
                    path: c.path.clone(),
                    hot_path: HotPathReport::from(&c.hot),
                })
                .collect(),
            not_followed: f.stops.iter().map(|s| s.to_string()).collect(),
            instructions: f.totals.instructions,
            atomics: f.totals.atomics,
            atomic_rmw: f.totals.atomic_rmw,
            loops: f.totals.loops,
            stack_accesses: f.totals.stack_accesses,
            calls_leaving: f.totals.calls_leaving.clone(),
        }
    }
}

/// The counts of a listing.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Counts {
    /// Instructions.
    pub instructions: usize,
    /// Atomic read-modify-writes (outline-atomics calls included).
    pub atomic_rmw: usize,
    /// All atomic instructions.
    pub atomics: usize,
    /// Calls (tail calls and outline-atomics calls included).
    pub calls: usize,
    /// Branches.
    pub branches: usize,
    /// Backward branches (loops).
    pub loops: usize,
}

impl From<Summary> for Counts {
    fn from(s: Summary) -> Counts {
        Counts {
            instructions: s.instructions,
            atomic_rmw: s.atomic_rmw,
            atomics: s.atomics,
            calls: s.calls,
            branches: s.branches,
            loops: s.backward_branches,
        }
    }
}

/// The hot path of one listing ([`allocasm_suite::codegen::cfg::HotPath`]).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HotPathReport {
    /// Instructions on the hot path, entry to return (a loop's body once).
    pub instructions: usize,
    /// Instructions from the entry through the first conditional branch after
    /// the first atomic read-modify-write; `null` without one.
    pub to_fit_check: Option<usize>,
    /// Atomic instructions on it.
    pub atomics: usize,
    /// Atomic read-modify-writes on it (outline-atomics calls included).
    pub atomic_rmw: usize,
    /// Callees on it, in order (TLS thunks, outline-atomics helpers).
    pub calls: Vec<String>,
    /// Loads and stores relative to the stack or frame pointer on it.
    pub stack_accesses: usize,
    /// The frame record's save and restore on a target that keeps frame
    /// pointers (x86_64 macOS), apart from `stack_accesses`.
    pub frame_accesses: usize,
    /// Loops on it.
    pub loops: usize,
    /// Its instructions.
    pub lines: Vec<String>,
    /// Instructions of the whole function, for comparison.
    pub function_instructions: usize,
    /// No return is reachable through non-cold blocks (the path is the
    /// longest to any exit).
    pub no_hot_return: bool,
}

impl From<&HotPath> for HotPathReport {
    fn from(h: &HotPath) -> HotPathReport {
        HotPathReport {
            instructions: h.instructions,
            to_fit_check: h.to_fit_check,
            atomics: h.atomics,
            atomic_rmw: h.atomic_rmw,
            calls: h.calls.clone(),
            stack_accesses: h.stack_accesses,
            frame_accesses: h.frame_accesses,
            loops: h.loops,
            lines: h.lines.clone(),
            function_instructions: h.function_instructions,
            no_hot_return: h.no_hot_return,
        }
    }
}

impl HotPathReport {
    /// `32 of 44 instructions, 20 to the fit check, 1 atomic, calls: none,
    /// 0 stack accesses`.
    pub fn line(&self) -> String {
        let fit = self.to_fit_check.map_or("no fit check".to_string(), |n| {
            format!("{n} to the fit check")
        });
        let calls = if self.calls.is_empty() {
            "none".to_string()
        } else {
            self.calls.join(", ")
        };
        format!(
            "hot path: {} of {} instructions, {fit}, {} atomic(s), {} loop(s), {} stack access(es){}, calls: {calls}{}",
            self.instructions,
            self.function_instructions,
            self.atomics,
            self.loops,
            self.stack_accesses,
            if self.frame_accesses > 0 {
                format!(
                    " (+ {} for the frame record the target keeps in every function)",
                    self.frame_accesses
                )
            } else {
                String::new()
            },
            if self.no_hot_return {
                " (no return is hot: longest path shown)"
            } else {
                ""
            }
        )
    }
}

/// One line of a listing.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ListingLine {
    /// `label`, `instruction` or `data` (a data directive: a literal pool
    /// entry, never counted as an instruction).
    pub kind: &'static str,
    /// The label's name or the instruction's text.
    pub text: String,
    /// Highlight tags.
    pub tags: Vec<Tag>,
    /// On the hot path.
    pub hot: bool,
    /// In a cold block (slow path, panic, trap, landing pad).
    pub cold: bool,
}

/// One expectation's result.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExpectationResult {
    /// The rule as written (`has /^lock xadd /`, `forbid call (suite: …)`).
    pub rule: String,
    /// Whether it held.
    pub passed: bool,
    /// The offending instruction, when one is to blame.
    pub offending: Option<String>,
    /// Why the expectation exists (the profile's `why`).
    pub why: Option<String>,
}

/// Counts over the whole report.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Totals {
    /// Probes in the registry.
    pub probes: usize,
    /// Profiles asked for.
    pub profiles: usize,
    /// Profiles whose build failed.
    pub profiles_failed: usize,
    /// (probe, profile) pairs found.
    pub found: usize,
    /// (probe, profile) pairs missing from a built profile.
    pub missing: usize,
    /// Expectations evaluated.
    pub expectations: usize,
    /// Expectations that failed (missing probes included).
    pub failures: usize,
}

/// One profile's build for [`Report::new`].
pub struct BuiltProfile<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// Its build.
    pub output: &'a AsmOutput,
    /// Its listings.
    pub listings: &'a ProbeListings,
}

/// One expectation's result, shared by the report and `diff`.
pub fn evaluate(
    profile: &Profile,
    listings: &ProbeListings,
    probe: &Probe,
) -> Vec<ExpectationResult> {
    match expect::evaluate_in(profile, listings, probe) {
        Some(outcomes) => outcomes
            .into_iter()
            .map(|o| ExpectationResult {
                rule: o.expectation.rule.clone(),
                passed: o.passed(),
                offending: o.failure.as_ref().and_then(|f| f.offending.clone()),
                why: profile.expect_for(probe.name).and_then(|e| e.why.clone()),
            })
            .collect(),
        None => {
            let f = expect::missing_probe(profile, probe);
            vec![ExpectationResult {
                rule: f.rule,
                passed: false,
                offending: None,
                why: None,
            }]
        }
    }
}

impl Report {
    /// Builds the report of `registry` over `order` (every profile asked for,
    /// in order): `built` are those that built, `failed` those that did not;
    /// `linked` the linked builds (`None` when they were not asked for).
    pub fn new(
        compiler: Compiler,
        backend: &str,
        order: &[&Profile],
        built: &[BuiltProfile<'_>],
        failed: &[(&Profile, String)],
        registry: &[Probe],
        linked: Option<&[LinkedBuild<'_>]>,
    ) -> Report {
        let linked_of = |p: &Profile, lto: Lto| {
            linked
                .unwrap_or_default()
                .iter()
                .find(|l| l.profile.name == p.name && l.lto == lto)
        };
        let has_linked = |p: &Profile| Lto::ALL.iter().any(|&l| linked_of(p, l).is_some());
        let profiles: Vec<ProfileInfo> = order
            .iter()
            .map(|p| {
                let b = built.iter().find(|b| b.profile.name == p.name);
                let error = failed
                    .iter()
                    .find(|(f, _)| f.name == p.name)
                    .map(|(_, e)| e.clone());
                let build_info = |lto| match linked_of(p, lto).map(|l| &l.outcome) {
                    Some(Ok((out, _))) => LinkedBuildInfo {
                        status: BuildStatus::Built,
                        error: None,
                        flags: out.flags.clone(),
                        disassembler: Some(out.objdump.clone()),
                    },
                    Some(Err(e)) => LinkedBuildInfo {
                        status: BuildStatus::Failed,
                        error: Some(e.clone()),
                        flags: Vec::new(),
                        disassembler: None,
                    },
                    None => LinkedBuildInfo {
                        status: BuildStatus::Failed,
                        error: Some("not built".into()),
                        flags: Vec::new(),
                        disassembler: None,
                    },
                };
                ProfileInfo {
                    name: p.name.clone(),
                    triple: p.triple.clone(),
                    description: p.description.clone(),
                    rustflags: p.rustflags.clone(),
                    build_flags: b.map_or_else(|| p.build_flags(), |b| b.output.flags.clone()),
                    codegen_units: b.map_or_else(
                        || match p.codegen_units() {
                            Some(n) => format!("codegen-units={n}"),
                            None => "codegen-units: cargo release default (16)".into(),
                        },
                        |b| b.output.codegen_units(),
                    ),
                    compiler: match b {
                        Some(b) if b.output.rustc_release() != compiler.release => {
                            Some(b.output.rustc_release().to_string())
                        }
                        None => p.toolchain.as_ref().map(|t| format!("toolchain {t}")),
                        _ => None,
                    },
                    status: if b.is_some() {
                        BuildStatus::Built
                    } else {
                        BuildStatus::Failed
                    },
                    error,
                    fresh: b.map(|b| b.output.fresh),
                    command: b.map(|b| b.output.command.clone()),
                    linked: has_linked(p).then(|| LinkedBuilds {
                        release: build_info(Lto::Off),
                        lto: build_info(Lto::Fat),
                    }),
                }
            })
            .collect();
        let mut totals = Totals {
            probes: registry.len(),
            profiles: order.len(),
            profiles_failed: order.len() - built.len(),
            found: 0,
            missing: 0,
            expectations: 0,
            failures: 0,
        };
        let probes = registry
            .iter()
            .map(|probe| {
                let results = order
                    .iter()
                    .map(|p| {
                        let mut r = match built.iter().find(|b| b.profile.name == p.name) {
                            Some(b) => {
                                let r = probe_result(b, probe);
                                if r.status == ProbeStatus::Found {
                                    totals.found += 1;
                                } else {
                                    totals.missing += 1;
                                }
                                totals.expectations += r.expectations.len();
                                totals.failures +=
                                    r.expectations.iter().filter(|e| !e.passed).count();
                                r
                            }
                            None => ProbeResult {
                                profile: p.name.clone(),
                                status: ProbeStatus::NotBuilt,
                                summary: None,
                                hot_path: None,
                                tls: None,
                                lines: Vec::new(),
                                annotations: Vec::new(),
                                expectations: Vec::new(),
                                passed: false,
                                linked: None,
                                executed: None,
                                executed_reason: None,
                                mca: None,
                                mca_reason: None,
                                followed: None,
                            },
                        };
                        if has_linked(p) {
                            let view = |lto| linked_view(p, linked_of(p, lto), probe);
                            r.linked = Some(LinkedViews {
                                release: view(Lto::Off),
                                lto: view(Lto::Fat),
                            });
                        }
                        r
                    })
                    .collect();
                ProbeReport {
                    name: probe.name.to_string(),
                    allocator: probe.allocator.to_string(),
                    operation: probe.operation.to_string(),
                    kind: kind_name(probe.kind),
                    expect: probe.expect.to_string(),
                    results,
                }
            })
            .collect::<Vec<ProbeReport>>();
        let summary = cross_summary(order, built, linked.unwrap_or_default(), &probes, registry);
        Report {
            schema: SCHEMA,
            generator: format!("allocasm {}", env!("CARGO_PKG_VERSION")),
            git: git_state(),
            compiler,
            backend: backend.to_string(),
            profiles,
            linked_views: linked.is_some(),
            summary,
            probes,
            mutations: MutationTable::load(),
            executed: None,
            totals,
        }
    }
}

/// The cross-profile summary, from [`summary::cross_profile`] of the `.s`
/// listings and of each LTO setting's linked listings.
fn cross_summary(
    order: &[&Profile],
    built: &[BuiltProfile<'_>],
    linked: &[LinkedBuild<'_>],
    probes: &[ProbeReport],
    registry: &[Probe],
) -> CrossSummary {
    let table = |pairs: Vec<(&Profile, &ProbeListings)>| -> CrossProfile {
        let (profiles, listings): (Vec<Profile>, Vec<ProbeListings>) = pairs
            .into_iter()
            .map(|(p, l)| (p.clone(), l.clone()))
            .unzip();
        summary::cross_profile(&profiles, &listings, registry)
    };
    let asm = table(built.iter().map(|b| (b.profile, b.listings)).collect());
    let linked_tables: Vec<(Lto, CrossProfile)> = Lto::ALL
        .iter()
        .map(|&lto| {
            let pairs = linked
                .iter()
                .filter(|l| l.lto == lto)
                .filter_map(|l| l.outcome.as_ref().ok().map(|(_, ls)| (l.profile, *ls)))
                .collect();
            (lto, table(pairs))
        })
        .collect();
    let mut columns: Vec<SummaryColumn> = order
        .iter()
        .map(|p| SummaryColumn {
            profile: p.name.clone(),
            view: "asm",
        })
        .collect();
    for p in order {
        for lto in Lto::ALL {
            if linked
                .iter()
                .any(|l| l.profile.name == p.name && l.lto == lto)
            {
                columns.push(SummaryColumn {
                    profile: p.name.clone(),
                    view: view_name(lto),
                });
            }
        }
    }
    let cell = |c: Option<summary::Cell>, built: bool, passed: Option<bool>| match (c, built) {
        (Some(c), _) => SummaryCell {
            status: ProbeStatus::Found,
            text: c.text(),
            instructions: Some(c.instructions),
            function_instructions: Some(c.function_instructions),
            atomic: c.atomic,
            call: c.call,
            looped: c.looped,
            passed,
        },
        (None, true) => SummaryCell {
            status: ProbeStatus::Missing,
            text: "missing".into(),
            instructions: None,
            function_instructions: None,
            atomic: false,
            call: false,
            looped: false,
            passed: passed.map(|_| false),
        },
        (None, false) => SummaryCell {
            status: ProbeStatus::NotBuilt,
            text: "not built".into(),
            instructions: None,
            function_instructions: None,
            atomic: false,
            call: false,
            looped: false,
            passed: None,
        },
    };
    let rows = probes
        .iter()
        .map(|probe| SummaryRow {
            probe: probe.name.clone(),
            cells: columns
                .iter()
                .map(|col| {
                    if col.view == "asm" {
                        let res = probe.results.iter().find(|r| r.profile == col.profile);
                        let built = res.is_some_and(|r| r.status != ProbeStatus::NotBuilt);
                        cell(
                            asm.cell(&probe.name, &col.profile),
                            built,
                            built.then(|| res.is_some_and(|r| r.passed)),
                        )
                    } else {
                        let (_, t) = linked_tables
                            .iter()
                            .find(|(l, _)| view_name(*l) == col.view)
                            .expect("a linked view's column");
                        let built = t.profiles.contains(&col.profile);
                        cell(t.cell(&probe.name, &col.profile), built, None)
                    }
                })
                .collect(),
        })
        .collect();
    CrossSummary {
        legend: LEGEND.to_vec(),
        columns,
        rows,
    }
}

/// `release` or `lto`: the JSON name of a linked view.
pub fn view_name(lto: Lto) -> &'static str {
    match lto {
        Lto::Off => "release",
        Lto::Fat => "lto",
    }
}

/// A probe's listing from one linked build (or why there is none).
fn linked_view(profile: &Profile, build: Option<&LinkedBuild<'_>>, probe: &Probe) -> LinkedView {
    let empty = |status, error| LinkedView {
        status,
        error,
        summary: None,
        hot_path: None,
        tls: None,
        lines: Vec::new(),
        annotations: Vec::new(),
    };
    let listings = match build.map(|b| &b.outcome) {
        Some(Ok((_, listings))) => *listings,
        Some(Err(e)) => return empty(ProbeStatus::NotBuilt, Some(e.clone())),
        None => return empty(ProbeStatus::NotBuilt, Some("not built".into())),
    };
    match listings.listing(probe.name) {
        Some(listing) => LinkedView {
            status: ProbeStatus::Found,
            error: None,
            summary: Some(listing.summary(&profile.classes).into()),
            hot_path: listings
                .hot_path(profile, probe.name)
                .as_ref()
                .map(HotPathReport::from),
            tls: Some(annotate::tls_access(listing)),
            lines: listing_lines(
                listing,
                profile,
                listings.hot_path(profile, probe.name).as_ref(),
            ),
            annotations: annotate::annotations(listing),
        },
        None => empty(ProbeStatus::Missing, None),
    }
}

/// A listing's lines with their highlight tags and hot/cold marks.
fn listing_lines(listing: &Listing, profile: &Profile, hot: Option<&HotPath>) -> Vec<ListingLine> {
    let tags = annotate::tags(listing, &profile.classes);
    listing
        .lines
        .iter()
        .zip(tags)
        .enumerate()
        .map(|(n, (line, tags))| {
            let (kind, text) = match line {
                allocasm_suite::codegen::Line::Label(l) => ("label", l.clone()),
                allocasm_suite::codegen::Line::Instruction(i) => ("instruction", i.text()),
                allocasm_suite::codegen::Line::Data(d) => ("data", d.text()),
            };
            ListingLine {
                kind,
                text,
                tags,
                hot: hot.is_some_and(|h| h.contains(n)),
                cold: hot.is_some_and(|h| h.cold_lines.contains(&n)),
            }
        })
        .collect()
}

/// `single-threaded` / `concurrent`.
pub fn kind_name(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::SingleThreaded => "single-threaded",
        ProbeKind::Concurrent => "concurrent",
    }
}

fn probe_result(b: &BuiltProfile<'_>, probe: &Probe) -> ProbeResult {
    let expectations = evaluate(b.profile, b.listings, probe);
    let passed = expectations.iter().all(|e| e.passed);
    let Some(listing) = b.listings.listing(probe.name) else {
        return ProbeResult {
            profile: b.profile.name.clone(),
            status: ProbeStatus::Missing,
            summary: None,
            hot_path: None,
            tls: None,
            lines: Vec::new(),
            annotations: Vec::new(),
            expectations,
            passed,
            linked: None,
            executed: None,
            executed_reason: None,
            mca: None,
            mca_reason: None,
            followed: None,
        };
    };
    let hot = b.listings.hot_path(b.profile, probe.name);
    let lines = listing_lines(listing, b.profile, hot.as_ref());
    ProbeResult {
        profile: b.profile.name.clone(),
        status: ProbeStatus::Found,
        summary: Some(listing.summary(&b.profile.classes).into()),
        hot_path: hot.as_ref().map(HotPathReport::from),
        tls: Some(annotate::tls_access(listing)),
        lines,
        annotations: annotate::annotations(listing),
        expectations,
        passed,
        linked: None,
        executed: None,
        executed_reason: None,
        mca: None,
        mca_reason: None,
        followed: b
            .listings
            .followed
            .get(probe.name)
            .map(FollowedReport::from),
    }
}

/// The commit of the crate's checkout.
pub fn git_state() -> Git {
    let dir = allocasm_suite::codegen::manifest_dir();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    Git {
        commit: git(&["rev-parse", "HEAD"]),
        dirty: git(&["status", "--porcelain", "--untracked-files=no"])
            .is_some_and(|s| !s.is_empty()),
    }
}

impl Compiler {
    /// From `rustc -vV`.
    pub fn from_rustc_vv(toolchain: &str, rustc_vv: &str) -> Compiler {
        let vv = allocasm_suite::toolchain::RustcVersion::parse(rustc_vv);
        Compiler {
            toolchain: toolchain.to_string(),
            release: vv.release().to_string(),
            llvm: vv.llvm().to_string(),
            rustc_vv: rustc_vv.to_string(),
        }
    }
}

impl ProbeResult {
    /// The listing as text (labels unindented, instructions indented by two).
    pub fn listing_text(&self) -> String {
        lines_text(&self.lines)
    }
}

/// Lines as text (labels unindented, instructions indented by two).
fn lines_text(lines: &[ListingLine]) -> String {
    let mut s = String::new();
    for l in lines {
        if l.kind == "label" {
            s.push_str(&l.text);
            s.push_str(":\n");
        } else {
            s.push_str("  ");
            s.push_str(&l.text);
            s.push('\n');
        }
    }
    s
}

impl Report {
    /// The git commit, short, with `-dirty` when the tree had changes.
    pub fn commit_line(&self) -> String {
        match &self.git.commit {
            Some(c) => format!(
                "{}{}",
                &c[..c.len().min(12)],
                if self.git.dirty {
                    " (uncommitted changes)"
                } else {
                    ""
                }
            ),
            None => "(not a git checkout)".to_string(),
        }
    }
}

#[cfg(test)]
mod schema_tests {
    /// docs/report.schema.json is generated from [`super::Report`].
    #[test]
    fn the_committed_json_schema_is_the_generated_one() {
        crate::cli::check_schema::<super::Report>("report.schema.json");
    }
}

#[cfg(test)]
mod table_tests {
    use super::{MutationRow, MutationTable};
    use allocasm_suite::render;

    /// The mutation table renders through the shared renderers: aligned
    /// in text, a pipe table in Markdown with a missed mutation in bold,
    /// an HTML table whose cells carry their verdict's class.
    #[test]
    fn the_mutation_table_renders_as_text_and_markdown() {
        let m = MutationTable {
            commit: "0123456789abcdef".into(),
            profiles: vec!["x86_64-linux".into(), "aarch64-apple".into()],
            rows: vec![
                MutationRow {
                    mutation: "relaxed-to-seqcst".into(),
                    cells: vec!["caught".into(), "blind".into()],
                },
                MutationRow {
                    mutation: "cold-removed".into(),
                    cells: vec!["MISSED".into(), "cold-only".into()],
                },
            ],
        };
        let t = m.table();
        assert_eq!(
            render::markdown::table(&t),
            "| mutation | x86_64-linux | aarch64-apple |\n| --- | --- | --- |\n\
             | relaxed-to-seqcst | caught | blind |\n| cold-removed | **MISSED** | cold-only |\n"
        );
        assert_eq!(
            render::text::table_plain(&t),
            "  mutation           x86_64-linux  aarch64-apple\n  \
             relaxed-to-seqcst  caught        blind\n  \
             cold-removed       MISSED        cold-only\n"
        );
        let html = render::html::table_classed(&t, "summary mutations");
        assert!(
            html.starts_with("<table class=\"summary mutations\">"),
            "{html}"
        );
        for cell in [
            "<td class=\"good\">caught</td>",
            "<td class=\"muted\">blind</td>",
            "<td class=\"bad\">MISSED</td>",
        ] {
            assert!(html.contains(cell), "{cell} in {html}");
        }
    }
}
