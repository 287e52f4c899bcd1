//! The expectations checker: a probe's listing on a profile against the
//! profile's `[probe.X]` table and the suite-wide rules.
//!
//! Every rule has a scope: `hot` (the hot path of [`super::cfg`]) or
//! `function`. A rule holds `has`/`lacks` patterns, `forbid`/`require`
//! classes, exact `count`s, the expected `calls` and an ordered `check`
//! sequence (FileCheck's CHECK / CHECK-NEXT / CHECK-NOT); a probe's table
//! adds the budgets `hot_max` and `to_fit_check_max`. Defaults per probe kind
//! come from `targets/suite.toml` and the profile's `[kind.X]`
//! ([`Profile::rules_for`]).
//!
//! [`evaluate`] returns every expectation with its result (reports and
//! `diff` show them all); [`check`] returns the failures only. A
//! [`Failure`] names the probe, the profile and the pattern or rule, and its
//! `Display` shows the listing.

use std::collections::BTreeSet;
use std::fmt;

use super::ProbeListings;
use super::cfg::{Cfg, HotPath};
use super::listing::{Line, Listing};
use super::normalize::base_mnemonic;
use super::profile::{Class, Matcher, Profile, Scope, Step};
use allocasm::probes::Probe;

/// What kind of expectation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// A `has` pattern matched no instruction.
    MissingPattern,
    /// A `lacks` pattern matched (the offending instruction is in
    /// [`Failure::offending`]).
    ForbiddenPattern,
    /// An instruction of a forbidden class is present.
    ForbiddenClass(Class),
    /// No instruction of a required class.
    MissingClass(Class),
    /// A class's count in the scope is not the one expected.
    Count {
        /// The class.
        class: Class,
        /// Expected.
        expected: usize,
        /// Found.
        found: usize,
    },
    /// The scope's callees are not the ones expected (what was found).
    Calls(String),
    /// A `check` sequence failed at this step.
    Check(String),
    /// A budget (`hot_max`, `to_fit_check_max`) is exceeded, or there is no
    /// fit check to measure.
    Budget {
        /// `hot path` / `entry to fit check`.
        what: &'static str,
        /// The budget.
        max: usize,
        /// What was measured (`None`: no fit check).
        found: Option<usize>,
    },
    /// The probe is not in the profile's assembly at all.
    MissingProbe,
}

/// One expectation, as written or implied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// The rule: `has /lock xadd/`, `forbid call (suite: single-threaded)`, ...
    pub rule: String,
    /// The pattern or class it is about (what failure messages name).
    pub pattern: String,
    /// The kind of failure it produces.
    pub kind: FailureKind,
}

/// One expectation with its result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The expectation.
    pub expectation: Expectation,
    /// `None` when it holds.
    pub failure: Option<Failure>,
}

impl Outcome {
    /// Whether the expectation holds.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// A broken expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The probe's name.
    pub probe: String,
    /// The profile's name.
    pub profile: String,
    /// What failed.
    pub kind: FailureKind,
    /// The rule as written (`has /^lock xadd/`, `forbid atomic`, ...).
    pub rule: String,
    /// The pattern or instruction class named by the rule.
    pub pattern: String,
    /// The instruction that broke it, if one did.
    pub offending: Option<String>,
    /// The profile's `why` for this probe, if any.
    pub why: Option<String>,
    /// The normalized listing (empty for a missing probe).
    pub listing: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on profile {}: {}",
            self.probe, self.profile, self.rule
        )?;
        match &self.kind {
            FailureKind::MissingPattern => write!(f, " — no instruction matches {}", self.pattern)?,
            FailureKind::ForbiddenPattern => write!(f, " — {} matches", self.pattern)?,
            FailureKind::ForbiddenClass(c) => write!(f, " — found a {c} instruction")?,
            FailureKind::MissingClass(c) => write!(f, " — no {c} instruction")?,
            FailureKind::Count {
                expected, found, ..
            } => write!(f, " — found {found}, expected {expected}")?,
            FailureKind::Calls(got) => write!(f, " — the calls are [{got}]")?,
            FailureKind::Check(step) => write!(f, " — the sequence fails at `{step}`")?,
            FailureKind::Budget { what, max, found } => match found {
                Some(n) => write!(f, " — {what} is {n} instructions, over {max}")?,
                None => write!(
                    f,
                    " — no {what}: no conditional branch after an atomic read-modify-write"
                )?,
            },
            FailureKind::MissingProbe => {
                write!(f, " — the probe is not in the profile's assembly")?
            }
        }
        if let Some(o) = &self.offending {
            write!(f, ": `{o}`")?;
        }
        writeln!(f)?;
        if let Some(why) = &self.why {
            writeln!(f, "  why: {why}")?;
        }
        for line in self.listing.lines() {
            writeln!(f, "  |{line}")?;
        }
        Ok(())
    }
}

