//! The JSON report: [`Report`] serialized as is. Its schema is stable and
//! documented in `docs/json-schema.md` (and `docs/report.schema.json`).

use super::{Format, Report};

/// `report.json`.
pub struct Json;

impl Format for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn file_name(&self) -> &'static str {
        "report.json"
    }

    fn render(&self, report: &Report) -> String {
        let mut s = serde_json::to_string_pretty(report).expect("the report serializes");
        s.push('\n');
        s
    }
}
