//! The hot path through calls: a function's hot path, and the hot paths of
//! the functions it calls on it whose bodies are in the same build, to a
//! depth limit.
//!
//! [`follow`] starts from a listing's hot path ([`super::cfg`]) and, for
//! each call or tail call on it (a PLT call to a function of the build
//! too), finds the callee in the build's [`FunctionIndex`] and walks its
//! hot path in turn. A callee's cold blocks stay cold: only its hot path
//! counts. A call that lies only in a cold block of its caller is not
//! followed, and said so ([`Why::Cold`]); so are a recursive call, an
//! indirect one, a callee of several instances that the listing cannot tell
//! apart, and the depth limit. Calls to functions without a body in the
//! build (libc, another crate's non-generic code) are the calls that leave
//! the build. [`Followed::combined`] joins the walk into one listing and one
//! hot path for `follow = true` expectations ([`super::expect`]).

use std::collections::BTreeSet;
use std::fmt;

use super::cfg::{self, HotPath};
use super::functions::{Entry, FunctionIndex};
use super::listing::{Line, Listing};
use super::profile::Profile;

/// The default depth of `--follow` (a callee of the probe is depth 1).
pub const DEFAULT_DEPTH: usize = 3;

/// One function reached on the hot path.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Callee {
    /// 1 for a callee of the root, 2 for its callees, ...
    pub depth: usize,
    /// The caller's name (as listings print it).
    pub caller: String,
    /// The callee's full path ([`Entry::path`]), generic arguments kept.
    pub path: String,
    /// Its normalized listing.
    #[serde(skip)]
    pub listing: Listing,
    /// Its own hot path.
    #[serde(rename = "hot_path")]
    pub hot: HotPath,
}

/// A call the walk did not go into, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The caller.
    pub caller: String,
    /// The callee (for an indirect call, the call as the hot path names it).
    pub callee: String,
    /// Why it was not followed.
    pub why: Why,
}

/// Why the walk did not go into a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The call is only in cold blocks of its caller.
    Cold,
    /// The callee is already on the walk (recursion).
    Recursive,
    /// An indirect call (through a register or memory the listing does not
    /// name): its target is unknown.
    Indirect,
    /// Several functions of the build print this name (instances of one
    /// generic under legacy mangling) and the caller's code names none of
    /// them alone: how many print it.
    Ambiguous(usize),
    /// The depth limit.
    Depth,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Stop {
            caller,
            callee,
            why,
        } = self;
        write!(f, "{caller} → {callee}: ")?;
        match why {
            Why::Cold => write!(f, "the call is cold (only in cold blocks), not followed"),
            Why::Recursive => write!(f, "recursive call, the walk ends here"),
            Why::Indirect => write!(f, "indirect call, the walk ends here"),
            Why::Ambiguous(candidates) => write!(
                f,
                "{candidates} functions of the build print this name, not followed"
            ),
            Why::Depth => write!(f, "depth limit, not followed"),
        }
    }
}

/// The figures of the whole walk: the root's hot path and every followed
/// callee's, added up.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Totals {
    /// Instructions on the walk's hot paths (each once; a loop's body once).
    pub instructions: usize,
    /// Atomic instructions on them.
    pub atomics: usize,
    /// Atomic read-modify-writes on them.
    pub atomic_rmw: usize,
    /// Loops on them.
    pub loops: usize,
    /// Stack accesses on them (the frame record apart, as [`HotPath`]
    /// counts).
    pub stack_accesses: usize,
    /// Calls on the hot paths whose callee has no body in the build.
    pub calls_leaving: Vec<String>,
}

/// A function's hot path with the callees followed from it (the reports'
/// `followed`: the root's listing and hot path are the probe's own and
/// stay out, each stop is its line, the figures are inline).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Followed {
    /// The depth limit it ran with.
    pub depth: usize,
    /// Callees in walk order (depth first, in call order).
    pub callees: Vec<Callee>,
    /// Calls the walk did not go into, with why (cold, recursive,
    /// indirect, ...).
    #[serde(rename = "not_followed", serialize_with = "lines")]
    #[schemars(with = "Vec<String>")]
    pub stops: Vec<Stop>,
    /// The figures of the whole.
    #[serde(flatten)]
    pub totals: Totals,
    /// The root's listing.
    #[serde(skip)]
    pub root: Listing,
    /// The root's hot path.
    #[serde(skip)]
    pub root_hot: HotPath,
}

