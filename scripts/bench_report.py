#!/usr/bin/env python3
"""Writes reports/bench.md (and the scaling plot beside it) from what
scripts/bench left in its work folder: criterion's estimates, the metadata
and cachegrind lines of benches/examples/bench_workload, and the per-target builds.
Called by scripts/bench; prints the headline ratio as its last line."""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

# --- inputs -----------------------------------------------------------------


def criterion_results(root):
    """{(group, function, threads): ns per iteration} from criterion's files.

    One iteration is one operation per worker (iter_custom), so the value is
    the per-thread ns/op. The slope of criterion's linear sampling is used
    (constant per-sample overhead drops out); the mean where there is none."""
    out = {}
    for bench in Path(root).glob("**/new/benchmark.json"):
        est = bench.with_name("estimates.json")
        if not est.exists():
            continue
        b = json.loads(bench.read_text())
        e = json.loads(est.read_text())
        pick = e.get("slope") or e["mean"]
        threads = int(b.get("value_str") or 1)
        out[(b["group_id"], b.get("function_id"), threads)] = pick["point_estimate"]
    return out


PEERS = ["raw fetch_add", "raw private bump", "system", "mimalloc", "SegregatedFit:call", "bumpalo",
         "Vec free list"]

# The call boundary of every measured allocator (benches/allocators/main.rs):
# "call" for those behind an `#[inline(never)]` `GlobalAlloc` call (the bench's
# `Call` subject: glibc and mimalloc, which are C, and SegregatedFit's
# "SegregatedFit:call" row), "inlined" for the allocator-api path (the crate's
# allocators, bumpalo, the `Vec` free list, the bare loops) and "global" for
# the programs with the allocator as their `#[global_allocator]`.
CALL = {"system", "mimalloc", "SegregatedFit:call"}
BOUNDARY_NOTE = ("Boundary: **inlined** = the allocator-api path, the allocator's fast path inlined into "
                 "the measured loop (the crate's allocators, bumpalo, the `Vec` free list, the bare "
                 "loops); **call** = every allocation and free a call to an `#[inline(never)]` function "
                 "running the allocator's `GlobalAlloc` method (glibc's `System` and mimalloc then call "
                 "into C; `SegregatedFit:call` is SegregatedFit behind the same call); **global** = one "
                 "program per allocator with it as the `#[global_allocator]`, the loop through "
                 "`std::alloc` (`__rust_alloc`). Compare rows of one boundary.")


def boundary(name):
    return "call" if name in CALL else "inlined"


def shown(name):
    """The allocator's name in a table, its boundary in the column beside."""
    return name[: -len(":call")] if name.endswith(":call") else name


def order(name):
    return (0, PEERS.index(name)) if name in PEERS else (1, name.lower())


def functions(r, group):
    """The function ids of a criterion group: peers first, then the crate's."""
    return sorted({fn for (g, fn, _) in r if g == group}, key=order)


def read_lines(path):
    p = Path(path)
    return p.read_text().splitlines() if p.exists() else []


def kv(line):
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_model():
    """The CPU model from /proc/cpuinfo, with the vendor, family, model and
    stepping numbers (a virtual machine may only say "AMD EPYC"; family 25
    model 17 is Zen 4, Genoa). None where there is no /proc/cpuinfo."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            if not line.strip():
                break  # the first CPU's block
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        return None
    name = info.get("model name") or info.get("Model")
    if not name:
        return None
    ids = [f"{k} {info[k]}" for k in ("cpu family", "model", "stepping") if k in info]
    if info.get("vendor_id"):
        ids.insert(0, info["vendor_id"])
    return f"{name} ({', '.join(ids)})" if ids else name


def cpu_family():
    """"Intel" or "AMD" from /proc/cpuinfo's vendor_id; None elsewhere (an
    Arm machine, macOS). The goal rows whose target depends on the family
    name it, and a run judges only its own family's rows."""
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            if k.strip() == "vendor_id":
                return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(v.strip())
    except OSError:
        pass
    return None


def machine():
    cpu = cpu_model()
    cpu = cpu or sh("sysctl", "-n", "machdep.cpu.brand_string") or platform.processor() or "unknown"
    commit = sh("git", "rev-parse", "--short=12", "HEAD") or "unknown"
    if sh("git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    return {
        "CPU": cpu,
        "cores": f"{os.cpu_count()} logical (available to this process: "
        f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()})",
        "OS": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "rustc": (sh("rustc", "-vV") or "unknown").replace("\n", "; "),
        "commit": f"{commit} on branch {sh('git', 'rev-parse', '--abbrev-ref', 'HEAD') or '?'}",
        "date": sh("date", "-u", "+%Y-%m-%d %H:%M UTC") or "?",
    }


# --- formatting ---------------------------------------------------------------


def ns(v):
    if v is None:
        return "–"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def ratio(v):
    return "–" if v is None else f"{v:.2f}x"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def div(a, b):
    return None if a is None or b in (None, 0) else a / b


# --- the plot -----------------------------------------------------------------

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#bcbd22", "#7f7f7f"]


