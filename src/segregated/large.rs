//! The large path of [`SegregatedFit`](super::SegregatedFit): requests no
//! size class serves (above 64 KiB, or aligned above 4096).
//!
//! **Contract.** Each large block is its own mapping, made with one system
//! call (reserve and commit together: `mmap` read-write, or
//! `VirtualAlloc(MEM_RESERVE | MEM_COMMIT)`) and given back with one
//! (`munmap` / `VirtualFree`) when the cache (below) does not keep it. Its length is rounded to the base
//! allocator's granularity (the page, or 64 KiB on Windows), and the slack
//! is the block's room to grow in place. Live large blocks are kept in a
//! list under a spin lock (one per allocator, never allocating; it guards
//! four pointer writes, never a system call) so that dropping the allocator
//! releases them too, and so that debug builds can tell a foreign pointer
//! or a double free from a real large block.
//!
//! **Layout.** The block starts at the mapping's first byte, page-aligned
//! (for alignments above the granularity, at the first multiple of the
//! alignment, the mapping being that much longer). The 32-byte
//! [`LargeHeader`] sits at the block's *tail*, at `block + round8(size)`:
//! sized deallocation gives the size back, so the header is found from
//! `(block, size)`, and the block itself stays page-aligned.
//!
//! **Growth in place.** `realloc` to a size that still fits the mapping
//! moves the header and returns the same block; past the mapping, Linux
//! `mremap`s it (the kernel moves page tables, not bytes) with geometric
//! slack: the mapping at least doubles, by at most [`GROW_SLACK_MAX`] past
//! the need, so a block grown a little at a time is remapped O(log n) times
//! (the slack is address space, not resident until written); elsewhere the
//! caller copies. Fresh mappings read as zero, so `alloc_zeroed` writes
//! nothing on them. A shrink that leaves 64 KiB or more of the mapping unused
//! unmaps that tail (Unix; Windows keeps it, as a reservation is released
//! whole), and `stats` counts the shorter mapping; a growth keeps the whole
//! mapping.
//!
//! **Reuse.** A freed mapping is kept, not unmapped, in a small cache (at
//! most [`CACHE_SLOTS`] mappings and a quarter of the live large bytes,
//! clamped to 8..64 MiB; the oldest go back to the OS first), and an
//! allocation takes the shortest cached mapping that fits it with at most a
//! quarter more than it needs. Failing that, on Unix, it takes the head of
//! the shortest longer one, whose tail stays cached: its pages are resident,
//! where a fresh mapping faults every page in again. A cached mapping is
//! not live: `contains`, `containing` and a free of it treat it as no block
//! of ours. A reused
//! mapping holds the previous block's bytes, so `alloc_zeroed` clears the
//! requested size (a fresh mapping needs nothing). `trim` and drop unmap
//! the cache.
//!
//! **Costs.** 32 bytes plus rounding per block, one system call per
//! allocation and free that the cache misses, a lock around a list splice
//! and a scan of at most 64 cache slots. Failures: `TooLarge`
//! for a size above [`MAX_REQUEST`](super::SegregatedFit::MAX_REQUEST)
//! (the header and the alignment's padding are not counted), `Os` when the
//! OS refuses.

use core::alloc::Layout;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use super::lock::SpinLock;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::{AllocError, sys};

/// The header at the tail of every large block.
#[repr(C)]
#[derive(Debug)]
struct LargeHeader {
    /// The mapping's first byte.
    base: *mut u8,
    /// The mapping's length.
    len: usize,
    /// The neighbours in the list of live large blocks.
    prev: *mut LargeHeader,
    next: *mut LargeHeader,
}

const HEADER: usize = size_of::<LargeHeader>();

/// The shortest tail a shrinking `realloc` gives back to the OS: a smaller
/// one stays mapped, room for the block to grow in place again.
const SHRINK_MIN: usize = 64 << 10;

/// A growth by `mremap` lengthens the mapping by at least its own length
/// (it doubles), but by at most this (past what the request needs).
const GROW_SLACK_MAX: usize = 64 << 20;

/// How many freed mappings the cache keeps at most.
pub(crate) const CACHE_SLOTS: usize = 64;

