//! Probes for the unity allocators (filled in by their owners).
