//! `SegregatedFit`: conformance, size classes, growth, batch free, bad input.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashSet;
use std::ptr::NonNull;

use allocasm::segregated::SizeClass;
use allocasm::{AllocError, PageAllocator, RawAllocator, SegregatedFit};

use crate::conformance::{self, Spec};

fn spec(name: &'static str, max_size: usize) -> Spec {
    Spec {
        max_align: if cfg!(miri) { 8192 } else { 1 << 16 },
        max_size,
        bounded: false,
        ..Spec::new(name)
    }
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

#[test]
fn conformance_small_requests() {
    conformance::check(&spec("SegregatedFit", 512), SegregatedFit::new);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "fills every byte of blocks up to 200 KB: over 13 minutes under Miri; the large path runs there through the large-block tests"
)]
fn conformance_up_to_the_large_path() {
    let max = 200_000;
    conformance::check(&spec("SegregatedFit (large)", max), SegregatedFit::new);
}

#[test]
fn every_fitting_size_maps_to_the_same_class() {
    // `Allocator::deallocate` may be given any size between the request and
    // the returned length: all of them must find the block's class.
    let a = SegregatedFit::new();
    for (size, align) in [
        (1, 1),
        (9, 8),
        (100, 16),
        (1000, 64),
        (5000, 4096),
        (65536, 8),
        (70_000, 8),
    ] {
        let l = layout(size, align);
        let block = a.allocate(l).unwrap();
        let class = SegregatedFit::size_class(size, align);
        for s in [size, (size + block.len()) / 2, block.len()] {
            assert_eq!(
                SegregatedFit::size_class(s, align),
                class,
                "size {s} of a {l:?} block of {}",
                block.len()
            );
        }
        // SAFETY: allocated above; freed with a fitting size.
        unsafe { a.deallocate(block.cast(), layout(block.len(), align)) };
    }
}

#[test]
fn try_alloc_never_grows() {
    let a = SegregatedFit::new();
    let l = layout(24, 8);
    let class = SegregatedFit::size_class(24, 8).unwrap();
    assert_eq!(
        a.try_alloc(l),
        Err(AllocError::OutOfMemory {
            requested: 24,
            available: 0
        })
    );
    assert_eq!(a.span_count(class), 0, "try_alloc must not grow");
    let p = a.alloc(l).unwrap();
    assert_eq!(a.span_count(class), 1);
    let q = a
        .try_alloc(l)
        .expect("the span grown by alloc has more blocks");
    assert_ne!(p, q);
    assert!(
        a.try_alloc(layout(100_000, 8)).is_err(),
        "the large path is never a try"
    );
    // SAFETY: both allocated above with `l`.
    unsafe {
        a.dealloc(p, l);
        a.dealloc(q, l);
    }
    assert_eq!(a.try_alloc(layout(0, 8)), Err(AllocError::ZeroSize));
}

/// Pops every block of a class without growing.
fn take_all(a: &SegregatedFit, l: Layout) -> Vec<NonNull<u8>> {
    std::iter::from_fn(|| a.try_alloc(l).ok()).collect()
}

#[test]
fn growth_cuts_one_exact_span_and_batch_free_returns_every_block() {
    let a = SegregatedFit::new();
    let l = layout(64, 8);
    let class = SegregatedFit::size_class(64, 8).unwrap();
    let per_span = SegregatedFit::blocks_per_span(class);
    let pages = PageAllocator::new();
    // The span is a power of two of at least 16 KiB (8 blocks of 64 bytes
    // are less than that minimum) and of the base allocator's granularity;
    // the 48-byte header (and in debug builds a bit per block) takes the
    // tail, blocks start at the base and fill the rest but for less than a
    // block.
    let len = SegregatedFit::span_len(class);
    assert!(
        len.is_power_of_two()
            && len >= 16 * 1024
            && len >= allocasm::PageAllocator::new().granularity()
    );
    let tail = len - per_span * 64 - 48;
    assert!(
        tail < 64 + per_span.div_ceil(64) * 8,
        "{len}-byte span, {per_span} blocks: {tail} bytes unused"
    );

    let first = a.alloc(l).unwrap();
    let mut all = take_all(&a, l);
    all.push(first);
    assert_eq!(
        all.len(),
        per_span,
        "one growth, every block of the span, none lost"
    );
    assert_eq!(a.span_count(class), 1);
    let base = all.iter().map(|p| p.as_ptr() as usize).min().unwrap();
    assert_eq!(
        base % pages.page_size(),
        0,
        "the first block sits on the span's page-aligned base"
    );
    let distinct: HashSet<usize> = all.iter().map(|p| p.as_ptr() as usize).collect();
    assert_eq!(distinct.len(), per_span);
    assert!(all.iter().all(|&p| a.owns(p, l)));

    // Free them all with one publish, then they all come back.
    // SAFETY: live blocks of this class, each once.
    let (head, tail) = unsafe { SegregatedFit::link_batch(all.iter().copied()) }.unwrap();
    // SAFETY: the chain just linked.
    unsafe { a.dealloc_batch(head, tail, class) };
    let again = take_all(&a, l);
    assert_eq!(
        again
            .iter()
            .map(|p| p.as_ptr() as usize)
            .collect::<HashSet<_>>(),
        distinct
    );
    assert_eq!(
        a.span_count(class),
        1,
        "batch free and re-use without growth"
    );
    for p in again {
        // SAFETY: popped above with `l`.
        unsafe { a.dealloc(p, l) };
    }
}

/// Four threads race the first allocation of one class on each of many
/// fresh heaps (the heap mapped, the span region not yet reserved). A
/// consumer that read the region's base before the first growth and the
/// queue's front after it dereferenced `handle * 8`, a few KiB above 0:
/// before the fix this crashed (SIGSEGV) in most runs of 5000 heaps on a
/// loaded 2-core machine; the deterministic form is the unit test
/// `segregated::tests::a_pop_racing_the_first_growth_reads_the_base_after_the_front`.
#[test]
fn first_allocations_of_fresh_heaps_race_the_first_growth() {
    let l = layout(32, 8);
    let big = layout(256 * 1024, 8);
    // Under qemu-user (`ALLOCASM_RUNNER` set, see scripts/test) a few heaps:
    // qemu 7.2 keeps its page flags for each heap's 32 GiB span reservation
    // after the unmap, about 200 MiB of host memory per heap (2000 heaps
    // were killed for memory past 24 GiB).
    let heaps = if cfg!(miri) {
        2
    } else if std::env::var_os("ALLOCASM_RUNNER").is_some() {
        4
    } else {
        2000
    };
    for _ in 0..heaps {
        let a = SegregatedFit::new();
        // Map the heap without reserving the span region (the large path).
        let p = a.alloc(big).unwrap();
        // SAFETY: allocated above with `big`.
        unsafe { a.dealloc(p, big) };
        let start = std::sync::Barrier::new(4);
        let got: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        a.alloc(l).unwrap().as_ptr() as usize
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for &p in &got {
            assert!(a.owns(NonNull::new(p as *mut u8).unwrap(), l), "{p:#x}");
        }
        assert_eq!(got.iter().collect::<HashSet<_>>().len(), 4);
    }
}

