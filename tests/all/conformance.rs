//! One conformance suite for every allocator of the crate.
//!
//! Each allocator's test module calls [`check`] with a [`Spec`] and a factory
//! that makes a fresh allocator; allocators with a bulk release also call
//! [`check_reset`]. The suite checks: alignment honoured, no two live
//! allocations overlap, contents survive until freed or reset, capacity
//! exhaustion is an error (not a panic, not null), reuse after free or reset,
//! and clear errors for bad alignment and zero size.
//!
//! Loop counts shrink under Miri.

#![allow(dead_code)]

use std::alloc::Layout;
use std::ptr::NonNull;

use allocasm::{AllocError, RawAllocator};

/// What an allocator promises, so the suite knows what to expect of it.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Name used in failure messages.
    pub name: &'static str,
    /// Largest alignment the allocator serves (the suite tests every power of
    /// two up to it).
    pub max_align: usize,
    /// Largest single request the suite should try.
    pub max_size: usize,
    /// Whether the capacity is fixed, so that allocating in a loop must end
    /// in an error (false for allocators that grow from the OS).
    pub bounded: bool,
    /// For pools: every request has exactly this size and alignment.
    pub fixed: Option<Layout>,
    /// The smallest alignment every block gets whatever was asked (Unity's
    /// Temp and Rewindable promise 64, TempJob and Persistent 16).
    pub min_align: usize,
    /// Whether a freed block's address must be handed out again by the next
    /// allocations of the same layout (false only where the allocator keeps
    /// freed addresses out of use on purpose: GuardZone's quarantine).
    pub reuses_addresses: bool,
}

impl Spec {
    /// A spec with the common defaults: alignments up to 256, requests up to
    /// 512 bytes, bounded capacity, any size.
    pub fn new(name: &'static str) -> Self {
        Spec {
            name,
            max_align: 256,
            max_size: 512,
            bounded: true,
            fixed: None,
            min_align: 1,
            reuses_addresses: true,
        }
    }
}

/// How many operations each check performs (smaller under Miri).
pub fn rounds() -> usize {
    if cfg!(miri) { 24 } else { 400 }
}

/// A tiny deterministic generator (xorshift), so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A live allocation the suite is tracking.
struct Live {
    ptr: NonNull<u8>,
    layout: Layout,
    tag: u8,
}

fn fill(ptr: NonNull<u8>, len: usize, tag: u8) {
    // SAFETY: the allocator handed out at least `len` bytes at `ptr`.
    unsafe { ptr.as_ptr().write_bytes(tag, len) };
}

fn verify(spec: &Spec, l: &Live) {
    // SAFETY: the block is live and `layout.size()` bytes long.
    let bytes = unsafe { std::slice::from_raw_parts(l.ptr.as_ptr(), l.layout.size()) };
    // One slice comparison first (a memcmp: Miri does it in one step, still
    // checking every byte is initialized), the byte loop only for the message.
    if crate::filled(bytes, l.tag) {
        return;
    }
    if let Some(i) = bytes.iter().position(|&b| b != l.tag) {
        panic!(
            "{}: contents of the block at {:p} ({} bytes) changed at byte {i}: {:#x} instead of {:#x}",
            spec.name,
            l.ptr,
            l.layout.size(),
            bytes[i],
            l.tag
        );
    }
}

fn random_layout(spec: &Spec, rng: &mut Rng) -> Layout {
    if let Some(fixed) = spec.fixed {
        return fixed;
    }
    let size = 1 + rng.below(spec.max_size);
    let max_shift = spec.max_align.trailing_zeros() as usize;
    let align = 1usize << rng.below(max_shift + 1);
    Layout::from_size_align(size, align).unwrap()
}

fn assert_disjoint(spec: &Spec, live: &[Live]) {
    let mut ranges: Vec<(usize, usize)> = live
        .iter()
        .map(|l| {
            (
                l.ptr.as_ptr() as usize,
                l.ptr.as_ptr() as usize + l.layout.size(),
            )
        })
        .collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "{}: live blocks overlap: {:#x}..{:#x} and {:#x}..{:#x}",
            spec.name,
            w[0].0,
            w[0].1,
            w[1].0,
            w[1].1
        );
    }
}

fn alloc_checked<A: RawAllocator>(
    spec: &Spec,
    a: &A,
    layout: Layout,
) -> Result<NonNull<u8>, AllocError> {
    let block = a.allocate(layout)?;
    let ptr = block.cast::<u8>();
    assert!(
        block.len() >= layout.size(),
        "{}: block of {} bytes for a {}-byte request",
        spec.name,
        block.len(),
        layout.size()
    );
    let align = layout.align().max(spec.min_align);
    assert_eq!(
        ptr.as_ptr() as usize % align,
        0,
        "{}: {:p} is not aligned to {align} (asked {layout:?})",
        spec.name,
        ptr
    );
    Ok(ptr)
}

/// Runs every check that applies to the allocator `make` builds.
pub fn check<A: RawAllocator>(spec: &Spec, make: impl Fn() -> A) {
    alignment_honoured(spec, &make());
    no_overlap_and_contents_survive(spec, &make());
    bad_input_is_an_error(spec, &make());
    if spec.bounded {
        exhaustion_is_an_error(spec, &make());
    }
    if A::FREES_INDIVIDUALLY {
        reuse_after_free(spec, &make());
    }
}

