//! Per-thread caches in front of the class queues of
//! [`SegregatedFit`](super::SegregatedFit).
//!
//! **Contract.** Each thread has two caches, in a `const`-initialised
//! thread-local without `Drop` (so its accesses carry no lazy-registration
//! check and never allocate). A cache serves one allocator at a time, its
//! *owner* (the allocator's heap address). The fast paths look at the
//! *primary* cache only; the *secondary* serves a second allocator used on
//! the same thread (a local heap beside a global `SegregatedFit`) from the
//! out-of-line miss path: a call, still no atomic. A third allocator takes
//! the secondary over (flushing it to its owner). Per size class a cache
//! holds up to its cap (`CAPS`) of blocks: a LIFO free list threaded
//! through the blocks' first words, and a spare run (see **Misses**). A hit
//! (alloc from a non-empty list, free into a list that is not full) is a
//! compare of the owner and a few plain loads and stores: no atomic
//! read-modify-write, no lock, no call. (The list heads and counts are
//! atomics written with `Relaxed` loads and stores, plain moves, so that
//! `stats` and an allocator's drop may read and clear them from another
//! thread under the registry lock.)
//!
//! **Misses.** A class's cap is two batches of `cap / 2` blocks: the list
//! and, set aside whole, a *spare* run. A push that finds its list full (a
//! batch) moves the list to the spare slot if it is empty, else gives the
//! list to the class's run stack whole (one compare-exchange); neither
//! walks it. A pop that finds its list empty takes the spare back, else
//! refills with a batch: a run from the run stack (one compare-exchange),
//! else up to `cap / 2` blocks from the class queue
//! (`ClassQueue::pop_batch`). The 8-byte class, too small for a run, has no
//! spare: its list holds the whole cap and flushes its newest half to the
//! queue. A block freed on another thread than the one that
//! allocated it simply joins the freeing thread's list: no lock, no remote
//! queue; it goes back to the shared queue with that thread's next flush.
//!
//! **Ownership and lifetime.** A thread's first use of a cache (and any use
//! with an allocator neither cache serves) takes the global registry lock
//! (a spin lock: never allocates): the cache is linked into the registry,
//! its lists are flushed to the previous owner, and the owner changes. The
//! thread-exit hook is armed at registration *without allocating*: a
//! `pthread_key_create` destructor on Unix (`pthread_setspecific` stores the
//! caches' address), a fiber-local-storage callback (`FlsAlloc`) on Windows;
//! std's `thread_local!` destructors are not used because on some targets
//! their registration pushes onto a heap-allocated list, which would
//! re-enter the allocator while it is installed as `#[global_allocator]`. At
//! thread exit the hook flushes every list to the owner, unlinks the cache,
//! and marks it dead: later allocations on that thread (other destructors)
//! go straight to the class queues. Dropping an allocator clears, under the
//! registry lock, the lists of every cache it owns (their blocks die with
//! it). Where no hook can be armed (targets other than Unix and Windows),
//! and on `*-windows-gnu`, whose `thread_local!` values std frees before
//! the FLS callbacks run, caches stay off and every operation goes to the
//! queues.
//!
//! **Costs.** Per thread: two [`ThreadCache`]s (1.4 KiB each) plus up to `cap` blocks
//! per class (about 16 KiB of blocks per class at most, 2..=128 blocks).
//! Blocks in caches are neither free in the queue nor in use: `stats`
//! reports them separately; `trim` cannot give back a span one of whose
//! blocks sits in another thread's cache.

use core::ptr::{self, NonNull};

use super::Heap;
use super::class::{CLASS_COUNT, SizeClass};
#[cfg(feature = "hardened")]
use super::harden;
use super::lock::SpinLock;
use super::queue::{code, link};
use crate::sync::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// The owner value of a cache that serves no allocator.
const NO_OWNER: usize = usize::MAX;

/// Cache states.
const UNREGISTERED: usize = 0;
const LIVE: usize = 1;
const DEAD: usize = 2;

/// Whether a block of `size` bytes has no room for the double-free tag
/// beside its link (`hardened`: below `TAGGED_MIN`), and so no cache.
const fn untagged(size: usize) -> bool {
    #[cfg(feature = "hardened")]
    {
        size < harden::TAGGED_MIN
    }
    #[cfg(not(feature = "hardened"))]
    {
        let _ = size;
        false
    }
}

/// The most blocks a thread caches per class: about 16 KiB of blocks,
/// between 2 and 128.
const CAPS: [u32; CLASS_COUNT] = {
    let mut caps = [0u32; CLASS_COUNT];
    let mut i = 0;
    while i < CLASS_COUNT {
        let size = match SizeClass::from_index(i) {
            Some(c) => c.block_size(),
            None => 1,
        };
        let cap = (16 * 1024) / size;
        caps[i] = if untagged(size) {
            // No room for the double-free tag beside the link: the 8-byte
            // class of 64-bit targets goes straight to its queue (C's
            // malloc never uses it: its alignment is 16).
            0
        } else if cap < 2 {
            2
        } else if cap > 128 {
            128
        } else {
            cap as u32
        };
        i += 1;
    }
    caps
};

/// How many blocks a refill takes and a flush gives back.
#[inline(always)]
pub(crate) fn batch(index: usize) -> usize {
    (CAPS[index] / 2) as usize
}

