//! Every outside tool the suite and its tests use, found in one place.
//!
//! allocasm itself needs only rustup's toolchain; everything else is
//! optional and adds a view: the disassembler (the toolchain's own
//! `llvm-objdump`, from the `llvm-tools` component) makes the linked views
//! and the executed counts, llvm-mca the cycle predictions, qemu-user and
//! the cross linkers the other architectures' executables, valgrind the
//! instruction-count benches, a browser the HTML report's layout test, and
//! a few allocators and programs the program bench. [`find`] looks one up
//! (where, which version), [`inventory`] lists them all for `allocasm
//! doctor`, and each [`Found`] or [`Missing`] says what the tool enables
//! and how to install it on this OS. Tests that need a tool ask [`need`]:
//! without it they skip with one line, unless `ALLOCASM_REQUIRE` names it.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::codegen::profile::Arch;

/// One outside tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    /// The disassembler the linked view and the executed counts read:
    /// `$ALLOCASM_OBJDUMP`, else the toolchain's `llvm-objdump`
    /// ([`Tool::LlvmObjdump`]), else GNU objdump for the architecture
    /// (`<gnu-triple>-objdump`, the host's `objdump`) as the fallback. The
    /// linked parser reads both spellings (`codegen::linked`).
    Disassembler(Arch),
    /// The toolchain's own `llvm-objdump` (rustup's `llvm-tools`
    /// component): every architecture, the compiler's LLVM.
    LlvmObjdump,
    /// llvm-mca: the cycle predictions of the report.
    LlvmMca,
    /// `qemu-<arch>` (qemu-user): runs another architecture's executables.
    Qemu(Arch),
    /// `<gnu-triple>-gcc` and its C library: links another architecture's
    /// Linux executables.
    CrossGcc(Arch),
    /// valgrind (callgrind): the instruction-count benches.
    Valgrind,
    /// A headless Chromium or Chrome: the HTML report's layout test.
    Browser,
    /// A program or allocator library of the program bench.
    BenchProgram(&'static str),
}

/// The architectures of the profiles, in report order.
pub const ARCHES: [Arch; 4] = [Arch::X86_64, Arch::Aarch64, Arch::Riscv64, Arch::Arm];

/// The program bench's allocators and programs (scripts/bench_programs.py).
pub const BENCH_PROGRAMS: [&str; 7] = [
    "jemalloc", "tcmalloc", "mimalloc", "sqlite3", "lua5.4", "zstd", "gcc",
];

/// `qemu-<arch>`'s suffix and the GNU triple of an architecture's Linux.
pub(crate) fn arch_names(arch: &Arch) -> Option<(&'static str, &'static str)> {
    match arch {
        Arch::X86_64 => Some(("x86_64", "x86_64-linux-gnu")),
        Arch::Aarch64 => Some(("aarch64", "aarch64-linux-gnu")),
        Arch::Riscv64 => Some(("riscv64", "riscv64-linux-gnu")),
        Arch::Arm => Some(("arm", "arm-linux-gnueabihf")),
        Arch::Other(_) => None,
    }
}

/// The architecture as `scripts/test` names its step.
fn arch_label(arch: &Arch) -> &str {
    match arch {
        Arch::X86_64 => "x86_64",
        Arch::Aarch64 => "aarch64",
        Arch::Riscv64 => "riscv64",
        Arch::Arm => "armv7",
        Arch::Other(a) => a,
    }
}

fn host_arch() -> Arch {
    Arch::from_triple(std::env::consts::ARCH)
}

impl Tool {
    /// The name `ALLOCASM_REQUIRE`, doctor and skip lines use:
    /// `llvm-objdump`, `llvm-mca`, `qemu-aarch64`, `aarch64-linux-gnu-gcc`,
    /// `valgrind`, `chromium`, `jemalloc`…
    pub fn name(&self) -> String {
        match self {
            Tool::Disassembler(a) if *a == host_arch() => "objdump".into(),
            Tool::Disassembler(a) => format!("{}-objdump", arch_names(a).map_or("?", |n| n.1)),
            Tool::LlvmObjdump => "llvm-objdump".into(),
            Tool::LlvmMca => "llvm-mca".into(),
            Tool::Qemu(a) => format!("qemu-{}", arch_names(a).map_or("?", |n| n.0)),
            Tool::CrossGcc(a) => format!("{}-gcc", arch_names(a).map_or("?", |n| n.1)),
            Tool::Valgrind => "valgrind".into(),
            Tool::Browser => "chromium".into(),
            Tool::BenchProgram(p) => (*p).into(),
        }
    }

