//! The codegen suite: every probe on every profile of `targets/`, built once
//! per profile (in parallel, shared by all tests of this module), checked
//! against the profile's expectations and snapshotted in
//! `snapshots/<profile>/<probe>.snap`.
//!
//! The builds use `target/allocasm-asm/<toolchain>/<profile>` so they never
//! wait on the outer `cargo test`'s lock. The toolchain is the one rustup
//! selects (`rust-toolchain.toml`, or `cargo +beta test`'s).
//!
//! Skipped under Miri (they spawn cargo).

use std::sync::OnceLock;

use allocasm::probes::PROBES;
use allocasm_suite::codegen::build::{self, BuildError, BuildOptions};
use allocasm_suite::codegen::expect::{self, FailureKind};
use allocasm_suite::codegen::{self, AsmOutput, ProbeListings, Profile};

/// One profile, built, with every probe extracted.
struct Built {
    profile: Profile,
    output: AsmOutput,
    listings: ProbeListings,
}

fn options() -> BuildOptions {
    BuildOptions {
        install_missing_target: std::env::var_os("ALLOCASM_INSTALL_TARGETS").is_some(),
        ..BuildOptions::default()
    }
}

/// The builds that worked, and `(profile, error)` for the others.
type Builds = (Vec<Built>, Vec<(String, String)>);

/// Every profile built once per test process: the builds that worked, and
/// `(profile, error)` for those that did not.
fn builds() -> &'static Builds {
    static BUILT: OnceLock<Builds> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
        let outputs = build::build_profiles(&profiles, &options(), &|_| {});
        let mut errors = Vec::new();
        let mut built = Vec::new();
        for (profile, output) in profiles.into_iter().zip(outputs) {
            match output {
                Ok(output) => {
                    let listings = codegen::extract_probes(&profile, &output, PROBES);
                    built.push(Built {
                        profile,
                        output,
                        listings,
                    });
                }
                Err(e) => errors.push((profile.name, e.to_string())),
            }
        }
        (built, errors)
    })
}

