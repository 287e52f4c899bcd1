//! `ClassQueue`: the intrusive lock-free MPMC queue of one size class, the
//! shared level behind the per-thread caches.
//!
//! **Contract.** The queue threads through the free blocks themselves: the
//! first word of a free block is an `AtomicPtr<u8>` link to the next free
//! block (null at the back), stored XORed with the heap's secret in
//! `hardened` builds ([`code`]; the pops check each link they follow
//! against the span region, telling a stale read from an overwritten link
//! by re-reading `front`). It owns no memory. Any thread may push and pop
//! (`Send + Sync`). Blocks are at least 8 bytes, aligned to 8, lie within
//! 32 GiB above the allocator's *handle base* (the start of its span region,
//! see `region.rs`; 0 on 32-bit targets), and stay readable while the queue
//! is in use (the allocator never unmaps a span while it lives, and `trim`
//! purges pages, which keeps them mapped), because a consumer may read the
//! link of a block that another consumer has just popped.
//!
//! **State.** Two words on separate cache lines (`CachePadded`):
//! - `front`, the *sequenced* front: one `u64` holding the front block's
//!   *handle* in the high 32 bits (its offset from the handle base divided
//!   by 8: 32 GiB of blocks) and a generation in the low 32 bits (so the
//!   increment is a 32-bit add and the handle a shift: the pop loop keeps
//!   no 64-bit mask or increment constant in a register). Every
//!   write of `front` adds one to the generation, so a consumer's stale
//!   snapshot `(X, g)` cannot validate after `X` was popped and pushed again
//!   unless exactly 2^32 writes happened while it was suspended: at one
//!   write per nanosecond, four seconds off-CPU between two loads and a
//!   compare-exchange. (The first version packed a 19-bit generation beside
//!   a 45-bit address; 2^19 writes take a few milliseconds, an ordinary
//!   preemption.) Under `cfg(loom)` the generation shrinks to
//!   [`TAG_BITS`] = 3 bits so the models run through its wrap. A 64-bit word
//!   keeps the CAS a plain `lock cmpxchg` / `casal`: no 128-bit CAS, which is
//!   an indirect call on the default x86_64 and arm64 Linux targets. Handle 0
//!   means "no front available": the queue is empty, or an empty transition
//!   is in flight (the handle base itself is never a block: the region's
//!   class map sits there).
//! - `back`, the last block published, or null when empty. Producers swap it.
//!
//! **Push** (one block or a pre-linked chain `first..=last`): store null in
//! `last`'s link, `swap` `back` to `last`, then store `first` in the previous
//! back's link. If the previous back was null the queue was empty: the
//! producer republishes the front instead (the empty transition). Until the
//! link store lands, the chain is "not yet available", never lost.
//!
//! **Pop** (`pop_fast`): load `front`, load the front block's link; if it is
//! non-null, one compare-exchange moves `front` to it with the generation
//! bumped (retry on failure; on ARMv7 one `ldrexd`/`strexd` pair instead,
//! one attempt, see `pop_fast` there). If the front is empty or its link is
//! null, the fast path returns `None` and the caller's cold path runs the
//! full `pop`, which also takes the last block (`pop_last`, cold): the consumer *claims*
//! the front with a compare-exchange to handle 0, then both ends must agree:
//! a compare-exchange of `back` from that block to null. If it succeeds, the
//! block is the consumer's and the queue is empty (the next producer finds
//! `back` null and republishes the front). If it fails, a producer has
//! swapped `back` past the block and links it: the consumer publishes the
//! link as the new front if it has landed (and keeps the block), or puts the
//! block back as the front and reports "not available yet".
//!
//! **Batch pop** (`pop_batch`, the thread caches' refill): walk up to `max`
//! links from the front, re-reading `front` after each link (unchanged means
//! no consumer has popped since the snapshot, so the block just reached is
//! still queued and its own link is safe to follow), stop before the last
//! block, and move `front` past the whole run with one compare-exchange.
//!
//! While `front` holds handle 0 exactly one party may write it: the
//! consumer holding the claim, or the producer whose swap found `back` null.
//!
//! **Costs.** Push: a store, a swap and a store (plus a load and a store on
//! the empty transition), whatever the chain's length. Pop: two loads and
//! one compare-exchange; three atomics more for the last block. Batch pop of
//! `n`: `2n` loads and one compare-exchange. Blocking: none, except that a
//! producer suspended between its swap and its link hides the blocks behind
//! it ([`is_empty`](ClassQueue::is_empty) tells that state from an empty
//! queue, so the allocator waits instead of growing). A producer that
//! never resumes (the child of a `fork` has none of the parent's other
//! threads) is cut out of the queue by
//! [`repair_after_fork`](ClassQueue::repair_after_fork).
//!
//! **Data race note.** A consumer holding a stale snapshot reads the link
//! word of a block that may now be in a user's hands. The read is atomic and
//! the value is discarded by the failed compare-exchange, but the user's
//! plain writes to that word race with it in the language's memory model, as
//! in every tagged-pointer free list.

use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// Width of the generation in the `front` word: 32 bits, shrunk to 3 under
/// loom so that the models exercise its wrap.
#[cfg(not(loom))]
pub(crate) const TAG_BITS: u32 = 32;
/// Width of the generation in the `front` word (loom: 3 bits, so a model's
/// handful of front writes wraps it).
#[cfg(loom)]
pub(crate) const TAG_BITS: u32 = 3;
/// Bit position of the generation in the `front` word (the low half).
const TAG_SHIFT: u32 = 0;
/// The generation bits of the `front` word.
#[cfg(test)]
const TAG_MASK: u64 = (u64::MAX >> (64 - TAG_BITS)) << TAG_SHIFT;
/// Bit position of the handle in the `front` word (the high half).
const HANDLE_SHIFT: u32 = 32;
/// The handle bits of the `front` word.
#[cfg(all(test, loom))]
const HANDLE_MASK: u64 = u64::MAX << HANDLE_SHIFT;
/// Blocks must lie less than this far above the handle base (32 GiB).
pub(crate) const HANDLE_SPAN: u64 = 1 << (64 - HANDLE_SHIFT + 3);

/// How many links [`ClassQueue::repair_after_fork`] follows in a forked
/// child before it drops the whole queue instead: a few microseconds per
/// class at most, whatever the parent had queued.
#[cfg(not(loom))]
pub(crate) const FORK_WALK: usize = 64;

