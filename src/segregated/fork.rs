//! Fork safety of [`SegregatedFit`](super::SegregatedFit): `fork` handlers
//! that keep a child from inheriting a spin lock another thread held.
//!
//! **The hazard.** `fork` copies the address space but only the calling
//! thread. A lock some other thread held at that moment stays held in the
//! child, by a thread that does not exist there: the child's first
//! allocation that needs it spins forever. Installed as the
//! `#[global_allocator]`, that is any child of a multi-threaded program
//! that allocates before `exec` (or never `exec`s).
//!
//! **The handlers** (`pthread_atfork`, through [`sys::at_fork`]), registered
//! once, when the first heap of the process is mapped. `prepare` takes
//! every lock of the allocator in one fixed order: the list of heaps below,
//! the thread-cache registry, then per heap (newest first) every class's
//! growth lock in class order, the span region's lock, the large-block
//! list's lock. That order extends the one the allocator's own paths nest
//! in (a class's growth lock, then the region's; no path holds two classes'
//! locks, the registry with any other, or the large list with any other),
//! so `prepare` cannot deadlock with them. `parent` and `child` release
//! them all, in reverse. In the child the forking thread is the only thread
//! and it held every lock, so releasing them is the reinitialisation.
//!
//! **The heap list.** The handlers must find every heap: each is linked, at
//! its mapping's tail (a [`Mapped`]: the heap's own layout does not change),
//! into a list under its own spin lock before it is published, and
//! unlinked before it is released.
//!
//! **The class queues** are lock-free, so `prepare` cannot wait them out:
//! a thread forked away between a push's swap and its link (a few
//! instructions per flush of a thread cache), or halfway through taking a
//! queue's last block, leaves the child a queue whose hidden blocks no pop
//! can reach, and an allocation of that class would wait for them forever.
//! So `child` walks every class queue while it still holds every lock
//! ([`ClassQueue::repair_after_fork`](super::queue::ClassQueue::repair_after_fork))
//! and cuts each one back to the blocks a pop can reach, or drops a queue
//! longer than its walk (64 links) whole. The dropped blocks, like the
//! blocks cached by the parent's other threads in their (dead) caches, are
//! leaked in the child.
//!
//! **Costs.** Two pointers per heap; each `fork` takes and releases
//! `2 + 90 * heaps` uncontended locks (a few microseconds), and the child
//! reads at most 64 links per class queue. A page written after the fork is
//! copied (or faulted back) in the parent and in the child, so the locks a
//! heap's handlers write lie side by side (`Heap::growth_locks`, beside the
//! region's and the large list's) on one page of the heap. With the class
//! locks on each class's line, a `fork` faulted 15 pages into the parent;
//! now 4 (glibc's malloc: 2; `malloc/tests/preload.rs` counts them).

use core::ptr::{self, NonNull};

use super::Heap;
use super::cache;
use super::lock::SpinLock;
use crate::sync::{AtomicBool, AtomicPtr, Ordering};
use crate::sys;

/// What one heap mapping holds: the heap, then its link in the list of
/// heaps. `repr(C)`: the heap sits at the mapping's first byte, so a pointer
/// to the mapping is a pointer to the heap.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Mapped {
    pub(crate) heap: Heap,
    link: Link,
}

/// The neighbours of a heap in the list (under [`HEAPS`]); all-zero bytes
/// is unlinked.
#[derive(Debug)]
struct Link {
    prev: AtomicPtr<Mapped>,
    next: AtomicPtr<Mapped>,
}

/// Serializes the list of heaps; held by `prepare` across a `fork`.
static HEAPS: SpinLock = SpinLock::new();
/// The newest heap (under [`HEAPS`]).
static HEAD: AtomicPtr<Mapped> = AtomicPtr::new(ptr::null_mut());

/// Whether the handlers are registered, or being registered (or were
/// refused: there is nothing to retry).
static ARMED: AtomicBool = AtomicBool::new(false);

/// Links a fresh heap into the list, registering the fork handlers first
/// if no heap has done it yet. Called before the heap is published.
///
/// # Safety
///
/// `m` is a zeroed heap mapping of ours, not in the list, that stays mapped
/// until [`unlink`] removes it.
pub(crate) unsafe fn link(m: NonNull<Mapped>) {
    arm();
    let _guard = HEAPS.lock();
    let head = HEAD.load(Ordering::Relaxed);
    // SAFETY: `m` is ours (the caller); `head` is a listed heap, mapped
    // while listed, its link ours under the lock.
    unsafe {
        let l = &(*m.as_ptr()).link;
        l.prev.store(ptr::null_mut(), Ordering::Relaxed);
        l.next.store(head, Ordering::Relaxed);
        if let Some(h) = head.as_ref() {
            h.link.prev.store(m.as_ptr(), Ordering::Relaxed);
        }
    }
    HEAD.store(m.as_ptr(), Ordering::Relaxed);
}