/// Whether class `index` keeps a spare run beside its list (see
/// [`ThreadCache::spares`]): every class whose blocks can form a run on the
/// run stack (`uses_runs`: two words or more) and that is cached at all.
const fn has_spare(index: usize) -> bool {
    match SizeClass::from_index(index) {
        Some(class) => super::uses_runs(class) && CAPS[index] >= 2,
        None => false,
    }
}

/// The most blocks class `index`'s list holds: its batch where a spare run
/// holds the other half of its cap, else the whole cap.
const fn list_cap(index: usize) -> u32 {
    if has_spare(index) {
        CAPS[index] / 2
    } else {
        CAPS[index]
    }
}

/// One class's LIFO list.
#[derive(Debug)]
struct Bin {
    head: AtomicPtr<u8>,
    count: AtomicU32,
    /// `CAPS[index]`, kept beside the count (in what was padding) so the
    /// free path compares against a field of the line it already reads,
    /// instead of holding the address of a table of caps in one more
    /// register (on x86-64 Windows that register was a callee-saved one,
    /// saved and restored on the hot path). Immutable.
    cap: u32,
}

/// One thread's cache. See the [module docs](self).
///
/// `repr(C)`, the bins first and the spare runs last: the hit paths read a
/// bin, `owner` and `key`, and keep those at the offsets they had before
/// the spares came (`owner` at 1,408 bytes): riscv64's loads take a 12-bit
/// offset, and one past 2,047 costs the hit path an `addi` (the spares
/// between the bins and `owner`, where field reordering put them, did).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ThreadCache {
    bins: [Bin; CLASS_COUNT],
    /// The owning heap's address, or `NO_OWNER`.
    owner: AtomicUsize,
    /// `UNREGISTERED`, `LIVE` or `DEAD`.
    state: AtomicUsize,
    /// Registry links (under the registry lock).
    prev: AtomicPtr<ThreadCache>,
    next: AtomicPtr<ThreadCache>,
    /// The owner's secret (`hardened`): the links of the lists are stored
    /// XORed with it, and a free block's tag is it (see `harden.rs`).
    /// Copied from the heap when the cache binds to it, beside `owner`, so
    /// the fast paths read it from the line they already read.
    /// Only this cache's thread reads or writes it (other threads touch the
    /// owner, the lists' heads and counts), so a plain cell: the pop then
    /// XORs the link with it as a memory operand.
    #[cfg(feature = "hardened")]
    key: core::cell::Cell<usize>,
    /// The owner's span region (`hardened`): where a list's blocks must lie.
    /// This thread's alone, as `key`.
    #[cfg(feature = "hardened")]
    base: core::cell::Cell<usize>,
    /// Per class, a full list set aside whole (null-terminated, exactly
    /// `batch` blocks, links coded as the list's), or null. A push that
    /// finds its list full sets the list aside here if the slot is empty,
    /// else gives the list to the run stack whole (`Heap::give_run`);
    /// either way without walking it. A pop that finds its list empty takes
    /// the spare back before it refills. The hit paths never read it: it
    /// sits after the bins, off their lines.
    spares: [AtomicPtr<u8>; CLASS_COUNT],
}

impl ThreadCache {
    const fn new() -> Self {
        ThreadCache {
            owner: AtomicUsize::new(NO_OWNER),
            state: AtomicUsize::new(UNREGISTERED),
            prev: AtomicPtr::new(ptr::null_mut()),
            next: AtomicPtr::new(ptr::null_mut()),
            #[cfg(feature = "hardened")]
            key: core::cell::Cell::new(0),
            #[cfg(feature = "hardened")]
            base: core::cell::Cell::new(0),
            bins: {
                let mut bins = [const {
                    Bin {
                        head: AtomicPtr::new(ptr::null_mut()),
                        count: AtomicU32::new(0),
                        cap: 0,
                    }
                }; CLASS_COUNT];
                let mut i = 0;
                while i < CLASS_COUNT {
                    bins[i].cap = list_cap(i);
                    i += 1;
                }
                bins
            },
            spares: [const { AtomicPtr::new(ptr::null_mut()) }; CLASS_COUNT],
        }
    }

    /// Moves class `index`'s spare run into its list, which must be empty:
    /// `false` if there is none.
    fn take_spare(&self, index: usize) -> bool {
        let bin = self.bin(index);
        debug_assert_eq!(bin.count.load(Ordering::Relaxed), 0);
        // SAFETY: `index` comes from a `SizeClass`, always below COUNT.
        let spare = unsafe { self.spares.get_unchecked(index) };
        let run = spare.load(Ordering::Relaxed);
        if run.is_null() {
            return false;
        }
        spare.store(ptr::null_mut(), Ordering::Relaxed);
        bin.head.store(run, Ordering::Relaxed);
        bin.count.store(batch(index) as u32, Ordering::Relaxed);
        true
    }

    #[inline(always)]
    fn bin(&self, index: usize) -> &Bin {
        debug_assert!(index < CLASS_COUNT);
        // SAFETY: `index` comes from a `SizeClass`, always below COUNT.
        unsafe { self.bins.get_unchecked(index) }
    }