#[test]
fn concurrent_first_allocations_grow_once() {
    let a = SegregatedFit::new();
    let l = layout(40, 8);
    let class = SegregatedFit::size_class(40, 8).unwrap();
    let n = if cfg!(miri) { 3 } else { 20 };
    let got: Vec<Vec<usize>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..n)
                        .map(|_| a.alloc(l).unwrap().as_ptr() as usize)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        a.span_count(class),
        1,
        "the growth lock and the re-check must grow once"
    );
    let all: HashSet<usize> = got.iter().flatten().copied().collect();
    assert_eq!(all.len(), 4 * n, "no block handed out twice");
}

#[test]
fn alignment_up_to_the_class_limit_and_beyond() {
    let a = SegregatedFit::new();
    let mut align = 1;
    while align <= if cfg!(miri) { 1 << 13 } else { 1 << 20 } {
        for size in [1, align / 2 + 1, align, 3 * align + 1, 70_000] {
            let l = layout(size.max(1), align);
            let p = a.alloc(l).unwrap();
            assert_eq!(p.as_ptr() as usize % align, 0, "{l:?}");
            // SAFETY: `size` bytes were allocated.
            unsafe { p.as_ptr().write_bytes(0x5A, size.max(1)) };
            // SAFETY: allocated above with `l`.
            unsafe { a.dealloc(p, l) };
        }
        align *= 2;
    }
}

#[test]
fn bad_input_is_refused() {
    let a = SegregatedFit::new();
    assert_eq!(a.alloc(layout(0, 8)), Err(AllocError::ZeroSize));
    assert_eq!(
        a.allocate_aligned(8, 48).err(),
        Some(AllocError::BadAlignment { align: 48 })
    );
    let max = SegregatedFit::MAX_REQUEST;
    let huge = isize::MAX as usize / 2;
    // On 32-bit targets the limit is `isize::MAX` itself: no valid layout
    // exceeds it, so there is nothing to refuse with TooLarge.
    let cases: &[(usize, usize)] = if usize::BITS >= 64 {
        &[(huge, 8), (huge, 1 << 20), (max + 1, 8), (max + 1, 1 << 20)]
    } else {
        &[]
    };
    for &(size, align) in cases {
        assert_eq!(
            a.alloc(layout(size, align)),
            Err(AllocError::TooLarge {
                requested: size,
                max
            }),
            "{size} bytes aligned to {align} can never be mapped"
        );
    }
    // A request that cannot be served (past the limit) comes back as null.
    // On 32-bit targets every valid layout can be mapped (qemu-arm grants
    // 2 GiB), so there is no such request to make.
    if usize::BITS >= 64 {
        // SAFETY: GlobalAlloc::alloc with a non-zero size.
        let p = unsafe { GlobalAlloc::alloc(&a, layout(isize::MAX as usize / 2, 8)) };
        assert!(p.is_null(), "GlobalAlloc reports failure as null");
    }
}

/// The limit and its message agree: a request of `MAX_REQUEST` bytes or
/// fewer is attempted (the OS refuses 128 TiB: `Os`), one byte more is
/// `TooLarge` naming `MAX_REQUEST`. Before, `MAX_REQUEST` itself and
/// `MAX_REQUEST - 24` were `TooLarge { requested: M, max: M }` ("request of
/// 140737488355328 exceeds this allocator's maximum of 140737488355328": the
/// 32-byte tail header was counted against the limit) and `MAX_REQUEST - 32`
/// was `Os { code: 12 }`.
#[test]
#[cfg(target_pointer_width = "64")]
fn max_request_is_attempted_and_one_byte_more_is_too_large() {
    let a = SegregatedFit::new();
    let max = SegregatedFit::MAX_REQUEST;
    for (size, align) in [(max, 8), (max - 24, 8), (max - 32, 8), (max, 1 << 20)] {
        let l = layout(size, align);
        match a.alloc(l) {
            // An OS that maps 128 TiB: fine too.
            // SAFETY: allocated just above with `l`.
            Ok(p) => unsafe { a.dealloc(p, l) },
            Err(e @ AllocError::TooLarge { .. }) => {
                panic!("{size} bytes (aligned to {align}) is within the maximum, yet: {e}")
            }
            Err(_) => {}
        }
    }
    let e = a.alloc(layout(max + 1, 8)).unwrap_err();
    assert_eq!(
        e,
        AllocError::TooLarge {
            requested: max + 1,
            max
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "request of {} exceeds this allocator's maximum of {max}",
            max + 1
        )
    );
}

