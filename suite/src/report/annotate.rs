//! What the key instructions of a listing mean: highlight tags (atomic,
//! call, thread-local access, loop) per line, a note per key instruction, and
//! how thread-local storage is reached.
//!
//! The notes encode the facts of docs/design.md ("Codegen facts measured"): a
//! `lock`-prefixed x86 read-modify-write is a full barrier whatever ordering
//! was asked; arm64 LSE spells the ordering in the mnemonic (`ldadd` relaxed,
//! `ldaddal` acquire-release); `__aarch64_ldadd8_relax` is an outline-atomics
//! call that picks LSE at run time; `fs:@TPOFF` is local-exec TLS;
//! `__tls_get_addr` and TLSDESC are general-dynamic; `@TLVPPAGE` + `blr` is
//! the macOS `__tlv_get_addr` thunk call.

use std::sync::LazyLock;

use allocasm_suite::codegen::{Class, InstructionClasses, Line, Listing};
use regex::Regex;
use serde::Serialize;

/// A highlight tag of one listing line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Tag {
    /// An atomic read-modify-write (or an outline-atomics call).
    AtomicRmw,
    /// Another atomic instruction: fence, acquire load, release store.
    Atomic,
    /// A call (including tail calls).
    Call,
    /// Part of a thread-local access.
    Tls,
    /// A backward branch: a loop.
    Loop,
}

impl Tag {
    /// The tag's name (JSON, CSS class).
    pub fn name(self) -> &'static str {
        match self {
            Tag::AtomicRmw => "atomic-rmw",
            Tag::Atomic => "atomic",
            Tag::Call => "call",
            Tag::Tls => "tls",
            Tag::Loop => "loop",
        }
    }
}

/// A note on one key instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Annotation {
    /// The instruction, as in the listing (`lock xadd qword ptr [rdi], rax`).
    pub instruction: String,
    /// What it means.
    pub note: String,
}

/// How a listing reaches thread-local storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TlsAccess {
    /// `none`, `local-exec`, `initial-exec`, `general-dynamic`, `local-dynamic`, `tlsdesc`,
    /// `macos-tlv`, `windows-tls`, `aeabi-read-tp`.
    pub model: &'static str,
    /// One line for people.
    pub how: &'static str,
}

static TLS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(\bfs:|:gottprel|\bgs:|@TPOFF|@GOTTPOFF|@TLSGD|@TLSLD|@DTPOFF|__tls_get_addr|:tlsdesc|\.tlsdesccall|(?i:tpidr_el0)|:tprel_|:dtprel_|@TLVP|_tls_index|@SECREL|:secrel_|%tprel|__aeabi_read_tp|(?:^|[\s,(])tp(?:[\s,)]|$))",
    )
    .expect("static regex")
});

/// The tags of each line of `listing` (same indices as `listing.lines`).
pub fn tags(listing: &Listing, classes: &InstructionClasses) -> Vec<Vec<Tag>> {
    let mut tags = vec![Vec::new(); listing.lines.len()];
    for (class, tag) in [
        (Class::AtomicRmw, Tag::AtomicRmw),
        (Class::Call, Tag::Call),
        (Class::BackwardBranch, Tag::Loop),
    ] {
        for (i, _) in listing.matching(class, classes) {
            tags[i].push(tag);
        }
    }
    for (i, _) in listing.matching(Class::Atomic, classes) {
        if !tags[i].contains(&Tag::AtomicRmw) {
            tags[i].push(Tag::Atomic);
        }
    }
    let mut after_tls_descriptor = false;
    for (i, line) in listing.lines.iter().enumerate() {
        let Line::Instruction(ins) = line else {
            continue;
        };
        let text = ins.text();
        if TLS.is_match(&text) {
            tags[i].push(Tag::Tls);
            if text.contains(":tlsdesc") || text.contains("@TLVP") {
                after_tls_descriptor = true;
            }
        } else if after_tls_descriptor && is_indirect_call(&text) {
            tags[i].push(Tag::Tls);
            after_tls_descriptor = false;
        }
        tags[i].sort();
        tags[i].dedup();
    }
    tags
}

