//! Unit tests of the extractor, normalizer, profiles and checker on real
//! fragments (see `testdata/README.md`).

use std::path::Path;

use super::expect::{self, FailureKind};
use super::*;
use allocasm::probes::{Probe, ProbeKind};

const ELF_X86: &str = include_str!("testdata/elf-x86_64.s");
const ELF_X86_V0: &str = include_str!("testdata/elf-x86_64-v0.s");
const ELF_ARM: &str = include_str!("testdata/elf-aarch64.s");
const MACHO_ARM: &str = include_str!("testdata/macho-aarch64.s");
const COFF_X86: &str = include_str!("testdata/coff-x86_64.s");
const COFF_ARM: &str = include_str!("testdata/coff-aarch64.s");
const COFF_X86_SEH: &str = include_str!("testdata/coff-x86_64-seh.s");
const ELF_RISCV: &str = include_str!("testdata/elf-riscv64.s");
const ELF_ARMV7: &str = include_str!("testdata/elf-armv7.s");

const FORMATS: [(&str, &str, ObjectFormat, Arch); 8] = [
    ("elf-x86_64", ELF_X86, ObjectFormat::Elf, Arch::X86_64),
    ("elf-x86_64-v0", ELF_X86_V0, ObjectFormat::Elf, Arch::X86_64),
    ("elf-aarch64", ELF_ARM, ObjectFormat::Elf, Arch::Aarch64),
    (
        "macho-aarch64",
        MACHO_ARM,
        ObjectFormat::MachO,
        Arch::Aarch64,
    ),
    ("coff-x86_64", COFF_X86, ObjectFormat::Coff, Arch::X86_64),
    ("coff-aarch64", COFF_ARM, ObjectFormat::Coff, Arch::Aarch64),
    ("elf-riscv64", ELF_RISCV, ObjectFormat::Elf, Arch::Riscv64),
    ("elf-armv7", ELF_ARMV7, ObjectFormat::Elf, Arch::Arm),
];

fn listing(text: &str, format: ObjectFormat, arch: &Arch, name: &str) -> Listing {
    let asm = parse::parse_asm(text, format);
    let f = asm
        .function(name)
        .unwrap_or_else(|| panic!("{name} not found in {:?}", asm.names()));
    normalize::normalize(f, arch)
}

fn lines(l: &Listing) -> Vec<String> {
    l.text().lines().map(str::to_string).collect()
}

// ---- extractor -------------------------------------------------------------

#[test]
fn every_format_splits_the_same_functions() {
    let probes = [
        "probe_call",
        "probe_clz",
        "probe_dup",
        "probe_loop",
        "probe_match",
        "probe_packed",
        "probe_rel",
        "probe_tls",
    ];
    for (what, text, format, _) in FORMATS {
        let asm = parse::parse_asm(text, format);
        let names: Vec<&str> = asm.functions.iter().map(|f| f.name.as_str()).collect();
        for p in probes {
            assert!(names.contains(&p), "{what}: {p} missing from {names:?}");
        }
        // The helper `slow` plus the probes; data (thread-local, switch table) is no function.
        assert_eq!(names.len(), probes.len() + 1, "{what}: {names:?}");
    }
}

#[test]
fn elf_function_ends_at_size_directive() {
    let asm = parse::parse_asm(ELF_X86, ObjectFormat::Elf);
    let f = asm.function("probe_tls").unwrap();
    assert_eq!(f.lines[0], "probe_tls:");
    assert!(
        f.lines.last().unwrap().starts_with(".Lfunc_end8:"),
        "{:?}",
        f.lines.last()
    );
    assert!(
        !f.raw_text().contains(".zero"),
        "data after the function leaked in"
    );
}

#[test]
fn macho_symbols_lose_their_underscore() {
    let asm = parse::parse_asm(MACHO_ARM, ObjectFormat::MachO);
    assert!(asm.function("probe_packed").is_some());
    assert!(asm.function("_probe_packed").is_none());
    assert!(
        asm.functions
            .iter()
            .any(|f| f.name == "_ZN4frag4slow17h520ef98c56c6fa09E")
    );
    // Ends at .cfi_endproc: the next function's `.globl` is not part of it.
    let f = asm.function("probe_packed").unwrap();
    assert_eq!(f.lines.last().unwrap().trim(), ".cfi_endproc");
}

