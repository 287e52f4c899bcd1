//! The library reaches its thread caches through the initial-exec TLS model
//! (`allocasm`'s `initial-exec-tls` feature): the linker then marks the
//! shared object `DF_STATIC_TLS` in its dynamic section. Without the
//! feature, std's `thread_local!` in a position-independent library is the
//! general-dynamic model (a `__tls_get_addr` call per `malloc` and `free`,
//! about 15% of the allocator's instructions under `lua5.4`), and the flag
//! is absent: this test failed before the feature.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::PathBuf;

/// The library cargo built for this test run (beside `deps/` or in it).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("deps/");
    [deps, deps.parent().expect("the profile directory")]
        .iter()
        .map(|d| d.join("liballocasm_malloc.so"))
        .find(|so| so.is_file())
        .expect("liballocasm_malloc.so beside the test binary (cargo test -p allocasm-malloc)")
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap()).into()
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The `DT_FLAGS` value of a 64-bit little-endian ELF file's dynamic
/// section, if it has one.
fn dt_flags(elf: &[u8]) -> Option<u64> {
    const SHT_DYNAMIC: u32 = 6;
    const DT_FLAGS: u64 = 30;
    assert_eq!(
        &elf[..6],
        b"\x7fELF\x02\x01",
        "a 64-bit little-endian ELF file"
    );
    let (shoff, shentsize, shnum) = (
        u64_at(elf, 0x28) as usize,
        u16_at(elf, 0x3a),
        u16_at(elf, 0x3c),
    );
    (0..shnum)
        .map(|i| &elf[shoff + i * shentsize..][..shentsize])
        .filter(|sh| u32::from_le_bytes(sh[4..8].try_into().unwrap()) == SHT_DYNAMIC)
        .flat_map(|sh| {
            let (off, size) = (u64_at(sh, 0x18) as usize, u64_at(sh, 0x20) as usize);
            elf[off..off + size].as_chunks::<16>().0
        })
        .find(|d| u64_at(&d[..], 0) == DT_FLAGS)
        .map(|d| u64_at(&d[..], 8))
}

#[test]
fn the_thread_caches_are_reached_through_static_tls() {
    const DF_STATIC_TLS: u64 = 0x10;
    let so = library();
    let elf = std::fs::read(&so).expect("read the library");
    let flags = dt_flags(&elf).unwrap_or(0);
    assert!(
        flags & DF_STATIC_TLS != 0,
        "{} is not marked DF_STATIC_TLS (DT_FLAGS {flags:#x}): its thread caches are \
         reached through __tls_get_addr",
        so.display()
    );
}
