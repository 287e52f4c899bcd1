//! Reading `objdump`: running it, and turning its disassembly into the
//! [`Function`]s the `.s` parser yields.
//!
//! The linked view ([`super::linked`]) and the executed counts
//! ([`super::executed`]) both disassemble an executable. This module runs the
//! disassembler ([`dump`], [`run`]), reads its instruction lines
//! ([`insn_line`]), symbol tables ([`parse_symbols`], [`function_symbols`])
//! and dynamic relocations ([`got_slots`]), and cuts functions out of the
//! disassembly ([`parse_objdump_with`]), spelling GNU objdump's and
//! llvm-objdump's output alike and masking what depends on where the linker
//! put things, so the one normalizer ([`normalize`](super::normalize))
//! makes the listing of either view.
//!
//! The disassembler is the toolchain's `llvm-objdump` (rustup's
//! `llvm-tools`): one program for every architecture, the compiler's own
//! LLVM, spelling the code as the `.s` view does. GNU objdump for the
//! architecture (`objdump`, `aarch64-linux-gnu-objdump`, …, from the cross
//! gcc packages) is the fallback ([`gnu_objdump`]); this module reads both
//! spellings, so the normalization of either is here and nowhere else.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use regex::Regex;

use super::build::BuildError;
use super::parse::Function;
use super::profile::{Arch, ObjectFormat};

/// What the linked view and the executed counts read of an executable.
#[derive(Debug, Clone)]
pub struct Dump {
    /// `objdump` as the listings' headers name it: the program's file name
    /// and [`disassemble_args`].
    pub command: String,
    /// `objdump -d` ([`disassemble_args`]), prefixes joined ([`join_prefixes`]).
    pub disassembly: String,
    /// `objdump -t`.
    pub symbols: String,
    /// `objdump -R`; empty for a static executable, which has none (`-R`
    /// fails).
    pub dynamic_relocs: String,
}

/// Disassembles `exe` with `objdump`, and reads its symbols and dynamic
/// relocations. `cached`: a warm report reads the text back
/// ([`super::cache`]) instead of disassembling again ([`run_cached`]).
pub fn dump(objdump: &str, arch: &Arch, exe: &Path, cached: bool) -> Result<Dump, BuildError> {
    let run = if cached { run_cached } else { run };
    let args = disassemble_args(objdump, arch);
    Ok(Dump {
        command: format!("{} {}", program_name(objdump), args.join(" ")),
        disassembly: join_prefixes(run(objdump, &args, exe)?, arch),
        symbols: run(objdump, &["-t"], exe)?,
        dynamic_relocs: run(objdump, &["-R"], exe).unwrap_or_default(),
    })
}

/// `objdump -d` of `exe` ([`disassemble_args`]), prefixes joined
/// ([`join_prefixes`]).
pub fn disassemble(objdump: &str, arch: &Arch, exe: &Path) -> Result<String, BuildError> {
    Ok(join_prefixes(
        run(objdump, &disassemble_args(objdump, arch), exe)?,
        arch,
    ))
}

/// [`run`], read back from the project's cache when the same executable
/// and objdump printed it before.
pub fn run_cached(objdump: &str, args: &[&str], exe: &Path) -> Result<String, BuildError> {
    let cache = super::cache::Cache::of_project();
    let mut key = super::cache::Key::new("objdump");
    key.text(objdump)
        .text(&super::cache::tool_version(objdump))
        .text(&args.join(" "));
    let key = key.file(exe).ok().cloned();
    if let Some(key) = &key
        && let Some(text) = cache.get::<String>("objdump", key)
    {
        return Ok(text);
    }
    let text = run(objdump, args, exe)?;
    if let Some(key) = &key {
        cache.put("objdump", key, &text);
    }
    Ok(text)
}