#[test]
fn coff_functions_come_from_def_blocks() {
    let asm = parse::parse_asm(COFF_X86, ObjectFormat::Coff);
    let f = asm.function("probe_call").unwrap();
    assert!(f.raw_text().contains(".seh_endproc"));
    assert!(
        !f.raw_text().contains(".def"),
        "the next function's .def leaked in:\n{}",
        f.raw_text()
    );
    // `@feat.00` is a .def with `.type 0`: not a function.
    assert!(asm.function("@feat.00").is_none());
    let tls = listing(COFF_X86, ObjectFormat::Coff, &Arch::X86_64, "probe_tls");
    assert!(tls.text().contains("gs:[88]"), "{tls}");
}

#[test]
fn coff_seh_funclets_handler_data_and_one_only_sections() {
    // Real x86_64-pc-windows-msvc output of two probes: each body is
    // `.def`/`.scl 2`/`.type 32`/`.endef` + a `one_only` text section, ends
    // in `.seh_handlerdata` + a re-entered `one_only` section + `.seh_endproc`,
    // and is followed by its catch funclet (`.scl 3`) and `.xdata` tables.
    let asm = parse::parse_asm(COFF_X86_SEH, ObjectFormat::Coff);
    let names: Vec<&str> = asm.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "probe_packed_alloc_relaxed",
            "?catch$9@?0?probe_packed_alloc_relaxed@4HA",
            "probe_thread_cursor_alloc",
            "?catch$9@?0?probe_thread_cursor_alloc@4HA",
        ],
        "funclets are their own functions; .xdata tables and .rdata constants are none"
    );
    for name in ["probe_packed_alloc_relaxed", "probe_thread_cursor_alloc"] {
        let f = asm.function(name).unwrap();
        let raw = f.raw_text();
        assert!(raw.contains(".seh_proc"), "{raw}");
        for leaked in ["$cppxdata$", "?catch$", ".def", "panic_cannot_unwind"] {
            assert!(!raw.contains(leaked), "{leaked} leaked into {name}:\n{raw}");
        }
        let l = normalize::normalize(f, &Arch::X86_64);
        assert!(!l.text().contains(".seh"), "{l}");
        assert!(
            l.text().ends_with("  jmp .LBB3\n") || name.contains("cursor"),
            "{l}"
        );
    }
    let tls = listing(
        COFF_X86_SEH,
        ObjectFormat::Coff,
        &Arch::X86_64,
        "probe_thread_cursor_alloc",
    );
    let text = tls.text();
    for want in [
        "  mov ecx, dword ptr [rip + _tls_index]\n",
        "  mov r10, qword ptr gs:[88]\n",
        "allocasm::thread_cursor::CURSORS::{constant}::{closure}::__RUST_STD_INTERNAL_VAL@SECREL32]",
        // COFF's `anon.<hash>.4` loses its hash like ELF's `.Lanon.<hash>.4`.
        "  lea rcx, [rip + anon.1]\n",
        "  call std::thread::local::panic_access_error\n",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let x86 = InstructionClasses::for_arch(&Arch::X86_64).unwrap();
    let s = tls.summary(&x86);
    assert_eq!(
        (s.atomic_rmw, s.calls, s.backward_branches),
        (0, 2, 0),
        "{tls}"
    );
}

#[test]
fn a_cold_block_jumping_back_to_the_epilogue_is_no_loop() {
    // probe_packed_alloc_relaxed on Windows: the error and refill calls sit
    // after the returns and `jmp` back to the shared result block.
    let x86 = InstructionClasses::for_arch(&Arch::X86_64).unwrap();
    let l = listing(
        COFF_X86_SEH,
        ObjectFormat::Coff,
        &Arch::X86_64,
        "probe_packed_alloc_relaxed",
    );
    let s = l.summary(&x86);
    assert_eq!(
        (s.atomic_rmw, s.calls, s.backward_branches),
        (1, 2, 0),
        "{l}"
    );
    // The same shape with a real cycle through the rejoin is a loop.
    let looped = "\t.type\tf,@function\nf:\n.LBB0_1:\n\tcmp\trax, 1\n\tjne\t.LBB0_2\n\tret\n.LBB0_2:\n\tcall\tg\n\tjmp\t.LBB0_1\n";
    let l = listing(looped, ObjectFormat::Elf, &Arch::X86_64, "f");
    assert_eq!(l.summary(&x86).backward_branches, 1, "{l}");
}

