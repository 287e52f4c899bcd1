//! The codegen suite (placeholder).
