//! The search behind `allocasm bisect`: the first toolchain whose text (a
//! probe's normalized hot path, or its whole listing) differs from a good
//! toolchain's, found as cargo-bisect-rustc finds a regression.
//!
//! [`Bisector`] never builds: it asks an oracle
//! (`FnMut(&str) -> Result<Sampled, E>`, a toolchain name in, that
//! toolchain's text or why it has none out), so the tests drive it with a
//! fake. The steps:
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

use std::collections::BTreeMap;

use crate::toolchain::{Date, RustcVersion, nightly_date, release, scheduled_release};

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

#[cfg(test)]
mod tests {
    use super::*;

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
        fn new(change: Date, missing: Vec<Date>) -> World {
            World {
                change,
                missing,
                asked: Vec::new(),
            }
        }

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

    /// A build whose compared text is `text`, with no count and no `rustc -vV`.
    fn built(text: &str) -> Sampled {
        Sampled::Built(Sample {
            text: text.into(),
            instructions: None,
            rustc_vv: String::new(),
        })
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
                _ => built(if i >= 7 { "b" } else { "a" }),
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
                "0" => built("a"),
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
        let mut world = World::new(change, vec![change, change.add(-1)]);
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
        let mut world = World::new(change, vec![]);
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
        let mut world = World::new(change, vec![]);
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
        let mut world = World::new(Date::parse("2030-01-01").unwrap(), vec![]);
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
}
