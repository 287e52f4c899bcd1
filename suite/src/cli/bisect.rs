//! `allocasm bisect PROBE -p P --good A --bad B`: the first dated nightly
//! whose normalized hot path of one probe (with `--whole`: the whole
//! normalized listing) differs from the good toolchain's, found as
//! cargo-bisect-rustc finds a regression.
//!
//! The search ([`Bisector`]) is separate from building: it asks an oracle
//! (`FnMut(&str) -> Result<Sampled, E>`, a toolchain name in, that
//! toolchain's normalized text or why it has none out) and never builds
//! itself, so the tests drive it with a fake. The steps:
//!
//! 1. good and bad are sampled; equal texts mean nothing to bisect.
//! 2. Between two releases more than one minor version apart, the releases
//!    between (`1.96.0`, `1.97.0`, …) are binary-searched for the
//!    consecutive pair where the text changes.
//! 3. The window of nightlies: from the good release's `commit-date` (of
//!    `rustc -vV`) less 7 weeks (its code branched to beta about 6 weeks
//!    before its release), to the bad release's branch point plus a week
//!    (its `commit-date`, or its scheduled six-weekly release date if that is
//!    earlier, less 5 weeks). The start is checked to equal good and the end
//!    to differ from it; either is widened by 6 weeks (the end at first to
//!    the bad release's `commit-date`) until it does.
//! 4. The dated nightlies of the window are binary-searched; a date rustup
//!    has no toolchain for, or whose build fails, is skipped (its neighbour
//!    is tried instead).
//!
//! The CLI's oracle installs each toolchain it needs (one rustup call at a
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
use similar::TextDiff;

use super::history::{
    failure_reason, install_line, install_toolchain, is_installed, unavailable, uninstall_toolchain,
};
use super::session;
use super::{CliError, OutputArgs, Status, Ui};
use allocasm_suite::toolchain::{Date, RustcVersion, nightly_date, release, scheduled_release};

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

/// One toolchain's normalized text, as the oracle found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The compared text: the hot path's lines, or the whole listing.
    pub text: String,
    /// Its instruction count (`None`: the probe is not in the build).
    pub instructions: Option<usize>,
    /// `rustc -vV` of the toolchain.
    pub rustc_vv: String,
}

impl Sample {
    /// `rustc -vV` of the toolchain, read.
    pub fn rustc(&self) -> RustcVersion<'_> {
        RustcVersion::parse(&self.rustc_vv)
    }

    fn commit_date(&self) -> Option<Date> {
        self.rustc().commit_date()
    }
}

/// What the oracle says about a toolchain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sampled {
    /// It built; the text.
    Built(Sample),
    /// No such toolchain, or it does not build: skipped, with why.
    Unavailable(String),
}

/// What a search compares: a sample against good's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Same text as good.
    Unchanged,
    /// A different text.
    Changed,
    /// Skipped.
    Unavailable,
}

/// One step, for progress lines.
#[derive(Debug, Clone)]
pub struct Step<'a> {
    /// 1-based.
    pub index: usize,
    /// The number of steps expected so far.
    pub estimate: usize,
    /// The toolchain.
    pub toolchain: &'a str,
    /// What it gave.
    pub sampled: &'a Sampled,
    /// Compared with good.
    pub outcome: Outcome,
}

/// Why a bisection could not finish.
#[derive(Debug)]
pub enum BisectError<E> {
    /// The oracle's own error (a toolchain to install without `--install`).
    Oracle(E),
    /// Good or bad has no text.
    Endpoint {
        /// The toolchain.
        toolchain: String,
        /// Why.
        reason: String,
    },
    /// No window endpoint equal to good (or differing from it) was found.
    Window(String),
}

/// The result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Good and bad have the same text.
    NoChange,
    /// The first change.
    Found(Found),
}

/// The first change, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The consecutive releases where the text changes, when good and bad
    /// were releases further apart.
    pub releases: Option<(String, String)>,
    /// The nightly window searched (first and last toolchain built at its ends).
    pub window: Option<(String, String)>,
    /// The last toolchain equal to good.
    pub last_unchanged: String,
    /// The first that differs.
    pub first_changed: String,
    /// Toolchains skipped, with why, in the order tried.
    pub skipped: Vec<(String, String)>,
}

