//! `allocasm bisect PROBE -p P --good A --bad B`: the first dated nightly
//! whose normalized hot path of one probe (with `--whole`: the whole
//! normalized listing) differs from the good toolchain's, found as
//! cargo-bisect-rustc finds a regression.
//!
//! The search is [`allocasm_suite::bisect`]'s [`Bisector`]; this module
//! gives it an oracle and writes what it found. The oracle installs each toolchain it needs (one rustup call at a
//! time, only with `--install`), builds the one profile, extracts the probe,
//! and uninstalls what it installed unless `--keep`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use allocasm_suite::codegen::build::{self, BuildError, BuildEvent, BuildOptions};
use allocasm_suite::codegen::project::probes;
use allocasm_suite::codegen::{self, Profile};
#[cfg(test)]
use allocasm_suite::render;
use allocasm_suite::render::{Block, Doc, Mark, Text};
use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use super::history::{install_line, install_toolchain, is_installed, uninstall_toolchain};
use super::session;
use super::{CliError, OutputArgs, Status, Ui};
#[cfg(test)]
use allocasm_suite::bisect::Found;
use allocasm_suite::bisect::{BisectError, Bisector, Outcome, Sample, Sampled, Step, Verdict};
use allocasm_suite::history::failure_reason;
use allocasm_suite::toolchain::nightly_date;

/// `bisect` arguments.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The probe (`probe_segregated_alloc`, or `segregated_alloc`)
    #[arg(value_name = "PROBE")]
    pub probe: String,
    /// The one profile to build (a targets/*.toml name)
    #[arg(short, long = "profile", value_name = "P", required = true)]
    pub profile: String,
    /// A toolchain whose listing is the reference (a release such as 1.95.0, or
    /// nightly-YYYY-MM-DD)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub good: String,
    /// A later toolchain whose listing differs (a release such as 1.99.1, or nightly-YYYY-MM-DD)
    #[arg(long, value_name = "TOOLCHAIN")]
    pub bad: String,
    /// Compare the whole normalized listing, not only the hot path
    #[arg(long)]
    pub whole: bool,
    /// Install each toolchain needed (`rustup toolchain install <tc> --profile minimal`, and
    /// `rustup target add` for the profile's target), one rustup call at a time
    #[arg(long)]
    pub install: bool,
    /// Keep the toolchains --install installed (default: uninstall each once it is built)
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Root of the per-toolchain, per-profile target dirs [default: target/allocasm-asm/]
    #[arg(long, value_name = "DIR")]
    pub target_root: Option<PathBuf>,
}

/// The CLI's oracle: installs (with `--install`), builds the one profile,
/// extracts the probe, uninstalls what it installed (unless `--keep`).
struct Builder<'a> {
    ui: &'a Ui,
    args: &'a BisectArgs,
    profile: &'a Profile,
    probe: &'static str,
    opts: BuildOptions,
    /// Toolchains installed and still there (with `--keep`).
    kept: Vec<String>,
}

impl Builder<'_> {
    fn sample(&mut self, tc: &str) -> Result<Sampled, CliError> {
        let mut installed_now = false;
        if !is_installed(tc)? {
            if !self.args.install {
                return Err(CliError::environment(format!(
                    "toolchain `{tc}` is not installed; run `{}` (and again for each toolchain \
                     the search needs), or rerun with --install",
                    install_line(tc)
                )));
            }
            if let Err(why) = install_toolchain(self.ui, tc) {
                return Ok(Sampled::Unavailable(format!(
                    "not available: {}",
                    short_reason(&why)
                )));
            }
            installed_now = true;
        }
        let result = self.build(tc);
        if installed_now {
            if self.args.keep {
                self.kept.push(tc.to_string());
            } else if let Err(e) = uninstall_toolchain(self.ui, tc) {
                self.ui
                    .note(&format!("could not uninstall {tc}: {e} (left installed)"));
            }
        }
        result
    }

    fn build(&mut self, tc: &str) -> Result<Sampled, CliError> {
        let note = |e: BuildEvent| match e {
            BuildEvent::InstallingTarget { command, .. } => {
                self.ui.note(&format!("running `{command}`"));
            }
            BuildEvent::Started { command, .. } if self.ui.verbose => self.ui.note(&command),
            _ => {}
        };
        match build::ensure_target(
            tc,
            &self.profile.triple,
            self.args.install,
            &note,
            &self.profile.name,
        ) {
            Ok(()) => {}
            Err(e @ BuildError::TargetMissing { .. }) => {
                return Err(CliError::environment(session::build_error_message(&e)));
            }
            Err(e) => return Ok(Sampled::Unavailable(failure_reason(&e))),
        }
        let mut opts = self.opts.clone();
        opts.toolchain = Some(tc.to_string());
        let output = match build::build_profile(self.profile, &opts, &note) {
            Ok(o) => o,
            Err(e) => return Ok(Sampled::Unavailable(failure_reason(&e))),
        };
        let listings = codegen::extract_probes(self.profile, &output, probes());
        let (text, instructions) = match (
            listings.listing(self.probe),
            listings.hot_path(self.profile, self.probe),
        ) {
            (Some(l), _) if self.args.whole => (l.text(), Some(l.instructions().count())),
            (Some(_), Some(h)) => (h.text(), Some(h.instructions)),
            _ => (
                "(missing: the probe is not in this build)\n".to_string(),
                None,
            ),
        };
        Ok(Sampled::Built(Sample {
            text,
            instructions,
            rustc_vv: output.rustc_version,
        }))
    }
}

