#!/usr/bin/env bash
# Runs the codegen suite's tests (the suite crate's `codegen::` tests: every
# profile built, every expectation, every snapshot) with TOOLCHAIN (beta,
# nightly, ...) against the snapshots taken with the pinned compiler, and
# reports what changed: `allocasm diff --from <pin> --to TOOLCHAIN --format md
# --install` in the GitHub step summary (the hot path of every probe on every
# profile), whatever the tests did, and the changed snapshots copied to
# target/canary/ for download.
#
# Usage: ci/canary.sh --install TOOLCHAIN   (rustup: TOOLCHAIN with every
#                                            profile's target it has a std for)
#        ci/canary.sh TOOLCHAIN
#        ci/canary.sh --check-filter   (scripts/test's workflows step: the
#                                       filter below matches codegen tests)
# The pinned toolchain, and 1.95.0 with the targets of the profiles that
# keep it, come from `scripts/setup --steps test`.
#
# Exit status: 0 when the suite ran on TOOLCHAIN, changed listings or not
# (each is a warning and a diff in the summary: news, not a failure); 1 when
# it could not check TOOLCHAIN: the tests failed to build or failed (an
# expectation; snapshot changes are force-passed), ran no test at all (a
# filter that matches nothing must never report "nothing changed"), or
# `allocasm diff` failed (exit 3: a profile did not build).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# The tests the canary runs: the suite crate's integration binary, its
# codegen module.
test_args=(-p allocasm-suite --test suite)
filter=codegen::

# How many tests a libtest run executed, from its "test result:" lines.
tests_run() {
  awk '/^test result:/ { for (i = 1; i <= NF; i++) if ($i ~ /^(passed|failed);?$/) n += $(i - 1) } END { print n + 0 }' "$1"
}

if [ "${1:-}" = "--check-filter" ]; then
  list=$(cargo test --locked "${test_args[@]}" -- --list "$filter" 2>/dev/null) || {
    echo "canary: cannot list the suite's tests"; exit 1; }
  n=$(grep -c ': test$' <<<"$list")
  if [ "$n" -eq 0 ]; then
    echo "canary: the filter '$filter' matches no test of ${test_args[*]}"
    exit 1
  fi
  echo "canary: the filter '$filter' matches $n codegen test(s)"
  exit 0
fi

if [ "${1:-}" = "--install" ]; then
  tc=${2:?usage: ci/canary.sh --install TOOLCHAIN}
  rustup toolchain install "$tc" --profile minimal --no-self-update
  while IFS= read -r t; do
    # A target the toolchain has no std for is "not available" to the suite.
    rustup target add "$t" --toolchain "$tc" 2>/dev/null || echo "canary: $tc has no rust-std for $t"
  done < <(sed -n 's/^triple = "\(.*\)"/\1/p' targets/*.toml | sort -u)
  exit 0
fi

tc=${1:?usage: ci/canary.sh TOOLCHAIN}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
pin=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
rustc "+$tc" -vV || { echo "canary: toolchain $tc is not installed (ci/canary.sh --install $tc)"; exit 1; }

find snapshots -name '*.snap.new' -delete
mkdir -p target/canary
log=target/canary/test.log
# Force-pass so every changed snapshot is written as .snap.new, not only the first.
INSTA_FORCE_PASS=1 INSTA_UPDATE=new cargo "+$tc" test "${test_args[@]}" -- "$filter" --nocapture 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
ran=$(tests_run "$log")

{
  echo "## codegen canary: $(rustc "+$tc" -V)"
  echo
  echo "$ran codegen test(s) ran, exit status $status."
  echo
} >>"$summary"
# The diff whatever the tests did: what changed is news either way.
rm -f target/canary/diff.md
cargo run --release --locked --quiet -- --color never diff --from "$pin" --to "$tc" --format md \
  --install --out target/canary/diff.md 2>target/canary/diff.err
diff_status=$?
cat target/canary/diff.err
if [ -s target/canary/diff.md ]; then
  cat target/canary/diff.md >>"$summary"
else
  { echo "allocasm diff wrote no report (exit $diff_status):"; echo; echo '```'; cat target/canary/diff.err; echo '```'; } >>"$summary"
fi

changed=0
while IFS= read -r new; do
  old=${new%.new}
  changed=$((changed + 1))
  echo "::warning file=$old::listing changed under $tc"
  mkdir -p "target/canary/$(dirname "$old")"
  cp "$new" "target/canary/$old"
done < <(find snapshots -name '*.snap.new' | sort)
find snapshots -name '*.snap.new' -delete

echo "canary $tc: $ran test(s) ran, $changed snapshot(s) changed; test status $status, diff status $diff_status" | tee -a "$summary"
fail=0
if [ "$ran" -eq 0 ]; then
  echo "canary: no test ran: the tests did not build, or the filter '$filter' matched nothing" | tee -a "$summary"
  fail=1
elif [ "$status" -ne 0 ]; then
  echo "canary: the codegen tests failed on $tc (snapshot changes alone pass: see the log)" | tee -a "$summary"
  fail=1
fi
# diff: 0 nothing regressed, 1 a hot path regressed (news, like a changed
# listing), anything else an error (3: a profile did not build).
if [ "$diff_status" -ne 0 ] && [ "$diff_status" -ne 1 ]; then
  echo "canary: allocasm diff failed on $tc (exit $diff_status)" | tee -a "$summary"
  fail=1
fi
exit "$fail"
