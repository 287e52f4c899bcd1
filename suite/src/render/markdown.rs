//! The Markdown renderer (GitHub's): a pull request, a CI step summary.
//!
//! Blocks are separated by a blank line; a table's changed or failing cell
//! is bold; a diff is a fenced `diff` block; details are GitHub's
//! `<details>` with an HTML summary.

use super::{Align, Block, Doc, Mark, Table, Text, html};

/// The document as Markdown.
pub fn render(doc: &Doc) -> String {
    let mut parts = Vec::new();
    for b in &doc.blocks {
        block(&mut parts, b);
    }
    let mut out = parts.join("\n");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `s` with Markdown's inline syntax escaped. A `*` that ends a word
/// (`apple-m4*`) can only close emphasis, never open it, and stays as is.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let ends_word =
            prev.is_alphanumeric() && !chars.peek().is_some_and(|n| n.is_alphanumeric());
        if matches!(c, '\\' | '`' | '|' | '<' | '>' | '[' | ']') || (c == '*' && !ends_word) {
            out.push('\\');
        }
        out.push(c);
        prev = c;
    }
    out
}

fn code(s: &str) -> String {
    let fence = if s.contains('`') { "``" } else { "`" };
    format!("{fence}{s}{fence}")
}

fn inline(t: &Text) -> String {
    t.0.iter()
        .map(|s| match s.mark {
            Mark::Code => code(&s.text),
            Mark::Ref => format!("[{}](#{})", code(&s.text), s.text),
            Mark::Changed | Mark::Bad | Mark::Strong => format!("**{}**", escape(&s.text)),
            _ => escape(&s.text),
        })
        .collect()
}

fn block(parts: &mut Vec<String>, b: &Block) {
    match b {
        Block::Heading(level, t) => {
            let hashes = "#".repeat(usize::from((*level).clamp(1, 6)));
            parts.push(format!("{hashes} {}\n", inline(t)));
        }
        Block::Para(t) => parts.push(format!("{}\n", inline(t))),
        Block::List(items) => {
            parts.push(items.iter().map(|t| format!("- {}\n", inline(t))).collect())
        }
        Block::Table(t) => parts.push(table(t)),
        Block::Code { lang, text } => {
            let end = if text.ends_with('\n') { "" } else { "\n" };
            parts.push(format!("```{lang}\n{text}{end}```\n"));
        }
        Block::Diff { title, text } => {
            let mut text = text.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            parts.push(format!("{}:\n\n```diff\n{text}```\n", escape(title)));
        }
        Block::Details { summary, blocks } => {
            parts.push(format!(
                "<details><summary>{}</summary>\n",
                html::inline(summary)
            ));
            for b in blocks {
                block(parts, b);
            }
            parts.push("</details>\n".to_string());
        }
    }
}

fn table(t: &Table) -> String {
    let mut s = String::from("|");
    for (title, _) in &t.columns {
        s.push_str(&format!(" {} |", inline(title)));
    }
    s.push_str("\n|");
    for (_, al) in &t.columns {
        s.push_str(match al {
            Align::Left => " --- |",
            Align::Right => " ---: |",
        });
    }
    s.push('\n');
    for row in &t.rows {
        s.push('|');
        for c in row {
            let text = inline(&c.text);
            let text = match c.mark {
                Mark::Changed | Mark::Bad | Mark::Strong => format!("**{text}**"),
                _ => text,
            };
            s.push_str(&format!(" {text} |"));
        }
        s.push('\n');
    }
    s
}
