#!/usr/bin/env bash
# The step runner the way a macOS runner sees it: scripts/setup --no-apt,
# and scripts/test's `fmt` and
# `limits` steps (the time limit, its process-group kill, the summary line,
# step selection) run with a PATH that holds every command of this one but
# GNU `timeout`, `gtimeout` and bash 4+, with bash 3.2 as `bash` when one is
# there: ALLOCASM_BASH32, else target/bash-3.2/bin/bash (built from GNU
# bash 3.2.48's source, macOS's /bin/bash version). Without one, the host's
# bash stands in and this says so. The `workflows` step runs it (~10 s).
#
# Usage: ci/portable-check.sh
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
bash32=${ALLOCASM_BASH32:-target/bash-3.2/bin/bash}
shim=$PWD/target/portable/bin
rm -rf "$shim"
mkdir -p "$shim"

# Every command on PATH, first one wins, but timeout, gtimeout and bash.
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    n=${f##*/}
    case "$n" in timeout | gtimeout | bash | bash[0-9]*) continue ;; esac
    [ -x "$f" ] && [ ! -e "$shim/$n" ] && [ ! -L "$shim/$n" ] && ln -s "$f" "$shim/$n"
  done
done
if [ -x "$bash32" ]; then
  ln -s "$(cd "$(dirname "$bash32")" && pwd)/$(basename "$bash32")" "$shim/bash"
else
  echo "portable: no bash 3.2 (ALLOCASM_BASH32, or target/bash-3.2/bin/bash): the host's bash $BASH_VERSION stands in"
  ln -s "$BASH" "$shim/bash"
fi

if PATH=$shim command -v timeout >/dev/null || PATH=$shim command -v gtimeout >/dev/null; then
  echo "portable: the shim still has a timeout"; exit 1
fi
version=$(PATH=$shim bash -c 'echo "$BASH_VERSION"')
echo "portable: PATH without timeout/gtimeout, bash $version"

# scripts/setup too, as a job without apt sees it (it must not fail).
(unset _ALLOCASM_TEST_STEP; PATH=$shim bash scripts/setup --no-apt --steps "fmt limits") || {
  echo "portable: scripts/setup --no-apt failed under bash $version"; exit 1; }

log=target/portable/test.log
out=$(unset _ALLOCASM_TEST_STEP _ALLOCASM_TEST_LOGGING
  PATH=$shim ALLOCASM_TEST_LOG=$log bash scripts/test --no-setup fmt limits 2>&1) && rc=0 || rc=$?
printf '%s\n' "$out" | sed 's/^/  | /'
summary=$(printf '%s\n' "$out" | grep '^steps: ' || true)
if [ "$rc" -ne 0 ] || [ "$summary" != "steps: 2 passed, 0 failed" ]; then
  echo "portable: scripts/test fmt limits failed under bash $version without timeout (exit $rc)"
  exit 1
fi
if grep -q 'command not found' "$log"; then
  echo "portable: a command was missing:"; grep 'command not found' "$log"; exit 1
fi
echo "portable: scripts/test passes under bash $version with no timeout or gtimeout: $summary"