/// rustup's reason without its trailing advice ("Sometimes not all
/// components are available in any given nightly. …").
fn short_reason(why: &str) -> &str {
    why.split("Sometimes not all components")
        .next()
        .unwrap_or(why)
        .trim_end()
}

fn describe(s: &Sampled, o: Outcome) -> String {
    match s {
        Sampled::Built(b) => format!(
            "{} ({})",
            b.instructions
                .map_or_else(|| "missing".to_string(), |n| format!("{n} instructions")),
            if o == Outcome::Changed {
                "changed"
            } else {
                "unchanged"
            }
        ),
        Sampled::Unavailable(why) => format!("skipped: {why}"),
    }
}

/// A toolchain in the JSON; each field but the name null when it did not
/// build.
#[derive(Serialize, JsonSchema)]
struct JsonToolchain {
    /// The rustup name.
    toolchain: String,
    /// `rustc -vV`'s first line.
    release: Option<String>,
    /// `rustc -vV`'s `commit-hash:`.
    commit_hash: Option<String>,
    /// `rustc -vV`'s `commit-date:`.
    commit_date: Option<String>,
    /// The compared text's instruction count (null: the probe is missing).
    instructions: Option<usize>,
}

/// `bisect --format json` (`allocasm-bisect/1`; docs/history-json.md).
#[derive(Serialize, JsonSchema)]
struct JsonBisect {
    /// `allocasm-bisect/1`.
    schema: &'static str,
    /// The probe bisected.
    probe: String,
    /// The profile it was built for.
    profile: String,
    /// `hot-path` or (`--whole`) `whole`.
    compared: &'static str,
    /// `found` (exit 0) or `no-change` (exit 1).
    status: &'static str,
    /// The good toolchain as given.
    good: JsonToolchain,
    /// The bad toolchain as given.
    bad: JsonToolchain,
    /// The consecutive releases where the text changes.
    releases: Option<[String; 2]>,
    /// The first and last nightly of the window searched.
    window: Option<[String; 2]>,
    /// The answer's good side (null with `no-change`).
    last_unchanged: Option<JsonToolchain>,
    /// The answer's bad side (null with `no-change`).
    first_changed: Option<JsonToolchain>,
    /// `[toolchain, reason]` of each toolchain skipped, in the order tried.
    skipped: Vec<[String; 2]>,
    /// The unified diff from `last_unchanged` to `first_changed`.
    diff: Option<String>,
}

fn json_toolchain(cache: &BTreeMap<String, Sampled>, tc: &str) -> JsonToolchain {
    let s = match cache.get(tc) {
        Some(Sampled::Built(b)) => Some(b),
        _ => None,
    };
    JsonToolchain {
        toolchain: tc.to_string(),
        release: s
            .map(|s| s.rustc().release().to_string())
            .filter(|r| !r.is_empty()),
        commit_hash: s.and_then(|s| s.rustc().field("commit-hash").map(str::to_string)),
        commit_date: s.and_then(|s| s.rustc().field("commit-date").map(str::to_string)),
        instructions: s.and_then(|s| s.instructions),
    }
}

/// The unified diff of two toolchains' compared texts.
fn unified(cache: &BTreeMap<String, Sampled>, a: &str, b: &str) -> String {
    let text_of = |tc: &str| match cache.get(tc) {
        Some(Sampled::Built(b)) => b.text.clone(),
        _ => String::new(),
    };
    allocasm_suite::diff::unified(&text_of(a), &text_of(b), a, b)
}

