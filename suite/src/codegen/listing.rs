//! A normalized listing: labels and instructions only, stable across
//! compilers' naming noise, and the analyses the expectations and reports
//! use (instruction classes, calls, loops).

use std::collections::BTreeMap;
use std::fmt;

use super::profile::{Class, InstructionClasses};

/// One instruction: mnemonic (with any prefix such as `lock`) and operands,
/// whitespace folded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// `mov`, `lock xadd`, `b.hs`, `ldaddal`, ...
    pub mnemonic: String,
    /// The operands as one string (`qword ptr [rdi], rax`), may be empty.
    pub operands: String,
}

impl Instruction {
    /// `mnemonic operands` (what class patterns are matched against).
    pub fn text(&self) -> String {
        if self.operands.is_empty() {
            self.mnemonic.clone()
        } else {
            format!("{} {}", self.mnemonic, self.operands)
        }
    }

    /// The last operand (a branch's target).
    pub fn last_operand(&self) -> Option<&str> {
        let last = self.operands.rsplit(',').next()?.trim();
        (!last.is_empty()).then_some(last)
    }
}

/// One line of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Line {
    /// A local label that some instruction of the function refers to.
    Label(String),
    /// An instruction.
    Instruction(Instruction),
    /// A data directive inside the function's code (armv7 literal pools,
    /// inline jump tables): shown, never counted as an instruction.
    Data(Data),
}

/// One data directive (`.long`, `.word`, `.quad`, `.short`, `.byte`) with
/// its value as written (symbol and relocation kind included:
/// `.long counter(GOTTPOFF)-(.LPC1+8)`), labels renumbered and symbols
/// demangled like operands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Data {
    /// `.long`, `.quad`, ...
    pub directive: String,
    /// The value expression.
    pub value: String,
}

impl Data {
    /// `.long value`.
    pub fn text(&self) -> String {
        format!("{} {}", self.directive, self.value)
    }

    /// The relocation kind the value names (`GOTTPOFF`, `TLSGD`, `TPOFF`,
    /// `GOT_PREL`, ...), if any: `sym(KIND)` as ELF's Arm assembler writes it.
    pub fn relocation(&self) -> Option<&str> {
        let open = self.value.find('(')?;
        let close = self.value[open..].find(')')? + open;
        let kind = &self.value[open + 1..close];
        (!kind.is_empty() && kind.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            .then_some(kind)
    }
}

/// The directives kept as [`Line::Data`].
pub const DATA_DIRECTIVES: &[&str] = &[
    ".byte", ".short", ".hword", ".2byte", ".long", ".word", ".4byte", ".int", ".quad", ".8byte",
    ".xword", ".dword",
];

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Label(l) => write!(f, "{l}:"),
            Line::Instruction(i) => write!(f, "  {}", i.text()),
            Line::Data(d) => write!(f, "  {}", d.text()),
        }
    }
}

/// The normalized listing of one function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Listing {
    /// The function's name.
    pub name: String,
    /// Its labels and instructions.
    pub lines: Vec<Line>,
}

/// Counts for reports: what a fast path costs at a glance (the report's
/// `summary` of a listing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Instructions (labels not counted).
    pub instructions: usize,
    /// Atomic read-modify-writes (including outline-atomics calls).
    pub atomic_rmw: usize,
    /// All atomic instructions (read-modify-writes, fences, acquire/release).
    pub atomics: usize,
    /// Calls (including tail calls and outline-atomics calls).
    pub calls: usize,
    /// Branches within the function.
    pub branches: usize,
    /// Backward branches that close a loop (the branch is reachable again
    /// from its target): `loops` in the report.
    #[serde(rename = "loops")]
    pub backward_branches: usize,
}

impl Listing {
    /// The listing as text: `name:` then one line per label or instruction.
    /// This is what snapshots store and `has`/`lacks` patterns match
    /// (instructions are indented by two spaces, so patterns anchor with
    /// `^\s*`; see [`Listing::instruction_text`] for the unindented form).
    pub fn text(&self) -> String {
        let mut s = format!("{}:\n", self.name);
        for line in &self.lines {
            s.push_str(&line.to_string());
            s.push('\n');
        }
        s
    }

    /// Only the instructions, one per line, unindented: what `has` and
    /// `lacks` patterns are matched against (labels excluded so that `^b`
    /// never matches a label).
    pub fn instruction_text(&self) -> String {
        let mut s = String::new();
        for i in self.instructions() {
            s.push_str(&i.text());
            s.push('\n');
        }
        s
    }