#[test]
fn riscv64_armv7_and_arm64_windows_classes() {
    let rv = InstructionClasses::for_arch(&Arch::Riscv64).unwrap();
    let arm = InstructionClasses::for_arch(&Arch::Arm).unwrap();
    let a64 = InstructionClasses::for_arch(&Arch::Aarch64).unwrap();
    let sum = |t: &str, f, a: &Arch, n, c: &InstructionClasses| {
        let l = listing(t, f, a, n);
        (l.summary(c), l)
    };
    let elf = ObjectFormat::Elf;

    // riscv64: one `amoadd.d`, no loop; `.rl` for Release; `call` is a call.
    let (p, l) = sum(ELF_RISCV, elf, &Arch::Riscv64, "probe_packed", &rv);
    assert_eq!(
        (p.atomic_rmw, p.calls, p.backward_branches),
        (1, 0, 0),
        "{l}"
    );
    assert!(l.text().contains("  amoadd.d a2, a1, (a0)\n"), "{l}");
    let (p, l) = sum(ELF_RISCV, elf, &Arch::Riscv64, "probe_rel", &rv);
    assert_eq!(p.atomic_rmw, 1, "{l}");
    assert!(l.text().contains("amoadd.d.rl"), "{l}");
    let (p, l) = sum(ELF_RISCV, elf, &Arch::Riscv64, "probe_call", &rv);
    assert_eq!((p.calls, p.atomics), (2, 0), "{l}");
    let (p, l) = sum(ELF_RISCV, elf, &Arch::Riscv64, "probe_loop", &rv);
    assert_eq!(p.backward_branches, 1, "bnez back to the loop head: {l}");
    for (text, rmw) in [
        ("lr.d a2, (a0)", true),
        ("sc.d.rl a3, a4, (a0)", true),
        ("amoswap.w.aq a0, a1, (a2)", true),
        ("ld a0, 0(a0)", false),
    ] {
        assert_eq!(rv.atomic_rmw.is_match(text), rmw, "{text}");
    }
    assert!(rv.call.is_match("tail memcpy"));
    assert!(rv.call.is_match("jalr a5"));
    assert!(rv.atomic_other.is_match("fence rw, rw"));

    // armv7: the 64-bit fetch_add is an ldrexd/strexd loop.
    let (p, l) = sum(ELF_ARMV7, elf, &Arch::Arm, "probe_packed", &arm);
    assert!(
        l.text().contains("ldrexd") && l.text().contains("strexd"),
        "{l}"
    );
    assert_eq!(
        (p.atomic_rmw, p.calls, p.backward_branches),
        (2, 0, 1),
        "{l}"
    );
    // Default PIC: the thread-local is a `bl __tls_get_addr`.
    let (p, l) = sum(ELF_ARMV7, elf, &Arch::Arm, "probe_tls", &arm);
    assert!(l.text().contains("  bl __tls_get_addr\n"), "{l}");
    assert_eq!(p.calls, 1, "{l}");
    // `bxeq lr` falls through to the `b` back: still a loop.
    let (p, l) = sum(ELF_ARMV7, elf, &Arch::Arm, "probe_loop", &arm);
    assert_eq!(p.backward_branches, 1, "{l}");
    for (text, class) in [
        ("dmb ish", "other"),
        ("ldrex r0, [r1]", "rmw"),
        ("strexd r3, r6, r7, [r0]", "rmw"),
        ("bl __sync_fetch_and_add_8", "rmw"),
        ("blx r3", "call"),
        ("bl __aeabi_read_tp", "call"),
    ] {
        let hit = match class {
            "rmw" => arm.atomic_rmw.is_match(text),
            "other" => arm.atomic_other.is_match(text),
            _ => arm.call.is_match(text),
        };
        assert!(hit, "{text} is {class}");
    }

    // arm64 Windows (COFF): no LSE, no outline atomics: an ldxr/stxr loop;
    // thread-locals through x18 and _tls_index, no call.
    let coff = ObjectFormat::Coff;
    let (p, l) = sum(COFF_ARM, coff, &Arch::Aarch64, "probe_packed", &a64);
    assert!(
        l.text().contains("ldxr") && l.text().contains("stxr"),
        "{l}"
    );
    assert_eq!(
        (p.atomic_rmw, p.calls, p.backward_branches),
        (2, 0, 1),
        "{l}"
    );
    let (p, l) = sum(COFF_ARM, coff, &Arch::Aarch64, "probe_tls", &a64);
    assert!(l.text().contains("  ldr x9, [x18, #88]\n"), "{l}");
    assert!(l.text().contains(":secrel_hi12:frag::CUR::"), "{l}");
    assert_eq!(p.calls, 0, "{l}");
}