/// The link word of a free block.
///
/// # Safety
///
/// `block` is 8-byte aligned and its first 8 bytes are mapped for as long
/// as the returned reference is used.
#[inline(always)]
pub(crate) unsafe fn link<'a>(block: NonNull<u8>) -> &'a AtomicPtr<u8> {
    // SAFETY: aligned and mapped per the contract; an `AtomicPtr` has the
    // size and alignment of a pointer and any bit pattern is a valid pointer.
    unsafe { &*block.as_ptr().cast::<AtomicPtr<u8>>() }
}

/// A link as the shared level and the thread caches store it: XORed with
/// the heap's secret (`hardened`, see `harden.rs`), as is (`key` 0)
/// otherwise. Its own inverse; null is stored as `key`. The pointer keeps
/// its provenance.
#[inline(always)]
pub(crate) fn code(link: *mut u8, key: usize) -> *mut u8 {
    link.map_addr(|a| a ^ key)
}

/// A word of the shared level beside the secret its blocks' links are
/// coded with (`hardened`): a copy on each cache line whose operations read
/// or write links, so that none touches another line for it. Derefs to the
/// word. The key is 0 (links stored as they are) until
/// [`set_key`](Self::set_key), and always without `hardened`, where the
/// field does not exist and the XORs fold away.
#[derive(Debug)]
pub(crate) struct Keyed<T> {
    word: T,
    #[cfg(feature = "hardened")]
    key: usize,
}

impl<T> Keyed<T> {
    /// `word` with the key 0.
    #[cfg(any(test, loom))]
    pub(crate) const fn new(word: T) -> Self {
        Keyed {
            word,
            #[cfg(feature = "hardened")]
            key: 0,
        }
    }

    /// The key links are coded with.
    #[inline(always)]
    pub(crate) fn key(&self) -> usize {
        #[cfg(feature = "hardened")]
        {
            self.key
        }
        #[cfg(not(feature = "hardened"))]
        {
            0
        }
    }

    /// Sets the key (a fresh heap's, before the heap is published).
    #[cfg(feature = "hardened")]
    pub(crate) fn set_key(&mut self, key: usize) {
        self.key = key;
    }
}

impl<T> core::ops::Deref for Keyed<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.word
    }
}

/// The block a `front` word names, if any.
#[inline(always)]
pub(super) fn front_block(word: u64, base: usize) -> Option<NonNull<u8>> {
    let handle = word >> HANDLE_SHIFT;
    if handle == 0 {
        return None;
    }
    let addr = base.wrapping_add((handle as usize) << 3);
    NonNull::new(ptr::with_exposed_provenance_mut::<u8>(addr))
}

/// Where a consumer gets the handle base of a queue's `front` word from.
///
/// A consumer reads the base only *after* an acquire load of `front` that
/// names a block (see [`ClassQueue::pop`]): an allocator's base is written
/// once, when its span region is reserved, before any block exists, so a
/// base read before that load may still be the 0 of a heap whose first
/// growth has not happened yet, while the `front` read next already names a
/// block of it; `0 + handle * 8` is then an address a few KiB above 0.
pub(crate) trait HandleBase: Copy {
    /// The base (non-zero on 64-bit targets once a block exists).
    fn get(self) -> usize;
}

/// A fixed base (queue tests, 32-bit targets, callers holding a lock that
/// orders them after the base's write).
impl HandleBase for usize {
    #[inline(always)]
    fn get(self) -> usize {
        self
    }
}

/// The generation of a `front` word.
#[cfg(test)]
fn generation(word: u64) -> u64 {
    (word & TAG_MASK) >> TAG_SHIFT
}

/// The `front` word after `word` with `block` as the front (or none) and the
/// generation advanced by one (wrapping within its bits, never into the
/// handle).
///
/// `block` is not checked here: a consumer with a stale snapshot may pass a
/// garbage link read from a block a user owns now; the word it builds is
/// then only compared against, never stored, because the compare-exchange
/// fails on the generation.
#[inline(always)]
pub(super) fn next_front(word: u64, block: Option<NonNull<u8>>, base: usize) -> u64 {
    // The generation is the low half: a 32-bit add (wrapping within its
    // bits); the handle the high half: the offset shifted up by 32 - 3 (a
    // block is 8-aligned, so its low three bits are zero and the shift
    // needs no mask). No 64-bit constant: with the generation on top, the
    // pop loop held a mask and an increment in two more registers, which
    // cost two callee-saved registers saved and restored on x86-64's hot
    // path.
    const _: () = assert!(TAG_SHIFT == 0 && HANDLE_SHIFT == 32 && TAG_BITS <= 32);
    let handle = block.map_or(0, |b| {
        (b.as_ptr().expose_provenance().wrapping_sub(base) as u64) << (HANDLE_SHIFT - 3)
    });
    let tag = (word as u32).wrapping_add(1) & (u32::MAX >> (32 - TAG_BITS));
    handle | u64::from(tag)
}

/// Whether `block` can be named by a handle from `base` (the debug check of
/// every block that enters the queue).
pub(crate) fn packable(block: NonNull<u8>, base: usize) -> bool {
    let addr = block.as_ptr().addr();
    addr.is_multiple_of(8) && addr > base && ((addr - base) as u64) < HANDLE_SPAN
}

/// What the cold last-block pop found.
enum Last {
    Taken(NonNull<u8>),
    Unavailable,
    Retry(u64),
}

/// The lock-free queue of one size class. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct ClassQueue {
    /// Sequenced front: handle in the high 32 bits, generation in the low
    /// 32; handle 0 = nothing poppable (empty, or an empty transition in
    /// flight). Invariant: a non-zero handle names a free block of this
    /// queue.
    front: CachePadded<Keyed<AtomicU64>>,
    /// The last published block, or null when the queue is empty.
    /// Invariant: non-null means the block is free and in this queue, and its
    /// link is null until the producer that swaps it out stores the link.
    back: CachePadded<Keyed<AtomicPtr<u8>>>,
}

impl ClassQueue {
    /// An empty queue (the allocator's queues start as zeroed memory).
    #[cfg(all(test, not(loom)))]
    pub(crate) const fn new() -> Self {
        ClassQueue {
            front: CachePadded::new(Keyed::new(AtomicU64::new(0))),
            back: CachePadded::new(Keyed::new(AtomicPtr::new(ptr::null_mut()))),
        }
    }

    /// An empty queue.
    #[cfg(all(test, loom))]
    pub(crate) fn new() -> Self {
        ClassQueue {
            front: CachePadded::new(Keyed::new(AtomicU64::new(0))),
            back: CachePadded::new(Keyed::new(AtomicPtr::new(ptr::null_mut()))),
        }
    }