/// The search: an oracle, its answers cached, and good's text.
pub struct Bisector<'a, E> {
    oracle: &'a mut dyn FnMut(&str) -> Result<Sampled, E>,
    progress: &'a mut dyn FnMut(&Step<'_>),
    /// Every answer so far, by toolchain.
    pub cache: BTreeMap<String, Sampled>,
    /// Good's text, once sampled (until then every sample is "unchanged":
    /// the first one is good itself).
    good_text: Option<String>,
    steps: usize,
    estimate: usize,
    skipped: Vec<(String, String)>,
}

fn log2_ceil(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()) as usize
}

impl<'a, E> Bisector<'a, E> {
    /// A search over `oracle`, reporting each new answer to `progress`.
    pub fn new(
        oracle: &'a mut dyn FnMut(&str) -> Result<Sampled, E>,
        progress: &'a mut dyn FnMut(&Step<'_>),
    ) -> Self {
        Bisector {
            oracle,
            progress,
            cache: BTreeMap::new(),
            good_text: None,
            steps: 0,
            estimate: 2,
            skipped: Vec::new(),
        }
    }

    fn sample(&mut self, tc: &str) -> Result<(Sampled, Outcome), E> {
        if let Some(s) = self.cache.get(tc) {
            let s = s.clone();
            let o = self.outcome(&s);
            return Ok((s, o));
        }
        let s = (self.oracle)(tc)?;
        let o = self.outcome(&s);
        self.steps += 1;
        self.estimate = self.estimate.max(self.steps);
        (self.progress)(&Step {
            index: self.steps,
            estimate: self.estimate,
            toolchain: tc,
            sampled: &s,
            outcome: o,
        });
        if let Sampled::Unavailable(why) = &s {
            self.skipped.push((tc.to_string(), why.clone()));
        }
        self.cache.insert(tc.to_string(), s.clone());
        Ok((s, o))
    }

    fn outcome(&self, s: &Sampled) -> Outcome {
        match s {
            Sampled::Built(b) if self.good_text.as_ref().is_none_or(|g| *g == b.text) => {
                Outcome::Unchanged
            }
            Sampled::Built(_) => Outcome::Changed,
            Sampled::Unavailable(_) => Outcome::Unavailable,
        }
    }

    /// Binary search of `candidates`: the first is known unchanged, the last
    /// changed. An unavailable candidate is skipped for its nearest
    /// neighbour inside the open interval. Returns the adjacent pair
    /// (indices) among the available ones.
    pub fn search(&mut self, candidates: &[String]) -> Result<(usize, usize), E> {
        let (mut lo, mut hi) = (0, candidates.len().saturating_sub(1));
        self.estimate = self.steps + log2_ceil(hi - lo);
        'outer: while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            // mid, mid+1, mid-1, mid+2, mid-2, … inside (lo, hi).
            let mut order = vec![mid];
            for d in 1..(hi - lo) {
                if mid + d < hi {
                    order.push(mid + d);
                }
                if mid >= lo + 1 + d {
                    order.push(mid - d);
                }
            }
            for i in order {
                match self.sample(&candidates[i])?.1 {
                    Outcome::Unchanged => {
                        lo = i;
                        self.estimate = self.steps + log2_ceil(hi - lo);
                        continue 'outer;
                    }
                    Outcome::Changed => {
                        hi = i;
                        self.estimate = self.steps + log2_ceil(hi - lo);
                        continue 'outer;
                    }
                    Outcome::Unavailable => self.estimate += 1,
                }
            }
            break; // everything between lo and hi is unavailable
        }
        Ok((lo, hi))
    }

    /// The first toolchain of `dates` (in order) that is available.
    fn first_available(&mut self, dates: &[Date]) -> Result<Option<(Date, Outcome)>, E> {
        for d in dates {
            let (_, o) = self.sample(&d.nightly())?;
            if o != Outcome::Unavailable {
                return Ok(Some((*d, o)));
            }
        }
        Ok(None)
    }

    /// The whole bisection of `good` → `bad` (see the module docs).
    pub fn run(&mut self, good: &str, bad: &str) -> Result<Verdict, BisectError<E>> {
        let endpoint = |tc: &str, s: Sampled| match s {
            Sampled::Built(b) => Ok(b),
            Sampled::Unavailable(reason) => Err(BisectError::Endpoint {
                toolchain: tc.to_string(),
                reason,
            }),
        };
        let g = self.sample(good).map_err(BisectError::Oracle)?.0;
        let g = endpoint(good, g)?;
        self.good_text = Some(g.text.clone());
        let b = self.sample(bad).map_err(BisectError::Oracle)?.0;
        let b = endpoint(bad, b)?;
        if b.text == g.text {
            return Ok(Verdict::NoChange);
        }
        // Releases first.
        let (mut rg, mut rb) = (good.to_string(), bad.to_string());
        let mut releases = None;
        if let (Some(a), Some(z)) = (release(good), release(bad))
            && a.0 == z.0
            && z.1 > a.1 + 1
        {
            let mut list = vec![good.to_string()];
            list.extend((a.1 + 1..z.1).map(|m| format!("{}.{m}.0", a.0)));
            list.push(bad.to_string());
            let (lo, hi) = self.search(&list).map_err(BisectError::Oracle)?;
            rg = list[lo].clone();
            rb = list[hi].clone();
            releases = Some((rg.clone(), rb.clone()));
        }
        // Both dated nightlies: the window is theirs.
        if let (Some(s), Some(e)) = (nightly_date(&rg), nightly_date(&rb)) {
            let list = days(s, e);
            let (lo, hi) = self.search(&list).map_err(BisectError::Oracle)?;
            return Ok(Verdict::Found(Found {
                releases,
                window: Some((rg, rb)),
                last_unchanged: list[lo].clone(),
                first_changed: list[hi].clone(),
                skipped: self.skipped.clone(),
            }));
        }
        let built = |s: &Self, tc: &str| match s.cache.get(tc) {
            Some(Sampled::Built(b)) => Some(b.clone()),
            _ => None,
        };
        let (sg, sb) = (built(self, &rg), built(self, &rb));
        let date_of = |tc: &str, s: &Option<Sample>| {
            nightly_date(tc).or_else(|| s.as_ref().and_then(Sample::commit_date))
        };
        let (Some(g_date), Some(b_date)) = (date_of(&rg, &sg), date_of(&rb, &sb)) else {
            return Err(BisectError::Window(format!(
                "no commit-date in `rustc -vV` of {rg} or {rb}: cannot place them among nightlies"
            )));
        };
        let mut start = if nightly_date(&rg).is_some() {
            g_date
        } else {
            g_date.add(-49)
        };
        let mut end = match release(&rb) {
            _ if nightly_date(&rb).is_some() => b_date,
            Some((_, minor, _)) => b_date.min(scheduled_release(minor)).add(-35),
            None => b_date.add(1),
        };
        let mut end_is_wide = nightly_date(&rb).is_some() || release(&rb).is_none();
        self.estimate = self.steps + 2 + log2_ceil((end.0 - start.0).max(1) as usize);
        // The start must equal good.
        let mut known_changed: Option<Date> = None;
        let mut start_found = None;
        for _ in 0..6 {
            let tries: Vec<Date> = (0..7).map(|i| start.add(-i)).collect();
            match self.first_available(&tries).map_err(BisectError::Oracle)? {
                Some((d, Outcome::Unchanged)) => {
                    start_found = Some(d);
                    break;
                }
                Some((d, _)) => {
                    known_changed = Some(known_changed.map_or(d, |k: Date| k.min(d)));
                    start = start.add(-42);
                }
                None => start = start.add(-7),
            }
        }
        let Some(start) = start_found else {
            return Err(BisectError::Window(format!(
                "no nightly equal to {good} found back to nightly-{start}"
            )));
        };
        // The end must differ from good.
        let mut end_found = known_changed;
        if end_found.is_none() {
            for _ in 0..6 {
                let end_c = end.max(start.add(1));
                // Back towards the start first (a nightly that cannot build
                // is as likely as its neighbours to fail), then a few later.
                let mut tries: Vec<Date> = [0, -1, -2, -3, -4, -5, -6, -7, -10, -14, -21]
                    .into_iter()
                    .map(|i| end_c.add(i))
                    .filter(|d| *d > start)
                    .collect();
                tries.extend((1..4).map(|i| end_c.add(i)));
                match self.first_available(&tries).map_err(BisectError::Oracle)? {
                    Some((d, Outcome::Changed)) => {
                        end_found = Some(d);
                        break;
                    }
                    Some((_, _)) | None => {
                        if !end_is_wide {
                            end = b_date.add(1).max(end.add(7));
                            end_is_wide = true;
                        } else {
                            end = end.add(42);
                        }
                    }
                }
            }
        }
        let Some(end) = end_found else {
            return Err(BisectError::Window(format!(
                "no nightly differing from {good} found up to nightly-{end}"
            )));
        };
        // A later start equal to good narrows the window.
        let start = self
            .cache
            .iter()
            .filter_map(|(tc, s)| Some((nightly_date(tc)?, s)))
            .filter(|(d, s)| *d > start && *d < end && self.outcome(s) == Outcome::Unchanged)
            .map(|(d, _)| d)
            .max()
            .unwrap_or(start);
        let list = days(start, end);
        let (lo, hi) = self.search(&list).map_err(BisectError::Oracle)?;
        Ok(Verdict::Found(Found {
            releases,
            window: Some((start.nightly(), end.nightly())),
            last_unchanged: list[lo].clone(),
            first_changed: list[hi].clone(),
            skipped: self.skipped.clone(),
        }))
    }
}

