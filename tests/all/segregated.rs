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
fn conformance_up_to_the_large_path() {
    let max = if cfg!(miri) { 70_000 } else { 200_000 };
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
    assert!(len.is_power_of_two() && len >= 16 * 1024 && len >= allocasm::sys::granularity());
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
        &[(huge, 8), (huge, 1 << 20), (max + 1, 8), (max, 1 << 20)]
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

#[test]
#[cfg(debug_assertions)]
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
#[cfg(debug_assertions)]
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

#[test]
#[cfg(debug_assertions)]
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
            std::slice::from_raw_parts(r, 100).iter().all(|&b| b == 7),
            "contents survive a move"
        );
        let s = GlobalAlloc::realloc(&a, r, layout(5000, 8), 200_000);
        assert!(std::slice::from_raw_parts(s, 100).iter().all(|&b| b == 7));
        GlobalAlloc::dealloc(&a, s, layout(200_000, 8));
    }
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
/// Miri. Users write every byte but the first word: a consumer holding a
/// stale front snapshot may read a just-popped block's first word (the
/// queue's documented, generation-checked stale read), which Miri's race
/// detector reports when the user writes that word concurrently; the stress
/// tests (not run under Miri) write every byte.
#[test]
fn cross_thread_frees_under_miri() {
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
                    // SAFETY: `size` bytes were allocated; the first word is skipped.
                    unsafe {
                        p.as_ptr()
                            .add(8)
                            .write_bytes((p.as_ptr() as usize % 251) as u8, size - 8)
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
                let bytes = unsafe { std::slice::from_raw_parts(p.add(8), size - 8) };
                assert!(
                    bytes.iter().all(|&b| b == (addr % 251) as u8),
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
