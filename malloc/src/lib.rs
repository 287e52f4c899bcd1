//! SegregatedFit as a drop-in `malloc`: this shared library exports the C
//! allocation functions (`malloc`, `free`, `calloc`, `realloc`,
//! `reallocarray`, `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`,
//! `pvalloc`, `malloc_usable_size`, `malloc_trim`) on one process-wide
//! [`SegregatedFit`], so that `LD_PRELOAD=liballocasm_malloc.so program`
//! runs an unmodified C, C++ or Rust program on it, the way jemalloc,
//! tcmalloc and mimalloc are compared (`scripts/bench --programs`).
//!
//! **No header for class blocks.** SegregatedFit frees *sized*, and
//! `free(p)` has no size; but every block of a size class lies in a span
//! whose class the allocator's class map names from the address alone
//! ([`SegregatedFit::class_of`]: a range check and a byte load). So
//! `malloc(n)` up to 64 KiB hands out the class block itself, as
//! `GlobalAlloc` would, and `free` looks its class up and gives it back
//! with [`SegregatedFit::dealloc_in`]; `malloc_usable_size` is the class's
//! block size, exactly. `malloc(24)` takes a 32-byte block (glibc: a 32-byte
//! chunk), `malloc(100)` 112 (glibc: 112). On the hit path (the thread
//! cache has a block of the class, or room for one) `malloc`, `calloc` and
//! `free` use `SegregatedFit::alloc_cached` and `free_cached` and make no
//! call and no stack frame (`calloc` ends in a tail jump to `memset`);
//! everything else is a tail jump to an out-of-line miss
//! (`scripts/malloc-hits` counts and gates their instructions). Only the
//! *large* blocks (above 64 KiB, or aligned above 4096), which lie outside
//! the span region, carry their layout in a 16-byte header before the
//! pointer: the block's whole size and its alignment, which is also the
//! pointer's offset in the block (`n + 16` bytes aligned to 16, or `n + a`
//! aligned to `a`).
//!
//! **glibc's semantics**, which the tests compare against glibc itself:
//! `malloc(0)` and `calloc(0, n)` return a unique pointer; a request that
//! cannot be met returns null with `errno` `ENOMEM` (a size near `SIZE_MAX`,
//! a `calloc`/`reallocarray` product that overflows); `realloc(NULL, n)` is
//! `malloc(n)`, `realloc(p, 0)` frees `p` and returns null, and a failed
//! `realloc` leaves the block as it was; `free(NULL)` does nothing;
//! `posix_memalign` returns `EINVAL` for an alignment that is not a power of
//! two times the pointer size and leaves `*memptr` alone; `aligned_alloc` and
//! `memalign` round an alignment that is not a power of two up to one (as
//! glibc 2.36 does) and refuse one above `SIZE_MAX / 2 + 1` with `EINVAL`;
//! `valloc` aligns to the page, `pvalloc` also rounds the size up to pages;
//! `malloc_usable_size(NULL)` is 0.
//!
//! **Misuse** (docs/malloc-hardening.md). The library is built with
//! SegregatedFit's `hardened` feature, and checks every pointer it is
//! given back before it trusts it ([`SegregatedFit::locate`]): `free`,
//! `realloc` and `malloc_usable_size` of a pointer that is not the start of
//! a live block of ours abort with `allocasm-malloc: free(): invalid
//! pointer 0x…`, a double free aborts with `allocasm-malloc: free(): double
//! free of 0x… (48-byte class)`, a `realloc` of a freed block with
//! `realloc(): use after free of 0x…`, and a write after free that steers a free
//! list (a thread cache's, a class queue's, a run's) aborts with `heap
//! corruption`, as glibc aborts (its messages differ). Nothing that is not ours is
//! written, unmapped or reused.
//!
//! **Start-up and fork.** Nothing runs before the first call: the
//! allocator is a `const` static that maps its heap on the first
//! allocation (which the dynamic loader makes, once libc is relocated and
//! TLS is set up, before any constructor). SegregatedFit never allocates
//! through `malloc` itself (its memory comes from `mmap`, its locks are spin
//! locks, its thread-exit hook is a pthread key), so no call recurses into
//! this library. Its `pthread_atfork` handlers keep a child forked while
//! another thread held one of its locks able to allocate.