#[test]
fn aliases_from_function_merging_resolve() {
    for (what, text, format, arch) in FORMATS {
        let asm = parse::parse_asm(text, format);
        assert_eq!(
            asm.aliases.get("probe_seq").map(String::as_str),
            Some("probe_dup"),
            "{what}"
        );
        let seq = listing(text, format, &arch, "probe_seq");
        let dup = listing(text, format, &arch, "probe_dup");
        assert_eq!(seq.lines, dup.lines, "{what}");
    }
    let set = parse::parse_asm("\t.set\tprobe_b, probe_a\n", ObjectFormat::Elf);
    assert_eq!(
        set.aliases.get("probe_b").map(String::as_str),
        Some("probe_a")
    );
}

// ---- normalizer ------------------------------------------------------------

#[test]
fn directives_and_comments_are_dropped() {
    for (what, text, format, arch) in FORMATS {
        for f in &parse::parse_asm(text, format).functions {
            let l = normalize::normalize(f, &arch);
            for line in lines(&l) {
                let t = line.trim();
                assert!(
                    !t.starts_with('.') || t.ends_with(':'),
                    "{what}: directive kept: {line}"
                );
                for marker in ["#APP", "//APP", "InlineAsm", "NO_APP"] {
                    assert!(!t.contains(marker), "{what}: comment kept: {line}");
                }
            }
        }
    }
}

#[test]
fn whitespace_is_folded_and_prefixes_join() {
    let l = listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_packed");
    // The .s has `lock\t\txadd\tqword ptr [rdi], rcx`.
    assert!(
        lines(&l).contains(&"  lock xadd qword ptr [rdi], rcx".to_string()),
        "{l}"
    );
    let i = normalize::split_instruction("add\tx0,   x9 ,x8  ").unwrap();
    assert_eq!(i.text(), "add x0, x9, x8");
    let i = normalize::split_instruction("lock   cmpxchg qword ptr [rdi], rcx").unwrap();
    assert_eq!(i.mnemonic, "lock cmpxchg");
}

#[test]
fn labels_are_renumbered_per_function() {
    // `.LBB4_4`, `.LBB4_2` (ELF) and `LBB4_3`, `LBB4_1` (Mach-O) become the
    // same numbers in order of first appearance.
    let expected_elf = [
        "probe_loop:",
        "  xor eax, eax",
        "  test rdi, rdi",
        "  je .LBB1",
        ".LBB2:",
    ];
    let l = listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_loop");
    assert_eq!(&lines(&l)[..5], &expected_elf);
    let m = listing(MACHO_ARM, ObjectFormat::MachO, &Arch::Aarch64, "probe_loop");
    assert!(lines(&m).contains(&"  cbz x0, LBB1".to_string()), "{m}");
    assert!(lines(&m).contains(&"LBB2:".to_string()), "{m}");
    // Constant-pool labels too, defined outside the function.
    let c = listing(ELF_ARM, ObjectFormat::Elf, &Arch::Aarch64, "probe_match");
    assert!(c.text().contains("adrp x8, .LCPI1"), "{c}");
    // The same function at another position in the file gets the same listing.
    let moved = ELF_X86.replace(".LBB6_2", ".LBB17_9");
    assert_eq!(
        listing(&moved, ObjectFormat::Elf, &Arch::X86_64, "probe_packed"),
        listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_packed")
    );
}

