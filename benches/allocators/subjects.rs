//! The allocators under measurement, behind one small interface so every
//! workload is written once and monomorphised per allocator (no dynamic
//! dispatch inside a measured loop).
//!
//! A [`Subject`] is the allocator's shared state; [`Subject::local`] gives
//! worker `w` its handle (a reference for a thread-safe allocator, the
//! worker's own `Bump` for bumpalo-per-thread). [`Subject::reset`] runs
//! between rounds with no worker running and gives arena memory back, so
//! every round runs in the same, already-faulted pages.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

use allocasm::RawAllocator;
use crossbeam_utils::CachePadded;

/// One worker's way into a [`Subject`].
pub trait LocalAlloc {
    /// Allocates `layout`; a failure ends the benchmark (a bench that ran
    /// out of memory measured nothing).
    fn alloc(&mut self, layout: Layout) -> NonNull<u8>;

    /// Gives `ptr` back.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`alloc`](LocalAlloc::alloc) on the same subject with
    /// `layout`, and was not freed since, nor reset away.
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout);
}

/// An allocator under measurement.
pub trait Subject {
    /// Worker `w`'s handle.
    type Local<'a>: LocalAlloc
    where
        Self: 'a;

    /// The handle of worker `worker` (`0..workers`).
    fn local(&self, worker: usize) -> Self::Local<'_>;

    /// Between rounds, no allocation of the round still in use: give back
    /// everything the round allocated (arenas reset, others do nothing).
    fn reset(&mut self);
}

#[cold]
#[inline(never)]
fn failed(what: &dyn core::fmt::Debug, layout: Layout) -> ! {
    panic!("bench allocation of {layout:?} failed: {what:?} (round too large for the allocator?)")
}

/// A `RawAllocator` of this crate, with how to reset it between rounds.
pub struct Raw<A> {
    /// The allocator.
    pub alloc: A,
    /// Gives the arena's memory back (a no-op for allocators that free).
    pub reset: fn(&mut A),
}

impl<A: RawAllocator> Raw<A> {
    /// An allocator that reuses what is freed: nothing to reset.
    pub fn freeing(alloc: A) -> Self {
        Raw {
            alloc,
            reset: |_| {},
        }
    }
}

impl<A: RawAllocator> LocalAlloc for &A {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        match (**self).allocate(layout) {
            Ok(p) => p.cast(),
            Err(e) => failed(&e, layout),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded; the caller guarantees `ptr` came from this
        // allocator with `layout` and is live.
        unsafe { (**self).deallocate(ptr, layout) }
    }
}

impl<A: RawAllocator> Subject for Raw<A> {
    type Local<'a>
        = &'a A
    where
        Self: 'a;

    #[inline(always)]
    fn local(&self, _worker: usize) -> &A {
        &self.alloc
    }

    fn reset(&mut self) {
        (self.reset)(&mut self.alloc)
    }
}

/// The two arenas of the write-up through their own fast path,
/// `alloc(size)` (16-byte aligned), rather than `RawAllocator::allocate`
/// (which adds the alignment arithmetic for layouts above 16): the goals
/// compare that fast path with its peers. Bench layouts are aligned to at
/// most 16.
pub struct Direct<A>(pub A);

/// The arena methods [`Direct`] calls.
pub trait SizedArena {
    /// The fast path.
    fn alloc_size(&self, size: usize) -> Result<NonNull<u8>, allocasm::AllocError>;
    /// The sized free.
    ///
    /// # Safety
    ///
    /// As the arena's `dealloc`: `ptr` is live, from `alloc_size(size)`.
    unsafe fn free_size(&self, ptr: NonNull<u8>, size: usize);
    /// Empties the arena.
    fn reset_all(&mut self);
}

impl SizedArena for allocasm::PackedArena {
    #[inline(always)]
    fn alloc_size(&self, size: usize) -> Result<NonNull<u8>, allocasm::AllocError> {
        self.alloc(size)
    }

    #[inline(always)]
    unsafe fn free_size(&self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: forwarded; the caller upholds `dealloc`'s contract.
        unsafe { self.dealloc(ptr, size) }
    }

    fn reset_all(&mut self) {
        self.reset()
    }
}

impl SizedArena for allocasm::ThreadCursorArena {
    #[inline(always)]
    fn alloc_size(&self, size: usize) -> Result<NonNull<u8>, allocasm::AllocError> {
        self.alloc(size)
    }

