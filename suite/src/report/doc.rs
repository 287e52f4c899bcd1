//! The report as one [`Doc`], which the shared renderers print as Markdown
//! (for reading in a repository) and as text (for terminals and logs): the
//! machine and compiler first, the cross-profile summary (probes × profiles,
//! then the linked views), what the CPU executes, then every listing, with
//! the `.s` listing and the linked ones side by side where a profile has a
//! linked view. The HTML page lays the same report out for a laptop screen
//! in [`super::html`].

use allocasm_suite::codegen::build::flags_or_none;
use allocasm_suite::codegen::follow::Followed;
use allocasm_suite::render::{Align, Block, Cell, Doc, Mark, Table, Text};

use super::text::side_by_side_fit;
use super::{
    CrossSummary, ExecutedSection, LinkedViews, MUTATION_LEGEND, ProbeReport, ProbeResult,
    ProbeStatus, Report, SummaryCell, measured::ProfileMeasurement,
};

/// The whole report as a document.
pub fn doc(r: &Report) -> Doc {
    let mut d = Doc::new(format!("allocasm asm report · {}", r.compiler.release));
    let c = &r.compiler;
    d.heading(1, "allocasm asm report")
        .push(Block::List(vec![
            format!("generator: {}", r.generator).into(),
            Text::plain("commit: ").with(Mark::Code, r.commit_line()),
            Text::plain(format!("compiler: {} (toolchain ", c.release))
                .with(Mark::Code, &c.toolchain)
                .then(format!("), LLVM {}", c.llvm)),
            format!("extractor: {}", r.backend).into(),
            Text::prose("reproduce: `cargo run --release -- report`"),
        ]))
        .push(Block::Details {
            summary: Text::code("rustc -vV"),
            blocks: vec![code("text", &c.rustc_vv)],
        })
        .heading(2, "Profiles")
        .push(Block::Table(profiles_table(r)))
        .heading(2, "Summary")
        .para(
            "Probes down, profiles across: each cell is the probe's instruction count, marked \
             where its fast path grows.",
        );
    let summary = |keep: fn(&str) -> bool| {
        summary_table(&r.summary, keep, Text::code, summary_cell).map(Block::Table)
    };
    d.blocks.extend(summary(|v| v == "asm"));
    let mut legend = Text::default();
    for (i, l) in r.summary.legend.iter().enumerate() {
        let sep = if i == 0 { "" } else { " · " };
        legend = legend
            .then(sep)
            .with(Mark::Strong, l.mark)
            .then(format!(" {}", l.meaning));
    }
    d.para(legend.then("."));
    let linked = summary(|v| v != "asm");
    if linked.is_some() {
        d.heading(3, "Linked executables").para(Text::prose(
            "The same probes disassembled from an executable linked with the release profile \
                 (`linked`) and with `lto = \"fat\"` (`linked+LTO`):",
        ));
        d.blocks.extend(linked);
    } else if !r.linked_views {
        d.para(Text::prose("Linked views left out (`--no-linked`)."));
    }
    if let Some(e) = &r.executed {
        executed_section(&mut d, e);
    }
    if let Some(m) = &r.mutations {
        d.heading(3, "What this suite can and cannot see")
            .para(Text::prose(&format!(
                "The mutation self-test (`scripts/test mutate`, commit `{}`): each mutation \
                 applied to a scratch copy, every profile rebuilt and checked. {MUTATION_LEGEND}.",
                &m.commit[..m.commit.len().min(12)],
            )))
            .push(Block::Table(m.table()));
    }
    let t = r.totals;
    d.para(format!(
        "{} probes × {} profiles: {} listings found, {} missing, {} of {} expectations failed{}.",
        t.probes,
        t.profiles,
        t.found,
        t.missing,
        t.failures,
        t.expectations,
        if t.profiles_failed > 0 {
            format!(", {} profile build(s) failed", t.profiles_failed)
        } else {
            String::new()
        }
    ))
    .heading(2, "Listings");
    for probe in &r.probes {
        probe_blocks(&mut d, probe);
    }
    d
}

