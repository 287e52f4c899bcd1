//! The one extractor: split a `.s` file into functions.
//!
//! - ELF: a function is a label declared `.type NAME,@function` (or
//!   `%function`); it ends at `.size NAME`, at the next function, at a
//!   section change or at the end of the file.
//! - Mach-O: a function is a non-local label (not `L…`/`l…`) in a text
//!   section; it ends at `.cfi_endproc`, the next non-local label or a section
//!   change. Symbols carry a leading `_`, which is stripped so names match
//!   the other formats (`_probe_x` is `probe_x`, `__ZN…` is `_ZN…`).
//! - COFF: a function is a label declared `.def NAME; .scl …; .type 32;
//!   .endef` (`.scl 2` external, `.scl 3` static such as catch funclets),
//!   usually in its own `one_only` (COMDAT) text section; it ends at
//!   `.seh_handlerdata` (the unwind tables after the code) or
//!   `.seh_endproc`, the next function or a section change.
//!
//! Aliases that LLVM's function merging leaves (`a = b`, `.set a, b`) are
//! recorded and resolved by [`Assembly::function`].

use std::collections::{BTreeMap, BTreeSet};

use super::profile::ObjectFormat;

/// One function of a `.s` file, as written (directives and comments kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its symbol (Mach-O's leading `_` stripped).
    pub name: String,
    /// The object format it came from (decides label and symbol rules).
    pub format: ObjectFormat,
    /// Its lines from the label on, unmodified (no trailing newline).
    pub lines: Vec<String>,
}

impl Function {
    /// The raw text, one line per line.
    pub fn raw_text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }
}

/// Every function of one `.s` file, plus its aliases.
#[derive(Debug, Clone, Default)]
pub struct Assembly {
    /// Functions in file order.
    pub functions: Vec<Function>,
    /// `alias -> target`, both with Mach-O's `_` stripped.
    pub aliases: BTreeMap<String, String>,
    /// Functions LLVM placed in a `.text.unlikely.*` section (ELF): the
    /// `#[cold]` ones. Mach-O and COFF have no such section; there the
    /// suite's `cold_calls` patterns name the slow paths.
    pub cold: BTreeSet<String>,
}

impl Assembly {
    /// The function called `name`, following aliases (`probe_b = probe_a`
    /// yields `probe_a`'s body). The returned function keeps the target's
    /// name; callers that want the alias's name rename it.
    pub fn function(&self, name: &str) -> Option<&Function> {
        let mut name = name;
        for _ in 0..16 {
            if let Some(f) = self.functions.iter().find(|f| f.name == name) {
                return Some(f);
            }
            name = self.aliases.get(name)?;
        }
        None
    }

    /// Every function name, aliases included.
    pub fn names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.functions.iter().map(|f| f.name.clone()).collect();
        names.extend(self.aliases.keys().cloned());
        names
    }
}

/// Strips one leading `_` from a Mach-O symbol.
pub fn strip_symbol_prefix(name: &str, format: ObjectFormat) -> &str {
    match format {
        ObjectFormat::MachO => name.strip_prefix('_').unwrap_or(name),
        _ => name,
    }
}

/// The label a line defines, if it is a label line (`name:` at column 0,
/// possibly followed by a comment). Quoted names are unquoted.
pub fn label_of(line: &str) -> Option<&str> {
    if line.starts_with(|c: char| c.is_whitespace()) {
        return None;
    }
    if let Some(rest) = line.strip_prefix('"') {
        let end = rest.find('"')?;
        return rest[end + 1..].starts_with(':').then(|| &rest[..end]);
    }
    let end = line.find(':')?;
    let name = &line[..end];
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '$'));
    ok.then_some(name)
}

/// Whether a label is assembler-local (never a function) in this format.
pub fn is_local_label(name: &str, format: ObjectFormat) -> bool {
    match format {
        ObjectFormat::MachO => name.starts_with('L') || name.starts_with('l'),
        _ => name.starts_with(".L"),
    }
}

/// `(alias, target)` when the line is `a = b` or `.set a, b`.
fn alias_of(line: &str) -> Option<(&str, &str)> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix(".set") {
        let (a, b) = rest.split_once(',')?;
        return Some((a.trim(), b.trim()));
    }
    if t.starts_with('.') && !t.starts_with(".L") {
        return None;
    }
    let (a, b) = t.split_once('=')?;
    let (a, b) = (a.trim(), b.trim());
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '$'))
    };
    (ident(a) && ident(b)).then_some((a, b))
}

fn directive(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    if !t.starts_with('.') || label_of(line).is_some() {
        return None;
    }
    let end = t.find(|c: char| c.is_whitespace()).unwrap_or(t.len());
    Some((&t[..end], t[end..].trim()))
}