    /// The group a name of `ALLOCASM_REQUIRE` may also give: `qemu`,
    /// `cross-gcc`, `objdump`, `bench-programs` (or the name itself).
    pub fn family(&self) -> &'static str {
        match self {
            Tool::Disassembler(_) | Tool::LlvmObjdump => "objdump",
            Tool::LlvmMca => "llvm-mca",
            Tool::Qemu(_) => "qemu",
            Tool::CrossGcc(_) => "cross-gcc",
            Tool::Valgrind => "valgrind",
            Tool::Browser => "chromium",
            Tool::BenchProgram(_) => "bench-programs",
        }
    }

    /// What the tool enables.
    pub fn enables(&self) -> String {
        match self {
            Tool::Disassembler(a) => format!(
                "{} linked views and executed counts (disassembly of the executables)",
                arch_label(a)
            ),
            Tool::LlvmObjdump => {
                "the disassembler of every architecture's linked views and executed counts".into()
            }
            Tool::LlvmMca => "the report's llvm-mca cycles per CPU".into(),
            Tool::Qemu(a) if *a == host_arch() => format!(
                "{} executed counts (one-instruction tracing under qemu-user)",
                arch_label(a)
            ),
            Tool::Qemu(a) => format!(
                "{0} executed counts, the cross tests and `scripts/test {0}`",
                arch_label(a)
            ),
            Tool::CrossGcc(a) => format!(
                "linking {} Linux executables: linked views, executed counts, tests",
                arch_label(a)
            ),
            Tool::Valgrind => "the gungraun step (callgrind instruction counts)".into(),
            Tool::Browser => "the HTML report's layout test (report_html)".into(),
            Tool::BenchProgram(p) => format!("the program bench's {p} rows (scripts/bench)"),
        }
    }

    /// Where this host has no use for the tool (a macOS host links no
    /// Linux executables), why; `None` when it can use it.
    pub fn not_for_this_host(&self) -> Option<&'static str> {
        let linux = cfg!(target_os = "linux");
        match self {
            Tool::Qemu(_) | Tool::CrossGcc(_) | Tool::Valgrind | Tool::BenchProgram(_)
                if !linux =>
            {
                Some("Linux hosts only")
            }
            Tool::CrossGcc(a) if *a == host_arch() => Some("the host's own cc links"),
            _ => None,
        }
    }

    /// The command that installs the tool on this OS.
    pub fn install(&self) -> String {
        install_line(self, Os::current())
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The host's kind of package manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Debian (its `llvm-22` comes from apt.llvm.org on Debian 12).
    Debian,
    /// Ubuntu (or another apt distribution): `llvm` is the archive's newest.
    Ubuntu,
    /// Another Linux.
    OtherLinux,
    /// macOS (Homebrew).
    MacOs,
    /// Windows (winget).
    Windows,
    /// Anything else.
    Other,
}

impl Os {
    /// This host.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            return Os::MacOs;
        }
        if cfg!(windows) {
            return Os::Windows;
        }
        if !cfg!(target_os = "linux") {
            return Os::Other;
        }
        let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        let id = |key: &str| {
            release
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim_matches('"').to_string())
                .unwrap_or_default()
        };
        match (id("ID=").as_str(), id("ID_LIKE=")) {
            ("debian", _) => Os::Debian,
            (_, like) if like.contains("debian") || like.contains("ubuntu") => Os::Ubuntu,
            ("ubuntu", _) => Os::Ubuntu,
            _ => Os::OtherLinux,
        }
    }
}