#![cfg(all(target_os = "linux", target_pointer_width = "64", not(loom)))]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_int, c_void};
use core::ptr;

use allocasm::SegregatedFit;
use allocasm::segregated::{AbortLine, Located, SizeClass};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The process's allocator.
/// Its abort lines start `allocasm-malloc:`, as this file's own do.
static HEAP: SegregatedFit = SegregatedFit::new().reporting_as(NAME);

/// The name every abort line of the library starts with.
macro_rules! name {
    () => {
        "allocasm-malloc"
    };
}
const NAME: &str = name!();

/// What `malloc` aligns to, and the bytes of the header: glibc's
/// `MALLOC_ALIGNMENT` on 64-bit targets.
const MIN_ALIGN: usize = 16;

/// The largest alignment `memalign` accepts (glibc: `SIZE_MAX / 2 + 1`).
const MAX_ALIGN: usize = usize::MAX / 2 + 1;

// The header's two words fit in the smallest offset.
const _: () = assert!(2 * size_of::<usize>() <= MIN_ALIGN);

fn set_errno(code: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot,
    // valid for the thread's lifetime.
    unsafe { *libc::__errno_location() = code };
}

fn enomem() -> *mut c_void {
    set_errno(libc::ENOMEM);
    ptr::null_mut()
}

/// A large block's layout for `size` bytes at `align` (a power of two, at
/// least [`MIN_ALIGN`]): `size + align` bytes, the header in the offset.
/// `None` when that overflows or exceeds what a `Layout` can describe.
#[inline(always)]
fn block_layout(size: usize, align: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(align)?, align).ok()
}

/// The two header words of the large block behind `user`.
///
/// # Safety
///
/// `user` is a live large block of this library (in no class's span).
#[inline(always)]
unsafe fn header(user: *mut c_void) -> *mut usize {
    // SAFETY: the caller's contract: the header is the 16 bytes before it.
    unsafe { user.cast::<usize>().sub(2) }
}

/// Writes the header of `block` (allocated with `layout`) and returns the
/// pointer to hand out.
///
/// # Safety
///
/// `block` is a live block of at least `layout.size()` bytes, aligned to
/// `layout.align()`, and `layout.size() > layout.align()`.
#[inline(always)]
unsafe fn finish(block: *mut u8, layout: Layout) -> *mut c_void {
    // SAFETY: `align <= size` bytes into the block; the two words before
    // it are in the block and aligned (the offset is a multiple of 16).
    unsafe {
        let user = block.add(layout.align()).cast::<c_void>();
        let h = header(user);
        h.write(layout.size());
        h.add(1).write(layout.align());
        user
    }
}

/// `size` bytes aligned to `align` (a power of two, at least 16), zeroed
/// when asked; null with `ENOMEM` when refused. A class's block as it is
/// (a zero size takes the smallest), else a large block with its header.
#[inline(always)]
fn allocate(size: usize, align: usize, zeroed: bool) -> *mut c_void {
    let n = size.max(1);
    if SegregatedFit::size_class(n, align).is_some() {
        // SAFETY: `align` is a power of two and `n`, in a class, is at most
        // 64 KiB: a valid layout, of non-zero size.
        let block = unsafe {
            let layout = Layout::from_size_align_unchecked(n, align);
            if zeroed {
                GlobalAlloc::alloc_zeroed(&HEAP, layout)
            } else {
                GlobalAlloc::alloc(&HEAP, layout)
            }
        };
        if block.is_null() {
            return enomem();
        }
        return block.cast();
    }
    allocate_large(size, align, zeroed)
}

