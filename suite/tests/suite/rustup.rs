//! Installing rustup targets: once per (toolchain, triple), one rustup
//! process at a time, checked against a stand-in `rustup` that fails whenever
//! two copies of it run at once (no network, no real toolchain touched).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use allocasm_suite::codegen::build::{self, BuildError, BuildEvent};
use allocasm_suite::codegen::{self, Profile};

/// A stand-in rustup in a fresh directory: `target list --installed` prints
/// the triples added so far, `target list` every triple of `targets/` but
/// those in `$dir/unoffered` (what a channel without their rust-std
/// lists), `target add` records one; any call made while
/// another copy runs (a `mkdir` lock held across a short sleep) fails and is
/// logged as `CONCURRENT`. `fail_add` makes `target add` fail the way a raced
/// rustup does.
fn stand_in(name: &str, fail_add: bool) -> PathBuf {
    let dir = codegen::manifest_dir()
        .join("target")
        .join("tmp")
        .join(format!("rustup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let add = if fail_add {
        r#"echo "info: downloading component 'rust-std' for '$3'" >&2
    echo "error: detected conflict: 'lib/rustlib/$3/lib/libcore.rlib'" >&2
    exit 1"#
    } else {
        r#"echo "$3" >> "$dir/installed""#
    };
    let script = format!(
        r#"#!/usr/bin/env bash
dir='{dir}'
if ! mkdir "$dir/lock" 2>/dev/null; then
  echo "CONCURRENT $*" >> "$dir/log"
  echo "error: could not rename 'downloaded' file" >&2
  exit 1
fi
trap 'rmdir "$dir/lock"' EXIT
echo "$*" >> "$dir/log"
sleep 0.05
case "$1 $2" in
  "target list")
    if [ "$3" = --installed ]; then
      cat "$dir/installed" 2>/dev/null; echo x86_64-unknown-linux-gnu
    else
      grep -vxF -f "$dir/unoffered" "$dir/offered"
    fi ;;
  "target add")
    {add} ;;
  *) echo "stand-in rustup: unexpected call: $*" >&2; exit 2 ;;
