//! Probes for the write-up's concurrent allocators: each exports exactly one
//! fast path of [`PackedArena`] or [`ThreadCursorArena`].

use core::ptr::NonNull;

use crate::{LocalCursor, PackedArena, ThreadCursorArena};

/// [`PackedArena::alloc_relaxed`]: the write-up's relaxed `fetch_add`
/// (`ldadd` with LSE), decode, fit check. The fast path returns in
/// registers; refusals come back as null.
///
/// # Safety
///
/// As for [`PackedArena::alloc_relaxed`]: the caller orders the previous
/// users of a recycled block before its own accesses.
#[inline(never)]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn probe_packed_alloc_relaxed(
    arena: &PackedArena,
    size: usize,
) -> *mut u8 {
    // SAFETY: forwarded to the caller.
    match unsafe { arena.alloc_relaxed(size) } {
        Ok(p) => p.as_ptr(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// [`PackedArena::alloc`], the safe entry point: the same fast path with an
/// `Acquire` add (`ldadda` with LSE).
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn probe_packed_alloc_acquire(arena: &PackedArena, size: usize) -> *mut u8 {
    match arena.alloc(size) {
        Ok(p) => p.as_ptr(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// [`PackedArena::alloc_seqcst`]: the same fast path with a `SeqCst` add
/// (`ldaddal` with LSE).
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn probe_packed_alloc_seqcst(arena: &PackedArena, size: usize) -> *mut u8 {
    match arena.alloc_seqcst(size) {
        Ok(p) => p.as_ptr(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// [`PackedArena::dealloc`]: one release `fetch_sub` on the block's counter.
///
/// # Safety
///
/// As for [`PackedArena::dealloc`]; `ptr` is non-null.
#[inline(never)]
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn probe_packed_dealloc(
    arena: &PackedArena,
    ptr: *mut u8,
    size: usize,
) {
    // SAFETY: the caller guarantees `ptr` is a live, non-null allocation of
    // `size` bytes from `arena`.
    unsafe { arena.dealloc(NonNull::new_unchecked(ptr), size) }
}

/// [`LocalCursor::alloc`]: the thread's cursor held by the caller, a
/// compare against the room left and an add; the refill is a cold call.
#[inline(never)]
#[unsafe(no_mangle)]
#[allow(improper_ctypes_definitions)]
pub extern "C-unwind" fn probe_thread_cursor_local_alloc(
    cursor: &mut LocalCursor<'_>,
    size: usize,
) -> *mut u8 {
    match cursor.alloc(size) {
        Ok(p) => p.as_ptr(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// [`ThreadCursorArena::alloc`]: one thread-local access, a compare, an add.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn probe_thread_cursor_alloc(
    arena: &ThreadCursorArena,
    size: usize,
) -> *mut u8 {
    match arena.alloc(size) {
        Ok(p) => p.as_ptr(),
        Err(_) => core::ptr::null_mut(),
    }
}
