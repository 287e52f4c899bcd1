//! Alignment arithmetic, as the chapter derives it.
//!
//! `align - 1` is a run of one-bits; adding it pushes an address past the next
//! boundary and masking with `!(align - 1)` snaps it back down onto the
//! boundary. Every allocator of the crate uses exactly this formula.

use crate::AllocError;

/// Rounds `address` up to the next multiple of `align`.
///
/// `align` must be a power of two; this is checked in debug builds only, so
/// the fast paths that call it stay branch-free. Use [`checked_align_up`] on
/// untrusted input.
///
/// ```
/// use allocasm::align_up;
/// assert_eq!(align_up(1001, 4), 1004);
/// assert_eq!(align_up(1001, 16), 1008);
/// assert_eq!(align_up(1008, 16), 1008);
/// ```
#[inline(always)]
pub const fn align_up(address: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    (address.wrapping_add(align - 1)) & !(align - 1)
}

/// [`align_up`] that validates `align` and reports overflow instead of
/// wrapping.
///
/// ```
/// use allocasm::{checked_align_up, AllocError};
/// assert_eq!(checked_align_up(1001, 8), Ok(1008));
/// assert_eq!(checked_align_up(1001, 3), Err(AllocError::BadAlignment { align: 3 }));
/// assert!(checked_align_up(usize::MAX, 16).is_err());
/// ```
#[inline]
pub const fn checked_align_up(address: usize, align: usize) -> Result<usize, AllocError> {
    if !align.is_power_of_two() {
        return Err(AllocError::BadAlignment { align });
    }
    match address.checked_add(align - 1) {
        Some(v) => Ok(v & !(align - 1)),
        None => Err(AllocError::TooLarge {
            requested: address,
            max: usize::MAX - (align - 1),
        }),
    }
}

/// Checks that `align` is a power of two.
///
/// ```
/// use allocasm::{check_align, AllocError};
/// assert_eq!(check_align(64), Ok(()));
/// assert_eq!(check_align(0), Err(AllocError::BadAlignment { align: 0 }));
/// ```
#[inline(always)]
pub const fn check_align(align: usize) -> Result<(), AllocError> {
    if align.is_power_of_two() {
        Ok(())
    } else {
        Err(AllocError::BadAlignment { align })
    }
}

/// `Layout::from_size_align` for an `align` already checked: the size is
/// all it can refuse, as [`AllocError::TooLarge`].
#[inline(always)]
pub(crate) fn layout_for(size: usize, align: usize) -> Result<core::alloc::Layout, AllocError> {
    core::alloc::Layout::from_size_align(size, align).map_err(|_| AllocError::TooLarge {
        requested: size,
        max: isize::MAX as usize,
    })
}
