//! Links GCC's unwinder into `liballocasm_malloc.so` statically (Linux with
//! glibc), so that preloading the library loads no `libgcc_s.so.1`.
//!
//! Rust's standard library asks for `libgcc_s.so.1` for its unwinder. A
//! drop-in malloc never unwinds into its callers, but every process it is
//! preloaded into paid for that library all the same: one more object to
//! map and relocate, and its constructor (`__cpu_indicator_init`), which
//! runs `cpuid` several times; in a virtual machine each `cpuid` leaves the
//! guest. On a 2-core AMD EPYC VM (family 25 model 17) a `/bin/echo` under
//! the library took 1,471 µs before and 1,308 µs after (medians of five
//! interleaved rounds of 2,000 runs, a shell's fork and exec included;
//! 1,060 µs without a preload, 1,273 µs under mimalloc).
//!
//! The static unwinder (`libgcc_eh.a`, the same code) is linked whole into
//! the library, where the cdylib's version script keeps its symbols local:
//! they neither clash with nor replace a C++ program's own. With every
//! `_Unwind_*` reference resolved inside, the linker's `--as-needed` drops
//! `libgcc_s.so.1`. `malloc/tests/preload.rs` checks that it is not loaded.
//!
//! The archive is found by asking the C compiler that links the library
//! (`RUSTC_LINKER` where one is configured, else `cc` for a native build).
//! Where none answers with a path, the library links as Rust links it
//! (with `libgcc_s.so.1`), and nothing else changes.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    let compiler = match env::var("RUSTC_LINKER") {
        Ok(linker) => linker,
        // The host's `cc` knows only the host's archive.
        Err(_) if var("TARGET") == var("HOST") => "cc".to_owned(),
        Err(_) => return,
    };
    let Some(archive) = Command::new(&compiler)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        // A compiler that does not have it prints the bare name back.
        .filter(|p| p.is_absolute() && p.is_file())
    else {
        return;
    };
    let dir = archive
        .parent()
        .expect("an absolute file path has a parent");
    println!("cargo::rustc-link-search=native={}", dir.display());
    // Whole: the standard library's references come later on the link line
    // than this crate's own libraries, where an archive's members are only
    // taken for references already seen.
    println!("cargo::rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
    // For `tests/preload.rs`: whether to expect the library without it.
    println!("cargo::rustc-env=ALLOCASM_MALLOC_STATIC_UNWINDER=1");
}