/// A large block with its header, out of line (the class path stays short).
#[inline(never)]
fn allocate_large(size: usize, align: usize, zeroed: bool) -> *mut c_void {
    let Some(layout) = block_layout(size, align) else {
        return enomem();
    };
    // SAFETY: the layout's size is non-zero (at least `align`).
    let block = unsafe {
        if zeroed {
            GlobalAlloc::alloc_zeroed(&HEAP, layout)
        } else {
            GlobalAlloc::alloc(&HEAP, layout)
        }
    };
    if block.is_null() {
        return enomem();
    }
    if zeroed && size <= POPULATE_MAX {
        populate(block, layout.size());
    }
    // SAFETY: a fresh block of `layout`; `size + align > align`.
    unsafe { finish(block, layout) }
}

/// The largest `calloc` block whose pages [`populate`] makes resident at
/// once: 32 MiB. Above it a block stays lazy, so that a sparse giant table
/// costs only the pages the program touches.
const POPULATE_MAX: usize = 32 << 20;

/// Makes the whole pages of a large `calloc` block resident and writable
/// now (`MADV_POPULATE_WRITE`, Linux 5.14 and later; an older kernel
/// refuses it and the block stays lazy, as correct as before).
///
/// A fresh mapping reads as zero without being written, and programs read
/// a `calloc`ed table before they write it (liblzma's match finder reads
/// each hash slot of its 16 MiB table first): the first read of a page maps
/// the kernel's shared zero page, and the first write copies it, two faults
/// per page where a written page takes one. In a process of several threads
/// the copy costs more, likely because the zero page's entry must also be
/// flushed from the other CPUs' TLBs (inferred from the system time, not
/// counted).
/// Populating the block first makes it one fault per page, in one call:
/// `xz -T2`'s system time fell from 95 to 20 ms (docs/program-bench.md,
/// fourth pass).
fn populate(block: *mut u8, len: usize) {
    let page = page_size();
    let start = block.addr().next_multiple_of(page);
    let end = (block.addr() + len) & !(page - 1);
    if end > start {
        // SAFETY: `start .. end` lies in the block, a live mapping of ours,
        // read and writable; populating it changes no byte (they are zero).
        // The result is ignored: where the kernel refuses, the pages are
        // faulted in on first use, as without this call.
        unsafe {
            libc::madvise(
                block.with_addr(start).cast(),
                end - start,
                libc::MADV_POPULATE_WRITE,
            )
        };
    }
}

/// What a pointer given back to `free`, `realloc` or
/// `malloc_usable_size` is, once checked.
enum Owned {
    /// A block of a size class.
    Class(SizeClass),
    /// A live large block: its start and its layout.
    Large(*mut u8, Layout),
}

/// Checks `p` (not null) for `what` (the caller's name, for the message):
/// a block of a class, or a live large block whose header agrees with the
/// allocator's record of its mapping. Anything else aborts, naming a double
/// free where `p` is a large block freed recently.
#[inline(always)]
fn owned(p: *mut c_void, what: &str) -> Owned {
    match HEAP.block_at(p.cast::<u8>().cast_const()) {
        Some(class) => Owned::Class(class),
        None => owned_large(p, what),
    }
}

/// [`owned`] for a pointer outside the size classes' blocks, out of line.
#[cold]
#[inline(never)]
fn owned_large(p: *mut c_void, what: &str) -> Owned {
    let addr = p.addr();
    let found = HEAP.locate(p.cast::<u8>().cast_const());
    if let Located::Large { start, len, header } = found
        && addr >= start + MIN_ALIGN
    {
        // SAFETY: `addr - 16 .. addr` lies in a live mapping of ours (the
        // allocator's list says so), 8-aligned if `addr` is.
        let (size, align) = unsafe {
            let h = p.cast::<usize>().wrapping_sub(2);
            (h.read_unaligned(), h.add(1).read_unaligned())
        };
        let block = addr.wrapping_sub(align);
        if align.is_power_of_two()
            && align >= MIN_ALIGN
            && size >= align
            && block >= start
            && block.checked_add(size.next_multiple_of(8)) == Some(header)
            && header < start + len
            && let Ok(layout) = Layout::from_size_align(size, align)
        {
            return Owned::Large(p.cast::<u8>().wrapping_sub(align), layout);
        }
    }
    if FREED.iter().any(|f| f.load(Ordering::Relaxed) == addr) {
        line()
            .text(what)
            .text(": double free of ")
            .hex(addr)
            .text(" (large block)")
            .abort()
    }
    line()
        .text(what)
        .text(": invalid pointer ")
        .hex(addr)
        .abort()
}