/// Removes a heap from the list (before it is released).
///
/// # Safety
///
/// `m` was linked by [`link`] and not unlinked since.
pub(crate) unsafe fn unlink(m: NonNull<Mapped>) {
    let _guard = HEAPS.lock();
    // SAFETY: `m` and its neighbours are listed heaps, mapped while listed,
    // their links ours under the lock.
    unsafe {
        let l = &(*m.as_ptr()).link;
        let prev = l.prev.load(Ordering::Relaxed);
        let next = l.next.load(Ordering::Relaxed);
        match prev.as_ref() {
            Some(p) => p.link.next.store(next, Ordering::Relaxed),
            None => HEAD.store(next, Ordering::Relaxed),
        }
        if let Some(n) = next.as_ref() {
            n.link.prev.store(prev, Ordering::Relaxed);
        }
    }
}

/// Registers the handlers once. Marked first: if the OS's registration
/// allocates and re-enters the allocator (a fresh heap of the global
/// allocator), the nested call finds it marked and does not register again,
/// nor wait for this one.
fn arm() {
    // ORDERING: Relaxed: the flag orders nothing; the registration is the
    // OS's business, and a second one is only wasted.
    if !ARMED.swap(true, Ordering::Relaxed) {
        let _ = sys::at_fork(prepare, parent, child);
    }
}

/// Calls `f` on every listed heap, newest first; with `reverse`, oldest
/// first.
///
/// # Safety
///
/// The caller holds [`HEAPS`], so every listed heap stays mapped.
unsafe fn each_heap(reverse: bool, mut f: impl FnMut(&Heap)) {
    // Reverse order without allocating: walk to the tail, then back by
    // `prev`.
    let mut m = HEAD.load(Ordering::Relaxed);
    if reverse && !m.is_null() {
        loop {
            // SAFETY: listed heaps are mapped while the caller holds `HEAPS`.
            let next = unsafe { (*m).link.next.load(Ordering::Relaxed) };
            if next.is_null() {
                break;
            }
            m = next;
        }
    }
    while !m.is_null() {
        // SAFETY: as above.
        let mapped = unsafe { &*m };
        f(&mapped.heap);
        let to = if reverse {
            &mapped.link.prev
        } else {
            &mapped.link.next
        };
        m = to.load(Ordering::Relaxed);
    }
}

/// Calls `f` on every lock of every listed heap, in the fixed order
/// (classes in index order, the region, the large list), newest heap first;
/// with `reverse`, the exact reverse.
///
/// # Safety
///
/// The caller holds [`HEAPS`], so every listed heap stays mapped.
unsafe fn each_heap_lock(reverse: bool, mut f: impl FnMut(&SpinLock)) {
    // SAFETY: the caller holds `HEAPS`.
    unsafe {
        each_heap(reverse, |h| {
            if reverse {
                f(&h.large.lock);
                f(&h.region.lock);
                for l in h.growth_locks.iter().rev() {
                    f(l);
                }
            } else {
                for l in &h.growth_locks {
                    f(l);
                }
                f(&h.region.lock);
                f(&h.large.lock);
            }
        })
    }
}

/// Before `fork`: every lock, in the fixed order.
unsafe extern "C" fn prepare() {
    HEAPS.acquire();
    cache::REGISTRY.acquire();
    // SAFETY: we hold `HEAPS`.
    unsafe { each_heap_lock(false, SpinLock::acquire) };
}

/// Releases what `prepare` took, in reverse order.
///
/// # Safety
///
/// The calling thread ran `prepare` (in a child: the thread that forked).
unsafe fn release_all() {
    // SAFETY: `prepare` took every one of these locks on this thread and
    // holds `HEAPS` until the end of this function.
    unsafe {
        each_heap_lock(true, |l| l.release());
        cache::REGISTRY.release();
        HEAPS.release();
    }
}

/// After `fork`, in the parent.
unsafe extern "C" fn parent() {
    // SAFETY: the OS runs this on the thread that ran `prepare`.
    unsafe { release_all() }
}

