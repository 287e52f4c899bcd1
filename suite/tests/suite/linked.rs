//! The linked view: `suite/probe-bins/linked_probes.rs` linked for every profile with
//! a `[linked]` table, with the release profile and with fat LTO, each probe
//! disassembled (objdump), normalized like the `.s` view and snapshotted in
//! `snapshots/linked/<profile>/<release|release-lto>/<probe>.snap`.
//!
//! Linux hosts only (the cross linkers and binutils are Debian's, installed
//! by scripts/setup); skipped under Miri (they spawn cargo).

use std::sync::OnceLock;

use allocasm::probes::PROBES;
use allocasm_suite::codegen::build::BuildOptions;
use allocasm_suite::codegen::linked::{self, LinkedOutput, Lto};
use allocasm_suite::codegen::{self, ProbeListings, Profile};

use crate::need::{Arch, Tool, linked_tools, need};

struct Built {
    profile: Profile,
    output: LinkedOutput,
    listings: ProbeListings,
}

type Builds = (Vec<Built>, Vec<String>);

fn builds() -> &'static Builds {
    static BUILT: OnceLock<Builds> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
        let opts = BuildOptions {
            install_missing_target: std::env::var_os("ALLOCASM_INSTALL_TARGETS").is_some(),
            ..BuildOptions::default()
        };
        let mut built = Vec::new();
        let mut errors = Vec::new();
        // Only the profiles whose linker and disassembler are here: the
        // tests name the others as skipped (need.rs).
        let profiles: Vec<Profile> = profiles
            .into_iter()
            .filter(|p| {
                p.linked.is_none()
                    || linked_tools(p.arch())
                        .iter()
                        .all(|t| allocasm_suite::tools::find(t).is_ok())
            })
            .collect();
        for (name, lto, result) in linked::build_all_linked(&profiles, &opts, &|_| {}) {
            let profile = Profile::find(&profiles, &name).unwrap().clone();
            match result {
                Ok(output) => {
                    let listings = linked::extract_linked(&profile, &output, PROBES);
                    built.push(Built {
                        profile,
                        output,
                        listings,
                    });
                }
                Err(e) => errors.push(format!("profile {name} ({lto}): {e}")),
            }
        }
        (built, errors)
    })
}

/// Whether this host can link the Linux profiles.
fn linux_host() -> bool {
    if cfg!(target_os = "linux") {
        return true;
    }
    eprintln!("linked view: skipped, it links Linux executables with Debian's cross tools");
    false
}

