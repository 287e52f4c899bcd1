//! The report's data model: [`Report`] and everything it holds, whose JSON
//! form is the schema in `docs/report.schema.json`. Plain data with a few
//! accessors; `builder.rs` fills it, the writers read it.

use allocasm_suite::codegen::cfg::HotPath;
use allocasm_suite::codegen::follow::Followed;
use allocasm_suite::codegen::linked::{LinkedOutput, Lto};
use allocasm_suite::codegen::mca::Mca;
use allocasm_suite::codegen::{ProbeListings, Profile, Summary};
use allocasm_suite::render::{Align, Cell, Mark, Table};
use serde::Serialize;

use super::*;

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

/// The cross-profile summary
/// ([`allocasm_suite::codegen::summary::cross_profile`] of every view): one
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

/// Whether a build worked (`built` or `failed` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BuildStatus {
    /// It built.
    Built,
    /// It failed: see the `error` beside it.
    Failed,
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
    /// `14 A C L (20)` ([`allocasm_suite::codegen::summary::Cell::text`]), `missing` or `not built`.
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
                .map(|t| (t.into(), Align::Left))
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
    /// The listing and its figures (found only).
    #[serde(flatten)]
    pub view: ListingView,
}

/// A probe's listing in one view (the `.s`, a linked executable) with its
/// figures: what a result and a linked view have when the probe is found.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct ListingView {
    /// Counts (found only).
    pub summary: Option<Summary>,
    /// The hot path (found only): entry to return through non-cold blocks.
    pub hot_path: Option<HotPath>,
    /// How thread-local storage is reached (found only).
    pub tls: Option<TlsAccess>,
    /// The normalized listing, one entry per label or instruction.
    pub lines: Vec<ListingLine>,
    /// Notes on the key instructions.
    pub annotations: Vec<Annotation>,
}

impl ListingView {
    /// The listing as text (labels unindented, instructions indented by two).
    pub fn listing_text(&self) -> String {
        (self.lines.iter())
            .map(|l| match l.kind {
                "label" => format!("{}:\n", l.text),
                _ => format!("  {}\n", l.text),
            })
            .collect()
    }
}

impl LinkedView {
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
    /// The listing and its figures (found only).
    #[serde(flatten)]
    pub view: ListingView,
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
    pub mca: Option<Vec<Mca>>,
    /// Why `mca` is `null`.
    pub mca_reason: Option<String>,
    /// With the profile's `follow = true` for the probe: the callees its
    /// hot path reaches in the build ([`allocasm_suite::codegen::follow`]);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed: Option<Followed>,
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
