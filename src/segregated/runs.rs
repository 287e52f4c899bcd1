//! `RunStack`: the full runs the thread caches flush, kept whole, so that a
//! refill takes one back without walking it.
//!
//! **Why.** A thread cache gives back a full list of `cap / 2` blocks (its
//! batch) and refills as many; a span grown for a refill is handed out in
//! runs of a batch. Through the class queue, a refill must walk the run
//! link by link to find where it ends (`ClassQueue::pop_batch`), and once
//! the blocks have gone cold each link is a cache miss that the next one
//! depends on: a program that frees a million blocks and allocates them
//! again (a garbage collector's sweep) spent a fifth of its time in that
//! walk. A run on this stack is taken with two loads and one
//! compare-exchange whatever its length; its blocks are read one by one
//! later, as the cache hands them out.
//!
//! **Contract.** A *run* is a chain of free blocks of one class, linked
//! through their first words and null-terminated; the run's length is fixed
//! by the caller (the cache's batch for the class). Blocks are at least two
//! pointers long: the *second* word of a run's first block links the run
//! below it on the stack (`hardened`: the third, where the block has one,
//! so the second keeps the double-free tag; and every link, the runs' and
//! `below`, is stored XORed with the heap's secret, see `queue::code`, and
//! checked against the span region when the pop follows it). Blocks lie within 32 GiB above the handle base and
//! stay mapped while the stack is in use, as for the queue (a consumer may
//! read the second word of a block another consumer has just popped).
//!
//! **State.** One word, `top`, sequenced like the queue's front: the first
//! block's handle in the high 32 bits (its offset from the handle base in
//! 8-byte units, 0 for "empty"), a generation in the low 32 bits that every
//! write advances, so a consumer holding a stale snapshot fails its
//! compare-exchange (a Treiber stack with a tag).
//!
//! **Push**: write the old top's block into the run's second word, then
//! compare-exchange `top` to the run (retry on contention). **Pop**: load
//! `top`, load its block's second word, compare-exchange `top` to that.
//!
//! **Data race note.** As for the queue: a stale consumer reads the second
//! word of a block that may be in a user's hands; the read is atomic and its
//! value is discarded by the failed compare-exchange.

use core::mem::size_of;
use core::ptr::{self, NonNull};

use super::queue::{HandleBase, Keyed, code, front_block, next_front, packable};
use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// The smallest block a run can be made of: a link and the run below.
#[cfg(not(loom))]
pub(crate) const MIN_RUN_BLOCK: usize = 2 * size_of::<AtomicPtr<u8>>();

/// The word of a run's first block that links the run below it: word
/// `at` (1, the second; 2 for blocks of three words or more in `hardened`
/// builds, whose second word is the double-free tag, see `set_key`).
///
/// # Safety
///
/// `first` is pointer-aligned, at least `(at + 1)` words long (at least
/// [`MIN_RUN_BLOCK`] bytes), and mapped for as long as the returned
/// reference is used.
#[inline(always)]
unsafe fn below<'a>(first: NonNull<u8>, at: usize) -> &'a AtomicPtr<u8> {
    // SAFETY: the caller's contract: a pointer-sized word of the block,
    // aligned; any bit pattern is a valid pointer.
    unsafe {
        &*first
            .as_ptr()
            .add(at * size_of::<AtomicPtr<u8>>())
            .cast::<AtomicPtr<u8>>()
    }
}

/// The stack of full runs of one size class. See the [module docs](self).
/// Its initial state is all-zero bytes (it lives in the zeroed heap).
#[derive(Debug)]
pub(crate) struct RunStack {
    /// The top run's first block (handle, high 32 bits) and the generation
    /// (low 32 bits); handle 0 = empty. Beside it the key the runs' links
    /// and `below` words are [`code`]d with (`hardened`).
    top: Keyed<AtomicU64>,
    /// The word of a run's first block that holds `below` (`hardened`:
    /// set with the key; 1 without the feature).
    #[cfg(feature = "hardened")]
    below_at: usize,
}

