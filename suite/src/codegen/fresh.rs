//! Skipping a cargo run that cannot build anything: a warm `report` with
//! nothing changed ran cargo 29 times (12 profiles' `.s` builds, 10 linked
//! builds, 7 probe drivers), each one finding everything fresh after
//! 150 to 300 ms of its own start-up, resolution and fingerprint checks.
//!
//! After a build that worked, a *stamp* is written in its target dir: the
//! key of the command (its program, arguments, working directory and
//! environment, this process's whole environment, and `rustc -vV` of its
//! toolchain), every file the build read with its modification time and
//! length (from the dep-info files cargo and rustc write next to each
//! artifact, which list every source file of the crate and of its
//! dependencies and every file a build script watches, plus the
//! workspace's manifests, lock file and cargo configuration), every
//! artifact with the same, and the JSON messages cargo printed. The next
//! run of the same command replays those messages, marked fresh, without
//! starting cargo, when the key is the same and not one of those files
//! has changed, gone or appeared. Anything else (an edited source, a new
//! toolchain, another flag or variable, a deleted artifact, a stamp that
//! cannot be read) runs cargo as before, and cargo decides.
//!
//! No stamp is written when a build script of a workspace package names no
//! `rerun-if-changed` file (cargo then reruns it on a change to any file of
//! its package, which no dep-info lists). `ALLOCASM_NO_FRESH=1` always runs
//! cargo.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bumped when a stamp's meaning changes.
const FORMAT: &str = "allocasm-fresh-1";

/// Variables that change between two shells without changing a build.
const IGNORED_ENV: &[&str] = &[
    "_",
    "OLDPWD",
    "SHLVL",
    "COLUMNS",
    "LINES",
    "TERM_SESSION_ID",
];

/// A file as the stamp saw it: path, modification time (ns), length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen(PathBuf, u128, u64);

impl Seen {
    /// The file as it is now (`None`: it does not exist).
    fn now(path: &Path) -> Option<Seen> {
        let m = std::fs::metadata(path).ok()?;
        let t = m
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(Seen(path.to_path_buf(), t, m.len()))
    }

    fn unchanged(&self) -> bool {
        Seen::now(&self.0).as_ref() == Some(self)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    format: String,
    key: String,
    inputs: Vec<Seen>,
    outputs: Vec<Seen>,
    json: String,
}

/// The stamp of one cargo command in its target dir.
#[derive(Debug, Clone)]
pub struct Stamp {
    path: PathBuf,
    key: String,
    workspace: PathBuf,
}

impl Stamp {
    /// The stamp of `cmd` (a cargo command building into `target_dir` for
    /// the workspace at `workspace`), its toolchain described by
    /// `rustc_vv`.
    pub fn of(cmd: &Command, target_dir: &Path, workspace: &Path, rustc_vv: &str) -> Stamp {
        let mut h = Sha256::new();
        let mut part = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        part(FORMAT.as_bytes());
        part(rustc_vv.as_bytes());
        part(cmd.get_program().as_encoded_bytes());
        for a in cmd.get_args() {
            part(a.as_encoded_bytes());
        }
        if let Some(d) = cmd.get_current_dir() {
            part(d.as_os_str().as_encoded_bytes());
        }
        part(b"-- explicit environment");
        let mut envs: Vec<_> = cmd.get_envs().collect();
        envs.sort();
        for (k, v) in envs {
            part(k.as_encoded_bytes());
            part(v.map_or(b"(removed)".as_slice(), |v| v.as_encoded_bytes()));
        }
        part(b"-- inherited environment");
        let mut vars: Vec<_> = std::env::vars_os()
            .filter(|(k, _)| !IGNORED_ENV.iter().any(|i| k == i))
            .collect();
        vars.sort();
        for (k, v) in vars {
            part(k.as_encoded_bytes());
            part(v.as_encoded_bytes());
        }
        if let Ok(cwd) = std::env::current_dir() {
            part(cwd.as_os_str().as_encoded_bytes());
        }
        let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Stamp {
            path: target_dir.join(format!("allocasm-fresh-{}.json", &key[..16])),
            key,
            workspace: workspace.to_path_buf(),
        }
    }

