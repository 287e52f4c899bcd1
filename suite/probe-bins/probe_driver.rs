//! Calls every probe in its warm fast case many times, for the codegen
//! suite's executed-instruction counts (`allocasm::codegen::executed`): run
//! under `qemu-<arch> -singlestep -d exec,nochain -dfilter <probe ranges>`,
//! each call of a probe is one window of the trace from the probe's entry to
//! its return, so what the CPU executed per call is counted exactly, helpers
//! (`__aarch64_ldadd8_relax`, `__aeabi_read_tp`) included.
//!
//! - `probe_driver all <calls>`: every probe of `allocasm::probes::PROBES`
//!   in registry order, `calls` times each.
//! - `probe_driver <probe> <calls>`: one probe.
//! - `probe_driver list`: the probes it drives, one a line.
//! - `probe_driver base`: only the lines every command prints first,
//!   `base probe_linear_alloc <address>` (where the run loaded the probe)
//!   and `interp <address> <path>` (where it loaded the dynamic loader).
//!
//! With `ALLOCASM_PROBE_DYLIB=<path>` in the environment (Unix) the probes
//! are not this executable's: the driver dlopens that shared library (the
//! `allocasm-dylib-probes` cdylib, the `x86_64-linux-dylib` profile's code)
//! and calls its exported probes through `dlsym`'s pointers; the `base`
//! line is then the library's `probe_linear_alloc`. The per-thread cache
//! probes' set-up (the heap's creation, the blocks that fill the cache, the
//! heap's drop) then runs the library's own `allocasm_dylib_segregated_*`:
//! the cache is a thread-local of the library, not of this executable's
//! copy of allocasm.
//!
//! "Warm fast case": the arena or block has room for every call, the
//! thread's cursor is filled (its first call takes the refill; later ones
//! are the fast path), the pool has free slots, the class queue holds more
//! than one block. The first calls of each probe are the warm-up; the
//! analysis drops them. Set-up between calls (an allocation for a free to
//! give back) uses the library's API, inlined here, never a probe, so it is
//! outside every probe's window.
//!
//! A probe added to `allocasm::probes::PROBES` must get a case here: the
//! codegen tests fail naming it otherwise (`list` is compared to the
//! registry).

use core::alloc::Layout;
use core::ffi::c_void;
use core::hint::black_box;
use core::ptr::NonNull;

use allocasm::{
    FitPolicy, FrameAllocator, FreeList, LinearArena, LocalCursor, Marker, PackedArena, Pool,
    Rewindable, SegregatedFit, StackAllocator, Temp, TempJob, ThreadCursorArena,
    ThreadCursorConfig,
};

/// The request size every allocating probe gets: small enough for every
/// fast path (a size class, a packed block, a thread chunk).
const SIZE: usize = 16;

/// The probes this driver runs, in registry order.
const DRIVEN: &[&str] = &[
    "probe_linear_alloc",
    "probe_stack_alloc",
    "probe_stack_free_to_marker",
    "probe_pool_alloc",
    "probe_pool_free",
    "probe_freelist_alloc",
    "probe_frame_alloc",
    "probe_packed_alloc_relaxed",
    "probe_packed_alloc_acquire",
    "probe_packed_alloc_seqcst",
    "probe_packed_dealloc",
    "probe_thread_cursor_alloc",
    "probe_thread_cursor_local_alloc",
    "probe_segregated_size_class",
    "probe_segregated_alloc",
    "probe_segregated_dealloc",
    "probe_segregated_cached_alloc",
    "probe_segregated_cached_dealloc",
    "probe_rewindable_alloc",
    "probe_temp_alloc",
    "probe_tempjob_alloc",
];

/// The environment variable naming a shared library whose probes the driver
/// calls instead of its own.
const DYLIB_ENV: &str = "ALLOCASM_PROBE_DYLIB";

