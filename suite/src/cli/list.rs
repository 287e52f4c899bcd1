//! `allocasm list`: the probe registry and the profiles.

use allocasm::probes::ProbeKind;
use allocasm_suite::codegen::project::{self, probes};

use super::{CliError, Status, Ui, session};

/// Prints every probe, then every profile.
pub fn run(ui: &Ui) -> Result<Status, CliError> {
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
        let kind = match p.kind {
            ProbeKind::SingleThreaded => "single-threaded",
            ProbeKind::Concurrent => "concurrent",
        };
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