esac
"#,
        dir = dir.display()
    );
    let mut triples: Vec<String> = codegen::load_profiles()
        .unwrap()
        .into_iter()
        .map(|p| p.triple)
        .collect();
    triples.sort();
    triples.dedup();
    std::fs::write(dir.join("offered"), triples.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("unoffered"), "\n").unwrap();
    let path = dir.join("rustup");
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn log(rustup: &Path) -> Vec<String> {
    std::fs::read_to_string(rustup.with_file_name("log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every profile of `targets/`, twice over: many profiles sharing triples.
fn profiles() -> Vec<Profile> {
    let mut all = codegen::load_profiles().unwrap();
    all.extend(all.clone());
    all
}

fn adds(log: &[String]) -> Vec<String> {
    let mut adds: Vec<String> = log
        .iter()
        .filter(|l| l.starts_with("target add "))
        .cloned()
        .collect();
    adds.sort();
    adds
}

#[test]
fn install_targets_adds_each_triple_once_one_rustup_at_a_time() {
    let rustup = stand_in("serial", false);
    let profiles = profiles();
    let events = Mutex::new(Vec::new());
    build::install_targets_with(rustup.as_os_str(), "1.95.0", &profiles, &|e| {
        events.lock().unwrap().push(e)
    })
    .unwrap();
    let log = log(&rustup);
    assert!(
        !log.iter().any(|l| l.starts_with("CONCURRENT")),
        "two rustup processes ran at once: {log:#?}"
    );
    let mut triples: Vec<&str> = profiles.iter().map(|p| p.triple.as_str()).collect();
    triples.sort();
    triples.dedup();
    triples.retain(|t| *t != "x86_64-unknown-linux-gnu"); // installed already
    let expected: Vec<String> = triples
        .iter()
        .map(|t| format!("target add {t} --toolchain 1.95.0"))
        .collect();
    assert_eq!(adds(&log), expected, "one `target add` per missing triple");
    let installing = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, BuildEvent::InstallingTarget { .. }))
        .count();
    assert_eq!(installing, expected.len(), "each install is reported once");
}

/// The per-profile path the parallel build threads take: many threads asking
/// at once still run rustup one at a time and install each triple once.
#[test]
fn parallel_profile_builds_never_run_rustup_twice_at_once() {
    let rustup = stand_in("parallel", false);
    let profiles = profiles();
    std::thread::scope(|s| {
        for p in &profiles {
            let rustup = rustup.as_os_str();
            s.spawn(move || {
                build::ensure_target_with(rustup, "1.95.0", &p.triple, true, &|_| {}, &p.name)
            });
        }
    });
    let log = log(&rustup);
    assert!(
        !log.iter().any(|l| l.starts_with("CONCURRENT")),
        "two rustup processes ran at once: {log:#?}"
    );
    let added = adds(&log);
    let mut unique = added.clone();
    unique.dedup();
    assert_eq!(added, unique, "a triple was installed twice: {log:#?}");
}

#[test]
fn a_failed_install_names_the_command_its_first_error_and_the_fix() {
    let rustup = stand_in("failing", true);
    let err = build::ensure_target_with(
        rustup.as_os_str(),
        "1.95.0",
        "aarch64-unknown-linux-gnu",
        true,
        &|_| {},
        "aarch64-linux",
    )
    .unwrap_err();
    assert!(matches!(err, BuildError::InstallFailed { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("target add aarch64-unknown-linux-gnu --toolchain 1.95.0"),
        "{text}"
    );
    assert!(
        text.contains("error: detected conflict: 'lib/rustlib/aarch64-unknown-linux-gnu"),
        "the first error line: {text}"
    );
    assert!(
        text.contains("rustup toolchain uninstall 1.95.0"),
        "the fix: {text}"
    );
    assert!(
        !text.contains("info: downloading"),
        "only the error line: {text}"
    );
}

/// A target the channel does not offer (rustup has no rust-std for it) is
/// `NotAvailable`, with or without `--install`, and never attempted; the
/// other profiles' targets are still installed.
#[test]
fn a_target_the_channel_lacks_is_not_available_and_the_rest_install() {
    let rustup = stand_in("unoffered", false);
    std::fs::write(
        rustup.with_file_name("unoffered"),
        "riscv64gc-unknown-linux-gnu\n",
    )
    .unwrap();
    for install in [false, true] {
        let err = build::ensure_target_with(
            rustup.as_os_str(),
            "1.99.1",
            "riscv64gc-unknown-linux-gnu",
            install,
            &|_| {},
            "riscv64-linux",
        )
        .unwrap_err();
        assert!(err.is_not_available(), "{err:?}");
        assert_eq!(
            err.to_string(),
            "not available for 1.99.1: rustup has no rust-std for riscv64gc-unknown-linux-gnu"
        );
    }
    build::install_targets_with(rustup.as_os_str(), "1.99.1", &profiles(), &|_| {}).unwrap();
    let added = adds(&log(&rustup));
    assert!(
        !added.iter().any(|l| l.contains("riscv64gc")),
        "the unoffered target was attempted: {added:?}"
    );
    assert!(
        added
            .iter()
            .any(|l| l == "target add aarch64-unknown-linux-gnu --toolchain 1.99.1"),
        "the others are installed: {added:?}"
    );
}

/// `report --install` adds rustup's `llvm-tools` (the linked views'
/// llvm-objdump) with one `component add`; a failure names the command,
/// rustup's first error and the fix.
#[test]
fn a_component_is_added_once_and_a_failure_names_the_fix() {
    use allocasm_suite::toolchain;
    let rustup = stand_in("component", false);
    let announced = Mutex::new(Vec::new());
    // The stand-in knows no `component add`: it fails as rustup would.
    let err = toolchain::add_component_with(rustup.as_os_str(), "1.99.1", "llvm-tools", &|l| {
        announced.lock().unwrap().push(l)
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("component add llvm-tools --toolchain 1.99.1"),
        "{text}"
    );
    assert!(
        text.contains("rustup component add llvm-tools --toolchain 1.99.1` by hand"),
        "the fix: {text}"
    );
    assert_eq!(
        log(&rustup),
        ["component add llvm-tools --toolchain 1.99.1"]
    );
    assert_eq!(announced.lock().unwrap().len(), 1, "announced once");
    // A rustup that takes it: one call, no error.
    let ok = rustup.with_file_name("rustup-ok");
    std::fs::write(
        &ok,
        "#!/bin/sh\necho \"$*\" >> \"$(dirname \"$0\")/ok-log\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ok, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    toolchain::add_component_with(ok.as_os_str(), "1.99.1", "llvm-tools", &|_| {}).unwrap();
    assert_eq!(
        std::fs::read_to_string(ok.with_file_name("ok-log")).unwrap(),
        "component add llvm-tools --toolchain 1.99.1\n"
    );
}
