//! The Markdown report, for reading in a repository: the machine and
//! compiler first, a summary table (probes × profiles), then every listing.

use std::fmt::Write;

use super::text::join_or_none;
use super::{Format, ProbeResult, Report};

/// `report.md`.
pub struct Markdown;

fn cell(res: &ProbeResult) -> String {
    match (res.status, res.summary) {
        ("found", Some(c)) => format!(
            "{} {} instr · {} rmw · {} call{}",
            if res.passed { "✅" } else { "❌" },
            c.instructions,
            c.atomic_rmw,
            c.calls,
            if c.calls == 1 { "" } else { "s" }
        ),
        ("missing", _) => "❌ missing".to_string(),
        _ => "— not built".to_string(),
    }
}

/// Escapes `|` and backticks for a table cell's inline code.
fn code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'").replace('|', "\\|"))
}

impl Format for Markdown {
    fn name(&self) -> &'static str {
        "md"
    }

    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn render(&self, r: &Report) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# allocasm asm report\n");
        let _ = writeln!(s, "- generator: {}", r.generator);
        let _ = writeln!(s, "- commit: `{}`", r.commit_line());
        let _ = writeln!(
            s,
            "- compiler: {} (toolchain `{}`), LLVM {}",
            r.compiler.release, r.compiler.toolchain, r.compiler.llvm
        );
        let _ = writeln!(s, "- extractor: {}", r.backend);
        let _ = writeln!(s, "- reproduce: `cargo run --release -- report`\n");
        let _ = writeln!(
            s,
            "<details><summary><code>rustc -vV</code></summary>\n\n```text\n{}\n```\n\n</details>\n",
            r.compiler.rustc_vv
        );
        let _ = writeln!(s, "## Profiles\n");
        let _ = writeln!(
            s,
            "| profile | triple | flags passed after `--emit asm` | codegen units | build |"
        );
        let _ = writeln!(s, "| --- | --- | --- | --- | --- |");
        for p in &r.profiles {
            let _ = writeln!(
                s,
                "| `{}` | `{}` | {} | {} | {} |",
                p.name,
                p.triple,
                code(&join_or_none(&p.build_flags)),
                p.codegen_units,
                match &p.error {
                    None => "built".to_string(),
                    Some(e) => format!(
                        "**failed**: {}",
                        e.lines().next().unwrap_or("").replace('|', "\\|")
                    ),
                }
            );
        }
        let _ = writeln!(s, "\n## Summary\n");
        let _ = write!(s, "| probe |");
        for p in &r.profiles {
            let _ = write!(s, " `{}` |", p.name);
        }
        let _ = write!(s, "\n| --- |");
        for _ in &r.profiles {
            let _ = write!(s, " --- |");
        }
        s.push('\n');
        for probe in &r.probes {
            let _ = write!(s, "| [`{0}`](#{0}) |", probe.name);
            for res in &probe.results {
                let _ = write!(s, " {} |", cell(res));
            }
            s.push('\n');
        }
        let t = r.totals;
        let _ = writeln!(
            s,
            "\n{} probes × {} profiles: {} listings found, {} missing, {} of {} expectations failed{}.\n",
            t.probes,
            t.profiles,
            t.found,
            t.missing,
            t.failures,
            t.expectations,
            if t.profiles_failed > 0 {
                format!(", {} profile build(s) failed", t.profiles_failed)
            } else {
                String::new()
            }
        );
        let _ = writeln!(s, "## Listings");
        for probe in &r.probes {
            let _ = writeln!(s, "\n### {}\n", probe.name);
            let _ = writeln!(
                s,
                "`{}` · {} · {} — expected: {}\n",
                probe.allocator, probe.operation, probe.kind, probe.expect
            );
            for res in &probe.results {
                let _ = writeln!(s, "#### {} on `{}`\n", probe.name, res.profile);
                match res.status {
                    "found" => {}
                    "missing" => {
                        let _ = writeln!(
                            s,
                            "**Missing**: the probe is not in this profile's assembly.\n"
                        );
                    }
                    _ => {
                        let _ = writeln!(s, "Not built (see Profiles).\n");
                        continue;
                    }
                }
                if let (Some(c), Some(tls)) = (res.summary, &res.tls) {
                    let _ = writeln!(
                        s,
                        "{} instructions · {} atomic RMW · {} atomics · {} calls · {} branches · {} loops · TLS: {}\n",
                        c.instructions,
                        c.atomic_rmw,
                        c.atomics,
                        c.calls,
                        c.branches,
                        c.loops,
                        tls.how
                    );
                    let _ = writeln!(s, "```asm\n{}:\n{}```\n", probe.name, res.listing_text());
                }
                for a in &res.annotations {
                    let _ = writeln!(s, "- {}: {}", code(&a.instruction), a.note);
                }
                if !res.annotations.is_empty() {
                    s.push('\n');
                }
                for e in &res.expectations {
                    let _ = writeln!(
                        s,
                        "- {} {}{}",
                        if e.passed { "✅" } else { "❌" },
                        code(&e.rule),
                        e.offending
                            .as_ref()
                            .map(|o| format!(" — {}", code(o)))
                            .unwrap_or_default()
                    );
                }
                if let Some(why) = res.expectations.iter().find_map(|e| e.why.as_ref()) {
                    let _ = writeln!(s, "\n> why: {why}");
                }
                s.push('\n');
            }
        }
        s
    }
}
