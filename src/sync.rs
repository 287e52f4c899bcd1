//! Atomics and cells for the lock-free code, in one place so loom can replace
//! them: under `--cfg loom` these are loom's model-checked types.
//!
//! Lock-free code imports `AtomicU64`, `AtomicUsize`, `AtomicPtr`, `Ordering`,
//! `UnsafeCell`, `Mutex` and `fence` from here and nowhere else.

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
#[cfg(feature = "std")]
pub(crate) use std::sync::Mutex;

/// `UnsafeCell` with loom's closure API, so the same code compiles against
/// both: `with(|p: *const T| ..)` and `with_mut(|p: *mut T| ..)`.
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
#[allow(dead_code)]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// `a.fetch_add(v, order)` on a 64-bit word, as the fast paths use it.
///
/// On 32-bit Arm from ARMv7 on (`cfg(allocasm_arm_v7)`, set by the build
/// script from the target triple; no 64-bit atomic add instruction) LLVM's own
/// `ldrexd`/`strexd` loop keeps the address, the addend, the old pair, the
/// new pair and the status live, seven registers for the five that need no
/// saving (`r0`-`r3`, `r12`), so every fast path around it saved and
/// restored two to four registers. [`arm::fetch_add`] is the same loop in
/// five: it keeps only the new pair, and takes the addend off again once the
/// store succeeded. Everywhere else (and under loom and Miri) this is the
/// standard library's `fetch_add`.
#[inline(always)]
pub(crate) fn fetch_add_u64(a: &AtomicU64, v: usize, order: Ordering) -> u64 {
    #[cfg(all(allocasm_arm_v7, not(loom), not(miri)))]
    {
        arm::fetch_add(a, v, order)
    }
    #[cfg(not(all(allocasm_arm_v7, not(loom), not(miri))))]
    {
        a.fetch_add(v as u64, order)
    }
}

/// `a.fetch_sub(v, order) == v` on a word: whether the subtraction brought
/// it to zero (on 32-bit Arm the loop's new value is tested, so nothing is
/// added back and the loop keeps the address, the value, the amount and the
/// status: four registers).
#[inline(always)]
pub(crate) fn sub_usize_reaches_zero(a: &AtomicUsize, v: usize, order: Ordering) -> bool {
    #[cfg(all(allocasm_arm_v7, not(loom), not(miri)))]
    {
        arm::sub_fetch_word(a, v, order) == 0
    }
    #[cfg(not(all(allocasm_arm_v7, not(loom), not(miri))))]
    {
        a.fetch_sub(v, order) == v
    }
}

/// `a.fetch_add(v, order)` on a word, as the fast paths that follow the add
/// with a fit check use it.
///
/// On 32-bit Arm from ARMv7 on, LLVM's `ldrex`/`strex` loop keeps the old
/// value and the new one apart, and the fit check after it reads values the
/// compiler computed before the loop and keeps in registers across it: with
/// the address, the addend and the status, more than the five registers
/// that need no saving. [`arm::fetch_add_word`] keeps only the new value in
/// the loop and takes the addend off after it, and the block claims all
/// memory, so what the caller reads after the add is loaded again rather
/// than held. Everywhere else this is the standard library's `fetch_add`.
#[inline(always)]
pub(crate) fn fetch_add_usize(a: &AtomicUsize, v: usize, order: Ordering) -> usize {
    #[cfg(all(allocasm_arm_v7, not(loom), not(miri)))]
    {
        arm::fetch_add_word(a, v, order)
    }
    #[cfg(not(all(allocasm_arm_v7, not(loom), not(miri))))]
    {
        a.fetch_add(v, order)
    }
}

