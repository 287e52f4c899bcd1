//! The HTML report: one self-contained page (inline CSS, no scripts, no
//! external assets) with, per probe, one column per profile side by side,
//! key instructions highlighted (atomics, calls, thread-local accesses,
//! loops) and every expectation marked. The cross-profile summary comes
//! first; where a profile has a linked view, each probe also shows its `.s`
//! listing next to the linked release and fat-LTO listings, in columns.

use std::fmt::Write;

use super::text::join_or_none;
use super::{
    Annotation, Counts, CrossSummary, ExecutedSection, Format, HotPathReport, ListingLine,
    ProbeReport, ProbeResult, Report, SummaryCell, TlsAccess,
};

/// `report.html`.
pub struct Html;

/// Escapes text for HTML content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
:root { --bg:#fff; --fg:#1b1f24; --muted:#5c6670; --line:#d6dbe0; --pass:#1a7f37; --fail:#cf222e;
  --rmw:#ffd8a8; --atomic:#ffe9c7; --call:#d0e4ff; --tls:#e4d4ff; --loop:#ffd0d0; }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 16px 20px 40px; max-width: 2400px; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 28px 0 4px; border-top: 2px solid var(--line); padding-top: 12px; }
h3 { font-size: 14px; margin: 0; }
code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f7; }
.meta td:first-child { color: var(--muted); white-space: nowrap; }
.muted { color: var(--muted); }
.legend span { display: inline-block; padding: 0 6px; margin-right: 6px; border-radius: 3px; }
.cols { display: grid; gap: 10px; overflow-x: auto; }
.col { border: 1px solid var(--line); border-radius: 6px; padding: 8px; min-width: 0; background: #fcfcfd; }
.col.failed { border-color: var(--fail); box-shadow: inset 3px 0 0 var(--fail); }
.col.passed { box-shadow: inset 3px 0 0 var(--pass); }
.counts { margin: 4px 0; color: var(--muted); font-size: 12.5px; }
.counts b { color: var(--fg); }
pre.listing { margin: 6px 0; padding: 6px; background: #f6f8fa; border-radius: 4px; overflow-x: auto; }
pre.listing span { display: block; padding: 0 3px; border-radius: 2px; }
pre.listing .label { color: var(--muted); }
.atomic-rmw { background: var(--rmw); font-weight: 600; }
.atomic { background: var(--atomic); }
.call { background: var(--call); font-weight: 600; }
.tls { background: var(--tls); }
.loop { background: var(--loop); }
.atomic-rmw.tls, .call.tls { background: linear-gradient(90deg, var(--tls) 0 6px, var(--call) 6px); }
ul.exp, ul.notes { margin: 4px 0; padding-left: 0; list-style: none; font-size: 12.5px; }
ul.exp li { padding-left: 18px; text-indent: -18px; }
ul.notes li { margin: 3px 0; color: #33404d; }
.pass { color: var(--pass); } .fail { color: var(--fail); font-weight: 600; }
.status { font-weight: 700; }
td.pass, td.fail { white-space: nowrap; }
table.summary td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.summary td.missing { color: var(--fail); } table.summary td.none { color: var(--muted); }
.mk { display: inline-block; min-width: 1.3em; margin-left: 3px; text-align: center; border-radius: 3px; font-size: 11.5px; font-weight: 700; }
.mk.a { background: var(--rmw); } .mk.c { background: var(--call); } .mk.l { background: var(--loop); }
.mk.ok { color: var(--pass); } .mk.no { color: var(--fail); }
h3.linked { margin: 14px 0 4px; font-size: 13px; color: var(--muted); font-weight: 600; }
.col h4 { margin: 0; font-size: 13px; } .col h4 .muted { font-weight: 400; }
.hot { border-left: 3px solid #1a7f37; background-color: #eefbf0; }
.cold { opacity: 0.45; }
.data { color: var(--muted); font-style: italic; }
.muted { color: var(--muted); }
pre.error { white-space: pre-wrap; font-size: 11.5px; color: var(--fail); background: #fff5f5; padding: 6px; border-radius: 4px; max-height: 16em; overflow: auto; }
"#;

/// The marks of a summary cell, as badges.
fn marks(c: &SummaryCell) -> String {
    let mut s = String::new();
    for (on, class, mark, title) in [
        (c.atomic, "a", "A", "atomic instruction"),
        (c.call, "c", "C", "call on the hot path"),
        (c.looped, "l", "L", "loop on the hot path"),
    ] {
        if on {
            let _ = write!(
                s,
                "<span class=\"mk {class}\" title=\"{title}\">{mark}</span>"
            );
        }
    }
    match c.passed {
        Some(true) => s.push_str("<span class=\"mk ok\" title=\"every expectation held\">✔</span>"),
        Some(false) => s.push_str("<span class=\"mk no\" title=\"an expectation failed\">✘</span>"),
        None => {}
    }
    s
}

/// The summary's columns that `keep` selects, as a table.
fn summary_table(r: &CrossSummary, keep: impl Fn(&str) -> bool) -> String {
    let cols: Vec<usize> = (0..r.columns.len())
        .filter(|&i| keep(r.columns[i].view))
        .collect();
    if cols.is_empty() {
        return String::new();
    }
    let mut s = String::from("<table class=\"summary\"><tr><th>probe</th>");
    for &i in &cols {
        let _ = write!(s, "<th>{}</th>", escape(&r.columns[i].title()));
    }
    s.push_str("</tr>\n");
    for row in &r.rows {
        let _ = write!(
            s,
            "<tr><td><a href=\"#{0}\"><code>{0}</code></a></td>",
            escape(&row.probe)
        );
        for &i in &cols {
            let c = &row.cells[i];
            let class = match (c.status, c.passed) {
                ("found", Some(false)) => "n fail",
                ("found", _) => "n",
                ("missing", _) => "n missing",
                _ => "n none",
            };
            let text = match c.status {
                "found" => match c.function_instructions {
                    Some(f) if Some(f) != c.instructions => format!(
                        "<span title=\"hot path; the whole function has {f} instructions\">{}</span> <span class=\"muted\">({f})</span>",
                        c.instructions.unwrap_or(0)
                    ),
                    _ => c.instructions.unwrap_or(0).to_string(),
                },
                "missing" => "missing".to_string(),
                _ => "not built".to_string(),
            };
            let _ = write!(s, "<td class=\"{class}\">{text}{}</td>", marks(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// Counts, TLS line, listing and notes of one view.
fn view_html(
    name: &str,
    counts: Option<Counts>,
    hot: Option<&HotPathReport>,
    tls: Option<&TlsAccess>,
    lines: &[ListingLine],
    annotations: &[Annotation],
) -> String {
    let mut s = String::new();
    if let (Some(c), Some(tls)) = (counts, tls) {
        let _ = writeln!(
            s,
            "<div class=\"counts\"><b>{}</b> instr · <b>{}</b> atomic RMW · <b>{}</b> calls · <b>{}</b> loops<br>TLS: {}</div>",
            c.instructions,
            c.atomic_rmw,
            c.calls,
            c.loops,
            escape(tls.how)
        );
    }
    if let Some(h) = hot {
        let _ = writeln!(
            s,
            "<div class=\"counts hotline\">{}</div>",
            escape(&h.line())
        );
    }
    s.push_str(&listing_html(name, lines));
    if !annotations.is_empty() {
        let _ = writeln!(s, "<ul class=\"notes\">");
        for a in annotations {
            let _ = writeln!(
                s,
                "<li><code>{}</code>: {}</li>",
                escape(&a.instruction),
                escape(&a.note)
            );
        }
        let _ = writeln!(s, "</ul>");
    }
    s
}

/// Per profile with a linked view: the `.s` listing, the linked release
/// listing and the linked fat-LTO listing, three columns to a row.
fn linked_html(probe: &ProbeReport) -> String {
    let rows: Vec<_> = probe
        .results
        .iter()
        .filter_map(|r| r.linked.as_ref().map(|l| (r, l)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h3 class=\"linked\">Linked view: what the compiler emitted (<code>.s</code>) and what the linker made of it</h3>\n<div class=\"cols linked\" style=\"grid-template-columns: repeat(3, minmax(290px, 1fr))\">\n",
    );
    for (res, linked) in rows {
        let _ = writeln!(
            s,
            "<div class=\"col asm\"><h4>{} <span class=\"muted\">· .s (compiler)</span></h4>",
            escape(&res.profile)
        );
        if res.status == "found" {
            s.push_str(&view_html(
                &probe.name,
                res.summary,
                res.hot_path.as_ref(),
                res.tls.as_ref(),
                &res.lines,
                &[],
            ));
        } else {
            let _ = writeln!(s, "<p class=\"fail status\">{}</p>", res.status);
        }
        s.push_str("</div>\n");
        for (title, view) in linked.both() {
            let state = match view.status {
                "found" => "",
                _ => "failed",
            };
            let _ = writeln!(
                s,
                "<div class=\"col {state}\"><h4>{} <span class=\"muted\">· {title}</span></h4>",
                escape(&res.profile)
            );
            match (view.status, &view.error) {
                ("found", _) => s.push_str(&view_html(
                    &probe.name,
                    view.summary,
                    view.hot_path.as_ref(),
                    view.tls.as_ref(),
                    &view.lines,
                    &view.annotations,
                )),
                ("missing", _) => {
                    let _ = writeln!(
                        s,
                        "<p class=\"fail status\">missing: not in the linked executable</p>"
                    );
                }
                (_, e) => {
                    let _ = writeln!(
                        s,
                        "<p class=\"fail status\">not built</p><pre class=\"error\">{}</pre>",
                        escape(e.as_deref().unwrap_or(""))
                    );
                }
            }
            s.push_str("</div>\n");
        }
    }
    s.push_str("</div>\n");
    s
}

/// One listing's executed count and llvm-mca predictions, or why not.
fn measured_html(s: &mut String, res: &ProbeResult) {
    let mut parts: Vec<String> = Vec::new();
    match (&res.executed, &res.executed_reason) {
        (Some(e), _) => parts.push(format!("<b>{}</b>", escape(&e.line()))),
        (None, Some(why)) => parts.push(format!(
            "executed: <span class=\"muted\">{}</span>",
            escape(why.lines().next().unwrap_or(""))
        )),
        (None, None) => {}
    }
    match (&res.mca, &res.mca_reason) {
        (Some(ms), _) => parts.extend(
            ms.iter()
                .map(|m| format!("llvm-mca: {}", escape(&m.line()))),
        ),
        (None, Some(why)) => parts.push(format!(
            "llvm-mca: <span class=\"muted\">{}</span>",
            escape(why.lines().next().unwrap_or(""))
        )),
        (None, None) => {}
    }
    if !parts.is_empty() {
        let _ = writeln!(
            s,
            "<div class=\"counts executed\">{}</div>",
            parts.join("<br>")
        );
    }
}

/// The `What the CPU executes` section: method, profiles, the table.
fn executed_html(s: &mut String, e: &ExecutedSection) {
    let _ = writeln!(
        s,
        "<h2 id=\"executed\">What the CPU executes</h2>\n<p class=\"muted\">{}</p>\n<p class=\"muted\">{}</p>\n<ul class=\"notes\">",
        escape(&e.method),
        escape(&e.mca_note)
    );
    for p in &e.profiles {
        let exec = match (&p.reason, &p.command) {
            (None, Some(c)) => format!("measured: <code>{}</code>", escape(c)),
            (Some(why), _) => escape(why.lines().next().unwrap_or("")),
            (None, None) => "measured".to_string(),
        };
        let mca = match &p.mca_reason {
            None => format!("llvm-mca: {}", escape(&p.cpus.join(", "))),
            Some(why) => format!("llvm-mca: {}", escape(why.lines().next().unwrap_or(""))),
        };
        let _ = writeln!(s, "<li><b>{}</b>: {exec}; {mca}</li>", escape(&p.profile));
    }
    let _ = writeln!(s, "</ul>");
    let t = &e.table;
    if t.columns.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "<p class=\"muted\">Each cell: hot-path instructions / executed instructions per call (+ in helpers) / llvm-mca cycles per call per CPU (* indicative).</p>\n<table class=\"summary executed\"><tr><th>probe</th>{}</tr>",
        t.columns
            .iter()
            .map(|c| {
                let cpus = e
                    .profiles
                    .iter()
                    .find(|p| &p.profile == c)
                    .map(|p| p.cpus.join("·"))
                    .unwrap_or_default();
                format!(
                    "<th>{}<br><span class=\"muted\">{}</span></th>",
                    escape(c),
                    escape(&cpus)
                )
            })
            .collect::<String>()
    );
    for row in &t.rows {
        let _ = writeln!(
            s,
            "<tr><td><a href=\"#{0}\"><code>{0}</code></a></td>{1}</tr>",
            escape(&row.probe),
            row.cells
                .iter()
                .map(|c| format!("<td>{}</td>", escape(&c.text)))
                .collect::<String>()
        );
    }
    let _ = writeln!(s, "</table>");
}

fn listing_html(name: &str, lines: &[ListingLine]) -> String {
    let mut s = format!(
        "<pre class=\"listing\"><span class=\"label\">{}:</span>",
        escape(name)
    );
    for l in lines {
        let mut classes: Vec<&str> = l.tags.iter().map(|t| t.name()).collect();
        if l.hot {
            classes.push("hot");
        }
        if l.cold {
            classes.push("cold");
        }
        if l.kind == "data" {
            classes.push("data");
        }
        if l.kind == "label" {
            classes.push("label");
            let _ = write!(
                s,
                "<span class=\"{}\">{}:</span>",
                classes.join(" "),
                escape(&l.text)
            );
        } else {
            let title = if classes.is_empty() {
                String::new()
            } else {
                format!(" title=\"{}\"", classes.join(", "))
            };
            let _ = write!(
                s,
                "<span class=\"{}\"{title}>  {}</span>",
                classes.join(" "),
                escape(&l.text)
            );
        }
    }
    s.push_str("</pre>");
    s
}

impl Format for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, r: &Report) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>allocasm asm report · {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
            escape(&r.compiler.release)
        );
        let _ = writeln!(s, "<h1>allocasm asm report</h1>");
        let _ = writeln!(s, "<table class=\"meta\">");
        for (k, v) in [
            ("commit", r.commit_line()),
            (
                "compiler",
                format!(
                    "{} (toolchain {})",
                    r.compiler.release, r.compiler.toolchain
                ),
            ),
            ("LLVM", r.compiler.llvm.clone()),
            ("extractor", r.backend.clone()),
            ("generator", r.generator.clone()),
            ("reproduce", "cargo run --release -- report".to_string()),
        ] {
            let _ = writeln!(
                s,
                "<tr><td>{k}</td><td><code>{}</code></td></tr>",
                escape(&v)
            );
        }
        let _ = writeln!(
            s,
            "<tr><td>rustc -vV</td><td><details><summary>show</summary><pre>{}</pre></details></td></tr></table>",
            escape(&r.compiler.rustc_vv)
        );
        let _ = writeln!(
            s,
            "<table><tr><th>profile</th><th>triple</th><th>flags after <code>--emit asm</code></th><th>codegen units</th><th>build</th></tr>"
        );
        for p in &r.profiles {
            let build = match &p.error {
                None => "<span class=\"pass\">built</span>".to_string(),
                Some(e) => format!(
                    "<span class=\"fail\">failed</span><details><summary>why</summary><pre>{}</pre></details>",
                    escape(e)
                ),
            };
            let _ = writeln!(
                s,
                "<tr><td><b>{}</b><br><span class=\"muted\">{}</span></td><td><code>{}</code>{}</td><td><code>{}</code></td><td>{}</td><td>{build}</td></tr>",
                escape(&p.name),
                escape(&p.description),
                escape(&p.triple),
                p.compiler.as_ref().map_or_else(String::new, |c| format!(
                    "<br><span class=\"muted\">built with {}</span>",
                    escape(c)
                )),
                escape(&join_or_none(&p.build_flags)),
                escape(&p.codegen_units)
            );
        }
        let _ = writeln!(s, "</table>");
        let t = r.totals;
        let _ = writeln!(
            s,
            "<p>{} probes × {} profiles: {} listings found, {} missing, <span class=\"{}\">{} of {} expectations failed</span>.</p>",
            t.probes,
            t.profiles,
            t.found,
            t.missing,
            if t.failures == 0 { "pass" } else { "fail" },
            t.failures,
            t.expectations
        );
        let _ = writeln!(
            s,
            "<p class=\"legend\">Highlights: <span class=\"atomic-rmw\">atomic read-modify-write</span><span class=\"atomic\">other atomic</span><span class=\"call\">call</span><span class=\"tls\">thread-local access</span><span class=\"loop\">loop (backward branch)</span></p>"
        );
        // The cross-profile summary.
        let _ = writeln!(
            s,
            "<h2 id=\"summary\">Summary</h2>\n<p class=\"muted\">Probes down, profiles across: each cell is the probe's instruction count, marked where its fast path grows.</p>"
        );
        s.push_str(&summary_table(&r.summary, |v| v == "asm"));
        let legend: Vec<String> = r
            .summary
            .legend
            .iter()
            .map(|l| {
                let class = match l.mark {
                    "A" => "mk a",
                    "C" => "mk c",
                    "L" => "mk l",
                    "✅" => "mk ok",
                    _ => "mk no",
                };
                let mark = match l.mark {
                    "✅" => "✔",
                    "❌" => "✘",
                    m => m,
                };
                format!(
                    "<span class=\"{class}\">{mark}</span> {}",
                    escape(l.meaning)
                )
            })
            .collect();
        let _ = writeln!(s, "<p class=\"muted\">{}</p>", legend.join(" · "));
        if let Some(m) = &r.mutations {
            let _ = writeln!(
                s,
                "<h3>What this suite can and cannot see</h3><p class=\"muted\">The mutation self-test (<code>scripts/test mutate</code>, commit <code>{}</code>). {}.</p><table class=\"summary\"><tr><th>mutation</th>{}</tr>",
                escape(&m.commit[..m.commit.len().min(12)]),
                escape(super::MUTATION_LEGEND),
                m.profiles
                    .iter()
                    .map(|p| format!("<th>{}</th>", escape(p)))
                    .collect::<String>()
            );
            for row in &m.rows {
                let _ = writeln!(
                    s,
                    "<tr><td><code>{}</code></td>{}</tr>",
                    escape(&row.mutation),
                    row.cells
                        .iter()
                        .map(|c| {
                            let class = if c == "caught" {
                                "pass"
                            } else if c.contains("MISSED") {
                                "fail"
                            } else {
                                "none"
                            };
                            format!("<td class=\"{class}\">{}</td>", escape(c))
                        })
                        .collect::<String>()
                );
            }
            s.push_str("</table>\n");
        }
        if let Some(e) = &r.executed {
            executed_html(&mut s, e);
        }
        let linked = summary_table(&r.summary, |v| v != "asm");
        if !linked.is_empty() {
            let _ = writeln!(
                s,
                "<h3>Linked executables</h3><p class=\"muted\">The same probes disassembled from an executable linked with the release profile (linked) and with <code>lto = \"fat\"</code> (linked+LTO).</p>"
            );
            s.push_str(&linked);
        } else if !r.linked_views {
            let _ = writeln!(
                s,
                "<p class=\"muted\">Linked views left out (<code>--no-linked</code>).</p>"
            );
        }
        // Per probe: profiles side by side.
        let n = r.profiles.len().max(1);
        for probe in &r.probes {
            let _ = writeln!(
                s,
                "<h2 id=\"{0}\"><code>{0}</code></h2>",
                escape(&probe.name)
            );
            let _ = writeln!(
                s,
                "<p class=\"muted\"><code>{}</code> · {} · {} — expected: {}</p>",
                escape(&probe.allocator),
                escape(&probe.operation),
                probe.kind,
                escape(&probe.expect)
            );
            let _ = writeln!(
                s,
                "<div class=\"cols\" style=\"grid-template-columns: repeat({n}, minmax(290px, 1fr))\">"
            );
            for res in &probe.results {
                let state = match res.status {
                    "found" if res.passed => "passed",
                    "not-built" => "",
                    _ => "failed",
                };
                let _ = writeln!(
                    s,
                    "<div class=\"col {state}\"><h3>{}</h3>",
                    escape(&res.profile)
                );
                match (res.status, res.summary, &res.tls) {
                    ("found", Some(c), Some(tls)) => {
                        let _ = writeln!(
                            s,
                            "<div class=\"counts\"><b>{}</b> instr · <b>{}</b> atomic RMW · <b>{}</b> calls · <b>{}</b> loops<br>TLS: {}</div>",
                            c.instructions,
                            c.atomic_rmw,
                            c.calls,
                            c.loops,
                            escape(tls.how)
                        );
                        if let Some(h) = &res.hot_path {
                            let _ = writeln!(
                                s,
                                "<div class=\"counts hotline\">{}</div>",
                                escape(&h.line())
                            );
                        }
                        measured_html(&mut s, res);
                        s.push_str(&listing_html(&probe.name, &res.lines));
                    }
                    ("missing", _, _) => {
                        let _ = writeln!(
                            s,
                            "<p class=\"fail status\">missing: not in this profile's assembly</p>"
                        );
                    }
                    _ => {
                        let _ = writeln!(s, "<p class=\"muted status\">not built</p>");
                    }
                }
                if !res.expectations.is_empty() {
                    let _ = writeln!(s, "<ul class=\"exp\">");
                    for e in &res.expectations {
                        let _ = writeln!(
                            s,
                            "<li class=\"{}\">{} <code>{}</code>{}</li>",
                            if e.passed { "pass" } else { "fail" },
                            if e.passed { "✔" } else { "✘" },
                            escape(&e.rule),
                            e.offending
                                .as_ref()
                                .map(|o| format!(" — <code>{}</code>", escape(o)))
                                .unwrap_or_default()
                        );
                    }
                    let _ = writeln!(s, "</ul>");
                }
                if !res.annotations.is_empty() {
                    let _ = writeln!(s, "<ul class=\"notes\">");
                    for a in &res.annotations {
                        let _ = writeln!(
                            s,
                            "<li><code>{}</code>: {}</li>",
                            escape(&a.instruction),
                            escape(&a.note)
                        );
                    }
                    let _ = writeln!(s, "</ul>");
                }
                let _ = writeln!(s, "</div>");
            }
            let _ = writeln!(s, "</div>");
            s.push_str(&linked_html(probe));
        }
        let _ = writeln!(s, "</body>\n</html>");
        s
    }
}
