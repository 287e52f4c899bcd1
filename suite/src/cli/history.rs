//! `allocasm history --toolchains A,B,C`: every selected profile built with
//! each toolchain, and one table per profile of the hot path's instruction
//! count, probes down and toolchains across, each cell marked where it
//! differs from the cell to its left (text, Markdown, JSON or HTML). The
//! table's model is [`allocasm_suite::history`]; this module builds it and
//! writes it.
//!
//! A profile a toolchain cannot build is an `n/a` column with the reason
//! under the table, never an error of the whole command; the reason comes
//! from [`unavailable`](allocasm_suite::history::unavailable) ("not available": the toolchain has no standard
//! library for the target) or the build's first error line. Missing
//! toolchains are installed with `--install`, one rustup process at a time
//! ([`install_toolchain`], shared with `bisect`). The JSON shape is
//! documented in `docs/history-json.md`.

use std::collections::BTreeMap;
use std::time::Instant;

use allocasm_suite::codegen::Profile;
use allocasm_suite::codegen::build::{self, BuildError, BuildEvent, BuildOptions};
use allocasm_suite::codegen::project::probes;
use allocasm_suite::history::{Cell, ColumnStatus, Failure, History, Row, Table, ToolchainInfo};
use allocasm_suite::toolchain;
pub use allocasm_suite::toolchain::install_line;
use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use allocasm_suite::render::{self, Block, Doc, Mark, Text};

use super::session::{self, build_error_message};
use super::{Backend, CliError, OutputArgs, Status, TargetArgs, Ui};

/// `history` arguments.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The toolchains, oldest first (e.g. 1.95.0,1.96.0,beta,nightly); repeat or separate with
    /// commas
    #[arg(
        long,
        value_name = "TOOLCHAINS",
        value_delimiter = ',',
        required = true,
        num_args = 1..
    )]
    pub toolchains: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// [`toolchain::install_toolchain`], announced on `ui`; the error is
/// rustup's first error line.
pub fn install_toolchain(ui: &Ui, tc: &str) -> Result<(), String> {
    toolchain::install_toolchain(tc, &|c| ui.note(&format!("running `{c}`"))).map_err(|e| match e {
        BuildError::InstallFailed { first_error, .. } => first_error,
        e => e.to_string(),
    })
}

/// [`toolchain::uninstall_toolchain`], announced on `ui`.
pub fn uninstall_toolchain(ui: &Ui, tc: &str) -> Result<(), String> {
    toolchain::uninstall_toolchain(tc, &|c| ui.note(&format!("running `{c}`")))
}

/// Whether `toolchain` is installed (by its short or its full name).
pub fn is_installed(tc: &str) -> Result<bool, CliError> {
    toolchain::is_installed(tc).map_err(|e| CliError::environment(build_error_message(&e)))
}

fn cell_text(cell: Cell) -> String {
    match cell {
        Cell::Count(n) => n.to_string(),
        Cell::Missing => "—".to_string(),
        Cell::NotBuilt => "n/a".to_string(),
    }
}

/// The document: the toolchains, then one table per profile with the
/// reasons of its `n/a` columns under it.
pub fn document(h: &History) -> Doc {
    let mut doc = Doc::new("allocasm history");
    doc.push(Block::Heading(1, Text::plain("History")))
        .push(Block::Para(Text::plain(
            "hot-path instructions per probe (rows) and toolchain (columns); a marked cell \
             (* in text, bold elsewhere) differs from the cell to its left",
        )))
        .push(Block::List(
            h.toolchains
                .iter()
                .map(|t| {
                    Text::code(&t.toolchain).then(format!(": {} · LLVM {}", t.release, t.llvm))
                })
                .collect(),
        ));
    for table in &h.tables {
        let columns = h.toolchains.iter().map(|t| Text::plain(&t.toolchain));
        let rows = table.rows.iter().map(|row| {
            let cells = row.cells.iter().enumerate().map(|(i, c)| {
                let mark = match c {
                    _ if row.changed(i) => Mark::Changed,
                    Cell::NotBuilt => Mark::Muted,
                    Cell::Missing => Mark::Missing,
                    Cell::Count(_) => Mark::Plain,
                };
                render::Cell::new(cell_text(*c), mark)
            });
            (Text::code(&row.probe), cells.collect())
        });
        doc.push(Block::Heading(
            2,
            Text::plain(format!("{} (", table.profile))
                .with(Mark::Code, &table.triple)
                .then(")"),
        ))
        .push(Block::Table(render::Table::probes_down(columns, rows)));
        let notes: Vec<Text> = h
            .toolchains
            .iter()
            .zip(&table.failures)
            .filter_map(|(t, f)| {
                let reason = &f.as_ref()?.reason;
                Some(
                    Text::plain("n/a ")
                        .with(Mark::Code, &t.toolchain)
                        .then(format!(": {reason}")),
                )
            })
            .collect();
        if !notes.is_empty() {
            doc.push(Block::List(notes));
        }
    }
    doc
}