/// A block of code.
fn code(lang: &'static str, text: &str) -> Block {
    Block::Code {
        lang,
        text: text.to_string(),
    }
}

/// The first line of `s`.
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// One profile per row: triple, flags, codegen units, whether it built.
fn profiles_table(r: &Report) -> Table {
    let plain = |t: Text| Cell::new(t, Mark::Plain);
    Table {
        columns: [
            "profile",
            "triple",
            "flags passed after --emit asm",
            "codegen units",
            "build",
        ]
        .map(|t| (t.into(), Align::Left))
        .to_vec(),
        rows: (r.profiles.iter())
            .map(|p| {
                let mut triple = Text::code(&p.triple);
                if let Some(c) = &p.compiler {
                    triple = triple.then(format!(" · built with {c}"));
                }
                let build = match &p.error {
                    None => Text::plain("built"),
                    Some(e) => {
                        Text::marked(Mark::Bad, "failed").then(format!(": {}", first_line(e)))
                    }
                };
                vec![
                    plain(Text::code(&p.name)),
                    plain(triple),
                    plain(Text::code(flags_or_none(&p.build_flags))),
                    plain(p.codegen_units.as_str().into()),
                    plain(build),
                ]
            })
            .collect(),
    }
}

/// A summary cell: the count and marks, `missing` or `— not built`, with
/// the expectations' verdict.
fn summary_cell(c: &SummaryCell) -> Cell {
    let mark = match c.passed {
        Some(true) => " ✅",
        Some(false) => " ❌",
        None => "",
    };
    let text = match c.status {
        ProbeStatus::Found => format!("{}{mark}", c.text),
        ProbeStatus::Missing => format!("missing{mark}"),
        ProbeStatus::NotBuilt => "— not built".to_string(),
    };
    Cell::new(text, Mark::Plain)
}

/// The summary's columns that `keep` selects, as a table, each title
/// `title(…)` and each cell `cell(…)`; `None` when no column is selected.
pub fn summary_table(
    r: &CrossSummary,
    keep: impl Fn(&str) -> bool,
    title: impl Fn(String) -> Text,
    cell: impl Fn(&SummaryCell) -> Cell,
) -> Option<Table> {
    let cols: Vec<usize> = (0..r.columns.len())
        .filter(|&i| keep(r.columns[i].view))
        .collect();
    (!cols.is_empty()).then(|| {
        Table::probes_down(
            cols.iter().map(|&i| title(r.columns[i].title())),
            r.rows.iter().map(|row| {
                let cells = cols.iter().map(|&i| cell(&row.cells[i])).collect();
                (Text::marked(Mark::Ref, &row.probe), cells)
            }),
        )
    })
}

/// The `What the CPU executes` section: the method, each profile's status
/// and the cross-profile table.
fn executed_section(d: &mut Doc, e: &ExecutedSection) {
    d.heading(2, "What the CPU executes")
        .para(Text::prose(&e.method))
        .para(Text::prose(&e.mca_note));
    d.push(Block::List(
        e.profiles.iter().map(profile_measured).collect(),
    ));
    if e.table.columns.is_empty() {
        d.para("No profile of this report was measured.");
        return;
    }
    d.para(Text::prose(
        "Probes down, profiles across: each cell is `hot-path instructions / executed \
         instructions per call (+ those in helpers) / llvm-mca cycles per call` (one figure per \
         CPU, in the order the column names them; * indicative). The hot path is the `.s` \
         listing's, with the linked release executable's (x86_64-linux-dylib: the cdylib's the \
         driver ran) in parentheses where it differs: the executed count is the linked code's. \
         Where the executed count is below the hot path (helpers apart), the fast case leaves by \
         a shorter way than the longest non-cold one.",
    ));
    d.push(Block::Table(executed_table(e)));
}