/// `realloc` of a class block that is free: abort (glibc resizes it in
/// place and hands it out again while its tcache holds it).
#[cold]
#[inline(never)]
fn freed_realloc(p: *mut c_void, class: SizeClass) -> ! {
    line()
        .text("realloc(): use after free of ")
        .hex(p.addr())
        .text(" (")
        .dec(class.block_size())
        .text("-byte class)")
        .abort()
}

/// The user pointers of the large blocks freed last (a ring): a second
/// free of one is named a double free (its mapping is gone, so it is
/// otherwise no block of ours at all).
static FREED: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];
static FREED_NEXT: AtomicUsize = AtomicUsize::new(0);

fn remember_freed(p: *mut c_void) {
    let i = FREED_NEXT.fetch_add(1, Ordering::Relaxed) % FREED.len();
    FREED[i].store(p.addr(), Ordering::Relaxed);
}

/// A line for the abort messages, on the stack (an abort allocates
/// nothing), starting `allocasm-malloc: ` (the library's own lines take
/// that name once the heap is mapped; these may come before).
fn line() -> AbortLine {
    AbortLine::new().text(concat!(name!(), ": "))
}

/// `memalign`'s and `aligned_alloc`'s rules (glibc 2.36): an alignment up to
/// 16 is `malloc`'s, one that is not a power of two is rounded up to one,
/// one above `SIZE_MAX / 2 + 1` is `EINVAL`.
fn allocate_aligned(align: usize, size: usize) -> *mut c_void {
    if align > MAX_ALIGN {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    allocate(size, align.next_power_of_two().max(MIN_ALIGN), false)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// Allocates `size` bytes aligned to 16.
///
/// The hit path is a request of at most 1 KiB whose class's list in the
/// thread cache has a block: a table lookup and a pop, with no call and no
/// stack frame. Everything else is `malloc_miss`, reached by a tail
/// jump.
///
/// # Safety
///
/// None beyond C's: the result is freed with this library's `free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    if let Some(class) = SizeClass::aligned16(size)
        && let Some(p) = HEAP.alloc_cached(class)
    {
        return p.as_ptr().cast();
    }
    malloc_miss(size)
}

/// [`malloc`] past its hit path: a request above 1 KiB (its class by
/// arithmetic, then the cache's pop: CPython's allocations past its own
/// small-object allocator are all such), a refill, a large block, a
/// thread with no cache. An `extern "C"` function cannot unwind (a panic
/// in it aborts), so `malloc` needs no unwind edge around the call, and the
/// call is a tail jump: without it `malloc` pushed and popped a register on
/// every call, to keep its stack aligned for a call it rarely makes.
#[inline(never)]
extern "C" fn malloc_miss(size: usize) -> *mut c_void {
    if SizeClass::aligned16(size).is_none()
        && let Some(class) = SizeClass::of(size, MIN_ALIGN)
        && let Some(p) = HEAP.alloc_cached(class)
    {
        return p.as_ptr().cast();
    }
    allocate(size, MIN_ALIGN, false)
}

/// Frees a block of this library (null: nothing).
///
/// The hit path is a class block going into the thread cache, with no
/// call and no stack frame; a full list, a large block and a pointer that
/// is no block of ours go to `free_miss` by a tail jump (as `malloc`'s
/// miss does, for the same reason).
///
/// # Safety
///
/// `p` is null or a live pointer returned by this library's functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // First: programs free null often (Lua: 18% of its frees).
    // SAFETY: `p` is no block of ours or a live one (our contract); a double
    // free of a class block aborts in SegregatedFit (`hardened`).
    if p.is_null() || unsafe { HEAP.free_cached(p.cast::<u8>()) } {
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { free_miss(p) }
}

/// [`free`] past its hit path: a class block whose list is full (or a
/// thread with no cache), a large block, or a pointer that is no block of
/// ours (abort).
///
/// # Safety
///
/// As for [`free`]; `p` is not null.
#[cold]
#[inline(never)]
unsafe extern "C" fn free_miss(p: *mut c_void) {
    if let Some(class) = HEAP.block_at(p.cast::<u8>().cast_const()) {
        // SAFETY: the start of a block of `class` (checked), so not null; a
        // double free of it aborts in SegregatedFit (the `hardened`
        // feature).
        unsafe { HEAP.dealloc_in(ptr::NonNull::new_unchecked(p.cast::<u8>()), class) };
        return;
    }
    // Only the large check is left.
    // SAFETY: what `owned_large` found `p` to be.
    unsafe { release(p, owned_large(p, "free()")) }
}

/// Gives back `p`, which [`owned`] (or [`owned_large`]) found to be `what`.
///
/// # Safety
///
/// `what` is what the check found for `p`, and `p` was not given back
/// since.
unsafe fn release(p: *mut c_void, what: Owned) {
    match what {
        // SAFETY: the start of a live block of `class` (checked), so not
        // null; a double free of it aborts in SegregatedFit (`hardened`).
        Owned::Class(class) => unsafe {
            HEAP.dealloc_in(ptr::NonNull::new_unchecked(p.cast::<u8>()), class)
        },
        Owned::Large(block, layout) => {
            remember_freed(p);
            // SAFETY: a live large block of ours with this layout (checked
            // against the allocator's record of its mapping).
            unsafe { GlobalAlloc::dealloc(&HEAP, block, layout) }
        }
    }
}

/// Allocates `n * size` zeroed bytes; null with `ENOMEM` when the product
/// overflows.
///
/// The hit path is `malloc`'s (a block of the thread cache, up to 1 KiB)
/// and a `memset` of the `n * size` bytes asked for, reached by a tail
/// jump; everything else goes to `calloc_miss` by a tail jump. (Before,
/// every `calloc` went through `SegregatedFit::alloc_zeroed`'s general
/// path: 88 instructions besides the `memset`, now 35; `scripts/malloc-hits`
/// counts them.)
///
/// # Safety
///
/// As for [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    if let Some(total) = n.checked_mul(size)
        && let Some(class) = SizeClass::aligned16(total)
        && let Some(p) = HEAP.alloc_cached(class)
    {
        // SAFETY: a live block of `class`, ours, of at least `total` bytes
        // (`aligned16` chose a class that holds `total`).
        unsafe { p.as_ptr().write_bytes(0, total) };
        return p.as_ptr().cast();
    }
    calloc_miss(n, size)
}

