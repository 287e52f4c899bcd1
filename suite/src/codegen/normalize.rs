//! The one normalizer: makes a [`Function`] into a [`Listing`] that stays the
//! same when only naming noise changes.
//!
//! Rules, in order:
//! 1. Data directives inside the code (`.long`, `.word`, `.quad`, `.short`,
//!    `.byte`: armv7 literal pools, which carry the TLS relocation kind) are
//!    kept as [`Line::Data`], shown and never counted as instructions. Other
//!    directives (`.cfi_*`, `.p2align`, `.loh`, `.seh_*`, ...) and comments
//!    (`#`, `//`, `;` by architecture; `#APP`/`InlineAsm` markers) are
//!    dropped; the function's own label is dropped (the listing's name says
//!    it).
//! 2. Whitespace is folded: one space between mnemonic and operands, none
//!    inside operands except after commas and inside brackets' `+`/`-` as
//!    written; prefixes (`lock`, and `data16`/`rex64` even when alone on
//!    their line) join the mnemonic of the instruction they prefix.
//! 3. Rust symbols in operands are demangled (`rustc-demangle`, legacy
//!    `_ZN…17h…E` and v0 `_R…`), without hashes or crate disambiguators, and
//!    closures/constants spelled one way (`{{closure}}` and `{closure#0}`
//!    both become `{closure}`). Mach-O's extra leading `_` is stripped.
//! 4. Local labels (`.LBB0_3`, `LBB0_3`, `.Ltmp5`, `Lloh2`, `.LCPI5_0`,
//!    `.Lfunc_begin0`, `.LJTI0_0`, `l_anon.<hash>.3`, COFF's
//!    `anon.<hash>.3`, and the `anon.<hash>.3.llvm.<n>` that ThinLTO
//!    promotes a constant to, ...) are renumbered per function and per family in
//!    order of first appearance (`.LBB0_3` → `.LBB1`); label definitions no
//!    instruction or data directive refers to are dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::listing::{DATA_DIRECTIVES, Data, Instruction, Line, Listing};
use super::parse::{Function, is_local_label, label_of};
use super::profile::{Arch, ObjectFormat};

/// x86 instruction prefixes that join the following mnemonic, whether
/// written on the same line (`lock xadd`) or alone on the line before
/// (LLVM's `data16` / `rex64` padding of the general-dynamic TLS sequence,
/// which the linker needs to relax it): a prefix is never an instruction.
pub const PREFIXES: &[&str] = &[
    "lock", "rep", "repe", "repz", "repne", "repnz", "data16", "rex64", "notrack", "xacquire",
    "xrelease",
];

/// The mnemonic without the size/padding prefixes that do not change what an
/// instruction is (`data16 data16 rex64 call` is a `call`); `lock` and
/// `rep` stay, they do.
pub fn base_mnemonic(mnemonic: &str) -> &str {
    let mut m = mnemonic;
    loop {
        match m.split_once(' ') {
            Some(("data16" | "rex64" | "notrack", rest)) => m = rest,
            _ => return m,
        }
    }
}

fn symbol_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Legacy (`_ZN…E`, with `$u7b$`-style escapes and `.llvm.N` suffixes)
    // and v0 (`_R…`) manglings, with Mach-O's extra `_`.
    RE.get_or_init(|| {
        Regex::new(r"\b_{1,2}(ZN[0-9A-Za-z_$.]+|R[0-9A-Za-z_]+)").expect("symbol regex")
    })
}

