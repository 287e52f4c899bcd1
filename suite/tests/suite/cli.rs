//! The `allocasm` binary, run as a user runs it: the README's command
//! reference against `--help`, errors and exit codes, and (on the warm asm
//! builds the codegen tests share) show, check, report and diff.
//!
//! Skipped under Miri (they spawn processes).

use std::path::PathBuf;
use std::process::{Command, Output};

use allocasm::probes::PROBES;

use crate::need::{Arch, Tool, executed_tools, linked_tools, need};

/// Runs the binary (shared by the other command-line test modules).
pub(crate) fn allocasm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allocasm"))
        .args(args)
        .env_remove("RUSTFLAGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run the allocasm binary")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

/// A fresh directory under the crate's `target/`.
fn scratch(name: &str) -> PathBuf {
    scratch_dir("cli", name)
}

/// A fresh directory `target/tmp/<module>-<name>-<pid>` (each test module
/// its own `module`, so their names never meet).
pub(crate) fn scratch_dir(module: &str, name: &str) -> PathBuf {
    let dir = allocasm_suite::codegen::manifest_dir()
        .join("target")
        .join("tmp")
        .join(format!("{module}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The help text as docs/cli.md holds it (see `help-markdown`).
fn tidy(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The subcommands `allocasm --help` lists (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

fn reference_section() -> String {
    let readme =
        std::fs::read_to_string(allocasm_suite::codegen::manifest_dir().join("docs/cli.md"))
            .expect("read docs/cli.md");
    let start = "<!-- cli-reference:start -->\n";
    let a = readme
        .find(start)
        .expect("docs/cli.md has the start marker")
        + start.len();
    let b = readme
        .find("<!-- cli-reference:end -->")
        .expect("docs/cli.md has the end marker");
    readme[a..b].to_string()
}

#[test]
#[cfg_attr(miri, ignore)]
fn cli_reference_matches_help() {
    let section = reference_section();
    let top = allocasm(&["--help"]);
    assert_eq!(code(&top), 0);
    let commands = subcommands(&stdout(&top));
    for expected in [
        "list",
        "show",
        "check",
        "report",
        "diff",
        "verify-extractor",
    ] {
        assert!(
            commands.iter().any(|c| c == expected),
            "{expected} missing from --help: {commands:?}"
        );
    }
    let fix = "run `cargo run -- help-markdown --update docs/cli.md`";
    let block =
        |title: &str, help: &str| format!("### `{title}`\n\n```text\n{}\n```\n", tidy(help));
    assert!(
        section.contains(&block("allocasm --help", &stdout(&top))),
        "docs/cli.md's `allocasm --help` differs from the binary's; {fix}"
    );
    for c in &commands {
        let o = allocasm(&[c, "--help"]);
        assert_eq!(code(&o), 0, "{c} --help");
        assert!(
            section.contains(&block(&format!("allocasm {c} --help"), &stdout(&o))),
            "docs/cli.md's `allocasm {c} --help` differs from the binary's; {fix}"
        );
    }
    let documented = section.matches("### `allocasm ").count();
    assert_eq!(
        documented,
        commands.len() + 1,
        "docs/cli.md documents a command --help does not list; {fix}"
    );
    // And the generator writes exactly this section.
    let generated = allocasm(&["help-markdown"]);
    assert_eq!(stdout(&generated), section, "{fix}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn list_names_every_probe_and_profile() {
    let o = allocasm(&["list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for p in PROBES {
        assert!(out.contains(p.name), "{} missing from list", p.name);
    }
    for p in allocasm_suite::codegen::load_profiles().expect("profiles") {
        assert!(
            out.contains(&p.name),
            "profile {} missing from list",
            p.name
        );
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn unknown_probe_and_profile_suggest_the_nearest() {
    let o = allocasm(&["show", "probe_linear_aloc"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("unknown probe `probe_linear_aloc`"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("`probe_linear_alloc`"),
        "{}",
        stderr(&o)
    );

    let o = allocasm(&["check", "--profile", "x86-64-linux"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean `x86_64-linux`"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn usage_errors_exit_2() {
    let o = allocasm(&["report", "--format", "pdf"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = allocasm(&["frobnicate"]);
    assert_eq!(code(&o), 2);
    let o = allocasm(&["diff", "--from", "1.95.0"]);
    assert_eq!(code(&o), 2, "--to is required");
}

#[test]
#[cfg_attr(miri, ignore)]
fn malformed_profile_names_file_line_and_column() {
    let dir = scratch("bad-profile");
    std::fs::write(
        dir.join("broken.toml"),
        "name = \"broken\"\ntriple = \"x86_64-unknown-linux-gnu\"\nrun = 3\ndescription = \"d\"\n",
    )
    .unwrap();
    let o = allocasm(&["--targets-dir", dir.to_str().unwrap(), "list"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("broken.toml:3:7"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(miri, ignore)]
fn missing_toolchain_is_an_environment_error_with_the_fix() {
    if Command::new("rustup").arg("--version").output().is_err() {
        return; // no rustup: toolchains cannot be named
    }
    let o = allocasm(&[
        "check",
        "--toolchain",
        "0.0.1-not-installed",
        "-p",
        "x86_64-linux",
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("rustup toolchain install 0.0.1-not-installed"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn show_takes_any_function_of_the_build() {
    let o = allocasm(&["show", "Rewindable::alloc_slow", "-p", "x86_64-linux"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("allocasm::unity::rewindable::Rewindable::alloc_slow:\n"),
        "{out}"
    );
    assert!(out.contains("hot path: "), "{out}");

    // A part of several paths: each numbered, how to pick one, exit 2.
    let o = allocasm(&["show", "alloc_slow", "-p", "x86_64-linux"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("alloc_slow#N"), "{err}");
    assert!(
        err.contains("PackedArena::alloc_slow") && err.contains("Rewindable::alloc_slow"),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let o = allocasm(&["show", "alloc_slow#4", "-p", "x86_64-linux"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let o = allocasm(&["list", "--functions", "alloc_slow", "-p", "x86_64-linux"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("#1 ") && out.contains(" instr  "), "{out}");

    // --follow: the tail call to the cold walk is named, not followed.
    let o = allocasm(&["show", "freelist_alloc", "-p", "x86_64-linux", "--follow"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "probe_freelist_alloc → allocasm::free_list::FreeList::walk_granule: the call is \
             cold (only in cold blocks), not followed"
        ),
        "{out}"
    );
    assert!(out.contains("followed hot path (1 function(s)"), "{out}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn show_prints_the_normalized_and_raw_listing() {
    let o = allocasm(&["show", "pool_alloc", "-p", "x86_64-linux", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("profile x86_64-linux"), "{out}");
    assert!(out.contains("probe_pool_alloc:\n"), "{out}");
    assert!(out.contains("\n  ret\n"), "{out}");

    let o = allocasm(&[
        "show",
        "pool_alloc",
        "-p",
        "x86_64-linux",
        "--raw",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\tret"),
        "raw keeps the compiler's tabs: {}",
        stdout(&o)
    );

    let o = allocasm(&[
        "show",
        "pool_alloc",
        "-p",
        "x86_64-linux,aarch64-linux",
        "--side-by-side",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let header = out
        .lines()
        .find(|l| l.contains("x86_64-linux"))
        .expect("header row");
    assert!(
        header.contains(" │ ") && header.contains("aarch64-linux"),
        "{out}"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn show_linked_prints_the_linked_listings() {
    if !need(
        "show_linked_prints_the_linked_listings",
        &linked_tools(Arch::X86_64),
    ) {
        return;
    }
    let o = allocasm(&[
        "show",
        "thread_cursor_alloc",
        "-p",
        "x86_64-linux",
        "--linked",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let release = out
        .find("linked, release profile (no LTO)")
        .unwrap_or_else(|| panic!("no linked release header: {out}"));
    let lto = out
        .find("linked, release profile with lto = \"fat\"")
        .unwrap_or_else(|| panic!("no linked LTO header: {out}"));
    assert!(
        out.find("@GOTTPOFF").is_some_and(|s| s < release),
        ".s first: {out}"
    );
    assert!(
        release < lto && out[release..].contains("fs:[0]"),
        "the linker's local-exec access: {out}"
    );

    let o = allocasm(&[
        "show",
        "thread_cursor_alloc",
        "-p",
        "x86_64-linux",
        "--linked",
        "--side-by-side",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let header = out
        .lines()
        .find(|l| l.starts_with("x86_64-linux"))
        .unwrap_or("");
    assert!(
        header.contains("│ x86_64-linux linked, release")
            && header.contains("│ x86_64-linux linked, fat LTO"),
        "{out}"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_missing_disassembler_is_shown_in_the_report_with_a_warning() {
    // `rustup component add llvm-tools` (the toolchain's llvm-objdump).
    let install = Tool::Disassembler(Arch::X86_64).install();
    // x86_64-linux as it is (same name: its warm builds are reused), with a
    // disassembler that does not exist.
    let dir = scratch("no-objdump");
    let profile = std::fs::read_to_string(
        allocasm_suite::codegen::manifest_dir().join("targets/x86_64-linux.toml"),
    )
    .unwrap();
    assert!(
        profile.contains("\n[linked]\n"),
        "x86_64-linux has a linked view"
    );
    std::fs::write(
        dir.join("x86_64-linux.toml"),
        profile.replace(
            "\n[linked]\n",
            "\n[linked]\nobjdump = \"allocasm-no-such-objdump\"\n",
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let targets = dir.to_str().unwrap();
    let o = allocasm(&[
        "--targets-dir",
        targets,
        "report",
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json,md",
        "--quiet",
    ]);
    // The .s report is the command's job: the missing linked view is a
    // warning naming the fix, and the report still exits 0.
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("allocasm-no-such-objdump")
            && stderr(&o).contains("warning:")
            && stderr(&o).contains("scripts/setup")
            && stderr(&o).contains("the linked views of x86_64-linux need")
            && stderr(&o).contains(&format!("`{install}`")),
        "{}",
        stderr(&o)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        json["profiles"][0]["status"], "built",
        "the .s view is there"
    );
    assert_eq!(json["profiles"][0]["linked"]["release"]["status"], "failed");
    let view = &json["probes"][0]["results"][0]["linked"]["lto"];
    assert_eq!(view["status"], "not-built", "{view}");
    let why = view["error"].as_str().unwrap();
    assert!(
        why.contains("allocasm-no-such-objdump") && why.contains(&format!("`{install}`")),
        "the reason, with the fix: {why}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("linked, fat LTO: **not built**"), "{md}");
    // The probe driver is disassembled with the same objdump: the executed
    // counts say why they are missing, with the fix, and llvm-mca (which
    // reads the `.s` hot path) still predicts.
    let first = &json["probes"][0]["results"][0];
    let why = first["executed_reason"].as_str().unwrap();
    assert!(first["executed"].is_null(), "{first}");
    if allocasm_suite::tools::find(&Tool::Qemu(Arch::X86_64)).is_ok() {
        assert!(
            why.starts_with("not measured: the probe driver did not build")
                && why.contains("allocasm-no-such-objdump"),
            "{first}"
        );
    } else {
        // Without qemu-user the missing runner is the reason, with its
        // install line: still a line of the report, not a failure.
        let install = Tool::Qemu(Arch::X86_64).install();
        assert!(
            why.contains("qemu-x86_64 not found") && why.contains(&install),
            "{first}"
        );
    }
    if need(
        "a_missing_disassembler_is_shown_in_the_report_with_a_warning (its mca part)",
        &[Tool::LlvmMca],
    ) {
        assert!(
            first["mca"].as_array().is_some_and(|m| m.len() == 2),
            "{first}"
        );
    }

    // --no-linked: no linked view, nothing failed.
    let o = allocasm(&[
        "--targets-dir",
        targets,
        "report",
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
        "--no-linked",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["linked_views"], false);
    assert!(json["profiles"][0]["linked"].is_null());
    assert!(json["probes"][0]["results"][0]["linked"].is_null());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(miri, ignore)]
fn check_exit_code_follows_its_failure_lines() {
    let o = allocasm(&["check", "-p", "x86_64-linux", "--quiet"]);
    let out = stdout(&o);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
    for f in &fails {
        assert!(
            f.contains(" on profile x86_64-linux: "),
            "names probe and profile: {f}"
        );
        assert!(
            PROBES
                .iter()
                .any(|p| f.starts_with(&format!("FAIL {} ", p.name))),
            "{f}"
        );
    }
    assert_eq!(
        code(&o),
        if fails.is_empty() { 0 } else { 1 },
        "{out}{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn report_writes_markdown_json_and_self_contained_html() {
    let mut tools = linked_tools(Arch::X86_64);
    tools.extend(linked_tools(Arch::Aarch64));
    if !need(
        "report_writes_markdown_json_and_self_contained_html",
        &tools,
    ) {
        return;
    }
    let dir = scratch("report");
    let o = allocasm(&[
        "report",
        "--out",
        dir.to_str().unwrap(),
        "-p",
        "x86_64-linux,aarch64-linux",
        "--format",
        "md,json,html,text",
        "--no-executed",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "allocasm-report/1");
    // --no-executed: nothing measured, and every listing says why.
    let first = &json["probes"][0]["results"][0];
    assert!(
        first["executed"].is_null() && first["mca"].is_null(),
        "{first}"
    );
    assert_eq!(first["executed_reason"], "not measured (--no-executed)");
    assert_eq!(json["executed"]["table"]["columns"], serde_json::json!([]));
    assert!(
        json["compiler"]["llvm"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    assert_eq!(json["profiles"].as_array().unwrap().len(), 2);
    let probes = json["probes"].as_array().unwrap();
    assert_eq!(probes.len(), PROBES.len());
    for p in probes {
        for r in p["results"].as_array().unwrap() {
            let status = r["status"].as_str().unwrap();
            assert!(["found", "missing"].contains(&status), "{status}");
            if status == "found" {
                assert!(r["summary"]["instructions"].as_u64().unwrap() > 0);
                assert!(r["lines"].as_array().is_some_and(|l| !l.is_empty()));
            } else {
                assert_eq!(r["passed"], false, "a missing probe fails");
            }
        }
    }

    // The cross-profile summary: `.s` columns, then both linked views of
    // both profiles; cells carry the marks.
    assert_eq!(json["linked_views"], true);
    let columns: Vec<String> = json["summary"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["profile"].as_str().unwrap(),
                c["view"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            "aarch64-linux/asm",
            "x86_64-linux/asm",
            "aarch64-linux/release",
            "aarch64-linux/lto",
            "x86_64-linux/release",
            "x86_64-linux/lto"
        ]
    );
    let rows = json["summary"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), PROBES.len());
    let row = |probe: &str| {
        rows.iter()
            .find(|r| r["probe"] == probe)
            .unwrap_or_else(|| panic!("{probe} has no summary row"))["cells"]
            .as_array()
            .unwrap()
            .clone()
    };
    // A concurrent probe: atomics on every view; the x86 `.s` cell's text
    // is its count and marks.
    for (i, c) in row("probe_packed_alloc_relaxed").iter().enumerate() {
        assert_eq!(c["status"], "found", "{}", columns[i]);
        assert_eq!(c["atomic"], true, "{}", columns[i]);
    }
    let x86 = &row("probe_packed_alloc_relaxed")[1];
    let n = x86["instructions"].as_u64().unwrap();
    assert!(
        x86["text"].as_str().unwrap().starts_with(&format!("{n} A")),
        "{x86}"
    );
    assert!(x86["passed"].is_boolean() && row("probe_packed_alloc_relaxed")[2]["passed"].is_null());
    // A single-threaded probe: no mark at all, in every view.
    for c in row("probe_pool_alloc") {
        assert_eq!(c["text"], c["instructions"].as_u64().unwrap().to_string());
    }

    // The linked view of each probe on both profiles.
    let x86_profile = &json["profiles"][1];
    assert_eq!(x86_profile["name"], "x86_64-linux");
    assert_eq!(
        x86_profile["linked"]["lto"]["status"], "built",
        "{x86_profile}"
    );
    let cursor = probes
        .iter()
        .find(|p| p["name"] == "probe_thread_cursor_alloc")
        .unwrap();
    for r in cursor["results"].as_array().unwrap() {
        for view in ["release", "lto"] {
            let v = &r["linked"][view];
            assert_eq!(v["status"], "found", "{} {view}: {v}", r["profile"]);
            assert!(v["summary"]["instructions"].as_u64().unwrap() > 0);
        }
    }
    // What the linker did: x86's initial-exec TLS access became local-exec.
    let x86_cursor = &cursor["results"][1];
    assert_eq!(x86_cursor["tls"]["model"], "initial-exec", "{x86_cursor}");
    assert_eq!(
        x86_cursor["linked"]["release"]["tls"]["model"],
        "local-exec"
    );
    // arm64 too, though objdump spells `tpidr_el0` in lower case.
    let arm_cursor = &cursor["results"][0];
    assert_eq!(arm_cursor["linked"]["lto"]["tls"]["model"], "local-exec");

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<style>"));
    for external in ["http://", "https://", "<link", "src="] {
        assert!(
            !html.contains(external),
            "HTML is not self-contained: {external}"
        );
    }
    assert_eq!(html.matches("<script").count(), 1, "one inline script");
    // Profiles side by side: one column per profile in each probe's section.
    assert!(
        html.contains("<div class=\"col passed\" data-profile=\"x86_64-linux\">")
            && html.contains("data-profile=\"aarch64-linux\">"),
        "profiles side by side"
    );
    // html: the summary with its marks and legend, and per probe the `.s`,
    // linked release and linked fat-LTO listings in three columns.
    assert!(
        html.contains("<table class=\"summary\" id=\"summary-table\">"),
        "summary table"
    );
    assert!(
        html.contains("<span class=\"mk a\" title=\"atomic instruction\">A</span>"),
        "atomic mark"
    );
    assert!(html.contains("<th class=\"n\">x86_64-<wbr>linux linked+LTO</th>"));
    assert!(
        html.contains("<div class=\"cols linked\" data-profile=\"x86_64-linux\">"),
        "linked columns"
    );
    for view in [
        "· .s (compiler)</span>",
        "· linked, release</span>",
        "· linked, fat LTO</span>",
    ] {
        assert!(html.contains(view), "{view} missing from the HTML");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("LLVM") && md.contains("| `x86_64-linux` |"),
        "{md}"
    );
    // md: the cross-profile table with marks from the hot path (packed on
    // x86_64-linux: an atomic, no call: the cold slow-path call is off the
    // hot path; the whole function's count in parentheses), the legend, the
    // linked table, the linked blocks.
    let packed = md
        .lines()
        .find(|l| l.starts_with("| [`probe_packed_alloc_relaxed`]"))
        .expect("summary row");
    let x86 = packed.split(" | ").nth(2).expect("the x86_64-linux cell");
    assert!(x86.contains(" A (") && !x86.contains(" C"), "{packed}");
    assert!(md.contains("**A** atomic instruction"), "legend");
    assert!(
        md.contains("| `x86_64-linux linked` | `x86_64-linux linked+LTO` |"),
        "linked table"
    );
    assert!(
        md.contains(".s (compiler)")
            && md.contains("│ linked, release")
            && md.contains("│ linked, fat LTO"),
        "linked listings side by side"
    );
    assert!(dir.join("report.txt").exists());
    let _ = std::fs::remove_dir_all(dir);
}

/// What the CPU executes, in the report: on the Linux executable profiles
/// every listing carries `executed` (instructions per call, helpers apart)
/// and `mca` (one prediction per CPU model) beside `hot_path`, the
/// cross-profile table has a cell per probe and profile, and a non-Linux
/// profile says why it was not measured.
#[test]
#[cfg_attr(miri, ignore)]
fn report_json_carries_executed_and_mca_on_linux_profiles_and_a_reason_elsewhere() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return; // the drivers are cross-built with Debian's x86_64 tools
    }
    let mut tools = executed_tools(Arch::X86_64);
    tools.extend(executed_tools(Arch::Aarch64));
    tools.push(Tool::LlvmMca);
    if !need(
        "report_json_carries_executed_and_mca_on_linux_profiles_and_a_reason_elsewhere",
        &tools,
    ) {
        return;
    }
    let dir = scratch("executed");
    let o = allocasm(&[
        "report",
        "--out",
        dir.to_str().unwrap(),
        "-p",
        "x86_64-linux,aarch64-linux,aarch64-apple",
        "--no-linked",
        "--format",
        "json,md,html",
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let cpus = |profile: &str| -> Vec<&str> {
        match profile {
            "x86_64-linux" => vec!["znver4", "alderlake"],
            _ => vec!["neoverse-v2", "apple-m4"],
        }
    };
    let mut measured = 0;
    for p in json["probes"].as_array().unwrap() {
        for r in p["results"].as_array().unwrap() {
            let at = format!("{} on {}", p["name"], r["profile"]);
            match r["profile"].as_str().unwrap() {
                "aarch64-apple" => {
                    assert!(r["executed"].is_null() && r["mca"].is_null(), "{at}: {r}");
                    assert_eq!(
                        r["executed_reason"], "not measured (not a Linux executable profile)",
                        "{at}"
                    );
                    assert_eq!(
                        r["mca_reason"], "not predicted (not a Linux executable profile)",
                        "{at}"
                    );
                }
                linux => {
                    let e = &r["executed"];
                    assert!(r["executed_reason"].is_null(), "{at}: {r}");
                    let n = e["instructions"].as_u64().unwrap();
                    assert!(n > 0, "{at}: {e}");
                    assert_eq!(
                        n,
                        e["in_probe"].as_u64().unwrap()
                            + e["helper_instructions"].as_u64().unwrap(),
                        "{at}: {e}"
                    );
                    assert!(r["mca_reason"].is_null(), "{at}: {r}");
                    let ms = r["mca"].as_array().unwrap();
                    let names: Vec<&str> = ms.iter().map(|m| m["cpu"].as_str().unwrap()).collect();
                    assert_eq!(names, cpus(linux), "{at}");
                    for m in ms {
                        assert!(m["block_rthroughput"].as_f64().unwrap() > 0.0, "{at}: {m}");
                        assert!(!m["bottleneck"].as_str().unwrap().is_empty(), "{at}: {m}");
                        assert_eq!(m["indicative"], m["cpu"] == "apple-m4", "{at}: {m}");
                    }
                    measured += 1;
                }
            }
        }
    }
    assert_eq!(measured, 2 * PROBES.len());
    // The measured price of default aarch64: the relaxed add runs in
    // `__aarch64_ldadd8_relax`, whose instructions are shown apart.
    let packed = json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "probe_packed_alloc_relaxed")
        .unwrap();
    let arm = packed["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["profile"] == "aarch64-linux")
        .unwrap();
    assert!(
        arm["executed"]["helpers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["function"] == "__aarch64_ldadd8_relax"
                && h["instructions"].as_u64().unwrap() > 0),
        "{}",
        arm["executed"]
    );
    // The section: why each profile was or was not measured, and the
    // table with one cell per probe and measured profile.
    let section = &json["executed"];
    let status: Vec<(String, String)> = section["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["profile"].as_str().unwrap().to_string(),
                p["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("aarch64-apple".to_string(), "not-measured".to_string()),
            ("aarch64-linux".to_string(), "measured".to_string()),
            ("x86_64-linux".to_string(), "measured".to_string())
        ]
    );
    assert_eq!(
        section["table"]["columns"],
        serde_json::json!(["aarch64-linux", "x86_64-linux"])
    );
    let rows = section["table"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), PROBES.len());
    for row in rows {
        for c in row["cells"].as_array().unwrap() {
            let text = format!(
                "{} / {}",
                c["hot_path"].as_u64().unwrap(),
                c["executed"].as_u64().unwrap()
            );
            assert!(c["text"].as_str().unwrap().starts_with(&text), "{c}");
            assert_eq!(c["mca"].as_array().unwrap().len(), 2, "{c}");
        }
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## What the CPU executes")
            && md.contains("-singlestep -d exec,nochain")
            && md.contains("callgrind")
            && md.contains("Cyclone")
            && md.contains("- `aarch64-apple`: not measured (not a Linux executable profile)")
            && md.contains("| `aarch64-linux` (neoverse-v2·apple-m4*) |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"executed\">What the CPU executes</h2>")
            && html.contains("<table class=\"summary executed\">"),
        "the HTML's section"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The toolchain `rust-toolchain.toml` pins.
fn pinned() -> String {
    let text = std::fs::read_to_string(
        allocasm_suite::codegen::manifest_dir().join("rust-toolchain.toml"),
    )
    .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("channel = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("a pinned channel")
        .to_string()
}

#[test]
#[cfg_attr(miri, ignore)]
fn diff_of_a_toolchain_with_itself_is_unchanged() {
    let pin = pinned();
    let o = allocasm(&[
        "diff",
        "--from",
        &pin,
        "--to",
        &pin,
        "-p",
        "x86_64-linux",
        "--fail-on-change",
        "--quiet",
    ]);
    if stderr(&o).contains("is not installed") {
        return; // a machine without the pinned toolchain under that name
    }
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "{} unchanged, 0 changed (0 on the hot path), 0 regression(s)",
            PROBES.len()
        )),
        "{out}"
    );
    // The summary table: every probe, one profile column, all unchanged.
    assert!(
        out.contains("hot path, instructions (= unchanged)"),
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("probe_linear_alloc "))
        .expect("a summary row");
    assert!(row.trim_end().ends_with('='), "{row}");
}

/// A profile whose target the `--to` toolchain has no rust-std for is "not
/// available" (said, and not an error), and the JSON says so per profile.
#[test]
#[cfg_attr(miri, ignore)]
fn diff_says_not_available_for_a_target_the_toolchain_lacks() {
    let pin = pinned();
    let o = allocasm(&[
        "--color",
        "never",
        "diff",
        "--from",
        "1.95.0",
        "--to",
        &pin,
        "-p",
        "riscv64-linux",
        "--format",
        "json",
    ]);
    let err = stderr(&o);
    if err.contains("is not installed") || !err.contains("not available") {
        // A machine whose rustup has riscv64 std for the pin (upstream) or
        // lacks 1.95.0: nothing to show here.
        eprintln!("skipped: {err}");
        return;
    }
    assert_eq!(code(&o), 0, "not available is not a failure: {err}");
    assert!(
        err.contains(&format!(
            "not available for {pin}: rustup has no rust-std for riscv64gc-unknown-linux-gnu"
        )),
        "{err}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(json["schema"], "allocasm-diff/1");
    assert_eq!(json["profiles"][0]["status"], "not-available");
    assert_eq!(json["totals"]["not_available"], 1);
}

#[test]
#[cfg_attr(miri, ignore)]
fn missing_rustup_target_names_the_command_and_install_flag() {
    let rustup = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    let Ok(installed) = rustup else {
        return; // no rustup
    };
    // A target this machine lacks and the channel offers (checked, not
    // assumed).
    let triple = "aarch64-unknown-linux-musl";
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == triple)
    {
        return;
    }
    let dir = scratch("missing-target");
    std::fs::write(
        dir.join("musl.toml"),
        format!("name = \"musl\"\ntriple = \"{triple}\"\ndescription = \"d\"\nrun = \"none\"\n"),
    )
    .unwrap();
    let o = allocasm(&["--targets-dir", dir.to_str().unwrap(), "check"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("rustup target add {triple}")),
        "{err}"
    );
    assert!(err.contains("--install"), "{err}");
    // A target the channel has no rust-std for: said, and not a failure.
    std::fs::remove_file(dir.join("musl.toml")).unwrap();
    std::fs::write(
        dir.join("none.toml"),
        "name = \"none\"\ntriple = \"riscv64-nonexistent-none\"\ndescription = \"d\"\nrun = \"none\"\n",
    )
    .unwrap();
    let o = allocasm(&["--targets-dir", dir.to_str().unwrap(), "check", "--install"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("rustup has no rust-std for riscv64-nonexistent-none"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("1 profile(s) not available"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `allocasm ... | head` closes the pipe before the command has written
/// everything: it must exit quietly (status 0, no panic message), not panic on
/// the broken pipe. The read end is closed before the child's first write.
#[cfg(unix)]
#[test]
fn a_closed_stdout_pipe_ends_the_command_quietly() {
    use std::process::Stdio;
    for args in [&["list"][..], &["help", "report"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_allocasm"))
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the allocasm binary");
        drop(child.stdout.take()); // the reader is gone before anything is written
        let out = child.wait_with_output().expect("wait for allocasm");
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "allocasm {args:?} with a closed stdout: {err}"
        );
        assert_eq!(out.status.code(), Some(0), "allocasm {args:?}: {err}");
    }
}

/// The two toolchains `history` is tried with: the pinned one and the
/// newest release this suite has been checked against.
const HISTORY_TOOLCHAINS: [&str; 2] = ["1.95.0", "1.99.1"];

/// `history` over two installed toolchains on x86_64-linux: one row per
/// probe, one column per toolchain, each cell the hot path's count, a cell
/// marked exactly where it differs from its left neighbour; the text table
/// shows the same counts and marks.
#[test]
#[cfg_attr(miri, ignore)]
fn history_tabulates_each_probe_under_each_toolchain() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("skipped: history is checked on an x86_64 Linux host only");
        return;
    }
    let list = Command::new("rustup").args(["toolchain", "list"]).output();
    let Ok(list) = list else {
        eprintln!("skipped: no rustup");
        return;
    };
    let list = String::from_utf8_lossy(&list.stdout);
    for tc in HISTORY_TOOLCHAINS {
        if !list.lines().any(|l| l.starts_with(&format!("{tc}-"))) {
            eprintln!(
                "skipped: toolchain {tc} is not installed (`rustup toolchain install {tc} \
                 --profile minimal` enables this test)"
            );
            return;
        }
    }
    let toolchains = HISTORY_TOOLCHAINS.join(",");
    let args = [
        "history",
        "--toolchains",
        &toolchains,
        "-p",
        "x86_64-linux",
        "--quiet",
    ];
    let o = allocasm(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("history JSON");
    assert_eq!(v["schema"], "allocasm-history/1");
    let tcs = v["toolchains"].as_array().unwrap();
    assert_eq!(tcs.len(), 2);
    for (t, name) in tcs.iter().zip(HISTORY_TOOLCHAINS) {
        assert_eq!(t["toolchain"], name);
        assert!(
            t["release"]
                .as_str()
                .unwrap()
                .starts_with(&format!("rustc {name} ")),
            "{t}"
        );
        assert_ne!(t["llvm"], "unknown");
    }
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 1);
    let p = &profiles[0];
    assert_eq!(p["name"], "x86_64-linux");
    assert!(
        p["columns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "built")
    );
    let rows = p["rows"].as_array().unwrap();
    assert_eq!(rows.len(), PROBES.len());
    let text = stdout(&allocasm(&args));
    for (row, probe) in rows.iter().zip(PROBES) {
        assert_eq!(row["probe"], probe.name);
        let cells = row["cells"].as_array().unwrap();
        let n: Vec<u64> = cells
            .iter()
            .map(|c| {
                c["instructions"]
                    .as_u64()
                    .expect("every probe found on x86_64-linux")
            })
            .collect();
        assert!(n.iter().all(|&n| n > 0), "{row}");
        assert_eq!(cells[0]["changed"], false, "{row}");
        assert_eq!(cells[1]["changed"], n[0] != n[1], "{row}");
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(probe.name))
            .unwrap_or_else(|| panic!("no row for {} in\n{text}", probe.name));
        let mark = if n[0] != n[1] { "*" } else { "" };
        assert_eq!(
            line.split_whitespace().skip(1).collect::<Vec<_>>(),
            [n[0].to_string(), format!("{}{mark}", n[1])],
            "{text}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn history_and_bisect_name_the_install_line_of_a_missing_toolchain() {
    if Command::new("rustup").arg("--version").output().is_err() {
        return; // no rustup: toolchains cannot be named
    }
    let o = allocasm(&[
        "history",
        "--toolchains",
        "0.0.1-not-installed,0.0.2-not-installed",
        "-p",
        "x86_64-linux",
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "rustup toolchain install 0.0.1-not-installed --profile minimal && rustup toolchain \
             install 0.0.2-not-installed --profile minimal"
        ) && err.contains("--install"),
        "{err}"
    );
    let o = allocasm(&[
        "bisect",
        "segregated_alloc",
        "-p",
        "x86_64-linux",
        "--good",
        "0.0.1-not-installed",
        "--bad",
        "1.99.1",
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("rustup toolchain install 0.0.1-not-installed --profile minimal")
            && err.contains("--install"),
        "{err}"
    );
}

/// `diff --install` installs a missing toolchain as `history --install`
/// does: one `rustup toolchain install` call, here to a stand-in rustup on
/// the PATH that knows only 1.99.1 and fails every install (no network, no
/// real toolchain touched); the failure is an environment error naming it.
#[test]
#[cfg_attr(miri, ignore)]
#[cfg(unix)]
fn diff_install_installs_a_missing_toolchain() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("diff-install");
    let log = dir.join("log");
    let rustup = dir.join("rustup");
    std::fs::write(
        &rustup,
        format!(
            r#"#!/bin/sh
echo "$*" >> '{log}'
case "$1 $2" in
  "--version ") echo "rustup 1.28.2" ;;
  "toolchain list") echo "1.99.1-x86_64-unknown-linux-gnu (default)" ;;
  "toolchain install") echo "error: no release found for '$3'" >&2; exit 1 ;;
  *) echo "stand-in rustup: unexpected call: $*" >&2; exit 2 ;;
esac
"#,
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&rustup, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(dir.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_allocasm"))
        .args(["diff", "--from", "0.0.1-not-installed", "--to", "1.99.1"])
        .args(["-p", "x86_64-linux", "--install"])
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        calls
            .lines()
            .any(|l| l == "toolchain install 0.0.1-not-installed --profile minimal"),
        "{calls}\n{}",
        stderr(&o)
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no release found for '0.0.1-not-installed'"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn bisect_rejects_bad_input_with_usage_errors() {
    let base = ["bisect", "-p", "x86_64-linux", "--good", "1.95.0"];
    let o = allocasm(&[&base[..], &["segregated_alloc", "--bad", "1.95.0"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("the same toolchain"), "{}", stderr(&o));
    let o = allocasm(&[&base[..], &["segregated_aloc", "--bad", "1.99.1"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`probe_segregated_alloc`"),
        "{}",
        stderr(&o)
    );
    let o = allocasm(&[&base[..], &["segregated_alloc", "--bad", "nightly-2026-6"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("nightly-YYYY-MM-DD"), "{}", stderr(&o));
    let o = allocasm(&[
        "bisect",
        "segregated_alloc",
        "-p",
        "x86_64-linx",
        "--good",
        "1.95.0",
        "--bad",
        "1.99.1",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("`x86_64-linux`"), "{}", stderr(&o));
}

/// Good and bad naming one toolchain twice (its short and its full name)
/// build the same listing: nothing to bisect, exit 1, on the warm build the
/// other tests share.
#[test]
#[cfg_attr(miri, ignore)]
fn bisect_of_a_toolchain_with_itself_has_nothing_to_bisect() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("skipped: checked on an x86_64 Linux host only");
        return;
    }
    let o = allocasm(&[
        "bisect",
        "segregated_alloc",
        "-p",
        "x86_64-linux",
        "--good",
        "1.95.0",
        "--bad",
        "1.95.0-x86_64-unknown-linux-gnu",
    ]);
    if stderr(&o).contains("is not installed") {
        eprintln!("skipped: toolchain 1.95.0 is not installed");
        return;
    }
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("the hot path is the same under 1.95.0 and 1.95.0-x86_64-unknown-linux-gnu"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("[2/2] 1.95.0-x86_64-unknown-linux-gnu: "),
        "{}",
        stderr(&o)
    );
}

/// A warm report reads the executed counts and llvm-mca's predictions from
/// the cache instead of running qemu again, and reports the same figures;
/// `--no-cache` measures again.
#[test]
#[cfg_attr(miri, ignore)]
fn a_warm_report_reads_its_measurements_from_the_cache() {
    let mut tools = executed_tools(Arch::X86_64);
    tools.push(Tool::LlvmMca);
    if !need(
        "a_warm_report_reads_its_measurements_from_the_cache",
        &tools,
    ) {
        return;
    }
    let report = |out: &str, extra: &[&str]| {
        let dir = scratch(out);
        let mut args = vec![
            "report",
            "--out",
            dir.to_str().unwrap(),
            "-p",
            "x86_64-linux",
            "--no-linked",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = allocasm(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        (stderr(&o), json)
    };
    let measured = |j: &serde_json::Value| j["executed"].to_string();
    // The first run fills the cache (or finds it filled).
    let (_, first) = report("cache-first", &[]);
    let (log, warm) = report("cache-warm", &[]);
    assert!(
        log.contains("measured x86_64-linux in")
            && log.contains("(executed counts from the cache)"),
        "{log}"
    );
    assert_eq!(measured(&first), measured(&warm));
    assert!(
        measured(&warm).contains("probe_linear_alloc"),
        "the report has executed counts: {}",
        measured(&warm)
    );
    let (log, again) = report("cache-again", &["--no-cache"]);
    assert!(
        log.contains("measured x86_64-linux in") && !log.contains("from the cache"),
        "{log}"
    );
    assert_eq!(measured(&again), measured(&warm));
}

/// `doctor` lists the disassemblers, llvm-mca and qemu-user, each found or
/// missing with its install line, and exits 1 exactly when a tool that a
/// view of this host needs is missing.
#[test]
#[cfg_attr(miri, ignore)]
fn doctor_lists_every_tool_with_its_install_line() {
    let o = allocasm(&["doctor"]);
    let out = stdout(&o);
    let mut view_missing = false;
    for tool in [
        Tool::LlvmObjdump,
        Tool::Disassembler(Arch::X86_64),
        Tool::LlvmMca,
        Tool::Qemu(Arch::Aarch64),
        Tool::CrossGcc(Arch::Riscv64),
        Tool::Browser,
    ] {
        let name = tool.name();
        let row = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("no row for {name}:\n{out}"));
        let found = allocasm_suite::tools::find(&tool).is_ok();
        assert_eq!(row.contains(" found"), found, "{row}");
        assert_eq!(row.contains(" missing"), !found, "{row}");
        if row.contains("missing (view)") {
            view_missing = true;
        }
        assert!(
            out.contains(&format!("  install  {}", tool.install())),
            "{name}'s install line:\n{out}"
        );
    }
    let any_view_missing = view_missing || out.contains("missing (view)");
    assert_eq!(code(&o), if any_view_missing { 1 } else { 0 }, "{out}");
    assert!(
        out.trim_end()
            .ends_with("every view this host can produce has its tools")
            != any_view_missing,
        "{out}"
    );
}