/// A free that breaches `dealloc`'s contract where the allocator cannot go
/// on (a large block freed before the allocator ever allocated) aborts
/// with a message, written without allocating: it must not unwind out of
/// `GlobalAlloc::dealloc`. Before, `.expect(..)` panicked (the child caught
/// the unwind and exited with 3).
#[test]
#[cfg(all(unix, not(miri)))]
fn a_free_before_any_allocation_aborts_with_a_message() {
    use std::os::unix::process::ExitStatusExt;
    const TEST: &str = "segregated::a_free_before_any_allocation_aborts_with_a_message";
    if std::env::var_os("ALLOCASM_BREACH_CHILD").is_some() {
        let a = SegregatedFit::new();
        let mut foreign = [0u8; 16];
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: none: the contract breach under test, caught before
            // anything touches `foreign`.
            unsafe { GlobalAlloc::dealloc(&a, foreign.as_mut_ptr(), layout(100_000, 8)) }
        }));
        std::process::exit(if unwound.is_err() { 3 } else { 4 });
    }
    let out = crate::child_output(TEST, || {
        let mut cmd = crate::child_test(TEST);
        cmd.env("ALLOCASM_BREACH_CHILD", "1");
        cmd
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    const SIGABRT: i32 = 6;
    assert_eq!(
        out.status.signal(),
        Some(SIGABRT),
        "the child must abort, got {} with stderr:\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("SegregatedFit: free before any allocation"),
        "the message: {stderr}"
    );
}

#[test]
// The `hardened` feature (on in a workspace build, which unifies the
// malloc crate's features) aborts the process instead: malloc/tests covers it.
#[cfg(all(debug_assertions, not(feature = "hardened")))]
#[should_panic(expected = "foreign pointer")]
fn foreign_pointer_panics_in_debug_builds() {
    let a = SegregatedFit::new();
    let l = layout(16, 8);
    let _mine = a.alloc(l).unwrap();
    let mut foreign = [0u64; 2];
    // SAFETY: not ours: the debug check panics before touching it.
    unsafe { a.dealloc(NonNull::from(&mut foreign).cast(), l) };
}

#[test]
// The `hardened` feature (on in a workspace build, which unifies the
// malloc crate's features) aborts the process instead: malloc/tests covers it.
#[cfg(all(debug_assertions, not(feature = "hardened")))]
#[should_panic(expected = "not a live large block")]
fn large_double_free_panics_in_debug_builds() {
    let a = SegregatedFit::new();
    let l = layout(100_000, 8);
    let p = a.alloc(l).unwrap();
    assert!(a.owns(p, l));
    // SAFETY: allocated above; the second free is the bug under test, caught
    // by the debug check before anything is unmapped twice.
    unsafe {
        a.dealloc(p, l);
        assert!(!a.owns(p, l));
        a.dealloc(p, l);
    }
}

/// Fault 4: the first version caught a double free only when the block
/// was the back of its queue; free A, free B, free A lost B and queued A
/// twice. Debug builds now keep a free bit per block.
#[test]
// The `hardened` feature (on in a workspace build, which unifies the
// malloc crate's features) aborts the process instead: malloc/tests covers it.
#[cfg(all(debug_assertions, not(feature = "hardened")))]
#[should_panic(expected = "double free")]
fn double_free_in_any_order_panics_in_debug_builds() {
    let a = SegregatedFit::new();
    let l = layout(16, 8);
    let p = a.alloc(l).unwrap();
    let q = a.alloc(l).unwrap();
    // SAFETY: allocated above; the third free is the bug under test, caught
    // by the debug check before it touches any list.
    unsafe {
        a.dealloc(p, l);
        a.dealloc(q, l);
        a.dealloc(p, l);
    }
}

/// The same through the shared queue (no thread cache in between).
#[test]
// The `hardened` feature (on in a workspace build, which unifies the
// malloc crate's features) aborts the process instead: malloc/tests covers it.
#[cfg(all(debug_assertions, not(feature = "hardened")))]
#[should_panic(expected = "double free")]
fn double_free_through_the_queue_panics_in_debug_builds() {
    let a = SegregatedFit::new();
    let l = layout(48, 8);
    let p = a.alloc_shared(l).unwrap();
    let q = a.alloc_shared(l).unwrap();
    // SAFETY: as above.
    unsafe {
        a.dealloc_shared(p, l);
        a.dealloc_shared(q, l);
        a.dealloc_shared(p, l);
    }
}

#[test]
// The `hardened` feature (on in a workspace build, which unifies the
// malloc crate's features) aborts the process instead: malloc/tests covers it.
#[cfg(all(debug_assertions, not(feature = "hardened")))]
#[should_panic(expected = "double free")]
fn double_free_of_the_last_freed_block_panics_in_debug_builds() {
    let a = SegregatedFit::new();
    let l = layout(16, 8);
    let p = a.alloc(l).unwrap();
    // SAFETY: allocated above; the second free is the bug under test, caught
    // by the debug check before it touches the queue.
    unsafe {
        a.dealloc(p, l);
        a.dealloc(p, l);
    }
}

#[test]
fn global_alloc_realloc_stays_in_place_within_a_class() {
    let a = SegregatedFit::new();
    let l = layout(100, 8);
    // SAFETY: non-zero size; every pointer is used within its size and freed
    // with its layout.
    unsafe {
        let p = GlobalAlloc::alloc(&a, l);
        assert!(!p.is_null());
        p.write_bytes(7, 100);
        let q = GlobalAlloc::realloc(&a, p, l, 104);
        assert_eq!(p, q, "100 and 104 bytes share a class");
        let r = GlobalAlloc::realloc(&a, q, layout(104, 8), 5000);
        assert_ne!(r, q);
        assert!(
            crate::filled(std::slice::from_raw_parts(r, 100), 7),
            "contents survive a move"
        );
        let s = GlobalAlloc::realloc(&a, r, layout(5000, 8), 200_000);
        assert!(crate::filled(std::slice::from_raw_parts(s, 100), 7));
        GlobalAlloc::dealloc(&a, s, layout(200_000, 8));
    }
}

/// A large block shrunk by `realloc` gives the tail of its mapping back to
/// the OS once that tail reaches 64 KiB, and `stats` shows it; it keeps its
/// address and contents, and grows again. Before, 64 MiB shrunk to 70 KiB
/// kept its whole mapping: `large_bytes` stayed 67,112,960.
#[test]
#[cfg(all(unix, not(miri)))]
fn shrinking_a_large_block_gives_its_tail_back() {
    let a = SegregatedFit::new();
    let page = allocasm::PageAllocator::new().page_size();
    let extent = |size: usize| (size.next_multiple_of(8) + 32).next_multiple_of(page);
    let (big, small) = (64 << 20, 70 << 10);
    // SAFETY: non-zero sizes; each pointer is used within its size and
    // freed with its layout.
    unsafe {
        let p = GlobalAlloc::alloc(&a, layout(big, 8));
        assert!(!p.is_null());
        p.write_bytes(0x5a, small);
        p.add(big - 1).write(1);
        assert_eq!(a.stats().large_bytes, extent(big));
        let q = GlobalAlloc::realloc(&a, p, layout(big, 8), small);
        assert_eq!(q, p, "a shrink stays in place");
        let s = a.stats();
        assert_eq!(s.large_blocks, 1);
        assert_eq!(
            s.large_bytes,
            extent(small),
            "the tail past {small} bytes went back to the OS"
        );
        assert!(crate::filled(std::slice::from_raw_parts(q, small), 0x5a));
        // A small shrink (a tail under 64 KiB) keeps the slack for growth.
        let r = GlobalAlloc::realloc(&a, q, layout(small, 8), small - 4096);
        assert_eq!(r, q);
        assert_eq!(a.stats().large_bytes, extent(small));
        // It grows again (in place within the slack, or by a move).
        let t = GlobalAlloc::realloc(&a, r, layout(small - 4096, 8), 1 << 20);
        assert!(!t.is_null());
        assert!(crate::filled(
            std::slice::from_raw_parts(t, small - 4096),
            0x5a
        ));
        t.add((1 << 20) - 1).write(2);
        assert_eq!(a.stats().large_bytes, extent(1 << 20));
        GlobalAlloc::dealloc(&a, t, layout(1 << 20, 8));
    }
    assert_eq!(a.stats().large_bytes, 0);
}

#[test]
fn allocator_api2_collections() {
    let a = SegregatedFit::new();
    let n = if cfg!(miri) { 50 } else { 10_000 };
    let mut v = allocator_api2::vec::Vec::new_in(&a);
    for i in 0..n {
        v.push(i as u64);
    }
    assert_eq!(v.iter().sum::<u64>(), (n as u64 - 1) * n as u64 / 2);
    let empty: allocator_api2::vec::Vec<u64, _> = allocator_api2::vec::Vec::with_capacity_in(0, &a);
    assert!(empty.is_empty());
    let boxed = allocator_api2::boxed::Box::new_in([1u8; 300], &a);
    assert_eq!(boxed.iter().map(|&b| b as usize).sum::<usize>(), 300);
}

#[test]
fn size_classes_are_shared_and_bounded() {
    assert_eq!(SizeClass::COUNT, 88);
    assert_eq!(SegregatedFit::size_class(1, 1).unwrap().block_size(), 8);
    assert_eq!(
        SegregatedFit::size_class(8, 8),
        SegregatedFit::size_class(5, 1)
    );
    assert_eq!(
        SegregatedFit::size_class(65536, 8).unwrap().block_size(),
        65536
    );
    assert_eq!(SegregatedFit::size_class(65537, 8), None);
    assert_eq!(SegregatedFit::size_class(8, 8192), None);
    assert_eq!(
        SegregatedFit::size_class(60_000, 4096)
            .unwrap()
            .block_size(),
        61_440
    );
    for i in 0..SizeClass::COUNT {
        let c = SizeClass::from_index(i).unwrap();
        assert_eq!(c.block_size() % c.align(), 0);
        assert_eq!(
            SegregatedFit::size_class(c.block_size(), c.align()),
            Some(c)
        );
    }
    assert!(SizeClass::from_index(SizeClass::COUNT).is_none());
}

/// Blocks allocated on one thread and freed on another, small enough for
/// Miri. Users write every byte but the first three words: a consumer
/// holding a stale snapshot may read a just-popped block's link word (the
/// queue's documented, generation-checked stale read: word 0) or its run's
/// `below` word (the run stack's, the same kind: word 1, or word 2 in
/// `hardened` builds), which Miri's race detector reports when the user
/// writes that word concurrently; the stress tests (not run under Miri)
/// write every byte. (With refills taking grown spans as runs, the run
/// stack's read came within Miri's schedules: it reported a write at
/// offset 8, which this test made until then.)
#[test]
fn cross_thread_frees_under_miri() {
    /// The words a stale reader may load: link, `below`, and the hardened
    /// builds' `below` past the tag.
    const SKIPPED: usize = 24;
    let a = SegregatedFit::new();
    let rounds = if cfg!(miri) { 12 } else { 2000 };
    let sizes = [16usize, 24, 64, 200];
    let (tx, rx) = std::sync::mpsc::channel::<(usize, usize)>();
    std::thread::scope(|s| {
        for t in 0..2 {
            let (a, tx) = (&a, tx.clone());
            s.spawn(move || {
                for i in 0..rounds {
                    let size = sizes[(i + t) % sizes.len()];
                    let p = a.alloc(layout(size, 8)).unwrap();
                    // SAFETY: `size` bytes were allocated; the words the
                    // stacks may read stale are skipped.
                    unsafe {
                        p.as_ptr().add(SKIPPED.min(size)).write_bytes(
                            (p.as_ptr() as usize % 251) as u8,
                            size - SKIPPED.min(size),
                        )
                    };
                    tx.send((p.as_ptr() as usize, size)).unwrap();
                }
            });
        }
        drop(tx);
        let a = &a;
        s.spawn(move || {
            let mut n = 0;
            for (addr, size) in rx {
                let p = std::ptr::with_exposed_provenance_mut::<u8>(addr);
                // SAFETY: a live block of `size` bytes handed over by its allocating thread.
                let bytes = unsafe {
                    std::slice::from_raw_parts(p.add(SKIPPED.min(size)), size - SKIPPED.min(size))
                };
                assert!(
                    crate::filled(bytes, (addr % 251) as u8),
                    "block {addr:#x} corrupted"
                );
                // SAFETY: allocated with this layout, freed once, here.
                unsafe { a.dealloc(NonNull::new(p).unwrap(), layout(size, 8)) };
                n += 1;
            }
            assert_eq!(n, 2 * rounds);
        });
    });
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn the_thread_cache_is_lifo() {
    let a = SegregatedFit::new();
    let l = layout(64, 8);
    let p = a.alloc(l).unwrap();
    let q = a.alloc(l).unwrap();
    // SAFETY: allocated above with `l`; each freed once.
    unsafe {
        a.dealloc(p, l);
        a.dealloc(q, l);
    }
    assert_eq!(a.alloc(l).unwrap(), q, "the newest free block comes first");
    assert_eq!(a.alloc(l).unwrap(), p);
}

/// Blocks allocated on one thread and freed on another (the producer /
/// consumer pattern) are reused without growth, through the freeing
/// thread's cache and its flushes to the queue.
#[test]
fn remote_frees_are_reused_without_growth() {
    let a = SegregatedFit::new();
    let l = layout(256, 8);
    let class = SegregatedFit::size_class(256, 8).unwrap();
    let n = if cfg!(miri) { 40 } else { 4000 };
    let rounds = if cfg!(miri) { 2 } else { 10 };
    let (tx, rx) = std::sync::mpsc::sync_channel::<usize>(64);
    let mut spans_after_first = 0;
    std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            for addr in rx {
                let p = NonNull::new(addr as *mut u8).unwrap();
                // SAFETY: the producer allocated it with `l` and gave it up.
                unsafe { a.dealloc(p, l) };
            }
        });
        for round in 0..rounds {
            for i in 0..n {
                let p = a.alloc(l).unwrap();
                // SAFETY: ours, 256 bytes.
                unsafe { p.as_ptr().write_bytes((i % 251) as u8, 256) };
                tx.send(p.as_ptr() as usize).unwrap();
            }
            if round == 0 {
                spans_after_first = a.span_count(class);
            }
        }
        drop(tx);
        consumer.join().unwrap();
    });
    let spans = a.span_count(class);
    assert!(
        spans <= spans_after_first + 2,
        "{spans} spans after {rounds} rounds, {spans_after_first} after the first"
    );
}