#[test]
fn unreferenced_labels_are_dropped() {
    // Mach-O's `Lloh` labels only feed `.loh` directives; ELF's `.Lfunc_end`.
    let m = listing(MACHO_ARM, ObjectFormat::MachO, &Arch::Aarch64, "probe_tls");
    assert!(!m.text().contains("Lloh"), "{m}");
    let e = listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_tls");
    assert!(!e.text().contains("Lfunc_end"), "{e}");
    let synthetic = "f:\nLtmp3:\n\tb.ne\tLBB0_7\nLBB0_7:\n\tret\n\t.cfi_endproc\n";
    let l = listing(
        &format!("\t.section\t__TEXT,__text\n_{synthetic}"),
        ObjectFormat::MachO,
        &Arch::Aarch64,
        "f",
    );
    assert_eq!(lines(&l), ["f:", "  b.ne LBB1", "LBB1:", "  ret"]);
}

#[test]
fn rust_symbols_are_demangled_without_hashes() {
    let legacy = listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_tls");
    let v0 = listing(ELF_X86_V0, ObjectFormat::Elf, &Arch::X86_64, "probe_tls");
    assert!(
        legacy
            .text()
            .contains("[rip + frag::CUR::{constant}::{closure}::__RUST_STD_INTERNAL_VAL@TLSLD]"),
        "{legacy}"
    );
    // Legacy (`17h…E`, `{{closure}}`) and v0 (`_RNv…`, `{closure#0}`) manglings normalize alike.
    assert_eq!(legacy, v0);
    let call = listing(ELF_X86_V0, ObjectFormat::Elf, &Arch::X86_64, "probe_call");
    assert!(call.text().contains("call frag::slow\n"), "{call}");
    // Mach-O's extra `_`.
    let m = listing(MACHO_ARM, ObjectFormat::MachO, &Arch::Aarch64, "probe_tls");
    assert!(
        m.text().contains(
            "adrp x0, frag::CUR::{constant}::{closure}::__RUST_STD_INTERNAL_VAL@TLVPPAGE"
        ),
        "{m}"
    );
    assert_eq!(
        normalize::normalize_symbols("bl _memcpy", ObjectFormat::MachO),
        "bl memcpy"
    );
    assert_eq!(
        normalize::unify_disambiguators("a::{closure#3}::b::{{closure}}"),
        "a::{closure}::b::{closure}"
    );
    assert_eq!(
        normalize::demangle_symbol("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
        "core::ptr::drop_in_place"
    );
}

#[test]
fn outline_atomics_and_other_helpers_are_kept_verbatim() {
    let l = listing(ELF_ARM, ObjectFormat::Elf, &Arch::Aarch64, "probe_packed");
    assert!(l.text().contains("  bl __aarch64_ldadd8_relax\n"), "{l}");
    let t = listing(ELF_X86, ObjectFormat::Elf, &Arch::X86_64, "probe_tls");
    assert!(t.text().contains("  call __tls_get_addr@PLT\n"), "{t}");
}

// ---- instruction classes -----------------------------------------------------

#[test]
fn classes_find_atomics_calls_and_loops() {
    let x86 = InstructionClasses::for_arch(&Arch::X86_64).unwrap();
    let arm = InstructionClasses::for_arch(&Arch::Aarch64).unwrap();
    let s = |t: &str, f, a: &Arch, n, c: &InstructionClasses| listing(t, f, a, n).summary(c);

    let p = s(
        ELF_X86,
        ObjectFormat::Elf,
        &Arch::X86_64,
        "probe_packed",
        &x86,
    );
    assert_eq!(
        (p.atomic_rmw, p.calls, p.backward_branches, p.instructions),
        (1, 0, 0, 14)
    );
    let p = s(
        ELF_ARM,
        ObjectFormat::Elf,
        &Arch::Aarch64,
        "probe_packed",
        &arm,
    );
    assert_eq!(
        (p.atomic_rmw, p.calls),
        (1, 1),
        "outline atomics are a call and an atomic"
    );
    let p = s(
        MACHO_ARM,
        ObjectFormat::MachO,
        &Arch::Aarch64,
        "probe_rel",
        &arm,
    );
    assert_eq!((p.atomic_rmw, p.calls), (1, 0));
    let l = s(
        ELF_ARM,
        ObjectFormat::Elf,
        &Arch::Aarch64,
        "probe_loop",
        &arm,
    );
    assert_eq!((l.branches, l.backward_branches), (3, 1));
    let l = s(
        COFF_X86,
        ObjectFormat::Coff,
        &Arch::X86_64,
        "probe_loop",
        &x86,
    );
    assert_eq!((l.branches, l.backward_branches), (3, 1));
    let c = s(
        MACHO_ARM,
        ObjectFormat::MachO,
        &Arch::Aarch64,
        "probe_tls",
        &arm,
    );
    assert_eq!(c.calls, 1, "blr to the TLV thunk is a call");
    let c = s(
        ELF_X86,
        ObjectFormat::Elf,
        &Arch::X86_64,
        "probe_call",
        &x86,
    );
    assert_eq!((c.calls, c.atomics), (2, 0));

    // A tail call is a call; a jump table's indirect jump is not.
    let tail = "\t.type\tf,@function\nf:\n\tjmp\tfoo\n\tjmp\trax\n";
    let t = listing(tail, ObjectFormat::Elf, &Arch::X86_64, "f").summary(&x86);
    assert_eq!(t.calls, 1);
    for (text, rmw) in [
        ("stadd x1, [x0]", 1),
        ("ldaxr x8, [x0]", 1),
        ("casal x1, x2, [x0]", 1),
        ("ldr x8, [x0]", 0),
        ("ldar x8, [x0]", 0),
    ] {
        assert_eq!(arm.atomic_rmw.is_match(text), rmw == 1, "{text}");
    }
    assert!(arm.atomic_other.is_match("ldar x8, [x0]"));
    assert!(x86.atomic_rmw.is_match("xchg qword ptr [rdi], rax"));
    assert!(!x86.atomic_rmw.is_match("xchg rax, rcx"));
}

// ---- profiles ----------------------------------------------------------------

const PROFILE: &str = r#"
name = "test-arm"
triple = "aarch64-unknown-linux-gnu"
rustflags = "-C relocation-model=pie"
description = "test"
run = "qemu-aarch64"

[probe.probe_packed_alloc_relaxed]
has = ['^ldadd ']
lacks = ['^ldaddal ']
forbid = ["call"]
require = ["atomic-rmw"]
no_backward_branch_before = '^cmp '
why = "one relaxed add"
"#;

fn test_profile() -> Profile {
    Profile::parse(PROFILE, Path::new("targets/test-arm.toml")).unwrap()
}

#[test]
fn profile_fields_parse() {
    let p = test_profile();
    assert_eq!(p.rustflags, ["-C", "relocation-model=pie"]);
    assert_eq!(p.run, RunMode::Qemu("qemu-aarch64".into()));
    assert_eq!(p.arch(), Arch::Aarch64);
    assert_eq!(p.object_format(), ObjectFormat::Elf);
    let e = p.expect_for("probe_packed_alloc_relaxed").unwrap();
    assert_eq!(e.forbid, [Class::Call]);
    assert!(p.codegen_units().is_none());
    assert_eq!(
        ObjectFormat::from_triple("aarch64-apple-darwin"),
        ObjectFormat::MachO
    );
    assert_eq!(
        ObjectFormat::from_triple("x86_64-pc-windows-msvc"),
        ObjectFormat::Coff
    );
    let x = Profile::parse(
        &PROFILE.replace("aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu"),
        Path::new("x.toml"),
    )
    .unwrap();
    assert!(
        x.build_flags()
            .contains(&"llvm-args=-x86-asm-syntax=intel".to_string())
    );
}

#[test]
fn malformed_profiles_say_where_and_what() {
    let path = Path::new("targets/bad.toml");
    let err = |text: &str| Profile::parse(text, path).unwrap_err().to_string();
    // Syntax error on line 3.
    let e = err("name = \"a\"\ntriple = \"x\"\nrustflags = [\n");
    assert!(e.starts_with("targets/bad.toml:3:"), "{e}");
    // Wrong type: names the line and what was expected.
    let e = err(&PROFILE.replace("rustflags = \"-C relocation-model=pie\"", "rustflags = 3"));
    assert!(
        e.starts_with("targets/bad.toml:4:13:") && e.contains("string"),
        "{e}"
    );
    // Unknown field (a typo).
    let e = err(&PROFILE.replace("lacks =", "lack ="));
    assert!(e.contains("targets/bad.toml:") && e.contains("lack"), "{e}");
    // Bad run mode.
    let e = err(&PROFILE.replace("qemu-aarch64", "emulated"));
    assert!(e.contains("qemu-<arch>"), "{e}");
    // Bad regex: file, line, probe, pattern.
    let e = err(&PROFILE.replace("'^ldadd '", "'^ldadd ('"));
    assert!(
        e.starts_with("targets/bad.toml:9:")
            && e.contains("probe_packed_alloc_relaxed")
            && e.contains("^ldadd ("),
        "{e}"
    );
    // Unknown class.
    let e = err(&PROFILE.replace("forbid = [\"call\"]", "forbid = [\"calls\"]"));
    assert!(e.contains("unknown instruction class \"calls\""), "{e}");
    // A missing field.
    let e = err(&PROFILE.replace("description = \"test\"\n", ""));
    assert!(e.contains("description"), "{e}");
}

#[test]
fn unknown_names_suggest_the_nearest() {
    let profiles = vec![test_profile()];
    let e = Profile::find(&profiles, "test-amr")
        .unwrap_err()
        .to_string();
    assert!(e.contains("test-arm"), "{e}");
    let mut bad = test_profile();
    bad.expect
        .insert("probe_packed_alloc_relax".into(), ProbeExpect::default());
    let e = bad
        .validate(allocasm::probes::PROBES)
        .unwrap_err()
        .to_string();
    assert!(e.contains("probe_packed_alloc_relaxed"), "{e}");
}

#[test]
fn the_shipped_profiles_load() {
    let profiles = load_profiles().unwrap();
    let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    for required in [
        "aarch64-apple",
        "aarch64-linux",
        "aarch64-linux-lse",
        "x86_64-linux",
        "x86_64-linux-dylib",
    ] {
        assert!(
            names.contains(&required),
            "{required} missing from {names:?}"
        );
    }
    for p in &profiles {
        p.validate(allocasm::probes::PROBES).unwrap();
    }
}

// ---- checker ----------------------------------------------------------------

const RELAXED: Probe = Probe {
    name: "probe_packed_alloc_relaxed",
    allocator: "PackedArena",
    operation: "alloc",
    kind: ProbeKind::Concurrent,
    expect: "",
};

fn arm_listing(body: &str) -> Listing {
    let text = format!(
        "\t.type\tprobe_packed_alloc_relaxed,@function\nprobe_packed_alloc_relaxed:\n{body}"
    );
    listing(
        &text,
        ObjectFormat::Elf,
        &Arch::Aarch64,
        "probe_packed_alloc_relaxed",
    )
}

const GOOD: &str = "\tldadd\tx1, x9, [x0]\n\tubfx\tx9, x9, #55, #2\n\tcmp\tx9, x10\n\tb.ls\t.LBB0_2\n\tmov\tx0, #0\n\tret\n.LBB0_2:\n\tret\n";

fn assert_names_everything(f: &expect::Failure, pattern: &str, listing_line: &str) {
    let msg = f.to_string();
    assert!(
        msg.contains("probe_packed_alloc_relaxed"),
        "no probe in: {msg}"
    );
    assert!(msg.contains("test-arm"), "no profile in: {msg}");
    assert!(msg.contains(pattern), "no pattern {pattern} in: {msg}");
    assert!(msg.contains(listing_line), "no listing in: {msg}");
}

#[test]
fn a_good_listing_passes_every_expectation() {
    let outcomes = expect::evaluate(&test_profile(), &arm_listing(GOOD), &RELAXED);
    assert_eq!(outcomes.len(), 5);
    assert!(outcomes.iter().all(|o| o.passed()), "{:#?}", outcomes);
}

#[test]
fn missing_pattern_fails() {
    let l = arm_listing(&GOOD.replace("ldadd\t", "swp\t"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::MissingPattern)
        .expect("missing pattern");
    assert_names_everything(f, "/^ldadd /", "| probe_packed_alloc_relaxed:");
}

#[test]
fn forbidden_pattern_fails() {
    let l = arm_listing(&GOOD.replace("ldadd\t", "ldaddal\t"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::ForbiddenPattern)
        .expect("forbidden pattern");
    assert_names_everything(f, "/^ldaddal /", "ldaddal x1, x9, [x0]");
}

#[test]
fn forbidden_class_fails() {
    let l = arm_listing(&GOOD.replace(
        "\tldadd\tx1, x9, [x0]\n",
        "\tldadd\tx1, x9, [x0]\n\tbl\t_ZN4core9panicking5panic17h0123456789abcdefE\n",
    ));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::ForbiddenClass(Class::Call))
        .expect("call");
    assert_names_everything(f, "forbid call", "bl core::panicking::panic");
}

#[test]
fn allowed_calls_are_exempt_from_forbid_call_and_others_are_not() {
    let with_calls = GOOD.replace(
        "\tldadd\tx1, x9, [x0]\n",
        "\tldadd\tx1, x9, [x0]\n\tbl\t_ZN8allocasm6packed11PackedArena10alloc_slow17h0123456789abcdefE\n",
    );
    let mut p = test_profile();
    p.expect
        .get_mut("probe_packed_alloc_relaxed")
        .unwrap()
        .allow_calls
        .push(Pattern::new("::alloc_slow\\b").unwrap());
    let l = arm_listing(&with_calls);
    assert!(expect::check(&p, &l, &RELAXED).is_empty());
    // A call the profile does not allow still fails, naming it.
    let l = arm_listing(&with_calls.replace("10alloc_slow", "10alloc_fast"));
    let f = expect::check(&p, &l, &RELAXED);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_names_everything(
        &f[0],
        "forbid call",
        "bl allocasm::packed::PackedArena::alloc_fast",
    );
}

#[test]
fn missing_class_fails() {
    let mut p = test_profile();
    p.expect
        .get_mut("probe_packed_alloc_relaxed")
        .unwrap()
        .has
        .clear();
    let l = arm_listing(&GOOD.replace("ldadd\tx1, x9, [x0]", "ldr\tx9, [x0]"));
    let f = expect::check(&p, &l, &RELAXED);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].kind, FailureKind::MissingClass(Class::AtomicRmw));
    assert_names_everything(&f[0], "require atomic-rmw", "ldr x9, [x0]");
}

