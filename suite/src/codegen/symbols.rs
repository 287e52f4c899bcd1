//! Spelling differences between the legacy and v0 demanglers that are not
//! codegen: v0 writes an inherent method's path as `<Type>::method` where
//! legacy writes `Type::method` (`<allocasm::packed::PackedArena>::alloc_slow`
//! vs `allocasm::packed::PackedArena::alloc_slow`, seen in the real
//! 1.95.0 → nightly diff). Trait paths (`<T as Trait>::f`) are spelled the
//! same by both and left alone.
//!
//! Added for `allocasm diff` (the CLI); called from
//! [`super::normalize::demangle_symbol`].

/// `<Type>::` → `Type::` wherever the brackets open a qualified path (at the
/// start, or after a character that cannot end a path segment) and hold no
/// ` as `; generic arguments (`Vec<T>::new`) and turbofish (`f::<T>`) are
/// untouched.
pub fn unwrap_inherent_impl_paths(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = bytes[i];
        let opens_path = c == b'<'
            && (i == 0 || {
                let prev = bytes[i - 1];
                !(prev.is_ascii_alphanumeric() || prev == b'_' || prev == b':' || prev == b'>')
            });
        if opens_path && let Some(close) = matching_close(s, i) {
            let inner = &s[i + 1..close];
            if s[close + 1..].starts_with("::") && !inner.contains(" as ") {
                out.push_str(&unwrap_inherent_impl_paths(inner));
                i = close + 1;
                continue;
            }
        }
        let ch = s[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The index of the `>` that closes the `<` at `open`.
pub(super) fn matching_close(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s[open..].char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::unwrap_inherent_impl_paths as unwrap;

    #[test]
    fn inherent_paths_lose_their_brackets() {
        assert_eq!(
            unwrap("<allocasm::packed::PackedArena>::alloc_slow"),
            "allocasm::packed::PackedArena::alloc_slow"
        );
        assert_eq!(unwrap("bl <a::B>::f"), "bl a::B::f");
        assert_eq!(unwrap("call <a::B<u8>>::f@PLT"), "call a::B<u8>::f@PLT");
        assert_eq!(
            unwrap("[rip + <a::B>::f@GOTPCREL]"),
            "[rip + a::B::f@GOTPCREL]"
        );
    }

    #[test]
    fn trait_paths_generics_and_turbofish_stay() {
        for s in [
            "<a::B as core::fmt::Debug>::fmt",
            "alloc::vec::Vec<T>::new",
            "core::ptr::drop_in_place::<a::B>",
            "a < b",
        ] {
            assert_eq!(unwrap(s), s);
        }
    }
}
