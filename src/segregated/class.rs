//! The two-level size-class function of [`SegregatedFit`](super::SegregatedFit),
//! shared by allocation and sized deallocation.
//!
//! **Mapping.** Sizes are counted in granules of [`GRANULE`] (8) bytes, the
//! pointer size on 64-bit targets, so the smallest class holds the intrusive
//! queue link. For a request of `u` granules the first level is
//! `fl = floor(log2(u))` (one `lzcnt`/`bsr` on x86, `clz` on arm64 and on
//! RISC-V with Zbb; on RV64GC, which has no such instruction, the exponent
//! of `u` converted to an `f32`) and the
//! second level splits `[2^fl, 2^(fl+1))` into `SLLEN = 8` equal steps of
//! `2^(fl-3)` granules, as in TLSF. Below 16 granules the steps are a single
//! granule (the linear region: 8, 16, ..., 120 bytes). A request is rounded
//! *up* to the next step, so the class's block size is the smallest class
//! size that holds it and the waste is below 1/8 of the block above 128
//! bytes. The class index is `(shift << 3) + (u' >> shift) - 1` with
//! `shift = max(fl - 3, 0)` and `u'` the rounded granule count: no table, no
//! loop, a handful of shifts.
//!
//! **Alignment.** A request `(size, align)` is first rounded up to a
//! multiple of `align`, then mapped. Every class size that a multiple of
//! `align` maps to is itself a multiple of `align` (a class's step is either
//! a single granule, in which case the size is exact, or at least
//! `2^(fl-3)` granules, which is a multiple of `align` once the rounded size
//! has at least 8 multiples of `align`; below that the size is exact again).
//! Blocks are laid out from a page-aligned span base at multiples of the
//! block size, so every block of a class is aligned to every alignment that
//! maps to it, up to [`MAX_CLASS_ALIGN`] (4096, the smallest page size).
//!
//! **Range.** Classes cover 8 bytes to [`MAX_CLASS_SIZE`] (64 KiB): 88
//! classes. Larger requests, and alignments above 4096, map to no class
//! (`None`) and [`SegregatedFit`](super::SegregatedFit) serves them from the
//! page allocator directly.
//!
//! **Costs.** Pure arithmetic; no metadata. On RV64GC the float
//! conversion uses one floating-point register.

/// The size of one granule (and of the smallest class): one pointer on
/// 64-bit targets, which the intrusive queue link needs.
pub const GRANULE: usize = 1 << GRANULE_SHIFT;
const GRANULE_SHIFT: u32 = 3;

/// log2 of the number of second-level subdivisions (`SLLEN = 8`).
const SL_BITS: u32 = 3;

/// The largest block a class holds (64 KiB); larger requests take the large
/// path. A power of two, so it is a class boundary.
pub const MAX_CLASS_SIZE: usize = 64 * 1024;

/// The largest alignment a class honours (4096, the smallest page size of
/// any supported target); larger alignments take the large path.
pub const MAX_CLASS_ALIGN: usize = 4096;

/// How many size classes there are.
pub const CLASS_COUNT: usize = index_of_granules(MAX_CLASS_SIZE >> GRANULE_SHIFT) + 1;

// Every class has a non-zero byte in the class map (`SizeClass::tag`).
const _: () = assert!(CLASS_COUNT < u8::MAX as usize);

/// The class index of a request of `units` granules (`units >= 1`).
#[inline(always)]
const fn index_of_granules(units: usize) -> usize {
    debug_assert!(units >= 1);
    // `fl.saturating_sub(SL_BITS)` for `fl` the top bit of `units`, without
    // the compare and select: below `1 << SL_BITS` granules the shift is 0,
    // and setting that bit makes the top bit `SL_BITS` exactly there while
    // leaving it alone above.
    let shift = floor_log2(units | (1 << SL_BITS)) - SL_BITS;
    let rounded = units + (1 << shift) - 1;
    ((shift as usize) << SL_BITS) + (rounded >> shift) - 1
}