/// `x`, as a value the compiler cannot relate to the `x` it came from, at a
/// point no memory access moves across: an empty `asm!` on 32-bit Arm (no
/// instruction), `x` itself elsewhere.
///
/// For fast paths that run out of armv7's five scratch registers because
/// LLVM keeps a value live that it could recompute from another, or loads
/// early what it could load late: after `let y = opaque_on_arm(y)`,
/// `p + y - y` is no longer `p`, so `p` dies at the sum and is computed
/// again from it, and a load written after the call stays after it.
/// Elsewhere LLVM folds the sum back and schedules freely.
#[inline(always)]
pub(crate) fn opaque_on_arm(x: usize) -> usize {
    #[cfg(all(target_arch = "arm", not(miri)))]
    {
        let mut x = x;
        // SAFETY: a comment naming `x`'s register: no instruction, so it
        // reads and writes nothing and leaves `x` as it found it. (Not
        // `nomem`: the compiler then keeps memory accesses on their side.)
        unsafe {
            core::arch::asm!("@ {0}", inout(reg) x, options(nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(all(target_arch = "arm", not(miri))))]
    {
        x
    }
}

/// Bytes a block of `size` bytes takes with a 16-byte header in front,
/// rounded up to 16: `16 + align_up(size, 16)`, written as the loop of
/// [`fetch_add_header_block`] computes it (`add #31`, `bic #15`), so that
/// LLVM sees one value where a caller computes it too. `size + 31` must
/// not wrap.
#[inline(always)]
pub(crate) const fn header_and_block(size: usize) -> usize {
    (size + 31) & !15
}

/// `a.fetch_add(header_and_block(size), order)`: a 16-byte header and `size`
/// bytes rounded up to 16, as TempJob reserves them. Returns the old value
/// and `size` again, which the caller uses from then on.
///
/// On 32-bit Arm from ARMv7 on the sum is computed inside the `ldrex`/`strex`
/// loop from `size`, the loop keeps only the new value, and `size` leaves the
/// block as a value LLVM cannot tell from a new one. So the loop holds four
/// registers (address, size, value, status), and nothing computed from the
/// size before it (the sum, the bounds of the pre-check) stays live across
/// it: the caller's record needs the size after the add, and with those
/// values held too it took more registers than the five that need no saving.
/// Everywhere else this is the standard library's `fetch_add`.
///
/// `size + 31` must not wrap (the caller has checked `size` against its
/// capacity).
#[inline(always)]
pub(crate) fn fetch_add_header_block(
    a: &AtomicUsize,
    size: usize,
    order: Ordering,
) -> (usize, usize) {
    debug_assert!(size <= usize::MAX - 31);
    #[cfg(all(allocasm_arm_v7, not(loom), not(miri)))]
    {
        arm::fetch_add_header_block(a, size, order)
    }
    #[cfg(not(all(allocasm_arm_v7, not(loom), not(miri))))]
    {
        (a.fetch_add(header_and_block(size), order), size)
    }
}

/// 64-bit read-modify-writes for 32-bit Arm in five registers.
///
/// Each is the loop LLVM emits for `AtomicU64::fetch_add`/`fetch_sub` on
/// ARMv7 (`ldrexd`, the add with carry, `strexd`, retry while the store
/// fails), with the barriers of LLVM's mapping of the orderings: `dmb ish`
/// before the loop for `Release`, after it for `Acquire`, on both sides for
/// `AcqRel` and `SeqCst`. It differs in one thing: the new pair overwrites
/// the old one in the loop (`r2`:`r3`, the even/odd pair `ldrexd` and
/// `strexd` need in the ARM instruction set), and the old value is the new
/// one minus the addend, computed after the loop. The block is an atomic
/// read-modify-write of the whole word with that ordering, as the standard
/// library's would be, so it may be mixed with the word's other atomic
/// accesses.
#[cfg(all(allocasm_arm_v7, not(loom), not(miri)))]
mod arm {
    use super::{AtomicU64, AtomicUsize, Ordering};

    /// One loop: `$op`/`$opc` the operation on the low and high word,
    /// `$undo`/`$undoc` whole instructions after it (its inverse, or nothing
    /// for the new value), `$pre` and `$post` the barriers.
    macro_rules! rmw64 {
        ($a:expr, $v:expr, $op:literal, $opc:literal, $undo:literal, $undoc:literal, $pre:literal, $post:literal) => {{
            let lo: u32;
            let hi: u32;
            // SAFETY: `$a.as_ptr()` is a valid, 8-aligned `u64` that is only
            // accessed atomically (an `AtomicU64`); the exclusive pair
            // `ldrexd`/`strexd` reads and writes it as one 64-bit single-copy
            // atomic access, retried until the store succeeds, so the block
            // is one atomic read-modify-write of the word. It touches no
            // other memory and no stack.
            unsafe {
                core::arch::asm!(
                    $pre,
                    "2:",
                    "ldrexd r2, r3, [{p}]",
                    concat!($op, " r2, r2, {v}"),
                    concat!($opc, " r3, r3, #0"),
                    "strexd {s}, r2, r3, [{p}]",
                    "cmp {s}, #0",
                    "bne 2b",
                    $post,
                    $undo,
                    $undoc,
                    p = in(reg) $a.as_ptr(),
                    v = in(reg) $v,
                    s = out(reg) _,
                    out("r2") lo,
                    out("r3") hi,
                    options(nostack),
                );
            }
            (u64::from(hi) << 32) | u64::from(lo)
        }};
    }

    /// The loop `$rmw!($args, pre, post)` with the barriers of `$order`
    /// (LLVM's mapping, for both widths).
    macro_rules! ordered {
        ($rmw:ident($($args:tt)*), $order:expr) => {
            match $order {
                Ordering::Relaxed => $rmw!($($args)*, "", ""),
                Ordering::Acquire => $rmw!($($args)*, "", "dmb ish"),
                Ordering::Release => $rmw!($($args)*, "dmb ish", ""),
                _ => $rmw!($($args)*, "dmb ish", "dmb ish"),
            }
        };
    }

    /// `a.fetch_add(v, order)`: the addend is taken off the new pair after
    /// the loop (the old pair is not kept in it). In the block, not in Rust:
    /// LLVM's 64-bit subtract of a zero-extended word takes two more
    /// instructions.
    #[inline(always)]
    pub(super) fn fetch_add(a: &AtomicU64, v: usize, order: Ordering) -> u64 {
        ordered!(
            rmw64(a, v, "adds", "adc", "subs r2, r2, {v}", "sbc r3, r3, #0"),
            order
        )
    }

    /// The 32-bit loop with the barriers of `$pre` and `$post`: `$op` the
    /// operation, the new value overwrites the old one, and `$undo` (whole
    /// instructions after the loop) turns it back into the old one, or is
    /// empty for the new value.
    macro_rules! rmw32 {
        ($a:expr, $v:expr, $op:literal, $undo:literal, $pre:literal, $post:literal) => {{
            let x: usize;
            // SAFETY: `$a.as_ptr()` is a valid, 4-aligned `usize` that is only
            // accessed atomically (an `AtomicUsize`); `ldrex`/`strex` read and
            // write it as one single-copy atomic access, retried until the
            // store succeeds, so the block is one atomic read-modify-write
            // of the word. It touches no other memory and no stack. `out`
            // operands get registers apart from the inputs and each other,
            // as `strex` needs (status, value and address distinct).
            unsafe {
                core::arch::asm!(
                    $pre,
                    "2:",
                    "ldrex {x}, [{p}]",
                    concat!($op, " {x}, {x}, {v}"),
                    "strex {s}, {x}, [{p}]",
                    "cmp {s}, #0",
                    "bne 2b",
                    $post,
                    $undo,
                    p = in(reg) $a.as_ptr(),
                    v = in(reg) $v,
                    x = out(reg) x,
                    s = out(reg) _,
                    options(nostack),
                );
            }
            x
        }};
    }

    /// `a.fetch_add(v, order)` on a word (see [`super::fetch_add_usize`]).
    #[inline(always)]
    pub(super) fn fetch_add_word(a: &AtomicUsize, v: usize, order: Ordering) -> usize {
        ordered!(rmw32(a, v, "add", "sub {x}, {x}, {v}"), order)
    }

    /// `a.fetch_sub(v, order) - v`: the new value of a word.
    #[inline(always)]
    pub(super) fn sub_fetch_word(a: &AtomicUsize, v: usize, order: Ordering) -> usize {
        ordered!(rmw32(a, v, "sub", ""), order)
    }

    /// The header-and-block loop with the barriers of `$pre` and `$post`:
    /// the addend is computed in the loop into the status register (dead
    /// until `strex` writes it), the new value overwrites the old one.
    macro_rules! rmw_header_block {
        ($a:expr, $size:expr, $pre:literal, $post:literal) => {{
            let x: usize;
            let mut size: usize = $size;
            // SAFETY: `$a.as_ptr()` is a valid, 4-aligned `usize` that is only
            // accessed atomically (an `AtomicUsize`); `ldrex`/`strex` read and
            // write it as one single-copy atomic access, retried until the
            // store succeeds, so the block is one atomic read-modify-write
            // of the word. It touches no other memory and no stack, and
            // leaves `size` as it found it. `out` operands get registers
            // apart from the inputs and each other, as `strex` needs
            // (status, value and address distinct).
            unsafe {
                core::arch::asm!(
                    $pre,
                    "2:",
                    "ldrex {x}, [{p}]",
                    "add {s}, {n}, #31",
                    "bic {s}, {s}, #15",
                    "add {x}, {x}, {s}",
                    "strex {s}, {x}, [{p}]",
                    "cmp {s}, #0",
                    "bne 2b",
                    $post,
                    p = in(reg) $a.as_ptr(),
                    n = inout(reg) size,
                    x = out(reg) x,
                    s = out(reg) _,
                    options(nostack),
                );
            }
            (x.wrapping_sub(super::header_and_block(size)), size)
        }};
    }

    /// See [`super::fetch_add_header_block`].
    #[inline(always)]
    pub(super) fn fetch_add_header_block(
        a: &AtomicUsize,
        size: usize,
        order: Ordering,
    ) -> (usize, usize) {
        ordered!(rmw_header_block(a, size), order)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every ordering a read-modify-write takes.
    const ORDERS: [Ordering; 5] = [
        Ordering::Relaxed,
        Ordering::Acquire,
        Ordering::Release,
        Ordering::AcqRel,
        Ordering::SeqCst,
    ];

    /// The 64-bit add carries across the halves and returns the old value,
    /// for every ordering: on armv7 this runs the `asm!` loop (the `armv7`
    /// step), elsewhere the standard library's.
    #[test]
    fn the_64_bit_add_carries_across_the_halves() {
        for order in ORDERS {
            let a = AtomicU64::new(0x0000_0001_FFFF_FFF0);
            assert_eq!(fetch_add_u64(&a, 0x20, order), 0x0000_0001_FFFF_FFF0);
            assert_eq!(a.load(Ordering::Relaxed), 0x0000_0002_0000_0010);
            assert_eq!(fetch_add_u64(&a, usize::MAX, order), 0x0000_0002_0000_0010);
            let expected = 0x0000_0002_0000_0010u64.wrapping_add(usize::MAX as u64);
            assert_eq!(a.load(Ordering::Relaxed), expected);
        }
    }

    /// The header-and-block add reserves the size rounded up to 16 plus 16,
    /// returns the old value and the size unchanged, for every ordering (on
    /// armv7 the `asm!` loop, which computes the addend inside it and
    /// keeps only the new value), and two threads' adds all count.
    #[test]
    fn the_header_and_block_add_reserves_the_rounded_size_and_a_header() {
        for order in ORDERS {
            let a = AtomicUsize::new(48);
            for (size, old) in [
                (1, 48),
                (16, 80),
                (17, 112),
                (100, 160),
                (usize::MAX - 31, 288),
            ] {
                assert_eq!(
                    fetch_add_header_block(&a, size, order),
                    (old, size),
                    "size {size}"
                );
            }
            // `usize::MAX - 31` reserves `usize::MAX - 15`: the add wraps.
            assert_eq!(a.load(Ordering::Relaxed), 272);
        }
        two_threads_add_64(|a| {
            let (old, size) = fetch_add_header_block(a, 40, Ordering::Relaxed);
            assert_eq!(size, 40);
            old
        });
    }

    /// Two threads each call `add` (which adds 64 to the word and returns
    /// the old value) many times: every old value is a multiple of 64, each
    /// thread's come in increasing order, and every add counts.
    fn two_threads_add_64(add: impl Fn(&AtomicUsize) -> usize + Sync) {
        let a = AtomicUsize::new(0);
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = None;
                    for _ in 0..rounds {
                        let old = add(&a);
                        assert!(last.is_none_or(|l| old > l));
                        assert_eq!(old % 64, 0);
                        last = Some(old);
                    }
                });
            }
        });
        assert_eq!(a.load(Ordering::Relaxed), 2 * rounds * 64);
    }

    /// The word's add returns the old value and leaves the new one, wrapping
    /// too, for every ordering (on armv7 the `asm!` loop, whose old value
    /// is the new one less the addend), and two threads' adds all count.
    #[test]
    fn the_word_add_returns_the_old_value_and_every_add_counts() {
        for order in ORDERS {
            let a = AtomicUsize::new(100);
            assert_eq!(fetch_add_usize(&a, 28, order), 100);
            assert_eq!(fetch_add_usize(&a, 0, order), 128);
            assert_eq!(a.load(Ordering::Relaxed), 128);
            assert_eq!(fetch_add_usize(&a, usize::MAX, order), 128, "wraps");
            assert_eq!(a.load(Ordering::Relaxed), 127);
        }
        two_threads_add_64(|a| fetch_add_usize(a, 64, Ordering::Relaxed));
    }

    /// `opaque_on_arm` hands its value back unchanged (on 32-bit Arm
    /// through its empty `asm!`, whose operand is an input and an output).
    #[test]
    fn the_opaque_word_is_the_word() {
        for x in [0, 1, 16, 0x8000_0000, usize::MAX] {
            assert_eq!(opaque_on_arm(x), x);
        }
    }

    /// The word's subtract tells exactly when it reaches zero, wrapping
    /// past it otherwise, for every ordering (on armv7 the `asm!` loop,
    /// which tests the new value), and two threads' subtracts all count:
    /// exactly one sees zero.
    #[test]
    fn the_word_subtract_reaches_zero_exactly_once() {
        for order in ORDERS {
            let a = AtomicUsize::new(48);
            assert!(!sub_usize_reaches_zero(&a, 16, order));
            assert_eq!(a.load(Ordering::Relaxed), 32);
            assert!(sub_usize_reaches_zero(&a, 32, order));
            assert_eq!(a.load(Ordering::Relaxed), 0);
            assert!(!sub_usize_reaches_zero(&a, 1, order), "wraps, not zero");
            assert_eq!(a.load(Ordering::Relaxed), usize::MAX);
            assert!(
                !sub_usize_reaches_zero(&a, 0, order),
                "a zero amount from MAX"
            );
        }
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let a = AtomicUsize::new(2 * rounds * 16);
        let zeros = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..rounds {
                        if sub_usize_reaches_zero(&a, 16, Ordering::Release) {
                            zeros.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(a.load(Ordering::Relaxed), 0);
        assert_eq!(zeros.load(Ordering::Relaxed), 1);
    }
}
