//! `allocasm show NAME`: one probe's listing on one or more profiles (with
//! `--linked` its listings in the linked executables too), or any function
//! of the build by a part of its demangled path; with `--follow`, the hot
//! path through the calls it makes into the build
//! ([`allocasm_suite::codegen::follow`]).

use std::collections::BTreeSet;

use allocasm_suite::codegen::follow::{self, DEFAULT_DEPTH};
use allocasm_suite::codegen::functions::{Found, FunctionIndex};
use allocasm_suite::codegen::linked::Lto;
use allocasm_suite::codegen::listing::{Line, Listing};
use allocasm_suite::codegen::normalize;
use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{Function, ProbeListings, Profile, cfg};
use clap::Args;

use crate::report::annotate;
use crate::report::text::side_by_side;

use super::session::{self, Builds, linked_error_message};
use super::{BuildArgs, CliError, Status, Ui, exit};

/// `show` arguments.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The probe (`probe_linear_alloc`, or `linear_alloc`), or any function of the build by a
    /// part of its demangled path (`Rewindable::alloc_slow`; `alloc_slow#2` picks the second of
    /// several matches)
    #[arg(value_name = "NAME")]
    pub probe: String,
    /// Follow the calls on the hot path into functions of the same build: each callee's
    /// listing and hot path, and the figures of the whole
    #[arg(long)]
    pub follow: bool,
    /// How many calls deep --follow goes
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DEPTH, requires = "follow")]
    pub depth: usize,
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
    function_lines(
        ui,
        profile,
        (&found.raw, &found.listing),
        &listings.cold_functions,
        raw,
        plain,
    )
}

/// One function's listing (annotated), its figures and its hot path: the
/// same for a probe and for any other function of the build.
fn function_lines(
    ui: &Ui,
    profile: &Profile,
    (raw_fn, listing): (&Function, &Listing),
    cold: &BTreeSet<String>,
    raw: bool,
    plain: bool,
) -> Vec<String> {
    if raw {
        return raw_fn.lines.clone();
    }
    let tags = annotate::tags(listing, &profile.classes);
    let mut out = vec![format!("{}:", listing.name)];
    for (line, tags) in listing.lines.iter().zip(tags) {
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
    let s = listing.summary(&profile.classes);
    let tls = annotate::tls_access(listing);
    out.push(String::new());
    out.push(format!(
        "{} instr · {} atomic RMW · {} calls · {} loops",
        s.instructions, s.atomic_rmw, s.calls, s.backward_branches
    ));
    out.push(format!("TLS: {}", tls.how));
    let hot = cfg::analyze(listing, profile, cold).hot_path();
    out.extend(hot_path_lines(&hot, plain));
    out
}

/// What `show` shows on one built profile: the probe's lines, or the
/// function's that the name picks in this build, then with --follow the
/// walk through its calls. A name that picks several functions is an error
/// listing them.
fn shown_lines(
    ui: &Ui,
    args: &ShowArgs,
    built: &session::Built,
    probe: Option<&str>,
    plain: bool,
) -> Result<Vec<String>, CliError> {
    let profile = &built.profile;
    let cold = &built.listings.cold_functions;
    let needs_index = probe.is_none() || args.follow;
    let index = if needs_index {
        FunctionIndex::new(profile, &built.output)
    } else {
        FunctionIndex::default()
    };
    let (mut lines, root) = match probe {
        Some(p) => (
            lines_of(ui, profile, &built.listings, p, args.raw, plain),
            index.by_symbol(p).cloned().map(|mut e| {
                e.raw.name = p.to_string();
                e
            }),
        ),
        None => match index.find(&args.probe) {
            Found::One(e) => {
                let listing = e.listing(profile);
                (
                    function_lines(ui, profile, (&e.raw, &listing), cold, args.raw, plain),
                    Some(e.clone()),
                )
            }
            Found::Many(all) => {
                return Err(CliError::usage(format!(
                    "on profile {}: {}",
                    profile.name,
                    index.ambiguity_message(&args.probe, &all)
                )));
            }
            Found::None => return Err(unknown_name(&args.probe, &profile.name)),
        },
    };
    // A function the model cannot read is an error naming the line.
    if !args.raw
        && let Some(root) = &root
        && let Err(e) = normalize::check_readable(&root.raw, &profile.arch())
    {
        return Err(CliError::environment(format!(
            "on profile {}: {e}",
            profile.name
        )));
    }
    if args.follow && !args.raw {
        match root {
            Some(root) => {
                let listing = match probe.and_then(|p| built.listings.listing(p)) {
                    Some(l) => l.clone(),
                    None => root.listing(profile),
                };
                let walk = follow::follow(profile, &index, &root, &listing, cold, args.depth);
                lines.extend(walk.report_lines());
            }
            None => lines.push(ui.red("(--follow: the probe is not in this build)")),
        }
    }
    Ok(lines)
}

/// Neither a probe nor a function of the build: the probe lookup's error
/// (with its suggestions), saying no function matched either.
fn unknown_name(name: &str, profile: &str) -> CliError {
    let probe_error = match session::find_probe(name) {
        Err(e) => e.message,
        Ok(_) => String::new(),
    };
    CliError::usage(format!(
        "no function of profile {profile}'s build has `{name}` in its path (`allocasm list \
         --functions -p {profile}` lists them){}{probe_error}",
        if probe_error.is_empty() { "" } else { "; " }
    ))
}

/// The hot path's figures, as the report has them under each listing: one
/// line, or (`narrow`, for a column of --side-by-side) a few short ones.
fn hot_path_lines(hot: &cfg::HotPath, narrow: bool) -> Vec<String> {
    if !narrow {
        return vec![hot.line()];
    }
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
        format!("  {} · {} atomic(s)", hot.fit_check(), hot.atomics),
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
        format!("  calls: {}", hot.calls_or_none()),
    ]
}

