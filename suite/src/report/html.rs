//! The HTML report: one self-contained page (inline CSS and a small inline
//! script, no external assets) laid out for a laptop screen. Its first screen
//! holds the verdict, a table of contents and the cross-profile summary; the
//! profiles follow with the settings they share said once, then per probe
//! one column per profile (key instructions highlighted: atomics, calls,
//! thread-local accesses, loops; every expectation marked) and, where a
//! profile has a linked view, its `.s` listing next to the linked release
//! and fat-LTO listings. The script filters probes by name or allocator and
//! shows two profiles side by side until the reader asks for more; without
//! it the page shows everything.

use std::fmt::Write;
use std::sync::OnceLock;

use allocasm_suite::codegen::Summary;
use allocasm_suite::codegen::build::flags_or_none;
use allocasm_suite::codegen::cfg::HotPath;
use allocasm_suite::codegen::follow::Followed;
use allocasm_suite::render::{self, Align, Block, Cell, Mark, Table, Text};
use regex::Regex;

use super::{
    Annotation, ExecutedSection, LinkedView, ListingLine, ListingView, ProbeReport, ProbeResult,
    ProbeStatus, Report, SummaryCell, TlsAccess, doc,
};

/// Escapes text for HTML content and attributes (the renderers' escape).
pub use allocasm_suite::render::html::escape;

/// The profiles shown side by side before the reader chooses: these two
/// when the report has them, else its first two.
const DEFAULT_PROFILES: [&str; 2] = ["x86_64-linux", "aarch64-linux"];

