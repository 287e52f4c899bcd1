#!/usr/bin/env python3
"""Real programs under five mallocs, side by side (scripts/bench --programs).

Each program of Debian's runs under glibc's malloc and, through LD_PRELOAD,
under jemalloc, tcmalloc, mimalloc and SegregatedFit (liballocasm_malloc.so,
the `malloc/` crate), in one run, rounds interleaved so that a burst of load
on a shared machine falls on every allocator alike. For each run it records
the wall time, the CPU time (user + sys, which a loaded machine disturbs
less) and the peak RSS (`/usr/bin/time -f '%e %M %U %S'`, the largest
resident set of the process tree) and checks the result against glibc's
(the same stdout, the same object file, the same test verdicts). A run that
crashes, hangs (past --timeout) or differs is a failure: the script exits 1.

Writes <work>/programs.json and <work>/programs.md (the report's section).
Only the standard library: Debian's python3 is enough.
"""

import argparse
import hashlib
import inspect
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_report import cpu_model  # the same CPU line as the bench report's

# The Debian packages the comparison needs, by what is looked for.
PACKAGES = {
    "jemalloc": "libjemalloc2",
    "tcmalloc": "libtcmalloc-minimal4",
    "mimalloc": "libmimalloc2.0",
    "python3 test suite": "libpython3.11-testsuite",
    "sqlite3": "sqlite3",
    "lua5.4": "lua5.4",
    "zstd": "zstd",
    "gcc": "gcc",
    "/usr/bin/time": "time",
    "perl": "perl",
    "node": "nodejs",
    "jq": "jq",
    "mawk": "mawk",
    "xz": "xz-utils",
    "bc": "bc",
    "g++": "g++",
}

# Where the programs are looked up, for every run and every check: Debian's
# own, as the packages above install them. A user's PATH may put something
# else first: on the machine of issue 39 `python3` was a pyenv shim, a bash
# script that ran about 80 processes (bash, pyenv, ...) before a
# self-built CPython 3.11.7, not Debian's 3.11.2 and its test suite.
SYSTEM_PATH = "/usr/bin:/bin"

# Allocation-heavy modules of CPython's own test suite: containers, text,
# serialisation, regular expressions. Each runs in a few seconds.
PY_TESTS = ["test_dict", "test_set", "test_list", "test_json", "test_re", "test_pickle",
            "test_collections", "test_sort"]
PY_TESTS_QUICK = ["test_dict", "test_json"]


def say(msg):
    print(f"[programs] {msg}", file=sys.stderr, flush=True)


def library_dirs():
    dirs = []
    try:
        arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
        if arch:
            dirs += [f"/usr/lib/{arch}", f"/lib/{arch}"]
    except OSError:
        pass
    return dirs + ["/usr/lib", "/usr/lib64", "/usr/local/lib"]


def find_lib(names):
    for d in library_dirs():
        for n in names:
            p = Path(d) / n
            if p.exists():
                return str(p)
    return None


BASELINE = "SegregatedFit (baseline)"


def allocators(ours, baseline=None, baseline_name=BASELINE):
    allocs = [
        ("glibc", None),
        ("jemalloc", find_lib(["libjemalloc.so.2"])),
        ("tcmalloc", find_lib(["libtcmalloc_minimal.so.4"])),
        ("mimalloc", find_lib(["libmimalloc.so.2", "libmimalloc.so.2.0"])),
        ("SegregatedFit", ours),
    ]
    if baseline:
        allocs.append((baseline_name, baseline))
    return allocs


# ---------------------------------------------------------------- workloads

def gen_sqlite(path, rows):
    """One million single-row inserts (in one transaction), two indexes, a
    grouped table and joins over them."""
    rnd = random.Random(7)
    with open(path, "w") as f:
        f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);\nBEGIN;\n")
        for i in range(1, rows + 1):
            f.write(f"INSERT INTO t VALUES({i},{rnd.randrange(100003)},'row-{i:x}-{rnd.getrandbits(40):x}',{i / 3:.4f});\n")
        f.write("COMMIT;\n"
                "CREATE INDEX t_a ON t(a);\nCREATE INDEX t_b ON t(b);\n"
                "CREATE TABLE u AS SELECT a, count(*) AS n, sum(c) AS s FROM t GROUP BY a;\n"
                "CREATE INDEX u_a ON u(a);\n"
                "SELECT count(*), sum(u.n), round(sum(t.c), 2) FROM t JOIN u ON t.a = u.a WHERE t.id % 10 = 0;\n"
                "SELECT b FROM t ORDER BY b DESC LIMIT 3;\n"
                "SELECT a, n FROM u ORDER BY n DESC, a LIMIT 5;\n"
                "SELECT count(*) FROM t AS x JOIN t AS y ON x.a = y.a AND x.id < y.id;\n"
                "SELECT group_concat(b, ',') IS NOT NULL, length(group_concat(b, ',')) FROM t WHERE a < 500;\n")


