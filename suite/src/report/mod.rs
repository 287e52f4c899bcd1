//! The asm report: one data model ([`Report`], whose JSON form is the stable
//! schema documented in `docs/json-schema.md`), built by `builder.rs`; one
//! document of it ([`doc`]) that the shared renderers print as text and
//! Markdown; its JSON (serde of the model); and its HTML page ([`html`]).

pub mod annotate;
mod builder;
pub mod doc;
pub mod html;
pub mod measured;
mod model;
pub mod text;

use allocasm_suite::render;
pub use annotate::{Annotation, Tag, TlsAccess};
pub use builder::*;
pub use measured::{ExecutedReport, ExecutedSection, Measurement};
pub use model::*;

/// The schema identifier written into every JSON report. Bumped only on an
/// incompatible change (see docs/json-schema.md).
pub const SCHEMA: &str = "allocasm-report/1";

/// One output kind: its `--format` name (`md`, `json`, `html`, `text`), the
/// file it is written to in the output directory, and its renderer.
pub struct Format {
    /// The `--format` name.
    pub name: &'static str,
    /// The file in the output directory.
    pub file_name: &'static str,
    /// The whole document.
    pub render: fn(&Report) -> String,
}

/// Every output kind, by `--format` name.
pub fn format(name: &str) -> Option<Format> {
    let (name, file_name, render): (_, _, fn(&Report) -> String) = match name {
        "text" | "txt" => ("text", "report.txt", |r| {
            render::text::render(&doc::doc(r), false)
        }),
        "md" | "markdown" => ("md", "report.md", |r| {
            render::markdown::render(&doc::doc(r))
        }),
        "json" => ("json", "report.json", |r| {
            serde_json::to_string_pretty(r).expect("the report serializes") + "\n"
        }),
        "html" => ("html", "report.html", html::render),
        _ => return None,
    };
    Some(Format {
        name,
        file_name,
        render,
    })
}

#[cfg(test)]
mod schema_tests {
    /// docs/report.schema.json is generated from [`super::Report`].
    #[test]
    fn the_committed_json_schema_is_the_generated_one() {
        crate::cli::check_schema::<super::Report>("report.schema.json");
    }
}

#[cfg(test)]
mod table_tests {
    use super::{MutationRow, MutationTable};
    use allocasm_suite::render;

    /// The mutation table renders through the shared renderers: aligned
    /// in text, a pipe table in Markdown with a missed mutation in bold,
    /// an HTML table whose cells carry their verdict's class.
    #[test]
    fn the_mutation_table_renders_as_text_and_markdown() {
        let m = MutationTable {
            commit: "0123456789abcdef".into(),
            profiles: vec!["x86_64-linux".into(), "aarch64-apple".into()],
            rows: vec![
                MutationRow {
                    mutation: "relaxed-to-seqcst".into(),
                    cells: vec!["caught".into(), "blind".into()],
                },
                MutationRow {
                    mutation: "cold-removed".into(),
                    cells: vec!["MISSED".into(), "cold-only".into()],
                },
            ],
        };
        let t = m.table();
        let mut doc = render::Doc::new("mutations");
        doc.push(render::Block::Table(t.clone()));
        assert_eq!(
            render::markdown::render(&doc),
            "| mutation | x86_64-linux | aarch64-apple |\n| --- | --- | --- |\n\
             | relaxed-to-seqcst | caught | blind |\n| cold-removed | **MISSED** | cold-only |\n"
        );
        assert_eq!(
            render::text::render(&doc, false),
            "  mutation           x86_64-linux  aarch64-apple\n  \
             relaxed-to-seqcst  caught        blind\n  \
             cold-removed       MISSED        cold-only\n"
        );
        let html = render::html::table_with(&t, "class=\"summary mutations\"", &|_| String::new());
        assert!(
            html.starts_with("<table class=\"summary mutations\">"),
            "{html}"
        );
        for cell in [
            "<td class=\"good\">caught</td>",
            "<td class=\"muted\">blind</td>",
            "<td class=\"bad\">MISSED</td>",
        ] {
            assert!(html.contains(cell), "{cell} in {html}");
        }
    }
}