    #[inline(always)]
    unsafe fn free_size(&self, _ptr: NonNull<u8>, _size: usize) {}

    fn reset_all(&mut self) {
        self.reset()
    }
}

impl<A: SizedArena> LocalAlloc for &Direct<A> {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        debug_assert!(layout.align() <= 16);
        match self.0.alloc_size(layout.size()) {
            Ok(p) => p,
            Err(e) => failed(&e, layout),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from `alloc` with `layout`.
        unsafe { self.0.free_size(ptr, layout.size()) }
    }
}

impl<A: SizedArena> Subject for Direct<A> {
    type Local<'a>
        = &'a Direct<A>
    where
        Self: 'a;

    #[inline(always)]
    fn local(&self, _worker: usize) -> &Direct<A> {
        self
    }

    fn reset(&mut self) {
        self.0.reset_all()
    }
}

/// 4 MiB blocks (128 of them: 512 MiB, enough for a round of 16 workers).
fn packed() -> Direct<allocasm::PackedArena> {
    Direct(made("PackedArena", allocasm::PackedArena::new(4 << 20)))
}

fn thread_cursor() -> Direct<allocasm::ThreadCursorArena> {
    let config = allocasm::ThreadCursorConfig {
        block_size: 4 << 20,
        ..Default::default()
    };
    Direct(made(
        "ThreadCursorArena",
        allocasm::ThreadCursorArena::with_config(config),
    ))
}

/// `ThreadCursorArena` through the handle that holds this thread's cursor
/// ([`allocasm::ThreadCursorArena::local`]): the same arena as
/// "ThreadCursorArena", without the thread-local lookup per allocation,
/// as bumpalo's worker holds its `Bump`.
pub struct ThreadCursorLocal(pub allocasm::ThreadCursorArena);

impl LocalAlloc for allocasm::LocalCursor<'_> {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        debug_assert!(layout.align() <= 16);
        match allocasm::LocalCursor::alloc(self, layout.size()) {
            Ok(p) => p,
            Err(e) => failed(&e, layout),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, _ptr: NonNull<u8>, _layout: Layout) {}
}

impl Subject for ThreadCursorLocal {
    type Local<'a> = allocasm::LocalCursor<'a>;

    fn local(&self, _worker: usize) -> allocasm::LocalCursor<'_> {
        self.0.local()
    }

    fn reset(&mut self) {
        self.0.reset()
    }
}

/// An allocator behind an out-of-line call: what the report calls the
/// "call" boundary. Every allocation and every free is a call to an
/// `#[inline(never)]` function that runs the allocator's `GlobalAlloc`
/// method, the shape of a `#[global_allocator]`'s `__rust_alloc` (for
/// glibc and mimalloc the body then calls into C; SegregatedFit's fast path
/// is inlined into the body). The functions are `#[no_mangle]`, so the
/// compiler keeps them external and cannot specialize them for the bench
/// loop's constant layout.
#[derive(Clone, Copy)]
pub struct Call<G>(pub G);

/// The allocators the bench can put behind [`Call`].
pub trait Outlined {
    /// `GlobalAlloc::alloc`, out of line.
    ///
    /// # Safety
    ///
    /// As `GlobalAlloc::alloc`: `layout` has a non-zero size.
    unsafe fn alloc_call(&self, layout: Layout) -> *mut u8;
    /// `GlobalAlloc::dealloc`, out of line.
    ///
    /// # Safety
    ///
    /// As `GlobalAlloc::dealloc`: `ptr` came from `alloc_call` with `layout`.
    unsafe fn dealloc_call(&self, ptr: *mut u8, layout: Layout);
}