fn alignment_honoured<A: RawAllocator>(spec: &Spec, a: &A) {
    let mut align = 1;
    while align <= spec.max_align {
        let layout = spec
            .fixed
            .unwrap_or_else(|| Layout::from_size_align(1 + align % 7, align).unwrap());
        match alloc_checked(spec, a, layout) {
            Ok(p) => fill(p, layout.size(), 0xAB),
            Err(e) => panic!("{}: align {align} refused: {e}", spec.name),
        }
        align *= 2;
    }
}

fn no_overlap_and_contents_survive<A: RawAllocator>(spec: &Spec, a: &A) {
    let mut rng = Rng::new(0xC0FFEE);
    let mut live: Vec<Live> = Vec::new();
    for i in 0..rounds() {
        // Free a random live block now and then, when the allocator reuses.
        if A::FREES_INDIVIDUALLY && !live.is_empty() && rng.below(3) == 0 {
            let l = live.swap_remove(rng.below(live.len()));
            verify(spec, &l);
            // SAFETY: `l` was allocated here with `l.layout` and is live.
            unsafe { a.deallocate(l.ptr, l.layout) };
        }
        let layout = random_layout(spec, &mut rng);
        match alloc_checked(spec, a, layout) {
            Ok(ptr) => {
                let tag = (i % 251) as u8 + 1;
                fill(ptr, layout.size(), tag);
                live.push(Live { ptr, layout, tag });
            }
            Err(AllocError::OutOfMemory { .. }) if spec.bounded => break,
            Err(e) => panic!("{}: allocation {i} of {layout:?} failed: {e}", spec.name),
        }
    }
    assert!(
        !live.is_empty(),
        "{}: nothing could be allocated",
        spec.name
    );
    assert_disjoint(spec, &live);
    for l in &live {
        verify(spec, l);
    }
    if A::FREES_INDIVIDUALLY {
        for l in live {
            // SAFETY: allocated here with this layout, still live.
            unsafe { a.deallocate(l.ptr, l.layout) };
        }
    }
}

fn bad_input_is_an_error<A: RawAllocator>(spec: &Spec, a: &A) {
    for bad in [0usize, 3, 6, 24, 1000] {
        assert_eq!(
            a.allocate_aligned(8, bad).err(),
            Some(AllocError::BadAlignment { align: bad }),
            "{}: alignment {bad} must be refused",
            spec.name
        );
    }
    let zero = Layout::from_size_align(0, spec.fixed.map_or(1, |l| l.align())).unwrap();
    assert_eq!(
        a.allocate(zero).err(),
        Some(AllocError::ZeroSize),
        "{}: a zero-size request must be refused",
        spec.name
    );
    if spec.fixed.is_none() || spec.bounded {
        // Half the address space on 64 bits; on 32 bits that (1 GiB) can
        // succeed, so ask for the largest layout there is.
        let huge_size = if usize::BITS >= 64 {
            isize::MAX as usize / 2
        } else {
            isize::MAX as usize - 7
        };
        let huge = Layout::from_size_align(huge_size, 8).unwrap();
        match a.allocate(huge) {
            Err(
                AllocError::OutOfMemory { .. }
                | AllocError::TooLarge { .. }
                | AllocError::Os { .. },
            ) => {}
            // On 32 bits the largest layout (2 GiB) is not impossible: a
            // 32-bit process under qemu-user, or on a 64-bit kernel, has the
            // whole 4 GiB to map it in. Then it must be a real block: both
            // ends writable, and freed again.
            Ok(block) if usize::BITS < 64 && block.len() >= huge_size => {
                let p = block.cast::<u8>().as_ptr();
                // SAFETY: the block is `block.len()` bytes, valid for writes
                // until freed, so its first and last bytes are in bounds.
                unsafe {
                    p.write(0xA5);
                    p.add(huge_size - 1).write(0x5A);
                    assert_eq!((p.read(), p.add(huge_size - 1).read()), (0xA5, 0x5A));
                }
                if A::FREES_INDIVIDUALLY {
                    // SAFETY: allocated here with this layout, still live.
                    unsafe { a.deallocate(block.cast(), huge) };
                }
            }
            other => panic!(
                "{}: an impossible request must fail cleanly, got {other:?}",
                spec.name
            ),
        }
    }
}

fn exhaustion_is_an_error<A: RawAllocator>(spec: &Spec, a: &A) {
    let layout = spec
        .fixed
        .unwrap_or_else(|| Layout::from_size_align(spec.max_size, 8).unwrap());
    let limit = 1 << 20;
    for n in 0..limit {
        match a.allocate(layout) {
            Ok(_) => {}
            Err(AllocError::OutOfMemory { .. }) => {
                assert!(n > 0, "{}: not even one {layout:?} fit", spec.name);
                return;
            }
            Err(e) => panic!("{}: exhaustion must be OutOfMemory, got {e}", spec.name),
        }
    }
    panic!(
        "{}: {limit} allocations of {layout:?} never ran out",
        spec.name
    );
}