fn install_line(tool: &Tool, os: Os) -> String {
    let apt = |p: &str| format!("sudo apt-get install {p}");
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN")
        .ok()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" --toolchain {t}"))
        .unwrap_or_default();
    match (tool, os) {
        (Tool::LlvmObjdump, _) => format!("rustup component add llvm-tools{toolchain}"),
        // llvm-objdump first; GNU objdump (the cross binutils) the fallback.
        (Tool::Disassembler(_), _) => install_line(&Tool::LlvmObjdump, os),
        (Tool::LlvmMca, Os::Debian) => {
            "sudo apt-get install llvm-22 (Debian 12: from apt.llvm.org)".into()
        }
        (Tool::LlvmMca, Os::Ubuntu) => apt("llvm"),
        (Tool::LlvmMca, Os::MacOs) => "brew install llvm".into(),
        (Tool::LlvmMca, Os::Windows) => "winget install LLVM.LLVM (or choco install llvm)".into(),
        (Tool::LlvmMca, _) => "install LLVM (its llvm-mca) with your package manager".into(),
        (t, Os::MacOs | Os::Windows) if t.not_for_this_host().is_some() => {
            format!("none ({})", t.not_for_this_host().unwrap_or(""))
        }
        (Tool::Qemu(_), Os::Debian | Os::Ubuntu) => apt("qemu-user"),
        (Tool::CrossGcc(a), Os::Debian | Os::Ubuntu) => {
            let (gcc, libc) = match a {
                Arch::Aarch64 => ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
                Arch::Riscv64 => ("gcc-riscv64-linux-gnu", "libc6-dev-riscv64-cross"),
                Arch::Arm => ("gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"),
                _ => ("gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"),
            };
            apt(&format!("{gcc} {libc}"))
        }
        (Tool::Valgrind, Os::Debian | Os::Ubuntu) => apt("valgrind"),
        (Tool::Browser, Os::Debian) => apt("chromium"),
        (Tool::Browser, Os::Ubuntu) => {
            "install Google Chrome (Ubuntu's chromium is a snap), or set CHROMIUM".into()
        }
        (Tool::Browser, Os::MacOs) => "brew install --cask chromium".into(),
        (Tool::Browser, Os::Windows) => "winget install Google.Chrome".into(),
        (Tool::BenchProgram(p), Os::Debian | Os::Ubuntu) => apt(match *p {
            "jemalloc" => "libjemalloc2",
            "tcmalloc" => "libtcmalloc-minimal4",
            "mimalloc" => "libmimalloc2.0",
            "lua5.4" => "lua5.4",
            other => other,
        }),
        (t, _) => format!("install {} with your package manager", t.name()),
    }
}

/// A tool that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The tool.
    pub tool: Tool,
    /// The program (or library) to use: a path, or a name on `PATH`.
    pub program: PathBuf,
    /// The first line of its `--version`, when it has one.
    pub version: Option<String>,
    /// Whether it is the fallback rather than the default (GNU objdump in
    /// place of llvm-objdump, an llvm-mca of another LLVM major).
    pub fallback: bool,
}

impl Found {
    /// The program as a string for `Command::new` and messages: its bare
    /// name when that is what `PATH` finds first (`llvm-mca-22`), else its
    /// path.
    pub fn program(&self) -> String {
        if let Some(name) = self.program.file_name().and_then(|n| n.to_str())
            && which(name).as_deref() == Some(self.program.as_path())
        {
            return name.to_string();
        }
        self.program.display().to_string()
    }
}

/// A tool that was not found: what it would enable and how to install it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The tool.
    pub tool: Tool,
    /// What was looked for.
    pub looked_for: String,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} not found (install: {})",
            self.tool.name(),
            self.tool.install()
        )
    }
}

/// Whether `program` is an executable file in a directory of `$PATH`; its
/// path when it is. A path with a separator is checked as it is.
pub fn which(program: &str) -> Option<PathBuf> {
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                m.is_file()
            }
        })
    };
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let p = dir.join(program);
        if runnable(&p) {
            return Some(p);
        }
        let exe = dir.join(format!("{program}{}", std::env::consts::EXE_SUFFIX));
        (cfg!(windows) && runnable(&exe)).then_some(exe)
    })
}

