//! Unity's lifetime allocators: the conformance suite, plus what each one
//! promises beyond it (fallbacks, frame ages, leaks, growth, rewinds, stale
//! handles, several threads at once).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use allocasm::unity::{LeakReport, Overdue};
use allocasm::{
    AllocError, LeakDetection, PageAllocator, Persistent, RawAllocator, Rewindable, SegregatedFit,
    Temp, TempJob,
};

use crate::conformance::{self, Spec};

/// A `TempJob` that neither overflows nor prints leak reports.
fn bounded_job(capacity: usize) -> TempJob {
    TempJob::new(capacity)
        .unwrap()
        .with_overflow_limit(0)
        .on_leak(|_| {})
}

/// A leak hook that records the report where the test can read it.
fn recorder() -> (
    Arc<Mutex<Option<LeakReport>>>,
    impl Fn(&LeakReport) + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&seen);
    (seen, move |r: &LeakReport| {
        *sink.lock().unwrap() = Some(r.clone())
    })
}

/// Threads and allocations per thread for the multi-threaded tests.
fn threads_and_count() -> (usize, usize) {
    if cfg!(miri) { (3, 8) } else { (4, 400) }
}

/// Fills a block with a pattern derived from its address and thread.
fn fill_pattern(p: NonNull<u8>, len: usize, thread: usize) {
    let seed = (p.as_ptr() as usize as u8) ^ (thread as u8).wrapping_mul(31);
    for i in 0..len {
        // SAFETY: the block is live and `len` bytes long.
        unsafe { p.as_ptr().add(i).write(seed.wrapping_add(i as u8)) };
    }
}

fn check_pattern(p: NonNull<u8>, len: usize, thread: usize) {
    let seed = (p.as_ptr() as usize as u8) ^ (thread as u8).wrapping_mul(31);
    for i in 0..len {
        // SAFETY: the block is live and `len` bytes long.
        let got = unsafe { p.as_ptr().add(i).read() };
        assert_eq!(
            got,
            seed.wrapping_add(i as u8),
            "byte {i} of block {p:p} (thread {thread}) corrupted"
        );
    }
}

fn assert_disjoint(mut ranges: Vec<(usize, usize)>) {
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "blocks overlap: {:#x}..{:#x} and {:#x}..{:#x}",
            w[0].0,
            w[0].1,
            w[1].0,
            w[1].1
        );
    }
}

/// A block pointer handed from one thread to another.
#[derive(Clone, Copy)]
struct Block(NonNull<u8>);

// SAFETY: the tests hand each block to exactly one other thread at a time,
// after the thread scope that made it ended.
unsafe impl Send for Block {}
// SAFETY: as above; shared only for reading its address.
unsafe impl Sync for Block {}

fn assert_shared_allocator<A: RawAllocator + Send + Sync>() {}

#[test]
fn thread_safe_ones_are_send_and_sync() {
    assert_shared_allocator::<TempJob>();
    assert_shared_allocator::<Rewindable>();
    assert_shared_allocator::<Persistent<PageAllocator>>();
}

// ---------------------------------------------------------------- Temp

fn temp_spec() -> Spec {
    Spec {
        min_align: 64,
        ..Spec::new("Temp")
    }
}

#[test]
fn temp_conformance() {
    conformance::check(&temp_spec(), || {
        Temp::new(16 << 10, bounded_job(16 << 10)).unwrap()
    });
}

#[test]
fn temp_conformance_end_frame() {
    let temp = Temp::new(32 << 10, bounded_job(4096)).unwrap();
    conformance::check_reset(&temp_spec(), temp, |t| t.end_frame());
}

#[test]
fn temp_blocks_are_64_aligned_and_rounded() {
    let job = bounded_job(4096);
    let temp = Temp::new(4096, &job).unwrap();
    let a = temp.alloc(1, 1).unwrap();
    let b = temp.alloc(65, 8).unwrap();
    let c = temp.alloc(8, 256).unwrap();
    assert_eq!(a.as_ptr() as usize % 64, 0);
    assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 64);
    assert_eq!(c.as_ptr() as usize % 256, 0);
    assert!(c.as_ptr() as usize >= b.as_ptr() as usize + 128);
}

#[test]
fn temp_single_free_is_a_no_op() {
    let job = bounded_job(4096);
    let temp = Temp::new(4096, &job).unwrap();
    let layout = Layout::from_size_align(100, 8).unwrap();
    let a = RawAllocator::allocate(&temp, layout).unwrap().cast::<u8>();
    assert_eq!(temp.used(), 128);
    // SAFETY: `a` came from `temp` with `layout`.
    unsafe { RawAllocator::deallocate(&temp, a, layout) };
    assert_eq!(temp.used(), 128, "a single free must not give bytes back");
    let b = RawAllocator::allocate(&temp, layout).unwrap().cast::<u8>();
    assert_ne!(
        a, b,
        "the freed block must not be handed out again before the end of the frame"
    );
    assert_eq!(temp.used(), 256);
}

