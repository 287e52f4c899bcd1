//! Unit tests of the extractor, normalizer, profiles and checker on real
//! fragments (see `testdata/README.md`).

use std::collections::BTreeSet;
use std::path::Path;

use super::expect::{self, FailureKind};
use super::*;
use allocasm::probes::{Probe, ProbeKind};
use profile::Scope;

/// A fixture of `testdata/`: its text, object format and architecture.
struct Src(&'static str, ObjectFormat, Arch);

macro_rules! src {
    ($file:literal, $format:ident, $arch:ident) => {
        Src(
            include_str!(concat!("testdata/", $file)),
            ObjectFormat::$format,
            Arch::$arch,
        )
    };
}

impl Src {
    fn asm(&self) -> parse::Assembly {
        parse::parse_asm(self.0, self.1)
    }

    fn listing(&self, name: &str) -> Listing {
        listing(self.0, self.1, &self.2, name)
    }
}

const ELF_ARMV7_PIE_TLS: Src = src!("elf-armv7-pie-tls.s", Elf, Arm);
const ELF_X86_TLSGD: Src = src!("elf-x86_64-pic-tlsgd.s", Elf, X86_64);
const ELF_X86: Src = src!("elf-x86_64.s", Elf, X86_64);
const ELF_ARM: Src = src!("elf-aarch64.s", Elf, Aarch64);
const MACHO_ARM: Src = src!("macho-aarch64.s", MachO, Aarch64);
const COFF_X86: Src = src!("coff-x86_64.s", Coff, X86_64);
const COFF_ARM: Src = src!("coff-aarch64.s", Coff, Aarch64);
const COFF_X86_SEH: Src = src!("coff-x86_64-seh.s", Coff, X86_64);
const ELF_RISCV: Src = src!("elf-riscv64.s", Elf, Riscv64);
const ELF_ARMV7: Src = src!("elf-armv7.s", Elf, Arm);

/// `elf-x86_64.s` as `-C symbol-mangling-version=v0` spells it (the 1.97
/// nightly's output differs from 1.95's in these two symbols alone, and in
/// the `.tbss` section name that loses its quotes with the legacy `$`s).
fn elf_x86_v0() -> Src {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let slow = "_ZN4frag4slow17h29650a8c6f2662acE";
        let cur = "_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hbc4004cc08be1826E";
        let cur_v0 = "_RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL";
        ELF_X86
            .0
            .replace(&format!("\".tbss.{cur}\""), &format!(".tbss.{cur_v0}"))
            .replace(cur, cur_v0)
            .replace(slow, "_RNvCs8Xf2uEwxQ2F_4frag4slow")
    });
    Src(&TEXT, ObjectFormat::Elf, Arch::X86_64)
}