/// The first line of `program --version` (memoized), `None` when it does
/// not run.
pub fn version(program: &Path) -> Option<String> {
    static SEEN: Mutex<BTreeMap<PathBuf, Option<String>>> = Mutex::new(BTreeMap::new());
    memoized(&SEEN, program, || {
        Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                let text = String::from_utf8_lossy(&o.stdout);
                // llvm tools print "LLVM (http://llvm.org/):" first.
                text.lines()
                    .map(str::trim)
                    .find(|l| l.contains("version") || l.chars().any(|c| c.is_ascii_digit()))
                    .unwrap_or("")
                    .to_string()
            })
    })
}

/// `key`'s answer in `memo`: `f()`, computed without the lock held and
/// kept the first time.
pub(crate) fn memoized<Q, K, V>(memo: &Mutex<BTreeMap<K, V>>, key: &Q, f: impl FnOnce() -> V) -> V
where
    Q: Ord + ToOwned<Owned = K> + ?Sized,
    K: Ord + std::borrow::Borrow<Q>,
    V: Clone,
{
    if let Some(v) = memo.lock().expect("memo lock").get(key) {
        return v.clone();
    }
    let v = f();
    memo.lock()
        .expect("memo lock")
        .insert(key.to_owned(), v.clone());
    v
}

/// The compiler's `rustc -vV` (`$RUSTC`, else `rustc`), memoized.
fn rustc_vv() -> Option<&'static str> {
    static VV: OnceLock<Option<String>> = OnceLock::new();
    VV.get_or_init(|| {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let o = Command::new(rustc).arg("-vV").output().ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    })
    .as_deref()
}

/// The LLVM major of the compiler (`LLVM version: 23.1.1` of `rustc -vV`).
pub fn rustc_llvm_major() -> Option<u32> {
    rustc_vv()?
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next()?.trim().parse().ok())
}

/// `$(rustc --print sysroot)/lib/rustlib/<host>/bin`: where the
/// `llvm-tools` component puts `llvm-objdump`.
pub fn rustlib_bin() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let host = rustc_vv()?
            .lines()
            .find_map(|l| l.strip_prefix("host: "))?
            .trim()
            .to_string();
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let o = Command::new(rustc)
            .args(["--print", "sysroot"])
            .output()
            .ok()?;
        let sysroot = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Some(
            PathBuf::from(sysroot)
                .join("lib/rustlib")
                .join(host)
                .join("bin"),
        )
    })
    .clone()
}

/// The newest `<name>-NN` among `PATH`'s programs, `/usr/lib/llvm-NN/bin`
/// and Homebrew's LLVM, with its major; `prefer` first when it is there.
fn llvm_program(name: &str, prefer: Option<u32>) -> Option<(PathBuf, Option<u32>)> {
    let major_of = |p: &Path| -> Option<u32> {
        let v = version(p)?;
        let at = v.find("version ")? + "version ".len();
        v[at..].split('.').next()?.trim().parse().ok()
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(m) = prefer
        && let Some(p) = which(&format!("{name}-{m}"))
    {
        return Some((p, Some(m)));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                let versioned = file
                    .strip_prefix(name)
                    .and_then(|r| r.strip_prefix('-'))
                    .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()));
                if (file == name || versioned) && which(&e.path().display().to_string()).is_some() {
                    candidates.push(e.path());
                }
            }
        }
    }
    for dir in [
        "/opt/homebrew/opt/llvm/bin",
        "/usr/local/opt/llvm/bin",
        "C:\\Program Files\\LLVM\\bin",
    ] {
        let p = Path::new(dir).join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        if p.is_file() {
            candidates.push(p);
        }
    }
    let mut best: Option<(PathBuf, Option<u32>)> = None;
    for c in candidates {
        let m = major_of(&c);
        if m.is_none() {
            continue;
        }
        if m == prefer && prefer.is_some() {
            return Some((c, m));
        }
        if best.as_ref().is_none_or(|(_, b)| m > *b) {
            best = Some((c, m));
        }
    }
    best
}

/// Whether the toolchain's own llvm-objdump (rustup's `llvm-tools`) is
/// there, asked afresh (not memoized): `report --install` adds the
/// component when it is not.
pub fn toolchain_llvm_objdump() -> bool {
    find_uncached(&Tool::LlvmObjdump).is_ok_and(|f| !f.fallback)
}