fn is_indirect_call(text: &str) -> bool {
    text.starts_with("blr ") || text.starts_with("call qword ptr [")
}

/// Notes on the key instructions of `listing`, in order, one per distinct
/// note.
pub fn annotations(listing: &Listing) -> Vec<Annotation> {
    let mut out: Vec<Annotation> = Vec::new();
    let mut tls_thunk: Option<&'static str> = None;
    for ins in listing.instructions() {
        let text = ins.text();
        // An indirect call right after a TLS descriptor is that descriptor's
        // call, not a generic function pointer.
        let thunk = if is_indirect_call(&text) {
            tls_thunk.take().map(str::to_string)
        } else {
            None
        };
        let note = thunk.or_else(|| note_for(&text));
        if text.contains("@TLVP") {
            tls_thunk = Some(
                "the `__tlv_get_addr` thunk call: the TLV descriptor's first word is the thunk, \
                 called with the descriptor's address (its name never appears in the .s)",
            );
        } else if text.contains(":tlsdesc:") {
            tls_thunk = Some(
                "the TLSDESC resolver call: returns the variable's offset from the thread \
                 pointer (general-dynamic, resolved lazily by the dynamic linker)",
            );
        }
        if let Some(note) = note
            && !out.iter().any(|a| a.note == note)
        {
            out.push(Annotation {
                instruction: text,
                note,
            });
        }
    }
    out
}

/// LSE mnemonic families whose suffix spells the ordering.
const LSE: &[&str] = &[
    "ldadd", "ldclr", "ldeor", "ldset", "ldsmax", "ldsmin", "ldumax", "ldumin", "swp", "casp",
    "cas",
];

fn lse_note(mnemonic: &str) -> Option<String> {
    let family = LSE.iter().find(|f| mnemonic.starts_with(**f))?;
    let rest = &mnemonic[family.len()..];
    let (order, size) = match rest.strip_suffix(['b', 'h']) {
        Some(o) if ["", "a", "l", "al"].contains(&o) => (o, &rest[o.len()..]),
        _ => (rest, ""),
    };
    let ordering = match order {
        "" => "relaxed (no ordering)",
        "a" => "acquire",
        "l" => "release",
        "al" => "acquire-release (what SeqCst compiles to)",
        _ => return None,
    };
    let what = match *family {
        "ldadd" => "atomic fetch-add",
        "ldclr" => "atomic fetch-and-not",
        "ldeor" => "atomic fetch-xor",
        "ldset" => "atomic fetch-or",
        "swp" => "atomic swap",
        "cas" => "compare-and-swap",
        "casp" => "compare-and-swap of a register pair (128-bit CAS)",
        _ => "atomic min/max",
    };
    let width = match size {
        "b" => ", 8-bit",
        "h" => ", 16-bit",
        _ => "",
    };
    Some(format!(
        "`{mnemonic}`: one LSE instruction, {what}{width}, {ordering}; the ordering is in the \
         mnemonic (`{family}` relaxed, `{family}a` acquire, `{family}l` release, `{family}al` \
         acquire-release)"
    ))
}

static OUTLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^bl __aarch64_([a-z]+?)(\d+)_(relax|acq_rel|acq|rel|sync)\b")
        .expect("static regex")
});