/// `profile`: what was measured, how, or why not; llvm-mca's CPUs or why
/// none.
pub fn profile_measured(p: &ProfileMeasurement) -> Text {
    let t = Text::code(&p.profile).then(": ");
    let t = match (&p.reason, &p.command) {
        (None, Some(c)) => t.then("measured: ").with(Mark::Code, c),
        (Some(why), _) => t.then_prose(first_line(why)),
        (None, None) => t.then("measured"),
    };
    match &p.mca_reason {
        None => t.then(format!("; llvm-mca: {}", p.cpus.join(", "))),
        Some(why) => t.then("; llvm-mca: ").then_prose(first_line(why)),
    }
}

/// The executed figures: probes down, measured profiles (with their CPUs)
/// across.
pub fn executed_table(e: &ExecutedSection) -> Table {
    let t = &e.table;
    let title = |c: &String| {
        let cpus = (e.profiles.iter().find(|p| &p.profile == c))
            .map(|p| {
                let star = |c: &String| c.clone() + if c.starts_with("apple-") { "*" } else { "" };
                p.cpus.iter().map(star).collect::<Vec<_>>().join("·")
            })
            .unwrap_or_default();
        Text::code(c).then(format!(" ({cpus})"))
    };
    Table::probes_down(
        t.columns.iter().map(title),
        t.rows.iter().map(|row| {
            let cells = row
                .cells
                .iter()
                .map(|c| Cell::new(c.text.as_str(), Mark::Plain));
            (Text::marked(Mark::Ref, &row.probe), cells.collect())
        }),
    )
}

/// One probe: its line, then per profile its figures, listings,
/// annotations and expectations.
fn probe_blocks(d: &mut Doc, probe: &ProbeReport) {
    d.heading(3, probe.name.as_str()).para(
        Text::code(&probe.allocator)
            .then(format!(
                " · {} · {} — expected: ",
                probe.operation, probe.kind
            ))
            .then_prose(&probe.expect),
    );
    for res in &probe.results {
        d.heading(
            4,
            Text::plain(format!("{} on ", probe.name)).with(Mark::Code, &res.profile),
        );
        match res.status {
            ProbeStatus::Found => {}
            ProbeStatus::Missing => {
                d.para(
                    Text::marked(Mark::Strong, "Missing")
                        .then(": the probe is not in this profile's assembly."),
                );
            }
            ProbeStatus::NotBuilt => {
                d.para("Not built (see Profiles).");
                continue;
            }
        }
        if let (Some(c), Some(tls)) = (res.view.summary, &res.view.tls) {
            d.para(
                format!(
                    "{} instructions · {} atomic RMW · {} atomics · {} calls · {} branches · {} loops · TLS: {}",
                    c.instructions, c.atomic_rmw, c.atomics, c.calls, c.branches, c.backward_branches, tls.how
                ),
            );
            if let Some(h) = &res.view.hot_path {
                d.para(Text::prose(&h.line()));
                let items = measured(res);
                if !items.is_empty() {
                    d.push(Block::List(items));
                }
                d.push(Block::Details {
                    summary: "hot path".into(),
                    blocks: vec![code("asm", &h.lines.join("\n"))],
                });
            }
            if let Some(f) = &res.followed {
                d.push(followed(f));
            }
            match &res.linked {
                Some(linked) => linked_blocks(d, &probe.name, res, linked),
                None => {
                    d.push(code(
                        "asm",
                        &format!("{}:\n{}", probe.name, res.view.listing_text()),
                    ));
                }
            }
        }
        let notes = (res.view.annotations)
            .iter()
            .map(|a| Text::code(&a.instruction).then(": ").then_prose(&a.note));
        let expectations = res.expectations.iter().map(|e| {
            let t = Text::plain(if e.passed { "✅ " } else { "❌ " }).with(Mark::Code, &e.rule);
            match &e.offending {
                Some(o) => t.then(" — ").with(Mark::Code, o),
                None => t,
            }
        });
        for items in [notes.collect::<Vec<_>>(), expectations.collect()] {
            if !items.is_empty() {
                d.push(Block::List(items));
            }
        }
        if let Some(why) = res.expectations.iter().find_map(|e| e.why.as_ref()) {
            d.para(Text::plain("why: ").then_prose(why));
        }
    }
}

