//! What every building command shares: loading and selecting profiles and
//! probes (with "did you mean" suggestions), and building the selected
//! profiles with one or two toolchains behind one progress bar.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use allocasm::probes::Probe;
use allocasm_suite::codegen::build::{self, BuildError, BuildEvent, BuildOptions};
use allocasm_suite::codegen::linked::{self, LinkedOutput, Lto};
use allocasm_suite::codegen::profile::by_likeness;
use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{self, AsmOutput, ProbeListings, Profile};

use super::ui::Progress;
use super::{Backend, CliError, Ui, cargo_show_asm};

/// One profile, built, with every probe extracted.
pub struct Built {
    /// The profile.
    pub profile: Profile,
    /// The build (toolchain, `rustc -vV`, flags, `.s` files).
    pub output: AsmOutput,
    /// Every probe's listing, and the missing ones.
    pub listings: ProbeListings,
}

/// One linked executable of a profile (see [`allocasm_suite::codegen::linked`]),
/// disassembled, with every probe extracted.
pub struct LinkedBuilt {
    /// The profile.
    pub profile: Profile,
    /// Release profile as it is, or fat LTO.
    pub lto: Lto,
    /// The executable and its listings, or why there are none.
    pub result: Result<(LinkedOutput, ProbeListings), BuildError>,
}

/// The builds of one toolchain.
pub struct Builds {
    /// The toolchain as resolved (`1.95.0`, `nightly`).
    pub toolchain: String,
    /// The profiles that built, in the order asked.
    pub built: Vec<Built>,
    /// The profiles that did not, with why.
    pub failed: Vec<(Profile, BuildError)>,
    /// The profiles the toolchain cannot build at all (rustup has no
    /// rust-std for their target, [`BuildError::NotAvailable`]): not a
    /// failure, said per profile.
    pub unavailable: Vec<(Profile, BuildError)>,
    /// The linked executables (both LTO settings of every profile with a
    /// `[linked]` table), in `(profile, lto)` order; empty unless asked for.
    pub linked: Vec<LinkedBuilt>,
}

impl Builds {
    /// The build of one profile, if it worked.
    pub fn get(&self, profile: &str) -> Option<&Built> {
        self.built.iter().find(|b| b.profile.name == profile)
    }

    /// `rustc -vV` of the toolchain (from the first build that worked with
    /// it, not from a profile that keeps its own toolchain).
    pub fn rustc_version(&self) -> Option<&str> {
        self.built
            .iter()
            .find(|b| b.output.toolchain == self.toolchain)
            .map(|b| b.output.rustc_version.as_str())
    }

    /// The linked build of one profile with one LTO setting, if it was asked for.
    pub fn linked(&self, profile: &str, lto: Lto) -> Option<&LinkedBuilt> {
        self.linked
            .iter()
            .find(|l| l.profile.name == profile && l.lto == lto)
    }

    /// The linked builds that failed (a profile the toolchain cannot build
    /// at all is not one: see [`Builds::unavailable`]).
    pub fn linked_failures(&self) -> impl Iterator<Item = (&LinkedBuilt, &BuildError)> {
        self.linked
            .iter()
            .filter_map(|l| l.result.as_ref().err().map(|e| (l, e)))
            .filter(|(_, e)| !e.is_not_available())
    }

    /// Prints every build failure (with its fix) to stderr.
    pub fn report_failures(&self, ui: &Ui) {
        for (profile, error) in &self.unavailable {
            errln!("{} profile {}: {error}", ui.yellow("note:"), profile.name);
        }
        for (profile, error) in &self.failed {
            errln!(
                "{} profile {} ({}): {}",
                ui.red("build failed:"),
                profile.name,
                self.toolchain,
                build_error_message(error)
            );
        }
        for (l, error) in self.linked_failures() {
            errln!(
                "{} profile {} ({}, {}): {}",
                ui.red("linked build failed:"),
                l.profile.name,
                l.lto,
                self.toolchain,
                linked_error_message(&l.profile, l.lto, error)
            );
        }
    }
}

/// The message of a linked build's error, naming the linked build (not the
/// asm one) and how to go without it.
pub fn linked_error_message(profile: &Profile, lto: Lto, error: &BuildError) -> String {
    let what = match error {
        BuildError::Cargo {
            command, stderr, ..
        } => {
            let hint = install_hint(profile, error, "\nfix: install the cross linker with");
            format!(
                "the linked build ({lto}) of profile {} failed: `{command}`\n{stderr}{hint}",
                profile.name
            )
        }
        BuildError::NoAsm { dir, .. } => format!(
            "the linked build ({lto}) of profile {} produced no `{}` executable in {}",
            profile.name,
            linked::EXAMPLE,
            dir.display()
        ),
        BuildError::ToolMissing { program, error } if program != "cargo" && program != "rustup" => {
            let hint =
                if error.contains("apt-get install") || error.contains("rustup component add") {
                    String::new()
                } else {
                    format!(
                        "; install it with `{}`{}, or set `objdump` in the \
                     profile's [linked] table",
                        linked::install_command(&[profile]),
                        allocasm_suite::tools::or_setup()
                    )
                };
            format!(
                "the linked view ({lto}) of profile {} has no disassembler: cannot run \
                 `{program}` ({error}){hint}",
                profile.name
            )
        }
        e => build_error_message(e),
    };
    format!(
        "{}\n  (the linked view only: --no-linked leaves it out)",
        what.trim_end()
    )
}

