//! The project the suite works on: the Cargo workspace you stand in (or the
//! one `--manifest-path` names), the package whose library holds the probes,
//! where its profiles and snapshots live, and how its probes are found.
//!
//! allocasm's own workspace is one project among others: its `allocasm.toml`
//! says that the probes are the allocator library's registry
//! (`allocasm::probes::PROBES`). Any other crate writes an `allocasm.toml` at
//! its workspace root naming its probes by a prefix or a list:
//!
//! ```toml
//! # allocasm.toml
//! package = "bumpfix"          # the package whose library is built (default: the root package)
//! features = []                # its features for the asm build (default: none)
//! targets = "targets"          # the profiles, one TOML each (default)
//! snapshots = "snapshots"      # snapshots/<profile>/<probe>.snap (default)
//!
//! [probes]
//! prefix = "bumpfix_"          # every exported function whose name starts so...
//! # names = ["bumpfix_alloc"]  # ...or exactly these
//! kind = "single-threaded"     # the expectations' default kind (default: concurrent)
//! kinds = { bumpfix_count = "concurrent" }   # per probe
//! ```
//!
//! Without an `allocasm.toml` the project is the root package, its probes
//! every function whose name starts with `probe_`, of the concurrent kind.
//!
//! The command line sets the current project once ([`set_current`]); the
//! library's paths ([`super::manifest_dir`], [`super::targets_dir`], …) and
//! the probe list ([`probes`]) follow it. Without one (the suite's own tests)
//! it is the allocasm tree the suite was compiled from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use allocasm::probes::{PROBES, Probe, ProbeKind};
use anyhow::{Context, bail};
use serde::Deserialize;

/// The configuration file at a workspace root.
pub const CONFIG_FILE: &str = "allocasm.toml";

/// How a project's probes are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeSource {
    /// The allocator library's registry, compiled into this binary (only
    /// for allocasm's own workspace).
    Registry,
    /// Exactly these names.
    Names(Vec<String>),
    /// Every function of the build whose name starts with this.
    Prefix(String),
}

/// One project: a workspace and what to build and read in it.
#[derive(Debug, Clone)]
pub struct Project {
    /// The workspace root (where `allocasm.toml` is).
    pub root: PathBuf,
    /// The probed package's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The probed package's name.
    pub package: String,
    /// Its library target's crate name (the `.s` files' crate).
    pub lib_name: String,
    /// Features the asm build enables.
    pub features: Vec<String>,
    /// The profiles.
    pub targets_dir: PathBuf,
    /// The snapshots, one folder per profile.
    pub snapshots_dir: PathBuf,
    /// Root of the per-toolchain, per-profile target dirs.
    pub target_root: PathBuf,
    /// How the probes are found.
    pub probes: ProbeSource,
    /// The kind of a probe `kinds` does not name.
    pub default_kind: ProbeKind,
    /// Kinds per probe name.
    pub kinds: BTreeMap<String, ProbeKind>,
    /// The `allocasm.toml` read, if any.
    pub config_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    package: Option<String>,
    features: Option<Vec<String>>,
    targets: Option<PathBuf>,
    snapshots: Option<PathBuf>,
    #[serde(default)]
    probes: RawProbes,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbes {
    registry: Option<String>,
    prefix: Option<String>,
    names: Option<Vec<String>>,
    kind: Option<String>,
    #[serde(default)]
    kinds: BTreeMap<String, String>,
}

fn parse_kind(s: &str, what: &str) -> anyhow::Result<ProbeKind> {
    match s {
        "single-threaded" => Ok(ProbeKind::SingleThreaded),
        "concurrent" => Ok(ProbeKind::Concurrent),
        other => {
            bail!("{what}: unknown probe kind `{other}` (expected single-threaded or concurrent)")
        }
    }
}

/// What `cargo metadata --no-deps` says about a workspace.
struct Workspace {
    root: PathBuf,
    target_dir: PathBuf,
    /// (name, manifest path, lib target name) of every member.
    members: Vec<(String, PathBuf, Option<String>)>,
    /// The package of the manifest asked for, when it is a package.
    root_package: Option<String>,
}

fn cargo_metadata(manifest_path: Option<&Path>, cwd: &Path) -> anyhow::Result<Workspace> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.no_deps().current_dir(cwd);
    if let Some(m) = manifest_path {
        cmd.manifest_path(m);
    }
    // The scrubbed environment of the builds does not matter here; an outer
    // `cargo run` sets CARGO, which MetadataCommand follows: the same cargo.
    let meta = cmd.exec().map_err(|e| match e {
        cargo_metadata::Error::CargoMetadata { stderr } => {
            anyhow::anyhow!("{}", stderr.trim_end())
        }
        e => anyhow::anyhow!("{e}"),
    })?;
    let members = meta
        .workspace_packages()
        .iter()
        .map(|p| {
            let lib = p
                .targets
                .iter()
                .find(|t| t.is_lib() || t.is_rlib())
                .map(|t| t.name.replace('-', "_"));
            (
                p.name.to_string(),
                p.manifest_path.clone().into_std_path_buf(),
                lib,
            )
        })
        .collect();
    let root_package = meta.root_package().map(|p| p.name.to_string());
    Ok(Workspace {
        root: meta.workspace_root.into_std_path_buf(),
        target_dir: meta.target_directory.into_std_path_buf(),
        root_package,
        members,
    })
}