fn local_label_re(format: ObjectFormat) -> &'static Regex {
    static ELF: OnceLock<Regex> = OnceLock::new();
    static MACHO: OnceLock<Regex> = OnceLock::new();
    static COFF: OnceLock<Regex> = OnceLock::new();
    match format {
        ObjectFormat::MachO => MACHO.get_or_init(|| {
            Regex::new(
                r"\b(?:((?:l_?|_)?anon\.)[0-9a-f]{8,}\.(\d+(?:\.llvm\.\d+)?)|(L[A-Za-z_]*?|l[A-Za-z_]*?)(\d+(?:_\d+)?))\b",
            )
            .expect("label regex")
        }),
        // COFF spells rustc's anonymous constants `anon.<hash>.N`, without
        // ELF's `.L`: the same family, so the hash never reaches a listing.
        ObjectFormat::Coff => COFF.get_or_init(|| {
            Regex::new(
                r"(?:^|[^\w.$])(?:((?:\.L)?anon\.)[0-9a-f]{8,}\.(\d+(?:\.llvm\.\d+)?)|(\.L[A-Za-z_]*?)(\d+(?:_\d+)?))\b",
            )
            .expect("label regex")
        }),
        ObjectFormat::Elf => ELF.get_or_init(|| {
            Regex::new(
                r"(?:^|[^\w.$])(?:((?:\.L)?anon\.)[0-9a-f]{8,}\.(\d+(?:\.llvm\.\d+)?)|(\.L[A-Za-z_]*?)(\d+(?:_\d+)?))\b",
            )
            .expect("label regex")
        }),
    }
}

/// Demangles one mangled Rust symbol without its hash, spelling closures
/// and constants one way.
pub fn demangle_symbol(mangled: &str) -> String {
    let Ok(d) = rustc_demangle::try_demangle(mangled) else {
        return mangled.to_string();
    };
    let s = strip_generic_args(&format!("{d:#}"));
    super::symbols::unwrap_inherent_impl_paths(&unify_disambiguators(&s))
}