/// [`calloc`] past its hit path: an overflowing product, a request above
/// 1 KiB, a refill, a large block, a thread with no cache. (`extern "C"`,
/// as [`malloc_miss`]: `calloc` reaches it by a tail jump.)
#[inline(never)]
extern "C" fn calloc_miss(n: usize, size: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        return enomem();
    };
    if SizeClass::aligned16(total).is_none()
        && let Some(class) = SizeClass::of(total, MIN_ALIGN)
        && let Some(p) = HEAP.alloc_cached(class)
    {
        // SAFETY: as in `calloc`: a live block of ours that holds `total`.
        unsafe { p.as_ptr().write_bytes(0, total) };
        return p.as_ptr().cast();
    }
    allocate(total, MIN_ALIGN, true)
}

/// Resizes a block: `realloc(NULL, n)` is `malloc(n)`, `realloc(p, 0)`
/// frees `p` and returns null; on failure the block stays as it was.
///
/// # Safety
///
/// `p` is null or a live pointer returned by this library's functions; on
/// success it is no longer valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: none beyond C's.
        return unsafe { malloc(size) };
    }
    // SAFETY: forwarded contract; `p` is not null.
    unsafe { realloc_block(p, size) }
}

/// [`realloc`] of a block (not null), out of line: `realloc(NULL, n)`, the
/// allocation of programs that allocate only through `realloc` (Lua), is
/// `malloc`'s hit path, with no stack frame. (`extern "C"`, as
/// [`malloc_miss`]: `realloc` reaches it by a tail jump.)
///
/// The hit path is a class block resized to at most 32 bytes (Lua's
/// arrays grow 16 to 32), whose thread cache has a block of the new class
/// and room for the old one: the class map's byte, the double-free test
/// (the block's tag is not the key; a block whose tag is, free or not,
/// goes to the miss, which tells them apart), the new class, one cache
/// look-up for the pop and the push, and the copy in two 16-byte pieces;
/// no call and no stack frame. Everything else goes to [`realloc_move`] by
/// a tail jump.
///
/// # Safety
///
/// As for [`realloc`]; `p` is not null.
#[inline(never)]
unsafe extern "C" fn realloc_block(p: *mut c_void, size: usize) -> *mut c_void {
    if size.wrapping_sub(1) < 32
        // SAFETY: `p` is no block of ours or the caller's live block (C's
        // contract).
        && let Some((class, false)) = unsafe { HEAP.block_at_and_tagged(p.cast::<u8>().cast_const()) }
        && let Some(new) = SizeClass::aligned16(size)
    {
        if new == class {
            // The block already holds `size` bytes.
            return p;
        }
        // SAFETY: `p` is the start of a live block of `class`, just found
        // not free.
        if let Some(fresh) = unsafe { move_cached(p, class, new, size) } {
            return fresh;
        }
    }
    // SAFETY: forwarded contract.
    unsafe { realloc_move(p, size) }
}