/// Evaluates every expectation of `probe` on `profile` against `listing`
/// (no callee known cold but panics and the profile's `cold_calls`; see
/// [`evaluate_in`] for a built profile's listings).
pub fn evaluate(profile: &Profile, listing: &Listing, probe: &Probe) -> Vec<Outcome> {
    evaluate_with(profile, listing, probe, &BTreeSet::new())
}

/// [`evaluate`] for a probe of a built profile, with the build's cold
/// functions; `None` when the probe is missing. A probe whose table says
/// `follow = true` is evaluated over the walk through its calls
/// ([`super::follow::Followed::combined`]).
pub fn evaluate_in(
    profile: &Profile,
    listings: &ProbeListings,
    probe: &Probe,
) -> Option<Vec<Outcome>> {
    let listing = listings.listing(probe.name)?;
    if let Some(walk) = listings.followed.get(probe.name) {
        let (listing, hot) = walk.combined(profile);
        return Some(evaluate_parts(
            profile,
            &listing,
            Some(hot),
            probe.name,
            profile.rules_for(probe),
            profile.expect_for(probe.name),
            &listings.cold_functions,
        ));
    }
    Some(evaluate_with(
        profile,
        listing,
        probe,
        &listings.cold_functions,
    ))
}

/// The expectations of every `[function."…"]` table of `profile` on its
/// build, by the name as written: each outcome, or the failure of a name
/// that picks no function, or several (a [`FailureKind::MissingProbe`]).
pub fn evaluate_functions(
    profile: &Profile,
    listings: &ProbeListings,
) -> Vec<(String, Result<Vec<Outcome>, Failure>)> {
    profile
        .function_expect
        .iter()
        .map(|(name, e)| {
            let result = match listings.functions.get(name) {
                Some(Ok(f)) => {
                    let (listing, hot) = match &f.followed {
                        Some(walk) => {
                            let (l, h) = walk.combined(profile);
                            (l, Some(h))
                        }
                        None => (f.found.listing.clone(), None),
                    };
                    Ok(evaluate_parts(
                        profile,
                        &listing,
                        hot,
                        name,
                        e.rules.clone(),
                        Some(e),
                        &listings.cold_functions,
                    ))
                }
                Some(Err(why)) => Err(missing_function(profile, name, why)),
                None => Err(missing_function(
                    profile,
                    name,
                    "the build's functions were not looked up",
                )),
            };
            (name.clone(), result)
        })
        .collect()
}

/// The failure for a `[function."…"]` name that picks no function of the
/// build, or several.
pub fn missing_function(profile: &Profile, name: &str, why: &str) -> Failure {
    Failure {
        probe: name.to_string(),
        profile: profile.name.clone(),
        kind: FailureKind::MissingProbe,
        rule: format!("[function.\"{name}\"] names one function of the build"),
        pattern: name.to_string(),
        offending: None,
        why: Some(why.to_string()),
        listing: String::new(),
    }
}

/// The lines a rule looks at, with the hot path.
struct Scoped<'c, 'a> {
    cfg: &'c Cfg<'a>,
    hot: &'c HotPath,
    function_lines: Vec<usize>,
    function_loops: BTreeSet<usize>,
    hot_loops: BTreeSet<usize>,
}

impl Scoped<'_, '_> {
    fn lines(&self, scope: Scope) -> &[usize] {
        match scope {
            Scope::Hot => &self.hot.line_indices,
            Scope::Function => &self.function_lines,
        }
    }