    /// The JSON cargo printed the last time, every artifact marked fresh,
    /// when nothing the build read has changed since.
    pub fn replay(&self) -> Option<String> {
        if std::env::var("ALLOCASM_NO_FRESH").as_deref() == Ok("1") {
            return None;
        }
        let text = std::fs::read_to_string(&self.path).ok()?;
        let r: Record = serde_json::from_str(&text).ok()?;
        if r.format != FORMAT || r.key != self.key {
            return None;
        }
        // The workspace's own files first: they are what changes.
        let watched = workspace_files(&self.workspace);
        let seen: std::collections::BTreeSet<&Path> =
            r.inputs.iter().map(|s| s.0.as_path()).collect();
        if watched.iter().any(|p| !seen.contains(p.as_path())) {
            // A manifest or configuration file that was not there.
            return None;
        }
        if !r.inputs.iter().chain(&r.outputs).all(Seen::unchanged) {
            return None;
        }
        Some(mark_fresh(&r.json))
    }

    /// Records a run that worked: `json` is what cargo printed on stdout,
    /// `also` files it wrote that its messages do not name (the `.s`
    /// files). Without any dep-info to list its inputs, nothing is recorded
    /// (and the next run runs cargo).
    pub fn record(&self, json: &str, also: &[PathBuf]) {
        let text = self
            .record_of(json, also)
            .and_then(|r| serde_json::to_string(&r).ok());
        match text {
            // Unwritten, the next run runs cargo: nothing is lost.
            Some(text) => drop(super::cache::write_atomically(&self.path, text.as_bytes())),
            // Nothing provable: an older stamp must not be replayed either.
            None => drop(std::fs::remove_file(&self.path)),
        }
    }

    /// What [`record`](Self::record) writes, or `None` when the run cannot
    /// be stamped: no dep-info, a build script that names no input, or a
    /// listed file already gone (cargo says why next time).
    fn record_of(&self, json: &str, also: &[PathBuf]) -> Option<Record> {
        let (dep_infos, mut outputs) = artifacts(json);
        outputs.extend(also.iter().cloned());
        if dep_infos.is_empty() || !build_scripts_say_what_they_read(json) {
            return None;
        }
        let mut inputs = std::collections::BTreeSet::new();
        for d in &dep_infos {
            let text = std::fs::read_to_string(d).ok()?;
            inputs.extend(dep_info_paths(&text, &self.workspace));
        }
        inputs.extend(workspace_files(&self.workspace));
        let seen = |paths: &mut dyn Iterator<Item = &PathBuf>| {
            paths.map(|p| Seen::now(p)).collect::<Option<Vec<_>>>()
        };
        Some(Record {
            format: FORMAT.to_string(),
            key: self.key.clone(),
            inputs: seen(&mut inputs.iter())?,
            outputs: seen(&mut outputs.iter())?,
            json: json.to_string(),
        })
    }
}

/// cargo's messages with every `"fresh":false` made `"fresh":true`.
fn mark_fresh(json: &str) -> String {
    json.replace("\"fresh\":false", "\"fresh\":true")
}

/// cargo's JSON messages of one `reason`; other lines are skipped.
fn messages<'a>(json: &'a str, reason: &'a str) -> impl Iterator<Item = serde_json::Value> + 'a {
    json.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(move |v| v.get("reason").and_then(|r| r.as_str()) == Some(reason))
}

/// The dep-info files and the artifacts of cargo's `compiler-artifact`
/// messages: for every file an artifact names, `<stem>.d` beside it (cargo's
/// own, absolute paths) where it exists, else rustc's `deps/<crate>-<hash>.d`.
fn artifacts(json: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut deps = Vec::new();
    let mut outputs = Vec::new();
    for v in messages(json, "compiler-artifact") {
        let files = v.get("filenames").and_then(|f| f.as_array());
        for f in files.into_iter().flatten().filter_map(|f| f.as_str()) {
            let path = PathBuf::from(f);
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let stem = name.split('.').next().unwrap_or(name);
            let dir = path.parent().unwrap_or(Path::new("."));
            let candidates = [
                dir.join(format!("{stem}.d")),
                dir.join(format!("{}.d", stem.strip_prefix("lib").unwrap_or(stem))),
            ];
            if let Some(d) = candidates.into_iter().find(|c| c.is_file())
                && !deps.contains(&d)
            {
                deps.push(d);
            }
            if path.exists() {
                outputs.push(path);
            }
        }
    }
    (deps, outputs)
}

/// Whether every build script of a path package (the workspace's, which
/// can change; a registry package cannot) said what it reads: one
/// without a `rerun-if-changed` line is rerun by cargo when any file of
/// its package changes, files no dep-info lists, so a stamp could not
/// tell. (allocasm's own says `rerun-if-changed=build.rs`.) The lines are
/// in `output` beside the script's `out` dir.
fn build_scripts_say_what_they_read(json: &str) -> bool {
    for v in messages(json, "build-script-executed") {
        let path_package = v
            .get("package_id")
            .and_then(|p| p.as_str())
            .is_some_and(|p| p.starts_with("path+"));
        if !path_package {
            continue;
        }
        let Some(out_dir) = v.get("out_dir").and_then(|o| o.as_str()) else {
            return false;
        };
        let output = Path::new(out_dir)
            .parent()
            .map(|d| d.join("output"))
            .and_then(|o| std::fs::read_to_string(o).ok());
        let says = output.is_some_and(|text| {
            text.lines().any(|l| {
                l.starts_with("cargo:rerun-if-changed=")
                    || l.starts_with("cargo::rerun-if-changed=")
            })
        });
        if !says {
            return false;
        }
    }
    true
}

/// The prerequisites of every rule of a Makefile-style dep-info file
/// (`target: dep dep…`, spaces in names escaped as `\ `), relative ones
/// taken from `base`.
fn dep_info_paths(text: &str, base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some(idx) = rule_colon(line) else {
            continue;
        };
        let mut cur = String::new();
        let mut chars = line[idx + 1..].chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    cur.push(' ');
                    chars.next();
                }
                ' ' | '\t' => {
                    if !cur.is_empty() {
                        out.push(base.join(std::mem::take(&mut cur)));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(base.join(cur));
        }
    }
    out
}