/// Looks `tool` up (memoized per tool: the answer of one process).
pub fn find(tool: &Tool) -> Result<Found, Missing> {
    static SEEN: Mutex<BTreeMap<Tool, Result<Found, Missing>>> = Mutex::new(BTreeMap::new());
    memoized(&SEEN, tool, || find_uncached(tool))
}

fn found(tool: &Tool, program: PathBuf, fallback: bool) -> Result<Found, Missing> {
    let version = version(&program);
    Ok(Found {
        tool: tool.clone(),
        program,
        version,
        fallback,
    })
}

fn find_uncached(tool: &Tool) -> Result<Found, Missing> {
    let missing = |looked_for: String| {
        Err(Missing {
            tool: tool.clone(),
            looked_for,
        })
    };
    match tool {
        Tool::Disassembler(arch) => {
            if let Ok(p) = std::env::var("ALLOCASM_OBJDUMP")
                && let Some(p) = which(&p)
            {
                return found(tool, p, false);
            }
            // The toolchain's llvm-objdump reads every architecture;
            // GNU objdump for the architecture is the fallback.
            if let Ok(f) = find(&Tool::LlvmObjdump) {
                return found(tool, f.program, f.fallback);
            }
            let gnu = arch_names(arch).map(|n| format!("{}-objdump", n.1));
            if let Some(p) = gnu.as_deref().and_then(which) {
                return found(tool, p, true);
            }
            if *arch == host_arch()
                && let Some(p) = which("objdump")
            {
                return found(tool, p, true);
            }
            missing(format!(
                "llvm-objdump (llvm-tools), {}",
                gnu.unwrap_or_else(|| "objdump".into())
            ))
        }
        Tool::LlvmObjdump => {
            let own = rustlib_bin()
                .map(|d| d.join(format!("llvm-objdump{}", std::env::consts::EXE_SUFFIX)))
                .filter(|p| p.is_file());
            if let Some(p) = own {
                return found(tool, p, false);
            }
            match llvm_program("llvm-objdump", rustc_llvm_major()) {
                Some((p, _)) => found(tool, p, true),
                None => missing(format!(
                    "llvm-objdump in {}, llvm-objdump(-NN) on PATH",
                    rustlib_bin().map_or("the toolchain".into(), |d| d.display().to_string())
                )),
            }
        }
        Tool::LlvmMca => {
            if let Ok(p) = std::env::var("LLVM_MCA")
                && let Some(p) = which(&p)
            {
                return found(tool, p, false);
            }
            let want = rustc_llvm_major();
            match llvm_program("llvm-mca", want) {
                Some((p, m)) => found(tool, p, want.is_some() && m != want),
                None => missing("llvm-mca, llvm-mca-NN on PATH, Homebrew's llvm".into()),
            }
        }
        Tool::Qemu(arch) => {
            let name = tool.name();
            match (arch_names(arch), which(&name)) {
                (Some(_), Some(p)) => found(tool, p, false),
                _ => missing(name),
            }
        }
        Tool::CrossGcc(arch) => {
            let Some((_, gnu)) = arch_names(arch) else {
                return missing(tool.name());
            };
            let gcc = which(&tool.name());
            // Its C library: Debian's libc6-dev-<arch>-cross.
            let libc = Path::new("/usr").join(gnu).join("lib");
            match gcc {
                Some(p) if libc.is_dir() => found(tool, p, false),
                Some(_) => missing(format!("{} (C library)", libc.display())),
                None => missing(tool.name()),
            }
        }
        Tool::Valgrind => {
            which("valgrind").map_or_else(|| missing("valgrind".into()), |p| found(tool, p, false))
        }
        Tool::Browser => match browser() {
            Some(p) => found(tool, p, false),
            None => missing("$CHROMIUM, chromium, chromium-browser, google-chrome on PATH".into()),
        },
        Tool::BenchProgram(p) => {
            let lib = match *p {
                "jemalloc" => Some(&["libjemalloc.so.2"][..]),
                "tcmalloc" => Some(&["libtcmalloc_minimal.so.4"][..]),
                "mimalloc" => Some(&["libmimalloc.so.2", "libmimalloc.so.2.0"][..]),
                _ => None,
            };
            match lib {
                Some(names) => match find_library(names) {
                    Some(path) => Ok(Found {
                        tool: tool.clone(),
                        program: path,
                        version: None,
                        fallback: false,
                    }),
                    None => missing(names.join(", ")),
                },
                None => which(p).map_or_else(|| missing((*p).into()), |w| found(tool, w, false)),
            }
        }
    }
}

