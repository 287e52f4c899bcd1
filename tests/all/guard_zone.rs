//! GuardZone: placement against the guards, bad frees, and the faults
//! themselves (each proved in a child process that must die of SIGSEGV or
//! SIGBUS).

use std::alloc::Layout;

use allocasm::{AllocError, GuardSide, GuardZone, PageAllocator};

use crate::conformance::{self, Spec};

#[test]
fn conformance() {
    let spec = Spec {
        bounded: false,
        // Freed ranges stay quarantined (and faulting) on purpose.
        reuses_addresses: false,
        max_size: 300,
        ..Spec::new("GuardZone")
    };
    conformance::check(&spec, GuardZone::new);
    conformance::check(
        &Spec {
            name: "GuardZone(Leading)",
            ..spec
        },
        || GuardZone::with_side(GuardSide::Leading),
    );
}

#[test]
fn trailing_data_ends_on_the_guard() {
    let g = GuardZone::new();
    let page = PageAllocator::new().page_size();
    for (size, align) in [(1, 1), (13, 1), (64, 16), (page, 8), (page + 16, 16)] {
        let p = g.alloc(size, align).unwrap();
        assert_eq!(p.as_ptr() as usize % align, 0);
        assert_eq!(
            (p.as_ptr() as usize + size) % page,
            0,
            "size {size}: data must end on the guard page"
        );
        // SAFETY: `size` bytes were just allocated at `p`.
        unsafe { p.as_ptr().write_bytes(0x5A, size) };
        // SAFETY: allocated above with this size.
        unsafe { g.try_dealloc(p, size) }.unwrap();
    }
    // A size that is not a multiple of the alignment leaves less than
    // `align` bytes of slack.
    let p = g.alloc(20, 16).unwrap();
    let slack = page - (p.as_ptr() as usize + 20) % page;
    assert!(slack < 16, "slack {slack}");
    // SAFETY: allocated above with size 20.
    unsafe { g.dealloc(p, 20) };
}

#[test]
fn leading_data_starts_on_the_guard() {
    let g = GuardZone::with_side(GuardSide::Leading);
    let page = PageAllocator::new().page_size();
    let p = g.alloc(100, 8).unwrap();
    assert_eq!(p.as_ptr() as usize % page, 0);
    assert_eq!(g.live(), 1);
    // SAFETY: allocated above.
    unsafe { g.dealloc(p, 100) };
    assert_eq!(g.live(), 0);
}

#[test]
fn bad_input_is_an_error() {
    let g = GuardZone::new();
    let page = PageAllocator::new().page_size();
    assert_eq!(g.alloc(0, 8), Err(AllocError::ZeroSize));
    assert_eq!(g.alloc(8, 3), Err(AllocError::BadAlignment { align: 3 }));
    assert_eq!(
        g.alloc(8, 2 * page),
        Err(AllocError::TooLarge {
            requested: 2 * page,
            max: page
        })
    );
    assert!(matches!(
        g.alloc(usize::MAX - 10, 8),
        Err(AllocError::TooLarge { .. })
    ));
    let p = g.alloc(32, 8).unwrap();
    assert_eq!(
        // SAFETY: the checked free refuses a wrong size without touching memory.
        unsafe { g.try_dealloc(p, 31) },
        Err(AllocError::SizeMismatch {
            allocated: 32,
            freed: 31
        }),
        "wrong size"
    );
    let mut local = 0u8;
    let foreign = std::ptr::NonNull::from(&mut local);
    assert_eq!(
        // SAFETY: refused: not ours.
        unsafe { g.try_dealloc(foreign, 1) },
        Err(AllocError::ForeignPointer)
    );
    // SAFETY: a live allocation of 32 bytes.
    assert_eq!(unsafe { g.try_dealloc(p, 32) }, Ok(()));
    // SAFETY: refused: already freed (still quarantined).
    assert_eq!(unsafe { g.try_dealloc(p, 32) }, Err(AllocError::DoubleFree));
}

#[test]
fn quarantine_releases_the_oldest() {
    let g = GuardZone::new();
    let n = if cfg!(miri) {
        8
    } else {
        GuardZone::QUARANTINE + 10
    };
    for _ in 0..n {
        let p = g.alloc(16, 8).unwrap();
        // SAFETY: allocated above.
        unsafe { g.dealloc(p, 16) };
    }
    assert_eq!(g.live(), 0);
}