/// The stylesheet. The highlight classes come after `.hot` and `.cold` so
/// that on the hot path an atomic or a call keeps its legend colour (the hot
/// path is the green bar on the left).
const CSS: &str = r#"
:root { --bg:#fff; --fg:#1b1f24; --muted:#5c6670; --line:#d6dbe0; --pass:#1a7f37; --fail:#cf222e;
  --absent:#6e7781; --absent-bg:#f3f4f6;
  --rmw:#ffd8a8; --atomic:#ffe9c7; --call:#d0e4ff; --tls:#e4d4ff; --loop:#ffd0d0; --hot:#eefbf0; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0 auto; padding: 10px 20px 40px; max-width: 2400px; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0 8px 0 0; display: inline-block; }
h2 { font-size: 17px; margin: 24px 0 4px; border-top: 2px solid var(--line); padding-top: 10px; }
h3 { font-size: 14px; margin: 0; }
a { color: #0a58ca; }
code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f7; }
.muted { color: var(--muted); }
header .meta { display: inline; font-size: 12.5px; color: var(--muted); }
header .meta b { color: var(--fg); font-weight: 600; }
header details { display: inline-block; font-size: 12.5px; }
header details pre { font-size: 11.5px; margin: 4px 0; }
.verdict { margin: 8px 0 6px; padding: 6px 10px; border-radius: 6px; font-size: 15px; }
.verdict.ok { background: #eefbf0; border-left: 4px solid var(--pass); }
.verdict.bad { background: #fff1f0; border-left: 4px solid var(--fail); }
.verdict .status { font-size: 17px; }
nav.toc { font-size: 13px; margin: 4px 0; }
nav.toc a { margin-right: 10px; white-space: nowrap; }
#controls { position: sticky; top: 0; z-index: 2; background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 5px 10px; margin: 6px 0; font-size: 13px; display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; }
#controls label { white-space: nowrap; }
#controls input[type=search] { width: 16em; }
#controls .profiles label { margin-right: 6px; }
#controls button { font-size: 12.5px; }
.legend span { display: inline-block; padding: 0 6px; margin-right: 6px; border-radius: 3px; }
.cols { display: grid; gap: 10px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 430px), 1fr)); }
.cols.linked { grid-template-columns: repeat(3, minmax(0, 1fr)); margin-bottom: 10px; }
.col { border: 1px solid var(--line); border-radius: 6px; padding: 8px; min-width: 0; background: #fcfcfd; }
.col.failed { border-color: var(--fail); box-shadow: inset 3px 0 0 var(--fail); }
.col.passed { box-shadow: inset 3px 0 0 var(--pass); }
.col.absent { border-style: dashed; background: var(--absent-bg); }
.counts { margin: 4px 0; color: var(--muted); font-size: 12.5px; overflow-wrap: anywhere; }
.counts b { color: var(--fg); }
pre.listing { margin: 6px 0; padding: 6px; background: #f6f8fa; border-radius: 4px; overflow-x: auto; }
pre.listing > span { display: block; padding: 0 3px 0 5px; border-radius: 2px; border-left: 3px solid transparent; }
pre.listing .label { color: var(--muted); }
pre.listing .sym { text-decoration: underline dotted var(--muted); cursor: help; }
.hot { border-left-color: var(--pass) !important; background-color: var(--hot); }
.cold { opacity: 0.45; }
.data { color: var(--muted); font-style: italic; }
.atomic-rmw { background: var(--rmw); font-weight: 600; }
.atomic { background: var(--atomic); }
.call { background: var(--call); font-weight: 600; }
.tls { background: var(--tls); }
.loop { background: var(--loop); }
.atomic-rmw.tls, .call.tls { background: linear-gradient(90deg, var(--tls) 0 6px, var(--call) 6px); }
ul.exp, ul.notes { margin: 4px 0; padding-left: 0; list-style: none; font-size: 12.5px; overflow-wrap: anywhere; }
ul.exp li { padding-left: 18px; text-indent: -18px; }
ul.notes li { margin: 3px 0; color: #33404d; }
.pass { color: var(--pass); } .fail { color: var(--fail); font-weight: 600; }
.absent-text { color: var(--absent); }
.status { font-weight: 700; }
table .good { color: var(--pass); } table .bad { color: var(--fail); font-weight: 600; }
table.summary { font-size: 11px; }
table.summary th, table.summary td { padding: 2px 3px; }
table.summary th { font-weight: 600; }
table.summary td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.executed td.n { white-space: normal; }
table.summary td.missing { color: var(--fail); }
.mk { display: inline-block; min-width: 1.3em; margin-left: 2px; text-align: center; border-radius: 3px; font-size: 11px; font-weight: 700; }
.mk.a { background: var(--rmw); } .mk.c { background: var(--call); } .mk.l { background: var(--loop); }
.mk.ok { color: var(--pass); } .mk.no { color: var(--fail); }
p.legend-marks { font-size: 12.5px; margin: 2px 0; }
table.profiles td, table.shared td { font-size: 13px; }
table.shared td { max-width: 760px; overflow-wrap: anywhere; }
details.linked > summary { margin: 12px 0 6px; font-size: 13px; color: var(--muted); font-weight: 600; cursor: pointer; }
.col h4 { margin: 0; font-size: 13px; } .col h4 .muted { font-weight: 400; }
pre.error, table.profiles pre { font-size: 11.5px; color: var(--fail); background: #fff5f5; padding: 6px; border-radius: 4px; max-height: 16em; overflow: auto; }
pre.error.absent-text { color: var(--absent); background: var(--absent-bg); }
"#;

/// Filters the probes and chooses the profiles. Only hides and shows: with
/// scripts off the page is the same, every probe and profile shown.
const SCRIPT: &str = r#"
(function () {
  var bar = document.getElementById('controls');
  if (!bar) return;
  bar.hidden = false;
  var query = document.getElementById('filter-probe');
  var alloc = document.getElementById('filter-allocator');
  var boxes = Array.prototype.slice.call(bar.querySelectorAll('input[data-choose]'));
  var shown = document.getElementById('shown');
  function apply() {
    var on = {};
    boxes.forEach(function (b) { on[b.value] = b.checked; });
    document.querySelectorAll('main [data-profile]').forEach(function (e) {
      e.hidden = !on[e.getAttribute('data-profile')];
    });
    var q = query.value.trim().toLowerCase(), a = alloc.value, n = 0;
    document.querySelectorAll('[data-probe]').forEach(function (e) {
      var name = e.getAttribute('data-probe'), who = e.getAttribute('data-allocator');
      var hit = (!q || name.toLowerCase().indexOf(q) >= 0 || who.toLowerCase().indexOf(q) >= 0)
        && (!a || who === a);
      e.hidden = !hit;
      if (hit && e.tagName === 'SECTION') n++;
    });
    var p = boxes.filter(function (b) { return b.checked; }).length;
    shown.textContent = n + ' probe(s), ' + p + ' of ' + boxes.length + ' profiles';
  }
  function choose(which) {
    var two = bar.getAttribute('data-default').split(' ');
    boxes.forEach(function (b) {
      b.checked = which === 'all' || (which === 'two' && two.indexOf(b.value) >= 0);
    });
    apply();
  }
  bar.addEventListener('input', apply);
  bar.addEventListener('change', apply);
  bar.querySelectorAll('button[data-set]').forEach(function (b) {
    b.addEventListener('click', function () { choose(b.getAttribute('data-set')); });
  });
  choose('two');
})();
"#;

/// The summary's marks as badges: the legend's mark, the badge's class,
/// what it means on hover in a cell, its glyph.
const BADGES: [(&str, &str, &str, &str); 5] = [
    ("A", "mk a", "atomic instruction", "A"),
    ("C", "mk c", "call on the hot path", "C"),
    ("L", "mk l", "loop on the hot path", "L"),
    ("✅", "mk ok", "every expectation held", "✔"),
    ("❌", "mk no", "an expectation failed", "✘"),
];

/// A summary cell: the hot path's count (the whole function's after it
/// where they differ), `missing` or `not built`, then its marks as badges.
fn summary_cell(c: &SummaryCell) -> Cell {
    let (mut text, mark) = match c.status {
        ProbeStatus::Found => (
            Text::plain(c.instructions.unwrap_or(0).to_string()),
            [Mark::Plain, Mark::Bad][usize::from(c.passed == Some(false))],
        ),
        ProbeStatus::Missing => (Text::plain("missing"), Mark::Missing),
        ProbeStatus::NotBuilt => (Text::plain("not built"), Mark::Muted),
    };
    let mut title = String::new();
    if let (ProbeStatus::Found, Some(f)) = (c.status, c.function_instructions)
        && Some(f) != c.instructions
    {
        text = text.then(" ").with(Mark::Muted, format!("({f})"));
        title = format!("hot path; the whole function has {f} instructions");
    }
    let on = [c.atomic, c.call, c.looped];
    let on = on
        .into_iter()
        .chain([Some(true), Some(false)].map(|p| c.passed == p));
    for (on, (_, class, title, glyph)) in on.zip(BADGES) {
        if on {
            text = text.with(Mark::Badge { class, title }, glyph);
        }
    }
    Cell {
        title,
        ..Cell::new(text, mark)
    }
}

/// The summary's columns that `keep` selects, as the table `id`, each row
/// carrying its probe for the filter.
fn summary_table(r: &Report, id: &str, keep: fn(&str) -> bool) -> String {
    let breakable = |t| Text::marked(Mark::Breakable, t);
    doc::summary_table(&r.summary, keep, breakable, summary_cell).map_or(String::new(), |t| {
        let attrs = format!("class=\"summary\" id=\"{id}\"");
        render::html::table_with(&t, &attrs, &|i| probe_attrs(r, &r.summary.rows[i].probe))
    })
}

/// A Rust path of three segments or more (`allocasm::packed::PackedArena::alloc_slow`).
fn long_path() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:[A-Za-z_$][\w$]*|\{[\w#]+\})(?:::(?:[A-Za-z_$][\w$]*|\{[\w#]+\})){2,}")
            .expect("a valid regex")
    })
}

/// The text of a listing line, escaped, with each long Rust path shortened
/// to its last two named segments (`…PackedArena::alloc_slow`) and the full
/// path on hover.
pub fn shorten_symbols(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for m in long_path().find_iter(text) {
        out.push_str(&escape(&text[at..m.start()]));
        at = m.end();
        let path = m.as_str();
        let segments: Vec<&str> = path.split("::").collect();
        let named: Vec<usize> = (0..segments.len())
            .filter(|&i| !segments[i].starts_with('{'))
            .collect();
        let short = match named.as_slice() {
            [.., a, b] if *a + 1 == *b => format!("…{}::{}", segments[*a], segments[*b]),
            [.., a, b] => format!("…{}::…::{}", segments[*a], segments[*b]),
            _ => {
                out.push_str(&escape(path));
                continue;
            }
        };
        if short.chars().count() >= path.chars().count() {
            out.push_str(&escape(path));
            continue;
        }
        let _ = write!(
            out,
            "<span class=\"sym\" title=\"{}\">{}</span>",
            escape(path),
            escape(&short)
        );
    }
    out.push_str(&escape(&text[at..]));
    out
}

/// The counts of one listing, its hot path's line.
fn counts_html(s: &mut String, c: Summary, tls: &TlsAccess, hot: Option<&HotPath>) {
    let _ = writeln!(
        s,
        "<div class=\"counts\"><b>{}</b> instr · <b>{}</b> atomic RMW · <b>{}</b> calls · <b>{}</b> loops<br>TLS: {}</div>",
        c.instructions,
        c.atomic_rmw,
        c.calls,
        c.backward_branches,
        escape(tls.how)
    );
    if let Some(h) = hot {
        let _ = writeln!(
            s,
            "<div class=\"counts hotline\">{}</div>",
            shorten_symbols(&h.line())
        );
    }
}

/// The notes on the key instructions.
fn notes_html(s: &mut String, annotations: &[Annotation]) {
    if annotations.is_empty() {
        return;
    }
    let _ = writeln!(s, "<ul class=\"notes\">");
    for a in annotations {
        let _ = writeln!(
            s,
            "<li><code>{}</code>: {}</li>",
            shorten_symbols(&a.instruction),
            escape(&a.note)
        );
    }
    let _ = writeln!(s, "</ul>");
}

/// Counts, TLS line, listing and (with `notes`) the notes of one view.
fn view_html(name: &str, v: &ListingView, notes: bool) -> String {
    let mut s = String::new();
    if let (Some(c), Some(tls)) = (v.summary, &v.tls) {
        counts_html(&mut s, c, tls, v.hot_path.as_ref());
    }
    s.push_str(&listing_html(name, &v.lines));
    notes_html(&mut s, if notes { &v.annotations } else { &[] });
    s
}

/// One linked view's column: its listing, or why there is none. A view not
/// built for want of a tool (a cross linker, a disassembler) is absent, not
/// failed: it is drawn grey, with the install line; any other failure red.
pub fn linked_view_html(probe: &str, profile: &str, title: &str, view: &LinkedView) -> String {
    let error = escape(view.error.as_deref().unwrap_or(""));
    let (state, body) = match view.status {
        ProbeStatus::Found => ("", view_html(probe, &view.view, true)),
        ProbeStatus::Missing => (
            "failed",
            "<p class=\"fail status\">missing: not in the linked executable</p>\n".into(),
        ),
        _ if view.missing_tool() => (
            "absent",
            format!(
                "<p class=\"absent-text status\">not built: missing tool</p><pre class=\"error absent-text\">{error}</pre>\n"
            ),
        ),
        _ => (
            "failed",
            format!("<p class=\"fail status\">not built</p><pre class=\"error\">{error}</pre>\n"),
        ),
    };
    column(state, profile, title, &body)
}

/// One column of a linked view's row: `profile · title` over `body`.
fn column(class: &str, profile: &str, title: &str, body: &str) -> String {
    format!(
        "<div class=\"col {class}\"><h4>{} <span class=\"muted\">· {title}</span></h4>\n{body}</div>\n",
        escape(profile)
    )
}

/// Per profile with a linked view: the `.s` listing, the linked release
/// listing and the linked fat-LTO listing, three columns to a row, folded
/// under one `<details>` per probe.
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
        "<details class=\"linked\"><summary>Linked view: what the compiler emitted (<code>.s</code>) and what the linker made of it</summary>\n",
    );
    for (res, linked) in rows {
        let asm = match res.status {
            ProbeStatus::Found => view_html(&probe.name, &res.view, false),
            ProbeStatus::Missing => "<p class=\"fail status\">missing</p>\n".into(),
            _ => "<p class=\"muted status\">not built</p>\n".into(),
        };
        let _ = writeln!(
            s,
            "<div class=\"cols linked\" data-profile=\"{}\">",
            escape(&res.profile)
        );
        s.push_str(&column("asm", &res.profile, ".s (compiler)", &asm));
        for (title, view) in linked.both() {
            s.push_str(&linked_view_html(&probe.name, &res.profile, title, view));
        }
        s.push_str("</div>\n");
    }
    s.push_str("</details>\n");
    s
}

/// One listing's executed count and llvm-mca predictions, or why not:
/// the report document's lines.
fn measured_html(s: &mut String, res: &ProbeResult) {
    let lines: Vec<String> = (doc::measured(res).iter())
        .map(render::html::inline)
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(
            s,
            "<div class=\"counts executed\">{}</div>",
            lines.join("<br>")
        );
    }
}

