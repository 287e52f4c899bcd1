//! The suite on a crate that is not allocasm, through an installed binary
//! run from another directory: the fixture crate `tests/fixtures/bumpfix`
//! (two `#[inline(never)]` functions found by a prefix, three profiles, its
//! own snapshots) is copied out of this tree, `cargo install --path suite`
//! puts the binary in a folder of its own, and that binary's `check`,
//! `report`, `show` and `snapshot` work on the copy because it is where they
//! run, not the tree they were built from.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the suite is in the workspace")
        .to_path_buf()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `cargo install --path suite` into a folder of its own (reusing the
/// workspace's release build when there is one), once per test run.
fn installed() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("any-crate-install");
        let out = Command::new(env!("CARGO"))
            // --debug: the dev profile `cargo test` already built the
            // binary with, so the install reuses it instead of a release
            // build of the whole suite.
            .args([
                "install",
                "--debug",
                "--locked",
                "--offline",
                "--quiet",
                "--path",
            ])
            .arg(repo_root().join("suite"))
            .arg("--root")
            .arg(&root)
            // The workspace's target dir, where that build is.
            .arg("--target-dir")
            .arg(repo_root().join("target"))
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("cargo install runs");
        assert!(
            out.status.success(),
            "cargo install --path suite failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = root.join("bin").join("allocasm");
        assert!(bin.is_file(), "no {}", bin.display());
        bin
    })
}

/// A fresh copy of the fixture crate outside this workspace's sources,
/// pinned to this workspace's toolchain.
fn fixture(name: &str) -> PathBuf {
    fixture_of("bumpfix", name)
}

/// [`fixture`] of the fixture crate `tests/fixtures/<krate>`.
fn fixture_of(krate: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("any-crate")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(krate),
        &dir,
    );
    std::fs::copy(
        repo_root().join("rust-toolchain.toml"),
        dir.join("rust-toolchain.toml"),
    )
    .unwrap();
    // A target dir per copy, outside it: the copies are one package at
    // one version, so in a shared target dir they wrote the same
    // `bumpfix-<hash>.s` and one test's edited source showed up in
    // another's listing. (The fixture has no dependencies: a build from
    // nothing takes a second per profile.)
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::fs::write(
        dir.join(".cargo/config.toml"),
        format!(
            "[build]\ntarget-dir = {:?}\n",
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("any-crate-target")
                .join(name)
        ),
    )
    .unwrap();
    dir
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    run_with_path(dir, args, None)
}