/// The executed counts and llvm-mca's predictions of one listing, or why
/// there are none.
pub fn measured(res: &ProbeResult) -> Vec<Text> {
    let mut items: Vec<Text> = Vec::new();
    match (&res.executed, &res.executed_reason) {
        (Some(e), _) => items.push(Text::prose(&e.line())),
        (None, Some(why)) => items.push(Text::plain("executed: ").then_prose(first_line(why))),
        (None, None) => {}
    }
    match (&res.mca, &res.mca_reason) {
        (Some(ms), _) => items.extend(
            ms.iter()
                .map(|m| Text::prose(&format!("llvm-mca: {}", m.line()))),
        ),
        (None, Some(why)) => items.push(Text::plain("llvm-mca: ").then_prose(first_line(why))),
        (None, None) => {}
    }
    items
}

/// The `.s` listing and both linked listings in three columns, each linked
/// view's counts under them, and why a view is missing.
fn linked_blocks(d: &mut Doc, name: &str, res: &ProbeResult, linked: &LinkedViews) {
    let listing = |text: String| -> Vec<String> {
        std::iter::once(format!("{name}:"))
            .chain(text.lines().map(str::to_string))
            .collect()
    };
    let mut columns = vec![(
        ".s (compiler)".to_string(),
        listing(res.view.listing_text()),
    )];
    for (title, view) in linked.both() {
        let lines: Vec<String> = match view.status {
            ProbeStatus::Found => listing(view.view.listing_text()),
            ProbeStatus::Missing => vec!["(missing from the executable)".to_string()],
            ProbeStatus::NotBuilt => vec!["(not built: see below)".to_string()],
        };
        columns.push((title.to_string(), lines));
    }
    d.para("What the compiler emitted and what the linker made of it:")
        .push(code("text", &side_by_side_fit(&columns)));
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for (title, view) in linked.both() {
        let t = Text::plain(format!("{title}: "));
        items.push(match (view.view.summary, &view.view.tls, &view.error) {
            (Some(c), Some(tls), _) => t.then(format!(
                "{} instructions · {} atomic RMW · {} calls · {} loops · TLS: {}",
                c.instructions, c.atomic_rmw, c.calls, c.backward_branches, tls.how
            )),
            (_, _, Some(e)) => {
                errors.push(code("text", e));
                t.with(Mark::Strong, "not built").then(": see below")
            }
            _ => t
                .with(Mark::Strong, "missing")
                .then(": the probe is not in the linked executable"),
        });
    }
    d.push(Block::List(items));
    d.blocks.extend(errors);
}

/// The callees a `follow = true` probe's hot path reaches, folded: each
/// one's hot path under its caller, what was not followed, the whole's
/// figures.
pub fn followed(f: &Followed) -> Block {
    let mut blocks = Vec::new();
    for c in &f.callees {
        blocks.push(Block::Para(
            Text::plain(format!("{}→ ", "  ".repeat(c.depth - 1)))
                .with(Mark::Code, &c.path)
                .then(" (from ")
                .with(Mark::Code, &c.caller)
                .then("): ")
                .then_prose(&c.hot.line()),
        ));
        blocks.push(code("asm", &c.hot.lines.join("\n")));
    }
    let mut items: Vec<Text> = (f.stops.iter())
        .map(|n| format!("not followed: {n}").into())
        .collect();
    let leaving = &f.totals.calls_leaving;
    if !leaving.is_empty() {
        items.push(format!("calls leaving the build: {}", leaving.join(", ")).into());
    }
    if !items.is_empty() {
        blocks.push(Block::List(items));
    }
    Block::Details {
        summary: f.summary().into(),
        blocks,
    }
}
