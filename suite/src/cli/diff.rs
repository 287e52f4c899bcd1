//! `allocasm diff --from A --to B`: every profile built with two toolchains;
//! per probe and profile, whether the normalized listing changed, the
//! instruction-count delta, a unified diff, and each expectation under both.
//!
//! Listings are compared after normalization, so symbol mangling (legacy vs
//! v0, hashes, disambiguators) and label numbering never count as changes.

use std::path::PathBuf;

use allocasm::probes::PROBES;
use clap::Args;
use similar::TextDiff;

use crate::report::{self, ExpectationResult};

use super::session::{self, Built};
use super::{Backend, BuildArgs, CliError, Status, Ui};

/// `diff` arguments.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The toolchain to compare from (e.g. 1.95.0)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub from: String,
    /// The toolchain to compare to (e.g. nightly)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub to: String,
    /// Profile to build (a targets/*.toml name); repeat or separate with commas. Default: all
    #[arg(short, long = "profile", value_name = "P", value_delimiter = ',')]
    pub profiles: Vec<String>,
    /// Also exit 1 when any listing changed (not only on a regression)
    #[arg(long)]
    pub fail_on_change: bool,
    /// One line per probe and profile, without the unified diffs
    #[arg(long)]
    pub summary: bool,
    /// Run `rustup target add` for a profile whose target is not installed for a toolchain
    #[arg(long)]
    pub install: bool,
    /// Root of the per-toolchain, per-profile target dirs [default: target/allocasm-asm/]
    #[arg(long, value_name = "DIR")]
    pub target_root: Option<PathBuf>,
}

/// The comparison of one probe on one profile.
struct Comparison {
    changed: bool,
    regression: bool,
}

fn listing_text(b: &Built, probe: &str) -> Option<String> {
    b.listings.listing(probe).map(|l| l.text())
}

fn count(b: &Built, probe: &str) -> Option<usize> {
    b.listings.listing(probe).map(|l| l.instructions().count())
}

fn compare(ui: &Ui, args: &DiffArgs, from: &Built, to: &Built, probe: &str) -> Comparison {
    let a = listing_text(from, probe);
    let b = listing_text(to, probe);
    let changed = a != b;
    let (na, nb) = (count(from, probe), count(to, probe));
    let delta = match (na, nb) {
        (Some(x), Some(y)) if x == y => format!("{x} instructions"),
        (Some(x), Some(y)) => {
            let d = y as isize - x as isize;
            format!("{x} → {y} instructions ({d:+})")
        }
        (Some(x), None) => format!("{x} instructions → missing"),
        (None, Some(y)) => format!("missing → {y} instructions"),
        (None, None) => "missing under both".to_string(),
    };
    let ea = report::evaluate(
        &from.profile,
        &from.listings,
        allocasm::probes::find(probe).expect("registry probe"),
    );
    let eb = report::evaluate(
        &to.profile,
        &to.listings,
        allocasm::probes::find(probe).expect("registry probe"),
    );
    let held_before = |rule: &str| ea.iter().any(|e| e.rule == rule && e.passed);
    let newly_failing: Vec<&ExpectationResult> = eb
        .iter()
        .filter(|e| !e.passed && held_before(&e.rule))
        .collect();
    let regression = !newly_failing.is_empty() || (a.is_some() && b.is_none());
    let state = if regression {
        ui.red("REGRESSION")
    } else if changed {
        ui.yellow("changed   ")
    } else {
        ui.green("unchanged ")
    };
    println!("  {state} {probe:32} {delta}");
    if changed && !args.summary {
        let a = a.unwrap_or_default();
        let b = b.unwrap_or_default();
        let diff = TextDiff::from_lines(&a, &b);
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&from.output.toolchain, &to.output.toolchain)
            .to_string();
        for line in text.lines() {
            let colored = if line.starts_with('+') && !line.starts_with("+++") {
                ui.green(line)
            } else if line.starts_with('-') && !line.starts_with("---") {
                ui.red(line)
            } else if line.starts_with("@@") {
                ui.cyan(line)
            } else {
                line.to_string()
            };
            println!("      {colored}");
        }
    }
    if changed || regression || !args.summary {
        let rules: Vec<&str> = {
            let mut r: Vec<&str> = ea.iter().map(|e| e.rule.as_str()).collect();
            for e in &eb {
                if !r.contains(&e.rule.as_str()) {
                    r.push(&e.rule);
                }
            }
            r
        };
        let mark = |r: Option<&ExpectationResult>| match r {
            Some(e) if e.passed => ui.green("holds"),
            Some(_) => ui.red("FAILS"),
            None => ui.dim("n/a  "),
        };
        if changed || regression {
            for rule in rules {
                let fa = ea.iter().find(|e| e.rule == rule);
                let fb = eb.iter().find(|e| e.rule == rule);
                let flag = if newly_failing.iter().any(|e| e.rule == rule) {
                    ui.red("  ← regression")
                } else {
                    String::new()
                };
                println!("      {} → {}  {rule}{flag}", mark(fa), mark(fb));
            }
        }
    }
    Comparison {
        changed,
        regression,
    }
}