/// The note for one instruction, if it is a key one.
fn note_for(text: &str) -> Option<String> {
    let mnemonic = text.split_whitespace().next().unwrap_or("");
    let s = |s: &str| Some(s.to_string());
    if let Some(c) = OUTLINE.captures(text) {
        let order = match &c[3] {
            "relax" => "relaxed",
            "acq" => "acquire",
            "rel" => "release",
            "acq_rel" => "acquire-release",
            _ => "sequentially consistent",
        };
        return Some(format!(
            "`bl __aarch64_{}{}_{}`: an outline-atomics call ({order}); the helper checks once at \
             run time whether the CPU has LSE and then runs `{}` or an `ldxr`/`stxr` retry loop",
            &c[1], &c[2], &c[3], &c[1]
        ));
    }
    if text.starts_with("lock xadd") {
        return s(
            "`lock xadd`: atomic fetch-add; the `lock` prefix makes it a full barrier \
                  whatever ordering was asked (Relaxed costs the same as SeqCst on x86)",
        );
    }
    if text.starts_with("lock cmpxchg16b") {
        return s(
            "`lock cmpxchg16b`: 128-bit compare-exchange (needs the cmpxchg16b feature, \
                  part of x86-64-v2); a full barrier",
        );
    }
    if text.starts_with("lock cmpxchg") {
        return s("`lock cmpxchg`: compare-exchange; the `lock` prefix makes it a full barrier");
    }
    if text.starts_with("lock ") {
        return s(
            "a `lock`-prefixed read-modify-write whose old value is not needed: atomic, \
                  and a full barrier whatever ordering was asked",
        );
    }
    if mnemonic == "xchg" && text.contains('[') {
        return s(
            "`xchg` with a memory operand is implicitly locked: an atomic swap and a full \
                  barrier",
        );
    }
    if mnemonic == "mfence" {
        return s("`mfence`: a full fence (a SeqCst fence or store)");
    }
    if mnemonic == "movabs" && text.ends_with(", 36028797018963967") {
        return s(
            "`movabs`: the 55-bit mask 0x7FFFFFFFFFFFFF does not fit a 32-bit immediate, so \
                  it is loaded into a register first (arm64 folds it into the `and`)",
        );
    }
    if text.contains("@GOTTPOFF") || text.contains(":gottprel") {
        return s(
            "the variable's offset from the thread pointer, loaded from the GOT \
                  (`@GOTTPOFF` / `:gottprel:`): initial-exec TLS, no call",
        );
    }
    if text.contains("@TPOFF") {
        return s(
            "`fs:`-relative access at a link-time offset (`@TPOFF`): local-exec TLS, no \
                  call (what an executable gets)",
        );
    }
    if text.contains("fs:[0]") {
        return s("reads the thread pointer from `fs:[0]`");
    }
    if text.contains("fs:") {
        return s("`fs:`-relative access: this thread's thread-local block");
    }
    if text.contains("__tls_get_addr") {
        return s(
            "`__tls_get_addr`: general-dynamic TLS, a call on every access (what a \
                  position-independent library gets)",
        );
    }
    if text.contains("@TLSGD") || text.contains("@TLSLD") {
        return s("the TLS index argument of a `__tls_get_addr` call (general/local-dynamic TLS)");
    }
    if text.contains(":tlsdesc:") {
        return s(
            "TLSDESC: general-dynamic TLS through a descriptor; the `blr` that follows calls \
                  its resolver",
        );
    }
    if text.to_ascii_uppercase().contains("TPIDR_EL0") {
        return s("`mrs TPIDR_EL0`: reads the thread pointer");
    }
    if text.contains(":tprel_") {
        return s(
            "offset from the thread pointer fixed at link time (`:tprel_*:`): local-exec \
                  TLS, no call",
        );
    }
    if text.contains("@TLVPPAGE") || text.contains("@TLVP") {
        return s(
            "`@TLVPPAGE`/`@TLVP`: the macOS thread-local variable descriptor; its thunk \
                  (`__tlv_get_addr`) is loaded and called next",
        );
    }
    if text.contains("_tls_index") {
        return s(
            "Windows implicit TLS: `_tls_index` selects the module's slot in the thread's \
                  TLS array (TEB), no call",
        );
    }
    if text.contains("%tprel") {
        return s("RISC-V local-exec TLS: `tp` plus a link-time offset, no call");
    }
    if text.contains("__aeabi_read_tp") {
        return s("`__aeabi_read_tp`: a call to read the thread pointer (32-bit Arm)");
    }
    if TP_REGISTER.is_match(text) {
        return s(
            "`tp`: this thread's block on RISC-V, plus an offset the linker fixed (local-exec)",
        );
    }
    if let Some(note) = lse_note(mnemonic) {
        return Some(note);
    }
    if matches!(
        mnemonic,
        "ldxr" | "ldaxr" | "ldxp" | "ldaxp" | "stxr" | "stlxr" | "stxp" | "stlxp"
    ) {
        return s(
            "load/store-exclusive: an LL/SC retry loop (what atomics compile to without \
                  LSE)",
        );
    }
    if matches!(mnemonic, "ldrexd" | "strexd" | "ldrex" | "strex") {
        return s("load/store-exclusive: an LL/SC retry loop (32-bit Arm)");
    }
    if matches!(mnemonic, "ldar" | "ldarb" | "ldarh" | "ldapr") {
        return s("acquire load");
    }
    if matches!(mnemonic, "stlr" | "stlrb" | "stlrh") {
        return s("release store");
    }
    if mnemonic == "dmb" || mnemonic == "dsb" {
        return s("memory barrier");
    }
    if mnemonic.starts_with("amo") {
        return s("RISC-V atomic memory operation (A extension), one instruction");
    }
    if mnemonic == "ubfx" && text.ends_with("#55, #2") {
        return s(
            "`ubfx`: extracts the 2-bit size factor at bit 55 in one instruction (x86 needs \
                  `shr` + `and`)",
        );
    }
    if matches!(mnemonic, "lzcnt" | "bsr" | "tzcnt" | "bsf" | "clz" | "rbit") {
        return s("a bit scan: the size class comes from the position of the highest set bit");
    }
    if text.starts_with("call qword ptr [") || mnemonic == "blr" {
        return s("an indirect call (a function pointer: e.g. run-time CPU feature dispatch)");
    }
    None
}