def svg_panel(x0, y0, w, h, title, xs, series, ylabel, ideal=False, log=False):
    """One line chart: series = [(name, {x: y})]."""
    ys = [v for _, pts in series for v in pts.values() if v]
    if ideal:
        ys += [float(x) for x in xs]
    if not ys or not xs:
        return ""
    lo, hi = (min(ys), max(ys)) if log else (0.0, max(ys) * 1.1)
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    if hi <= lo:
        hi = lo + 1
    pl, pr, pt, pb = 55, 150, 30, 40
    iw, ih = w - pl - pr, h - pt - pb
    xmax = max(xs) if max(xs) > 1 else 2

    def px(x):
        return x0 + pl + (x - 1) / (xmax - 1) * iw

    def py(y):
        t = (math.log10(y) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log else (y - lo) / (hi - lo)
        return y0 + pt + ih - t * ih

    s = [f'<text x="{x0 + w / 2}" y="{y0 + 18}" text-anchor="middle" font-weight="bold">{title}</text>',
         f'<rect x="{x0 + pl}" y="{y0 + pt}" width="{iw}" height="{ih}" fill="none" stroke="#999"/>']
    for x in xs:
        s.append(f'<text x="{px(x)}" y="{y0 + pt + ih + 16}" text-anchor="middle">{x}</text>')
    s.append(f'<text x="{x0 + pl + iw / 2}" y="{y0 + h - 5}" text-anchor="middle">threads</text>')
    ticks = [lo * 10 ** i for i in range(int(round(math.log10(hi / lo))) + 1)] if log else \
        [lo + (hi - lo) * i / 4 for i in range(5)]
    for t in ticks:
        s.append(f'<text x="{x0 + pl - 5}" y="{py(t) + 4}" text-anchor="end">{t:g}</text>')
        s.append(f'<line x1="{x0 + pl}" x2="{x0 + pl + iw}" y1="{py(t)}" y2="{py(t)}" stroke="#eee"/>')
    s.append(f'<text transform="translate({x0 + 14},{y0 + pt + ih / 2}) rotate(-90)" '
             f'text-anchor="middle">{ylabel}</text>')
    if ideal:
        s.append(f'<polyline points="{px(1)},{py(1)} {px(xmax)},{py(xmax)}" fill="none" '
                 f'stroke="#999" stroke-dasharray="4 3"/>')
    for i, (name, pts) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        p = [(x, pts[x]) for x in xs if pts.get(x)]
        if not p:
            continue
        s.append(f'<polyline points="{" ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in p)}" '
                 f'fill="none" stroke="{c}" stroke-width="2"/>')
        s += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>' for x, y in p]
        ly = y0 + pt + 12 + 15 * i
        s.append(f'<line x1="{x0 + pl + iw + 10}" x2="{x0 + pl + iw + 28}" y1="{ly - 4}" y2="{ly - 4}" '
                 f'stroke="{c}" stroke-width="2"/>')
        s.append(f'<text x="{x0 + pl + iw + 32}" y="{ly}">{name}</text>')
    return "\n".join(s)


def write_svg(path, counts, scaling_series, pair_series):
    w, h = 640, 330
    body = svg_panel(0, 0, w, h, "Scaling: rate at N threads / own 1-thread rate", counts,
                     scaling_series, "score (ideal = N, dashed)", ideal=True)
    body += svg_panel(0, h, w, h, "The pair: aggregate Mops/s", counts, pair_series, "Mops/s (log)", log=True)
    Path(path).write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{2 * h}" font-family="sans-serif" '
        f'font-size="11">\n<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n')


# --- the report -----------------------------------------------------------------


# --- the pair per target, in instructions and mca cycles ---------------------

SHARED = "probe_packed_alloc_relaxed"
PRIVATE = "probe_thread_cursor_alloc"


def rmw_of(e):
    """How the shared word's read-modify-write executed, from the sequence one
    call ran: the instruction, the helper call and what it cost, or the LL/SC
    loop with its length and the iterations observed."""
    seq = e.get("sequence", [])
    helpers = e.get("helpers", [])
    for h in helpers:
        if h["function"].startswith("__aarch64_"):
            inner = [l.split(": ", 1)[1] for l in seq if l.startswith(h["function"] + ": ")]
            atomic = ("ldadd", "ldset", "ldclr", "ldeor", "cas", "swp", "ldxr", "ldaxr")
            rmw = next((l.split()[0] for l in inner if l.split()[0].startswith(atomic)), "?")
            return f"`bl {h['function']}`: {h['instructions']} instructions in the helper (its `{rmw}` path)"
    loads = [k for k, l in enumerate(seq) if l.startswith(("ldrexd", "ldrex ", "lr.", "ldxr", "ldaxr"))]
    stores = [k for k, l in enumerate(seq) if l.startswith(("strexd", "strex ", "sc.", "stxr", "stlxr"))]
    if loads and stores:
        body = stores[-1] - loads[-1] + 3  # through the status compare and the branch back
        op = seq[loads[0]].split()[0] + "/" + seq[stores[0]].split()[0]
        return f"`{op}` loop: {body} instructions a pass, {len(loads)} pass(es) uncontended"
    for l in seq:
        w = l.split()
        if not w:
            continue
        if w[0] == "lock" and len(w) > 1:
            return f"`lock {w[1]}` inline (one instruction)"
        if w[0].startswith(("ldadd", "amoadd")):
            return f"`{w[0]}` inline (one instruction)"
    return "?"