    /// Sets the key the queued links are coded with (a fresh heap's, before
    /// it is published).
    #[cfg(feature = "hardened")]
    pub(crate) fn set_key(&mut self, key: usize) {
        self.front.set_key(key);
        self.back.set_key(key);
    }

    /// Pops the front block if it has a successor: the fast path, with no
    /// call in its loop. `None` means "empty, the last block, in
    /// transition, or (`hardened`) a link that names no block": ask
    /// [`pop`](Self::pop).
    #[cfg(not(all(allocasm_arm_v7, not(loom), not(miri), not(feature = "hardened"))))]
    #[inline(always)]
    pub(crate) fn pop_fast(&self, base: impl HandleBase) -> Option<NonNull<u8>> {
        self.pop_fast_cas(base)
    }

    /// Pops the front block if it has a successor, in one exclusive
    /// `ldrexd`/`strexd` pair: ARMv7's fast path. `None` means "empty, the
    /// last block, in transition, or the store-exclusive failed": ask
    /// [`pop`](Self::pop), whose compare-exchange retries.
    ///
    /// The compare-exchange loop holds the address, the expected pair, the
    /// loaded pair, the new pair and the status: more than the five
    /// registers ARMv7 may use without saving one. Load-exclusive and
    /// store-exclusive need no expected pair. `ldrexd` reads `front`
    /// (generation in `r2`, handle in `r3`), the link is read from the block
    /// it names, and `strexd` writes the link's handle and the generation
    /// plus one only if nothing has written `front` since the `ldrexd`:
    /// the same read-modify-write the compare-exchange performs when it
    /// succeeds, with the same orderings (`dmb ish` after the read of
    /// `front` for its Acquire, `dmb ish` after the link's read for its
    /// Acquire and the write's Release, LLVM's mapping of each). The
    /// generation still advances, so the `front` words the other paths
    /// compare against keep their meaning (and an emulator that implements
    /// the store-exclusive as a compare of the value, as qemu does, stays
    /// correct).
    ///
    /// Predicated, not branching (`it` blocks for Thumb, where they are
    /// encoded; ARM state needs none): the success runs straight through,
    /// so the listing's hot path is what executes. One attempt, no retry:
    /// the link's read sits between the exclusive pair, and the
    /// architecture allows an implementation to clear the exclusive monitor
    /// on any memory access there, so a retry loop could fail forever on
    /// such a core. The miss path's compare-exchange has no access between
    /// its exclusive pair and always makes progress.
    ///
    /// The handle base is 0 on 32-bit targets (the region's is a constant
    /// 0, so the test below folds away); with another base (the queue's
    /// own tests) this is the compare-exchange path.
    #[cfg(all(allocasm_arm_v7, not(loom), not(miri), not(feature = "hardened")))]
    #[inline(always)]
    pub(crate) fn pop_fast(&self, base: impl HandleBase) -> Option<NonNull<u8>> {
        const _: () = assert!(TAG_SHIFT == 0 && HANDLE_SHIFT == 32 && TAG_BITS == 32);
        if base.get() != 0 {
            return self.pop_fast_cas(base);
        }
        let block: usize;
        // SAFETY: `front` is a valid, 8-aligned `u64` only accessed
        // atomically (an `AtomicU64`); the exclusive pair reads it and, if
        // the store succeeds, writes it as one 64-bit single-copy atomic
        // read-modify-write. A non-zero handle names a block of this queue
        // (the `front` invariant) at `handle << 3` (base 0): mapped while the
        // queue is in use, even if another consumer has popped it since, as
        // `pop` relies on too. Its link is read with a plain word load; a
        // stale value (the block popped meanwhile) is never stored, because
        // that consumer's write of `front` fails this store-exclusive. The
        // block touches no other memory and no stack.
        unsafe {
            core::arch::asm!(
                "ldrexd r2, r3, [{front}]",
                "lsls {block}, r3, #3",
                "dmb ish",
                "itt ne",
                "ldrne r3, [{block}]",
                "cmpne r3, #0",
                "itee eq",
                "moveq {block}, #0",
                "addne r2, r2, #1",
                "lsrne r3, r3, #3",
                "dmb ish",
                "ittt ne",
                "strexdne {s}, r2, r3, [{front}]",
                "cmpne {s}, #0",
                "movne {block}, #0",
                "clrex",
                front = in(reg) self.front.as_ptr(),
                block = out(reg) block,
                s = out(reg) _,
                out("r2") _,
                out("r3") _,
                options(nostack),
            );
        }
        NonNull::new(ptr::with_exposed_provenance_mut::<u8>(block))
    }

    /// [`pop_fast`](Self::pop_fast) with a compare-exchange loop (every
    /// target but ARMv7, and ARMv7 with a non-zero handle base).
    #[inline(always)]
    fn pop_fast_cas(&self, base: impl HandleBase) -> Option<NonNull<u8>> {
        let mut front = self.front.load(Ordering::Acquire);
        if front >> HANDLE_SHIFT == 0 {
            return None;
        }
        // ORDERING: after the Acquire load of a `front` naming a block (see
        // `pop`).
        let base = base.get();
        let key = self.front.key();
        loop {
            let block = front_block(front, base)?;
            // SAFETY: as in `pop`.
            let next = NonNull::new(code(unsafe { link(block) }.load(Ordering::Acquire), key))?;
            // A link that names no block: a stale read or an overwritten
            // link. `pop` tells which (a call here would cost the loop its
            // scratch registers: five saved and restored on x86-64).
            #[cfg(feature = "hardened")]
            if !super::harden::plausible(next, base) {
                return None;
            }
            match self.front.compare_exchange_weak(
                front,
                next_front(front, Some(next), base),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(block),
                Err(actual) => front = actual,
            }
        }
    }

