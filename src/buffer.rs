//! The one block of memory a chapter allocator slices up: either borrowed
//! from the caller for `'a`, or owned (a 16-aligned heap allocation made once,
//! at construction, and freed on drop).
//!
//! This is the chapter's "one big block, managed by you": every chapter
//! allocator ([`LinearArena`](crate::LinearArena),
//! [`StackAllocator`](crate::StackAllocator), [`Pool`](crate::Pool),
//! [`FreeList`](crate::FreeList)) holds one `Buffer` and never asks the
//! system for memory again.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::AllocError;

/// Alignment of an owned buffer: what `malloc` guarantees on a 64-bit
/// machine (`alignof(max_align_t)`), which the chapter's traces rely on.
pub(crate) const OWNED_ALIGN: usize = 16;

/// A block of `len` bytes at `base`, valid for `'a`.
///
/// `repr(C)` with `base` in the middle: the allocators that embed a buffer
/// put their hot word (a cursor, a head) just before it, and armv7 pairs
/// two adjacent loads into an `ldrd`, which needs two consecutive registers
/// (in practice `r4`/`r5`, saved on the stack). The base is read on a fast
/// path far more often than the length.
#[repr(C)]
pub(crate) struct Buffer<'a> {
    /// Length in bytes. Invariant: `len <= isize::MAX`.
    len: usize,
    /// Alignment the owned block was allocated with (a power of two).
    align: usize,
    /// Start of the block. Invariant: `base..base + len` is one allocation
    /// (or a borrowed slice) valid for reads and writes for `'a`; when
    /// `owned`, it came from the global allocator with `layout(len)`.
    base: NonNull<u8>,
    /// Whether `Drop` gives the block back to the global allocator.
    owned: bool,
    _borrow: PhantomData<&'a mut [MaybeUninit<u8>]>,
}

impl Buffer<'static> {
    /// Allocates `len` bytes aligned to [`OWNED_ALIGN`] from the global
    /// allocator (`len == 0` allocates nothing).
    pub(crate) fn owned(len: usize) -> Result<Self, AllocError> {
        Self::owned_aligned(len, OWNED_ALIGN)
    }

    /// Allocates `len` bytes aligned to `align` (a power of two, at least
    /// [`OWNED_ALIGN`] is used) from the global allocator.
    pub(crate) fn owned_aligned(len: usize, align: usize) -> Result<Self, AllocError> {
        crate::check_align(align)?;
        let align = align.max(OWNED_ALIGN);
        if len == 0 {
            return Ok(Buffer {
                base: dangling_aligned(),
                len: 0,
                owned: false,
                align,
                _borrow: PhantomData,
            });
        }
        let layout = Layout::from_size_align(len, align).map_err(|_| AllocError::TooLarge {
            requested: len,
            max: isize::MAX as usize - align,
        })?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc::alloc(layout) };
        let base = NonNull::new(raw).ok_or(AllocError::OutOfMemory {
            requested: len,
            available: 0,
        })?;
        Ok(Buffer {
            base,
            len,
            owned: true,
            align,
            _borrow: PhantomData,
        })
    }
}

impl<'a> Buffer<'a> {
    /// Borrows the caller's bytes for `'a`.
    pub(crate) fn borrowed(bytes: &'a mut [MaybeUninit<u8>]) -> Self {
        let len = bytes.len();
        // A slice pointer is never null; an empty slice's pointer is dangling
        // but never dereferenced (len == 0).
        let base = NonNull::new(bytes.as_mut_ptr().cast::<u8>()).unwrap_or_else(dangling_aligned);
        Buffer {
            base,
            len,
            owned: false,
            align: 1,
            _borrow: PhantomData,
        }
    }

    /// Start of the block (carries the provenance of the whole block).
    #[inline(always)]
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Length in bytes.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether `ptr` points into the block (one-past-the-end excluded).
    #[inline]
    pub(crate) fn contains(&self, ptr: *const u8) -> bool {
        let start = self.base.as_ptr() as usize;
        let addr = ptr as usize;
        addr >= start && addr - start < self.len
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: an owned buffer was allocated in `owned` with exactly this
            // layout (which was valid then, so it is valid now).
            unsafe {
                alloc::alloc::dealloc(
                    self.base.as_ptr(),
                    Layout::from_size_align_unchecked(self.len, self.align),
                )
            };
        }
    }
}

impl core::fmt::Debug for Buffer<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Buffer")
            .field("base", &self.base)
            .field("len", &self.len)
            .field("owned", &self.owned)
            .finish()
    }
}

/// A non-null, 16-aligned pointer for empty buffers (never dereferenced).
fn dangling_aligned() -> NonNull<u8> {
    #[repr(align(16))]
    struct Align16;
    NonNull::<Align16>::dangling().cast()
}