fn reuse_after_free<A: RawAllocator>(spec: &Spec, a: &A) {
    let layout = spec
        .fixed
        .unwrap_or_else(|| Layout::from_size_align(spec.max_size.min(64), 8).unwrap());
    // Fill to capacity (or a fixed count when unbounded), free everything,
    // and the same number of blocks must fit again.
    let cap = if spec.bounded { usize::MAX } else { rounds() };
    let mut first = Vec::new();
    while first.len() < cap {
        match a.allocate(layout) {
            Ok(b) => first.push(b.cast::<u8>()),
            Err(AllocError::OutOfMemory { .. }) => break,
            Err(e) => panic!("{}: {e}", spec.name),
        }
    }
    let n = first.len();
    let first_addrs: Vec<usize> = first.iter().map(|p| p.as_ptr() as usize).collect();
    for p in first {
        // SAFETY: allocated above with `layout`, not yet freed.
        unsafe { a.deallocate(p, layout) };
    }
    let mut second = Vec::new();
    for i in 0..n {
        match a.allocate(layout) {
            Ok(b) => second.push(b.cast::<u8>()),
            Err(e) => panic!(
                "{}: after freeing {n} blocks, allocation {i} failed: {e}",
                spec.name
            ),
        }
    }
    // The same count fitting again proves nothing for an allocator that
    // grows: it must hand a freed block out again.
    if spec.reuses_addresses {
        let freed: std::collections::HashSet<usize> = first_addrs.iter().copied().collect();
        let reused = second
            .iter()
            .filter(|p| freed.contains(&(p.as_ptr() as usize)))
            .count();
        assert!(
            reused > 0,
            "{}: none of the {n} freed blocks was handed out again",
            spec.name
        );
    }
    for p in second {
        // SAFETY: allocated above with `layout`, not yet freed.
        unsafe { a.deallocate(p, layout) };
    }
}

/// For allocators with a bulk release: fill, reset, and the whole capacity is
/// usable again, starting over at the same addresses where the allocator
/// promises that.
pub fn check_reset<A: RawAllocator>(spec: &Spec, mut a: A, reset: impl Fn(&mut A)) {
    let layout = spec
        .fixed
        .unwrap_or_else(|| Layout::from_size_align(spec.max_size.min(48), 8).unwrap());
    let fill_up = |a: &A| {
        let mut got = Vec::new();
        for _ in 0..rounds() {
            match a.allocate(layout) {
                Ok(b) => got.push(b.cast::<u8>()),
                Err(AllocError::OutOfMemory { .. }) => break,
                Err(e) => panic!("{}: {e}", spec.name),
            }
        }
        got
    };
    let before = fill_up(&a);
    assert!(
        !before.is_empty(),
        "{}: nothing fit before reset",
        spec.name
    );
    reset(&mut a);
    let after = fill_up(&a);
    assert_eq!(
        before.len(),
        after.len(),
        "{}: a reset must make the same capacity usable again",
        spec.name
    );
}

// ---------------------------------------------------------------------------
// Every bump allocator driven to exhaustion, then failing again and again.

/// One allocation request of the exhaustion harness: `(size, align)`.
pub type Request = (usize, usize);

/// Drives `alloc` with `requests` (cycled) until it fails, then makes
/// `failures` more requests of `big` bytes (each must fail: the allocator is
/// full), then small requests until those fail too, and checks that no two
/// blocks handed out overlap and that every block still holds what was
/// written into it.
///
/// This is the property an unconditional `fetch_add` that is never undone
/// breaks: failed reservations pile up on the offset until it wraps and a
/// later request is handed a live block.
pub fn exhaust_and_keep_failing(
    name: &str,
    mut alloc: impl FnMut(usize, usize) -> Result<NonNull<u8>, AllocError>,
    requests: &[Request],
    big: usize,
    failures: usize,
) {
    let mut live: Vec<(NonNull<u8>, usize, u8)> = Vec::new();
    let take = |live: &mut Vec<(NonNull<u8>, usize, u8)>, p: NonNull<u8>, size: usize| {
        let tag = (live.len() % 251) as u8 + 1;
        fill(p, size, tag);
        live.push((p, size, tag));
    };
    let mut full = false;
    for (i, &(size, align)) in requests.iter().cycle().enumerate().take(1 << 16) {
        match alloc(size, align) {
            Ok(p) => take(&mut live, p, size),
            Err(AllocError::OutOfMemory { .. }) => {
                full = true;
                break;
            }
            Err(e) => panic!("{name}: request {i} ({size}, {align}) failed: {e}"),
        }
    }
    assert!(full, "{name}: never ran out");
    for i in 0..failures {
        match alloc(big, 64) {
            Err(AllocError::OutOfMemory { .. } | AllocError::TooLarge { .. }) => {}
            Ok(p) => panic!("{name}: failure {i}: a full allocator served {big} bytes at {p:p}"),
            Err(e) => panic!("{name}: failure {i}: {e}"),
        }
    }
    for _ in 0..1 << 12 {
        match alloc(64, 64) {
            Ok(p) => take(&mut live, p, 64),
            Err(_) => break,
        }
    }
    let mut ranges: Vec<(usize, usize)> = live
        .iter()
        .map(|&(p, size, _)| (p.as_ptr() as usize, p.as_ptr() as usize + size))
        .collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "{name}: after {failures} failures, live blocks overlap: {:#x}..{:#x} and {:#x}..{:#x}",
            w[0].0,
            w[0].1,
            w[1].0,
            w[1].1
        );
    }
    for &(ptr, size, tag) in &live {
        verify(
            &Spec::new("exhaustion"),
            &Live {
                ptr,
                layout: Layout::from_size_align(size, 1).unwrap(),
                tag,
            },
        );
    }
}

