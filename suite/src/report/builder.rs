//! Building a [`Report`] from the profiles' builds: each probe's listing,
//! hot path, expectations and linked views, the cross-profile summary, and
//! the git state of the checkout.

use allocasm::probes::Probe;
use allocasm_suite::codegen::cfg::HotPath;
use allocasm_suite::codegen::expect;
use allocasm_suite::codegen::linked::{LinkedOutput, Lto};
use allocasm_suite::codegen::profile::kind_name;
use allocasm_suite::codegen::summary::{self, CrossProfile};
use allocasm_suite::codegen::{AsmOutput, Listing, ProbeListings, Profile};

use super::*;

/// One profile's build for [`Report::new`].
pub struct BuiltProfile<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// Its build.
    pub output: &'a AsmOutput,
    /// Its listings.
    pub listings: &'a ProbeListings,
}

/// One expectation's result, shared by the report and `diff`.
pub fn evaluate(
    profile: &Profile,
    listings: &ProbeListings,
    probe: &Probe,
) -> Vec<ExpectationResult> {
    match expect::evaluate_in(profile, listings, probe) {
        Some(outcomes) => outcomes
            .into_iter()
            .map(|o| ExpectationResult {
                rule: o.expectation.rule.clone(),
                passed: o.passed(),
                offending: o.failure.as_ref().and_then(|f| f.offending.clone()),
                why: profile.expect_for(probe.name).and_then(|e| e.why.clone()),
            })
            .collect(),
        None => {
            let f = expect::missing_probe(profile, probe);
            vec![ExpectationResult {
                rule: f.rule,
                passed: false,
                offending: None,
                why: None,
            }]
        }
    }
}

