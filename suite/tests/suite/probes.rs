//! The probe registry and the probe functions agree: every
//! `pub extern "C" fn probe_*` (or `"C-unwind"`) in `src/probes/*.rs` is listed in
//! `allocasm::probes::PROBES`, and every entry there is defined.

use std::collections::BTreeSet;

use allocasm::probes::{PROBES, ProbeKind};

/// The probe functions defined in the source of `src/probes/`, with the file
/// that defines each.
fn defined() -> Vec<(String, String)> {
    let dir = allocasm_suite::codegen::manifest_dir().join("src/probes");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/probes exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for line in text.lines() {
            let line = line.trim_start();
            let rest = ["pub ", "pub unsafe "].iter().find_map(|p| {
                let rest = line.strip_prefix(p)?;
                rest.strip_prefix("extern \"C\" fn ")
                    .or_else(|| rest.strip_prefix("extern \"C-unwind\" fn "))
            });
            if let Some(rest) = rest {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with("probe_") {
                    found.push((name, file.clone()));
                }
            }
        }
    }
    found
}

#[test]
#[cfg_attr(miri, ignore = "reads source files")]
fn scan_finds_the_chapter_probes() {
    let names: BTreeSet<String> = defined().into_iter().map(|(n, _)| n).collect();
    for probe in [
        "probe_linear_alloc",
        "probe_pool_free",
        "probe_freelist_alloc",
    ] {
        assert!(
            names.contains(probe),
            "the scan must find {probe}; found {names:?}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads source files")]
fn every_defined_probe_is_registered() {
    let registered: BTreeSet<&str> = PROBES.iter().map(|p| p.name).collect();
    let missing: Vec<String> = defined()
        .into_iter()
        .filter(|(name, _)| !registered.contains(name.as_str()))
        .map(|(name, file)| format!("{name} (src/probes/{file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "probes defined but missing from PROBES: {missing:?}"
    );
}

#[test]
#[cfg_attr(miri, ignore = "reads source files")]
fn every_registered_probe_is_defined() {
    let names: BTreeSet<String> = defined().into_iter().map(|(n, _)| n).collect();
    let missing: Vec<&str> = PROBES
        .iter()
        .map(|p| p.name)
        .filter(|n| !names.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "PROBES names functions that are not defined in src/probes/: {missing:?}"
    );
}

#[test]
#[cfg_attr(miri, ignore = "reads source files")]
fn every_registered_chapter_probe_is_defined() {
    const CHAPTER: [&str; 5] = [
        "LinearArena",
        "StackAllocator",
        "Pool",
        "FreeList",
        "FrameAllocator",
    ];
    let in_chapter: BTreeSet<String> = defined()
        .into_iter()
        .filter(|(_, file)| file == "chapter.rs")
        .map(|(n, _)| n)
        .collect();
    for probe in PROBES.iter().filter(|p| CHAPTER.contains(&p.allocator)) {
        assert!(
            in_chapter.contains(probe.name),
            "{} is registered but not defined in chapter.rs",
            probe.name
        );
        assert_eq!(
            probe.kind,
            ProbeKind::SingleThreaded,
            "{} is single-threaded",
            probe.name
        );
    }
}

#[test]
fn registry_names_are_unique_and_well_formed() {
    let mut seen = BTreeSet::new();
    for p in PROBES {
        assert!(seen.insert(p.name), "{} is registered twice", p.name);
        assert!(
            p.name.starts_with("probe_"),
            "{} must start with probe_",
            p.name
        );
        assert!(!p.expect.is_empty() && !p.operation.is_empty() && !p.allocator.is_empty());
        assert_eq!(allocasm::probes::find(p.name), Some(p));
    }
}