/// Where a rule's target ends: the first `:` followed by a space or the
/// end of the line (not a drive letter's).
fn rule_colon(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    (0..b.len()).find(|&i| b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' '))
}

/// The workspace's files every build reads besides the sources: every
/// `Cargo.toml` of its members (and of `suite/`), `Cargo.lock`, the
/// toolchain file and cargo's configuration in it and above it.
fn workspace_files(workspace: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        workspace.join("Cargo.toml"),
        workspace.join("Cargo.lock"),
        workspace.join("rust-toolchain.toml"),
        workspace.join("rust-toolchain"),
    ];
    let mut dir = Some(workspace);
    while let Some(d) = dir {
        files.push(d.join(".cargo/config.toml"));
        files.push(d.join(".cargo/config"));
        dir = d.parent();
    }
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        files.push(home.join("config.toml"));
        files.push(home.join("config"));
    }
    files.retain(|f| f.is_file());
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_lines_give_every_prerequisite() {
        let text = "/t/liba.rlib: /w/src/lib.rs /w/src/a\\ b.rs src/rel.rs\n\
                    # env-dep:FOO=1\n\
                    /w/src/lib.rs:\n";
        let got = dep_info_paths(text, Path::new("/w"));
        assert_eq!(
            got,
            vec![
                PathBuf::from("/w/src/lib.rs"),
                PathBuf::from("/w/src/a b.rs"),
                PathBuf::from("/w/src/rel.rs"),
            ]
        );
    }

    #[test]
    fn a_workspace_build_script_that_names_no_input_prevents_a_stamp() {
        let dir = std::env::temp_dir().join(format!("allocasm-fresh-bs-{}", std::process::id()));
        let out = dir.join("build/pkg-1/out");
        std::fs::create_dir_all(&out).unwrap();
        let msg = |id: &str| {
            format!(
                "{{\"reason\":\"build-script-executed\",\"package_id\":\"{id}\",\"out_dir\":{:?}}}\n",
                out.display().to_string()
            )
        };
        let local = msg("path+file:///w#pkg@0.1.0");
        let registry = msg("registry+https://github.com/rust-lang/crates.io-index#libc@0.2.1");
        std::fs::write(dir.join("build/pkg-1/output"), "cargo:rustc-cfg=x\n").unwrap();
        assert!(!build_scripts_say_what_they_read(&local));
        assert!(build_scripts_say_what_they_read(&registry));
        std::fs::write(
            dir.join("build/pkg-1/output"),
            "cargo::rerun-if-changed=build.rs\n",
        )
        .unwrap();
        assert!(build_scripts_say_what_they_read(&local));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn replayed_messages_are_fresh() {
        let json = "{\"reason\":\"compiler-artifact\",\"fresh\":false}\n";
        assert_eq!(
            mark_fresh(json),
            "{\"reason\":\"compiler-artifact\",\"fresh\":true}\n"
        );
    }
}
