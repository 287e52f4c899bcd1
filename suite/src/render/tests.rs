//! One document with every kind of block and mark, rendered in each format
//! and snapshotted whole.

use super::*;

fn sample() -> Doc {
    let mut doc = Doc::new("allocasm <sample> & co");
    doc.push(Block::Heading(1, Text::plain("History of ").with(Mark::Code, "probe_a")))
        .push(Block::Para(
            Text::plain("hot-path instructions; ")
                .with(Mark::Strong, "bold")
                .then(": differs | changed <here>"),
        ))
        .push(Block::List(vec![
            Text::code("1.95.0").then(": rustc 1.95.0 · LLVM 22.1.2"),
            Text::code("nightly").then(": rustc nightly · LLVM 23.1.1"),
        ]))
        .push(Block::Heading(2, Text::plain("x86_64-linux (").with(Mark::Code, "x86_64-unknown-linux-gnu").then(")")))
        .push(Block::Table(Table {
            columns: vec![
                ("probe".into(), Align::Left),
                ("1.95.0".into(), Align::Right),
                ("nightly".into(), Align::Right),
            ],
            rows: vec![
                vec![
                    Cell::new(Text::code("probe_grows"), Mark::Plain),
                    Cell::new("40", Mark::Plain),
                    Cell::new("41", Mark::Changed),
                ],
                vec![
                    Cell::new(Text::code("probe_gone"), Mark::Plain),
                    Cell::new("3", Mark::Good),
                    Cell::new("—", Mark::Missing),
                ],
                vec![
                    Cell::new(Text::code("probe_bad"), Mark::Plain),
                    Cell::new("n/a", Mark::Muted),
                    Cell::new("12", Mark::Bad),
                ],
            ],
        }))
        .push(Block::Details {
            summary: Text::code("probe_grows").then(" on x86_64-linux: changed"),
            blocks: vec![
                Block::Para(Text::plain("hot path 40 → 41 (+1)")),
                Block::Diff {
                    title: "hot path".into(),
                    text: "--- 1.95.0\n+++ nightly\n@@ -1,2 +1,3 @@\n mov rax, rdi\n-ret\n+add rax, 8\n+ret\n"
                        .into(),
                },
            ],
        });
    doc
}

#[test]
fn text_without_colour() {
    insta::assert_snapshot!(text::render(&sample(), false));
}

#[test]
fn text_with_colour() {
    insta::assert_snapshot!(text::render(&sample(), true));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(markdown::render(&sample()));
}

#[test]
fn html() {
    insta::assert_snapshot!(html::render(&sample()));
}

/// A probe link, a column title with code, prose with code and a word's
/// closing `*`, a code block: in each format.
#[test]
fn links_rich_titles_prose_and_code_blocks() {
    let mut doc = Doc::new("t");
    doc.push(Block::Table(Table {
        columns: vec![
            ("probe".into(), Align::Left),
            (Text::code("x86").then(" (apple-m4*)"), Align::Right),
        ],
        rows: vec![vec![
            Cell::new(Text::marked(Mark::Ref, "probe_a"), Mark::Plain),
            Cell::new("3", Mark::Plain),
        ]],
    }))
    .push(Block::Para(Text::prose("run `a*b` (* here)")))
    .push(Block::Code {
        lang: "asm",
        text: "ret".into(),
    });
    insta::assert_snapshot!("links_md", markdown::render(&doc));
    insta::assert_snapshot!("links_text", text::render(&doc, false));
    insta::assert_snapshot!("links_html", html::render(&doc));
}

/// A badge, a breakable name, a cell's hover title, its folded details and
/// its row span: markup in HTML, the text alone elsewhere.
#[test]
fn badges_titles_folded_details_and_row_spans() {
    let badge = Mark::Badge {
        class: "mk a",
        title: "atomic instruction",
    };
    let mut doc = Doc::new("t");
    doc.push(Block::Table(Table {
        columns: vec![
            ("setting".into(), Align::Left),
            (
                Text::marked(Mark::Breakable, "x86_64-linux-dylib"),
                Align::Left,
            ),
        ],
        rows: vec![
            vec![
                Cell {
                    rows: 2,
                    ..Cell::new("flags", Mark::Plain)
                },
                Cell {
                    title: "whole: 14".into(),
                    ..Cell::new(Text::plain("12").with(badge, "A"), Mark::Bad)
                },
            ],
            vec![Cell {
                blocks: vec![Block::Details {
                    summary: "why".into(),
                    blocks: vec![Block::Code {
                        lang: "text",
                        text: "a <b>".into(),
                    }],
                }],
                ..Cell::new("failed", Mark::Plain)
            }],
        ],
    }));
    insta::assert_snapshot!("badges_html", html::render(&doc));
    insta::assert_snapshot!("badges_text", text::render(&doc, false));
    insta::assert_snapshot!("badges_md", markdown::render(&doc));
}
