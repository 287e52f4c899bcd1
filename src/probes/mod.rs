//! Probes: `#[inline(never)] #[unsafe(no_mangle)] pub extern "C"` functions,
//! each calling exactly one allocator fast path, so the codegen suite can find
//! that fast path by name in the assembly of every target.
//!
//! Probes whose fast path can call a cold path are `extern "C-unwind"`: a
//! panic there unwinds as it would through Rust code, so the listing carries
//! no abort landing pad that Rust callers do not have (with `extern "C"` the
//! pad's frame kept LLVM from shrink-wrapping the prologue into the slow
//! path). Every allocation probe returns the pointer (null on failure) in a
//! register, and the fast paths they call return in registers too: see
//! `PackedArena`'s `Attempt`.
//!
//! Every probe is listed once in [`PROBES`]; the test suite fails when a
//! `probe_*` function is missing from the registry or the registry names one
//! that does not exist.

mod chapter;
mod concurrent;
mod segregated;
mod unity;

pub use chapter::*;
pub use concurrent::*;
pub use segregated::*;
pub use unity::*;

/// What kind of code a probe exports, which decides the expectations that
/// apply to it on every profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// A single-threaded fast path: no atomic instruction and no call on any
    /// profile.
    SingleThreaded,
    /// A fast path that is allowed atomics (and, on some targets, calls for
    /// them or for thread-local storage).
    Concurrent,
}

/// One entry of the probe registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Probe {
    /// The exported symbol, `probe_<allocator>_<operation>`.
    pub name: &'static str,
    /// The allocator type whose fast path it calls.
    pub allocator: &'static str,
    /// The operation it exports (`alloc`, `free`, ...).
    pub operation: &'static str,
    /// Single-threaded or concurrent.
    pub kind: ProbeKind,
    /// One line: what it should compile to.
    pub expect: &'static str,
}

const fn probe(
    name: &'static str,
    allocator: &'static str,
    operation: &'static str,
    kind: ProbeKind,
    expect: &'static str,
) -> Probe {
    Probe {
        name,
        allocator,
        operation,
        kind,
        expect,
    }
}

use ProbeKind::{Concurrent, SingleThreaded};

/// Every probe of the crate.
pub static PROBES: &[Probe] = &[
    probe(
        "probe_linear_alloc",
        "LinearArena",
        "alloc",
        SingleThreaded,
        "align up, one compare against capacity, one add: no atomic, no call, no loop",
    ),
    probe(
        "probe_stack_alloc",
        "StackAllocator",
        "alloc",
        SingleThreaded,
        "the same bump as the linear arena: align, compare, add",
    ),
    probe(
        "probe_stack_free_to_marker",
        "StackAllocator",
        "free_to_marker",
        SingleThreaded,
        "a compare of the marker against the offset and one store",
    ),
    probe(
        "probe_pool_alloc",
        "Pool",
        "alloc",
        SingleThreaded,
        "pop the free-list head: a null test and two loads and a store",
    ),
    probe(
        "probe_pool_free",
        "Pool",
        "free",
        SingleThreaded,
        "push onto the free-list head: two stores (plus the debug double-free check in debug builds only)",
    ),
    probe(
        "probe_freelist_alloc",
        "FreeList",
        "alloc",
        SingleThreaded,
        "first fit: the list's first block split inline, the walk of the others out of line (a tail call); no atomic",
    ),
    probe(
        "probe_frame_alloc",
        "FrameAllocator",
        "alloc",
        SingleThreaded,
        "index the live buffer, then the linear arena's bump",
    ),
    probe(
        "probe_packed_alloc_relaxed",
        "PackedArena",
        "alloc",
        Concurrent,
        "one relaxed fetch_add (lock xadd / ldadd / __aarch64_ldadd8_relax), decode, fit check; no loop, no frame before the fit check",
    ),
    probe(
        "probe_packed_alloc_acquire",
        "PackedArena",
        "alloc (Acquire)",
        Concurrent,
        "the safe entry point: the same fast path with Acquire: lock xadd on x86, ldadda with LSE, __aarch64_ldadd8_acq with outline atomics",
    ),
    probe(
        "probe_packed_alloc_seqcst",
        "PackedArena",
        "alloc (SeqCst)",
        Concurrent,
        "the same fast path with SeqCst: lock xadd on x86, ldaddal on arm64 with LSE",
    ),
    probe(
        "probe_packed_dealloc",
        "PackedArena",
        "dealloc",
        Concurrent,
        "one release fetch_sub on the block's counter (ldaddl / __aarch64_ldadd8_rel)",
    ),
    probe(
        "probe_thread_cursor_alloc",
        "ThreadCursorArena",
        "alloc",
        Concurrent,
        "one thread-local access, a compare, an add: no atomic read-modify-write",
    ),
    probe(
        "probe_thread_cursor_local_alloc",
        "ThreadCursorArena",
        "LocalCursor::alloc",
        Concurrent,
        "the cursor the caller holds: a compare against the room left, an add, a store; no thread-local access, no atomic",
    ),
    probe(
        "probe_segregated_size_class",
        "SegregatedFit",
        "size_class",
        SingleThreaded,
        "the two-level class index: lzcnt/bsr on x86, clz on arm64, shifts; no loop",
    ),
    probe(
        "probe_segregated_alloc",
        "SegregatedFit",
        "alloc",
        Concurrent,
        "pop the class queue: one compare-exchange on the sequenced front (a retry loop; on ARMv7 one ldrexd/strexd pair, no loop)",
    ),
    probe(
        "probe_segregated_cached_alloc",
        "SegregatedFit",
        "alloc (cached)",
        Concurrent,
        "pop the thread's LIFO list: one thread-local access, an owner compare, loads and stores; no atomic read-modify-write",
    ),
    probe(
        "probe_segregated_dealloc",
        "SegregatedFit",
        "dealloc",
        Concurrent,
        "push onto the class queue: one swap of the back pointer, one store linking the old tail",
    ),
    probe(
        "probe_segregated_cached_dealloc",
        "SegregatedFit",
        "dealloc (cached)",
        Concurrent,
        "push onto the thread's LIFO list below its cap: one thread-local access, loads and stores; no atomic read-modify-write",
    ),
    probe(
        "probe_rewindable_alloc",
        "Rewindable",
        "alloc",
        Concurrent,
        "one atomic add on the current block's offset, then a fit check",
    ),
    probe(
        "probe_temp_alloc",
        "Temp",
        "alloc",
        SingleThreaded,
        "a per-thread stack bump aligned to 64: align, compare, add",
    ),
    probe(
        "probe_tempjob_alloc",
        "TempJob",
        "alloc",
        Concurrent,
        "one atomic add on the shared linear offset, then a fit check",
    ),
];

/// Looks a probe up by its symbol name.
pub fn find(name: &str) -> Option<&'static Probe> {
    PROBES.iter().find(|p| p.name == name)
}
