//! The control-flow model of a listing and its hot path.
//!
//! [`analyze`] splits a [`Listing`] into basic blocks (a label or the line
//! after a branch, return or trap starts one) with their edges, per
//! architecture: x86-64 (`jcc`, `jmp`, `ret`, `ud2`), aarch64 (`b.cc`,
//! `cbz`, `tbnz`, `ret`, `brk`), 32-bit Arm (`bcc`, `bx lr`, the predicated
//! returns `bxeq lr` / `popne {…, pc}`, `udf`, literal pools), riscv64
//! (`beq`, `j`, `ret`, `jr ra`, `unimp`).
//!
//! A block is *cold* when every path from it reaches a call to a cold slow
//! path (a function of a `.text.unlikely.*` section on ELF, or one named by
//! the profile's `cold_calls`), a panic, a trap, or when it is reached only by
//! unwinding (a landing pad: no edge leads to it). The *hot path* is the
//! longest acyclic path from the entry to a return (or a tail call) through
//! non-cold blocks; a loop on it is marked and its body counted once, per
//! iteration. Of paths as long, it is one whose return does not hand back a
//! constant zero (a probe's refusal: null, or 0).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::Regex;

use super::listing::{Instruction, Line, Listing, ends_flow, is_register};
use super::normalize::base_mnemonic;
use super::profile::{Arch, Class, InstructionClasses, Profile};

/// How a block ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Exit {
    /// Falls through or branches to other blocks of the function.
    #[default]
    Flow,
    /// Returns (unconditionally).
    Return,
    /// Leaves by a tail call (`jmp symbol`, `b symbol`, `tail symbol`).
    TailCall,
    /// An indirect jump whose targets the listing does not name (a jump
    /// table): treated as leaving the function.
    Indirect,
    /// A trap (`ud2`, `brk`, `udf`, `unimp`, `int3`, `hlt`).
    Trap,
}

/// One basic block.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// Index of its first line in [`Listing::lines`] (a label or an
    /// instruction).
    pub start: usize,
    /// One past its last line.
    pub end: usize,
    /// Indices of its instructions in [`Listing::lines`].
    pub instructions: Vec<usize>,
    /// Successor blocks.
    pub succs: Vec<usize>,
    /// How it ends.
    pub exit: Exit,
    /// It can also return (a predicated return: `bxeq lr`, `popne {…, pc}`).
    pub returns: bool,
    /// It calls a cold slow path or a panic, or traps.
    pub cold_call: bool,
    /// Every path from it is cold (see the module docs).
    pub cold: bool,
    /// Reachable from the entry by normal control flow.
    pub reachable: bool,
}

/// The control-flow graph of one listing.
#[derive(Debug, Clone)]
pub struct Cfg<'a> {
    /// The listing.
    pub listing: &'a Listing,
    /// Its blocks in listing order; block 0 is the entry.
    pub blocks: Vec<Block>,
    arch: Arch,
    classes: &'a InstructionClasses,
    cold_names: &'a BTreeSet<String>,
    cold_patterns: &'a [super::profile::Pattern],
    /// The target keeps a frame pointer in every function (see
    /// `Profile::keeps_frame_pointers`).
    frame_record: bool,
}

/// The hot path of one listing (the reports' `hot_path`, without the line
/// indices, which are the listing's own).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HotPath {
    /// Instructions on the hot path, entry to return (a loop's body once).
    pub instructions: usize,
    /// Instructions from the entry up to and including the first
    /// conditional branch after the first atomic read-modify-write; `None`
    /// (`null`) without one.
    pub to_fit_check: Option<usize>,
    /// Atomic instructions on it (read-modify-writes, fences,
    /// acquire/release accesses, outline-atomics calls).
    pub atomics: usize,
    /// Atomic read-modify-writes on it (outline-atomics calls included).
    pub atomic_rmw: usize,
    /// Callees on it, in order (TLS thunks and outline-atomics helpers
    /// included; an indirect call is named after what it calls).
    pub calls: Vec<String>,
    /// Loads and stores relative to the stack or frame pointer on it (the
    /// frame record of a target that keeps frame pointers is counted apart,
    /// in `frame_accesses`).
    pub stack_accesses: usize,
    /// The frame record's save and restore on it (`push rbp` / `pop rbp`)
    /// where the target keeps a frame pointer in every function: the
    /// target's price, not the code's. 0 elsewhere.
    pub frame_accesses: usize,
    /// Loops on it (back edges between its blocks).
    pub loops: usize,
    /// Indices in [`Listing::lines`] of the branches that close those loops.
    #[serde(skip)]
    pub loop_lines: Vec<usize>,
    /// Its instructions' texts, in order.
    pub lines: Vec<String>,
    /// Their indices in [`Listing::lines`].
    #[serde(skip)]
    pub line_indices: Vec<usize>,
    /// Indices in [`Listing::lines`] of the lines of cold blocks.
    #[serde(skip)]
    pub cold_lines: Vec<usize>,
    /// Instructions of the whole function.
    pub function_instructions: usize,
    /// No return is reachable through non-cold blocks: the path shown is the
    /// longest to any exit.
    pub no_hot_return: bool,
}

