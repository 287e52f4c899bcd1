//! ThreadCursorArena: conformance, the private cursor, several arenas at
//! once, threads that exit (their tails are counted), reset, bad input and a
//! small multi-threaded run.

use std::sync::Barrier;

use allocasm::{AllocError, RawAllocator, ThreadCursorArena, ThreadCursorConfig};

use crate::conformance::{self, Spec};

fn small() -> ThreadCursorArena {
    ThreadCursorArena::with_config(ThreadCursorConfig {
        chunk_size: 1024,
        block_size: 16384,
        max_blocks: 4,
    })
    .unwrap()
}

#[test]
fn conformance() {
    let spec = Spec::new("ThreadCursorArena");
    conformance::check(&spec, small);
    conformance::check_reset(&spec, small(), |a| a.reset());
}

#[test]
fn bumps_a_private_cursor_inside_one_chunk() {
    let a = small();
    let p = a.alloc(24).unwrap();
    let q = a.alloc(100).unwrap();
    let r = a.alloc(1).unwrap();
    assert_eq!(q.as_ptr() as usize - p.as_ptr() as usize, 32);
    assert_eq!(r.as_ptr() as usize - q.as_ptr() as usize, 112);
    let s = a.stats();
    assert_eq!(
        (s.chunks, s.direct),
        (1, 0),
        "one shared add for the whole chunk"
    );
    assert!(a.owns(r.as_ptr()));
}

#[test]
fn refill_counts_the_tail_it_leaves() {
    let a = small();
    a.alloc(400).unwrap();
    a.alloc(400).unwrap(); // 800 of 1024 used
    a.alloc(400).unwrap(); // does not fit the 224 left: refill
    let s = a.stats();
    assert_eq!(s.chunks, 2);
    assert_eq!(s.refill_tail_bytes, 1024 - 800);
    assert_eq!(a.wasted_bytes(), 224);
    // Above half a chunk: served by the backing arena, the chunk is kept.
    let big = a.alloc(700).unwrap();
    assert_eq!(a.stats().direct, 1);
    assert!(a.owns(big.as_ptr()));
    assert_eq!(a.stats().chunks, 2);
}

#[test]
fn exited_threads_tails_are_counted() {
    let a = small();
    // An explicit join waits for the thread's TLS destructors (a scope's
    // implicit join does not).
    std::thread::scope(|s| {
        s.spawn(|| {
            a.alloc(16).unwrap();
        })
        .join()
        .unwrap();
    });
    assert_eq!(
        a.stats().exited_tail_bytes,
        1024 - 16,
        "the exiting thread's unused tail"
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            a.alloc(1000 / 2).unwrap();
        })
        .join()
        .unwrap();
    });
    assert_eq!(a.stats().exited_tail_bytes, (1024 - 16) + (1024 - 512));
    assert_eq!(a.wasted_bytes(), a.stats().exited_tail_bytes);
}

#[test]
fn several_arenas_at_once() {
    let arenas: Vec<_> = (0..(if cfg!(miri) { 3 } else { 12 }))
        .map(|_| small())
        .collect();
    let mut got = Vec::new();
    for round in 0..20 {
        for (i, a) in arenas.iter().enumerate() {
            let p = a.alloc(16 + round).unwrap();
            // SAFETY: at least 16 bytes at p.
            unsafe { p.as_ptr().write_bytes(i as u8, 16) };
            got.push((i, p));
        }
    }
    for &(i, p) in &got {
        assert!(
            arenas[i].owns(p.as_ptr()),
            "allocation from arena {i} must lie in arena {i}"
        );
        assert!(
            // SAFETY: live, 16 bytes.
            unsafe { std::slice::from_raw_parts(p.as_ptr(), 16) }
                .iter()
                .all(|&b| b == i as u8)
        );
    }
    let mut addrs: Vec<_> = got.iter().map(|&(_, p)| p.as_ptr() as usize).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), got.len(), "no address handed out twice");
    // More arenas than slots: some share a slot and take turns in it, each
    // parking the other's chunk, so every arena still needed one chunk
    // (its 20 allocations fit in 1 KiB) and no tail was thrown away.
    for (i, a) in arenas.iter().enumerate() {
        assert_eq!(a.stats().chunks, 1, "arena {i}: {:?}", a.stats());
        assert_eq!(a.wasted_bytes(), 0, "arena {i}");
    }
}

#[test]
fn reserves_what_the_configuration_can_use() {
    // 128 blocks of 1 MiB; the largest request is one block, so no slot
    // needs room for `block_size << 3`.
    let a = ThreadCursorArena::new().unwrap();
    assert_eq!(a.reserved_bytes(), 128 << 20);
    assert_eq!(small().reserved_bytes(), 4 * 16384);
}

#[test]
fn a_dropped_arena_leaves_no_usable_cursor_behind() {
    let first = small();
    first.alloc(16).unwrap();
    drop(first);
    // Fresh arenas (possibly in the same slot) must not hand out the dropped
    // arena's released memory.
    for _ in 0..9 {
        let a = small();
        let p = a.alloc(16).unwrap();
        assert!(a.owns(p.as_ptr()));
        // SAFETY: 16 live bytes.
        unsafe { p.as_ptr().write_bytes(1, 16) };
    }
}

#[test]
fn reset_forgets_every_threads_chunk() {
    let mut a = small();
    let first = a.alloc(16).unwrap();
    a.alloc(16).unwrap();
    a.reset();
    assert_eq!(a.stats(), Default::default());
    let again = a.alloc(16).unwrap();
    assert_eq!(
        again, first,
        "after reset the first chunk is the first one again"
    );
    assert_eq!(a.stats().chunks, 1);
}