/// Each stop as its line.
fn lines<S: serde::Serializer>(stops: &[Stop], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(stops.iter().map(Stop::to_string))
}

/// Whether a hot path's callee is an indirect call (named after its
/// operand, a TLS thunk or descriptor).
fn is_indirect(callee: &str) -> bool {
    callee.starts_with("indirect (")
        || callee.starts_with("tlv_get_addr (")
        || callee.starts_with("TLS descriptor")
}

/// The function a call names: the only function that prints the name, or
/// of several, the one whose symbol the caller's code mentions alone.
fn resolve<'i>(
    index: &'i FunctionIndex,
    caller: &Entry,
    callee: &str,
) -> Result<Option<&'i Entry>, usize> {
    let candidates = index.by_name(callee);
    match candidates[..] {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => {
            let text = caller.raw.lines.join("\n");
            let named: Vec<&Entry> = candidates
                .iter()
                .copied()
                .filter(|e| text.contains(&e.symbol))
                .collect();
            match named[..] {
                [one] => Ok(Some(one)),
                _ => Err(candidates.len()),
            }
        }
    }
}

struct Walk<'a> {
    profile: &'a Profile,
    index: &'a FunctionIndex,
    cold: &'a BTreeSet<String>,
    max_depth: usize,
    out: Followed,
}

impl Walk<'_> {
    fn go(&mut self, caller: &Entry, listing: &Listing, hot: &HotPath, chain: &mut Vec<String>) {
        // The caller's depth: the root is 0, its callees 1.
        let depth = chain.len() - 1;
        let cfg = cfg::analyze(listing, self.profile, self.cold);
        let mut seen = BTreeSet::new();
        let stop = |callee: &String, why| Stop {
            caller: listing.name.clone(),
            callee: callee.clone(),
            why,
        };
        for callee in &hot.calls {
            if is_indirect(callee) {
                self.out.stops.push(stop(callee, Why::Indirect));
                continue;
            }
            let entry = match resolve(self.index, caller, callee) {
                Ok(Some(e)) => e,
                Ok(None) => {
                    self.out.totals.calls_leaving.push(callee.clone());
                    continue;
                }
                Err(candidates) => {
                    self.out
                        .stops
                        .push(stop(callee, Why::Ambiguous(candidates)));
                    continue;
                }
            };
            if chain.contains(&entry.symbol) {
                self.out.stops.push(stop(callee, Why::Recursive));
                continue;
            }
            if !seen.insert(entry.symbol.clone()) {
                // Called twice on one hot path: walked once.
                continue;
            }
            if depth + 1 > self.max_depth {
                self.out.stops.push(stop(callee, Why::Depth));
                continue;
            }
            let callee_listing = entry.listing(self.profile);
            let callee_hot = cfg::analyze(&callee_listing, self.profile, self.cold).hot_path();
            add(&mut self.out.totals, &callee_hot);
            self.out.callees.push(Callee {
                depth: depth + 1,
                caller: listing.name.clone(),
                path: entry.path.clone(),
                listing: callee_listing.clone(),
                hot: callee_hot.clone(),
            });
            chain.push(entry.symbol.clone());
            self.go(entry, &callee_listing, &callee_hot, chain);
            chain.pop();
        }
        // Calls only in cold blocks, to functions of the build: named, not
        // followed (calls to panics and the like are no news).
        let hot_calls: BTreeSet<&String> = hot.calls.iter().collect();
        let mut cold_seen = BTreeSet::new();
        for &n in &hot.cold_lines {
            if !matches!(listing.lines.get(n), Some(Line::Instruction(_))) {
                continue;
            }
            let Some(callee) = cfg.callee(n) else {
                continue;
            };
            if hot_calls.contains(&callee) || !cold_seen.insert(callee.clone()) {
                continue;
            }
            if !self.index.by_name(&callee).is_empty() {
                self.out.stops.push(stop(&callee, Why::Cold));
            }
        }
    }
}

fn add(t: &mut Totals, hot: &HotPath) {
    t.instructions += hot.instructions;
    t.atomics += hot.atomics;
    t.atomic_rmw += hot.atomic_rmw;
    t.loops += hot.loops;
    t.stack_accesses += hot.stack_accesses;
}

