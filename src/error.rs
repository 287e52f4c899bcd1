//! The one error type every allocator of the crate returns.
//!
//! Allocators never return null: a request that cannot be served comes back as
//! an [`AllocError`] that says why, so a caller (or a test) can tell running out
//! of room from asking for something the allocator can never serve.

use core::fmt;

/// Why an allocation (or a free) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AllocError {
    /// The alignment is zero or not a power of two.
    BadAlignment {
        /// The alignment that was asked for.
        align: usize,
    },
    /// A zero-byte request. The inherent `alloc` methods refuse these; the
    /// `allocator_api2::alloc::Allocator` impls serve them with a dangling,
    /// well-aligned pointer as that trait expects.
    ZeroSize,
    /// Not enough room left for this request (the allocator is full, or too
    /// fragmented to hold it in one piece).
    OutOfMemory {
        /// Bytes asked for (before padding).
        requested: usize,
        /// Bytes still available, as far as the allocator can tell cheaply.
        available: usize,
    },
    /// The request can never be served by this allocator: larger than its
    /// maximum request, its slot size, or its maximum alignment.
    TooLarge {
        /// Bytes (or alignment) asked for.
        requested: usize,
        /// The largest this allocator serves.
        max: usize,
    },
    /// The pointer was not handed out by this allocator.
    ForeignPointer,
    /// The block is already free (detected in debug builds, or always where
    /// the check is free).
    DoubleFree,
    /// A marker or handle that does not belong to this allocator, or that
    /// points above its current position, or that a rewind made stale.
    BadMarker,
    /// A constructor argument or configuration field that the allocator
    /// cannot be built with (a capacity too small to hold one block, a block
    /// size that is not a power of two, a maximum below the minimum, ...).
    /// What the field must be is documented on the constructor.
    InvalidConfig {
        /// The argument or field.
        field: ConfigField,
        /// The value that was given.
        value: usize,
    },
    /// A free named a size other than the one the block was allocated with
    /// (for allocators that take the size on free).
    SizeMismatch {
        /// The size the block was allocated with.
        allocated: usize,
        /// The size the free named.
        freed: usize,
    },
    /// More threads inside one [`PackedArena`](crate::PackedArena) (or the
    /// [`ThreadCursorArena`](crate::ThreadCursorArena) over it) at once than
    /// its `max_entrants`, past which the overshoot envelope no longer
    /// holds. Refused before the cursor is touched. Debug builds only:
    /// release builds do not count entrants.
    TooManyEntrants {
        /// The configured `max_entrants`.
        max: usize,
    },
    /// The operating system refused to map, protect or release memory.
    Os {
        /// The raw OS error code (`errno` or `GetLastError`).
        code: i32,
    },
}

/// The constructor argument or configuration field an
/// [`AllocError::InvalidConfig`] names. A one-byte enum rather than a string,
/// so that `AllocError` stays three words and every allocation's `Result`
/// stays as small as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigField {
    /// A buffer, pool or arena capacity in bytes.
    Capacity,
    /// A pool's slot size.
    SlotSize,
    /// A pool's slot count.
    Count,
    /// `Rewindable`'s first block size.
    InitialBlock,
    /// `Rewindable`'s largest block size.
    MaxBlock,
    /// A block size (`PackedConfig`, `ThreadCursorConfig`).
    BlockSize,
    /// A chunk size (`ThreadCursorConfig`).
    ChunkSize,
    /// A block count (`PackedConfig`, `ThreadCursorConfig`).
    MaxBlocks,
    /// The largest request (`PackedConfig::max_request`).
    MaxRequest,
    /// The most concurrent entrants (`PackedConfig::max_entrants`).
    MaxEntrants,
}

impl ConfigField {
    /// The field's name as the constructor spells it (`"capacity"`).
    pub const fn name(self) -> &'static str {
        match self {
            ConfigField::Capacity => "capacity",
            ConfigField::SlotSize => "slot_size",
            ConfigField::Count => "count",
            ConfigField::InitialBlock => "initial_block",
            ConfigField::MaxBlock => "max_block",
            ConfigField::BlockSize => "block_size",
            ConfigField::ChunkSize => "chunk_size",
            ConfigField::MaxBlocks => "max_blocks",
            ConfigField::MaxRequest => "max_request",
            ConfigField::MaxEntrants => "max_entrants",
        }
    }
}

impl fmt::Display for ConfigField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// Three words, as before the configuration variants: every allocator's
// `Result<NonNull<u8>, AllocError>` keeps its size (and its probes their
// stack frames).
const _: () = assert!(core::mem::size_of::<AllocError>() <= 3 * core::mem::size_of::<usize>());

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AllocError::BadAlignment { align } => {
                write!(f, "alignment {align} is not a power of two")
            }
            AllocError::ZeroSize => f.write_str("zero-size request"),
            AllocError::OutOfMemory {
                requested,
                available,
            } => write!(
                f,
                "out of memory: {requested} bytes requested, {available} bytes available"
            ),
            AllocError::TooLarge { requested, max } => {
                write!(
                    f,
                    "request of {requested} exceeds this allocator's maximum of {max}"
                )
            }
            AllocError::ForeignPointer => f.write_str("pointer was not allocated here"),
            AllocError::DoubleFree => f.write_str("block freed twice"),
            AllocError::BadMarker => f.write_str("marker or handle is not valid here"),
            AllocError::InvalidConfig { field, value } => {
                write!(f, "invalid configuration: {field} = {value}")
            }
            AllocError::SizeMismatch { allocated, freed } => write!(
                f,
                "freed with size {freed}, but the block was allocated with size {allocated}"
            ),
            AllocError::TooManyEntrants { max } => write!(
                f,
                "more than max_entrants = {max} threads inside the allocator at once"
            ),
            AllocError::Os { code } => write!(f, "the operating system refused (error {code})"),
        }
    }
}

impl core::error::Error for AllocError {}

impl From<AllocError> for allocator_api2::alloc::AllocError {
    fn from(_: AllocError) -> Self {
        allocator_api2::alloc::AllocError
    }
}

#[cfg(feature = "std")]
/// `None`, out of line: a fast path whose refusals leave through this tail
/// call has no constant null among its results. LLVM otherwise puts the
/// null in a register at the entry, shared with the result, and on 32-bit
/// Arm that register is one of the five a fast path can use without saving.
#[cold]
#[inline(never)]
pub(crate) fn refused() -> Option<core::ptr::NonNull<u8>> {
    // Opaque: where LLVM sees this body (one codegen unit, LTO) it would
    // otherwise put the constant back in place of the call's result.
    core::hint::black_box(None)
}