    /// The hit path of `alloc`: the newest block of the class's list, if the
    /// cache serves `heap` and the list is not empty.
    #[inline(always)]
    fn pop(&self, heap: usize, index: usize) -> Option<NonNull<u8>> {
        if self.owner.load(Ordering::Relaxed) != heap {
            return None;
        }
        self.pop_owned(index)
    }

    /// [`pop`](Self::pop) once the owner test passed.
    #[inline(always)]
    fn pop_owned(&self, index: usize) -> Option<NonNull<u8>> {
        let bin = self.bin(index);
        let block = NonNull::new(bin.head.load(Ordering::Relaxed))?;
        // A head decoded from an overwritten link is caught before it is
        // read: the key's low bits are set, so a stray aligned value (a
        // pointer, zero) decodes misaligned. (The region's bounds are
        // checked where lists are walked: `flush_bin`, `encode_chain`; a
        // list set aside or given away whole is not walked.)
        #[cfg(feature = "hardened")]
        if !block.as_ptr().addr().is_multiple_of(8) {
            harden::corrupt(block, index);
        }
        // SAFETY: a block in our list: ours, mapped, its first word the link
        // we (or the refill) wrote.
        let next = unsafe { link(block) }.load(Ordering::Relaxed);
        #[cfg(feature = "hardened")]
        let next = {
            // SAFETY: a cached block: at least `TAGGED_MIN` bytes (on 64-bit
            // targets the 8-byte class is never cached in hardened builds,
            // see `CAPS`).
            unsafe { harden::tag(block) }.store(0, Ordering::Relaxed);
            code(next, self.key.get())
        };
        bin.head.store(next, Ordering::Relaxed);
        bin.count
            .store(bin.count.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
        Some(block)
    }

    /// The hit path of `dealloc`: pushes `block` onto the class's list if
    /// the cache serves `heap` and the list is below its cap. `hardened`:
    /// `false` too for a block whose tag is the key but whose first word is
    /// no coded link, which the miss path settles ([`flush_and_push`]).
    #[inline(always)]
    fn push(&self, heap: usize, index: usize, block: NonNull<u8>) -> bool {
        self.push_checked(heap, index, block, true)
    }

    /// [`push`](Self::push); `check`: its double-free test (`hardened`),
    /// which the miss path leaves out once it has settled the block.
    #[inline(always)]
    fn push_checked(&self, heap: usize, index: usize, block: NonNull<u8>, check: bool) -> bool {
        if self.owner.load(Ordering::Relaxed) != heap {
            return false;
        }
        let bin = self.bin(index);
        let n = bin.count.load(Ordering::Relaxed);
        if n >= bin.cap {
            return false;
        }
        self.push_below_cap(index, n, block, check)
    }

    /// Whether list `index` holds `block`: the miss path's test of a block
    /// whose tag says it is free and whose first word says it is not (a
    /// write after free overwrote the link, or a live block holds a copy of
    /// the key). It walks at most the list's count of blocks, and aborts
    /// at a link that leaves the region, as a flush does.
    #[cfg(feature = "hardened")]
    fn holds(&self, index: usize, block: NonNull<u8>) -> bool {
        let bin = self.bin(index);
        let key = self.key.get();
        let mut next = NonNull::new(bin.head.load(Ordering::Relaxed));
        for _ in 0..bin.count.load(Ordering::Relaxed) {
            let Some(b) = next else {
                return false;
            };
            if b == block {
                return true;
            }
            // SAFETY: a block of our list (the head, or reached by links
            // checked below): ours, mapped, its first word a coded link.
            next = NonNull::new(code(unsafe { link(b) }.load(Ordering::Relaxed), key));
            if let Some(n) = next
                && !harden::plausible(n, self.base.get())
            {
                harden::corrupt(n, index);
            }
        }
        false
    }

    /// [`push`](Self::push) once the owner and cap tests passed: `n` is
    /// the list's count, below its cap. `check`: the double-free test
    /// (`hardened`), which a caller that settled `block` just before
    /// (`swap`, the miss path) leaves out. `false`, with nothing changed,
    /// for a block the test cannot settle: its tag is the key and its
    /// first word no coded link (see [`flush_and_push`]).
    #[inline(always)]
    fn push_below_cap(&self, index: usize, n: u32, block: NonNull<u8>, check: bool) -> bool {
        let bin = self.bin(index);
        let head = bin.head.load(Ordering::Relaxed);
        #[cfg(feature = "hardened")]
        let head = {
            let key = self.key.get();
            // SAFETY: a block of a cached class: at least `TAGGED_MIN` bytes
            // (on 64-bit targets the 8-byte class has no cache in hardened
            // builds).
            let tag = unsafe { harden::tag(block) };
            // A match is confirmed by the block's first word (see
            // `looks_free`); without one, the miss path asks the list.
            // SAFETY: as above; a plain read (no other thread writes a block
            // its freer owns) lets the compare take it as an operand.
            if check && unsafe { harden::tag_word(block) } == key {
                // SAFETY: as above: the block's first word, read plainly.
                if unsafe { harden::looks_free(block, key, self.base.get()) } {
                    harden::double_free(block, index + 1);
                }
                return false;
            }
            tag.store(key, Ordering::Relaxed);
            code(head, key)
        };
        #[cfg(not(feature = "hardened"))]
        let _ = check;
        // SAFETY: the caller gives us the block: ours, mapped, 8 bytes.
        unsafe { link(block) }.store(head, Ordering::Relaxed);
        bin.head.store(block.as_ptr(), Ordering::Relaxed);
        bin.count.store(n + 1, Ordering::Relaxed);
        true
    }

    /// `realloc`'s hit path: a block of class `to` from its list, `copy`
    /// run on it, then `old`, a live block of class `from`, onto that
    /// class's list; one owner test for both. `None`, with nothing changed
    /// and `copy` not run, where the cache does not serve `heap`, `to`'s
    /// list is empty or `from`'s is full. `old`'s double-free test is the
    /// caller's (`hardened`: it found `old` not free with the heap's key
    /// and region, which a cache that serves the heap shares).
    #[inline(always)]
    fn swap(
        &self,
        heap: usize,
        to: usize,
        from: usize,
        old: NonNull<u8>,
        copy: impl FnOnce(NonNull<u8>),
    ) -> Option<NonNull<u8>> {
        if self.owner.load(Ordering::Relaxed) != heap {
            return None;
        }
        let bin = self.bin(from);
        if bin.count.load(Ordering::Relaxed) >= bin.cap {
            return None;
        }
        let fresh = self.pop_owned(to)?;
        copy(fresh);
        // Read after the pop: `to` may be `from`, and then the pop took one.
        let n = bin.count.load(Ordering::Relaxed);
        let pushed = self.push_below_cap(from, n, old, false);
        debug_assert!(pushed, "an unchecked push always pushes");
        Some(fresh)
    }
}

/// A thread's two caches. The fast paths look at `primary` only (first in
/// the struct, so its fields sit where a lone cache's did); `secondary`
/// serves a second allocator used on the same thread (a local heap beside a
/// global `SegregatedFit`, `Persistent` over its own heap) from the miss
/// path, without the atomics of the queue and without flushing the primary
/// (alternating two heaps through one cache flushed every list on every
/// switch: 80x slower).
#[repr(C)]
struct Caches {
    primary: ThreadCache,
    secondary: ThreadCache,
}

impl Caches {
    const fn new() -> Self {
        Caches {
            primary: ThreadCache::new(),
            secondary: ThreadCache::new(),
        }
    }
}

#[cfg(not(allocasm_tls_ie))]
std::thread_local! {
    static CACHE: Caches = const { Caches::new() };
}

/// This thread's caches (hit paths: no set-up check).
#[cfg(not(allocasm_tls_ie))]
#[inline(always)]
fn with_caches<R>(f: impl FnOnce(&Caches) -> R) -> R {
    CACHE.with(f)
}

/// This thread's caches, initialised (miss paths, before a cache binds).
#[cfg(not(allocasm_tls_ie))]
#[inline(always)]
fn with_caches_ready<R>(f: impl FnOnce(&Caches) -> R) -> R {
    CACHE.with(f)
}

/// The caches in an initial-exec TLS slot (`initial-exec-tls` feature, x86_64
/// Linux). std's `thread_local!` in position-independent code uses the
/// general-dynamic model: a `__tls_get_addr` call on every access, about 15%
/// of the drop-in malloc's own instructions. Stable Rust has no TLS-model
/// switch, so the slot is defined in assembly (a `.tbss` object, zero bytes)
/// and its address is the thread pointer (`%fs:0`) plus the slot's offset,
/// which the dynamic loader stores in the GOT (`@GOTTPOFF`): two instructions,
/// no call.
///
/// Why it is sound: the initial-exec model is valid for any module whose TLS
/// block the loader puts in the static TLS area, which it does for the
/// executable and for every library loaded at start-up (`LD_PRELOAD`,
/// DT_NEEDED). The linker marks the object `DF_STATIC_TLS`; a later `dlopen`
/// of it either finds room in the static TLS surplus or fails cleanly
/// ("cannot allocate memory in static TLS block"), never runs with a wrong
/// offset. The slot starts as zero bytes, not as [`Caches::new`]; all-zero
/// is a valid `Caches` (atomics, cells, integers) whose owner (0) is no heap,
/// so the hit paths miss on it, and the miss paths write `Caches::new()` into
/// it before a cache binds ([`with_caches_ready`]).
#[cfg(allocasm_tls_ie)]
mod tls_ie {
    use super::Caches;

