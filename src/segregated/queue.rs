//! `ClassQueue`: the intrusive lock-free MPMC queue of one size class.
//!
//! **Contract.** The queue threads through the free blocks themselves: the
//! first word of a free block is an `AtomicPtr<u8>` link to the next free
//! block (null at the back). It owns no memory. Any thread may push and pop
//! (`Send + Sync`). Blocks are at least 8 bytes, aligned to 8, and their
//! memory stays mapped while the queue is in use (the allocator never returns
//! a span to the OS while it lives), because a consumer may read the link of
//! a block that another consumer has just popped.
//!
//! **State.** Two words on separate cache lines (`CachePadded`):
//! - `front`, the *sequenced* front: one `u64` holding a 19-bit generation in
//!   bits 63..45 and the front block's address divided by 8 in bits 44..0
//!   (addresses below 2^48, 8-byte aligned: the allocator checks the span
//!   range when it grows). Every write of `front` adds one to the generation,
//!   so a consumer's stale snapshot `(X, g)` cannot validate after `X` was
//!   popped and pushed again (unless exactly 2^19 writes happened in between
//!   while it was suspended). A 64-bit word keeps the CAS a plain
//!   `lock cmpxchg` / `casal`: no 128-bit CAS, which is an indirect call on
//!   the default x86_64 and arm64 Linux targets. Address 0 means "no front
//!   available": the queue is empty, or an empty transition is in flight.
//! - `back`, the last block published, or null when empty. Producers swap it.
//!
//! **Push** (one block or a pre-linked chain `first..=last`): store null in
//! `last`'s link, `swap` `back` to `last`, then store `first` in the previous
//! back's link. If the previous back was null the queue was empty: the
//! producer republishes the front instead (the empty transition). Until the
//! link store lands, the chain is "not yet available", never lost.
//!
//! **Pop** (fast path): load `front`, load the front block's link; if it is
//! non-null, one compare-exchange moves `front` to it with the generation
//! bumped (retry on failure). If the link is null the front block may be the
//! last one (`pop_last`, cold): the consumer *claims* the front with a
//! compare-exchange to address 0, then both ends must agree: a
//! compare-exchange of `back` from that block to null. If it succeeds, the
//! block is the consumer's and the queue is empty (the next producer finds
//! `back` null and republishes the front). If it fails, a producer has
//! swapped `back` past the block and links it: the consumer publishes the
//! link as the new front if it has landed (and keeps the block), or puts the
//! block back as the front and reports "not available yet".
//!
//! While `front` holds address 0 exactly one party may write it: the
//! consumer holding the claim, or the producer whose swap found `back` null.
//!
//! **Costs.** Push: a store, a swap and a store (plus a load and a store on
//! the empty transition). Pop: two loads and one compare-exchange; three
//! atomics more for the last block. Blocking: none, except that a producer
//! suspended between its swap and its link hides the blocks behind it.
//!
//! **Data race note.** A consumer holding a stale snapshot reads the link
//! word of a block that may now be in a user's hands. The read is atomic and
//! the value is discarded by the failed compare-exchange, but the user's
//! plain writes to that word race with it in the language's memory model, as
//! in every tagged-pointer free list.

use core::ptr::{self, NonNull};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// Bit position of the generation in the `front` word.
const TAG_SHIFT: u32 = 45;
/// One generation step.
const TAG_ONE: u64 = 1 << TAG_SHIFT;
/// The address bits (address >> 3) of the `front` word.
const ADDR_MASK: u64 = TAG_ONE - 1;
/// Block addresses must lie below this (48-bit user address space).
pub(crate) const ADDRESS_LIMIT: u64 = 1 << 48;

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

/// The block address packed in a `front` word, if any.
#[inline(always)]
fn front_block(word: u64) -> Option<NonNull<u8>> {
    let addr = ((word & ADDR_MASK) << 3) as usize;
    NonNull::new(ptr::with_exposed_provenance_mut::<u8>(addr))
}

/// The `front` word after `word` with `block` as the front (or none) and the
/// generation advanced by one (wrapping).
#[inline(always)]
fn next_front(word: u64, block: Option<NonNull<u8>>) -> u64 {
    let addr = block.map_or(0, |b| b.as_ptr().expose_provenance()) as u64;
    debug_assert!(
        addr.is_multiple_of(8) && addr < ADDRESS_LIMIT,
        "block {addr:#x} cannot be packed"
    );
    (word & !ADDR_MASK).wrapping_add(TAG_ONE) | (addr >> 3)
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
    /// Sequenced front: generation in bits 63..45, address >> 3 in 44..0;
    /// address 0 = nothing poppable (empty, or an empty transition in
    /// flight). Invariant: a non-zero address is a free block of this queue.
    front: CachePadded<AtomicU64>,
    /// The last published block, or null when the queue is empty.
    /// Invariant: non-null means the block is free and in this queue, and its
    /// link is null until the producer that swaps it out stores the link.
    back: CachePadded<AtomicPtr<u8>>,
}

