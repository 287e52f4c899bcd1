//! `scripts/setup` judged against what the steps it prepares will run: the
//! program bench runs Debian's own programs (on `/usr/bin:/bin`), so setup
//! must ask those, not whatever a user's PATH puts first.

use std::path::Path;
use std::process::Command;

/// A `python3` of a pyenv or home directory first on the PATH, one whose
/// own build has CPython's test suite, does not hide that Debian's lacks
/// it: the program bench would fail on the first run after setup said
/// "ready" (CI's `programs` step, stop 48).
#[test]
fn setup_asks_the_system_python_for_its_test_suite() {
    let system_python = Path::new("/usr/bin/python3");
    if !cfg!(target_os = "linux") || !system_python.exists() {
        eprintln!(
            "skipped: setup_asks_the_system_python_for_its_test_suite: needs /usr/bin/python3"
        );
        return;
    }
    let has_suite = Command::new(system_python)
        .args(["-c", "import test.test_dict"])
        .output()
        .unwrap()
        .status
        .success();
    let minor = String::from_utf8(
        Command::new(system_python)
            .args(["-c", "import sys; print(sys.version_info[1])"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let package = format!("libpython3.{}-testsuite", minor.trim());

    // A python3 that answers yes to everything, first on the PATH.
    let shim = crate::cli::scratch_dir("setup", "python-shim");
    let fake = shim.join("python3");
    std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(allocasm_suite::codegen::manifest_dir().join("scripts/setup"))
        .args(["--no-apt", "--no-nightly", "--steps", "programs"])
        .env("PATH", path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/setup failed:\n{text}");
    let listed = text.contains(&format!("not installed: {package}"));
    assert_eq!(
        listed,
        !has_suite,
        "Debian's python3 {} its test suite, and setup {} {package}:\n{text}",
        if has_suite { "has" } else { "lacks" },
        if listed { "lists" } else { "does not list" }
    );
}