mod exhaustion {
    use super::{Request, exhaust_and_keep_failing};
    use allocasm::{
        FrameAllocator, LinearArena, PackedArena, PackedConfig, Rewindable, StackAllocator, Temp,
        TempJob, ThreadCursorArena, ThreadCursorConfig,
    };
    use proptest::prelude::*;

    const CAP: usize = 4096;

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: if cfg!(miri) { 2 } else { 24 },
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    fn requests() -> impl Strategy<Value = Vec<Request>> {
        prop::collection::vec((1usize..700, 0u32..9).prop_map(|(s, a)| (s, 1 << a)), 1..12)
    }

    fn failures() -> std::ops::Range<usize> {
        if cfg!(miri) { 1..40 } else { 1..3000 }
    }

    proptest! {
        #![proptest_config(config())]

        /// Every bump allocator of the crate, full and failing repeatedly,
        /// never hands out a block that overlaps a live one.
        #[test]
        fn bump_allocators_stay_disjoint_under_repeated_failure(
            reqs in requests(),
            n in failures(),
        ) {
            let a = LinearArena::new(CAP).unwrap();
            exhaust_and_keep_failing("LinearArena", |s, al| a.alloc(s, al), &reqs, CAP, n);
            let a = StackAllocator::new(CAP).unwrap();
            exhaust_and_keep_failing("StackAllocator", |s, al| a.alloc(s, al), &reqs, CAP, n);
            let a = FrameAllocator::<2>::new(CAP).unwrap();
            exhaust_and_keep_failing("FrameAllocator", |s, al| a.alloc(s, al), &reqs, CAP, n);
            let job = TempJob::new(CAP).unwrap().with_overflow_limit(0).on_leak(|_| {});
            let temp = Temp::new(CAP, &job).unwrap();
            exhaust_and_keep_failing("Temp", |s, al| temp.try_alloc(s, al), &reqs, CAP, n);
            exhaust_and_keep_failing("TempJob", |s, al| job.try_alloc(s, al), &reqs, CAP, n);
            let r = Rewindable::new(CAP, CAP).unwrap();
            exhaust_and_keep_failing("Rewindable", |s, al| r.try_alloc(s, al), &reqs, CAP, n);
            let t = ThreadCursorArena::with_config(ThreadCursorConfig {
                chunk_size: 1024,
                block_size: CAP,
                max_blocks: 1,
            })
            .unwrap();
            exhaust_and_keep_failing("ThreadCursorArena", |s, _| t.alloc(s), &reqs, CAP, n);
            let p = PackedArena::with_config(PackedConfig {
                max_blocks: 1,
                ..PackedConfig::new(CAP)
            })
            .unwrap();
            exhaust_and_keep_failing("PackedArena", |s, _| p.alloc(s), &reqs, CAP, n);
        }
    }
}

// ---------------------------------------------------------------------------
// One collection workload over every allocator that implements `Allocator`.

/// The same collection workload over one allocator (`allocator_api2`'s
/// `Vec` and `Box`): a vector grown one push at a time, read back, shrunk;
/// a box; vectors of vectors; a zeroed block. Every value is read back.
pub fn collection_workload<A: allocator_api2::alloc::Allocator + Copy>(name: &str, a: A) {
    use allocator_api2::boxed::Box;
    use allocator_api2::vec::Vec;
    let n = if cfg!(miri) { 40 } else { 600 };
    let mut v: Vec<u64, A> = Vec::new_in(a);
    for i in 0..n {
        v.push(i as u64 * 3 + 1);
    }
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(x, i as u64 * 3 + 1, "{name}: Vec element {i} after growth");
    }
    v.truncate(n / 3);
    v.shrink_to_fit();
    assert!(v.capacity() >= n / 3, "{name}: shrink_to_fit lost elements");
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(x, i as u64 * 3 + 1, "{name}: Vec element {i} after shrink");
    }
    let b = Box::new_in([0xA5u8; 100], a);
    let mut nested: Vec<Vec<u32, A>, A> = Vec::new_in(a);
    for i in 0..12u32 {
        let mut inner = Vec::with_capacity_in(i as usize, a);
        inner.extend(0..i * 5);
        nested.push(inner);
    }
    for (i, inner) in nested.iter().enumerate() {
        assert!(
            inner.iter().copied().eq(0..i as u32 * 5),
            "{name}: inner Vec {i} changed"
        );
    }
    assert!(b.iter().all(|&x| x == 0xA5), "{name}: Box contents changed");
    let layout = Layout::from_size_align(256, 16).unwrap();
    let z = a
        .allocate_zeroed(layout)
        .unwrap_or_else(|_| panic!("{name}: allocate_zeroed failed"));
    // SAFETY: `allocate_zeroed` handed out at least 256 initialised bytes.
    let zs = unsafe { std::slice::from_raw_parts(z.cast::<u8>().as_ptr(), 256) };
    assert!(
        zs.iter().all(|&x| x == 0),
        "{name}: allocate_zeroed not zero"
    );
    // SAFETY: allocated just above with `layout`.
    unsafe { a.deallocate(z.cast(), layout) };
    drop(nested);
    drop(b);
    drop(v);
}