/// The cache's byte bound: a quarter of the live large bytes, clamped to
/// these (a lone large block still gets a few MiB of reuse; a heap of
/// gigabytes keeps at most 64 MiB idle).
const CACHE_MIN_BYTES: usize = 8 << 20;
const CACHE_MAX_BYTES: usize = 64 << 20;

/// The byte bound of the cache when `live` bytes of large blocks are mapped.
fn cache_bound(live: usize) -> usize {
    (live / 4).clamp(CACHE_MIN_BYTES, CACHE_MAX_BYTES)
}

/// One cache slot: a freed mapping's start and length (under the lock).
#[derive(Debug)]
struct Cached {
    base: AtomicPtr<u8>,
    len: AtomicUsize,
}

/// Mappings taken out of the cache under the lock, unmapped after it (the
/// lock never guards a system call).
struct Evicted {
    maps: [(*mut u8, usize); CACHE_SLOTS + 1],
    n: usize,
}

impl Evicted {
    fn new() -> Self {
        Self {
            maps: [(ptr::null_mut(), 0); CACHE_SLOTS + 1],
            n: 0,
        }
    }

    fn push(&mut self, base: *mut u8, len: usize) {
        self.maps[self.n] = (base, len);
        self.n += 1;
    }

    /// Unmaps them all; returns the bytes.
    ///
    /// # Safety
    ///
    /// Each is a whole mapping of ours that nothing uses or lists.
    unsafe fn release(&self) -> usize {
        let mut bytes = 0;
        for &(base, len) in &self.maps[..self.n] {
            // SAFETY: the caller's contract; `base` is non-null (a mapping).
            let r = unsafe { sys::release(NonNull::new_unchecked(base), len) };
            debug_assert!(r.is_ok(), "release of a large mapping failed: {r:?}");
            bytes += len;
        }
        bytes
    }
}

/// Where the header of a block of `size` bytes sits, from the block.
#[inline]
fn header_offset(size: usize) -> usize {
    size.next_multiple_of(8)
}

/// The live large blocks of one allocator.
#[derive(Debug)]
pub(crate) struct LargeBlocks {
    pub(super) lock: SpinLock,
    /// The list head (under `lock`).
    head: AtomicPtr<LargeHeader>,
    /// Live large blocks and their mapped bytes (for `stats`).
    count: AtomicUsize,
    bytes: AtomicUsize,
}

/// The freed mappings of one allocator's large blocks kept for reuse,
/// under the [`LargeBlocks`]' lock. A separate field of the heap, after
/// the fields the fast paths read, so that their offsets (in the probes'
/// listings) stay as they were.
#[derive(Debug)]
pub(crate) struct LargeCache {
    /// Slots `0..cached`, oldest first, and their bytes (all zero in a
    /// fresh heap: empty).
    cache: [Cached; CACHE_SLOTS],
    cached: AtomicUsize,
    cached_bytes: AtomicUsize,
}

impl LargeCache {
    /// Takes the shortest cached mapping of at least `len` bytes and at
    /// most a quarter more, out of the cache (the caller holds the large
    /// list's lock). Where none is that short and mappings split
    /// ([`sys::SPLITS`]), the shortest longer one gives its first `len`
    /// bytes and keeps the rest in its slot: those pages are resident
    /// already, where a fresh mapping faults each page in again.
    fn take_cached_locked(&self, len: usize) -> Option<(*mut u8, usize)> {
        let n = self.cached.load(Ordering::Relaxed);
        let most = len.saturating_add(len / 4);
        let mut best: Option<(usize, usize)> = None;
        for (i, c) in self.cache[..n].iter().enumerate() {
            let l = c.len.load(Ordering::Relaxed);
            if l >= len && best.is_none_or(|(_, b)| l < b) {
                best = Some((i, l));
            }
        }
        let (i, l) = best?;
        let base = self.cache[i].base.load(Ordering::Relaxed);
        if l <= most {
            self.remove_cached_locked(i);
            return Some((base, l));
        }
        if !sys::SPLITS {
            return None;
        }
        // `len` and `l` are multiples of the granularity: the tail is a
        // whole range of pages of the mapping, released on its own later.
        self.cache[i]
            .base
            .store(base.wrapping_add(len), Ordering::Relaxed);
        self.cache[i].len.store(l - len, Ordering::Relaxed);
        self.cached_bytes.fetch_sub(len, Ordering::Relaxed);
        Some((base, len))
    }