/// A thread's exit flushes its cache to the queue: nothing stays cached,
/// and another thread gets the blocks without growth.
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn thread_exit_flushes_the_cache() {
    let a = SegregatedFit::new();
    let l = layout(96, 8);
    let class = SegregatedFit::size_class(96, 8).unwrap();
    let i = class.index();
    std::thread::scope(|s| {
        s.spawn(|| {
            // An array, not a `Vec`: freeing a `Vec`'s buffer would use the
            // global allocator between these frees and `stats`, and when
            // that is a SegregatedFit too (`scripts/test global`) its miss
            // takes this thread's cache over, flushing `a`'s blocks.
            let v: [_; 10] = core::array::from_fn(|_| a.alloc(l).unwrap());
            for p in v {
                // SAFETY: allocated above with `l`.
                unsafe { a.dealloc(p, l) };
            }
            let st = a.stats();
            assert!(st.classes[i].cached >= 10, "{:?}", st.classes[i]);
            assert_eq!(st.classes[i].in_use, 0);
        })
        .join()
        .unwrap();
    });
    let st = a.stats();
    assert_eq!(
        st.classes[i].cached, 0,
        "the exited thread's cache was flushed"
    );
    assert_eq!(st.classes[i].in_use, 0);
    assert_eq!(st.classes[i].free, st.classes[i].blocks);
    let spans = a.span_count(class);
    let all: Vec<_> = (0..st.classes[i].blocks)
        .map(|_| a.alloc(l).unwrap())
        .collect();
    assert_eq!(
        a.span_count(class),
        spans,
        "every flushed block is reusable"
    );
    assert_eq!(a.stats().classes[i].in_use, all.len());
}

