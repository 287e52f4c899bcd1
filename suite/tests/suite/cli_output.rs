//! What the `allocasm` binary prints around the listings: how a probe name
//! is matched (a part of one name, or of several to pick from) and which
//! names "did you mean" suggests.
//!
//! On the warm x86_64-linux build the other tests share. Skipped under Miri
//! (they spawn processes).

use std::process::{Command, Output};

fn allocasm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allocasm"))
        .args(args)
        .env_remove("RUSTFLAGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run the allocasm binary")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
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