/// The result as JSON.
fn json(
    args: &BisectArgs,
    probe: &str,
    verdict: &Verdict,
    cache: &BTreeMap<String, Sampled>,
) -> String {
    let compared = if args.whole { "whole" } else { "hot-path" };
    let found = match verdict {
        Verdict::Found(f) => Some(f),
        Verdict::NoChange => None,
    };
    let doc = JsonBisect {
        schema: "allocasm-bisect/1",
        probe: probe.to_string(),
        profile: args.profile.clone(),
        compared,
        status: if found.is_some() {
            "found"
        } else {
            "no-change"
        },
        good: json_toolchain(cache, &args.good),
        bad: json_toolchain(cache, &args.bad),
        releases: found.and_then(|f| f.releases.clone().map(|(a, b)| [a, b])),
        window: found.and_then(|f| f.window.clone().map(|(a, b)| [a, b])),
        last_unchanged: found.map(|f| json_toolchain(cache, &f.last_unchanged)),
        first_changed: found.map(|f| json_toolchain(cache, &f.first_changed)),
        skipped: found
            .map(|f| {
                f.skipped
                    .iter()
                    .map(|(a, b)| [a.clone(), b.clone()])
                    .collect()
            })
            .unwrap_or_default(),
        diff: found.map(|f| unified(cache, &f.last_unchanged, &f.first_changed)),
    };
    serde_json::to_string_pretty(&doc).expect("serializable") + "\n"
}

/// The result as a document: the two ends, what the search found, the diff.
fn document(
    args: &BisectArgs,
    probe: &str,
    verdict: &Verdict,
    cache: &BTreeMap<String, Sampled>,
) -> Doc {
    let what = if args.whole { "listing" } else { "hot path" };
    let hash = |tc: &str| {
        json_toolchain(cache, tc)
            .commit_hash
            .unwrap_or_else(|| "unknown".into())
    };
    let mut doc = Doc::new(format!("allocasm bisect {probe}"));
    doc.push(Block::Heading(
        1,
        Text::plain("bisect ")
            .with(Mark::Code, probe)
            .then(format!(" on {} ({what})", args.profile)),
    ));
    let mut items = Vec::new();
    for (label, tc) in [("good", &args.good), ("bad", &args.bad)] {
        let j = json_toolchain(cache, tc);
        items.push(Text::plain(format!(
            "{label} {tc}: {} · {}",
            j.release.unwrap_or_default(),
            j.instructions
                .map_or_else(|| "missing".into(), |n| format!("{n} instructions"))
        )));
    }
    let f = match verdict {
        Verdict::NoChange => {
            items.push(Text::plain(format!(
                "the {what} is the same under {} and {}: nothing to bisect",
                args.good, args.bad
            )));
            doc.push(Block::List(items));
            return doc;
        }
        Verdict::Found(f) => f,
    };
    if let Some((a, b)) = &f.releases {
        items.push(Text::plain(format!(
            "releases: changed between {a} and {b}"
        )));
    }
    if let Some((a, b)) = &f.window {
        items.push(Text::plain(format!("nightlies searched: {a} … {b}")));
    }
    for (tc, why) in &f.skipped {
        items.push(Text::plain(format!("skipped {tc}: {why}")));
    }
    let (lu, fc) = (&f.last_unchanged, &f.first_changed);
    items.push(Text::plain(format!("last unchanged: {lu} ({})", hash(lu))));
    items.push(Text::plain(format!("first changed: {fc} ({})", hash(fc))));
    if let (Some(a), Some(b)) = (
        json_toolchain(cache, lu).commit_hash,
        json_toolchain(cache, fc).commit_hash,
    ) {
        items.push(Text::plain(format!(
            "commits: https://github.com/rust-lang/rust/compare/{a}...{b}"
        )));
    }
    doc.push(Block::List(items));
    doc.push(Block::Diff {
        title: format!("{lu} → {fc}"),
        text: unified(cache, lu, fc),
    });
    doc
}