/// Dropping an allocator whose blocks sit in another (live) thread's cache
/// makes that cache forget them; the thread goes on with another allocator
/// and exits cleanly.
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn dropping_an_allocator_clears_other_threads_caches() {
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let first = Box::new(SegregatedFit::new());
    let addr = &*first as *const SegregatedFit as usize;
    let t = std::thread::spawn(move || {
        // SAFETY: `first` is alive until this thread says it is ready.
        let a = unsafe { &*(addr as *const SegregatedFit) };
        let l = layout(32, 8);
        let v: Vec<_> = (0..5).map(|_| a.alloc(l).unwrap()).collect();
        for p in v {
            // SAFETY: allocated above with `l`.
            unsafe { a.dealloc(p, l) };
        }
        ready_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // `first` is gone: another allocator works on this thread.
        let b = SegregatedFit::new();
        let p = b.alloc(l).unwrap();
        assert!(b.owns(p, l));
        // SAFETY: allocated above with `l`.
        unsafe { b.dealloc(p, l) };
        let c = b.stats().classes[SegregatedFit::size_class(32, 8).unwrap().index()];
        assert!(c.cached >= 1 && c.in_use == 0, "{c:?}");
    });
    ready_rx.recv().unwrap();
    drop(first);
    go_tx.send(()).unwrap();
    t.join().unwrap();
}

/// One thread alternating between two allocators: each switch hands the
/// cache over; every block goes back to its own allocator.
#[test]
fn one_thread_two_allocators() {
    let a = SegregatedFit::new();
    let b = SegregatedFit::new();
    let l = layout(128, 8);
    let class = SegregatedFit::size_class(128, 8).unwrap();
    for _ in 0..if cfg!(miri) { 3 } else { 200 } {
        let p = a.alloc(l).unwrap();
        let q = b.alloc(l).unwrap();
        assert!(a.owns(p, l) && b.owns(q, l));
        // SAFETY: each allocated just above with `l` by its allocator.
        unsafe {
            a.dealloc(p, l);
            b.dealloc(q, l);
        }
    }
    assert_eq!(a.span_count(class), 1);
    assert_eq!(b.span_count(class), 1);
    assert_eq!(a.stats().classes[class.index()].in_use, 0);
    assert_eq!(b.stats().classes[class.index()].in_use, 0);
}

#[test]
fn stats_count_spans_free_cached_and_in_use() {
    let a = SegregatedFit::new();
    let l = layout(200, 8);
    let class = SegregatedFit::size_class(200, 8).unwrap();
    let i = class.index();
    let empty = a.stats();
    assert_eq!(
        empty.classes[i],
        allocasm::segregated::ClassStats {
            block_size: class.block_size(),
            ..Default::default()
        }
    );
    let live: Vec<_> = (0..50).map(|_| a.alloc(l).unwrap()).collect();
    let st = a.stats();
    let c = st.classes[i];
    assert_eq!(c.block_size, 208);
    assert_eq!(c.spans, 1);
    assert_eq!(c.blocks, SegregatedFit::blocks_per_span(class));
    assert_eq!(c.in_use, 50);
    assert_eq!(c.bytes_in_use, 50 * 208);
    assert_eq!(c.free + c.cached + c.in_use, c.blocks);
    assert_eq!(st.bytes_in_use(), 50 * 208);
    assert_eq!(st.span_bytes, SegregatedFit::span_len(class));
    let big = a.alloc(layout(1 << 20, 8)).unwrap();
    let st = a.stats();
    assert_eq!(st.large_blocks, 1);
    assert!(st.large_bytes >= 1 << 20);
    // SAFETY: allocated above with these layouts.
    unsafe {
        a.dealloc(big, layout(1 << 20, 8));
        for p in live {
            a.dealloc(p, l);
        }
    }
    let st = a.stats();
    assert_eq!((st.large_blocks, st.large_bytes), (0, 0));
    assert_eq!(st.classes[i].in_use, 0);
    assert_eq!(
        st.classes[i].free + st.classes[i].cached,
        st.classes[i].blocks
    );
}

