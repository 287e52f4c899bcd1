//! Placeholder: replaced by its implementation.
#[allow(missing_docs)] pub struct Marker;
#[allow(missing_docs)] pub struct StackAllocator;