    core::arch::global_asm!(
        ".pushsection .tbss.allocasm_thread_caches,\"awT\",@nobits",
        ".p2align {align}",
        ".globl __allocasm_thread_caches",
        ".hidden __allocasm_thread_caches",
        ".type __allocasm_thread_caches,@tls_object",
        ".size __allocasm_thread_caches,{size}",
        "__allocasm_thread_caches:",
        ".zero {size}",
        ".popsection",
        size = const size_of::<Caches>(),
        align = const align_of::<Caches>().trailing_zeros(),
    );

    /// The calling thread's slot: valid (and all its bytes a valid `Caches`)
    /// for as long as the thread runs, exit hooks included.
    #[inline(always)]
    pub(super) fn slot() -> *mut Caches {
        let p: *mut Caches;
        // SAFETY: reads the thread pointer (`%fs:0` holds its own address on
        // x86_64 Linux) and the GOT entry the loader filled with the slot's
        // offset from it before any code of this module ran; neither changes
        // while the thread runs (`pure, readonly`: equal results may be
        // reused). No stack, no other state.
        unsafe {
            core::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + __allocasm_thread_caches@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack),
            );
        }
        p
    }
}

#[cfg(allocasm_tls_ie)]
#[inline(always)]
fn with_caches<R>(f: impl FnOnce(&Caches) -> R) -> R {
    // SAFETY: the thread's slot, valid while it runs; any bytes it holds are
    // a valid `Caches` (zero, or written by `with_caches_ready`), and only
    // shared references to it are ever made.
    f(unsafe { &*tls_ie::slot() })
}

