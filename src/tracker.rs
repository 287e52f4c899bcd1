//! Placeholder: replaced by its implementation.
#[allow(missing_docs)] pub struct MemoryTag;
#[allow(missing_docs)] pub struct MemoryTracker;
#[allow(missing_docs)] pub struct Tracked;