/// Whether the target lacks a count-leading-zeros instruction but has the
/// F extension: RISC-V without Zbb (RV64GC). Stable rustc does not report
/// the `f` feature in `cfg`, so Linux stands for it: every riscv64 Linux
/// target uses the `lp64d` ABI, which requires F and D.
const CLZ_BY_FLOAT: bool = cfg!(all(
    target_arch = "riscv64",
    not(target_feature = "zbb"),
    any(target_feature = "f", target_os = "linux")
));

/// `floor(log2(x))` for `1 <= x < 2^24`: one count-leading-zeros
/// instruction where the target has one (`lzcnt`/`bsr` on x86, `clz` on
/// Arm, Zbb's `clz` on RISC-V), else [`floor_log2_by_float`].
#[inline(always)]
const fn floor_log2(x: usize) -> u32 {
    if CLZ_BY_FLOAT {
        floor_log2_by_float(x)
    } else {
        usize::BITS - 1 - x.leading_zeros()
    }
}

/// `floor(log2(x))` for `1 <= x < 2^24` without a count-leading-zeros
/// instruction. RV64GC has none (Zbb adds it), and LLVM's branch-free
/// expansion (smear the top bit down, then count the bits) was 37
/// instructions. The F extension converts `x` to an `f32` exactly (24
/// significant bits) and the float's biased exponent is
/// `floor(log2(x)) + 127`: `fcvt.s.lu`, `fmv.x.w`, a shift, and the bias
/// folded into the caller's arithmetic. Class requests are at most
/// `MAX_CLASS_SIZE / GRANULE` = 8192 granules.
#[inline(always)]
const fn floor_log2_by_float(x: usize) -> u32 {
    debug_assert!(x >= 1 && x < 1 << f32::MANTISSA_DIGITS);
    ((x as f32).to_bits() >> (f32::MANTISSA_DIGITS - 1)) - 127
}

/// The largest request [`SizeClass::small`] maps through [`SMALL`].
const SMALL_MAX: usize = 1024;
/// The largest alignment it does so for (`malloc`'s, and every smaller one).
const SMALL_ALIGN: usize = 16;

/// The class index of every request of up to [`SMALL_MAX`] bytes rounded
/// up to a multiple of its alignment (at most [`SMALL_ALIGN`]), indexed by
/// that rounded size in granules (entry 0 unused).
/// What the arithmetic of [`index_of_granules`] computes, in a table: a
/// caller whose layout is not a constant (a `#[global_allocator]`, `malloc`)
/// loads a byte instead of running a dozen dependent instructions.
/// (256 entries, the rest unused, so that a byte indexes it unchecked.)
const SMALL: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i <= SMALL_MAX / GRANULE {
        t[i] = index_of_granules(if i == 0 { 1 } else { i }) as u8;
        i += 1;
    }
    t
};

/// [`SMALL`] for requests aligned to 16 (`malloc`'s), indexed by the size
/// in 16-byte units rounded up. Entry 0, a zero size, is the class of one
/// byte aligned to 16, as in [`SizeClass::of`]: no zero test on the path.
const SMALL16: [u8; SMALL_MAX / SMALL_ALIGN + 1] = {
    let mut t = [0u8; SMALL_MAX / SMALL_ALIGN + 1];
    let mut i = 0;
    while i < t.len() {
        let units = if i == 0 { 1 } else { i };
        t[i] = index_of_granules(units * SMALL_ALIGN / GRANULE) as u8;
        i += 1;
    }
    t
};

/// The block size of class `index` (the inverse of the mapping on class
/// boundaries).
const fn block_size_of(index: usize) -> usize {
    let n = index + 1;
    let shift = (n >> SL_BITS).saturating_sub(1);
    let mantissa = n - (shift << SL_BITS);
    (mantissa << shift) << GRANULE_SHIFT
}

const BLOCK_SIZES: [u32; CLASS_COUNT] = {
    let mut sizes = [0u32; CLASS_COUNT];
    let mut i = 0;
    while i < CLASS_COUNT {
        sizes[i] = block_size_of(i) as u32;
        i += 1;
    }
    sizes
};

