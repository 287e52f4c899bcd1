//! Any input, no panic: the parser, the normalizer, the control-flow model,
//! the function index and the walk through calls over mutated real
//! listings.
//!
//! Each case takes one listing of `snapshots/` (a real function of some
//! profile), writes it back as a `.s` (its label declared a function, its
//! instructions indented, a callee of its own beside it), then mutates it:
//! lines dropped, swapped, duplicated or truncated, labels renamed, and
//! directives of other targets and formats inserted (Mach-O, COFF, Arm,
//! aliases, section changes). The text is read as every object format, each
//! function normalized for every architecture, analyzed, its hot path and
//! its walk through calls taken: none of it may panic, and each case runs
//! under a watchdog so a hang fails rather than stalls. proptest shrinks a
//! failure to the fewest mutations.
//!
//! What it found (fixed with it): see the commit that added it.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use allocasm_suite::codegen::functions::FunctionIndex;
use allocasm_suite::codegen::normalize::{check_readable, normalize};
use allocasm_suite::codegen::parse::parse_asm;
use allocasm_suite::codegen::{ObjectFormat, snapshots_dir};
use allocasm_suite::codegen::{Profile, cfg, follow, load_profiles};
use proptest::prelude::*;

/// Every snapshot's listing, with its profile's name.
fn corpus() -> &'static [(String, String)] {
    static CORPUS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut out = Vec::new();
        let mut dirs: Vec<PathBuf> = vec![snapshots_dir()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            entries.sort();
            for p in entries {
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|e| e == "snap") {
                    let text = std::fs::read_to_string(&p).expect("read snapshot");
                    let body = text
                        .strip_prefix("---\n")
                        .and_then(|r| r.find("\n---\n").map(|e| r[e + 5..].to_string()));
                    let profile = p
                        .parent()
                        .and_then(|d| d.file_name())
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if let Some(body) = body {
                        out.push((profile, body));
                    }
                }
            }
        }
        assert!(out.len() > 100, "snapshots/ holds the corpus");
        out
    })
}

fn profiles() -> &'static [Profile] {
    static P: OnceLock<Vec<Profile>> = OnceLock::new();
    P.get_or_init(|| load_profiles().expect("targets/"))
}

/// A listing written back as a `.s`: the function declared (ELF and COFF
/// style), its instructions indented, and a callee of its own after it.
fn as_assembly(listing: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut first = true;
    for l in listing.lines() {
        if first {
            let name = l.trim_end_matches(':');
            lines.push("\t.text".to_string());
            lines.push(format!("\t.type\t{name},@function"));
            lines.push(format!("\t.def\t{name}; .scl 2; .type 32; .endef"));
            lines.push(format!("{name}:"));
            first = false;
        } else if let Some(label) = l.strip_suffix(':') {
            lines.push(format!("{label}:"));
        } else {
            lines.push(format!("\t{}", l.trim()));
        }
    }
    lines.push("\t.size\tf, .-f".to_string());
    lines.push("\t.type\t_ZN4fuzz6callee17h0123456789abcdefE,@function".to_string());
    lines.push("_ZN4fuzz6callee17h0123456789abcdefE:".to_string());
    lines.push("\tlock xadd qword ptr [rdi], rax".to_string());
    lines.push("\tcall _ZN4fuzz6callee17h0123456789abcdefE".to_string());
    lines.push("\tret".to_string());
    lines
}

