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

/// Runs the child test command that `make` builds and collects its exit
/// status, standard output and standard error. Natively it just runs. Under
/// `ALLOCASM_RUNNER` (an emulator), once in many runs a child never ended
/// (the riscv64 step stopped at its 900 s limit, while the same child alone
/// ends in a second, ten times out of ten): there a run that outlives
/// [`EMULATED_LIMIT`] is killed and tried once more, and a second hang
/// fails the test, naming `test`.
#[cfg(unix)]
pub fn child_output(test: &str, make: impl Fn() -> std::process::Command) -> std::process::Output {
    let runner = std::env::var("ALLOCASM_RUNNER").unwrap_or_default();
    if runner.is_empty() {
        return make().output().expect("spawn the child test");
    }
    output_within(&make, EMULATED_LIMIT)
        .or_else(|| output_within(&make, EMULATED_LIMIT))
        .unwrap_or_else(|| {
            panic!("the child running {test} under `{runner}` hung twice ({EMULATED_LIMIT:?} each)")
        })
}

/// How long a child test under an emulator may take (each takes about a
/// second).
#[cfg(unix)]
pub const EMULATED_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs the command `make` builds and collects its output, or kills it
/// and returns `None` once it has run for `limit`. Both pipes are drained
/// by threads while it runs, so a child that writes more than a pipe holds
/// (a panic's backtrace) cannot block on them.
#[cfg(unix)]
pub fn output_within(
    make: impl Fn() -> std::process::Command,
    limit: std::time::Duration,
) -> Option<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = make()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child test");
    fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            // A child killed mid-write leaves a short read: keep what came.
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    }
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child test") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            // The readers are left to end with the pipes: a grandchild
            // may still hold them open.
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Some(std::process::Output {
        status,
        stdout: stdout.join().expect("the stdout reader"),
        stderr: stderr.join().expect("the stderr reader"),
    })
}

/// The helper itself: a child that outlives its limit is killed and
/// reported as `None`; one that ends in time gives both of its streams.
#[cfg(all(unix, not(miri)))]
#[test]
fn output_within_kills_a_child_that_outlives_its_limit() {
    let sh = |script: &'static str| {
        move || {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", script]);
            c
        }
    };
    let start = std::time::Instant::now();
    let hung = output_within(sh("exec sleep 30"), std::time::Duration::from_millis(200));
    assert!(
        hung.is_none(),
        "a child past its limit must be reported as hung"
    );
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "the hung child was not killed: {:?}",
        start.elapsed()
    );
    let out = output_within(
        sh("echo out; echo err >&2; exit 3"),
        std::time::Duration::from_secs(60),
    )
    .expect("a child that ends at once is not hung");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
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