/// Defines the two out-of-line functions of one allocator and its
/// [`Outlined`] impl.
macro_rules! outlined {
    ($ty:ty, $alloc:ident, $dealloc:ident) => {
        /// The allocator's `GlobalAlloc::alloc` behind a call.
        ///
        /// # Safety
        ///
        /// As `GlobalAlloc::alloc`.
        #[inline(never)]
        #[unsafe(no_mangle)]
        pub unsafe fn $alloc(a: &$ty, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded; the caller upholds `GlobalAlloc::alloc`'s contract.
            unsafe { GlobalAlloc::alloc(a, layout) }
        }

        /// The allocator's `GlobalAlloc::dealloc` behind a call.
        ///
        /// # Safety
        ///
        /// As `GlobalAlloc::dealloc`.
        #[inline(never)]
        #[unsafe(no_mangle)]
        pub unsafe fn $dealloc(a: &$ty, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded; the caller upholds `GlobalAlloc::dealloc`'s contract.
            unsafe { GlobalAlloc::dealloc(a, ptr, layout) }
        }

        impl Outlined for $ty {
            #[inline(always)]
            unsafe fn alloc_call(&self, layout: Layout) -> *mut u8 {
                // SAFETY: forwarded.
                unsafe { $alloc(self, layout) }
            }

            #[inline(always)]
            unsafe fn dealloc_call(&self, ptr: *mut u8, layout: Layout) {
                // SAFETY: forwarded.
                unsafe { $dealloc(self, ptr, layout) }
            }
        }
    };
}

outlined!(
    std::alloc::System,
    bench_call_system_alloc,
    bench_call_system_dealloc
);
#[cfg(not(allocasm_no_mimalloc))]
outlined!(
    mimalloc::MiMalloc,
    bench_call_mimalloc_alloc,
    bench_call_mimalloc_dealloc
);
outlined!(
    allocasm::SegregatedFit,
    bench_call_segregated_alloc,
    bench_call_segregated_dealloc
);

/// The platform's allocator (glibc malloc here), at the call boundary.
pub type System = Call<std::alloc::System>;
/// mimalloc, through the `mimalloc` crate, at the call boundary.
#[cfg(not(allocasm_no_mimalloc))]
pub type MiMalloc = Call<mimalloc::MiMalloc>;
/// The system allocator subject.
pub const SYSTEM: System = Call(std::alloc::System);
/// The mimalloc subject.
#[cfg(not(allocasm_no_mimalloc))]
pub const MIMALLOC: MiMalloc = Call(mimalloc::MiMalloc);

/// The name of SegregatedFit behind the same call as the peers: the row
/// that compares with "system" and "mimalloc" at one boundary.
pub const SEGREGATED_CALL: &str = "SegregatedFit:call";

impl<G: Outlined> LocalAlloc for &Call<G> {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        // SAFETY: every bench layout has a non-zero size.
        let p = unsafe { self.0.alloc_call(layout) };
        match NonNull::new(p) {
            Some(p) => p,
            None => failed(&"null", layout),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from `alloc` with `layout`.
        unsafe { self.0.dealloc_call(ptr.as_ptr(), layout) }
    }
}

impl<G: Outlined> Subject for Call<G> {
    type Local<'a>
        = &'a Call<G>
    where
        Self: 'a;

    #[inline(always)]
    fn local(&self, _worker: usize) -> &Call<G> {
        self
    }

    fn reset(&mut self) {}
}

/// bumpalo, one `Bump` per worker (bumpalo is not `Sync`): frees are
/// no-ops, the bumps are reset between rounds.
pub struct BumpPerThread {
    bumps: Box<[CachePadded<Mutex<bumpalo::Bump>>]>,
}

impl BumpPerThread {
    /// One `Bump` for each of `workers` workers.
    pub fn new(workers: usize) -> Self {
        BumpPerThread {
            bumps: (0..workers.max(1))
                .map(|_| CachePadded::new(Mutex::new(bumpalo::Bump::new())))
                .collect(),
        }
    }
}

/// Worker `w`'s own bump, locked once per round (never contended).
pub struct BumpLocal<'a>(MutexGuard<'a, bumpalo::Bump>);

impl LocalAlloc for BumpLocal<'_> {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        self.0.alloc_layout(layout)
    }

    #[inline(always)]
    unsafe fn free(&mut self, _ptr: NonNull<u8>, _layout: Layout) {}
}

impl Subject for BumpPerThread {
    type Local<'a> = BumpLocal<'a>;

    fn local(&self, worker: usize) -> BumpLocal<'_> {
        BumpLocal(self.bumps[worker].lock().unwrap())
    }

    fn reset(&mut self) {
        for b in self.bumps.iter_mut() {
            b.get_mut().unwrap().reset();
        }
    }
}

/// The peer of `Pool`: fixed-size blocks carved from one slab, the free
/// blocks kept in a `Vec` (not intrusive). Single-threaded.
pub struct VecFreeList {
    slab: Box<[u64]>,
    free: core::cell::RefCell<Vec<NonNull<u8>>>,
    block: usize,
}