/// The `What the CPU executes` section: method, profiles, the table (the
/// report document's, each row carrying its probe for the filter).
fn executed_html(s: &mut String, r: &Report, e: &ExecutedSection) {
    let _ = writeln!(
        s,
        "<h2 id=\"executed\">What the CPU executes</h2>\n<p class=\"muted\">{}</p>\n<p class=\"muted\">{}</p>\n<ul class=\"notes\">",
        escape(&e.method),
        escape(&e.mca_note)
    );
    for p in &e.profiles {
        let _ = writeln!(
            s,
            "<li>{}</li>",
            render::html::inline(&doc::profile_measured(p))
        );
    }
    let _ = writeln!(s, "</ul>");
    let t = &e.table;
    if t.columns.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "<p class=\"muted\">Each cell: hot-path instructions / executed instructions per call (+ in helpers) / llvm-mca cycles per call per CPU (* indicative).</p>"
    );
    s.push_str(&render::html::table_with(
        &doc::executed_table(e),
        "class=\"summary executed\"",
        &|i| probe_attrs(r, &t.rows[i].probe),
    ));
}

/// The `data-probe` and `data-allocator` of a probe's row, for the filter.
fn probe_attrs(r: &Report, probe: &str) -> String {
    let allocator = (r.probes.iter().find(|p| p.name == probe)).map_or("", |p| &p.allocator);
    format!(
        " data-probe=\"{}\" data-allocator=\"{}\"",
        escape(probe),
        escape(allocator)
    )
}