fn formats() -> [(&'static str, Src); 8] {
    [
        ("elf-x86_64", ELF_X86),
        ("elf-x86_64-v0", elf_x86_v0()),
        ("elf-aarch64", ELF_ARM),
        ("macho-aarch64", MACHO_ARM),
        ("coff-x86_64", COFF_X86),
        ("coff-aarch64", COFF_ARM),
        ("elf-riscv64", ELF_RISCV),
        ("elf-armv7", ELF_ARMV7),
    ]
}

fn listing(text: &str, format: ObjectFormat, arch: &Arch, name: &str) -> Listing {
    let asm = parse::parse_asm(text, format);
    let f = asm
        .function(name)
        .unwrap_or_else(|| panic!("{name} not found in {:?}", asm.names()));
    normalize::normalize(f, arch)
}

/// The listing of an ELF function `f` whose body is `body`.
fn elf_f(body: &str, arch: Arch) -> Listing {
    let text = format!("\t.type\tf,@function\nf:\n{body}");
    listing(&text, ObjectFormat::Elf, &arch, "f")
}

/// A summary's atomic read-modify-writes, calls and backward branches.
fn rmw_calls_loops(s: &listing::Summary) -> (usize, usize, usize) {
    (s.atomic_rmw, s.calls, s.backward_branches)
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
    for (what, src) in formats() {
        let asm = src.asm();
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
    let asm = ELF_X86.asm();
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
    let asm = MACHO_ARM.asm();
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
    let asm = COFF_X86.asm();
    let f = asm.function("probe_call").unwrap();
    assert!(f.raw_text().contains(".seh_endproc"));
    assert!(
        !f.raw_text().contains(".def"),
        "the next function's .def leaked in:\n{}",
        f.raw_text()
    );
    // `@feat.00` is a .def with `.type 0`: not a function.
    assert!(asm.function("@feat.00").is_none());
    let tls = COFF_X86.listing("probe_tls");
    assert!(tls.text().contains("gs:[88]"), "{tls}");
}

#[test]
fn coff_seh_funclets_handler_data_and_one_only_sections() {
    // Real x86_64-pc-windows-msvc output of two probes: each body is
    // `.def`/`.scl 2`/`.type 32`/`.endef` + a `one_only` text section, ends
    // in `.seh_handlerdata` + a re-entered `one_only` section + `.seh_endproc`,
    // and is followed by its catch funclet (`.scl 3`) and `.xdata` tables.
    let asm = COFF_X86_SEH.asm();
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
    let tls = COFF_X86_SEH.listing("probe_thread_cursor_alloc");
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
    assert_eq!(rmw_calls_loops(&s), (0, 2, 0), "{tls}");
}

#[test]
fn a_cold_block_jumping_back_to_the_epilogue_is_no_loop() {
    // probe_packed_alloc_relaxed on Windows: the error and refill calls sit
    // after the returns and `jmp` back to the shared result block.
    let x86 = InstructionClasses::for_arch(&Arch::X86_64).unwrap();
    let l = COFF_X86_SEH.listing("probe_packed_alloc_relaxed");
    let s = l.summary(&x86);
    assert_eq!(rmw_calls_loops(&s), (1, 2, 0), "{l}");
    // The same shape with a real cycle through the rejoin is a loop.
    let looped =
        ".LBB0_1:\n\tcmp\trax, 1\n\tjne\t.LBB0_2\n\tret\n.LBB0_2:\n\tcall\tg\n\tjmp\t.LBB0_1\n";
    let l = elf_f(looped, Arch::X86_64);
    assert_eq!(l.summary(&x86).backward_branches, 1, "{l}");
}

#[test]
fn riscv64_armv7_and_arm64_windows_classes() {
    let rv = InstructionClasses::for_arch(&Arch::Riscv64).unwrap();
    let arm = InstructionClasses::for_arch(&Arch::Arm).unwrap();
    let a64 = InstructionClasses::for_arch(&Arch::Aarch64).unwrap();
    let sum = |src: &Src, n, c: &InstructionClasses| {
        let l = src.listing(n);
        (l.summary(c), l)
    };

    // riscv64: one `amoadd.d`, no loop; `.rl` for Release; `call` is a call.
    let (p, l) = sum(&ELF_RISCV, "probe_packed", &rv);
    assert_eq!(rmw_calls_loops(&p), (1, 0, 0), "{l}");
    assert!(l.text().contains("  amoadd.d a2, a1, (a0)\n"), "{l}");
    let (p, l) = sum(&ELF_RISCV, "probe_rel", &rv);
    assert_eq!(p.atomic_rmw, 1, "{l}");
    assert!(l.text().contains("amoadd.d.rl"), "{l}");
    let (p, l) = sum(&ELF_RISCV, "probe_call", &rv);
    assert_eq!((p.calls, p.atomics), (2, 0), "{l}");
    let (p, l) = sum(&ELF_RISCV, "probe_loop", &rv);
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
    let (p, l) = sum(&ELF_ARMV7, "probe_packed", &arm);
    assert!(
        l.text().contains("ldrexd") && l.text().contains("strexd"),
        "{l}"
    );
    assert_eq!(rmw_calls_loops(&p), (2, 0, 1), "{l}");
    // Default PIC: the thread-local is a `bl __tls_get_addr`.
    let (p, l) = sum(&ELF_ARMV7, "probe_tls", &arm);
    assert!(l.text().contains("  bl __tls_get_addr\n"), "{l}");
    assert_eq!(p.calls, 1, "{l}");
    // `bxeq lr` falls through to the `b` back: still a loop.
    let (p, l) = sum(&ELF_ARMV7, "probe_loop", &arm);
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
    let (p, l) = sum(&COFF_ARM, "probe_packed", &a64);
    assert!(
        l.text().contains("ldxr") && l.text().contains("stxr"),
        "{l}"
    );
    assert_eq!(rmw_calls_loops(&p), (2, 0, 1), "{l}");
    let (p, l) = sum(&COFF_ARM, "probe_tls", &a64);
    assert!(l.text().contains("  ldr x9, [x18, #88]\n"), "{l}");
    assert!(l.text().contains(":secrel_hi12:frag::CUR::"), "{l}");
    assert_eq!(p.calls, 0, "{l}");
}

#[test]
fn aliases_from_function_merging_resolve() {
    for (what, src) in formats() {
        let asm = src.asm();
        assert_eq!(
            asm.aliases.get("probe_seq").map(String::as_str),
            Some("probe_dup"),
            "{what}"
        );
        let seq = src.listing("probe_seq");
        let dup = src.listing("probe_dup");
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
    for (what, src) in formats() {
        for f in &src.asm().functions {
            let l = normalize::normalize(f, &src.2);
            for line in lines(&l) {
                let t = line.trim();
                let data = listing::DATA_DIRECTIVES
                    .iter()
                    .any(|d| t.starts_with(&format!("{d} ")));
                assert!(
                    !t.starts_with('.') || t.ends_with(':') || data || t.starts_with(".inst "),
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
    let l = ELF_X86.listing("probe_packed");
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
    let l = ELF_X86.listing("probe_loop");
    assert_eq!(&lines(&l)[..5], &expected_elf);
    let m = MACHO_ARM.listing("probe_loop");
    assert!(lines(&m).contains(&"  cbz x0, LBB1".to_string()), "{m}");
    assert!(lines(&m).contains(&"LBB2:".to_string()), "{m}");
    // Constant-pool labels too, defined outside the function.
    let c = ELF_ARM.listing("probe_match");
    assert!(c.text().contains("adrp x8, .LCPI1"), "{c}");
    // The same function at another position in the file gets the same listing.
    let moved = ELF_X86.0.replace(".LBB6_2", ".LBB17_9");
    assert_eq!(
        listing(&moved, ObjectFormat::Elf, &Arch::X86_64, "probe_packed"),
        ELF_X86.listing("probe_packed")
    );
}

/// ThinLTO promotes an anonymous constant to a global named
/// `anon.<crate hash>.<n>.llvm.<module hash>`: both hashes change with any
/// edit of the crate, so unnormalized they changed the snapshot of every
/// probe that loads one (`probe_segregated_cached_dealloc` on 8 profiles).
#[test]
fn promoted_anonymous_constants_lose_their_hashes() {
    let hash = "38c7c55b3a5bd611380a96abce85e02a";
    let elf = format!(
        "\t.text\n\t.type\tf,@function\nf:\n\tlea\tr9, [rip + anon.{hash}.12.llvm.427410279807979613]\n\tadrp\tx11, :lo12:anon.{hash}.8.llvm.15937614570676966365\n\tret\n.Lfunc_end0:\n"
    );
    let l = listing(&elf, ObjectFormat::Elf, &Arch::X86_64, "f");
    assert_eq!(
        lines(&l),
        [
            "f:",
            "  lea r9, [rip + anon.1]",
            "  adrp x11, :lo12:anon.2",
            "  ret"
        ]
    );
    let macho = format!(
        "\t.section\t__TEXT,__text\n_f:\n\tadrp\tx12, _anon.{hash}.11.llvm.15941344587249908501@PAGE\n\tadd\tx12, x12, _anon.{hash}.11.llvm.15941344587249908501@PAGEOFF\n\tret\n\t.cfi_endproc\n"
    );
    let m = listing(&macho, ObjectFormat::MachO, &Arch::Aarch64, "f");
    assert!(!m.text().contains(hash), "{m}");
    assert!(m.text().contains("anon.1@PAGEOFF"), "{m}");
}

#[test]
fn unreferenced_labels_are_dropped() {
    // Mach-O's `Lloh` labels only feed `.loh` directives; ELF's `.Lfunc_end`.
    let m = MACHO_ARM.listing("probe_tls");
    assert!(!m.text().contains("Lloh"), "{m}");
    let e = ELF_X86.listing("probe_tls");
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
    let legacy = ELF_X86.listing("probe_tls");
    let v0 = elf_x86_v0().listing("probe_tls");
    assert!(
        legacy
            .text()
            .contains("[rip + frag::CUR::{constant}::{closure}::__RUST_STD_INTERNAL_VAL@TLSLD]"),
        "{legacy}"
    );
    // Legacy (`17h…E`, `{{closure}}`) and v0 (`_RNv…`, `{closure#0}`) manglings normalize alike.
    assert_eq!(legacy, v0);
    let call = elf_x86_v0().listing("probe_call");
    assert!(call.text().contains("call frag::slow\n"), "{call}");
    // Mach-O's extra `_`.
    let m = MACHO_ARM.listing("probe_tls");
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
    // v0 spells a function's generic arguments (`alloc_slow::<0>`, what beta
    // 1.100 wrote for PackedArena's const-generic slow path); legacy never
    // does, so the turbofish goes and `<T as Trait>` stays.
    for (path, stripped) in [
        (
            "allocasm::packed::PackedArena::alloc_slow::<0>",
            "allocasm::packed::PackedArena::alloc_slow",
        ),
        ("a::f::<b::C<u8>, 4>::{closure}", "a::f::{closure}"),
        ("<a::B as c::D>::e", "<a::B as c::D>::e"),
        ("x::<y", "x::<y"),
    ] {
        assert_eq!(normalize::strip_generic_args(path), stripped);
    }
}

#[test]
fn outline_atomics_and_other_helpers_are_kept_verbatim() {
    let l = ELF_ARM.listing("probe_packed");
    assert!(l.text().contains("  bl __aarch64_ldadd8_relax\n"), "{l}");
    let t = ELF_X86.listing("probe_tls");
    assert!(t.text().contains("  call __tls_get_addr@PLT\n"), "{t}");
}

// ---- instruction classes -----------------------------------------------------

#[test]
fn classes_find_atomics_calls_and_loops() {
    let x86 = InstructionClasses::for_arch(&Arch::X86_64).unwrap();
    let arm = InstructionClasses::for_arch(&Arch::Aarch64).unwrap();
    let s = |src: &Src, n, c: &InstructionClasses| src.listing(n).summary(c);

    let p = s(&ELF_X86, "probe_packed", &x86);
    assert_eq!(
        (p.atomic_rmw, p.calls, p.backward_branches, p.instructions),
        (1, 0, 0, 14)
    );
    let p = s(&ELF_ARM, "probe_packed", &arm);
    assert_eq!(
        (p.atomic_rmw, p.calls),
        (1, 1),
        "outline atomics are a call and an atomic"
    );
    let p = s(&MACHO_ARM, "probe_rel", &arm);
    assert_eq!((p.atomic_rmw, p.calls), (1, 0));
    let l = s(&ELF_ARM, "probe_loop", &arm);
    assert_eq!((l.branches, l.backward_branches), (3, 1));
    let l = s(&COFF_X86, "probe_loop", &x86);
    assert_eq!((l.branches, l.backward_branches), (3, 1));
    let c = s(&MACHO_ARM, "probe_tls", &arm);
    assert_eq!(c.calls, 1, "blr to the TLV thunk is a call");
    let c = s(&ELF_X86, "probe_call", &x86);
    assert_eq!((c.calls, c.atomics), (2, 0));

    // A tail call is a call; a jump table's indirect jump is not.
    let t = elf_f("\tjmp\tfoo\n\tjmp\trax\n", Arch::X86_64).summary(&x86);
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
count = { atomic-rmw = 1 }
check = ['@atomic-rmw', { not = '@loop' }, { not = '@call' }, '@cond-branch']
hot_max = 6
to_fit_check_max = 4
why = "one relaxed add"

[[probe.probe_packed_alloc_relaxed.rule]]
scope = "function"
lacks = ['^ldaddal ']
forbid = ["call"]
require = ["atomic-rmw"]
"#;

const SUITE: &str = r#"
cold_calls = ['::alloc_slow$']

[kind.single-threaded]
scope = "function"
forbid = ["atomic", "call"]

[kind.concurrent]
count = { call = 0, loop = 0 }
"#;

fn test_suite() -> profile::Suite {
    profile::Suite::parse(SUITE, Path::new("targets/suite.toml")).unwrap()
}

fn test_profile() -> Profile {
    Profile::parse_with(PROFILE, Path::new("targets/test-arm.toml"), &test_suite()).unwrap()
}

#[test]
fn a_parallel_build_that_panics_is_its_jobs_error_and_the_others_stand() {
    let p = test_profile();
    let jobs = [(&p, false), (&p, true)];
    let results = build::in_parallel(
        &jobs,
        |&(p, _)| p,
        &build::BuildOptions::default(),
        &|_| {},
        |&(_, panics)| if panics { panic!("a build bug") } else { Ok(7) },
    );
    assert!(matches!(results[0], Ok(7)));
    let Err(build::BuildError::Cargo {
        profile, stderr, ..
    }) = &results[1]
    else {
        panic!("{:?}", results[1].as_ref().err());
    };
    assert_eq!(
        (profile.as_str(), stderr.as_str()),
        ("test-arm", "the build thread panicked")
    );
}

#[test]
fn profile_fields_parse() {
    let p = test_profile();
    assert_eq!(p.rustflags, ["-C", "relocation-model=pie"]);
    assert_eq!(p.run, RunMode::Qemu("qemu-aarch64".into()));
    assert_eq!(p.arch(), Arch::Aarch64);
    assert_eq!(p.object_format(), ObjectFormat::Elf);
    let e = p.expect_for("probe_packed_alloc_relaxed").unwrap();
    assert_eq!(e.rules.len(), 2);
    assert_eq!(e.rules[0].scope, Scope::Hot);
    assert_eq!(e.rules[0].count.get(&Class::AtomicRmw), Some(&1));
    assert_eq!(e.rules[0].check.len(), 4);
    assert_eq!(e.rules[1].scope, Scope::Function);
    assert_eq!(e.rules[1].forbid, [Class::Call]);
    assert_eq!((e.hot_max, e.to_fit_check_max), (Some(6), Some(4)));
    // The suite's concurrent defaults apply, the probe's own rules after them.
    let rules = p.rules_for(&RELAXED);
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[0].origin, "suite: concurrent");
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
    // Unknown class, in a list and in a check sequence.
    let e = err(&PROFILE.replace("forbid = [\"call\"]", "forbid = [\"calls\"]"));
    assert!(e.contains("unknown instruction class \"calls\""), "{e}");
    let e = err(&PROFILE.replace("'@cond-branch'", "'@cond'"));
    assert!(e.contains("unknown instruction class \"cond\""), "{e}");
    // Unknown scope.
    let e = err(&PROFILE.replace("scope = \"function\"", "scope = \"cold\""));
    assert!(e.contains("unknown scope \"cold\""), "{e}");
    // A check step that is neither a pattern, next nor not.
    let e = err(&PROFILE.replace("{ not = '@call' }", "{ nxt = '@call' }"));
    assert!(e.contains("targets/bad.toml:"), "{e}");
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

/// [`RELAXED`] as a single-threaded probe.
const SINGLE: Probe = Probe {
    kind: ProbeKind::SingleThreaded,
    ..RELAXED
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

fn failure<'a>(f: &'a [expect::Failure], rule: &str) -> &'a expect::Failure {
    f.iter()
        .find(|f| f.rule.contains(rule))
        .unwrap_or_else(|| panic!("no failure of {rule:?} in {f:#?}"))
}

#[test]
fn a_good_listing_passes_every_expectation() {
    let outcomes = expect::evaluate(&test_profile(), &arm_listing(GOOD), &RELAXED);
    // suite: count call, count loop; probe: has, count atomic-rmw, check;
    // function rule: lacks, forbid, require; hot_max, to_fit_check_max.
    assert_eq!(outcomes.len(), 10, "{outcomes:#?}");
    assert!(outcomes.iter().all(|o| o.passed()), "{:#?}", outcomes);
}

#[test]
fn the_hot_path_of_a_fast_path_leaves_out_the_cold_blocks() {
    let p = test_profile();
    let with_slow = GOOD.replace(
        "\tret\n.LBB0_2:\n\tret\n",
        "\tret\n.LBB0_2:\n\tret\n.LBB0_3:\n\tmov\tx0, x1\n\tbl\t_ZN8allocasm6packed11PackedArena10alloc_slow17h0123456789abcdefE\n\tb\t.LBB0_2\n",
    )
    .replace("\tb.ls\t.LBB0_2\n", "\tb.ls\t.LBB0_2\n\tcbz\tx9, .LBB0_3\n");
    let l = arm_listing(&with_slow);
    let cold = BTreeSet::new();
    let h = cfg::analyze(&l, &p, &cold).hot_path();
    // entry (ldadd, ubfx, cmp, b.ls) + cbz + mov/ret; not the alloc_slow block.
    assert_eq!(h.instructions, 7, "{h:#?}");
    assert_eq!(h.function_instructions, 11);
    assert_eq!(h.to_fit_check, Some(4));
    assert!(h.calls.is_empty(), "{h:#?}");
    assert_eq!(h.atomics, 1);
    // Only the function-scope `forbid call` sees the slow path's call (and
    // the budget the added `cbz` exceeds).
    let f = expect::check(&p, &l, &RELAXED);
    let rules: Vec<&str> = f.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["function: forbid call", "hot_max 6"]);
    // Without the cold_calls pattern the slow path's block is hot: the call
    // is on the hot path and the suite's `count call = 0` fails on it.
    let mut p2 = p.clone();
    p2.cold_calls.clear();
    let f = expect::check(&p2, &l, &RELAXED);
    let f = failure(&f, "hot: count call = 0 (suite: concurrent)");
    assert!(
        f.listing
            .contains(">>   bl allocasm::packed::PackedArena::alloc_slow"),
        "{f}"
    );
    // ELF's .text.unlikely set does the same as the pattern.
    let cold: BTreeSet<String> = ["allocasm::packed::PackedArena::alloc_slow".to_string()].into();
    let h2 = cfg::analyze(&l, &p2, &cold).hot_path();
    assert_eq!(h2, h);
}

#[test]
fn a_slow_path_taken_on_every_allocation_is_on_the_hot_path() {
    // `forbid call` with an allow-list passed this; the hot path does not.
    let l = arm_listing(&GOOD.replace(
        "\tldadd\tx1, x9, [x0]\n",
        "\tldadd\tx1, x9, [x0]\n\tbl\t_ZN8allocasm6packed11PackedArena10alloc_fast17h0123456789abcdefE\n",
    ));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = failure(&f, "hot: count call = 0");
    assert_names_everything(
        f,
        "count call = 0",
        "bl allocasm::packed::PackedArena::alloc_fast",
    );
    assert_eq!(
        f.offending.as_deref(),
        Some("bl allocasm::packed::PackedArena::alloc_fast")
    );
}

#[test]
fn missing_pattern_fails() {
    let l = arm_listing(&GOOD.replace("ldadd\t", "swp\t"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::MissingPattern)
        .expect("missing pattern");
    assert_names_everything(f, "/^ldadd /", "swp x1, x9, [x0]");
    assert!(
        f.listing.starts_with("hot path (6 of 7 instructions):"),
        "{f}"
    );
}

#[test]
fn forbidden_pattern_fails() {
    let l = arm_listing(&GOOD.replace("ldadd\t", "ldaddal\t"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let f = f
        .iter()
        .find(|f| f.kind == FailureKind::ForbiddenPattern)
        .expect("forbidden pattern");
    assert_names_everything(
        f,
        "function: lacks /^ldaddal /",
        ">>   ldaddal x1, x9, [x0]",
    );
}

#[test]
fn counts_and_budgets_fail_on_a_second_atomic_and_an_extra_load() {
    let l = arm_listing(&GOOD.replace(
        "\tldadd\tx1, x9, [x0]\n",
        "\tldadd\tx1, x9, [x0]\n\tldadd\tx1, x11, [x2]\n",
    ));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let c = failure(&f, "hot: count atomic-rmw = 1");
    assert_eq!(
        c.kind,
        FailureKind::Count {
            class: Class::AtomicRmw,
            expected: 1,
            found: 2
        }
    );
    assert!(c.to_string().contains("found 2, expected 1"), "{c}");
    failure(&f, "hot_max 6");
    failure(&f, "to_fit_check_max 4");
    // One extra load before the fit check: both budgets, nothing else.
    let l = arm_listing(&GOOD.replace("\tcmp\t", "\tldr\tx10, [x0, #8]\n\tcmp\t"));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f[0].to_string()
            .contains("hot path is 7 instructions, over 6"),
        "{}",
        f[0]
    );
    assert!(
        f[1].to_string()
            .contains("entry to fit check is 5 instructions, over 4"),
        "{}",
        f[1]
    );
}

#[test]
fn a_retry_loop_between_the_atomic_and_the_fit_check_fails() {
    // A compare-exchange loop in place of the fetch_add: the loop is on the
    // hot path and its retry branch is the first conditional branch after
    // the atomic.
    let cas = "\tldr\tx9, [x0]\n.LBB0_1:\n\tadd\tx10, x9, x1\n\tcasal\tx9, x10, [x0]\n\tcmp\tx9, x11\n\tb.ne\t.LBB0_1\n";
    let l = arm_listing(&GOOD.replace("\tldadd\tx1, x9, [x0]\n", cas));
    let f = expect::check(&test_profile(), &l, &RELAXED);
    let lp = failure(&f, "hot: count loop = 0 (suite: concurrent)");
    assert!(lp.listing.contains(">>   b.ne .LBB1"), "{lp}");
    let seq = failure(
        &f,
        "hot: check [@atomic-rmw, not @backward-branch, not @call, @cond-branch]",
    );
    assert_eq!(seq.offending.as_deref(), Some("b.ne .LBB1"));
    // The anchor of the old rule (`^cmp`) came before the atomic; this rule
    // has none to miss: the same listing without the loop passes.
    assert!(expect::check(&test_profile(), &arm_listing(GOOD), &RELAXED).is_empty());
}

#[test]
fn check_sequences_match_in_order_next_and_not() {
    let seq = |steps: &str| {
        let text = format!(
            "name = \"t\"\ntriple = \"aarch64-unknown-linux-gnu\"\ndescription = \"\"\nrun = \"none\"\n[probe.probe_packed_alloc_relaxed]\ncheck = [{steps}]\n"
        );
        Profile::parse(&text, Path::new("t.toml")).unwrap()
    };
    let l = arm_listing(GOOD);
    for (steps, ok) in [
        ("'^ldadd ', { next = '^ubfx ' }, '^cmp '", true),
        ("'^ldadd ', { next = '^cmp ' }", false),
        ("'^cmp ', '^ldadd '", false),
        ("'^ldadd ', { not = '^mov ' }, '^ret'", false),
        ("'^ldadd ', { not = '^mov ' }, '@cond-branch'", true),
        ("'@cond-branch', { not = '@atomic' }", true),
        ("'@cond-branch', { not = '^mov' }", false),
    ] {
        let p = seq(steps);
        let f = expect::check(&p, &l, &RELAXED);
        assert_eq!(f.is_empty(), ok, "{steps}: {f:#?}");
    }
}

#[test]
fn expected_calls_on_the_hot_path_are_checked_in_order() {
    let text = "name = \"t\"\ntriple = \"aarch64-apple-darwin\"\ndescription = \"\"\nrun = \"none\"\n[probe.probe_thread_cursor_alloc]\ncalls = ['^tlv_get_addr ']\n";
    let p = Profile::parse_with(text, Path::new("t.toml"), &test_suite()).unwrap();
    let tc = Probe {
        name: "probe_thread_cursor_alloc",
        ..RELAXED
    };
    let body = "\tadrp\tx0, _CURSOR@TLVPPAGE\n\tldr\tx0, [x0, _CURSOR@TLVPPAGEOFF]\n\tldr\tx8, [x0]\n\tblr\tx8\n\tldr\tx0, [x0]\n\tret\n";
    let macho = |body: &str| {
        let text = format!("\t.section\t__TEXT,__text\n_probe_thread_cursor_alloc:\n{body}");
        listing(
            &text,
            ObjectFormat::MachO,
            &Arch::Aarch64,
            "probe_thread_cursor_alloc",
        )
    };
    let l = macho(body);
    let h = cfg::analyze(&l, &p, &BTreeSet::new()).hot_path();
    assert_eq!(h.calls, ["tlv_get_addr (TLV thunk of CURSOR, via x8)"]);
    // `calls` replaces the suite's `count call = 0`.
    assert!(
        expect::check(&p, &l, &tc).is_empty(),
        "{:#?}",
        expect::check(&p, &l, &tc)
    );
    let no_call = body.replace("\tblr\tx8\n", "");
    let l = macho(&no_call);
    let f = expect::check(&p, &l, &tc);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].to_string().contains("the calls are []"), "{}", f[0]);
}

#[test]
fn missing_class_fails() {
    let mut p = test_profile();
    p.expect
        .get_mut("probe_packed_alloc_relaxed")
        .unwrap()
        .rules
        .remove(0);
    let l = arm_listing(&GOOD.replace("ldadd\tx1, x9, [x0]", "ldr\tx9, [x0]"));
    let f = expect::check(&p, &l, &RELAXED);
    let m = f
        .iter()
        .find(|f| f.kind == FailureKind::MissingClass(Class::AtomicRmw))
        .expect("require");
    assert_names_everything(m, "function: require atomic-rmw", "ldr x9, [x0]");
    // No atomic: no fit check to measure.
    failure(&f, "to_fit_check_max 4");
}

#[test]
fn single_threaded_probes_forbid_atomics_and_calls_everywhere() {
    let st = SINGLE;
    let mut p = test_profile();
    p.expect.clear();
    // The call is behind a branch to a block that ends in a trap: cold, off
    // the hot path, and still forbidden in the function scope.
    let l = arm_listing(
        "\tcbz\tx0, .LBB0_2\n\tadd\tx0, x0, #1\n\tret\n.LBB0_2:\n\tbl\t__aarch64_ldadd8_relax\n\tbrk\t#0x1\n",
    );
    let f = expect::check(&p, &l, &st);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert_names_everything(
        &f[0],
        "function: forbid atomic (suite: single-threaded)",
        ">>   bl __aarch64_ldadd8_relax",
    );
    assert_names_everything(
        &f[1],
        "function: forbid call (suite: single-threaded)",
        "bl __aarch64_ldadd8_relax",
    );
    assert!(expect::check(&p, &arm_listing("\tadd\tx0, x0, #1\n\tret\n"), &st).is_empty());
}

/// A single-threaded probe whose fast path tail-calls its out-of-line
/// slow path names that callee: its `calls` list lifts the kind's ban on
/// calls in that scope, and checks the callees exactly instead; the ban on
/// atomics stays.
#[test]
fn a_probe_that_lists_its_callees_lifts_the_kinds_call_ban() {
    let st = SINGLE;
    let text = PROFILE.split("[probe.").next().unwrap().to_string()
        + "[[probe.probe_packed_alloc_relaxed.rule]]\nscope = \"function\"\ncalls = ['::walk$']\n";
    let p = Profile::parse_with(&text, Path::new("targets/test-arm.toml"), &test_suite()).unwrap();
    let tail = |callee: &str| {
        arm_listing(&format!(
            "\tcbz\tx0, .LBB0_2\n\tadd\tx0, x0, #1\n\tret\n.LBB0_2:\n\tb\t{callee}\n"
        ))
    };
    assert!(expect::check(&p, &tail("list::walk"), &st).is_empty());
    let f = expect::check(&p, &tail("list::other"), &st);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].to_string().contains("function: calls [/::walk$/]"),
        "{}",
        f[0]
    );
    // Without the list, the same tail call is banned (as before).
    let mut banned = p.clone();
    banned.expect.clear();
    let f = expect::check(&banned, &tail("list::walk"), &st);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].to_string()
            .contains("function: forbid call (suite: single-threaded)")
    );
    // The atomic ban is the kind's still.
    let atomic = arm_listing("\tldadd\tx1, x9, [x0]\n\tb\tlist::walk\n");
    let f = expect::check(&p, &atomic, &st);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].to_string().contains("forbid atomic"), "{}", f[0]);
}

