//! The comparison behind `allocasm diff`: one probe on one profile under
//! two compilers ([`ProbeDiff`]: its hot-path [`Figures`] before and after,
//! the unified diffs of the hot path and of the listing, the expectations
//! that flipped), and the whole report ([`DiffReport`]) that
//! `--format json` writes. `cli/diff.rs` fills it from two toolchains'
//! builds and writes it as a document.

use schemars::JsonSchema;
use serde::Serialize;
use similar::TextDiff;

use crate::codegen::cfg::HotPath;

/// The schema name written in the JSON.
pub const SCHEMA: &str = "allocasm-diff/1";

/// The whole comparison: what `--format json` writes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiffReport {
    /// `allocasm-diff/1`.
    pub schema: String,
    /// The compiler compared from.
    pub from: CompilerInfo,
    /// The compiler compared to.
    pub to: CompilerInfo,
    /// One per profile asked for, in the order of `targets/`.
    pub profiles: Vec<ProfileDiff>,
    /// Counts over every compared (probe, profile) pair.
    pub totals: DiffTotals,
}

/// One side's compiler.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CompilerInfo {
    /// The rustup toolchain as asked for (`1.99.1`, `nightly`).
    pub toolchain: String,
    /// `rustc -vV`'s first line (`rustc 1.99.1 (58cf8f9c3 2026-10-13)`), when a build worked.
    pub release: Option<String>,
    /// The LLVM version, when a build worked.
    pub llvm: Option<String>,
}

/// One profile under both compilers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProfileDiff {
    /// The profile's name.
    pub profile: String,
    /// Its target triple.
    pub triple: String,
    /// Whether it was compared, and if not, why.
    pub status: ProfileStatus,
    /// Why it was not compared.
    pub reason: Option<String>,
    /// One per probe of the registry (empty unless compared).
    pub probes: Vec<ProbeDiff>,
}

/// Whether a profile was compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileStatus {
    /// Both toolchains built it.
    Compared,
    /// A toolchain has no rust-std for the target.
    NotAvailable,
    /// A build failed.
    Failed,
}

impl ProfileStatus {
    /// The JSON name (`not-available`).
    pub fn name(self) -> &'static str {
        match self {
            ProfileStatus::Compared => "compared",
            ProfileStatus::NotAvailable => "not-available",
            ProfileStatus::Failed => "failed",
        }
    }
}

/// How one probe's listing moved between the two compilers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeState {
    /// The normalized listing is the same.
    Unchanged,
    /// The normalized listing differs.
    Changed,
    /// An expectation that held fails, or the probe is gone.
    Regression,
}

impl ProbeState {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            ProbeState::Unchanged => "unchanged",
            ProbeState::Changed => "changed",
            ProbeState::Regression => "regression",
        }
    }
}

/// One probe on one profile under both compilers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProbeDiff {
    /// The probe's symbol.
    pub probe: String,
    /// How the probe's listing moved.
    pub state: ProbeState,
    /// Whether the hot path's lines differ.
    pub hot_changed: bool,
    /// The figures under the `from` compiler (absent when the probe is missing there).
    pub before: Option<Figures>,
    /// The figures under the `to` compiler.
    pub after: Option<Figures>,
    /// The unified diff of the hot path's lines (empty when they are equal).
    pub hot_diff: String,
    /// The unified diff of the whole normalized listing (empty when equal).
    pub listing_diff: String,
    /// Every expectation whose result differs between the two, or that fails under either.
    pub expectations: Vec<Flip>,
}

/// A listing's hot-path figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Figures {
    /// Instructions on the hot path.
    pub hot: usize,
    /// Instructions of the whole function.
    pub function: usize,
    /// Instructions up to the fit-check branch after the first atomic, if any.
    pub to_fit_check: Option<usize>,
    /// Stack accesses on the hot path.
    pub stack: usize,
    /// Atomic instructions on the hot path.
    pub atomics: usize,
    /// Callees on the hot path, in order.
    pub calls: Vec<String>,
    /// Loops on the hot path.
    pub loops: usize,
}

impl Figures {
    /// The figures of a hot path.
    pub fn of(h: &HotPath) -> Figures {
        Figures {
            hot: h.instructions,
            function: h.function_instructions,
            to_fit_check: h.to_fit_check,
            stack: h.stack_accesses,
            atomics: h.atomics,
            calls: h.calls.clone(),
            loops: h.loops,
        }
    }
}

/// One expectation under both compilers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Flip {
    /// The rule as written.
    pub rule: String,
    /// Whether it held under `from` (absent: not evaluated there).
    pub before: Option<bool>,
    /// Whether it holds under `to`.
    pub after: Option<bool>,
    /// It held under `from` and fails under `to`.
    pub regression: bool,
}

/// Counts over the compared pairs.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub struct DiffTotals {
    /// Pairs whose listing is the same.
    pub unchanged: usize,
    /// Pairs whose listing changed (regressions included).
    pub changed: usize,
    /// Pairs whose hot path changed.
    pub hot_changed: usize,
    /// Pairs with a regression.
    pub regressions: usize,
    /// Profiles not available under a toolchain.
    pub not_available: usize,
    /// Profiles whose build failed.
    pub failed: usize,
}

/// The unified diff of `a` and `b` headed `from` and `to`; empty when equal.
pub fn unified(a: &str, b: &str, from: &str, to: &str) -> String {
    if a == b {
        return String::new();
    }
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(from, to)
        .to_string()
}

/// Every rule of either side, in the order of `from`'s then `to`'s new ones.
pub fn flips(ea: &[(&str, bool)], eb: &[(&str, bool)]) -> Vec<Flip> {
    let mut rules: Vec<&str> = ea.iter().map(|e| e.0).collect();
    for e in eb {
        if !rules.contains(&e.0) {
            rules.push(e.0);
        }
    }
    rules
        .into_iter()
        .map(|rule| {
            let before = ea.iter().find(|e| e.0 == rule).map(|e| e.1);
            let after = eb.iter().find(|e| e.0 == rule).map(|e| e.1);
            Flip {
                rule: rule.to_string(),
                before,
                after,
                regression: before == Some(true) && after == Some(false),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flips_mark_a_rule_that_held_and_now_fails() {
        let f = flips(
            &[("hot_max 15", true), ("a", true), ("gone", false)],
            &[("hot_max 15", false), ("a", true), ("new", true)],
        );
        let by = |name: &str| f.iter().find(|x| x.rule == name).unwrap();
        assert!(by("hot_max 15").regression);
        assert!(!by("a").regression);
        assert_eq!(by("gone").after, None);
        assert_eq!(by("new").before, None);
        assert!(!by("new").regression);
    }

    #[test]
    fn the_unified_diff_is_empty_for_equal_texts_only() {
        assert_eq!(unified("a\nb\n", "a\nb\n", "x", "y"), "");
        let d = unified("a\nb\n", "a\nc\n", "1.99.1", "nightly");
        assert!(d.contains("--- 1.99.1") && d.contains("+++ nightly"), "{d}");
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
    }
}
