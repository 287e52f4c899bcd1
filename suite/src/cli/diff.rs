//! `allocasm diff --from A --to B`: every profile built with two toolchains
//! and compared probe by probe, about the hot path first: its instructions
//! before → after with the function's count beside them, the instructions to
//! the fit check, stack accesses, atomics, calls and loops, the unified diff
//! of the hot path's lines and then of the whole listing, and every
//! expectation that flipped. A summary table (probes down, profiles across)
//! gives each pair's hot-path delta.
//!
//! Listings are compared after normalization, so symbol mangling (legacy vs
//! v0, hashes, disambiguators) and label numbering never count as changes.
//! A profile one toolchain cannot build at all (rustup has no rust-std for
//! its target) is "not available" and the rest go on; a failed build is an
//! environment error (exit 3) after the others are compared.
//!
//! The comparison's model is [`allocasm_suite::diff`]. `--format
//! text|md|json|html`: the JSON's schema is `docs/diff.schema.json`
//! (generated from [`DiffReport`] by schemars; a
//! test keeps the file in step), documented in `docs/diff-json.md`.

use std::fmt::Write as _;

use allocasm::probes::Probe;
use allocasm_suite::codegen::cfg::HotPath;
use allocasm_suite::codegen::project::probes;
use allocasm_suite::render::{self, Block, Cell, Doc, Mark, Span, Text};
use clap::Args;

use crate::report::{self, ExpectationResult};
use allocasm_suite::diff::{
    CompilerInfo, DiffReport, DiffTotals, Figures, ProbeDiff, ProbeState, ProfileDiff,
    ProfileStatus, SCHEMA, flips, unified,
};

use super::session::{self, Builds, Built};
use super::{Backend, CliError, OutputArgs, Status, TargetArgs, Ui};

/// `diff` arguments.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The toolchain to compare from (e.g. 1.99.1)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub from: String,
    /// The toolchain to compare to (e.g. beta, nightly)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub to: String,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also exit 1 when any listing changed (not only on a regression)
    #[arg(long)]
    pub fail_on_change: bool,
    /// Leave out each changed probe's figures and unified diffs (the summary table and the
    /// expectation flips stay)
    #[arg(long)]
    pub summary: bool,
}

/// Compares one probe on one profile.
pub fn compare_probe(from: &Built, to: &Built, probe: &Probe, names: (&str, &str)) -> ProbeDiff {
    let listing = |b: &Built| b.listings.listing(probe.name).map(|l| l.text());
    let hot = |b: &Built| b.listings.hot_path(&b.profile, probe.name);
    let (la, lb) = (listing(from), listing(to));
    let (ha, hb) = (hot(from), hot(to));
    let ea = report::evaluate(&from.profile, &from.listings, probe);
    let eb = report::evaluate(&to.profile, &to.listings, probe);
    fn rules(r: &[ExpectationResult]) -> Vec<(&str, bool)> {
        r.iter().map(|e| (e.rule.as_str(), e.passed)).collect()
    }
    let mut expectations = flips(&rules(&ea), &rules(&eb));
    expectations.retain(|f| f.before != f.after || f.after == Some(false));
    let regression = expectations.iter().any(|f| f.regression) || (la.is_some() && lb.is_none());
    let changed = la != lb;
    let hot_text = |h: &Option<HotPath>| h.as_ref().map(HotPath::text).unwrap_or_default();
    let (hta, htb) = (hot_text(&ha), hot_text(&hb));
    ProbeDiff {
        probe: probe.name.to_string(),
        state: if regression {
            ProbeState::Regression
        } else if changed {
            ProbeState::Changed
        } else {
            ProbeState::Unchanged
        },
        hot_changed: hta != htb,
        before: ha.as_ref().map(Figures::of),
        after: hb.as_ref().map(Figures::of),
        hot_diff: unified(&hta, &htb, names.0, names.1),
        listing_diff: unified(
            &la.unwrap_or_default(),
            &lb.unwrap_or_default(),
            names.0,
            names.1,
        ),
        expectations,
    }
}