    /// Removes slot `i` of the cache, keeping the order (under the large list's lock).
    fn remove_cached_locked(&self, i: usize) {
        let n = self.cached.load(Ordering::Relaxed);
        let len = self.cache[i].len.load(Ordering::Relaxed);
        for j in i + 1..n {
            let (b, l) = (
                self.cache[j].base.load(Ordering::Relaxed),
                self.cache[j].len.load(Ordering::Relaxed),
            );
            self.cache[j - 1].base.store(b, Ordering::Relaxed);
            self.cache[j - 1].len.store(l, Ordering::Relaxed);
        }
        self.cached.store(n - 1, Ordering::Relaxed);
        self.cached_bytes.fetch_sub(len, Ordering::Relaxed);
    }

    /// Moves the oldest cached mapping into `out` (the caller holds the large list's lock;
    /// the cache is not empty).
    fn evict_oldest_locked(&self, out: &mut Evicted) {
        out.push(
            self.cache[0].base.load(Ordering::Relaxed),
            self.cache[0].len.load(Ordering::Relaxed),
        );
        self.remove_cached_locked(0);
    }

    /// Keeps a freed mapping in the cache, evicting the oldest ones into
    /// `out` until it fits the bounds, or puts it in `out` itself when it
    /// is longer than the byte bound for `live` mapped bytes of live blocks
    /// (the caller holds the large list's lock).
    fn stash_locked(&self, base: *mut u8, len: usize, live: usize, out: &mut Evicted) {
        let bound = cache_bound(live);
        if len > bound {
            out.push(base, len);
            return;
        }
        while self.cached.load(Ordering::Relaxed) == CACHE_SLOTS
            || self.cached_bytes.load(Ordering::Relaxed) + len > bound
        {
            self.evict_oldest_locked(out);
        }
        let n = self.cached.load(Ordering::Relaxed);
        self.cache[n].base.store(base, Ordering::Relaxed);
        self.cache[n].len.store(len, Ordering::Relaxed);
        self.cached.store(n + 1, Ordering::Relaxed);
        self.cached_bytes.fetch_add(len, Ordering::Relaxed);
    }

    /// Cached (freed, kept) mappings and their bytes.
    pub(crate) fn usage(&self) -> (usize, usize) {
        (
            self.cached.load(Ordering::Relaxed),
            self.cached_bytes.load(Ordering::Relaxed),
        )
    }
}

impl LargeBlocks {
    /// How long the mapping of a block for `layout` is: the block, its
    /// header and (aligned above the granularity) the alignment's padding,
    /// rounded to the granularity.
    ///
    /// `TooLarge` only when `layout.size()` exceeds `max`: every size up to
    /// `max` is attempted (the header and the padding are the allocator's
    /// business, not counted against the limit the error names), and the
    /// OS refuses what it cannot map.
    fn extent(layout: Layout, max: usize) -> Result<usize, AllocError> {
        if layout.size() > max {
            return Err(AllocError::TooLarge {
                requested: layout.size(),
                max,
            });
        }
        let gran = sys::granularity();
        let pad = if layout.align() > gran {
            layout.align()
        } else {
            0
        };
        // Checked: on 32-bit targets `max` is `isize::MAX`, and a size near
        // it plus a large alignment's padding passes `usize::MAX`. No
        // mapping is that long: the address space is full.
        header_offset(layout.size())
            .checked_add(HEADER + pad)
            .and_then(|n| n.checked_next_multiple_of(gran))
            .ok_or(AllocError::OutOfMemory {
                requested: layout.size(),
                available: 0,
            })
    }

    /// Links a header into the list.
    ///
    /// # Safety
    ///
    /// `h` is a header slot of a live large block, not in the list.
    unsafe fn link(&self, h: *mut LargeHeader, base: *mut u8, len: usize) {
        let _guard = self.lock.lock();
        // SAFETY: forwarded; we hold the lock.
        unsafe { self.link_locked(h, base, len) }
    }

