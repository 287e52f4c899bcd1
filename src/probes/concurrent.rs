//! Probes for the concurrent allocators (filled in by their owners).
