//! The expectations checker: a probe's listing on a profile against the
//! profile's `[probe.X]` table and the suite-wide rules.
//!
//! Suite-wide: every [`ProbeKind::SingleThreaded`] probe, on every profile,
//! has no atomic instruction and no call ([`Profile::suite_forbid`]).
//!
//! [`evaluate`] returns every expectation with its result (reports and
//! `diff` show them all); [`check`] returns the failures only. A
//! [`Failure`] names the probe, the profile and the pattern or rule, and its
//! `Display` shows the listing.

use std::fmt;

use super::ProbeListings;
use super::listing::Listing;
use super::profile::{Class, Pattern, Profile};
use allocasm::probes::{Probe, ProbeKind};

/// What kind of expectation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// A `has` pattern matched no instruction.
    MissingPattern,
    /// A `lacks` pattern matched (the offending instruction is in
    /// [`Failure::offending`]).
    ForbiddenPattern,
    /// An instruction of a forbidden class is present (a `forbid` entry, or
    /// the suite-wide rule for single-threaded probes).
    ForbiddenClass(Class),
    /// No instruction of a required class.
    MissingClass(Class),
    /// A backward branch (a loop) before the first instruction matching the
    /// pattern.
    BackwardBranchBefore,
    /// `no_backward_branch_before`'s pattern matched no instruction.
    MissingAnchor,
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
            FailureKind::BackwardBranchBefore => write!(
                f,
                " — a backward branch (loop) comes before {}",
                self.pattern
            )?,
            FailureKind::MissingAnchor => {
                write!(f, " — no instruction matches the anchor {}", self.pattern)?
            }
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
            writeln!(f, "  | {line}")?;
        }
        Ok(())
    }
}

/// Evaluates every expectation of `probe` on `profile` against `listing`.
pub fn evaluate(profile: &Profile, listing: &Listing, probe: &Probe) -> Vec<Outcome> {
    let text = listing.instruction_text();
    let classes = &profile.classes;
    let expect = profile.expect_for(probe.name);
    let why = expect.and_then(|e| e.why.clone());
    let fail = |rule: &str, pattern: &str, kind: FailureKind, offending: Option<String>| Failure {
        probe: probe.name.to_string(),
        profile: profile.name.clone(),
        kind,
        rule: rule.to_string(),
        pattern: pattern.to_string(),
        offending,
        why: why.clone(),
        listing: listing.text(),
    };
    let mut out = Vec::new();
    let mut push =
        |rule: String, pattern: String, kind: FailureKind, failed: Option<Option<String>>| {
            let failure = failed.map(|off| fail(&rule, &pattern, kind.clone(), off));
            out.push(Outcome {
                expectation: Expectation {
                    rule,
                    pattern,
                    kind,
                },
                failure,
            });
        };

    let allowed: &[Pattern] = expect.map_or(&[], |e| e.allow_calls.as_slice());
    let class_rule = |class: Class, forbid: bool, origin: &str| {
        let mut found = listing.matching(class, classes);
        if class == Class::Call && !origin.starts_with(" (suite") {
            found.retain(|(_, i)| !allowed.iter().any(|a| a.is_match(&i.text())));
        }
        let rule = format!(
            "{} {class}{origin}",
            if forbid { "forbid" } else { "require" }
        );
        let failed = if forbid {
            found.first().map(|(_, i)| Some(i.text()))
        } else {
            found.is_empty().then_some(None)
        };
        let kind = if forbid {
            FailureKind::ForbiddenClass(class)
        } else {
            FailureKind::MissingClass(class)
        };
        (rule, class.name().to_string(), kind, failed)
    };

    for &class in Profile::suite_forbid(probe.kind) {
        let origin = match probe.kind {
            ProbeKind::SingleThreaded => " (suite: every single-threaded probe)",
            ProbeKind::Concurrent => " (suite)",
        };
        let (r, p, k, f) = class_rule(class, true, origin);
        push(r, p, k, f);
    }
    let Some(expect) = expect else { return out };
    for pattern in &expect.has {
        let failed = (!pattern.is_match(&text)).then_some(None);
        push(
            format!("has {pattern}"),
            pattern.to_string(),
            FailureKind::MissingPattern,
            failed,
        );
    }
    for pattern in &expect.lacks {
        let offending = listing
            .instructions()
            .map(|i| i.text())
            .find(|t| pattern.is_match(t));
        let failed = pattern.is_match(&text).then_some(offending);
        push(
            format!("lacks {pattern}"),
            pattern.to_string(),
            FailureKind::ForbiddenPattern,
            failed,
        );
    }
    for &class in &expect.forbid {
        let (r, p, k, f) = class_rule(class, true, "");
        push(r, p, k, f);
    }
    for &class in &expect.require {
        let (r, p, k, f) = class_rule(class, false, "");
        push(r, p, k, f);
    }
    if let Some(anchor) = &expect.no_backward_branch_before {
        let rule = format!("no_backward_branch_before {anchor}");
        match listing.backward_branch_before(anchor, classes) {
            Err(()) => push(
                rule,
                anchor.to_string(),
                FailureKind::MissingAnchor,
                Some(None),
            ),
            Ok(found) => push(
                rule,
                anchor.to_string(),
                FailureKind::BackwardBranchBefore,
                found.map(|i| Some(i.text())),
            ),
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
        match listings.listing(probe.name) {
            Some(listing) => failures.extend(check(profile, listing, probe)),
            None => failures.push(missing_probe(profile, probe)),
        }
    }
    failures
}

/// The failure for a probe that no `.s` of the profile defines.
pub fn missing_probe(profile: &Profile, probe: &Probe) -> Failure {
    Failure {
        probe: probe.name.to_string(),
        profile: profile.name.clone(),
        kind: FailureKind::MissingProbe,
        rule: "every probe of the registry is found on every profile".to_string(),
        pattern: probe.name.to_string(),
        offending: None,
        why: None,
        listing: String::new(),
    }
}