    fn text(&self, n: usize) -> String {
        match &self.cfg.listing.lines[n] {
            Line::Instruction(i) => i.text(),
            other => other.to_string(),
        }
    }

    fn in_class(&self, scope: Scope, n: usize, class: Class) -> bool {
        match class {
            Class::BackwardBranch => match scope {
                Scope::Hot => self.hot_loops.contains(&n),
                Scope::Function => self.function_loops.contains(&n),
            },
            // On the hot path a conditional tail call (`jne slow`) is a
            // branch not taken: the call is the cold way out.
            Class::Call if scope == Scope::Hot => self.cfg.hot_callee(n).is_some(),
            other => self.cfg.in_class(n, other),
        }
    }

    /// Whether pattern `p` matches line `n`: its text, or its text without
    /// the padding prefixes (`data16 data16 rex64 call x` is also `call x`).
    fn is_match(&self, p: &super::profile::Pattern, n: usize) -> bool {
        let text = self.text(n);
        if p.is_match(&text) {
            return true;
        }
        match &self.cfg.listing.lines[n] {
            Line::Instruction(i) if base_mnemonic(&i.mnemonic) != i.mnemonic => {
                p.is_match(&super::cfg::class_text(i))
            }
            _ => false,
        }
    }

    fn matches(&self, scope: Scope, n: usize, m: &Matcher) -> bool {
        match m {
            Matcher::Pattern(p) => self.is_match(p, n),
            Matcher::Class(c) => self.in_class(scope, n, *c),
        }
    }

    fn count(&self, scope: Scope, class: Class) -> (usize, Option<usize>) {
        if scope == Scope::Hot && class == Class::BackwardBranch {
            // The branch closing a loop on the hot path may lie off it (the
            // retry edge of a compare-exchange): counted per loop head.
            return (self.hot.loops, self.hot.loop_lines.first().copied());
        }
        let hits: Vec<usize> = self
            .lines(scope)
            .iter()
            .copied()
            .filter(|&n| self.in_class(scope, n, class))
            .collect();
        (hits.len(), hits.first().copied())
    }

    fn callees(&self, scope: Scope) -> Vec<(usize, String)> {
        self.lines(scope)
            .iter()
            .filter_map(|&n| {
                match scope {
                    Scope::Hot => self.cfg.hot_callee(n),
                    Scope::Function => self.cfg.callee(n),
                }
                .map(|c| (n, c))
            })
            .collect()
    }

    /// The scope's lines as text, the offending one marked `>>`.
    fn show(&self, scope: Scope, offending: Option<usize>) -> String {
        let mut s = match scope {
            Scope::Hot => format!(
                "hot path ({} of {} instructions):\n",
                self.hot.instructions, self.hot.function_instructions
            ),
            Scope::Function => String::from("function:\n"),
        };
        let lines: Vec<usize> = match scope {
            Scope::Hot => self.hot.line_indices.clone(),
            Scope::Function => (0..self.cfg.listing.lines.len()).collect(),
        };
        for n in lines {
            let mark = if Some(n) == offending { ">> " } else { "   " };
            s.push_str(mark);
            s.push_str(&self.cfg.listing.lines[n].to_string());
            s.push('\n');
        }
        s
    }
}