fn listing_html(name: &str, lines: &[ListingLine]) -> String {
    let mut s = format!(
        "<pre class=\"listing\"><span class=\"label\">{}:</span>",
        escape(name)
    );
    for l in lines {
        let mut classes: Vec<&str> = Vec::new();
        if l.hot {
            classes.push("hot");
        }
        if l.cold {
            classes.push("cold");
        }
        classes.extend(l.tags.iter().map(|t| t.name()));
        if l.kind == "data" {
            classes.push("data");
        }
        if l.kind == "label" {
            classes.push("label");
            let _ = write!(
                s,
                "<span class=\"{}\">{}:</span>",
                classes.join(" "),
                shorten_symbols(&l.text)
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
                shorten_symbols(&l.text)
            );
        }
    }
    s.push_str("</pre>");
    s
}

/// Each value of a setting with the profiles that have it.
type Folded<'a> = Vec<(String, Vec<&'a str>)>;

/// `(value, profiles that have it)`, in the order values first appear.
fn fold<'a>(values: impl IntoIterator<Item = (&'a str, String)>) -> Folded<'a> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for (profile, value) in values {
        match out.iter_mut().find(|(v, _)| *v == value) {
            Some((_, ps)) => ps.push(profile),
            None => out.push((value, vec![profile])),
        }
    }
    out
}

