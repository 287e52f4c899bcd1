//! Placeholder: replaced by its implementation.
#[allow(missing_docs)]
pub struct Persistent;
#[allow(missing_docs)]
pub struct Rewindable;
#[allow(missing_docs)]
pub struct Temp;
#[allow(missing_docs)]
pub struct TempJob;