    /// [`link`](Self::link) with the lock held by the caller.
    ///
    /// # Safety
    ///
    /// As `link`; the caller holds `lock`.
    unsafe fn link_locked(&self, h: *mut LargeHeader, base: *mut u8, len: usize) {
        let head = self.head.load(Ordering::Relaxed);
        // SAFETY: the slot is ours; the old head (if any) is a live header
        // reached under the lock.
        unsafe {
            h.write(LargeHeader {
                base,
                len,
                prev: ptr::null_mut(),
                next: head,
            });
            if let Some(old) = head.as_mut() {
                old.prev = h;
            }
        }
        self.head.store(h, Ordering::Relaxed);
    }

    /// Unlinks a header from the list and returns its `(base, len)`.
    ///
    /// # Safety
    ///
    /// `h` is the header of a live large block in the list.
    unsafe fn unlink(&self, h: *mut LargeHeader) -> (*mut u8, usize) {
        let _guard = self.lock.lock();
        // SAFETY: forwarded; we hold the lock.
        unsafe { self.unlink_locked(h) }
    }

    /// [`unlink`](Self::unlink) with the lock held by the caller.
    ///
    /// # Safety
    ///
    /// As `unlink`; the caller holds `lock`.
    unsafe fn unlink_locked(&self, h: *mut LargeHeader) -> (*mut u8, usize) {
        debug_assert!(
            self.contains_locked(h),
            "SegregatedFit: foreign pointer or double free: not a live large block"
        );
        // SAFETY: the header and its neighbours are live, reached under the
        // lock.
        unsafe {
            let hh = &*h;
            match hh.prev.as_mut() {
                Some(prev) => prev.next = hh.next,
                None => self.head.store(hh.next, Ordering::Relaxed),
            }
            if let Some(next) = hh.next.as_mut() {
                next.prev = hh.prev;
            }
            (hh.base, hh.len)
        }
    }

    fn contains_locked(&self, target: *mut LargeHeader) -> bool {
        let mut h = self.head.load(Ordering::Relaxed);
        while !h.is_null() {
            if h == target {
                return true;
            }
            // SAFETY: live headers are reached under the lock the caller
            // holds.
            h = unsafe { (*h).next };
        }
        false
    }

    /// Allocates a large block for `layout`: from a cached mapping when one
    /// fits, else a fresh mapping. With `zeroed`, its `layout.size()`
    /// bytes read as zero (a fresh mapping already does).
    pub(crate) fn alloc(
        &self,
        cache: &LargeCache,
        layout: Layout,
        max: usize,
        zeroed: bool,
    ) -> Result<NonNull<u8>, AllocError> {
        let len = Self::extent(layout, max)?;
        let hoff = header_offset(layout.size());
        {
            let guard = self.lock.lock();
            if let Some((base, mlen)) = cache.take_cached_locked(len) {
                let offset = base.addr().next_multiple_of(layout.align()) - base.addr();
                // SAFETY: a cached mapping of `mlen >= len` bytes, out of
                // the cache and so ours; `offset` is under the alignment's
                // padding that `len` counts, so the block, its size and its
                // header lie inside it, 8-aligned.
                let block = unsafe { NonNull::new_unchecked(base.add(offset)) };
                // SAFETY: as above: a header slot inside the mapping, and we
                // hold the lock.
                unsafe {
                    self.link_locked(block.as_ptr().add(hoff).cast(), base, mlen);
                }
                self.count.fetch_add(1, Ordering::Relaxed);
                self.bytes.fetch_add(mlen, Ordering::Relaxed);
                drop(guard);
                if zeroed {
                    // SAFETY: the block's `size` bytes are inside the
                    // mapping, ours (linked as live, used by no one else).
                    unsafe { block.as_ptr().write_bytes(0, layout.size()) };
                }
                return Ok(block);
            }
        }
        let base = sys::map(len)?;
        let offset = base.as_ptr().addr().next_multiple_of(layout.align()) - base.as_ptr().addr();
        // SAFETY: `offset < pad`, so the block, its `size` bytes and the
        // header after them lie inside the `len` bytes mapped.
        let block = unsafe { base.add(offset) };
        // SAFETY: as above; 8-aligned (block and the offset are multiples of
        // 8), unaliased.
        let h = unsafe { block.add(hoff) }.cast::<LargeHeader>();
        // SAFETY: a fresh header slot.
        unsafe { self.link(h.as_ptr(), base.as_ptr(), len) };
        self.count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Ok(block)
    }

