//! Emits `allocasm_arm_v7` when the target is 32-bit Arm at ARMv7 or later
//! (`armv7*`, `thumbv7*`, `armv8*`, `thumbv8*` triples): the architectures
//! with `ldrexd`/`strexd` and `dmb`, where `crate::sync` uses its own 64-bit
//! read-modify-write loop. Rust's `cfg(target_feature = "v7")` is not set on
//! stable, so the triple decides; other 32-bit Arm targets (ARMv6) keep the
//! standard library's atomics.
//!
//! Emits `allocasm_tls_ie` for the `initial-exec-tls` feature on x86_64 Linux
//! (SegregatedFit's thread caches in an initial-exec TLS slot).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(allocasm_arm_v7)");
    println!("cargo::rustc-check-cfg=cfg(allocasm_tls_ie)");
    println!("cargo::rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    let v7_or_later = ["armv7", "thumbv7", "armv8", "thumbv8"]
        .iter()
        .any(|p| target.starts_with(p));
    // ARMv7-M has no `ldrexd`; its targets have no 64-bit atomics either.
    let atomic64 = std::env::var("CARGO_CFG_TARGET_HAS_ATOMIC")
        .unwrap_or_default()
        .split(',')
        .any(|w| w == "64");
    if arch == "arm" && v7_or_later && atomic64 {
        println!("cargo::rustc-cfg=allocasm_arm_v7");
    }
    // `allocasm_tls_ie`: the `initial-exec-tls` feature where it is
    // implemented (x86_64 Linux, not under Miri, whose interpreter runs no
    // assembly): SegregatedFit's thread caches in an initial-exec TLS slot.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if std::env::var_os("CARGO_FEATURE_INITIAL_EXEC_TLS").is_some()
        && arch == "x86_64"
        && os == "linux"
        && std::env::var_os("CARGO_CFG_MIRI").is_none()
    {
        println!("cargo::rustc-cfg=allocasm_tls_ie");
    }
}