#[test]
fn backward_branch_before_the_anchor_fails() {
    let retry =
        "\tmov\tx9, #0\n.LBB0_1:\n\tldaxr\tx9, [x0]\n\tstlxr\tw8, x9, [x0]\n\tcbnz\tw8, .LBB0_1\n";
    let l = arm_listing(&format!("{retry}{GOOD}"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::BackwardBranchBefore)
        .expect("loop");
    assert_names_everything(f, "/^cmp /", "cbnz w8, .LBB1");
    // The same loop after the anchor is allowed.
    let after = arm_listing(&GOOD.replace(
        "\tret\n.LBB0_2:",
        &format!("\tret\n{}.LBB0_2:", retry.replace("LBB0_1", "LBB0_5")),
    ));
    let f = expect::check(&test_profile(), &after, &RELAXED);
    assert!(
        !f.iter()
            .any(|f| f.kind == FailureKind::BackwardBranchBefore),
        "{f:#?}"
    );
}

#[test]
fn missing_anchor_fails() {
    let l = arm_listing(&GOOD.replace("\tcmp\tx9, x10\n", "\tsubs\txzr, x9, x10\n"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::MissingAnchor)
        .expect("anchor");
    assert_names_everything(f, "/^cmp /", "subs xzr, x9, x10");
}

#[test]
fn single_threaded_probes_forbid_atomics_and_calls_everywhere() {
    let st = Probe {
        name: "probe_packed_alloc_relaxed",
        kind: ProbeKind::SingleThreaded,
        ..RELAXED
    };
    let mut p = test_profile();
    p.expect.clear();
    let l = arm_listing("\tbl\t__aarch64_ldadd8_relax\n\tret\n");
    let f = expect::check(&p, &l, &st);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert_names_everything(
        &f[0],
        "forbid atomic (suite: every single-threaded probe)",
        "bl __aarch64_ldadd8_relax",
    );
    assert_names_everything(
        &f[1],
        "forbid call (suite: every single-threaded probe)",
        "bl __aarch64_ldadd8_relax",
    );
    assert!(expect::check(&p, &arm_listing("\tadd\tx0, x0, #1\n\tret\n"), &st).is_empty());
}

#[test]
fn missing_probe_fails() {
    let p = test_profile();
    let listings = ProbeListings {
        profile: p.name.clone(),
        probes: Default::default(),
        missing: vec![RELAXED.name.into()],
    };
    let f = expect::check_all(&p, &listings, &[RELAXED]);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kind, FailureKind::MissingProbe);
    let msg = f[0].to_string();
    assert!(
        msg.contains("probe_packed_alloc_relaxed on profile test-arm")
            && msg.contains("not in the profile's assembly"),
        "{msg}"
    );
}
