//! PackedArena: conformance, the cursor's decode and rotation, the
//! per-block counters (recycle and evict), shrink, ownership, reset, bad
//! input, the Allocator impl, and a small multi-threaded run.

use std::ptr::NonNull;
use std::sync::Barrier;

use allocasm::{AllocError, DrainPolicy, PackedArena, PackedConfig, RawAllocator};

use crate::conformance::{self, Spec};

fn small(policy: DrainPolicy) -> PackedArena {
    blocks(policy, 8)
}

fn blocks(policy: DrainPolicy, max_blocks: usize) -> PackedArena {
    PackedArena::with_config(PackedConfig {
        block_size: 4096,
        max_blocks,
        policy,
        ..PackedConfig::new(4096)
    })
    .unwrap()
}

#[test]
fn conformance() {
    // Filled to exhaustion: two blocks under Miri (a rotation still
    // happens), eight natively.
    let n = if cfg!(miri) { 2 } else { 8 };
    let spec = Spec::new("PackedArena");
    conformance::check(&spec, || blocks(DrainPolicy::Recycle, n));
    conformance::check(
        &Spec {
            name: "PackedArena(Evict)",
            ..spec.clone()
        },
        || blocks(DrainPolicy::Evict, n),
    );
    conformance::check_reset(&spec, blocks(DrainPolicy::Recycle, n), |a| a.reset());
}

#[test]
fn bumps_in_sixteens_from_one_cursor() {
    let a = small(DrainPolicy::Recycle);
    let p = a.alloc(24).unwrap();
    let q = a.alloc(1).unwrap();
    let r = a.alloc(16).unwrap();
    assert_eq!(p.as_ptr() as usize % 16, 0);
    assert_eq!(q.as_ptr() as usize - p.as_ptr() as usize, 32);
    assert_eq!(r.as_ptr() as usize - q.as_ptr() as usize, 16);
    let s = a.snapshot();
    assert_eq!((s.block, s.factor, s.position), (0, 0, 64));
}

#[test]
fn rotation_installs_a_fresh_block_and_strands_the_tail() {
    let a = small(DrainPolicy::Recycle);
    let first = a.alloc(4000).unwrap();
    // 96 bytes left: a 128-byte request rotates.
    let second = a.alloc(128).unwrap();
    let s = a.snapshot();
    assert_eq!((s.block, s.position), (1, 128));
    assert!(second.as_ptr() as usize >= first.as_ptr() as usize + 4096);
    assert_eq!(a.stats().installs, 2);
    assert_eq!(a.stats().blocks_in_use, 2);
}

#[test]
fn larger_requests_get_a_larger_factor() {
    let a = PackedArena::with_config(PackedConfig {
        max_request: 4096 * 8,
        max_blocks: 4,
        ..PackedConfig::new(4096)
    })
    .unwrap();
    let p = a.alloc(3 * 4096).unwrap();
    let s = a.snapshot();
    assert_eq!((s.block, s.factor), (1, 2), "12 KiB needs block_size << 2");
    // SAFETY: 12 KiB were allocated at p.
    unsafe { p.as_ptr().write_bytes(0x11, 3 * 4096) };
    assert!(a.owns(p.as_ptr().wrapping_add(3 * 4096 - 1)));
}