/// After `fork`, in the child: its only thread is the one that ran
/// `prepare`, so it holds every lock and no other holder exists. Before
/// releasing them it repairs the class queues that a thread of the parent
/// left half pushed or half popped (see the module docs).
unsafe extern "C" fn child() {
    // SAFETY: we hold `HEAPS` (`prepare`), and the child has no other
    // thread: nothing else uses the queues, whose blocks are mapped.
    unsafe {
        each_heap(false, |h| {
            for c in &h.classes {
                c.queue.repair_after_fork(h.base());
            }
        });
        release_all()
    }
}

#[cfg(all(test, unix, not(miri)))]
mod tests {
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use crate::SegregatedFit;
    use crate::segregated::queue::hooks;
    use core::alloc::Layout;

    static STALLED: AtomicBool = AtomicBool::new(false);
    static RESUME: AtomicBool = AtomicBool::new(false);

    /// The freer that the fork leaves behind: parks between its swap and
    /// its link until told.
    fn stall() {
        STALLED.store(true, Ordering::SeqCst);
        while !RESUME.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    /// What the child does: the queue's reachable block, then one more of
    /// the class. Before `child` repaired the queues, the second waited
    /// forever for the link the parent's freer had not stored.
    fn in_child(a: &SegregatedFit, l: Layout, first: NonNull<u8>, hidden: NonNull<u8>) -> ! {
        let ok = std::panic::catch_unwind(|| {
            let p = a.alloc_shared(l).unwrap();
            let q = a.alloc_shared(l).unwrap();
            p == first && q != hidden && q != first
        });
        // SAFETY: `_exit` ends the child without running the parent's
        // atexit handlers or the test harness.
        unsafe { libc::_exit(if matches!(ok, Ok(true)) { 0 } else { 101 }) }
    }

    /// A child forked while a freer of the parent sits between its swap of
    /// the queue's back and its link: the queue holds two blocks and only
    /// the first is reachable, and the thread that would link the second
    /// does not exist in the child. The child's allocations of the class
    /// must complete (the first hung until the parent's test killed it).
    #[test]
    fn a_child_forked_amid_a_push_can_allocate_the_class() {
        let a = SegregatedFit::new();
        let l = Layout::from_size_align(48 * 1024, 8).unwrap();
        let class = SegregatedFit::size_class(l.size(), l.align()).unwrap();
        let per_span = SegregatedFit::blocks_per_span(class);
        // Take every block of one span through the queue, so it is empty.
        let blocks: Vec<NonNull<u8>> = (0..per_span).map(|_| a.alloc_shared(l).unwrap()).collect();
        assert_eq!(a.span_count(class), 1);
        // SAFETY: allocated above with `l`, freed once.
        unsafe { a.dealloc_shared(blocks[0], l) };
        let (pa, pb) = (
            &a as *const SegregatedFit as usize,
            blocks[1].as_ptr() as usize,
        );
        let freer = std::thread::spawn(move || {
            hooks::AFTER_SWAP.with(|h| h.set(Some(stall)));
            // SAFETY: `a` outlives the thread (joined below); `pb` is a live
            // block of `l`, freed once.
            unsafe {
                (*(pa as *const SegregatedFit))
                    .dealloc_shared(NonNull::new_unchecked(pb as *mut u8), l)
            };
        });
        while !STALLED.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // SAFETY: the child only allocates from `a` and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            in_child(&a, l, blocks[0], blocks[1]);
        }
        // Ten seconds: the child takes milliseconds natively, more under an
        // emulator.
        let start = Instant::now();
        let status = loop {
            let mut status = 0;
            // SAFETY: our child; `status` a valid out-pointer.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            assert!(r >= 0, "waitpid: {}", std::io::Error::last_os_error());
            if r == pid {
                break Some(status);
            }
            if start.elapsed() > Duration::from_secs(10) {
                // SAFETY: our child, not yet reaped.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                break None;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        RESUME.store(true, Ordering::SeqCst);
        freer.join().unwrap();
        let status =
            status.expect("the child hung on the queue the parent's freer left half linked");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child failed: wait status {status:#x}"
        );
        // The parent's queue is untouched: both blocks come back.
        let mut got = [a.alloc_shared(l).unwrap(), a.alloc_shared(l).unwrap()];
        got.sort();
        let mut want = [blocks[0], blocks[1]];
        want.sort();
        assert_eq!(got, want);
    }
}