impl RunStack {
    /// An empty stack (the heap's is its zeroed memory).
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        RunStack {
            top: Keyed::new(AtomicU64::new(0)),
            #[cfg(feature = "hardened")]
            below_at: 1,
        }
    }

    /// Sets the key the runs' links are coded with (a fresh heap's, before
    /// it is published) and, from the class's `block_size`, where `below`
    /// goes: the third word where there is one, so that a run's first block
    /// keeps its double-free tag in the second (a second free of it while
    /// the run sits here is caught like any other block's); the 16-byte
    /// class has two words, and its runs' first blocks give the tag up.
    #[cfg(feature = "hardened")]
    pub(crate) fn set_key(&mut self, key: usize, block_size: usize) {
        self.top.set_key(key);
        self.below_at = if block_size >= 3 * size_of::<usize>() {
            2
        } else {
            1
        };
    }

    /// The word of a run's first block that holds `below`.
    #[inline(always)]
    fn below_at(&self) -> usize {
        #[cfg(feature = "hardened")]
        {
            self.below_at
        }
        #[cfg(not(feature = "hardened"))]
        {
            1
        }
    }

    /// Pushes the run starting at `first`.
    ///
    /// # Safety
    ///
    /// `first` starts a null-terminated run of free blocks of this stack's
    /// class (each at least [`MIN_RUN_BLOCK`] bytes, nameable from `base`),
    /// its links [`code`]d with the stack's key, owned by the caller and not
    /// used afterwards.
    #[inline]
    // Under loom only the models push (there are no thread caches).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) unsafe fn push(&self, base: usize, first: NonNull<u8>) {
        debug_assert!(
            packable(first, base),
            "run {first:#p} cannot be named from {base:#x}"
        );
        let key = self.top.key();
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            let under = front_block(top, base).map_or(ptr::null_mut(), NonNull::as_ptr);
            // SAFETY: the caller's block, ours until the exchange below.
            unsafe { below(first, self.below_at()) }.store(code(under, key), Ordering::Relaxed);
            // ORDERING: Release publishes the run's links and its `below`
            // word to the consumer whose Acquire load of `top` reads this
            // write (or a later read-modify-write of `top`, which continues
            // its release sequence).
            match self.top.compare_exchange_weak(
                top,
                next_front(top, Some(first), base),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => top = actual,
            }
        }
    }

    /// Pops the top run: its first block (the run is null-terminated, of
    /// the length its pusher gave it). `None` when the stack is empty.
    #[inline]
    pub(crate) fn pop(&self, base: impl HandleBase) -> Option<NonNull<u8>> {
        // ORDERING: Acquire pairs with the pusher's Release: the run's links
        // and `below` word are visible.
        let mut top = self.top.load(Ordering::Acquire);
        if top >> 32 == 0 {
            return None;
        }
        // Read after a `top` naming a block (see `HandleBase`).
        let base = base.get();
        let key = self.top.key();
        loop {
            let first = front_block(top, base)?;
            // SAFETY: `first` was the top as of the latest load: a block of
            // this class, mapped for the allocator's lifetime; if it was
            // popped since, the value read is discarded by the failed
            // exchange (see the data race note).
            let under = code(
                unsafe { below(first, self.below_at()) }.load(Ordering::Relaxed),
                key,
            );
            // A `below` word that names no block: stale (`first` was popped
            // since and is a user's), or, if `top` still holds, overwritten
            // while the run sat on the stack.
            #[cfg(feature = "hardened")]
            if let Some(u) = NonNull::new(under)
                && !super::harden::plausible(u, base)
            {
                // ORDERING: a read-modify-write (a load may return an older
                // `top`): success, writing the same word, means no write of
                // `top` came between the snapshot and here, so the run stayed
                // stacked across the read; AcqRel as the pop's exchange.
                match self
                    .top
                    .compare_exchange(top, top, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => super::harden::corrupt_shared(u),
                    Err(now) => top = now,
                }
                continue;
            }
            // ORDERING: AcqRel: acquires as the load above does (the value
            // compared is the one it read, or a failure reloads); releases
            // so that the next consumer reading our write stays in the
            // pushers' release sequence.
            match self.top.compare_exchange_weak(
                top,
                next_front(top, NonNull::new(under), base),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // The 16-byte class's `below` took the first block's
                    // double-free tag: the block is free and ours now, so it
                    // gets the tag back (a free of it in a cache or the queue
                    // is then caught as for any other block). (`below_at`
                    // is 1 for two-word blocks alone: the 16-byte class on
                    // 64-bit targets, the 8-byte one on 32-bit ones; both
                    // carry a tag.)
                    #[cfg(feature = "hardened")]
                    if self.below_at == 1 {
                        // SAFETY: the run we popped: ours, at least
                        // `MIN_RUN_BLOCK` (two words) long.
                        unsafe { super::harden::tag(first) }.store(key, Ordering::Relaxed);
                    }
                    return Some(first);
                }
                Err(actual) => top = actual,
            }
        }
    }

    /// Whether no run is on the stack.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.top.load(Ordering::Relaxed) >> 32 == 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::segregated::queue::link;

    /// `n` blocks of 16 bytes in one boxed slice (close together, as the
    /// handles need), and the handle base just below them.
    fn blocks(n: usize) -> (Vec<NonNull<u8>>, usize) {
        let mem = Box::into_raw(vec![[0u64; 2]; n].into_boxed_slice()).cast::<[u64; 2]>();
        // SAFETY: `i < n`: inside the slice.
        let b: Vec<_> = (0..n)
            .map(|i| NonNull::new(unsafe { mem.add(i) }.cast::<u8>()).unwrap())
            .collect();
        for p in &b {
            let _ = p.as_ptr().expose_provenance();
        }
        let base = b[0].as_ptr().addr() - 8;
        (b, base)
    }

    fn release(b: &[NonNull<u8>]) {
        let mem = ptr::slice_from_raw_parts_mut(b[0].as_ptr().cast::<[u64; 2]>(), b.len());
        // SAFETY: made by `blocks` as one boxed slice starting at block 0.
        drop(unsafe { Box::from_raw(mem) });
    }

    /// Links `run` into a null-terminated chain.
    fn chain(run: &[NonNull<u8>]) {
        for w in run.windows(2) {
            // SAFETY: our blocks.
            unsafe { link(w[0]) }.store(w[1].as_ptr(), Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { link(*run.last().unwrap()) }.store(ptr::null_mut(), Ordering::Relaxed);
    }

    fn walk(first: NonNull<u8>) -> Vec<NonNull<u8>> {
        let mut got = vec![first];
        loop {
            // SAFETY: a run we popped: ours.
            let next = unsafe { link(*got.last().unwrap()) }.load(Ordering::Relaxed);
            match NonNull::new(next) {
                Some(n) => got.push(n),
                None => return got,
            }
        }
    }

    /// Runs come back whole, newest first, with their links intact; an
    /// empty stack says so.
    #[test]
    fn runs_come_back_whole_and_last_in_first_out() {
        let (b, base) = blocks(12);
        let s = RunStack::new();
        assert!(s.is_empty());
        assert_eq!(s.pop(base), None);
        for run in b.chunks(4) {
            chain(run);
            // SAFETY: a chain of our blocks, given to the stack.
            unsafe { s.push(base, run[0]) };
        }
        assert!(!s.is_empty());
        for run in b.chunks(4).rev() {
            let first = s.pop(base).expect("a run");
            assert_eq!(walk(first), run, "the run, whole");
        }
        assert_eq!(s.pop(base), None);
        assert!(s.is_empty());
        release(&b);
    }

    /// Threads pushing and popping runs at once lose none and duplicate
    /// none.
    #[test]
    fn concurrent_pushes_and_pops_keep_every_run() {
        const RUNS: usize = if cfg!(miri) { 24 } else { 2000 };
        let (b, base) = blocks(RUNS * 2);
        let s = RunStack::new();
        let addrs: Vec<usize> = b.iter().map(|p| p.as_ptr().addr()).collect();
        let got = std::thread::scope(|sc| {
            let workers: Vec<_> = addrs
                .chunks(addrs.len() / 2)
                .map(|mine| {
                    let s = &s;
                    sc.spawn(move || {
                        let mut popped = Vec::new();
                        for run in mine.chunks(2) {
                            let run: Vec<_> = run
                                .iter()
                                .map(|&a| {
                                    NonNull::new(ptr::with_exposed_provenance_mut::<u8>(a)).unwrap()
                                })
                                .collect();
                            chain(&run);
                            // SAFETY: our run, given away.
                            unsafe { s.push(base, run[0]) };
                            if let Some(first) = s.pop(base) {
                                popped.extend(walk(first).iter().map(|p| p.as_ptr().addr()));
                            }
                        }
                        popped
                    })
                })
                .collect();
            let mut got: Vec<usize> = workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect();
            while let Some(first) = s.pop(base) {
                got.extend(walk(first).iter().map(|p| p.as_ptr().addr()));
            }
            got
        });
        let mut got = got;
        got.sort_unstable();
        let mut want = addrs.clone();
        want.sort_unstable();
        assert_eq!(got, want, "every block exactly once");
        release(&b);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::segregated::queue::link;
    use loom::sync::Arc;
    use loom::thread;

    /// A block for the models: two loom atomics where the stack reads them.
    #[repr(C, align(8))]
    struct Block {
        link: AtomicPtr<u8>,
        below: AtomicPtr<u8>,
    }

    fn blocks(n: usize) -> (Vec<usize>, usize) {
        let mem: Box<[Block]> = (0..n)
            .map(|_| Block {
                link: AtomicPtr::new(ptr::null_mut()),
                below: AtomicPtr::new(ptr::null_mut()),
            })
            .collect();
        let mem = Box::into_raw(mem).cast::<Block>();
        // SAFETY: `i < n`: inside the slice.
        let b: Vec<usize> = (0..n)
            .map(|i| unsafe { mem.add(i) }.cast::<u8>().expose_provenance())
            .collect();
        let base = b[0] - 8;
        (b, base)
    }

    fn ptr_of(addr: usize) -> NonNull<u8> {
        NonNull::new(ptr::with_exposed_provenance_mut::<u8>(addr)).unwrap()
    }

    /// A stack for the models: with `hardened`, its `below` words coded
    /// with a key, as the heap's (the blocks are two words: `below` in the
    /// second).
    fn stack() -> RunStack {
        #[allow(unused_mut)]
        let mut s = RunStack::new();
        #[cfg(feature = "hardened")]
        s.set_key(
            crate::segregated::queue::loom_tests::MODEL_KEY,
            size_of::<Block>(),
        );
        s
    }

    /// Pushes the two-block run `a, b`.
    fn push_run(s: &RunStack, base: usize, a: usize, b: usize) {
        // SAFETY: the model's blocks, owned by the pushing thread.
        unsafe {
            link(ptr_of(a)).store(ptr_of(b).as_ptr(), Ordering::Relaxed);
            link(ptr_of(b)).store(ptr::null_mut(), Ordering::Relaxed);
            s.push(base, ptr_of(a));
        }
    }

    /// Pops a run and reads it: its first block and its second.
    fn pop_run(s: &RunStack, base: usize) -> Option<(usize, usize)> {
        let first = s.pop(base)?;
        // SAFETY: a run we popped: ours.
        let second = unsafe { link(first) }.load(Ordering::Relaxed);
        Some((first.as_ptr().addr(), second.addr()))
    }

    /// Two producers push a run each while a consumer pops: every run comes
    /// out exactly once, whole (its link, written before the push, is seen).
    #[test]
    fn two_pushers_and_a_popper_keep_every_run() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let (blk, base) = blocks(4);
            let s = Arc::new(stack());
            let p1 = {
                let (s, blk) = (s.clone(), blk.clone());
                thread::spawn(move || push_run(&s, base, blk[0], blk[1]))
            };
            let p2 = {
                let (s, blk) = (s.clone(), blk.clone());
                thread::spawn(move || push_run(&s, base, blk[2], blk[3]))
            };
            let mut got: Vec<(usize, usize)> = pop_run(&s, base).into_iter().collect();
            p1.join().unwrap();
            p2.join().unwrap();
            while let Some(r) = pop_run(&s, base) {
                got.push(r);
            }
            got.sort_unstable();
            assert_eq!(got, vec![(blk[0], blk[1]), (blk[2], blk[3])]);
        });
    }

    /// A consumer whose snapshot went stale (the run it read was popped and
    /// pushed back with another run below) fails its exchange instead of
    /// installing the old `below`: nothing is lost or handed out twice.
    #[test]
    fn a_stale_pop_loses_nothing() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let (blk, base) = blocks(6);
            let s = Arc::new(stack());
            push_run(&s, base, blk[0], blk[1]);
            push_run(&s, base, blk[2], blk[3]);
            let t = {
                let s = s.clone();
                thread::spawn(move || pop_run(&s, base))
            };
            // Pop the top, push a new run, push the popped one back.
            let mine = pop_run(&s, base);
            push_run(&s, base, blk[4], blk[5]);
            if let Some((a, b)) = mine {
                push_run(&s, base, a, b);
            }
            let mut got: Vec<(usize, usize)> = t.join().unwrap().into_iter().collect();
            while let Some(r) = pop_run(&s, base) {
                got.push(r);
            }
            got.sort_unstable();
            assert_eq!(
                got,
                vec![(blk[0], blk[1]), (blk[2], blk[3]), (blk[4], blk[5])]
            );
        });
    }
}
