//! The terminal renderer: aligned columns, ANSI colours when asked for.
//!
//! A heading is bold after a blank line, a list item and a table row are
//! indented by two spaces, details indent what they fold by four, and a
//! table cell marked changed carries a `*` (so that it shows without
//! colour too).

use super::{Align, Block, Doc, Mark, Table, Text, diff_line_mark};

/// The document as text; `color` adds ANSI escapes.
pub fn render(doc: &Doc, color: bool) -> String {
    let mut out = String::new();
    blocks(&mut out, &doc.blocks, "", color);
    out
}

fn blocks(out: &mut String, list: &[Block], indent: &str, color: bool) {
    for b in list {
        match b {
            Block::Heading(_, t) => {
                if !out.is_empty() {
                    out.push('\n');
                }
                line(out, indent, &paint(Mark::Strong, &inline(t, color), color));
            }
            Block::Para(t) => line(out, indent, &inline(t, color)),
            Block::List(items) => {
                for t in items {
                    line(out, indent, &format!("  {}", inline(t, color)));
                }
            }
            Block::Table(t) => table(out, t, indent, color),
            Block::Code { text, .. } => {
                for l in text.lines() {
                    line(out, indent, l);
                }
            }
            Block::Diff { title, text } => {
                line(
                    out,
                    indent,
                    &paint(Mark::Muted, &format!("-- {title}"), color),
                );
                for l in text.lines() {
                    line(out, indent, &paint(diff_line_mark(l), l, color));
                }
            }
            Block::Details {
                summary,
                blocks: inner,
            } => {
                line(out, indent, &inline(summary, color));
                blocks(out, inner, &format!("{indent}    "), color);
            }
        }
    }
}

fn line(out: &mut String, indent: &str, s: &str) {
    out.push_str(indent);
    out.push_str(s);
    out.push('\n');
}

/// The ANSI escape of a mark (`None`: shown as it is).
fn escape(mark: Mark) -> Option<&'static str> {
    match mark {
        Mark::Plain | Mark::Code | Mark::Ref | Mark::Badge { .. } | Mark::Breakable => None,
        Mark::Changed => Some("33"),
        Mark::Good => Some("32"),
        Mark::Bad => Some("31"),
        Mark::Missing | Mark::Muted => Some("2"),
        Mark::Strong => Some("1"),
    }
}

fn paint(mark: Mark, s: &str, color: bool) -> String {
    match escape(mark) {
        Some(code) if color && !s.is_empty() => format!("\x1b[{code}m{s}\x1b[0m"),
        _ => s.to_string(),
    }
}

fn inline(t: &Text, color: bool) -> String {
    t.0.iter().map(|s| paint(s.mark, &s.text, color)).collect()
}

/// `s` padded to `width` characters on the side `align` leaves open.
fn align(s: &str, shown: &str, width: usize, align: Align) -> String {
    let pad = " ".repeat(width.saturating_sub(s.chars().count()));
    match align {
        Align::Left => format!("{shown}{pad}"),
        Align::Right => format!("{pad}{shown}"),
    }
}

fn table(out: &mut String, t: &Table, indent: &str, color: bool) {
    // A `*` after a changed cell; the other cells of such a table keep its
    // place blank so that the figures still line up.
    let starred = t.rows.iter().flatten().any(|c| c.mark == Mark::Changed);
    let cell_text = |c: &super::Cell, i: usize| {
        let raw = c.text.raw();
        if starred && i > 0 {
            format!("{raw}{}", if c.mark == Mark::Changed { "*" } else { " " })
        } else {
            raw
        }
    };
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, (title, _))| {
            t.rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| cell_text(c, i).chars().count())
                .chain([title.raw().chars().count() + usize::from(starred && i > 0)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut head = String::from("  ");
    for (i, ((title, al), w)) in t.columns.iter().zip(&widths).enumerate() {
        if i > 0 {
            head.push_str("  ");
        }
        let title = title.raw() + if starred && i > 0 { " " } else { "" };
        head.push_str(&align(&title, &title, *w, *al));
    }
    line(out, indent, head.trim_end());
    for row in &t.rows {
        let mut s = String::from("  ");
        for (i, (c, ((_, al), w))) in row.iter().zip(t.columns.iter().zip(&widths)).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let plain = cell_text(c, i);
            let raw = c.text.raw();
            let shown = paint(c.mark, &raw, color) + &plain[raw.len()..];
            s.push_str(&align(&plain, &shown, *w, *al));
        }
        line(out, indent, s.trim_end());
    }
}
