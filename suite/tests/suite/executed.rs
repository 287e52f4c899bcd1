//! What the CPU executes (`allocasm_suite::codegen::executed`): the probe driver
//! linked for every Linux profile, run under qemu-user with one-instruction
//! blocks and exec tracing, each call of each probe counted.
//!
//! Linux hosts with qemu-user and Debian's cross tools only (scripts/setup
//! installs them); skipped under Miri (they spawn cargo and qemu).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use crate::need::{Arch, executed_tools, need};
use allocasm::probes::PROBES;
use allocasm_suite::codegen::build::BuildOptions;
use allocasm_suite::codegen::executed::{self, Driver, ExecutedSet, MeasureOptions};
use allocasm_suite::codegen::linked::Lto;
use allocasm_suite::codegen::{self, ProbeListings, Profile};

struct Measured {
    profile: Profile,
    driver: Driver,
    set: ExecutedSet,
    listings: ProbeListings,
}

type All = (Vec<Measured>, Vec<String>);

fn measured() -> &'static All {
    static ALL: OnceLock<All> = OnceLock::new();
    ALL.get_or_init(|| {
        let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
        let opts = BuildOptions {
            install_missing_target: std::env::var_os("ALLOCASM_INSTALL_TARGETS").is_some(),
            ..BuildOptions::default()
        };
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for profile in executed::measured_profiles(&profiles) {
            let driver = match executed::build_driver(profile, &opts, Lto::Off, &|_| {}) {
                Ok(d) => d,
                Err(e) => {
                    errors.push(format!("profile {}: {e}", profile.name));
                    continue;
                }
            };
            match executed::measure(profile, &driver, PROBES, &MeasureOptions::default()) {
                Ok(set) => {
                    let listings = executed::driver_listings(profile, &driver, PROBES);
                    out.push(Measured {
                        profile: profile.clone(),
                        driver,
                        set,
                        listings,
                    });
                }
                Err(e) => errors.push(format!("profile {}: {e:#}", profile.name)),
            }
        }
        (out, errors)
    })
}

/// The drivers are cross-built with Debian's x86_64-hosted tools and run
/// under qemu-user: x86_64 Linux hosts only.
fn linux_host(test: &str) -> bool {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!("executed counts: skipped, they need an x86_64 Linux host with qemu-user");
        return false;
    }
    let mut tools = Vec::new();
    for arch in [Arch::X86_64, Arch::Aarch64, Arch::Arm, Arch::Riscv64] {
        tools.extend(executed_tools(arch));
    }
    need(test, &tools)
}

