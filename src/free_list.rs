//! Placeholder: replaced by its implementation.
#[allow(missing_docs)] pub struct FitPolicy;
#[allow(missing_docs)] pub struct FreeList;
#[allow(missing_docs)] pub struct FreeListStats;
