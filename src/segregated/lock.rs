//! `SpinLock`: the growth and large-path lock of
//! [`SegregatedFit`](super::SegregatedFit), which must never allocate.
//!
//! **Why not `std::sync::Mutex`.** Where std's mutex is a pthread mutex in a
//! lazily boxed `OnceBox` (macOS and the other targets without futexes), its
//! first `lock` allocates: installed as `#[global_allocator]`, the first
//! growth of the 64-byte class boxed the mutex, which allocated from the
//! 64-byte class, whose lock was not initialised yet, which boxed again: a
//! stack overflow before `main`. This lock is one atomic flag: `const`,
//! nothing to initialise, nothing to allocate.
//!
//! **Costs.** Uncontended: one compare-exchange to take, one store to
//! release. Contended: spins with `spin_loop` hints, then yields to the OS
//! scheduler (`sched_yield` / `SwitchToThread`, neither allocates). It guards
//! cold paths only (growth, the large path, trim, the cache registry), each
//! of which is a system call or a bounded list walk. No poisoning.

use crate::sync::{AtomicBool, Ordering};

/// A test-and-test-and-set lock that never allocates.
#[derive(Debug)]
pub(crate) struct SpinLock {
    held: AtomicBool,
}

/// Holds a [`SpinLock`] until dropped.
#[derive(Debug)]
pub(crate) struct SpinGuard<'a> {
    lock: &'a SpinLock,
}

impl SpinLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        SpinLock {
            held: AtomicBool::new(false),
        }
    }

    /// An unlocked lock (loom build: not `const`).
    #[cfg(loom)]
    #[allow(dead_code)]
    pub(crate) fn new() -> Self {
        SpinLock {
            held: AtomicBool::new(false),
        }
    }

    /// Takes the lock, spinning (then yielding) while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_> {
        let mut spins = 0u32;
        loop {
            // ORDERING: Acquire on success: the previous holder's writes
            // (released by its unlock store) are visible to us.
            if self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return SpinGuard { lock: self };
            }
            while self.held.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
        }
    }
}

#[cfg(not(loom))]
impl SpinLock {
    /// Takes the lock and keeps it with no guard: the fork handlers take
    /// every lock in `prepare` and release them in another function
    /// (`parent`, `child`) with [`release`](Self::release).
    pub(crate) fn acquire(&self) {
        core::mem::forget(self.lock());
    }

    /// Releases a lock taken with [`acquire`](Self::acquire).
    ///
    /// # Safety
    ///
    /// The calling thread took the lock with `acquire` and has not released
    /// it since (in a forked child: the thread that forked took it).
    pub(crate) unsafe fn release(&self) {
        // ORDERING: Release publishes the critical section to the next
        // holder, as the guard's drop does.
        self.held.store(false, Ordering::Release);
    }
}

/// One step of waiting: a few spin-loop hints, then yield the CPU.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    if *spins < 64 {
        *spins += 1;
        core::hint::spin_loop();
    } else {
        #[cfg(not(loom))]
        std::thread::yield_now();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
}

impl Drop for SpinGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // ORDERING: Release publishes the critical section to the next holder.
        self.lock.held.store(false, Ordering::Release);
    }
}
