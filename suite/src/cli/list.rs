//! `allocasm list`: the probe registry and the profiles; with
//! `--functions`, every function of each profile's build.

use allocasm_suite::codegen::functions::FunctionIndex;
use allocasm_suite::codegen::profile::kind_name;
use allocasm_suite::codegen::project::{self, probes};
use clap::Args;

use super::{BuildArgs, CliError, Status, Ui, session};

/// `list` arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Build the profiles and list the functions of their `.s` files, with sizes (instructions)
    #[arg(long)]
    pub functions: bool,
    /// With --functions: only those whose demangled path contains it
    #[arg(value_name = "PATTERN", requires = "functions")]
    pub pattern: Option<String>,
    /// Build options (with --functions)
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Prints every probe, then every profile (or with `--functions`, every
/// function of each build).
pub fn run(ui: &Ui, args: &ListArgs) -> Result<Status, CliError> {
    if args.functions {
        return functions(ui, args);
    }
    let width = probes().iter().map(|p| p.name.len()).max().unwrap_or(0);
    let alloc_width = probes()
        .iter()
        .map(|p| p.allocator.len())
        .max()
        .unwrap_or(0);
    let project = project::current();
    if probes().is_empty() {
        // Found by prefix: only a build says which functions there are.
        outln!(
            "{}",
            ui.bold(&format!(
                "probes of {}: {} (found in each build: `allocasm check` or `report` lists them)",
                project.package,
                project.describe_probes()
            ))
        );
    } else {
        outln!("{}", ui.bold(&format!("{} probes", probes().len())));
    }
    for p in probes() {
        let kind = kind_name(p.kind);
        outln!(
            "  {:width$}  {:alloc_width$}  {:16} {:15}  {}",
            p.name,
            p.allocator,
            p.operation,
            kind,
            p.expect
        );
    }
    let profiles = session::load_profiles(ui)?;
    outln!();
    outln!(
        "{}",
        ui.bold(&format!("{} profiles (targets/*.toml)", profiles.len()))
    );
    let width = profiles.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &profiles {
        let flags = if p.rustflags.is_empty() {
            "(no extra flags)".to_string()
        } else {
            p.rustflags.join(" ")
        };
        let toolchain = match &p.toolchain {
            Some(tc) => format!("  toolchain {tc} (its own, not the pinned one)"),
            None => String::new(),
        };
        outln!(
            "  {:width$}  {}  {}{toolchain}",
            p.name,
            p.triple,
            ui.dim(&flags)
        );
        outln!("  {:width$}  {}", "", p.description);
    }
    Ok(Status::Ok)
}

/// `list --functions [PATTERN]`: per profile, every function of the build
/// whose path contains the pattern, numbered as `show NAME#N` picks them,
/// with its instruction count.
fn functions(ui: &Ui, args: &ListArgs) -> Result<Status, CliError> {
    let builds = args.build.build(ui)?;
    let pattern = args.pattern.as_deref().unwrap_or("");
    for b in &builds.built {
        let index = FunctionIndex::new(&b.profile, &b.output);
        let found = index.matching(pattern);
        outln!(
            "{}",
            ui.bold(&format!(
                "# {}: {} of {} function(s){}",
                b.profile.name,
                found.len(),
                index.entries.len(),
                if pattern.is_empty() {
                    String::new()
                } else {
                    format!(" matching `{pattern}`")
                }
            ))
        );
        for (n, e) in found.iter().enumerate() {
            let size = e.listing(&b.profile).instructions().count();
            let cold = if e.cold { " (cold)" } else { "" };
            outln!(
                "  #{:<4} {size:>6} instr  {}{cold}",
                n + 1,
                e.display(index.path_is_shared(&e.path))
            );
        }
    }
    builds.report_failures(ui);
    if !builds.failed.is_empty() {
        return Err(CliError::environment(format!(
            "{} profile build(s) failed (above)",
            builds.failed.len()
        )));
    }
    Ok(Status::Ok)
}
