//! `allocasm snapshot`: every probe's normalized listing on every profile,
//! compared with the snapshot the project keeps in its own tree.
//!
//! The snapshots are insta's files, `snapshots/<profile>/<probe>.snap` under
//! the project's root (or where `allocasm.toml`'s `snapshots` says): a YAML
//! header (what built the listing: profile, triple, flags, rustc) and the
//! listing. Only the listing is compared. A listing that differs, or has no
//! snapshot yet, is written beside it as `<probe>.snap.new` (what `cargo insta
//! review` reads) and the command exits 1; `--accept` writes the `.snap`
//! itself instead and removes the `.snap.new`. A `.snap.new` left from an
//! earlier run is removed once the listing matches again.
//!
//! ```text
//! allocasm snapshot                 # compare; .snap.new + a diff for each change
//! allocasm snapshot --accept        # take the new listings
//! allocasm snapshot -p x86_64-linux # one profile
//! ```

use std::path::Path;

use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{self, AsmOutput, Profile, cache};
use clap::Args;

use super::{BuildArgs, CliError, Status, Ui};

/// `snapshot` arguments.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Build options
    #[command(flatten)]
    pub build: BuildArgs,
    /// Write every new or changed listing as the snapshot (no .snap.new, exit 0)
    #[arg(long)]
    pub accept: bool,
}

/// What one listing's comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The snapshot holds this listing.
    Same,
    /// No snapshot yet.
    New,
    /// The snapshot holds another listing.
    Changed,
}

/// The listing a `.snap` file holds: everything after its header, trailing
/// blank lines left out (as insta compares).
pub fn snapshot_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(rest[end + 5..].trim_end())
}

/// A `.snap` file's text for `listing` (insta's format: a YAML header, the
/// listing, a final newline).
pub fn snapshot_text(profile: &Profile, output: &AsmOutput, probe: &str, listing: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut header = String::from("---\nsource: allocasm snapshot\n");
    header += &format!(
        "description: {}\n",
        quote(&format!(
            "{probe} on {}: {}",
            profile.name, profile.description
        ))
    );
    header += "info:\n";
    header += &format!("  profile: {}\n", quote(&profile.name));
    header += &format!("  triple: {}\n", quote(&profile.triple));
    header += &format!("  flags: {}\n", quote(&output.flags.join(" ")));
    header += &format!("  toolchain: {}\n", quote(&output.toolchain));
    header += "  rustc:\n";
    for l in output.rustc_version.lines() {
        header += &format!("    - {}\n", quote(l));
    }
    format!("{header}---\n{}\n", listing.trim_end())
}

/// Compares `listing` with `dir/<probe>.snap`, writing `.snap.new` (or, with
/// `accept`, the `.snap`) when they differ; returns what it found and the
/// unified diff (old snapshot to new listing) when it changed.
pub fn compare(
    dir: &Path,
    probe: &str,
    listing: &str,
    new_text: impl FnOnce() -> String,
    accept: bool,
) -> std::io::Result<(Outcome, Option<String>)> {
    let snap = dir.join(format!("{probe}.snap"));
    let pending = dir.join(format!("{probe}.snap.new"));
    let old = match std::fs::read_to_string(&snap) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let listing = listing.trim_end();
    let outcome = match old.as_deref().map(snapshot_body) {
        None => Outcome::New,
        Some(Some(body)) if body == listing => Outcome::Same,
        // A file without insta's header is a changed snapshot, not an error:
        // the new one replaces it on review.
        Some(_) => Outcome::Changed,
    };
    if outcome == Outcome::Same {
        remove_if_there(&pending)?;
        return Ok((outcome, None));
    }
    let diff = old.as_deref().map(|old| {
        let old = snapshot_body(old).unwrap_or(old);
        allocasm_suite::diff::unified(
            &format!("{old}\n"),
            &format!("{listing}\n"),
            "snapshot",
            "listing",
        )
    });
    std::fs::create_dir_all(dir)?;
    // Through a temporary file and a rename, as the suite writes every file
    // others read.
    let text = new_text();
    if accept {
        cache::write_atomically(&snap, text.as_bytes())?;
        remove_if_there(&pending)?;
    } else {
        cache::write_atomically(&pending, text.as_bytes())?;
    }
    Ok((outcome, diff))
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The file stem of a `[function."…"]` table's snapshot:
/// `function.` and the name, each character but `A-Za-z0-9_.-` as `_`
/// (`Queue<T>::push` → `function.Queue_T___push`).
pub fn function_snapshot_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("function.{safe}")
}