#[cfg(allocasm_tls_ie)]
#[inline(always)]
fn with_caches_ready<R>(f: impl FnOnce(&Caches) -> R) -> R {
    let p = tls_ie::slot();
    // SAFETY: as in `with_caches`. An all-zero slot (owner 0: `Caches::new`
    // has `NO_OWNER`, a bound cache its heap's address, never 0) has never
    // been used: it is not registered, so no other thread can reach it, and
    // no reference to it is live on this one (the hit paths' ended), so it
    // may be written whole.
    unsafe {
        if (*p).primary.owner.load(Ordering::Relaxed) == 0 {
            p.write(Caches::new());
        }
        f(&*p)
    }
}

/// The registry of live caches (a doubly linked list through the caches).
pub(super) static REGISTRY: SpinLock = SpinLock::new();
static HEAD: AtomicPtr<ThreadCache> = AtomicPtr::new(ptr::null_mut());

/// The cache hit path of `alloc` for the heap at `heap`.
#[inline(always)]
pub(crate) fn try_pop(heap: usize, index: usize) -> Option<NonNull<u8>> {
    with_caches(|c| c.primary.pop(heap, index))
}

/// A block of `heap`'s class `index` from whichever of this thread's caches
/// serves `heap` (for `try_alloc`, which never refills).
pub(crate) fn try_pop_either(heap: usize, index: usize) -> Option<NonNull<u8>> {
    with_caches(|c| {
        [&c.primary, &c.secondary].into_iter().find_map(|t| {
            t.pop(heap, index).or_else(|| {
                // A list may be empty while its spare run is not.
                if t.owner.load(Ordering::Relaxed) == heap && t.take_spare(index) {
                    t.pop(heap, index)
                } else {
                    None
                }
            })
        })
    })
}

/// Whether one of this thread's caches that serves `heap` holds `block` in
/// its list `index` (`hardened`: the drop-in `realloc`'s test of a block
/// whose tag says free and whose first word says not; see
/// [`ThreadCache::holds`]). 64-bit targets only, as `block_at_and_free`.
#[cfg(all(feature = "hardened", target_pointer_width = "64"))]
#[cold]
#[inline(never)]
pub(crate) fn holds(heap: usize, index: usize, block: NonNull<u8>) -> bool {
    with_caches(|c| {
        [&c.primary, &c.secondary]
            .into_iter()
            .any(|t| t.owner.load(Ordering::Relaxed) == heap && t.holds(index, block))
    })
}

/// The cache hit path of `dealloc`; `false` means "take the slow path".
#[inline(always)]
pub(crate) fn try_push(heap: usize, index: usize, block: NonNull<u8>) -> bool {
    with_caches(|c| c.primary.push(heap, index, block))
}

/// The cache hit path of `realloc` (see [`ThreadCache::swap`]).
#[inline(always)]
pub(crate) fn try_swap(
    heap: usize,
    to: usize,
    from: usize,
    old: NonNull<u8>,
    copy: impl FnOnce(NonNull<u8>),
) -> Option<NonNull<u8>> {
    with_caches(|c| c.primary.swap(heap, to, from, old, copy))
}

/// The alloc miss: bind the cache to `heap` if needed, then refill the
/// class's list from the queue and return one block. `Ok(None)`: no cache
/// on this thread (dead, or no exit hook), use the queue.
#[inline(never)]
pub(crate) fn refill(
    heap: &Heap,
    class: SizeClass,
) -> Result<Option<NonNull<u8>>, crate::AllocError> {
    with_caches_ready(|c| {
        let Some(t) = choose(c, heap) else {
            return Ok(None);
        };
        let index = class.index();
        let bin = t.bin(index);
        if let Some(p) = t.pop(heap.addr(), index) {
            // Binding kept a list (the cache already served this heap).
            return Ok(Some(p));
        }
        if t.take_spare(index) {
            return Ok(t.pop(heap.addr(), index));
        }
        let (first, last, n) = heap.take(class, batch(index))?;
        #[cfg(feature = "hardened")]
        t.base.set(heap.base());
        if n > 1 {
            // The shared level's links are coded with the heap's key, as the
            // cache's are: the chain joins the list as it is, unwalked.
            let key = heap.key();
            // SAFETY: the run is ours; `first`'s link names its second block.
            let second = code(unsafe { link(first) }.load(Ordering::Relaxed), key);
            // The one link the refill follows (the rest are checked where
            // they were: the queue's batch pop; a run's as the pops reach
            // them).
            #[cfg(feature = "hardened")]
            if let Some(b) = NonNull::new(second)
                && !harden::plausible(b, heap.base())
            {
                harden::corrupt(b, index);
            }
            if let Some(last) = last {
                // SAFETY: as above; terminate the list at `last` (a run from
                // the run stack is terminated already).
                unsafe { link(last) }.store(code(ptr::null_mut(), key), Ordering::Relaxed);
            }
            bin.head.store(second, Ordering::Relaxed);
            bin.count.store((n - 1) as u32, Ordering::Relaxed);
        }
        Ok(Some(first))
    })
}

