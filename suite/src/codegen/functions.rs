//! Every function of a build, found by a part of its demangled path: what
//! `allocasm show` and `list --functions` use for functions that are not
//! probes (a slow path, a dependency's generic instance), and what
//! `--follow` ([`super::follow`]) resolves callees with.
//!
//! A [`FunctionIndex`] holds each function of a profile's `.s` files once
//! (aliases included) with two spellings of its name: its *path* as the
//! demangler prints it without the hash, generic arguments kept (v0
//! symbols spell concrete type arguments; legacy ones do not, so two
//! instances of one generic may print alike and are told apart by their
//! hash), and its *name* as listings print callees ([`demangle_symbol`]:
//! turbofish dropped, `<Type>::f` spelled `Type::f`). [`FunctionIndex::find`]
//! matches a query against both; `query#N` picks the N-th of several
//! matches.

use std::collections::{BTreeMap, BTreeSet};

use super::listing::Listing;
use super::normalize::{demangle_symbol, normalize};
use super::parse::{Assembly, Function, parse_asm};
use super::profile::Profile;
use super::{AsmOutput, symbols};

/// One function of a build.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its symbol as the `.s` defines it (Mach-O's `_` stripped).
    pub symbol: String,
    /// The demangled path without the hash, generic arguments kept
    /// (`<alloc::collections::btree::map::BTreeMap<u64, u64>>::insert` for
    /// v0, `alloc::collections::btree::map::BTreeMap<K,V,A>::insert` for
    /// legacy symbols); the symbol itself when it is not a Rust one.
    pub path: String,
    /// The name listings give it as a callee ([`demangle_symbol`]).
    pub name: String,
    /// The hash of a legacy symbol (`h0123abcd…`), which tells instances
    /// of one generic apart when their paths print alike.
    pub hash: Option<String>,
    /// Its code as the `.s` wrote it, named by [`Entry::name`].
    pub raw: Function,
    /// Placed in a cold section (`.text.unlikely.*`).
    pub cold: bool,
}

impl Entry {
    /// The normalized listing on `profile`'s architecture.
    pub fn listing(&self, profile: &Profile) -> Listing {
        normalize(&self.raw, &profile.arch())
    }

    /// The path, and the hash when another function prints the same path.
    pub fn display(&self, ambiguous: bool) -> String {
        match (&self.hash, ambiguous) {
            (Some(h), true) => format!("{} [{h}]", self.path),
            _ => self.path.clone(),
        }
    }
}

/// Every function of one build.
#[derive(Debug, Clone, Default)]
pub struct FunctionIndex {
    /// The functions, ordered by path then symbol.
    pub entries: Vec<Entry>,
    /// Entry indices by [`Entry::name`] (several for generic instances).
    by_name: BTreeMap<String, Vec<usize>>,
    /// Entry index by symbol.
    by_symbol: BTreeMap<String, usize>,
}