/// `history --format json` (`allocasm-history/1`; docs/history-json.md).
#[derive(Serialize, JsonSchema)]
struct JsonHistory<'a> {
    /// `allocasm-history/1`.
    schema: &'static str,
    /// `allocasm <crate version>`.
    generator: String,
    /// The columns, in the order of `--toolchains`.
    toolchains: &'a [ToolchainInfo],
    /// One table per profile asked for, in `targets/` order.
    profiles: Vec<JsonProfile<'a>>,
}

/// One profile's table.
#[derive(Serialize, JsonSchema)]
struct JsonProfile<'a> {
    /// The profile (`targets/<name>.toml`).
    name: &'a str,
    /// Its target triple.
    triple: &'a str,
    /// `toolchains[i]` on this profile.
    columns: Vec<JsonColumn<'a>>,
    /// One per probe of the registry, registry order.
    rows: Vec<JsonRow<'a>>,
}

/// One toolchain on one profile.
#[derive(Serialize, JsonSchema)]
struct JsonColumn<'a> {
    /// The rustup toolchain.
    toolchain: &'a str,
    /// Whether the profile built with it.
    status: ColumnStatus,
    /// Null when built; else the reason printed under the text table.
    reason: Option<&'a str>,
}

/// One probe's row.
#[derive(Serialize, JsonSchema)]
struct JsonRow<'a> {
    /// The probe's symbol.
    probe: &'a str,
    /// One per toolchain.
    cells: Vec<JsonCell>,
}

/// The probe under one toolchain.
#[derive(Serialize, JsonSchema)]
struct JsonCell {
    /// `found`, `missing` (the build has no such function) or `not-built`.
    status: &'static str,
    /// The hot path's instruction count; null unless found.
    instructions: Option<usize>,
    /// It differs from the nearest built cell to its left.
    changed: bool,
}