/// RISC-V's thread pointer as an operand (`add a0, a0, tp`): what is left of
/// `%tprel` once a linker resolved it.
static TP_REGISTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s,(])tp(?:[\s,)]|$)").expect("static regex"));

/// How `listing` reaches thread-local storage (in a `.s` listing, or in a
/// linked one where objdump spells `tpidr_el0` in lower case and the linker
/// has resolved the relocations to constants).
pub fn tls_access(listing: &Listing) -> TlsAccess {
    let text = listing.instruction_text();
    let has = |s: &str| text.contains(s);
    let upper = text.to_ascii_uppercase();
    let (model, how) = if has("__tls_get_addr") && has("@TLSLD") {
        (
            "local-dynamic",
            "local-dynamic: a __tls_get_addr call for the module, then an offset",
        )
    } else if has("__tls_get_addr") {
        ("general-dynamic", "general-dynamic: call __tls_get_addr")
    } else if has(":tlsdesc") {
        (
            "tlsdesc",
            "general-dynamic via TLSDESC: a descriptor call (blr)",
        )
    } else if has("@TLVP") {
        (
            "macos-tlv",
            "macOS TLV descriptor + thunk call (__tlv_get_addr)",
        )
    } else if has("@GOTTPOFF") || has(":gottprel") {
        (
            "initial-exec",
            "initial-exec: offset from the GOT (@GOTTPOFF/:gottprel:), no call",
        )
    } else if has("@TPOFF") || has("fs:") {
        ("local-exec", "local-exec: fs:@TPOFF, no call")
    } else if has(":tprel_") {
        ("local-exec", "local-exec: TPIDR_EL0 + :tprel:, no call")
    } else if upper.contains("TPIDR_EL0") {
        (
            "local-exec",
            "local-exec: TPIDR_EL0 + an offset the linker fixed, no call",
        )
    } else if has("_tls_index") {
        ("windows-tls", "Windows TLS: _tls_index + TEB slot, no call")
    } else if has("%tprel") {
        ("local-exec", "local-exec: tp + %tprel, no call")
    } else if has("__aeabi_read_tp") {
        ("aeabi-read-tp", "call __aeabi_read_tp, then an offset")
    } else if TP_REGISTER.is_match(&text) {
        (
            "local-exec",
            "local-exec: tp + an offset the linker fixed, no call",
        )
    } else {
        ("none", "no thread-local access")
    };
    TlsAccess { model, how }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lse_orderings() {
        assert!(note_for("ldadd x8, x9, [x0]").unwrap().contains("relaxed"));
        assert!(
            note_for("ldaddal x8, x9, [x0]")
                .unwrap()
                .contains("acquire-release")
        );
        assert!(note_for("ldaddl x8, x9, [x0]").unwrap().contains("release"));
        assert!(
            note_for("casal x8, x9, [x0]")
                .unwrap()
                .contains("compare-and-swap")
        );
        assert!(note_for("ldr x8, [x0]").is_none());
    }

    #[test]
    fn outline_atomics_and_lock() {
        let n = note_for("bl __aarch64_ldadd8_relax").unwrap();
        assert!(
            n.contains("outline-atomics") && n.contains("relaxed"),
            "{n}"
        );
        let n = note_for("bl __aarch64_ldadd8_acq_rel").unwrap();
        assert!(n.contains("acquire-release"), "{n}");
        assert!(
            note_for("lock xadd qword ptr [rdi], rax")
                .unwrap()
                .contains("full barrier")
        );
    }

    #[test]
    fn tls_models() {
        let listing = |lines: &[&str]| Listing {
            name: "p".into(),
            lines: lines
                .iter()
                .map(|l| {
                    let (m, o) = l.split_once(' ').unwrap_or((l, ""));
                    Line::Instruction(allocasm_suite::codegen::Instruction {
                        mnemonic: m.into(),
                        operands: o.into(),
                    })
                })
                .collect(),
        };
        let le = listing(&["mov rax, qword ptr fs:[CUR@TPOFF]", "ret"]);
        assert_eq!(tls_access(&le).model, "local-exec");
        let ie = listing(&[
            "mov rax, qword ptr [rip + CUR@GOTTPOFF]",
            "mov rax, qword ptr fs:[rax]",
        ]);
        assert_eq!(tls_access(&ie).model, "initial-exec");
        let gd = listing(&["call __tls_get_addr@PLT", "ret"]);
        assert_eq!(tls_access(&gd).model, "general-dynamic");
        let mac = listing(&[
            "adrp x0, CUR@TLVPPAGE",
            "ldr x0, [x0, CUR@TLVPPAGEOFF]",
            "ldr x8, [x0]",
            "blr x8",
        ]);
        assert_eq!(tls_access(&mac).model, "macos-tlv");
        let notes = annotations(&mac);
        assert!(
            notes
                .iter()
                .any(|a| a.instruction == "blr x8" && a.note.contains("__tlv_get_addr")),
            "{notes:?}"
        );
        assert_eq!(tls_access(&listing(&["ret"])).model, "none");
        // Linked listings (objdump): lower-case system register, offsets
        // resolved by the linker.
        let arm = listing(&["mrs x11, tpidr_el0", "add x1, x11, x0", "ret"]);
        assert_eq!(tls_access(&arm).model, "local-exec");
        assert!(tls_access(&arm).how.contains("linker"));
        let rv = listing(&["lui a0, 0x0", "add a0, a0, tp", "ld a1, -24(a0)", "ret"]);
        assert_eq!(tls_access(&rv).model, "local-exec");
        let tags = tags(
            &rv,
            &InstructionClasses::for_arch(&allocasm_suite::codegen::Arch::Riscv64).unwrap(),
        );
        assert!(
            tags[1].contains(&Tag::Tls) && tags[0].is_empty(),
            "{tags:?}"
        );
        // `tp` only as a whole operand.
        assert_eq!(tls_access(&listing(&["mv a0, tpx", "ret"])).model, "none");
    }
}