impl HotPath {
    /// The hot path as text, one instruction per line, unindented (what
    /// `hot`-scoped patterns are matched against).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    /// Whether line `index` of the listing is on the hot path.
    pub fn contains(&self, index: usize) -> bool {
        self.line_indices.contains(&index)
    }

    /// `hot path: 32 of 44 instructions, 20 to the fit check, 1 atomic(s),
    /// …, calls: none`: the line reports head a hot path with.
    pub fn line(&self) -> String {
        format!(
            "hot path: {} of {} instructions, {}, {} atomic(s), {} loop(s), {} stack access(es){}, calls: {}{}",
            self.instructions,
            self.function_instructions,
            self.fit_check(),
            self.atomics,
            self.loops,
            self.stack_accesses,
            if self.frame_accesses > 0 {
                format!(
                    " (+ {} for the frame record the target keeps in every function)",
                    self.frame_accesses
                )
            } else {
                String::new()
            },
            self.calls_or_none(),
            if self.no_hot_return {
                " (no return is hot: longest path shown)"
            } else {
                ""
            }
        )
    }

    /// `20 to the fit check`, or `no fit check`.
    pub fn fit_check(&self) -> String {
        self.to_fit_check
            .map_or("no fit check".into(), |n| format!("{n} to the fit check"))
    }

    /// The callees, `, `-separated, or `none`.
    pub fn calls_or_none(&self) -> String {
        if self.calls.is_empty() {
            "none".into()
        } else {
            self.calls.join(", ")
        }
    }
}

/// Callees that are always cold: panics, unwinding, allocation-failure
/// handlers.
fn panic_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(^|::|\b)(panic[a-z_]*|_Unwind_Resume|__rust_start_panic|rust_panic|",
            r"unwrap_failed|expect_failed|handle_alloc_error|capacity_overflow|",
            r"slice_(start_|end_)?index_(len_)?fail|slice_index_order_fail|abort|",
            r"__stack_chk_fail|__chkstk_darwin_fail|_CxxThrowException|__CxxFrameHandler3)\b",
        ))
        .expect("panic regex")
    })
}

/// Conditional branches (a condition code, or a compare-and-branch).
fn is_conditional(arch: &Arch, mnemonic: &str) -> bool {
    let m = base_mnemonic(mnemonic);
    match arch {
        Arch::X86_64 => m.starts_with('j') && m != "jmp",
        Arch::Aarch64 => {
            m.starts_with("b.")
                || matches!(m, "cbz" | "cbnz" | "tbz" | "tbnz")
                || (m.len() == 3 && m.starts_with('b') && is_cond_code(&m[1..]))
        }
        Arch::Arm => {
            matches!(m, "cbz" | "cbnz")
                || (m.len() == 3 && m.starts_with('b') && is_cond_code(&m[1..]))
                || (m.len() == 5 && m.starts_with("bx") && is_cond_code(&m[2..]))
                || m.strip_suffix(".w")
                    .is_some_and(|b| b.len() == 3 && b.starts_with('b') && is_cond_code(&b[1..]))
        }
        Arch::Riscv64 => {
            m.starts_with('b')
                && matches!(
                    m,
                    "beq"
                        | "bne"
                        | "blt"
                        | "bge"
                        | "bltu"
                        | "bgeu"
                        | "beqz"
                        | "bnez"
                        | "blez"
                        | "bgez"
                        | "bltz"
                        | "bgtz"
                        | "bgt"
                        | "ble"
                        | "bgtu"
                        | "bleu"
                )
        }
        Arch::Other(_) => false,
    }
}