/// A shared library in the host's library directories.
fn find_library(names: &[&str]) -> Option<PathBuf> {
    let mut dirs = Vec::new();
    if let Some((_, gnu)) = arch_names(&host_arch()) {
        dirs.push(format!("/usr/lib/{gnu}"));
        dirs.push(format!("/lib/{gnu}"));
    }
    dirs.extend(["/usr/lib", "/usr/lib64", "/usr/local/lib"].map(String::from));
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| Path::new(d).join(n)))
        .find(|p| p.is_file())
}

/// A headless-capable Chromium or Chrome: `$CHROMIUM`, one on `PATH`, or
/// where GitHub's runners keep Chrome.
fn browser() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CHROMIUM") {
        return which(&p);
    }
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ] {
        if let Some(p) = which(name) {
            // Ubuntu's /usr/bin/chromium-browser is a stub that asks for
            // the snap: it must answer --version.
            if version(&p).is_some() {
                return Some(p);
            }
        }
    }
    [
        "/Applications/Chromium.app/Contents/MacOS/Chromium",
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// ` (or run scripts/setup)` after an install command in allocasm's own
/// workspace, which has that script; nothing on any other crate.
pub fn or_setup() -> &'static str {
    if crate::codegen::project::current().is_allocasm() {
        " (or run scripts/setup)"
    } else {
        ""
    }
}

/// Every tool, in doctor's order.
pub fn all_tools() -> Vec<Tool> {
    let mut tools = vec![Tool::LlvmObjdump];
    tools.extend(ARCHES.iter().cloned().map(Tool::Disassembler));
    tools.push(Tool::LlvmMca);
    tools.extend(ARCHES.iter().cloned().map(Tool::Qemu));
    tools.extend(
        ARCHES
            .iter()
            .filter(|a| **a != host_arch())
            .cloned()
            .map(Tool::CrossGcc),
    );
    tools.extend([Tool::Valgrind, Tool::Browser]);
    tools.extend(BENCH_PROGRAMS.iter().map(|p| Tool::BenchProgram(p)));
    tools
}

/// Every tool looked up.
pub fn inventory() -> Vec<(Tool, Result<Found, Missing>)> {
    all_tools()
        .into_iter()
        .map(|t| {
            let r = find(&t);
            (t, r)
        })
        .collect()
}

/// Whether `ALLOCASM_REQUIRE` (`all`, or names and families separated by
/// commas: `llvm-mca,qemu,objdump`) requires `tool`.
pub fn required(tool: &Tool) -> bool {
    required_by(&std::env::var("ALLOCASM_REQUIRE").unwrap_or_default(), tool)
}

/// [`required`] for a given value of `ALLOCASM_REQUIRE`.
pub fn required_by(require: &str, tool: &Tool) -> bool {
    let name = tool.name();
    require
        .split(',')
        .map(str::trim)
        .any(|r| r == "all" || r == name || r == tool.family())
}

/// For a test that needs `tool`: the tool when it is found; else, when
/// `ALLOCASM_REQUIRE` requires it, a panic naming it, and otherwise one
/// line on stderr, `skipped: <test>: needs <tool> (<install command>)`,
/// and `None` (the test returns). The line bypasses libtest's capture, so
/// a passing run still says what it skipped.
pub fn need(test: &str, tool: &Tool) -> Option<Found> {
    let found = find(tool).ok();
    if found.is_none() {
        skip_or_fail(test, std::slice::from_ref(tool));
    }
    found
}

