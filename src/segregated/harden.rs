//! The checks of the `hardened` feature (docs/malloc-hardening.md): a
//! per-heap secret, the double-free tag written into freed blocks, the
//! encoding of the free blocks' links, and the messages the process aborts
//! with.
//!
//! **Contract.** Every heap draws a random 64-bit `key` when it is mapped
//! (the kernel's `AT_RANDOM` bytes on Linux, mixed with the heap's address).
//! A block of at least 16 bytes that is free holds `key` in its second word
//! (the *tag*), written on free and cleared when it is handed out again: a
//! free that finds the tag is a double free. The links of every free list
//! (a thread cache's, a class queue's, a run's and the run stack's) are
//! stored XORed with `key` (glibc's safe-linking, mimalloc's encoded free
//! lists), so chains pass between the levels as they are: the cache's pop
//! checks the head it is about to read is 8-aligned (the key's low bits
//! are set, so a stray aligned value decodes misaligned); the shared
//! level's pops, the flush's walk and the refill's new head check each
//! link they follow against the span region ([`plausible`]); else the list
//! was overwritten (`heap corruption`). Both abort through
//! [`breach`](super::breach): one line on standard error, no allocation,
//! no unwinding.

use core::ptr::NonNull;

use super::class::{GRANULE, SizeClass};
use crate::sync::{AtomicUsize, Ordering};

/// The smallest block with room for the tag beside its link: two words (16
/// bytes on 64-bit targets, where the 8-byte class has no tag and no
/// cache; 8 on 32-bit ones, where every class has both, as `CAPS` says).
pub(crate) const TAGGED_MIN: usize = 2 * size_of::<usize>();

/// The second word of `block`, where a free block keeps its tag.
///
/// # Safety
///
/// `block` is a block of at least [`TAGGED_MIN`] bytes, 8-aligned, mapped.
#[inline(always)]
pub(crate) unsafe fn tag<'a>(block: NonNull<u8>) -> &'a AtomicUsize {
    // SAFETY: the second word lies in the block (the caller's size); an
    // `AtomicUsize` has a word's size and alignment, and the run stack, the
    // one other reader of a free block's second word (a two-word block's;
    // the third of larger ones), reads it atomically.
    unsafe { &*block.as_ptr().add(size_of::<usize>()).cast::<AtomicUsize>() }
}

/// The second word of `block`, read plainly (the free path's compare takes
/// it as an operand; an atomic load it would not).
///
/// # Safety
///
/// As for [`tag`]; `block` is the caller's (a free: no other thread writes
/// it; a stale run-stack reader only reads).
#[inline(always)]
pub(crate) unsafe fn tag_word(block: NonNull<u8>) -> usize {
    // SAFETY: the caller's contract.
    unsafe {
        block
            .as_ptr()
            .add(size_of::<usize>())
            .cast::<usize>()
            .read()
    }
}

/// The name the abort lines start with: the first hardened allocator's
/// [`reporting_as`](super::SegregatedFit::reporting_as) name to map its
/// heap, else `allocasm`. Process-wide, because what aborts is the
/// process: the name says which library speaks (`allocasm-malloc` for the
/// drop-in `.so`).
static NAME: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the library in the abort lines from now on, unless a name was
/// set before (a heap's first mapping, see `init_heap`).
pub(crate) fn report_as(name: &'static str) {
    let _ = NAME.set(name);
}

/// The line an abort message starts with: `<name>: `.
fn line() -> Line {
    Line::new()
        .text(NAME.get().copied().unwrap_or("allocasm"))
        .text(": ")
}

/// Whether `block`, about to be read as a list's head, can be one of this
/// heap's blocks: in the span region starting at `base` and 8-aligned
/// (one subtraction, a rotation and a compare: a misaligned address
/// rotates its low bits to the top). 32-bit targets map each span on its
/// own (`base` is 0): alignment only.
#[inline(always)]
pub(crate) fn plausible(block: NonNull<u8>, base: usize) -> bool {
    let off = block.as_ptr().addr().wrapping_sub(base);
    // `#[cfg]`, not `cfg!`: 32-bit targets have no `REGION_LEN`.
    #[cfg(target_pointer_width = "64")]
    {
        off.rotate_right(3) < super::region::REGION_LEN >> 3
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        off.is_multiple_of(8)
    }
}