fn is_cond_code(c: &str) -> bool {
    matches!(
        c,
        "eq" | "ne"
            | "cs"
            | "hs"
            | "cc"
            | "lo"
            | "mi"
            | "pl"
            | "vs"
            | "vc"
            | "hi"
            | "ls"
            | "ge"
            | "lt"
            | "gt"
            | "le"
    )
}

/// Returns: `ret`, `bx lr`, `pop {…, pc}`, `jr ra`, and the predicated Arm
/// forms (`bxeq lr`, `popne {…, pc}`, `ldmia sp!, {…, pc}`). `Some(true)`
/// when it is conditional.
fn return_kind(arch: &Arch, i: &Instruction) -> Option<bool> {
    let m = base_mnemonic(&i.mnemonic);
    match arch {
        Arch::X86_64 => matches!(m, "ret" | "retq").then_some(false),
        Arch::Aarch64 => matches!(m, "ret" | "retaa" | "retab").then_some(false),
        Arch::Riscv64 => {
            (m == "ret" || (m == "jr" && i.operands == "ra") || (m == "jalr" && i.operands == "ra"))
                .then_some(false)
        }
        Arch::Arm => {
            if let Some(cond) = m.strip_prefix("bx")
                && i.operands == "lr"
            {
                return Some(!cond.is_empty());
            }
            let pops_pc = i.operands.contains("pc}");
            for base in ["pop", "ldmia", "ldm", "ldmfd"] {
                if let Some(cond) = m.strip_prefix(base)
                    && pops_pc
                    && (cond.is_empty() || is_cond_code(cond) || cond == ".w")
                {
                    return Some(!(cond.is_empty() || cond == ".w"));
                }
            }
            None
        }
        Arch::Other(_) => matches!(m, "ret").then_some(false),
    }
}

fn is_trap(arch: &Arch, m: &str) -> bool {
    let m = base_mnemonic(m);
    match arch {
        Arch::X86_64 => matches!(m, "ud2" | "int3" | "hlt" | "ud1" | "ud0" | ".inst"),
        Arch::Aarch64 => matches!(m, "brk" | "udf" | "hlt" | ".inst"),
        // `.inst 0xe7ffdefe` is LLVM's `llvm.trap` on Arm, written by
        // encoding.
        Arch::Arm => matches!(m, "udf" | "bkpt" | "trap" | ".inst"),
        Arch::Riscv64 => matches!(m, "unimp" | "ebreak" | "c.unimp"),
        Arch::Other(_) => false,
    }
}

impl Cfg<'_> {
    /// The frame record's save or restore, on a target that keeps a frame
    /// pointer in every function: `push rbp` / `pop rbp` on x86-64.
    fn is_frame_record(&self, i: &Instruction) -> bool {
        self.frame_record
            && self.arch == Arch::X86_64
            && matches!(
                base_mnemonic(&i.mnemonic),
                "push" | "pop" | "pushq" | "popq"
            )
            && matches!(i.operands.trim(), "rbp" | "%rbp")
    }

    /// A stack access the code makes: the frame record a target keeps in
    /// every function is the target's, counted apart (what `count stack`
    /// and the hot path's `stack_accesses` both count).
    fn is_code_stack_access(&self, i: &Instruction) -> bool {
        is_stack_access(&self.arch, i) && !self.is_frame_record(i)
    }
}