/// Runs a FileCheck-style sequence over `lines`: `Ok(())` or the failing
/// step's index with the offending line, if one is to blame.
fn run_check(
    sc: &Scoped<'_, '_>,
    scope: Scope,
    steps: &[Step],
) -> Result<(), (usize, Option<usize>)> {
    let lines = sc.lines(scope);
    let mut pos = 0usize; // next line to look at
    let mut pending_not: Vec<(usize, &Matcher)> = Vec::new();
    let check_nots = |from: usize, to: usize, nots: &[(usize, &Matcher)]| {
        for &(k, m) in nots {
            if let Some(&n) = lines[from..to].iter().find(|&&n| sc.matches(scope, n, m)) {
                return Err((k, Some(n)));
            }
        }
        Ok(())
    };
    for (k, step) in steps.iter().enumerate() {
        match step {
            Step::Not(m) => pending_not.push((k, m)),
            Step::Check(m) => {
                let found = lines[pos..].iter().position(|&n| sc.matches(scope, n, m));
                let Some(off) = found else {
                    return Err((k, None));
                };
                // The next match itself is inside the `not` range: a retry
                // branch that is also the fit-check branch is caught.
                check_nots(pos, pos + off + 1, &pending_not)?;
                pending_not.clear();
                pos += off + 1;
            }
            Step::Next(m) => {
                check_nots(pos, (pos + 1).min(lines.len()), &pending_not)?;
                pending_not.clear();
                match lines.get(pos) {
                    Some(&n) if sc.matches(scope, n, m) => pos += 1,
                    Some(&n) => return Err((k, Some(n))),
                    None => return Err((k, None)),
                }
            }
        }
    }
    check_nots(pos, lines.len(), &pending_not)
}

fn steps_text(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`evaluate`] with the callees known cold.
pub fn evaluate_with(
    profile: &Profile,
    listing: &Listing,
    probe: &Probe,
    cold: &BTreeSet<String>,
) -> Vec<Outcome> {
    evaluate_parts(
        profile,
        listing,
        None,
        probe.name,
        profile.rules_for(probe),
        profile.expect_for(probe.name),
        cold,
    )
}

/// Every rule of `rules` and the budgets of `expect` on `listing`, whose
/// hot path is `hot` when given (a walk through calls) or its own.
fn evaluate_parts(
    profile: &Profile,
    listing: &Listing,
    hot: Option<HotPath>,
    name: &str,
    rules: Vec<super::profile::Rule>,
    expect: Option<&super::profile::ProbeExpect>,
    cold: &BTreeSet<String>,
) -> Vec<Outcome> {
    let cfg = super::cfg::analyze(listing, profile, cold);
    let hot = hot.unwrap_or_else(|| cfg.hot_path());
    let classes = &profile.classes;
    let sc = Scoped {
        cfg: &cfg,
        hot: &hot,
        function_lines: listing
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l, Line::Instruction(_)))
            .map(|(n, _)| n)
            .collect(),
        function_loops: listing
            .matching(Class::BackwardBranch, classes)
            .into_iter()
            .map(|(n, _)| n)
            .collect(),
        hot_loops: hot.loop_lines.iter().copied().collect(),
    };
    let why = expect.and_then(|e| e.why.clone());
    let mut out = Vec::new();
    let mut push = |rule: String,
                    pattern: String,
                    kind: FailureKind,
                    scope: Scope,
                    failed: Option<Option<usize>>| {
        let failure = failed.map(|off| Failure {
            probe: name.to_string(),
            profile: profile.name.clone(),
            kind: kind.clone(),
            rule: rule.clone(),
            pattern: pattern.clone(),
            offending: off.map(|n| sc.text(n)),
            why: why.clone(),
            listing: sc.show(scope, off),
        });
        out.push(Outcome {
            expectation: Expectation {
                rule,
                pattern,
                kind,
            },
            failure,
        });
    };

    for rule in rules {
        let scope = rule.scope;
        let origin = if rule.origin.is_empty() {
            String::new()
        } else {
            format!(" ({})", rule.origin)
        };
        let lines = sc.lines(scope);
        for p in &rule.has {
            let hit = lines.iter().any(|&n| sc.is_match(p, n));
            push(
                format!("{scope}: has {p}{origin}"),
                p.to_string(),
                FailureKind::MissingPattern,
                scope,
                (!hit).then_some(None),
            );
        }
        for p in &rule.lacks {
            let hit = lines.iter().copied().find(|&n| sc.is_match(p, n));
            push(
                format!("{scope}: lacks {p}{origin}"),
                p.to_string(),
                FailureKind::ForbiddenPattern,
                scope,
                hit.map(Some),
            );
        }
        for &c in &rule.forbid {
            let (n, first) = sc.count(scope, c);
            push(
                format!("{scope}: forbid {c}{origin}"),
                c.to_string(),
                FailureKind::ForbiddenClass(c),
                scope,
                (n > 0).then_some(first),
            );
        }
        for &c in &rule.require {
            let (n, _) = sc.count(scope, c);
            push(
                format!("{scope}: require {c}{origin}"),
                c.to_string(),
                FailureKind::MissingClass(c),
                scope,
                (n == 0).then_some(None),
            );
        }
        for (&c, &want) in &rule.count {
            let (n, first) = sc.count(scope, c);
            let name = if c == Class::BackwardBranch {
                "loop".to_string()
            } else {
                c.to_string()
            };
            push(
                format!("{scope}: count {name} = {want}{origin}"),
                c.to_string(),
                FailureKind::Count {
                    class: c,
                    expected: want,
                    found: n,
                },
                scope,
                (n != want).then_some(first),
            );
        }
        if let Some(want) = &rule.calls {
            let got = sc.callees(scope);
            let ok =
                got.len() == want.len() && got.iter().zip(want).all(|((_, c), p)| p.is_match(c));
            let off = got
                .iter()
                .zip(want.iter().map(Some).chain(std::iter::repeat(None)))
                .find(|((_, c), p)| !p.is_some_and(|p| p.is_match(c)))
                .map(|((n, _), _)| *n);
            let want_text = want
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let got_text = got
                .iter()
                .map(|(_, c)| c.clone())
                .collect::<Vec<_>>()
                .join(", ");
            push(
                format!("{scope}: calls [{want_text}]{origin}"),
                want_text.clone(),
                FailureKind::Calls(got_text),
                scope,
                (!ok).then_some(off),
            );
        }
        if !rule.check.is_empty() {
            let text = steps_text(&rule.check);
            let result = run_check(&sc, scope, &rule.check);
            let (kind, failed) = match result {
                Ok(()) => (FailureKind::Check(String::new()), None),
                Err((k, off)) => (FailureKind::Check(rule.check[k].to_string()), Some(off)),
            };
            push(
                format!("{scope}: check [{text}]{origin}"),
                text,
                kind,
                scope,
                failed,
            );
        }
    }
    if let Some(e) = expect {
        if let Some(max) = e.hot_max {
            push(
                format!("hot_max {max}"),
                max.to_string(),
                FailureKind::Budget {
                    what: "hot path",
                    max,
                    found: Some(hot.instructions),
                },
                Scope::Hot,
                (hot.instructions > max).then_some(None),
            );
        }
        if let Some(max) = e.to_fit_check_max {
            let found = hot.to_fit_check;
            push(
                format!("to_fit_check_max {max}"),
                max.to_string(),
                FailureKind::Budget {
                    what: "entry to fit check",
                    max,
                    found,
                },
                Scope::Hot,
                found
                    .is_none_or(|f| f > max)
                    .then_some(found.map(|f| hot.line_indices[f - 1])),
            );
        }
    }
    out
}