/// The header: title, compiler and commit on one line, the verdict, the
/// table of contents.
fn header_html(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<header>\n<h1>allocasm asm report</h1>");
    let _ = writeln!(
        s,
        "<p class=\"meta\"><b>{}</b> (toolchain <code>{}</code>, LLVM {}) · commit <code>{}</code> · extractor {} · {} · reproduce: <code>cargo run --release -- report</code> · </p><details><summary>rustc -vV</summary><pre>{}</pre></details>",
        escape(&r.compiler.release),
        escape(&r.compiler.toolchain),
        escape(&r.compiler.llvm),
        escape(&r.commit_line()),
        escape(&r.backend),
        escape(&r.generator),
        escape(&r.compiler.rustc_vv)
    );
    let t = r.totals;
    let failed_profiles = if t.profiles_failed > 0 {
        format!(
            ", <span class=\"fail\">{} profile(s) failed to build</span>",
            t.profiles_failed
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "<p id=\"verdict\" class=\"verdict {}\"><span class=\"status {}\">{} of {} expectations failed</span> · {} probes × {} profiles: {} listings found, {} missing{failed_profiles}</p>",
        if t.failures == 0 { "ok" } else { "bad" },
        if t.failures == 0 { "pass" } else { "fail" },
        t.failures,
        t.expectations,
        t.probes,
        t.profiles,
        t.found,
        t.missing
    );
    let mut toc = vec![
        ("summary", "Summary".to_string()),
        ("profiles", "Profiles".to_string()),
    ];
    if r.mutations.is_some() {
        toc.push(("mutations", "What the suite can see".into()));
    }
    if r.executed.is_some() {
        toc.push(("executed", "What the CPU executes".into()));
    }
    if r.summary.columns.iter().any(|c| c.view != "asm") {
        toc.push(("linked", "Linked executables".into()));
    }
    toc.push(("probes", format!("Probes ({})", r.probes.len())));
    let _ = writeln!(
        s,
        "<nav class=\"toc\" id=\"toc\"><b>Contents:</b> {}</nav>\n</header>",
        toc.iter()
            .map(|(id, title)| format!("<a href=\"#{id}\">{}</a>", escape(title)))
            .collect::<String>()
    );
}

/// The filter bar, hidden until the script shows it.
fn controls_html(s: &mut String, r: &Report) {
    let mut defaults: Vec<&str> = DEFAULT_PROFILES
        .iter()
        .copied()
        .filter(|d| r.profiles.iter().any(|p| p.name == *d))
        .collect();
    for p in &r.profiles {
        if defaults.len() >= 2 {
            break;
        }
        if !defaults.contains(&p.name.as_str()) {
            defaults.push(&p.name);
        }
    }
    let mut allocators: Vec<&str> = r.probes.iter().map(|p| p.allocator.as_str()).collect();
    allocators.sort_unstable();
    allocators.dedup();
    let _ = writeln!(
        s,
        "<div id=\"controls\" hidden data-default=\"{}\"><label>Probes: <input type=\"search\" id=\"filter-probe\" placeholder=\"name or allocator\"></label><label><select id=\"filter-allocator\"><option value=\"\">every allocator</option>{}</select></label><span class=\"profiles\">Profiles: {}</span><span><button type=\"button\" data-set=\"two\">two side by side</button> <button type=\"button\" data-set=\"all\">all</button></span><span id=\"shown\" class=\"muted\"></span></div>",
        escape(&defaults.join(" ")),
        allocators
            .iter()
            .map(|a| format!("<option>{}</option>", escape(a)))
            .collect::<String>(),
        r.profiles
            .iter()
            .map(|p| format!(
                "<label><input type=\"checkbox\" data-choose value=\"{0}\"> {0}</label>",
                escape(&p.name)
            ))
            .collect::<String>()
    );
}

/// The profiles: one row each, then the settings they share, each said
/// once with the profiles that have it.
fn profiles_html(s: &mut String, r: &Report) {
    let plain = |t: Text| Cell::new(t, Mark::Plain);
    let columns = |titles: &[&str]| titles.iter().map(|&t| (t.into(), Align::Left)).collect();
    let profiles = Table {
        columns: columns(&["profile", "what it models", "triple", "build"]),
        rows: (r.profiles.iter())
            .map(|p| {
                let build = match &p.error {
                    None => plain(Text::marked(Mark::Good, "built")),
                    Some(e) => Cell {
                        blocks: vec![Block::Details {
                            summary: "why".into(),
                            blocks: vec![Block::Code {
                                lang: "text",
                                text: e.clone(),
                            }],
                        }],
                        ..plain(Text::marked(Mark::Bad, "failed"))
                    },
                };
                vec![
                    plain(Text::marked(Mark::Strong, &p.name)),
                    plain(p.description.as_str().into()),
                    plain(Text::code(&p.triple)),
                    build,
                ]
            })
            .collect(),
    };
    let all = r.profiles.len();
    let settings: [(Text, Folded); 3] = [
        (
            "compiler".into(),
            fold(r.profiles.iter().map(|p| {
                let c = p.compiler.as_ref().unwrap_or(&r.compiler.release);
                (p.name.as_str(), c.clone())
            })),
        ),
        (
            Text::plain("flags after ").with(Mark::Code, "--emit asm"),
            fold((r.profiles.iter()).map(|p| (p.name.as_str(), flags_or_none(&p.build_flags)))),
        ),
        (
            "codegen units".into(),
            fold((r.profiles.iter()).map(|p| (p.name.as_str(), p.codegen_units.clone()))),
        ),
    ];
    let mut shared = Table {
        columns: columns(&["setting", "value", "profiles"]),
        rows: Vec::new(),
    };
    for (what, values) in settings {
        for (i, (value, profiles)) in values.iter().enumerate() {
            let who = match profiles.len() {
                n if n == all => format!("all {all}"),
                _ => profiles.join(", "),
            };
            let rows = values.len();
            let head = (i == 0).then(|| Cell {
                rows,
                ..plain(what.clone())
            });
            let cells = [plain(Text::code(value)), plain(who.into())];
            shared.rows.push(head.into_iter().chain(cells).collect());
        }
    }
    let _ = writeln!(s, "<h2 id=\"profiles\">Profiles</h2>");
    s.push_str(&table(&profiles, "profiles"));
    s.push_str(&table(&shared, "shared"));
}

/// A table of class `class`.
fn table(t: &Table, class: &str) -> String {
    render::html::table_with(t, &format!("class=\"{class}\""), &|_| String::new())
}

/// One probe: its line, then one column per profile, then its linked view.
fn probe_html(s: &mut String, probe: &ProbeReport) {
    let _ = writeln!(
        s,
        "<section class=\"probe\" data-probe=\"{0}\" data-allocator=\"{1}\"><h2 id=\"{0}\"><code>{0}</code></h2>",
        escape(&probe.name),
        escape(&probe.allocator)
    );
    let _ = writeln!(
        s,
        "<p class=\"muted\"><code>{}</code> · {} · {} — expected: {}</p>\n<div class=\"cols\">",
        escape(&probe.allocator),
        escape(&probe.operation),
        probe.kind,
        escape(&probe.expect)
    );
    for res in &probe.results {
        let state = match res.status {
            ProbeStatus::Found if res.passed => "passed",
            ProbeStatus::NotBuilt => "absent",
            _ => "failed",
        };
        let _ = writeln!(
            s,
            "<div class=\"col {state}\" data-profile=\"{0}\"><h3>{0}</h3>",
            escape(&res.profile)
        );
        match (res.status, res.view.summary, &res.view.tls) {
            (ProbeStatus::Found, Some(c), Some(tls)) => {
                counts_html(s, c, tls, res.view.hot_path.as_ref());
                measured_html(s, res);
                s.push_str(&listing_html(&probe.name, &res.view.lines));
                if let Some(f) = &res.followed {
                    followed_html(s, f);
                }
            }
            (ProbeStatus::Missing, _, _) => {
                let _ = writeln!(
                    s,
                    "<p class=\"fail status\">missing: not in this profile's assembly</p>"
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "<p class=\"absent-text status\">not built: the profile's build failed (see Profiles)</p>"
                );
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
                        .map(|o| format!(" — <code>{}</code>", shorten_symbols(o)))
                        .unwrap_or_default()
                );
            }
            let _ = writeln!(s, "</ul>");
        }
        notes_html(s, &res.view.annotations);
        let _ = writeln!(s, "</div>");
    }
    let _ = writeln!(s, "</div>");
    s.push_str(&linked_html(probe));
    let _ = writeln!(s, "</section>");
}

