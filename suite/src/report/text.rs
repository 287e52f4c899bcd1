//! The plain-text report (for terminals and logs), and the column layout
//! `show --side-by-side` uses.

use std::fmt::Write;

use allocasm_suite::render::{self, Align, Cell, Mark, Table};

use super::{ProbeStatus, Report};

/// The whole `report` in this format.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "allocasm report ({})", r.generator);
    let _ = writeln!(s, "commit:   {}", r.commit_line());
    let _ = writeln!(
        s,
        "compiler: {} (LLVM {})",
        r.compiler.release, r.compiler.llvm
    );
    let _ = writeln!(s, "backend:  {}", r.backend);
    for p in &r.profiles {
        let _ = writeln!(
            s,
            "profile {} ({}{}): flags {} · {} · {}",
            p.name,
            p.triple,
            p.compiler
                .as_ref()
                .map_or_else(String::new, |c| format!(", built with {c}")),
            join_or_none(&p.build_flags),
            p.codegen_units,
            p.status
        );
    }
    if let Some(m) = &r.mutations {
        let _ = writeln!(
            s,
            "\nwhat this suite can and cannot see (scripts/test mutate):"
        );
        s.push_str(&render::text::table_plain(&m.table()));
    }
    if let Some(e) = &r.executed
        && !e.table.columns.is_empty()
    {
        let _ = writeln!(
            s,
            "\nwhat the CPU executes (hot-path instructions / executed (+helpers) / llvm-mca cycles per CPU):"
        );
        s.push_str(&render::text::table_plain(&Table {
            columns: std::iter::once("probe")
                .chain(e.table.columns.iter().map(String::as_str))
                .enumerate()
                .map(|(i, t)| {
                    (
                        t.to_string(),
                        if i == 0 { Align::Left } else { Align::Right },
                    )
                })
                .collect(),
            rows: e
                .table
                .rows
                .iter()
                .map(|row| {
                    std::iter::once(Cell::new(row.probe.as_str(), Mark::Plain))
                        .chain(
                            row.cells
                                .iter()
                                .map(|c| Cell::new(c.text.as_str(), Mark::Plain)),
                        )
                        .collect()
                })
                .collect(),
        }));
    }
    for probe in &r.probes {
        let _ = writeln!(
            s,
            "\n== {} ({} {}, {})",
            probe.name, probe.allocator, probe.operation, probe.kind
        );
        let _ = writeln!(s, "   expected: {}", probe.expect);
        let columns: Vec<(String, Vec<String>)> = probe
            .results
            .iter()
            .map(|res| {
                let mut lines: Vec<String> =
                    res.listing_text().lines().map(str::to_string).collect();
                if let Some(c) = res.summary {
                    lines.push(String::new());
                    lines.push(format!(
                        "{} instr, {} rmw, {} calls, {} loops",
                        c.instructions, c.atomic_rmw, c.calls, c.loops
                    ));
                }
                if let Some(h) = &res.hot_path {
                    lines.push(format!(
                        "hot {} of {}, fit check {}, {} atomics",
                        h.instructions,
                        h.function_instructions,
                        h.to_fit_check.map_or("-".to_string(), |n| n.to_string()),
                        h.atomics
                    ));
                    lines.push(format!(
                        "hot calls: {}; {} stack{}, {} loops",
                        if h.calls.is_empty() {
                            "none".to_string()
                        } else {
                            h.calls.join(", ")
                        },
                        h.stack_accesses,
                        if h.frame_accesses > 0 {
                            format!(" (+ {} frame record)", h.frame_accesses)
                        } else {
                            String::new()
                        },
                        h.loops
                    ));
                }
                if let Some(t) = &res.tls {
                    lines.push(format!("TLS: {}", t.how));
                }
                for e in &res.expectations {
                    lines.push(format!(
                        "{} {}",
                        if e.passed { "ok  " } else { "FAIL" },
                        e.rule
                    ));
                }
                if res.status != ProbeStatus::Found {
                    lines.insert(0, format!("({})", res.status));
                }
                (res.profile.clone(), lines)
            })
            .collect();
        s.push_str(&side_by_side(&columns, 44));
        for res in &probe.results {
            for a in &res.annotations {
                let _ = writeln!(s, "   [{}] {}: {}", res.profile, a.instruction, a.note);
            }
        }
        for res in &probe.results {
            let Some(linked) = &res.linked else {
                continue;
            };
            let _ = writeln!(s, "\n-- {} on {}: .s and linked", probe.name, res.profile);
            let mut columns = vec![(
                ".s".to_string(),
                res.listing_text().lines().map(str::to_string).collect(),
            )];
            for (title, view) in linked.both() {
                let mut lines: Vec<String> =
                    view.listing_text().lines().map(str::to_string).collect();
                if let Some(c) = view.summary {
                    lines.push(String::new());
                    lines.push(format!(
                        "{} instr, {} rmw, {} calls, {} loops",
                        c.instructions, c.atomic_rmw, c.calls, c.loops
                    ));
                }
                if view.status != ProbeStatus::Found {
                    lines.insert(0, format!("({})", view.status));
                    lines.extend(
                        view.error
                            .iter()
                            .flat_map(|e| e.lines().map(str::to_string)),
                    );
                }
                columns.push((title.to_string(), lines));
            }
            s.push_str(&side_by_side(&columns, 44));
        }
    }
    let t = r.totals;
    let _ = writeln!(
        s,
        "\n{} probes × {} profiles: {} found, {} missing, {} of {} expectations failed, {} profile build(s) failed",
        t.probes, t.profiles, t.found, t.missing, t.failures, t.expectations, t.profiles_failed
    );
    s
}