#[test]
fn temp_full_falls_back_to_tempjob_and_counts_it() {
    let mut job = TempJob::new(4096).unwrap().with_overflow_limit(0);
    {
        let mut temp = Temp::new(256, &job).unwrap();
        for _ in 0..4 {
            let p = temp.alloc(64, 64).unwrap();
            assert!(temp.owns(p.as_ptr()));
        }
        assert_eq!(temp.fallback_count(), 0);
        let spill = temp.alloc(100, 8).unwrap();
        assert!(!temp.owns(spill.as_ptr()));
        assert!(
            temp.fallback().owns(spill.as_ptr()),
            "the fallback block must come from the TempJob pool"
        );
        assert_eq!(
            spill.as_ptr() as usize % 64,
            0,
            "fallback blocks keep Temp's 64-byte alignment"
        );
        assert_eq!(temp.fallback_count(), 1);
        temp.alloc(10, 8).unwrap();
        assert_eq!(temp.fallback_count(), 2);
        assert!(temp.fallback().used() > 0);
        temp.end_frame();
        assert_eq!(temp.used(), 0);
        assert_eq!(temp.high_water(), 256);
        // A fresh frame uses the buffer again, not the fallback.
        assert!(temp.owns(temp.alloc(64, 64).unwrap().as_ptr()));
        assert_eq!(temp.fallback_count(), 2);
    }
    // The end of the Temp frame gave both fallback blocks back: the TempJob
    // has nothing live and its pool starts over.
    assert!(job.end_frame().is_empty());
    assert_eq!(job.used(), 0);
    assert_eq!(job.leaks().allocations, 0);
}

#[test]
fn temp_when_everything_is_full_the_error_is_out_of_memory() {
    let job = bounded_job(64);
    let temp = Temp::new(64, &job).unwrap();
    temp.alloc(64, 64).unwrap();
    assert!(matches!(
        temp.alloc(64, 64),
        Err(AllocError::OutOfMemory { .. })
    ));
    assert_eq!(
        temp.fallback_count(),
        0,
        "a refused fallback is not counted"
    );
    assert!(matches!(
        temp.try_alloc(1, 1),
        Err(AllocError::OutOfMemory {
            requested: 1,
            available: 0
        })
    ));
}

#[test]
fn temp_scope_frees_what_the_job_made() {
    let mut job = TempJob::new(4096).unwrap().with_overflow_limit(0);
    {
        let mut temp = Temp::new(256, &job).unwrap();
        let before = temp.alloc(64, 64).unwrap();
        // SAFETY: 64 live bytes.
        unsafe { before.as_ptr().write_bytes(0x5A, 64) };
        let (inner_used, spilled) = temp.scope(|t| {
            for _ in 0..3 {
                t.alloc(64, 64).unwrap();
            }
            let spill = t.alloc(64, 64).unwrap();
            (t.used(), !t.owns(spill.as_ptr()))
        });
        assert_eq!(inner_used, 256);
        assert!(spilled);
        assert_eq!(temp.used(), 64, "the scope rolls back to where it started");
        assert_eq!(temp.fallback_count(), 1);
        // SAFETY: `before` is still live: it predates the scope.
        let kept = unsafe { std::slice::from_raw_parts(before.as_ptr(), 64) };
        assert!(crate::filled(kept, 0x5A));
        let next = temp.alloc(64, 64).unwrap();
        assert_eq!(next.as_ptr() as usize, before.as_ptr() as usize + 64);
    }
    assert!(job.end_frame().is_empty());
    assert_eq!(job.used(), 0, "the scope's fallback block was given back");
}

#[test]
fn temp_bad_input_is_a_clear_error() {
    let job = bounded_job(4096);
    let temp = Temp::new(4096, &job).unwrap();
    assert_eq!(temp.alloc(0, 8), Err(AllocError::ZeroSize));
    assert_eq!(
        temp.alloc(8, 48),
        Err(AllocError::BadAlignment { align: 48 })
    );
    assert_eq!(temp.alloc(8, 0), Err(AllocError::BadAlignment { align: 0 }));
    assert!(matches!(
        temp.try_alloc(usize::MAX, 8),
        Err(AllocError::OutOfMemory { .. })
    ));
    assert!(matches!(
        temp.try_alloc(8, 1 << (usize::BITS - 2)),
        Err(AllocError::OutOfMemory { .. })
    ));
    assert!(matches!(
        temp.alloc(usize::MAX, 8),
        Err(AllocError::TooLarge { .. })
    ));
    assert_eq!(temp.used(), 0, "refused requests take nothing");
    assert!(matches!(
        Temp::new(63, &job),
        Err(AllocError::InvalidConfig {
            field: allocasm::ConfigField::Capacity,
            value: 63,
            ..
        })
    ));
}

/// The bump's one compare works on the block's last byte,
/// `offset + ((size - 1) | 63)`, with an overflow check: a size within 63 of `usize::MAX`
/// (whose rounding wraps to 0) and a zero size are refused like any size
/// that does not fit, an exact fit is served, and a zero size with a bad
/// alignment still says zero size.
#[test]
fn temp_refuses_sizes_whose_rounding_wraps_and_serves_an_exact_fit() {
    let job = bounded_job(4096);
    let temp = Temp::new(4096, &job).unwrap();
    let first = temp.try_alloc(100, 8).unwrap();
    assert_eq!(temp.used(), 128);
    for k in 0..=64 {
        assert_eq!(
            temp.try_alloc(usize::MAX - k, 8),
            Err(AllocError::OutOfMemory {
                requested: usize::MAX - k,
                available: 4096 - 128
            }),
            "usize::MAX - {k}"
        );
    }
    assert_eq!(temp.try_alloc(0, 8), Err(AllocError::ZeroSize));
    assert_eq!(temp.try_alloc(0, 48), Err(AllocError::ZeroSize));
    assert_eq!(temp.used(), 128, "refused requests take nothing");
    assert!(matches!(
        temp.try_alloc(4096 - 128 + 1, 8),
        Err(AllocError::OutOfMemory { .. })
    ));
    let last = temp.try_alloc(4096 - 128 - 63, 8).unwrap();
    assert_eq!(last.as_ptr() as usize, first.as_ptr() as usize + 128);
    assert_eq!(temp.used(), 4096, "rounded up to 64: the buffer is full");
    assert!(matches!(
        temp.try_alloc(1, 8),
        Err(AllocError::OutOfMemory { available: 0, .. })
    ));
}