/// Lines of other targets and formats, and odd ones.
const FOREIGN: &[&str] = &[
    "\t.section\t__TEXT,__text,regular,pure_instructions",
    "_macho_fn:",
    "Ltmp0:",
    "\t.cfi_startproc",
    "\t.cfi_endproc",
    "\t.seh_proc f",
    "\t.seh_endproc",
    "\t.seh_handlerdata",
    "\t.def\tg;\t.scl\t3;\t.type\t32;\t.endef",
    "\t.section\t.text.unlikely.f,\"ax\",@progbits",
    "\t.section\t.rodata",
    "\t.data",
    "\t.set f, g",
    "f = g",
    "g = f",
    "\t.type\tg,@function",
    "g:",
    "\t.size\tg, .-g",
    "\t.p2align\t4, 0x90",
    "\t.loh AdrpAdd\tLloh0, Lloh1",
    "\t.inst\t0xe7ffdefe",
    "\t.long\tcounter(GOTTPOFF)-(.LPC0_0+8)",
    "\t.quad\t.LBB0_3",
    "\tpop\t{r4, pc}",
    "\tpopne\t{r4, pc}",
    "\tbxeq lr",
    "\tb.ne .LBB0_1",
    "\tjmp qword ptr [rip + f@GOTPCREL]",
    "\tjmp\trax",
    "\tcall\tqword ptr [rax + 8]",
    "\tcall\t_RNvMs_NtCs1234_5alloc3vecINtB4_3VechE4push",
    "\tcall\t_ZN4core9panicking5panic17h0000000000000000E",
    "\tlock",
    "\tdata16",
    "\tret",
    "\tud2",
    "#APP",
    "\t# comment ; // more",
    "\"quoted name\":",
    "\"unterminated:",
    ":",
    "\t<<<>>>::<",
    "\tcall <<a as b>::c>::<d<<e>>",
    "\tjmp .L",
    "\t, , ,",
    "\tmov\té, ü",
    "\t\u{0}\u{7f}",
];

/// One mutation: `(kind, a, b)` picks what to do and where.
type Mutation = (u8, usize, usize);

fn mutate(lines: &mut Vec<String>, (kind, a, b): Mutation) {
    let n = lines.len();
    match kind % 7 {
        0 if n > 0 => {
            lines.remove(a % n);
        }
        1 if n > 1 => lines.swap(a % n, b % n),
        2 if n > 0 => {
            let l = &mut lines[a % n];
            let cut = l
                .char_indices()
                .map(|(i, _)| i)
                .nth(b % (l.chars().count() + 1))
                .unwrap_or(l.len());
            l.truncate(cut);
        }
        3 if n > 0 => {
            // Rename a label everywhere it appears, or only where defined.
            let l = lines[a % n].clone();
            let word = l
                .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
                .find(|w| w.starts_with(".L") || w.starts_with('L'))
                .map(str::to_string);
            if let Some(w) = word {
                let new = format!(".Lrenamed{b}");
                if b % 2 == 0 {
                    for l in lines.iter_mut() {
                        *l = l.replace(&w, &new);
                    }
                } else {
                    lines[a % n] = l.replace(&w, &new);
                }
            }
        }
        4 => lines.insert(a % (n + 1), FOREIGN[b % FOREIGN.len()].to_string()),
        5 if n > 0 => {
            let l = lines[a % n].clone();
            lines.insert(b % (n + 1), l);
        }
        6 if n > 0 => {
            // The listing cut short: everything after a line gone.
            lines.truncate((a % n).max(1));
        }
        _ => {}
    }
}

/// Everything the model does with a `.s`, on every format and every
/// profile's architecture (the profile the listing came from first).
fn exercise(text: &str, home: &str) {
    let profiles = profiles();
    let mut order: Vec<&Profile> = profiles.iter().filter(|p| p.name == home).collect();
    // Two more: one per other architecture family is enough per case.
    order.extend(
        profiles
            .iter()
            .filter(|p| p.name != home)
            .step_by(4)
            .take(3),
    );
    for format in [ObjectFormat::Elf, ObjectFormat::MachO, ObjectFormat::Coff] {
        let asm = parse_asm(text, format);
        let _ = asm.names();
        let index = FunctionIndex::from_assemblies(std::slice::from_ref(&asm));
        let _ = index.find("callee");
        let _ = index.find("f#2");
        let cold = asm.cold.iter().cloned().collect();
        for profile in &order {
            let arch = profile.arch();
            for f in &asm.functions {
                let _ = check_readable(f, &arch);
                let listing = normalize(f, &arch);
                let _ = listing.summary(&profile.classes);
                let _ = listing.text();
                let cfg = cfg::analyze(&listing, profile, &cold);
                let hot = cfg.hot_path();
                assert!(hot.instructions <= hot.function_instructions);
                for n in 0..listing.lines.len() {
                    let _ = cfg.in_class(n, allocasm_suite::codegen::Class::Call);
                }
            }
            for e in &index.entries {
                let listing = e.listing(profile);
                let walk = follow::follow(profile, &index, e, &listing, &cold, 3);
                let _ = walk.report_lines();
                let _ = walk.combined(profile);
            }
        }
    }
}

