//! `report`'s measurements of what the CPU executes: on every Linux
//! profile asked for, the probe driver built (in the linked view's target
//! dir, so it reuses that build's dependencies; for the shared-library
//! profile with the probes' cdylib, which it dlopens) and traced
//! once under qemu-user ([`executed`]), and llvm-mca run on each probe's
//! hot path per CPU ([`mca`]). Profiles are measured in parallel behind one
//! progress bar; whatever is missing (qemu-user, llvm-mca, a cross linker)
//! becomes a reason in the report, never an error.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use allocasm_suite::codegen::build::{BuildError, BuildEvent, BuildOptions};
use allocasm_suite::codegen::executed::{self, MeasureOptions};
use allocasm_suite::codegen::linked::Lto;
use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{ProbeListings, Profile, cache, mca};
use allocasm_suite::tools;

use super::Ui;
use super::session::{build_error_message, install_hint};
use crate::report::Measurement;

/// Why a project other than allocasm has no executed counts: they come
/// from allocasm's own probe driver (`suite/probe-bins/probe_driver.rs`).
pub const NO_DRIVER: &str = "not measured: the project has no probe driver";

/// Why `profile`'s executed counts cannot be taken here, or `None` when
/// they can; `found` tells whether a program is installed.
pub fn why_not_measured(profile: &Profile, found: &dyn Fn(&str) -> bool) -> Option<String> {
    let one = std::slice::from_ref(profile);
    if executed::measured_profiles(one).is_empty() {
        return Some("not measured (not a Linux executable profile)".to_string());
    }
    let (qemu, _) = executed::runner(profile)?;
    if !found(&qemu) {
        return Some(format!(
            "not measured: {qemu} not found (install: {})",
            tools::Tool::Qemu(profile.arch()).install()
        ));
    }
    None
}

/// Why llvm-mca's predictions cannot be made for `profile`, or `None`.
pub fn why_not_predicted(profile: &Profile, llvm_mca: Option<&str>) -> Option<String> {
    if executed::measured_profiles(std::slice::from_ref(profile)).is_empty() {
        return Some("not predicted (not a Linux executable profile)".to_string());
    }
    if mca::cpus(&profile.arch()).is_empty() {
        return Some(format!(
            "not predicted: no CPU model for {}",
            profile.triple
        ));
    }
    if llvm_mca.is_none() {
        return Some(format!(
            "not predicted: llvm-mca not found (install: {})",
            tools::Tool::LlvmMca.install()
        ));
    }
    None
}

/// One profile of the report: its `.s` listings when it built.
pub struct Target<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// Its `.s` listings (the hot paths llvm-mca reads).
    pub listings: Option<&'a ProbeListings>,
}