impl ClassQueue {
    /// An empty queue.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        ClassQueue {
            front: CachePadded::new(AtomicU64::new(0)),
            back: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// An empty queue.
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        ClassQueue {
            front: CachePadded::new(AtomicU64::new(0)),
            back: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// Pops the front block, or `None` when no block is available now.
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<NonNull<u8>> {
        let mut front = self.front.load(Ordering::Acquire);
        loop {
            let block = front_block(front)?;
            // SAFETY: `block` was a free block of this queue when `front` was
            // read; its memory stays mapped while the allocator lives even if
            // another consumer has popped it since. A stale value read here is
            // rejected by the generation in the compare-exchange below.
            let next = unsafe { link(block) }.load(Ordering::Acquire);
            let Some(next) = NonNull::new(next) else {
                match self.pop_last(front, block) {
                    Last::Taken(b) => return Some(b),
                    Last::Unavailable => return None,
                    Last::Retry(actual) => {
                        front = actual;
                        continue;
                    }
                }
            };
            match self.front.compare_exchange_weak(
                front,
                next_front(front, Some(next)),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(block),
                Err(actual) => front = actual,
            }
        }
    }

    /// The front block had no successor: claim the front, then agree with
    /// the producers on who owns `block` (see the module docs).
    #[cold]
    #[inline(never)]
    fn pop_last(&self, front: u64, block: NonNull<u8>) -> Last {
        let claimed = next_front(front, None);
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
        let next = unsafe { link(block) }.load(Ordering::Acquire);
        match NonNull::new(next) {
            Some(next) => {
                self.front
                    .store(next_front(claimed, Some(next)), Ordering::Release);
                Last::Taken(block)
            }
            None => {
                // Not linked yet: give the front back, untouched but for its
                // generation; the chain becomes available once the link lands.
                self.front
                    .store(next_front(claimed, Some(block)), Ordering::Release);
                Last::Unavailable
            }
        }
    }

    /// Publishes the chain `first..=last`, already linked through the blocks'
    /// first words (`last`'s link is overwritten with null here).
    ///
    /// # Safety
    ///
    /// The chain's blocks are owned by the caller, 8-byte aligned, below
    /// 2^48, at least 8 bytes, mapped while the queue is used, linked from
    /// `first` to `last` through their first words, and belong to this
    /// queue's class. Nothing else uses them afterwards.
    #[inline(always)]
    pub(crate) unsafe fn push(&self, first: NonNull<u8>, last: NonNull<u8>) {
        // SAFETY: `last` is owned by the caller and mapped.
        unsafe { link(last) }.store(ptr::null_mut(), Ordering::Relaxed);
        let prev = self.back.swap(last.as_ptr(), Ordering::AcqRel);
        match NonNull::new(prev) {
            // SAFETY: `prev` was the back: a free block whose link only this
            // producer (which swapped it out) writes now.
            Some(prev) => unsafe { link(prev) }.store(first.as_ptr(), Ordering::Release),
            None => self.republish(first),
        }
    }

    /// The empty transition: `back` was null, so this producer alone writes
    /// `front`, which holds address 0.
    #[cold]
    #[inline(never)]
    fn republish(&self, first: NonNull<u8>) {
        // Relaxed suffices: the swap that found `back` null acquired the
        // consumer's release that emptied the queue, whose claim is the
        // latest write of `front`.
        let front = self.front.load(Ordering::Relaxed);
        debug_assert!(
            front_block(front).is_none(),
            "empty transition found a front: {front:#x}"
        );
        self.front
            .store(next_front(front, Some(first)), Ordering::Release);
    }

    /// The current back block (for the debug double-free check).
    #[cfg(debug_assertions)]
    #[inline(always)]
    pub(crate) fn back(&self) -> *mut u8 {
        self.back.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn blocks(n: usize) -> Vec<NonNull<u8>> {
        (0..n)
            .map(|_| NonNull::new(Box::into_raw(Box::new(0u64)).cast::<u8>()).unwrap())
            .collect()
    }

    fn free(blocks: Vec<NonNull<u8>>) {
        for b in blocks {
            // SAFETY: made by `blocks` with Box<u64>.
            drop(unsafe { Box::from_raw(b.as_ptr().cast::<u64>()) });
        }
    }

    #[test]
    fn fifo_order_and_empty_transitions() {
        let q = ClassQueue::new();
        let b = blocks(4);
        assert_eq!(q.pop(), None);
        for round in 0..3 {
            for &x in &b {
                // SAFETY: owned test blocks, pushed once each.
                unsafe { q.push(x, x) };
            }
            for &x in &b {
                assert_eq!(q.pop(), Some(x), "round {round}");
            }
            assert_eq!(q.pop(), None);
        }
        free(b);
    }

    #[test]
    fn chain_push_publishes_once() {
        let q = ClassQueue::new();
        let b = blocks(5);
        for w in b.windows(2) {
            // SAFETY: owned test blocks.
            unsafe { link(w[0]) }.store(w[1].as_ptr(), Ordering::Relaxed);
        }
        // SAFETY: a linked chain of owned blocks.
        unsafe { q.push(b[0], b[4]) };
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, b);
        free(b);
    }

    #[test]
    fn generation_changes_on_every_front_write() {
        let q = ClassQueue::new();
        let b = blocks(2);
        let g0 = q.front.load(Ordering::Relaxed) >> TAG_SHIFT;
        // SAFETY: owned test blocks.
        unsafe { q.push(b[0], b[0]) };
        let g1 = q.front.load(Ordering::Relaxed) >> TAG_SHIFT;
        assert_eq!(g1, g0 + 1);
        assert_eq!(q.pop(), Some(b[0]));
        // SAFETY: popped above, pushed again (a reused address).
        unsafe { q.push(b[0], b[0]) };
        let w = q.front.load(Ordering::Relaxed);
        assert_eq!(front_block(w), Some(b[0]));
        assert!(
            w >> TAG_SHIFT > g1,
            "a reused front address must carry a new generation"
        );
        assert_eq!(q.pop(), Some(b[0]));
        free(b);
    }

    #[test]
    fn threads_push_and_pop_every_block_once() {
        let q = ClassQueue::new();
        let per = if cfg!(miri) { 8 } else { 2000 };
        let b = blocks(4 * per);
        let addrs: Vec<usize> = b.iter().map(|p| p.as_ptr().expose_provenance()).collect();
        let popped = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..4 {
                let (q, addrs, popped) = (&q, &addrs, &popped);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for &a in &addrs[t * per..(t + 1) * per] {
                        let p = NonNull::new(ptr::with_exposed_provenance_mut::<u8>(a)).unwrap();
                        // SAFETY: each block is pushed by exactly one thread.
                        unsafe { q.push(p, p) };
                        if let Some(x) = q.pop() {
                            mine.push(x.as_ptr().expose_provenance());
                        }
                    }
                    popped.lock().unwrap().extend(mine);
                });
            }
        });
        let mut all = popped.into_inner().unwrap();
        all.extend(std::iter::from_fn(|| q.pop()).map(|p| p.as_ptr().expose_provenance()));
        all.sort_unstable();
        let mut want = addrs.clone();
        want.sort_unstable();
        assert_eq!(all, want, "every block exactly once");
        free(b);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A block for the models: a loom atomic at offset 0, as the queue reads.
    #[repr(C, align(8))]
    struct Block {
        link: AtomicPtr<u8>,
    }

    fn blocks(n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let b = Box::into_raw(Box::new(Block {
                    link: AtomicPtr::new(ptr::null_mut()),
                }));
                b.cast::<u8>().expose_provenance()
            })
            .collect()
    }

    fn ptr_of(addr: usize) -> NonNull<u8> {
        NonNull::new(ptr::with_exposed_provenance_mut::<u8>(addr)).unwrap()
    }

    fn push(q: &ClassQueue, addr: usize) {
        let p = ptr_of(addr);
        // SAFETY: the model pushes each block only while it owns it.
        unsafe { q.push(p, p) };
    }

    fn pop(q: &ClassQueue) -> Option<usize> {
        q.pop().map(|p| p.as_ptr().expose_provenance())
    }

    fn drain(q: &ClassQueue) -> Vec<usize> {
        std::iter::from_fn(|| pop(q)).collect()
    }

    fn release(addrs: &[usize]) {
        for &a in addrs {
            // SAFETY: made by `blocks` with Box<Block>.
            drop(unsafe { Box::from_raw(ptr::with_exposed_provenance_mut::<Block>(a)) });
        }
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
            let q = Arc::new(ClassQueue::new());
            let b = blocks(3);
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
            let q = Arc::new(ClassQueue::new());
            let b = blocks(2);
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
    /// generation must make that snapshot fail.
    #[test]
    fn loom_aba_reused_block() {
        model(|| {
            let q = Arc::new(ClassQueue::new());
            let b = blocks(3);
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
}