/// `f::<0>` / `f::<u8, 4>` → `f`: v0 mangling (rustc's default from 1.100
/// on nightly and beta) spells a function's generic arguments, legacy
/// mangling never does, so a listing would change with the mangling alone.
/// Only the turbofish `::<…>` is removed; `<T as Trait>::f` is kept.
pub fn strip_generic_args(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("::<") {
        out.push_str(&rest[..i]);
        let Some(close) = super::symbols::matching_close(rest, i + 2) else {
            // Unbalanced: keep the rest as it is.
            out.push_str(&rest[i..]);
            return out;
        };
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `{{closure}}` / `{closure#0}` → `{closure}` (the same for `constant`,
/// `shim`, ...), and legacy `$LT$`-style leftovers are left to the demangler.
pub fn unify_disambiguators(s: &str) -> String {
    static LEGACY: OnceLock<Regex> = OnceLock::new();
    static V0: OnceLock<Regex> = OnceLock::new();
    let legacy = LEGACY.get_or_init(|| Regex::new(r"\{\{([a-z_ ]+)\}\}").expect("regex"));
    let v0 = V0.get_or_init(|| Regex::new(r"\{([A-Za-z_ ]+)(?::[^#}]*)?#\d+\}").expect("regex"));
    let s = legacy.replace_all(s, "{$1}");
    // v0 spells the inline-const namespace `K` where legacy says `constant`.
    v0.replace_all(&s, |c: &Captures| match &c[1] {
        "K" => "{constant}".to_string(),
        other => format!("{{{other}}}"),
    })
    .into_owned()
}

/// Strips a trailing comment from an instruction line.
fn strip_comment<'a>(line: &'a str, markers: &[&str]) -> &'a str {
    let mut end = line.len();
    for m in markers {
        if let Some(i) = line.find(m) {
            end = end.min(i);
        }
    }
    &line[..end]
}

/// Splits an instruction line (comment already stripped) into mnemonic and
/// operands, whitespace folded.
pub fn split_instruction(text: &str) -> Option<Instruction> {
    let mut words = text.split_whitespace().peekable();
    let mut mnemonic = words.next()?.to_string();
    while PREFIXES.contains(&mnemonic.as_str()) {
        match words.next() {
            Some(w) => {
                mnemonic.push(' ');
                mnemonic.push_str(w);
            }
            None => break,
        }
    }
    let rest: Vec<&str> = words.collect();
    let operands = rest.join(" ");
    // Fold spaces around commas to exactly ", ".
    let operands = operands
        .split(',')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(", ");
    Some(Instruction { mnemonic, operands })
}

/// Rewrites the symbols of an operand string: Mach-O's `_` stripped,
/// Rust symbols demangled.
pub fn normalize_symbols(operands: &str, format: ObjectFormat) -> String {
    let demangled = symbol_re().replace_all(operands, |c: &Captures| {
        let whole = &c[0];
        let mangled = match format {
            ObjectFormat::MachO => whole.strip_prefix('_').unwrap_or(whole),
            _ => whole,
        };
        if mangled.starts_with('_') {
            demangle_symbol(mangled)
        } else {
            whole.to_string()
        }
    });
    if format != ObjectFormat::MachO {
        return demangled.into_owned();
    }
    // Other Mach-O symbols: `_memcpy` → `memcpy`, `_probe_x` → `probe_x`.
    static MACHO_SYM: OnceLock<Regex> = OnceLock::new();
    let re =
        MACHO_SYM.get_or_init(|| Regex::new(r"(^|[\s\[,(])_([A-Za-z_][\w$.]*)").expect("regex"));
    re.replace_all(&demangled, "$1$2").into_owned()
}

/// Renumbers local labels per family in order of first appearance.
struct Renumber {
    format: ObjectFormat,
    map: BTreeMap<String, String>,
    counts: BTreeMap<String, usize>,
}

impl Renumber {
    fn new(format: ObjectFormat) -> Renumber {
        Renumber {
            format,
            map: BTreeMap::new(),
            counts: BTreeMap::new(),
        }
    }

    fn name(&mut self, family: &str, original: &str) -> String {
        if let Some(n) = self.map.get(original) {
            return n.clone();
        }
        let count = self.counts.entry(family.to_string()).or_insert(0);
        *count += 1;
        let new = format!("{family}{count}");
        self.map.insert(original.to_string(), new.clone());
        new
    }

    fn rewrite(&mut self, text: &str) -> String {
        let re = local_label_re(self.format);
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for c in re.captures_iter(text) {
            let (family, number_group) = match (c.get(1), c.get(3)) {
                (Some(f), _) => (f, c.get(2)),
                (None, Some(f)) => (f, c.get(4)),
                (None, None) => continue,
            };
            let Some(number) = number_group else { continue };
            let start = family.start();
            let original = &text[start..number.end()];
            out.push_str(&text[last..start]);
            let fam = family.as_str().to_string();
            out.push_str(&self.name(&fam, original));
            last = number.end();
        }
        out.push_str(&text[last..]);
        out
    }
}

/// Normalizes one function (see the module docs for the rules).
pub fn normalize(function: &Function, arch: &Arch) -> Listing {
    let format = function.format;
    let markers = arch.comment_markers(format);
    // Pass 1: instructions and label definitions, raw names.
    enum Raw {
        Label(String),
        Instruction(Instruction),
        Data(Data),
    }
    let mut raw = Vec::new();
    // Prefixes alone on their line, waiting for their instruction.
    let mut pending_prefix: Vec<String> = Vec::new();
    for (n, line) in function.lines.iter().enumerate() {
        if let Some(label) = label_of(line) {
            if n > 0 && is_local_label(label, format) {
                raw.push(Raw::Label(label.to_string()));
            }
            continue;
        }
        let code = strip_comment(line, markers).trim();
        if code.is_empty() {
            continue;
        }
        // `.inst 0xe7ffdefe`: an instruction written by its encoding (LLVM's
        // trap on 32-bit Arm), kept as one.
        if let Some(enc) = code.strip_prefix(".inst") {
            raw.push(Raw::Instruction(Instruction {
                mnemonic: ".inst".to_string(),
                operands: enc.trim().to_string(),
            }));
            continue;
        }
        if code.starts_with('.') {
            if let Some(d) = data_directive(code) {
                raw.push(Raw::Data(d));
            }
            continue;
        }
        if let Some(mut i) = split_instruction(code) {
            if PREFIXES.contains(&i.mnemonic.as_str()) && i.operands.is_empty() {
                pending_prefix.push(i.mnemonic);
                continue;
            }
            if !pending_prefix.is_empty() {
                pending_prefix.push(i.mnemonic);
                i.mnemonic = pending_prefix.join(" ");
                pending_prefix.clear();
            }
            raw.push(Raw::Instruction(i));
        }
    }
    // Labels some instruction or data directive refers to.
    let referenced: BTreeSet<&str> = raw
        .iter()
        .filter_map(|r| match r {
            Raw::Instruction(i) => Some(i.operands.as_str()),
            Raw::Data(d) => Some(d.value.as_str()),
            Raw::Label(_) => None,
        })
        .flat_map(|ops| {
            raw.iter().filter_map(move |r| match r {
                Raw::Label(l) if operand_mentions(ops, l) => Some(l.as_str()),
                _ => None,
            })
        })
        .collect();
    // Pass 2: renumber, demangle, in order of appearance.
    let mut renumber = Renumber::new(format);
    let mut lines = Vec::new();
    for r in &raw {
        match r {
            Raw::Label(l) => {
                if referenced.contains(l.as_str()) {
                    lines.push(Line::Label(renumber.rewrite(l)));
                }
            }
            Raw::Instruction(i) => {
                let operands = renumber.rewrite(&i.operands);
                let operands = normalize_symbols(&operands, format);
                lines.push(Line::Instruction(Instruction {
                    mnemonic: i.mnemonic.clone(),
                    operands,
                }));
            }
            Raw::Data(d) => {
                let value = renumber.rewrite(&d.value);
                lines.push(Line::Data(Data {
                    directive: d.directive.clone(),
                    value: normalize_symbols(&value, format),
                }));
            }
        }
    }
    Listing {
        name: function.name.clone(),
        lines,
    }
}

/// A line of a function that the model cannot read: neither a label, a
/// directive, a comment nor an instruction (a mnemonic of letters, digits,
/// `.` and `_`, then operands without control characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The function's name.
    pub function: String,
    /// The line's number in the function (its label is line 1).
    pub line: usize,
    /// The line as written.
    pub text: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read function {}: its line {} `{}` is no instruction, label, directive or \
             comment",
            self.function,
            self.line,
            self.text.escape_debug()
        )
    }
}

