//! Exit codes that survive a pipe: every command piped into `head -1` and
//! into `true` (a reader that reads one line, and one that reads nothing)
//! exits with the status it has unpiped, every time, without a panic. CI
//! scripts run `allocasm check | tee log`, and a failure must not read as a
//! success because the reader went away.
//!
//! The commands run on the warm builds the other tests share (one profile,
//! the pinned toolchain). Skipped under Miri (they spawn processes).

use std::path::PathBuf;
#[cfg(unix)]
use std::process::Stdio;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_allocasm");

/// The binary with a clean environment (no colors, no outer RUSTFLAGS).
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("RUSTFLAGS").env("NO_COLOR", "1");
    c
}

fn unpiped(args: &[&str]) -> Output {
    command(args).output().expect("run the allocasm binary")
}

/// `allocasm ARGS [2>&1] | SINK >/dev/null` under `bash -o pipefail`:
/// allocasm's status (from `PIPESTATUS`), and its stderr when that is not
/// in the pipe.
fn piped(args: &[&str], sink: &str, stderr_too: bool) -> (i32, String) {
    let redirect = if stderr_too { "2>&1" } else { "" };
    let script = format!(
        "\"$0\" \"$@\" {redirect} | {sink} >/dev/null; s=(\"${{PIPESTATUS[@]}}\"); echo \"${{s[0]}}\""
    );
    let o = Command::new("bash")
        .args(["-o", "pipefail", "-c", &script, BIN])
        .args(args)
        .env_remove("RUSTFLAGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run bash");
    let status = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("PIPESTATUS of allocasm {args:?}: {o:?}"));
    (status, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A fresh directory under the crate's `target/`.
fn scratch(name: &str) -> PathBuf {
    super::cli::scratch_dir("pipe", name)
}

/// The profiles with x86_64-linux alone, its probe_packed_alloc_relaxed
/// given a hot-path budget of 1 instruction: `check` fails (exit 1) on the
/// warm build.
fn failing_targets() -> PathBuf {
    let dir = scratch("failing-targets");
    let targets = allocasm_suite::codegen::manifest_dir().join("targets");
    std::fs::copy(targets.join("suite.toml"), dir.join("suite.toml")).expect("copy suite.toml");
    let profile = std::fs::read_to_string(targets.join("x86_64-linux.toml")).expect("read profile");
    let table = profile
        .find("[probe.probe_packed_alloc_relaxed]\n")
        .expect("the probe's table");
    let budget = table + profile[table..].find("\nhot_max = ").expect("its hot_max") + 1;
    assert!(
        !profile[table + 1..budget].contains("\n["),
        "hot_max is the table's own"
    );
    let end = budget + profile[budget..].find('\n').expect("a line");
    let failing = format!("{}hot_max = 1{}", &profile[..budget], &profile[end..]);
    std::fs::write(dir.join("x86_64-linux.toml"), failing).expect("write profile");
    dir
}

/// The toolchain `rust-toolchain.toml` pins.
fn pinned() -> String {
    let text = std::fs::read_to_string(
        allocasm_suite::codegen::manifest_dir().join("rust-toolchain.toml"),
    )
    .expect("read rust-toolchain.toml");
    text.lines()
        .find_map(|l| l.strip_prefix("channel = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("a pinned channel")
        .to_string()
}

/// One command: its arguments, the status it must have (where it is
/// known), whether stderr goes into the pipe too, and how many times to
/// repeat the piped runs (the cheap ones that build nothing run often: a
/// race between the reader and the error shows as a status that varies).
struct Case<'a> {
    args: Vec<&'a str>,
    expected: Option<i32>,
    stderr_too: bool,
    runs: usize,
}

fn case<'a>(args: &[&'a str], expected: Option<i32>, stderr_too: bool, runs: usize) -> Case<'a> {
    Case {
        args: args.to_vec(),
        expected,
        stderr_too,
        runs,
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_command_keeps_its_exit_status_in_a_pipe() {
    let pin = pinned();
    let pin_full = format!("{pin}-x86_64-unknown-linux-gnu");
    let failing = failing_targets();
    let failing = failing.to_str().expect("utf-8 path");
    let out = scratch("report");
    let out = out.to_str().expect("utf-8 path");
    let cases = vec![
        case(&["list"], Some(0), false, 3),
        case(&["--help"], Some(0), false, 3),
        case(&["help", "report"], Some(0), false, 3),
        case(
            &["show", "linear_alloc", "-p", "x86_64-linux"],
            Some(0),
            false,
            1,
        ),
        case(
            &[
                "show",
                "linear_alloc",
                "-p",
                "x86_64-linux",
                "--side-by-side",
            ],
            Some(0),
            false,
            1,
        ),
        case(&["check", "-p", "x86_64-linux"], None, false, 1),
        case(&["--targets-dir", failing, "check"], Some(1), false, 2),
        case(
            &[
                "report",
                "-p",
                "x86_64-linux",
                "--no-linked",
                "--no-executed",
                "--format",
                "md",
                "--out",
                out,
            ],
            Some(0),
            false,
            1,
        ),
        case(
            &["diff", "--from", &pin, "--to", &pin, "-p", "x86_64-linux"],
            Some(0),
            false,
            1,
        ),
        case(
            &["history", "--toolchains", &pin, "-p", "x86_64-linux"],
            Some(0),
            false,
            1,
        ),
        case(
            &[
                "bisect",
                "segregated_alloc",
                "-p",
                "x86_64-linux",
                "--good",
                &pin,
                "--bad",
                &pin_full,
            ],
            Some(1),
            false,
            1,
        ),
        // cargo-show-asm installed or not, it prints the comparison and
        // exits with its verdict (0, 1) or 3 (cargo asm missing).
        case(&["verify-extractor", "-p", "x86_64-linux"], None, false, 1),
        // Bad input, its error in the pipe too.
        case(&["show", "nosuch"], Some(2), true, 3),
        case(&["show", "nosuch", "-p", "x86_64-linux"], Some(2), false, 3),
        case(
            &["--targets-dir", "/nonexistent", "list"],
            Some(2),
            true,
            10,
        ),
        case(&["check", "-p", "nosuch"], Some(2), true, 3),
        case(&["frobnicate"], Some(2), true, 3),
    ];
    let mut wrong = Vec::new();
    for c in &cases {
        let o = unpiped(&c.args);
        let status = o.status.code().expect("an exit status, not a signal");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if let Some(expected) = c.expected {
            assert_eq!(status, expected, "allocasm {:?} unpiped: {err}", c.args);
        }
        if c.args[0] == "bisect" && err.contains("is not installed") {
            continue; // the pinned toolchain under another name: nothing to compare
        }
        for sink in ["head -1", "true"] {
            for _ in 0..c.runs {
                let (piped_status, piped_err) = piped(&c.args, sink, c.stderr_too);
                if piped_status != status || piped_err.contains("panicked") {
                    wrong.push(format!(
                        "allocasm {:?} | {sink}: exit {piped_status} (unpiped {status}){}",
                        c.args,
                        if piped_err.contains("panicked") {
                            format!(", panicked: {piped_err}")
                        } else {
                            String::new()
                        }
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The read end closed before the command writes anything: every write
/// fails, the command still runs to its end and exits with its status (a
/// failed `check` 1, not 0), quietly.
#[cfg(unix)]
#[test]
#[cfg_attr(miri, ignore)]
fn a_closed_stdout_keeps_a_failed_check_failed() {
    let failing = failing_targets();
    let mut child = command(&["--targets-dir", failing.to_str().unwrap(), "check"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the allocasm binary");
    drop(child.stdout.take()); // the reader is gone before anything is written
    let out = child.wait_with_output().expect("wait for allocasm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
}
