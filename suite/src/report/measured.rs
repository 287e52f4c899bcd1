//! What the CPU executes, in the report: per probe and Linux profile (the
//! executable profiles, and the shared-library one in its cdylib) the
//! instructions one call executed (`codegen::executed`, under
//! qemu-user) and llvm-mca's prediction per CPU of the hot path
//! (`codegen::mca`), beside `hot_path.instructions`; and the cross-profile
//! table of the three. The measurements are taken by `allocasm report`
//! (`cli::measure`); this is their data model.

use std::collections::BTreeMap;

use allocasm_suite::codegen::executed::{Executed, ExecutedSet, HelperCount};
use allocasm_suite::codegen::mca::Mca;
use serde::Serialize;

use super::{ProbeReport, Report};

/// How the counts were taken, for the report's readers.
pub const METHOD: &str = "Each Linux profile's probe driver (suite/probe-bins/probe_driver.rs, built like \
the linked view: release profile, the profile's [linked] rustflags, or its own where it has no \
[linked] table) calls every probe \
in its warm fast case 48 times under qemu-user with `-singlestep -d exec,nochain` and `-dfilter` \
on the executable's code and the loader functions its PLT names: every translation block is one \
instruction and every execution is logged, so the log is the exact executed sequence (x86_64 too, \
under qemu-x86_64; valgrind's callgrind gives the same counts there: benches/fastpaths.rs). The \
shared-library profile (x86_64-linux-dylib) is measured in a shared library: the probes built with \
its own flags as a cdylib (suite/dylib-probes), which the driver dlopens (ALLOCASM_PROBE_DYLIB) and \
calls; the trace covers that library's code and the loader functions its PLT names, so its \
thread-locals' `__tls_get_addr@plt` stub and the loader's `__tls_get_addr` are counted. Each \
call is cut from the probe's entry to its taken return, callees included; the first 8 calls are \
dropped and the most frequent count of the other 40 is reported. Helpers (outline atomics such \
as `__aarch64_ldadd8_relax`, a PLT stub and the loader's `__tls_get_addr`, an out-of-line \
`LocalKey::with`) are counted in the total and shown apart.";

/// What llvm-mca's figures mean.
pub const MCA_NOTE: &str = "llvm-mca (LLVM 22, rustc 1.95.0's major) on the hot path's lines of \
the `.s` listing, per CPU model: block reciprocal throughput (predicted cycles per call when calls \
overlap freely) and what bounds it. llvm-mca models the core only: a call is a fixed latency and \
an atomic read-modify-write a few ports, not the cache-line transfer. LLVM's Apple models \
(apple-m4, marked *) schedule like an old core (Cyclone): their figure is indicative. \
Instructions a model has no scheduling for are skipped and listed.";

/// The report's `executed` section.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExecutedSection {
    /// [`METHOD`].
    pub method: String,
    /// [`MCA_NOTE`].
    pub mca_note: String,
    /// The llvm-mca that ran (`llvm-mca-22`); `null` when none was found.
    pub llvm_mca: Option<String>,
    /// One per profile of the report, in its order.
    pub profiles: Vec<ProfileMeasurement>,
    /// Probes down, measured profiles across.
    pub table: ExecutedTable,
}

/// Whether a profile's executed counts were measured (`measured` or
/// `not-measured` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MeasureStatus {
    /// Counted under callgrind.
    Measured,
    /// Not counted: see `reason`.
    NotMeasured,
}

/// One profile's measurement status.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ProfileMeasurement {
    /// The profile.
    pub profile: String,
    /// `measured` or `not-measured`.
    pub status: MeasureStatus,
    /// Why the executed counts are missing (`not-measured` only).
    pub reason: Option<String>,
    /// `release` (measured only).
    pub build: Option<String>,
    /// The traced command (measured only).
    pub command: Option<String>,
    /// The llvm-mca CPU models of the profile's architecture.
    pub cpus: Vec<String>,
    /// Why the llvm-mca figures are missing; `null` when they were taken.
    pub mca_reason: Option<String>,
}

/// The cross-profile table of the three figures.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExecutedTable {
    /// The measured profiles (the Linux profiles of the report).
    pub columns: Vec<String>,
    /// One per probe, registry order.
    pub rows: Vec<ExecutedRow>,
}

/// One probe's row.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExecutedRow {
    /// The probe.
    pub probe: String,
    /// One per column.
    pub cells: Vec<ExecutedCell>,
}

