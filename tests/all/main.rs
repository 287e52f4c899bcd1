//! The allocator library's integration tests, built as one binary: one module
//! per topic. (The codegen suite's tests are in `suite/tests/`.) Tests that
//! call the probes need the `probes` feature, which a workspace `cargo test`
//! turns on (the suite depends on it); `cargo test -p allocasm` alone leaves
//! them out.

/// Under `--cfg allocasm_global_segregated` (`scripts/test global`) every
/// allocation of this binary, the test harness's own included, goes through
/// `SegregatedFit`.
#[cfg(all(allocasm_global_segregated, not(miri)))]
#[global_allocator]
static GLOBAL: allocasm::SegregatedFit = allocasm::SegregatedFit::new();

/// The step cannot pass on the system allocator by mistake.
#[cfg(all(allocasm_global_segregated, not(miri)))]
#[test]
fn the_global_allocator_is_segregated_fit() {
    let b = Box::new([7u8; 48]);
    let l = std::alloc::Layout::new::<[u8; 48]>();
    assert!(GLOBAL.owns(std::ptr::NonNull::from(&*b).cast(), l));
}

/// Whether every byte of `bytes` is `value`: one slice comparison (a
/// `memcmp`), which Miri runs natively, where `iter().all(..)` interprets a
/// closure call per byte (a 100 KB check cost seconds under Miri).
pub fn filled(bytes: &[u8], value: u8) -> bool {
    bytes == vec![value; bytes.len()].as_slice()
}

/// The capacity a test gives an allocator it fills to exhaustion: `native`
/// natively, an eighth of it under Miri. Filling is a loop per block (and a
/// free list's search per block again); what Miri checks, every access and
/// every pointer's provenance, is the same on fewer blocks.
pub fn capacity(native: usize) -> usize {
    if cfg!(miri) { native / 8 } else { native }
}

/// A command that runs this test binary's test `test` alone in a child
/// process, through `ALLOCASM_RUNNER` where that is set (under qemu-user,
/// scripts/test's cross steps, the binary cannot be exec'd directly: e.g.
/// `qemu-aarch64 -L /usr/aarch64-linux-gnu`). The caller adds what selects
/// the child's part (an environment variable) and runs it.
#[cfg(unix)]
pub fn child_test(test: &str) -> std::process::Command {
    let exe = std::env::current_exe().expect("test binary path");
    let runner = std::env::var("ALLOCASM_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut cmd = match words.next() {
        Some(program) => {
            let mut c = std::process::Command::new(program);
            c.args(words).arg(&exe);
            c
        }
        None => std::process::Command::new(&exe),
    };
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    cmd
}

mod chapter;
mod conformance;
mod guard_zone;
mod interop;
mod packed;
mod segregated;
mod stress;
mod thread_cursor;
mod unity;