/// `objdump ARGS EXE`'s output.
pub fn run(objdump: &str, args: &[&str], exe: &Path) -> Result<String, BuildError> {
    let out = crate::toolchain::output_of(Command::new(objdump).args(args).arg(exe))?;
    if !out.status.success() {
        return Err(BuildError::Command {
            command: format!(
                "{objdump} {} {} ({})",
                args.join(" "),
                exe.display(),
                out.status
            ),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// GNU objdump for an architecture (`<gnu-triple>-objdump`, the host's
/// `objdump`), when it is on `PATH`: the fallback where llvm-objdump
/// cannot read a file.
pub fn gnu_objdump(arch: &Arch) -> Option<String> {
    let (_, triple) = crate::tools::arch_names(arch)?;
    let own = format!("{triple}-objdump");
    crate::tools::which(&own)
        .or_else(|| {
            (*arch == Arch::from_triple(std::env::consts::ARCH))
                .then(|| crate::tools::which("objdump"))
                .flatten()
        })
        .map(|p| p.display().to_string())
}

/// The disassembler as the listings' headers name it: the program's file
/// name (`llvm-objdump`, `aarch64-linux-gnu-objdump`), not where this
/// machine keeps it.
fn program_name(objdump: &str) -> &str {
    Path::new(objdump)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(objdump)
}

/// Whether `objdump` is LLVM's (`llvm-objdump`, `llvm-objdump-22`, a
/// path to one): by its name, else by its `--version` banner.
pub fn is_llvm_objdump(objdump: &str) -> bool {
    program_name(objdump).contains("llvm") || super::cache::tool_version(objdump).contains("LLVM")
}

/// The arguments that disassemble an executable for the linked view and
/// the executed counts: `-d --no-show-raw-insn`, Intel syntax on x86-64,
/// and for llvm-objdump `--no-print-imm-hex`, so immediates come out in
/// decimal as in the `.s` view (llvm-objdump prints them in hex by
/// default, GNU objdump in hex on x86-64 and arm64, which
/// [`parse_objdump_with`] spells the LLVM way).
pub fn disassemble_args(objdump: &str, arch: &Arch) -> Vec<&'static str> {
    let mut args = vec!["-d", "--no-show-raw-insn"];
    if *arch == Arch::X86_64 {
        args.extend(["-M", "intel"]);
    }
    if is_llvm_objdump(objdump) {
        args.push("--no-print-imm-hex");
    }
    args
}

/// One instruction line of `objdump -d`: its address and its text (comment
/// included). GNU objdump writes `  17e90:\tmov ...`; llvm-objdump pads
/// the address with spaces before its tab (`  17e90:      \tmov\t...`)
/// and shows the bytes of data in the code even without raw instructions
/// (`  c0d8: 74 df 04 00  \t.word\t0x0004df74`). Symbol heads
/// (`0000000000017e90 <probe_x>:`) and blank lines are `None`.
pub fn insn_line(line: &str) -> Option<(u64, &str)> {
    let (addr, text) = line.trim_start().split_once(':')?;
    let (bytes, text) = text.split_once('\t')?;
    if !bytes.chars().all(|c| c == ' ' || c.is_ascii_hexdigit()) {
        return None;
    }
    let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
    Some((addr, text))
}

/// x86-64's `lock` (and `rep`) prefix on the line of its instruction, as
/// GNU objdump writes it: llvm-objdump shows the prefix as an instruction
/// of its own at the instruction's address and the rest one byte on
/// (`17664: lock` then `17665: cmpxchg ...`), which no trace executes.
/// Other architectures' disassembly is returned as it is.
pub fn join_prefixes(disassembly: String, arch: &Arch) -> String {
    const PREFIXES: [&str; 8] = [
        "lock", "rep", "repe", "repz", "repne", "repnz", "xacquire", "xrelease",
    ];
    if *arch != Arch::X86_64 {
        return disassembly;
    }
    let mut out = String::with_capacity(disassembly.len());
    let mut pending: Option<&str> = None;
    for line in disassembly.lines() {
        if let Some(prefix) = pending.take() {
            if let Some((_, text)) = insn_line(line) {
                out.push_str(prefix);
                out.push(' ');
                out.push_str(text);
                out.push('\n');
                continue;
            }
            out.push_str(prefix);
            out.push('\n');
        }
        if insn_line(line).is_some_and(|(_, t)| PREFIXES.contains(&t.trim())) {
            pending = Some(line.trim_end());
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(prefix) = pending {
        out.push_str(prefix);
        out.push('\n');
    }
    out
}

/// Function symbols of `objdump -t`: name → (address, size).
pub fn parse_symbols(symtab: &str) -> BTreeMap<String, (u64, u64)> {
    symbols_where(symtab, |head, _| head.contains(" F "))
}

/// Function symbols of `objdump -t` (` F `) or `objdump -T` (`DF`): name →
/// (address, size).
pub fn function_symbols(symtab: &str) -> BTreeMap<String, (u64, u64)> {
    symbols_where(symtab, |head, size| {
        size > 0
            && head
                .split_whitespace()
                .skip(1)
                .any(|f| f == "F" || f == "DF")
    })
}

/// The symbols of a symbol table whose flags (`head`, the line up to its
/// section's tab) and size `keep` takes: name → (address, size).
fn symbols_where(symtab: &str, keep: impl Fn(&str, u64) -> bool) -> BTreeMap<String, (u64, u64)> {
    let mut map = BTreeMap::new();
    for line in symtab.lines() {
        // `00000000000125e0 g     F .text	000000000000009e              probe_x`
        let Some((head, tail)) = line.split_once('\t') else {
            continue;
        };
        let Some(addr) = head
            .split_whitespace()
            .next()
            .and_then(|a| u64::from_str_radix(a, 16).ok())
        else {
            continue;
        };
        let mut rest = tail.split_whitespace();
        let (Some(size), Some(name)) = (rest.next(), rest.next_back()) else {
            continue;
        };
        if let Ok(size) = u64::from_str_radix(size, 16)
            && keep(head, size)
        {
            map.insert(name.to_string(), (addr, size));
        }
    }
    map
}

/// What each GOT slot of the executable holds, from `objdump -R`: slot
/// address → callee symbol. An `R_*_RELATIVE` slot holds an address of the
/// executable itself (the symbol starting there, from `symtab`); a
/// `GLOB_DAT`/`JUMP_SLOT` slot names its symbol (`__tls_get_addr@GLIBC_2.3`
/// → `__tls_get_addr`).
pub fn got_slots(relocs: &str, symtab: &str) -> BTreeMap<u64, String> {
    let by_addr: BTreeMap<u64, String> = parse_symbols(symtab)
        .into_iter()
        .map(|(name, (addr, _))| (addr, name))
        .collect();
    let mut slots = BTreeMap::new();
    for line in relocs.lines() {
        let mut words = line.split_whitespace();
        let (Some(offset), Some(kind), Some(value)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Ok(offset) = u64::from_str_radix(offset, 16) else {
            continue;
        };
        if !kind.starts_with("R_") {
            continue;
        }
        let name = if kind.ends_with("_RELATIVE") {
            value
                .strip_prefix("*ABS*+0x")
                .and_then(|a| u64::from_str_radix(a, 16).ok())
                .and_then(|a| by_addr.get(&a).cloned())
        } else if kind.contains("GLOB_DAT") || kind.contains("JUMP_SLOT") {
            let v = value.split('@').next().unwrap_or(value);
            let v = v.split('+').next().unwrap_or(v);
            (!v.is_empty() && v != "*ABS*").then(|| v.to_string())
        } else {
            None
        };
        if let Some(n) = name {
            slots.insert(offset, n);
        }
    }
    slots
}

/// Cuts the functions `names` out of `objdump -d` output, using the symbol
/// table's extents, into [`Function`]s in assembler syntax (ELF labels):
/// branch targets inside a function become `.LBB0_<n>` labels, `addr
/// <symbol>` operands become `symbol`, comments are dropped (on x86 a
/// RIP-relative operand takes the symbol its comment names). With the
/// executable's dynamic relocations (`objdump -R`; `""`: none), a call or
/// load through a GOT slot is written as the `.s` writes it, `[rip +
/// callee@GOTPCREL]`, instead of `[rip + _DYNAMIC+OFF]`.
pub fn parse_objdump_with(
    disassembly: &str,
    symtab: &str,
    relocs: &str,
    arch: &Arch,
    names: &[&str],
) -> Vec<Function> {
    let got = got_slots(relocs, symtab);
    let symbols = parse_symbols(symtab);
    let ranges: Vec<(&str, u64, u64)> = names
        .iter()
        .filter_map(|n| symbols.get(*n).map(|&(a, s)| (*n, a, a + s.max(1))))
        .collect();
    // Every instruction inside one of the ranges, by address.
    let mut insns: BTreeMap<u64, String> = BTreeMap::new();
    for line in disassembly.lines() {
        let Some((addr, text)) = insn_line(line) else {
            continue;
        };
        if ranges.iter().any(|&(_, a, e)| addr >= a && addr < e) {
            insns.insert(addr, text.trim().to_string());
        }
    }
    let markers = objdump_comment(arch);
    let mut functions = Vec::new();
    for (name, start, end) in ranges {
        let body: Vec<(u64, &String)> = insns.range(start..end).map(|(a, t)| (*a, t)).collect();
        let mut labels: BTreeMap<u64, String> = BTreeMap::new();
        let mut lines_at: Vec<(u64, String)> = Vec::new();
        for (addr, text) in &body {
            let (code, comment) = split_comment(text, markers);
            let (code, comment) = match (comment, trailing_target(code)) {
                (None, Some((code, target))) => {
                    let name = target.split('+').next().unwrap_or(target);
                    let addr = symbols.get(name).map_or(0, |s| s.0);
                    (code, Some(format!("# {addr:x} <{target}>")))
                }
                (comment, _) => (code, comment.map(str::to_string)),
            };
            let comment = comment.as_deref().map(anon_constants);
            let comment = comment.as_deref();
            let code = anon_constants(code);
            let code = code.as_str();
            let got_name = comment
                .and_then(|c| addr_sym_re().captures(c))
                .and_then(|c| u64::from_str_radix(&c[1], 16).ok())
                .and_then(|a| got.get(&a));
            let code = match arch {
                Arch::X86_64 => x86_llvm_spelling(&match got_name {
                    Some(name) => x86_operands(code, Some(&format!("0 <{name}@GOTPCREL>"))),
                    None => x86_operands(code, comment),
                }),
                Arch::Aarch64 => aarch64_conditions(code),
                _ => code.to_string(),
            };
            let rewritten = addr_sym_re().replace_all(&code, |c: &regex::Captures| {
                let target = u64::from_str_radix(&c[1], 16).unwrap_or(u64::MAX);
                if (start..end).contains(&target) && target != start {
                    let n = labels.len();
                    labels
                        .entry(target)
                        .or_insert_with(|| format!(".LBB0_{n}"))
                        .clone()
                } else {
                    c[2].to_string()
                }
            });
            let mut code = mask_layout(&rewritten, arch, lines_at.last().map(|(_, c)| c.as_str()));
            if *arch == Arch::Riscv64 {
                code = mask_pcrel_lo(&code, lines_at.iter().rev().map(|(_, c)| c.as_str()));
            }
            // RISC-V: objdump shows `call sym` as `auipc ra, X` + `jalr N(ra)`
            // and `tail sym` as `auipc t1, X` + `jr N(t1)`, with the callee
            // only in the comment: fuse them back, as the `.s` writes them.
            let fused = if *arch == Arch::Riscv64 {
                riscv_far_jump(&code, lines_at.last().map(|(_, c)| c.as_str()))
            } else {
                None
            };
            if let Some(kind) = fused
                && let Some(sym) = comment.and_then(|c| addr_sym_re().captures(c))
            {
                let (prev_addr, _) = lines_at.pop().expect("checked above");
                code = format!("{kind} {}", &sym[2]);
                lines_at.push((prev_addr, code));
                continue;
            }
            lines_at.push((*addr, code));
        }
        mask_tls_offsets(&mut lines_at, arch);
        let mut lines = vec![format!("{name}:")];
        for (addr, code) in lines_at {
            if let Some(l) = labels.get(&addr) {
                lines.push(format!("{l}:"));
            }
            let (mnemonic, operands) = code
                .split_once(char::is_whitespace)
                .map_or((code.as_str(), ""), |(m, o)| (m, o.trim()));
            lines.push(format!("\t{mnemonic}\t{operands}"));
        }
        functions.push(Function {
            name: name.to_string(),
            format: ObjectFormat::Elf,
            lines,
        });
    }
    functions
}

/// RISC-V's far call and tail call as objdump shows them: `jalr N(ra)`
/// after `auipc ra, X` is a `call`, `jr N(t1)` after `auipc t1, X` a
/// `tail`; `None` for anything else. `code` and `previous` without their
/// comments.
pub(crate) fn riscv_far_jump(code: &str, previous: Option<&str>) -> Option<&'static str> {
    let previous = previous?;
    if !previous.starts_with("auipc") {
        return None;
    }
    let code = trailing_target(code).map_or(code, |(c, _)| c).trim_end();
    // With a zero offset llvm-objdump prints the short alias: `jalr ra`,
    // `jr t1` (no `0(…)`).
    let mut words = code.split_whitespace();
    let (op, operand) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let via = |reg: &str| operand.ends_with(&format!("({reg})")) || operand == reg;
    if op == "jalr" && via("ra") && previous.contains("ra,") {
        Some("call")
    } else if op == "jr" && via("t1") && previous.contains("t1,") {
        Some("tail")
    } else {
        None
    }
}

/// llvm-objdump names the target of a register-relative jump after the
/// operand, with no address and no comment (riscv64's `jr -992(t1)
/// <sym>` after `auipc t1, 0`), where GNU objdump writes `jr -992(t1) #
/// 57d6 <sym>`: the code and the target's name, for the one path that
/// reads both.
fn trailing_target(code: &str) -> Option<(&str, &str)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let c = RE
        .get_or_init(|| {
            // `jr -992(t1) <sym>`, or with a zero offset `jr t1 <sym>`.
            Regex::new(r"^(.*(?:\)|\bt1|\bra))\s+<([^>]+)>\s*$").expect("regex")
        })
        .captures(code)?;
    Some((c.get(1)?.as_str(), c.get(2)?.as_str()))
}

fn split_comment<'a>(text: &'a str, marker: &Regex) -> (&'a str, Option<&'a str>) {
    match marker.find(text) {
        Some(m) => (&text[..m.start()], Some(&text[m.start()..])),
        None => (text, None),
    }
}

/// objdump's aarch64 condition spellings as LLVM writes them: `b.cc` is
/// `b.lo`, `b.cs` is `b.hs` (also as the last operand of `csel`, `cset`,
/// `ccmp`, …), so a pattern fits both views.
fn aarch64_conditions(code: &str) -> String {
    let (m, ops) = code.split_once(char::is_whitespace).unwrap_or((code, ""));
    let m = match m {
        "b.cc" => "b.lo",
        "b.cs" => "b.hs",
        other => other,
    };
    let ops = ops.trim();
    let ops = if let Some(rest) = ops.strip_suffix(", cc") {
        format!("{rest}, lo")
    } else if let Some(rest) = ops.strip_suffix(", cs") {
        format!("{rest}, hs")
    } else {
        ops.to_string()
    };
    if ops.is_empty() {
        m.to_string()
    } else {
        format!("{m}\t{ops}")
    }
}

fn addr_sym_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\b(?:0x)?([0-9a-f]+) <([^>]+)>").expect("regex"))
}

/// The comment objdump appends on an architecture (after whitespace:
/// `\t# 4010 <sym>`, `\t// #16`, `\t@ 0x1eec`, `\t; 0x…`), so `@plt` and
/// `#16` inside operands are left alone.
fn objdump_comment(arch: &Arch) -> &'static Regex {
    static HASH: OnceLock<Regex> = OnceLock::new();
    static SLASH: OnceLock<Regex> = OnceLock::new();
    static ARM: OnceLock<Regex> = OnceLock::new();
    static ANY: OnceLock<Regex> = OnceLock::new();
    let (cell, re) = match arch {
        Arch::X86_64 | Arch::Riscv64 => (&HASH, r"\s+#(\s|$)"),
        Arch::Aarch64 => (&SLASH, r"\s+//(\s|$)"),
        Arch::Arm => (&ARM, r"\s+[@;](\s|$)"),
        Arch::Other(_) => (&ANY, r"\s+(#|//|;)(\s|$)"),
    };
    cell.get_or_init(|| Regex::new(re).expect("comment regex"))
}

/// rustc's anonymous constants keep their hash (and LTO's `.llvm.N`) as
/// local symbols of the executable: spelled as in the `.s`
/// (`.Lanon.<hash>.N`) so the normalizer renumbers them.
fn anon_constants(code: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(^|[^\w.])anon\.([0-9a-f]{8,})\.(\d+)(?:\.llvm\.\d+)?").expect("regex")
    })
    .replace_all(code, "$1.Lanon.$2.$3")
    .into_owned()
}