/// A size class of [`SegregatedFit`](super::SegregatedFit): an index into its
/// class queues. Obtained from [`SizeClass::of`] (or
/// [`SegregatedFit::size_class`](super::SegregatedFit::size_class)), so it is
/// always in range.
///
/// ```
/// use allocasm::segregated::SizeClass;
/// let c = SizeClass::of(100, 8).unwrap();
/// assert_eq!(c.block_size(), 104);
/// assert_eq!(SizeClass::of(1, 1).unwrap().block_size(), 8);
/// assert_eq!(SizeClass::of(200, 64).unwrap().block_size(), 256);
/// assert!(SizeClass::of(64 * 1024 + 1, 8).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SizeClass(u8);

impl SizeClass {
    /// The number of classes.
    pub const COUNT: usize = CLASS_COUNT;

    /// The class that serves `size` bytes aligned to `align`, or `None` when
    /// the request is larger than [`MAX_CLASS_SIZE`] (after rounding up to
    /// `align`) or `align` is above [`MAX_CLASS_ALIGN`]. A zero `size` maps
    /// like one byte.
    ///
    /// `align` must be a power of two (checked in debug builds; a `Layout`
    /// guarantees it).
    #[inline(always)]
    pub const fn of(size: usize, align: usize) -> Option<SizeClass> {
        debug_assert!(align.is_power_of_two());
        let align = if align > GRANULE { align } else { GRANULE };
        if size > MAX_CLASS_SIZE || align > MAX_CLASS_ALIGN {
            return None;
        }
        let size = if size == 0 { 1 } else { size };
        // No overflow: size <= 64 KiB and align <= 4096. And no second
        // range check: 64 KiB is a multiple of every alignment up to 4096,
        // so rounding a size of at most 64 KiB up to `align` stays at most
        // 64 KiB. (LLVM cannot see that: the check kept the size live past
        // the class computation, for the large path's call.)
        let rounded = (size + align - 1) & !(align - 1);
        debug_assert!(rounded <= MAX_CLASS_SIZE);
        Some(SizeClass(index_of_granules(rounded >> GRANULE_SHIFT) as u8))
    }

    /// [`of`](Self::of) for a request of at most 1024 bytes aligned to at
    /// most 16, from a table: one byte load instead of the arithmetic (the
    /// same class: the table is made by it); `None` for any other request.
    /// For callers whose layout is not a constant (`GlobalAlloc`, which a
    /// `#[global_allocator]` reaches through a call, and `malloc`): with a
    /// constant layout both fold to the class.
    #[inline(always)]
    pub const fn small(size: usize, align: usize) -> Option<SizeClass> {
        debug_assert!(align.is_power_of_two());
        if size > SMALL_MAX || align > SMALL_ALIGN {
            return None;
        }
        // The size rounded up to its alignment, in granules rounded up: for
        // an alignment below a granule that is the size's granules, for 16
        // an even number of them. At most 128 (1024 is a multiple of 16):
        // as a byte, the index needs no bounds check against the 256-entry
        // table. A zero size maps like one byte, as in `of` (entry 0 would
        // be the 8-byte class, not aligned to 16).
        let size = size + (size == 0) as usize;
        let rounded = (size + align - 1) & !(align - 1);
        let granules = (rounded + GRANULE - 1) >> GRANULE_SHIFT;
        Some(SizeClass(SMALL[granules as u8 as usize]))
    }

    /// [`small`](Self::small) for an alignment of 16, `malloc`'s: the same
    /// class, from a table indexed by the size in 16-byte units, so the
    /// lookup is an add, a shift and a byte load (no zero test, no
    /// rounding mask); `None` above 1024 bytes.
    ///
    /// ```
    /// use allocasm::segregated::SizeClass;
    ///
    /// for size in [0, 1, 16, 17, 1000, 1024] {
    ///     assert_eq!(SizeClass::aligned16(size), SizeClass::small(size, 16));
    /// }
    /// assert_eq!(SizeClass::aligned16(1025), None);
    /// ```
    #[inline(always)]
    pub const fn aligned16(size: usize) -> Option<SizeClass> {
        if size > SMALL_MAX {
            return None;
        }
        Some(SizeClass(SMALL16[size.div_ceil(SMALL_ALIGN)]))
    }

    /// The class with this index, if `index < COUNT`.
    pub const fn from_index(index: usize) -> Option<SizeClass> {
        if index < CLASS_COUNT {
            Some(SizeClass(index as u8))
        } else {
            None
        }
    }