/// Runs the bisection and prints the result.
pub fn run(ui: &Ui, args: &BisectArgs) -> Result<Status, CliError> {
    let probe = session::find_probe(&args.probe)?;
    let profiles = session::select_profiles(
        session::load_profiles(ui)?,
        std::slice::from_ref(&args.profile),
    )?;
    let profile = profiles.first().expect("one profile selected");
    if args.good == args.bad {
        return Err(CliError::usage("--good and --bad name the same toolchain"));
    }
    for tc in [&args.good, &args.bad] {
        if tc.starts_with("nightly-") && nightly_date(tc).is_none() {
            return Err(CliError::usage(format!(
                "`{tc}` is not a dated nightly (nightly-YYYY-MM-DD)"
            )));
        }
    }
    let mut builder = Builder {
        ui,
        args,
        profile,
        probe: probe.name,
        opts: session::build_options(None, args.target_root.as_ref(), false),
        kept: Vec::new(),
    };
    let mut oracle = |tc: &str| builder.sample(tc);
    let mut progress = |step: &Step<'_>| {
        ui.note(&format!(
            "[{}/{}] {}: {}",
            step.index,
            step.estimate,
            step.toolchain,
            describe(step.sampled, step.outcome)
        ));
    };
    let mut bisector = Bisector::new(&mut oracle, &mut progress);
    let verdict = bisector.run(&args.good, &args.bad);
    let cache = std::mem::take(&mut bisector.cache);
    drop(bisector);
    if !builder.kept.is_empty() {
        ui.note(&format!(
            "kept (--keep): {}; `rustup toolchain uninstall <tc>` removes them",
            builder.kept.join(", ")
        ));
    }
    let verdict = verdict.map_err(|e| match e {
        BisectError::Oracle(e) => e,
        BisectError::Endpoint { toolchain, reason } => {
            CliError::environment(format!("{toolchain} gives no listing to compare: {reason}"))
        }
        BisectError::Window(why) => CliError::environment(why),
    })?;
    args.output.write(
        ui,
        || document(args, probe.name, &verdict, &cache),
        || json(args, probe.name, &verdict, &cache),
    )?;
    Ok(match verdict {
        Verdict::Found(_) => Status::Ok,
        Verdict::NoChange => Status::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_json_schema_is_the_generated_one() {
        crate::cli::check_schema::<JsonBisect>("bisect.schema.json");
    }

    /// The found change as a document, in text and HTML: the two ends, the
    /// window, a skipped nightly, the compare link and the diff.
    #[test]
    fn the_document_says_what_was_found_in_every_format() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: BisectArgs,
        }
        let argv = ["allocasm", "probe_x", "-p", "x86_64-linux", "--good"];
        let argv = [
            &argv[..],
            &["nightly-2026-06-01", "--bad", "nightly-2026-06-09"],
        ]
        .concat();
        let args = <Cli as clap::Parser>::parse_from(argv).args;
        let sample = |date: &str, text: &str| {
            Sampled::Built(Sample {
                text: text.to_string(),
                instructions: Some(text.lines().count()),
                rustc_vv: format!(
                    "rustc x (abc {date})\ncommit-hash: hash-{date}\ncommit-date: {date}\nLLVM version: 22"
                ),
            })
        };
        let cache: BTreeMap<String, Sampled> = [
            (
                "nightly-2026-06-01",
                sample("2026-05-31", "mov rax, rdi\nret\n"),
            ),
            (
                "nightly-2026-06-04",
                sample("2026-06-03", "mov rax, rdi\nret\n"),
            ),
            (
                "nightly-2026-06-05",
                Sampled::Unavailable("no such toolchain".into()),
            ),
            (
                "nightly-2026-06-06",
                sample("2026-06-05", "mov rax, rdi\nadd rax, 8\nret\n"),
            ),
            (
                "nightly-2026-06-09",
                sample("2026-06-08", "mov rax, rdi\nadd rax, 8\nret\n"),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let verdict = Verdict::Found(Found {
            releases: None,
            window: Some(("nightly-2026-06-01".into(), "nightly-2026-06-09".into())),
            last_unchanged: "nightly-2026-06-04".into(),
            first_changed: "nightly-2026-06-06".into(),
            skipped: vec![("nightly-2026-06-05".into(), "no such toolchain".into())],
        });
        let doc = document(&args, "probe_x", &verdict, &cache);
        insta::assert_snapshot!("bisect_text", render::text::render(&doc, false));
        insta::assert_snapshot!("bisect_html", render::html::render(&doc));
    }

    #[test]
    fn rustups_advice_is_cut_from_a_reason() {
        assert_eq!(
            short_reason(
                "error: some components are unavailable for download for channel \
                 'nightly-2026-07-29': 'cargo'Sometimes not all components are available"
            ),
            "error: some components are unavailable for download for channel 'nightly-2026-07-29': \
             'cargo'"
        );
        assert_eq!(
            short_reason("error: no release found"),
            "error: no release found"
        );
    }
}
