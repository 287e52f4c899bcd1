//! The Markdown report, for reading in a repository: the machine and
//! compiler first, the cross-profile summary (probes × profiles, then the
//! linked views), then every listing, with the `.s` listing and the linked
//! ones side by side where a profile has a linked view.

use std::fmt::Write;

use allocasm_suite::render::{self, Align, Cell, Mark, Table, Text};

use super::text::{join_or_none, side_by_side_fit};
use super::{
    CrossSummary, ExecutedSection, LinkedViews, MUTATION_LEGEND, ProbeResult, ProbeStatus, Report,
    SummaryCell,
};

fn cell(c: &SummaryCell) -> String {
    let mark = match c.passed {
        Some(true) => " ✅",
        Some(false) => " ❌",
        None => "",
    };
    match c.status {
        ProbeStatus::Found => format!("{}{mark}", c.text),
        ProbeStatus::Missing => format!("missing{mark}"),
        _ => "— not built".to_string(),
    }
}

/// The summary's columns that `keep` selects, as a table with the legend
/// line under it; empty when no column is selected.
fn summary_table(r: &CrossSummary, keep: impl Fn(&str) -> bool) -> String {
    let cols: Vec<usize> = (0..r.columns.len())
        .filter(|&i| keep(r.columns[i].view))
        .collect();
    if cols.is_empty() {
        return String::new();
    }
    let mut s = String::from("| probe |");
    for &i in &cols {
        let _ = write!(s, " `{}` |", r.columns[i].title());
    }
    s.push_str("\n| --- |");
    s.push_str(&" ---: |".repeat(cols.len()));
    s.push('\n');
    for row in &r.rows {
        let _ = write!(s, "| [`{0}`](#{0}) |", row.probe);
        for &i in &cols {
            let _ = write!(s, " {} |", cell(&row.cells[i]));
        }
        s.push('\n');
    }
    s
}