/// One probe on one profile: `hot-path instructions / executed / mca
/// cycles`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExecutedCell {
    /// `hot_path.instructions` of the `.s` listing.
    pub hot_path: Option<usize>,
    /// `hot_path.instructions` of the linked release executable's listing
    /// (the code the driver runs, helpers apart); for a shared-library
    /// profile the cdylib's the driver ran; `null` without either.
    pub linked_hot_path: Option<usize>,
    /// Instructions one call executed, helpers included.
    pub executed: Option<u64>,
    /// Of those, in helpers.
    pub helpers: Option<u64>,
    /// Block reciprocal throughput per CPU, in [`ProfileMeasurement::cpus`]
    /// order.
    pub mca: Vec<McaCycles>,
    /// `21 / 21 / 3.70·4.20`, `39 / 44 (+5) / 7.70·11.00*`, `21 (linked 28)
    /// / 28 / 3.80·3.80` where the linked executable's hot path differs
    /// from the `.s` one, `–` for what is missing.
    pub text: String,
}

/// One CPU's cycles in a cell.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct McaCycles {
    /// The CPU model.
    pub cpu: String,
    /// Block RThroughput.
    pub cycles: f64,
    /// The model is indicative only (Apple).
    pub indicative: bool,
}

/// One probe's executed count on one profile (`probes[].results[].executed`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExecutedReport {
    /// `release`.
    pub build: String,
    /// Instructions per call, helpers included (the most frequent count).
    pub instructions: u64,
    /// Of those, in the probe's own body.
    pub in_probe: u64,
    /// Of those, in helpers.
    pub helper_instructions: u64,
    /// Each helper's share, in call order.
    pub helpers: Vec<HelperCount>,
    /// Fewest and most instructions of a measured call.
    pub min: u64,
    /// The most.
    pub max: u64,
    /// Calls measured (after the warm-up).
    pub calls: usize,
    /// Calls into code that was not traced (0 where everything was).
    pub untraced_calls: u64,
    /// The probe's listing lines (of the driver executable) one call
    /// executed, in order: its hot path, line for line.
    pub path: Vec<String>,
}

impl From<&Executed> for ExecutedReport {
    fn from(e: &Executed) -> ExecutedReport {
        ExecutedReport {
            build: e.build.clone(),
            instructions: e.instructions,
            in_probe: e.in_probe,
            helper_instructions: e.helper_instructions(),
            helpers: e.helpers.clone(),
            min: e.min,
            max: e.max,
            calls: e.calls,
            untraced_calls: e.untraced_calls,
            path: e.listing_path.clone(),
        }
    }
}

impl ExecutedReport {
    /// `44 (5 in __aarch64_ldadd8_relax)`.
    pub fn line(&self) -> String {
        let mut s = format!("executed: {} instructions per call", self.instructions);
        if !self.helpers.is_empty() {
            let parts: Vec<String> = self
                .helpers
                .iter()
                .map(|h| format!("{} in `{}`", h.instructions, h.function))
                .collect();
            s.push_str(&format!(
                " ({} in the probe, {})",
                self.in_probe,
                parts.join(", ")
            ));
        }
        if self.min != self.max {
            s.push_str(&format!(", {}..{} over the calls", self.min, self.max));
        }
        if self.untraced_calls > 0 {
            s.push_str(&format!(
                ", {} call(s) into untraced code not counted",
                self.untraced_calls
            ));
        }
        s.push_str(&format!(" ({} calls, {})", self.calls, self.build));
        s
    }
}

/// What `allocasm report` measured on one profile, for
/// [`Report::attach_measurements`].
pub struct Measurement {
    /// The profile.
    pub profile: String,
    /// The llvm-mca CPU models of its architecture.
    pub cpus: Vec<String>,
    /// Every probe's executed count, or why there are none.
    pub executed: Result<ExecutedSet, String>,
    /// A shared-library profile's hot path per probe in the cdylib the
    /// driver ran (its linked code; such a profile has no linked view):
    /// the table's `linked_hot_path` there. Empty for the other profiles.
    pub library_hot_paths: BTreeMap<String, usize>,
    /// Per probe, llvm-mca per CPU, or why there is none.
    pub mca: Result<BTreeMap<String, Result<Vec<Mca>, String>>, String>,
}

/// `21 / 21 / 3.70·4.20`.
fn cell_text(
    hot: Option<usize>,
    linked: Option<usize>,
    e: Option<&ExecutedReport>,
    mca: &[McaCycles],
) -> String {
    let mut s = hot.map_or("–".to_string(), |n| n.to_string());
    if let Some(l) = linked.filter(|&l| Some(l) != hot) {
        s.push_str(&format!(" (linked {l})"));
    }
    s.push_str(" / ");
    match e {
        Some(e) => {
            s.push_str(&e.instructions.to_string());
            if e.helper_instructions > 0 {
                s.push_str(&format!(" (+{})", e.helper_instructions));
            }
        }
        None => s.push('–'),
    }
    s.push_str(" / ");
    if mca.is_empty() {
        s.push('–');
    } else {
        let c: Vec<String> = mca
            .iter()
            .map(|m| format!("{:.2}{}", m.cycles, if m.indicative { "*" } else { "" }))
            .collect();
        s.push_str(&c.join("·"));
    }
    s
}