/// The outcome of [`FunctionIndex::find`].
#[derive(Debug)]
pub enum Found<'a> {
    /// Exactly one function.
    One(&'a Entry),
    /// Several: numbered 1.. in this order for `query#N`.
    Many(Vec<&'a Entry>),
    /// None.
    None,
}

/// The path a symbol demangles to without its hash (generic arguments
/// kept, `<Type>::f` spelled `Type::f` as listings do), and the legacy hash.
pub fn demangled_path(symbol: &str) -> (String, Option<String>) {
    let Ok(d) = rustc_demangle::try_demangle(symbol) else {
        return (symbol.to_string(), None);
    };
    let path = super::normalize::unify_disambiguators(&format!("{d:#}"));
    let path = symbols::unwrap_inherent_impl_paths(&path);
    let full = d.to_string();
    let hash = full
        .rsplit("::")
        .next()
        .filter(|h| {
            h.len() == 17 && h.starts_with('h') && h[1..].chars().all(|c| c.is_ascii_hexdigit())
        })
        .map(str::to_string);
    (path, hash)
}

impl FunctionIndex {
    /// Parses every `.s` of a build.
    pub fn new(profile: &Profile, asm: &AsmOutput) -> FunctionIndex {
        let format = profile.object_format();
        let assemblies: Vec<Assembly> = asm
            .files
            .iter()
            .map(|f| parse_asm(&f.text, format))
            .collect();
        FunctionIndex::from_assemblies(&assemblies)
    }

    /// The index of already parsed `.s` files.
    pub fn from_assemblies(assemblies: &[Assembly]) -> FunctionIndex {
        let mut seen = BTreeSet::new();
        let mut entries = Vec::new();
        for a in assemblies {
            let symbols = a
                .functions
                .iter()
                .map(|f| f.name.as_str())
                .chain(a.aliases.keys().map(String::as_str));
            for symbol in symbols {
                if !seen.insert(symbol.to_string()) {
                    continue;
                }
                let Some(f) = a.function(symbol) else {
                    continue;
                };
                let (path, hash) = demangled_path(symbol);
                let name = if symbol.starts_with("_ZN") || symbol.starts_with("_R") {
                    demangle_symbol(symbol)
                } else {
                    symbol.to_string()
                };
                let mut raw = f.clone();
                raw.name = name.clone();
                entries.push(Entry {
                    symbol: symbol.to_string(),
                    path,
                    name,
                    hash,
                    raw,
                    cold: a.cold.contains(symbol) || a.cold.contains(&f.name),
                });
            }
        }
        entries.sort_by(|a, b| (&a.path, &a.symbol).cmp(&(&b.path, &b.symbol)));
        let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut by_symbol = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            by_name.entry(e.name.clone()).or_default().push(i);
            by_symbol.insert(e.symbol.clone(), i);
        }
        FunctionIndex {
            entries,
            by_name,
            by_symbol,
        }
    }

    /// The functions a listing's callee name can be (several instances of
    /// one generic under legacy mangling print alike).
    pub fn by_name(&self, name: &str) -> Vec<&Entry> {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.entries[i])
            .collect()
    }

    /// The function of a symbol.
    pub fn by_symbol(&self, symbol: &str) -> Option<&Entry> {
        self.by_symbol.get(symbol).map(|&i| &self.entries[i])
    }

    /// Whether two or more functions print `path` (to show their hashes).
    pub fn path_is_shared(&self, path: &str) -> bool {
        self.entries.iter().filter(|e| e.path == path).count() > 1
    }

    /// The functions whose path or name contains `query` (every function
    /// for an empty one), in index order.
    pub fn matching(&self, query: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| {
                e.symbol == query
                    || e.path.contains(query)
                    || e.name.contains(query)
                    || e.hash.as_deref() == Some(query)
            })
            .collect()
    }

    /// The function `query` names: its symbol, a part of its path or name,
    /// or one of several matches by number (`alloc_slow#2`). A query that is
    /// the whole path or name of exactly one of several matches picks it.
    pub fn find(&self, query: &str) -> Found<'_> {
        let (text, number) = match query.rsplit_once('#') {
            Some((t, n)) if !t.is_empty() && n.parse::<usize>().is_ok() => {
                (t, n.parse::<usize>().ok())
            }
            _ => (query, None),
        };
        if let Some(e) = self.by_symbol(text) {
            return Found::One(e);
        }
        let all = self.matching(text);
        if let Some(n) = number {
            return match n.checked_sub(1).and_then(|i| all.get(i)) {
                Some(e) => Found::One(e),
                None => Found::None,
            };
        }
        match all.len() {
            0 => Found::None,
            1 => Found::One(all[0]),
            _ => {
                let exact: Vec<&Entry> = all
                    .iter()
                    .copied()
                    .filter(|e| e.path == text || e.name == text)
                    .collect();
                match exact[..] {
                    [one] => Found::One(one),
                    _ => Found::Many(all),
                }
            }
        }
    }

    /// `query` matched several functions: the numbered list and how to pick.
    pub fn ambiguity_message(&self, query: &str, matches: &[&Entry]) -> String {
        let mut s = format!(
            "`{query}` is part of {} function paths; pick one with `{query}#N` or a fuller path:\n",
            matches.len()
        );
        for (i, e) in matches.iter().enumerate() {
            s.push_str(&format!(
                "  #{:<3} {}\n",
                i + 1,
                e.display(self.path_is_shared(&e.path))
            ));
        }
        s.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::profile::ObjectFormat;

    const ASM: &str = "\t.text
\t.section\t.text._ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000001E,\"ax\",@progbits
\t.type\t_ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000001E,@function
_ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000001E:
\tret
\t.section\t.text._ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000002E,\"ax\",@progbits
\t.type\t_ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000002E,@function
_ZN8allocasm6packed11PackedArena10alloc_slow17h0000000000000002E:
\tret
\t.section\t.text._ZN8allocasm10rewindable10Rewindable10alloc_slow17h0000000000000003E,\"ax\",@progbits
\t.type\t_ZN8allocasm10rewindable10Rewindable10alloc_slow17h0000000000000003E,@function
_ZN8allocasm10rewindable10Rewindable10alloc_slow17h0000000000000003E:
\tnop
\tret
\t.type\tprobe_x,@function
probe_x:
\tret
";

    fn index() -> FunctionIndex {
        FunctionIndex::from_assemblies(&[parse_asm(ASM, ObjectFormat::Elf)])
    }

    #[test]
    fn a_part_of_the_path_finds_one_function() {
        let idx = index();
        let Found::One(e) = idx.find("Rewindable::alloc_slow") else {
            panic!("one match expected");
        };
        assert_eq!(e.path, "allocasm::rewindable::Rewindable::alloc_slow");
        assert!(e.raw.lines.iter().any(|l| l.trim() == "nop"));
        assert!(matches!(idx.find("probe_x"), Found::One(e) if e.path == "probe_x"));
        assert!(matches!(idx.find("no_such_fn"), Found::None));
    }

    #[test]
    fn several_matches_are_numbered_with_their_hashes() {
        let idx = index();
        let Found::Many(all) = idx.find("alloc_slow") else {
            panic!("several matches expected");
        };
        assert_eq!(all.len(), 3);
        let msg = idx.ambiguity_message("alloc_slow", &all);
        assert!(msg.contains("alloc_slow#N"), "{msg}");
        assert!(
            msg.contains("#1   allocasm::packed::PackedArena::alloc_slow [h0000000000000001]"),
            "{msg}"
        );
        assert!(
            msg.contains("#3   allocasm::rewindable::Rewindable::alloc_slow\n")
                || msg.ends_with("#3   allocasm::rewindable::Rewindable::alloc_slow"),
            "{msg}"
        );
        let Found::One(second) = idx.find("alloc_slow#2") else {
            panic!("#2 picks one");
        };
        assert_eq!(second.hash.as_deref(), Some("h0000000000000002"));
        assert!(matches!(idx.find("alloc_slow#9"), Found::None));
        // The hash alone picks one instance too.
        assert!(matches!(idx.find("h0000000000000001"), Found::One(_)));
    }

    #[test]
    fn v0_paths_keep_their_generic_arguments() {
        // `<alloc::vec::Vec<u8>>::push` in v0 mangling.
        let sym = "_RNvMs_NtCs1234_5alloc3vecINtB4_3VechE4push";
        let (path, hash) = demangled_path(sym);
        assert!(path.contains("Vec<u8>"), "{path}");
        assert!(path.ends_with("::push"), "{path}");
        assert_eq!(hash, None);
    }
}