/// The probes' entry points: this executable's (`allocasm::probes`) or a
/// shared library's (`dlsym`), with their signatures.
macro_rules! probe_table {
    ($($name:ident: $ty:ty;)*) => {
        /// One entry point per probe, plus the set-up of the per-thread cache
        /// probes (see [`Probes::segregated_alloc`]).
        #[allow(improper_ctypes_definitions)]
        struct Probes {
            $($name: $ty,)*
            /// `SegregatedFit::new`, boxed, in the code the probes are in.
            segregated_new: extern "C" fn() -> *mut SegregatedFit,
            /// Its drop.
            segregated_drop: unsafe extern "C" fn(*mut SegregatedFit),
            /// `SegregatedFit::alloc` in the code the probes are in.
            segregated_alloc: extern "C" fn(&SegregatedFit, usize) -> *mut u8,
            /// `SegregatedFit::dealloc` in the code the probes are in.
            segregated_dealloc: unsafe extern "C" fn(&SegregatedFit, *mut u8, usize),
        }

        impl Probes {
            /// This executable's probes.
            fn linked() -> Probes {
                Probes {
                    $($name: allocasm::probes::$name,)*
                    segregated_new: local_segregated_new,
                    segregated_drop: local_segregated_drop,
                    segregated_alloc: local_segregated_alloc,
                    segregated_dealloc: local_segregated_dealloc,
                }
            }

            /// The probes of the shared library at `path`.
            #[cfg(unix)]
            fn load(path: &str) -> Probes {
                let lib = std::ffi::CString::new(path).expect("a path without NUL");
                // SAFETY: a NUL-terminated path; the library stays loaded
                // (never closed).
                let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW) };
                assert!(!handle.is_null(), "dlopen {path} failed");
                let sym = |name: &str| -> *mut c_void {
                    let c = std::ffi::CString::new(name).expect("a name without NUL");
                    // SAFETY: a live handle and a NUL-terminated name.
                    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
                    assert!(!p.is_null(), "{path} does not export {name}");
                    p
                };
                // SAFETY: each symbol is the library's `#[no_mangle]` function
                // of that name, built from the same source with the same
                // signature as `allocasm::probes`.
                unsafe {
                    Probes {
                        $($name: core::mem::transmute::<*mut c_void, $ty>(sym(stringify!($name))),)*
                        segregated_new: core::mem::transmute::<
                            *mut c_void,
                            extern "C" fn() -> *mut SegregatedFit,
                        >(sym("allocasm_dylib_segregated_new")),
                        segregated_drop: core::mem::transmute::<
                            *mut c_void,
                            unsafe extern "C" fn(*mut SegregatedFit),
                        >(sym("allocasm_dylib_segregated_drop")),
                        segregated_alloc: core::mem::transmute::<
                            *mut c_void,
                            extern "C" fn(&SegregatedFit, usize) -> *mut u8,
                        >(sym("allocasm_dylib_segregated_alloc")),
                        segregated_dealloc: core::mem::transmute::<
                            *mut c_void,
                            unsafe extern "C" fn(&SegregatedFit, *mut u8, usize),
                        >(sym("allocasm_dylib_segregated_dealloc")),
                    }
                }
            }
        }
    };
}

