//! # allocasm
//!
//! Game-engine and lock-free allocators, each with an inlined fast path and an
//! `#[inline(never)]` probe that exports exactly that fast path (behind the
//! `probes` feature, off by default). The codegen suite that compiles those
//! probes for every target profile and checks what they became is the
//! workspace's other crate, `allocasm-suite`, with the `allocasm` command:
//! depending on this crate pulls in none of it.
//!
//! ## The allocators
//!
//! | type | from | lifetime | thread-safe |
//! | --- | --- | --- | --- |
//! | [`LinearArena`] | chapter | reset all at once | no |
//! | [`StackAllocator`] | chapter | LIFO, to a [`Marker`] | no |
//! | [`Pool`] | chapter | any order, one size | no |
//! | [`FreeList`] | chapter | any order, any size | no |
//! | [`FrameAllocator`] | chapter | N frames | no |
//! | [`Tracked`], [`Guarded`] | chapter | wrappers | as the inner one |
//! | [`PageAllocator`], [`GuardZone`] | write-up | any order, pages | yes |
//! | [`PackedArena`] | write-up | grouped, sized frees | yes |
//! | [`ThreadCursorArena`] | write-up | grouped | yes |
//! | [`SegregatedFit`] | write-up | any order, sized frees | yes |
//! | [`Temp`], [`TempJob`], [`Persistent`], [`Rewindable`] | Unity | frame / 4 frames / any / rewind | see each |

#![warn(missing_docs)]

mod align;
mod api02;
mod buffer;
mod error;
mod raw_allocator;
#[allow(dead_code)]
mod sync;
pub mod sys;

mod frame;
mod free_list;
mod guarded;
mod linear;
mod pool;
mod stack;
mod tracker;

mod guard_zone;
mod packed;
mod page;
mod thread_cursor;

pub mod segregated;
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

pub use guard_zone::{GuardSide, GuardZone};
pub use packed::{CursorSnapshot, DrainPolicy, PackedArena, PackedConfig, PackedStats};
pub use page::PageAllocator;
pub use thread_cursor::{LocalCursor, ThreadCursorArena, ThreadCursorConfig, ThreadCursorStats};

pub use segregated::SegregatedFit;
pub use unity::{Persistent, Rewindable, Temp, TempJob};

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