#[test]
#[cfg_attr(miri, ignore)]
fn five_linux_profiles_have_a_linked_view() {
    let profiles = codegen::load_profiles().unwrap();
    let mut names: Vec<&str> = profiles
        .iter()
        .filter(|p| p.linked.is_some())
        .map(|p| p.name.as_str())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "aarch64-linux",
            "armv7-linux",
            "riscv64-linux",
            "riscv64-linux-zbb",
            "x86_64-linux"
        ]
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_linked_build_works_and_holds_every_probe() {
    if !linux_host() {
        return;
    }
    let mut expected = 0;
    for p in codegen::load_profiles().unwrap() {
        if p.linked.is_some()
            && need(
                &format!(
                    "every_linked_build_works_and_holds_every_probe ({})",
                    p.name
                ),
                &linked_tools(p.arch()),
            )
        {
            expected += 2;
        }
    }
    let (built, errors) = builds();
    assert!(
        errors.is_empty(),
        "linked builds failed:\n{}",
        errors.join("\n")
    );
    assert_eq!(
        built.len(),
        expected,
        "every profile whose tools are here, two LTO settings each"
    );
    let mut missing = Vec::new();
    for b in built {
        for probe in &b.listings.missing {
            missing.push(format!(
                "probe {probe} is not in the linked executable of {} ({}): add it to \
                 suite/probe-bins/linked_probes.rs",
                b.profile.name, b.output.lto
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
#[cfg_attr(miri, ignore)]
fn linked_listings_match_the_snapshots() {
    if !linux_host() {
        return;
    }
    // The snapshots are llvm-objdump's; GNU objdump (the fallback) spells
    // the same code otherwise (`add` for `addi`, `ip` for `r12`).
    if !need("linked_listings_match_the_snapshots", &[Tool::LlvmObjdump]) {
        return;
    }
    for b in &builds().0 {
        if !codegen::objdump::is_llvm_objdump(b.output.dump.command.split(' ').next().unwrap_or(""))
        {
            eprintln!(
                "skipped: linked_listings_match_the_snapshots ({}, {}): disassembled by `{}`, \
                 the snapshots are llvm-objdump's",
                b.profile.name, b.output.lto, b.output.dump.command
            );
            continue;
        }
        let dir = codegen::snapshots_dir()
            .join("linked")
            .join(&b.profile.name)
            .join(b.output.lto.name());
        for probe in PROBES {
            let Some(listing) = b.listings.listing(probe.name) else {
                continue;
            };
            let mut settings = insta::Settings::clone_current();
            settings.set_snapshot_path(&dir);
            settings.set_prepend_module_to_snapshot(false);
            settings.set_omit_expression(true);
            settings.set_description(b.output.header());
            settings.set_info(&serde_json::json!({
                "profile": b.profile.name,
                "triple": b.profile.triple,
                "lto": b.output.lto.name(),
                "rustc": b.output.rustc_version.lines().next(),
                "disassembler": b.output.dump.command,
                "expect": probe.expect,
            }));
            settings.bind(|| insta::assert_snapshot!(probe.name, listing.text()));
        }
    }
}

fn linked(profile: &str, lto: Lto, probe: &str) -> String {
    let b = builds()
        .0
        .iter()
        .find(|b| b.profile.name == profile && b.output.lto == lto)
        .unwrap_or_else(|| panic!("no linked build of {profile} ({lto})"));
    b.listings
        .listing(probe)
        .unwrap_or_else(|| panic!("{probe} missing"))
        .instruction_text()
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_linker_relaxes_thread_locals_and_lto_goes_further() {
    if !linux_host() || !builds().1.is_empty() {
        return; // the test above names the failed builds
    }
    let mut tools = Vec::new();
    for arch in [Arch::X86_64, Arch::Aarch64, Arch::Arm, Arch::Riscv64] {
        tools.extend(linked_tools(arch));
    }
    if !need(
        "the_linker_relaxes_thread_locals_and_lto_goes_further",
        &tools,
    ) {
        return;
    }
    let p = "probe_thread_cursor_alloc";
    let get = |profile, lto| linked(profile, lto, p);
    for lto in Lto::ALL {
        // x86_64 and arm64: the linker relaxes the PIC access (initial-exec
        // GOT load, TLSDESC) to local-exec: no call.
        let x86 = get("x86_64-linux", lto);
        assert!(
            !x86.contains("__tls_get_addr") && x86.contains("fs:"),
            "{lto}:\n{x86}"
        );
        let arm = get("aarch64-linux", lto);
        assert!(
            arm.contains("mrs x") && arm.to_lowercase().contains("tpidr_el0"),
            "{lto}:\n{arm}"
        );
        assert!(
            !arm.contains("__tls_get_addr") && !arm.contains("tlsdesc"),
            "{lto}:\n{arm}"
        );
    }
    // Fat LTO: the access is the executable's own, `fs:`-relative operands.
    let x86 = get("x86_64-linux", Lto::Fat);
    assert!(x86.contains("qword ptr fs:["), "{x86}");
    // armv7: the rlib's general-dynamic access stays a `__tls_get_addr` call
    // after linking; with LTO it is the executable's `__aeabi_read_tp`.
    let v7 = get("armv7-linux", Lto::Off);
    assert!(v7.contains("bl __tls_get_addr"), "{v7}");
    let v7 = get("armv7-linux", Lto::Fat);
    assert!(
        v7.contains("__aeabi_read_tp") && !v7.contains("__tls_get_addr"),
        "{v7}"
    );
    // riscv64: with LTO, `tp` plus a constant offset, no call before the
    // refill. The release build inlines the access into the probe (since
    // issue 12's fast path returns a bare pointer, `LocalKey::with` is no
    // longer left out of line), and, as on armv7, the rlib's general-dynamic
    // access stays a `__tls_get_addr` call: the riscv linker does not relax it.
    let rv = get("riscv64-linux", Lto::Fat);
    assert!(rv.contains(", tp\n") && !rv.contains("LocalKey"), "{rv}");
    let rv = get("riscv64-linux", Lto::Off);
    assert!(
        rv.contains("__tls_get_addr") && !rv.contains("LocalKey"),
        "{rv}"
    );
}