/// A fresh heap's secret: random where the OS gives randomness without a
/// system call or an allocation (Linux's `AT_RANDOM`), mixed with `seed`
/// (the heap's address: ASLR, and distinct heaps get distinct keys). Its
/// low three bits are set, so that a stray write of an aligned pointer or
/// of zero decodes to a misaligned link.
pub(crate) fn new_key(seed: usize) -> usize {
    let mut k = seed as u64 ^ 0x9e37_79b9_7f4a_7c15;
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: getauxval has no preconditions; AT_RANDOM, when present,
        // is the address of 16 random bytes the kernel put on the stack,
        // valid for the process's life.
        let at = unsafe { libc::getauxval(libc::AT_RANDOM) } as usize;
        if at != 0 {
            // SAFETY: as above; unaligned reads of the first 16 bytes.
            let (a, b) = unsafe {
                let p = core::ptr::with_exposed_provenance::<u64>(at);
                (p.read_unaligned(), p.add(1).read_unaligned())
            };
            k ^= a.rotate_left(17) ^ b;
        }
    }
    // A stack address: ASLR of its own.
    let local = 0u8;
    k ^= (core::ptr::from_ref(&local).addr() as u64).rotate_left(29);
    // splitmix64's finalizer: every input bit reaches every output bit.
    k = (k ^ (k >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    k = (k ^ (k >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    k ^= k >> 31;
    (k as usize) | 7
}

/// Whether `block`, whose tag matched the key, also holds a free block's
/// first word: a link coded with `key` that decodes to null or to a block
/// that can be one of the heap's (in its region at `base`, aligned; see
/// [`plausible`]). Every free list codes its links so, at every level. A
/// live block whose second word holds the key by accident (stack bytes
/// with the key in them, copied into it whole: a struct's padding) fails
/// this, its first word being the program's, and is freed as any other
/// (docs/malloc-hardening.md, "A live block that holds the key").
///
/// # Safety
///
/// As for [`tag_word`].
#[inline(always)]
pub(crate) unsafe fn looks_free(block: NonNull<u8>, key: usize, base: usize) -> bool {
    // SAFETY: the caller's contract: the block's first word, read plainly
    // as the tag is.
    let next = unsafe { block.as_ptr().cast::<usize>().read() } ^ key;
    match NonNull::new(core::ptr::without_provenance_mut::<u8>(next)) {
        None => true,
        Some(n) => plausible(n, base),
    }
}

/// Marks `block` of `class` free for a free that bypasses the thread cache
/// (the cache's push does the same inline): aborts if it is free already.
///
/// # Safety
///
/// `block` is a block of `class`'s spans.
#[inline]
pub(crate) unsafe fn mark_free(block: NonNull<u8>, class: SizeClass, key: usize, base: usize) {
    if class.block_size() >= TAGGED_MIN {
        // SAFETY: a block of at least `TAGGED_MIN` bytes (checked above).
        if unsafe { is_free(block, key, base) } {
            double_free(block, class.tag().into());
        }
        // SAFETY: as above.
        unsafe { tag(block) }.store(key, Ordering::Relaxed);
    }
}

/// Whether a free of `block` now would abort as a double free: its tag is
/// the key and its first word a coded link ([`looks_free`]).
///
/// # Safety
///
/// `block` is a block of at least [`TAGGED_MIN`] bytes of the heap whose
/// key and region base these are.
#[inline]
pub(crate) unsafe fn is_free(block: NonNull<u8>, key: usize, base: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { tag(block) }.load(Ordering::Relaxed) == key && unsafe { looks_free(block, key, base) }
}

/// Whether `class`'s blocks carry a tag (at least [`TAGGED_MIN`] bytes).
/// Only class 0 (8 bytes) can be below it, and only on 64-bit targets:
/// testing the index spares the block size's table look-up.
#[inline(always)]
pub(crate) fn tagged(class: SizeClass) -> bool {
    let tagged = TAGGED_MIN <= GRANULE || class.index() != 0;
    debug_assert_eq!(tagged, class.block_size() >= TAGGED_MIN);
    tagged
}

/// Clears the tag of `block` of `class` as it is handed out.
///
/// # Safety
///
/// `block` is a block of `class`'s spans, now the caller's.
#[inline(always)]
pub(crate) unsafe fn mark_used(block: NonNull<u8>, class: SizeClass) {
    if tagged(class) {
        // SAFETY: a block of at least `TAGGED_MIN` bytes (checked above).
        unsafe { tag(block) }.store(0, Ordering::Relaxed);
    }
}

/// A line for the abort messages, built on the stack (nothing allocates on
/// the way to an abort). Also the drop-in `malloc`'s, whose lines carry
/// its own name from the first call on (not a stable API: re-exported as
/// `segregated::AbortLine`, hidden).
#[derive(Debug)]
pub struct Line {
    buf: [u8; 192],
    len: usize,
}

impl Line {
    /// An empty line.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Line {
            buf: [0; 192],
            len: 0,
        }
    }

    /// Appends `s` (what does not fit is cut).
    pub fn text(mut self, s: &str) -> Self {
        for &b in s.as_bytes() {
            if self.len < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
        self
    }

    /// Appends `n` in hexadecimal with `0x`.
    pub fn hex(self, n: usize) -> Self {
        let mut digits = [0u8; 16];
        let mut i = digits.len();
        let mut v = n;
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdef"[v & 15];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        let mut s = self.text("0x");
        for &d in &digits[i..] {
            if s.len < s.buf.len() {
                s.buf[s.len] = d;
                s.len += 1;
            }
        }
        s
    }

    /// Appends `n` in decimal.
    pub fn dec(mut self, n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = n;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &d in &digits[i..] {
            if self.len < self.buf.len() {
                self.buf[self.len] = d;
                self.len += 1;
            }
        }
        self
    }

    /// Writes the line to standard error and aborts.
    pub fn abort(self) -> ! {
        super::breach(&self.buf[..self.len])
    }
}

/// A block freed while it is free: abort. The class comes as its map byte
/// ([`SizeClass::tag`]), not its size, so that the caller's block is its
/// last use (the free's hit path keeps it in a scratch register) and the
/// drop-in `free`, which has the tag in a register, passes it as it is.
/// `extern "C"` (as [`corrupt`]): a function that cannot unwind, so a hit
/// path that calls it needs no unwind edge, and an `extern "C"` caller (the
/// drop-in `malloc` and `free`) no frame for one.
#[cold]
#[inline(never)]
pub(crate) extern "C" fn double_free(block: NonNull<u8>, tag: usize) -> ! {
    let size = SizeClass::from_index(tag.wrapping_sub(1)).map_or(0, SizeClass::block_size);
    line()
        .text("free(): double free of ")
        .hex(block.as_ptr().addr())
        .text(" (")
        .dec(size)
        .text("-byte class)")
        .abort()
}

/// A thread cache's list holds `block`, which cannot be a block of this
/// heap: a write after free overwrote its predecessor's link. Abort.
/// (`extern "C"`, as [`double_free`].)
#[cold]
#[inline(never)]
pub(crate) extern "C" fn corrupt(block: NonNull<u8>, index: usize) -> ! {
    let size = SizeClass::from_index(index).map_or(0, SizeClass::block_size);
    line()
        .text("malloc(): heap corruption: the free list of the ")
        .dec(size)
        .text("-byte class links to ")
        .hex(block.as_ptr().addr())
        .text(" (a write after free)")
        .abort()
}

/// `block`, of a span's blocks not linked yet, is about to be linked but
/// holds something: the program freed a block it did not hold (one never
/// handed out, or one of a trimmed span freed twice: a free list took it,
/// and may have handed it out already) or wrote past the end of a block.
/// Linking it would hand it out twice. Abort.
#[cold]
#[inline(never)]
pub(crate) fn written_unlinked(block: NonNull<u8>, size: usize) -> ! {
    line()
        .text("malloc(): heap corruption: ")
        .hex(block.as_ptr().addr())
        .text(" (")
        .dec(size)
        .text("-byte class) was written before it was handed out")
        .text(" (a free of a block not in use, or an overflow)")
        .abort()
}

/// A free block of the shared level (a class queue, a run on a run stack)
/// links to `block`, which cannot be a block of this heap: a write after
/// free overwrote the link while the block sat there. Abort.
#[cold]
#[inline(never)]
pub(crate) fn corrupt_shared(block: NonNull<u8>) -> ! {
    line()
        .text("malloc(): heap corruption: a free block links to ")
        .hex(block.as_ptr().addr())
        .text(" (a write after free)")
        .abort()
}