/// Loads and stores relative to the stack pointer or frame pointer.
fn is_stack_access(arch: &Arch, i: &Instruction) -> bool {
    static X86: OnceLock<Regex> = OnceLock::new();
    static A64: OnceLock<Regex> = OnceLock::new();
    static ARM: OnceLock<Regex> = OnceLock::new();
    static RV: OnceLock<Regex> = OnceLock::new();
    let m = base_mnemonic(&i.mnemonic);
    let ops = &i.operands;
    match arch {
        Arch::X86_64 => {
            matches!(m, "push" | "pop" | "pushq" | "popq")
                || (m != "lea"
                    && X86
                        .get_or_init(|| Regex::new(r"\[(rsp|rbp|esp|ebp)\b").expect("regex"))
                        .is_match(ops))
        }
        Arch::Aarch64 => {
            (m.starts_with("ld") || m.starts_with("st"))
                && A64
                    .get_or_init(|| Regex::new(r"\[(sp|x29)\b").expect("regex"))
                    .is_match(ops)
        }
        Arch::Arm => {
            m.starts_with("push")
                || m.starts_with("vpush")
                || m.starts_with("vpop")
                || (m.starts_with("pop") && !m.starts_with("popcnt"))
                || ((m.starts_with("ld") || m.starts_with("st"))
                    && ARM
                        .get_or_init(|| {
                            Regex::new(r"(\[(sp|r7|r11|fp)\b|^(sp|r7|r11)!?,)").expect("regex")
                        })
                        .is_match(ops))
        }
        Arch::Riscv64 => {
            (m.starts_with('l')
                || m.starts_with('s')
                || m.starts_with("c.l")
                || m.starts_with("c.s")
                || m.starts_with("fl")
                || m.starts_with("fs"))
                && RV
                    .get_or_init(|| Regex::new(r"\((sp|s0|fp)\)").expect("regex"))
                    .is_match(ops)
        }
        Arch::Other(_) => false,
    }
}

/// `mnemonic operands` without the mnemonic's padding prefixes: what the
/// class patterns are matched against.
pub(super) fn class_text(i: &Instruction) -> String {
    let text = format!("{} {}", base_mnemonic(&i.mnemonic), i.operands);
    text.trim_end().to_string()
}

/// The symbol a call or tail call names, without `@PLT` and the like.
fn callee_symbol(target: &str) -> String {
    let t = target.trim();
    let t = t.split('@').next().unwrap_or(t);
    let t = t.strip_suffix("(PLT)").unwrap_or(t);
    t.trim().to_string()
}

/// Builds the control-flow graph of `listing` on `profile`. `cold_names`
/// are callees known to be cold (ELF `.text.unlikely.*` functions, named
/// as the listing names them); the profile's `cold_calls` patterns add the
/// slow paths of formats without such sections.
pub fn analyze<'a>(
    listing: &'a Listing,
    profile: &'a Profile,
    cold_names: &'a BTreeSet<String>,
) -> Cfg<'a> {
    let mut cfg = analyze_with(
        listing,
        profile.arch(),
        &profile.classes,
        cold_names,
        &profile.cold_calls,
    );
    cfg.frame_record = profile.keeps_frame_pointers;
    cfg
}

/// [`analyze`] with its parts given separately.
pub fn analyze_with<'a>(
    listing: &'a Listing,
    arch: Arch,
    classes: &'a InstructionClasses,
    cold_names: &'a BTreeSet<String>,
    cold_patterns: &'a [super::profile::Pattern],
) -> Cfg<'a> {
    let mut cfg = Cfg {
        listing,
        blocks: Vec::new(),
        arch,
        classes,
        cold_names,
        cold_patterns,
        frame_record: false,
    };
    cfg.split();
    cfg.link();
    cfg.mark_cold();
    cfg
}

impl<'a> Cfg<'a> {
    fn split(&mut self) {
        let lines = &self.listing.lines;
        let mut start: Option<usize> = None;
        let mut instrs: Vec<usize> = Vec::new();
        let mut blocks = Vec::new();
        let close =
            |blocks: &mut Vec<Block>, start: &mut Option<usize>, end, instrs: &mut Vec<usize>| {
                if let Some(s) = start.take() {
                    blocks.push(Block {
                        start: s,
                        end,
                        instructions: std::mem::take(instrs),
                        ..Block::default()
                    });
                }
            };
        for (n, line) in lines.iter().enumerate() {
            match line {
                Line::Label(_) => {
                    if start.is_some() && !instrs.is_empty() {
                        close(&mut blocks, &mut start, n, &mut instrs);
                    }
                    if start.is_none() {
                        start = Some(n);
                    }
                }
                Line::Data(_) => {
                    // A literal pool: no code flows through it.
                    close(&mut blocks, &mut start, n, &mut instrs);
                }
                Line::Instruction(i) => {
                    if start.is_none() {
                        start = Some(n);
                    }
                    instrs.push(n);
                    if self.ends_block(i) {
                        close(&mut blocks, &mut start, n + 1, &mut instrs);
                    }
                }
            }
        }
        close(&mut blocks, &mut start, lines.len(), &mut instrs);
        if blocks.is_empty() {
            blocks.push(Block {
                exit: Exit::Return,
                returns: true,
                reachable: true,
                ..Block::default()
            });
        }
        self.blocks = blocks;
    }

