//! What a cargo build made, read from cargo's own `--message-format=json`
//! artifact messages: the library's output directory (where rustc wrote the
//! `.s` files), an example's executable, a cdylib, and whether cargo reused
//! everything. The suite never guesses a target dir's layout: up to cargo
//! 1.99 a crate's intermediate outputs sit in `<target-dir>/<triple>/release/deps/`,
//! from 1.100 on in `<target-dir>/<triple>/release/build/<pkg>/<hash>/out/`,
//! and the messages name either.
//!
//! The messages are parsed by the `cargo_metadata` crate; lines that are not
//! JSON messages (a build script's stray output) are skipped.

use std::path::PathBuf;

use cargo_metadata::{Artifact, Message, TargetKind};

/// The compiler-artifact messages of one cargo run, in the order cargo wrote
/// them.
#[derive(Debug, Clone, Default)]
pub struct Artifacts {
    artifacts: Vec<Artifact>,
}

/// Where a library's intermediate outputs are: the directory holding its
/// `lib<crate>-<hash>.rmeta`/`.rlib` and so the `.s` files rustc wrote
/// beside them, and their common stem `<crate>-<hash>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryOutputs {
    /// The directory (`deps/` or `build/<pkg>/<hash>/out/`).
    pub dir: PathBuf,
    /// `<crate>-<hash>`: every `.s` of the crate is `<stem>.s` or
    /// `<stem>.<cgu>.rcgu.s`.
    pub stem: String,
    /// cargo reused the previous build of the library.
    pub fresh: bool,
}

impl Artifacts {
    /// Parses cargo's stdout.
    pub fn parse(json: &str) -> Artifacts {
        let artifacts = Message::parse_stream(json.as_bytes())
            .filter_map(Result::ok)
            .filter_map(|m| match m {
                Message::CompilerArtifact(a) => Some(a),
                _ => None,
            })
            .collect();
        Artifacts { artifacts }
    }

    /// How many artifacts cargo reported.
    pub fn len(&self) -> usize {
        self.artifacts.len()
    }

    /// Whether cargo reported none.
    pub fn is_empty(&self) -> bool {
        self.artifacts.is_empty()
    }

    /// Every artifact was fresh (cargo rebuilt nothing). `false` when there
    /// were none.
    pub fn all_fresh(&self) -> bool {
        !self.artifacts.is_empty() && self.artifacts.iter().all(|a| a.fresh)
    }