/// "(none)" or the flags joined by spaces.
pub fn join_or_none(flags: &[String]) -> String {
    if flags.is_empty() {
        "(none)".to_string()
    } else {
        flags.join(" ")
    }
}

/// Lays `columns` (header, lines) out side by side, each `width` characters
/// wide (longer lines are cut with `…`), separated by ` │ `.
pub fn side_by_side(columns: &[(String, Vec<String>)], width: usize) -> String {
    let widths = vec![width; columns.len()];
    side_by_side_widths(columns, &widths)
}

/// Like [`side_by_side`], each column as wide as its longest line (header
/// included), so nothing is cut.
pub fn side_by_side_fit(columns: &[(String, Vec<String>)]) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .map(|(h, l)| {
            std::iter::once(h)
                .chain(l)
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
                .max(2)
        })
        .collect();
    side_by_side_widths(columns, &widths)
}

/// Lays `columns` out side by side, column `i` `widths[i]` characters wide
/// (longer lines are cut with `…`), separated by ` │ `.
fn side_by_side_widths(columns: &[(String, Vec<String>)], widths: &[usize]) -> String {
    let fit = |s: &str, width: usize| {
        let n = s.chars().count();
        if n > width {
            let mut t: String = s.chars().take(width - 1).collect();
            t.push('…');
            t
        } else {
            format!("{s}{}", " ".repeat(width - n))
        }
    };
    let rows = columns.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    let row = |cells: Vec<String>| {
        let mut line = cells.join(" │ ");
        line.truncate(line.trim_end().len());
        line.push('\n');
        line
    };
    out.push_str(&row(columns
        .iter()
        .zip(widths)
        .map(|((h, _), &w)| fit(h, w))
        .collect()));
    out.push_str(&row(widths.iter().map(|&w| "─".repeat(w)).collect()));
    for i in 0..rows {
        out.push_str(&row(columns
            .iter()
            .zip(widths)
            .map(|((_, l), &w)| fit(l.get(i).map_or("", String::as_str), w))
            .collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let cols = vec![
            ("a".to_string(), vec!["x".to_string(), "yy".to_string()]),
            ("b".to_string(), vec!["a very long line indeed".to_string()]),
        ];
        let s = side_by_side(&cols, 6);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "a      │ b");
        assert_eq!(lines[2], "x      │ a ver…");
        assert_eq!(lines[3], "yy     │");
        let fit = side_by_side_fit(&cols);
        let lines: Vec<&str> = fit.lines().collect();
        assert_eq!(lines[0], "a  │ b");
        assert_eq!(lines[2], "x  │ a very long line indeed", "nothing is cut");
        assert_eq!(lines[3], "yy │");
    }
}
