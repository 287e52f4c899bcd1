//! Probes for the chapter allocators (filled in by their owners).
