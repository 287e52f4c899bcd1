//! Links every probe into an executable, for the codegen suite's linked view
//! (`allocasm::codegen::linked`): what the linker makes of each fast path
//! (relaxed thread-local accesses, PLT or direct calls), with the crate's
//! release profile and with fat LTO.
//!
//! The probes are `#[no_mangle]` functions of the library; nothing here calls
//! them, so the array below, read through `black_box`, is what keeps every one
//! of them in the executable (under LTO and `--gc-sections` too). A probe
//! added to `allocasm::probes::PROBES` must be added here: the codegen tests
//! fail naming it otherwise.
//!
//! Run it to print how many probes it holds.

use allocasm::probes::*;

/// Probe addresses only; never called from here.
struct Keep([*const (); 21]);

// SAFETY: the array holds function addresses that are never dereferenced or
// called through it; sharing them between threads is harmless.
unsafe impl Sync for Keep {}

#[used]
static KEEP: Keep = Keep([
    probe_linear_alloc as *const (),
    probe_stack_alloc as *const (),
    probe_stack_free_to_marker as *const (),
    probe_pool_alloc as *const (),
    probe_pool_free as *const (),
    probe_freelist_alloc as *const (),
    probe_frame_alloc as *const (),
    probe_packed_alloc_relaxed as *const (),
    probe_packed_alloc_acquire as *const (),
    probe_packed_alloc_seqcst as *const (),
    probe_packed_dealloc as *const (),
    probe_thread_cursor_alloc as *const (),
    probe_thread_cursor_local_alloc as *const (),
    probe_segregated_size_class as *const (),
    probe_segregated_alloc as *const (),
    probe_segregated_dealloc as *const (),
    probe_segregated_cached_alloc as *const (),
    probe_segregated_cached_dealloc as *const (),
    probe_rewindable_alloc as *const (),
    probe_temp_alloc as *const (),
    probe_tempjob_alloc as *const (),
]);

fn main() {
    let kept = std::hint::black_box(&KEEP.0);
    println!(
        "{} probes linked",
        kept.iter().filter(|p| !p.is_null()).count()
    );
}