/// [`run_in`] with `PATH` set to `path` when given.
fn run_with_path(dir: &Path, args: &[&str], path: Option<&str>) -> Output {
    let mut cmd = Command::new(installed());
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_MANIFEST_DIR");
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    cmd.output().expect("the installed allocasm runs")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn has_rustup() -> bool {
    Command::new("rustup").arg("--version").output().is_ok()
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_installed_binary_checks_the_crate_it_runs_in() {
    if !has_rustup() {
        eprintln!("skipped: no rustup");
        return;
    }
    let dir = fixture("check");
    let ok = run_in(&dir, &["check"]);
    let out = text(&ok);
    assert_eq!(ok.status.code(), Some(0), "{out}");
    assert!(
        out.contains("checked 2 probes on 3 profile(s)") && out.contains("0 failure(s)"),
        "{out}"
    );

    // The same binary, the budget lowered in the copy: the failure is the
    // copy's, named with its probe and profile.
    let profile = dir.join("targets/x86_64-linux.toml");
    let toml = std::fs::read_to_string(&profile).unwrap();
    let lowered = toml.replacen("hot_max = 9", "hot_max = 3", 1);
    assert_ne!(
        lowered, toml,
        "the fixture's x86_64 budget for bumpfix_alloc is 9"
    );
    std::fs::write(&profile, lowered).unwrap();
    let failed = run_in(&dir, &["check", "-p", "x86_64-linux"]);
    let out = text(&failed);
    assert_eq!(failed.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL bumpfix_alloc on profile x86_64-linux: hot_max 3"),
        "{out}"
    );

    // --manifest-path from anywhere else works on the same crate.
    let elsewhere = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let manifest = dir.join("Cargo.toml");
    let again = run_in(
        elsewhere,
        &[
            "--manifest-path",
            manifest.to_str().unwrap(),
            "check",
            "-p",
            "x86_64-linux",
        ],
    );
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_fixture_reports_shows_and_snapshots() {
    if !has_rustup() {
        eprintln!("skipped: no rustup");
        return;
    }
    let dir = fixture("report");
    let report = run_in(&dir, &["report", "--format", "md,json"]);
    let out = text(&report);
    assert_eq!(report.status.code(), Some(0), "{out}");
    assert!(
        out.contains("2 probes × 3 profiles") && out.contains("6 listings, 0 missing"),
        "{out}"
    );
    let md = std::fs::read_to_string(dir.join("reports/report.md")).unwrap();
    for probe in ["bumpfix_alloc", "bumpfix_count"] {
        assert!(md.contains(probe), "the report lacks {probe}");
    }
    assert!(
        md.contains("the project has no probe driver"),
        "the report says why nothing was executed"
    );
    // This crate has no scripts/setup: a missing tool's line (llvm-mca on
    // a bare machine) gives the install command for this OS instead.
    assert!(
        !md.contains("scripts/setup") && !out.contains("scripts/setup"),
        "{out}"
    );

    let show = run_in(&dir, &["show", "bumpfix_count", "-p", "aarch64-linux-lse"]);
    let out = text(&show);
    assert_eq!(show.status.code(), Some(0), "{out}");
    assert!(
        out.contains("bumpfix_count:") && out.contains("ldadd"),
        "{out}"
    );

    // The committed snapshots hold the listings.
    let snap = run_in(&dir, &["snapshot"]);
    let out = text(&snap);
    assert_eq!(snap.status.code(), Some(0), "{out}");
    assert!(out.contains("6 unchanged, 0 new, 0 changed"), "{out}");

    // A changed snapshot: exit 1, a diff, a .snap.new beside it; --accept
    // takes the listing and the next run is clean.
    let path = dir.join("snapshots/x86_64-linux/bumpfix_count.snap");
    let old = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, old.replace("lock xadd", "lock xchg")).unwrap();
    let changed = run_in(&dir, &["snapshot", "-p", "x86_64-linux"]);
    let out = text(&changed);
    assert_eq!(changed.status.code(), Some(1), "{out}");
    assert!(
        out.contains("CHANGED snapshots/x86_64-linux/bumpfix_count.snap"),
        "{out}"
    );
    assert!(out.contains("+  lock xadd"), "{out}");
    assert!(path.with_extension("snap.new").is_file());
    let accepted = run_in(&dir, &["snapshot", "-p", "x86_64-linux", "--accept"]);
    assert_eq!(accepted.status.code(), Some(0), "{}", text(&accepted));
    assert!(!path.with_extension("snap.new").exists());
    let clean = run_in(&dir, &["snapshot", "-p", "x86_64-linux"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
}

/// The fixture `followfix`: a probe over crossbeam-queue's generic
/// `ArrayQueue<u64>::push`. Its `follow = true` expectations (a
/// compare-exchange, an atomic read-modify-write) hold on x86_64-linux and
/// aarch64-linux-lse because they see the callee `push_or_else`; the same
/// expectations without `follow` fail, the probe's own frame being a call.
#[test]
#[cfg_attr(miri, ignore)]
fn follow_sees_a_dependency_generic_function() {
    if !has_rustup() {
        eprintln!("skipped: no rustup");
        return;
    }
    let dir = fixture_of("followfix", "follow");
    let ok = run_in(&dir, &["check", "-p", "x86_64-linux,aarch64-linux-lse"]);
    let out = text(&ok);
    assert_eq!(ok.status.code(), Some(0), "{out}");
    assert!(out.contains("0 failure(s)"), "{out}");

    let show = run_in(
        &dir,
        &["show", "followfix_push", "-p", "x86_64-linux", "--follow"],
    );
    let out = text(&show);
    assert_eq!(show.status.code(), Some(0), "{out}");
    assert!(
        out.contains("→ crossbeam_queue::array_queue::ArrayQueue<u64>::push_or_else")
            && out.contains("lock cmpxchg")
            && out.contains("followed hot path (2 function(s)"),
        "{out}"
    );

    // The report carries the walk.
    let report = run_in(
        &dir,
        &["report", "--format", "json,html", "-p", "x86_64-linux"],
    );
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    // The HTML page folds the callees under the probe too.
    let html = std::fs::read_to_string(dir.join("reports/report.html")).unwrap();
    assert!(
        html.contains("<details class=\"followed\"><summary>followed through 1 callee(s)")
            && html.contains("ArrayQueue&lt;u64&gt;::push_or_else"),
        "the HTML report's followed block"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reports/report.json")).unwrap())
            .unwrap();
    let followed = &json["probes"][0]["results"][0]["followed"];
    assert!(
        followed["callees"][0]["path"]
            .as_str()
            .is_some_and(|p| p.contains("ArrayQueue<u64>::push_or_else")),
        "{followed}"
    );
    assert_eq!(followed["atomic_rmw"], 1, "{followed}");
    // (The report's schema is generated from the same types: the `cli`
    // schema test keeps docs/report.schema.json in step with them.)

    // `snapshot` keeps the [function."…"] table's function too.
    let snap = run_in(&dir, &["snapshot", "-p", "x86_64-linux", "--accept"]);
    let out = text(&snap);
    assert_eq!(snap.status.code(), Some(0), "{out}");
    let kept = dir.join("snapshots/x86_64-linux/function.ArrayQueue_u64___push_or_else.snap");
    let kept = std::fs::read_to_string(&kept).unwrap_or_else(|e| panic!("{out}\n{e}"));
    assert!(
        kept.contains("crossbeam_queue::array_queue::ArrayQueue<u64>::push_or_else:\n")
            && kept.contains("lock cmpxchg"),
        "{kept}"
    );

    for profile in ["x86_64-linux", "aarch64-linux-lse"] {
        let path = dir.join(format!("targets/{profile}.toml"));
        let toml = std::fs::read_to_string(&path).unwrap();
        let unfollowed = toml.replacen("follow = true", "follow = false", 1);
        assert_ne!(unfollowed, toml, "{profile} follows the probe's calls");
        std::fs::write(&path, unfollowed).unwrap();
    }
    let failed = run_in(&dir, &["check", "-p", "x86_64-linux,aarch64-linux-lse"]);
    let out = text(&failed);
    assert_eq!(failed.status.code(), Some(1), "{out}");
    for profile in ["x86_64-linux", "aarch64-linux-lse"] {
        assert!(
            out.contains(&format!(
                "FAIL followfix_push on profile {profile}: hot: require atomic-rmw"
            )),
            "{out}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn outside_a_workspace_it_says_where_to_point_it() {
    let dir = std::env::temp_dir().join(format!("allocasm-no-workspace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_allocasm"))
        .arg("list")
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no Cargo workspace here") && err.contains("--manifest-path"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stand-in `rustup` first on the PATH that logs each call to `log` and
/// hands it to the real one: what allocasm ran, without changing it.
#[cfg(unix)]
fn rustup_spy(dir: &Path, log: &Path) -> String {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("rustup"))
        .find(|p| p.is_file())
        .expect("rustup on PATH");
    let bin = dir.join("spy-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("rustup");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >>'{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// A report run again with nothing changed starts no cargo at all (each
/// build's stamp says nothing it read has changed) and reports the same
/// listings; an edited source runs cargo again, and the new code is in the
/// report.
#[test]
#[cfg(unix)]
#[cfg_attr(miri, ignore)]
fn a_report_with_nothing_changed_runs_no_cargo() {
    if !has_rustup() {
        eprintln!("skipped: no rustup");
        return;
    }
    let dir = fixture("fresh");
    let log = dir.join("rustup.log");
    let path = rustup_spy(&dir, &log);
    let report = |name: &str| {
        let _ = std::fs::remove_file(&log);
        let out = dir.join(name);
        let o = run_with_path(
            &dir,
            &[
                "report",
                "--format",
                "json",
                "-p",
                "x86_64-linux",
                "--out",
                out.to_str().unwrap(),
            ],
            Some(&path),
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        let json = std::fs::read_to_string(out.join("report.json")).unwrap();
        let cargo: Vec<String> = calls
            .lines()
            .filter(|l| l.contains(" cargo "))
            .map(str::to_string)
            .collect();
        (cargo, json)
    };
    let listing = |json: &str| {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "bumpfix_alloc")
            .map(|p| p["results"][0]["lines"].to_string())
            .expect("bumpfix_alloc in the report")
    };
    let (_, first) = report("first");
    let (cargo, warm) = report("warm");
    assert!(
        cargo.is_empty(),
        "nothing changed, yet cargo ran: {cargo:?}"
    );
    assert_eq!(listing(&first), listing(&warm));

    // An edit: cargo runs, and the listing is the new code's.
    let lib = dir.join("src/lib.rs");
    let src = std::fs::read_to_string(&lib).unwrap();
    let edited = src.replacen("+ 7) & !7", "+ 15) & !15", 1);
    assert_ne!(
        edited, src,
        "the fixture's bump rounds up to 8 with `+ 7) & !7`"
    );
    std::fs::write(&lib, edited).unwrap();
    let (cargo, after) = report("edited");
    assert!(
        cargo.iter().any(|c| c.contains("cargo rustc")),
        "a source changed, and cargo did not run: {cargo:?}"
    );
    assert_ne!(
        listing(&after),
        listing(&warm),
        "the report kept the old listing"
    );
}
