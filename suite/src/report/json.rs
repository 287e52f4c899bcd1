//! The JSON report: [`Report`] serialized as is. Its schema is stable and
//! documented in `docs/json-schema.md` (and `docs/report.schema.json`).

use super::Report;

/// The whole `report` in this format.
pub fn render(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("the report serializes");
    s.push('\n');
    s
}
