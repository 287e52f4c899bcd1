//! The codegen suite: build every probe for every target profile, extract each
//! probe's assembly, normalize it, check it against the profile's
//! expectations, and feed the same listings to snapshots, reports and diffs.
//!
//! There is exactly one extractor ([`parse`]) and one normalizer
//! ([`normalize`]); the tests, the CLI and CI all go through them.
//!
//! ```text
//! targets/<profile>.toml ─► Profile::load_all ─► build::build_profile (cargo rustc --emit asm)
//!        │                                               │ AsmOutput (every .s of the crate)
//!        │                                               ▼
//!        │                                  extract_probes ─► parse::parse_asm ─► normalize::normalize
//!        │                                               │
//!        ▼                                               ▼ ProbeListings (raw Function + Listing per probe)
//!  expect::evaluate / expect::check  ◄── cfg::analyze ───┘  (hot path)
//! ```
//!
//! # Stable API (used by the CLI)
//!
//! - [`Profile`]: one `targets/*.toml`. [`Profile::load_all`] discovers them
//!   (nothing in code lists profiles); [`Profile::find`] looks one up by name.
//!   Malformed files give `file:line:column: what was expected`.
//! - [`build::BuildOptions`] + [`build::build_profile`] /
//!   [`build::build_profiles`] (parallel, one thread per profile):
//!   `cargo +<toolchain> rustc --release --lib --features probes --target
//!   <triple> --target-dir <root>/<toolchain>/<profile> -- --emit asm ...`.
//!   Progress goes to a [`build::BuildEvent`] callback. A warm rebuild is a
//!   no-op that reuses the previous `.s` files ([`build::AsmOutput::fresh`]).
//!   Missing targets and toolchains are [`build::BuildError`]s that name the
//!   fix.
//! - [`parse::parse_asm`]: split one `.s` into [`parse::Function`]s for ELF,
//!   Mach-O and COFF, resolving `a = b` / `.set a, b` aliases.
//! - [`normalize::normalize`]: a [`Function`] into a stable [`Listing`].
//! - [`extract_probes`]: everything above for every probe of a built profile.
//! - [`expect::evaluate`] (every expectation with its result, for reports and
//!   diffs) and [`expect::check`] (the failures only), plus
//!   [`expect::check_all`] (every probe, including missing ones).
//! - [`listing::Listing::summary`]: instruction, atomic, call and loop counts
//!   of the whole function.
//! - [`cfg::analyze`] / [`ProbeListings::hot_path`]: the control-flow graph
//!   of a listing, its cold blocks and its hot path (entry to return through
//!   non-cold blocks) with the counts reports and `hot`-scoped expectations
//!   use.
//! - [`summary::cross_profile`]: the cross-profile table (probes down,
//!   profiles across, instruction count and A/C/L marks per cell) with
//!   [`summary::CrossProfile::markdown`].
//! - [`linked`]: the linked view. [`linked::build_linked`] /
//!   [`linked::build_all_linked`] link `suite/probe-bins/linked_probes.rs` for every
//!   profile with a `[linked]` table, release and fat LTO ([`linked::Lto`]);
//!   [`linked::extract_linked`] gives the same [`ProbeListings`] as
//!   [`extract_probes`]. [`objdump`] runs the disassembler and reads its
//!   output for it and for [`executed`].
//!
//! What the report should show with them (md/json/html): the cross-profile
//! table of the `.s` view first (and of the linked view under it); per
//! probe and profile, the `.s` listing beside the linked listings (release,
//! release-lto) with [`linked::LinkedOutput::header`] naming the build, and
//! the profile's `why` for the probe as the annotation.
//!
//! Paths: [`manifest_dir`], [`targets_dir`], [`snapshots_dir`],
//! [`default_target_root`], all of the current [`project`] (the workspace the
//! command runs in, or allocasm's own as compiled in).

pub mod artifacts;
pub mod build;
pub mod cache;
pub mod cfg;
pub mod executed;
pub mod expect;
pub mod follow;
pub mod fresh;
pub mod functions;
pub mod linked;
pub mod listing;
pub mod mca;
pub mod normalize;
pub mod objdump;
pub mod parse;
pub mod profile;
pub mod project;
pub mod summary;
pub mod symbols;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use build::{AsmOutput, BuildError, BuildEvent, BuildOptions};
pub use expect::{Failure, FailureKind, Outcome};
pub use listing::{Instruction, Line, Listing, Summary};
pub use parse::{Assembly, Function};
pub use profile::{
    Arch, Class, InstructionClasses, LinkedConfig, ObjectFormat, Pattern, ProbeExpect, Profile,
    RunMode,
};

use allocasm::probes::Probe;

/// The current project's workspace root ([`project::current`]): allocasm's
/// own tree as compiled in, unless the command line found another.
pub fn manifest_dir() -> PathBuf {
    project::current().root.clone()
}

/// The current project's profiles (`targets/`): one TOML file per profile.
pub fn targets_dir() -> PathBuf {
    project::current().targets_dir.clone()
}

/// The current project's snapshots (`snapshots/`): one folder per profile.
pub fn snapshots_dir() -> PathBuf {
    project::current().snapshots_dir.clone()
}

/// `target/allocasm-asm/`: the default root of the per-toolchain,
/// per-profile target dirs, apart from the outer build so the two never wait
/// on each other's lock.
pub fn default_target_root() -> PathBuf {
    project::current().target_root.clone()
}

/// One probe as found on one profile.
#[derive(Debug, Clone)]
pub struct ProbeListing {
    /// The probe's function as it appears in the `.s` (directives included),
    /// for `--raw`.
    pub raw: Function,
    /// The normalized listing: what expectations, snapshots and diffs compare.
    pub listing: Listing,
}

