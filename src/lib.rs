// The allocator library's front page is README.crate.md (also the crate's
// README on crates.io), so the allocator table lives in one place.
#![doc = include_str!("../README.crate.md")]
#![warn(missing_docs)]
// Without the `std` feature (on by default) the crate is `no_std` + `alloc`:
// the allocators that need no OS (linear, stack, pool, free list, frame,
// the wrappers) over a caller's buffer or an `alloc` block. Unit tests
// always have std.
#![cfg_attr(not(any(feature = "std", test)), no_std)]

extern crate alloc;

mod align;
mod api02;
mod api04;
mod buffer;
mod error;
mod raw_allocator;
#[allow(dead_code)]
mod sync;
// The OS layer is the crate's own: raw, unsafe wrappers whose contracts are
// about the reservations the allocators make, and which change with them.
// `PageAllocator` is its public face (pages, the page size, the
// granularity); keeping `sys` public would make every signature here part
// of the semver surface.
#[cfg(feature = "std")]
pub(crate) mod sys;

mod frame;
mod free_list;
mod guarded;
mod linear;
mod pool;
mod stack;
mod tracker;

#[cfg(feature = "std")]
mod guard_zone;
#[cfg(feature = "std")]
mod packed;
#[cfg(feature = "std")]
mod page;
#[cfg(feature = "std")]
mod thread_cursor;

#[cfg(feature = "std")]
pub mod segregated;
#[cfg(feature = "std")]
pub mod unity;

#[cfg(feature = "probes")]
pub mod probes;

/// allocator-api2 0.4, whose `Allocator` every allocator implements: its
/// `vec::Vec`, `boxed::Box` and the trait, for code that names them without a
/// dependency of its own (and at the same version).
pub use allocator_api2;
/// allocator-api2 0.2, whose `Allocator` every allocator implements too (by
/// forwarding to the 0.4 impl), for crates still on 0.2 such as hashbrown
/// up to 0.17: `hashbrown::HashMap::new_in(&arena)`.
pub use allocator_api2_02;

pub use align::{align_up, check_align, checked_align_up};
#[cfg(feature = "std")]
pub(crate) use error::refused;
pub use error::{AllocError, ConfigField};
pub use raw_allocator::RawAllocator;

pub use frame::{FrameAllocator, FrameHandle};
pub use free_list::{FitPolicy, FreeList, FreeListStats};
pub use guarded::{GUARD_BYTE, GuardPosition, GuardViolation, Guarded, POISON_BYTE};
pub use linear::LinearArena;
pub use pool::Pool;
pub use stack::{Marker, StackAllocator};
pub use tracker::{MemoryTag, MemoryTracker, Tracked};

#[cfg(feature = "std")]
pub use guard_zone::{GuardSide, GuardZone};
#[cfg(feature = "std")]
pub use packed::{CursorSnapshot, DrainPolicy, PackedArena, PackedConfig, PackedStats};
#[cfg(feature = "std")]
pub use page::PageAllocator;
#[cfg(feature = "std")]
pub use thread_cursor::{LocalCursor, ThreadCursorArena, ThreadCursorConfig, ThreadCursorStats};

#[cfg(feature = "std")]
pub use segregated::SegregatedFit;
#[cfg(feature = "std")]
pub use unity::{LeakDetection, Persistent, Rewindable, Temp, TempJob};

/// The unit tests' global allocator under `--cfg allocasm_global_segregated`
/// (`scripts/test global`): every allocation of the test binary, the test
/// harness's own included, goes through [`SegregatedFit`].
#[cfg(all(test, allocasm_global_segregated, not(miri), not(loom)))]
#[global_allocator]
static GLOBAL: SegregatedFit = SegregatedFit::new();

#[cfg(all(test, allocasm_global_segregated, not(miri), not(loom)))]
mod global_tests {
    /// The step cannot pass on the system allocator by mistake.
    #[test]
    fn the_global_allocator_is_segregated_fit() {
        let b = std::boxed::Box::new([7u8; 48]);
        let l = core::alloc::Layout::new::<[u8; 48]>();
        assert!(super::GLOBAL.owns(core::ptr::NonNull::from(&*b).cast(), l));
    }
}