def mca_cells(mca, profile, probe):
    ms = (mca.get(profile) or {}).get(probe) or []
    cells = []
    for m in ms:
        c = f"{m['block_rthroughput']:.2f} ({m['cpu']}{'*' if m.get('indicative') else ''})"
        if m.get("skipped"):
            c += " skips " + ", ".join(f"`{x.split()[0]}`" for x in m["skipped"])
        cells.append(c)
    return "; ".join(cells) or "–"


def pair_by_target(path):
    """The markdown of the per-target pair from `examples/measure --json`."""
    if not path.exists():
        return ["## 2b. The pair per target, in instructions and mca cycles", "",
                "Not measured in this run (`scripts/bench --targets` measures it: qemu-user, the cross "
                "linkers and llvm-mca-22, all installed by scripts/setup).", ""]
    doc = json.loads(path.read_text())
    mca = doc.get("mca", {})
    rows = []
    method = ""
    for s in doc.get("executed", []):
        p = s["profile"]
        method = s.get("method", method)
        sh_, pr = s["probes"].get(SHARED), s["probes"].get(PRIVATE)
        if not sh_ or not pr:
            continue

        def instr(e):
            h = sum(x["instructions"] for x in e.get("helpers", []))
            return f"{e['instructions']}" + (f" ({e['in_probe']} + {h} in helpers)" if h else "")

        rows.append([f"{p} ({s['build']})", instr(sh_), mca_cells(mca, p, SHARED), rmw_of(sh_),
                     instr(pr), mca_cells(mca, p, PRIVATE),
                     f"{sh_['instructions'] - pr['instructions']:+d}"])
    return ["## 2b. The pair per target, in instructions and mca cycles", "",
            "What one allocation executes on every Linux profile, counted under qemu-user in the "
            "linked executable (`suite/probe-bins/probe_driver.rs`, the codegen suite's `executed` module: "
            f"`{method}`), one warm fast-path call of `PackedArena::alloc` (the shared word, "
            f"`{SHARED}`) and of `ThreadCursorArena::alloc` (the per-thread cursor, `{PRIVATE}`), "
            "helpers included; and llvm-mca 22's block reciprocal throughput (predicted cycles per "
            "call) of the probe's own executed lines per CPU model. `*`: LLVM's Apple models schedule "
            "like an old core (Cyclone), indicative only. llvm-mca models the core, not the memory "
            "system: a `lock xadd` or `ldadd` costs it a few ports, not the cache-line transfer the "
            "shared word pays under contention (the native wall-clock pair above), and where a model "
            "has no scheduling for an instruction it skips it (listed). Instructions are exact and "
            "deterministic; the cycles are a model.", "",
            table(["profile", "shared word: instructions", "shared word: mca cycles", "the atomic",
                   "per-thread cursor: instructions", "per-thread cursor: mca cycles",
                   "shared − cursor"], rows), ""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--quick", default="0")
    a = ap.parse_args()
    work, out = Path(a.work), Path(a.out)
    quick = a.quick == "1"
    r = criterion_results(work / "criterion")

    def get(group, fn, t=1):
        return r.get((group, fn, t))

    counts = sorted({t for (g, _, t) in r if g in ("pair", "scaling")}) or [1]
    mach = machine()
    md = ["# allocasm benchmarks", "", f"CPU: **{mach['CPU']}**; {mach['date']}.", ""]
    if quick:
        md += ["**Quick mode** (`--quick`): short criterion runs and a small cachegrind workload, "
               "to check that every bench still runs. Do not quote these figures.", ""]
    md += ["## Machine", "", table(["", ""], [[k, v] for k, v in mach.items()]), "",
           "## Reproduce", "", "```sh", a.command, "```", "",
           "criterion: `" + " ".join(read_lines(work / "criterion_args.txt")) + "`; results in "
           f"`{work}/criterion/`, the raw log in `{work}/criterion.log`. Every figure below is a ratio "
           "or a rate from this one run; on a shared machine only ratios within the run mean anything.", ""]

    # ---- the pair
    pair_rows, pair_series = [], {}
    kinds = [("shared: raw fetch_add", "raw fetch_add (shared word)"),
             ("shared: PackedArena", "PackedArena (shared word)"),
             ("private: raw bump", "raw private bump (4 KiB refill)"),
             ("private: ThreadCursorArena", "ThreadCursorArena (per-thread cursor)")]
    present = [(k, label) for k, label in kinds if any(get("pair", k, t) for t in counts)]
    headline = None
    for t in counts:
        row = [t]
        for k, label in present:
            v = get("pair", k, t)
            row += [ns(v), "–" if v is None else f"{t / v * 1e3:.0f}"]
            if v:
                pair_series.setdefault(label, {})[t] = t / v * 1e3
        bare = div(get("pair", "shared: raw fetch_add", t), get("pair", "private: raw bump", t))
        alloc = div(get("pair", "shared: PackedArena", t), get("pair", "private: ThreadCursorArena", t))
        row += [ratio(bare), ratio(alloc)]
        pair_rows.append(row)
        if t == 2:
            headline = (alloc, "ThreadCursorArena / PackedArena") if alloc else (bare, "raw private bump / raw fetch_add")
    head = ["threads"]
    for _, label in present:
        head += [f"{label} ns/op per thread", "Mops/s total"]
    head += ["per-thread/shared (bare loops)", "per-thread/shared (allocators)"]
    md += ["## 1. Shared word vs per-thread cursor (the pair)", "",
           "Every worker makes 16-byte reservations and folds each returned address (or word) into a "
           "checksum. Persistent worker pool, one per thread count; the measuring thread is worker 0; "
           "control words and cursors are `CachePadded`. ns/op is per thread (criterion's time per "
           "iteration, one iteration = one reservation on every worker); Mops/s is the aggregate "
           "(threads / ns). The ratio is the per-thread cursor's aggregate throughput over the shared "
           "word's at the same thread count.", "", table(head, pair_rows), ""]

    # ---- targets
    trows = []
    for line in read_lines(work / "targets.txt"):
        parts = line.split("|")
        if parts[0] == "skipped":
            trows.append(["(per-target builds not run)", "skipped", f"`{parts[1]}`"])
        else:
            why = parts[3].strip() if len(parts) > 3 else ""
            trows.append([parts[1], parts[0] + (f": `{why}`" if why else ""), f"`{parts[2]}`"])
    md += ["## 2. The pair on every target", "",
           "x86_64-unknown-linux-gnu runs natively above. aarch64-unknown-linux-gnu is built (default "
           "and `+lse`) and the pair runs under qemu-user: a functional run only, emulated timings mean "
           "nothing. aarch64-apple-darwin can only be checked here (no Apple linker or SDK; mimalloc, "
           "which is C, is left out with `--cfg allocasm_no_mimalloc`). The native arm64 and macOS "
           "runs are the CI jobs' (`scripts/bench --quick` on those runners).", "",
           table(["target", "result", "command"], trows), ""]
    md += pair_by_target(work / "executed.json")

    # ---- scaling
    names = functions(r, "scaling")
    srows, sseries = [], []
    for n in names:
        one = get("scaling", n, 1)
        row, pts = [shown(n), boundary(n)], {}
        for t in counts:
            v = get("scaling", n, t)
            rate = None if v is None else t / v * 1e3
            base = None if one is None else 1 / one * 1e3
            score = div(rate, base)
            row.append("–" if v is None else f"{rate:.1f} ({score:.2f}x)")
            if score:
                pts[t] = score
        srows.append(row)
        sseries.append((n if boundary(n) == "inlined" else f"{shown(n)} (call)", pts))
    plot = out.with_name(out.stem + "-scaling.svg")
    write_svg(plot, counts, sseries, sorted(pair_series.items()))
    md += ["## 3. Allocator scaling", "",
           "Allocate/free workload: each worker allocates a 16..256-byte block (xorshift sizes), writes "
           "it, and frees the block it allocated 32 operations earlier (after reading it). Arenas are "
           "reset between rounds of 65,536 operations (off the clock); bumpalo is one `Bump` per "
           "thread. Each cell: aggregate Mops/s (score = rate / the allocator's own 1-thread rate; "
           "ideal = thread count).", "",
           BOUNDARY_NOTE, "",
           table(["allocator", "boundary"] + [f"{t} thread{'s' if t > 1 else ''}" for t in counts], srows), "",
           f"![scaling curves and the pair]({plot.name})", ""]

    # ---- producer/consumer
    pnames = functions(r, "producer-consumer")
    pcounts = sorted({t for (g, _, t) in r if g == "producer-consumer"})
    prows = []
    for n in pnames:
        one = get("producer-consumer", n, 1)
        row = [shown(n), boundary(n)]
        for t in pcounts:
            v = get("producer-consumer", n, t)
            score = div(None if v is None else t / v, None if one is None else 1 / one)
            row.append("–" if v is None else f"{t / v * 1e3:.1f} ({score:.2f}x)")
        prows.append(row)
    if prows:
        md += ["## 3b. Producer/consumer", "",
               "Workers in pairs: one allocates 16..256-byte blocks (xorshift sizes), writes each and "
               "hands it over a 256-slot ring; the other reads and frees it, so every block is freed on "
               "another thread than the one that allocated it. One operation is half a block's life "
               "(its allocation or its free); a lone worker does both halves of 32 blocks in turn. "
               "Each cell: aggregate Mops/s (score = rate / the allocator's own 1-thread rate). "
               "`no allocator (the floor)` runs the same workload on a fixed pool of 1024 256-byte "
               "blocks per worker handed out in turn, frees ignored: the cost of the ring and of the "
               "blocks' cache lines moving between the cores, which every allocator pays on top.", "",
               table(["allocator", "boundary"] + [f"{t} thread{'s' if t > 1 else ''}" for t in pcounts], prows),
               ""]

    # ---- fast paths
    md += ["## 4. Single-thread fast paths against peers", ""]

    def group_rows(group, peer, which=None):
        """Rows of one group at one boundary (`which`; all when None), each
        against `peer`, which is at the same boundary."""
        fns = [fn for fn in functions(r, group) if which is None or boundary(fn) == which]
        p = get(group, peer)
        return [[shown(fn), boundary(fn), ns(get(group, fn)), ratio(div(get(group, fn), p))] for fn in fns]

    # The "global" boundary: benches/examples/bench_global_*, the median of the runs'
    # medians per (allocator, loop).
    glob = {}
    for line in read_lines(work / "global.txt"):
        d = kv(line)
        if line.startswith("global ") and "ns" in d:
            glob.setdefault((d["name"], d["workload"]), []).append(float(d["ns"]))
    gmed = {k: sorted(v)[len(v) // 2] for k, v in glob.items()}
    gnames = sorted({n for n, _ in gmed}, key=order)
    gruns = max((len(v) for v in glob.values()), default=0)

    def global_rows(workload):
        base = gmed.get(("system", workload))
        return [[n, "global", ns(gmed.get((n, workload))), ratio(div(gmed.get((n, workload)), base))]
                for n in gnames if (n, workload) in gmed]

    md += [BOUNDARY_NOTE, "",
           "**16-byte reservations** (align 8, addresses into a checksum; arenas reset every 2^20):", "",
           table(["allocator", "boundary", "ns/op", "vs raw fetch_add"], group_rows("bump16", "raw fetch_add")),
           "",
           "**64-byte allocate + free** (immediate pairs), at each boundary. Inlined: the allocator-api "
           "path, against bumpalo (whose free does nothing) and the `Vec free list` (the peer of `Pool`, "
           "free blocks in a `Vec<NonNull<u8>>`):", "",
           table(["allocator", "boundary", "ns/pair", "vs Vec free list"],
                 group_rows("alloc-free64", "Vec free list", "inlined")), "",
           "Call: every allocator behind the same `#[inline(never)]` `GlobalAlloc` call:", "",
           table(["allocator", "boundary", "ns/pair", "vs system"], group_rows("alloc-free64", "system", "call")),
           ""]
    if gmed:
        md += [f"Global: the same loop in one program per allocator, each with it as the "
               f"`#[global_allocator]` (`benches/examples/bench_global_*.rs`; median ns per pair of each run, the "
               f"median of {gruns} run(s) per allocator, interleaved; wall clock, not criterion):", "",
               table(["allocator", "boundary", "ns/pair", "vs system"], global_rows("alloc-free64")), ""]
    else:
        md += ["Global: not measured in this run (no `global.txt`).", ""]
    crows = []
    sysv = get("chapter", "system")
    for fn in functions(r, "chapter"):
        v = get("chapter", fn)
        crows.append([shown(fn), boundary(fn), ns(v), f"{v * 2e6 / 1e6:.2f}",
                      ratio(div(v, sysv)) if boundary(fn) == "call" else "–",
                      ratio(div(v, get("chapter", "SegregatedFit"))) if boundary(fn) == "inlined" else "–"])
    for n in gnames:
        v = gmed.get((n, "chapter"))
        if v is not None:
            crows.append([n, "global", ns(v), f"{v * 2e6 / 1e6:.2f}",
                          ratio(div(v, gmed.get(("system", "chapter")))) + " (global)", "–"])
    md += ["**The chapter's opening program**: 2,000,000 × (allocate 64 bytes, write `p[0] = i`, free), "
           "the system allocator and every allocator of the crate in its place (the chapter saw "
           "58.31 ms on its laptop). ms = ns/pair × 2,000,000. Each ratio is within one boundary: "
           "against the system allocator at the call (or global) boundary, against SegregatedFit "
           "inlined:", "",
           table(["allocator", "boundary", "ns/pair", "ms for 2,000,000 pairs", "vs system",
                  "vs SegregatedFit (inlined)"], crows), ""]

    # ---- metadata
    mrows, meta = [], {}
    for line in read_lines(work / "metadata.txt"):
        f = line.split()
        d = kv(line)
        if "unavailable" in line or "percent" not in d:
            mrows.append([shown(f[1]), boundary(f[1]), "–", "–", "unavailable (no /proc/self/statm)"])
            continue
        meta[f[1]] = float(d["percent"])
        mrows.append([shown(f[1]), boundary(f[1]), d["resident_growth"], f"{float(d['per_alloc_bytes']):.2f}", f"{float(d['percent']):.2f}%"])
    md += ["## 5. Metadata overhead at 1,000,000 live 64-byte allocations", "",
           "Method: resident set (`/proc/self/statm`) read before the allocator is built and after "
           "one million 64-byte allocations are made and fully written; overhead = growth - 64,000,000 "
           "bytes of payload. It counts everything the allocator made resident beyond the payload: "
           "headers, side tables, size-class rounding, partly used pages, state built at construction "
           "(a pool's free list). The same method for every allocator, the system allocator included "
           "(glibc: its 16-byte chunk header per 64-byte request) and what an allocator sets up on "
           "first use (mimalloc's heap and segment headers). The measuring loop's own first touches "
           "(its code and stack pages) are in it too: about 90 KiB, i.e. a floor of about 0.09 byte "
           "(0.15%) per allocation, visible as the figure of allocators with no per-allocation state "
           "(LinearArena, Pool). The page allocator is left out (one page per request).", "",
           table(["allocator", "boundary", "resident growth (bytes)", "bytes per allocation", "% of payload"],
                 mrows), ""]

    # ---- L1
    lines = read_lines(work / "l1.txt")
    lrows, l1, ir_per_op = [], {}, {}
    runs = {}
    vg = next((ln for ln in lines if ln.startswith("valgrind")), "")
    for line in lines:
        f = line.split()
        if f[0] == "l1" and len(f) >= 13:
            ev = list(map(int, f[4:13]))  # Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
            runs.setdefault(f[1], {})[f[2]] = (int(f[3]), ev)
    for n, m in runs.items():
        if "alloc" not in m or "baseline" not in m:
            continue
        ops, a_ev = m["alloc"]
        _, b_ev = m["baseline"]
        d1 = (a_ev[4] + a_ev[7]) - (b_ev[4] + b_ev[7])
        ir = a_ev[0] - b_ev[0]
        per_m = d1 / ops * 1e6
        l1[n] = per_m
        ir_per_op[n] = ir / ops
        lrows.append([shown(n), boundary(n), f"{per_m:,.0f}", f"{a_ev[4] + a_ev[7]:,}", f"{b_ev[4] + b_ev[7]:,}", f"{ir / ops:.1f}"])
    skipped = any(ln.startswith("skipped") for ln in lines)
    md += ["## 6. L1 data-cache misses on a random allocation pattern", "",
           "Counted with valgrind's cachegrind (`--cache-sim=yes`, simulated D1 = 32 KiB 8-way 64-byte "
           "lines, LL = 8 MiB 16-way, fixed so figures compare across machines) "
           f"{('(' + vg.split(' ', 1)[1] + ')') if vg else ''}. Workload (benches/examples/bench_workload.rs): 256 "
           "slots; each operation picks one at random; an occupied slot is read and freed, an empty one "
           "gets a new 16..128-byte block which is written (about 128 blocks, 9 KiB, live: the live "
           "data fits in L1, so what misses is the allocator's metadata and its placement of blocks). The program runs twice: as is, and with "
           "`--baseline`, which builds the same allocator and makes the same random choices and slot "
           "updates but neither allocates, frees nor touches a block. Misses per million operations = "
           "(D1mr + D1mw of the run - the same of the baseline) / operations × 10^6: the misses of "
           "allocating, freeing and using the blocks. Arenas that do not free keep moving through new "
           "memory (compulsory misses). `Pool` has 128-byte slots here.", ""]
    if skipped or not lrows:
        md += ["Not measured in this run: valgrind is not installed (`apt-get install valgrind`).", ""]
    else:
        md += [table(["allocator", "boundary", "D1 misses per million ops", "D1 misses (run)", "D1 misses (baseline)",
                      "instructions per op"], lrows), ""]

    # ---- goals
    def goal(label, value, target, cmp, unit, missing):
        if value is None:
            return [label, "not measured: " + missing, target, "–"]
        met = value <= cmp if unit != "min" else value >= cmp
        how = ""
        if not met:
            how = f" (by {value / cmp:.2f}x)" if unit != "min" else f" (reaches {value / cmp:.2f} of it)"
        shown = f"{value:.2f}%" if unit == "%" else f"{value:.2f}x"
        return [label, shown, target, ("met" if met else "**missed**" + how)]

    pk = div(get("bump16", "PackedArena"), get("bump16", "raw fetch_add"))
    family = cpu_family()

    def family_goal(fam, label, value, target, missing):
        if family is None or not fam.startswith(family):
            return [label, f"not judged here: this CPU is {family or 'neither Intel nor AMD'}",
                    f"≤ {target:.2f}x", "–"]
        return goal(label, value, f"≤ {target:.2f}x", target, "x", missing)
    tc = div(get("bump16", "ThreadCursorArena"), get("bump16", "bumpalo"))
    tcl = div(get("bump16", "ThreadCursorArena::local"), get("bump16", "bumpalo"))
    sf_call = div(get("alloc-free64", "SegregatedFit:call"), get("alloc-free64", "system"))
    sf_global = div(gmed.get(("SegregatedFit", "alloc-free64")), gmed.get(("system", "alloc-free64")))
    sf_inl = div(get("alloc-free64", "SegregatedFit"), get("alloc-free64", "system"))
    two = div(get("pair", "shared: PackedArena", 2), get("pair", "private: ThreadCursorArena", 2))
    absent = "the allocator is not in this build"
    grows = [
        # Issue 12, goal 6: the fast paths as tight as the write-up's listing.
        # The x86-64 families differ here (docs/packed-x86.md): a row per
        # family, judged only on a machine of that family.
        *[family_goal(fam, f"PackedArena alloc / bare `fetch_add` loop, 1 thread, **inlined**, {fam}",
                      pk, target, absent)
          for fam, target in (("AMD (EPYC, Zen 4 and 5)", 1.05), ("Intel (Xeon)", 1.15))],
        goal("ThreadCursorArena alloc / bumpalo `alloc_layout`, 1 thread, **inlined**", tc, "≤ 0.8x", 0.8, "x", absent),
        goal("ThreadCursorArena `local()` handle's alloc / bumpalo `alloc_layout`, 1 thread, **inlined**", tcl, "≤ 0.8x",
             0.8, "x", absent),
        goal("per-thread cursor / shared word, aggregate, 2 threads (allocators), **inlined**", two, "≥ 5x", 5.0, "min",
             absent),
        goal("SegregatedFit alloc+free / system allocator, 1 thread, **call** (both behind an "
             "`#[inline(never)]` `GlobalAlloc` call)", sf_call, "≤ 0.5x", 0.5, "x", absent),
        goal("SegregatedFit alloc+free / system allocator, 1 thread, **global** (each the "
             "`#[global_allocator]` of its own program)", sf_global, "≤ 0.5x", 0.5, "x", "no global run"),
        ["(for reference) SegregatedFit **inlined** alloc+free / system allocator at the call boundary "
         "(different boundaries: what an allocator-api user gets against glibc behind a call)",
         ratio(sf_inl), "", ""],
        goal("PackedArena metadata per 64-byte allocation", meta.get("PackedArena"), "≤ 0.5%", 0.5, "%", absent),
        goal("SegregatedFit metadata per 64-byte allocation", meta.get("SegregatedFit"), "≤ 2%", 2.0, "%",
             absent),
    ]
    # Persistent over SegregatedFit, both inlined: its default (no leak
    # counting in a release build) against the allocator it wraps, and
    # with counting on for reference.
    pst = div(get("alloc-free64", "Persistent"), get("alloc-free64", "SegregatedFit"))
    grows.append(goal("Persistent (over SegregatedFit, default: no leak counting in release) alloc+free / "
                      "SegregatedFit's, **inlined** both", pst, "≤ 1.5x", 1.5, "x", absent))
    pstc = div(get("alloc-free64", "Persistent, leak detection on"), get("alloc-free64", "SegregatedFit"))
    if pstc:
        grows.append(["(for reference) the same with leak detection on (two shared read-modify-writes "
                      "each way)", ratio(pstc), "", ""])
    # SegregatedFit v2 (issue 13): its pair against mimalloc, its scaling and
    # producer/consumer scores, its L1 misses and instructions per op.
    sfm_call = div(get("alloc-free64", "SegregatedFit:call"), get("alloc-free64", "mimalloc"))
    sfm_global = div(gmed.get(("SegregatedFit", "alloc-free64")), gmed.get(("mimalloc", "alloc-free64")))
    sfm_inl = div(get("alloc-free64", "SegregatedFit"), get("alloc-free64", "mimalloc"))
    grows.append(goal("SegregatedFit alloc+free / mimalloc, 1 thread, **call**", sfm_call, "≤ 1x", 1.0, "x",
                      "mimalloc is not in this build"))
    grows.append(goal("SegregatedFit alloc+free / mimalloc, 1 thread, **global**", sfm_global, "≤ 1x", 1.0,
                      "x", "mimalloc is not in this build, or no global run"))
    grows.append(["(for reference) SegregatedFit **inlined** alloc+free / mimalloc at the call boundary "
                  "(different boundaries)", ratio(sfm_inl), "", ""])

    def score(group, fn, t):
        one, v = get(group, fn, 1), get(group, fn, t)
        return None if one is None or v is None else (t / v) / (1 / one)

    for group, what in (("scaling", "allocate/free workload"), ("producer-consumer", "producer/consumer")):
        ts = sorted({t for (g, f, t) in r if g == group and f == "SegregatedFit" and t > 1})
        for t in ts or [2]:
            grows.append(goal(f"SegregatedFit {what}, {t} threads / its own 1-thread rate",
                              score(group, "SegregatedFit", t), "≥ 1.8x", 1.8, "min",
                              f"no {t}-thread run of the {group} group"))
    # The producer/consumer floor: the same workload with no allocator at
    # all (benches/allocators: a fixed pool handed out in turn, frees
    # ignored). Its own score bounds what any allocator can score here.
    floor_name = "no allocator (the floor)"
    for t in sorted({t for (g, f, t) in r if g == "producer-consumer" and f == floor_name and t > 1}):
        fs = score("producer-consumer", floor_name, t)
        over = div(get("producer-consumer", "SegregatedFit", t), get("producer-consumer", floor_name, t))
        if fs is not None:
            grows.append([f"(for reference) producer/consumer with no allocator at all, {t} threads / "
                          f"its own 1-thread rate", f"{fs:.2f}x", "≥ 1.8x", "met" if fs >= 1.8 else
                          "missed: the ring and the blocks' cache lines alone"])
        if over is not None:
            grows.append([f"(for reference) SegregatedFit producer/consumer, {t} threads, ns per op / "
                          f"the no-allocator floor's", f"{over:.2f}x", "", ""])
    l1_sf, l1_sys = l1.get("SegregatedFit:call"), l1.get("system")
    grows.append(goal("SegregatedFit L1 misses per million ops / the system allocator's, **call**",
                      div(l1_sf, l1_sys), "≤ 2x", 2.0, "x", "valgrind is not installed"))
    grows.append(goal("SegregatedFit instructions per op / mimalloc's, **call** (both behind the call)",
                      div(ir_per_op.get("SegregatedFit:call"), ir_per_op.get("mimalloc")), "≤ 1x", 1.0, "x",
                      "valgrind is not installed"))
    # Issue 14: TempJob's end of frame costs what changed, not the frames
    # since the pool was last empty.
    tjr = div(get("tempjob-frame", "pinned, after 100k frames"), get("tempjob-frame", "pinned, fresh"))
    grows.append(goal("TempJob frame (16 × alloc/free + end_frame), one block pinned: "
                      "after 100k frames / fresh", tjr, "≤ 1.2x", 1.2, "x", "no tempjob-frame run"))
    two_heaps = div(get("two-heaps", "SegregatedFit, two heaps alternating"),
                    get("two-heaps", "SegregatedFit, one heap"))
    grows.append(goal("SegregatedFit, two heaps alternating on one thread / one heap "
                      "(64-byte alloc+free pairs)", two_heaps, "≤ 2x", 2.0, "x", "no two-heaps run"))
    floor = get("bump16", "raw fetch_add")
    sysaf = get("alloc-free64", "system")
    notes = []
    sf_inl_ns, sf_call_ns = get("alloc-free64", "SegregatedFit"), get("alloc-free64", "SegregatedFit:call")
    if sf_inl_ns and sf_call_ns and sysaf:
        notes.append(
            f"The boundary: SegregatedFit's 64-byte pair costs {sf_inl_ns:.2f} ns inlined and "
            f"{sf_call_ns:.2f} ns behind the call (+{sf_call_ns - sf_inl_ns:.2f} ns for two calls and "
            f"what the inlined loop no longer shares between allocation and free); glibc behind the same "
            f"call costs {sysaf:.2f} ns. The goals compare at the call and the global boundary; the inlined "
            f"ratio is what an allocator-api user gets.")
    if pk and pk > {"AMD": 1.05, "Intel": 1.15}.get(family, 1.05):
        notes.append("PackedArena's fast path adds the request check, the position mask, the fit check "
                     "against the stride and the address (block index shifted by the stride) to the "
                     "`fetch_add` (14 instructions on x86_64-linux beside the locked add and the branches); docs/packed-x86.md "
                     "measures each piece on Intel, and the codegen suite's listing of "
                     "`probe_packed_alloc_acquire` shows them.")
    bare2 = div(get("pair", "shared: raw fetch_add", 2), get("pair", "private: raw bump", 2))
    if bare2:
        grows.append(["(for reference) the same with the bare loops, 2 threads", f"{bare2:.2f}x", "≥ 5x",
                      "met" if bare2 >= 5 else "missed"])
    # Real programs (scripts/bench --programs): the global boundary through
    # LD_PRELOAD.
    programs = work / "programs.json"
    prog = json.loads(programs.read_text()) if programs.exists() else None
    if prog:
        s = prog["summary"]
        seg, mi = s["SegregatedFit"], s["mimalloc"]
        grows.append(goal("SegregatedFit, real programs: geometric-mean time / mimalloc's, **global** "
                          "(LD_PRELOAD)", div(seg["time_vs_glibc"], mi["time_vs_glibc"]), "≤ 1x", 1.0, "x",
                          "a program failed"))
        worst = seg.get("worst_time")
        grows.append(goal("SegregatedFit, real programs: the slowest one's time / glibc's"
                          + (f" (`{worst[0]}`)" if worst else "") + ", **global** (LD_PRELOAD)",
                          worst[1] if worst else None, "≤ 1.1x", 1.1, "x", "a program failed"))
        grows.append(goal("SegregatedFit, real programs: geometric-mean peak RSS / glibc's, **global** "
                          "(LD_PRELOAD)", seg["rss_vs_glibc"], "≤ 1.2x", 1.2, "x", "a program failed"))
    else:
        grows.append(["SegregatedFit, real programs against mimalloc and glibc, **global**",
                      "not run: `scripts/bench --programs`", "", "–"])
    gi = md.index("## 1. Shared word vs per-thread cursor (the pair)")
    md[gi:gi] = [f"## Goals (this {os.cpu_count()}-core {family or 'unknown-family'} machine)", "", table(["goal", "measured", "target", ""], grows), ""] + \
        [f"- {n}" for n in notes] + ([""] if notes else [])

    if prog:
        md += (work / "programs.md").read_text().splitlines() + [""]
    else:
        md += ["## 7. Real programs under each malloc", "",
               "Not run: `scripts/bench --programs` runs twelve of Debian's programs "
               "(docs/program-bench.md) under glibc, jemalloc, tcmalloc, mimalloc and SegregatedFit.", ""]

    # ---- caveats
    cpus = os.cpu_count() or 1
    md += ["## Caveats", "",
           f"- The machine has {cpus} logical CPUs and is shared: other processes run during the "
           "benches, so absolute ns/op drift between runs; compare within one run only. Thread counts "
           "above the free cores measure time slicing, not scaling.",
           "- `lock xadd` is a full barrier on x86_64 whatever the ordering asked, so the shared word's "
           "single-thread cost here is the cost of a locked instruction; arm64 with LSE (`ldadd`) "
           "differs, and arm64 without `+lse` calls an outline-atomics helper (see docs/design.md).",
           "- The per-thread cursor's private bump pays for thread-local access: `fs:`-relative on "
           "x86_64 Linux in an executable, a `__tlv_get_addr` call on macOS; the bench does not "
           "isolate it (as in the write-up).",
           "- Arenas are reset between rounds off the clock; a round's allocation stays within "
           "already-faulted memory after the first round, so page faults are mostly excluded for them "
           "and included for nothing else either (the general allocators reuse their memory).",
           "- Metadata is measured from the resident set, not from each allocator's own accounting: it "
           "includes rounding slack and the partly used last page or block, and a floor of about 0.09 "
           "byte per allocation from the measuring loop's own first page touches.",
           "- L1 misses come from cachegrind's simulated caches (not hardware counters, which this "
           "machine does not expose); they show data movement through L1, not time.",
           "- aarch64 timings under qemu-user are meaningless (functional run only); the instruction "
           "counts of section 2b, taken under qemu-user too, are exact.",
           ""]
    out.write_text("\n".join(md))
    print(f"[bench] wrote {out} and {plot}", file=sys.stderr)
    if headline and headline[0]:
        print(f"per-thread/shared at 2 threads: {headline[0]:.2f}x")
    else:
        print("per-thread/shared at 2 threads: n/a (no 2-thread pair result)")


if __name__ == "__main__":
    main()
