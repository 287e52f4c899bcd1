//! The drop-in malloc under real processes: C programs and Debian's
//! programs run with `LD_PRELOAD=liballocasm_malloc.so` (the debug build
//! cargo made for this test, whose SegregatedFit checks every free for a
//! foreign pointer or a double free) and without it, and their outputs are
//! compared.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The library cargo built for this test run: beside the test binary's
/// `deps/` directory.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("deps/");
    for dir in [deps, deps.parent().expect("the profile directory")] {
        let so = dir.join("liballocasm_malloc.so");
        if so.is_file() {
            return so;
        }
    }
    panic!(
        "liballocasm_malloc.so is not in {} or its parent: cargo builds it with the test \
         (cargo test -p allocasm-malloc)",
        deps.display()
    );
}

/// A scratch directory of this test run.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("allocasm-malloc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Compiles one of `tests/c/` into `dir`.
fn compile(source: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(source);
    let exe = dir.join(source.trim_end_matches(".c"));
    let out = Command::new("cc")
        .args(["-O1", "-pthread", "-Wno-use-after-free", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("cc (a C compiler on PATH; scripts/setup installs gcc)");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Compiles `source` of `tests/c/`, runs it under the library, checks that
/// it exited 0 and printed no `FAILED`, and returns what it printed.
fn stdout_under_library(source: &str, limit: Duration) -> String {
    let dir = scratch(source.trim_end_matches(".c"));
    let exe = compile(source, &dir);
    let r = run(Command::new(&exe), true, limit);
    assert_eq!(r.status, Some(0), "{source}: {}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("FAILED"), "{source}: {}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    r.stdout
}

/// What a process printed and how it ended.
struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` (under the library when `preload`), killed after `limit`.
fn run(mut cmd: Command, preload: bool, limit: Duration) -> Run {
    if preload {
        cmd.env("LD_PRELOAD", library());
    } else {
        cmd.env_remove("LD_PRELOAD");
    }
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} (preload {preload}) did not finish in {limit:?}: {}",
                err_reader.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status: status.code(),
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

/// Runs `cmd` with glibc and with the library; both must exit 0 with the
/// same output (the library's run also names it as malloc's home when the
/// program says where malloc came from).
fn same_under_both(make: impl Fn() -> Command, limit: Duration) -> (String, String) {
    let glibc = run(make(), false, limit);
    let ours = run(make(), true, limit);
    for (who, r) in [("glibc", &glibc), ("allocasm-malloc", &ours)] {
        assert_eq!(
            r.status,
            Some(0),
            "{:?} under {who} failed:\n{}{}",
            make(),
            r.stdout,
            r.stderr
        );
    }
    (glibc.stdout, ours.stdout)
}

#[test]
fn the_c_allocation_functions_behave_as_glibcs() {
    let dir = scratch("semantics");
    let exe = compile("semantics.c", &dir);
    let (glibc, ours) = same_under_both(|| Command::new(&exe), Duration::from_secs(60));
    let (g_first, g_rest) = glibc.split_once('\n').expect("output");
    let (o_first, o_rest) = ours.split_once('\n').expect("output");
    assert_eq!(g_first, "malloc from libc.so.6");
    assert_eq!(
        o_first, "malloc from liballocasm_malloc.so",
        "the preloaded library did not replace malloc"
    );
    assert!(!g_rest.contains("FAILED"), "glibc itself:\n{g_rest}");
    let diff = similar::TextDiff::from_lines(g_rest, o_rest)
        .unified_diff()
        .header("glibc", "allocasm-malloc")
        .to_string();
    assert!(
        g_rest == o_rest,
        "the library's semantics differ from glibc's:\n{diff}"
    );
    assert!(g_rest.lines().count() > 30, "too little checked:\n{g_rest}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_child_forked_beside_allocating_threads_can_allocate() {
    let dir = scratch("fork");
    let exe = compile("fork_threads.c", &dir);
    let r = run(Command::new(&exe), true, Duration::from_secs(240));
    assert_eq!(
        r.status,
        Some(0),
        "forked children hung or failed under the library:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout.contains(": 0 hung, 0 failed"),
        "unexpected output: {}",
        r.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `fork` costs the library few pages: its handlers take and release
/// every lock of the allocator, and after the fork each page they write is
/// copied in the parent and again in the child. The class locks lie side by
/// side; spread over the classes' lines, they made the parent fault in 13
/// pages more a fork than under glibc (15 against 2) and each child 16 to
/// 18 more. Compared with glibc's faults on the same machine, so that what
/// the kernel and libc take for a fork cancels out.
#[test]
fn a_fork_copies_few_pages_of_the_library() {
    let dir = scratch("fork-pages");
    let exe = compile("fork_pages.c", &dir);
    let faults = |preload: bool| {
        let r = run(Command::new(&exe), preload, Duration::from_secs(120));
        assert_eq!(r.status, Some(0), "{}{}", r.stdout, r.stderr);
        let get = |key: &str| -> f64 {
            r.stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("no `{key}` line: {}", r.stdout))
        };
        (get("parent"), get("child"))
    };
    let (glibc_parent, glibc_child) = faults(false);
    let (parent, child) = faults(true);
    assert!(
        // Both counts move with the layout of what a process writes
        // (address randomisation decides which of it shares a page): the
        // parent's 4 to 6 against glibc's 2 (15 before the locks moved),
        // the child's 22 to 26 against 16 to 18 (33 to 35 before).
        parent <= glibc_parent + 8.0 && child <= glibc_child + 12.0,
        "faults per fork: parent {parent} (glibc {glibc_parent}), child {child} (glibc \
         {glibc_child})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Blocks up to 64 KiB carry no header: `malloc(n)` takes the block of
/// SegregatedFit's class for `n` at 16-byte alignment, and
/// `malloc_usable_size` is that block's size; a million `malloc(48)` take
/// 48 bytes each. Before, a 16-byte header sent each one a class up (64
/// bytes for `malloc(48)`) and the usable size was the block less 16.
/// Over-aligned blocks (`memalign`) free through the class map too, and
/// `realloc` keeps the contents across the class and large paths.
#[test]
fn class_blocks_carry_no_header() {
    use allocasm::SegregatedFit;
    let stdout = stdout_under_library("footprint.c", Duration::from_secs(120));
    let mut usable = 0;
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["usable", n, u] => {
                let (n, u): (usize, usize) = (n.parse().unwrap(), u.parse().unwrap());
                let want = match SegregatedFit::size_class(n.max(1), 16) {
                    Some(class) => class.block_size(),
                    None => n,
                };
                assert_eq!(u, want, "malloc_usable_size(malloc({n}))");
                usable += 1;
            }
            ["per-block", b] => {
                let b: usize = b.parse().unwrap();
                assert!(
                    (48..52).contains(&b),
                    "a million malloc(48) took {b} resident bytes each (48 is the block)"
                );
            }
            _ => {}
        }
    }
    assert_eq!(usable, 11, "every size reported:\n{stdout}");
    assert_eq!(stdout.matches(" ok\n").count(), 7, "{stdout}");
    assert!(stdout.contains("per-block"), "{stdout}");
}

/// Python allocates millions of objects of every size through malloc
/// (those above 512 bytes directly, its small-object arenas through mmap),
/// spawns a child (fork + exec) and uses threads.
#[test]
fn python_runs_on_the_library_with_the_same_output() {
    let script = r#"
import json, subprocess, sys, threading, zlib
data = [{"k%d" % i: [str(j) * (i % 50) for j in range(i % 20)]} for i in range(20000)]
text = json.dumps(data, sort_keys=True)
assert json.loads(text) == data
big = [bytes(range(256)) * (1 + i % 300) for i in range(3000)]
crc = zlib.crc32(b"".join(big))
out = []
def work(n):
    out.append(sum(len(str(x)) for x in range(n)))
ts = [threading.Thread(target=work, args=(50000 + i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
child = subprocess.run([sys.executable, "-c", "print(sorted({i % 97 for i in range(10**5)})[-1])"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(len(text), crc, sorted(out), child)
"#;
    let (glibc, ours) = same_under_both(
        || {
            let mut c = Command::new("python3");
            c.args(["-c", script]);
            c
        },
        Duration::from_secs(300),
    );
    assert_eq!(
        glibc, ours,
        "python printed something else under the library"
    );
    assert!(glibc.contains(" 96"), "{glibc}");
}

/// How a misuse program ended: killed by which signal, if any.
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// Runs a misuse program of `tests/c/misuse/` under glibc and under the
/// library: glibc must end it (abort or crash: the misuse is real), and the
/// library must abort it (SIGABRT) with a line on stderr that contains
/// `expect` and the address the program printed, before it could get one
/// block twice or two overlapping blocks.
fn misuse(source: &str, expect: &str) {
    misuse_where(source, expect, Glibc::Ends);
}

/// What glibc does with a misuse program.
#[derive(PartialEq)]
enum Glibc {
    /// Aborts or crashes.
    Ends,
    /// Goes on, and the program gets one block twice (or overlapping
    /// blocks): the misuse is real, and glibc does not catch it.
    HandsOutTwice,
}

/// [`misuse`], with what glibc must do.
fn misuse_where(source: &str, expect: &str, glibc: Glibc) {
    let dir = scratch(source.trim_end_matches(".c"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/misuse");
    let exe = dir.join(source.trim_end_matches(".c"));
    let out = Command::new("cc")
        .args([
            "-O1",
            "-Wno-use-after-free",
            "-Wno-free-nonheap-object",
            "-I",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(src.join(source))
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ended = |preload: bool| {
        let mut cmd = Command::new(&exe);
        if preload {
            cmd.env("LD_PRELOAD", library());
        } else {
            cmd.env_remove("LD_PRELOAD");
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        (
            signal_of(&out.status),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (g_sig, g_out, g_err) = ended(false);
    if glibc == Glibc::Ends {
        assert!(
            matches!(g_sig, Some(libc_sig::SIGABRT | libc_sig::SIGSEGV)),
            "{source} under glibc: signal {g_sig:?}\n{g_out}{g_err}"
        );
    } else {
        assert!(
            g_sig.is_none() && (g_out.contains("SAME") || g_out.contains("OVERLAPPING")),
            "{source} under glibc: signal {g_sig:?}\n{g_out}{g_err}"
        );
    }
    let (sig, out, err) = ended(true);
    for bad in ["SAME", "OVERLAPPING", "distinct"] {
        assert!(
            !out.contains(bad),
            "{source}: the library went on after the misuse:\n{out}{err}"
        );
    }
    assert_eq!(
        sig,
        Some(libc_sig::SIGABRT),
        "{source} under the library (glibc: {g_sig:?} {g_err:?}):\n{out}{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("allocasm-malloc: "))
        .unwrap_or_else(|| panic!("{source}: no message on stderr:\n{err}"));
    assert!(line.contains(expect), "{source}: {line:?} lacks {expect:?}");
    if let Some(addr) = out
        .lines()
        .find_map(|l| l.strip_prefix("block 0x"))
        .filter(|_| expect != "heap corruption")
    {
        assert!(
            line.contains(&format!("0x{addr}")),
            "{source}: {line:?} does not name the block 0x{addr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The signal numbers these tests expect (Linux).
mod libc_sig {
    pub const SIGABRT: i32 = 6;
    pub const SIGSEGV: i32 = 11;
}

#[test]
fn a_double_free_aborts() {
    misuse("double_free.c", "free(): double free of");
    misuse("double_free.c", "(48-byte class)");
}

/// A double free of a block whose first word (its coded link) the program
/// overwrote after the first free: the tag says free and the link says
/// not, so the free's hit path asks the thread's list, which holds the
/// block. (Before, the block went onto the list a second time and the
/// program got it twice.)
#[test]
fn a_double_free_after_the_link_was_overwritten_aborts() {
    misuse("double_free_overwritten.c", "free(): double free of");
    misuse("double_free_overwritten.c", "(48-byte class)");
}

#[test]
fn a_double_free_of_a_block_out_of_the_cache_aborts() {
    misuse("double_free_flushed.c", "free(): double free of");
}

#[test]
fn a_free_inside_a_block_aborts() {
    misuse("interior_free.c", "free(): invalid pointer");
}

#[test]
fn a_free_of_the_stack_aborts() {
    misuse("stack_free.c", "free(): invalid pointer");
    misuse("stack_free_first.c", "free(): invalid pointer");
}

#[test]
fn a_realloc_of_the_stack_aborts() {
    misuse("stack_realloc.c", "realloc(): invalid pointer");
}

/// A free of a block that is linked into a free list but was never handed
/// out (the next block of a fresh run) is a free of a free block: the
/// library linked it tagged. Before, the free pushed it a second time and
/// the next two allocations got the same block.
#[test]
fn a_free_of_a_block_never_handed_out_aborts() {
    misuse("free_never_handed_out.c", "free(): double free of");
    misuse("free_never_handed_out.c", "(704-byte class)");
}

/// A free of a block the library has not linked yet (the last block of a
/// class's first span to be linked) puts it in a free list; a release
/// build's span chain then reaches it and finds it written. Before, the
/// chain linked it again and the program got the block twice. A debug
/// build's bitmap marks every block of a new span free, so its free
/// aborts at once, as a double free (`scripts/test gungraun` runs these
/// tests on the release build too).
#[test]
fn a_free_of_a_block_not_yet_linked_aborts() {
    misuse_caught_at_the_link("free_not_yet_linked.c", "(704-byte class)");
}

/// A misuse that a release build catches when the span's chain links the
/// block again (`heap corruption: … was written before it was handed
/// out`) and a debug build's bitmap catches at the free (`double free`):
/// each build's line, and the block's class.
fn misuse_caught_at_the_link(source: &str, class: &str) {
    if cfg!(debug_assertions) {
        misuse(source, "allocasm-malloc: free(): double free of 0x");
    } else {
        misuse(source, "allocasm-malloc: malloc(): heap corruption: 0x");
        misuse(source, "was written before it was handed out");
    }
    misuse(source, class);
}

/// `realloc` of a freed block to a size of its own class returned the
/// block as it was, while the thread cache held it: the next `malloc` of
/// the class returned it again. glibc does the same; the library aborts.
#[test]
fn a_realloc_of_a_freed_block_aborts() {
    misuse_where(
        "realloc_freed.c",
        "allocasm-malloc: realloc(): use after free of 0x",
        Glibc::HandsOutTwice,
    );
    misuse_where("realloc_freed.c", "(48-byte class)", Glibc::HandsOutTwice);
}

/// The same through `realloc`'s hit path (a class block to at most 32
/// bytes of another class, moved by one step of the thread cache): the
/// freed block is caught before it is moved.
#[test]
fn a_small_realloc_of_a_freed_block_aborts() {
    misuse_where(
        "realloc_freed_small.c",
        "allocasm-malloc: realloc(): use after free of 0x",
        Glibc::HandsOutTwice,
    );
    misuse_where(
        "realloc_freed_small.c",
        "(48-byte class)",
        Glibc::HandsOutTwice,
    );
}

/// The same after a write after free into the block's first word: the tag
/// says free, the link says not, and the thread's list, which holds the
/// block, decides. (Before, the move put the block on its list a second
/// time, and the program's next two `malloc(48)` returned it twice.)
#[test]
fn a_small_realloc_of_a_freed_block_with_its_link_overwritten_aborts() {
    misuse_where(
        "realloc_freed_overwritten.c",
        "allocasm-malloc: realloc(): use after free of 0x",
        Glibc::HandsOutTwice,
    );
}

/// A double free of a block whose span `malloc_trim` purged: the purge
/// took the block's tag, so the free goes through, and the span grown
/// again links the block a second time. A release build's trim now zeroes
/// the first words the purge does not (the header's page), so the span
/// grows again checked, and the link finds the block written; a debug
/// build's bitmap still holds the block free and aborts at the free.
/// (Before, the program got the block twice.)
#[test]
fn a_double_free_after_a_trim_aborts() {
    misuse_caught_at_the_link("double_free_trimmed.c", "(704-byte class)");
}

/// `malloc_trim` is the library's: it purges the pages of the spans whose
/// blocks are all free and says so (1), and the blocks allocated after it
/// hold what is written to them. Before, the symbol was glibc's, which
/// trims glibc's own heap: it returned 0 and the 13.7 MiB of freed
/// 700-byte blocks stayed resident (15.8 MiB before and after).
#[test]
fn malloc_trim_gives_the_free_pages_back() {
    let stdout = stdout_under_library("trim.c", Duration::from_secs(120));
    let get = |key: &str| -> i64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{key}` line: {stdout}"))
    };
    assert_eq!(get("released"), 1, "{stdout}");
    let (before, after) = (get("rss-before"), get("rss-after"));
    assert!(
        after + 8 * 1024 <= before,
        "the trim released less than 8 MiB of 13.7 MiB freed: {before} KiB -> {after} KiB"
    );
    assert!(stdout.contains("reused ok"), "{stdout}");
}

#[test]
fn a_double_free_of_a_large_block_aborts() {
    misuse("large_double_free.c", "free(): double free of");
}

/// `realloc` that moves a block frees the old one itself (without looking
/// it up again); a later `free` of the old pointer is a double free.
#[test]
fn a_free_of_a_block_realloc_moved_aborts() {
    misuse("realloc_moved_free.c", "free(): double free of");
    misuse("realloc_moved_free.c", "(48-byte class)");
}

/// The same for a block `realloc`'s hit path moved (16 to 32 bytes: the
/// old block goes into the thread cache without the push's own test,
/// which the hit path made before the move).
#[test]
fn a_free_of_a_block_the_small_realloc_moved_aborts() {
    misuse("realloc_moved_free_small.c", "free(): double free of");
    misuse("realloc_moved_free_small.c", "(16-byte class)");
}

#[test]
fn a_write_after_free_into_a_free_list_aborts() {
    misuse("write_after_free.c", "heap corruption");
}

/// The same into a block of the shared level (a run or the class queue):
/// their links are coded and checked too.
#[test]
fn a_write_after_free_into_the_shared_level_aborts() {
    misuse("write_after_free_shared.c", "heap corruption");
}

/// The line is the issue's: the library's name, the call, the misuse, the
/// block and its class.
#[test]
fn the_lines_name_the_library() {
    misuse(
        "double_free.c",
        "allocasm-malloc: free(): double free of 0x",
    );
    misuse(
        "interior_free.c",
        "allocasm-malloc: free(): invalid pointer 0x",
    );
}

/// A large `calloc` block up to 32 MiB comes resident (one fault per page
/// in one `madvise`, where a program that reads the zeroed table before it
/// writes it would take two: docs/program-bench.md); a larger one stays
/// lazy, so a sparse giant table costs only what is touched. Every byte
/// reads as zero either way. On a kernel without `MADV_POPULATE_WRITE`
/// (before 5.14) nothing is populated.
#[test]
fn calloc_populates_large_blocks_up_to_32_mib() {
    let stdout = stdout_under_library("calloc_resident.c", Duration::from_secs(60));
    let populate = stdout.contains("populate yes\n");
    let mut seen = 0;
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["resident", n, resident, pages, zero] = words.as_slice() {
            let (n, resident, pages): (usize, usize, usize) = (
                n.parse().unwrap(),
                resident.parse().unwrap(),
                pages.parse().unwrap(),
            );
            assert_eq!(*zero, "zero", "calloc({n}) read a non-zero byte");
            let populated = populate && n <= 32 << 20;
            if populated {
                assert_eq!(resident, pages, "calloc({n}): every page resident");
            } else {
                // Only the header's page was written before `mincore`: 4 KiB,
                // or one 2 MiB page where transparent huge pages are on
                // always. Allow 4 MiB of the block's 64 MiB.
                assert!(
                    resident <= 1024,
                    "calloc({n}): {resident} of {pages} pages resident, expected it lazy"
                );
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "{stdout}");
}

/// A process the library is preloaded into loads no `libgcc_s.so.1`: the
/// library carries GCC's unwinder inside (`malloc/build.rs`), where every
/// process paid for loading the shared one and for its constructor's
/// `cpuid`s. Checked where that build found the archive (it says so), as
/// it does with gcc installed.
#[test]
fn preloading_loads_no_libgcc_s() {
    if option_env!("ALLOCASM_MALLOC_STATIC_UNWINDER").is_none() {
        eprintln!(
            "skipped: malloc/build.rs found no libgcc_eh.a, so the library links libgcc_s.so.1"
        );
        return;
    }
    let mut cat = Command::new("cat");
    cat.arg("/proc/self/maps");
    let r = run(cat, true, Duration::from_secs(30));
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let lib = library();
    let name = lib.file_name().expect("a file name").to_string_lossy();
    assert!(
        r.stdout.contains(&*name),
        "the library is not mapped:\n{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("libgcc_s"),
        "libgcc_s.so.1 is loaded beside the library:\n{}",
        r.stdout
    );
    // The unwinder inside stays private: a program's lookups of its entry
    // points find none in the library (only `malloc`, which it exports).
    let dir = scratch("unwind-symbols");
    let exe = compile("unwind_symbols.c", &dir);
    let r = run(Command::new(&exe), true, Duration::from_secs(30));
    assert_eq!(r.status, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout.lines().count(), 9, "{}", r.stdout);
    for line in r.stdout.lines() {
        let ours = line.contains(&*name);
        assert_eq!(
            ours,
            line.starts_with("malloc "),
            "the library exports the wrong symbols:\n{}",
            r.stdout
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
