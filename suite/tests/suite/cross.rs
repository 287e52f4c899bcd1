//! Cross settings only where they belong: no config file gives a host build
//! a runner or linker (Cargo would apply a `[target.<host>] runner` to a
//! native build of that triple too: an arm64 runner's tests would run under
//! qemu), while the qemu steps' own environment (`scripts/cross-env`, and
//! `codegen::linked::cross_env` for the linked view, the same pairs) still
//! builds and runs an aarch64 binary under qemu-user from an x86_64 host.
//!
//! Both build a one-line crate under `target/runner-check/<target>/`, inside the
//! repository, so every `.cargo/config.toml` that applies to the project
//! applies to it. Skipped under Miri (they spawn cargo).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::need::{Arch, Tool, need};
use allocasm_suite::codegen::{self, linked};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A crate that prints its own architecture, and `cargo run -v` of it with
/// `env`: the `Running` line cargo prints and the program's output.
fn run_probe_crate(target: Option<&str>, env: &[(String, String)]) -> (String, String) {
    let dir = repo()
        .join("target/runner-check")
        .join(target.unwrap_or("host"));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"runner-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() { println!(\"arch={}\", std::env::consts::ARCH); }\n",
    )
    .unwrap();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&dir)
        .args(["run", "-v", "--color", "never"])
        .arg("--target-dir")
        .arg(dir.join("target"));
    if let Some(t) = target {
        cmd.args(["--target", t]);
    }
    // What the step runner's environment may hold, and what a caller's
    // CARGO_TARGET_* would add, removed: only config files and `env` count.
    for (var, _) in std::env::vars() {
        if var.starts_with("CARGO_TARGET_") || var.starts_with("CARGO_BUILD_") || var == "RUSTFLAGS"
        {
            cmd.env_remove(var);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "cargo run failed:\n{stderr}");
    let running = stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("Running `"))
        // The last one: the program (the ones before it are rustc's).
        .next_back()
        .unwrap_or_else(|| panic!("no `Running` line in:\n{stderr}"))
        .trim_end_matches('`')
        .to_string();
    (running, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a `Running` command line starts with the binary itself.
fn runs_directly(running: &str) -> bool {
    let first = running.split_whitespace().next().unwrap_or("");
    Path::new(first)
        .file_stem()
        .is_some_and(|s| s == "runner-check")
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_host_build_uses_no_runner() {
    let (running, stdout) = run_probe_crate(None, &[]);
    assert!(
        runs_directly(&running),
        "a plain host `cargo run` went through a runner: `{running}` (a `[target.<host>] \
         runner` in a .cargo/config.toml?)"
    );
    assert_eq!(stdout.trim(), format!("arch={}", std::env::consts::ARCH));
}

#[test]
fn a_native_target_gets_no_cross_settings() {
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    if cfg!(target_os = "linux") {
        assert_eq!(linked::cross_env(&host), Vec::new(), "{host}");
    }
    let foreign = if std::env::consts::ARCH == "aarch64" {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let env = linked::cross_env(foreign);
    let var = format!("CARGO_TARGET_{}", foreign.to_uppercase().replace('-', "_"));
    assert_eq!(
        env.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        [format!("{var}_LINKER"), format!("{var}_RUNNER")]
    );
}

/// `scripts/cross-env TRIPLE` as pairs.
fn script_env(triple: &str) -> Vec<(String, String)> {
    let out = Command::new("bash")
        .arg(repo().join("scripts/cross-env"))
        .arg(triple)
        .output()
        .expect("bash runs scripts/cross-env");
    assert!(out.status.success(), "scripts/cross-env {triple} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("VAR=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_script_and_the_linked_view_agree_on_every_linux_profile() {
    if !cfg!(target_os = "linux") {
        eprintln!("cross settings: skipped, scripts/cross-env is for Linux hosts");
        return;
    }
    let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
    let mut checked = 0;
    for p in profiles.iter().filter(|p| p.triple.contains("-linux-gnu")) {
        assert_eq!(
            script_env(&p.triple),
            linked::cross_env(&p.triple),
            "{}",
            p.name
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} Linux profile(s) in targets/");
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_aarch64_cross_path_runs_under_qemu() {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        eprintln!("cross settings: skipped, the aarch64 cross path is for x86_64 Linux hosts");
        return;
    }
    if !need(
        "the_aarch64_cross_path_runs_under_qemu",
        &[Tool::CrossGcc(Arch::Aarch64), Tool::Qemu(Arch::Aarch64)],
    ) {
        return;
    }
    let triple = "aarch64-unknown-linux-gnu";
    let (running, stdout) = run_probe_crate(Some(triple), &script_env(triple));
    assert!(
        running.starts_with("qemu-aarch64 -L /usr/aarch64-linux-gnu "),
        "the aarch64 binary did not run under qemu-user: `{running}`"
    );
    assert_eq!(stdout.trim(), "arch=aarch64");
}
