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