    /// Pops the front block, including the last one, or `None` when no
    /// block is available now (see [`is_empty`](Self::is_empty) for why).
    #[inline]
    pub(crate) fn pop(&self, base: impl HandleBase) -> Option<NonNull<u8>> {
        let mut front = self.front.load(Ordering::Acquire);
        if front >> HANDLE_SHIFT == 0 {
            return None;
        }
        // ORDERING: the base is read only now, after the Acquire load of a
        // `front` that names a block: every write of such a `front` (a
        // producer's republish, a consumer's compare-exchange or its
        // `pop_last` store, all Release) comes after the base's one write
        // (the region is reserved before any block is carved from it), so
        // this load sees the base, not the 0 of a heap whose first growth
        // had not happened yet when a caller read it up front. The base
        // never changes afterwards (until the allocator is dropped), so it
        // holds for every retry below.
        let base = base.get();
        let key = self.front.key();
        loop {
            let block = front_block(front, base)?;
            // SAFETY: `block` was a free block of this queue when `front` was
            // read; its memory stays mapped while the allocator lives even if
            // another consumer has popped it since. A stale value read here is
            // rejected by the generation in the compare-exchange below.
            let next = code(unsafe { link(block) }.load(Ordering::Acquire), key);
            let Some(next) = NonNull::new(next) else {
                match self.pop_last(front, block, base) {
                    Last::Taken(b) => return Some(b),
                    Last::Unavailable => return None,
                    Last::Retry(actual) => {
                        front = actual;
                        continue;
                    }
                }
            };
            #[cfg(feature = "hardened")]
            if !super::harden::plausible(next, base) {
                front = self.stale_or_corrupt(front, next);
                continue;
            }
            match self.front.compare_exchange_weak(
                front,
                next_front(front, Some(next), base),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(block),
                Err(actual) => front = actual,
            }
        }
    }

    /// `next`, the decoded link of a block reached from the snapshot
    /// `front` (the front block, or one behind it in a batch pop), is no
    /// block of the region (`hardened`). If `front` still holds, no
    /// consumer has popped since the snapshot, so the block was queued
    /// while its link was read, and a queued block's link is only ever a
    /// producer's (a block or null): a write after free overwrote it;
    /// abort. Else the read was stale (the block was popped and is a
    /// user's): the current front, to retry with.
    #[cfg(feature = "hardened")]
    #[cold]
    #[inline(never)]
    fn stale_or_corrupt(&self, front: u64, next: NonNull<u8>) -> u64 {
        // ORDERING: a read-modify-write, not a load: a load may return an
        // older `front` than the latest (the model checker found one that
        // read the snapshot again after the block had been popped and
        // scribbled on). The exchange reads the latest: success (writing
        // the same word) means no write of `front` came between the
        // snapshot and here, so the block stayed queued across the link's
        // read; AcqRel orders that read before it and any later pop of the
        // block after it.
        match self
            .front
            .compare_exchange(front, front, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => super::harden::corrupt_shared(next),
            Err(now) => now,
        }
    }