#[test]
fn bad_input_is_an_error() {
    let a = small();
    assert_eq!(a.alloc(0), Err(AllocError::ZeroSize));
    a.alloc(16).unwrap(); // with a chunk cached, zero is still refused
    assert_eq!(a.alloc(0), Err(AllocError::ZeroSize));
    assert_eq!(
        a.alloc(16385),
        Err(AllocError::TooLarge {
            requested: 16385,
            max: 16384
        })
    );
    assert_eq!(
        a.alloc(usize::MAX),
        Err(AllocError::TooLarge {
            requested: usize::MAX,
            max: 16384
        })
    );
    assert_eq!(
        a.allocate_aligned(8, 48).err(),
        Some(AllocError::BadAlignment { align: 48 })
    );
    for chunk_size in [1000, 8, 1 << 21] {
        let bad = ThreadCursorConfig {
            chunk_size,
            ..Default::default()
        };
        assert_eq!(
            ThreadCursorArena::with_config(bad).err(),
            Some(AllocError::InvalidConfig {
                field: allocasm::ConfigField::ChunkSize,
                value: chunk_size
            }),
            "{bad:?} must be refused naming chunk_size"
        );
    }
    // The backing arena's refusals name the fields they share.
    let bad = ThreadCursorConfig {
        max_blocks: 0,
        ..Default::default()
    };
    assert_eq!(
        ThreadCursorArena::with_config(bad).err(),
        Some(AllocError::InvalidConfig {
            field: allocasm::ConfigField::MaxBlocks,
            value: 0
        })
    );
}

#[test]
fn is_a_sync_raw_allocator() {
    fn check<T: Send + Sync + RawAllocator>() {}
    check::<ThreadCursorArena>();
}

#[test]
fn threads_get_disjoint_ranges() {
    let a = ThreadCursorArena::with_config(ThreadCursorConfig {
        chunk_size: 1024,
        block_size: 1 << 16,
        max_blocks: 64,
    })
    .unwrap();
    let threads = if cfg!(miri) { 2 } else { 4 };
    let per = if cfg!(miri) { 30 } else { 3000 };
    let barrier = Barrier::new(threads);
    let ranges: Vec<(usize, usize)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (a, barrier) = (&a, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut kept = Vec::new();
                    for i in 0..per {
                        let size = 1 + (i * 13 + t * 7) % 300;
                        let p = a.alloc(size).unwrap();
                        let tag = (t * 17 + i) as u8;
                        // SAFETY: `size` bytes at p are ours.
                        unsafe { p.as_ptr().write_bytes(tag, size) };
                        kept.push((p, size, tag));
                    }
                    kept.iter()
                        .map(|&(p, size, tag)| {
                            // SAFETY: live, `size` bytes.
                            let b = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
                            assert!(
                                b.iter().all(|&x| x == tag),
                                "thread {t}: pattern overwritten at {p:p}"
                            );
                            (p.as_ptr() as usize, p.as_ptr() as usize + size)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut all = ranges;
    all.sort_unstable();
    for w in all.windows(2) {
        assert!(w[0].1 <= w[1].0, "ranges overlap: {w:x?}");
    }
    assert!(a.stats().chunks >= threads as u64);
    assert!(
        a.stats().exited_tail_bytes > 0,
        "exited threads' tails are counted"
    );
}

/// The last block this thread's cursor handed out grows and shrinks in
/// place (before `grow` was overridden every doubling of a vector copied
/// into a new block and left the old one behind); any other block moves on
/// growth with its contents, and a block another thread allocated is never
/// resized through this thread's cursor.
#[test]
fn the_last_block_grows_and_shrinks_in_place() {
    use allocator_api2::vec::Vec;
    let a = ThreadCursorArena::with_config(ThreadCursorConfig {
        chunk_size: 1 << 16,
        block_size: 1 << 20,
        max_blocks: 2,
    })
    .unwrap();
    let mut v: Vec<u64, _> = Vec::with_capacity_in(4, &a);
    let first = v.as_ptr() as usize;
    for i in 0..500u64 {
        v.push(i);
    }
    assert_eq!(v.as_ptr() as usize, first, "the last block moved on growth");
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.as_ptr() as usize, first, "the last block moved on shrink");
    assert!(v.iter().copied().eq(0..10));
    // The cursor sits at the shrunk block's end: the growth took no other
    // block and the shrink gave its tail back.
    let next = a.alloc(1).unwrap().as_ptr() as usize;
    assert_eq!(next, first + (v.capacity() * 8).next_multiple_of(16));

    // `v` is no longer the last block: growing it moves it, contents intact.
    v.extend(10..100u64);
    assert_ne!(
        v.as_ptr() as usize,
        first,
        "a block that is not the last grew over a live one"
    );
    assert!(v.iter().copied().eq(0..100));

    // A block from another thread's chunk, ending where this thread's
    // cursor might be: grown here, it must move.
    let theirs = std::thread::scope(|s| {
        s.spawn(|| {
            let mut w: Vec<u8, _> = Vec::with_capacity_in(64, &a);
            w.extend(0..64u8);
            w
        })
        .join()
        .unwrap()
    });
    let mut theirs = theirs;
    let before = theirs.as_ptr() as usize;
    let mine = a.alloc(16).unwrap().as_ptr() as usize;
    theirs.extend(64..200u8);
    assert_ne!(theirs.as_ptr() as usize, before);
    assert!(theirs.iter().copied().eq(0..200u8));
    assert!(
        !(mine..mine + 16).contains(&(theirs.as_ptr() as usize)),
        "grew into this thread's live block"
    );
}
