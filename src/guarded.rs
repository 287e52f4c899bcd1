//! Placeholder: replaced by its implementation.
#[allow(missing_docs)] pub struct GuardViolation;
#[allow(missing_docs)] pub struct Guarded;