    /// Pops up to `max` blocks (`max >= 1`) with one compare-exchange: the
    /// run `first..=last` of `n` blocks, still linked through their first
    /// words in queue order, [`code`]d with the queue's key (`last`'s link
    /// is stale: the caller overwrites it). Never takes the last block (the caller falls back to
    /// [`pop`](Self::pop) for it); `None` when fewer than two blocks are
    /// visible.
    #[inline]
    pub(crate) fn pop_batch(
        &self,
        base: impl HandleBase,
        max: usize,
    ) -> Option<(NonNull<u8>, NonNull<u8>, usize)> {
        let mut front = self.front.load(Ordering::Acquire);
        if front >> HANDLE_SHIFT == 0 {
            return None;
        }
        // ORDERING: after the Acquire load of a `front` naming a block (see
        // `pop`).
        let base = base.get();
        let key = self.front.key();
        'retry: loop {
            let first = front_block(front, base)?;
            let mut last = first;
            let mut n = 1;
            let mut after;
            loop {
                // SAFETY: `last` is a block of this queue as of the latest
                // load of `front` (which still equalled the snapshot: no
                // consumer popped since), so it is mapped; a stale value is
                // caught by the re-check below or by the compare-exchange.
                after = code(unsafe { link(last) }.load(Ordering::Acquire), key);
                let now = self.front.load(Ordering::Acquire);
                if now != front {
                    front = now;
                    continue 'retry;
                }
                let Some(next) = NonNull::new(after) else {
                    break;
                };
                // A link that names no block: stale (the re-check above is a
                // load, which may return an older `front`) or overwritten.
                #[cfg(feature = "hardened")]
                if !super::harden::plausible(next, base) {
                    front = self.stale_or_corrupt(front, next);
                    continue 'retry;
                }
                if n == max {
                    break;
                }
                // `next` has a successor we can see only after reading its
                // link; stop before a block whose link is null (the last).
                // SAFETY: `next` was queued at the re-check above.
                let next_link = code(unsafe { link(next) }.load(Ordering::Acquire), key);
                let now = self.front.load(Ordering::Acquire);
                if now != front {
                    front = now;
                    continue 'retry;
                }
                if next_link.is_null() {
                    break;
                }
                last = next;
                n += 1;
            }
            let next = NonNull::new(after)?;
            // ORDERING: AcqRel: acquires the producers' link stores of the
            // run (through the links read above) and releases our claim.
            match self.front.compare_exchange(
                front,
                next_front(front, Some(next), base),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some((first, last, n)),
                Err(actual) => front = actual,
            }
        }
    }

    /// The front block had no successor: claim the front, then agree with
    /// the producers on who owns `block` (see the module docs).
    #[cold]
    #[inline(never)]
    fn pop_last(&self, front: u64, block: NonNull<u8>, base: usize) -> Last {
        let claimed = next_front(front, None, base);
        if let Err(actual) =
            self.front
                .compare_exchange(front, claimed, Ordering::AcqRel, Ordering::Acquire)
        {
            return Last::Retry(actual);
        }
        // We hold the claim: no other consumer can take `block`, and no
        // producer writes `front` (back is not null).
        if self
            .back
            .compare_exchange(
                block.as_ptr(),
                ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            // Both ends agree: the queue is empty; the next producer finds
            // `back` null and republishes the front.
            return Last::Taken(block);
        }
        // A producer swapped `back` past `block` and links it to its chain.
        // SAFETY: `block` is claimed by us and still a free block.
        let next = code(
            unsafe { link(block) }.load(Ordering::Acquire),
            self.front.key(),
        );
        match NonNull::new(next) {
            // A link of a block we hold the claim on: the producer's, or
            // overwritten.
            #[cfg(feature = "hardened")]
            Some(next) if !super::harden::plausible(next, base) => {
                super::harden::corrupt_shared(next)
            }
            Some(next) => {
                self.front
                    .store(next_front(claimed, Some(next), base), Ordering::Release);
                Last::Taken(block)
            }
            None => {
                // Not linked yet: give the front back, untouched but for its
                // generation; the chain becomes available once the link lands.
                self.front
                    .store(next_front(claimed, Some(block), base), Ordering::Release);
                Last::Unavailable
            }
        }
    }

    /// Publishes the chain `first..=last`, already linked through the blocks'
    /// first words (`last`'s link is overwritten with null here).
    ///
    /// # Safety
    ///
    /// The chain's blocks are owned by the caller, [`packable`] from `base`,
    /// at least 8 bytes, mapped while the queue is used, linked from `first`
    /// to `last` through their first words ([`code`]d with the queue's key),
    /// and belong to this queue's class. Nothing else uses them afterwards.
    #[inline(always)]
    pub(crate) unsafe fn push(&self, base: usize, first: NonNull<u8>, last: NonNull<u8>) {
        debug_assert!(
            packable(first, base) && packable(last, base),
            "blocks {first:#p}..{last:#p} cannot be named from {base:#x}"
        );
        let key = self.back.key();
        // SAFETY: `last` is owned by the caller and mapped.
        unsafe { link(last) }.store(code(ptr::null_mut(), key), Ordering::Relaxed);
        let prev = self.back.swap(last.as_ptr(), Ordering::AcqRel);
        #[cfg(all(test, not(loom)))]
        hooks::call(&hooks::AFTER_SWAP);
        match NonNull::new(prev) {
            // SAFETY: `prev` was the back: a free block whose link only this
            // producer (which swapped it out) writes now.
            Some(prev) => unsafe { link(prev) }.store(code(first.as_ptr(), key), Ordering::Release),
            None => self.republish(first, base),
        }
    }

    /// The empty transition: `back` was null, so this producer alone writes
    /// `front`, which holds handle 0.
    #[cold]
    #[inline(never)]
    fn republish(&self, first: NonNull<u8>, base: usize) {
        // Relaxed suffices: the swap that found `back` null acquired the
        // consumer's release that emptied the queue, whose claim is the
        // latest write of `front`.
        let front = self.front.load(Ordering::Relaxed);
        debug_assert!(
            front_block(front, base).is_none(),
            "empty transition found a front: {front:#x}"
        );
        self.front
            .store(next_front(front, Some(first), base), Ordering::Release);
    }

    /// Whether the queue holds no block at all. `pop` returning `None` while
    /// this is `false` means blocks are queued but hidden behind a producer
    /// between its swap and its link (or an empty transition in flight): the
    /// allocator must wait for them, not grow.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.back.load(Ordering::Acquire).is_null()
    }

    /// Makes the queue consistent again in the child of a `fork`, where the
    /// threads that were between two steps of a push or a pop no longer
    /// exist and never finish them; returns whether it cut anything.
    ///
    /// - `front` names a block: walk the links from it, at most
    ///   [`FORK_WALK`] of them. If the walk reaches `back`, nothing was in
    ///   flight. If it stops at a null link before `back`, a producer died
    ///   between its swap and its link: the stopping block becomes the back,
    ///   and the chain that producer (and any after it) queued behind the
    ///   missing link is dropped. If the queue is longer than the walk, all
    ///   of it is dropped: walking every queued block in every child cost
    ///   175 ms a `fork` with a million blocks queued.
    /// - `front` names none but `back` is set: an empty transition or a
    ///   claim of the last block died half done, and no queued block can be
    ///   reached: the queue becomes empty.
    ///
    /// Dropped blocks are leaked in the child (as the blocks in the dead
    /// threads' caches are): they stay mapped (their pages shared with the
    /// parent until written), counted in the class's free blocks, and never
    /// handed out. A link that names no block of the region (`hardened`: an
    /// overwritten free block) ends the walk like a missing one.
    ///
    /// # Safety
    ///
    /// No other thread uses the queue while this runs (a forked child's
    /// only thread, before it starts any other), and every block the queue
    /// holds is mapped.
    #[cfg(not(loom))]
    pub(crate) unsafe fn repair_after_fork(&self, base: usize) -> bool {
        // ORDERING: Relaxed throughout: the caller is the only thread.
        let back = self.back.load(Ordering::Relaxed);
        if back.is_null() {
            return false;
        }
        let front = self.front.load(Ordering::Relaxed);
        let Some(mut block) = front_block(front, base) else {
            self.back.store(ptr::null_mut(), Ordering::Relaxed);
            return true;
        };
        let key = self.back.key();
        let mut walked = 0;
        while block.as_ptr() != back {
            if walked == FORK_WALK {
                self.front
                    .store(next_front(front, None, base), Ordering::Relaxed);
                self.back.store(ptr::null_mut(), Ordering::Relaxed);
                return true;
            }
            walked += 1;
            // SAFETY: `block` is queued (the front, or reached by links from
            // it), so mapped (the caller).
            let l = unsafe { link(block) };
            match NonNull::new(code(l.load(Ordering::Relaxed), key)) {
                Some(next) if packable(next, base) => block = next,
                _ => {
                    l.store(code(ptr::null_mut(), key), Ordering::Relaxed);
                    self.back.store(block.as_ptr(), Ordering::Relaxed);
                    return true;
                }
            }
        }
        false
    }

    /// The current back block (for the debug checks).
    #[cfg(debug_assertions)]
    #[inline(always)]
    #[allow(dead_code)]
    pub(crate) fn back(&self) -> *mut u8 {
        self.back.load(Ordering::Relaxed)
    }
}

/// Test hooks: a producer can be stalled between its swap and its link.
/// [`call`](hooks::call) runs a hook of this thread; the segregated
/// heap's own hooks use it too.
#[cfg(all(test, not(loom)))]
pub(crate) mod hooks {
    use core::cell::Cell;
    use std::thread::LocalKey;

    /// A function a test sets for its thread, run at a point of the code.
    pub(crate) type Hook = LocalKey<Cell<Option<fn()>>>;

    std::thread_local! {
        /// Called by `push` on this thread right after its swap.
        pub(crate) static AFTER_SWAP: Cell<Option<fn()>> = const { Cell::new(None) };
    }