#[test]
fn bad_input_is_an_error_and_leaves_the_cursor_alone() {
    let a = small(DrainPolicy::Recycle);
    let before = a.snapshot();
    assert_eq!(a.alloc(0), Err(AllocError::ZeroSize));
    assert_eq!(
        a.alloc(4097),
        Err(AllocError::TooLarge {
            requested: 4097,
            max: 4096
        })
    );
    assert_eq!(
        a.alloc(usize::MAX),
        Err(AllocError::TooLarge {
            requested: usize::MAX,
            max: 4096
        })
    );
    assert_eq!(a.alloc_seqcst(0), Err(AllocError::ZeroSize));
    assert_eq!(
        a.allocate_aligned(8, 12).err(),
        Some(AllocError::BadAlignment { align: 12 })
    );
    // Alignment slack counts against M.
    assert!(matches!(
        a.allocate_aligned(4000, 512),
        Err(AllocError::TooLarge { .. })
    ));
    assert_eq!(
        a.snapshot(),
        before,
        "a refused request must not touch the cursor"
    );

    use allocasm::ConfigField::{BlockSize, MaxBlocks, MaxEntrants, MaxRequest};
    let cases = [
        (
            PackedConfig {
                block_size: 1000,
                ..PackedConfig::new(4096)
            },
            BlockSize,
            1000,
        ),
        (PackedConfig::new(8), BlockSize, 8),
        (
            PackedConfig {
                max_blocks: 0,
                ..PackedConfig::new(4096)
            },
            MaxBlocks,
            0,
        ),
        (
            PackedConfig {
                max_blocks: 129,
                ..PackedConfig::new(4096)
            },
            MaxBlocks,
            129,
        ),
        (
            PackedConfig {
                max_request: 0,
                ..PackedConfig::new(4096)
            },
            MaxRequest,
            0,
        ),
        (
            PackedConfig {
                max_request: 4096 * 8 + 1,
                ..PackedConfig::new(4096)
            },
            MaxRequest,
            4096 * 8 + 1,
        ),
        (
            PackedConfig {
                max_entrants: 0,
                ..PackedConfig::new(4096)
            },
            MaxEntrants,
            0,
        ),
        // Too many entrants for the envelope on every width: usize::MAX
        // entrants of 64 MiB requests (with 4 KiB requests, a 32-bit
        // usize::MAX still fits below P).
        (
            PackedConfig {
                max_entrants: usize::MAX,
                max_request: 1 << 26,
                ..PackedConfig::new(1 << 24)
            },
            MaxEntrants,
            usize::MAX,
        ),
    ];
    for (bad, field, value) in cases {
        assert_eq!(
            PackedArena::with_config(bad).err(),
            Some(AllocError::InvalidConfig { field, value }),
            "{bad:?} must be refused naming {field:?}"
        );
    }
}

#[test]
fn the_envelope_is_p_minus_c_times_m() {
    let a = PackedArena::with_config(PackedConfig {
        max_entrants: 1024,
        max_request: 4096,
        max_blocks: 2,
        ..PackedConfig::new(4096)
    })
    .unwrap();
    assert_eq!(a.limit(), (1u64 << 55) - 1024 * 4096);
    assert_eq!(
        PackedArena::BLOCK_BITS + PackedArena::FACTOR_BITS + PackedArena::POSITION_BITS,
        64
    );
}

#[test]
fn foreign_and_double_frees_are_reported() {
    let a = small(DrainPolicy::Recycle);
    let mut local = [0u8; 32];
    let foreign = NonNull::from(&mut local).cast::<u8>();
    assert_eq!(
        // SAFETY: refused without touching anything.
        unsafe { a.try_dealloc(foreign, 16) },
        Err(AllocError::ForeignPointer)
    );
    let p = a.alloc(32).unwrap();
    // SAFETY: refused: zero size.
    assert_eq!(unsafe { a.try_dealloc(p, 0) }, Err(AllocError::ZeroSize));
    assert_eq!(
        // SAFETY: refused: misaligned, so not an allocation of ours.
        unsafe { a.try_dealloc(NonNull::new(p.as_ptr().wrapping_add(3)).unwrap(), 16) },
        Err(AllocError::ForeignPointer)
    );
    // Rotate block 0 out, then free its only allocation: it drains.
    let _q = a.alloc(4096).unwrap();
    // SAFETY: p is live with 32 bytes.
    assert_eq!(unsafe { a.try_dealloc(p, 32) }, Ok(()));
    assert_eq!(a.stats().recycled, 1);
    // SAFETY: refused: the block has drained, so this is a second free.
    assert_eq!(unsafe { a.try_dealloc(p, 32) }, Err(AllocError::DoubleFree));
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "is not in this arena")]
fn foreign_dealloc_is_a_debug_panic() {
    let a = small(DrainPolicy::Recycle);
    let mut local = 0u8;
    // SAFETY: not sound to call in general; here it is the documented debug
    // panic that fires before anything is touched.
    unsafe { a.dealloc(NonNull::from(&mut local), 1) };
}

/// Fill block 0 with `n` allocations of `size`, rotate it out, and return them.
fn fill_and_rotate(a: &PackedArena, n: usize, size: usize) -> Vec<NonNull<u8>> {
    let v: Vec<_> = (0..n).map(|_| a.alloc(size).unwrap()).collect();
    assert_eq!(a.snapshot().block, 0);
    let _ = a.alloc(4096).unwrap(); // forces the rotation
    assert_eq!(a.snapshot().block, 1);
    v
}