/// [`need`] for several tools at once: whether all are found; the missing
/// ones go on one skip line (`needs objdump, qemu-x86_64 (install…;
/// install…)`), or a panic when `ALLOCASM_REQUIRE` requires one of them.
pub fn need_all(test: &str, tools: &[Tool]) -> bool {
    let missing: Vec<Tool> = tools.iter().filter(|t| find(t).is_err()).cloned().collect();
    if !missing.is_empty() {
        skip_or_fail(test, &missing);
    }
    missing.is_empty()
}

/// The skip line of a test whose `missing` tools are not here, or a panic
/// when `ALLOCASM_REQUIRE` requires one of them.
fn skip_or_fail(test: &str, missing: &[Tool]) {
    let mut names: Vec<String> = missing.iter().map(Tool::name).collect();
    names.dedup();
    let mut installs: Vec<String> = Vec::new();
    for t in missing {
        let i = t.install();
        if !installs.contains(&i) {
            installs.push(i);
        }
    }
    let line = format!(
        "skipped: {test}: needs {} ({})",
        names.join(", "),
        installs.join("; ")
    );
    let required: Vec<String> = missing
        .iter()
        .filter(|t| required(t))
        .map(Tool::name)
        .collect();
    if !required.is_empty() {
        panic!(
            "not skipped, failed: {}; ALLOCASM_REQUIRE={} requires {}",
            &line["skipped: ".len()..],
            std::env::var("ALLOCASM_REQUIRE").unwrap_or_default(),
            required.join(", ")
        );
    }
    let _ = writeln!(std::io::stderr(), "{line}");
    if let Some(log) = std::env::var_os("ALLOCASM_SKIP_LOG") {
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| writeln!(f, "{line}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_names_a_tool_or_its_family() {
        let q = Tool::Qemu(Arch::Aarch64);
        assert_eq!(q.name(), "qemu-aarch64");
        assert!(required_by("all", &q));
        assert!(required_by("llvm-mca, qemu", &q));
        assert!(required_by("qemu-aarch64", &q));
        assert!(!required_by("qemu-x86_64,llvm-mca", &q));
        assert!(!required_by("", &Tool::LlvmMca));
        assert!(required_by("objdump", &Tool::Disassembler(Arch::Arm)));
        assert!(required_by("llvm-objdump", &Tool::LlvmObjdump));
    }

    #[test]
    fn install_lines_fit_the_os() {
        let mca = Tool::LlvmMca;
        assert_eq!(install_line(&mca, Os::Ubuntu), "sudo apt-get install llvm");
        assert_eq!(install_line(&mca, Os::MacOs), "brew install llvm");
        assert!(install_line(&mca, Os::Windows).starts_with("winget install LLVM.LLVM"));
        assert!(
            install_line(&Tool::LlvmObjdump, Os::MacOs)
                .starts_with("rustup component add llvm-tools")
        );
        assert_eq!(
            install_line(&Tool::CrossGcc(Arch::Riscv64), Os::Debian),
            "sudo apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"
        );
        assert_eq!(
            install_line(&Tool::Qemu(Arch::Arm), Os::Debian),
            "sudo apt-get install qemu-user"
        );
        assert_eq!(
            install_line(&Tool::BenchProgram("jemalloc"), Os::Debian),
            "sudo apt-get install libjemalloc2"
        );
        assert_eq!(
            install_line(&Tool::BenchProgram("tcmalloc"), Os::Ubuntu),
            "sudo apt-get install libtcmalloc-minimal4"
        );
    }

    #[test]
    fn llvm_versions_are_read_from_their_banner() {
        let Some(bin) = rustlib_bin() else { return };
        let objdump = bin.join("llvm-objdump");
        if !objdump.is_file() {
            return;
        }
        let v = version(&objdump).expect("llvm-objdump --version");
        assert!(v.contains("version"), "{v}");
    }

    #[test]
    fn inventory_names_every_tool_once() {
        let names: Vec<String> = all_tools().iter().map(Tool::name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        for n in [
            "llvm-objdump",
            "aarch64-linux-gnu-objdump",
            "llvm-mca",
            "qemu-aarch64",
            "qemu-x86_64",
            "valgrind",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
        }
    }
}