    /// The class index, `0..COUNT`.
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The class's byte in the span region's class map: its index plus one
    /// (0 is "no span").
    #[inline(always)]
    pub(crate) const fn tag(self) -> u8 {
        self.0 + 1
    }

    /// The class a non-zero map byte names.
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub(crate) const fn from_tag(tag: u8) -> Option<SizeClass> {
        Self::from_index(tag.wrapping_sub(1) as usize)
    }

    /// [`from_tag`](Self::from_tag) of a byte known to name a class.
    ///
    /// # Safety
    ///
    /// `tag` is a class's [`tag`](Self::tag).
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub(crate) const unsafe fn from_tag_unchecked(tag: u8) -> SizeClass {
        debug_assert!(tag >= 1 && (tag as usize) <= CLASS_COUNT);
        // SAFETY: a class's tag is its index plus one, so at least 1.
        SizeClass(unsafe { tag.unchecked_sub(1) })
    }

    /// The size of every block of this class, in bytes.
    #[inline(always)]
    pub const fn block_size(self) -> usize {
        BLOCK_SIZES[self.0 as usize] as usize
    }

    /// The alignment every block of this class has: the largest power of two
    /// dividing the block size, capped at [`MAX_CLASS_ALIGN`].
    pub const fn align(self) -> usize {
        let a = 1usize << self.block_size().trailing_zeros();
        if a > MAX_CLASS_ALIGN {
            MAX_CLASS_ALIGN
        } else {
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_fixed_points_and_sizes_increase() {
        assert_eq!(CLASS_COUNT, 88);
        assert_eq!(block_size_of(0), 8);
        assert_eq!(block_size_of(CLASS_COUNT - 1), MAX_CLASS_SIZE);
        for i in 0..CLASS_COUNT {
            let b = block_size_of(i);
            assert_eq!(
                SizeClass::of(b, 1).unwrap().index(),
                i,
                "class {i} ({b} bytes)"
            );
            if i > 0 {
                assert!(b > block_size_of(i - 1));
                assert_eq!(
                    SizeClass::of(block_size_of(i - 1) + 1, 1).unwrap().index(),
                    i
                );
            }
        }
    }

    /// The float exponent is the top bit's index over the whole range it is
    /// used for (and beyond, to 2^24), on every target, not only on the
    /// RISC-V ones that use it.
    #[test]
    fn the_float_exponent_is_floor_log2() {
        // Every value up to 2^14 (classes use up to 8192), then about a
        // thousand per octave.
        let exhaustive = if cfg!(miri) { 1 << 10 } else { 1 << 14 };
        let mut x: usize = 1;
        while x < 1 << 24 {
            let want = usize::BITS - 1 - x.leading_zeros();
            assert_eq!(floor_log2_by_float(x), want, "x = {x}");
            assert_eq!(floor_log2(x), want, "x = {x}");
            x += if x < exhaustive { 1 } else { (x >> 10).max(1) };
        }
        for k in 0..24 {
            assert_eq!(floor_log2_by_float(1 << k), k);
            assert_eq!(floor_log2_by_float((1 << (k + 1)) - 1), k);
        }
    }

    #[test]
    fn every_size_and_alignment_gets_a_fitting_aligned_class() {
        let step = if cfg!(miri) { 997 } else { 1 };
        let mut align = 1;
        while align <= MAX_CLASS_ALIGN {
            let mut size = 0;
            while size <= MAX_CLASS_SIZE {
                match SizeClass::of(size, align) {
                    Some(c) => {
                        let b = c.block_size();
                        assert!(
                            b >= size.max(1) && b.is_multiple_of(align),
                            "size {size} align {align} -> {b}"
                        );
                        if size > 128 && align <= 8 {
                            assert!((b - size) * 8 <= b, "waste above 1/8: {size} -> {b}");
                        }
                    }
                    None => assert!(size.next_multiple_of(align) > MAX_CLASS_SIZE),
                }
                size += step;
            }
            align *= 2;
        }
        assert!(SizeClass::of(8, 8192).is_none());
        assert!(SizeClass::of(usize::MAX, 8).is_none());
    }
}