/// `nightly-<d>` for every day from `start` to `end`, both included.
fn days(start: Date, end: Date) -> Vec<String> {
    (start.0..=end.0).map(|d| Date(d).nightly()).collect()
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
            Err(e) => {
                return Ok(Sampled::Unavailable(
                    unavailable(&e).unwrap_or_else(|| failure_reason(&e)),
                ));
            }
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
    TextDiff::from_lines(&text_of(a), &text_of(b))
        .unified_diff()
        .context_radius(3)
        .header(a, b)
        .to_string()
}

/// The result as JSON.
fn json(
    args: &BisectArgs,
    probe: &str,
    verdict: &Verdict,
    cache: &BTreeMap<String, Sampled>,
) -> String {
    let compared = if args.whole { "whole" } else { "hot-path" };
    {
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
    let text = args.output.render(
        ui,
        || document(args, probe.name, &verdict, &cache),
        || json(args, probe.name, &verdict, &cache),
    );
    args.output.write(ui, &text)?;
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
                rustc_vv: vv(Date::parse(date).unwrap()),
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

    /// A fake world: each toolchain's text (by release or nightly date), the
    /// dates rustup has nothing for, and a log of what was asked.
    struct World {
        /// The first nightly with the new text.
        change: Date,
        /// Dates with no nightly.
        missing: Vec<Date>,
        asked: Vec<String>,
    }

    fn vv(date: Date) -> String {
        format!(
            "rustc x (abc {date})\ncommit-hash: hash-{date}\ncommit-date: {date}\nLLVM version: 22"
        )
    }

    /// Releases: 1.N.0's commit dates six weeks apart (1.95.0: 2026-04-14),
    /// a point release 30 days later per patch; the code of 1.N.x is the
    /// nightly of six weeks before 1.N.0's commit date. Returns (code, commit
    /// date).
    fn release_dates(tc: &str) -> Option<(Date, Date)> {
        let (_, minor, patch) = release(tc)?;
        let base = Date::ymd(2026, 4, 14).add((i64::from(minor) - 95) * 42);
        Some((base.add(-42), base.add(i64::from(patch) * 30)))
    }

    impl World {
        fn sample(&mut self, tc: &str) -> Result<Sampled, String> {
            self.asked.push(tc.to_string());
            let (code, date) = if let Some(d) = nightly_date(tc) {
                if self.missing.contains(&d) {
                    return Ok(Sampled::Unavailable("no release found".into()));
                }
                (d, d)
            } else if let Some(dates) = release_dates(tc) {
                dates
            } else {
                return Err(format!("unknown toolchain {tc}"));
            };
            let text = if code >= self.change {
                "new\n"
            } else {
                "old\n"
            };
            Ok(Sampled::Built(Sample {
                text: text.into(),
                instructions: Some(text.len()),
                rustc_vv: vv(date),
            }))
        }
    }

    fn bisect(world: &mut World, good: &str, bad: &str) -> (Verdict, usize) {
        let mut steps = 0;
        let mut oracle = |tc: &str| world.sample(tc);
        let mut progress = |_: &Step<'_>| steps += 1;
        let v = Bisector::new(&mut oracle, &mut progress)
            .run(good, bad)
            .map_err(|e| format!("{e:?}"))
            .unwrap();
        (v, steps)
    }

    #[test]
    fn dates_round_trip_and_the_release_schedule_holds() {
        let d = Date::parse("2026-02-28").unwrap();
        assert_eq!(d.add(1).to_string(), "2026-03-01");
        assert_eq!(
            Date::parse("2024-02-28").unwrap().add(1).to_string(),
            "2024-02-29"
        );
        assert_eq!(
            Date::parse("2026-12-31").unwrap().add(1).nightly(),
            "nightly-2027-01-01"
        );
        assert_eq!(Date::parse("2026-13-01"), None);
        // 1.95.0 was released on 2026-04-16, 1.99.0 on 2026-10-01.
        assert_eq!(scheduled_release(95).to_string(), "2026-04-16");
        assert_eq!(scheduled_release(99).to_string(), "2026-10-01");
        assert_eq!(release("1.99.1"), Some((1, 99, 1)));
        assert_eq!(release("nightly"), None);
        assert_eq!(
            nightly_date("nightly-2026-06-14"),
            Date::parse("2026-06-14")
        );
    }

    #[test]
    fn search_finds_the_adjacent_pair_and_skips_unavailable_candidates() {
        // Candidates 0..=10, the change at 7, 5 and 6 unavailable: the
        // first midpoint (5) falls back on 6, then on 4.
        let cands: Vec<String> = (0..=10).map(|i| i.to_string()).collect();
        let mut asked = Vec::new();
        let mut oracle = |tc: &str| -> Result<Sampled, ()> {
            asked.push(tc.to_string());
            let i: usize = tc.parse().unwrap();
            Ok(match i {
                5 | 6 => Sampled::Unavailable("gone".into()),
                _ => Sampled::Built(Sample {
                    text: if i >= 7 { "b" } else { "a" }.into(),
                    instructions: None,
                    rustc_vv: String::new(),
                }),
            })
        };
        let mut progress = |_: &Step<'_>| {};
        let mut b = Bisector::new(&mut oracle, &mut progress);
        b.good_text = Some("a".into());
        let (lo, hi) = b.search(&cands).unwrap();
        assert_eq!((lo, hi), (4, 7));
        assert_eq!(
            b.skipped
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>(),
            ["5", "6"]
        );
        drop(b);
        assert_eq!(asked[..3], ["5", "6", "4"]);
        // Never the known ends, never one candidate twice.
        assert!(!asked.contains(&"0".to_string()) && !asked.contains(&"10".to_string()));
        let mut dedup = asked.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), asked.len(), "{asked:?}");
    }

    #[test]
    fn search_stops_when_everything_between_is_unavailable() {
        let cands: Vec<String> = (0..=4).map(|i| i.to_string()).collect();
        let mut oracle = |tc: &str| -> Result<Sampled, ()> {
            Ok(match tc {
                "0" => Sampled::Built(Sample {
                    text: "a".into(),
                    instructions: None,
                    rustc_vv: String::new(),
                }),
                _ => Sampled::Unavailable("gone".into()),
            })
        };
        let mut progress = |_: &Step<'_>| {};
        let mut b = Bisector::new(&mut oracle, &mut progress);
        b.good_text = Some("a".into());
        assert_eq!(b.search(&cands).unwrap(), (0, 4));
        assert_eq!(b.skipped.len(), 3);
    }

    #[test]
    fn releases_first_then_nightlies_with_skipped_dates() {
        // The change lands on 2026-07-21; 1.98.0 (commit 2026-08-18, code of
        // 2026-07-07) has the old text, 1.99.1 the new. The nightly of the
        // change's day and the day before are missing.
        let change = Date::parse("2026-07-21").unwrap();
        let mut world = World {
            change,
            missing: vec![change, change.add(-1)],
            asked: Vec::new(),
        };
        let (v, steps) = bisect(&mut world, "1.95.0", "1.99.0");
        let Verdict::Found(f) = v else {
            panic!("no change found")
        };
        assert_eq!(f.releases, Some(("1.98.0".into(), "1.99.0".into())));
        assert_eq!(f.last_unchanged, "nightly-2026-07-19");
        assert_eq!(f.first_changed, "nightly-2026-07-22");
        let skipped: Vec<&str> = f.skipped.iter().map(|(t, _)| t.as_str()).collect();
        assert!(skipped.contains(&"nightly-2026-07-20") && skipped.contains(&"nightly-2026-07-21"));
        // The window starts 7 weeks before 1.98.0's commit date.
        assert_eq!(
            f.window.as_ref().map(|w| w.0.as_str()),
            Some("nightly-2026-06-30")
        );
        assert_eq!(steps, world.asked.len(), "each toolchain once");
        assert!(steps <= 16, "{steps} steps: {:?}", world.asked);
        // 1.96.0 .. 1.98.0 were looked at, never a release after the pair.
        assert!(world.asked.contains(&"1.98.0".to_string()));
    }

    #[test]
    fn a_window_start_that_already_differs_is_widened() {
        // 1.95.1 is a point release: its commit date (2026-05-14) is a month
        // after 1.95.0's, its code still 2026-03-03's. The change of
        // 2026-03-20 is then before the window's first guess (2026-03-26),
        // which differs from good and is widened by 6 weeks.
        let change = Date::parse("2026-03-20").unwrap();
        let mut world = World {
            change,
            missing: vec![],
            asked: Vec::new(),
        };
        let (v, _) = bisect(&mut world, "1.95.1", "1.96.0");
        let Verdict::Found(f) = v else {
            panic!("no change found")
        };
        assert_eq!(f.releases, None);
        assert!(world.asked.contains(&"nightly-2026-03-26".to_string()));
        assert_eq!(
            f.window,
            Some(("nightly-2026-02-12".into(), "nightly-2026-03-26".into()))
        );
        assert_eq!(f.last_unchanged, "nightly-2026-03-19");
        assert_eq!(f.first_changed, "nightly-2026-03-20");
    }

    #[test]
    fn an_end_equal_to_good_is_widened_to_the_bad_commit_date() {
        // The change reaches 1.99.0 only through a backport: its code's
        // nightly (2026-08-04) is old; the change is in nightly on 2026-09-20.
        let change = Date::parse("2026-09-20").unwrap();
        let mut world = World {
            change,
            missing: vec![],
            asked: Vec::new(),
        };
        // A world where release 1.99.0 carries the change although its
        // branch point does not.
        let mut oracle = |tc: &str| {
            let s = world.sample(tc);
            if tc == "1.99.0" {
                return Ok(Sampled::Built(Sample {
                    text: "new\n".into(),
                    instructions: Some(4),
                    rustc_vv: vv(Date::parse("2026-09-29").unwrap()),
                }));
            }
            s
        };
        let mut progress = |_: &Step<'_>| {};
        let v = Bisector::new(&mut oracle, &mut progress)
            .run("1.98.0", "1.99.0")
            .map_err(|e| format!("{e:?}"))
            .unwrap();
        let Verdict::Found(f) = v else {
            panic!("no change found")
        };
        assert_eq!(f.first_changed, "nightly-2026-09-20");
        assert_eq!(f.last_unchanged, "nightly-2026-09-19");
    }

    #[test]
    fn equal_good_and_bad_is_nothing_to_bisect() {
        let mut world = World {
            change: Date::parse("2030-01-01").unwrap(),
            missing: vec![],
            asked: Vec::new(),
        };
        let (v, steps) = bisect(&mut world, "1.95.0", "1.99.1");
        assert_eq!(v, Verdict::NoChange);
        assert_eq!(steps, 2);
    }

    #[test]
    fn an_unavailable_endpoint_and_the_oracles_error_stop_the_search() {
        let mut oracle = |tc: &str| -> Result<Sampled, String> {
            match tc {
                "nightly-2026-01-01" => Ok(Sampled::Unavailable("no release".into())),
                _ => Err(format!("`{tc}` is not installed")),
            }
        };
        let mut progress = |_: &Step<'_>| {};
        let mut b = Bisector::new(&mut oracle, &mut progress);
        assert!(matches!(
            b.run("nightly-2026-01-01", "nightly-2026-02-01"),
            Err(BisectError::Endpoint { toolchain, .. }) if toolchain == "nightly-2026-01-01"
        ));
        assert!(matches!(
            b.run("1.95.0", "1.99.1"),
            Err(BisectError::Oracle(e)) if e == "`1.95.0` is not installed"
        ));
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