#[test]
fn temp_serves_allocator_api2_collections() {
    let job = bounded_job(1 << 16);
    let mut temp = Temp::new(1 << 12, &job).unwrap();
    {
        let mut v: allocator_api2::vec::Vec<u64, &Temp<&TempJob>> =
            allocator_api2::vec::Vec::new_in(&temp);
        for i in 0..300 {
            v.push(i);
        }
        assert_eq!(v.iter().sum::<u64>(), 299 * 300 / 2);
        assert_eq!(v.as_ptr() as usize % 64, 0);
        assert_eq!(
            temp.fallback_count(),
            0,
            "growing to 2400 bytes in place fits in 4 KiB (by copying, the doublings spilled)"
        );
        for i in 300..1000 {
            v.push(i);
        }
        assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
        assert!(temp.fallback_count() > 0, "8000 bytes spill out of 4 KiB");
    }
    temp.end_frame();
    assert_eq!(temp.used(), 0);
}

// ---------------------------------------------------------------- TempJob

fn tempjob_spec() -> Spec {
    Spec {
        min_align: 16,
        ..Spec::new("TempJob")
    }
}

#[test]
fn tempjob_conformance_bounded_pool() {
    conformance::check(&tempjob_spec(), || bounded_job(16 << 10));
}

#[test]
fn tempjob_conformance_with_overflow() {
    let spec = Spec {
        bounded: false,
        ..tempjob_spec()
    };
    conformance::check(&spec, || {
        TempJob::new(2048)
            .unwrap()
            // Practically unbounded, but the suite's impossible request must
            // be refused before the heap sees it: under Miri a huge
            // allocation aborts the interpreter instead of failing.
            .with_overflow_limit(1 << 30)
            .on_leak(|_| {})
    });
}

#[test]
fn tempjob_warns_once_exactly_after_four_frames() {
    let (seen, hook) = recorder();
    let mut job = TempJob::new(4096).unwrap().on_leak(hook);
    let old = job.alloc(40, 8).unwrap();
    assert!(job.end_frame().is_empty()); // frame 1
    let young = job.alloc(24, 32).unwrap();
    for frame in 2..=4 {
        assert!(job.end_frame().is_empty(), "no warning at frame {frame}");
    }
    // `old` was made in frame 0: at frame 5 it is more than 4 frames old.
    let w = job.end_frame();
    assert_eq!(job.frame(), 5);
    assert_eq!(
        w,
        vec![Overdue {
            address: old.as_ptr() as usize,
            size: 40,
            frame: 0,
            age: 5
        }]
    );
    assert!(w[0].to_string().contains("5 frames old"));
    // `young` (frame 1) at frame 6; `old` is not reported again.
    let w = job.end_frame();
    assert_eq!(
        w,
        vec![Overdue {
            address: young.as_ptr() as usize,
            size: 24,
            frame: 1,
            age: 5
        }]
    );
    assert!(job.end_frame().is_empty());
    // Overdue blocks stay valid and must still be freed.
    // SAFETY: 40 live bytes.
    unsafe { old.as_ptr().write_bytes(1, 40) };
    // SAFETY: both came from `job` and are live.
    unsafe {
        job.dealloc(old).unwrap();
        job.dealloc(young).unwrap();
    }
    assert!(job.end_frame().is_empty());
    assert_eq!(job.used(), 0);
    drop(job);
    assert_eq!(
        *seen.lock().unwrap(),
        None,
        "nothing leaked, nothing reported"
    );
}

#[test]
fn tempjob_freed_in_time_is_never_reported() {
    let mut job = TempJob::new(4096).unwrap();
    let p = job.alloc(100, 16).unwrap();
    for _ in 0..4 {
        assert!(job.end_frame().is_empty());
    }
    // SAFETY: live block of `job`.
    unsafe { job.dealloc(p).unwrap() };
    for _ in 0..6 {
        assert!(job.end_frame().is_empty());
    }
}

#[test]
fn tempjob_overflow_blocks_age_too() {
    let mut job = TempJob::new(64).unwrap();
    let spill = job.alloc(1000, 8).unwrap();
    assert!(!job.owns(spill.as_ptr()));
    assert_eq!(job.overflow_count(), 1);
    for _ in 0..4 {
        assert!(job.end_frame().is_empty());
    }
    let w = job.end_frame();
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].address, w[0].size, w[0].frame),
        (spill.as_ptr() as usize, 1000, 0)
    );
    // SAFETY: live overflow block of `job`.
    unsafe { job.dealloc(spill).unwrap() };
    assert_eq!(job.leaks().allocations, 0);
}

#[test]
fn tempjob_leaks_are_reported_on_drop() {
    let (seen, hook) = recorder();
    let mut job = TempJob::new(256).unwrap().on_leak(hook);
    let a = job.alloc(10, 8).unwrap();
    let b = job.alloc(20, 64).unwrap();
    let freed = job.alloc(30, 8).unwrap();
    let spill = job.alloc(500, 8).unwrap(); // overflow
    job.end_frame();
    // SAFETY: live block of `job`.
    unsafe { job.dealloc(freed).unwrap() };
    drop(job);
    let report = seen.lock().unwrap().take().expect("a leak report on drop");
    assert_eq!(report.allocator, "TempJob");
    assert_eq!(report.allocations, 3);
    assert_eq!(report.bytes, 10 + 20 + 500);
    let mut got: Vec<(usize, usize)> = report.leaks.iter().map(|l| (l.address, l.size)).collect();
    got.sort_unstable();
    let mut want = vec![
        (a.as_ptr() as usize, 10),
        (b.as_ptr() as usize, 20),
        (spill.as_ptr() as usize, 500),
    ];
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(report.leaks.iter().all(|l| l.frame == 0));
    assert!(
        report
            .to_string()
            .starts_with("TempJob: 3 allocation(s), 530 byte(s) leaked")
    );
}