/// Walks `root`'s hot path into the callees of the build, `max_depth`
/// calls deep. `root` is the function as the index has it (a probe's entry,
/// or any function's).
pub fn follow(
    profile: &Profile,
    index: &FunctionIndex,
    root: &Entry,
    root_listing: &Listing,
    cold: &BTreeSet<String>,
    max_depth: usize,
) -> Followed {
    let root_hot = cfg::analyze(root_listing, profile, cold).hot_path();
    let mut walk = Walk {
        profile,
        index,
        cold,
        max_depth,
        out: Followed {
            root: root_listing.clone(),
            root_hot: root_hot.clone(),
            callees: Vec::new(),
            stops: Vec::new(),
            depth: max_depth,
            totals: Totals::default(),
        },
    };
    add(&mut walk.out.totals, &root_hot);
    let mut chain = vec![root.symbol.clone()];
    walk.go(root, root_listing, &root_hot, &mut chain);
    // One line per distinct stop (a caller's three indirect calls through
    // one register are one finding).
    let mut seen = Vec::new();
    walk.out.stops.retain(|s| {
        let new = !seen.contains(s);
        if new {
            seen.push(s.clone());
        }
        new
    });
    walk.out
}

/// `a, b ×3, c`: names in first-seen order, repeats counted.
fn counted(names: &[String]) -> String {
    let mut order: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match order.iter_mut().find(|(m, _)| *m == n.as_str()) {
            Some((_, k)) => *k += 1,
            None => order.push((n, 1)),
        }
    }
    order
        .iter()
        .map(|&(n, k)| {
            if k > 1 {
                format!("{n} ×{k}")
            } else {
                n.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Followed {
    /// The walk's figures in one line, as both reports head it.
    pub fn summary(&self) -> String {
        let t = &self.totals;
        format!(
            "followed through {} callee(s): {} instructions · {} atomic(s) · {} loop(s) · {} stack access(es)",
            self.callees.len(),
            t.instructions,
            t.atomics,
            t.loops,
            t.stack_accesses
        )
    }

    /// The walk as one listing and one hot path, for expectations: the
    /// root's lines, then each callee's under a label naming it (its own
    /// labels suffixed `@N` so they stay its own), and the hot path made of
    /// the root's hot lines followed by each callee's.
    pub fn combined(&self, profile: &Profile) -> (Listing, HotPath) {
        let mut lines = self.root.lines.clone();
        let mut hot = self.root_hot.clone();
        for (k, c) in self.callees.iter().enumerate() {
            let offset = lines.len() + 1;
            let suffix = format!("@{}", k + 1);
            let labels: BTreeSet<&str> = c
                .listing
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Label(name) => Some(name.as_str()),
                    _ => None,
                })
                .collect();
            lines.push(Line::Label(format!("{}{suffix}", c.listing.name)));
            for l in &c.listing.lines {
                lines.push(match l {
                    Line::Label(name) => Line::Label(format!("{name}{suffix}")),
                    Line::Instruction(i) => {
                        let mut i = i.clone();
                        if let Some(last) = i.last_operand()
                            && labels.contains(last)
                            && let Some(head) = i.operands.strip_suffix(last)
                        {
                            i.operands = format!("{head}{last}{suffix}");
                        }
                        Line::Instruction(i)
                    }
                    Line::Data(d) => Line::Data(d.clone()),
                });
            }
            let h = &c.hot;
            hot.instructions += h.instructions;
            hot.atomics += h.atomics;
            hot.atomic_rmw += h.atomic_rmw;
            hot.calls.extend(h.calls.iter().cloned());
            hot.stack_accesses += h.stack_accesses;
            hot.frame_accesses += h.frame_accesses;
            hot.loops += h.loops;
            hot.loop_lines
                .extend(h.loop_lines.iter().map(|n| n + offset));
            hot.lines.extend(h.lines.iter().cloned());
            hot.line_indices
                .extend(h.line_indices.iter().map(|n| n + offset));
            hot.cold_lines
                .extend(h.cold_lines.iter().map(|n| n + offset));
            hot.function_instructions += h.function_instructions;
            hot.no_hot_return |= h.no_hot_return;
        }
        let listing = Listing {
            name: self.root.name.clone(),
            lines,
        };
        // The fit check over the whole: the first conditional branch after
        // the first atomic read-modify-write, wherever they are.
        let no_cold = BTreeSet::new();
        let cfg = cfg::analyze(&listing, profile, &no_cold);
        hot.to_fit_check = cfg.to_fit_check(&hot.line_indices);
        (listing, hot)
    }

    /// The walk as text: each callee's listing and hot path under its
    /// caller, indented by depth, then what was not followed and the
    /// figures of the whole.
    pub fn report_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.callees {
            let pad = "  ".repeat(c.depth - 1);
            out.push(String::new());
            out.push(format!(
                "{pad}→ {} (called from {}, depth {})",
                c.path, c.caller, c.depth
            ));
            for line in c.listing.text().lines() {
                out.push(format!("{pad}  {line}"));
            }
            let calls = if c.hot.calls.is_empty() {
                "none".to_string()
            } else {
                counted(&c.hot.calls)
            };
            out.push(format!(
                "{pad}  hot path: {} of {} instructions · {} atomic(s) · {} stack access(es) · \
                 {} loop(s) · calls: {calls}",
                c.hot.instructions,
                c.hot.function_instructions,
                c.hot.atomics,
                c.hot.stack_accesses,
                c.hot.loops
            ));
        }
        if !self.stops.is_empty() {
            out.push(String::new());
            out.push("not followed:".to_string());
            for s in &self.stops {
                out.push(format!("  {s}"));
            }
        }
        let t = &self.totals;
        out.push(String::new());
        out.push(format!(
            "followed hot path ({} function(s), depth ≤ {}): {} instructions · {} atomic(s) \
             ({} RMW) · {} loop(s) · {} stack access(es) · calls leaving the build: {}",
            self.callees.len() + 1,
            self.depth,
            t.instructions,
            t.atomics,
            t.atomic_rmw,
            t.loops,
            t.stack_accesses,
            if t.calls_leaving.is_empty() {
                "none".to_string()
            } else {
                counted(&t.calls_leaving)
            }
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::parse::parse_asm;
    use crate::codegen::profile::ObjectFormat;
    use std::path::Path;

    const PROFILE: &str = r#"
name = "t"
triple = "x86_64-unknown-linux-gnu"
description = "t"
run = "native"
"#;

    // probe → push (body here, with a lock cmpxchg) → grow (cold, in
    // .text.unlikely) ; probe → memcpy (not in the build); rec → rec.
    const ASM: &str = "\t.text
\t.type\tprobe_q,@function
probe_q:
\tpush rax
\tcall _ZN5queue5Queue4push17h0000000000000001E
\tcall memcpy@PLT
\tpop rcx
\tret
\t.type\t_ZN5queue5Queue4push17h0000000000000001E,@function
_ZN5queue5Queue4push17h0000000000000001E:
\tmov rax, qword ptr [rdi]
\ttest rax, rax
\tje .LBB1_2
\tlock cmpxchg qword ptr [rdi], rsi
\tret
.LBB1_2:
\tjmp _ZN5queue5Queue4grow17h0000000000000002E
\t.section\t.text.unlikely._ZN5queue5Queue4grow17h0000000000000002E,\"ax\",@progbits
\t.type\t_ZN5queue5Queue4grow17h0000000000000002E,@function
_ZN5queue5Queue4grow17h0000000000000002E:
\tcall _ZN5queue5Queue4push17h0000000000000001E
\tret
\t.text
\t.type\trec,@function
rec:
\tcall rec
\tcall rax
\tret
";

    fn setup() -> (Profile, FunctionIndex, BTreeSet<String>) {
        let profile = Profile::parse(PROFILE, Path::new("t.toml")).expect("profile");
        let asm = parse_asm(ASM, ObjectFormat::Elf);
        let cold = asm
            .cold
            .iter()
            .map(|n| crate::codegen::normalize::normalize_symbols(n, ObjectFormat::Elf))
            .collect();
        (profile, FunctionIndex::from_assemblies(&[asm]), cold)
    }

    fn walk(name: &str) -> Followed {
        let (profile, index, cold) = setup();
        let root = match index.find(name) {
            crate::codegen::functions::Found::One(e) => e.clone(),
            other => panic!("{name}: {other:?}"),
        };
        let listing = root.listing(&profile);
        follow(&profile, &index, &root, &listing, &cold, DEFAULT_DEPTH)
    }

    #[test]
    fn follows_a_call_into_the_build_and_keeps_cold_blocks_cold() {
        let f = walk("probe_q");
        assert_eq!(f.callees.len(), 1, "{f:#?}");
        assert_eq!(f.callees[0].path, "queue::Queue::push");
        assert_eq!(f.callees[0].depth, 1);
        // push's hot path: 5 instructions, the cold tail call left out.
        assert_eq!(f.callees[0].hot.instructions, 5);
        assert_eq!(f.totals.instructions, f.root_hot.instructions + 5);
        assert_eq!(f.totals.atomic_rmw, 1);
        assert_eq!(f.totals.calls_leaving, vec!["memcpy".to_string()]);
        assert_eq!(
            f.stops,
            vec![Stop {
                caller: "queue::Queue::push".into(),
                callee: "queue::Queue::grow".into(),
                why: Why::Cold,
            }]
        );
        let text = f.report_lines().join("\n");
        assert!(
            text.contains("is cold (only in cold blocks), not followed"),
            "{text}"
        );
    }

    #[test]
    fn the_combined_hot_path_sees_the_callee() {
        let (profile, ..) = setup();
        let f = walk("probe_q");
        let (listing, hot) = f.combined(&profile);
        assert!(hot.text().contains("lock cmpxchg"), "{}", hot.text());
        assert_eq!(hot.instructions, f.totals.instructions);
        for &n in &hot.line_indices {
            assert!(matches!(listing.lines[n], Line::Instruction(_)));
        }
        assert!(listing.text().contains("je .LBB1@1"), "{}", listing.text());
    }

    #[test]
    fn repeated_calls_are_counted_once() {
        let names: Vec<String> = ["a", "b", "a", "a"].map(String::from).to_vec();
        assert_eq!(counted(&names), "a ×3, b");
    }

    #[test]
    fn recursion_and_indirect_calls_end_the_walk() {
        let f = walk("rec");
        assert!(f.callees.is_empty());
        assert!(
            f.stops.iter().any(|s| s.why == Why::Recursive),
            "{:?}",
            f.stops
        );
        assert!(
            f.stops.iter().any(|s| s.why == Why::Indirect),
            "{:?}",
            f.stops
        );
    }

    #[test]
    fn depth_limits_the_walk() {
        let (profile, index, cold) = setup();
        let crate::codegen::functions::Found::One(root) = index.find("probe_q") else {
            panic!()
        };
        let f = follow(&profile, &index, root, &root.listing(&profile), &cold, 0);
        assert!(f.callees.is_empty());
        assert!(f.stops[0].why == Why::Depth, "{:?}", f.stops);
    }

    fn failures_with(tables: &str) -> Vec<crate::codegen::Failure> {
        use crate::codegen::{ProbeListing, ProbeListings, expect};
        let profile =
            Profile::parse(&format!("{PROFILE}{tables}"), Path::new("t.toml")).expect("profile");
        let (_, index, cold) = setup();
        let Some(entry) = index.by_symbol("probe_q") else {
            panic!("probe_q")
        };
        let mut listings = ProbeListings {
            cold_functions: cold,
            ..ProbeListings::default()
        };
        listings.probes.insert(
            "probe_q".into(),
            ProbeListing {
                raw: entry.raw.clone(),
                listing: entry.listing(&profile),
            },
        );
        crate::codegen::follow_and_find(&profile, &index, &mut listings);
        const PROBE: allocasm::probes::Probe = allocasm::probes::Probe {
            name: "probe_q",
            allocator: "Queue",
            operation: "push",
            kind: allocasm::probes::ProbeKind::Concurrent,
            expect: "",
        };
        expect::check_all(&profile, &listings, &[PROBE])
    }

    #[test]
    fn follow_true_makes_expectations_see_the_callee() {
        let without = failures_with("[probe.probe_q]\nhas = ['^lock cmpxchg ']\n");
        assert_eq!(without.len(), 1, "{without:?}");
        assert_eq!(without[0].kind, crate::codegen::FailureKind::MissingPattern);
        let with = failures_with(
            "[probe.probe_q]\nfollow = true\nhas = ['^lock cmpxchg ']\nhot_max = 12\n",
        );
        assert!(with.is_empty(), "{with:?}");
    }

    #[test]
    fn function_tables_check_any_function() {
        let ok =
            failures_with("[function.\"Queue::push\"]\nrequire = ['atomic-rmw']\nhot_max = 5\n");
        assert!(ok.is_empty(), "{ok:?}");
        let over = failures_with("[function.\"Queue::push\"]\nhot_max = 4\n");
        assert_eq!(over.len(), 1, "{over:?}");
        assert_eq!(over[0].probe, "Queue::push");
        let missing = failures_with("[function.\"no_such_function\"]\nhot_max = 4\n");
        assert_eq!(missing[0].kind, crate::codegen::FailureKind::MissingProbe);
        assert!(format!("{}", missing[0]).contains("no function of the build"));
    }
}