/// [`realloc_block`] past its hit path: `realloc(p, 0)`, a block that is
/// free (abort), a copy of more than 32 bytes, a cache that cannot take or
/// give a block, a request above 1 KiB, a large block. A class block
/// resized to another class up to 1 KiB moves by the hit path's cache
/// step where the cache can, else to a fresh block (a refill), with a
/// copy and a free. (`extern "C"`, as [`malloc_miss`]: `realloc_block`
/// reaches it by a tail jump.)
///
/// # Safety
///
/// As for [`realloc`]; `p` is not null.
#[inline(never)]
unsafe extern "C" fn realloc_move(p: *mut c_void, size: usize) -> *mut c_void {
    if size == 0 {
        // SAFETY: forwarded contract.
        unsafe { free(p) };
        return ptr::null_mut();
    }
    // A block that is free (a use after free) aborts: its bytes are a free
    // list's, and a resize in place would hand it back while a list holds
    // it.
    // SAFETY: `p` is no block of ours or the caller's live block (C's
    // contract); a freed one no thread writes but the allocator's lists.
    let Some((class, free)) = (unsafe { HEAP.block_at_and_free(p.cast::<u8>().cast_const()) })
    else {
        // SAFETY: forwarded contract.
        return unsafe { realloc_other(p, size, owned_large(p, "realloc()")) };
    };
    if free {
        freed_realloc(p, class);
    }
    let Some(new) = SizeClass::aligned16(size) else {
        // SAFETY: forwarded contract; `class` is what `block_at` found.
        return unsafe { realloc_other(p, size, Owned::Class(class)) };
    };
    debug_assert!(class.block_size().is_multiple_of(16) && new.block_size().is_multiple_of(16));
    if new == class {
        // The block already holds `size` bytes (glibc also resizes in place
        // where it can).
        return p;
    }
    // SAFETY: the start of a live block of `class` (checked), not free.
    if let Some(fresh) = unsafe { move_cached(p, class, new, size) } {
        return fresh;
    }
    let n = class.block_size().min(size);
    // SAFETY: as above, so not null.
    let old = unsafe { ptr::NonNull::new_unchecked(p.cast::<u8>()) };
    let fresh = match HEAP.alloc_cached(new) {
        Some(b) => b.as_ptr(),
        None => {
            // The refill, out of line (its `ENOMEM` set there).
            let b = malloc_miss(size);
            if b.is_null() {
                return b;
            }
            b.cast::<u8>()
        }
    };
    // SAFETY: both blocks are live and distinct, and both hold the copied
    // length rounded up to 16 (`copy_blocks`).
    unsafe { copy_blocks(p.cast::<u8>(), fresh, n) };
    // SAFETY: `p` is the start of a live block of `class` (`block_at`); a
    // double free of it aborts in SegregatedFit (`hardened`).
    unsafe { HEAP.dealloc_in(old, class) };
    fresh.cast()
}