    /// Frees a large block: its mapping goes to the cache (unmapping what
    /// the cache's bounds push out), or straight back to the OS.
    ///
    /// # Safety
    ///
    /// `block` came from [`alloc`](Self::alloc) (or `realloc`) on this list
    /// with `size`, and is not used afterwards. Debug builds panic if it is
    /// not a live large block.
    pub(crate) unsafe fn dealloc(&self, cache: &LargeCache, block: NonNull<u8>, size: usize) {
        let h = block
            .as_ptr()
            .wrapping_add(header_offset(size))
            .cast::<LargeHeader>();
        let mut out = Evicted::new();
        {
            let _guard = self.lock.lock();
            // SAFETY: a live large block has its header there; we hold the
            // lock.
            let (base, len) = unsafe { self.unlink_locked(h) };
            self.count.fetch_sub(1, Ordering::Relaxed);
            let live = self.bytes.fetch_sub(len, Ordering::Relaxed) - len;
            cache.stash_locked(base, len, live, &mut out);
        }
        // SAFETY: mappings out of the list and the cache, unused.
        unsafe { out.release() };
    }

    /// Unmaps every cached mapping; returns their bytes.
    pub(crate) fn release_cached(&self, cache: &LargeCache) -> usize {
        let mut out = Evicted::new();
        {
            let _guard = self.lock.lock();
            while cache.cached.load(Ordering::Relaxed) > 0 {
                cache.evict_oldest_locked(&mut out);
            }
        }
        // SAFETY: mappings out of the cache, which held them unused.
        unsafe { out.release() }
    }

    /// Resizes a large block in place (within its mapping) or by remapping
    /// it (Linux); `None` when neither works (nothing changed: the caller
    /// allocates, copies and frees).
    ///
    /// # Safety
    ///
    /// `block` is a live large block of this list allocated with `layout`;
    /// `new_size` maps to the large path too and is at most `max`.
    pub(crate) unsafe fn realloc(
        &self,
        block: NonNull<u8>,
        layout: Layout,
        new_size: usize,
        max: usize,
    ) -> Option<NonNull<u8>> {
        let h = block
            .as_ptr()
            .wrapping_add(header_offset(layout.size()))
            .cast::<LargeHeader>();
        // SAFETY: the live header of this block; its base and len are
        // written only by the block's owner (us).
        let (base, len) = unsafe { ((*h).base, (*h).len) };
        let offset = block.as_ptr().addr() - base.addr();
        let fits = offset + header_offset(new_size) + HEADER <= len;
        if fits {
            // What the block needs now; past it, a shrink gives a tail of at
            // least `SHRINK_MIN` back to the OS (a smaller one stays, room to
            // grow in place). A growth keeps the whole mapping: its slack
            // is what the next growths fit in.
            let keep =
                (offset + header_offset(new_size) + HEADER).next_multiple_of(sys::granularity());
            let trim = new_size < layout.size() && len - keep >= SHRINK_MIN;
            if !trim && header_offset(new_size) == header_offset(layout.size()) {
                return Some(block);
            }
            let nh = block
                .as_ptr()
                .wrapping_add(header_offset(new_size))
                .cast::<LargeHeader>();
            if !trim {
                // The header moves inside the mapping: one lock round, no
                // system call.
                let _guard = self.lock.lock();
                // SAFETY: ours; the new slot lies inside the mapping
                // (`fits`); the old header is unlinked before the new one
                // is written (they may overlap); we hold the lock.
                unsafe {
                    let (base, len) = self.unlink_locked(h);
                    self.link_locked(nh, base, len);
                }
                return Some(block);
            }
            // SAFETY: ours; the new slot lies inside the first `keep` bytes
            // of the mapping, which the shrink keeps. The old header is read
            // (unlinked) before the tail goes.
            unsafe {
                let (base, len) = self.unlink(h);
                let len = if sys::shrink(NonNull::new_unchecked(base), len, keep) {
                    self.bytes.fetch_sub(len - keep, Ordering::Relaxed);
                    keep
                } else {
                    len
                };
                self.link(nh, base, len);
            }
            return Some(block);
        }
        if layout.align() > sys::page_size() {
            return None;
        }
        let new_layout = Layout::from_size_align(new_size, layout.align()).ok()?;
        let need = Self::extent(new_layout, max).ok()?;
        // Geometric slack: the mapping at least doubles (by at most
        // `GROW_SLACK_MAX`), so a block grown a little at a time is remapped
        // O(log n) times, not once per growth (CPython's growing buffers made
        // 518 `mremap` calls where glibc made one). The slack is address
        // space: its pages are not touched, so not resident, until used.
        let new_len = need.max(
            len.saturating_add(len.min(GROW_SLACK_MAX))
                .next_multiple_of(sys::granularity()),
        );
        // SAFETY: unlinked while the mapping may move; relinked below either
        // way.
        unsafe { self.unlink(h) };
        let old_len = len;
        // SAFETY: `base..base+len` is exactly the block's mapping, live.
        let mut moved = unsafe { sys::remap(NonNull::new_unchecked(base), len, new_len) };
        let mut new_len = new_len;
        if moved.is_none() && new_len > need {
            // The slack was refused (address space or overcommit): the
            // bare need may still be granted.
            new_len = need;
            // SAFETY: as above: the remap failed, the mapping is unchanged.
            moved = unsafe { sys::remap(NonNull::new_unchecked(base), len, new_len) };
        }
        let (base, len, block) = match moved {
            // The block sits at the mapping's start (align <= page).
            Some(b) => (b.as_ptr(), new_len, b),
            None => (base, len, block),
        };
        let hoff = header_offset(if moved.is_some() {
            new_size
        } else {
            layout.size()
        });
        // SAFETY: the header slot lies inside the (possibly moved) mapping.
        unsafe {
            let nh = block.add(hoff).cast::<LargeHeader>();
            self.link(nh.as_ptr(), base, len);
        }
        if moved.is_some() {
            self.bytes.fetch_add(new_len, Ordering::Relaxed);
            self.bytes.fetch_sub(old_len, Ordering::Relaxed);
        }
        moved.map(|_| block)
    }

