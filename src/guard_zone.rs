//! Placeholder: replaced by its implementation.
#[allow(missing_docs)]
pub struct GuardSide;
#[allow(missing_docs)]
pub struct GuardZone;
