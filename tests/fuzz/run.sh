#!/usr/bin/env bash
# Builds the front-end fuzzer into build-fuzz/ (at the repository root) and
# runs it for SECONDS (default 60) on the seed corpus tests/fuzz/corpus/.
# New corpus entries go to a scratch directory, not into the repository;
# crash/timeout/leak reproducers go to build-fuzz/artifacts/. Exits non-zero
# when the fuzzer finds a problem.
#
#   tests/fuzz/run.sh [SECONDS]
#
# Environment: CXX_FUZZ (default clang++-19), FUZZ_JOBS (build parallelism,
# default 2), FUZZ_ARGS (extra libFuzzer flags), FUZZ_KEEP_CORPUS=DIR (use DIR
# as the scratch corpus and keep it).
# To reproduce a crash: build-fuzz/fuzz_frontend build-fuzz/artifacts/crash-...
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-fuzz"
cxx="${CXX_FUZZ:-clang++-19}"

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
ninja -C "$build" -j "${FUZZ_JOBS:-2}" fuzz_frontend

if [[ -n "${FUZZ_KEEP_CORPUS:-}" ]]; then
  scratch="$FUZZ_KEEP_CORPUS"
  mkdir -p "$scratch"
else
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/tessera-fuzz.XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
fi
mkdir -p "$build/artifacts"

# shellcheck disable=SC2086
"$build/fuzz_frontend" "$scratch" "$root/tests/fuzz/corpus" \
  -dict="$root/tests/fuzz/python.dict" \
  -max_len=4096 -timeout=10 -max_total_time="$seconds" \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-}