#[test]
fn tempjob_pool_starts_over_only_when_everything_is_free() {
    let mut job = TempJob::new(1024).unwrap();
    let a = job.alloc(100, 8).unwrap();
    let b = job.alloc(100, 8).unwrap();
    assert_eq!(job.used(), 2 * (16 + 112));
    // SAFETY: live block.
    unsafe { job.dealloc(a).unwrap() };
    job.end_frame();
    assert_eq!(job.used(), 256, "`b` is live: the pool is pinned");
    // SAFETY: live block.
    unsafe { job.dealloc(b).unwrap() };
    job.end_frame();
    assert_eq!(job.used(), 0);
    assert_eq!(
        job.alloc(100, 8).unwrap(),
        a,
        "the pool starts over at its first block"
    );
}

#[test]
fn tempjob_full_pool_overflows_and_counts_it() {
    let mut job = TempJob::new(256).unwrap();
    let mut pool = Vec::new();
    while let Ok(p) = job.try_alloc(48, 16) {
        pool.push(p);
    }
    assert_eq!(
        pool.len(),
        4,
        "each 48-byte block takes 64 bytes with its record"
    );
    assert_eq!(job.overflow_count(), 0);
    let spill = job.alloc(48, 16).unwrap();
    assert!(!job.owns(spill.as_ptr()));
    assert_eq!(job.overflow_count(), 1);
    // SAFETY: every block is live and freed once.
    unsafe {
        job.dealloc(spill).unwrap();
        for p in pool {
            job.dealloc(p).unwrap();
        }
    }
    assert!(job.end_frame().is_empty());
    assert_eq!(job.used(), 0);
}

#[test]
fn tempjob_bad_frees_are_clear_errors() {
    let job = TempJob::new(1024).unwrap();
    let p = job.alloc(32, 8).unwrap();
    // SAFETY: live block, then the same block again (detected).
    unsafe {
        job.dealloc(p).unwrap();
        assert_eq!(job.dealloc(p), Err(AllocError::DoubleFree));
    }
    let mut local = 0u64;
    let foreign = NonNull::from(&mut local).cast::<u8>();
    // SAFETY: a pointer outside the pool is only looked up, never touched.
    let outside = unsafe { job.dealloc(foreign) };
    assert_eq!(outside, Err(AllocError::ForeignPointer));
    // SAFETY: inside the pool, but not on a 16-byte boundary: refused unread.
    let unaligned = unsafe { job.dealloc(p.add(3)) };
    assert_eq!(unaligned, Err(AllocError::ForeignPointer));
}

#[test]
fn tempjob_bad_input_is_a_clear_error() {
    let job = TempJob::new(1024).unwrap().with_overflow_limit(4096);
    assert_eq!(job.alloc(0, 8), Err(AllocError::ZeroSize));
    assert_eq!(
        job.alloc(8, 12),
        Err(AllocError::BadAlignment { align: 12 })
    );
    assert!(matches!(
        job.alloc(8192, 8),
        Err(AllocError::OutOfMemory {
            requested: 8192,
            ..
        })
    ));
    assert!(matches!(
        job.alloc(usize::MAX, 8),
        Err(AllocError::TooLarge { .. })
    ));
    assert_eq!(job.used(), 0);
    assert_eq!(job.overflow_count(), 0);
    assert!(matches!(
        TempJob::new(16),
        Err(AllocError::InvalidConfig {
            field: allocasm::ConfigField::Capacity,
            value: 16,
            ..
        })
    ));
    assert!(matches!(
        TempJob::new(usize::MAX),
        Err(AllocError::TooLarge { .. })
    ));
}