/// Moves `p`, a block of `class`, to a block of `new` from the thread
/// cache with what fits of it (`size` bytes at most) copied, in one cache
/// step ([`SegregatedFit::realloc_cached`]); `None`, with nothing changed,
/// where the cache cannot.
///
/// # Safety
///
/// `p` is the start of a live block of `class`, which `block_at_and_free`
/// just found not free (or `block_at_and_tagged` untagged); `new` is a
/// class of requests aligned to 16 that holds `size` bytes. On `Some`, `p`
/// is no longer the caller's.
#[inline(always)]
unsafe fn move_cached(
    p: *mut c_void,
    class: SizeClass,
    new: SizeClass,
    size: usize,
) -> Option<*mut c_void> {
    let n = class.block_size().min(size);
    // SAFETY: the start of a live block (the contract), so not null.
    let old = unsafe { ptr::NonNull::new_unchecked(p.cast::<u8>()) };
    // SAFETY: the contract; the copy reads `n` bytes of `p` and writes them
    // to the fresh block, both live, distinct and at least `n` rounded up to
    // 16 bytes long (`copy_blocks`).
    let fresh = unsafe {
        HEAP.realloc_cached(old, class, new, |fresh| {
            copy_blocks(p.cast::<u8>(), fresh.as_ptr(), n)
        })
    }?;
    Some(fresh.as_ptr().cast())
}

/// Copies `n` bytes from one class block of malloc's to another, in 16-byte
/// pieces up to 32 bytes (no call to `memcpy` for Lua's small arrays).
///
/// # Safety
///
/// `src` and `dst` are distinct class blocks of requests aligned to 16,
/// each at least `n` rounded up to 16 bytes long (every such class's block
/// size is a multiple of 16, and the copy is at most the smaller one's).
#[inline(always)]
unsafe fn copy_blocks(src: *const u8, dst: *mut u8, n: usize) {
    if n <= 32 {
        // The first and the last 16 bytes of `n` rounded up to 16: one
        // piece twice for up to 16 bytes, two for up to 32 (`n` is at
        // least 1: a request's and a block's size).
        debug_assert!(n >= 1);
        let last = (n - 1) & !15;
        // SAFETY: both pieces lie in the first `n` rounded up to 16 bytes of
        // both blocks (the contract), and the blocks do not overlap, so
        // each piece is copied whole before the next is read (read both
        // first, and the second went through the stack).
        unsafe {
            dst.cast::<[u64; 2]>()
                .write_unaligned(src.cast::<[u64; 2]>().read_unaligned());
            dst.add(last)
                .cast::<[u64; 2]>()
                .write_unaligned(src.add(last).cast::<[u64; 2]>().read_unaligned());
        }
    } else {
        // SAFETY: `n` bytes of each block (the contract).
        unsafe { ptr::copy_nonoverlapping(src, dst, n) };
    }
}

