//! The table behind `allocasm history`: per profile, the hot path's
//! instruction count of every probe (rows) under every toolchain (columns),
//! and why a toolchain's column is empty. `cli/history.rs` builds it and
//! writes it as a document or as JSON.

use schemars::JsonSchema;
use serde::Serialize;

use crate::codegen::build::BuildError;
use crate::toolchain::RustcVersion;

/// Whether a build error means the toolchain has no standard library for
/// the profile's target (rustup has no `rust-std` for it): the reason shown
/// in the cell's place, or `None` for any other failure.
pub fn unavailable(e: &BuildError) -> Option<String> {
    e.is_not_available().then(|| e.to_string())
}

/// The short reason a profile did not build: [`unavailable`]'s, or
/// `build failed: <the first error line>`.
pub fn failure_reason(e: &BuildError) -> String {
    if let Some(r) = unavailable(e) {
        return r;
    }
    let text = match e {
        BuildError::Cargo { stderr, .. } => stderr
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("error"))
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string()),
        _ => e.to_string(),
    };
    format!(
        "build failed: {}",
        text.lines().next().unwrap_or("(no message)")
    )
}

/// One toolchain's column header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ToolchainInfo {
    /// The rustup toolchain (`1.95.0`, `nightly`).
    pub toolchain: String,
    /// The first line of `rustc -vV`.
    pub release: String,
    /// `LLVM version:` of `rustc -vV`.
    pub llvm: String,
}

impl ToolchainInfo {
    /// From `rustc -vV`.
    pub fn from_rustc_vv(toolchain: &str, vv: &str) -> ToolchainInfo {
        let vv = RustcVersion::parse(vv);
        ToolchainInfo {
            toolchain: toolchain.to_string(),
            release: vv.release().to_string(),
            llvm: vv.llvm().to_string(),
        }
    }
}

/// One cell: the probe's hot-path instruction count under one toolchain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// The hot path's instruction count.
    Count(usize),
    /// The build has no such function.
    Missing,
    /// The profile did not build with this toolchain (reason under the table).
    NotBuilt,
}

/// One probe's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The probe.
    pub probe: String,
    /// One cell per toolchain.
    pub cells: Vec<Cell>,
}

impl Row {
    /// Whether cell `i` differs from the nearest cell to its left that was
    /// built (`n/a` cells are neither marked nor compared against).
    pub fn changed(&self, i: usize) -> bool {
        let cell = self.cells[i];
        if cell == Cell::NotBuilt {
            return false;
        }
        self.cells[..i]
            .iter()
            .rev()
            .find(|c| **c != Cell::NotBuilt)
            .is_some_and(|prev| *prev != cell)
    }
}

/// Why a toolchain's column of a table is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `NotAvailable` or `Failed`.
    pub status: ColumnStatus,
    /// The reason shown under the table.
    pub reason: String,
}

impl Failure {
    /// From the build's error (`None`: the profile was not built at all).
    pub fn of(e: Option<&BuildError>) -> Failure {
        match e {
            Some(e) => Failure {
                status: if e.is_not_available() {
                    ColumnStatus::NotAvailable
                } else {
                    ColumnStatus::Failed
                },
                reason: failure_reason(e),
            },
            None => Failure {
                status: ColumnStatus::Failed,
                reason: "not built".to_string(),
            },
        }
    }
}

/// A column's status in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ColumnStatus {
    /// The profile built with this toolchain.
    Built,
    /// The toolchain has no standard library for the target.
    NotAvailable,
    /// The build failed.
    Failed,
}

/// One profile's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The profile.
    pub profile: String,
    /// Its triple.
    pub triple: String,
    /// Per toolchain: why the profile did not build (`None`: it built).
    pub failures: Vec<Option<Failure>>,
    /// One row per probe, registry order.
    pub rows: Vec<Row>,
}

/// Every table, with the toolchains' headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// The columns.
    pub toolchains: Vec<ToolchainInfo>,
    /// One per profile.
    pub tables: Vec<Table>,
}

impl History {
    /// Whether no profile built with any toolchain.
    pub fn all_failed(&self) -> bool {
        self.tables
            .iter()
            .all(|t| t.failures.iter().all(Option::is_some))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_cell_is_marked_where_it_differs_from_the_nearest_built_cell_to_its_left() {
        let marks = |cells: Vec<Cell>| {
            let n = cells.len();
            let r = Row {
                probe: "p".into(),
                cells,
            };
            (0..n).map(|i| r.changed(i)).collect::<Vec<_>>()
        };
        let (five, six) = (Cell::Count(5), Cell::Count(6));
        assert_eq!(
            marks(vec![five, five, six, six]),
            [false, false, true, false]
        );
        // n/a is skipped over: 5, n/a, 6 marks the 6; n/a itself is never marked.
        assert_eq!(marks(vec![five, Cell::NotBuilt, six]), [false, false, true]);
        assert_eq!(
            marks(vec![Cell::NotBuilt, six, Cell::Missing]),
            [false, false, true]
        );
    }

    #[test]
    fn only_a_missing_standard_library_is_not_available() {
        let no_std = BuildError::NotAvailable {
            toolchain: "beta".into(),
            triple: "x".into(),
        };
        assert_eq!(
            unavailable(&no_std).as_deref(),
            Some("not available for beta: rustup has no rust-std for x")
        );
        // A failed install is a failure, not "not available".
        let failed = BuildError::InstallFailed {
            command: "rustup target add x --toolchain beta".into(),
            first_error: "error: could not rename 'downloaded' file".into(),
            fix: "check the network".into(),
        };
        assert_eq!(unavailable(&failed), None);
        let cargo = BuildError::Cargo {
            profile: "p".into(),
            command: "cargo rustc".into(),
            stderr: "   Compiling allocasm\nerror[E0425]: cannot find value `x`\n".into(),
        };
        assert_eq!(unavailable(&cargo), None);
        assert_eq!(
            failure_reason(&cargo),
            "build failed: error[E0425]: cannot find value `x`"
        );
        let no_asm = BuildError::NoAsm {
            profile: "p".into(),
            dir: PathBuf::from("/t"),
        };
        assert!(
            failure_reason(&no_asm)
                .starts_with("build failed: the asm build of profile p left no .s")
        );
    }
}
