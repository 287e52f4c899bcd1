//! What the `allocasm` binary prints around the listings: how a probe name
//! is matched (a part of one name, or of several to pick from), which names
//! "did you mean" suggests, the hot path's figures under each listing of
//! `show`, the lines a log gets instead of a progress bar, and `--help`'s
//! global options apart from the command's own.
//!
//! On the warm x86_64-linux build the other tests share. Skipped under Miri
//! (they spawn processes).

use std::path::PathBuf;
use std::process::Command;

use super::cli::{allocasm, code, stderr, stdout};

/// A fresh directory under the crate's `target/`.
fn scratch(name: &str) -> PathBuf {
    super::cli::scratch_dir("cli-output", name)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_part_of_several_probe_names_lists_them_to_pick_from() {
    let o = allocasm(&["show", "packed_alloc", "-p", "x86_64-linux"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    for name in [
        "probe_packed_alloc_relaxed",
        "probe_packed_alloc_acquire",
        "probe_packed_alloc_seqcst",
    ] {
        assert!(err.contains(&format!("  {name}\n")), "{name}: {err}");
    }
    assert!(err.contains("pick one"), "{err}");
    assert!(!err.contains("probe_packed_dealloc"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing built: {}", stdout(&o));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_part_of_one_probe_name_is_that_probe() {
    let o = allocasm(&["show", "tempjob", "-p", "x86_64-linux", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("probe_tempjob_alloc:\n"),
        "{}",
        stdout(&o)
    );
    // A whole name wins over the longer names that contain it.
    let o = allocasm(&["show", "temp_alloc", "-p", "x86_64-linux", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("probe_temp_alloc:\n"), "{}", stdout(&o));
}

#[test]
#[cfg_attr(miri, ignore)]
fn did_you_mean_suggests_only_names_alike() {
    // Two letters swapped: one edit (strsim's Damerau–Levenshtein), and
    // the other `*_alloc` probes are not near enough to be suggested.
    let o = allocasm(&["show", "linaer_alloc"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("unknown probe `linaer_alloc`; did you mean `probe_linear_alloc`? ("),
        "{}",
        stderr(&o)
    );
    // Nothing alike: no names picked at random.
    let o = allocasm(&["show", "nosuch"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("unknown probe `nosuch`; no probe has a name like it"),
        "{err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
    let o = allocasm(&["check", "-p", "x86-64-linx"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean `x86_64-linux`?"),
        "{}",
        stderr(&o)
    );
}

/// `show` prints under each listing the hot path's figures, the same the
/// report's JSON has for that listing.
#[test]
#[cfg_attr(miri, ignore)]
fn show_prints_the_hot_paths_figures_as_the_report_has_them() {
    let out = scratch("hot-path");
    let o = allocasm(&[
        "report",
        "-p",
        "x86_64-linux",
        "--no-linked",
        "--no-executed",
        "--format",
        "json",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let probe = json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "probe_packed_alloc_relaxed")
        .expect("the probe in the report");
    let h = &probe["results"][0]["hot_path"];
    let n = |k: &str| h[k].as_u64().unwrap_or_else(|| panic!("{k} in {h}"));
    assert!(n("atomics") > 0 && h["to_fit_check"].is_u64(), "{h}");
    let expected = format!(
        "hot path: {} of {} instructions, {} to the fit check, {} atomic(s), {} loop(s), {} stack \
         access(es), calls: none",
        n("instructions"),
        n("function_instructions"),
        n("to_fit_check"),
        n("atomics"),
        n("loops"),
        n("stack_accesses"),
    );
    let o = allocasm(&[
        "show",
        "packed_alloc_relaxed",
        "-p",
        "x86_64-linux",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("{expected}\n")),
        "{expected}\n{}",
        stdout(&o)
    );

    // Side by side: in every column, in lines that fit it.
    let o = allocasm(&[
        "show",
        "packed_alloc_relaxed",
        "-p",
        "x86_64-linux,aarch64-linux",
        "--side-by-side",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(
        text.matches("hot path: ").count(),
        2,
        "one per column: {text}"
    );
    let fit: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("to the fit check"))
        .collect();
    assert!(
        !fit.is_empty() && fit.iter().all(|l| !l.contains('…')),
        "cut: {fit:?}"
    );
    let _ = std::fs::remove_dir_all(out);
}

/// In a log (stderr not a terminal), each profile build prints one line
/// with its time, and the report's summary line comes last, after the
/// notes (here: a profile whose target rustup has no standard library for).
#[test]
#[cfg_attr(miri, ignore)]
fn a_log_shows_each_build_with_its_time_and_the_summary_last() {
    if Command::new("rustup").arg("--version").output().is_err() {
        return; // no rustup: no profile is "not available"
    }
    let targets = scratch("log-targets");
    let shipped = allocasm_suite::codegen::manifest_dir().join("targets");
    for f in ["suite.toml", "x86_64-linux.toml"] {
        std::fs::copy(shipped.join(f), targets.join(f)).expect("copy a profile");
    }
    std::fs::write(
        targets.join("l4re.toml"),
        "name = \"l4re\"\ntriple = \"x86_64-unknown-l4re-uclibc\"\nrun = \"none\"\n\
         description = \"a target without a rust-std\"\n",
    )
    .unwrap();
    let out = scratch("log-report");
    let o = Command::new("bash")
        .args([
            "-c",
            "\"$0\" \"$@\" 2>&1",
            env!("CARGO_BIN_EXE_allocasm"),
            "--targets-dir",
            targets.to_str().unwrap(),
            "report",
            "--no-linked",
            "--no-executed",
            "--no-install",
            "--format",
            "md",
            "--out",
            out.to_str().unwrap(),
        ])
        .env_remove("RUSTFLAGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run allocasm under bash");
    let log = stdout(&o);
    assert_eq!(code(&o), 0, "{log}");
    let built =
        regex::Regex::new(r"(?m)^built x86_64-linux \([^)]+\) in \d+\.\d s( \(up to date\))?$")
            .unwrap();
    assert!(built.is_match(&log), "{log}");
    let note = log
        .lines()
        .position(|l| l.starts_with("note: profile l4re"))
        .unwrap_or_else(|| panic!("the note on l4re: {log}"));
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = lines.last().expect("a line");
    assert!(
        last.contains(" probes × 2 profiles with "),
        "last: {last}\n{log}"
    );
    assert!(
        log.lines().position(|l| l == *last).unwrap() > note,
        "summary after the note: {log}"
    );
    // --quiet: none of it.
    let o = allocasm(&[
        "--targets-dir",
        targets.to_str().unwrap(),
        "show",
        "linear_alloc",
        "-p",
        "x86_64-linux",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("built "), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(targets);
    let _ = std::fs::remove_dir_all(out);
}

/// The heading a `--help` text puts `option` under.
fn heading_of<'a>(help: &'a str, option: &str) -> Option<&'a str> {
    let mut heading = None;
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            heading = Some(line);
        }
        if line.trim_start().starts_with(option) || line.contains(&format!(", {option}")) {
            return heading;
        }
    }
    None
}

#[test]
#[cfg_attr(miri, ignore)]
fn help_puts_the_global_options_under_their_own_heading() {
    for args in [&["--help"][..], &["show", "--help"], &["check", "-h"]] {
        let o = allocasm(args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let help = stdout(&o);
        for global in [
            "--color",
            "--quiet",
            "--verbose",
            "--targets-dir",
            "--manifest-path",
        ] {
            assert_eq!(
                heading_of(&help, global),
                Some("Global options:"),
                "{global} in allocasm {args:?}:\n{help}"
            );
        }
        if args[0] != "--help" {
            assert_eq!(
                heading_of(&help, "--profile"),
                Some("Options:"),
                "the command's own in allocasm {args:?}:\n{help}"
            );
        }
    }
}