fn compiler(b: &Builds) -> CompilerInfo {
    let first = b.built.iter().find(|x| x.output.toolchain == b.toolchain);
    CompilerInfo {
        toolchain: b.toolchain.clone(),
        release: first.map(|x| x.output.rustc_release().to_string()),
        llvm: first.map(|x| x.output.llvm_version().to_string()),
    }
}

/// Compares two toolchains' builds of `profiles`.
pub fn compare(
    profiles: &[allocasm_suite::codegen::Profile],
    from: &Builds,
    to: &Builds,
) -> DiffReport {
    let mut totals = DiffTotals::default();
    let names = (from.toolchain.as_str(), to.toolchain.as_str());
    let reason_of = |b: &Builds, name: &str| {
        b.unavailable
            .iter()
            .find(|(p, _)| p.name == name)
            .map(|(_, e)| (ProfileStatus::NotAvailable, e.to_string()))
            .or_else(|| {
                b.failed
                    .iter()
                    .find(|(p, _)| p.name == name)
                    .map(|(_, e)| (ProfileStatus::Failed, session::build_error_message(e)))
            })
    };
    let profiles = profiles
        .iter()
        .map(|p| {
            let base = ProfileDiff {
                profile: p.name.clone(),
                triple: p.triple.clone(),
                status: ProfileStatus::Compared,
                reason: None,
                probes: Vec::new(),
            };
            match (from.get(&p.name), to.get(&p.name)) {
                (Some(a), Some(b)) => {
                    let probes: Vec<ProbeDiff> = probes()
                        .iter()
                        .map(|probe| compare_probe(a, b, probe, names))
                        .collect();
                    for d in &probes {
                        if d.state == ProbeState::Unchanged {
                            totals.unchanged += 1;
                        } else {
                            totals.changed += 1;
                        }
                        totals.regressions += usize::from(d.state == ProbeState::Regression);
                        totals.hot_changed += usize::from(d.hot_changed);
                    }
                    ProfileDiff { probes, ..base }
                }
                _ => {
                    let why: Vec<(ProfileStatus, String)> =
                        [reason_of(from, &p.name), reason_of(to, &p.name)]
                            .into_iter()
                            .flatten()
                            .collect();
                    let status = if why.iter().any(|(s, _)| *s == ProfileStatus::Failed) {
                        totals.failed += 1;
                        ProfileStatus::Failed
                    } else {
                        totals.not_available += 1;
                        ProfileStatus::NotAvailable
                    };
                    let reason = why
                        .into_iter()
                        .map(|(_, r)| r)
                        .collect::<Vec<_>>()
                        .join("; ");
                    ProfileDiff {
                        status,
                        reason: Some(reason),
                        ..base
                    }
                }
            }
        })
        .collect();
    DiffReport {
        schema: SCHEMA.into(),
        from: compiler(from),
        to: compiler(to),
        profiles,
        totals,
    }
}

/// A hot-path cell of the summary table: `=` when the hot path is the same,
/// `47 → 48 (+1)` when its count moved, `47 (lines)` when only its lines did,
/// `gone`/`new` for a probe missing on one side.
pub fn delta_cell(d: &ProbeDiff) -> String {
    match (&d.before, &d.after) {
        (Some(a), Some(b)) if a.hot == b.hot && !d.hot_changed => "=".into(),
        (Some(a), Some(b)) if a.hot == b.hot => format!("{} (lines)", a.hot),
        (Some(a), Some(b)) => {
            let delta = b.hot as isize - a.hot as isize;
            format!("{} → {} ({delta:+})", a.hot, b.hot)
        }
        (Some(_), None) => "gone".into(),
        (None, Some(_)) => "new".into(),
        (None, None) => "missing".into(),
    }
}

/// The hot path's figures: one line when both sides agree, else before
/// and after.
fn figures_lines(d: &ProbeDiff) -> Vec<String> {
    let side = |f: &Option<Figures>| match f {
        Some(f) => format!(
            "hot {} (function {}), to fit check {}, stack {}, atomics {}, calls {}, loops {}",
            f.hot,
            f.function,
            f.to_fit_check.map_or("-".into(), |n| n.to_string()),
            f.stack,
            f.atomics,
            if f.calls.is_empty() {
                "none".into()
            } else {
                f.calls.join(" ")
            },
            f.loops
        ),
        None => "missing".into(),
    };
    if d.before == d.after {
        vec![side(&d.before)]
    } else {
        vec![side(&d.before), format!("→ {}", side(&d.after))]
    }
}