/// Builds the selected profiles and compares every listing with its
/// snapshot; exit 1 when one is new or changed (unless `--accept`).
pub fn run(ui: &Ui, args: &SnapshotArgs) -> Result<Status, CliError> {
    let builds = args.build.build(ui)?;
    let root = codegen::snapshots_dir();
    let (mut same, mut new, mut changed) = (0usize, 0usize, 0usize);
    for b in &builds.built {
        let dir = root.join(&b.profile.name);
        // Every probe, then every function a `[function."…"]` table names
        // (`function.<name>.snap`, the name's other characters as `_`).
        let probe_items = probes().iter().filter_map(|probe| {
            let listing = b.listings.listing(probe.name)?;
            Some((probe.name.to_string(), listing.text()))
        });
        let function_items = b.listings.functions.iter().filter_map(|(name, found)| {
            let found = found.as_ref().ok()?;
            Some((function_snapshot_name(name), found.found.listing.text()))
        });
        for (stem, text) in probe_items.chain(function_items).collect::<Vec<_>>() {
            let (outcome, diff) = compare(
                &dir,
                &stem,
                &text,
                || snapshot_text(&b.profile, &b.output, &stem, &text),
                args.accept,
            )
            .map_err(|e| {
                CliError::environment(format!(
                    "cannot write the snapshot in {}: {e}",
                    dir.display()
                ))
            })?;
            let shown = dir.join(format!("{stem}.snap"));
            let shown = shown
                .strip_prefix(&project::current().root)
                .unwrap_or(&shown);
            match outcome {
                Outcome::Same => same += 1,
                Outcome::New => {
                    new += 1;
                    let what = if args.accept {
                        "written"
                    } else {
                        "new, see .snap.new"
                    };
                    outln!("{} {} ({what})", ui.yellow("NEW"), shown.display());
                }
                Outcome::Changed => {
                    changed += 1;
                    let what = if args.accept {
                        "accepted"
                    } else {
                        "changed, see .snap.new"
                    };
                    outln!("{} {} ({what})", ui.red("CHANGED"), shown.display());
                    if let Some(d) = diff {
                        for l in d.lines() {
                            let l = if l.starts_with('+') && !l.starts_with("+++") {
                                ui.green(l)
                            } else if l.starts_with('-') && !l.starts_with("---") {
                                ui.red(l)
                            } else {
                                ui.dim(l)
                            };
                            outln!("  {l}");
                        }
                    }
                }
            }
        }
    }
    builds.report_failures(ui);
    let summary = format!(
        "{} snapshot(s) in {}: {same} unchanged, {new} new, {changed} changed{}",
        same + new + changed,
        root.strip_prefix(&project::current().root)
            .unwrap_or(&root)
            .display(),
        if args.accept && new + changed > 0 {
            " (accepted)"
        } else {
            ""
        }
    );
    if !builds.failed.is_empty() {
        return Err(CliError::environment(format!(
            "{summary}; {} profile build(s) failed",
            builds.failed.len()
        )));
    }
    if new + changed > 0 && !args.accept {
        outln!("{}", ui.red(&summary));
        outln!(
            "review with `cargo insta review`, or take them all with `allocasm snapshot --accept`"
        );
        Ok(Status::Failed)
    } else {
        if !ui.quiet {
            outln!("{}", ui.green(&summary));
        }
        Ok(Status::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("allocasm-snap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn function_snapshots_have_file_safe_names() {
        assert_eq!(
            function_snapshot_name("Queue<T>::push"),
            "function.Queue_T___push"
        );
        assert_eq!(
            function_snapshot_name("Rewindable::alloc_slow#2"),
            "function.Rewindable__alloc_slow_2"
        );
    }

    #[test]
    fn the_body_is_what_follows_the_header() {
        let t = "---\nsource: x\ninfo:\n  a: \"b\"\n---\nf:\n  ret\n\n";
        assert_eq!(snapshot_body(t), Some("f:\n  ret"));
        assert_eq!(snapshot_body("f:\n  ret\n"), None);
    }

    #[test]
    fn new_changed_and_same_listings() {
        let dir = tmp("cycle");
        let text = |l: &str| format!("---\nsource: t\n---\n{l}\n");
        // New: a .snap.new, no .snap.
        let (o, d) = compare(&dir, "p", "f:\n  ret", || text("f:\n  ret"), false).unwrap();
        assert_eq!((o, d), (Outcome::New, None));
        assert!(dir.join("p.snap.new").is_file() && !dir.join("p.snap").exists());
        // Accepted: the .snap, the .snap.new gone.
        let (o, _) = compare(&dir, "p", "f:\n  ret", || text("f:\n  ret"), true).unwrap();
        assert_eq!(o, Outcome::New);
        assert!(dir.join("p.snap").is_file() && !dir.join("p.snap.new").exists());
        // Same.
        let (o, _) = compare(&dir, "p", "f:\n  ret\n", || unreachable!(), false).unwrap();
        assert_eq!(o, Outcome::Same);
        // Changed: the diff names the lines, the .snap is kept.
        let (o, d) = compare(
            &dir,
            "p",
            "f:\n  nop\n  ret",
            || text("f:\n  nop\n  ret"),
            false,
        )
        .unwrap();
        assert_eq!(o, Outcome::Changed);
        assert!(d.unwrap().contains("+  nop"));
        assert_eq!(
            snapshot_body(&std::fs::read_to_string(dir.join("p.snap")).unwrap()),
            Some("f:\n  ret")
        );
        assert!(dir.join("p.snap.new").is_file());
        // Back to the snapshot's listing: the stale .snap.new goes.
        let (o, _) = compare(&dir, "p", "f:\n  ret", || unreachable!(), false).unwrap();
        assert_eq!(o, Outcome::Same);
        assert!(!dir.join("p.snap.new").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