/// The JSON document (`allocasm-history/1`, docs/history-json.md).
pub fn json(h: &History) -> String {
    let doc = JsonHistory {
        schema: "allocasm-history/1",
        generator: format!("allocasm {}", env!("CARGO_PKG_VERSION")),
        toolchains: &h.toolchains,
        profiles: h
            .tables
            .iter()
            .map(|t| JsonProfile {
                name: &t.profile,
                triple: &t.triple,
                columns: h
                    .toolchains
                    .iter()
                    .zip(&t.failures)
                    .map(|(tc, f)| JsonColumn {
                        toolchain: &tc.toolchain,
                        status: f.as_ref().map_or(ColumnStatus::Built, |f| f.status),
                        reason: f.as_ref().map(|f| f.reason.as_str()),
                    })
                    .collect(),
                rows: t
                    .rows
                    .iter()
                    .map(|r| JsonRow {
                        probe: &r.probe,
                        cells: r
                            .cells
                            .iter()
                            .enumerate()
                            .map(|(i, c)| JsonCell {
                                status: match c {
                                    Cell::Count(_) => "found",
                                    Cell::Missing => "missing",
                                    Cell::NotBuilt => "not-built",
                                },
                                instructions: match c {
                                    Cell::Count(n) => Some(*n),
                                    _ => None,
                                },
                                changed: r.changed(i),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("serializable");
    s.push('\n');
    s
}

/// Every requested toolchain installed (or, with `--install`, installed
/// now); a missing one without `--install` is an environment error naming
/// the line to run.
pub fn ensure_toolchains(ui: &Ui, toolchains: &[String], install: bool) -> Result<(), CliError> {
    let mut missing = Vec::new();
    for tc in toolchains {
        if !is_installed(tc)? {
            missing.push(tc.as_str());
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    if !install {
        let lines: Vec<String> = missing.iter().map(|t| install_line(t)).collect();
        return Err(CliError::environment(format!(
            "toolchain(s) not installed: {}; install with `{}`, or rerun with --install",
            missing.join(", "),
            lines.join(" && ")
        )));
    }
    for tc in missing {
        install_toolchain(ui, tc)
            .map_err(|e| CliError::environment(format!("`{}` failed: {e}", install_line(tc))))?;
    }
    Ok(())
}

/// Builds every profile with every toolchain and prints the tables; exit 3
/// when nothing built.
pub fn run(ui: &Ui, args: &HistoryArgs) -> Result<Status, CliError> {
    let profiles = args.target.profiles(ui)?;
    let mut toolchains: Vec<String> = Vec::new();
    for tc in &args.toolchains {
        let tc = tc.trim();
        if tc.is_empty() {
            return Err(CliError::usage("--toolchains has an empty name"));
        }
        if toolchains.iter().any(|t| t == tc) {
            return Err(CliError::usage(format!(
                "toolchain `{tc}` is named twice in --toolchains"
            )));
        }
        toolchains.push(tc.to_string());
    }
    ensure_toolchains(ui, &toolchains, args.target.install)?;
    let started = Instant::now();
    // Targets first, one (toolchain, triple) and one rustup call at a time; a
    // failure belongs to that toolchain's column of those profiles only.
    let mut target_errors: BTreeMap<(usize, String), BuildError> = BTreeMap::new();
    if args.target.install {
        for (i, tc) in toolchains.iter().enumerate() {
            let mut seen = std::collections::BTreeSet::new();
            for p in &profiles {
                if !seen.insert(p.triple.clone()) {
                    continue;
                }
                let note = |e: BuildEvent| {
                    if let BuildEvent::InstallingTarget { command, .. } = e {
                        ui.note(&format!("running `{command}`"));
                    }
                };
                if let Err(e) = build::ensure_target(tc, &p.triple, true, &note, &p.name) {
                    target_errors.insert((i, p.triple.clone()), e);
                }
            }
        }
    }
    let jobs: Vec<BuildOptions> = toolchains
        .iter()
        .map(|tc| session::build_options(Some(tc.clone()), args.target.target_root.as_ref(), false))
        .collect();
    let builds = session::build_all(ui, &profiles, &jobs, Backend::Builtin, false)?;
    let mut infos = Vec::new();
    for (tc, b) in toolchains.iter().zip(&builds) {
        let vv = match b.rustc_version() {
            Some(v) => v.to_string(),
            None => build::rustc_version(tc).unwrap_or_default(),
        };
        infos.push(ToolchainInfo::from_rustc_vv(tc, &vv));
    }
    let tables = profiles
        .iter()
        .map(|p| table(p, &builds, &target_errors))
        .collect();
    let history = History {
        toolchains: infos,
        tables,
    };
    if ui.verbose {
        for b in &builds {
            b.report_failures(ui);
        }
    }
    ui.note(&format!(
        "{} toolchain(s) × {} profile(s) in {:.1}s",
        toolchains.len(),
        profiles.len(),
        started.elapsed().as_secs_f64()
    ));
    args.output
        .write(ui, || document(&history), || json(&history))?;
    if history.all_failed() {
        return Err(CliError::environment(
            "no profile built with any toolchain (reasons under each table; --verbose prints \
             each build's whole error)",
        ));
    }
    Ok(Status::Ok)
}

fn table(
    profile: &Profile,
    builds: &[session::Builds],
    target_errors: &BTreeMap<(usize, String), BuildError>,
) -> Table {
    let mut failures = Vec::new();
    let mut columns = Vec::new();
    for (i, b) in builds.iter().enumerate() {
        match b.get(&profile.name) {
            Some(built) => {
                failures.push(None);
                columns.push(Some(built));
            }
            None => {
                let error = target_errors.get(&(i, profile.triple.clone())).or_else(|| {
                    b.failed
                        .iter()
                        .find(|(p, _)| p.name == profile.name)
                        .map(|(_, e)| e)
                });
                failures.push(Some(Failure::of(error)));
                columns.push(None);
            }
        }
    }
    let rows = probes()
        .iter()
        .map(|probe| Row {
            probe: probe.name.to_string(),
            cells: columns
                .iter()
                .map(|c| match c {
                    None => Cell::NotBuilt,
                    Some(built) => built
                        .listings
                        .hot_path(&built.profile, probe.name)
                        .map_or(Cell::Missing, |h| Cell::Count(h.instructions)),
                })
                .collect(),
        })
        .collect();
    Table {
        profile: profile.name.clone(),
        triple: profile.triple.clone(),
        failures,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(name: &str, llvm: &str) -> ToolchainInfo {
        ToolchainInfo {
            toolchain: name.to_string(),
            release: format!("rustc {name} (0123456789 2026-01-01)"),
            llvm: llvm.to_string(),
        }
    }

    /// Three toolchains; the second cannot build the profile.
    fn sample() -> History {
        History {
            toolchains: vec![
                tc("1.95.0", "22.1.2"),
                tc("beta", "23.1.0"),
                tc("nightly", "23.1.1"),
            ],
            tables: vec![Table {
                profile: "x86_64-linux".into(),
                triple: "x86_64-unknown-linux-gnu".into(),
                failures: vec![
                    None,
                    Some(Failure {
                        status: ColumnStatus::NotAvailable,
                        reason: "not available: no rust-std".into(),
                    }),
                    None,
                ],
                rows: vec![
                    Row {
                        probe: "probe_same".into(),
                        cells: vec![Cell::Count(7), Cell::NotBuilt, Cell::Count(7)],
                    },
                    Row {
                        probe: "probe_grows".into(),
                        cells: vec![Cell::Count(40), Cell::NotBuilt, Cell::Count(41)],
                    },
                    Row {
                        probe: "probe_gone".into(),
                        cells: vec![Cell::Count(3), Cell::NotBuilt, Cell::Missing],
                    },
                ],
            }],
        }
    }

    /// The document, rendered: a changed cell marked (`*` in text, bold in
    /// Markdown, class `changed` in HTML), an `n/a` column's reason under
    /// the table, reasons escaped in HTML.
    #[test]
    fn the_document_marks_changed_cells_and_says_why_a_column_is_na() {
        let mut h = sample();
        let doc = document(&h);
        insta::assert_snapshot!("history_text", render::text::render(&doc, false));
        insta::assert_snapshot!("history_md", render::markdown::render(&doc));
        h.tables[0].failures[1] = Some(Failure {
            status: ColumnStatus::Failed,
            reason: "build failed: error<&>".into(),
        });
        let html = render::html::render(&document(&h));
        assert!(html.contains("build failed: error&lt;&amp;&gt;"), "{html}");
        assert!(!html.contains("error<&>"), "{html}");
    }

    #[test]
    fn the_committed_json_schema_is_the_generated_one() {
        crate::cli::check_schema::<JsonHistory<'static>>("history.schema.json");
    }

    #[test]
    fn json_has_the_documented_shape() {
        let v: serde_json::Value = serde_json::from_str(&json(&sample())).expect("valid JSON");
        assert_eq!(v["schema"], "allocasm-history/1");
        assert_eq!(v["toolchains"][1]["toolchain"], "beta");
        assert_eq!(v["toolchains"][2]["llvm"], "23.1.1");
        let p = &v["profiles"][0];
        assert_eq!(p["name"], "x86_64-linux");
        assert_eq!(p["columns"][0]["status"], "built");
        assert_eq!(p["columns"][0]["reason"], serde_json::Value::Null);
        assert_eq!(p["columns"][1]["status"], "not-available");
        assert_eq!(p["rows"][1]["probe"], "probe_grows");
        let cells = &p["rows"][1]["cells"];
        assert_eq!(cells[0]["instructions"], 40);
        assert_eq!(cells[0]["changed"], false);
        assert_eq!(cells[1]["status"], "not-built");
        assert_eq!(cells[2]["instructions"], 41);
        assert_eq!(cells[2]["changed"], true);
        assert_eq!(p["rows"][2]["cells"][2]["status"], "missing");
        assert_eq!(
            p["rows"][2]["cells"][2]["instructions"],
            serde_json::Value::Null
        );
    }
}
