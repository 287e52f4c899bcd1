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
//! **Not covered.** The class queues are lock-free: a thread forked away
//! between a push's swap and its link leaves the class's queue with blocks
//! no pop can reach, in the child, and an allocation of that class that
//! finds its thread cache empty waits for that link forever. The window is a
//! few instructions per flush of a thread cache. Blocks cached by the
//! parent's other threads stay in their (dead) caches: the child leaks them.
//!
//! **Costs.** Two pointers per heap; each `fork` takes and releases
//! `2 + 90 * heaps` uncontended locks (a few microseconds).

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

/// Calls `f` on every lock of every listed heap, in the fixed order
/// (classes in index order, the region, the large list), newest heap first;
/// with `reverse`, the exact reverse.
///
/// # Safety
///
/// The caller holds [`HEAPS`], so every listed heap stays mapped.
unsafe fn each_heap_lock(reverse: bool, mut f: impl FnMut(&SpinLock)) {
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
        let h = &mapped.heap;
        if reverse {
            f(&h.large.lock);
            f(&h.region.lock);
            for c in h.classes.iter().rev() {
                f(&c.growth.lock);
            }
            m = mapped.link.prev.load(Ordering::Relaxed);
        } else {
            for c in &h.classes {
                f(&c.growth.lock);
            }
            f(&h.region.lock);
            f(&h.large.lock);
            m = mapped.link.next.load(Ordering::Relaxed);
        }
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
/// `prepare`, so it holds every lock and no other holder exists.
unsafe extern "C" fn child() {
    // SAFETY: as above.
    unsafe { release_all() }
}