fn get<'a>(profile: &str, probe: &str) -> &'a executed::Executed {
    let m = measured()
        .0
        .iter()
        .find(|m| m.profile.name == profile)
        .unwrap_or_else(|| panic!("{profile} was not measured: {:?}", measured().1));
    m.set
        .probes
        .get(probe)
        .unwrap_or_else(|| panic!("{probe} not measured on {profile}"))
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_seven_linux_profiles_are_measured() {
    let profiles = codegen::load_profiles().unwrap();
    let names: BTreeSet<&str> = executed::measured_profiles(&profiles)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "aarch64-linux",
            "aarch64-linux-lse",
            "armv7-linux",
            "riscv64-linux",
            "riscv64-linux-zbb",
            "x86_64-linux",
            "x86_64-linux-dylib"
        ])
    );
    // The shared-library profile is the one measured in a cdylib.
    let shared: Vec<&str> = profiles
        .iter()
        .filter(|p| executed::shared_library(p))
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(shared, ["x86_64-linux-dylib"]);
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_probe_executes_on_every_linux_profile() {
    if !linux_host("every_probe_executes_on_every_linux_profile") {
        return;
    }
    let (all, errors) = measured();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let profiles = codegen::load_profiles().unwrap();
    assert_eq!(all.len(), executed::measured_profiles(&profiles).len());
    let mut problems = Vec::new();
    for m in all {
        for probe in &m.set.missing {
            problems.push(format!(
                "{probe}: no call measured on {} ({}): add a case to suite/probe-bins/probe_driver.rs",
                m.profile.name,
                m.driver.executable.display()
            ));
        }
        for e in m.set.probes.values() {
            if e.calls < 32 || e.instructions == 0 {
                problems.push(format!("{} on {}: {e:?}", e.probe, e.profile));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The probes whose fast case takes a shorter way than the hot path, per
/// profile, and why. The hot path is the *longest* acyclic path through the
/// non-cold blocks (`cfg::HotPath`): where a listing has several, the fast
/// case may leave by a shorter one, and there the hot path is an upper
/// bound, not the sequence. None at present: TempJob's, the last, now
/// leaves its overshoot through a cold call.
const SHORTER_THAN_THE_HOT_PATH: &[(&str, &[&str], &str)] = &[];

/// The equality the report relies on: one call of a probe in its fast case
/// executes exactly the hot path of its listing, line for line, in order.
/// The hot path is the one the report computes (`cfg::analyze` of the driver
/// executable's own listing of the probe, with the profile's cold calls and
/// its GOT slots named: the executed trace and that listing come from the
/// same disassembly). Helpers' instructions are counted apart
/// (`Executed::helpers`), never lines of the path.
///
/// Asserted for every probe on every profile but the pairs of
/// [`SHORTER_THAN_THE_HOT_PATH`]; for those the test asserts what does hold
/// (the fast case runs no more instructions of the listing than the hot
/// path, and none of a cold block) and that they still differ, so the list
/// stays exact.
#[test]
#[cfg_attr(miri, ignore)]
fn straight_line_probes_execute_exactly_their_listing() {
    if !linux_host("straight_line_probes_execute_exactly_their_listing") {
        return;
    }
    let mut checked = Vec::new();
    let mut excluded = 0;
    let mut failures = Vec::new();
    for m in &measured().0 {
        for (name, p) in &m.listings.probes {
            let listing = &p.listing;
            let hot = m
                .listings
                .hot_path(&m.profile, name)
                .expect("a found probe has a hot path");
            let Some(e) = m.set.probes.get(name) else {
                failures.push(format!("{name} on {}: not measured", m.profile.name));
                continue;
            };
            let exception = SHORTER_THAN_THE_HOT_PATH
                .iter()
                .find(|(probe, profiles, _)| {
                    probe == name && profiles.contains(&m.profile.name.as_str())
                });
            let Some((_, _, why)) = exception else {
                checked.push(format!("{name} on {}", m.profile.name));
                if let Err(mismatch) = executed::compare_path(&hot.lines, e) {
                    failures.push(mismatch.to_string());
                }
                continue;
            };
            excluded += 1;
            if executed::compare_path(&hot.lines, e).is_ok() {
                failures.push(format!(
                    "{name} on {} now executes exactly its hot path: remove it from \
                     SHORTER_THAN_THE_HOT_PATH ({why})",
                    m.profile.name
                ));
            }
            if e.listing_path.len() > hot.instructions {
                failures.push(format!(
                    "{name} on {}: the fast case ran {} lines of the listing, more than the hot \
                     path's {}",
                    m.profile.name,
                    e.listing_path.len(),
                    hot.instructions
                ));
            }
            let warm: BTreeSet<String> = listing
                .lines
                .iter()
                .enumerate()
                .filter(|(n, _)| !hot.cold_lines.contains(n))
                .filter_map(|(_, l)| match l {
                    codegen::Line::Instruction(i) => Some(i.text()),
                    _ => None,
                })
                .collect();
            for l in &e.listing_path {
                if !warm.contains(l) {
                    failures.push(format!(
                        "{name} on {}: the fast case executed `{l}`, which is only in cold \
                         blocks\n{listing}",
                        m.profile.name
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Not vacuous: every probe on every profile, but the exceptions.
    assert_eq!(
        checked.len() + excluded,
        PROBES.len() * measured().0.len(),
        "{checked:?}"
    );
    assert!(checked.len() > excluded, "{checked:?}");
}

/// Every executed path is a path of the listing: each line one call ran is
/// a line of the probe's listing, so the report's two columns count the
/// same code.
#[test]
#[cfg_attr(miri, ignore)]
fn every_executed_line_is_a_line_of_the_listing() {
    if !linux_host("every_executed_line_is_a_line_of_the_listing") {
        return;
    }
    let mut failures = Vec::new();
    for m in &measured().0 {
        for e in m.set.probes.values() {
            let Some(listing) = m.listings.listing(&e.probe) else {
                continue;
            };
            let lines: BTreeSet<String> = listing.instructions().map(|i| i.text()).collect();
            if e.listing_path.is_empty() {
                failures.push(format!(
                    "{} on {}: the disassembly and the listing do not match line for line",
                    e.probe, e.profile
                ));
            }
            for l in &e.listing_path {
                if !lines.contains(l) {
                    failures.push(format!(
                        "{} on {}: `{l}` is not in\n{listing}",
                        e.probe, e.profile
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The measured price of the default aarch64 target: the relaxed add is a
/// call into `__aarch64_ldadd8_relax` (which picks LSE at run time) where
/// `+lse` executes one `ldadd` inline.
#[test]
#[cfg_attr(miri, ignore)]
fn outline_atomics_add_the_helper_and_lse_does_not() {
    if !linux_host("outline_atomics_add_the_helper_and_lse_does_not") || !measured().1.is_empty() {
        return; // the test above names the failed profiles
    }
    let p = "probe_packed_alloc_relaxed";
    let outline = get("aarch64-linux", p);
    let helper = outline
        .helpers
        .iter()
        .find(|h| h.function == "__aarch64_ldadd8_relax")
        .unwrap_or_else(|| panic!("no helper executed: {outline:#?}"));
    assert!(helper.instructions >= 3, "{outline:#?}");
    assert_eq!(
        outline.instructions,
        outline.in_probe + outline.helper_instructions()
    );
    let lse = get("aarch64-linux-lse", p);
    assert!(lse.helpers.is_empty(), "{lse:#?}");
    assert!(
        lse.sequence.iter().any(|l| l.starts_with("ldadd")),
        "{lse:#?}"
    );
    assert!(
        lse.instructions < outline.instructions,
        "{lse:#?}\n{outline:#?}"
    );
    // x86_64: one `lock xadd` inline, no helper.
    let x86 = get("x86_64-linux", p);
    assert!(
        x86.helpers.is_empty() && x86.untraced_calls == 0,
        "{x86:#?}"
    );
    assert!(
        x86.sequence.iter().any(|l| l.starts_with("lock xadd")),
        "{x86:#?}"
    );
}

/// The per-thread cursor's fast path executes no atomic read-modify-write
/// on any profile, and costs no more instructions than the shared word
/// where neither calls out (x86_64, +lse).
#[test]
#[cfg_attr(miri, ignore)]
fn the_thread_cursor_executes_no_atomic() {
    if !linux_host("the_thread_cursor_executes_no_atomic") || !measured().1.is_empty() {
        return;
    }
    for m in &measured().0 {
        let e = get(&m.profile.name, "probe_thread_cursor_alloc");
        let rmw = &m.profile.classes.atomic_rmw;
        let atomics: Vec<&String> = e
            .sequence
            .iter()
            .filter(|l| rmw.is_match(l.rsplit(": ").next().unwrap_or(l)))
            .collect();
        assert!(atomics.is_empty(), "{}: {atomics:?}", m.profile.name);
    }
}

/// The shared-library profile's thread-locals: the thread cursor and the
/// per-thread cache reach their thread-local through `__tls_get_addr@plt`
/// and the dynamic loader's `__tls_get_addr` on every call, both counted as
/// helpers, nothing untraced; the same probes linked into the PIE executable
/// (x86_64-linux) call nothing.
#[test]
#[cfg_attr(miri, ignore)]
fn the_shared_library_counts_tls_get_addr() {
    if !linux_host("the_shared_library_counts_tls_get_addr") || !measured().1.is_empty() {
        return;
    }
    for probe in [
        "probe_thread_cursor_alloc",
        "probe_segregated_cached_alloc",
        "probe_segregated_cached_dealloc",
    ] {
        let e = get("x86_64-linux-dylib", probe);
        let names: Vec<&str> = e.helpers.iter().map(|h| h.function.as_str()).collect();
        assert_eq!(
            names,
            ["__tls_get_addr@plt", "__tls_get_addr"],
            "{probe}: {e:#?}"
        );
        assert!(e.helpers.iter().all(|h| h.instructions > 0), "{e:#?}");
        assert_eq!(e.untraced_calls, 0, "{e:#?}");
        assert_eq!(e.instructions, e.in_probe + e.helper_instructions());
        assert_eq!(e.min, e.max, "{probe}: {e:#?}");
        let exe = get("x86_64-linux", probe);
        assert!(exe.helpers.is_empty(), "{exe:#?}");
    }
    // The driver called the library's probes, not its own.
    let m = measured()
        .0
        .iter()
        .find(|m| m.profile.name == "x86_64-linux-dylib")
        .expect("measured");
    let lib = m.driver.library.as_ref().expect("a cdylib");
    assert!(
        lib.extension().is_some_and(|e| e == "so"),
        "{}",
        lib.display()
    );
}
