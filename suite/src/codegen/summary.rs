//! The cross-profile summary: one table, probes down, profiles across, each
//! cell a probe's instruction count with a mark for atomics, calls and loops,
//! so a reader sees at a glance where a fast path grows (the packed probe's
//! loop on armv7 and arm64 Windows, the TLV call on macOS).
//!
//! Works on either view: pass the `.s` listings ([`super::extract_probes`])
//! or the linked ones ([`super::linked::extract_linked`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ProbeListings;
use super::profile::Profile;
use allocasm::probes::Probe;

/// One probe on one profile: the hot path's figures ([`super::cfg`]), and
/// the whole function's count beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// Instructions on the hot path.
    pub instructions: usize,
    /// Instructions in the whole listing.
    pub function_instructions: usize,
    /// At least one atomic instruction on the hot path (read-modify-write,
    /// fence, acquire/release access, outline-atomics call).
    pub atomic: bool,
    /// At least one call on the hot path (TLS thunks and outline-atomics
    /// helpers included).
    pub call: bool,
    /// At least one loop on the hot path.
    pub looped: bool,
}

impl Cell {
    /// `14 A C L (20)`-style text: the hot-path count, then `A` (atomic),
    /// `C` (call), `L` (loop) where they apply on the hot path, then the
    /// whole function's count in parentheses when it differs.
    pub fn text(&self) -> String {
        let mut s = self.instructions.to_string();
        for (on, mark) in [(self.atomic, " A"), (self.call, " C"), (self.looped, " L")] {
            if on {
                s.push_str(mark);
            }
        }
        if self.function_instructions != self.instructions {
            s.push_str(&format!(" ({})", self.function_instructions));
        }
        s
    }
}

/// The whole table.
#[derive(Debug, Clone, Default)]
pub struct CrossProfile {
    /// Column headers: profile names, in the order given.
    pub profiles: Vec<String>,
    /// Row headers: probe names, registry order.
    pub probes: Vec<String>,
    /// `(probe, profile)` → the cell; absent when the probe is missing there.
    pub cells: BTreeMap<(String, String), Cell>,
}

/// Builds the table from each profile's listings (`listings[i]` belongs to
/// `profiles[i]`; profiles without listings are skipped).
pub fn cross_profile(
    profiles: &[Profile],
    listings: &[ProbeListings],
    probes: &[Probe],
) -> CrossProfile {
    let mut table = CrossProfile {
        probes: probes.iter().map(|p| p.name.to_string()).collect(),
        ..CrossProfile::default()
    };
    for l in listings {
        let Some(profile) = profiles.iter().find(|p| p.name == l.profile) else {
            continue;
        };
        table.profiles.push(profile.name.clone());
        for probe in probes {
            let Some(listing) = l.listing(probe.name) else {
                continue;
            };
            let hot = super::cfg::analyze(listing, profile, &l.cold_functions).hot_path();
            table.cells.insert(
                (probe.name.to_string(), profile.name.clone()),
                Cell {
                    instructions: hot.instructions,
                    function_instructions: hot.function_instructions,
                    atomic: hot.atomics > 0,
                    call: !hot.calls.is_empty(),
                    looped: hot.loops > 0,
                },
            );
        }
    }
    table
}

impl CrossProfile {
    /// The cell of one probe on one profile.
    pub fn cell(&self, probe: &str, profile: &str) -> Option<Cell> {
        self.cells
            .get(&(probe.to_string(), profile.to_string()))
            .copied()
    }

    /// A Markdown table (`—` where a probe is missing), with the legend.
    pub fn markdown(&self) -> String {
        let mut s = String::from("| probe |");
        for p in &self.profiles {
            let _ = write!(s, " {p} |");
        }
        s.push_str("\n| --- |");
        s.push_str(&" ---: |".repeat(self.profiles.len()));
        s.push('\n');
        for probe in &self.probes {
            let _ = write!(s, "| `{probe}` |");
            for p in &self.profiles {
                let text = self.cell(probe, p).map_or("—".to_string(), |c| c.text());
                let _ = write!(s, " {text} |");
            }
            s.push('\n');
        }
        s.push_str(
            "\ninstructions on the hot path (entry to return through non-cold blocks), then the whole function's in parentheses; \
             A: atomic instruction, C: call, L: loop, each on the hot path\n",
        );
        s
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use crate::codegen::{Instruction, Line, Listing, ProbeListing};
    use std::path::Path;

    #[test]
    fn cells_mark_atomics_calls_and_loops() {
        let profile = Profile::parse(
            "name = \"p\"\ntriple = \"armv7-unknown-linux-gnueabihf\"\ndescription = \"\"\nrun = \"none\"\n",
            Path::new("targets/p.toml"),
        )
        .unwrap();
        let i = |m: &str, o: &str| {
            Line::Instruction(Instruction {
                mnemonic: m.into(),
                operands: o.into(),
            })
        };
        let listing = Listing {
            name: "probe_packed_alloc_relaxed".into(),
            lines: vec![
                Line::Label(".LBB1".into()),
                i("ldrexd", "r4, r5, [r0]"),
                i("strexd", "r3, r6, r7, [r0]"),
                i("bne", ".LBB1"),
                i("cmp", "r0, #0"),
                i("beq", ".LBB2"),
                i("bl", "slow"),
                i("bx", "lr"),
                Line::Label(".LBB2".into()),
                i("bl", "core::panicking::panic"),
            ],
        };
        let raw = crate::codegen::Function {
            name: listing.name.clone(),
            format: crate::codegen::ObjectFormat::Elf,
            lines: vec![],
        };
        let mut found = BTreeMap::new();
        found.insert(listing.name.clone(), ProbeListing { raw, listing });
        let listings = ProbeListings {
            profile: "p".into(),
            probes: found,
            missing: vec![],
            cold_functions: Default::default(),
            ..Default::default()
        };
        let probes: Vec<Probe> = allocasm::probes::PROBES
            .iter()
            .filter(|p| p.name.starts_with("probe_packed_alloc") || p.name == "probe_linear_alloc")
            .copied()
            .collect();
        let t = cross_profile(&[profile], &[listings], &probes);
        assert_eq!(
            t.cell("probe_packed_alloc_relaxed", "p").unwrap().text(),
            "7 A C L (8)"
        );
        let md = t.markdown();
        assert!(
            md.contains("| `probe_packed_alloc_relaxed` | 7 A C L (8) |"),
            "{md}"
        );
        assert!(md.contains("| `probe_linear_alloc` | — |"), "{md}");
    }
}