impl Project {
    /// The project of the workspace containing `cwd`, or of `manifest_path`.
    pub fn discover(manifest_path: Option<&Path>, cwd: &Path) -> anyhow::Result<Project> {
        if let Some(m) = manifest_path
            && !m.is_file()
        {
            bail!(
                "--manifest-path {}: no such file (it names a package's or workspace's Cargo.toml)",
                m.display()
            );
        }
        let ws = cargo_metadata(manifest_path, cwd).with_context(|| match manifest_path {
            Some(m) => format!("cannot read the Cargo workspace of {}", m.display()),
            None => format!(
                "no Cargo workspace here ({}); run allocasm inside one or name it with \
                 --manifest-path",
                cwd.display()
            ),
        })?;
        let config_path = ws.root.join(CONFIG_FILE);
        let (raw, config_file) = match std::fs::read_to_string(&config_path) {
            Ok(text) => {
                let raw: RawConfig = toml::from_str(&text)
                    .map_err(|e| anyhow::anyhow!("{}: {}", config_path.display(), e))?;
                (raw, Some(config_path.clone()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (RawConfig::default(), None),
            Err(e) => bail!("cannot read {}: {e}", config_path.display()),
        };
        let where_ = config_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| format!("{} (none: defaults)", config_path.display()));
        let package = match raw.package.or(ws.root_package.clone()) {
            Some(p) => p,
            None => {
                let names: Vec<&str> = ws.members.iter().map(|m| m.0.as_str()).collect();
                bail!(
                    "{where_}: the workspace at {} is virtual: say which package holds the \
                     probes with `package = \"…\"` (members: {})",
                    ws.root.display(),
                    names.join(", ")
                )
            }
        };
        let Some((_, manifest, lib)) = ws.members.iter().find(|m| m.0 == package) else {
            let names: Vec<&str> = ws.members.iter().map(|m| m.0.as_str()).collect();
            bail!(
                "{where_}: package `{package}` is not a member of the workspace at {} \
                 (members: {})",
                ws.root.display(),
                names.join(", ")
            )
        };
        let Some(lib_name) = lib.clone() else {
            bail!(
                "{where_}: package `{package}` has no library target: the probes are \
                 `#[inline(never)]` exported functions of a library (src/lib.rs)"
            )
        };
        let p = raw.probes;
        let probes = match (p.registry.as_deref(), p.prefix, p.names) {
            (Some("allocasm"), None, None) => ProbeSource::Registry,
            (Some(other), None, None) => bail!(
                "{where_}: [probes] registry = \"{other}\": the only registry this binary knows \
                 is \"allocasm\"'s; name your probes with `prefix` or `names`"
            ),
            (None, Some(prefix), None) if !prefix.is_empty() => ProbeSource::Prefix(prefix),
            (None, None, Some(names)) if !names.is_empty() => ProbeSource::Names(names),
            (None, None, None) => ProbeSource::Prefix("probe_".to_string()),
            _ => bail!(
                "{where_}: [probes] takes exactly one of `prefix = \"…\"` (non-empty), \
                 `names = [\"…\", …]` (non-empty) or `registry = \"allocasm\"`"
            ),
        };
        let default_kind = match p.kind.as_deref() {
            Some(k) => parse_kind(k, &format!("{where_}: [probes] kind"))?,
            None => ProbeKind::Concurrent,
        };
        let mut kinds = BTreeMap::new();
        for (name, k) in &p.kinds {
            kinds.insert(
                name.clone(),
                parse_kind(k, &format!("{where_}: [probes.kinds] {name}"))?,
            );
        }
        let targets_dir = ws
            .root
            .join(raw.targets.unwrap_or_else(|| "targets".into()));
        let snapshots_dir = ws
            .root
            .join(raw.snapshots.unwrap_or_else(|| "snapshots".into()));
        Ok(Project {
            manifest_path: manifest.clone(),
            package,
            lib_name,
            features: raw.features.unwrap_or_default(),
            targets_dir,
            snapshots_dir,
            target_root: ws.target_dir.join("allocasm-asm"),
            probes,
            default_kind,
            kinds,
            config_file,
            root: ws.root,
        })
    }

    /// The allocasm tree this binary was compiled from (what the suite's own
    /// tests work on).
    pub fn compiled_in() -> Project {
        let suite = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = suite.parent().unwrap_or(suite).to_path_buf();
        Project {
            manifest_path: root.join("Cargo.toml"),
            package: "allocasm".into(),
            lib_name: "allocasm".into(),
            features: vec!["probes".into()],
            targets_dir: root.join("targets"),
            snapshots_dir: root.join("snapshots"),
            target_root: root.join("target").join("allocasm-asm"),
            probes: ProbeSource::Registry,
            default_kind: ProbeKind::Concurrent,
            kinds: BTreeMap::new(),
            config_file: Some(root.join(CONFIG_FILE)),
            root,
        }
    }

    /// Whether this is allocasm's own workspace (its probe driver, linked
    /// examples and probe cdylib exist).
    pub fn is_allocasm(&self) -> bool {
        self.probes == ProbeSource::Registry
    }

    /// The kind of probe `name`.
    pub fn kind_of(&self, name: &str) -> ProbeKind {
        self.kinds.get(name).copied().unwrap_or(self.default_kind)
    }

    /// A probe entry for `name` (not of the registry).
    fn probe(&self, name: &str) -> Probe {
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        Probe {
            name,
            allocator: "",
            operation: "",
            kind: self.kind_of(name),
            expect: "",
        }
    }

    /// The probes known before any build: the registry's or the listed
    /// ones; `None` when they are found by prefix in the build.
    pub fn known_probes(&self) -> Option<Vec<Probe>> {
        match &self.probes {
            ProbeSource::Registry => Some(PROBES.to_vec()),
            ProbeSource::Names(names) => Some(names.iter().map(|n| self.probe(n)).collect()),
            ProbeSource::Prefix(_) => None,
        }
    }

    /// The probes among `functions` (every function name of a build): the
    /// known ones, or those that start with the prefix, sorted.
    pub fn probes_among<'a>(&self, functions: impl IntoIterator<Item = &'a str>) -> Vec<Probe> {
        match (&self.probes, self.known_probes()) {
            (_, Some(known)) => known,
            (ProbeSource::Prefix(prefix), None) => {
                let mut names: Vec<&str> = functions
                    .into_iter()
                    .filter(|f| f.starts_with(prefix.as_str()))
                    .collect();
                names.sort_unstable();
                names.dedup();
                names.into_iter().map(|n| self.probe(n)).collect()
            }
            _ => unreachable!("only a prefix leaves the probes unknown"),
        }
    }

    /// How the probes are found, for messages.
    pub fn describe_probes(&self) -> String {
        match &self.probes {
            ProbeSource::Registry => "allocasm's probe registry".into(),
            ProbeSource::Names(n) => format!("{} listed in allocasm.toml", n.len()),
            ProbeSource::Prefix(p) => format!("every exported function named `{p}…`"),
        }
    }
}

static CURRENT: OnceLock<Project> = OnceLock::new();
static FOUND: Mutex<Option<&'static [Probe]>> = Mutex::new(None);

/// Makes `project` the one every path and probe list follows; once per
/// process (a second call is an error).
pub fn set_current(project: Project) -> anyhow::Result<()> {
    CURRENT
        .set(project)
        .map_err(|_| anyhow::anyhow!("the project was already set"))
}

/// The current project ([`Project::compiled_in`] unless one was set).
pub fn current() -> &'static Project {
    CURRENT.get_or_init(Project::compiled_in)
}

