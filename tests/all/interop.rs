//! The allocators in other crates' collections: `hashbrown::HashMap` (which
//! takes allocator-api2 0.2's `Allocator`), and allocator-api2 0.4's `Vec`
//! and `Box`, as re-exported by this crate, in `ThreadCursorArena`,
//! `LinearArena`, `SegregatedFit` and a few more. Before the 0.2 impls,
//! `HashMap::new_in(&ThreadCursorArena)` did not compile (E0277: the arena
//! implemented 0.4's trait, a different one).

use allocasm::allocator_api2::boxed::Box as Box04;
use allocasm::allocator_api2::vec::Vec as Vec04;
use allocasm::allocator_api2_02::alloc::Allocator as Allocator02;
use allocasm::allocator_api2_02::vec::Vec as Vec02;
use allocasm::unity::Persistent;
use allocasm::{FitPolicy, FreeList, LinearArena, Pool, SegregatedFit, ThreadCursorArena};
use hashbrown::HashMap;

/// Fills a map with `n` entries of owned strings in `alloc` (keys and values
/// both in the same allocator), then checks every entry and removes half.
fn map_roundtrip<A: Allocator02 + Clone>(alloc: A, n: usize) {
    let mut map: HashMap<u64, Vec02<u8, A>, _, A> =
        HashMap::with_hasher_in(hashbrown::DefaultHashBuilder::default(), alloc.clone());
    for i in 0..n as u64 {
        let mut v = Vec02::new_in(alloc.clone());
        v.extend((0..(i % 37) as u8).map(|b| b ^ i as u8));
        map.insert(i, v);
    }
    assert_eq!(map.len(), n);
    for i in 0..n as u64 {
        let v = &map[&i];
        assert_eq!(v.len() as u64, i % 37);
        assert!(v.iter().enumerate().all(|(b, &x)| x == b as u8 ^ i as u8));
    }
    for i in (0..n as u64).step_by(2) {
        assert!(map.remove(&i).is_some());
    }
    assert_eq!(map.len(), n / 2);
    assert!(map.keys().all(|k| k % 2 == 1));
}

/// A `Vec` that grows across many reallocations and a `Box`, through 0.4.
fn vec_and_box<A: allocasm::allocator_api2::alloc::Allocator + Copy>(alloc: A) {
    let mut v = Vec04::new_in(alloc);
    for i in 0..if cfg!(miri) { 1_000u32 } else { 10_000 } {
        v.push(i.wrapping_mul(2_654_435_761));
    }
    assert!(
        v.iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u32).wrapping_mul(2_654_435_761))
    );
    let b = Box04::new_in([0xa5u8; 300], alloc);
    assert!(b.iter().all(|&x| x == 0xa5));
}

#[test]
fn hashbrown_map_in_a_thread_cursor_arena() {
    let arena = ThreadCursorArena::new().unwrap();
    let mut map = HashMap::new_in(&arena);
    map.insert("one", 1);
    map.insert("two", 2);
    assert_eq!(map.get("two"), Some(&2));
    map_roundtrip(&arena, 2_000);
    vec_and_box(&arena);
    // Blocks really came from the arena.
    assert!(arena.stats().chunks > 0);
}

#[test]
fn hashbrown_map_in_a_linear_arena() {
    let arena = LinearArena::new(16 << 20).unwrap();
    let before = arena.used();
    map_roundtrip(&arena, 2_000);
    assert!(arena.used() > before, "the map's table came from the arena");
    let at = arena.used();
    vec_and_box(&arena);
    assert!(arena.used() > at);
}

#[test]
fn hashbrown_map_in_segregated_fit() {
    let a = SegregatedFit::new();
    // Enough entries under Miri for six growths of the table.
    map_roundtrip(&a, if cfg!(miri) { 100 } else { 5_000 });
    vec_and_box(&a);
    // Everything was freed: no block of the map or the vectors is in use.
    a.trim();
    let s = a.stats();
    assert_eq!(s.large_blocks, 0);
    assert_eq!(
        s.classes.iter().map(|c| c.in_use).sum::<usize>(),
        0,
        "blocks still in use after every collection was dropped"
    );
}

#[test]
fn hashbrown_map_in_the_other_allocators() {
    let pool = Pool::new(256, 16, 4096).unwrap();
    let mut m = HashMap::new_in(&pool);
    for i in 0..8u8 {
        m.insert(i, i);
    }
    assert_eq!(m.values().map(|&v| v as u32).sum::<u32>(), 28);
    drop(m);

    let list = FreeList::new(8 << 20, FitPolicy::FirstFit).unwrap();
    map_roundtrip(&list, 1_000);

    let persistent =
        Persistent::with_leak_detection(SegregatedFit::new(), allocasm::LeakDetection::Enabled);
    map_roundtrip(&persistent, 1_000);
    assert_eq!(persistent.live_allocations(), 0);
}

/// A block from 0.4's `allocate` grows and frees through 0.2's, and the
/// other way round: both are the same allocator.
#[test]
fn a_block_crosses_between_the_two_versions() {
    use allocasm::allocator_api2::alloc::Allocator as Allocator04;
    use core::alloc::Layout;
    let a = SegregatedFit::new();
    let small = Layout::from_size_align(24, 8).unwrap();
    let big = Layout::from_size_align(100_000, 8).unwrap();
    let p = Allocator04::allocate(&&a, small).unwrap().cast::<u8>();
    // SAFETY: a live block of `small` from this allocator.
    let q = unsafe {
        p.as_ptr().write_bytes(7, 24);
        Allocator02::grow(&&a, p, small, big).unwrap().cast::<u8>()
    };
    // SAFETY: the grown block keeps the first 24 bytes; freed once with
    // its layout, through the other version.
    unsafe {
        assert!(
            core::slice::from_raw_parts(q.as_ptr(), 24)
                .iter()
                .all(|&b| b == 7)
        );
        Allocator04::deallocate(&&a, q, big);
    }
    assert_eq!(a.stats().large_blocks, 0);
}