/// A `follow = true` probe's walk through its callees, folded: the
/// report document's block, in the page's `followed` fold.
fn followed_html(s: &mut String, f: &Followed) {
    let html = render::html::fragment(&[doc::followed(f)]);
    s.push_str(&html.replacen("<details>", "<details class=\"followed\">", 1));
}

/// The whole `report` in this format.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>allocasm asm report · {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape(&r.compiler.release)
    );
    header_html(&mut s, r);
    controls_html(&mut s, r);
    let _ = writeln!(s, "<main>");
    // The cross-profile summary: every profile, whatever is chosen.
    let _ = writeln!(
        s,
        "<h2 id=\"summary\">Summary</h2>\n<p class=\"muted legend-marks\">Probes down, profiles across: each cell is the probe's hot-path instruction count, the whole function's in parentheses, marked where its fast path grows.</p>"
    );
    s.push_str(&summary_table(r, "summary-table", |v| v == "asm"));
    let mut legend = Text::default();
    for (i, l) in r.summary.legend.iter().enumerate() {
        let (class, glyph) = (BADGES.iter().find(|b| b.0 == l.mark))
            .map_or(("mk no", l.mark), |&(_, class, _, glyph)| (class, glyph));
        legend = (legend.then(if i == 0 { "" } else { " · " }))
            .with(Mark::Badge { class, title: "" }, glyph)
            .then(format!(" {}", l.meaning));
    }
    let _ = writeln!(
        s,
        "<p class=\"muted legend-marks\">{}</p>",
        render::html::inline(&legend)
    );
    profiles_html(&mut s, r);
    if let Some(m) = &r.mutations {
        let _ = writeln!(
            s,
            "<h2 id=\"mutations\">What this suite can and cannot see</h2><p class=\"muted\">The mutation self-test (<code>scripts/test mutate</code>, commit <code>{}</code>). {}.</p>",
            escape(&m.commit[..m.commit.len().min(12)]),
            escape(super::MUTATION_LEGEND),
        );
        s.push_str(&table(&m.table(), "summary mutations"));
    }
    if let Some(e) = &r.executed {
        executed_html(&mut s, r, e);
    }
    let linked = summary_table(r, "linked-table", |v| v != "asm");
    if !linked.is_empty() {
        let _ = writeln!(
            s,
            "<h2 id=\"linked\">Linked executables</h2><p class=\"muted\">The same probes disassembled from an executable linked with the release profile (linked) and with <code>lto = \"fat\"</code> (linked+LTO); a view not built for want of a tool is grey.</p>"
        );
        s.push_str(&linked);
    } else if !r.linked_views {
        let _ = writeln!(
            s,
            "<p class=\"muted\">Linked views left out (<code>--no-linked</code>).</p>"
        );
    }
    // Per probe: profiles side by side.
    let _ = writeln!(
        s,
        "<h2 id=\"probes\">Probes</h2>\n<p class=\"legend\">Highlights: <span class=\"atomic-rmw\">atomic read-modify-write</span><span class=\"atomic\">other atomic</span><span class=\"call\">call</span><span class=\"tls\">thread-local access</span><span class=\"loop\">loop (backward branch)</span><span class=\"hot\" style=\"border-left:3px solid\">hot path</span><span class=\"cold\">cold block</span> · a shortened symbol shows its full name on hover</p>"
    );
    for probe in &r.probes {
        probe_html(&mut s, probe);
    }
    let _ = writeln!(s, "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_shortened_with_the_full_name_on_hover() {
        let s = shorten_symbols("jmp allocasm::packed::PackedArena::alloc_slow");
        assert_eq!(
            s,
            "jmp <span class=\"sym\" title=\"allocasm::packed::PackedArena::alloc_slow\">…PackedArena::alloc_slow</span>"
        );
        let tls = shorten_symbols(
            "add rcx, qword ptr [rip + allocasm::thread_cursor::CURSORS::{constant}::{closure}::__RUST_STD_INTERNAL_VAL@GOTTPOFF]",
        );
        assert!(
            tls.contains(">…CURSORS::…::__RUST_STD_INTERNAL_VAL</span>@GOTTPOFF]"),
            "{tls}"
        );
        // Short paths, registers and labels stay as they are, escaped.
        assert_eq!(shorten_symbols("bl core::ptr"), "bl core::ptr");
        assert_eq!(shorten_symbols("b.ne .LBB5 <x>"), "b.ne .LBB5 &lt;x&gt;");
    }

    fn not_built(error: &str) -> LinkedView {
        LinkedView {
            status: ProbeStatus::NotBuilt,
            error: Some(error.to_string()),
            view: ListingView::default(),
        }
    }

    #[test]
    fn a_view_missing_a_tool_is_absent_and_a_failed_build_is_red() {
        let missing = linked_view_html(
            "probe_x",
            "riscv64-linux",
            "linked, release",
            &not_built(
                "the linked build (release) of profile riscv64-linux failed: `cargo build`\nerror: linker `riscv64-linux-gnu-gcc` not found\nfix: install the cross linker with `sudo apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross` (or run scripts/setup)",
            ),
        );
        assert!(missing.contains("class=\"col absent\""), "{missing}");
        assert!(missing.contains("not built: missing tool"), "{missing}");
        // Nothing red: no failure class (the error text itself says "failed").
        for red in ["class=\"fail", "col failed", "<pre class=\"error\">"] {
            assert!(!missing.contains(red), "{red} in {missing}");
        }
        let failed = linked_view_html(
            "probe_x",
            "x86_64-linux",
            "linked, release",
            &not_built("the linked build (release) of profile x86_64-linux failed: error[E0308]"),
        );
        assert!(failed.contains("class=\"col failed\""), "{failed}");
        assert!(failed.contains("<p class=\"fail status\">not built</p>"));
    }

    #[test]
    fn fold_says_each_value_once_with_its_profiles() {
        let folded = fold([
            ("a", "x".to_string()),
            ("b", "y".to_string()),
            ("c", "x".to_string()),
        ]);
        assert_eq!(
            folded,
            [
                ("x".to_string(), vec!["a", "c"]),
                ("y".to_string(), vec!["b"])
            ]
        );
    }
}