    fn instruction(&self, n: usize) -> &'a Instruction {
        match &self.listing.lines[n] {
            Line::Instruction(i) => i,
            _ => unreachable!("an instruction index"),
        }
    }

    fn is_branch(&self, i: &Instruction) -> bool {
        self.classes.branch.is_match(&class_text(i))
    }

    fn ends_block(&self, i: &Instruction) -> bool {
        let text = i.text();
        self.is_branch(i)
            || return_kind(&self.arch, i).is_some()
            || is_trap(&self.arch, &i.mnemonic)
            || ends_flow(&text)
    }

    /// The label index of a branch's target, if it is a label of the
    /// function.
    fn branch_target(&self, i: &Instruction, labels: &BTreeMap<&str, usize>) -> Option<usize> {
        if !self.is_branch(i) {
            return None;
        }
        i.last_operand().and_then(|t| labels.get(t).copied())
    }

    fn link(&mut self) {
        let labels = self.listing.label_index();
        let block_of_line: BTreeMap<usize, usize> = self
            .blocks
            .iter()
            .enumerate()
            .flat_map(|(b, blk)| (blk.start..blk.end).map(move |l| (l, b)))
            .collect();
        let block_at = |line: usize| -> Option<usize> {
            // A label's block, or the first block at or after it.
            (line..self.listing.lines.len()).find_map(|l| block_of_line.get(&l).copied())
        };
        let n = self.blocks.len();
        for b in 0..n {
            let Some(&last) = self.blocks[b].instructions.last() else {
                // Only labels: falls through.
                if b + 1 < n {
                    self.blocks[b].succs.push(b + 1);
                }
                continue;
            };
            let i = self.instruction(last);
            let text = i.text();
            let mut succs = Vec::new();
            let mut exit = Exit::Flow;
            let mut returns = false;
            let fallthrough = self.blocks[b].end;
            let next_block = || {
                (fallthrough < self.listing.lines.len())
                    .then(|| block_at(fallthrough))
                    .flatten()
            };
            if let Some(cond) = return_kind(&self.arch, i) {
                returns = true;
                if cond {
                    succs.extend(next_block());
                } else {
                    exit = Exit::Return;
                }
            } else if is_trap(&self.arch, &i.mnemonic) {
                exit = Exit::Trap;
            } else if self.is_branch(i) {
                let conditional = is_conditional(&self.arch, &i.mnemonic);
                match self.branch_target(i, &labels) {
                    Some(t) => succs.extend(block_at(t)),
                    None => {
                        let tail = self.listing.is_tail_call(i, self.classes, &labels);
                        if !conditional {
                            exit = if tail { Exit::TailCall } else { Exit::Indirect };
                        } else if tail {
                            // A conditional tail call (`jne slow`): the call
                            // is the other way out.
                            returns = true;
                        }
                    }
                }
                if conditional || !ends_flow(&text) && exit == Exit::Flow && succs.is_empty() {
                    succs.extend(next_block());
                }
            } else if !ends_flow(&text) {
                succs.extend(next_block());
            } else {
                exit = Exit::Return;
                returns = true;
            }
            succs.dedup();
            let blk = &mut self.blocks[b];
            blk.succs = succs;
            blk.exit = exit;
            blk.returns = returns || exit == Exit::Return;
        }
        // Reachability from the entry.
        let mut stack = vec![0];
        while let Some(b) = stack.pop() {
            if self.blocks[b].reachable {
                continue;
            }
            self.blocks[b].reachable = true;
            stack.extend(self.blocks[b].succs.iter().copied());
        }
    }

    /// Whether the instruction at line `n` belongs to `class` (for
    /// [`Class::BackwardBranch`]: a branch to a label at or before it that
    /// reaches it again).
    pub fn in_class(&self, n: usize, class: Class) -> bool {
        let Line::Instruction(i) = &self.listing.lines[n] else {
            return false;
        };
        let text = &class_text(i);
        match class {
            Class::AtomicRmw => self.classes.atomic_rmw.is_match(text),
            Class::Atomic => {
                self.classes.atomic_rmw.is_match(text) || self.classes.atomic_other.is_match(text)
            }
            Class::Call => self.callee(n).is_some(),
            Class::Branch => self.is_branch(i),
            Class::CondBranch => {
                (self.is_branch(i) && is_conditional(&self.arch, &i.mnemonic))
                    || return_kind(&self.arch, i) == Some(true)
            }
            Class::Stack => self.is_code_stack_access(i),
            Class::BackwardBranch => self
                .listing
                .matching(Class::BackwardBranch, self.classes)
                .iter()
                .any(|&(k, _)| k == n),
        }
    }

    /// Instructions from the first of `lines` up to and including the first
    /// conditional branch after the first atomic read-modify-write among
    /// them (see [`HotPath::to_fit_check`]).
    pub fn to_fit_check(&self, lines: &[usize]) -> Option<usize> {
        let a = lines
            .iter()
            .position(|&n| self.in_class(n, Class::AtomicRmw))?;
        lines[a + 1..]
            .iter()
            .position(|&n| self.in_class(n, Class::CondBranch))
            .map(|b| a + 1 + b + 1)
    }

    /// Whether a callee is a cold slow path or a panic.
    pub fn is_cold_callee(&self, callee: &str) -> bool {
        self.cold_names.contains(callee)
            || panic_re().is_match(callee)
            || self.cold_patterns.iter().any(|p| p.is_match(callee))
    }

    /// Whether instruction `index` is a conditional tail call (`jne slow`,
    /// `b.ne slow`): a branch to a function, taken only one way.
    pub fn is_conditional_tail_call(&self, index: usize) -> bool {
        let Line::Instruction(i) = &self.listing.lines[index] else {
            return false;
        };
        self.is_branch(i)
            && is_conditional(&self.arch, &i.mnemonic)
            && self.branch_target(i, &self.listing.label_index()).is_none()
            && self.callee(index).is_some()
    }

    /// [`Self::callee`] as the hot path sees it: a conditional tail call is
    /// not taken there (falling through is the fast way), so it calls
    /// nothing.
    pub fn hot_callee(&self, index: usize) -> Option<String> {
        if self.is_conditional_tail_call(index) {
            return None;
        }
        self.callee(index)
    }

    /// The callee of a call or tail-call instruction (`None` for other
    /// instructions). Indirect calls are named after what they call where
    /// the listing says (the TLV thunk on Mach-O, a TLS descriptor).
    pub fn callee(&self, index: usize) -> Option<String> {
        let i = self.instruction(index);
        let labels = self.listing.label_index();
        let base = base_mnemonic(&i.mnemonic);
        let is_call = self.classes.call.is_match(&class_text(i));
        let tail = !is_call && self.listing.is_tail_call(i, self.classes, &labels);
        // A tail call through the GOT (`jmp qword ptr [rip + f@GOTPCREL]`:
        // x86-64 without PLT, the linked view and the dylib profile) leaves
        // for a named callee too.
        let got_tail = !is_call
            && !tail
            && self.is_branch(i)
            && !is_conditional(&self.arch, &i.mnemonic)
            && i.operands.contains('[')
            && i.operands.contains("@GOT");
        if !is_call && !tail && !got_tail {
            return None;
        }
        let target = match self.arch {
            Arch::Riscv64 if base == "jalr" || base == "jal" => i.last_operand().unwrap_or(""),
            _ => i.operands.as_str(),
        };
        let target = target.trim();
        let indirect = target.contains('[') || is_register(target) || target.is_empty();
        if !indirect {
            return Some(callee_symbol(target));
        }
        // A call through the GOT names its callee.
        if let Some(sym) = target
            .split(['[', ']', ' ', '+'])
            .find(|w| w.contains("@GOTPCREL") || w.contains("@GOT"))
        {
            return Some(callee_symbol(sym));
        }
        // What the indirect call calls: look back in the listing.
        let before: Vec<String> = self.listing.lines[..index]
            .iter()
            .filter_map(|l| match l {
                Line::Instruction(i) => Some(i.text()),
                Line::Data(d) => Some(d.text()),
                Line::Label(_) => None,
            })
            .collect();
        let tlv = before.iter().rev().find_map(|t| {
            t.split(['[', ' ', ','])
                .find(|w| w.contains("@TLVP"))
                .map(str::to_string)
        });
        if let Some(w) = tlv {
            let sym = w
                .split('@')
                .next()
                .unwrap_or(&w)
                .trim_matches(|c| c == '[' || c == ']');
            return Some(format!("tlv_get_addr (TLV thunk of {sym}, via {target})"));
        }
        if before.iter().any(|t| t.contains("tlsdesc")) {
            return Some(format!("TLS descriptor resolver (via {target})"));
        }
        Some(format!("indirect ({target})"))
    }

    fn mark_cold(&mut self) {
        for b in 0..self.blocks.len() {
            let cold_call = self.blocks[b].exit == Exit::Trap
                || !self.blocks[b].reachable
                || self.blocks[b]
                    .instructions
                    .iter()
                    .any(|&n| self.hot_callee(n).is_some_and(|c| self.is_cold_callee(&c)));
            self.blocks[b].cold_call = cold_call;
            self.blocks[b].cold = cold_call;
        }
        loop {
            let mut changed = false;
            for b in 0..self.blocks.len() {
                let blk = &self.blocks[b];
                if blk.cold || blk.returns || blk.exit != Exit::Flow || blk.succs.is_empty() {
                    continue;
                }
                if blk.succs.iter().all(|&s| self.blocks[s].cold) {
                    self.blocks[b].cold = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Whether block `to` can be reached from `from` (through non-cold
    /// blocks unless `allow_cold`).
    fn reaches_hot(&self, from: usize, to: usize, allow_cold: bool) -> bool {
        let mut seen = vec![false; self.blocks.len()];
        let mut stack = vec![from];
        while let Some(b) = stack.pop() {
            if b == to {
                return true;
            }
            if seen[b] || (self.blocks[b].cold && !allow_cold) {
                continue;
            }
            seen[b] = true;
            stack.extend(self.blocks[b].succs.iter().copied());
        }
        false
    }

    fn block_len(&self, b: usize) -> usize {
        self.blocks[b].instructions.len()
    }

    /// Whether block `b` ends by zeroing the return register and returning
    /// (`xor eax, eax` / `mov x0, xzr` / `mov r0, #0` / `li a0, 0`, then the
    /// epilogue's restores and the return).
    fn returns_zero(&self, b: usize) -> bool {
        let ins = &self.blocks[b].instructions;
        let Some((&ret, rest)) = ins.split_last() else {
            return false;
        };
        if return_kind(&self.arch, self.instruction(ret)) != Some(false) {
            return false;
        }
        // The epilogue: its loads from the stack (`is_stack_access`: `pop`,
        // `ldp x29, x30, [sp]`, `ld ra, 8(sp)`) and the stack pointer's
        // adjustment.
        let is_restore = |i: &Instruction| {
            let m = base_mnemonic(&i.mnemonic);
            is_stack_access(&self.arch, i)
                || ((m == "add" || m == "addi") && i.operands.replace(' ', "").starts_with("sp,sp"))
        };
        let Some(&zero) = rest
            .iter()
            .rev()
            .find(|&&n| !is_restore(self.instruction(n)))
        else {
            return false;
        };
        let zero = self.instruction(zero);
        let m = base_mnemonic(&zero.mnemonic);
        let ops: Vec<&str> = zero.operands.split(',').map(str::trim).collect();
        match (&self.arch, m, ops.as_slice()) {
            (Arch::X86_64, "xor", [a, b]) => a == b && matches!(*a, "eax" | "rax"),
            (Arch::Aarch64, "mov", [d, z]) => {
                matches!(*d, "x0" | "w0") && matches!(*z, "xzr" | "wzr" | "#0" | "#0x0")
            }
            (Arch::Arm, "mov" | "movs" | "mov.w", [d, z]) => *d == "r0" && *z == "#0",
            (Arch::Riscv64, "li", [d, z]) => *d == "a0" && *z == "0",
            (Arch::Riscv64, "mv", [d, z]) => *d == "a0" && *z == "zero",
            _ => false,
        }
    }

    /// The longest acyclic path from the entry to a hot exit, as block
    /// indices, and the back edges met on the way; `allow_cold` lifts the
    /// coldness rule (the fallback when no return is hot).
    fn longest_path(&self, allow_cold: bool) -> Option<(Vec<usize>, Vec<usize>)> {
        struct Search<'c, 'a> {
            cfg: &'c Cfg<'a>,
            allow_cold: bool,
            best: Option<((usize, bool), Vec<usize>)>,
            stack: Vec<usize>,
            on_stack: Vec<bool>,
            budget: usize,
        }
        impl Search<'_, '_> {
            fn go(&mut self, b: usize, len: usize) {
                if self.budget == 0 {
                    return;
                }
                self.budget -= 1;
                let blk = &self.cfg.blocks[b];
                self.stack.push(b);
                self.on_stack[b] = true;
                let len = len + self.cfg.block_len(b);
                let hot_exit = matches!(blk.exit, Exit::Return | Exit::TailCall | Exit::Indirect)
                    || blk.returns;
                // Of two paths as long, the one that does not return a
                // constant zero: a probe's zero (null, or 0 for "refused")
                // is its refusal, and the shared block that returns it is
                // often as long as the store and return of the fast way.
                let score = (len, !(hot_exit && self.cfg.returns_zero(b)));
                if hot_exit && self.best.as_ref().is_none_or(|(l, _)| score > *l) {
                    self.best = Some((score, self.stack.clone()));
                }
                for &s in &blk.succs {
                    if self.on_stack[s] || (!self.allow_cold && self.cfg.blocks[s].cold) {
                        continue;
                    }
                    self.go(s, len);
                }
                self.stack.pop();
                self.on_stack[b] = false;
            }
        }
        let mut s = Search {
            cfg: self,
            allow_cold,
            best: None,
            stack: Vec::new(),
            on_stack: vec![false; self.blocks.len()],
            budget: 200_000,
        };
        s.go(0, 0);
        let (_, path) = s.best?;
        let pos: BTreeMap<usize, usize> = path.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        // A loop on the path: a branch back (to a block at or before it in
        // the listing) from a non-cold block to a block of the path that
        // reaches the branch again through non-cold blocks. One per loop
        // head; the branch recorded is the first such back edge.
        let mut heads: BTreeMap<usize, usize> = BTreeMap::new();
        for (u, blk) in self.blocks.iter().enumerate() {
            if blk.cold && !allow_cold {
                continue;
            }
            for &v in &blk.succs {
                if pos.contains_key(&v)
                    && self.blocks[v].start <= blk.start
                    && self.reaches_hot(v, u, allow_cold)
                    && let Some(&last) = blk.instructions.last()
                {
                    heads.entry(v).or_insert(last);
                }
            }
        }
        let loops = heads.into_values().collect();
        Some((path, loops))
    }

    /// The hot path (see the module docs).
    pub fn hot_path(&self) -> HotPath {
        let (path, loops, no_hot_return) = match self.longest_path(false) {
            Some((p, l)) => (p, l, false),
            None => match self.longest_path(true) {
                Some((p, l)) => (p, l, true),
                None => (vec![0], Vec::new(), true),
            },
        };
        let line_indices: Vec<usize> = path
            .iter()
            .flat_map(|&b| self.blocks[b].instructions.iter().copied())
            .collect();
        let instrs: Vec<&Instruction> = line_indices.iter().map(|&n| self.instruction(n)).collect();
        let count = |class| {
            line_indices
                .iter()
                .filter(|&&n| self.in_class(n, class))
                .count()
        };
        let calls = line_indices
            .iter()
            .filter_map(|&n| self.hot_callee(n))
            .collect();
        let cold_lines = self
            .blocks
            .iter()
            .filter(|b| b.cold)
            .flat_map(|b| b.start..b.end)
            .collect();
        HotPath {
            instructions: instrs.len(),
            to_fit_check: self.to_fit_check(&line_indices),
            atomics: count(Class::Atomic),
            atomic_rmw: count(Class::AtomicRmw),
            calls,
            stack_accesses: instrs
                .iter()
                .filter(|i| self.is_code_stack_access(i))
                .count(),
            frame_accesses: instrs.iter().filter(|i| self.is_frame_record(i)).count(),
            loops: loops.len(),
            loop_lines: loops,
            lines: instrs.iter().map(|i| i.text()).collect(),
            line_indices,
            cold_lines,
            function_instructions: self.listing.instructions().count(),
            no_hot_return,
        }
    }
}