/// The failures of `probe` on `profile` (see [`evaluate`]).
pub fn check(profile: &Profile, listing: &Listing, probe: &Probe) -> Vec<Failure> {
    evaluate(profile, listing, probe)
        .into_iter()
        .filter_map(|o| o.failure)
        .collect()
}

/// The failures of every probe of `registry` on one built profile, a
/// missing probe included (one [`FailureKind::MissingProbe`] each).
pub fn check_all(profile: &Profile, listings: &ProbeListings, registry: &[Probe]) -> Vec<Failure> {
    let mut failures = Vec::new();
    for probe in registry {
        match evaluate_in(profile, listings, probe) {
            Some(outcomes) => failures.extend(outcomes.into_iter().filter_map(|o| o.failure)),
            None => failures.push(missing_probe(profile, probe)),
        }
    }
    for (_, result) in evaluate_functions(profile, listings) {
        match result {
            Ok(outcomes) => failures.extend(outcomes.into_iter().filter_map(|o| o.failure)),
            Err(f) => failures.push(f),
        }
    }
    failures
}

/// The failure for a probe that no `.s` of the profile defines.
pub fn missing_probe(profile: &Profile, probe: &Probe) -> Failure {
    Failure {
        rule: "every probe of the registry is found on every profile".to_string(),
        why: None,
        ..missing_function(profile, probe.name, "")
    }
}