/// [`exercise`] on a thread of its own, which must end within a generous
/// bound: a hang is a failure, not a stalled test run.
fn exercise_with_watchdog(text: String, home: String) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let t = text.clone();
    let worker = std::thread::spawn(move || {
        exercise(&t, &home);
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => worker.join().map_err(|_| format!("panicked on:\n{text}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = worker.join();
            Err(format!("panicked on:\n{text}"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("still running after 60 s (a hang) on:\n{text}"))
        }
    }
}

/// Every real listing reads as one, on its own profile's architecture; a
/// line that is none is an error naming the function and the line.
#[test]
#[cfg_attr(miri, ignore)]
fn real_listings_are_readable_and_garbage_is_named() {
    let mut checked = 0;
    for (home, listing) in corpus() {
        let Some(profile) = profiles().iter().find(|p| &p.name == home) else {
            continue;
        };
        let asm = parse_asm(&as_assembly(listing).join("\n"), ObjectFormat::Elf);
        for f in &asm.functions {
            if let Err(e) = check_readable(f, &profile.arch()) {
                panic!("{home}: {e}");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} functions checked");
    let mut lines = as_assembly("probe_x:\n  mov rax, rdi\n  ret");
    let at = lines.iter().position(|l| l == "\tret").expect("a ret");
    lines.insert(at, "\t<<<>>>::<".to_string());
    let asm = parse_asm(&lines.join("\n"), ObjectFormat::Elf);
    let f = asm.function("probe_x").expect("probe_x");
    let arch = profiles()[0].arch();
    let e = check_readable(f, &arch).expect_err("an unreadable line");
    assert_eq!((e.function.as_str(), e.line), ("probe_x", 3));
    assert!(
        e.to_string()
            .contains("cannot read function probe_x: its line 3 `\\t<<<>>>::<`"),
        "{e}"
    );
}

/// The raw `.s` files the extractor's tests keep (every format and
/// architecture, as compilers wrote them) read without an unreadable line.
#[test]
#[cfg_attr(miri, ignore)]
fn raw_compiler_output_is_readable() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codegen/testdata");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("testdata") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".s") else {
            continue;
        };
        let format = match stem.split('-').next() {
            Some("elf") => ObjectFormat::Elf,
            Some("coff") => ObjectFormat::Coff,
            Some("macho") => ObjectFormat::MachO,
            _ => continue,
        };
        let triple = match stem.split('-').nth(1) {
            Some("x86_64") => "x86_64-unknown-linux-gnu",
            Some("aarch64") => "aarch64-unknown-linux-gnu",
            Some(a) if a.starts_with("armv7") => "armv7-unknown-linux-gnueabihf",
            Some("riscv64") => "riscv64gc-unknown-linux-gnu",
            _ => continue,
        };
        let arch = allocasm_suite::codegen::Arch::from_triple(triple);
        let text = std::fs::read_to_string(&path).expect("read");
        for f in &parse_asm(&text, format).functions {
            if let Err(e) = check_readable(f, &arch) {
                panic!("{name}: {e}");
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "{checked} functions read");
}

proptest! {
    // 256 cases: about 20 s of a debug build on the 2-core AMD EPYC the
    // suite is developed on; `ALLOCASM_FUZZ_CASES` runs more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("ALLOCASM_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn mutated_listings_never_panic_nor_hang(
        pick in any::<usize>(),
        mutations in prop::collection::vec(any::<Mutation>(), 0..12),
    ) {
        let corpus = corpus();
        let (home, listing) = &corpus[pick % corpus.len()];
        let mut lines = as_assembly(listing);
        for m in mutations {
            mutate(&mut lines, m);
        }
        let text = lines.join("\n");
        if let Err(e) = exercise_with_watchdog(text, home.clone()) {
            prop_assert!(false, "{}", e);
        }
    }
}