/// x86 objdump's Intel syntax spelled like LLVM's: `QWORD PTR` →
/// `qword ptr`, `[rip+0x2ed5]  # 15000 <sym>` → `[rip + sym]`.
fn x86_operands(code: &str, comment: Option<&str>) -> String {
    static SIZE: OnceLock<Regex> = OnceLock::new();
    static RIP: OnceLock<Regex> = OnceLock::new();
    let size = SIZE.get_or_init(|| {
        Regex::new(r"\b(BYTE|WORD|DWORD|QWORD|XMMWORD|YMMWORD|ZMMWORD|TBYTE|FWORD) PTR\b")
            .expect("regex")
    });
    // GNU objdump: `[rip+0x2ed5]`; llvm-objdump: `[rip + 12042]`.
    let rip = RIP.get_or_init(|| Regex::new(r"\[rip ?[+-] ?(?:0x[0-9a-f]+|\d+)\]").expect("regex"));
    let mut s = size
        .replace_all(code, |c: &regex::Captures| {
            format!("{} ptr", c[1].to_lowercase())
        })
        .into_owned();
    if let Some(sym) = comment
        .and_then(|c| addr_sym_re().captures(c))
        .map(|c| c[2].to_string())
    {
        // An address inside something: llvm-objdump names it after any
        // symbol below it (`writev+0x69ca`, a table in `.rodata`), GNU
        // objdump after the nearest; `mask_layout` spells both `data+OFF`.
        let sym = match sym.split_once("+0x") {
            Some((name, _)) if !name.starts_with(['_', '.']) && !name.starts_with("GCC_") => {
                "data+OFF".to_string()
            }
            // An offset into a local label's data (`.Lanon.1+0x16c`, the
            // panic locations' strings) moves with any code change.
            Some((name, _)) if name.starts_with(".L") => format!("{name}+OFF"),
            _ => sym,
        };
        s = rip.replace(&s, format!("[rip + {sym}]")).into_owned();
    }
    s
}