LUA = r"""
-- Allocation-heavy Lua: binary trees (the classic benchmark), strings built
-- and split, tables of tables, closures. Prints checksums only.
local depth = tonumber(arg[1])
local function bottom_up(d)
  if d == 0 then return {} end
  d = d - 1
  return { bottom_up(d), bottom_up(d) }
end
local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end
local long_lived = bottom_up(depth)
local total = 0
for d = 4, depth, 2 do
  local iters = 1 << (depth - d + 4)
  for _ = 1, iters do total = total + check(bottom_up(d)) end
end
print("trees", total, check(long_lived))
local parts = {}
for i = 1, 200000 do parts[#parts + 1] = string.format("%d:%x", i, i * 2654435761 % 4294967296) end
local s = table.concat(parts, ",")
local n, sum = 0, 0
for field in s:gmatch("[^,]+") do n = n + 1; sum = (sum + #field) % 1000000007 end
print("strings", #s, n, sum, #s:gsub("%d", "x"))
local rows = {}
for i = 1, 100000 do rows[i] = { id = i, name = "n" .. i, tags = { i % 7, i % 11, tostring(i % 13) } } end
table.sort(rows, function(a, b) return a.name < b.name end)
local acc = 0
for i = 1, #rows, 97 do acc = acc + rows[i].id + #rows[i].tags end
local fs = {}
for i = 1, 100000 do fs[i] = function() return i * 2 end end
local c = 0
for i = 1, #fs, 3 do c = c + fs[i]() end
print("tables", acc, c, collectgarbage("count") > 0)
"""


PERL = r"""
# Allocation-heavy Perl: a word count in a hash, records as hashes of arrays
# sorted, strings joined, substituted and split. Prints checksums only.
use strict; use warnings;
my ($file, $n) = @ARGV;
my %count; my $lines = 0;
open(my $fh, '<', $file) or die "$file: $!";
while (my $line = <$fh>) {
  $lines++;
  $count{$_}++ for split ' ', $line;
}
close $fh;
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 4];
print "words ", scalar(keys %count), " lines $lines top @top\n";
my @recs;
for my $i (1 .. $n) {
  push @recs, { id => $i, name => sprintf("r%07x", ($i * 2654435761) % 4294967296),
                tags => [ $i % 7, $i % 11, "t" . ($i % 13) ] };
}
my @sorted = sort { $a->{name} cmp $b->{name} } @recs;
my $acc = 0;
for (my $i = 0; $i < @sorted; $i += 97) { $acc += $sorted[$i]{id} + @{ $sorted[$i]{tags} } }
my $s = join(",", map { "$_->{name}:$_->{id}" } @recs);
(my $t = $s) =~ s/(\d+)/<$1>/g;
my @parts = split /,/, $t;
print "records $acc ", length($s), " ", length($t), " ", scalar(@parts), "\n";
"""

NODE = r"""
// Allocation-heavy JavaScript: objects serialised to JSON and parsed back,
// a Map over them, and Buffers (kept outside V8's heap, so malloc's) made
// and hashed. V8 runs its collector on helper threads. Checksums only.
const crypto = require('crypto');
const n = Number(process.argv[2]);
const rows = [];
for (let i = 0; i < n; i++) {
  rows.push({ id: i, name: 'r' + ((i * 2654435761) % 4294967296).toString(16), tags: [i % 7, i % 11, 't' + (i % 13)] });
}
const text = JSON.stringify(rows);
const back = JSON.parse(text);
const m = new Map();
for (const r of back) m.set(r.name, (m.get(r.name) || 0) + r.tags.length);
const h = crypto.createHash('sha256');
for (let i = 0; i < n / 10; i++) { const b = Buffer.alloc(64 + (i % 4096)); b.writeUInt32LE(i, 0); h.update(b); }
let acc = 0;
for (const v of m.values()) acc += v;
console.log('json', text.length, back.length, m.size, acc, h.digest('hex').slice(0, 16));
"""

