//! The HTML renderer: one self-contained page, no script, one style sheet.
//!
//! A table cell's mark is its class (`changed`, `good`, `bad`, `missing`,
//! `muted`), a figure column is right-aligned (`n`), a diff is a `<pre>`
//! whose added and removed lines are coloured, details are `<details>`.

use super::{Align, Block, Doc, Mark, Table, Text, diff_line_mark};

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:16px 20px;max-width:1400px}\
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d6dbe0;padding:3px 8px}\
td.n,th.n{text-align:right}.changed{font-weight:bold;background:#fff3c4}\
.bad{color:#a40e26;font-weight:bold}.good{color:#116329}.missing,.muted{color:#6a737d}\
code{font-family:ui-monospace,monospace}pre{background:#f6f8fa;padding:6px;overflow-x:auto}";

/// The document as one HTML page.
pub fn render(doc: &Doc) -> String {
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n\
         <style>{STYLE}</style></head><body>\n",
        escape(&doc.title)
    );
    out.push_str(&fragment(&doc.blocks));
    out.push_str("</body></html>\n");
    out
}

/// Blocks as HTML, for a writer that assembles its own page (the report's).
pub fn fragment(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        block(&mut out, b);
    }
    out
}

/// `s` safe in HTML text and attribute values.
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

/// ` title="…"` (escaped) for a hover text; nothing for an empty one.
fn title_attr(title: &str) -> String {
    if title.is_empty() {
        String::new()
    } else {
        format!(" title=\"{}\"", escape(title))
    }
}

fn class(mark: Mark) -> Option<&'static str> {
    match mark {
        Mark::Plain
        | Mark::Code
        | Mark::Ref
        | Mark::Strong
        | Mark::Badge { .. }
        | Mark::Breakable => None,
        Mark::Changed => Some("changed"),
        Mark::Good => Some("good"),
        Mark::Bad => Some("bad"),
        Mark::Missing => Some("missing"),
        Mark::Muted => Some("muted"),
    }
}

/// Inline text as HTML (also Markdown's `<details>` summaries).
pub fn inline(t: &Text) -> String {
    t.0.iter()
        .map(|s| {
            let text = escape(&s.text);
            match (s.mark, class(s.mark)) {
                (Mark::Code, _) => format!("<code>{text}</code>"),
                (Mark::Ref, _) => format!("<a href=\"#{text}\"><code>{text}</code></a>"),
                (Mark::Strong, _) => format!("<b>{text}</b>"),
                (Mark::Badge { class, title }, _) => {
                    format!("<span class=\"{class}\"{}>{text}</span>", title_attr(title))
                }
                (Mark::Breakable, _) => text.replace('-', "-<wbr>"),
                (_, Some(c)) => format!("<span class=\"{c}\">{text}</span>"),
                (_, None) => text,
            }
        })
        .collect()
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Heading(level, t) => {
            let h = (*level).clamp(1, 6);
            out.push_str(&format!("<h{h}>{}</h{h}>\n", inline(t)));
        }
        Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
        Block::List(items) => {
            out.push_str("<ul>\n");
            for t in items {
                out.push_str(&format!("<li>{}</li>\n", inline(t)));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(t) => table(out, t, "", &|_| String::new()),
        Block::Code { text, .. } => out.push_str(&format!("<pre>{}</pre>\n", escape(text))),
        Block::Diff { title, text } => {
            out.push_str(&format!("<p>{}</p><pre>", escape(title)));
            for l in text.lines() {
                match class(diff_line_mark(l)) {
                    Some(c) => out.push_str(&format!("<span class=\"{c}\">{}</span>\n", escape(l))),
                    None => out.push_str(&format!("{}\n", escape(l))),
                }
            }
            out.push_str("</pre>\n");
        }
        Block::Details { summary, blocks } => {
            out.push_str(&format!(
                "<details><summary>{}</summary>\n",
                inline(summary)
            ));
            for b in blocks {
                block(out, b);
            }
            out.push_str("</details>\n");
        }
    }
}

/// One table with `attrs` on its `<table>` (`class="summary"`) and
/// `row(i)` on row `i`'s `<tr>`, for a writer that assembles its own page
/// (the report's).
pub fn table_with(t: &Table, attrs: &str, row: &dyn Fn(usize) -> String) -> String {
    let mut out = String::new();
    table(&mut out, t, attrs, row);
    out
}

fn table(out: &mut String, t: &Table, attrs: &str, row_attrs: &dyn Fn(usize) -> String) {
    let sep = if attrs.is_empty() { "" } else { " " };
    out.push_str(&format!("<table{sep}{attrs}>\n<tr>"));
    for (title, al) in &t.columns {
        let n = if *al == Align::Right {
            " class=\"n\""
        } else {
            ""
        };
        out.push_str(&format!("<th{n}>{}</th>", inline(title)));
    }
    out.push_str("</tr>\n");
    for (i, row) in t.rows.iter().enumerate() {
        out.push_str(&format!("<tr{}>", row_attrs(i)));
        for (c, (_, al)) in row.iter().zip(&t.columns) {
            let classes: Vec<&str> = [(*al == Align::Right).then_some("n"), class(c.mark)]
                .into_iter()
                .flatten()
                .collect();
            let mut attr = if classes.is_empty() {
                String::new()
            } else {
                format!(" class=\"{}\"", classes.join(" "))
            };
            attr += &title_attr(&c.title);
            if c.rows > 1 {
                attr += &format!(" rowspan=\"{}\"", c.rows);
            }
            let (text, blocks) = (inline(&c.text), fragment(&c.blocks));
            out.push_str(&format!("<td{attr}>{text}{blocks}</td>"));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}