/// The dealloc miss: bind the cache to `heap` if needed, make room in a
/// full list, then keep `block`. `false`: no cache on this thread, use the
/// queue.
///
/// A full list of a class with a spare run (a batch of blocks) is set aside
/// whole as the spare, or, when the spare is taken already, given whole to
/// the run stack: the newest batch leaves, the older one stays, as when the
/// list held both. Neither walks the list (walking it to cut off its newest
/// half cost `lua5.4` 37.5 M instructions, 820 a flush). Other classes
/// flush their newest half to the queue.
#[inline(never)]
pub(crate) fn flush_and_push(heap: &Heap, class: SizeClass, block: NonNull<u8>) -> bool {
    with_caches_ready(|c| {
        let Some(t) = choose(c, heap) else {
            return false;
        };
        let index = class.index();
        // The miss path settles the double-free test itself, so both pushes
        // below leave it out. The hit path declined a block whose tag is the
        // key but whose first word is no coded link: free, with its link
        // overwritten since (a write after free), or live, with a copy of
        // the key in it. The list tells which (a block that left it is not
        // told apart).
        #[cfg(feature = "hardened")]
        if harden::tagged(class)
            // SAFETY: the caller's block of `class`, at least `TAGGED_MIN`
            // bytes (`tagged`); its tag is read plainly, as `push` reads it.
            && unsafe { harden::tag_word(block) } == heap.key()
            // SAFETY: as above: the block's first word, read plainly.
            && (unsafe { harden::looks_free(block, heap.key(), heap.base()) }
                || t.holds(index, block))
        {
            harden::double_free(block, index + 1);
        }
        if t.push_checked(heap.addr(), index, block, false) {
            return true;
        }
        if has_spare(index) {
            let bin = t.bin(index);
            let list = bin.head.load(Ordering::Relaxed);
            // SAFETY: `index` comes from a `SizeClass`, always below COUNT.
            let spare = unsafe { t.spares.get_unchecked(index) };
            if spare.load(Ordering::Relaxed).is_null() {
                spare.store(list, Ordering::Relaxed);
            } else {
                // SAFETY: the full list: `batch` blocks of this class of
                // `heap` (the cache serves it), ours, null-terminated (a
                // list only ever grows from empty at its head, or is a run
                // or a terminated refill), links coded with the heap's key.
                unsafe {
                    heap.give_run(class, NonNull::new(list).expect("full list"), batch(index))
                };
            }
            bin.head.store(ptr::null_mut(), Ordering::Relaxed);
            bin.count.store(0, Ordering::Relaxed);
        } else {
            flush_bin(t, heap, index, batch(index));
        }
        let pushed = t.push_checked(heap.addr(), index, block, false);
        // Only a class without a cache (cap 0, hardened) fails again.
        debug_assert!(pushed || t.bin(index).cap == 0);
        pushed
    })
}

/// Moves the newest `n` blocks (or all, if fewer) of list `index` to the
/// heap's queue with one publish.
fn flush_bin(t: &ThreadCache, heap: &Heap, index: usize, n: usize) {
    let bin = t.bin(index);
    let Some(first) = NonNull::new(bin.head.load(Ordering::Relaxed)) else {
        return;
    };
    let key = heap.key();
    let mut last = first;
    let mut k = 1;
    loop {
        // SAFETY: blocks of our list. The shared level's links are coded as
        // the list's: decode to follow, store nothing.
        let next = code(unsafe { link(last) }.load(Ordering::Relaxed), key);
        #[cfg(feature = "hardened")]
        if let Some(b) = NonNull::new(next)
            && !harden::plausible(b, t.base.get())
        {
            harden::corrupt(b, index);
        }
        match NonNull::new(next) {
            Some(b) if k < n => {
                last = b;
                k += 1;
            }
            _ => {
                bin.head.store(next, Ordering::Relaxed);
                break;
            }
        }
    }
    bin.count.store(
        bin.count.load(Ordering::Relaxed) - k as u32,
        Ordering::Relaxed,
    );
    let class = SizeClass::from_index(index).expect("class index");
    if k == batch(index) && super::uses_runs(class) {
        // A full batch goes back whole, for a refill to take without
        // walking it.
        // SAFETY: `last` is ours; the run ends there.
        unsafe { link(last) }.store(code(ptr::null_mut(), key), Ordering::Relaxed);
        // SAFETY: a null-terminated run of `k` blocks of this class of
        // `heap`, ours, `k` its batch.
        return unsafe { heap.give_run(class, first, k) };
    }
    // SAFETY: a chain of `k` blocks of this class of `heap`, ours, linked
    // through their first words.
    unsafe { heap.give(class, first, last, k) };
}