/// `lead`, then the command that installs `profile`'s cross tools, when
/// `error` is for want of them ([`linked::missing_tools`]); else nothing.
pub fn install_hint(profile: &Profile, error: &BuildError, lead: &str) -> String {
    if !linked::missing_tools(error) {
        return String::new();
    }
    format!(
        "{lead} `{}`{}",
        linked::install_command(&[profile]),
        allocasm_suite::tools::or_setup()
    )
}

/// The message of a build error, with the CLI's way to fix it.
pub fn build_error_message(error: &BuildError) -> String {
    match error {
        BuildError::TargetMissing { .. } => {
            format!("{error}\n  fix: run that command, or rerun with --install")
        }
        _ => error.to_string(),
    }
}

/// Every profile of `targets/`; a malformed file is a configuration error
/// (`file:line:column: what was expected`).
pub fn load_profiles(ui: &Ui) -> Result<Vec<Profile>, CliError> {
    let profiles =
        Profile::load_all(&ui.targets_dir).map_err(|e| CliError::usage(format!("{e:#}")))?;
    // (Probes found by prefix are known after the build, which validates
    // the profiles then.)
    if project::current().known_probes().is_some() {
        for p in &profiles {
            p.validate(probes())
                .map_err(|e| CliError::usage(format!("{e:#}")))?;
        }
    }
    Ok(profiles)
}

/// How alike a name must be to one typed to be suggested for it
/// ([`by_likeness`]): two edits in `probe_linear_alloc` leave 0.89; another
/// probe's name with only `probe_` and `_alloc` in common stays under 0.75.
const NEAR: f64 = 0.8;

/// The names in `candidates` to suggest for `name`, at most 3: those that
/// contain it, then the most alike (strsim), none when nothing is near.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let mut near: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.contains(name))
        .collect();
    for (likeness, c) in by_likeness(name, candidates) {
        if likeness >= NEAR && !near.contains(&c) {
            near.push(c);
        }
    }
    near.truncate(3);
    near
}

/// The profiles named (all of them when `names` is empty), in the order of
/// `targets/`; an unknown name is a usage error suggesting the nearest.
pub fn select_profiles(all: Vec<Profile>, names: &[String]) -> Result<Vec<Profile>, CliError> {
    if names.is_empty() {
        return Ok(all);
    }
    for name in names {
        if !all.iter().any(|p| &p.name == name) {
            let near = nearest(name, all.iter().map(|p| p.name.as_str()));
            return Err(CliError::usage(format!(
                "unknown profile `{name}`; {} (`allocasm list` shows every profile; a profile is \
                 a file in targets/)",
                did_you_mean(&near, "profile")
            )));
        }
    }
    Ok(all
        .into_iter()
        .filter(|p| names.iter().any(|n| n == &p.name))
        .collect())
}

/// A probe of the project by name: its whole name, or it without `probe_`,
/// or a part of one probe's name (`tempjob` is `probe_tempjob_alloc`). A
/// part of several names is a usage error listing them (`packed_alloc`: the
/// three `probe_packed_alloc_*`), an unknown name one suggesting the nearest.
pub fn find_probe(name: &str) -> Result<&'static Probe, CliError> {
    if let Some(p) = project::find(name) {
        return Ok(p);
    }
    if let Some(p) = project::find(&format!("probe_{name}")) {
        return Ok(p);
    }
    let containing: Vec<&'static Probe> =
        probes().iter().filter(|p| p.name.contains(name)).collect();
    match containing[..] {
        [one] => return Ok(one),
        [] => {}
        _ => {
            let names: Vec<String> = containing.iter().map(|p| format!("  {}", p.name)).collect();
            return Err(CliError::usage(format!(
                "`{name}` is part of {} probe names; pick one:\n{}",
                containing.len(),
                names.join("\n")
            )));
        }
    }
    let full = if name.starts_with("probe_") {
        name.to_string()
    } else {
        format!("probe_{name}")
    };
    let near = nearest(&full, probes().iter().map(|p| p.name));
    Err(CliError::usage(format!(
        "unknown probe `{name}`; {} (`allocasm list` shows every probe)",
        did_you_mean(&near, "probe")
    )))
}

