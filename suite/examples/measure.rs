//! Measures what every probe executes per call on every Linux profile
//! (`allocasm_suite::codegen::executed`) and what llvm-mca predicts for it per CPU
//! (`allocasm_suite::codegen::mca`), and prints the cross-profile table: probes
//! down, profiles across, each cell `path / executed / mca cycles`.
//!
//! ```text
//! cargo run --example measure -- [-p PROFILE]... [--lto] [--cpu CPU] [--no-mca] [--json FILE]
//! ```
//!
//! - `path`: lines of the probe's listing one call went through (its hot
//!   path's lines where the fast case is the hot path);
//! - `executed`: instructions one call executed, helpers included (`+N` is
//!   what the helper calls added);
//! - `mca`: llvm-mca's block reciprocal throughput of the hot path, per CPU
//!   of the profile (`znver4/alderlake`, `neoverse-v2/apple-m4`, ...).
//!
//! `--json FILE` writes every measurement (the `ExecutedSet`s and the
//! `Mca` results) for the report. `--cpu` is qemu's `-cpu` (`cortex-a53`:
//! an Armv8.0 core without LSE).

use std::collections::BTreeMap;

use allocasm::probes::PROBES;
use allocasm_suite::codegen::build::BuildOptions;
use allocasm_suite::codegen::executed::{self, ExecutedSet, MeasureOptions};
use allocasm_suite::codegen::linked::Lto;
use allocasm_suite::codegen::mca::{self, Mca};
use allocasm_suite::codegen::{self};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut wanted: Vec<String> = Vec::new();
    let mut lto = Lto::Off;
    let mut cpu = None;
    let mut with_mca = true;
    let mut json = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-p" | "--profile" => wanted.push(args.next().expect("-p PROFILE")),
            "--lto" => lto = Lto::Fat,
            "--cpu" => cpu = args.next(),
            "--no-mca" => with_mca = false,
            "--json" => json = args.next(),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let profiles = codegen::load_profiles()?;
    let opts = BuildOptions::default();
    let mut sets: Vec<ExecutedSet> = Vec::new();
    let mut predictions: BTreeMap<String, BTreeMap<String, Vec<Mca>>> = BTreeMap::new();
    for profile in executed::measured_profiles(&profiles) {
        if !wanted.is_empty() && !wanted.contains(&profile.name) {
            continue;
        }
        eprintln!("[measure] {} ({lto})", profile.name);
        let driver = executed::build_driver(profile, &opts, lto, &|_| {})?;
        let set = executed::measure(
            profile,
            &driver,
            PROBES,
            &MeasureOptions {
                cpu: cpu.clone(),
                ..MeasureOptions::default()
            },
        )?;
        if with_mca && mca::llvm_mca().is_some() {
            // llvm-mca reads the hot path of the driver's own listing (the
            // lines the fast case executes, `tests/suite/executed.rs`).
            let listings = executed::driver_listings(profile, &driver, PROBES);
            for probe in set.probes.keys() {
                let Some(hot) = listings.hot_path(profile, probe) else {
                    continue;
                };
                let lines: Vec<String> = hot.lines;
                for c in mca::cpus(&profile.arch()) {
                    match mca::analyze(&lines, &profile.triple, &profile.arch(), c) {
                        Ok(m) => predictions
                            .entry(profile.name.clone())
                            .or_default()
                            .entry(probe.clone())
                            .or_default()
                            .push(m),
                        Err(err) => eprintln!("[measure] mca {probe} {c}: {err:#}"),
                    }
                }
            }
        }
        sets.push(set);
    }

    // The table.
    let names: Vec<&str> = sets.iter().map(|s| s.profile.as_str()).collect();
    println!("| probe | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    for p in PROBES {
        let mut row = format!("| `{}` |", p.name);
        for s in &sets {
            let cell = match s.probes.get(p.name) {
                None => "–".to_string(),
                Some(e) => {
                    let mut c = format!("{} / {}", e.listing_path.len(), e.instructions);
                    if e.helper_instructions() > 0 {
                        c.push_str(&format!(" (+{})", e.helper_instructions()));
                    }
                    if e.min != e.max {
                        c.push_str(&format!(" [{}..{}]", e.min, e.max));
                    }
                    if let Some(ms) = predictions.get(&s.profile).and_then(|m| m.get(p.name)) {
                        let cyc: Vec<String> = ms
                            .iter()
                            .map(|m| format!("{:.2}", m.block_rthroughput))
                            .collect();
                        c.push_str(&format!(" / {}", cyc.join("·")));
                    }
                    c
                }
            };
            row.push_str(&format!(" {cell} |"));
        }
        println!("{row}");
    }
    for s in &sets {
        println!("\n{} {}: {}", s.profile, s.build, s.method);
        for e in s.probes.values() {
            if !e.helpers.is_empty() || e.untraced_calls > 0 {
                println!(
                    "  {}: {} in the probe, helpers {:?}, untraced calls {}",
                    e.probe, e.in_probe, e.helpers, e.untraced_calls
                );
            }
        }
    }
    if let Some(path) = json {
        let doc = serde_json::json!({ "executed": sets, "mca": predictions });
        std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
        eprintln!("[measure] wrote {path}");
    }
    Ok(())
}
