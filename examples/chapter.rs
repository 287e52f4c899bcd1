//! Replays the chapter's programs with this crate's allocators and prints the
//! chapter's traces. Every number is measured from a real allocator; the guard
//! check and the double-free report come from the allocators' own checks.
//!
//! Run with `cargo run --example chapter`.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocasm::{
    AllocError, FitPolicy, FrameAllocator, FreeList, Guarded, LinearArena, MemoryTag,
    MemoryTracker, Pool, RawAllocator, StackAllocator, Tracked, align_up,
};

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn main() -> Result<(), AllocError> {
    // 3. Alignment.
    println!("1001 aligned to 4 -> {}", align_up(1001, 4));
    println!("1001 aligned to 16 -> {}", align_up(1001, 16));

    // 4. The linear arena (owned buffer: 16-aligned, like malloc's).
    let mut arena = LinearArena::new(256)?;
    let a = arena.alloc(40, 8)?;
    let b = arena.alloc(30, 8)?;
    let c = arena.alloc(60, 8)?;
    let offset =
        |arena: &LinearArena<'_>, p: NonNull<u8>| arena.offset_of(p).expect("inside the arena");
    println!("a offset = {}", offset(&arena, a));
    println!("b offset = {}", offset(&arena, b));
    println!("c offset = {}", offset(&arena, c));
    arena.reset();
    let d = arena.alloc(10, 8)?;
    println!("d offset after reset = {}", offset(&arena, d));

    // 5. The stack allocator with a marker.
    let mut stack = StackAllocator::new(256)?;
    let _level_data = stack.alloc(64, 8)?;
    let frame_mark = stack.marker();
    let _path_buffer = stack.alloc(48, 8)?;
    println!("offset with path_buffer alive: {}", stack.marker().offset());
    stack.free_to_marker(frame_mark)?;
    println!("offset after free_to_marker: {}", stack.marker().offset());
    let next_frame_buffer = stack.alloc(20, 8)?;
    println!(
        "next_frame_buffer offset: {}",
        stack
            .offset_of(next_frame_buffer)
            .expect("inside the stack")
    );

    // 6. The pool: four 16-byte bullets.
    let bullets = Pool::new(16, 4, 4)?;
    let _b0 = bullets.alloc()?;
    let b1 = bullets.alloc()?;
    let _b2 = bullets.alloc()?;
    println!("allocated 3 of {} slots", bullets.capacity());
    // SAFETY: b1 is a live slot of `bullets` and is not used again.
    unsafe { bullets.free_checked(b1)? };
    println!("freed the middle slot (b1)");
    let b3 = bullets.alloc()?;
    println!("b3 == b1? {}", yes_no(b3 == b1));
    let _b4 = bullets.alloc()?;
    let b5 = bullets.alloc();
    println!(
        "b5 is none? {}",
        yes_no(matches!(b5, Err(AllocError::OutOfMemory { .. })))
    );

    // 7. The free list, briefly: split, then coalesce back into one block.
    let heap = FreeList::new(1024, FitPolicy::FirstFit)?;
    let x = heap.alloc(100, 8)?;
    let y = heap.alloc(200, 8)?;
    println!("free list while two blocks are live: {:?}", heap.stats());
    // SAFETY: x and y are live blocks of `heap`, not used again.
    unsafe {
        heap.free(x)?;
        heap.free(y)?;
    }
    println!("free list after freeing both: {:?}", heap.stats());

    // 8. Double buffering.
    let mut frames = FrameAllocator::<2>::new(1024)?;
    for frame in 0..4 {
        frames.begin_frame();
        let transforms = frames.alloc(64, 8)?;
        let buffer = (0..2)
            .find(|&i| {
                frames
                    .buffer(i)
                    .is_some_and(|arena| arena.contains(transforms))
            })
            .expect("the allocation is in one of the buffers");
        println!("frame {frame} writes into buffer {buffer}");
    }

    // 9. Tracking per subsystem: each subsystem's allocator books its bytes.
    let tracker = MemoryTracker::new();
    let physics = Tracked::new(Pool::new(64, 16, 64)?, &tracker, MemoryTag::Physics);
    for _ in 0..64 {
        physics.allocate(Layout::from_size_align(64, 16).expect("valid layout"))?; // 64 rigid bodies
    }
    let audio = Tracked::new(
        FreeList::new(128 * 1024, FitPolicy::BestFit)?,
        &tracker,
        MemoryTag::Audio,
    );
    audio.allocate(Layout::from_size_align(65536, 16).expect("valid layout"))?; // decoded music
    let mut rendering = Tracked::new(
        FrameAllocator::<2>::new(2 << 20)?,
        &tracker,
        MemoryTag::Rendering,
    );
    rendering.reset(|f| f.begin_frame());
    rendering.allocate(Layout::from_size_align(1 << 20, 16).expect("valid layout"))?; // this frame's arena
    let ai = Tracked::new(StackAllocator::new(4096)?, &tracker, MemoryTag::AI);
    ai.allocate(Layout::from_size_align(2048, 8).expect("valid layout"))?; // pathfinding scratch
    for line in tracker
        .report()
        .lines()
        .filter(|l| !l.starts_with("General"))
    {
        println!("{line}");
    }

    // 10. Guard bytes: three ints, then one written past the end.
    let guarded = Guarded::new(LinearArena::new(256)?);
    let health = guarded
        .allocate(Layout::array::<i32>(3).expect("valid layout"))?
        .cast::<i32>();
    // SAFETY: three i32s were handed out at `health` (aligned to 4).
    unsafe {
        health.as_ptr().write(100);
        health.as_ptr().add(1).write(80);
        health.as_ptr().add(2).write(50);
    }
    println!(
        "guards OK before overrun? {}",
        yes_no(guarded.check(health.cast()).is_ok())
    );
    // SAFETY: (of the memory access, not of the program's logic) the fourth
    // element lies in the back guard, inside the arena's buffer. This is the
    // chapter's bug, done on purpose so the guard check can catch it.
    unsafe { health.as_ptr().add(3).write_unaligned(999) };
    let after = guarded.check(health.cast());
    println!("guards OK after overrun? {}", yes_no(after.is_ok()));
    if let Err(violation) = after {
        println!("  {violation}");
    }

    // 13. The exercise's double free, caught by the pool's own check.
    let bullets = Pool::new(16, 4, 4)?;
    let a = bullets.alloc()?;
    let _b = bullets.alloc()?;
    // SAFETY: `a` is a live slot of `bullets`.
    unsafe { bullets.free_checked(a)? };
    // SAFETY: the pool refuses the second free before touching its list.
    match unsafe { bullets.free_checked(a) } {
        Err(AllocError::DoubleFree) => println!("double free detected"),
        other => println!("double free NOT detected: {other:?}"),
    }
    println!(
        "free slots after the refused double free: {} of {}",
        bullets.free_count(),
        bullets.capacity()
    );
    Ok(())
}
