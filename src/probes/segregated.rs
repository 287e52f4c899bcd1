//! Probes for the segregated allocators (filled in by their owners).