    /// Runs `hook`'s function, if this thread set one.
    #[inline(always)]
    pub(crate) fn call(hook: &'static Hook) {
        if let Some(f) = hook.with(Cell::get) {
            f();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `n` blocks of 8 bytes, carved from one heap slice (so that they lie
    /// close enough together for the queue's handles).
    fn blocks(n: usize) -> Vec<NonNull<u8>> {
        let mem = Box::into_raw(vec![0u64; n].into_boxed_slice()).cast::<u64>();
        // SAFETY: `i < n`: inside the slice.
        (0..n)
            .map(|i| NonNull::new(unsafe { mem.add(i) }.cast::<u8>()).unwrap())
            .collect()
    }

    /// A handle base for heap test blocks: just below the lowest of them.
    fn base_of(b: &[NonNull<u8>]) -> usize {
        let base = b[0].as_ptr().addr() - 8;
        assert!(b.iter().all(|&p| packable(p, base)));
        base
    }

    /// The handle base the allocator uses where it can name these blocks:
    /// 0 on 32-bit targets (where ARMv7's `pop_fast` is its exclusive pair,
    /// which only base 0 takes), else [`base_of`].
    fn allocator_base(b: &[NonNull<u8>]) -> usize {
        if cfg!(target_pointer_width = "32") {
            assert!(b.iter().all(|&p| packable(p, 0)));
            0
        } else {
            base_of(b)
        }
    }

    fn free(blocks: Vec<NonNull<u8>>) {
        let mem = ptr::slice_from_raw_parts_mut(blocks[0].as_ptr().cast::<u64>(), blocks.len());
        // SAFETY: made by `blocks` as one boxed slice starting at block 0.
        drop(unsafe { Box::from_raw(mem) });
    }

    #[test]
    fn fifo_order_and_empty_transitions() {
        let q = ClassQueue::new();
        let b = blocks(4);
        let base = base_of(&b);
        assert_eq!(q.pop(base), None);
        assert!(q.is_empty());
        for round in 0..3 {
            for &x in &b {
                // SAFETY: owned test blocks, pushed once each.
                unsafe { q.push(base, x, x) };
            }
            assert!(!q.is_empty());
            for &x in &b {
                assert_eq!(q.pop(base), Some(x), "round {round}");
            }
            assert_eq!(q.pop(base), None);
            assert!(q.is_empty());
        }
        free(b);
    }

    /// The three states a `fork` can leave a queue in: whole (nothing cut),
    /// a push's link missing (cut back to what the front reaches), an
    /// empty transition half done (no front: emptied); and a queue longer
    /// than the walk (emptied). After each, the queue pops what it keeps
    /// and takes pushes again.
    #[test]
    fn repair_after_fork_cuts_only_what_no_pop_can_reach() {
        let q = ClassQueue::new();
        let b = blocks(5);
        let base = base_of(&b);
        // SAFETY: owned test blocks, one thread (for every push and repair
        // of this test).
        unsafe {
            q.push(base, b[0], b[0]);
            q.push(base, b[1], b[1]);
            assert!(!q.repair_after_fork(base), "a whole queue is kept");
            // A producer that swapped the back to b[2] and died before
            // linking b[1] to it; another pushed b[3] behind it.
            link(b[2]).store(ptr::null_mut(), Ordering::Relaxed);
            q.back.swap(b[2].as_ptr(), Ordering::AcqRel);
            q.push(base, b[3], b[3]);
            assert!(q.repair_after_fork(base));
            assert!(!q.repair_after_fork(base), "repaired once");
            q.push(base, b[4], b[4]);
        }
        let got: Vec<_> = std::iter::from_fn(|| q.pop(base)).collect();
        assert_eq!(got, [b[0], b[1], b[4]]);
        assert!(q.is_empty());
        // An empty transition that swapped the back and never published the
        // front.
        q.back.swap(b[2].as_ptr(), Ordering::AcqRel);
        assert!(!q.is_empty());
        assert_eq!(q.pop(base), None);
        // SAFETY: as above.
        unsafe {
            assert!(q.repair_after_fork(base));
            assert!(q.is_empty());
            q.push(base, b[3], b[3]);
        }
        assert_eq!(q.pop(base), Some(b[3]));
        assert!(q.is_empty());
        free(b);
        // A queue longer than the walk, whole or not, is dropped whole.
        for cut in [false, true] {
            let b = blocks(FORK_WALK + 3);
            let base = base_of(&b);
            // SAFETY: owned test blocks, one thread.
            unsafe {
                for &x in &b[..FORK_WALK + 2] {
                    q.push(base, x, x);
                }
                if cut {
                    link(b[FORK_WALK + 2]).store(ptr::null_mut(), Ordering::Relaxed);
                    q.back.swap(b[FORK_WALK + 2].as_ptr(), Ordering::AcqRel);
                }
                assert!(q.repair_after_fork(base), "cut {cut}");
                assert!(q.is_empty());
                assert_eq!(q.pop(base), None);
                q.push(base, b[0], b[0]);
            }
            assert_eq!(q.pop(base), Some(b[0]));
            assert!(q.is_empty());
            free(b);
        }
    }

    #[test]
    fn chain_push_publishes_once() {
        let q = ClassQueue::new();
        let b = blocks(5);
        let base = base_of(&b);
        for w in b.windows(2) {
            // SAFETY: owned test blocks.
            unsafe { link(w[0]) }.store(w[1].as_ptr(), Ordering::Relaxed);
        }
        // SAFETY: a linked chain of owned blocks.
        unsafe { q.push(base, b[0], b[4]) };
        let got: Vec<_> = std::iter::from_fn(|| q.pop(base)).collect();
        assert_eq!(got, b);
        free(b);
    }

    #[test]
    fn batch_pop_takes_a_run_and_leaves_the_last_block() {
        let q = ClassQueue::new();
        let b = blocks(10);
        let base = base_of(&b);
        for &x in &b {
            // SAFETY: owned test blocks, pushed once each.
            unsafe { q.push(base, x, x) };
        }
        let (first, last, n) = q.pop_batch(base, 4).unwrap();
        assert_eq!((first, last, n), (b[0], b[3], 4));
        // SAFETY: the run is ours and linked in queue order.
        assert_eq!(unsafe { link(b[2]) }.load(Ordering::Relaxed), b[3].as_ptr());
        // Six left: a run of five, then only the last, which needs `pop`.
        assert_eq!(q.pop_batch(base, 100), Some((b[4], b[8], 5)));
        assert_eq!(q.pop_batch(base, 100), None);
        assert_eq!(q.pop(base), Some(b[9]));
        assert!(q.is_empty());
        free(b);
    }

    #[test]
    fn the_fast_pop_takes_every_block_but_the_last_and_writes_only_when_it_does() {
        let q = ClassQueue::new();
        let b = blocks(4);
        let base = allocator_base(&b);
        assert_eq!(q.pop_fast(base), None, "empty");
        for &x in &b {
            // SAFETY: owned test blocks, pushed once each.
            unsafe { q.push(base, x, x) };
        }
        for &x in &b[..3] {
            let before = q.front.load(Ordering::Relaxed);
            assert_eq!(q.pop_fast(base), Some(x));
            let after = q.front.load(Ordering::Relaxed);
            assert_eq!(generation(after), generation(before) + 1);
            // SAFETY: `x` was queued with a successor, linked by its push.
            let next = unsafe { link(x) }.load(Ordering::Relaxed);
            assert_eq!(front_block(after, base).map(NonNull::as_ptr), Some(next));
        }
        let before = q.front.load(Ordering::Relaxed);
        assert_eq!(q.pop_fast(base), None, "the last block is the full pop's");
        assert_eq!(
            q.front.load(Ordering::Relaxed),
            before,
            "a miss writes nothing"
        );
        assert_eq!(q.pop(base), Some(b[3]));
        assert!(q.is_empty());
        let before = q.front.load(Ordering::Relaxed);
        assert_eq!(q.pop_fast(base), None, "empty again");
        assert_eq!(q.front.load(Ordering::Relaxed), before);
        free(b);
    }

    #[test]
    fn generation_changes_on_every_front_write() {
        let q = ClassQueue::new();
        let b = blocks(2);
        let base = base_of(&b);
        let g0 = generation(q.front.load(Ordering::Relaxed));
        // SAFETY: owned test blocks.
        unsafe { q.push(base, b[0], b[0]) };
        let g1 = generation(q.front.load(Ordering::Relaxed));
        assert_eq!(g1, g0 + 1);
        assert_eq!(q.pop(base), Some(b[0]));
        // SAFETY: popped above, pushed again (a reused address).
        unsafe { q.push(base, b[0], b[0]) };
        let w = q.front.load(Ordering::Relaxed);
        assert_eq!(front_block(w, base), Some(b[0]));
        assert!(
            generation(w) > g1,
            "a reused front address must carry a new generation"
        );
        assert_eq!(q.pop(base), Some(b[0]));
        free(b);
    }

    /// Fault 3: a consumer that loaded `(A, next)` and was then preempted
    /// while the front was written 2^20 times (a few milliseconds at full
    /// speed) must not validate its stale snapshot when `A` is back at the
    /// front. With the first version's 19-bit generation the snapshot came
    /// back after 2^19 writes and this failed.
    #[test]
    fn a_stale_snapshot_survives_a_million_front_writes() {
        let q = ClassQueue::new();
        let b = blocks(2);
        let base = base_of(&b);
        // SAFETY: owned test blocks.
        unsafe { q.push(base, b[0], b[0]) };
        // SAFETY: as above.
        unsafe { q.push(base, b[1], b[1]) };
        let stale = q.front.load(Ordering::Acquire);
        assert_eq!(front_block(stale, base), Some(b[0]));
        let writes = if cfg!(miri) { 64 } else { 1 << 20 };
        let mut done = 0u64;
        while done < writes {
            // Pop A (one write), push it back at the back (the link of B),
            // pop B, push B: A is at the front again after two writes.
            assert_eq!(q.pop(base), Some(b[0]));
            // SAFETY: popped above.
            unsafe { q.push(base, b[0], b[0]) };
            assert_eq!(q.pop(base), Some(b[1]));
            // SAFETY: popped above.
            unsafe { q.push(base, b[1], b[1]) };
            done += 2;
            let now = q.front.load(Ordering::Acquire);
            assert_eq!(front_block(now, base), Some(b[0]));
            assert_ne!(
                now, stale,
                "after {done} front writes a stale snapshot validates again"
            );
        }
        free(b);
    }

    #[test]
    fn threads_push_and_pop_every_block_once() {
        let q = ClassQueue::new();
        let per = if cfg!(miri) { 8 } else { 2000 };
        let b = blocks(4 * per);
        let base = allocator_base(&b);
        let addrs: Vec<usize> = b.iter().map(|p| p.as_ptr().expose_provenance()).collect();
        let popped = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..4 {
                let (q, addrs, popped) = (&q, &addrs, &popped);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for (i, &a) in addrs[t * per..(t + 1) * per].iter().enumerate() {
                        let p = NonNull::new(ptr::with_exposed_provenance_mut::<u8>(a)).unwrap();
                        // SAFETY: each block is pushed by exactly one thread.
                        unsafe { q.push(base, p, p) };
                        if i % 7 == 3 {
                            if let Some((first, last, n)) = q.pop_batch(base, 3) {
                                let mut x = first;
                                for k in 0..n {
                                    mine.push(x.as_ptr().expose_provenance());
                                    if k + 1 < n {
                                        // SAFETY: the run is ours.
                                        let next = unsafe { link(x) }.load(Ordering::Relaxed);
                                        x = NonNull::new(next).unwrap();
                                    }
                                }
                                assert_eq!(x, last);
                            }
                        } else if let Some(x) = q.pop_fast(base).or_else(|| q.pop(base)) {
                            mine.push(x.as_ptr().expose_provenance());
                        }
                    }
                    popped.lock().unwrap().extend(mine);
                });
            }
        });
        let mut all = popped.into_inner().unwrap();
        all.extend(std::iter::from_fn(|| q.pop(base)).map(|p| p.as_ptr().expose_provenance()));
        all.sort_unstable();
        let mut want = addrs.clone();
        want.sort_unstable();
        assert_eq!(all, want, "every block exactly once");
        free(b);
    }
}

