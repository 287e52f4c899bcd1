#!/usr/bin/env bash
# Runs the codegen suite with TOOLCHAIN (beta, nightly, ...) against the
# snapshots taken with the pinned compiler, and reports what changed:
# every changed listing as a unified diff, in the log and in the GitHub step
# summary; the changed snapshots are copied to target/canary/ for download.
#
# Usage: ci/canary.sh TOOLCHAIN
# Exit status: 0 when nothing changed, 1 when listings changed or an
# expectation failed (the workflow job is continue-on-error: it reports,
# it does not block).
set -uo pipefail
cd "$(dirname "$0")/.."
tc=${1:?usage: ci/canary.sh TOOLCHAIN}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}

rustup toolchain install "$tc" --profile minimal --no-self-update
for t in $(sed -n 's/^triple = "\(.*\)"/\1/p' targets/*.toml | sort -u); do
  rustup target add "$t" --toolchain "$tc"
done
rustc "+$tc" -vV

find snapshots -name '*.snap.new' -delete
# Force-pass so every changed snapshot is written as .snap.new, not only the first.
INSTA_FORCE_PASS=1 INSTA_UPDATE=new cargo "+$tc" test --test all codegen -- --nocapture
status=$?

mkdir -p target/canary
changed=0
{
  echo "## codegen canary: $(rustc "+$tc" -V)"
  echo
} >>"$summary"
while IFS= read -r new; do
  old=${new%.new}
  changed=$((changed + 1))
  echo "::warning file=$old::listing changed under $tc"
  mkdir -p "target/canary/$(dirname "$old")"
  cp "$new" "target/canary/$old"
  # Compare the listings only (after the second '---'), not the metadata.
  diff -u <(sed '1,/^---$/d' "$old" | sed '1,/^---$/d') <(sed '1,/^---$/d' "$new" | sed '1,/^---$/d') \
    --label "$old (pinned)" --label "$old ($tc)" | tee -a target/canary/changes.diff
  { echo "<details><summary>$old</summary>"; echo; echo '```diff'
    diff -u <(sed '1,/^---$/d' "$old" | sed '1,/^---$/d') <(sed '1,/^---$/d' "$new" | sed '1,/^---$/d') --label pinned --label "$tc"
    echo '```'; echo "</details>"; } >>"$summary"
done < <(find snapshots -name '*.snap.new' | sort)
find snapshots -name '*.snap.new' -delete

echo "canary $tc: $changed listing(s) changed; test status $status" | tee -a "$summary"
[ "$changed" -eq 0 ] && [ "$status" -eq 0 ]