probe_table! {
    probe_linear_alloc: extern "C" fn(&LinearArena<'_>, usize) -> *mut u8;
    probe_stack_alloc: extern "C" fn(&StackAllocator<'_>, usize) -> *mut u8;
    probe_stack_free_to_marker: extern "C" fn(&mut StackAllocator<'_>, Marker) -> usize;
    probe_pool_alloc: extern "C" fn(&Pool<'_>) -> *mut u8;
    probe_pool_free: unsafe extern "C" fn(&Pool<'_>, *mut u8) -> usize;
    probe_freelist_alloc: extern "C-unwind" fn(&FreeList<'_>, usize) -> *mut u8;
    probe_frame_alloc: extern "C" fn(&FrameAllocator<2>, usize) -> *mut u8;
    probe_packed_alloc_relaxed: unsafe extern "C-unwind" fn(&PackedArena, usize) -> *mut u8;
    probe_packed_alloc_acquire: extern "C-unwind" fn(&PackedArena, usize) -> *mut u8;
    probe_packed_alloc_seqcst: extern "C-unwind" fn(&PackedArena, usize) -> *mut u8;
    probe_packed_dealloc: unsafe extern "C-unwind" fn(&PackedArena, *mut u8, usize);
    probe_thread_cursor_alloc: extern "C-unwind" fn(&ThreadCursorArena, usize) -> *mut u8;
    probe_thread_cursor_local_alloc: extern "C-unwind" fn(&mut LocalCursor<'_>, usize) -> *mut u8;
    probe_segregated_size_class: extern "C" fn(usize) -> usize;
    probe_segregated_alloc: extern "C-unwind" fn(&SegregatedFit, usize) -> *mut u8;
    probe_segregated_dealloc: unsafe extern "C-unwind" fn(&SegregatedFit, *mut u8, usize);
    probe_segregated_cached_alloc: extern "C-unwind" fn(&SegregatedFit, usize) -> *mut u8;
    probe_segregated_cached_dealloc: unsafe extern "C-unwind" fn(&SegregatedFit, *mut u8, usize);
    probe_rewindable_alloc: extern "C-unwind" fn(&Rewindable, usize) -> *mut u8;
    probe_temp_alloc: extern "C" fn(&Temp<&TempJob>, usize) -> *mut u8;
    probe_tempjob_alloc: extern "C-unwind" fn(&TempJob, usize) -> *mut u8;
}

impl Probes {
    /// A heap for the per-thread cache probes, made and dropped by the code
    /// the probes are in (see [`Probes::segregated_new`]).
    fn cached_heap(&self) -> CachedHeap<'_> {
        CachedHeap {
            heap: (self.segregated_new)(),
            probes: self,
        }
    }
}

/// A `SegregatedFit` of [`Probes::segregated_new`], dropped by
/// [`Probes::segregated_drop`].
struct CachedHeap<'a> {
    heap: *mut SegregatedFit,
    probes: &'a Probes,
}

impl core::ops::Deref for CachedHeap<'_> {
    type Target = SegregatedFit;
    fn deref(&self) -> &SegregatedFit {
        // SAFETY: a live box of `segregated_new` until `drop`.
        unsafe { &*self.heap }
    }
}

impl Drop for CachedHeap<'_> {
    fn drop(&mut self) {
        // SAFETY: made by the same code's `segregated_new`, dropped once.
        unsafe { (self.probes.segregated_drop)(self.heap) }
    }
}

/// The set-up's heap for the linked probes.
#[allow(improper_ctypes_definitions)]
extern "C" fn local_segregated_new() -> *mut SegregatedFit {
    Box::into_raw(Box::new(SegregatedFit::new()))
}

/// Its drop.
///
/// # Safety
///
/// `a` came from [`local_segregated_new`], dropped once.
#[allow(improper_ctypes_definitions)]
unsafe extern "C" fn local_segregated_drop(a: *mut SegregatedFit) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(a) });
}

/// The set-up's allocation for the linked probes (this executable's cache).
#[allow(improper_ctypes_definitions)]
extern "C" fn local_segregated_alloc(a: &SegregatedFit, size: usize) -> *mut u8 {
    let layout = Layout::from_size_align(size, 8).expect("layout");
    a.alloc(layout)
        .map_or(core::ptr::null_mut(), NonNull::as_ptr)
}

/// The set-up's free for the linked probes.
///
/// # Safety
///
/// `ptr` was allocated by `a` with `size` and alignment 8, freed once.
#[allow(improper_ctypes_definitions)]
unsafe extern "C" fn local_segregated_dealloc(a: &SegregatedFit, ptr: *mut u8, size: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        a.dealloc(
            NonNull::new_unchecked(ptr),
            Layout::from_size_align_unchecked(size, 8),
        )
    }
}