    /// The outputs of the library target `crate_name` (`allocasm`): the
    /// directory of its hashed file (`lib<crate>-<hash>.*`), never the
    /// uplifted `lib<crate>.rlib` copy beside the target dir's profile root.
    pub fn library(&self, crate_name: &str) -> Option<LibraryOutputs> {
        let prefix = format!("lib{crate_name}-");
        self.artifacts
            .iter()
            .filter(|a| a.target.name == crate_name)
            .filter(|a| {
                a.target
                    .kind
                    .iter()
                    .any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib))
            })
            .find_map(|a| {
                a.filenames.iter().find_map(|f| {
                    let name = f.file_name()?;
                    let rest = name.strip_prefix(&prefix)?;
                    let hash = rest.split('.').next()?;
                    Some(LibraryOutputs {
                        dir: f.parent()?.as_std_path().to_path_buf(),
                        stem: format!("{crate_name}-{hash}"),
                        fresh: a.fresh,
                    })
                })
            })
    }

    /// The executable of the target named `name` (an example, a binary).
    pub fn executable(&self, name: &str) -> Option<PathBuf> {
        self.artifacts
            .iter()
            .filter(|a| a.target.name == name)
            .find_map(|a| a.executable.as_ref())
            .map(|p| p.as_std_path().to_path_buf())
    }

    /// The first cdylib's file with the extension `ext` (`so`, `dylib`, `dll`).
    pub fn cdylib(&self, ext: &str) -> Option<PathBuf> {
        self.artifacts
            .iter()
            .filter(|a| a.target.kind.contains(&TargetKind::CDyLib))
            .flat_map(|a| a.filenames.iter())
            .find(|f| f.extension() == Some(ext))
            .map(|p| p.as_std_path().to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPS: &str = include_str!("testdata/cargo-messages-deps.jsonl");
    const BUILD_DIR: &str = include_str!("testdata/cargo-messages-build-dir.jsonl");

    #[test]
    fn the_library_is_found_in_deps_with_cargo_1_95() {
        let a = Artifacts::parse(DEPS);
        assert_eq!(a.len(), 2);
        let lib = a.library("allocasm").expect("allocasm's artifact");
        assert_eq!(
            lib.dir,
            PathBuf::from(
                "/home/dev/allocasm/target/allocasm-asm/1.95.0/x86_64-linux/\
                 x86_64-unknown-linux-gnu/release/deps"
            )
        );
        assert_eq!(lib.stem, "allocasm-5109172a7b7f7a75");
        assert!(!lib.fresh);
    }

    #[test]
    fn the_library_is_found_in_the_build_dir_with_cargo_1_100() {
        let a = Artifacts::parse(BUILD_DIR);
        let lib = a.library("allocasm").expect("allocasm's artifact");
        assert_eq!(
            lib.dir,
            PathBuf::from(
                "/home/dev/allocasm/target/allocasm-asm/beta/x86_64-linux/\
                 x86_64-unknown-linux-gnu/release/build/allocasm/8150664602af12ec/out"
            )
        );
        assert_eq!(lib.stem, "allocasm-8150664602af12ec");
    }

    #[test]
    fn a_dependency_or_an_unknown_crate_is_not_the_library() {
        let a = Artifacts::parse(BUILD_DIR);
        assert!(a.library("allocasm_suite").is_none());
        // crossbeam-utils' artifact is a library too, under its own name.
        let dep = a.library("crossbeam_utils").expect("the dependency");
        assert!(dep.stem.starts_with("crossbeam_utils-"), "{}", dep.stem);
        assert!(a.executable("allocasm").is_none());
    }

    #[test]
    fn freshness_and_stray_lines() {
        let warm = DEPS.replace("\"fresh\":false", "\"fresh\":true");
        assert!(Artifacts::parse(&warm).all_fresh());
        assert!(!Artifacts::parse(DEPS).all_fresh());
        assert!(!Artifacts::parse("").all_fresh());
        let noisy = format!("not json\n{DEPS}\n{{\"reason\":\"unknown\"}}\n");
        assert_eq!(Artifacts::parse(&noisy).len(), 2);
    }

    #[test]
    fn an_example_and_a_cdylib_from_their_messages() {
        let exe = r#"{"reason":"compiler-artifact","package_id":"path+file:///a#allocasm@0.1.0","manifest_path":"/a/Cargo.toml","target":{"kind":["example"],"crate_types":["bin"],"name":"probe_driver","src_path":"/a/examples/probe_driver.rs","edition":"2024","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":["probes"],"filenames":["/a/target/x/release/examples/probe_driver"],"executable":"/a/target/x/release/examples/probe_driver","fresh":true}
{"reason":"compiler-artifact","package_id":"path+file:///a/suite/dylib-probes#allocasm-dylib-probes@0.1.0","manifest_path":"/a/suite/dylib-probes/Cargo.toml","target":{"kind":["cdylib"],"crate_types":["cdylib"],"name":"allocasm_dylib_probes","src_path":"/a/suite/dylib-probes/src/lib.rs","edition":"2024","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/a/target/x/release/liballocasm_dylib_probes.so"],"executable":null,"fresh":false}"#;
        let a = Artifacts::parse(exe);
        assert_eq!(
            a.executable("probe_driver"),
            Some(PathBuf::from("/a/target/x/release/examples/probe_driver"))
        );
        assert_eq!(
            a.cdylib("so"),
            Some(PathBuf::from(
                "/a/target/x/release/liballocasm_dylib_probes.so"
            ))
        );
        assert!(!a.all_fresh());
    }
}