/// Builds both toolchains, compares, prints; exit 1 on a regression (or a
/// change with `--fail-on-change`).
pub fn run(ui: &Ui, args: &DiffArgs) -> Result<Status, CliError> {
    let profiles = session::select_profiles(session::load_profiles(ui)?, &args.profiles)?;
    let shared = BuildArgs {
        profiles: args.profiles.clone(),
        toolchain: None,
        install: args.install,
        backend: Backend::Builtin,
        target_root: args.target_root.clone(),
    };
    let jobs = [
        session::options(&shared, Some(args.from.clone()), args.install),
        session::options(&shared, Some(args.to.clone()), args.install),
    ];
    let mut builds = session::build_all(ui, &profiles, &jobs, Backend::Builtin)?;
    let to = builds.pop().expect("two toolchains");
    let from = builds.pop().expect("two toolchains");
    let header = |b: &session::Builds| {
        b.built
            .first()
            .map(|x| {
                format!(
                    "{} (LLVM {})",
                    x.output.rustc_release(),
                    x.output.llvm_version()
                )
            })
            .unwrap_or_else(|| b.toolchain.clone())
    };
    println!(
        "{}",
        ui.bold(&format!("diff {} → {}", header(&from), header(&to)))
    );
    let (mut unchanged, mut changed, mut regressions) = (0, 0, 0);
    for profile in &profiles {
        let (Some(a), Some(b)) = (from.get(&profile.name), to.get(&profile.name)) else {
            continue;
        };
        println!(
            "\n{}",
            ui.bold(&format!("{} ({})", profile.name, profile.triple))
        );
        for probe in PROBES {
            let c = compare(ui, args, a, b, probe.name);
            if c.changed {
                changed += 1;
            } else {
                unchanged += 1;
            }
            if c.regression {
                regressions += 1;
            }
        }
    }
    from.report_failures(ui);
    to.report_failures(ui);
    let summary = format!(
        "{} → {}: {} unchanged, {} changed, {} regression(s) (probe × profile pairs)",
        from.toolchain, to.toolchain, unchanged, changed, regressions
    );
    println!();
    println!(
        "{}",
        if regressions > 0 {
            ui.red(&summary)
        } else if changed > 0 {
            ui.yellow(&summary)
        } else {
            ui.green(&summary)
        }
    );
    if !from.failed.is_empty() || !to.failed.is_empty() {
        return Err(CliError::environment(format!(
            "{} profile build(s) failed (above); compared the others",
            from.failed.len() + to.failed.len()
        )));
    }
    if regressions > 0 || (args.fail_on_change && changed > 0) {
        return Ok(Status::Failed);
    }
    Ok(Status::Ok)
}