#[test]
fn tempjob_threads_allocate_without_overlap() {
    let (threads, count) = threads_and_count();
    let mut job = TempJob::new(threads * count * 96).unwrap();
    let blocks: Vec<Vec<(Block, usize)>> = std::thread::scope(|s| {
        let job = &job;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..count {
                        let size = 1 + (i * 7 + t * 13) % 64;
                        let align = if i % 5 == 0 { 64 } else { 16 };
                        let p = job.alloc(size, align).unwrap();
                        assert_eq!(p.as_ptr() as usize % align, 0);
                        fill_pattern(p, size, t);
                        mine.push((p, size));
                    }
                    for &(p, size) in &mine {
                        check_pattern(p, size, t);
                    }
                    mine.iter().map(|&(p, size)| (Block(p), size)).collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_disjoint(
        blocks
            .iter()
            .flatten()
            .map(|(b, n)| (b.0.as_ptr() as usize, b.0.as_ptr() as usize + n))
            .collect(),
    );
    assert_eq!(job.leaks().allocations, threads * count);
    // Free from other threads than the ones that allocated: freeing thread
    // `t` takes the blocks of allocating thread `t + 1`.
    std::thread::scope(|s| {
        let job = &job;
        let blocks = &blocks;
        for t in 0..threads {
            s.spawn(move || {
                let owner = (t + 1) % threads;
                for (b, size) in &blocks[owner] {
                    let p = b.0;
                    check_pattern(p, *size, owner);
                    // SAFETY: a live block of `job`, freed once.
                    unsafe { job.dealloc(p).unwrap() };
                }
            });
        }
    });
    assert!(job.end_frame().is_empty());
    assert_eq!(job.used(), 0);
}

// ---------------------------------------------------------------- Persistent

/// A base for `Persistent` in tests: the page allocator, plus what a real
/// base (`SegregatedFit`) does that the bare page allocator does not:
/// - it owns its memory: blocks still live when it is dropped are released
///   (the conformance suite does not free every block it makes, and Miri
///   reports those as leaks otherwise);
/// - it refuses (as an OS would, with `ENOMEM`) requests over 1 GiB: under
///   Miri a huge mapping aborts the interpreter instead of failing.
#[derive(Default)]
struct OwningPages {
    live: Mutex<Vec<(Block, Layout)>>,
}

// SAFETY: blocks come from the page allocator, which upholds the contract;
// they are released on `deallocate` or when the base is dropped.
unsafe impl RawAllocator for OwningPages {
    const FREES_INDIVIDUALLY: bool = true;

    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() > 1 << 30 {
            return Err(AllocError::Os { code: 12 });
        }
        let block = PageAllocator::new().allocate(layout)?;
        self.live
            .lock()
            .unwrap()
            .push((Block(block.cast()), layout));
        Ok(block)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let mut live = self.live.lock().unwrap();
        let i = live
            .iter()
            .position(|(b, _)| b.0 == ptr)
            .expect("a live block of this base");
        live.swap_remove(i);
        // SAFETY: forwarded: `ptr` came from `PageAllocator::allocate(layout)`.
        unsafe { PageAllocator::new().deallocate(ptr, layout) }
    }
}

impl Drop for OwningPages {
    fn drop(&mut self) {
        for (b, layout) in self.live.get_mut().unwrap().drain(..) {
            // SAFETY: still live, from `PageAllocator::allocate(layout)`.
            unsafe { PageAllocator::new().deallocate(b.0, layout) };
        }
    }
}

#[test]
fn persistent_conformance() {
    let spec = Spec {
        min_align: 16,
        bounded: false,
        // Every block is its own mapping: whether a freed address comes
        // back is the OS's choice (qemu-user's mmap does not reuse them).
        reuses_addresses: false,
        ..Spec::new("Persistent")
    };
    conformance::check(&spec, || {
        Persistent::with_leak_detection(OwningPages::default(), LeakDetection::Enabled)
            .on_leak(|_| {})
    });
}

/// Over `SegregatedFit` without counting, as a release build makes it by
/// default: the same contract.
#[test]
fn persistent_over_segregated_fit_conformance() {
    let spec = Spec {
        min_align: 16,
        bounded: false,
        ..Spec::new("Persistent<SegregatedFit>")
    };
    conformance::check(&spec, || {
        Persistent::with_leak_detection(SegregatedFit::new(), LeakDetection::Disabled)
    });
}

/// A counting `Persistent` over the page allocator whose leak reports go to
/// a recorder.
fn counting_persistent() -> (Arc<Mutex<Option<LeakReport>>>, Persistent<PageAllocator>) {
    let (seen, hook) = recorder();
    let p =
        Persistent::with_leak_detection(PageAllocator::new(), LeakDetection::Enabled).on_leak(hook);
    (seen, p)
}

#[test]
fn persistent_counts_and_reports_leaks_on_drop() {
    let (seen, p) = counting_persistent();
    assert_eq!(p.leak_detection(), LeakDetection::Enabled);
    let a = p.alloc(100, 1).unwrap();
    let b = p.alloc(50, 64).unwrap();
    assert_eq!(a.as_ptr() as usize % 16, 0);
    assert_eq!(b.as_ptr() as usize % 64, 0);
    assert_eq!((p.live_allocations(), p.live_bytes()), (2, 150));
    // SAFETY: `a` came from `alloc(100, 1)`.
    unsafe { p.dealloc(a, 100, 1) };
    assert_eq!((p.live_allocations(), p.live_bytes()), (1, 50));
    drop(p);
    let report = seen.lock().unwrap().take().expect("a leak report on drop");
    assert_eq!(
        (report.allocator, report.allocations, report.bytes),
        ("Persistent", 1, 50)
    );
    // The test leaked `b` on purpose; give its pages back.
    // SAFETY: `b` is a live PageAllocator block of 50 bytes.
    unsafe { PageAllocator::new().dealloc(b, 50) };

    let (seen, p) = counting_persistent();
    let c = p.alloc(8, 8).unwrap();
    // SAFETY: `c` came from `alloc(8, 8)`.
    unsafe { p.dealloc(c, 8, 8) };
    drop(p);
    assert_eq!(
        *seen.lock().unwrap(),
        None,
        "nothing live, nothing reported"
    );
}

/// Several threads allocate and free at once, some blocks are freed by a
/// thread other than the one that made them, and the counts and the drop's
/// report are exact.
#[test]
fn persistent_counts_exactly_from_several_threads() {
    let (threads, count) = threads_and_count();
    let (seen, p) = counting_persistent();
    // Each thread keeps every other block it makes; sizes 1..=count vary
    // the bytes per block.
    let kept: Vec<Vec<(Block, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let p = &p;
                s.spawn(move || {
                    let mut kept = Vec::new();
                    for i in 1..=count {
                        let size = i + t;
                        let b = p.alloc(size, 8).unwrap();
                        fill_pattern(b, size, t);
                        if i % 2 == 0 {
                            kept.push((Block(b), size));
                        } else {
                            check_pattern(b, size, t);
                            // SAFETY: `b` came from `alloc(size, 8)` just now.
                            unsafe { p.dealloc(b, size, 8) };
                        }
                    }
                    kept
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let blocks: usize = kept.iter().map(Vec::len).sum();
    let bytes: usize = kept.iter().flatten().map(|(_, size)| size).sum();
    assert_eq!(blocks, threads * (count / 2));
    assert_eq!((p.live_allocations(), p.live_bytes()), (blocks, bytes));
    // New threads free the kept blocks but each list's first: every block
    // freed on a thread other than the one that made it.
    let mut leaked = Vec::new();
    std::thread::scope(|s| {
        for (t, mut mine) in kept.into_iter().enumerate() {
            leaked.push(mine.remove(0));
            let p = &p;
            s.spawn(move || {
                for (b, size) in mine {
                    check_pattern(b.0, size, t);
                    // SAFETY: `b` came from `alloc(size, 8)` and is live.
                    unsafe { p.dealloc(b.0, size, 8) };
                }
            });
        }
    });
    let leaked_bytes: usize = leaked.iter().map(|(_, size)| size).sum();
    assert_eq!(
        (p.live_allocations(), p.live_bytes()),
        (threads, leaked_bytes)
    );
    drop(p);
    let report = seen.lock().unwrap().take().expect("a leak report on drop");
    assert_eq!(
        (report.allocator, report.allocations, report.bytes),
        ("Persistent", threads, leaked_bytes)
    );
    for (b, size) in leaked {
        // SAFETY: a live PageAllocator block of `size` bytes, leaked above.
        unsafe { PageAllocator::new().dealloc(b.0, size) };
    }
}

/// Without leak detection nothing is counted and the drop reports nothing,
/// even with a block still live.
#[test]
fn persistent_without_leak_detection_counts_and_reports_nothing() {
    let (seen, hook) = recorder();
    let p = Persistent::with_leak_detection(PageAllocator::new(), LeakDetection::Disabled)
        .on_leak(hook);
    assert_eq!(p.leak_detection(), LeakDetection::Disabled);
    let a = p.alloc(100, 1).unwrap();
    let b = p.alloc(50, 64).unwrap();
    assert_eq!(a.as_ptr() as usize % 16, 0);
    assert_eq!(b.as_ptr() as usize % 64, 0);
    assert_eq!((p.live_allocations(), p.live_bytes()), (0, 0));
    // SAFETY: `a` came from `alloc(100, 1)`.
    unsafe { p.dealloc(a, 100, 1) };
    assert_eq!((p.live_allocations(), p.live_bytes()), (0, 0));
    assert_eq!(p.leaks().allocations, 0);
    drop(p);
    assert_eq!(
        *seen.lock().unwrap(),
        None,
        "nothing counted, nothing reported"
    );
    // SAFETY: `b` is a live PageAllocator block of 50 bytes.
    unsafe { PageAllocator::new().dealloc(b, 50) };
}

/// The constructors without a mode take the build's default: counting with
/// debug assertions, not without.
#[test]
fn persistent_default_leak_detection_follows_the_build() {
    let expected = if cfg!(debug_assertions) {
        LeakDetection::Enabled
    } else {
        LeakDetection::Disabled
    };
    assert_eq!(LeakDetection::default(), expected);
    assert_eq!(Persistent::new().leak_detection(), expected);
    let p = Persistent::with_base(PageAllocator::new()).on_leak(|_| {});
    assert_eq!(p.leak_detection(), expected);
    let b = p.alloc(24, 8).unwrap();
    let counted = usize::from(expected == LeakDetection::Enabled);
    assert_eq!(
        (p.live_allocations(), p.live_bytes()),
        (counted, 24 * counted)
    );
    // SAFETY: `b` came from `alloc(24, 8)`.
    unsafe { p.dealloc(b, 24, 8) };
}

#[test]
fn persistent_bad_input_is_a_clear_error() {
    let p = Persistent::with_base(PageAllocator::new());
    assert_eq!(p.alloc(0, 16), Err(AllocError::ZeroSize));
    assert_eq!(p.alloc(16, 5), Err(AllocError::BadAlignment { align: 5 }));
    assert!(matches!(
        p.alloc(usize::MAX, 16),
        Err(AllocError::TooLarge { .. })
    ));
    if !cfg!(miri) && usize::BITS >= 64 {
        // The OS refuses; under Miri a huge mapping aborts the interpreter,
        // and on 32-bit targets half the address space may well be granted.
        let huge = p.alloc(isize::MAX as usize / 2, 16);
        assert!(matches!(huge, Err(AllocError::Os { .. })), "{huge:?}");
    }
    assert_eq!(p.live_allocations(), 0);
}

// ---------------------------------------------------------------- Rewindable

fn rewindable_spec() -> Spec {
    Spec {
        min_align: 64,
        bounded: false,
        ..Spec::new("Rewindable")
    }
}

#[test]
fn rewindable_conformance() {
    conformance::check(&rewindable_spec(), || {
        Rewindable::new(4096, 16 << 10).unwrap()
    });
}

#[test]
fn rewindable_conformance_rewind() {
    let r = Rewindable::new(1024, 8192).unwrap();
    conformance::check_reset(&rewindable_spec(), r, |r| r.rewind());
}

#[test]
fn rewindable_blocks_double_then_grow_linearly() {
    let r = Rewindable::new(1024, 4096).unwrap();
    assert_eq!(r.block_sizes(), vec![1024]);
    for _ in 0..(1 + 2 + 4 + 4 + 4) {
        r.alloc(1024, 64).unwrap();
    }
    assert_eq!(r.block_sizes(), vec![1024, 2048, 4096, 4096, 4096]);
    assert_eq!(r.used(), 15 * 1024);
    // A request larger than the next size skips ahead, capped at the max.
    let r = Rewindable::new(1024, 1 << 16).unwrap();
    r.alloc(512, 64).unwrap();
    r.alloc(5000, 64).unwrap();
    assert_eq!(r.block_sizes(), vec![1024, 8192]);
}

#[test]
fn rewind_keeps_used_blocks_and_releases_the_rest() {
    let mut r = Rewindable::new(1024, 4096).unwrap();
    for _ in 0..15 {
        r.alloc(1024, 64).unwrap();
    }
    assert_eq!(r.block_sizes(), vec![1024, 2048, 4096, 4096, 4096]);
    r.rewind();
    assert_eq!(
        r.block_sizes(),
        vec![1024, 2048, 4096, 4096, 4096],
        "all five were used"
    );
    assert_eq!(r.used(), 0);
    // Use only the first two blocks this time; the first block is reused.
    let first = r.alloc(1024, 64).unwrap();
    for _ in 0..2 {
        r.alloc(1024, 64).unwrap();
    }
    r.rewind();
    assert_eq!(
        r.block_sizes(),
        vec![1024, 2048],
        "the three unused blocks are released"
    );
    assert_eq!(
        r.alloc(1024, 64).unwrap(),
        first,
        "after a rewind the first block starts over"
    );
    // Growth resumes from the last kept block.
    for _ in 0..(2 + 4) {
        r.alloc(1024, 64).unwrap();
    }
    assert_eq!(r.block_sizes(), vec![1024, 2048, 4096]);
    // An unused allocator keeps its first block.
    let mut idle = Rewindable::new(1024, 4096).unwrap();
    idle.rewind();
    assert_eq!(idle.block_sizes(), vec![1024]);
}

#[test]
fn rewind_makes_handles_stale() {
    let mut r = Rewindable::new(1024, 4096).unwrap();
    let other = Rewindable::new(1024, 4096).unwrap();
    let h = r.alloc_handle(100, 8).unwrap();
    let p = r.get(h).unwrap();
    assert_eq!(p.as_ptr() as usize % 64, 0);
    assert_eq!(h.version(), 0);
    assert_eq!(
        other.get(h),
        Err(AllocError::BadMarker),
        "a handle from another allocator"
    );
    r.rewind();
    assert_eq!(r.version(), 1);
    assert_eq!(r.get(h), Err(AllocError::BadMarker));
    let h2 = r.alloc_handle(100, 8).unwrap();
    assert_eq!(r.get(h2), Ok(p), "same address, new version");
    assert_eq!(h2.version(), 1);
}

#[test]
fn rewindable_bad_input_is_a_clear_error() {
    let r = Rewindable::new(1024, 4096).unwrap();
    assert_eq!(r.alloc(0, 8), Err(AllocError::ZeroSize));
    assert_eq!(
        r.alloc(8, 100),
        Err(AllocError::BadAlignment { align: 100 })
    );
    assert_eq!(
        r.alloc(4097, 8),
        Err(AllocError::TooLarge {
            requested: 4097,
            max: 4096
        })
    );
    assert_eq!(
        r.alloc(4000, 256),
        Err(AllocError::TooLarge {
            requested: 4000,
            max: 4096
        })
    );
    assert!(matches!(
        r.alloc(usize::MAX, 8),
        Err(AllocError::TooLarge { .. })
    ));
    assert!(matches!(
        r.try_alloc(2048, 64),
        Err(AllocError::OutOfMemory { .. })
    ));
    assert_eq!(r.block_sizes(), vec![1024], "refused requests add no block");
    assert_eq!(
        r.alloc(4096, 64).unwrap().as_ptr() as usize % 64,
        0,
        "exactly the max fits"
    );
    assert!(matches!(
        Rewindable::new(0, 4096),
        Err(AllocError::InvalidConfig {
            field: allocasm::ConfigField::InitialBlock,
            ..
        })
    ));
    assert!(matches!(
        Rewindable::new(8192, 4096),
        Err(AllocError::InvalidConfig {
            field: allocasm::ConfigField::MaxBlock,
            value: 4096,
            ..
        })
    ));
}

#[test]
fn rewindable_threads_allocate_without_overlap() {
    let (threads, count) = threads_and_count();
    let mut r = Rewindable::new(1024, 8192).unwrap();
    for round in 0..2u64 {
        let blocks: Vec<(usize, usize)> = std::thread::scope(|s| {
            let r = &r;
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        for i in 0..count {
                            let size = 1 + (i * 11 + t * 5) % 200;
                            let align = if i % 7 == 0 { 256 } else { 8 };
                            let p = r.alloc(size, align).unwrap();
                            assert_eq!(p.as_ptr() as usize % align.max(64), 0);
                            fill_pattern(p, size, t);
                            mine.push((p, size));
                        }
                        for &(p, size) in &mine {
                            check_pattern(p, size, t);
                        }
                        mine.iter()
                            .map(|&(p, size)| (p.as_ptr() as usize, size))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_eq!(blocks.len(), threads * count);
        assert_disjoint(blocks.iter().map(|&(a, n)| (a, a + n)).collect());
        assert!(
            r.block_sizes().len() > 1,
            "round {round}: the allocator grew"
        );
        r.rewind();
        assert_eq!(r.version(), round + 1);
    }
}

/// The schedule (on armv7 it wrapped the offset to 0 and handed out
/// the live block): one block of 64 KiB filled by one allocation, then 65,535
/// requests of the whole block that fail, then a small one. The small one
/// must fail too, not land on the live block. On 64-bit targets the wrap
/// needs 2^34 failures; `rewindable::tests` checks there that the offset
/// does not move at all.
#[test]
fn rewindable_repeated_failures_never_reach_a_live_block() {
    let r = Rewindable::new(65536, 65536).unwrap();
    let live = r.alloc(65536, 64).unwrap();
    let n = if cfg!(miri) { 64 } else { 65535 };
    for i in 0..n {
        assert!(
            matches!(r.try_alloc(65536, 64), Err(AllocError::OutOfMemory { .. })),
            "failure {i}"
        );
    }
    match r.try_alloc(64, 64) {
        Err(AllocError::OutOfMemory { .. }) => {}
        other => panic!(
            "a full block served a request after {n} failures: {other:?} (live block at {live:p})"
        ),
    }
}

/// The same schedule for TempJob (its pre-check already prevented it).
#[test]
fn tempjob_repeated_failures_never_reach_a_live_block() {
    let job = bounded_job(65536);
    let live = job.try_alloc(65536 - 16, 16).unwrap();
    let n = if cfg!(miri) { 64 } else { 65535 };
    for _ in 0..n {
        assert!(job.try_alloc(65536 - 16, 16).is_err());
    }
    assert!(job.try_alloc(16, 16).is_err(), "live block at {live:p}");
    // SAFETY: `live` came from `job` and is freed once.
    unsafe { job.dealloc(live).unwrap() };
}

/// Unity's default sizes can be built on every target (on 32-bit ones
/// `MAX_CAPACITY` was about 4 MiB, so none of these could).
#[test]
fn unity_default_sizes_are_constructible() {
    let job = TempJob::new(TempJob::DEFAULT_CAPACITY)
        .unwrap()
        .on_leak(|_| {});
    assert_eq!(job.capacity(), TempJob::DEFAULT_CAPACITY);
    let small = TempJob::new(TempJob::SMALL_CAPACITY)
        .unwrap()
        .on_leak(|_| {});
    assert_eq!(small.capacity(), TempJob::SMALL_CAPACITY);
    let r = Rewindable::new(
        Rewindable::DEFAULT_INITIAL_BLOCK,
        Rewindable::DEFAULT_MAX_BLOCK,
    )
    .unwrap();
    assert_eq!(r.max_block(), Rewindable::DEFAULT_MAX_BLOCK);
    // A request larger than the fast path's fetch_add bound (32-bit targets
    // reserve it with a compare-and-swap) is still served, and disjoint.
    let big = allocasm::unity::MAX_FAST_RESERVE.min(TempJob::DEFAULT_CAPACITY / 4) + 1;
    let a = job.try_alloc(big, 16).unwrap();
    let b = job.try_alloc(16, 16).unwrap();
    assert!(
        b.as_ptr() as usize >= a.as_ptr() as usize + big
            || (b.as_ptr() as usize) < a.as_ptr() as usize
    );
    let c = r.alloc(big, 64).unwrap();
    let d = r.alloc(64, 64).unwrap();
    assert_ne!(c, d);
    let temp = Temp::new(Temp::<&TempJob>::EDITOR_MAIN_THREAD_CAPACITY, &job).unwrap();
    assert!(temp.try_alloc(64, 64).is_ok());
}

/// Unity writes a warning for an allocation older than 4 frames: the hook
/// gets it once per allocation (pool and overflow), however many frames
/// pass.
#[test]
fn tempjob_warns_once_per_overdue_allocation_through_the_hook() {
    let seen: Arc<Mutex<Vec<Overdue>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let mut job = TempJob::new(4096)
        .unwrap()
        .on_leak(|_| {})
        .on_overdue(move |o| sink.lock().unwrap().push(*o));
    let pool = job.alloc(100, 8).unwrap();
    let overflow = job.alloc(8192, 8).unwrap();
    assert!(!job.owns(overflow.as_ptr()));
    for _ in 0..4 {
        job.end_frame();
    }
    assert!(seen.lock().unwrap().is_empty(), "4 frames old is in time");
    let returned = job.end_frame();
    for _ in 0..10 {
        job.end_frame();
    }
    let seen = seen.lock().unwrap().clone();
    let mut addresses: Vec<usize> = seen.iter().map(|o| o.address).collect();
    addresses.sort_unstable();
    let mut want = vec![pool.as_ptr() as usize, overflow.as_ptr() as usize];
    want.sort_unstable();
    assert_eq!(
        addresses, want,
        "each overdue allocation warned exactly once"
    );
    assert_eq!(returned, seen, "end_frame returns what it warned about");
    assert!(seen.iter().all(|o| o.age == 5 && o.frame == 0));
    // SAFETY: both blocks came from `job` and are freed once.
    unsafe {
        job.dealloc(pool).unwrap();
        job.dealloc(overflow).unwrap();
    }
}

/// One long-lived block no longer pins the whole pool: after the blocks
/// allocated behind it are freed, the end of frame rolls the pool back to
/// the long-lived block's end and later requests are served from the pool,
/// not the overflow. And the end of frame looks only at what changed, not at
/// every block made since the pool was last empty.
#[test]
fn tempjob_cost_is_proportional_to_what_changed() {
    let mut job = TempJob::new(1 << 16).unwrap().on_leak(|_| {});
    let long_lived = job.alloc(48, 16).unwrap();
    let n = if cfg!(miri) { 50 } else { 1000 };
    for _ in 0..3 {
        let short: Vec<_> = (0..n).map(|_| job.alloc(32, 16).unwrap()).collect();
        let overflowed = job.overflow_count();
        for p in short {
            // SAFETY: each came from `job` and is freed once.
            unsafe { job.dealloc(p).unwrap() };
        }
        job.end_frame();
        assert_eq!(
            job.used(),
            64,
            "the pool rolls back to the end of the long-lived block"
        );
        assert_eq!(job.overflow_count(), overflowed);
    }
    // Fill the pool: still no overflow (before, the long-lived block pinned
    // the pool at its high-water mark and these overflowed).
    let fill = (job.capacity() - 64) / 48;
    let again: Vec<_> = (0..fill).map(|_| job.alloc(32, 16).unwrap()).collect();
    assert_eq!(job.overflow_count(), 0, "served from the pool");
    for p in again {
        // SAFETY: as above.
        unsafe { job.dealloc(p).unwrap() };
    }
    job.end_frame();
    // A frame in which nothing changed looks at the one live block only.
    job.end_frame();
    assert_eq!(
        job.end_frame_visits(),
        1,
        "only the live block was looked at"
    );
    // SAFETY: from `job`, freed once.
    unsafe { job.dealloc(long_lived).unwrap() };
    job.end_frame();
    assert_eq!(job.used(), 0);
}