/// An allocator that claims to free individually but never hands a freed
/// block out again (it grows instead): `reuse_after_free` must catch it.
struct NeverReuses(allocasm::LinearArena<'static>);

// SAFETY: `allocate` forwards to the linear arena, which upholds the
// contract; `deallocate` keeps the block allocated (never reused), which the
// contract allows.
unsafe impl RawAllocator for NeverReuses {
    const FREES_INDIVIDUALLY: bool = true;
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.0.allocate(layout)
    }
    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {}
}

#[test]
fn reuse_after_free_catches_an_allocator_that_never_reuses() {
    let spec = Spec {
        bounded: false,
        ..Spec::new("NeverReuses")
    };
    let a = NeverReuses(allocasm::LinearArena::new(1 << 20).unwrap());
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reuse_after_free(&spec, &a)));
    let msg = caught.expect_err("a growing allocator that never reuses passed reuse_after_free");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("handed out again"), "{msg}");
}

mod collections {
    use super::collection_workload;
    use allocasm::{
        FitPolicy, FrameAllocator, FreeList, GuardZone, Guarded, LinearArena, MemoryTag,
        MemoryTracker, PackedArena, PageAllocator, Persistent, Rewindable, SegregatedFit,
        StackAllocator, Temp, TempJob, ThreadCursorArena, Tracked,
    };

    /// Every allocator of the crate whose contract fits `Allocator` (not
    /// `Pool`: its blocks have one size, so a growing `Vec` cannot live in
    /// it) runs the same workload.
    #[test]
    fn the_same_collection_workload_runs_over_every_allocator() {
        const CAP: usize = 1 << 16;
        let linear = LinearArena::new(CAP).unwrap();
        collection_workload("LinearArena", &linear);
        let stack = StackAllocator::new(CAP).unwrap();
        collection_workload("StackAllocator", &stack);
        let frames = FrameAllocator::<2>::new(CAP).unwrap();
        collection_workload("FrameAllocator", &frames);
        let list = FreeList::new(CAP, FitPolicy::FirstFit).unwrap();
        collection_workload("FreeList", &list);
        collection_workload("PageAllocator", PageAllocator::new());
        let zone = GuardZone::new();
        collection_workload("GuardZone", &zone);
        assert_eq!(zone.live(), 0, "GuardZone: the workload freed everything");
        let guarded = Guarded::new(FreeList::new(CAP, FitPolicy::BestFit).unwrap());
        collection_workload("Guarded<FreeList>", &guarded);
        let tracker = MemoryTracker::new();
        let tracked = Tracked::new(
            FreeList::new(CAP, FitPolicy::FirstFit).unwrap(),
            &tracker,
            MemoryTag::Physics,
        );
        collection_workload("Tracked<FreeList>", &tracked);
        assert_eq!(tracked.live_bytes(), 0, "Tracked: every byte unbooked");
        let packed = PackedArena::new(CAP).unwrap();
        collection_workload("PackedArena", &packed);
        let cursor = ThreadCursorArena::new().unwrap();
        collection_workload("ThreadCursorArena", &cursor);
        let job = TempJob::new(CAP).unwrap().on_leak(|_| {});
        collection_workload("TempJob", &job);
        let temp = Temp::new(CAP, &job).unwrap();
        collection_workload("Temp", &temp);
        let persistent = Persistent::with_base(PageAllocator::new()).on_leak(|_| {});
        collection_workload("Persistent<PageAllocator>", &persistent);
        let rewindable = Rewindable::new(4096, CAP).unwrap();
        collection_workload("Rewindable", &rewindable);
    }

    /// The same workload over SegregatedFit and Persistent over it (apart,
    /// so the Miri step can run them without weak-memory emulation; see
    /// `scripts/test`).
    #[test]
    fn the_same_collection_workload_runs_over_segregated_fit() {
        let seg = SegregatedFit::new();
        collection_workload("SegregatedFit", &seg);
        let persistent = Persistent::new().on_leak(|_| {});
        collection_workload("Persistent<SegregatedFit>", &persistent);
    }