#[test]
fn missing_probe_fails() {
    let p = test_profile();
    let listings = ProbeListings {
        profile: p.name.clone(),
        missing: vec![RELAXED.name.into()],
        ..Default::default()
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

// ---- statement model and control flow ----------------------------------------

fn profile_for(triple: &str) -> Profile {
    let text = format!("name = \"t\"\ntriple = \"{triple}\"\ndescription = \"\"\nrun = \"none\"\n");
    Profile::parse_with(&text, Path::new("t.toml"), &test_suite()).unwrap()
}

#[test]
fn armv7_literal_pools_are_kept_as_data_and_not_counted() {
    let raw = ELF_ARMV7_PIE_TLS.asm();
    let f = raw.function("probe_thread_cursor_alloc").unwrap();
    let l = normalize::normalize(f, &Arch::Arm);
    let data: Vec<&listing::Data> = l
        .lines
        .iter()
        .filter_map(|x| match x {
            Line::Data(d) => Some(d),
            _ => None,
        })
        .collect();
    // Both `.long`s of the pool are there, each under its (referenced) label,
    // with the relocation kind the TLS access needs.
    assert_eq!(data.len(), 2, "{}", l.text());
    assert_eq!(data[0].relocation(), Some("GOTTPOFF"), "{:?}", data[0]);
    assert!(
        data[0].value.starts_with(
            "allocasm::thread_cursor::CURSORS::{constant}::{closure}::__RUST_STD_INTERNAL_VAL(GOTTPOFF)-(.LPC"
        ),
        "{:?}",
        data[0]
    );
    let text = l.text();
    // `.Ltmp367` is referenced only from the pool's own `.long`: kept.
    assert!(text.contains(".LCPI1:\n.Ltmp1:\n  .long "), "{text}");
    assert!(text.contains(".LCPI2:\n  .long .Lanon"), "{text}");
    assert!(text.contains("\n.LPC1:\n"), "{text}");
    // Every `.long` of the function's code reaches the listing.
    let body_longs = f
        .lines
        .iter()
        .filter(|x| x.trim_start().starts_with(".long"))
        .count();
    assert_eq!(body_longs, data.len());
    // Data is never an instruction.
    let n = l.instructions().count();
    assert_eq!(
        n + data.len()
            + l.lines
                .iter()
                .filter(|x| matches!(x, Line::Label(_)))
                .count(),
        l.lines.len()
    );
    assert!(l.instructions().all(|i| !i.mnemonic.starts_with(".long")));
    // The `.inst 0xe7ffdefe` trap is an instruction.
    assert!(text.contains("  .inst 0xe7ffdefe\n"), "{text}");
}

#[test]
fn armv7_hot_path_uses_the_text_unlikely_section_and_predicated_returns() {
    let asm = ELF_ARMV7_PIE_TLS.asm();
    assert!(
        asm.cold
            .contains("_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E"),
        "{:?}",
        asm.cold
    );
    let cold: BTreeSet<String> = asm
        .cold
        .iter()
        .map(|n| normalize::normalize_symbols(n, ObjectFormat::Elf))
        .collect();
    assert!(cold.contains("allocasm::thread_cursor::ThreadCursorArena::refill"));
    let l = normalize::normalize(
        asm.function("probe_thread_cursor_alloc").unwrap(),
        &Arch::Arm,
    );
    let mut p = profile_for("armv7-unknown-linux-gnueabihf");
    p.cold_calls.clear();
    let h = cfg::analyze(&l, &p, &cold).hot_path();
    assert_eq!(h.calls, ["__aeabi_read_tp"], "{h:#?}");
    assert!(!h.no_hot_return);
    // The fast path ends at the predicated return `poplo {…, pc}`.
    assert!(h.lines.last().unwrap().starts_with("poplo {"), "{h:#?}");
    assert!(h.instructions < h.function_instructions);
    // Not knowing refill is cold puts it on the hot path.
    let h = cfg::analyze(&l, &p, &BTreeSet::new()).hot_path();
    assert!(h.calls.iter().any(|c| c.ends_with("::refill")), "{h:#?}");

    // A predicated return ends a path and falls through.
    let body = "\tcmp\tr0, #0\n\tbxeq\tlr\n\tldr\tr1, [r0]\n\tstr\tr1, [r0, #4]\n\tpopne\t{r4, pc}\n\tbl\t_ZN4core9panicking5panic17h0123456789abcdefE\n";
    let l = listing(
        &format!("\t.type\tf,%function\nf:\n{body}"),
        ObjectFormat::Elf,
        &Arch::Arm,
        "f",
    );
    let c = cfg::analyze(&l, &p, &cold);
    let h = c.hot_path();
    assert_eq!(h.instructions, 5, "{h:#?}");
    assert!(c.blocks.last().unwrap().cold);
}

#[test]
fn x86_prefix_lines_join_their_instruction() {
    let l = ELF_X86_TLSGD.listing("probe_thread_cursor_alloc");
    let text = l.text();
    assert!(text.contains("  data16 lea rdi, [rip + "), "{text}");
    assert!(
        text.contains("  data16 data16 rex64 call __tls_get_addr@PLT\n"),
        "{text}"
    );
    assert!(
        l.instructions()
            .all(|i| !matches!(i.mnemonic.as_str(), "data16" | "rex64")),
        "{text}"
    );
    // Counted once each: the source has 4 prefix lines and 2 instructions
    // they belong to.
    let raw = ELF_X86_TLSGD.asm();
    let f = raw.function("probe_thread_cursor_alloc").unwrap();
    let prefix_lines = f
        .lines
        .iter()
        .filter(|x| matches!(x.trim(), "data16" | "rex64"))
        .count();
    assert_eq!(prefix_lines, 4);
    let p = profile_for("x86_64-unknown-linux-gnu");
    let cold: BTreeSet<String> =
        ["allocasm::thread_cursor::ThreadCursorArena::refill".to_string()].into();
    let h = cfg::analyze(&l, &p, &cold).hot_path();
    // The call is a call, named after its callee; refill, called through
    // the GOT, is named after its GOT slot and is cold.
    assert_eq!(h.calls, ["__tls_get_addr"], "{h:#?}");
    assert!(h.stack_accesses > 0);
}

#[test]
fn x86_traps_and_landing_pads_are_cold() {
    let body = "\tpush\trax\n\ttest\trdi, rdi\n\tje\t.LBB0_2\n\tmov\trax, qword ptr [rdi]\n\tpop\trcx\n\tret\n.LBB0_2:\n\tud2\n.Ltmp3:\n\tcall\t_Unwind_Resume@PLT\n";
    let l = elf_f(body, Arch::X86_64);
    let p = profile_for("x86_64-unknown-linux-gnu");
    let none = BTreeSet::new();
    let c = cfg::analyze(&l, &p, &none);
    let h = c.hot_path();
    assert_eq!(h.instructions, 6, "{h:#?}");
    assert_eq!(h.stack_accesses, 2);
    assert!(h.calls.is_empty());
    assert_eq!(h.to_fit_check, None);
    assert!(
        c.blocks
            .iter()
            .skip(1)
            .filter(|b| b.start > 5)
            .all(|b| b.cold),
        "{:#?}",
        c.blocks
    );
}

#[test]
fn riscv64_hot_path_and_loops() {
    let body = "\tli\ta2, 0\n.LBB0_1:\n\tlr.d\ta3, (a0)\n\tadd\ta4, a3, a1\n\tsc.d\ta5, a4, (a0)\n\tbnez\ta5, .LBB0_1\n\tbltu\ta3, a2, .LBB0_3\n\tmv\ta0, a3\n\tret\n.LBB0_3:\n\ttail\t_ZN8allocasm6packed11PackedArena10alloc_slow17h0123456789abcdefE\n";
    let l = elf_f(body, Arch::Riscv64);
    let p = profile_for("riscv64gc-unknown-linux-gnu");
    let h = cfg::analyze(&l, &p, &BTreeSet::new()).hot_path();
    assert_eq!(h.instructions, 8, "{h:#?}");
    assert_eq!(h.loops, 1);
    // The first conditional branch after `lr.d` is the retry `bnez`.
    assert_eq!(h.to_fit_check, Some(5));
    assert!(h.calls.is_empty(), "{h:#?}");
}

#[test]
fn coff_and_macho_fragments_keep_their_instruction_counts() {
    // The statement model adds data lines but never an instruction: on the
    // real fragments every line the old normalizer counted is still one.
    for (name, src) in formats() {
        for f in &src.asm().functions {
            let l = normalize::normalize(f, &src.2);
            let code_lines = f
                .lines
                .iter()
                .skip(1)
                .filter(|x| {
                    let t = x.trim();
                    parse::label_of(x).is_none()
                        && !t.is_empty()
                        && (!t.starts_with('.') || t.starts_with(".inst"))
                        && !t.starts_with('#')
                        && !t.starts_with("//")
                        && !t.starts_with(';')
                        && !t.starts_with('@')
                        && !matches!(t, "data16" | "rex64")
                })
                .count();
            assert_eq!(
                l.instructions().count(),
                code_lines,
                "{name} {}: {}",
                f.name,
                l.text()
            );
        }
    }
}

/// A miss that leaves by a conditional tail call (`b.hi refill`, as LLVM
/// writes `if miss { return self.refill(..) }`) is not a call on the hot
/// path: the fast path falls through it, and its block stays hot. (Before,
/// the block counted as cold, and `count call = 0` failed on the branch.)
#[test]
fn a_conditional_tail_call_to_a_cold_path_is_not_a_hot_call() {
    let p = test_profile();
    let body = GOOD.replace(
        "\tb.ls\t.LBB0_2\n",
        "\tb.hi\t_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h0123456789abcdefE\n\tb.ls\t.LBB0_2\n",
    );
    let l = arm_listing(&body);
    let cold: BTreeSet<String> =
        ["allocasm::thread_cursor::ThreadCursorArena::refill".to_string()].into();
    let c = cfg::analyze(&l, &p, &cold);
    let h = c.hot_path();
    assert!(h.calls.is_empty(), "{h:#?}");
    // ldadd, ubfx, cmp, b.hi, b.ls, then the return: the entry block is hot.
    assert_eq!(h.instructions, 7, "{h:#?}");
    assert!(!h.no_hot_return, "{h:#?}");
    let f = expect::check(&p, &l, &RELAXED);
    assert!(!f.iter().any(|f| f.rule.contains("count call")), "{f:#?}");
    // In the whole function it is still a call.
    let n = l
        .lines
        .iter()
        .position(|line| matches!(line, Line::Instruction(i) if i.mnemonic == "b.hi"))
        .unwrap();
    assert!(c.is_conditional_tail_call(n));
    assert!(c.callee(n).is_some() && c.hot_callee(n).is_none());
}

#[test]
fn the_frame_record_of_a_target_that_keeps_frame_pointers_is_counted_apart() {
    // x86_64 macOS: rustc keeps the frame pointer in every function, leaf
    // ones too; a spill is still a stack access.
    let asm = "\t.section\t__TEXT,__text\n_f:\n\tpush\trbp\n\tmov\trbp, rsp\n\tmov\tqword ptr [rbp - 8], rdi\n\tmov\trax, qword ptr [rdi]\n\tpop\trbp\n\tret\n\t.cfi_endproc\n";
    let l = listing(asm, ObjectFormat::MachO, &Arch::X86_64, "f");
    let cold = BTreeSet::new();
    let mut p = profile_for("x86_64-apple-darwin");
    let plain = cfg::analyze(&l, &p, &cold).hot_path();
    assert_eq!(
        (plain.stack_accesses, plain.frame_accesses),
        (3, 0),
        "{plain:#?}"
    );
    p.keeps_frame_pointers = true;
    let h = cfg::analyze(&l, &p, &cold).hot_path();
    assert_eq!((h.stack_accesses, h.frame_accesses), (1, 2), "{h:#?}");
    assert_eq!(h.instructions, plain.instructions);
    // `count stack` counts what the report counts: the spill, not the
    // record (before, it found 3 with the key on as with it off).
    let rule = |keeps: bool| {
        let text = format!(
            "name = \"t\"\ntriple = \"x86_64-apple-darwin\"\ndescription = \"\"\nrun = \"none\"\nkeeps_frame_pointers = {keeps}\n[probe.f]\ncount = {{ stack = 1 }}\n"
        );
        Profile::parse(&text, Path::new("t.toml")).unwrap()
    };
    let f_probe = Probe {
        name: "f",
        ..SINGLE
    };
    assert!(expect::check(&rule(true), &l, &f_probe).is_empty());
    let off = expect::check(&rule(false), &l, &f_probe);
    assert!(
        off.iter()
            .any(|f| f.rule.contains("count stack = 1") && f.to_string().contains("found 3")),
        "{off:#?}"
    );
    // The repository's x86_64 macOS profile says so.
    let mac = Profile::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../targets/x86_64-apple.toml"
    )));
    assert!(mac.map(|m| m.keeps_frame_pointers).unwrap_or(false));
}