/// Flushes every list and spare run of `t` to `heap`.
fn flush_all(t: &ThreadCache, heap: &Heap) {
    for index in 0..CLASS_COUNT {
        flush_bin(t, heap, index, usize::MAX);
        let run = t.spares[index].swap(ptr::null_mut(), Ordering::Relaxed);
        if let (Some(run), Some(class)) = (NonNull::new(run), SizeClass::from_index(index)) {
            // SAFETY: a spare run of `t`, which serves `heap`: `batch`
            // blocks of this class, ours, null-terminated, coded.
            unsafe { heap.give_run(class, run, batch(index)) };
        }
    }
}

/// The cache of this thread that serves `heap`: the one that does already,
/// else the primary if it serves no allocator, else the secondary (flushed
/// to the allocator it served). `None` if the caches are dead or cannot be
/// registered.
///
/// The binding is out of line (`choose_unbound`), so that the usual case,
/// a cache that serves the heap already, saves no register: with it inline,
/// LLVM's shrink-wrapping placed the six pushes and pops before the first
/// compare in one build and after it in another, as the crate's other
/// functions changed (`segregated_free_full`'s count went from 160 to 175).
#[inline(never)]
fn choose<'a>(c: &'a Caches, heap: &Heap) -> Option<&'a ThreadCache> {
    let me = heap.addr();
    if c.primary.owner.load(Ordering::Relaxed) == me {
        return Some(&c.primary);
    }
    if c.secondary.owner.load(Ordering::Relaxed) == me {
        return Some(&c.secondary);
    }
    choose_unbound(c, heap)
}

/// [`choose`] when neither cache serves `heap`.
#[cold]
#[inline(never)]
fn choose_unbound<'a>(c: &'a Caches, heap: &Heap) -> Option<&'a ThreadCache> {
    let t = if c.primary.owner.load(Ordering::Relaxed) == NO_OWNER {
        &c.primary
    } else {
        &c.secondary
    };
    bind(c, t, heap).then_some(t)
}