    /// The bump allocators grow and shrink their last block in place: a
    /// vector pushed one element at a time never moves and uses exactly its
    /// capacity (before `grow` was overridden every doubling copied into a
    /// new block and left the old one behind: about twice the bytes).
    #[test]
    fn bump_allocators_resize_the_last_block_in_place() {
        fn check(
            name: &str,
            a: impl allocator_api2::alloc::Allocator + Copy,
            used: impl Fn() -> usize,
            round: usize,
        ) {
            let start = used();
            let mut v: allocator_api2::vec::Vec<u64, _> =
                allocator_api2::vec::Vec::with_capacity_in(4, a);
            let first = v.as_ptr();
            for i in 0..500u64 {
                v.push(i);
            }
            assert_eq!(v.as_ptr(), first, "{name}: the last block moved on growth");
            let bytes = (v.capacity() * 8).next_multiple_of(round);
            assert_eq!(used() - start, bytes, "{name}: growth was not in place");
            v.truncate(10);
            v.shrink_to_fit();
            assert_eq!(v.as_ptr(), first, "{name}: the last block moved on shrink");
            assert_eq!(
                used() - start,
                (v.capacity() * 8).next_multiple_of(round),
                "{name}: shrink gave nothing back"
            );
            assert!(v.iter().copied().eq(0..10), "{name}: contents");
        }
        let linear = LinearArena::new(1 << 16).unwrap();
        check("LinearArena", &linear, || linear.used(), 1);
        let stack = StackAllocator::new(1 << 16).unwrap();
        check("StackAllocator", &stack, || stack.used(), 1);
        let frames = FrameAllocator::<2>::new(1 << 16).unwrap();
        check("FrameAllocator", &frames, || frames.used(), 1);
        let job = TempJob::new(1 << 16).unwrap().on_leak(|_| {});
        let temp = Temp::new(1 << 16, &job).unwrap();
        check("Temp", &temp, || temp.used(), 64);
    }
}

// ---------------------------------------------------------------------------
// Bad input, allocator by allocator: the error must name what was wrong.

mod bad_input {
    use std::fmt::Debug;
    use std::ptr::NonNull;

    use allocasm::{
        AllocError, FitPolicy, FrameAllocator, FreeList, GuardZone, LinearArena, PackedArena,
        PackedConfig, PageAllocator, Pool, RawAllocator, Rewindable, StackAllocator, Temp, TempJob,
        ThreadCursorArena, ThreadCursorConfig,
    };

    /// Collects every row that came out wrong, so one run lists them all.
    struct Table {
        rows: usize,
        wrong: Vec<String>,
    }

    impl Table {
        fn row<T: Debug>(
            &mut self,
            what: &str,
            got: Result<T, AllocError>,
            want: &str,
            ok: impl Fn(&AllocError) -> bool,
        ) {
            self.rows += 1;
            match &got {
                Err(e) if ok(e) => {}
                _ => self.wrong.push(format!("{what}: got {got:?}, want {want}")),
            }
        }
    }

    macro_rules! row {
        ($t:expr, $what:expr, $got:expr, $($pat:tt)+) => {
            $t.row($what, $got, stringify!($($pat)+), |e| matches!(e, $($pat)+))
        };
    }

    /// The request-side rows every allocator with an `alloc(size, align)`
    /// answers the same way.
    fn alloc_rows(
        t: &mut Table,
        name: &str,
        alloc: impl Fn(usize, usize) -> Result<NonNull<u8>, AllocError>,
        capacity: usize,
    ) {
        row!(
            t,
            &format!("{name}: size 0"),
            alloc(0, 8),
            AllocError::ZeroSize
        );
        row!(
            t,
            &format!("{name}: align 0"),
            alloc(8, 0),
            AllocError::BadAlignment { align: 0 }
        );
        row!(
            t,
            &format!("{name}: align 3"),
            alloc(8, 3),
            AllocError::BadAlignment { align: 3 }
        );
        row!(
            t,
            &format!("{name}: size usize::MAX"),
            alloc(usize::MAX, 8),
            AllocError::TooLarge {
                requested: usize::MAX,
                ..
            } | AllocError::OutOfMemory {
                requested: usize::MAX,
                ..
            }
        );
        let huge = isize::MAX as usize / 2;
        row!(
            t,
            &format!("{name}: size isize::MAX / 2"),
            alloc(huge, 8),
            AllocError::TooLarge { .. } | AllocError::OutOfMemory { .. } | AllocError::Os { .. }
        );
        // An alignment above the whole block: served only where the block
        // happens to be that aligned, and then aligned; otherwise refused
        // as too large or out of room.
        let above = (2 * capacity).next_power_of_two();
        match alloc(8, above) {
            Ok(p) if (p.as_ptr() as usize).is_multiple_of(above) => {}
            got => row!(
                t,
                &format!("{name}: align {above}, above the block"),
                got,
                AllocError::TooLarge { .. } | AllocError::OutOfMemory { .. }
            ),
        }
    }