    /// The mapping of the live large block that `addr` lies in, as
    /// `(mapping start, mapping length, header address)`, or `None`: no
    /// live large block holds `addr` (O(live large blocks), under the
    /// lock; reads only this list's headers, never `addr`). 64-bit
    /// targets only, as `SegregatedFit::locate`.
    #[cfg(target_pointer_width = "64")]
    pub(crate) fn containing(&self, addr: usize) -> Option<(usize, usize, usize)> {
        let _guard = self.lock.lock();
        let mut h = self.head.load(Ordering::Relaxed);
        while !h.is_null() {
            // SAFETY: live headers are reached under the lock we hold.
            let hh = unsafe { &*h };
            let start = hh.base.addr();
            if addr.wrapping_sub(start) < hh.len {
                return Some((start, hh.len, h.addr()));
            }
            h = hh.next;
        }
        None
    }

    /// Whether `block` (of `size` bytes) is a live large block (O(live large
    /// blocks)).
    pub(crate) fn contains(&self, block: NonNull<u8>, size: usize) -> bool {
        let _guard = self.lock.lock();
        self.contains_locked(
            block
                .as_ptr()
                .wrapping_add(header_offset(size))
                .cast::<LargeHeader>(),
        )
    }

    /// Live large blocks and their mapped bytes.
    pub(crate) fn usage(&self) -> (usize, usize) {
        (
            self.count.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Unmaps every live large block and the cache.
    ///
    /// # Safety
    ///
    /// None of them is used afterwards.
    pub(crate) unsafe fn release_all(&self, cache: &LargeCache) {
        self.release_cached(cache);
        let _guard = self.lock.lock();
        let mut h = self.head.swap(ptr::null_mut(), Ordering::Relaxed);
        while !h.is_null() {
            // SAFETY: a live header, read before its mapping goes away.
            let (base, len, next) = unsafe { ((*h).base, (*h).len, (*h).next) };
            // SAFETY: the mapping `alloc` made; the caller guarantees nothing
            // uses it.
            unsafe {
                let _ = sys::release(NonNull::new_unchecked(base), len);
            }
            h = next;
        }
    }
}

#[cfg(all(test, unix, not(miri)))]
mod tests {
    use super::{CACHE_MIN_BYTES, CACHE_SLOTS};
    use crate::SegregatedFit;
    use core::alloc::Layout;

    fn l(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    /// A freed large block's mapping serves the next request that fits it:
    /// same address, no new mapping, and it is out of the cache meanwhile.
    #[test]
    fn a_freed_mapping_is_reused() {
        let a = SegregatedFit::new();
        let p = a.alloc(l(200_000)).unwrap();
        // SAFETY: ours, 200,000 bytes, freed once with its layout.
        unsafe {
            p.as_ptr().write_bytes(0xab, 200_000);
            a.dealloc(p, l(200_000));
        }
        let s = a.stats();
        assert_eq!((s.large_blocks, s.large_bytes), (0, 0));
        assert_eq!(s.large_cached, 1);
        assert!(s.large_cached_bytes >= 200_000);
        assert!(!a.owns(p, l(200_000)), "a cached mapping is not live");
        // A request within a quarter of the mapping takes it.
        let q = a.alloc(l(190_000)).unwrap();
        assert_eq!(q, p);
        let s = a.stats();
        assert_eq!(
            (s.large_blocks, s.large_cached, s.large_cached_bytes),
            (1, 0, 0)
        );
        assert!(a.owns(q, l(190_000)));
        // SAFETY: ours, freed once.
        unsafe { a.dealloc(q, l(190_000)) };
    }

    /// A large block grown a little at a time by `realloc` is remapped with
    /// geometric slack: the first growth past its mapping at least doubles
    /// it, and the next growths fit in place (same block, same mapping). Before,
    /// each growth past the page remapped to the bare need: CPython's
    /// growing buffers made 518 `mremap` calls where glibc made one.
    #[test]
    fn a_growing_block_is_remapped_with_slack() {
        use core::alloc::GlobalAlloc;
        let a = SegregatedFit::new();
        let n = 100_000;
        // SAFETY: non-zero sizes; each pointer is used within its size and
        // freed with its layout.
        unsafe {
            let p = GlobalAlloc::alloc(&a, l(n));
            assert!(!p.is_null());
            p.write_bytes(0x3c, n);
            let first = a.stats().large_bytes;
            let mut q = GlobalAlloc::realloc(&a, p, l(n), n + 8192);
            assert!(!q.is_null());
            let grown = a.stats().large_bytes;
            assert!(grown >= 2 * first, "{grown} after {first}: no slack");
            let mut size = n + 8192;
            while size + 8192 + 64 <= grown {
                let r = GlobalAlloc::realloc(&a, q, l(size), size + 8192);
                assert_eq!(r, q, "a growth within the slack stays in place");
                assert_eq!(a.stats().large_bytes, grown, "and keeps the mapping");
                size += 8192;
                q = r;
            }
            let bytes = core::slice::from_raw_parts(q, n);
            assert!(bytes.iter().all(|&b| b == 0x3c), "contents survive");
            q.add(size - 1).write(1);
            GlobalAlloc::dealloc(&a, q, l(size));
        }
    }

    /// A request shorter than every cached mapping by more than a quarter
    /// takes the head of the shortest one, and the rest stays cached for
    /// the next: three blocks out of one freed mapping, no new mapping.
    /// Before, each was a fresh mapping whose pages faulted in again
    /// (CPython's `test_pickle`: 90,019 page faults against glibc's 49,633).
    #[test]
    fn a_longer_cached_mapping_is_split() {
        let a = SegregatedFit::new();
        let big = 1 << 20;
        let p = a.alloc(l(big)).unwrap();
        // SAFETY: ours, `big` bytes, freed once.
        unsafe {
            p.as_ptr().write_bytes(0x5a, big);
            a.dealloc(p, l(big));
        }
        let cached = a.stats().large_cached_bytes;
        let n = 200_000;
        let qs: Vec<_> = (0..3).map(|_| a.alloc(l(n)).unwrap()).collect();
        let s = a.stats();
        assert_eq!(qs[0], p, "the head of the freed mapping");
        assert_eq!(s.large_blocks, 3);
        assert_eq!(s.large_cached, 1, "one tail left");
        assert_eq!(
            s.large_cached_bytes + s.large_bytes,
            cached,
            "no new mapping"
        );
        for w in qs.windows(2) {
            assert_eq!(
                w[1].as_ptr().addr() - w[0].as_ptr().addr(),
                s.large_bytes / 3
            );
        }
        for &q in &qs {
            // SAFETY: ours, `n` bytes; freed once with its layout.
            unsafe {
                q.as_ptr().write_bytes(0x11, n);
                a.dealloc(q, l(n));
            }
        }
        let s = a.stats();
        assert_eq!((s.large_blocks, s.large_cached), (0, 4));
        assert_eq!(s.large_cached_bytes, cached);
        assert_eq!(a.trim(), cached, "each piece is released on its own");
    }

    /// `alloc_zeroed` on a reused (dirty) mapping clears it.
    #[test]
    fn a_reused_mapping_is_zeroed_for_alloc_zeroed() {
        let a = SegregatedFit::new();
        let n = 300_000;
        let p = a.alloc(l(n)).unwrap();
        // SAFETY: ours, `n` bytes, freed once.
        unsafe {
            p.as_ptr().write_bytes(0xcd, n);
            a.dealloc(p, l(n));
        }
        let q = a.alloc_zeroed(l(n)).unwrap();
        assert_eq!(q, p, "reused");
        // SAFETY: `n` bytes of ours.
        let bytes = unsafe { core::slice::from_raw_parts(q.as_ptr(), n) };
        assert!(bytes.iter().all(|&b| b == 0));
        // SAFETY: ours, freed once.
        unsafe { a.dealloc(q, l(n)) };
    }

    /// The cache holds at most `CACHE_SLOTS` mappings and its byte bound,
    /// never a mapping longer than that bound, serves a request far smaller
    /// than a mapping from the mapping's head, and `trim` empties it.
    #[test]
    fn the_cache_is_bounded_and_trimmed() {
        let a = SegregatedFit::new();
        let ps: Vec<_> = (0..CACHE_SLOTS + 4)
            .map(|_| a.alloc(l(100_000)).unwrap())
            .collect();
        for &p in &ps {
            // SAFETY: ours, freed once.
            unsafe { a.dealloc(p, l(100_000)) };
        }
        let s = a.stats();
        assert_eq!(s.large_cached, CACHE_SLOTS);
        // The byte bound: mappings of 4 MiB, at most two fit 8 MiB.
        let big = 4 << 20;
        let bs: Vec<_> = (0..3).map(|_| a.alloc(l(big)).unwrap()).collect();
        for &p in &bs {
            // SAFETY: ours, freed once.
            unsafe { a.dealloc(p, l(big)) };
        }
        let s = a.stats();
        assert!(s.large_cached_bytes <= CACHE_MIN_BYTES, "{s:?}");
        assert!(s.large_cached <= CACHE_SLOTS);
        // Longer than the bound: straight back to the OS.
        let huge = a.alloc(l(CACHE_MIN_BYTES + 1)).unwrap();
        let before = a.stats().large_cached_bytes;
        // SAFETY: ours, freed once.
        unsafe { a.dealloc(huge, l(CACHE_MIN_BYTES + 1)) };
        assert_eq!(a.stats().large_cached_bytes, before);
        // A 4 MiB mapping serves a 70 KB request with its head; its tail
        // stays cached (Unix splits mappings), so nothing is held idle
        // behind the small block.
        let s = a.stats();
        let small = a.alloc(l(70_000)).unwrap();
        assert!(bs.contains(&small), "the head of a cached mapping");
        let t = a.stats();
        assert_eq!(t.large_cached, s.large_cached, "the tail keeps its slot");
        assert_eq!(s.large_cached_bytes - t.large_cached_bytes, t.large_bytes);
        assert!(t.large_bytes < 80_000, "{t:?}: only the head is live");
        // SAFETY: ours, freed once.
        unsafe { a.dealloc(small, l(70_000)) };
        let cached = a.stats().large_cached_bytes;
        assert!(a.trim() >= cached);
        let s = a.stats();
        assert_eq!((s.large_cached, s.large_cached_bytes), (0, 0));
    }
}