/// objdump's hex operands spelled as LLVM's Intel printer writes them, so
/// one pattern fits both views: memory operands `[rdx+rax*8+0x8]` →
/// `[rdx + 8*rax + 8]` (a zero displacement dropped), `fs:0x0` →
/// `fs:[0]`, immediates `0x18` → `24` (negative where the operand's width
/// makes it so: `and rbx, 0xfffffffffffffff0` → `-16`). Branch targets
/// (`1264b <sym>`) carry no `0x` and are left to the symbolizer.
fn x86_llvm_spelling(code: &str) -> String {
    static MEM: OnceLock<Regex> = OnceLock::new();
    static IMM: OnceLock<Regex> = OnceLock::new();
    static SEG: OnceLock<Regex> = OnceLock::new();
    let mem = MEM.get_or_init(|| Regex::new(r"\[([^\]]+)\]").expect("regex"));
    let seg = SEG.get_or_init(|| Regex::new(r"\b([cdefgs]s):(-?0x[0-9a-f]+)\b").expect("regex"));
    let imm = IMM.get_or_init(|| Regex::new(r"(^|,\s*)(-?)0x([0-9a-f]+)$").expect("regex"));
    let code = seg.replace_all(code, |c: &regex::Captures| {
        format!("{}:[{}]", &c[1], hex_to_decimal(&c[2], 64))
    });
    let code = mem.replace_all(&code, |c: &regex::Captures| {
        let inner = &c[1];
        if inner.contains(' ') {
            return c[0].to_string(); // already `[rip + sym]`
        }
        let mut base = None;
        let mut index = None;
        let mut disp: i128 = 0;
        let mut other = Vec::new();
        let mut rest = inner;
        let mut sign = 1i128;
        while !rest.is_empty() {
            let end = rest[1..].find(['+', '-']).map_or(rest.len(), |i| i + 1);
            let (term, tail) = rest.split_at(end);
            let term = match term.strip_prefix('+') {
                Some(t) => {
                    sign = 1;
                    t
                }
                None => match term.strip_prefix('-') {
                    Some(t) => {
                        sign = -1;
                        t
                    }
                    None => term,
                },
            };
            if let Some(h) = term.strip_prefix("0x") {
                match i128::from_str_radix(h, 16) {
                    Ok(v) => disp += sign * v,
                    Err(_) => other.push(term.to_string()),
                }
            } else if let Some((reg, scale)) = term.split_once('*') {
                // LLVM leaves a scale of 1 out: `[rdi + rdx]`.
                index = Some(if scale == "1" {
                    reg.to_string()
                } else {
                    format!("{scale}*{reg}")
                });
            } else if base.is_none() && index.is_none() && sign == 1 {
                base = Some(term.to_string());
            } else {
                other.push(term.to_string());
            }
            rest = tail;
        }
        let parts: Vec<String> = base.into_iter().chain(index).chain(other).collect();
        let mut s = parts.join(" + ");
        if parts.is_empty() {
            s = disp.to_string();
        } else if disp > 0 {
            s.push_str(&format!(" + {disp}"));
        } else if disp < 0 {
            s.push_str(&format!(" - {}", -disp));
        }
        format!("[{s}]")
    });
    let width = if code
        .split_once(char::is_whitespace)
        .map(|(_, ops)| ops.trim_start())
        .is_some_and(|ops| {
            ops.starts_with('e') || ops.split(',').next().is_some_and(|r| r.ends_with('d'))
        }) {
        32
    } else {
        64
    };
    imm.replace(&code, |c: &regex::Captures| {
        format!(
            "{}{}",
            &c[1],
            hex_to_decimal(&format!("{}0x{}", &c[2], &c[3]), width)
        )
    })
    .into_owned()
}

/// `0x18` → `24`; a value with the top bit of `width` set is negative
/// (two's complement), as LLVM prints it.
fn hex_to_decimal(hex: &str, width: u32) -> String {
    let (neg, digits) = match hex.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, hex),
    };
    let Ok(v) = u64::from_str_radix(digits.trim_start_matches("0x"), 16) else {
        return hex.to_string();
    };
    if neg {
        return format!("-{v}");
    }
    let top = 1u64 << (width - 1);
    if width == 64 && v & top != 0 {
        (v as i64).to_string()
    } else if width == 32 && v <= u32::MAX as u64 && v & top != 0 {
        (v as u32 as i32).to_string()
    } else {
        v.to_string()
    }
}

/// Masks what depends on where the linker put things rather than on the
/// code: offsets from linker-made symbols (`_DYNAMIC+0x308`, a GOT slot;
/// `GCC_except_table0+0xd2d8`) become `+OFF`, and on arm64 the low twelve
/// bits that follow an `adrp` become `#:lo12:`. Without this, any change
/// anywhere in the executable would show as a change in every listing.
///
/// Any other `symbol+0x…` is an address objdump names after the nearest
/// symbol below it: an anonymous constant (a table in `.rodata`) or the
/// page an `adrp` loads. Which symbol that is depends on the layout of
/// everything before it, paths in panic locations included (a clone in
/// another directory, or another `CARGO_HOME`, named it `<str as
/// Display>::fmt` once and `<str as Debug>::fmt` the other time), so it is
/// spelled `data+OFF`.
fn mask_layout(code: &str, arch: &Arch, previous: Option<&str>) -> String {
    static LINKER_SYM: OnceLock<Regex> = OnceLock::new();
    static LO12: OnceLock<Regex> = OnceLock::new();
    let sym = LINKER_SYM.get_or_init(|| {
        Regex::new(r"\b((?:_|GCC_|\.L)[A-Za-z0-9_.$]*)\+0x[0-9a-f]+").expect("regex")
    });
    let mut code = sym
        .replace_all(code, |c: &regex::Captures<'_>| {
            let name = &c[1];
            if name == "_DYNAMIC" || name.starts_with("GCC_except_table") || name.starts_with(".L")
            {
                format!("{name}+OFF")
            } else {
                "data+OFF".to_string()
            }
        })
        .into_owned();
    // arm64's `adrp` loads a page: llvm-objdump names it after any symbol
    // below (`writev@GLIBC_2.17+0x3b000`), GNU objdump after the nearest,
    // and when a symbol happens to start on that page's first byte, after
    // it with no offset (`__aarch64_ldadd8_rel`, an outlined atomic the
    // page of a table began with in one build and not in the next).
    if *arch == Arch::Aarch64 && code.starts_with("adrp") {
        static PAGE: OnceLock<Regex> = OnceLock::new();
        let page = PAGE.get_or_init(|| Regex::new(r"^(adrp\s+\w+,\s*)\S+$").expect("regex"));
        if !code.contains("+OFF") {
            code = page.replace(&code, "${1}data+OFF").into_owned();
        }
    }
    if *arch == Arch::Aarch64
        && previous.is_some_and(|p| p.starts_with("adrp"))
        && (code.starts_with("add") || code.starts_with("ldr"))
    {
        let lo12 = LO12.get_or_init(|| Regex::new(r"#(?:0x[0-9a-f]+|\d+)").expect("regex"));
        code = lo12.replace(&code, "#:lo12:").into_owned();
    }
    // riscv64's pc-relative pairs: `auipc a0, 0x48` is where the linker put
    // the target, as the `.s` view's %pcrel_hi says (its low part:
    // `mask_pcrel_lo`).
    if *arch == Arch::Riscv64 {
        static HI: OnceLock<Regex> = OnceLock::new();
        let hi = HI
            .get_or_init(|| Regex::new(r"^(auipc\s+\w+,\s*)(?:0x[0-9a-f]+|\d+)$").expect("regex"));
        if hi.is_match(&code) {
            return hi.replace(&code, "${1}%pcrel_hi").into_owned();
        }
    }
    // armv7's literal pools hold the linker's offsets (GOT, TLS): layout.
    if *arch == Arch::Arm && code.starts_with(".word") {
        return ".word OFF".to_string();
    }
    code
}

