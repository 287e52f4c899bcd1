//! `allocasm show PROBE`: one probe's listing on one or more profiles.

use allocasm::codegen::listing::Line;
use clap::Args;

use crate::report::annotate;
use crate::report::text::side_by_side;

use super::session::{self, Built};
use super::{BuildArgs, CliError, Status, Ui, exit};

/// `show` arguments.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The probe (`probe_linear_alloc`, or `linear_alloc`)
    #[arg(value_name = "PROBE")]
    pub probe: String,
    /// Profiles in columns, side by side
    #[arg(long)]
    pub side_by_side: bool,
    /// The function as the compiler wrote it (directives, original labels and mangled symbols)
    #[arg(long)]
    pub raw: bool,
    /// Column width for --side-by-side
    #[arg(long, value_name = "N", default_value_t = 48)]
    pub width: usize,
    /// Build options
    #[command(flatten)]
    pub build: BuildArgs,
}

fn lines_of(ui: &Ui, built: &Built, probe: &str, raw: bool, plain: bool) -> Vec<String> {
    let Some(found) = built.listings.probes.get(probe) else {
        return vec![format!(
            "{}",
            ui.red("(missing: the probe is not in this profile's assembly)")
        )];
    };
    if raw {
        return found.raw.lines.clone();
    }
    let tags = annotate::tags(&found.listing, &built.profile.classes);
    let mut out = vec![format!("{}:", found.listing.name)];
    for (line, tags) in found.listing.lines.iter().zip(tags) {
        let text = line.to_string();
        let mark = if plain || tags.is_empty() || matches!(line, Line::Label(_)) {
            text
        } else if tags.contains(&annotate::Tag::Call) || tags.contains(&annotate::Tag::Loop) {
            ui.yellow(&text)
        } else {
            ui.cyan(&text)
        };
        out.push(mark);
    }
    let s = found.listing.summary(&built.profile.classes);
    let tls = annotate::tls_access(&found.listing);
    out.push(String::new());
    out.push(format!(
        "{} instr · {} atomic RMW · {} calls · {} loops",
        s.instructions, s.atomic_rmw, s.calls, s.backward_branches
    ));
    out.push(format!("TLS: {}", tls.how));
    out
}

/// Builds the selected profiles and prints the probe's listing on each.
pub fn run(ui: &Ui, args: &ShowArgs) -> Result<Status, CliError> {
    let probe = session::find_probe(&args.probe)?;
    let profiles = session::select_profiles(session::load_profiles(ui)?, &args.build.profiles)?;
    let opts = session::options(
        &args.build,
        args.build.toolchain.clone(),
        args.build.install,
    );
    let builds = session::build_all(ui, &profiles, &[opts], args.build.backend)?
        .pop()
        .expect("one toolchain");
    if args.side_by_side {
        let columns: Vec<(String, Vec<String>)> = builds
            .built
            .iter()
            .map(|b| {
                let mut lines = lines_of(ui, b, probe.name, args.raw, true);
                lines.insert(0, b.profile.triple.clone());
                (b.profile.name.clone(), lines)
            })
            .collect();
        if let Some(first) = builds.built.first() {
            println!(
                "{}",
                ui.dim(&format!(
                    "{} · LLVM {} · {}",
                    first.output.rustc_release(),
                    first.output.llvm_version(),
                    first.output.codegen_units()
                ))
            );
        }
        print!("{}", side_by_side(&columns, args.width.max(12)));
    } else {
        for b in &builds.built {
            println!("{}", ui.bold(&format!("# {}", b.output.header())));
            for line in lines_of(ui, b, probe.name, args.raw, false) {
                println!("{line}");
            }
            println!();
        }
    }
    builds.report_failures(ui);
    if !builds.failed.is_empty() {
        return Err(CliError {
            code: exit::ENVIRONMENT,
            message: format!("{} profile build(s) failed (above)", builds.failed.len()),
            printed: false,
        });
    }
    Ok(Status::Ok)
}
