//! `allocasm doctor`: every outside tool, found or missing, in one table.
//!
//! One row per tool of [`tools`](allocasm_suite::tools): found or missing,
//! its path and version, what it enables and the command that installs it
//! on this OS. The tools a view of this host needs (the linked view's
//! disassembler and cross linker, qemu-user for the executed counts,
//! llvm-mca for the cycle predictions) are marked `view`; the exit status
//! is 1 when one of them is missing, 0 otherwise. A tool this host has no
//! use for (qemu-user on macOS) is shown and never a fault.

use std::collections::BTreeSet;

use allocasm_suite::codegen::executed;
use allocasm_suite::codegen::profile::Arch;
use allocasm_suite::tools::{self, Tool};

use super::{CliError, Status, Ui, session};

/// The tools the views of `profiles` need on this host.
fn needed(profiles: &[allocasm_suite::codegen::Profile]) -> BTreeSet<Tool> {
    let mut need = BTreeSet::new();
    if !cfg!(target_os = "linux") {
        return need;
    }
    let host = Arch::from_triple(std::env::consts::ARCH);
    for p in profiles {
        let linux = p.triple.contains("-linux-");
        if p.linked.is_some() && linux {
            if p.linked.as_ref().and_then(|l| l.objdump.as_ref()).is_none() {
                need.insert(Tool::Disassembler(p.arch()));
            }
            if p.arch() != host {
                need.insert(Tool::CrossGcc(p.arch()));
            }
        }
        if !executed::measured_profiles(std::slice::from_ref(p)).is_empty() {
            need.insert(Tool::Qemu(p.arch()));
            need.insert(Tool::LlvmMca);
        }
    }
    need
}

/// Prints the table; exit 1 when a view of this host lacks a tool.
pub fn run(ui: &Ui) -> Result<Status, CliError> {
    let profiles = session::load_profiles(ui)?;
    let need = needed(&profiles);
    let rows: Vec<[String; 6]> = tools::inventory()
        .into_iter()
        .map(|(tool, found)| {
            let role = if need.contains(&tool) {
                "view"
            } else if tool.not_for_this_host().is_some() {
                "n/a"
            } else {
                "optional"
            };
            let (state, path, version) = match &found {
                Ok(f) => (
                    if f.fallback && matches!(tool, Tool::Disassembler(_)) {
                        "found (fallback: GNU objdump or another LLVM's)"
                    } else if f.fallback {
                        "found (not the compiler's LLVM major)"
                    } else {
                        "found"
                    }
                    .to_string(),
                    f.program(),
                    f.version.clone().unwrap_or_default(),
                ),
                Err(m) => (
                    "missing".to_string(),
                    format!("(looked for {})", m.looked_for),
                    String::new(),
                ),
            };
            let enables = match tool.not_for_this_host() {
                Some(why) => format!("{} [{why}]", tool.enables()),
                None => tool.enables(),
            };
            [
                tool.name(),
                format!("{state} ({role})"),
                path,
                version,
                enables,
                tool.install(),
            ]
        })
        .collect();
    let mut missing_views = Vec::new();
    for (row, tool) in rows.iter().zip(tools::all_tools()) {
        if need.contains(&tool) && row[1].starts_with("missing") {
            missing_views.push(tool);
        }
    }
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        outln!("{:<26} {}", row[0], row[1]);
        if !row[2].is_empty() {
            outln!("  path     {}", row[2]);
        }
        if !row[3].is_empty() {
            outln!("  version  {}", row[3]);
        }
        outln!("  enables  {}", row[4]);
        outln!("  install  {}", row[5]);
    }
    outln!();
    if missing_views.is_empty() {
        outln!("every view this host can produce has its tools");
        Ok(Status::Ok)
    } else {
        let names: Vec<String> = missing_views.iter().map(Tool::name).collect();
        outln!(
            "views will be missing for lack of: {} (the install lines are above)",
            names.join(", ")
        );
        Ok(Status::Failed)
    }
}