/// [`realloc_block`] beyond a class block to a small request: a large
/// block, or a class block to a request above 1 KiB.
///
/// # Safety
///
/// As for [`realloc`]; `p` is not null, not of size 0, and `found` is what
/// the ownership check found for it.
#[cold]
#[inline(never)]
unsafe fn realloc_other(p: *mut c_void, size: usize, found: Owned) -> *mut c_void {
    let old = match found {
        Owned::Class(class) => {
            if SegregatedFit::size_class(size, MIN_ALIGN) == Some(class) {
                return p;
            }
            class.block_size()
        }
        Owned::Large(block, layout) => {
            if layout.align() == MIN_ALIGN && SegregatedFit::size_class(size, MIN_ALIGN).is_none() {
                let Some(new) = block_layout(size, MIN_ALIGN) else {
                    return enomem();
                };
                // SAFETY: a live block of `layout`; the new size is non-zero and,
                // with its alignment, a valid layout (`block_layout`). Both map
                // to no class, so the block stays a large one (the header moves
                // with the data).
                let moved = unsafe { GlobalAlloc::realloc(&HEAP, block, layout, new.size()) };
                if moved.is_null() {
                    return enomem();
                }
                // SAFETY: a live block of `new`; the header gets the new size.
                return unsafe { finish(moved, new) };
            }
            layout.size() - layout.align()
        }
    };
    // Another class, or between a class and the large path, or an
    // over-aligned large block (memalign): a new block at malloc's
    // alignment, as glibc does, with what fits copied.
    let fresh = allocate(size, MIN_ALIGN, false);
    if fresh.is_null() {
        return fresh;
    }
    // SAFETY: both are live and distinct; `old` and `size` bytes are theirs.
    unsafe { ptr::copy_nonoverlapping(p.cast::<u8>(), fresh.cast::<u8>(), old.min(size)) };
    // The old block goes back as `free` would, without looking it up
    // again.
    // SAFETY: `found` is what the check above found for `p`, still live.
    unsafe { release(p, found) };
    fresh
}

/// `realloc(p, n * size)`, null with `ENOMEM` (the block untouched) when
/// the product overflows.
///
/// # Safety
///
/// As for [`realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: forwarded contract.
        Some(total) => unsafe { realloc(p, total) },
        None => enomem(),
    }
}

/// Stores in `*memptr` a block of `size` bytes aligned to `align`; returns
/// `EINVAL` (leaving `*memptr`) unless `align` is a power of two and a
/// multiple of the pointer size, `ENOMEM` when refused, else 0.
///
/// # Safety
///
/// `memptr` is valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(
    memptr: *mut *mut c_void,
    align: usize,
    size: usize,
) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    // posix_memalign reports through its result: errno stays as it was.
    // SAFETY: `__errno_location` is the calling thread's errno slot.
    let saved = unsafe { *libc::__errno_location() };
    let p = allocate(size, align.max(MIN_ALIGN), false);
    set_errno(saved);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller's contract.
    unsafe { memptr.write(p) };
    0
}

/// `size` bytes aligned to `align` (C11; glibc's rules: see [`memalign`]).
///
/// # Safety
///
/// As for [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    allocate_aligned(align, size)
}

/// `size` bytes aligned to `align`, rounded up to a power of two; null with
/// `EINVAL` above `SIZE_MAX / 2 + 1`.
///
/// # Safety
///
/// As for [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    allocate_aligned(align, size)
}

/// `size` bytes aligned to the page.
///
/// # Safety
///
/// As for [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    allocate_aligned(page_size(), size)
}

/// `size` rounded up to whole pages, aligned to the page; null with
/// `ENOMEM` when the rounding overflows.
///
/// # Safety
///
/// As for [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let page = page_size();
    match size.checked_next_multiple_of(page) {
        Some(rounded) => allocate_aligned(page, rounded),
        None => enomem(),
    }
}

/// Gives the pages of free memory back to the OS, as glibc's `malloc_trim`
/// does: [`SegregatedFit::trim`] (this thread's cache flushed, the pages of
/// every span whose blocks are all free purged, the cached large mappings
/// unmapped). Returns 1 if any memory was released, else 0. `pad` (the
/// bytes glibc leaves at the top of its heap) has no meaning here: the
/// spans that are not empty are kept whole.
#[unsafe(no_mangle)]
pub extern "C" fn malloc_trim(pad: usize) -> c_int {
    let _ = pad;
    c_int::from(HEAP.trim() > 0)
}

/// The bytes a block of this library can hold (at least what was asked),
/// 0 for null.
///
/// # Safety
///
/// `p` is null or a live pointer returned by this library's functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    match owned(p, "malloc_usable_size()") {
        Owned::Class(class) => class.block_size(),
        Owned::Large(_, layout) => layout.size() - layout.align(),
    }
}
