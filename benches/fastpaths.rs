//! Instruction counts of the fast paths on x86_64 Linux, under valgrind's
//! callgrind through gungraun (the successor of iai-callgrind): one call of
//! each probe, counted from its entry to its return (callgrind's
//! `--toggle-collect=<probe>`, gungraun's `EntryPoint::Custom`), callees
//! included. The count does not depend on the machine's load, so CI can gate
//! on it where wall-clock benches cannot: each bench has a hard limit on
//! `Ir` (instructions executed) at the count this commit executes, and a PR
//! that adds an instruction to a fast path fails `cargo bench --bench
//! fastpaths`.
//!
//! The limits are the counts measured on rustc 1.99.1 (the pin) for
//! x86_64-unknown-linux-gnu: callgrind's count here and the suite's
//! qemu-user count of the linked probe driver (`allocasm::codegen::executed`,
//! profile x86_64-linux) agree on every one of them. A change of compiler
//! that changes them is a codegen change to read (`cargo run --release --
//! show <probe> -p x86_64-linux`); the limit moves with it in the same
//! commit. Lowering a limit below the count fails the run ("Performance has
//! regressed: Instructions (21) exceeds limit by 1"), exit status 3.
//!
//! The set-up (building the allocator, the warm-up that fills the thread's
//! cursor, the allocation a free gives back) runs in gungraun's `setup`
//! functions through the library's inlined API, never through a probe, so
//! nothing of it is counted.
//!
//! Run: `cargo bench -p allocasm-benches --features probes --bench fastpaths` (needs valgrind and
//! `gungraun-runner` at the version of the `gungraun` crate; scripts/setup
//! installs both). x86_64 Linux only; elsewhere the bench is an empty program.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use std::alloc::Layout;
    use std::hint::black_box;

    use allocasm::probes::*;
    use allocasm::{
        FitPolicy, FrameAllocator, FreeList, LinearArena, LocalCursor, PackedArena, Pool,
        SegregatedFit, StackAllocator, Temp, TempJob, ThreadCursorArena,
    };
    use gungraun::{
        Callgrind, EntryPoint, EventKind, LibraryBenchmarkConfig, library_benchmark,
        library_benchmark_group,
    };

    const SIZE: usize = 16;

    /// Callgrind counting one probe, inclusive, with a hard limit on the
    /// instructions it may execute.
    pub fn counting(probe: &str, max_ir: u64) -> LibraryBenchmarkConfig {
        let mut tool = Callgrind::default();
        tool.entry_point(EntryPoint::Custom(probe.to_string()))
            .hard_limits([(EventKind::Ir, max_ir)]);
        let mut config = LibraryBenchmarkConfig::default();
        config.tool(tool);
        config
    }

    fn linear() -> LinearArena<'static> {
        let a = LinearArena::new(1 << 16).unwrap();
        a.alloc(SIZE, 8).unwrap();
        a
    }

    #[library_benchmark(config = counting("probe_linear_alloc", 10))]
    #[bench::warm(setup = linear)]
    fn linear_alloc(a: LinearArena<'static>) -> LinearArena<'static> {
        black_box(probe_linear_alloc(black_box(&a), black_box(SIZE)));
        a
    }

    fn stack() -> StackAllocator<'static> {
        StackAllocator::new(1 << 16).unwrap()
    }

    #[library_benchmark(config = counting("probe_stack_alloc", 10))]
    #[bench::warm(setup = stack)]
    fn stack_alloc(s: StackAllocator<'static>) -> StackAllocator<'static> {
        black_box(probe_stack_alloc(black_box(&s), black_box(SIZE)));
        s
    }

    fn pool() -> Pool<'static> {
        Pool::new(SIZE, 8, 64).unwrap()
    }

    #[library_benchmark(config = counting("probe_pool_alloc", 7))]
    #[bench::warm(setup = pool)]
    fn pool_alloc(p: Pool<'static>) -> Pool<'static> {
        black_box(probe_pool_alloc(black_box(&p)));
        p
    }

    fn pool_with_slot() -> (Pool<'static>, *mut u8) {
        let p = pool();
        let slot = p.alloc().unwrap().as_ptr();
        (p, slot)
    }

    #[library_benchmark(config = counting("probe_pool_free", 8))]
    #[bench::warm(setup = pool_with_slot)]
    fn pool_free(input: (Pool<'static>, *mut u8)) -> Pool<'static> {
        let (p, slot) = input;
        // SAFETY: `slot` is a live slot of `p`, freed once.
        black_box(unsafe { probe_pool_free(black_box(&p), black_box(slot)) });
        p
    }

    fn free_list() -> FreeList<'static> {
        FreeList::new(1 << 16, FitPolicy::FirstFit).unwrap()
    }

    #[library_benchmark(config = counting("probe_freelist_alloc", 33))]
    #[bench::warm(setup = free_list)]
    fn freelist_alloc(l: FreeList<'static>) -> FreeList<'static> {
        black_box(probe_freelist_alloc(black_box(&l), black_box(SIZE)));
        l
    }

    fn frames() -> FrameAllocator<2> {
        FrameAllocator::<2>::new(1 << 16).unwrap()
    }

    #[library_benchmark(config = counting("probe_frame_alloc", 14))]
    #[bench::warm(setup = frames)]
    fn frame_alloc(f: FrameAllocator<2>) -> FrameAllocator<2> {
        black_box(probe_frame_alloc(black_box(&f), black_box(SIZE)));
        f
    }

    fn packed() -> PackedArena {
        let a = PackedArena::new(1 << 16).unwrap();
        a.alloc(SIZE).unwrap();
        a
    }

    #[library_benchmark(config = counting("probe_packed_alloc_relaxed", 18))]
    #[bench::warm(setup = packed)]
    fn packed_alloc_relaxed(a: PackedArena) -> PackedArena {
        // SAFETY: one thread and no recycled block: nothing to order.
        black_box(unsafe { probe_packed_alloc_relaxed(black_box(&a), black_box(SIZE)) });
        a
    }

    fn thread_cursor() -> ThreadCursorArena {
        let a = ThreadCursorArena::new().unwrap();
        // The first allocation of the thread takes the refill.
        a.alloc(SIZE).unwrap();
        a
    }

    #[library_benchmark(config = counting("probe_thread_cursor_alloc", 26))]
    #[bench::warm(setup = thread_cursor)]
    fn thread_cursor_alloc(a: ThreadCursorArena) -> ThreadCursorArena {
        black_box(probe_thread_cursor_alloc(black_box(&a), black_box(SIZE)));
        a
    }

    fn local_cursor() -> LocalCursor<'static> {
        // Leaked: the handle borrows its arena for the benchmark's life.
        let a: &'static ThreadCursorArena = Box::leak(Box::new(ThreadCursorArena::new().unwrap()));
        let mut c = a.local();
        // The handle's first allocation takes the refill.
        c.alloc(SIZE).unwrap();
        c
    }

    #[library_benchmark(config = counting("probe_thread_cursor_local_alloc", 11))]
    #[bench::warm(setup = local_cursor)]
    fn thread_cursor_local_alloc(mut c: LocalCursor<'static>) -> LocalCursor<'static> {
        black_box(probe_thread_cursor_local_alloc(
            black_box(&mut c),
            black_box(SIZE),
        ));
        c
    }

    // 15 on rustc 1.95.0; LLVM 23 pays the class index's `- 24` with an
    // `add` of its own (docs/design.md, "What LLVM 23 changed").
    #[library_benchmark(config = counting("probe_segregated_size_class", 16))]
    #[bench::small(SIZE)]
    fn segregated_size_class(size: usize) -> usize {
        black_box(probe_segregated_size_class(black_box(size)))
    }

    fn segregated() -> SegregatedFit {
        warm_segregated(SIZE)
    }

    /// A SegregatedFit whose thread cache holds eight blocks of `size`.
    fn warm_segregated(size: usize) -> SegregatedFit {
        let a = SegregatedFit::new();
        let layout = Layout::from_size_align(size, 8).unwrap();
        let ps: Vec<_> = (0..8).map(|_| a.alloc(layout).unwrap()).collect();
        for p in ps {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { a.dealloc(p, layout) };
        }
        a
    }

    /// With the misuse checks (`--features hardened`): clearing the popped
    /// block's tag, and the class index kept across the pop to skip the
    /// 8-byte class, which has no tag (4); the queue's coded link (the
    /// key's load and the XOR) and the region check of the new front (a
    /// rotation, a shift, a branch) (6; docs/malloc-hardening.md).
    const SHARED_ALLOC_MAX: u64 = if cfg!(feature = "hardened") { 59 } else { 49 };

    /// A SegregatedFit whose class queue holds blocks of `SIZE` (a growth
    /// links blocks onto the queue only as they are needed, so the warm
    /// cache alone leaves it empty): eight taken through the shared path
    /// and given back through it.
    fn segregated_queued() -> SegregatedFit {
        let a = warm_segregated(SIZE);
        let layout = Layout::from_size_align(SIZE, 8).unwrap();
        let ps: Vec<_> = (0..8).map(|_| a.alloc_shared(layout).unwrap()).collect();
        for p in ps {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { a.dealloc_shared(p, layout) };
        }
        a
    }

    #[library_benchmark(config = counting("probe_segregated_alloc", SHARED_ALLOC_MAX))]
    #[bench::warm(setup = segregated_queued)]
    fn segregated_alloc(a: SegregatedFit) -> SegregatedFit {
        black_box(probe_segregated_alloc(black_box(&a), black_box(SIZE)));
        a
    }

    /// `RawAllocator::allocate` on a warm cache: what `Allocator` users
    /// (and the allocator benches' subjects) call. Not a probe of the suite,
    /// so the bench names its own entry point. It used to compute the size
    /// class twice (once for the block, once out of line for the returned
    /// length): 89 instructions then, 47 with the class computed once, 43
    /// since the slow paths pass a pointer instead of a `Result`, 40 without
    /// the class's redundant second range check, 37 with its shift
    /// computed without a saturating subtract; 38 on rustc 1.99.1 (LLVM 23's
    /// separate `add` of the class index's `- 24`).
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn fastpaths_segregated_allocate(a: &SegregatedFit, size: usize) -> *mut u8 {
        match Layout::from_size_align(size, 8) {
            Ok(l) => match allocasm::RawAllocator::allocate(a, l) {
                Ok(p) => p.cast::<u8>().as_ptr(),
                Err(_) => core::ptr::null_mut(),
            },
            Err(_) => core::ptr::null_mut(),
        }
    }

    /// With the misuse checks: the cached pop's XOR, its test of the head's
    /// low bits and the tag's clearing.
    const ALLOCATE_MAX: u64 = if cfg!(feature = "hardened") { 42 } else { 38 };

    #[library_benchmark(config = counting("fastpaths_segregated_allocate", ALLOCATE_MAX))]
    #[bench::warm(setup = segregated)]
    fn segregated_allocate(a: SegregatedFit) -> SegregatedFit {
        black_box(fastpaths_segregated_allocate(
            black_box(&a),
            black_box(SIZE),
        ));
        a
    }

    /// `GlobalAlloc::alloc` behind a call, as the allocator benches'
    /// `SegregatedFit:call` subject makes it (the boundary the peers are
    /// measured at).
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub fn fastpaths_segregated_call_alloc(a: &SegregatedFit, l: Layout) -> *mut u8 {
        // SAFETY: the bench's layouts have a non-zero size.
        unsafe { std::alloc::GlobalAlloc::alloc(a, l) }
    }

    /// `GlobalAlloc::dealloc` behind a call.
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub fn fastpaths_segregated_call_dealloc(a: &SegregatedFit, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `fastpaths_segregated_call_alloc` with `l`.
        unsafe { std::alloc::GlobalAlloc::dealloc(a, p, l) }
    }

    /// The 64-byte allocate/free pair at the call boundary, on a warm
    /// cache: the pair the allocator benches' `alloc_free64` group times.
    /// The instructions of both calls and of this frame are counted.
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn fastpaths_segregated_call_pair64(a: &SegregatedFit, size: usize) {
        let l = Layout::from_size_align(size, 8).unwrap_or(Layout::new::<u8>());
        let p = fastpaths_segregated_call_alloc(a, l);
        fastpaths_segregated_call_dealloc(a, p, l);
    }

    fn segregated_warm64() -> SegregatedFit {
        warm_segregated(64)
    }

    /// The limit: the pair's count without the misuse checks, and with them
    /// (`--features hardened`, docs/malloc-hardening.md; 102 until the tree
    /// of 813eb77 counted 103: `scripts/test gungraun` runs the benches
    /// without the feature, so the hardened limits are checked by hand).
    const PAIR64_MAX: u64 = if cfg!(feature = "hardened") { 103 } else { 93 };

    #[library_benchmark(config = counting("fastpaths_segregated_call_pair64", PAIR64_MAX))]
    #[bench::warm(setup = segregated_warm64)]
    fn segregated_call_pair64(a: SegregatedFit) -> SegregatedFit {
        fastpaths_segregated_call_pair64(black_box(&a), black_box(64));
        a
    }

    /// Blocks a thread caches of the 64-byte class: 16 KiB of them, at most
    /// 128 (`CAPS` in src/segregated/cache.rs), as a list of half of them
    /// and a spare run of the other half.
    const CAP64: usize = 128;

    /// A SegregatedFit whose thread cache holds all it may of the 64-byte
    /// class (the list full, the spare run set aside), and one more live
    /// block of it. Three batches are allocated, so the refills leave the
    /// list empty; two are freed.
    fn segregated_full64() -> (SegregatedFit, *mut u8) {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 8).unwrap();
        let ps: Vec<_> = (0..CAP64 + CAP64 / 2)
            .map(|_| a.alloc(l).unwrap())
            .collect();
        for &p in &ps[..CAP64] {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { a.dealloc(p, l) };
        }
        (a, ps[CAP64].as_ptr())
    }

    /// The free that finds its list full: the list goes to the run stack
    /// whole, with one compare-exchange. It used to walk the newest half
    /// of the list link by link to cut it off: 610 instructions here, 160
    /// now (189 with the misuse checks); `lua5.4`'s 45,767 such flushes
    /// cost 37.5 M (docs/program-bench.md).
    const FREE_FULL_MAX: u64 = if cfg!(feature = "hardened") { 189 } else { 160 };

    #[library_benchmark(config = counting("fastpaths_segregated_call_dealloc", FREE_FULL_MAX))]
    #[bench::full(setup = segregated_full64)]
    fn segregated_free_full(input: (SegregatedFit, *mut u8)) -> SegregatedFit {
        let (a, p) = input;
        let l = Layout::from_size_align(64, 8).unwrap();
        fastpaths_segregated_call_dealloc(black_box(&a), black_box(p), black_box(l));
        a
    }

    /// A SegregatedFit that grew one span of 64-byte blocks for this
    /// thread's refill and handed out every block linked so far: the list,
    /// the class queue and the run stack are empty, the span's other
    /// blocks are free and not linked yet. The class's first refill links
    /// only the blocks on the span's header page (fewer than a batch) and
    /// takes all but one of them from the queue (a batch pop leaves the
    /// last block); `alloc_shared` takes that one. (A fixed count of 64
    /// allocations used to be the setup: since the first batch shrank, it
    /// left blocks in the list, and the bench measured a cached pop, 40
    /// instructions, under a limit of 1,220.)
    fn segregated_emptied64() -> SegregatedFit {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 8).unwrap();
        let class = SegregatedFit::size_class(64, 8).unwrap();
        let mut got = vec![a.alloc(l).unwrap()];
        while a.stats().classes[class.index()].cached > 0 {
            got.push(a.alloc(l).unwrap());
        }
        got.push(a.alloc_shared(l).unwrap());
        let s = a.stats();
        let len = s.span_bytes / s.classes[class.index()].spans;
        for p in got {
            assert!(
                p.as_ptr().addr() % len >= len - 4096,
                "{p:p} is not on the header's page: the setup took a block the next refill \
                 should link"
            );
        }
        a
    }

    /// A SegregatedFit whose run stack holds runs of 64-byte blocks that
    /// another thread's cache flushed whole (it allocated three lists' worth
    /// and freed them), and whose list on this thread is empty after
    /// handing out the batch its first refill took.
    fn segregated_flushed64() -> SegregatedFit {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(64, 8).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let ps: Vec<_> = (0..3 * CAP64).map(|_| a.alloc(l).unwrap()).collect();
                for p in ps {
                    // SAFETY: allocated above with `l`, freed once.
                    unsafe { a.dealloc(p, l) };
                }
            });
        });
        for _ in 0..CAP64 / 2 {
            a.alloc(l).unwrap();
        }
        a
    }

    /// The allocation that finds its list empty when a flushed run is
    /// free: the refill takes the run with one compare-exchange. It used to
    /// pop the blocks from the class queue, walking them link by link:
    /// 1,291 instructions here, 213 now (252 with the misuse checks);
    /// `lua5.4`'s 50,220 refills cost 26.3 M.
    const REFILL_MAX: u64 = if cfg!(feature = "hardened") { 252 } else { 213 };

    #[library_benchmark(config = counting("fastpaths_segregated_call_alloc", REFILL_MAX))]
    #[bench::flushed(setup = segregated_flushed64)]
    fn segregated_refill(a: SegregatedFit) -> SegregatedFit {
        let l = Layout::from_size_align(64, 8).unwrap();
        black_box(fastpaths_segregated_call_alloc(black_box(&a), black_box(l)));
        a
    }

    /// The allocation that finds its list empty after a growth: the refill
    /// links the next run of the grown span (a batch of 64 blocks) and
    /// takes it: 650 instructions (1,291 with the misuse checks, whose
    /// coded links LLVM unrolls less well, which tag each linked block free
    /// and check that nothing wrote it before: 1,165 without that check).
    /// A growth used to link the whole span at once, touching every page
    /// of it; each refill now links the run it takes.
    const REFILL_FRESH_MAX: u64 = if cfg!(feature = "hardened") {
        1291
    } else {
        650
    };

    #[library_benchmark(config = counting("fastpaths_segregated_call_alloc", REFILL_FRESH_MAX))]
    #[bench::grown(setup = segregated_emptied64)]
    fn segregated_refill_fresh(a: SegregatedFit) -> SegregatedFit {
        let l = Layout::from_size_align(64, 8).unwrap();
        black_box(fastpaths_segregated_call_alloc(black_box(&a), black_box(l)));
        a
    }

    fn temp_job() -> TempJob {
        TempJob::new(1 << 16).unwrap().on_leak(|_| {})
    }

    #[library_benchmark(config = counting("probe_tempjob_alloc", 24))]
    #[bench::warm(setup = temp_job)]
    fn tempjob_alloc(j: TempJob) -> TempJob {
        black_box(probe_tempjob_alloc(black_box(&j), black_box(SIZE)));
        j
    }

    fn temp() -> Temp<&'static TempJob> {
        let job: &'static TempJob = Box::leak(Box::new(temp_job()));
        Temp::new(1 << 16, job).unwrap()
    }

    #[library_benchmark(config = counting("probe_temp_alloc", 11))]
    #[bench::warm(setup = temp)]
    fn temp_alloc(t: Temp<&'static TempJob>) -> Temp<&'static TempJob> {
        black_box(probe_temp_alloc(black_box(&t), black_box(SIZE)));
        t
    }

    library_benchmark_group!(
        name = fast_paths,
        benchmarks = [
            linear_alloc,
            stack_alloc,
            pool_alloc,
            pool_free,
            freelist_alloc,
            frame_alloc,
            packed_alloc_relaxed,
            thread_cursor_alloc,
            thread_cursor_local_alloc,
            segregated_size_class,
            segregated_alloc,
            segregated_allocate,
            segregated_call_pair64,
            segregated_free_full,
            segregated_refill,
            segregated_refill_fresh,
            tempjob_alloc,
            temp_alloc
        ]
    );
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use linux::fast_paths;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
gungraun::main!(library_benchmark_groups = fast_paths);

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    eprintln!("fastpaths: the callgrind benches run on x86_64 Linux only");
}