#[cfg(all(test, loom))]
pub(crate) mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The key of the models' queues (`hardened`): low bits set, as a
    /// heap's.
    #[cfg(feature = "hardened")]
    pub(crate) const MODEL_KEY: usize = 0x5a5a_c3c3_0000_0007;

    /// A block for the models: a loom atomic at offset 0, as the queue reads.
    #[repr(C, align(8))]
    struct Block {
        link: AtomicPtr<u8>,
    }

    /// A queue and the handle base of its model's blocks.
    struct Q {
        q: ClassQueue,
        base: usize,
    }

    /// `n` blocks carved from one boxed slice (close together, as the
    /// queue's handles need).
    fn blocks(n: usize) -> Vec<usize> {
        let mem: Box<[Block]> = (0..n)
            .map(|_| Block {
                link: AtomicPtr::new(ptr::null_mut()),
            })
            .collect();
        let mem = Box::into_raw(mem).cast::<Block>();
        // SAFETY: `i < n`: inside the slice.
        (0..n)
            .map(|i| unsafe { mem.add(i) }.cast::<u8>().expose_provenance())
            .collect()
    }

    fn queue(b: &[usize]) -> Arc<Q> {
        let base = b[0] - 8;
        assert!(b.iter().all(|&a| packable(ptr_of(a), base)));
        #[allow(unused_mut)]
        let mut q = ClassQueue::new();
        // With `hardened` the models run on coded links, as the heap's.
        #[cfg(feature = "hardened")]
        q.set_key(MODEL_KEY);
        Arc::new(Q { q, base })
    }

    fn ptr_of(addr: usize) -> NonNull<u8> {
        NonNull::new(ptr::with_exposed_provenance_mut::<u8>(addr)).unwrap()
    }

    fn push(q: &Q, addr: usize) {
        let p = ptr_of(addr);
        // SAFETY: the model pushes each block only while it owns it.
        unsafe { q.q.push(q.base, p, p) };
    }

    /// As the allocator pops: the fast path, then the full pop.
    fn pop(q: &Q) -> Option<usize> {
        q.q.pop_fast(q.base)
            .or_else(|| q.q.pop(q.base))
            .map(|p| p.as_ptr().expose_provenance())
    }

    /// As a thread cache refills: a batch, else one block.
    fn pop_batch(q: &Q, max: usize) -> Vec<usize> {
        match q.q.pop_batch(q.base, max) {
            Some((first, last, n)) => {
                let mut got = vec![first.as_ptr().expose_provenance()];
                let mut x = first;
                while got.len() < n {
                    // SAFETY: the run is ours, linked in queue order.
                    let l = unsafe { link(x) }.load(Ordering::Relaxed);
                    x = NonNull::new(code(l, q.q.front.key())).unwrap();
                    got.push(x.as_ptr().expose_provenance());
                }
                assert_eq!(x, last);
                got
            }
            None => pop(q).into_iter().collect(),
        }
    }

    fn drain(q: &Q) -> Vec<usize> {
        std::iter::from_fn(|| pop(q)).collect()
    }

    fn release(addrs: &[usize]) {
        let mem = ptr::slice_from_raw_parts_mut(
            ptr::with_exposed_provenance_mut::<Block>(addrs[0]),
            addrs.len(),
        );
        // SAFETY: made by `blocks` as one boxed slice starting at block 0.
        drop(unsafe { Box::from_raw(mem) });
    }

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }

    fn assert_same_set(mut got: Vec<usize>, want: &[usize]) {
        got.sort_unstable();
        let mut want = want.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "every block exactly once");
    }

    /// Two producers and a consumer on a queue holding one block.
    #[test]
    fn loom_concurrent_push_pop() {
        model(|| {
            let b = blocks(3);
            let q = queue(&b);
            push(&q, b[0]);
            let producers: Vec<_> = [b[1], b[2]]
                .into_iter()
                .map(|x| {
                    let q = q.clone();
                    thread::spawn(move || push(&q, x))
                })
                .collect();
            let q2 = q.clone();
            let consumer = thread::spawn(move || pop(&q2));
            for p in producers {
                p.join().unwrap();
            }
            let mut got: Vec<usize> = consumer.join().unwrap().into_iter().collect();
            got.extend(drain(&q));
            assert_same_set(got, &b);
            release(&b);
        });
    }

    /// Two consumers race for the last block while a producer pushes: the
    /// claim, the back compare-exchange and the republished front.
    #[test]
    fn loom_empty_transition() {
        model(|| {
            let b = blocks(2);
            let q = queue(&b);
            push(&q, b[0]);
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let q = q.clone();
                    thread::spawn(move || pop(&q))
                })
                .collect();
            let q2 = q.clone();
            let x = b[1];
            let producer = thread::spawn(move || push(&q2, x));
            producer.join().unwrap();
            let mut got: Vec<usize> = Vec::new();
            for c in consumers {
                got.extend(c.join().unwrap());
            }
            got.extend(drain(&q));
            assert_same_set(got, &b);
            release(&b);
        });
    }

    /// ABA: one thread pops `A` and `B`, frees `A` again (a reused address)
    /// and pops once more, so the front can read `A` again while another
    /// consumer still holds the snapshot `(A, next = B)` from before; the
    /// generation must make that snapshot fail. The model's front writes
    /// (three pushes, then up to four writes by the reuser while the other
    /// consumer holds its snapshot, then the drain) run the 3-bit loom
    /// generation through its wrap.
    #[test]
    fn loom_aba_reused_block() {
        model(|| {
            let b = blocks(3);
            let q = queue(&b);
            for &x in &b {
                push(&q, x);
            }
            let q1 = q.clone();
            let reuser = thread::spawn(move || {
                let x = pop(&q1);
                let y = pop(&q1);
                if let Some(x) = x {
                    // The user scribbles over the block, then frees it.
                    // SAFETY: popped, so owned by this thread.
                    unsafe { link(ptr_of(x)) }.store(ptr::dangling_mut(), Ordering::Relaxed);
                    push(&q1, x);
                }
                let z = pop(&q1);
                [y, z].into_iter().flatten().collect::<Vec<_>>()
            });
            let q2 = q.clone();
            let other = thread::spawn(move || pop(&q2));
            let mut got = reuser.join().unwrap();
            got.extend(other.join().unwrap());
            got.extend(drain(&q));
            assert_same_set(got, &b);
            release(&b);
        });
    }

    /// The generation wraps while a consumer holds a snapshot: the queue
    /// starts one write before the wrap, and a batch consumer races a
    /// popping, re-pushing thread. Fewer writes than the generation's period
    /// happen during any snapshot, so every block still comes out once.
    #[test]
    fn loom_batch_pop_across_the_generation_wrap() {
        model(|| {
            let b = blocks(3);
            let q = queue(&b);
            for &x in &b {
                push(&q, x);
            }
            // Three writes so far; bring the generation to one below its
            // wrap (TAG_BITS = 3 under loom).
            let w = q.q.front.load(Ordering::Relaxed);
            let g = (1u64 << TAG_BITS) - 1;
            q.q.front
                .store((w & HANDLE_MASK) | (g << TAG_SHIFT), Ordering::Relaxed);
            let q1 = q.clone();
            let batcher = thread::spawn(move || pop_batch(&q1, 2));
            let q2 = q.clone();
            let reuser = thread::spawn(move || {
                let mut kept = Vec::new();
                if let Some(x) = pop(&q2) {
                    push(&q2, x);
                }
                kept.extend(pop(&q2));
                kept
            });
            let mut got = batcher.join().unwrap();
            got.extend(reuser.join().unwrap());
            got.extend(drain(&q));
            assert_same_set(got, &b);
            assert!(q.q.is_empty());
            release(&b);
        });
    }
}