JQ = ("group_by(.k) | map({k: .[0].k, n: length, s: (map(.v) | add), "
      "t: ([.[].tags[]] | unique | length)}) | sort_by(-.s) | .[0:3], length")

MAWK = ("{ for (i = 1; i <= NF; i++) { c[$i]++; p[substr($i, 1, 2) \"|\" length($i)]++ } } "
        "END { for (w in c) { n++; s += c[w]; t = t (c[w] > 1000 ? w : \"\") } "
        "for (k in p) m += p[k]; print n, s, m, length(t) }")


def gen_json(path, records):
    """An array of small objects (ids, keys from 5,000, tag lists, a nested
    object): what jq parses into one refcounted value per node."""
    rnd = random.Random(5)
    with open(path, "w") as f:
        f.write("[")
        for i in range(records):
            if i:
                f.write(",")
            json.dump({"id": i, "k": f"k{rnd.randrange(5000)}", "v": rnd.randrange(1000000),
                       "tags": [f"t{rnd.randrange(50)}" for _ in range(rnd.randrange(1, 6))],
                       "p": {"x": rnd.random(), "s": f"{rnd.getrandbits(48):x}"}}, f)
        f.write("]\n")


def gen_cpp(path, depth):
    """C++ that instantiates a recursive class template over std::map,
    std::unordered_map, std::shared_ptr, std::function and ostringstream
    down from `depth`: cc1plus's template instantiation, not cc1's -O2."""
    body = r"""#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>
template <int N> struct Node {
  std::map<std::string, std::vector<std::tuple<int, double, std::string>>> m;
  std::unordered_map<int, std::shared_ptr<Node<N - 1>>> kids;
  std::function<int(int)> f = [](int x) { return x * N; };
  int sum() const {
    int s = N;
    for (auto &kv : m) for (auto &t : kv.second) s += std::get<0>(t) + (int)std::get<2>(t).size();
    for (auto &kv : kids) s += kv.second ? kv.second->sum() : 0;
    std::vector<int> v;
    for (auto &kv : kids) v.push_back(kv.first);
    std::sort(v.begin(), v.end(), std::greater<int>());
    std::ostringstream o;
    o << s << v.size();
    return s + (int)o.str().size() + f(s);
  }
};
template <> struct Node<0> { int sum() const { return 0; } };
"""
    uses = "".join(f"int use{i}() {{ Node<{i}> n; return n.sum(); }}\n" for i in range(1, depth + 1))
    Path(path).write_text(body + uses)


def gen_c(path, functions):
    """A large C file: structs, switches, loops and string tables, so that
    cc1 builds big trees and runs every -O2 pass over them."""
    rnd = random.Random(11)
    out = ["#include <stddef.h>", "#include <string.h>",
           "struct rec { int a, b; double c; char name[24]; struct rec *next; };"]
    for i in range(functions):
        cases = "\n".join(f"    case {k}: acc += (x * {rnd.randrange(1, 999)}) ^ {rnd.getrandbits(16)}; break;"
                          for k in range(rnd.randrange(8, 24)))
        out.append(f"""
static const char *names_{i}[] = {{ {", ".join(f'"n{i}_{k}_{rnd.getrandbits(20):x}"' for k in range(12))} }};
int f{i}(struct rec *r, int n, int x) {{
  long acc = {i};
  for (int j = 0; j < n; j++) {{
    struct rec *p = r + j;
    switch ((x + j) % {rnd.randrange(5, 30)}) {{
{cases}
    default: acc -= p->a * {rnd.randrange(2, 50)} + (long)p->c; break;
    }}
    if (p->next && strcmp(p->name, names_{i}[j % 12]) == 0) acc += f{max(i - 1, 0)}(p->next, n / 2, x + 1);
    for (int k = 0; k < {rnd.randrange(2, 9)}; k++) acc = acc * 31 + p->b * k;
  }}
  return (int)(acc ^ (acc >> 17));
}}""")
    Path(path).write_text("\n".join(out) + "\n")