/// `trim` purges the pages of spans all of whose blocks are free, keeps
/// those with a live block, and growth reuses trimmed spans before it
/// carves new ones.
#[test]
fn trim_gives_empty_spans_back_and_growth_reuses_them() {
    let a = SegregatedFit::new();
    let l = layout(1024, 8);
    let class = SegregatedFit::size_class(1024, 8).unwrap();
    let i = class.index();
    let per = SegregatedFit::blocks_per_span(class);
    let live: Vec<_> = (0..3 * per).map(|_| a.alloc(l).unwrap()).collect();
    assert_eq!(a.span_count(class), 3);
    // `live[0]` stays live: its span is not empty.
    for &p in &live[1..] {
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
    let purged = a.trim();
    let page = PageAllocator::new().page_size();
    assert_eq!(
        purged,
        2 * (SegregatedFit::span_len(class) - page),
        "two empty spans purged, all but their header page"
    );
    let st = a.stats();
    assert_eq!((st.classes[i].spans, st.classes[i].trimmed_spans), (3, 2));
    assert_eq!(st.classes[i].blocks, per);
    assert_eq!(st.classes[i].in_use, 1);
    assert_eq!(
        st.classes[i].free,
        per - 1,
        "the kept span's other blocks stay free"
    );
    assert_eq!(a.trim(), 0, "nothing left to trim");
    // Growth takes the trimmed spans back before carving a new one.
    let again: Vec<_> = (0..3 * per - 1).map(|_| a.alloc(l).unwrap()).collect();
    assert_eq!(a.span_count(class), 3);
    assert_eq!(a.stats().classes[i].trimmed_spans, 0);
    fill_and_read_back(&again, 1024);
}

/// Writes each of `blocks` (live, `len` bytes each, ours) full of its own
/// byte, then reads them all back: none overlaps another, and purged pages
/// read back as what was written.
fn fill_and_read_back(blocks: &[NonNull<u8>], len: usize) {
    for (k, &p) in blocks.iter().enumerate() {
        // SAFETY: a live block of at least `len` bytes (the caller's).
        unsafe { p.as_ptr().write_bytes(k as u8, len) };
    }
    for (k, &p) in blocks.iter().enumerate() {
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
        assert!(
            crate::filled(bytes, k as u8),
            "block {k} of {}",
            blocks.len()
        );
    }
}

/// A span is linked a batch at a time as its blocks are needed; `trim`
/// counts the blocks not handed out yet as free. A span of which one batch
/// went out and came back is trimmed whole (it used to be linked whole, so
/// its free blocks were all queued), and one with a live block keeps
/// handing out the rest without growing.
#[test]
fn trim_counts_a_span_partly_handed_out() {
    let a = SegregatedFit::new();
    let l = layout(256, 8);
    let class = SegregatedFit::size_class(256, 8).unwrap();
    let i = class.index();
    let per = SegregatedFit::blocks_per_span(class);
    let page = PageAllocator::new().page_size();
    let p = a.alloc(l).unwrap();
    // SAFETY: allocated above with `l`, freed once.
    unsafe { a.dealloc(p, l) };
    assert_eq!(
        a.trim(),
        SegregatedFit::span_len(class) - page,
        "the span, one batch of it handed out and back, is purged"
    );
    let st = a.stats().classes[i];
    assert_eq!(
        (st.spans, st.trimmed_spans, st.free, st.in_use),
        (1, 1, 0, 0)
    );
    // Growth takes the trimmed span back and hands it out anew.
    let live: Vec<_> = (0..per / 2).map(|_| a.alloc(l).unwrap()).collect();
    let st = a.stats().classes[i];
    assert_eq!((st.spans, st.trimmed_spans, st.in_use), (1, 0, per / 2));
    assert_eq!(st.free + st.cached, per - per / 2, "{st:?}");
    // With live blocks in it the span stays, and the rest of it is still
    // handed out before the class grows.
    assert_eq!(a.trim(), 0);
    let more: Vec<_> = (0..per - per / 2).map(|_| a.alloc(l).unwrap()).collect();
    assert_eq!(a.span_count(class), 1, "the span's last blocks, no growth");
    let all: Vec<_> = live.iter().chain(&more).copied().collect();
    let mut addrs: Vec<_> = all.iter().map(|p| p.as_ptr() as usize).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), per, "every block once");
    fill_and_read_back(&all, 256);
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn alloc_zeroed_zeroes_reused_blocks() {
    let a = SegregatedFit::new();
    let l = layout(300, 8);
    let p = a.alloc(l).unwrap();
    // SAFETY: ours, 300 bytes; freed with `l`.
    unsafe {
        p.as_ptr().write_bytes(0xAB, 300);
        a.dealloc(p, l);
    }
    let q = a.alloc_zeroed(l).unwrap();
    assert_eq!(q, p, "the same block comes back (LIFO)");
    // SAFETY: ours.
    let bytes = unsafe { std::slice::from_raw_parts(q.as_ptr(), 300) };
    assert!(crate::filled(bytes, 0));
    let n = if cfg!(miri) { 1 << 17 } else { 3 << 20 };
    let big = layout(n, 8);
    // SAFETY: GlobalAlloc with a non-zero size; freed with its layout.
    unsafe {
        let z = GlobalAlloc::alloc_zeroed(&a, big);
        assert!(!z.is_null());
        assert!(crate::filled(std::slice::from_raw_parts(z, n), 0));
        GlobalAlloc::dealloc(&a, z, big);
    }
}

/// Large blocks are page-aligned, grow in place within their mapping's
/// slack, and (on Linux) by `mremap` past it, keeping their contents.
#[test]
fn large_blocks_are_page_aligned_and_grow_without_copying() {
    let a = SegregatedFit::new();
    let page = PageAllocator::new().page_size();
    let l = layout(100_000, 8);
    // SAFETY: GlobalAlloc calls with non-zero sizes; every pointer is used
    // within its size and freed with its last layout.
    unsafe {
        let p = GlobalAlloc::alloc(&a, l);
        assert_eq!(p as usize % page, 0, "large blocks are page-aligned");
        p.write_bytes(5, 100_000);
        // The mapping is rounded to the granularity: a little more fits.
        let q = GlobalAlloc::realloc(&a, p, l, 100_100);
        assert_eq!(q, p, "growth within the mapping's slack stays in place");
        assert!(a.owns(NonNull::new(q).unwrap(), layout(100_100, 8)));
        let big = if cfg!(miri) { 1 << 20 } else { 50 << 20 };
        let r = GlobalAlloc::realloc(&a, q, layout(100_100, 8), big);
        assert!(!r.is_null());
        assert!(crate::filled(std::slice::from_raw_parts(r, 100_000), 5));
        r.add(big - 1).write(1);
        let s = GlobalAlloc::realloc(&a, r, layout(big, 8), 70_000);
        assert_eq!(s, r, "shrinking stays in place");
        assert!(crate::filled(std::slice::from_raw_parts(s, 70_000), 5));
        GlobalAlloc::dealloc(&a, s, layout(70_000, 8));
    }
    assert_eq!(a.stats().large_blocks, 0);
}

/// Two heaps used alternately on one thread keep a cache each: the second
/// allocator takes the thread's secondary cache instead of flushing the
/// first one's lists on every switch (before, each switch flushed every list
/// under the global registry lock: 80x slower per pair in the bench's
/// `two-heaps` group, and the heap used last was the only one cached).
#[test]
#[cfg_attr(
    allocasm_global_segregated,
    ignore = "a third heap on the thread: the global SegregatedFit holds one of its two caches"
)]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn two_heaps_on_one_thread_keep_a_cache_each() {
    let a = SegregatedFit::new();
    let b = SegregatedFit::new();
    let l = layout(64, 8);
    let i = SegregatedFit::size_class(64, 8).unwrap().index();
    // A fresh thread: the test thread's caches may serve other heaps.
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..100 {
                let p = a.alloc(l).unwrap();
                let q = b.alloc(l).unwrap();
                // SAFETY: allocated above with `l`, freed once.
                unsafe {
                    a.dealloc(p, l);
                    b.dealloc(q, l);
                }
            }
            let (sa, sb) = (a.stats().classes[i], b.stats().classes[i]);
            assert!(sa.cached >= 1, "the first heap's cache was flushed: {sa:?}");
            assert!(
                sb.cached >= 1,
                "the second heap's cache was flushed: {sb:?}"
            );
            // Every block is in the queue or in a cache: none lost.
            assert_eq!(sa.free + sa.cached, sa.blocks, "{sa:?}");
            assert_eq!(sb.free + sb.cached, sb.blocks, "{sb:?}");
        })
        .join()
        .unwrap();
    });
}