/// `did you mean `a` or `b`?`, or that no `what` is named like it.
fn did_you_mean(near: &[&str], what: &str) -> String {
    if near.is_empty() {
        format!("no {what} has a name like it")
    } else {
        format!("did you mean {}?", or_list(near))
    }
}

fn or_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        0 => "nothing".to_string(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Build options for this crate: `toolchain`, the target root
/// (`target/allocasm-asm/` unless one is named), whether to install
/// missing targets.
pub fn build_options(
    toolchain: Option<String>,
    target_root: Option<&std::path::PathBuf>,
    install: bool,
) -> BuildOptions {
    BuildOptions {
        toolchain,
        target_root: target_root
            .cloned()
            .unwrap_or_else(codegen::default_target_root),
        manifest_path: codegen::manifest_dir().join("Cargo.toml"),
        install_missing_target: install,
    }
}

/// Checks the toolchain is installed before any build starts (one clear
/// error rather than one per profile).
pub fn resolve_toolchain(opts: &BuildOptions) -> Result<String, CliError> {
    build::resolve_toolchain(opts).map_err(|e| CliError::environment(build_error_message(&e)))
}

/// One profile's build: the output, and the listings when the backend
/// extracted them itself.
type BuildResult = Result<(AsmOutput, Option<ProbeListings>), BuildError>;

/// Builds `profiles` once per job (a toolchain's options), all in parallel,
/// behind one progress bar, and extracts every probe of the registry. With
/// `linked` also the linked view of every profile with a `[linked]` table
/// (release and fat LTO, in their own target dirs, after the asm builds so
/// a missing target is installed once), behind the same progress bar. A
/// failed linked build is recorded in [`Builds::linked`], never an error
/// here.
pub fn build_all(
    ui: &Ui,
    profiles: &[Profile],
    jobs: &[BuildOptions],
    backend: Backend,
    linked: bool,
) -> Result<Vec<Builds>, CliError> {
    let toolchains: Vec<String> = jobs
        .iter()
        .map(resolve_toolchain)
        .collect::<Result<_, _>>()?;
    // The linked views build allocasm's own examples; another project has none.
    let linked = linked && project::current().is_allocasm();
    let linked_jobs = if linked {
        profiles.iter().filter(|p| p.linked.is_some()).count() * Lto::ALL.len()
    } else {
        0
    };
    let total = ((profiles.len() + linked_jobs) * jobs.len()) as u64;
    let progress = ui.progress(total, "building");
    let running: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let several = jobs.len() > 1;
    let on_event =
        |tc: &str, event: BuildEvent| on_event(ui, &progress, &running, several, tc, event);
    // Missing targets are installed here, once per (toolchain, triple) and
    // one rustup process at a time, before any parallel build starts.
    for (opts, tc) in jobs.iter().zip(&toolchains) {
        build::install_targets(profiles, opts, &|e| on_event(tc, e))
            .map_err(|e| CliError::environment(build_error_message(&e)))?;
    }
    let results: Vec<Vec<BuildResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .zip(&toolchains)
            .map(|(opts, tc)| {
                let on_event = &on_event;
                s.spawn(move || match backend {
                    Backend::Builtin => build::build_profiles(profiles, opts, &|e| on_event(tc, e))
                        .into_iter()
                        .map(|r| r.map(|o| (o, None)))
                        .collect(),
                    Backend::CargoShowAsm => {
                        cargo_show_asm::build_profiles(profiles, opts, probes(), &|e| {
                            on_event(tc, e)
                        })
                        .into_iter()
                        .map(|r| r.map(|(o, l)| (o, Some(l))))
                        .collect()
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("build thread"))
            .collect()
    });
    // A project whose probes are found by prefix learns them here, from
    // every build that worked, before any listing is extracted.
    if project::current().known_probes().is_none() {
        let mut names = BTreeSet::new();
        for (results, _) in results.iter().zip(&toolchains) {
            for (profile, r) in profiles.iter().zip(results) {
                if let Ok((output, _)) = r {
                    names.extend(codegen::function_names(profile, output));
                }
            }
        }
        project::found_in(names.iter().map(String::as_str));
        for p in profiles {
            p.validate(probes())
                .map_err(|e| CliError::usage(format!("{e:#}")))?;
        }
    }
    let linked_results: Vec<Vec<LinkedBuilt>> = if linked_jobs == 0 {
        jobs.iter().map(|_| Vec::new()).collect()
    } else {
        jobs.iter()
            .zip(&toolchains)
            .map(|(opts, tc)| {
                linked::build_all_linked(profiles, opts, &|e| on_event(tc, e))
                    .into_iter()
                    .map(|(name, lto, result)| {
                        let profile = profiles
                            .iter()
                            .find(|p| p.name == name)
                            .expect("a profile asked for")
                            .clone();
                        if result.is_err() {
                            // No `Finished` event came: settle its step.
                            settle(&progress, &running, several, tc, &format!("{name} ({lto})"));
                        }
                        let result = result.map(|out| {
                            let listings = linked::extract_linked(&profile, &out, probes());
                            (out, listings)
                        });
                        LinkedBuilt {
                            profile,
                            lto,
                            result,
                        }
                    })
                    .collect()
            })
            .collect()
    };
    progress.finish();
    let mut out = Vec::new();
    for ((results, toolchain), linked) in results.into_iter().zip(toolchains).zip(linked_results) {
        let mut builds = Builds {
            toolchain,
            built: Vec::new(),
            failed: Vec::new(),
            unavailable: Vec::new(),
            linked,
        };
        for (profile, result) in profiles.iter().zip(results) {
            match result {
                Ok((output, listings)) => {
                    let listings = listings
                        .unwrap_or_else(|| codegen::extract_probes(profile, &output, probes()));
                    builds.built.push(Built {
                        profile: profile.clone(),
                        output,
                        listings,
                    });
                }
                Err(e) if e.is_not_available() => builds.unavailable.push((profile.clone(), e)),
                Err(e) => builds.failed.push((profile.clone(), e)),
            }
        }
        out.push(builds);
    }
    Ok(out)
}

/// [`build_all`] with one toolchain's options.
pub fn build_one(
    ui: &Ui,
    profiles: &[Profile],
    opts: BuildOptions,
    backend: Backend,
    linked: bool,
) -> Result<Builds, CliError> {
    Ok(build_all(ui, profiles, &[opts], backend, linked)?
        .pop()
        .expect("one toolchain"))
}

/// A finished build as a log shows it: `built x86_64-linux (1.99.1) in
/// 23.4 s`, `built x86_64-linux (linked release-lto, 1.99.1) in 0.2 s (up
/// to date)` for a linked build that had nothing to do.
fn finished_line(profile: &str, toolchain: &str, fresh: bool, elapsed: Duration) -> String {
    let what = match profile.strip_suffix(')').and_then(|p| p.split_once(" (")) {
        Some((name, lto)) => format!("{name} (linked {lto}, {toolchain})"),
        None => format!("{profile} ({toolchain})"),
    };
    format!(
        "built {what} in {:.1} s{}",
        elapsed.as_secs_f64(),
        if fresh { " (up to date)" } else { "" }
    )
}

/// A build's name in the bar's list of running builds: its profile, after
/// its toolchain when several toolchains build.
fn step_key(several: bool, toolchain: &str, profile: &str) -> String {
    if several {
        format!("{toolchain}/{profile}")
    } else {
        profile.to_string()
    }
}

fn show_running(progress: &Progress, running: &BTreeSet<String>) {
    let names: Vec<&str> = running.iter().map(String::as_str).collect();
    progress.message(names.join(", "));
}

/// Counts a build that ended (with or without a `Finished` event) and drops
/// it from the bar's list of running builds.
fn settle(
    progress: &Progress,
    running: &Mutex<BTreeSet<String>>,
    several: bool,
    toolchain: &str,
    profile: &str,
) {
    progress.inc();
    let mut r = running.lock().expect("progress lock");
    r.remove(&step_key(several, toolchain, profile));
    show_running(progress, &r);
}

fn on_event(
    ui: &Ui,
    progress: &Progress,
    running: &Mutex<BTreeSet<String>>,
    several: bool,
    toolchain: &str,
    event: BuildEvent,
) {
    let key = |profile: &str| step_key(several, toolchain, profile);
    match event {
        BuildEvent::InstallingTarget { profile, command } => {
            progress.println(&format!("{}: running `{command}`", key(&profile)));
        }
        BuildEvent::Started { profile, command } => {
            if ui.verbose {
                progress.println(&format!("{}: {command}", key(&profile)));
            }
            let mut r = running.lock().expect("progress lock");
            r.insert(key(&profile));
            show_running(progress, &r);
        }
        BuildEvent::Cargo { profile, line } => {
            if ui.verbose {
                progress.println(&format!("{}: {line}", key(&profile)));
            }
        }
        BuildEvent::Finished {
            profile,
            fresh,
            elapsed,
        } => {
            if ui.logs_progress() {
                progress.println(&finished_line(&profile, toolchain, fresh, elapsed));
            } else if ui.verbose {
                progress.println(&format!(
                    "{}: {} in {:.1}s",
                    key(&profile),
                    if fresh { "up to date" } else { "built" },
                    elapsed.as_secs_f64()
                ));
            }
            settle(progress, running, several, toolchain, &profile);
        }
    }
}