impl Report {
    /// Fills in every listing's `executed` and `mca` (or why they are
    /// missing) and the `executed` section from `measurements` (one per
    /// profile of the report; `None`: `--no-executed`).
    pub fn attach_measurements(
        &mut self,
        measurements: Option<&[Measurement]>,
        llvm_mca: Option<String>,
    ) {
        let of = |name: &str| measurements.and_then(|ms| ms.iter().find(|m| m.profile == name));
        let skipped = "not measured (--no-executed)".to_string();
        let profiles: Vec<ProfileMeasurement> = self
            .profiles
            .iter()
            .map(|p| match of(&p.name) {
                None => ProfileMeasurement {
                    profile: p.name.clone(),
                    status: MeasureStatus::NotMeasured,
                    reason: Some(skipped.clone()),
                    build: None,
                    command: None,
                    cpus: Vec::new(),
                    mca_reason: Some(skipped.clone()),
                },
                Some(m) => ProfileMeasurement {
                    profile: p.name.clone(),
                    status: if m.executed.is_ok() {
                        MeasureStatus::Measured
                    } else {
                        MeasureStatus::NotMeasured
                    },
                    reason: m.executed.as_ref().err().cloned(),
                    build: m.executed.as_ref().ok().map(|s| s.build.clone()),
                    command: m.executed.as_ref().ok().map(|s| s.method.clone()),
                    cpus: m.cpus.clone(),
                    mca_reason: m.mca.as_ref().err().cloned(),
                },
            })
            .collect();
        for probe in &mut self.probes {
            attach_probe(probe, &of);
        }
        // The table's columns: the profiles whose counts or predictions
        // were taken.
        let columns: Vec<String> = profiles
            .iter()
            .filter(|p| p.reason.is_none() || p.mca_reason.is_none())
            .map(|p| p.profile.clone())
            .collect();
        let rows = self
            .probes
            .iter()
            .map(|probe| ExecutedRow {
                probe: probe.name.clone(),
                cells: columns
                    .iter()
                    .map(|c| {
                        let r = probe.results.iter().find(|r| &r.profile == c);
                        let hot = r
                            .and_then(|r| r.view.hot_path.as_ref())
                            .map(|h| h.instructions);
                        let linked = r
                            .and_then(|r| r.linked.as_ref())
                            .and_then(|l| l.release.view.hot_path.as_ref())
                            .map(|h| h.instructions)
                            .or_else(|| {
                                of(c).and_then(|m| m.library_hot_paths.get(&probe.name).copied())
                            });
                        let e = r.and_then(|r| r.executed.as_ref());
                        let mca: Vec<McaCycles> = r
                            .and_then(|r| r.mca.as_ref())
                            .into_iter()
                            .flatten()
                            .map(|m| McaCycles {
                                cpu: m.cpu.clone(),
                                cycles: m.block_rthroughput,
                                indicative: m.indicative,
                            })
                            .collect();
                        ExecutedCell {
                            hot_path: hot,
                            linked_hot_path: linked,
                            executed: e.map(|e| e.instructions),
                            helpers: e.map(|e| e.helper_instructions),
                            text: cell_text(hot, linked, e, &mca),
                            mca,
                        }
                    })
                    .collect(),
            })
            .collect();
        self.executed = Some(ExecutedSection {
            method: METHOD.to_string(),
            mca_note: MCA_NOTE.to_string(),
            llvm_mca,
            profiles,
            table: ExecutedTable { columns, rows },
        });
    }
}

fn attach_probe<'a>(probe: &mut ProbeReport, of: &dyn Fn(&str) -> Option<&'a Measurement>) {
    for r in &mut probe.results {
        let Some(m) = of(&r.profile) else {
            r.executed_reason = Some("not measured (--no-executed)".into());
            r.mca_reason = r.executed_reason.clone();
            continue;
        };
        match &m.executed {
            Ok(set) => match set.probes.get(&probe.name) {
                Some(e) => r.executed = Some(ExecutedReport::from(e)),
                None => {
                    r.executed_reason = Some(format!(
                        "not measured: the driver made no call of {} on {}",
                        probe.name, r.profile
                    ));
                }
            },
            Err(why) => r.executed_reason = Some(why.clone()),
        }
        match &m.mca {
            Ok(per_probe) => match per_probe.get(&probe.name) {
                Some(Ok(ms)) => r.mca = Some(ms.clone()),
                Some(Err(why)) => r.mca_reason = Some(why.clone()),
                None => {
                    r.mca_reason = Some(format!(
                        "not predicted: {} has no hot path on {}",
                        probe.name, r.profile
                    ));
                }
            },
            Err(why) => r.mca_reason = Some(why.clone()),
        }
    }
}
