//! `allocasm show PROBE`: one probe's listing on one or more profiles, and
//! with `--linked` its listings in the linked executables too.

use allocasm_suite::codegen::linked::Lto;
use allocasm_suite::codegen::listing::Line;
use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{ProbeListings, Profile};
use clap::Args;

use crate::report::text::side_by_side;
use crate::report::{HotPathReport, annotate};

use super::session::{self, Builds, linked_error_message};
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
    /// Also the listings in the linked executables (release profile, and fat LTO) of the
    /// profiles with a [linked] table: what the linker made of the fast path
    #[arg(long)]
    pub linked: bool,
    /// Build options
    #[command(flatten)]
    pub build: BuildArgs,
}

fn lines_of(
    ui: &Ui,
    profile: &Profile,
    listings: &ProbeListings,
    probe: &str,
    raw: bool,
    plain: bool,
) -> Vec<String> {
    let Some(found) = listings.probes.get(probe) else {
        return vec![ui.red("(missing: the probe is not in this build)")];
    };
    if raw {
        return found.raw.lines.clone();
    }
    let tags = annotate::tags(&found.listing, &profile.classes);
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
    let s = found.listing.summary(&profile.classes);
    let tls = annotate::tls_access(&found.listing);
    out.push(String::new());
    out.push(format!(
        "{} instr · {} atomic RMW · {} calls · {} loops",
        s.instructions, s.atomic_rmw, s.calls, s.backward_branches
    ));
    out.push(format!("TLS: {}", tls.how));
    if let Some(hot) = listings.hot_path(profile, probe) {
        out.extend(hot_path_lines(&HotPathReport::from(&hot), plain));
    }
    out
}

/// The hot path's figures, as the report has them under each listing: one
/// line, or (`narrow`, for a column of --side-by-side) a few short ones.
fn hot_path_lines(hot: &HotPathReport, narrow: bool) -> Vec<String> {
    if !narrow {
        return vec![hot.line()];
    }
    let calls = if hot.calls.is_empty() {
        "none".to_string()
    } else {
        hot.calls.join(", ")
    };
    vec![
        format!(
            "hot path: {} of {} instructions{}",
            hot.instructions,
            hot.function_instructions,
            if hot.no_hot_return {
                " (no hot return)"
            } else {
                ""
            }
        ),
        format!(
            "  {} · {} atomic(s)",
            hot.to_fit_check
                .map_or("no fit check".to_string(), |n| format!(
                    "{n} to the fit check"
                )),
            hot.atomics
        ),
        format!(
            "  {} stack access(es){} · {} loop(s)",
            hot.stack_accesses,
            if hot.frame_accesses > 0 {
                format!(" (+{} frame)", hot.frame_accesses)
            } else {
                String::new()
            },
            hot.loops
        ),
        format!("  calls: {calls}"),
    ]
}

/// Builds the selected profiles and prints the probe's listing on each.
pub fn run(ui: &Ui, args: &ShowArgs) -> Result<Status, CliError> {
    // A project whose probes are found by prefix knows them only once built.
    let early = if probes().is_empty() {
        None
    } else {
        Some(session::find_probe(&args.probe)?)
    };
    if args.linked && !project::current().is_allocasm() {
        return Err(CliError::usage(
            "--linked shows allocasm's own linked examples; this project has none".to_string(),
        ));
    }
    let profiles = args.build.target.profiles(ui)?;
    let opts = args.build.options();
    let builds = session::build_all_with(ui, &profiles, &[opts], args.build.backend, args.linked)?
        .pop()
        .expect("one toolchain");
    let probe = match early {
        Some(p) => p,
        None => session::find_probe(&args.probe)?,
    };
    if args.linked {
        let without: Vec<&str> = profiles
            .iter()
            .filter(|p| p.linked.is_none())
            .map(|p| p.name.as_str())
            .collect();
        if !without.is_empty() {
            ui.note(&format!(
                "no linked view for {} (no [linked] table in targets/)",
                without.join(", ")
            ));
        }
    }
    if args.side_by_side {
        let mut columns: Vec<(String, Vec<String>)> = Vec::new();
        for b in &builds.built {
            let mut lines = lines_of(ui, &b.profile, &b.listings, probe.name, args.raw, true);
            lines.insert(0, b.profile.triple.clone());
            columns.push((b.profile.name.clone(), lines));
            for (title, lines) in linked_lines(ui, &builds, &b.profile, probe.name, args.raw, true)
            {
                columns.push((format!("{} {title}", b.profile.name), lines));
            }
        }
        if let Some(first) = builds.built.first() {
            outln!(
                "{}",
                ui.dim(&format!(
                    "{} · LLVM {} · {}",
                    first.output.rustc_release(),
                    first.output.llvm_version(),
                    first.output.codegen_units()
                ))
            );
        }
        out!("{}", side_by_side(&columns, args.width.max(12)));
    } else {
        for b in &builds.built {
            outln!("{}", ui.bold(&format!("# {}", b.output.header())));
            for line in lines_of(ui, &b.profile, &b.listings, probe.name, args.raw, false) {
                outln!("{line}");
            }
            outln!();
            for (header, lines) in
                linked_lines(ui, &builds, &b.profile, probe.name, args.raw, false)
            {
                outln!("{}", ui.bold(&format!("# {header}")));
                for line in lines {
                    outln!("{line}");
                }
                outln!();
            }
        }
    }
    builds.report_failures(ui);
    let linked_failed = builds.linked_failures().count();
    if !builds.failed.is_empty() || linked_failed > 0 {
        return Err(CliError {
            code: exit::ENVIRONMENT,
            message: format!(
                "{} profile build(s) and {linked_failed} linked build(s) failed (above)",
                builds.failed.len()
            ),
            printed: false,
        });
    }
    Ok(Status::Ok)
}

/// The probe's listings in a profile's linked executables, release then fat
/// LTO, each with its header (`linked, release` for columns, the build's
/// header line otherwise); why one is missing in its place.
fn linked_lines(
    ui: &Ui,
    builds: &Builds,
    profile: &Profile,
    probe: &str,
    raw: bool,
    plain: bool,
) -> Vec<(String, Vec<String>)> {
    Lto::ALL
        .iter()
        .filter_map(|&lto| builds.linked(&profile.name, lto))
        .map(|l| {
            let short = match l.lto {
                Lto::Off => "linked, release",
                Lto::Fat => "linked, fat LTO",
            };
            match &l.result {
                Ok((output, listings)) => (
                    if plain {
                        short.to_string()
                    } else {
                        output.header()
                    },
                    lines_of(ui, profile, listings, probe, raw, plain),
                ),
                Err(e) => (
                    if plain {
                        short.to_string()
                    } else {
                        format!("profile {} {short}", profile.name)
                    },
                    std::iter::once(ui.red("(not built)"))
                        .chain(
                            linked_error_message(profile, l.lto, e)
                                .lines()
                                .map(str::to_string),
                        )
                        .collect(),
                ),
            }
        })
        .collect()
}