/// Names declared as functions in ELF (`.type f,@function`) or COFF
/// (`.def f; ... .type 32; ...`).
fn declared_functions(text: &str, format: ObjectFormat) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        match format {
            ObjectFormat::Elf => {
                if let Some((".type", args)) = directive(line)
                    && let Some((name, kind)) = args.split_once(',')
                    && matches!(kind.trim(), "@function" | "%function")
                {
                    set.insert(name.trim().trim_matches('"').to_string());
                }
            }
            ObjectFormat::Coff => {
                // `.def NAME;` `.scl 2;` `.type 32;` `.endef`, one per line or
                // all on one line separated by `;`.
                for part in line.split(';').map(str::trim) {
                    if let Some(name) = part.strip_prefix(".def") {
                        pending = Some(name.trim().trim_matches('"').to_string());
                    } else if part.starts_with(".type") && part[5..].trim() == "32" {
                        if let Some(name) = pending.take() {
                            set.insert(name);
                        }
                    } else if part == ".endef" {
                        pending = None;
                    }
                }
            }
            ObjectFormat::MachO => {}
        }
    }
    set
}

/// The name a `.section` directive's arguments start with.
fn section_name(args: &str) -> &str {
    args.split(',')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches('"')
}

fn is_text_section(args: &str, format: ObjectFormat) -> bool {
    match format {
        ObjectFormat::MachO => args.starts_with("__TEXT,__text"),
        _ => {
            let name = section_name(args);
            name == ".text" || name.starts_with(".text.") || name.starts_with(".text$")
        }
    }
}

/// Splits one `.s` file into functions and aliases.
pub fn parse_asm(text: &str, format: ObjectFormat) -> Assembly {
    let declared = declared_functions(text, format);
    let mut asm = Assembly::default();
    let mut current: Option<Function> = None;
    let mut in_text = true;
    let mut in_unlikely = false;

    let finish = |current: &mut Option<Function>, asm: &mut Assembly| {
        if let Some(f) = current.take() {
            asm.functions.push(f);
        }
    };

    for line in text.lines() {
        if let Some((alias, target)) = alias_of(line) {
            asm.aliases.insert(
                strip_symbol_prefix(alias, format).to_string(),
                strip_symbol_prefix(target, format).to_string(),
            );
            continue;
        }
        if let Some((name, args)) = directive(line) {
            match name {
                ".section" => {
                    finish(&mut current, &mut asm);
                    in_text = is_text_section(args, format);
                    let name = section_name(args);
                    in_unlikely = name.starts_with(".text.unlikely.") || name == ".text.unlikely";
                }
                ".def" if format == ObjectFormat::Coff => {
                    finish(&mut current, &mut asm);
                }
                ".text" => {
                    finish(&mut current, &mut asm);
                    in_text = true;
                    in_unlikely = false;
                }
                ".data" | ".bss" | ".const" | ".tbss" | ".zerofill" | ".cstring" => {
                    finish(&mut current, &mut asm);
                    in_text = false;
                }
                ".size" => {
                    let sym = args.split(',').next().unwrap_or("").trim();
                    if current.as_ref().is_some_and(|f| f.name == sym) {
                        finish(&mut current, &mut asm);
                    }
                }
                // `.seh_handlerdata` starts the unwind tables that follow the
                // code (`.long $cppxdata$f@IMGREL`, then the re-entered
                // `one_only` section and `.seh_endproc`): the code is over.
                ".cfi_endproc" | ".seh_endproc" | ".seh_handlerdata"
                    if format != ObjectFormat::Elf && current.is_some() =>
                {
                    if let Some(f) = current.as_mut() {
                        f.lines.push(line.to_string());
                    }
                    finish(&mut current, &mut asm);
                }
                _ => {
                    if let Some(f) = current.as_mut() {
                        f.lines.push(line.to_string());
                    }
                }
            }
            continue;
        }
        if let Some(label) = label_of(line) {
            let starts = match format {
                ObjectFormat::MachO => in_text && !is_local_label(label, format),
                _ => declared.contains(label),
            };
            if starts {
                finish(&mut current, &mut asm);
                if in_unlikely {
                    asm.cold
                        .insert(strip_symbol_prefix(label, format).to_string());
                }
                current = Some(Function {
                    name: strip_symbol_prefix(label, format).to_string(),
                    format,
                    lines: vec![line.to_string()],
                });
                continue;
            }
            if format == ObjectFormat::MachO && !is_local_label(label, format) {
                finish(&mut current, &mut asm);
                continue;
            }
        }
        if let Some(f) = current.as_mut() {
            f.lines.push(line.to_string());
        }
    }
    finish(&mut current, &mut asm);
    asm
}