#[test]
fn of_two_paths_as_long_the_hot_path_is_the_one_that_does_not_return_zero() {
    let p = test_profile();
    let cold = BTreeSet::new();
    // The refusal as the branch's target, and as the fall-through: either
    // way the hot path is the store and return, not the null.
    for body in [
        "\tldr\tx9, [x0]\n\tadds\tx9, x9, x1\n\tb.hs\t.LBB0_1\n\tstr\tx9, [x0]\n\tret\n.LBB0_1:\n\tmov\tx0, xzr\n\tret\n",
        "\tldr\tx9, [x0]\n\tadds\tx9, x9, x1\n\tb.lo\t.LBB0_1\n\tmov\tx0, xzr\n\tret\n.LBB0_1:\n\tstr\tx9, [x0]\n\tret\n",
    ] {
        let h = cfg::analyze(&arm_listing(body), &p, &cold).hot_path();
        assert_eq!(h.instructions, 5, "{h:#?}");
        assert!(h.lines.iter().any(|l| l == "str x9, [x0]"), "{h:#?}");
        assert!(!h.lines.iter().any(|l| l.contains("xzr")), "{h:#?}");
    }
    // The zero behind an epilogue's restore counts too (x86-64 with a frame
    // pointer: `xor eax, eax; pop rbp; ret`).
    let text = "\t.type\tprobe_linear_alloc,@function\nprobe_linear_alloc:\n\tpush\trbp\n\tmov\trax, qword ptr [rdi]\n\tadd\trax, rsi\n\tjb\t.LBB0_1\n\tmov\tqword ptr [rdi], rax\n\tpop\trbp\n\tret\n.LBB0_1:\n\txor\teax, eax\n\tpop\trbp\n\tret\n";
    let l = listing(text, ObjectFormat::Elf, &Arch::X86_64, "probe_linear_alloc");
    let h = cfg::analyze(&l, &profile_for("x86_64-unknown-linux-gnu"), &cold).hot_path();
    assert_eq!(h.instructions, 7, "{h:#?}");
    assert!(
        h.lines.iter().any(|l| l == "mov qword ptr [rdi], rax"),
        "{h:#?}"
    );
}