def gen_corpus(path, mib):
    """Text-like bytes: words from a Zipf-ish vocabulary, lines, numbers."""
    rnd = random.Random(3)
    vocab = ["".join(rnd.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rnd.randrange(2, 11)))
             for _ in range(20000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    want = mib << 20
    with open(path, "w") as f:
        written = 0
        while written < want:
            words = rnd.choices(vocab, weights, k=4096)
            line = " ".join(words) + f" {rnd.getrandbits(32)}\n"
            f.write(line)
            written += len(line)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def python_verdict(stdout):
    """What CPython's test runner concluded, without its timings: the final
    result and the tests named in each outcome group."""
    keep = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("Tests result:") or re.match(r"^(All )?\d+ tests? (OK|failed|skipped)", line) \
                or re.match(r"^test_\w+( test_\w+)*$", line):
            keep.append(re.sub(r"\s+", " ", line))
    return "\n".join(keep)


def programs(work, quick):
    """(name, what it does, argv, result(stdout) -> text) for each program."""
    work.mkdir(parents=True, exist_ok=True)
    def generated(path, what, gen, *args):
        # Kept between runs, keyed by the generator's source and arguments:
        # an edited generator makes its input again (the key is written
        # last, so an interrupted generation is redone too).
        key = hashlib.sha256((inspect.getsource(gen) + repr(args)).encode()).hexdigest()
        stamp = path.with_name(path.name + ".key")
        if not path.exists() or not stamp.exists() or stamp.read_text() != key:
            say(f"generating {path} ({what})")
            gen(path, *args)
            stamp.write_text(key)
        return path

    rows = 100_000 if quick else 1_000_000
    sql = generated(work / f"sqlite-{rows}.sql", f"{rows} inserts", gen_sqlite, rows)
    lua = work / "alloc.lua"
    lua.write_text(LUA)
    depth = 12 if quick else 16
    nfun = 200 if quick else 1000
    csrc = generated(work / f"big-{nfun}.c", f"{nfun} functions", gen_c, nfun)
    mib = 16 if quick else 96
    corpus = generated(work / f"corpus-{mib}MiB.txt", f"{mib} MiB of text", gen_corpus, mib)
    obj = work / "big.o"
    zst = work / "corpus.zst"
    tests = PY_TESTS_QUICK if quick else PY_TESTS
    pl = work / "alloc.pl"
    pl.write_text(PERL)
    js = work / "alloc.js"
    js.write_text(NODE)
    nrec = 20_000 if quick else 150_000
    records = generated(work / f"records-{nrec}.json", f"{nrec} JSON records", gen_json, nrec)
    text_mib = 1 if quick else 8
    text = generated(work / f"corpus-{text_mib}MiB.txt", f"{text_mib} MiB of text", gen_corpus, text_mib)
    small_mib = 1 if quick else 4
    small = generated(work / f"corpus-{small_mib}MiB.txt", f"{small_mib} MiB of text", gen_corpus, small_mib)
    xzf = work / "corpus.xz"
    scale = 400 if quick else 1200
    bc = work / "pi.bc"
    bc.write_text(f"scale={scale}; a=4*a(1); e(1)+a\nquit\n")
    tdepth = 6 if quick else 40
    cpp = generated(work / f"stl-{tdepth}.cpp", f"templates {tdepth} deep", gen_cpp, tdepth)
    cppobj = work / "stl.o"
    return [
        ("python3 -m test", f"CPython's own tests: {' '.join(tests)}",
         ["python3", "-m", "test", "-j1", *tests], lambda out: python_verdict(out)),
        ("sqlite3", f"{rows:,} inserts, 2 indexes, a GROUP BY table, joins (in memory)",
         ["sh", "-c", f"sqlite3 :memory: < {sql}"], lambda out: out),
        ("lua5.4", f"binary trees to depth {depth}, 200k strings, 100k tables and closures",
         ["lua5.4", str(lua), str(depth)], lambda out: out),
        ("gcc -O2 -c", f"a generated C file of {nfun:,} functions ({csrc.stat().st_size >> 10} KiB)",
         ["gcc", "-O2", "-c", "-o", str(obj), str(csrc)], lambda out: out + f"object {sha256(obj)}"),
        ("zstd -T2", f"compress {mib} MiB of text at level 3 on 2 threads, then decompress",
         ["sh", "-c", f"zstd -q -f -T2 -3 -c {corpus} > {zst} && zstd -q -d -c {zst} | sha256sum"],
         lambda out: out + f"compressed {sha256(zst)}"),
        # The programs below were added because they allocate unlike the
        # five above (docs/program-bench.md says what each one brings).
        ("perl", f"a word count of {text_mib} MiB in a hash, {nrec:,} records sorted, joined, s///g, split",
         ["perl", str(pl), str(text), str(nrec)], lambda out: out),
        ("node", f"{nrec * 2:,} objects to JSON and back, a Map, {nrec // 5:,} Buffers hashed",
         ["node", str(js), str(nrec * 2)], lambda out: out),
        ("jq", f"group_by over {nrec:,} JSON records ({records.stat().st_size >> 20} MiB)",
         ["jq", "-c", JQ, str(records)], lambda out: out),
        ("mawk", f"word and prefix counts over {text_mib} MiB in associative arrays",
         ["mawk", MAWK, str(text)], lambda out: out),
        ("xz -T2", f"compress {small_mib} MiB at level 6 in 1 MiB blocks on 2 threads, then decompress",
         ["sh", "-c", f"xz -q -f -T2 -6 --block-size=1MiB -c {small} > {xzf} && xz -q -d -T2 -c {xzf} | sha256sum"],
         lambda out: out + f"compressed {sha256(xzf)}"),
        ("bc -l", f"pi and e to {scale} digits (a number allocated per operation)",
         ["bc", "-l", "-q", str(bc)], lambda out: out),
        ("g++ -O1 -c", f"STL class templates instantiated {tdepth} deep",
         ["g++", "-O1", "-c", "-o", str(cppobj), str(cpp)], lambda out: out + f"object {sha256(cppobj)}"),
    ]


# ---------------------------------------------------------------- running

def run_once(argv, lib, timeout, work):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PATH"] = SYSTEM_PATH
    env["PYTHONHASHSEED"] = "0"
    # The same work in every run: Perl randomises its hash order otherwise.
    env["PERL_HASH_SEED"] = "0"
    env["PERL_PERTURB_KEYS"] = "0"
    if lib:
        env["LD_PRELOAD"] = lib
    tfile = work / "time.txt"
    cmd = ["/usr/bin/time", "-f", "%e %M %U %S", "-o", str(tfile)] + argv
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=work,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"status": "hung", "why": f"still running after {timeout} s"}
    fields = tfile.read_text().split() if tfile.exists() else []
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"status": "crashed", "why": f"exit {p.returncode}: " + " / ".join(tail)}
    try:
        secs, kib = float(fields[-4]), int(fields[-3])
        cpu = float(fields[-2]) + float(fields[-1])
    except (IndexError, ValueError):
        # No figure is made up: a run /usr/bin/time did not measure fails.
        return {"status": "crashed", "why": f"/usr/bin/time wrote no '%e %M %U %S' line: {fields!r}"}
    return {"status": "ok", "seconds": secs, "rss_kib": kib, "cpu_s": cpu, "stdout": p.stdout}


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(progs, results, allocs, quick, rounds, lib):
    """The report's document from the runs so far: per program and
    allocator the median time and largest RSS, checked against glibc's."""
    failures = []
    table = {}
    for pname, what, argv, result in progs:
        glibc_runs = results[pname]["glibc"]
        ref = None
        for g in glibc_runs:
            if g["status"] == "ok":
                ref = result(g["stdout"])
                break
        row = {"what": what, "command": " ".join(argv), "allocators": {}}
        for aname, _ in allocs:
            runs = results[pname][aname]
            bad = [x for x in runs if x["status"] != "ok"]
            cell = {}
            if bad:
                cell = {"status": bad[0]["status"], "why": bad[0]["why"]}
                failures.append(f"{pname} under {aname}: {bad[0]['status']} ({bad[0]['why']})")
            else:
                outs = {result(x["stdout"]) for x in runs}
                same = ref is not None and outs == {ref}
                cell = {"status": "ok" if same else "differs",
                        "seconds": statistics.median(x["seconds"] for x in runs),
                        "cpu_s": statistics.median(x["cpu_s"] for x in runs),
                        "rss_kib": max(x["rss_kib"] for x in runs),
                        # Every run's time, in round order: the medians and
                        # the round-by-round ratios can be checked from them.
                        "runs_s": [x["seconds"] for x in runs]}
                if not same:
                    failures.append(f"{pname} under {aname}: its result differs from glibc's")
                    cell["why"] = "result differs from glibc's"
            row["allocators"][aname] = cell
        row["reference"] = ref
        table[pname] = row

    names = [n for n, _ in allocs]
    summary = {}
    for aname in names:
        t = [table[p]["allocators"][aname].get("seconds") for p in table]
        g = [table[p]["allocators"]["glibc"].get("seconds") for p in table]
        m = [table[p]["allocators"][aname].get("rss_kib") for p in table]
        gm = [table[p]["allocators"]["glibc"].get("rss_kib") for p in table]
        c = [table[p]["allocators"][aname].get("cpu_s") for p in table]
        gc = [table[p]["allocators"]["glibc"].get("cpu_s") for p in table]
        ok = all(x is not None for x in t + g)
        ratios = {p: x / y for p, x, y in zip(table, t, g)} if ok else {}
        rss = {p: x / y for p, x, y in zip(table, m, gm) if x and y} if ok else {}
        runs = [results[p][aname] for p in table]
        spread = [max(x["seconds"] for x in rs) / min(x["seconds"] for x in rs)
                  for rs in runs if rs and all(x["status"] == "ok" and x["seconds"] > 0 for x in rs)]
        summary[aname] = {
            "round_spread": geomean(spread) if len(spread) == len(table) else None,
            "time_geomean_s": geomean(t) if ok else None,
            "time_vs_glibc": geomean(list(ratios.values())) if ok else None,
            "cpu_vs_glibc": geomean([x / y for x, y in zip(c, gc) if x and y]) if ok else None,
            "rss_vs_glibc": geomean(list(rss.values())) if ok else None,
            "worst_time": max(ratios.items(), key=lambda kv: kv[1]) if ratios else None,
            "worst_rss": max(rss.items(), key=lambda kv: kv[1]) if rss else None,
        }
    # SegregatedFit against mimalloc round by round: the rounds are
    # interleaved, so each one compares the two under the same load, and
    # their spread says whether the medians' gap is larger than the noise.
    if "SegregatedFit" in summary and "mimalloc" in summary:
        by_round = []
        pairs = [(results[p]["SegregatedFit"], results[p]["mimalloc"]) for p in table]
        for r in range(rounds):
            if all(len(o) > r and len(m) > r and o[r]["status"] == m[r]["status"] == "ok"
                   and o[r]["seconds"] > 0 and m[r]["seconds"] > 0 for o, m in pairs):
                by_round.append(geomean([o[r]["seconds"] / m[r]["seconds"] for o, m in pairs]))
        summary["SegregatedFit"]["vs_mimalloc_by_round"] = by_round
    # The sixth allocator, if any, is --baseline's build.
    baseline = names[5] if len(names) > 5 else None
    if baseline:
        ours = [table[p]["allocators"]["SegregatedFit"].get("seconds") for p in table]
        base = [table[p]["allocators"][baseline].get("seconds") for p in table]
        ours_c = [table[p]["allocators"]["SegregatedFit"].get("cpu_s") for p in table]
        base_c = [table[p]["allocators"][baseline].get("cpu_s") for p in table]
        if all(x is not None for x in ours + base):
            summary["SegregatedFit"]["time_vs_baseline"] = geomean([x / y for x, y in zip(ours, base)])
            summary["SegregatedFit"]["cpu_vs_baseline"] = geomean(
                [x / y for x, y in zip(ours_c, base_c) if x and y])
    return {"quick": quick, "rounds": rounds, "library": lib, "cpu": cpu_model(), "baseline": baseline,
            "allocators": dict(allocs), "programs": table, "summary": summary, "failures": failures}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="liballocasm_malloc.so (cargo build --release -p allocasm-malloc)")
    ap.add_argument("--work", default="target/bench/programs", help="scratch directory (inputs are kept there)")
    ap.add_argument("--quick", action="store_true", help="small inputs, one round: a check, not figures to quote")
    ap.add_argument("--rounds", type=int, help="rounds per program and allocator (default 3, quick 1)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds before a run counts as hung")
    ap.add_argument("--only", help="comma-separated program names, or the start of them "
                    "(python3,sqlite3,lua5.4,gcc,zstd,perl,node,jq,mawk,xz,bc,g++)")
    ap.add_argument("--baseline", metavar="LIB",
                    help="another liballocasm_malloc.so (say, main's) run as a sixth allocator in the "
                    "same interleaved rounds; the report adds its time against --lib's and each "
                    "allocator's spread between rounds")
    ap.add_argument("--baseline-name", default=BASELINE, metavar="NAME",
                    help=f"the baseline's name in the report (default: {BASELINE})")
    a = ap.parse_args()
    work = Path(a.work).resolve()
    lib = str(Path(a.lib).resolve())
    baseline = str(Path(a.baseline).resolve()) if a.baseline else None
    rounds = a.rounds or (1 if a.quick else 3)

    missing = []
    allocs = allocators(lib, baseline, a.baseline_name)
    if baseline and not Path(baseline).is_file():
        say(f"--baseline {baseline} not found")
        return 2
    for name, path in allocs[1:4]:
        if path is None:
            missing.append(PACKAGES[name])
    if not Path(lib).is_file():
        say(f"{lib} not found: build it with `cargo build --release -p allocasm-malloc`")
        return 2
    for prog in ["sqlite3", "lua5.4", "zstd", "gcc", "perl", "node", "jq", "mawk", "xz", "bc", "g++"]:
        if shutil.which(prog, path=SYSTEM_PATH) is None:
            missing.append(PACKAGES[prog])
    if not Path("/usr/bin/time").exists():
        missing.append("time")
    if subprocess.run(["python3", "-c", "import test.test_dict"], capture_output=True,
                      env={**os.environ, "PATH": SYSTEM_PATH}).returncode != 0:
        missing.append(PACKAGES["python3 test suite"])
    if missing:
        say("missing: " + ", ".join(missing))
        say(f"install them with: sudo apt-get install {' '.join(missing)} (scripts/setup --steps programs)")
        return 2

    progs = programs(work, a.quick)
    if a.only:
        wanted = [w.strip() for w in a.only.split(",")]
        progs = [p for p in progs if any(p[0].startswith(w) for w in wanted)]
    results = {p[0]: {n: [] for n, _ in allocs} for p in progs}
    total = len(progs) * len(allocs) * rounds
    done = 0
    t0 = time.monotonic()
    for r in range(rounds):
        for pname, _, argv, _ in progs:
            for aname, path in allocs:
                done += 1
                say(f"[{done}/{total}] round {r + 1}: {pname} under {aname}")
                results[pname][aname].append(run_once(argv, path, a.timeout, work))
        if r + 1 < rounds:
            # The rounds so far, kept in case the run is cut short.
            (work / "programs.partial.md").write_text(
                render(summarize(progs, results, allocs, a.quick, r + 1, lib)))
    say(f"{total} runs in {time.monotonic() - t0:.0f} s")

    doc = summarize(progs, results, allocs, a.quick, rounds, lib)
    failures = doc["failures"]
    (work / "programs.json").write_text(json.dumps(doc, indent=1))
    (work / "programs.md").write_text(render(doc))
    print(render(doc))
    if failures:
        say(f"{len(failures)} failure(s):")
        for f in failures:
            say("  " + f)
        return 1
    return 0