/// `try_alloc` takes blocks from whichever of the thread's caches serves the
/// heap: with the primary bound to another heap (as a global SegregatedFit
/// binds it), a refill's batch sits in the secondary. `try_alloc` looked at
/// the primary only and lost them: 191 of a span's 254 blocks under the
/// cross steps, where SegregatedFit is the global allocator.
#[test]
fn try_alloc_sees_the_secondary_cache() {
    let other = SegregatedFit::new();
    let a = SegregatedFit::new();
    let l = layout(64, 8);
    let class = SegregatedFit::size_class(64, 8).unwrap();
    let per_span = SegregatedFit::blocks_per_span(class);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Binds a cache of this thread to `other` first.
            let o = other.alloc(l).unwrap();
            let first = a.alloc(l).unwrap();
            let mut all = take_all(&a, l);
            all.push(first);
            assert_eq!(all.len(), per_span, "every block of the span, none lost");
            assert_eq!(a.span_count(class), 1);
            // SAFETY: live blocks of their allocators, each freed once.
            unsafe {
                for p in all {
                    a.dealloc(p, l);
                }
                other.dealloc(o, l);
            }
        })
        .join()
        .unwrap();
    });
}

/// `class_of` names a block's class from its address alone (interior
/// addresses too, any alignment the class serves, after trimming and
/// regrowth), and none for what is not in a span: null, a large block,
/// another heap's block, memory of the stack, a heap that allocated
/// nothing yet. `dealloc_in` then frees the block without its layout, and
/// the next allocation of the class reuses it.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn class_of_names_a_blocks_class_from_its_address() {
    let a = SegregatedFit::new();
    let local = 0u64;
    let on_stack = std::ptr::from_ref(&local).cast::<u8>();
    assert_eq!(a.class_of(std::ptr::null()), None);
    assert_eq!(a.class_of(on_stack), None, "nothing allocated yet");
    // Every class under the native test; every seventh under Miri.
    let step = if cfg!(miri) { 7 } else { 1 };
    for i in (0..SizeClass::COUNT).step_by(step) {
        let class = SizeClass::from_index(i).unwrap();
        let size = class.block_size();
        // The largest alignment this size's class serves (a power of two
        // dividing the block size, at most the class limit).
        let align = (1 << size.trailing_zeros()).min(SegregatedFit::MAX_CLASS_ALIGN);
        let l = layout(size, align);
        assert_eq!(SegregatedFit::size_class(size, align), Some(class));
        let p = a.alloc(l).unwrap();
        assert_eq!(a.class_of(p.as_ptr()), Some(class), "class {i}, {l:?}");
        // SAFETY: the last byte of the block.
        let last = unsafe { p.as_ptr().add(size - 1) };
        assert_eq!(a.class_of(last), Some(class), "class {i}: its last byte");
        // SAFETY: a live block of `class`, freed once.
        unsafe { a.dealloc_in(p, class) };
        let again = a.alloc(l).unwrap();
        // (`hardened` keeps no thread cache for the 8-byte class: no room for
        // its key beside the link; see docs/malloc-hardening.md.)
        if !(cfg!(feature = "hardened") && i == 0) {
            assert_eq!(again, p, "class {i}: the freed block is reused (LIFO)");
        }
        // SAFETY: as above.
        unsafe { a.dealloc(again, l) };
    }
    let big = layout(SegregatedFit::MAX_CLASS_SIZE + 1, 16);
    let large = a.alloc(big).unwrap();
    assert_eq!(a.class_of(large.as_ptr()), None, "a large block");
    let b = SegregatedFit::new();
    let other = b.alloc(layout(64, 8)).unwrap();
    assert_eq!(a.class_of(other.as_ptr()), None, "another heap's block");
    assert_eq!(a.class_of(on_stack), None, "the stack");
    // SAFETY: allocated above with these layouts.
    unsafe {
        a.dealloc(large, big);
        b.dealloc(other, layout(64, 8));
    }
    // A trimmed span keeps its class when growth takes it back.
    let l = layout(512, 8);
    let class = SegregatedFit::size_class(512, 8).unwrap();
    let per = SegregatedFit::blocks_per_span(class);
    let live: Vec<_> = (0..2 * per).map(|_| a.alloc(l).unwrap()).collect();
    for &p in &live {
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
    assert!(a.trim() > 0, "a span was trimmed");
    let back: Vec<_> = (0..2 * per).map(|_| a.alloc(l).unwrap()).collect();
    assert!(back.iter().all(|p| a.class_of(p.as_ptr()) == Some(class)));
    for &p in &back {
        // SAFETY: as above.
        unsafe { a.dealloc_in(p, class) };
    }
}

/// `SizeClass::small`, the table `GlobalAlloc` reads for requests up to
/// 1 KiB aligned to at most 16, and `SizeClass::aligned16`, `malloc`'s,
/// name the class `SizeClass::of` computes for every such request (a zero
/// size included), and decline every other.
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn the_small_request_table_agrees_with_the_arithmetic() {
    // Every size natively; under Miri (safe arithmetic and a table lookup,
    // nothing for it to find) every 33rd and the boundary, 1024.
    let step = if cfg!(miri) { 33 } else { 1 };
    for align in [1, 2, 4, 8, 16] {
        for size in (0..=1024).step_by(step).chain([1024]) {
            assert_eq!(
                SizeClass::small(size, align),
                SizeClass::of(size, align),
                "size {size}, align {align}"
            );
        }
        assert_eq!(SizeClass::small(1025, align), None);
    }
    // The drop-in `malloc`'s table, for its alignment of 16.
    for size in (0..=1024).step_by(step).chain([1024]) {
        assert_eq!(
            SizeClass::aligned16(size),
            SizeClass::of(size, 16),
            "size {size}"
        );
    }
    assert_eq!(SizeClass::aligned16(1025), None);
    assert_eq!(SizeClass::aligned16(usize::MAX), None);
    for align in [32, 64, 4096] {
        assert_eq!(SizeClass::small(8, align), None, "align {align}");
    }
    // Through `GlobalAlloc`, each side of the boundary: the block of the
    // class, reused by the next allocation of the same layout.
    let a = SegregatedFit::new();
    for (size, align) in [(1024, 16), (1025, 16), (24, 32), (100, 8)] {
        let l = layout(size, align);
        // SAFETY: a non-zero layout.
        let p = unsafe { GlobalAlloc::alloc(&a, l) };
        assert!(!p.is_null() && (p as usize).is_multiple_of(align), "{l:?}");
        assert!(a.owns(NonNull::new(p).unwrap(), l), "{l:?}");
        // SAFETY: allocated above with `l`.
        unsafe { GlobalAlloc::dealloc(&a, p, l) };
        // SAFETY: as above.
        let q = unsafe { GlobalAlloc::alloc(&a, l) };
        assert_eq!(p, q, "{l:?}: the freed block comes back");
        // SAFETY: as above.
        unsafe { GlobalAlloc::dealloc(&a, q, l) };
    }
}