fn headline(r: &DiffReport) -> String {
    let side = |c: &CompilerInfo| match (&c.release, &c.llvm) {
        (Some(rel), Some(llvm)) => format!("{rel} (LLVM {llvm})"),
        _ => c.toolchain.clone(),
    };
    format!("diff {} → {}", side(&r.from), side(&r.to))
}

fn totals_line(r: &DiffReport) -> String {
    let t = r.totals;
    let mut s = format!(
        "{} → {}: {} unchanged, {} changed ({} on the hot path), {} regression(s) (probe × \
         profile pairs)",
        r.from.toolchain, r.to.toolchain, t.unchanged, t.changed, t.hot_changed, t.regressions
    );
    if t.not_available > 0 {
        let _ = write!(s, "; {} profile(s) not available", t.not_available);
    }
    if t.failed > 0 {
        let _ = write!(s, "; {} profile(s) failed to build", t.failed);
    }
    s
}

/// The compared profiles and the probes with something to show.
fn compared(r: &DiffReport) -> Vec<&ProfileDiff> {
    r.profiles
        .iter()
        .filter(|p| p.status == ProfileStatus::Compared)
        .collect()
}

/// The summary table: a probe per row, then its [`delta_cell`] per
/// compared profile; `None` when no profile was compared.
fn summary_table(r: &DiffReport) -> Option<render::Table> {
    let cols = compared(r);
    let rows = probes().iter().map(|probe| {
        let cells = cols.iter().map(|p| {
            let c = (p.probes.iter().find(|d| d.probe == probe.name))
                .map_or_else(|| "-".into(), delta_cell);
            let mark = if c == "=" { Mark::Muted } else { Mark::Changed };
            Cell::new(c, mark)
        });
        (Text::code(probe.name), cells.collect())
    });
    let columns = cols.iter().map(|p| Text::plain(&p.profile));
    (!cols.is_empty()).then(|| render::Table::probes_down(columns, rows))
}

/// The document: the totals, the profiles not compared, the summary table
/// of every probe's hot path, then each changed probe folded under one line
/// with its figures, expectation flips and (unless `summary`) its diffs.
pub fn document(r: &DiffReport, summary: bool) -> Doc {
    let t = r.totals;
    let verdict = if t.regressions > 0 || t.failed > 0 {
        Mark::Bad
    } else if t.changed > 0 {
        Mark::Changed
    } else {
        Mark::Good
    };
    let mut doc = Doc::new(headline(r));
    doc.push(Block::Heading(1, Text::plain(headline(r))))
        .push(Block::Para(Text::marked(verdict, totals_line(r))));
    let skipped: Vec<Text> = r
        .profiles
        .iter()
        .filter(|p| p.status != ProfileStatus::Compared)
        .map(|p| {
            let mark = if p.status == ProfileStatus::Failed {
                Mark::Bad
            } else {
                Mark::Changed
            };
            Text::marked(Mark::Strong, &p.profile)
                .then(" ")
                .with(mark, format!("{}:", p.status.name()))
                .then(format!(" {}", p.reason.as_deref().unwrap_or("")))
        })
        .collect();
    if !skipped.is_empty() {
        doc.push(Block::List(skipped));
    }
    if let Some(table) = summary_table(r) {
        doc.heading(2, "hot path, instructions (= unchanged)")
            .push(Block::Table(table));
    }
    for p in compared(r) {
        for d in p.probes.iter().filter(|d| d.state != ProbeState::Unchanged) {
            let state = if d.state == ProbeState::Regression {
                Mark::Bad
            } else {
                Mark::Changed
            };
            let mut blocks = Vec::new();
            if !summary {
                blocks.push(Block::List(
                    figures_lines(d).into_iter().map(Text::plain).collect(),
                ));
            }
            let verdict = |v: Option<bool>| match v {
                Some(true) => Text::marked(Mark::Good, "holds"),
                Some(false) => Text::marked(Mark::Bad, "fails"),
                None => Text::marked(Mark::Muted, "n/a"),
            };
            let flips: Vec<Text> = d
                .expectations
                .iter()
                .map(|f| {
                    let mut t = verdict(f.before);
                    t.0.push(Span {
                        text: " → ".into(),
                        mark: Mark::Plain,
                    });
                    t.0.extend(verdict(f.after).0);
                    let t = t.then(": ").with(Mark::Code, &f.rule);
                    if f.regression {
                        t.with(Mark::Bad, "  ← regression")
                    } else {
                        t
                    }
                })
                .collect();
            if !flips.is_empty() {
                blocks.push(Block::List(flips));
            }
            if !summary {
                for (title, diff) in [
                    ("hot path", &d.hot_diff),
                    ("whole listing", &d.listing_diff),
                ] {
                    if !diff.is_empty() {
                        blocks.push(Block::Diff {
                            title: title.to_string(),
                            text: diff.clone(),
                        });
                    }
                }
            }
            doc.push(Block::Details {
                summary: Text::code(&d.probe)
                    .then(format!(" on {}: ", p.profile))
                    .with(state, d.state.name())
                    .then(format!(" (hot path {})", delta_cell(d))),
                blocks,
            });
        }
    }
    doc
}