    /// The instructions in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.lines.iter().filter_map(|l| match l {
            Line::Instruction(i) => Some(i),
            Line::Label(_) | Line::Data(_) => None,
        })
    }

    /// The label definitions, by name, with their line index.
    pub fn label_index(&self) -> BTreeMap<&str, usize> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                Line::Label(name) => Some((name.as_str(), i)),
                Line::Instruction(_) | Line::Data(_) => None,
            })
            .collect()
    }

    /// Whether the instruction at line `index` is a branch to a label defined
    /// at or before it that closes a loop: the branch is reachable again from
    /// its target. A cold block placed after the return that jumps back to
    /// the shared epilogue (`.LBB1: call slow; jmp .LBB3`) branches backward
    /// but is no loop, and is not counted.
    fn is_backward_branch(
        &self,
        index: usize,
        classes: &InstructionClasses,
        labels: &BTreeMap<&str, usize>,
    ) -> bool {
        let Line::Instruction(i) = &self.lines[index] else {
            return false;
        };
        if !classes.branch.is_match(&i.text()) {
            return false;
        }
        let Some(&target) = i.last_operand().and_then(|t| labels.get(t)) else {
            return false;
        };
        target <= index && self.reaches(target, index, classes, labels)
    }

    /// Whether control can flow from line `from` to line `to`: falling
    /// through (unless the instruction ends the flow: an unconditional jump,
    /// a return, a trap) or branching to a label of the function.
    fn reaches(
        &self,
        from: usize,
        to: usize,
        classes: &InstructionClasses,
        labels: &BTreeMap<&str, usize>,
    ) -> bool {
        let mut seen = vec![false; self.lines.len()];
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n >= self.lines.len() || seen[n] {
                continue;
            }
            if n == to {
                return true;
            }
            seen[n] = true;
            match &self.lines[n] {
                Line::Label(_) => stack.push(n + 1),
                // A literal pool sits after an unconditional branch: no flow.
                Line::Data(_) => {}
                Line::Instruction(i) => {
                    let text = i.text();
                    if classes.branch.is_match(&text)
                        && let Some(&t) = i.last_operand().and_then(|t| labels.get(t))
                    {
                        stack.push(t);
                    }
                    if !ends_flow(&text) {
                        stack.push(n + 1);
                    }
                }
            }
        }
        false
    }

    /// Whether an instruction is a tail call: a branch whose target is a
    /// symbol, neither a label of this function nor a register or memory
    /// operand (jump tables are not calls).
    pub(crate) fn is_tail_call(
        &self,
        i: &Instruction,
        classes: &InstructionClasses,
        labels: &BTreeMap<&str, usize>,
    ) -> bool {
        if !classes.branch.is_match(&i.text()) {
            return false;
        }
        let Some(target) = i.last_operand() else {
            return false;
        };
        let looks_symbol = target
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '.' || c == '<')
            && !target.contains('[')
            && !is_register(target);
        looks_symbol && !labels.contains_key(target) && !target.starts_with(".L")
    }

    /// The instructions that belong to `class`, with their line index.
    pub fn matching(
        &self,
        class: Class,
        classes: &InstructionClasses,
    ) -> Vec<(usize, &Instruction)> {
        let labels = self.label_index();
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(idx, l)| match l {
                Line::Instruction(i) => Some((idx, i)),
                Line::Label(_) | Line::Data(_) => None,
            })
            .filter(|&(idx, i)| {
                let text = i.text();
                match class {
                    Class::AtomicRmw => classes.atomic_rmw.is_match(&text),
                    Class::Atomic => {
                        classes.atomic_rmw.is_match(&text) || classes.atomic_other.is_match(&text)
                    }
                    Class::Call => {
                        classes.call.is_match(&text) || self.is_tail_call(i, classes, &labels)
                    }
                    Class::Branch => classes.branch.is_match(&text),
                    Class::BackwardBranch => self.is_backward_branch(idx, classes, &labels),
                    // Architecture-specific: see `cfg::Cfg::in_class`.
                    Class::CondBranch => classes.branch.is_match(&text) && !ends_flow(&text),
                    Class::Stack => false,
                }
            })
            .collect()
    }

    /// Instruction, atomic, call, branch and loop counts.
    pub fn summary(&self, classes: &InstructionClasses) -> Summary {
        Summary {
            instructions: self.instructions().count(),
            atomic_rmw: self.matching(Class::AtomicRmw, classes).len(),
            atomics: self.matching(Class::Atomic, classes).len(),
            calls: self.matching(Class::Call, classes).len(),
            branches: self.matching(Class::Branch, classes).len(),
            backward_branches: self.matching(Class::BackwardBranch, classes).len(),
        }
    }
}

impl fmt::Display for Listing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// Whether an instruction never falls through to the next line: an
/// unconditional jump or return on x86 (`jmp`, `ret`, `ud2`), arm64 (`b`,
/// `br`, `ret`, `brk`), RISC-V (`j`, `jr`, `tail`, `ret`, `unimp`) or 32-bit
/// Arm (`b`, `bx`, `pop {..., pc}`, `udf`). Conditional forms (`b.ne`,
/// `bne`, `poplo {..., pc}`) fall through.
pub(crate) fn ends_flow(text: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(concat!(
            r"^(jmp|ret|retq|retaa|retab|ud2|int3|hlt|b|br|bx|j|jr|tail|brk|udf|unimp)(\s|$)",
            r"|^(pop|ldm|ldmia|ldmfd) .*\bpc\}",
        ))
        .expect("ends_flow regex")
    })
    .is_match(text)
}

/// Register operands (tail-call detection must not take `br x9`'s `x9` or
/// `jmp rax`'s `rax` for a symbol).
pub(crate) fn is_register(op: &str) -> bool {
    const X86: &[&str] = &[
        "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "eax", "ebx", "ecx", "edx", "esi",
        "edi", "ebp", "esp",
    ];
    if X86.contains(&op) {
        return true;
    }
    let numbered = |p: &str| {
        op.strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    numbered("r")
        || numbered("x")
        || numbered("w")
        || numbered("a")
        || numbered("t")
        || numbered("s")
        || matches!(op, "lr" | "ra" | "sp" | "ip" | "pc")
}