def render(doc):
    names = list(doc["allocators"])
    md = ["## 7. Real programs under each malloc (boundary: global, via LD_PRELOAD)", ""]
    if doc["quick"]:
        md += ["**Quick mode**: small inputs, one round; a check that every program runs and agrees, "
               "not figures to quote.", ""]
    md += [f"CPU: {doc.get('cpu') or 'unknown'}.", ""]
    md += ["Each program of Debian's, unmodified, with glibc's malloc and with each other allocator "
           "through `LD_PRELOAD` (SegregatedFit: `liballocasm_malloc.so`, the `malloc/` crate: no "
           "header on blocks up to 64 KiB, whose class `free` reads from the span region's class map; "
           "16 bytes on larger ones), in one run, rounds interleaved. "
           f"Time: the median wall time of {doc['rounds']} round(s), and in brackets the median CPU time; RSS: the largest peak resident set "
           "of the process tree (`/usr/bin/time -f '%e %M %U %S'`; the CPU-time row, user + sys, "
           "is less disturbed by other load on a shared machine). Every result is checked against glibc's "
           "(stdout, the object file, the compressed bytes, the test verdicts): `DIFFERS`, `crashed` "
           "or `hung` would fail the run.", ""]
    head = ["program", "workload"] + [f"{n}: s (CPU s) / MiB" for n in names]
    rows = []
    for pname, row in doc["programs"].items():
        cells = [f"`{pname}`", row["what"]]
        for n in names:
            c = row["allocators"][n]
            if c["status"] in ("ok", "differs"):
                cpu = f" ({c['cpu_s']:.2f})" if c.get("cpu_s") is not None else ""
                text = f"{c['seconds']:.2f}{cpu} / {c['rss_kib'] / 1024:.0f}"
                if c["status"] == "differs":
                    text += " DIFFERS"
                cells.append(text)
            else:
                cells.append(f"{c['status']}: {c['why']}")
        rows.append(cells)
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += ["", "| | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    s = doc["summary"]

    def cell(v, fmt):
        return "–" if v is None else fmt.format(v)
    md.append("| time, geometric mean vs glibc | " + " | ".join(cell(s[n]["time_vs_glibc"], "{:.3f}x") for n in names) + " |")
    md.append("| CPU time (user + sys), geometric mean vs glibc | "
              + " | ".join(cell(s[n].get("cpu_vs_glibc"), "{:.3f}x") for n in names) + " |")
    md.append("| peak RSS, geometric mean vs glibc | " + " | ".join(cell(s[n]["rss_vs_glibc"], "{:.3f}x") for n in names) + " |")

    def worst(v):
        return "–" if not v else f"{v[1]:.2f}x `{v[0]}`"
    md.append("| slowest program vs glibc | " + " | ".join(worst(s[n].get("worst_time")) for n in names) + " |")
    md.append("| largest peak RSS vs glibc | " + " | ".join(worst(s[n].get("worst_rss")) for n in names) + " |")
    md.append("| spread between rounds (slowest / fastest wall time, geometric mean) | "
              + " | ".join(cell(s[n].get("round_spread"), "{:.3f}x") for n in names) + " |")
    base = doc.get("baseline")
    if base:
        seg = s["SegregatedFit"]
        md += ["", f"SegregatedFit (`{doc['library']}`) against {base} (`{doc['allocators'][base]}`), "
               f"same rounds: time {cell(seg.get('time_vs_baseline'), '{:.3f}x')}, CPU time "
               f"{cell(seg.get('cpu_vs_baseline'), '{:.3f}x')} (geometric means of the per-program "
               f"medians); the spread between that build's rounds "
               f"{cell(s[base].get('round_spread'), '{:.3f}x')}."]
    md.append("")
    md.append(goals(s))
    if doc["failures"]:
        md += ["", "**Failures:**", ""] + [f"- {f}" for f in doc["failures"]]
    md.append("")
    return "\n".join(md)


def goals(s):
    """The goal row: SegregatedFit against mimalloc (the fastest of the three
    others on Debian's programs when the goal was set), no program slower
    than 1.1x glibc's, peak RSS within 1.2x glibc's (geometric mean)."""
    seg, mi = s.get("SegregatedFit", {}), s.get("mimalloc", {})
    if not (seg.get("time_vs_glibc") and mi.get("time_vs_glibc")):
        return "Goals: not judged (a program failed or an allocator is missing)."
    t_ok = seg["time_vs_glibc"] <= mi["time_vs_glibc"]
    w_name, w = seg["worst_time"]
    w_ok = w <= 1.1
    r_ok = seg["rss_vs_glibc"] is not None and seg["rss_vs_glibc"] <= 1.2

    def verdict(ok):
        return "**met**" if ok else "**missed**"
    rounds = seg.get("vs_mimalloc_by_round") or []
    per_round = (" (SegregatedFit / mimalloc round by round, geometric mean over the programs: "
                 + ", ".join(f"{x:.3f}x" for x in rounds) + ")") if len(rounds) > 1 else ""
    return (f"Goals: SegregatedFit's geometric-mean time at most mimalloc's: {seg['time_vs_glibc']:.3f}x vs "
            f"{mi['time_vs_glibc']:.3f}x{per_round}, {verdict(t_ok)}; no program over 1.1x glibc's time: slowest "
            f"`{w_name}` {w:.2f}x, {verdict(w_ok)}; peak RSS at most 1.2x glibc's (geometric mean): "
            f"{seg['rss_vs_glibc']:.3f}x, {verdict(r_ok)}.")


if __name__ == "__main__":
    sys.exit(main())
