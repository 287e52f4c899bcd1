#!/usr/bin/env bash
# The library's tests for TRIPLE through `cross` (Docker + qemu-user images;
# Cross.toml passes the environment the tests read). The codegen suite is
# skipped: it runs cargo itself, which the cross image's runner cannot.
#
# Usage: ci/cross-test.sh [TRIPLE]   (default aarch64-unknown-linux-gnu)
# Needs Docker. Without it, scripts/test's `aarch64` step does the same with
# Debian's cross linker and qemu-user directly.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
triple=${1:-aarch64-unknown-linux-gnu}
command -v cross >/dev/null || cargo install cross --locked
rustup target add "$triple"
ALLOCASM_STRESS_SCALE=small cross test --locked --target "$triple" --lib --tests -- --skip codegen