/// The operands of `code`, split at the commas and trimmed (objdump writes
/// some without a space after the comma).
fn operands(code: &str) -> (&str, Vec<&str>) {
    let (mnemonic, rest) = code.split_once(char::is_whitespace).unwrap_or((code, ""));
    let ops = rest
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    (mnemonic, ops)
}

/// Masks the thread-local offsets the linker chose, which move whenever any
/// thread-local of the program is added or grows, so every snapshot that
/// reaches one changed with an unrelated edit:
///
/// - x86-64: a constant inside `fs:[...]` (`fs:[1768]`, `fs:[rcx - 224]`),
///   and the displacement added to a register that holds the thread pointer
///   (`mov rax, qword ptr fs:[0]` then `lea rcx, [rax - 3176]`): `TPOFF`;
/// - arm64: the two `add`s of local-exec after `mrs xN, tpidr_el0`
///   (`#0x0, lsl #12`, `#0xb98`): `#:tprel_hi12:`, `#:tprel_lo12_nc:`;
/// - riscv64: `lui` + `add rd, rd, tp` + the low part: `%tprel_hi`,
///   `%tprel_lo`.
///
/// The offsets within one thread-local (a field at `+ 8`, a slot's stride)
/// stay where they are register-relative. A linear scan: a register is the
/// thread pointer from where it is loaded until an instruction writes it.
fn mask_tls_offsets(lines: &mut [(u64, String)], arch: &Arch) {
    static FS: OnceLock<Regex> = OnceLock::new();
    static DISP: OnceLock<Regex> = OnceLock::new();
    // `[reg + N]` / `[reg - N]`: masked when `reg` holds the thread pointer.
    let disp = DISP.get_or_init(|| Regex::new(r"\[(\w+) [+-] (?:0x)?[0-9a-f]+\]").expect("regex"));
    let fs =
        FS.get_or_init(|| Regex::new(r"fs:\[(?:(\w+) [+-] )?(?:0x)?[0-9a-f]+\]").expect("regex"));
    // The register that holds the thread pointer, and (arm64, riscv64) the
    // one that holds it plus the offset's high part, waiting for the low.
    let mut tp: Option<String> = None;
    let mut high: Option<String> = None;
    for i in 0..lines.len() {
        let code = lines[i].1.clone();
        let (mnemonic, ops) = operands(&code);
        let dest = ops.first().map(|d| d.to_string());
        let mut out = code.clone();
        match arch {
            Arch::X86_64 => {
                if mnemonic == "mov" && ops.len() == 2 && ops[1] == "qword ptr fs:[0]" {
                    tp = dest.clone();
                    lines[i].1 = out;
                    continue;
                }
                out = fs
                    .replace_all(&out, |c: &regex::Captures<'_>| match c.get(1) {
                        Some(r) => format!("fs:[{} + TPOFF]", r.as_str()),
                        // `fs:[0]` is the thread pointer itself, not layout.
                        None if c[0] == *"fs:[0]" => c[0].to_string(),
                        None => "fs:[TPOFF]".to_string(),
                    })
                    .into_owned();
                if let Some(r) = &tp {
                    out = disp
                        .replace_all(&out, |c: &regex::Captures<'_>| {
                            if &c[1] == r.as_str() {
                                format!("[{r} + TPOFF]")
                            } else {
                                c[0].to_string()
                            }
                        })
                        .into_owned();
                }
            }
            Arch::Aarch64 => {
                if mnemonic == "mrs"
                    && ops
                        .get(1)
                        .is_some_and(|o| o.eq_ignore_ascii_case("tpidr_el0"))
                {
                    tp = dest.clone();
                    lines[i].1 = out;
                    continue;
                }
                if mnemonic == "add" && ops.len() >= 3 && ops[2].starts_with('#') {
                    let src = Some(ops[1].to_string());
                    if ops.len() == 4 && ops[3] == "lsl #12" && src == tp {
                        out = format!("add {}, {}, #:tprel_hi12:", ops[0], ops[1]);
                        high = dest.clone();
                    } else if ops.len() == 3 && (src == high || src == tp) {
                        out = format!("add {}, {}, #:tprel_lo12_nc:", ops[0], ops[1]);
                        high = None;
                    }
                }
            }
            Arch::Riscv64 => {
                if mnemonic == "add" && ops.len() == 3 && (ops[1] == "tp" || ops[2] == "tp") {
                    let other = if ops[1] == "tp" { ops[2] } else { ops[1] };
                    // The `lui` that loaded the high part, not overwritten since.
                    if let Some(j) = (i.saturating_sub(8)..i).rev().find(|&j| {
                        let (m, o) = operands(&lines[j].1);
                        m == "lui" && o.first() == Some(&other)
                    }) {
                        lines[j].1 = format!("lui {other}, %tprel_hi");
                        high = dest.clone();
                    }
                } else if let Some(h) = &high
                    && ((matches!(mnemonic, "add" | "addi")
                        && ops.len() == 3
                        && ops[1] == h.as_str()
                        && ops[2].parse::<i64>().is_ok())
                        // A low part of 0: objdump writes `addi a2, a2, 0`
                        // as `mv a2, a2`, so the same code read `add` or
                        // `mv` by where the linker put the thread-local.
                        || (mnemonic == "mv" && ops.len() == 2 && ops[1] == h.as_str()))
                {
                    // Spelled as LLVM does (GNU objdump's `add` is `addi`).
                    out = format!("addi {}, {}, %tprel_lo", ops[0], ops[1]);
                    high = None;
                }
            }
            _ => {}
        }
        // A register written here no longer holds the thread pointer.
        let writes = !matches!(
            mnemonic,
            "cmp" | "test" | "push" | "str" | "stp" | "stur" | "sd" | "sw" | "tst" | "cbz" | "cbnz"
        );
        if writes && dest.is_some() && dest == tp {
            tp = None;
        }
        lines[i].1 = out;
    }
}