/// The JSON (docs/diff.schema.json).
/// Builds both toolchains, compares, prints; exit 1 on a regression (or a
/// change with `--fail-on-change`), 3 when a build failed.
pub fn run(ui: &Ui, args: &DiffArgs) -> Result<Status, CliError> {
    let profiles = args.target.profiles(ui)?;
    if args.target.install {
        super::history::ensure_toolchains(ui, &[args.from.clone(), args.to.clone()], true)?;
    }
    let jobs = [
        args.target.options(Some(args.from.clone())),
        args.target.options(Some(args.to.clone())),
    ];
    let mut builds = session::build_all(ui, &profiles, &jobs, Backend::Builtin, false)?;
    let to = builds.pop().expect("two toolchains");
    let from = builds.pop().expect("two toolchains");
    let r = compare(&profiles, &from, &to);
    args.output.write(
        ui,
        || document(&r, args.summary),
        || serde_json::to_string_pretty(&r).expect("a diff report serializes") + "\n",
    )?;
    if args.output.out.is_some() && !ui.quiet {
        outln!("{}", totals_line(&r));
    }
    from.report_failures(ui);
    to.report_failures(ui);
    if r.totals.failed > 0 {
        return Err(CliError::environment(format!(
            "{} profile build(s) failed (above); compared the others",
            from.failed.len() + to.failed.len()
        )));
    }
    let t = r.totals;
    if t.regressions > 0 || (args.fail_on_change && t.changed > 0) {
        return Ok(Status::Failed);
    }
    Ok(Status::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(hot: usize) -> Figures {
        Figures {
            hot,
            function: hot + 10,
            to_fit_check: Some(5),
            stack: 0,
            atomics: 1,
            calls: Vec::new(),
            loops: 0,
        }
    }

    fn probe_diff(before: Option<usize>, after: Option<usize>, hot_changed: bool) -> ProbeDiff {
        ProbeDiff {
            probe: "probe_x".into(),
            state: ProbeState::Changed,
            hot_changed,
            before: before.map(figures),
            after: after.map(figures),
            hot_diff: String::new(),
            listing_diff: String::new(),
            expectations: Vec::new(),
        }
    }

    #[test]
    fn a_cell_says_how_the_hot_path_moved() {
        for (before, after, hot_changed, cell) in [
            (Some(47), Some(47), false, "="),
            (Some(47), Some(47), true, "47 (lines)"),
            (Some(47), Some(48), true, "47 → 48 (+1)"),
            (Some(48), Some(46), true, "48 → 46 (-2)"),
            (Some(1), None, true, "gone"),
            (None, Some(1), true, "new"),
        ] {
            let d = probe_diff(before, after, hot_changed);
            assert_eq!(delta_cell(&d), cell, "{before:?} → {after:?}");
        }
    }

    #[test]
    fn the_committed_json_schema_is_the_generated_one() {
        crate::cli::check_schema::<DiffReport>("diff.schema.json");
    }
}
