//! Placeholder: replaced by its implementation.
#[allow(missing_docs)]
pub struct ThreadCursorArena;