fn usage() -> ! {
    eprintln!("usage: probe_driver all <calls> | <probe> <calls> | list");
    std::process::exit(2)
}

/// A thread cursor arena whose chunk holds `bytes` (the two thread cursor
/// probes' arena).
fn thread_cursor_arena(bytes: usize) -> ThreadCursorArena {
    ThreadCursorArena::with_config(ThreadCursorConfig {
        chunk_size: bytes.next_power_of_two(),
        block_size: bytes.next_power_of_two() * 2,
        max_blocks: 4,
    })
    .expect("thread cursor arena")
}

/// Room for `calls` requests of [`SIZE`] bytes aligned to 64, and some.
fn room(calls: usize) -> usize {
    (calls + 16) * 128 + 4096
}

fn nonnull(p: *mut u8, probe: &str) -> NonNull<u8> {
    NonNull::new(p).unwrap_or_else(|| panic!("{probe}: the fast case failed (null)"))
}

/// Runs `probe` `calls` times in its warm fast case; returns a checksum of
/// the results so nothing is optimized away.
fn drive(probes: &Probes, probe: &str, calls: usize) -> usize {
    let mut sum = 0usize;
    let bytes = room(calls);
    match probe {
        "probe_linear_alloc" => {
            let arena = LinearArena::new(bytes).expect("arena");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_linear_alloc)(&arena, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        "probe_stack_alloc" => {
            let stack = StackAllocator::new(bytes).expect("stack");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_stack_alloc)(&stack, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        "probe_stack_free_to_marker" => {
            let mut stack = StackAllocator::new(bytes).expect("stack");
            for _ in 0..calls {
                let marker = stack.marker();
                stack.alloc(SIZE, 8).expect("stack alloc");
                let ok = (probes.probe_stack_free_to_marker)(&mut stack, black_box(marker));
                assert_eq!(ok, 1, "{probe}: the marker was refused");
                sum += ok;
            }
        }
        "probe_pool_alloc" => {
            let pool = Pool::new(SIZE, 8, calls + 16).expect("pool");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_pool_alloc)(&pool), probe).as_ptr() as usize;
            }
        }
        "probe_pool_free" => {
            let pool = Pool::new(SIZE, 8, 64).expect("pool");
            for _ in 0..calls {
                let p = pool.alloc().expect("pool alloc");
                // SAFETY: `p` is a live slot of `pool`, not used afterwards.
                let ok = unsafe { (probes.probe_pool_free)(&pool, black_box(p.as_ptr())) };
                assert_eq!(ok, 1, "{probe}: the free was refused");
                sum += ok;
            }
        }
        "probe_freelist_alloc" => {
            let list = FreeList::new(bytes, FitPolicy::FirstFit).expect("free list");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_freelist_alloc)(&list, black_box(SIZE)), probe)
                    .as_ptr() as usize;
            }
        }
        "probe_frame_alloc" => {
            let frames = FrameAllocator::<2>::new(bytes).expect("frames");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_frame_alloc)(&frames, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        "probe_packed_alloc_relaxed" => {
            let arena = PackedArena::new(bytes.next_power_of_two()).expect("packed arena");
            for _ in 0..calls {
                // SAFETY: one thread, no block is ever recycled: nothing to
                // order before a new owner's accesses.
                let p = unsafe { (probes.probe_packed_alloc_relaxed)(&arena, black_box(SIZE)) };
                sum ^= nonnull(p, probe).as_ptr() as usize;
            }
        }
        "probe_packed_alloc_acquire" | "probe_packed_alloc_seqcst" => {
            let arena = PackedArena::new(bytes.next_power_of_two()).expect("packed arena");
            let f = if probe == "probe_packed_alloc_acquire" {
                probes.probe_packed_alloc_acquire
            } else {
                probes.probe_packed_alloc_seqcst
            };
            for _ in 0..calls {
                sum ^= nonnull(f(&arena, black_box(SIZE)), probe).as_ptr() as usize;
            }
        }
        "probe_packed_dealloc" => {
            let arena = PackedArena::new(bytes.next_power_of_two()).expect("packed arena");
            // One block stays live, so no free brings the counter to zero
            // (the recycle is the slow path).
            let pin = arena.alloc(SIZE).expect("packed alloc");
            for _ in 0..calls {
                let p = arena.alloc(SIZE).expect("packed alloc");
                // SAFETY: `p` is a live allocation of `SIZE` bytes from
                // `arena`, freed once, not used afterwards.
                unsafe { (probes.probe_packed_dealloc)(&arena, black_box(p.as_ptr()), SIZE) };
                sum += 1;
            }
            sum ^= pin.as_ptr() as usize;
        }
        "probe_thread_cursor_alloc" => {
            let arena = thread_cursor_arena(bytes);
            for _ in 0..calls {
                sum ^= nonnull(
                    (probes.probe_thread_cursor_alloc)(&arena, black_box(SIZE)),
                    probe,
                )
                .as_ptr() as usize;
            }
        }
        "probe_thread_cursor_local_alloc" => {
            let arena = thread_cursor_arena(bytes);
            let mut cursor = arena.local();
            for _ in 0..calls {
                sum ^= nonnull(
                    (probes.probe_thread_cursor_local_alloc)(&mut cursor, black_box(SIZE)),
                    probe,
                )
                .as_ptr() as usize;
            }
        }
        "probe_segregated_size_class" => {
            for _ in 0..calls {
                sum ^= (probes.probe_segregated_size_class)(black_box(SIZE));
            }
        }
        "probe_segregated_alloc" => {
            let a = SegregatedFit::new();
            let layout = Layout::from_size_align(SIZE, 8).expect("layout");
            // Grow the class once and give the blocks back to its queue
            // (a growth links blocks onto the queue only as they are
            // needed), and give each measured block back there too, so
            // every measured pop finds several blocks queued.
            let warm: Vec<NonNull<u8>> = (0..8)
                .map(|_| a.alloc_shared(layout).expect("alloc"))
                .collect();
            for p in warm {
                // SAFETY: allocated above with `layout`, freed once.
                unsafe { a.dealloc_shared(p, layout) };
            }
            for _ in 0..calls {
                let p = nonnull((probes.probe_segregated_alloc)(&a, black_box(SIZE)), probe);
                sum ^= p.as_ptr() as usize;
                // SAFETY: allocated just above with `layout`, freed once.
                unsafe { a.dealloc_shared(p, layout) };
            }
        }
        "probe_segregated_dealloc" => {
            let a = SegregatedFit::new();
            let layout = Layout::from_size_align(SIZE, 8).expect("layout");
            let warm: Vec<NonNull<u8>> = (0..8).map(|_| a.alloc(layout).expect("alloc")).collect();
            // Keep one of them live and the rest queued: the queue is never
            // empty when the probe pushes.
            for &p in &warm[1..] {
                // SAFETY: allocated above with `layout`, freed once.
                unsafe { a.dealloc(p, layout) };
            }
            for _ in 0..calls {
                let p = a.alloc(layout).expect("alloc");
                // SAFETY: `p` was allocated by `a` with `SIZE` and alignment
                // 8, freed once here, not used afterwards.
                unsafe { (probes.probe_segregated_dealloc)(&a, black_box(p.as_ptr()), SIZE) };
                sum += 1;
            }
            sum ^= warm[0].as_ptr() as usize;
        }
        "probe_segregated_cached_alloc" => {
            let a = probes.cached_heap();
            // Fill this thread's cache for the class: each measured call is a
            // cache hit, then the block goes straight back to the cache.
            let warm: Vec<*mut u8> = (0..8)
                .map(|_| nonnull((probes.segregated_alloc)(&a, SIZE), probe).as_ptr())
                .collect();
            for p in warm {
                // SAFETY: allocated above with `SIZE`, align 8, freed once.
                unsafe { (probes.segregated_dealloc)(&a, p, SIZE) };
            }
            for _ in 0..calls {
                let p = nonnull(
                    (probes.probe_segregated_cached_alloc)(&a, black_box(SIZE)),
                    probe,
                );
                sum ^= p.as_ptr() as usize;
                // SAFETY: allocated just above with `SIZE`, freed once.
                unsafe { (probes.segregated_dealloc)(&a, p.as_ptr(), SIZE) };
            }
        }
        "probe_segregated_cached_dealloc" => {
            let a = probes.cached_heap();
            // One block stays live; the cache has room for each free.
            let pin = nonnull((probes.segregated_alloc)(&a, SIZE), probe);
            for _ in 0..calls {
                let p = nonnull((probes.segregated_alloc)(&a, SIZE), probe);
                // SAFETY: `p` was allocated by `a` with `SIZE` and alignment
                // 8, freed once here, not used afterwards.
                unsafe {
                    (probes.probe_segregated_cached_dealloc)(&a, black_box(p.as_ptr()), SIZE)
                };
                sum += 1;
            }
            sum ^= pin.as_ptr() as usize;
        }
        "probe_rewindable_alloc" => {
            let r = Rewindable::new(bytes, bytes).expect("rewindable");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_rewindable_alloc)(&r, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        "probe_temp_alloc" => {
            let job = TempJob::new(4096).expect("temp job").on_leak(|_| {});
            let t = Temp::new(bytes, &job).expect("temp");
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_temp_alloc)(&t, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        "probe_tempjob_alloc" => {
            // The blocks stay live to the end: no leak report for them.
            let j = TempJob::new(bytes).expect("temp job").on_leak(|_| {});
            for _ in 0..calls {
                sum ^= nonnull((probes.probe_tempjob_alloc)(&j, black_box(SIZE)), probe).as_ptr()
                    as usize;
            }
        }
        _ => usage(),
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_else(|| usage());
    // Where the executable was loaded: the tracer maps the symbol table's
    // addresses to the run's with it.
    let probes = match std::env::var(DYLIB_ENV) {
        #[cfg(unix)]
        Ok(path) => Probes::load(&path),
        #[cfg(not(unix))]
        Ok(_) => panic!("{DYLIB_ENV}: shared-library probes need dlopen (Unix)"),
        Err(_) => Probes::linked(),
    };
    println!(
        "base probe_linear_alloc {:#x}",
        probes.probe_linear_alloc as *const () as usize
    );
    // And where the dynamic loader is (its `__tls_get_addr` is called
    // through the PLT on some targets): qemu-user emulates the maps file.
    if let Ok(maps) = std::fs::read_to_string("/proc/self/maps")
        && let Some(line) = maps.lines().find(|l| l.contains("/ld-linux"))
        && let (Some(range), Some(path)) = (
            line.split_whitespace().next(),
            line.split_whitespace().last(),
        )
        && let Some((start, _)) = range.split_once('-')
    {
        println!("interp 0x{start} {path}");
    }
    match arg(0) {
        "list" => {
            DRIVEN.iter().for_each(|p| println!("{p}"));
            return;
        }
        "base" => return,
        _ => {}
    }
    let calls: usize = arg(1).parse().unwrap_or_else(|_| usage());
    let names: Vec<&str> = if arg(0) == "all" {
        DRIVEN.to_vec()
    } else {
        vec![arg(0)]
    };
    let mut sum = 0usize;
    for p in names {
        sum ^= black_box(drive(&probes, p, calls));
    }
    println!("probe_driver checksum {sum:x}");
}