/// The current project's probes: the registry's, the listed ones, or
/// (found by prefix) the ones the builds so far defined ([`found_in`]);
/// empty before a build of a prefix project.
pub fn probes() -> &'static [Probe] {
    if let ProbeSource::Registry = current().probes {
        return PROBES;
    }
    let mut found = FOUND.lock().expect("probe list lock");
    if found.is_none()
        && let Some(known) = current().known_probes()
    {
        *found = Some(Box::leak(known.into_boxed_slice()));
    }
    found.unwrap_or(&[])
}

/// Adds the probes among `functions` (the function names of a build) to
/// the current project's list and returns the list.
pub fn found_in<'a>(functions: impl IntoIterator<Item = &'a str>) -> &'static [Probe] {
    let project = current();
    if project.known_probes().is_some() {
        return probes();
    }
    let mut found = FOUND.lock().expect("probe list lock");
    let mut all: Vec<Probe> = found.unwrap_or(&[]).to_vec();
    for p in project.probes_among(functions) {
        if !all.iter().any(|q| q.name == p.name) {
            all.push(p);
        }
    }
    all.sort_by_key(|p| p.name);
    let list: &'static [Probe] = Box::leak(all.into_boxed_slice());
    *found = Some(list);
    list
}

/// A probe of the current project by exact name.
pub fn find(name: &str) -> Option<&'static Probe> {
    probes().iter().find(|p| p.name == name)
}