#[test]
fn drained_block_is_recycled_exactly_when_the_last_byte_is_freed() {
    let a = small(DrainPolicy::Recycle);
    let v = fill_and_rotate(&a, 4, 100);
    for (i, p) in v.iter().enumerate() {
        assert_eq!(a.stats().recycled, 0, "recycled after only {i} frees");
        // SAFETY: each allocated above with 100 bytes, freed once.
        unsafe { a.dealloc(*p, 100) };
    }
    assert_eq!(a.stats().recycled, 1);
    assert!(!a.owns(v[0].as_ptr()), "a drained block is not owned");
    // Block 1 is full: the next rotation takes the recycled slot 0 (warm).
    let again = a.alloc(4096).unwrap();
    assert_eq!(a.snapshot().block, 0);
    assert_eq!(again, v[0]);
}

#[test]
fn the_current_block_never_drains() {
    let a = small(DrainPolicy::Recycle);
    let p = a.alloc(64).unwrap();
    // SAFETY: allocated above.
    unsafe { a.dealloc(p, 64) };
    assert_eq!(a.stats().recycled, 0);
    assert_eq!(
        a.alloc(16).unwrap().as_ptr() as usize,
        p.as_ptr() as usize + 64,
        "bump arena: no reuse inside the block"
    );
}

#[test]
fn evict_policy_decommits_and_recommits() {
    let a = small(DrainPolicy::Evict);
    let v = fill_and_rotate(&a, 2, 64);
    for p in &v {
        // SAFETY: allocated with 64 bytes, freed once.
        unsafe { a.dealloc(*p, 64) };
    }
    let s = a.stats();
    assert_eq!((s.evicted, s.recycled), (1, 0));
    let p = a.alloc(4096).unwrap();
    assert_eq!(p, v[0], "the evicted slot is recommitted on reinstall");
    // SAFETY: 4096 fresh bytes.
    unsafe { p.as_ptr().write_bytes(1, 4096) };
}

#[test]
fn exhaustion_is_out_of_memory_until_a_block_drains() {
    let a = PackedArena::with_config(PackedConfig {
        max_blocks: 2,
        ..PackedConfig::new(4096)
    })
    .unwrap();
    let b0 = a.alloc(4096).unwrap();
    let b1 = a.alloc(4096).unwrap();
    for _ in 0..3 {
        assert!(matches!(a.alloc(16), Err(AllocError::OutOfMemory { .. })));
    }
    // SAFETY: b0 allocated above with 4096 bytes.
    unsafe { a.dealloc(b0, 4096) };
    assert_eq!(
        a.stats().recycled,
        1,
        "the failed reservations were unwound"
    );
    let c = a.alloc(16).unwrap();
    assert_eq!(c, b0);
    // Block 1 was rotated out with its failed reservations; freeing b1 drains it.
    // SAFETY: b1 allocated above with 4096 bytes.
    unsafe { a.dealloc(b1, 4096) };
    assert_eq!(a.stats().recycled, 2);
}

#[test]
fn realloc_shrinks_in_place_only() {
    let a = small(DrainPolicy::Recycle);
    let p = a.alloc(256).unwrap();
    // SAFETY: p is a live 256-byte allocation.
    let q = unsafe { a.realloc(p, 256, 40) }.unwrap();
    assert_eq!(p, q);
    assert_eq!(
        // SAFETY: refused without effect.
        unsafe { a.realloc(q, 40, 41) },
        Err(AllocError::TooLarge {
            requested: 41,
            max: 40
        })
    );
    // SAFETY: refused without effect.
    assert_eq!(unsafe { a.realloc(q, 40, 0) }, Err(AllocError::ZeroSize));
    let _ = a.alloc(4096).unwrap(); // rotate
    // The accounting balances: freeing the shrunk size drains the block.
    // SAFETY: q is live with 40 bytes.
    unsafe { a.dealloc(q, 40) };
    assert_eq!(a.stats().recycled, 1);
}

