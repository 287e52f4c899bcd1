//! No snapshot is left that no test writes. The snapshot tests write
//! `snapshots/<profile>/<probe>.snap` for every profile of `targets/` and
//! every probe of the registry, and the linked view
//! `snapshots/linked/<profile>/<release|release-lto>/<probe>.snap` for every
//! profile with a `[linked]` table; a file under `snapshots/` outside that
//! set (a renamed probe's or a removed profile's listing) is unreferenced
//! and fails here, like `cargo insta test --unreferenced=reject` would,
//! without needing cargo-insta. insta's pending files (`.snap.new`,
//! `.pending-snap`) are a review in progress, not snapshots, and are left
//! alone. The set comes from `targets/*.toml` and the probe registry, so a
//! new profile or probe needs no change here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use allocasm::probes::PROBES;
use allocasm_suite::codegen::{self, Profile, linked::Lto};

/// Every snapshot path, relative to `snapshots/`, that a test writes.
fn referenced(profiles: &[Profile], probes: &[&str]) -> BTreeSet<PathBuf> {
    let mut set = BTreeSet::new();
    for p in profiles {
        for probe in probes {
            set.insert(Path::new(&p.name).join(format!("{probe}.snap")));
            if p.linked.is_some() {
                for lto in Lto::ALL {
                    set.insert(
                        Path::new("linked")
                            .join(&p.name)
                            .join(lto.name())
                            .join(format!("{probe}.snap")),
                    );
                }
            }
        }
    }
    set
}

/// Every file under `dir` (relative to it) that is not in `referenced`,
/// insta's pending files aside.
fn unreferenced(dir: &Path, referenced: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let name = f.to_string_lossy();
            !(name.ends_with(".snap.new") || name.ends_with(".pending-snap"))
        })
        .filter(|f| !referenced.contains(f))
        .collect()
}

fn probe_names() -> Vec<&'static str> {
    PROBES.iter().map(|p| p.name).collect()
}

#[test]
fn every_snapshot_is_written_by_a_test() {
    let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
    let stray = unreferenced(
        &codegen::snapshots_dir(),
        &referenced(&profiles, &probe_names()),
    );
    assert!(
        stray.is_empty(),
        "{} snapshot(s) under snapshots/ that no test writes (a removed probe or profile?): \
         delete them, or `cargo insta test --unreferenced=delete`:\n  {}",
        stray.len(),
        stray
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn a_stray_snapshot_is_caught_and_pending_ones_are_not() {
    let profiles = codegen::load_profiles().unwrap_or_else(|e| panic!("{e:#}"));
    let linked = profiles
        .iter()
        .find(|p| p.linked.is_some())
        .expect("a profile with a linked view");
    let dir = std::env::temp_dir().join(format!("allocasm-snapshots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let probe = PROBES[0].name;
    let files = [
        // Written by the tests: kept.
        Path::new(&profiles[0].name).join(format!("{probe}.snap")),
        Path::new("linked")
            .join(&linked.name)
            .join("release-lto")
            .join(format!("{probe}.snap")),
        // A review in progress: left alone.
        Path::new(&profiles[0].name).join(format!("{probe}.snap.new")),
        // A renamed probe, a profile that is gone, an LTO setting that is not one.
        Path::new(&profiles[0].name).join("probe_renamed_away.snap"),
        Path::new("removed-profile").join(format!("{probe}.snap")),
        Path::new("linked")
            .join(&linked.name)
            .join("release-thin")
            .join(format!("{probe}.snap")),
    ];
    for f in &files {
        let path = dir.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "---\n").unwrap();
    }
    let stray = unreferenced(&dir, &referenced(&profiles, &probe_names()));
    std::fs::remove_dir_all(&dir).unwrap();
    let mut expected = files[3..].to_vec();
    expected.sort();
    assert_eq!(stray, expected);
}
