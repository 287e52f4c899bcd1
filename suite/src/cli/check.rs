//! `allocasm check`: every expectation on every profile; one line per
//! failure (probe, profile, pattern) followed by the listing.

use allocasm_suite::codegen::expect;
use allocasm_suite::codegen::project::probes;
use clap::Args;

use super::{BuildArgs, CliError, Status, Ui};

/// `check` arguments.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Build options
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Builds the selected profiles and checks them; exit 1 on any failure.
pub fn run(ui: &Ui, args: &CheckArgs) -> Result<Status, CliError> {
    let builds = args.build.build(ui)?;
    let mut failures = 0;
    for b in &builds.built {
        for f in expect::check_all(&b.profile, &b.listings, probes()) {
            failures += 1;
            let text = f.to_string();
            let mut lines = text.lines();
            if let Some(first) = lines.next() {
                outln!("{} {first}", ui.red("FAIL"));
            }
            for l in lines {
                outln!("{}", ui.dim(l));
            }
        }
    }
    builds.report_failures(ui);
    let summary = format!(
        "checked {} probes on {} profile(s) with {}: {} failure(s){}",
        probes().len(),
        builds.built.len(),
        builds.toolchain,
        failures,
        match (builds.failed.len(), builds.unavailable.len()) {
            (0, 0) => String::new(),
            (0, n) => format!(", {n} profile(s) not available"),
            (f, 0) => format!(", {f} profile build(s) failed"),
            (f, n) => format!(", {f} profile build(s) failed, {n} not available"),
        }
    );
    if !builds.failed.is_empty() {
        return Err(CliError::environment(summary));
    }
    if failures > 0 {
        outln!("{}", ui.red(&summary));
        Ok(Status::Failed)
    } else {
        if !ui.quiet {
            outln!("{}", ui.green(&summary));
        }
        Ok(Status::Ok)
    }
}
