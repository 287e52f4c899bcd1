//! The one place the integration tests ask for an outside tool: a test
//! that needs one calls [`need`] first and returns when it answers false.
//! Without the tool it prints `skipped: <test>: needs <tool> (<install
//! command for this OS>)`; with `ALLOCASM_REQUIRE=<tool,…>` or
//! `ALLOCASM_REQUIRE=all` the skip is a failure instead
//! ([`allocasm_suite::tools::need`]).

pub use allocasm_suite::codegen::profile::Arch;
pub use allocasm_suite::tools::Tool;

/// Whether every tool of `tools` is found; the missing ones are one skip
/// line (or, when required, a panic).
pub fn need(test: &str, tools: &[Tool]) -> bool {
    allocasm_suite::tools::need_all(test, tools)
}

/// What links and disassembles a Linux profile of `arch` on this host: its
/// disassembler and, for another architecture, its cross gcc.
pub fn linked_tools(arch: Arch) -> Vec<Tool> {
    let mut v = vec![Tool::Disassembler(arch.clone())];
    if arch != Arch::from_triple(std::env::consts::ARCH) {
        v.push(Tool::CrossGcc(arch));
    }
    v
}

/// [`linked_tools`] and `qemu-<arch>`: what builds, disassembles and runs
/// a Linux profile's probe driver.
pub fn executed_tools(arch: Arch) -> Vec<Tool> {
    let mut v = linked_tools(arch.clone());
    v.push(Tool::Qemu(arch));
    v
}