/// Every probe's listing on one built profile.
#[derive(Debug, Clone, Default)]
pub struct ProbeListings {
    /// The profile's name.
    pub profile: String,
    /// Found probes, by probe name.
    pub probes: BTreeMap<String, ProbeListing>,
    /// Probes of the registry that no `.s` file defines (nor aliases).
    pub missing: Vec<String>,
    /// Functions the build marks cold (ELF's `.text.unlikely.*`), named as
    /// listings name callees (demangled): calls to them are off the hot path
    /// ([`cfg`](mod@cfg)).
    pub cold_functions: BTreeSet<String>,
    /// The walk through the calls ([`follow`](mod@follow)) of each probe
    /// whose `[probe.X]` table says `follow = true`, by probe name.
    pub followed: BTreeMap<String, follow::Followed>,
    /// The functions the profile's `[function."…"]` tables name, by the
    /// name as written: found (its listing named by its path, and the walk
    /// through its calls when the table says `follow = true`), or why not
    /// (no function, or several, of the build match it).
    pub functions: BTreeMap<String, Result<FunctionListing, String>>,
}

/// A function a `[function."…"]` table names, as found in a build.
#[derive(Debug, Clone)]
pub struct FunctionListing {
    /// Its code and normalized listing.
    pub found: ProbeListing,
    /// The walk through its calls, with `follow = true`.
    pub followed: Option<follow::Followed>,
}

impl ProbeListings {
    /// The normalized listing of one probe, if it was found.
    pub fn listing(&self, probe: &str) -> Option<&Listing> {
        self.probes.get(probe).map(|p| &p.listing)
    }

    /// The control-flow graph and hot path of one probe on `profile`.
    pub fn hot_path(&self, profile: &Profile, probe: &str) -> Option<cfg::HotPath> {
        let listing = self.listing(probe)?;
        Some(cfg::analyze(listing, profile, &self.cold_functions).hot_path())
    }
}

/// Parses every `.s` of a build and extracts and normalizes each of `probes`.
///
/// A probe that LLVM merged into another function (`probe_b = probe_a`) is
/// found through the alias: its listing is the target's body under its own
/// name.
pub fn extract_probes(profile: &Profile, asm: &AsmOutput, probes: &[Probe]) -> ProbeListings {
    let format = profile.object_format();
    let arch = profile.arch();
    let assemblies: Vec<Assembly> = asm
        .files
        .iter()
        .map(|f| parse::parse_asm(&f.text, format))
        .collect();
    let cold_functions = assemblies
        .iter()
        .flat_map(|a| a.cold.iter())
        .map(|n| normalize::normalize_symbols(n, format))
        .collect();
    let mut found = BTreeMap::new();
    let mut missing = Vec::new();
    for probe in probes {
        match assemblies.iter().find_map(|a| a.function(probe.name)) {
            Some(function) => {
                let mut raw = function.clone();
                raw.name = probe.name.to_string();
                let listing = normalize::normalize(&raw, &arch);
                found.insert(probe.name.to_string(), ProbeListing { raw, listing });
            }
            None => missing.push(probe.name.to_string()),
        }
    }
    let mut listings = ProbeListings {
        profile: profile.name.clone(),
        probes: found,
        missing,
        cold_functions,
        ..ProbeListings::default()
    };
    let follows = profile.expect.values().any(|e| e.follow);
    if follows || !profile.function_expect.is_empty() {
        let index = functions::FunctionIndex::from_assemblies(&assemblies);
        follow_and_find(profile, &index, &mut listings);
    }
    listings
}

/// Fills [`ProbeListings::followed`] and [`ProbeListings::functions`] from
/// a build's functions.
pub fn follow_and_find(
    profile: &Profile,
    index: &functions::FunctionIndex,
    listings: &mut ProbeListings,
) {
    let depth = follow::DEFAULT_DEPTH;
    for (name, e) in &profile.expect {
        if !e.follow {
            continue;
        }
        let (Some(found), Some(entry)) = (listings.probes.get(name), index.by_symbol(name)) else {
            continue;
        };
        let walk = follow::follow(
            profile,
            index,
            entry,
            &found.listing,
            &listings.cold_functions,
            depth,
        );
        listings.followed.insert(name.clone(), walk);
    }
    for (name, e) in &profile.function_expect {
        let result = match index.find(name) {
            functions::Found::One(entry) => {
                let listing = entry.listing(profile);
                let followed = e.follow.then(|| {
                    follow::follow(
                        profile,
                        index,
                        entry,
                        &listing,
                        &listings.cold_functions,
                        depth,
                    )
                });
                Ok(FunctionListing {
                    found: ProbeListing {
                        raw: entry.raw.clone(),
                        listing,
                    },
                    followed,
                })
            }
            functions::Found::Many(all) => Err(index.ambiguity_message(name, &all)),
            functions::Found::None => {
                Err(format!("no function of the build has `{name}` in its path"))
            }
        };
        listings.functions.insert(name.clone(), result);
    }
}

/// Every function name a build defines (aliases included), as the probes
/// are named: what a project whose probes are found by prefix picks from
/// ([`project::found_in`]).
pub fn function_names(profile: &Profile, asm: &AsmOutput) -> BTreeSet<String> {
    let format = profile.object_format();
    asm.files
        .iter()
        .flat_map(|f| parse::parse_asm(&f.text, format).names())
        .collect()
}

/// Loads every profile of `targets/` (see [`Profile::load_all`]).
pub fn load_profiles() -> anyhow::Result<Vec<Profile>> {
    Profile::load_all(&targets_dir())
}

// Skipped under Miri: regex-heavy and reading files, nothing unsafe to check.
#[cfg(all(test, not(miri)))]
mod tests;