/// Makes `t`, one of `c`'s caches that serves another heap or none, serve
/// `heap`: registers it (arming the exit hook for `c`) on first use, flushes
/// it to its previous owner. `false` if the cache is dead or cannot be
/// registered.
fn bind(c: &Caches, t: &ThreadCache, heap: &Heap) -> bool {
    debug_assert_ne!(t.owner.load(Ordering::Relaxed), heap.addr());
    let _guard = REGISTRY.lock();
    match t.state.load(Ordering::Relaxed) {
        DEAD => return false,
        UNREGISTERED => {
            if !arm_exit_hook(c) {
                t.state.store(DEAD, Ordering::Relaxed);
                return false;
            }
            let me = ptr::from_ref(t).cast_mut();
            let head = HEAD.load(Ordering::Relaxed);
            t.next.store(head, Ordering::Relaxed);
            t.prev.store(ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: registered caches stay valid until their thread's exit
            // hook unlinks them, under this lock.
            if let Some(h) = unsafe { head.as_ref() } {
                h.prev.store(me, Ordering::Relaxed);
            }
            HEAD.store(me, Ordering::Relaxed);
            t.state.store(LIVE, Ordering::Relaxed);
        }
        _ => {}
    }
    let old = t.owner.load(Ordering::Relaxed);
    if old != NO_OWNER {
        // SAFETY: a cache's owner is a live heap: an allocator's drop resets
        // the owner of every cache it owns under this lock, which we hold.
        let old = unsafe { &*ptr::with_exposed_provenance::<Heap>(old) };
        flush_all(t, old);
    }
    #[cfg(feature = "hardened")]
    {
        t.key.set(heap.key);
        t.base.set(heap.base());
    }
    t.owner.store(heap.addr(), Ordering::Relaxed);
    true
}

/// The thread-exit hook: both caches flushed to their owners, unlinked,
/// marked dead.
///
/// # Safety
///
/// `c` is the exiting thread's caches, one of them registered.
#[cfg(any(unix, all(windows, not(target_env = "gnu"))))]
unsafe fn on_exit(c: *const Caches) {
    // SAFETY: the hook's value is this thread's caches, still valid
    // (thread-locals without `Drop` live until the thread is gone, after
    // every exit hook).
    let c = unsafe { &*c };
    let _guard = REGISTRY.lock();
    retire(&c.primary);
    retire(&c.secondary);
}

/// Flushes `t` to its owner, unlinks it if registered, marks it dead.
/// Under the registry lock.
#[cfg(any(unix, all(windows, not(target_env = "gnu"))))]
fn retire(t: &ThreadCache) {
    let old = t.owner.load(Ordering::Relaxed);
    if old != NO_OWNER {
        // SAFETY: as in `bind`.
        let old = unsafe { &*ptr::with_exposed_provenance::<Heap>(old) };
        flush_all(t, old);
    }
    t.owner.store(NO_OWNER, Ordering::Relaxed);
    if t.state.load(Ordering::Relaxed) == LIVE {
        let prev = t.prev.load(Ordering::Relaxed);
        let next = t.next.load(Ordering::Relaxed);
        // SAFETY: registered neighbours, valid under the lock.
        unsafe {
            match prev.as_ref() {
                Some(p) => p.next.store(next, Ordering::Relaxed),
                None => HEAD.store(next, Ordering::Relaxed),
            }
            if let Some(n) = next.as_ref() {
                n.prev.store(prev, Ordering::Relaxed);
            }
        }
    }
    t.state.store(DEAD, Ordering::Relaxed);
}

/// Calls `f` on every registered cache, under the registry lock.
fn for_each(mut f: impl FnMut(&ThreadCache)) {
    let _guard = REGISTRY.lock();
    let mut c = HEAD.load(Ordering::Relaxed);
    // SAFETY: registered caches are valid under the lock.
    while let Some(t) = unsafe { c.as_ref() } {
        f(t);
        c = t.next.load(Ordering::Relaxed);
    }
}

/// The allocator at `heap` is being dropped: every cache it owns forgets
/// its lists (their blocks die with the heap) and its owner.
pub(crate) fn forget(heap: usize) {
    for_each(|t| {
        if t.owner.load(Ordering::Relaxed) == heap {
            for bin in &t.bins {
                bin.head.store(ptr::null_mut(), Ordering::Relaxed);
                bin.count.store(0, Ordering::Relaxed);
            }
            for spare in &t.spares {
                spare.store(ptr::null_mut(), Ordering::Relaxed);
            }
            t.owner.store(NO_OWNER, Ordering::Relaxed);
        }
    });
}

/// Adds the cached blocks of `heap` per class to `counts`.
pub(crate) fn cached(heap: usize, counts: &mut [usize; CLASS_COUNT]) {
    for_each(|t| {
        if t.owner.load(Ordering::Relaxed) == heap {
            for (index, (n, bin)) in counts.iter_mut().zip(&t.bins).enumerate() {
                *n += bin.count.load(Ordering::Relaxed) as usize;
                if !t.spares[index].load(Ordering::Relaxed).is_null() {
                    *n += batch(index);
                }
            }
        }
    });
}

/// Flushes the calling thread's cache if it serves `heap` (for `trim`).
pub(crate) fn flush_current(heap: &Heap) {
    with_caches(|c| {
        for t in [&c.primary, &c.secondary] {
            if t.owner.load(Ordering::Relaxed) == heap.addr() {
                let _guard = REGISTRY.lock();
                flush_all(t, heap);
            }
        }
    });
}

#[cfg(unix)]
fn arm_exit_hook(c: &Caches) -> bool {
    use core::ffi::c_void;

    /// The key, plus one (0: not created yet; `usize::MAX`: creation failed).
    static KEY: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn dtor(p: *mut c_void) {
        // SAFETY: the key's value is the caches `arm_exit_hook` stored.
        unsafe { on_exit(p.cast::<Caches>()) }
    }

    // Under the registry lock: no other thread creates the key meanwhile.
    let mut key = KEY.load(Ordering::Relaxed);
    if key == 0 {
        let mut k: libc::pthread_key_t = 0;
        // SAFETY: `k` is a valid out-pointer; the destructor is a plain
        // `extern "C"` function. pthread_key_create does not call malloc.
        let r = unsafe { libc::pthread_key_create(&mut k, Some(dtor)) };
        key = if r == 0 { k as usize + 1 } else { usize::MAX };
        KEY.store(key, Ordering::Relaxed);
    }
    if key == usize::MAX {
        return false;
    }
    // SAFETY: a key we created; the value is the caches' address, non-null,
    // so the destructor runs at thread exit (setting it again when the
    // second cache registers stores the same value).
    let r = unsafe {
        libc::pthread_setspecific(
            (key - 1) as libc::pthread_key_t,
            ptr::from_ref(c).cast::<c_void>(),
        )
    };
    r == 0
}

/// Windows but `*-windows-gnu`: there std keeps a `thread_local!` value in
/// a heap box behind an OS TLS key and frees it at thread exit before the
/// FLS callbacks run, so this callback would flush freed memory (under
/// Wine a walk of garbage that never ended); that target takes the
/// no-hook fallback below. MSVC keeps the caches in the thread's static
/// TLS block (docs/ci.md, "under Wine").
#[cfg(all(windows, not(target_env = "gnu")))]
fn arm_exit_hook(c: &Caches) -> bool {
    use core::ffi::c_void;
    use windows_sys::Win32::System::Threading::{FLS_OUT_OF_INDEXES, FlsAlloc, FlsSetValue};

    /// The FLS index, plus one (0: not allocated yet; `usize::MAX`: failed).
    static INDEX: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "system" fn callback(p: *const c_void) {
        if !p.is_null() {
            // SAFETY: the slot's value is the caches `arm_exit_hook` stored.
            unsafe { on_exit(p.cast::<Caches>()) }
        }
    }

    let mut index = INDEX.load(Ordering::Relaxed);
    if index == 0 {
        // SAFETY: registering a callback has no preconditions.
        let i = unsafe { FlsAlloc(Some(callback)) };
        index = if i == FLS_OUT_OF_INDEXES {
            usize::MAX
        } else {
            i as usize + 1
        };
        INDEX.store(index, Ordering::Relaxed);
    }
    if index == usize::MAX {
        return false;
    }
    // SAFETY: an index we allocated; the value is the caches' address.
    unsafe { FlsSetValue((index - 1) as u32, ptr::from_ref(c).cast::<c_void>()) != 0 }
}

#[cfg(not(any(unix, all(windows, not(target_env = "gnu")))))]
fn arm_exit_hook(_c: &Caches) -> bool {
    false
}
