//! # allocasm
//!
//! Game-engine and lock-free allocators, each with an inlined fast path and an
//! `#[inline(never)]` probe that exports exactly that fast path (behind the
//! `probes` feature, off by default). The codegen suite that compiles those
//! probes for every target profile and checks what they became is the
//! workspace's other crate, `allocasm-suite`, with the `allocasm` command:
//! depending on this crate pulls in none of it.
//!
//! ## Quick start
//!
//! ```toml
//! [dependencies]
//! allocasm = "0.1"
//! ```
//!
//! An arena with a `Vec`: every allocator implements allocator-api2's
//! `Allocator` (0.4, re-exported as [`allocator_api2`], and 0.2 as
//! [`allocator_api2_02`], which hashbrown takes), so collections of those
//! crates allocate in it. The arena frees everything at once, on
//! [`reset`](LinearArena::reset), which needs `&mut` and so cannot happen
//! while a collection still borrows it:
//!
//! ```
//! use allocasm::LinearArena;
//! use allocasm::allocator_api2::vec::Vec;
//!
//! let mut arena = LinearArena::new(64 << 10).unwrap();
//! {
//!     let mut path = Vec::new_in(&arena);
//!     path.extend([(0, 0), (1, 0), (1, 1)]);
//!     assert_eq!(path.len(), 3);
//! }
//! assert!(arena.used() > 0);
//! arena.reset();
//! assert_eq!(arena.used(), 0);
//! ```
//!
//! [`SegregatedFit`] as the process's allocator:
//!
//! ```rust,standalone_crate
//! use allocasm::SegregatedFit;
//!
//! #[global_allocator]
//! static GLOBAL: SegregatedFit = SegregatedFit::new();
//!
//! fn main() {
//!     let v: Vec<String> = (0..100).map(|i| i.to_string()).collect();
//!     assert_eq!(v[42], "42");
//! }
//! ```
//!
//! What it guarantees: any thread allocates and frees any block; alignments
//! up to 4096 from its size classes and any alignment from the large path;
//! it never allocates through the global allocator itself (spin locks, OS
//! memory, a pthread-key / FLS exit hook), so it cannot recurse; a child
//! `fork`ed while another thread was inside it can allocate (Unix); a
//! breach of `dealloc`'s contract that it detects aborts with a message
//! rather than unwinding (debug builds also panic on foreign pointers and
//! double frees). What it costs: 32 GiB of address space reserved at the
//! first allocation of a small block (nothing committed until used, but for
//! the 2 MiB class map, whose pages are touched one per 64 MiB of spans),
//! 44 KiB of heap state, per thread two 1.4 KiB caches plus up to about
//! 16 KiB of cached blocks per size class (given back when the thread
//! exits), one `mmap`/`munmap` per allocation above 64 KiB, and below 1/8
//! of a block lost to rounding above 128 bytes. Freed memory stays with the allocator until
//! [`trim`](SegregatedFit::trim) purges empty spans. See [`segregated`] for
//! the design.
//!
//! Without the default `std` feature (`default-features = false`) the crate
//! is `no_std` + `alloc` and has the allocators that need no OS:
//! [`LinearArena`], [`StackAllocator`], [`Pool`], [`FreeList`],
//! [`FrameAllocator`] (over a caller's buffer, or a block from `alloc`) and
//! the [`Guarded`] and [`Tracked`] wrappers; the table's other rows need
//! `std`.
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
// Without the `std` feature (on by default) the crate is `no_std` + `alloc`:
// the allocators that need no OS (linear, stack, pool, free list, frame,
// the wrappers) over a caller's buffer or an `alloc` block. Unit tests
// always have std.
#![cfg_attr(not(any(feature = "std", test)), no_std)]

extern crate alloc;

mod align;
mod api02;
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