#[test]
fn owns_walks_the_installed_blocks() {
    let a = small(DrainPolicy::Recycle);
    let p = a.alloc(16).unwrap();
    assert!(a.owns(p.as_ptr()));
    assert!(a.owns(p.as_ptr().wrapping_add(4095)));
    assert!(
        !a.owns(p.as_ptr().wrapping_add(4096)),
        "slot 1 is not installed yet"
    );
    let local = 0u8;
    assert!(!a.owns(&local));
}

#[test]
fn reset_starts_over_at_block_zero() {
    let mut a = small(DrainPolicy::Recycle);
    let first = a.alloc(16).unwrap();
    for _ in 0..20 {
        a.alloc(1024).unwrap();
    }
    assert!(a.snapshot().block > 0);
    a.reset();
    assert_eq!(
        a.snapshot(),
        allocasm::CursorSnapshot {
            block: 0,
            factor: 0,
            position: 0
        }
    );
    assert_eq!(a.alloc(16).unwrap(), first);
    assert_eq!(a.stats().blocks_in_use, 1);
}

#[test]
fn works_as_an_allocator_api2_allocator() {
    let a = small(DrainPolicy::Recycle);
    let mut v = allocator_api2::vec::Vec::new_in(&a);
    for i in 0..200u32 {
        v.push(i);
    }
    assert!(v.iter().copied().eq(0..200));
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.len(), 10);
    assert!(a.owns(v.as_ptr().cast()));
    let z: allocator_api2::boxed::Box<(), _> = allocator_api2::boxed::Box::new_in((), &a);
    drop(z);
}

fn assert_send_sync<T: Send + Sync + RawAllocator>() {}

#[test]
fn is_a_sync_raw_allocator() {
    assert_send_sync::<PackedArena>();
}

/// Several threads allocate, fill with a pattern, verify; ranges never
/// overlap across threads.
fn threads_allocate_disjoint(a: &PackedArena, free: bool) {
    let threads = if cfg!(miri) { 2 } else { 4 };
    let per = if cfg!(miri) { 20 } else { 2000 };
    let barrier = Barrier::new(threads);
    let ranges: Vec<Vec<(usize, usize)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let mut mine = Vec::new();
                    let mut kept = Vec::new();
                    for i in 0..per {
                        let size = 1 + (i * 37 + t * 11) % 200;
                        let p = match a.alloc(size) {
                            Ok(p) => p,
                            Err(AllocError::OutOfMemory { .. }) => break,
                            Err(e) => panic!("{e}"),
                        };
                        let tag = (t * 31 + i) as u8;
                        // SAFETY: `size` bytes at p are ours.
                        unsafe { p.as_ptr().write_bytes(tag, size) };
                        kept.push((p, size, tag));
                    }
                    for &(p, size, tag) in &kept {
                        // SAFETY: still live, `size` bytes.
                        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
                        assert!(
                            crate::filled(bytes, tag),
                            "thread {t}: pattern overwritten at {p:p}"
                        );
                        mine.push((p.as_ptr() as usize, p.as_ptr() as usize + size));
                    }
                    if free {
                        for &(p, size, _) in &kept {
                            // SAFETY: allocated above with `size`, freed once.
                            unsafe { a.dealloc(p, size) };
                        }
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    if !free {
        let mut all: Vec<_> = ranges.into_iter().flatten().collect();
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "ranges of two allocations overlap: {w:x?}"
            );
        }
    }
}

#[test]
fn threads_get_disjoint_ranges() {
    let a = PackedArena::with_config(PackedConfig {
        max_blocks: 128,
        ..PackedConfig::new(if cfg!(miri) { 1024 } else { 16384 })
    })
    .unwrap();
    threads_allocate_disjoint(&a, false);
    assert!(
        a.stats().installs > 1,
        "the run must cross block boundaries"
    );
}

// Frees from several threads recycle blocks, whose reuse by another thread
// is ordered only by the address dependency of the relaxed fast path (see
// the module docs): real hardware, not Miri's model.
#[cfg_attr(miri, ignore)]
#[test]
fn threads_free_and_blocks_recycle() {
    let a = PackedArena::with_config(PackedConfig {
        max_blocks: 16,
        ..PackedConfig::new(4096)
    })
    .unwrap();
    for _ in 0..5 {
        threads_allocate_disjoint(&a, true);
    }
    let s = a.stats();
    assert!(s.recycled > 0, "{s:?}");
    assert_eq!(
        s.blocks_in_use, 1,
        "every block but the current one drained: {s:?}"
    );
}