/// Builds the selected profiles and prints the probe's listing on each.
pub fn run(ui: &Ui, args: &ShowArgs) -> Result<Status, CliError> {
    // A name in no probe's name is a function's, looked up in each build;
    // one spelled like a probe (`probe_…`, or near one's name) is a probe's,
    // and a typo in it is said before anything builds.
    let names_probe = |name: &str| {
        probes().iter().any(|p| p.name.contains(name))
            || project::find(&format!("probe_{name}")).is_some()
            || (!probes().is_empty() && !name.contains("::") && name.starts_with("probe_"))
            || (!name.contains("::")
                && !session::nearest(
                    &format!("probe_{}", name.trim_start_matches("probe_")),
                    probes().iter().map(|p| p.name),
                )
                .is_empty())
    };
    // A project whose probes are found by prefix knows them only once built.
    let early = if probes().is_empty() || !names_probe(&args.probe) {
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
    let builds = session::build_one(ui, &profiles, opts, args.build.backend, args.linked)?;
    let probe = match early {
        Some(p) => Some(p.name),
        None if names_probe(&args.probe) => Some(session::find_probe(&args.probe)?.name),
        None => None,
    };
    if probe.is_none() && args.linked {
        return Err(CliError::usage(
            "--linked shows probes only; drop it to see a function of the build".to_string(),
        ));
    }
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
            let mut lines = shown_lines(ui, args, b, probe, true)?;
            lines.insert(0, b.profile.triple.clone());
            columns.push((b.profile.name.clone(), lines));
            let Some(probe) = probe else { continue };
            for (title, lines) in linked_lines(ui, &builds, &b.profile, probe, args.raw, true) {
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
            let mut views = vec![(b.output.header(), shown_lines(ui, args, b, probe, false)?)];
            if let Some(probe) = probe {
                views.extend(linked_lines(
                    ui, &builds, &b.profile, probe, args.raw, false,
                ));
            }
            for (header, lines) in views {
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