/// The `.s` listing and both linked listings in three columns (in a code
/// block), each linked view's counts under it, and why a view is missing.
fn linked_block(s: &mut String, name: &str, res: &ProbeResult, linked: &LinkedViews) {
    let listing = |text: String| -> Vec<String> {
        std::iter::once(format!("{name}:"))
            .chain(text.lines().map(str::to_string))
            .collect()
    };
    let mut columns = vec![(".s (compiler)".to_string(), listing(res.listing_text()))];
    for (title, view) in linked.both() {
        let lines: Vec<String> = match view.status {
            ProbeStatus::Found => listing(view.listing_text()),
            ProbeStatus::Missing => vec!["(missing from the executable)".to_string()],
            _ => vec!["(not built: see below)".to_string()],
        };
        columns.push((title.to_string(), lines));
    }
    let _ = writeln!(
        s,
        "What the compiler emitted and what the linker made of it:\n\n```text\n{}```\n",
        side_by_side_fit(&columns)
    );
    for (title, view) in linked.both() {
        match (view.summary, &view.tls, &view.error) {
            (Some(c), Some(tls), _) => {
                let _ = writeln!(
                    s,
                    "- {title}: {} instructions · {} atomic RMW · {} calls · {} loops · TLS: {}",
                    c.instructions, c.atomic_rmw, c.calls, c.loops, tls.how
                );
            }
            (_, _, Some(e)) => {
                let _ = writeln!(
                    s,
                    "- {title}: **not built**:\n\n  ```text\n{}\n  ```\n",
                    e.lines()
                        .map(|l| format!("  {l}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "- {title}: **missing**: the probe is not in the linked executable"
                );
            }
        }
    }
    s.push('\n');
}

/// The executed counts and llvm-mca's predictions of one listing, or why
/// there are none.
fn measured_lines(s: &mut String, res: &ProbeResult) {
    match (&res.executed, &res.executed_reason) {
        (Some(e), _) => {
            let _ = writeln!(s, "- {}", e.line());
        }
        (None, Some(why)) => {
            let _ = writeln!(s, "- executed: {}", first_line(why));
        }
        (None, None) => {}
    }
    match (&res.mca, &res.mca_reason) {
        (Some(ms), _) => {
            for m in ms {
                let _ = writeln!(s, "- llvm-mca: {}", m.line());
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(s, "- llvm-mca: {}", first_line(why));
        }
        (None, None) => {}
    }
    s.push('\n');
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The `What the CPU executes` section: the method, each profile's status
/// and the cross-profile table.
fn executed_section(s: &mut String, e: &ExecutedSection) {
    let _ = writeln!(s, "## What the CPU executes\n");
    let _ = writeln!(s, "{}\n", e.method);
    let _ = writeln!(s, "{}\n", e.mca_note);
    for p in &e.profiles {
        let exec = match (&p.reason, &p.command) {
            (None, Some(c)) => format!("measured: `{c}`"),
            (Some(why), _) => first_line(why).to_string(),
            (None, None) => "measured".to_string(),
        };
        let mca = match &p.mca_reason {
            None => format!("llvm-mca: {}", p.cpus.join(", ")),
            Some(why) => format!("llvm-mca: {}", first_line(why)),
        };
        let _ = writeln!(s, "- `{}`: {exec}; {mca}", p.profile);
    }
    s.push('\n');
    let t = &e.table;
    if t.columns.is_empty() {
        let _ = writeln!(s, "No profile of this report was measured.\n");
        return;
    }
    let _ = writeln!(
        s,
        "Probes down, profiles across: each cell is `hot-path instructions / executed \
         instructions per call (+ those in helpers) / llvm-mca cycles per call` (one figure per \
         CPU, in the order the column names them; * indicative). The hot path is the `.s` \
         listing's, with the linked release executable's (x86_64-linux-dylib: the cdylib's the \
         driver ran) in parentheses where it differs: the executed count is the linked code's. Where the executed count is below the hot path \
         (helpers apart), the fast case leaves by a shorter way than the longest non-cold one.\n"
    );
    let mut head = String::from("| probe |");
    for c in &t.columns {
        let cpus = e
            .profiles
            .iter()
            .find(|p| &p.profile == c)
            .map(|p| {
                p.cpus
                    .iter()
                    .map(|c| {
                        if c.starts_with("apple-") {
                            format!("{c}*")
                        } else {
                            c.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("·")
            })
            .unwrap_or_default();
        let _ = write!(head, " `{c}` ({cpus}) |");
    }
    let _ = writeln!(s, "{head}\n| --- |{}", " ---: |".repeat(t.columns.len()));
    for row in &t.rows {
        let _ = write!(s, "| [`{0}`](#{0}) |", row.probe);
        for c in &row.cells {
            let _ = write!(s, " {} |", c.text);
        }
        s.push('\n');
    }
    s.push('\n');
}

/// Escapes `|` and backticks for a table cell's inline code.
fn code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'").replace('|', "\\|"))
}

/// The whole `report` in this format.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# allocasm asm report\n");
    let _ = writeln!(s, "- generator: {}", r.generator);
    let _ = writeln!(s, "- commit: `{}`", r.commit_line());
    let _ = writeln!(
        s,
        "- compiler: {} (toolchain `{}`), LLVM {}",
        r.compiler.release, r.compiler.toolchain, r.compiler.llvm
    );
    let _ = writeln!(s, "- extractor: {}", r.backend);
    let _ = writeln!(s, "- reproduce: `cargo run --release -- report`\n");
    let _ = writeln!(
        s,
        "<details><summary><code>rustc -vV</code></summary>\n\n```text\n{}\n```\n\n</details>\n",
        r.compiler.rustc_vv
    );
    let _ = writeln!(s, "## Profiles\n");
    let left = |t: &str| (t.to_string(), Align::Left);
    let profiles = Table {
        columns: vec![
            left("profile"),
            left("triple"),
            left("flags passed after --emit asm"),
            left("codegen units"),
            left("build"),
        ],
        rows: r
            .profiles
            .iter()
            .map(|p| {
                let mut triple = Text::code(&p.triple);
                if let Some(c) = &p.compiler {
                    triple = triple.then(format!(" · built with {c}"));
                }
                let build = match &p.error {
                    None => Cell::new("built", Mark::Plain),
                    Some(e) => Cell::new(
                        Text::marked(Mark::Bad, "failed").then(format!(": {}", first_line(e))),
                        Mark::Plain,
                    ),
                };
                vec![
                    Cell::new(Text::code(&p.name), Mark::Plain),
                    Cell::new(triple, Mark::Plain),
                    Cell::new(Text::code(join_or_none(&p.build_flags)), Mark::Plain),
                    Cell::new(p.codegen_units.as_str(), Mark::Plain),
                    build,
                ]
            })
            .collect(),
    };
    s.push_str(&render::markdown::table(&profiles));
    let _ = writeln!(s, "\n## Summary\n");
    let _ = writeln!(
        s,
        "Probes down, profiles across: each cell is the probe's instruction count, marked \
         where its fast path grows.\n"
    );
    s.push_str(&summary_table(&r.summary, |v| v == "asm"));
    let legend: Vec<String> = r
        .summary
        .legend
        .iter()
        .map(|l| format!("**{}** {}", l.mark, l.meaning))
        .collect();
    let _ = writeln!(s, "\n{}.\n", legend.join(" · "));
    let linked = summary_table(&r.summary, |v| v != "asm");
    if !linked.is_empty() {
        let _ = writeln!(
            s,
            "### Linked executables\n\nThe same probes disassembled from an executable linked \
             with the release profile (`linked`) and with `lto = \"fat\"` (`linked+LTO`):\n"
        );
        s.push_str(&linked);
        s.push('\n');
    } else if !r.linked_views {
        let _ = writeln!(s, "Linked views left out (`--no-linked`).\n");
    }
    if let Some(e) = &r.executed {
        executed_section(&mut s, e);
    }
    if let Some(m) = &r.mutations {
        let _ = writeln!(
            s,
            "### What this suite can and cannot see\n\nThe mutation self-test (`scripts/test mutate`, commit `{}`): each mutation applied to a scratch copy, every profile rebuilt and checked. {}.\n",
            &m.commit[..m.commit.len().min(12)],
            MUTATION_LEGEND
        );
        s.push_str(&render::markdown::table(&m.table()));
        s.push('\n');
    }
    let t = r.totals;
    let _ = writeln!(
        s,
        "\n{} probes × {} profiles: {} listings found, {} missing, {} of {} expectations failed{}.\n",
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
    );
    let _ = writeln!(s, "## Listings");
    for probe in &r.probes {
        let _ = writeln!(s, "\n### {}\n", probe.name);
        let _ = writeln!(
            s,
            "`{}` · {} · {} — expected: {}\n",
            probe.allocator, probe.operation, probe.kind, probe.expect
        );
        for res in &probe.results {
            let _ = writeln!(s, "#### {} on `{}`\n", probe.name, res.profile);
            match res.status {
                ProbeStatus::Found => {}
                ProbeStatus::Missing => {
                    let _ = writeln!(
                        s,
                        "**Missing**: the probe is not in this profile's assembly.\n"
                    );
                }
                _ => {
                    let _ = writeln!(s, "Not built (see Profiles).\n");
                    continue;
                }
            }
            if let (Some(c), Some(tls)) = (res.summary, &res.tls) {
                let _ = writeln!(
                    s,
                    "{} instructions · {} atomic RMW · {} atomics · {} calls · {} branches · {} loops · TLS: {}\n",
                    c.instructions, c.atomic_rmw, c.atomics, c.calls, c.branches, c.loops, tls.how
                );
                if let Some(h) = &res.hot_path {
                    let _ = writeln!(s, "{}\n", h.line());
                    measured_lines(&mut s, res);
                    let _ = writeln!(
                        s,
                        "<details><summary>hot path</summary>\n\n```asm\n{}\n```\n\n</details>\n",
                        h.lines.join("\n")
                    );
                }
                if let Some(f) = &res.followed {
                    followed_block(&mut s, f);
                }
                match &res.linked {
                    Some(linked) => linked_block(&mut s, &probe.name, res, linked),
                    None => {
                        let _ = writeln!(s, "```asm\n{}:\n{}```\n", probe.name, res.listing_text());
                    }
                }
            }
            for a in &res.annotations {
                let _ = writeln!(s, "- {}: {}", code(&a.instruction), a.note);
            }
            if !res.annotations.is_empty() {
                s.push('\n');
            }
            for e in &res.expectations {
                let _ = writeln!(
                    s,
                    "- {} {}{}",
                    if e.passed { "✅" } else { "❌" },
                    code(&e.rule),
                    e.offending
                        .as_ref()
                        .map(|o| format!(" — {}", code(o)))
                        .unwrap_or_default()
                );
            }
            if let Some(why) = res.expectations.iter().find_map(|e| e.why.as_ref()) {
                let _ = writeln!(s, "\n> why: {why}");
            }
            s.push('\n');
        }
    }
    s
}

/// The callees a `follow = true` probe's hot path reaches, folded: each
/// one's hot path under its caller, what was not followed, the whole's
/// figures.
fn followed_block(s: &mut String, f: &super::FollowedReport) {
    let _ = writeln!(s, "<details><summary>{}</summary>\n", f.summary());
    for c in &f.callees {
        let _ = writeln!(
            s,
            "{}→ `{}` (from `{}`): {}\n\n```asm\n{}\n```\n",
            "  ".repeat(c.depth - 1),
            c.path,
            c.caller,
            c.hot_path.line(),
            c.hot_path.lines.join("\n")
        );
    }
    for n in &f.not_followed {
        let _ = writeln!(s, "- not followed: {n}");
    }
    if !f.calls_leaving.is_empty() {
        let _ = writeln!(
            s,
            "- calls leaving the build: {}",
            f.calls_leaving.join(", ")
        );
    }
    let _ = writeln!(s, "\n</details>\n");
}