impl std::error::Error for Unreadable {}

/// Whether every line of `function` is one the normalizer reads (see
/// [`Unreadable`]); the first one that is not, otherwise. [`normalize`]
/// itself never fails: it keeps what it cannot read as an instruction.
pub fn check_readable(function: &Function, arch: &Arch) -> Result<(), Unreadable> {
    let markers = arch.comment_markers(function.format);
    for (n, line) in function.lines.iter().enumerate() {
        let unreadable = || Unreadable {
            function: function.name.clone(),
            line: n + 1,
            text: line.clone(),
        };
        if line.chars().any(|c| c.is_control() && c != '\t') {
            return Err(unreadable());
        }
        if label_of(line).is_some() {
            continue;
        }
        let code = strip_comment(line, markers).trim();
        if code.is_empty() || code.starts_with('.') {
            continue;
        }
        // `a = b`: an alias LLVM's function merging leaves.
        if let Some((a, b)) = code.split_once('=')
            && !a.trim().is_empty()
            && !b.trim().is_empty()
            && a.trim()
                .chars()
                .all(|c| c.is_alphanumeric() || "_.$".contains(c))
        {
            continue;
        }
        let mnemonic = code.split_whitespace().next().unwrap_or("");
        let ok = mnemonic.starts_with(|c: char| c.is_ascii_alphabetic())
            && mnemonic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
        if !ok {
            return Err(unreadable());
        }
    }
    Ok(())
}

/// A data directive (`.long x(GOTTPOFF)-(.LPC0_0+8)`), whitespace folded.
pub fn data_directive(code: &str) -> Option<Data> {
    let end = code.find(char::is_whitespace).unwrap_or(code.len());
    let directive = &code[..end];
    DATA_DIRECTIVES.contains(&directive).then(|| Data {
        directive: directive.to_string(),
        value: code[end..]
            .split(',')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Whether `label` appears in `operands` as a whole token.
fn operand_mentions(operands: &str, label: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '$');
    operands.match_indices(label).any(|(i, _)| {
        let before = operands[..i].chars().next_back();
        let after = operands[i + label.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}