impl VecFreeList {
    /// `blocks` blocks of `block` bytes (a multiple of 8).
    pub fn new(block: usize, blocks: usize) -> Self {
        let mut slab = vec![0u64; block / 8 * blocks].into_boxed_slice();
        let base = slab.as_mut_ptr().cast::<u8>();
        let free = (0..blocks)
            .rev()
            // SAFETY: `i * block` is inside the slab of `blocks * block` bytes.
            .map(|i| unsafe { NonNull::new_unchecked(base.add(i * block)) })
            .collect();
        VecFreeList {
            slab,
            free: core::cell::RefCell::new(free),
            block,
        }
    }
}

impl LocalAlloc for &VecFreeList {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> NonNull<u8> {
        debug_assert!(layout.size() <= self.block && !self.slab.is_empty());
        match self.free.borrow_mut().pop() {
            Some(p) => p,
            None => failed(&"free list empty", layout),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        self.free.borrow_mut().push(ptr);
    }
}

impl Subject for VecFreeList {
    type Local<'a> = &'a VecFreeList;

    fn local(&self, _worker: usize) -> &VecFreeList {
        self
    }

    fn reset(&mut self) {}
}

/// How large a subject must be for one measurement.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Workers that use it at once (bumpalo makes one `Bump` each).
    pub workers: usize,
    /// The largest request (a `Pool`'s slot size).
    pub block: usize,
    /// Bytes one round allocates at most, all workers together (the
    /// capacity of the fixed-size arenas).
    pub bytes: usize,
    /// Blocks live at once at most (a `Pool`'s slot count).
    pub live: usize,
}

fn made<T>(what: &str, r: Result<T, allocasm::AllocError>) -> T {
    r.unwrap_or_else(|e| panic!("bench: cannot build {what}: {e:?}"))
}

/// Every allocator that [`with_subject`] builds, in table order: the
/// peers, then the crate's. The page allocator (one page per request) is
/// only in the chapter program, see [`CHAPTER_NAMES`].
pub fn names() -> Vec<&'static str> {
    let mut v = vec!["system"];
    #[cfg(not(allocasm_no_mimalloc))]
    v.push("mimalloc");
    v.extend([
        "bumpalo",
        "LinearArena",
        "StackAllocator",
        "Pool",
        "FreeList",
        "FrameAllocator",
        "SegregatedFit",
        SEGREGATED_CALL,
        "Temp",
        "TempJob",
        "Persistent",
        "Rewindable",
        "PackedArena",
        "ThreadCursorArena",
    ]);
    v
}

/// The allocators of the chapter's opening program: all of [`names`] and
/// the page allocator.
pub const CHAPTER_EXTRA: &[&str] = &["PageAllocator"];

/// The thread-safe allocators that [`with_shared`] builds (the scaling
/// table's rows).
pub fn shared_names() -> Vec<&'static str> {
    let mut v = vec!["system"];
    #[cfg(not(allocasm_no_mimalloc))]
    v.push("mimalloc");
    v.extend([
        "bumpalo",
        "SegregatedFit",
        SEGREGATED_CALL,
        "TempJob",
        "Persistent",
        "Rewindable",
        "PackedArena",
        "ThreadCursorArena",
    ]);
    v
}

fn temp_job(cfg: Config) -> Raw<allocasm::TempJob> {
    let pool = made("TempJob", allocasm::TempJob::new(cfg.bytes.max(1 << 20)));
    Raw {
        alloc: pool,
        reset: |a| drop(a.end_frame()),
    }
}

fn rewindable(cfg: Config) -> Raw<allocasm::Rewindable> {
    let max = cfg.bytes.clamp(1 << 20, 1 << 30);
    let a = made("Rewindable", allocasm::Rewindable::new(1 << 20, max));
    Raw {
        alloc: a,
        reset: allocasm::Rewindable::rewind,
    }
}

fn persistent() -> Raw<allocasm::Persistent<allocasm::SegregatedFit>> {
    Raw::freeing(allocasm::Persistent::with_base(
        allocasm::SegregatedFit::new(),
    ))
}