#[test]
fn raw_allocator_layouts() {
    let g = GuardZone::new();
    let layout = Layout::from_size_align(40, 32).unwrap();
    let b = allocasm::RawAllocator::allocate(&g, layout).unwrap();
    assert_eq!(b.len(), 40);
    assert_eq!(b.cast::<u8>().as_ptr() as usize % 32, 0);
    // SAFETY: allocated above with `layout`.
    unsafe { allocasm::RawAllocator::deallocate(&g, b.cast(), layout) };
}

// ---- faults, each in a child process ----

#[cfg(unix)]
const FAULT_ENV: &str = "ALLOCASM_FAULT";

/// What a child performs: returns normally only if no fault happened.
#[cfg(unix)]
fn scenario(name: &str) {
    let volatile_write = |p: *mut u8| {
        // SAFETY: deliberately not sound: this touches a guard page (or a
        // freed one) so the child process dies of the fault.
        unsafe { p.write_volatile(0xEE) };
    };
    match name {
        "overrun" => {
            let g = GuardZone::new();
            let p = g.alloc(100, 1).unwrap();
            // SAFETY: in bounds: the last byte is writable.
            unsafe { p.as_ptr().add(99).write_volatile(1) };
            volatile_write(p.as_ptr().wrapping_add(100));
        }
        "underrun" => {
            let g = GuardZone::with_side(GuardSide::Leading);
            let p = g.alloc(100, 8).unwrap();
            // SAFETY: in bounds.
            unsafe { p.as_ptr().write_volatile(1) };
            volatile_write(p.as_ptr().wrapping_sub(1));
        }
        "use_after_free" => {
            let g = GuardZone::new();
            let p = g.alloc(64, 8).unwrap();
            // SAFETY: in bounds, before the free.
            unsafe { p.as_ptr().write_volatile(1) };
            // SAFETY: allocated above; the write below is the deliberate bug.
            unsafe { g.dealloc(p, 64) };
            volatile_write(p.as_ptr());
        }
        "in_bounds" => {
            let g = GuardZone::new();
            let p = g.alloc(100, 1).unwrap();
            // SAFETY: every byte of the 100 is in bounds.
            unsafe { p.as_ptr().write_bytes(7, 100) };
        }
        other => panic!("unknown fault scenario {other}"),
    }
}

/// In the parent: re-runs this very test in a child with the scenario
/// selected, and returns the signal that killed it (None if it exited).
/// In the child: runs the scenario and returns `None` without spawning.
#[cfg(unix)]
fn in_child(test: &str, name: &str) -> Option<Option<i32>> {
    use std::os::unix::process::ExitStatusExt;
    if let Ok(s) = std::env::var(FAULT_ENV) {
        scenario(&s);
        return None;
    }
    let out = crate::child_output(test, || {
        let mut cmd = crate::child_test(test);
        cmd.env(FAULT_ENV, name);
        cmd
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.signal().is_some() || stdout.contains("1 passed"),
        "the child did not run {test}: {}\n{stdout}",
        out.status
    );
    Some(out.status.signal())
}

#[cfg(unix)]
fn assert_faults(test: &str, name: &str) {
    if cfg!(miri) {
        return; // Miri's sys fallback cannot protect pages.
    }
    const SIGSEGV: i32 = 11;
    const SIGBUS: i32 = if cfg!(target_os = "linux") { 7 } else { 10 };
    if let Some(signal) = in_child(test, name) {
        assert!(
            matches!(signal, Some(SIGSEGV | SIGBUS)),
            "scenario {name}: the child must die of SIGSEGV or SIGBUS, got signal {signal:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn overrun_faults() {
    assert_faults("guard_zone::overrun_faults", "overrun");
}

#[cfg(unix)]
#[test]
fn underrun_faults_with_leading_guard() {
    assert_faults("guard_zone::underrun_faults_with_leading_guard", "underrun");
}

#[cfg(unix)]
#[test]
fn use_after_free_faults() {
    assert_faults("guard_zone::use_after_free_faults", "use_after_free");
}

/// The harness itself: an in-bounds write must not kill the child.
#[cfg(unix)]
#[test]
fn in_bounds_access_does_not_fault() {
    if cfg!(miri) {
        return;
    }
    if let Some(signal) = in_child("guard_zone::in_bounds_access_does_not_fault", "in_bounds") {
        assert_eq!(signal, None, "an in-bounds write must not fault");
    }
}