/// The drop-in `realloc`'s hit path, `realloc_cached`: a block of the new
/// class from the thread cache, the copy run on it, and the old block kept
/// in its own class's list, in one step; where either list cannot (the new
/// class's empty, the old class's full), `None`, with the copy not run and
/// nothing changed.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn the_cached_realloc_moves_a_block_or_changes_nothing() {
    let a = SegregatedFit::new();
    let (from, to) = (
        SizeClass::aligned16(16).unwrap(),
        SizeClass::aligned16(32).unwrap(),
    );
    let (small, big) = (layout(16, 16), layout(32, 16));
    let p = a.alloc(small).unwrap();
    // SAFETY: `p` is a live 16-byte block.
    unsafe { p.as_ptr().write_bytes(0x6b, 16) };
    let copied = std::cell::Cell::new(0);
    let copy = |q: NonNull<u8>| {
        copied.set(copied.get() + 1);
        // SAFETY: `q` is the fresh 32-byte block and `p` still the caller's.
        unsafe { p.as_ptr().copy_to_nonoverlapping(q.as_ptr(), 16) };
    };
    // The 32-byte list is empty (or, with a global SegregatedFit, the
    // primary cache serves another heap).
    // SAFETY: `p` is a live block of `from`, not free.
    assert_eq!(unsafe { a.realloc_cached(p, from, to, copy) }, None);
    assert_eq!(copied.get(), 0);
    let q = a.alloc(big).unwrap();
    // SAFETY: `q` is a live block of `to`.
    let kept = unsafe { a.free_cached(q.as_ptr()) };
    if cfg!(allocasm_global_segregated) {
        assert!(!kept);
        // SAFETY: as above.
        assert_eq!(unsafe { a.realloc_cached(p, from, to, copy) }, None);
        assert_eq!(copied.get(), 0);
        // SAFETY: allocated above, each freed once.
        unsafe {
            a.dealloc(p, small);
            a.dealloc(q, big);
        }
        return;
    }
    assert!(kept);
    let before = a.stats().cached_blocks();
    // SAFETY: as above.
    let moved = unsafe { a.realloc_cached(p, from, to, copy) };
    assert_eq!(moved, Some(q), "the newest block of the new class");
    assert_eq!(copied.get(), 1);
    // SAFETY: `q` is ours again, its first 16 bytes copied from `p`.
    let head = unsafe { std::slice::from_raw_parts(q.as_ptr(), 16) };
    assert_eq!(head, &[0x6b; 16]);
    assert_eq!(a.stats().cached_blocks(), before, "one block out, one in");
    // The old block is the newest of its class's list.
    assert_eq!(a.alloc_cached(from), Some(p));
    // Fill the 16-byte list (blocks taken first, so that no allocation
    // takes back what the list holds): then the move declines, and changes
    // nothing.
    let mut held: Vec<_> = (0..4096).map(|_| a.alloc(small).unwrap()).collect();
    // SAFETY: each is a live block of `from`; the one declined stays live.
    let kept = held
        .iter()
        .take_while(|b| unsafe { a.free_cached(b.as_ptr()) })
        .count();
    assert!(kept < held.len(), "a list holds fewer than 4,096 blocks");
    held.drain(..kept);
    let r = a.alloc(big).unwrap();
    // SAFETY: `r` is a live block of `to`.
    assert!(unsafe { a.free_cached(r.as_ptr()) });
    let before = a.stats().cached_blocks();
    // SAFETY: `p` is live (taken back above), a block of `from`, not free.
    assert_eq!(unsafe { a.realloc_cached(p, from, to, copy) }, None);
    assert_eq!(copied.get(), 1);
    assert_eq!(a.stats().cached_blocks(), before);
    assert_eq!(
        a.alloc_cached(to),
        Some(r),
        "the new class's list is as it was"
    );
    // SAFETY: allocated above, each freed once.
    unsafe {
        a.dealloc(p, small);
        a.dealloc(q, big);
        a.dealloc(r, big);
        for b in held {
            a.dealloc(b, small);
        }
    }
}

/// The drop-in `malloc`'s and `free`'s hit paths, `alloc_cached` and
/// `free_cached`: a hit takes or keeps a block in the thread cache; a miss
/// (an empty list, a pointer that is no class block's start) returns
/// `None` or `false` and changes nothing, for the caller's slow path.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "no thread caches on windows-gnu (cache::arm_exit_hook)"
)]
fn the_cached_hit_paths_hit_or_change_nothing() {
    let a = SegregatedFit::new();
    let class = SizeClass::aligned16(48).unwrap();
    // Nothing cached yet on this thread for this allocator.
    assert_eq!(a.alloc_cached(class), None);
    let l = layout(48, 16);
    let p = a.alloc(l).unwrap();
    let q = a.alloc(l).unwrap();
    // A foreign address, an interior pointer, a large block: no block of a
    // class, so `false`, and nothing is kept.
    let mut local = 0u64;
    let big = layout(256 * 1024, 16);
    let large = a.alloc(big).unwrap();
    // SAFETY: none of these is a class block's start: `free_cached`
    // declines each without touching it.
    unsafe {
        assert!(!a.free_cached(std::ptr::from_mut(&mut local).cast()));
        assert!(!a.free_cached(p.as_ptr().add(16)));
        assert!(!a.free_cached(large.as_ptr()));
    }
    assert_eq!(local, 0);
    if cfg!(allocasm_global_segregated) {
        // The global allocator is a SegregatedFit too: this thread's
        // primary cache serves it, and `a` has the secondary, which the hit
        // paths do not look at. Both miss, and change nothing.
        // SAFETY: `q` is a live block of `class`; declined, it stays live.
        assert!(!unsafe { a.free_cached(q.as_ptr()) });
        assert_eq!(a.alloc_cached(class), None);
    } else {
        let before = a.stats().cached_blocks();
        // SAFETY: `q` is a live block of `class`.
        let kept = unsafe { a.free_cached(q.as_ptr()) };
        assert!(kept, "a class block goes to the cache");
        assert_eq!(a.stats().cached_blocks(), before + 1);
        // LIFO: the next hit is the block just kept.
        assert_eq!(a.alloc_cached(class), Some(q));
        assert_eq!(a.stats().cached_blocks(), before);
    }
    // SAFETY: allocated above, each freed once.
    unsafe {
        a.dealloc(p, l);
        a.dealloc(q, l);
        a.dealloc(large, big);
    }
}