    #[test]
    fn every_constructor_and_free_path_names_the_bad_input() {
        let mut t = Table {
            rows: 0,
            wrong: Vec::new(),
        };
        let page = allocasm::PageAllocator::new().page_size();
        // Sizes no allocation can have; not asked under Miri (its heap
        // reports exhaustion as a fatal error, not a null).
        let huge_ctor = !cfg!(miri);

        // --- constructors
        row!(
            t,
            "LinearArena::new(0)",
            LinearArena::new(0),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "StackAllocator::new(0)",
            StackAllocator::new(0),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "FrameAllocator::<2>::new(0)",
            FrameAllocator::<2>::new(0),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "FreeList::new(0)",
            FreeList::new(0, FitPolicy::FirstFit),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "Pool::new(0, 8, 4)",
            Pool::new(0, 8, 4),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::SlotSize,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "Pool::new(8, 0, 4)",
            Pool::new(8, 0, 4),
            AllocError::BadAlignment { align: 0 }
        );
        row!(
            t,
            "Pool::new(8, 3, 4)",
            Pool::new(8, 3, 4),
            AllocError::BadAlignment { align: 3 }
        );
        row!(
            t,
            "Pool::new(8, 8, 0)",
            Pool::new(8, 8, 0),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Count,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "Pool::new(8, 8, usize::MAX)",
            Pool::new(8, 8, usize::MAX),
            AllocError::TooLarge {
                requested: usize::MAX,
                ..
            }
        );
        if huge_ctor {
            row!(
                t,
                "LinearArena::new(usize::MAX)",
                LinearArena::new(usize::MAX),
                AllocError::TooLarge {
                    requested: usize::MAX,
                    ..
                }
            );
            row!(
                t,
                "FreeList::new(usize::MAX)",
                FreeList::new(usize::MAX, FitPolicy::BestFit),
                AllocError::TooLarge {
                    requested: usize::MAX,
                    ..
                }
            );
        }
        let job = TempJob::new(1 << 16)
            .unwrap()
            .with_overflow_limit(1 << 20)
            .on_leak(|_| {});
        row!(
            t,
            "Temp::new(0)",
            Temp::new(0, &job),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "Temp::new(63)",
            Temp::new(63, &job),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 63,
                ..
            }
        );
        if huge_ctor {
            row!(
                t,
                "Temp::new(usize::MAX)",
                Temp::new(usize::MAX, &job),
                AllocError::TooLarge { .. }
            );
        }
        row!(
            t,
            "TempJob::new(0)",
            TempJob::new(0),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "TempJob::new(31)",
            TempJob::new(31),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::Capacity,
                value: 31,
                ..
            }
        );
        row!(
            t,
            "TempJob::new(usize::MAX)",
            TempJob::new(usize::MAX),
            AllocError::TooLarge {
                requested: _,
                max: allocasm::unity::MAX_CAPACITY
            }
        );
        row!(
            t,
            "Rewindable::new(0, 4096)",
            Rewindable::new(0, 4096),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::InitialBlock,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "Rewindable::new(8192, 4096)",
            Rewindable::new(8192, 4096),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::MaxBlock,
                value: 4096,
                ..
            }
        );
        row!(
            t,
            "Rewindable::new(64, usize::MAX)",
            Rewindable::new(64, usize::MAX),
            AllocError::TooLarge {
                requested: usize::MAX,
                ..
            }
        );

        row!(
            t,
            "PackedArena::new(1000)",
            PackedArena::new(1000),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::BlockSize,
                value: 1000,
                ..
            }
        );
        row!(
            t,
            "PackedConfig { max_entrants: 0 }",
            PackedArena::with_config(PackedConfig {
                max_entrants: 0,
                ..PackedConfig::new(4096)
            }),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::MaxEntrants,
                value: 0,
                ..
            }
        );
        row!(
            t,
            "ThreadCursorConfig { chunk_size: 24 }",
            ThreadCursorArena::with_config(ThreadCursorConfig {
                chunk_size: 24,
                ..Default::default()
            }),
            AllocError::InvalidConfig {
                field: allocasm::ConfigField::ChunkSize,
                value: 24,
                ..
            }
        );

        // --- requests
        const CAP: usize = 1 << 16;
        let linear = LinearArena::new(CAP).unwrap();
        alloc_rows(&mut t, "LinearArena", |s, a| linear.alloc(s, a), CAP);
        let stack = StackAllocator::new(CAP).unwrap();
        alloc_rows(&mut t, "StackAllocator", |s, a| stack.alloc(s, a), CAP);
        let frames = FrameAllocator::<2>::new(CAP).unwrap();
        alloc_rows(&mut t, "FrameAllocator", |s, a| frames.alloc(s, a), CAP);
        let list = FreeList::new(CAP, FitPolicy::FirstFit).unwrap();
        alloc_rows(&mut t, "FreeList", |s, a| list.alloc(s, a), CAP);
        let temp = Temp::new(CAP, &job).unwrap();
        alloc_rows(&mut t, "Temp::try_alloc", |s, a| temp.try_alloc(s, a), CAP);
        let bounded = TempJob::new(CAP)
            .unwrap()
            .with_overflow_limit(0)
            .on_leak(|_| {});
        alloc_rows(&mut t, "TempJob", |s, a| bounded.alloc(s, a), CAP);
        let r = Rewindable::new(4096, CAP).unwrap();
        alloc_rows(&mut t, "Rewindable", |s, a| r.alloc(s, a), CAP);
        let pool = Pool::new(48, 16, 8).unwrap();
        let pool_alloc = |s, a| pool.allocate_aligned(s, a).map(|b| b.cast::<u8>());
        row!(t, "Pool: size 0", pool_alloc(0, 8), AllocError::ZeroSize);
        row!(
            t,
            "Pool: align 3",
            pool_alloc(8, 3),
            AllocError::BadAlignment { align: 3 }
        );
        row!(
            t,
            "Pool: size above the slot",
            pool_alloc(49, 8),
            AllocError::TooLarge {
                requested: 49,
                max: 48
            }
        );
        row!(
            t,
            "Pool: align above the slot",
            pool_alloc(8, 32),
            AllocError::TooLarge {
                requested: 32,
                max: 16
            }
        );
        let zone = GuardZone::new();
        row!(
            t,
            "GuardZone: size 0",
            zone.alloc(0, 8),
            AllocError::ZeroSize
        );
        row!(
            t,
            "GuardZone: align 0",
            zone.alloc(8, 0),
            AllocError::BadAlignment { align: 0 }
        );
        row!(
            t,
            "GuardZone: align 3",
            zone.alloc(8, 3),
            AllocError::BadAlignment { align: 3 }
        );
        row!(t, "GuardZone: align above a page", zone.alloc(8, 2 * page),
            AllocError::TooLarge { requested, max } if *requested == 2 * page && *max == page);
        row!(
            t,
            "GuardZone: size usize::MAX",
            zone.alloc(usize::MAX, 8),
            AllocError::TooLarge {
                requested: usize::MAX,
                ..
            }
        );
        let pages = PageAllocator::new();
        row!(
            t,
            "PageAllocator: size 0",
            pages.alloc(0),
            AllocError::ZeroSize
        );
        row!(
            t,
            "PageAllocator: size usize::MAX",
            pages.alloc(usize::MAX),
            AllocError::TooLarge {
                requested: usize::MAX,
                ..
            }
        );
        row!(t, "PageAllocator: align above a page",
            pages.allocate(std::alloc::Layout::from_size_align(8, 2 * page).unwrap()),
            AllocError::TooLarge { requested, max } if *requested == 2 * page && *max == page);

        // --- frees
        let mut local = 0u64;
        let foreign = NonNull::from(&mut local).cast::<u8>();
        let p = zone.alloc(32, 8).unwrap();
        // SAFETY: the checked free refuses a wrong size and a foreign
        // pointer without touching memory; `p` is freed once, then refused.
        unsafe {
            row!(
                t,
                "GuardZone: free with the wrong size",
                zone.try_dealloc(p, 31),
                AllocError::SizeMismatch {
                    allocated: 32,
                    freed: 31
                }
            );
            row!(
                t,
                "GuardZone: foreign pointer",
                zone.try_dealloc(foreign, 8),
                AllocError::ForeignPointer
            );
            zone.try_dealloc(p, 32).unwrap();
            row!(
                t,
                "GuardZone: double free",
                zone.try_dealloc(p, 32),
                AllocError::DoubleFree
            );
        }
        let q = pool.alloc().unwrap();
        // SAFETY: `free_checked` refuses foreign and free slots before
        // touching them; `q` is freed once, then refused.
        unsafe {
            row!(
                t,
                "Pool: foreign pointer",
                pool.free_checked(foreign),
                AllocError::ForeignPointer
            );
            pool.free_checked(q).unwrap();
            row!(
                t,
                "Pool: double free",
                pool.free_checked(q),
                AllocError::DoubleFree
            );
        }
        let f = list.alloc(40, 8).unwrap();
        // SAFETY: `free` checks the pointer against the region and the block
        // header before writing; `f` is freed once, then refused.
        unsafe {
            row!(
                t,
                "FreeList: foreign pointer",
                list.free(foreign),
                AllocError::ForeignPointer
            );
            list.free(f).unwrap();
            row!(
                t,
                "FreeList: double free",
                list.free(f),
                AllocError::DoubleFree
            );
        }
        let b = bounded.alloc(40, 16).unwrap();
        let big = job.alloc(1 << 17, 16).unwrap();
        assert!(!job.owns(big.as_ptr()), "served by the overflow");
        // SAFETY: `dealloc` checks the record (pool) or the overflow table
        // before freeing; each block is freed once, then refused.
        unsafe {
            row!(
                t,
                "TempJob: foreign pointer",
                bounded.dealloc(foreign),
                AllocError::ForeignPointer
            );
            row!(
                t,
                "TempJob: pointer into a block",
                bounded.dealloc(b.add(16)),
                AllocError::ForeignPointer
            );
            bounded.dealloc(b).unwrap();
            row!(
                t,
                "TempJob: double free (pool)",
                bounded.dealloc(b),
                AllocError::DoubleFree
            );
            job.dealloc(big).unwrap();
            row!(
                t,
                "TempJob: double free (overflow)",
                job.dealloc(big),
                AllocError::DoubleFree
            );
        }
        let mut other = StackAllocator::new(256).unwrap();
        let mut s = StackAllocator::new(256).unwrap();
        let alien = other.marker();
        row!(
            t,
            "StackAllocator: another stack's marker",
            s.free_to_marker(alien),
            AllocError::BadMarker
        );
        s.alloc(64, 8).unwrap();
        let high = s.marker();
        s.reset();
        row!(
            t,
            "StackAllocator: marker above the offset",
            s.free_to_marker(high),
            AllocError::BadMarker
        );
        other.reset();
        let mut r = Rewindable::new(4096, 4096).unwrap();
        let h = r.alloc_handle(64, 8).unwrap();
        let r2 = Rewindable::new(4096, 4096).unwrap();
        row!(
            t,
            "Rewindable: another allocator's handle",
            r2.get(h),
            AllocError::BadMarker
        );
        r.rewind();
        row!(
            t,
            "Rewindable: stale handle",
            r.get(h),
            AllocError::BadMarker
        );

        assert!(
            t.wrong.is_empty(),
            "{} of {} bad-input rows came out wrong:\n{}",
            t.wrong.len(),
            t.rows,
            t.wrong.join("\n")
        );
    }
}