impl Report {
    /// Builds the report of `registry` over `order` (every profile asked for,
    /// in order): `built` are those that built, `failed` those that did not;
    /// `linked` the linked builds (`None` when they were not asked for).
    pub fn new(
        compiler: Compiler,
        backend: &str,
        order: &[&Profile],
        built: &[BuiltProfile<'_>],
        failed: &[(&Profile, String)],
        registry: &[Probe],
        linked: Option<&[LinkedBuild<'_>]>,
    ) -> Report {
        let linked_of = |p: &Profile, lto: Lto| {
            linked
                .unwrap_or_default()
                .iter()
                .find(|l| l.profile.name == p.name && l.lto == lto)
        };
        let has_linked = |p: &Profile| Lto::ALL.iter().any(|&l| linked_of(p, l).is_some());
        let profiles: Vec<ProfileInfo> = order
            .iter()
            .map(|p| {
                let b = built.iter().find(|b| b.profile.name == p.name);
                let error = failed
                    .iter()
                    .find(|(f, _)| f.name == p.name)
                    .map(|(_, e)| e.clone());
                let build_info = |lto| match linked_outcome(linked_of(p, lto)) {
                    Ok((out, _)) => LinkedBuildInfo {
                        status: BuildStatus::Built,
                        error: None,
                        flags: out.flags.clone(),
                        disassembler: Some(out.dump.command.clone()),
                    },
                    Err(e) => LinkedBuildInfo {
                        status: BuildStatus::Failed,
                        error: Some(e),
                        flags: Vec::new(),
                        disassembler: None,
                    },
                };
                ProfileInfo {
                    name: p.name.clone(),
                    triple: p.triple.clone(),
                    description: p.description.clone(),
                    rustflags: p.rustflags.clone(),
                    build_flags: b.map_or_else(|| p.build_flags(), |b| b.output.flags.clone()),
                    codegen_units: b.map_or_else(
                        || match p.codegen_units() {
                            Some(n) => format!("codegen-units={n}"),
                            None => "codegen-units: cargo release default (16)".into(),
                        },
                        |b| b.output.codegen_units(),
                    ),
                    compiler: match b {
                        Some(b) if b.output.rustc_release() != compiler.release => {
                            Some(b.output.rustc_release().to_string())
                        }
                        None => p.toolchain.as_ref().map(|t| format!("toolchain {t}")),
                        _ => None,
                    },
                    status: if b.is_some() {
                        BuildStatus::Built
                    } else {
                        BuildStatus::Failed
                    },
                    error,
                    fresh: b.map(|b| b.output.fresh),
                    command: b.map(|b| b.output.command.clone()),
                    linked: has_linked(p).then(|| LinkedBuilds {
                        release: build_info(Lto::Off),
                        lto: build_info(Lto::Fat),
                    }),
                }
            })
            .collect();
        let mut totals = Totals {
            probes: registry.len(),
            profiles: order.len(),
            profiles_failed: order.len() - built.len(),
            found: 0,
            missing: 0,
            expectations: 0,
            failures: 0,
        };
        let probes = registry
            .iter()
            .map(|probe| {
                let results = order
                    .iter()
                    .map(|p| {
                        let mut r = match built.iter().find(|b| b.profile.name == p.name) {
                            Some(b) => {
                                let r = probe_result(b, probe);
                                if r.status == ProbeStatus::Found {
                                    totals.found += 1;
                                } else {
                                    totals.missing += 1;
                                }
                                totals.expectations += r.expectations.len();
                                totals.failures +=
                                    r.expectations.iter().filter(|e| !e.passed).count();
                                r
                            }
                            None => ProbeResult::empty(&p.name, ProbeStatus::NotBuilt, Vec::new()),
                        };
                        if has_linked(p) {
                            let view = |lto| linked_view(p, linked_of(p, lto), probe);
                            r.linked = Some(LinkedViews {
                                release: view(Lto::Off),
                                lto: view(Lto::Fat),
                            });
                        }
                        r
                    })
                    .collect();
                ProbeReport {
                    name: probe.name.to_string(),
                    allocator: probe.allocator.to_string(),
                    operation: probe.operation.to_string(),
                    kind: kind_name(probe.kind),
                    expect: probe.expect.to_string(),
                    results,
                }
            })
            .collect::<Vec<ProbeReport>>();
        let summary = cross_summary(order, built, linked.unwrap_or_default(), &probes, registry);
        Report {
            schema: SCHEMA,
            generator: format!("allocasm {}", env!("CARGO_PKG_VERSION")),
            git: git_state(),
            compiler,
            backend: backend.to_string(),
            profiles,
            linked_views: linked.is_some(),
            summary,
            probes,
            mutations: MutationTable::load(),
            executed: None,
            totals,
        }
    }
}

/// The cross-profile summary, from [`summary::cross_profile`] of the `.s`
/// listings and of each LTO setting's linked listings.
fn cross_summary(
    order: &[&Profile],
    built: &[BuiltProfile<'_>],
    linked: &[LinkedBuild<'_>],
    probes: &[ProbeReport],
    registry: &[Probe],
) -> CrossSummary {
    let table = |pairs: Vec<(&Profile, &ProbeListings)>| -> CrossProfile {
        let (profiles, listings): (Vec<Profile>, Vec<ProbeListings>) = pairs
            .into_iter()
            .map(|(p, l)| (p.clone(), l.clone()))
            .unzip();
        summary::cross_profile(&profiles, &listings, registry)
    };
    let asm = table(built.iter().map(|b| (b.profile, b.listings)).collect());
    let linked_tables: Vec<(Lto, CrossProfile)> = Lto::ALL
        .iter()
        .map(|&lto| {
            let pairs = linked
                .iter()
                .filter(|l| l.lto == lto)
                .filter_map(|l| l.outcome.as_ref().ok().map(|(_, ls)| (l.profile, *ls)))
                .collect();
            (lto, table(pairs))
        })
        .collect();
    let mut columns: Vec<SummaryColumn> = order
        .iter()
        .map(|p| SummaryColumn {
            profile: p.name.clone(),
            view: "asm",
        })
        .collect();
    for p in order {
        for lto in Lto::ALL {
            if linked
                .iter()
                .any(|l| l.profile.name == p.name && l.lto == lto)
            {
                columns.push(SummaryColumn {
                    profile: p.name.clone(),
                    view: view_name(lto),
                });
            }
        }
    }
    let cell = |c: Option<summary::Cell>, built: bool, passed: Option<bool>| match (c, built) {
        (Some(c), _) => SummaryCell {
            status: ProbeStatus::Found,
            text: c.text(),
            instructions: Some(c.instructions),
            function_instructions: Some(c.function_instructions),
            atomic: c.atomic,
            call: c.call,
            looped: c.looped,
            passed,
        },
        (None, built) => SummaryCell {
            status: [ProbeStatus::NotBuilt, ProbeStatus::Missing][usize::from(built)],
            text: ["not built", "missing"][usize::from(built)].into(),
            instructions: None,
            function_instructions: None,
            atomic: false,
            call: false,
            looped: false,
            passed: passed.filter(|_| built).map(|_| false),
        },
    };
    let rows = probes
        .iter()
        .map(|probe| SummaryRow {
            probe: probe.name.clone(),
            cells: columns
                .iter()
                .map(|col| {
                    if col.view == "asm" {
                        let res = probe.results.iter().find(|r| r.profile == col.profile);
                        let built = res.is_some_and(|r| r.status != ProbeStatus::NotBuilt);
                        cell(
                            asm.cell(&probe.name, &col.profile),
                            built,
                            built.then(|| res.is_some_and(|r| r.passed)),
                        )
                    } else {
                        let (_, t) = linked_tables
                            .iter()
                            .find(|(l, _)| view_name(*l) == col.view)
                            .expect("a linked view's column");
                        let built = t.profiles.contains(&col.profile);
                        cell(t.cell(&probe.name, &col.profile), built, None)
                    }
                })
                .collect(),
        })
        .collect();
    CrossSummary {
        legend: LEGEND.to_vec(),
        columns,
        rows,
    }
}

/// `release` or `lto`: the JSON name of a linked view.
pub fn view_name(lto: Lto) -> &'static str {
    match lto {
        Lto::Off => "release",
        Lto::Fat => "lto",
    }
}

/// A linked build's executable and listings, or why there are none.
fn linked_outcome<'a>(
    build: Option<&LinkedBuild<'a>>,
) -> Result<(&'a LinkedOutput, &'a ProbeListings), String> {
    build.map_or(Err("not built".into()), |b| b.outcome.clone())
}

/// A probe's listing from one linked build (or why there is none).
fn linked_view(profile: &Profile, build: Option<&LinkedBuild<'_>>, probe: &Probe) -> LinkedView {
    let (status, error, view) = match linked_outcome(build) {
        Err(e) => (ProbeStatus::NotBuilt, Some(e), ListingView::default()),
        Ok((_, listings)) => match listing_view(profile, listings, probe) {
            Some(view) => (ProbeStatus::Found, None, view),
            None => (ProbeStatus::Missing, None, ListingView::default()),
        },
    };
    LinkedView {
        status,
        error,
        view,
    }
}

/// The probe's listing in `listings` with its figures; `None` when it is
/// not there.
fn listing_view(profile: &Profile, listings: &ProbeListings, probe: &Probe) -> Option<ListingView> {
    let listing = listings.listing(probe.name)?;
    let hot = listings.hot_path(profile, probe.name);
    Some(ListingView {
        summary: Some(listing.summary(&profile.classes)),
        tls: Some(annotate::tls_access(listing)),
        lines: listing_lines(listing, profile, hot.as_ref()),
        annotations: annotate::annotations(listing),
        hot_path: hot,
    })
}

/// A listing's lines with their highlight tags and hot/cold marks.
fn listing_lines(listing: &Listing, profile: &Profile, hot: Option<&HotPath>) -> Vec<ListingLine> {
    let tags = annotate::tags(listing, &profile.classes);
    listing
        .lines
        .iter()
        .zip(tags)
        .enumerate()
        .map(|(n, (line, tags))| {
            let (kind, text) = match line {
                allocasm_suite::codegen::Line::Label(l) => ("label", l.clone()),
                allocasm_suite::codegen::Line::Instruction(i) => ("instruction", i.text()),
                allocasm_suite::codegen::Line::Data(d) => ("data", d.text()),
            };
            ListingLine {
                kind,
                text,
                tags,
                hot: hot.is_some_and(|h| h.contains(n)),
                cold: hot.is_some_and(|h| h.cold_lines.contains(&n)),
            }
        })
        .collect()
}

impl ProbeResult {
    /// A result without a listing: `status` and `expectations` only.
    fn empty(profile: &str, status: ProbeStatus, expectations: Vec<ExpectationResult>) -> Self {
        ProbeResult {
            profile: profile.to_string(),
            status,
            view: ListingView::default(),
            passed: status != ProbeStatus::NotBuilt && expectations.iter().all(|e| e.passed),
            expectations,
            linked: None,
            executed: None,
            executed_reason: None,
            mca: None,
            mca_reason: None,
            followed: None,
        }
    }
}

fn probe_result(b: &BuiltProfile<'_>, probe: &Probe) -> ProbeResult {
    let expectations = evaluate(b.profile, b.listings, probe);
    // What every result has; a found probe adds its listing's views.
    let bare = ProbeResult::empty(&b.profile.name, ProbeStatus::Missing, expectations);
    let Some(view) = listing_view(b.profile, b.listings, probe) else {
        return bare;
    };
    ProbeResult {
        status: ProbeStatus::Found,
        view,
        followed: b.listings.followed.get(probe.name).cloned(),
        ..bare
    }
}

/// The commit of the crate's checkout.
pub fn git_state() -> Git {
    let dir = allocasm_suite::codegen::manifest_dir();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    Git {
        commit: git(&["rev-parse", "HEAD"]),
        dirty: git(&["status", "--porcelain", "--untracked-files=no"])
            .is_some_and(|s| !s.is_empty()),
    }
}