/// The profiles that built (the others fail `every_profile_builds`).
fn built() -> &'static [Built] {
    &builds().0
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_profile_builds() {
    let errors: Vec<String> = builds()
        .1
        .iter()
        .map(|(p, e)| format!("profile {p}: {e}"))
        .collect();
    assert!(
        errors.is_empty(),
        "asm builds failed:\n{}",
        errors.join("\n")
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_probe_of_the_registry_is_found_on_every_profile() {
    let mut missing = Vec::new();
    for b in built() {
        if !b.listings.missing.is_empty() {
            missing.push(format!("on {}:", b.output.header()));
        }
        for probe in &b.listings.missing {
            missing.push(format!(
                "  probe {probe} is missing on profile {}",
                b.profile.name
            ));
        }
    }
    for (profile, _) in &builds().1 {
        for probe in PROBES {
            missing.push(format!(
                "probe {} is missing on profile {profile} (its build failed)",
                probe.name
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "{} probe(s) not found in the assembly:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_expectation_holds() {
    let mut failures = Vec::new();
    for b in built() {
        for f in expect::check_all(&b.profile, &b.listings, PROBES) {
            // A missing probe is the test above's failure.
            if f.kind != FailureKind::MissingProbe {
                failures.push(format!("{f}  ({})", b.output.header()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} expectation(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_expectation_names_a_registered_probe() {
    for b in built() {
        b.profile
            .validate(PROBES)
            .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

/// What a snapshot's metadata records (not compared, only shown).
#[derive(serde::Serialize)]
struct SnapshotInfo<'a> {
    profile: &'a str,
    triple: &'a str,
    flags: String,
    toolchain: &'a str,
    rustc: Vec<&'a str>,
    codegen_units: String,
    expect: &'a str,
}

#[test]
#[cfg_attr(miri, ignore)]
fn listings_match_the_snapshots() {
    for b in built() {
        let dir = codegen::snapshots_dir().join(&b.profile.name);
        for probe in PROBES {
            let Some(listing) = b.listings.listing(probe.name) else {
                continue;
            };
            let info = SnapshotInfo {
                profile: &b.profile.name,
                triple: &b.profile.triple,
                flags: b.output.flags.join(" "),
                toolchain: &b.output.toolchain,
                rustc: b.output.rustc_version.lines().collect(),
                codegen_units: b.output.codegen_units(),
                expect: probe.expect,
            };
            let mut settings = insta::Settings::clone_current();
            settings.set_snapshot_path(&dir);
            settings.set_prepend_module_to_snapshot(false);
            settings.set_omit_expression(true);
            settings.set_description(format!(
                "{} on {}: {}",
                probe.name, b.profile.name, b.profile.description
            ));
            settings.set_info(&info);
            settings.bind(|| insta::assert_snapshot!(probe.name, listing.text()));
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_warm_rebuild_reuses_the_previous_assembly() {
    let first = &built()[0];
    let again = build::build_profile(&first.profile, &options(), &|_| {}).unwrap();
    assert!(
        again.fresh,
        "second build of {} recompiled",
        first.profile.name
    );
    let paths = |o: &AsmOutput| {
        o.files
            .iter()
            .map(|f| (f.path.clone(), f.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&again), paths(&first.output));
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_listing_header_says_compiler_flags_and_codegen_units() {
    for b in built() {
        let h = b.output.header();
        assert!(
            h.contains(&b.profile.name) && h.contains("rustc ") && h.contains("codegen-units"),
            "{h}"
        );
        assert!(!b.output.files.is_empty());
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_missing_target_names_the_command_that_fixes_it() {
    let tc = build::resolve_toolchain(&options()).unwrap();
    // A target the channel offers but this machine lacks.
    let triple = "i686-unknown-linux-gnu";
    let installed = std::process::Command::new("rustup")
        .args(["target", "list", "--installed", "--toolchain", &tc])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == triple)
        })
        .unwrap_or(false);
    if !installed {
        let e = build::ensure_target(&tc, triple, false, &|_| {}, "p").unwrap_err();
        assert_eq!(
            e,
            BuildError::TargetMissing {
                toolchain: tc.clone(),
                triple: triple.into()
            }
        );
        assert!(
            e.to_string()
                .contains(&format!("rustup target add {triple} --toolchain {tc}")),
            "{e}"
        );
    }
    // One the channel has no rust-std for at all: not available, with or
    // without the install option, and nothing to run.
    for install in [false, true] {
        let e = build::ensure_target(&tc, "riscv64-nonexistent-none", install, &|_| {}, "p")
            .unwrap_err();
        assert_eq!(
            e,
            BuildError::NotAvailable {
                toolchain: tc.clone(),
                triple: "riscv64-nonexistent-none".into()
            }
        );
        assert_eq!(
            e.to_string(),
            format!("not available for {tc}: rustup has no rust-std for riscv64-nonexistent-none")
        );
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_missing_toolchain_is_a_clear_error() {
    let opts = BuildOptions {
        toolchain: Some("0.0.1-nonexistent".into()),
        ..options()
    };
    let e = build::resolve_toolchain(&opts).unwrap_err();
    assert!(matches!(e, BuildError::ToolchainMissing { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("rustup toolchain install 0.0.1-nonexistent"),
        "{e}"
    );
}

/// The built profile called `name`.
fn profile_built(name: &str) -> &'static Built {
    built()
        .iter()
        .find(|b| b.profile.name == name)
        .unwrap_or_else(|| panic!("profile {name} did not build"))
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_listing_has_a_hot_path_that_returns() {
    for b in built() {
        for probe in PROBES {
            let Some(h) = b.listings.hot_path(&b.profile, probe.name) else {
                continue;
            };
            assert!(
                !h.no_hot_return && h.instructions > 0,
                "{} on {}: no hot return\n{}",
                probe.name,
                b.profile.name,
                h.text()
            );
            assert!(h.instructions <= h.function_instructions);
        }
    }
}

/// No probe's hot path touches the stack on any profile unless a call sits
/// on it (the macOS TLV thunk, an outline-atomics helper, `__tls_get_addr`,
/// `__aeabi_read_tp`), which needs the frame it sets up. x86_64-apple's
/// frame record is counted apart (`frame_accesses`), as the target's.
#[test]
#[cfg_attr(miri, ignore)]
fn no_hot_path_touches_the_stack_but_for_a_call_on_it() {
    let mut found = Vec::new();
    for b in built() {
        for probe in PROBES {
            let Some(h) = b.listings.hot_path(&b.profile, probe.name) else {
                continue;
            };
            if h.stack_accesses > 0 && h.calls.is_empty() {
                found.push(format!(
                    "{} on {}: {} stack accesses, no call\n{}",
                    probe.name,
                    b.profile.name,
                    h.stack_accesses,
                    h.text()
                ));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_thread_cursor_hot_path_calls_only_what_the_target_needs() {
    let calls = |p: &str| {
        let b = profile_built(p);
        b.listings
            .hot_path(&b.profile, "probe_thread_cursor_alloc")
            .expect("probe_thread_cursor_alloc")
            .calls
    };
    // The cold refill is off the hot path everywhere.
    assert_eq!(calls("x86_64-linux"), Vec::<String>::new());
    assert_eq!(calls("x86_64-linux-dylib"), ["__tls_get_addr"]);
    let apple = calls("aarch64-apple");
    assert_eq!(apple.len(), 1, "{apple:?}");
    assert!(
        apple[0].starts_with("tlv_get_addr (TLV thunk of "),
        "{apple:?}"
    );
    assert!(apple.iter().all(|c| !c.contains("refill")));
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_packed_fast_path_on_x86_64_linux_is_shorter_than_the_function() {
    let b = profile_built("x86_64-linux");
    let h = b
        .listings
        .hot_path(&b.profile, "probe_packed_alloc_relaxed")
        .unwrap();
    let whole = b
        .listings
        .listing("probe_packed_alloc_relaxed")
        .unwrap()
        .instructions()
        .count();
    assert_eq!(h.function_instructions, whole);
    assert!(h.instructions < whole, "{h:#?}");
    let fit = h.to_fit_check.expect("a fit check after the lock xadd");
    assert!(fit < h.instructions);
    assert!(h.lines[..fit].iter().any(|l| l.starts_with("lock xadd ")));
    assert!(h.calls.is_empty() && h.loops == 0, "{h:#?}");
}