/// `Persistent` with leak detection on whatever the build (its default is
/// off in release builds, as Unity's player builds count nothing): what
/// the two shared counters cost.
pub const PERSISTENT_COUNTING: &str = "Persistent, leak detection on";

fn persistent_counting() -> Raw<allocasm::Persistent<allocasm::SegregatedFit>> {
    Raw::freeing(allocasm::Persistent::with_leak_detection(
        allocasm::SegregatedFit::new(),
        allocasm::LeakDetection::Enabled,
    ))
}

/// Calls `v` with the subject named `name` (one of [`names`] or
/// [`CHAPTER_EXTRA`]) built for `cfg`; `None` for an unknown name.
pub fn with_subject<V: Visit>(name: &str, cfg: Config, v: V) -> Option<V::Out> {
    use allocasm::*;
    let bytes = cfg.bytes.max(1 << 16);
    Some(match name {
        "system" => v.visit(SYSTEM),
        #[cfg(not(allocasm_no_mimalloc))]
        "mimalloc" => v.visit(MIMALLOC),
        "bumpalo" => v.visit(BumpPerThread::new(cfg.workers)),
        "LinearArena" => v.visit(Raw {
            alloc: made(name, LinearArena::new(bytes)),
            reset: LinearArena::reset,
        }),
        "StackAllocator" => v.visit(Raw {
            alloc: made(name, StackAllocator::new(bytes)),
            reset: StackAllocator::reset,
        }),
        "Pool" => v.visit(Raw {
            alloc: made(name, Pool::new(cfg.block, 8, cfg.live.max(1))),
            reset: Pool::reset,
        }),
        "FreeList" => v.visit(Raw {
            alloc: made(name, FreeList::new(bytes * 2, FitPolicy::FirstFit)),
            reset: FreeList::reset,
        }),
        "FrameAllocator" => v.visit(Raw {
            alloc: made(name, FrameAllocator::<2>::new(bytes)),
            reset: FrameAllocator::<2>::reset_all,
        }),
        "SegregatedFit" => v.visit(Raw::freeing(SegregatedFit::new())),
        SEGREGATED_CALL => v.visit(Call(SegregatedFit::new())),
        "Temp" => v.visit(Raw {
            alloc: made(name, Temp::new(bytes, SegregatedFit::new())),
            reset: Temp::end_frame,
        }),
        "TempJob" => v.visit(temp_job(cfg)),
        "Persistent" => v.visit(persistent()),
        PERSISTENT_COUNTING => v.visit(persistent_counting()),
        "Rewindable" => v.visit(rewindable(cfg)),
        "PageAllocator" => v.visit(Raw::freeing(PageAllocator::new())),
        "PackedArena" => v.visit(packed()),
        "ThreadCursorArena" => v.visit(thread_cursor()),
        "ThreadCursorArena::local" => v.visit(ThreadCursorLocal(thread_cursor().0)),
        _ => return None,
    })
}

/// Calls `v` with the thread-safe subject named `name` (one of
/// [`shared_names`]) built for `cfg`; `None` for an unknown name.
pub fn with_shared<V: VisitShared>(name: &str, cfg: Config, v: V) -> Option<V::Out> {
    use allocasm::*;
    Some(match name {
        "system" => v.visit(SYSTEM),
        #[cfg(not(allocasm_no_mimalloc))]
        "mimalloc" => v.visit(MIMALLOC),
        "bumpalo" => v.visit(BumpPerThread::new(cfg.workers)),
        "SegregatedFit" => v.visit(Raw::freeing(SegregatedFit::new())),
        SEGREGATED_CALL => v.visit(Call(SegregatedFit::new())),
        "TempJob" => v.visit(temp_job(cfg)),
        "Persistent" => v.visit(persistent()),
        "Rewindable" => v.visit(rewindable(cfg)),
        "PackedArena" => v.visit(packed()),
        "ThreadCursorArena" => v.visit(thread_cursor()),
        _ => return None,
    })
}

/// A generic action over one subject (Rust has no generic closures).
pub trait Visit {
    /// What the action returns.
    type Out;
    /// Runs the action.
    fn visit<S: Subject>(self, subject: S) -> Self::Out;
}

/// A generic action over one thread-safe subject.
pub trait VisitShared {
    /// What the action returns.
    type Out;
    /// Runs the action.
    fn visit<S: Subject + Send + Sync + 'static>(self, subject: S) -> Self::Out;
}