/// The low part of a riscv64 pc-relative pair: the first `add`/`addi` or
/// load/store after an `auipc rd` that takes `rd` (not yet overwritten) with
/// an immediate gets `%pcrel_lo` for it, as in the `.s` view. `recent`: the
/// function's previous lines as objdump wrote them, newest first.
fn mask_pcrel_lo<'a>(code: &str, recent: impl Iterator<Item = &'a str>) -> String {
    static ADD: OnceLock<Regex> = OnceLock::new();
    static MEM: OnceLock<Regex> = OnceLock::new();
    let mut written = Vec::new();
    let mut hi = None;
    for line in recent.take(8) {
        // objdump writes `auipc\ta0,0x48`: no space after the commas.
        let (mnemonic, operands) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let first = operands.trim().split(',').next().unwrap_or("").trim();
        if mnemonic == "auipc" {
            if !written.contains(&first) {
                hi = Some(first.to_string());
            }
            break;
        }
        // Stores and branches write no register.
        if !(mnemonic.starts_with('s') && mnemonic.len() == 2 || mnemonic.starts_with('b')) {
            written.push(first);
        }
    }
    let Some(rd) = hi else {
        return code.to_string();
    };
    let add = ADD.get_or_init(|| Regex::new(r"^(addi?\s+\w+,\s*(\w+),\s*)-?\d+$").expect("regex"));
    if let Some(c) = add.captures(code)
        && c[2] == *rd
    {
        return format!("{}%pcrel_lo", &c[1]);
    }
    let mem = MEM.get_or_init(|| Regex::new(r"^([a-z]+\s+\w+,\s*)-?\d+\((\w+)\)$").expect("regex"));
    if let Some(c) = mem.captures(code)
        && c[2] == *rd
    {
        return format!("{}%pcrel_lo({rd})", &c[1]);
    }
    code.to_string()
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use crate::codegen::{Listing, normalize};

    /// The normalized listing of `name`, cut out of `dis` by the symbol
    /// table `syms` and the dynamic relocations `relocs`.
    fn listing(dis: &str, syms: &str, relocs: &str, arch: Arch, name: &str) -> Listing {
        normalize::normalize(
            &parse_objdump_with(dis, syms, relocs, &arch, &[name])[0],
            &arch,
        )
    }

    // Real objdump output (x86_64, fat LTO; riscv64 and armv7 releases), cut short.
    const X86: &str = "\
00000000000125e0 <probe_thread_cursor_alloc>:
   125e0:\tsub    rsp,0x18
   125f8:\tmov    rdx,QWORD PTR fs:0x0
   12608:\tcmp    QWORD PTR fs:[rax*8-0xe0],rdi
   12611:\tjne    1264b <probe_thread_cursor_alloc+0x6b>
   1264a:\tret
   1264b:\tlea    rdi,[rip+0x2ed5]        # 15528 <anon.2726658a75bdd9306efeea2bb9c813ff.2.llvm.1453>
   12655:\tcall   11880 <_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17hd0d4a2dda0eb498dE>
   1265a:\tjmp    125f8 <probe_thread_cursor_alloc+0x18>
   1265c:\tnop    DWORD PTR [rax+0x0]
";
    const X86_SYMS: &str =
        "00000000000125e0 g     F .text\t000000000000007c              probe_thread_cursor_alloc\n";
    const RISCV: &str = "\
000000000000ad20 <probe_x>:
    ad56:\tauipc\tra,0xfffff
    ad5a:\tjalr\t2000(ra) # a526 <_ZN3std6thread5local17LocalKey$LT$T$GT$4with17he81c0539dea5a9f3E>
    ad5e:\tret
";
    const RISCV_SYMS: &str = "000000000000ad56 g     F .text\t000000000000000a probe_x\n";
    const ARM: &str = "\
00011000 <probe_y>:
   11000:\tldr\tr0, [pc, #164]\t@ 110ac <probe_y+0xac>
   11004:\tbl\t1eec <__tls_get_addr@plt>
   11008:\tbx\tlr
";
    const ARM_SYMS: &str = "00011000 g     F .text\t0000000c probe_y\n";

    #[test]
    fn objdump_functions_normalize_like_the_s_view() {
        let l = listing(X86, X86_SYMS, "", Arch::X86_64, "probe_thread_cursor_alloc");
        assert_eq!(
            l.text(),
            "probe_thread_cursor_alloc:
  sub rsp, 24
.LBB1:
  mov rdx, qword ptr fs:[0]
  cmp qword ptr fs:[8*rax - 224], rdi
  jne .LBB2
  ret
.LBB2:
  lea rdi, [rip + .Lanon.1]
  call allocasm::thread_cursor::ThreadCursorArena::refill
  jmp .LBB1
",
            "the padding after the symbol's extent is cut, in-function targets become labels, operands spelled like LLVM's"
        );
        let x86 = crate::codegen::InstructionClasses::for_arch(&Arch::X86_64).unwrap();
        assert_eq!(l.summary(&x86).backward_branches, 1);

        let l = listing(RISCV, RISCV_SYMS, "", Arch::Riscv64, "probe_x");
        assert_eq!(
            l.text(),
            "probe_x:\n  call std::thread::local::LocalKey<T>::with\n  ret\n"
        );

        // A far tail call: `auipc t1` + `jr (t1)` is the `.s`'s `tail`.
        let tail = RISCV
            .replace("auipc\tra,", "auipc\tt1,")
            .replace("jalr\t2000(ra)", "jr\t2000(t1)");
        let l = listing(&tail, RISCV_SYMS, "", Arch::Riscv64, "probe_x");
        assert_eq!(
            l.text(),
            "probe_x:\n  tail std::thread::local::LocalKey<T>::with\n  ret\n"
        );

        let l = listing(ARM, ARM_SYMS, "", Arch::Arm, "probe_y");
        assert_eq!(
            l.text(),
            "probe_y:\n  ldr r0, [pc, #164]\n  bl __tls_get_addr\n  bx lr\n",
            "`@` starts an Arm comment for the normalizer, so `@plt` goes like in the .s view"
        );
    }

    #[test]
    fn llvm_objdump_lines_are_read_too() {
        // llvm-objdump pads the address with spaces before its tab; before
        // the parser read that, it found no instruction at all. Real lines
        // of the x86_64-linux release executable (llvm-objdump 23).
        let dis = "0000000000017e90 <probe_frame_alloc>:
   17e90:      \tmov\trax, qword ptr [rdi + 0x60]
   17e94:      \tlea\trcx, [rax + 2*rax]
   17eae:      \tjb\t0x17ebd <probe_frame_alloc+0x2d>
   17eb9:      \tmov\tqword ptr [rdi], rsi
   17ebc:      \tret
   17ebd:      \txor\teax, eax
   17ebf:      \tret
";
        let syms = "0000000000017e90 g     F .text\t0000000000000030 probe_frame_alloc\n";
        let text = listing(dis, syms, "", Arch::X86_64, "probe_frame_alloc").text();
        assert!(text.contains("jb .LBB1\n"), "{text}");
        assert_eq!(text.matches("\n  ").count(), 7, "{text}");
    }

    #[test]
    fn llvm_objdump_spellings_read_like_gnu_objdump_ones() {
        // llvm-objdump 23 (`--no-print-imm-hex`): a GOT call names the slot
        // after any symbol below it, and `-R` pads no addend.
        let relocs = "\
DYNAMIC RELOCATION RECORDS
OFFSET           TYPE                     VALUE
000000000005b208 R_X86_64_GLOB_DAT        __tls_get_addr
";
        let syms = "00000000000125e0 g     F .text\t0000000000000013 probe_got\n";
        let dis = "\
00000000000125e0 <probe_got>:
   125e0:      \tcall\tqword ptr [rip + 278519] # 0x5b208 <writev+0x5b208>
   125e6:      \tlea\trcx, [rip + 27082]     # 0x18fb0 <writev+0x69ca>
   125ed:      \tmov\tqword ptr [rdi], 16
   125f2:      \tret
";
        let l = listing(dis, syms, relocs, Arch::X86_64, "probe_got");
        assert_eq!(
            l.text(),
            "probe_got:\n  call qword ptr [rip + __tls_get_addr@GOTPCREL]\n  \
             lea rcx, [rip + data+OFF]\n  mov qword ptr [rdi], 16\n  ret\n"
        );
        // riscv64: the target of `jr N(t1)` follows the operand, with no
        // comment; the pair is still the `.s` view's `tail`.
        let syms = "0000000000005b90 g     F .text\t0000000000000010 probe_t\n\
                    00000000000057d6 l     F .text\t0000000000000010 alloc_miss\n";
        let dis = "\
0000000000005b90 <probe_t>:
    5b90:      \taddi\tsp, sp, 48
    5b92:      \tauipc\tt1, 0
    5b96:      \tjr\t-960(t1) <alloc_miss>
";
        let l = listing(dis, syms, "", Arch::Riscv64, "probe_t");
        assert_eq!(l.text(), "probe_t:\n  addi sp, sp, 48\n  tail alloc_miss\n");
        // With a zero offset the jump is the short alias `jr t1 <sym>`.
        let zero = dis.replace("jr\t-960(t1)", "jr\tt1");
        let l = listing(&zero, syms, "", Arch::Riscv64, "probe_t");
        assert_eq!(l.text(), "probe_t:\n  addi sp, sp, 48\n  tail alloc_miss\n");
        // armv7: llvm-objdump shows a literal pool's bytes even with
        // `--no-show-raw-insn`; the pool is still layout.
        assert_eq!(
            insn_line("    c0d8: 74 df 04 00  \t.word\t0x0004df74"),
            Some((0xc0d8, ".word\t0x0004df74"))
        );
        assert_eq!(insn_line("0000c0e0 <probe_x>:"), None);
        // x86-64: llvm-objdump's `lock` line joins its instruction, at the
        // prefix's address (the one a trace executes).
        let dis = "   17664:      \tlock\n   17665:      \tcmpxchg\tbyte ptr [r14 + 24], r12b\n";
        let joined = join_prefixes(dis.to_string(), &Arch::X86_64);
        assert_eq!(
            joined.lines().filter_map(insn_line).collect::<Vec<_>>(),
            [(0x17664, "lock cmpxchg\tbyte ptr [r14 + 24], r12b")]
        );
        assert_eq!(join_prefixes(dis.to_string(), &Arch::Aarch64), dis);
    }

    #[test]
    fn got_slots_are_named_after_their_callee() {
        // Real `objdump -R` lines of the x86_64-linux release executable's
        // kind: a RELATIVE slot (a function of the executable) and a
        // GLOB_DAT slot (a dynamic symbol).
        let relocs = "\
DYNAMIC RELOCATION RECORDS
OFFSET           TYPE              VALUE
0000000000015310 R_X86_64_RELATIVE  *ABS*+0x11880
0000000000015fd8 R_X86_64_GLOB_DAT  __tls_get_addr@GLIBC_2.3
";
        let syms = "0000000000011880 g     F .text\t0000000000000100              _ZN8allocasm13thread_cursor17ThreadCursorArena6refill17hd0d4a2dda0eb498dE\n00000000000125e0 g     F .text\t000000000000000d              probe_got\n";
        let got = got_slots(relocs, syms);
        assert_eq!(
            got.get(&0x15310).map(String::as_str),
            Some("_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17hd0d4a2dda0eb498dE")
        );
        assert_eq!(
            got.get(&0x15fd8).map(String::as_str),
            Some("__tls_get_addr")
        );
        let dis = "\
00000000000125e0 <probe_got>:
   125e0:\tcall   QWORD PTR [rip+0x2d2a]        # 15310 <_DYNAMIC+0x308>
   125e6:\tcall   QWORD PTR [rip+0x39ec]        # 15fd8 <_DYNAMIC+0xfd0>
   125ec:\tret
";
        let l = listing(dis, syms, relocs, Arch::X86_64, "probe_got");
        assert_eq!(
            l.text(),
            "probe_got:\n  call qword ptr [rip + allocasm::thread_cursor::ThreadCursorArena::refill@GOTPCREL]\n  call qword ptr [rip + __tls_get_addr@GOTPCREL]\n  ret\n"
        );
        // Without the relocations the slot stays masked.
        let l = listing(dis, syms, "", Arch::X86_64, "probe_got");
        assert!(l.text().contains("[rip + _DYNAMIC+OFF]"));
    }

    /// The linked view's `jmp qword ptr [rip + drained@GOTPCREL]` (x86-64
    /// has no PLT for Rust's own calls) is a tail call to the `#[cold]`
    /// slow path: its block is cold and the hot path leaves by the `ret`.
    /// (Before, an unnamed indirect jump, it was the longest hot exit, one
    /// line more than what the fast case executes.)
    #[test]
    fn a_tail_call_through_the_got_to_a_cold_path_is_cold() {
        let relocs = "0000000000015310 R_X86_64_RELATIVE  *ABS*+0x11880\n";
        let syms = "0000000000011880 g     F .text\t0000000000000100              _ZN8allocasm6packed11PackedArena7drained17hd0d4a2dda0eb498dE\n00000000000125e0 g     F .text\t0000000000000010              probe_d\n";
        let dis = "\
00000000000125e0 <probe_d>:
   125e0:\tlock sub QWORD PTR [rax+rcx*1],rdx
   125e5:\tje     125e8 <probe_d+0x8>
   125e7:\tret
   125e8:\tjmp    QWORD PTR [rip+0x2d2a]        # 15310 <_DYNAMIC+0x308>
";
        let l = listing(dis, syms, relocs, Arch::X86_64, "probe_d");
        assert!(
            l.text()
                .contains("jmp qword ptr [rip + allocasm::packed::PackedArena::drained@GOTPCREL]"),
            "{l}"
        );
        let profile = crate::codegen::load_profiles()
            .unwrap()
            .into_iter()
            .find(|p| p.name == "x86_64-linux")
            .unwrap();
        let hot = crate::codegen::cfg::analyze(&l, &profile, &Default::default()).hot_path();
        assert_eq!(
            hot.lines,
            ["lock sub qword ptr [rax + rcx], rdx", "je .LBB1", "ret"]
                .map(str::to_string)
                .to_vec(),
            "{hot:#?}"
        );
    }

    #[test]
    fn x86_operands_are_spelled_like_llvm() {
        for (objdump, llvm) in [
            (
                "mov r15, qword ptr [rdi+0x188]",
                "mov r15, qword ptr [rdi + 392]",
            ),
            ("lea rax, [r12+r12*2]", "lea rax, [r12 + 2*r12]"),
            ("lea r8, [rdi+rdx*1]", "lea r8, [rdi + rdx]"),
            (
                "cmp qword ptr [rdx+rax*8], r15",
                "cmp qword ptr [rdx + 8*rax], r15",
            ),
            (
                "mov rax, qword ptr [rdx+rax*8+0x8]",
                "mov rax, qword ptr [rdx + 8*rax + 8]",
            ),
            ("lea rax, [rax-0xf0]", "lea rax, [rax - 240]"),
            (
                "cmp qword ptr fs:[rax*8-0xe0], rdi",
                "cmp qword ptr fs:[8*rax - 224], rdi",
            ),
            ("mov rax, qword ptr fs:0x0", "mov rax, qword ptr fs:[0]"),
            ("sub rsp, 0x18", "sub rsp, 24"),
            ("and rbx, 0xfffffffffffffff0", "and rbx, -16"),
            ("and r12d, 0x7", "and r12d, 7"),
            ("cmp ecx, 0xfffffff0", "cmp ecx, -16"),
            (
                "movabs rax, 0x7fffffffffffff",
                "movabs rax, 36028797018963967",
            ),
            ("mov qword ptr [rcx+0x0], rbx", "mov qword ptr [rcx], rbx"),
            ("lea rdi, [rip + .Lanon.1]", "lea rdi, [rip + .Lanon.1]"),
            ("jne 1264b <probe_x+0x6b>", "jne 1264b <probe_x+0x6b>"),
        ] {
            assert_eq!(x86_llvm_spelling(objdump), llvm, "{objdump}");
        }
    }

    #[test]
    fn aarch64_conditions_are_spelled_like_llvm() {
        for (objdump, llvm) in [
            ("b.cc\t1264b <x+0x6b>", "b.lo\t1264b <x+0x6b>"),
            ("b.cs\t10", "b.hs\t10"),
            ("csel\tx0, x1, x2, cc", "csel\tx0, x1, x2, lo"),
            ("cset\tw0, cs", "cset\tw0, hs"),
            ("b.ne\t10", "b.ne\t10"),
            ("ret", "ret"),
        ] {
            assert_eq!(aarch64_conditions(objdump), llvm, "{objdump}");
        }
    }

    fn masked_tls(arch: &Arch, code: &[&str]) -> Vec<String> {
        let mut lines: Vec<(u64, String)> = code
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u64, c.to_string()))
            .collect();
        mask_tls_offsets(&mut lines, arch);
        lines.into_iter().map(|(_, c)| c).collect()
    }

    /// The thread-local offsets the linker picked moved with every change to
    /// any thread-local (`lea rax, [rax - 3152]` became `[rax - 3200]` in a
    /// snapshot of a probe whose code had not changed); the field offsets
    /// after them are code and stay.
    #[test]
    fn thread_local_offsets_are_layout_and_field_offsets_are_code() {
        assert_eq!(
            masked_tls(
                &Arch::X86_64,
                &[
                    "mov rax, qword ptr fs:[0]",
                    "mov r8, qword ptr fs:[1768]",
                    "lea rcx, [rax - 3176]",
                    "mov rdx, qword ptr [rcx + 1408]",
                    "mov rax, qword ptr fs:[rcx - 216]",
                    "lea rdx, [rax - 8]",
                ]
            ),
            [
                "mov rax, qword ptr fs:[0]",
                "mov r8, qword ptr fs:[TPOFF]",
                "lea rcx, [rax + TPOFF]",
                "mov rdx, qword ptr [rcx + 1408]",
                "mov rax, qword ptr fs:[rcx + TPOFF]",
                // `rax` was overwritten: no longer the thread pointer.
                "lea rdx, [rax - 8]",
            ]
        );
        assert_eq!(
            masked_tls(
                &Arch::Aarch64,
                &[
                    "mrs x8, tpidr_el0",
                    "ldr x9, [x0, #16]",
                    "add x8, x8, #0x0, lsl #12",
                    "add x8, x8, #0xb98",
                    "add x9, x9, #0x10",
                ]
            ),
            [
                "mrs x8, tpidr_el0",
                "ldr x9, [x0, #16]",
                "add x8, x8, #:tprel_hi12:",
                "add x8, x8, #:tprel_lo12_nc:",
                "add x9, x9, #0x10",
            ]
        );
        assert_eq!(
            masked_tls(
                &Arch::Riscv64,
                &[
                    "lui a4, 0x1",
                    "ld a3, 16(a0)",
                    "add a4, a4, tp",
                    "add a4, a4, -1144",
                    "add a3, a3, a4",
                ]
            ),
            [
                "lui a4, %tprel_hi",
                "ld a3, 16(a0)",
                "add a4, a4, tp",
                "addi a4, a4, %tprel_lo",
                "add a3, a3, a4",
            ]
        );
        // The same with a low part of 0, which objdump writes as `mv`.
        assert_eq!(
            masked_tls(
                &Arch::Riscv64,
                &[
                    "lui a4, 0x0",
                    "add a2, a4, tp",
                    "mv a2, a2",
                    "ld a4, 1408(a2)"
                ]
            ),
            [
                "lui a4, %tprel_hi",
                "add a2, a4, tp",
                "addi a2, a2, %tprel_lo",
                "ld a4, 1408(a2)",
            ]
        );
    }

    #[test]
    fn link_layout_is_masked_and_code_is_not() {
        let x86 = Arch::X86_64;
        assert_eq!(
            mask_layout("call qword ptr [rip + _DYNAMIC+0x308]", &x86, None),
            "call qword ptr [rip + _DYNAMIC+OFF]"
        );
        // Register-relative offsets are code, not layout.
        assert_eq!(
            mask_layout("movzx ecx, byte ptr [rsi+0x148]", &x86, None),
            "movzx ecx, byte ptr [rsi+0x148]"
        );
        // An anonymous constant named after whatever symbol precedes it
        // (here a function) is layout: the same build in another directory
        // named another one.
        assert_eq!(
            mask_layout(
                "adrp x13, _ZN42_$LT$str$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE+0x1f40",
                &Arch::Aarch64,
                None
            ),
            "adrp x13, data+OFF"
        );
        // A page that starts exactly at a symbol is named without an offset;
        // it is layout all the same.
        assert_eq!(
            mask_layout("adrp x9, __aarch64_ldadd8_rel", &Arch::Aarch64, None),
            "adrp x9, data+OFF"
        );
        assert_eq!(
            mask_layout("lea r9, [rip + _fini+0x2a8]", &x86, None),
            "lea r9, [rip + data+OFF]"
        );
        // riscv64's pc-relative pairs and armv7's literal pools: the same
        // build in another directory had other numbers there.
        let rv = Arch::Riscv64;
        assert_eq!(
            mask_layout("auipc a0, 0x48", &rv, None),
            "auipc a0, %pcrel_hi"
        );
        // (code, the lines before it newest first, what it becomes)
        let pcrel_lo = [
            // objdump's own spelling, no space after the commas.
            (
                "add\ta5,a4,-558",
                &["add\ta2,a2,a6", "auipc\ta4,%pcrel_hi"][..],
                "add\ta5,a4,%pcrel_lo",
            ),
            (
                "add a0, a0, 1100",
                &["auipc a0, %pcrel_hi"],
                "add a0, a0, %pcrel_lo",
            ),
            // Not always the next line; a load through the register too.
            (
                "add a4, a4, 1416",
                &["add a0, a0, a2", "auipc a4, %pcrel_hi"],
                "add a4, a4, %pcrel_lo",
            ),
            (
                "ld a1, -496(a0)",
                &["auipc a0, %pcrel_hi"],
                "ld a1, %pcrel_lo(a0)",
            ),
            // Once the pair is complete, offsets from the register are code.
            (
                "ld a1, 8(a0)",
                &["add a0, a0, %pcrel_lo", "auipc a0, %pcrel_hi"],
                "ld a1, 8(a0)",
            ),
            ("add a2, a2, 40", &["auipc a0, %pcrel_hi"], "add a2, a2, 40"),
        ];
        for (code, recent, want) in pcrel_lo {
            assert_eq!(mask_pcrel_lo(code, recent.iter().copied()), want, "{code}");
        }
        assert_eq!(
            mask_layout(".word 0x0004b058", &Arch::Arm, None),
            ".word OFF"
        );
        let arm = Arch::Aarch64;
        let adrp = mask_layout("adrp x0, GCC_except_table0+0xd2d8", &arm, None);
        assert_eq!(adrp, "adrp x0, GCC_except_table0+OFF");
        assert_eq!(
            mask_layout("add x0, x0, #0xcc8", &arm, Some(&adrp)),
            "add x0, x0, #:lo12:"
        );
        // Not after an adrp: an ordinary immediate.
        assert_eq!(
            mask_layout("add x0, x0, #0xcc8", &arm, Some("mov x1, x2")),
            "add x0, x0, #0xcc8"
        );
    }
}