/// Measures every profile of `targets` that can be measured.
pub fn measure_all(ui: &Ui, targets: &[Target<'_>], opts: &BuildOptions) -> Vec<Measurement> {
    let llvm_mca = mca::llvm_mca();
    let plan: Vec<(&Target<'_>, Option<String>, Option<String>)> = targets
        .iter()
        .map(|t| {
            let mca_reason = why_not_predicted(t.profile, llvm_mca.as_deref()).or_else(|| {
                t.listings
                    .is_none()
                    .then(|| "not predicted: the profile did not build".to_string())
            });
            let exec_reason = if project::current().is_allocasm() {
                why_not_measured(t.profile, &|p| tools::which(p).is_some())
            } else {
                Some(NO_DRIVER.to_string())
            };
            (t, exec_reason, mca_reason)
        })
        .collect();
    let steps = plan
        .iter()
        .map(|(_, e, m)| 2 * u64::from(e.is_none()) + u64::from(m.is_none()))
        .sum();
    let progress = ui.progress(steps, "measuring");
    let running: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let set_step = |profile: &str, step: Option<&str>| {
        let mut r = running.lock().expect("progress lock");
        r.retain(|s| !s.starts_with(&format!("{profile}: ")));
        if let Some(step) = step {
            r.insert(format!("{profile}: {step}"));
        }
        progress.message(r.iter().cloned().collect::<Vec<_>>().join(", "));
    };
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .iter()
            .map(|(t, exec_reason, mca_reason)| {
                let (progress, set_step) = (&progress, &set_step);
                s.spawn(move || {
                    let name = t.profile.name.clone();
                    let started = std::time::Instant::now();
                    let mut library_hot_paths = BTreeMap::new();
                    let mut from_cache = false;
                    let executed = match exec_reason {
                        Some(why) => Err(why.clone()),
                        None => {
                            set_step(&name, Some("building the probe driver"));
                            let traced = std::sync::atomic::AtomicBool::new(false);
                            let r = measure_one(ui, t.profile, opts, &|step| {
                                traced.store(true, std::sync::atomic::Ordering::Relaxed);
                                progress.inc();
                                set_step(&name, Some(step));
                            });
                            if !traced.load(std::sync::atomic::Ordering::Relaxed) {
                                progress.inc();
                                from_cache = r.is_ok();
                            }
                            progress.inc();
                            r.map(|(set, hot)| {
                                library_hot_paths = hot;
                                set
                            })
                        }
                    };
                    let predictions = match (mca_reason, t.listings) {
                        (None, Some(listings)) => {
                            set_step(&name, Some("llvm-mca"));
                            let m = predict(t.profile, listings);
                            progress.inc();
                            Ok(m)
                        }
                        (Some(why), _) => Err(why.clone()),
                        (None, None) => Err("not predicted: the profile did not build".into()),
                    };
                    set_step(&name, None);
                    if ui.logs_progress() && (exec_reason.is_none() || mca_reason.is_none()) {
                        progress.println(&format!(
                            "measured {name} in {:.1} s{}",
                            started.elapsed().as_secs_f64(),
                            if from_cache {
                                " (executed counts from the cache)"
                            } else {
                                ""
                            }
                        ));
                    }
                    Measurement {
                        profile: name,
                        cpus: mca::cpus(&t.profile.arch())
                            .iter()
                            .map(|c| c.to_string())
                            .collect(),
                        executed,
                        library_hot_paths,
                        mca: predictions,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("measure thread"))
            .collect()
    });
    progress.finish();
    out
}

/// Builds and traces one profile's driver; for a shared-library profile
/// also the hot path of each probe in the cdylib it ran.
fn measure_one(
    ui: &Ui,
    profile: &Profile,
    opts: &BuildOptions,
    step: &dyn Fn(&str),
) -> Result<(executed::ExecutedSet, BTreeMap<String, usize>), String> {
    let verbose = |e: BuildEvent| {
        if ui.verbose
            && let BuildEvent::Started { command, .. } = e
        {
            errln!("{}: {command}", profile.name);
        }
    };
    let describe = |e: BuildError| {
        let fix = install_hint(profile, &e, "; install the cross tools with");
        let what = match &e {
            // The disassembler or a cross tool, not rustup's.
            BuildError::ToolMissing { program, error }
                if program != "cargo" && program != "rustup" =>
            {
                format!("cannot run `{program}` ({error})")
            }
            e => build_error_message(e).trim_end().to_string(),
        };
        format!("not measured: the probe driver did not build{fix}: {what}")
    };
    let files =
        executed::build_driver_files(profile, opts, Lto::Off, &verbose).map_err(describe)?;
    let options = MeasureOptions::default();
    // The same driver, qemu, options and probes give the same counts: a
    // warm report reads them back (codegen::cache) without disassembling
    // or running anything.
    let cache = cache::Cache::of_project();
    let key = executed_key(profile, &files, &options);
    if let Some(key) = &key
        && let Some(hit) =
            cache.get::<(executed::ExecutedSet, BTreeMap<String, usize>)>("executed", key)
    {
        return Ok(hit);
    }
    let driver = executed::disassemble_driver(profile, files).map_err(describe)?;
    step("tracing under qemu");
    let set = executed::measure(profile, &driver, probes(), &options)
        .map_err(|e| format!("not measured: the traced run failed: {e:#}"))?;
    let mut hot = BTreeMap::new();
    if driver.library.is_some() {
        let listings = executed::driver_listings(profile, &driver, probes());
        for probe in probes() {
            if let Some(h) = listings.hot_path(profile, probe.name) {
                hot.insert(probe.name.to_string(), h.instructions);
            }
        }
    }
    let measured = (set, hot);
    if let Some(key) = &key {
        cache.put("executed", key, &measured);
    }
    Ok(measured)
}

/// What a profile's executed counts depend on: the driver's and the probe
/// library's bytes, the qemu that runs them (its `--version`) and its
/// sysroot, the options and the probes. `None` when a file cannot be read
/// (then nothing is cached).
fn executed_key(
    profile: &Profile,
    driver: &executed::DriverFiles,
    options: &MeasureOptions,
) -> Option<cache::Key> {
    let (qemu, sysroot) = executed::runner(profile)?;
    let mut key = cache::Key::new("executed");
    key.text(&profile.name)
        .text(&profile.triple)
        .text(&driver.lto.to_string())
        .text(&qemu)
        .text(&cache::tool_version(&qemu))
        .text(&format!("{sysroot:?}"))
        .text(&format!(
            "calls {} warmup {} cpu {:?}",
            options.calls, options.warmup, options.cpu
        ));
    for p in probes() {
        key.text(p.name);
    }
    key.file(&driver.executable).ok()?;
    if let Some(lib) = &driver.library {
        key.file(lib).ok()?;
    }
    Some(key)
}

/// llvm-mca per CPU on each probe's hot path (of the `.s` listing).
fn predict(
    profile: &Profile,
    listings: &ProbeListings,
) -> BTreeMap<String, Result<Vec<mca::Mca>, String>> {
    let arch = profile.arch();
    let mut out = BTreeMap::new();
    for probe in probes() {
        let Some(hot) = listings.hot_path(profile, probe.name) else {
            continue;
        };
        let cache = cache::Cache::of_project();
        let version = mca::llvm_mca()
            .map(|m| cache::tool_version(&m))
            .unwrap_or_default();
        let r: Result<Vec<mca::Mca>, String> = mca::cpus(&arch)
            .iter()
            .map(|cpu| {
                // The same hot path, CPU model and llvm-mca predict the same.
                let mut key = cache::Key::new("mca");
                key.text(&profile.triple)
                    .text(&format!("{arch:?}"))
                    .text(cpu)
                    .text(&version)
                    .text(&hot.lines.join("\n"));
                if let Some(hit) = cache.get::<mca::Mca>("mca", &key) {
                    return Ok(hit);
                }
                let m = mca::analyze(&hot.lines, &profile.triple, &arch, cpu)
                    .map_err(|e| format!("not predicted: llvm-mca -mcpu={cpu}: {e:#}"))?;
                cache.put("mca", &key, &m);
                Ok(m)
            })
            .collect();
        out.insert(probe.name.to_string(), r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> Profile {
        let dir = allocasm_suite::codegen::manifest_dir().join("targets");
        Profile::load_all(&dir)
            .expect("targets/")
            .into_iter()
            .find(|p| p.name == name)
            .expect("the profile")
    }

    /// The reason a missing program gives, with the command installing it.
    fn not_found(what: &str, program: &str, tool: tools::Tool) -> Option<String> {
        Some(format!(
            "not {what}: {program} not found (install: {})",
            tool.install()
        ))
    }

    #[test]
    fn a_missing_qemu_is_a_reason_naming_it_and_the_fix() {
        let p = profile("aarch64-linux");
        assert_eq!(
            why_not_measured(&p, &|prog| prog != "qemu-aarch64"),
            not_found("measured", "qemu-aarch64", tools::Tool::Qemu(p.arch()))
        );
        assert_eq!(why_not_measured(&p, &|_| true), None);
        let x86 = profile("x86_64-linux");
        assert!(
            why_not_measured(&x86, &|prog| prog != "qemu-x86_64")
                .is_some_and(|r| r.contains("qemu-x86_64 not found"))
        );
    }

    #[test]
    fn non_linux_profiles_say_why_and_the_shared_library_is_measured() {
        for name in ["aarch64-apple", "x86_64-windows", "aarch64-windows-lse"] {
            assert_eq!(
                why_not_measured(&profile(name), &|_| true).as_deref(),
                Some("not measured (not a Linux executable profile)"),
                "{name}"
            );
            assert!(why_not_predicted(&profile(name), Some("llvm-mca-22")).is_some());
        }
        // The shared-library profile is measured in its cdylib: no reason,
        // unless its qemu is missing.
        let dylib = profile("x86_64-linux-dylib");
        assert_eq!(why_not_measured(&dylib, &|_| true), None);
        assert_eq!(why_not_predicted(&dylib, Some("llvm-mca-22")), None);
        assert_eq!(
            why_not_measured(&dylib, &|prog| prog != "qemu-x86_64"),
            not_found("measured", "qemu-x86_64", tools::Tool::Qemu(dylib.arch()))
        );
    }

    #[test]
    fn a_missing_llvm_mca_is_a_reason_naming_it_and_the_fix() {
        let p = profile("riscv64-linux");
        assert_eq!(
            why_not_predicted(&p, None),
            not_found("predicted", "llvm-mca", tools::Tool::LlvmMca)
        );
        assert_eq!(why_not_predicted(&p, Some("llvm-mca-22")), None);
    }
}
