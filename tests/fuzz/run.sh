#!/usr/bin/env bash
# Builds the two libFuzzer targets into build-fuzz/ (at the repository root)
# and runs them for SECONDS in all (default 60, split in half):
#
#   1. fuzz_frontend: raw bytes as kernel source, seed corpus tests/fuzz/corpus/;
#   2. fuzz_pipeline: bytes -> a generated kernel -> the whole compile to PTX,
#      seed corpus tests/fuzz/corpus-pipeline/;
#   3. ptxas over the pipeline corpus: the seeds and what step 2 added are
#      replayed (-runs=0) with TESSERA_FUZZ_PTX_DIR set, which writes the PTX
#      of every kernel that compiles; ptxas must accept each file.
#
# New corpus entries go to scratch directories, not into the repository;
# crash/timeout/leak reproducers go to build-fuzz/artifacts/. Exits non-zero
# when a fuzzer finds a problem or ptxas rejects a kernel. docs/fuzzing.md.
#
#   tests/fuzz/run.sh [SECONDS]
#
# Environment: CXX_FUZZ (default clang++-19), FUZZ_JOBS (build parallelism,
# default 2), FUZZ_ARGS (extra libFuzzer flags for both targets),
# FUZZ_KEEP_CORPUS=DIR (use DIR/frontend and DIR/pipeline as the scratch
# corpora and keep them), FUZZ_TARGETS (default "frontend pipeline"),
# PTXAS (default: ptxas on PATH, else /usr/local/cuda/bin/ptxas),
# FUZZ_PTXAS_MAX (most new pipeline entries replayed through ptxas, newest
# first; default 100).
# To reproduce a crash: build-fuzz/fuzz_frontend build-fuzz/artifacts/crash-...
# (or fuzz_pipeline; TESSERA_FUZZ_PRINT=1 prints the generated kernel).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-fuzz"
cxx="${CXX_FUZZ:-clang++-19}"
targets="${FUZZ_TARGETS:-frontend pipeline}"
ptxas="${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}"

count=0
for t in $targets; do count=$((count + 1)); done
share=$(( seconds / (count > 0 ? count : 1) ))
(( share >= 1 )) || share=1

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
# shellcheck disable=SC2046
ninja -C "$build" -j "${FUZZ_JOBS:-2}" $(for t in $targets; do echo "fuzz_$t"; done)

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tessera-fuzz.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
scratch() { # $1: frontend|pipeline
  local dir="$tmp/$1"
  [[ -n "${FUZZ_KEEP_CORPUS:-}" ]] && dir="$FUZZ_KEEP_CORPUS/$1"
  mkdir -p "$dir"
  echo "$dir"
}
mkdir -p "$build/artifacts"

for t in $targets; do
  case "$t" in
  frontend)
    echo "== fuzz_frontend, ${share} s"
    # shellcheck disable=SC2086
    "$build/fuzz_frontend" "$(scratch frontend)" "$root/tests/fuzz/corpus" \
      -dict="$root/tests/fuzz/python.dict" \
      -max_len=4096 -timeout=10 -max_total_time="$share" \
      -artifact_prefix="$build/artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-}
    ;;
  pipeline)
    echo "== fuzz_pipeline, ${share} s"
    pipeline_scratch="$(scratch pipeline)"
    # shellcheck disable=SC2086
    "$build/fuzz_pipeline" "$pipeline_scratch" "$root/tests/fuzz/corpus-pipeline" \
      -max_len=512 -timeout=60 -rss_limit_mb=4096 -max_total_time="$share" \
      -artifact_prefix="$build/artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-}

    echo "== ptxas on the PTX of the pipeline corpus"
    if [[ ! -x "$ptxas" ]]; then
      echo "run.sh: ptxas not found (set PTXAS); cannot check the generated PTX" >&2
      exit 1
    fi
    # The seeds, and the newest FUZZ_PTXAS_MAX entries of this run.
    replay="$tmp/replay"
    ptx="$tmp/ptx"
    mkdir -p "$replay" "$ptx"
    cp "$root"/tests/fuzz/corpus-pipeline/* "$replay/"
    # (A process substitution: with pipefail, ls killed by head's early exit would fail the script.)
    # shellcheck disable=SC2012
    mapfile -t newest < <(ls -t "$pipeline_scratch" | head -n "${FUZZ_PTXAS_MAX:-100}")
    for f in "${newest[@]}"; do cp "$pipeline_scratch/$f" "$replay/"; done
    TESSERA_FUZZ_PTX_DIR="$ptx" "$build/fuzz_pipeline" -runs=0 "$replay" 2>"$tmp/replay.log" ||
      { cat "$tmp/replay.log" >&2; exit 1; }
    inputs=$(ls "$replay" | wc -l)
    rejected=0
    checked=0
    for f in "$ptx"/*.ptx; do
      [[ -e "$f" ]] || continue
      name="$(basename "$f" .ptx)" # <hash>.<arch>
      arch="${name##*.}"
      hash="${name%%.*}"
      checked=$((checked + 1))
      if ! "$ptxas" -arch="$arch" "$f" -o /dev/null 2>"$tmp/ptxas.err"; then
        rejected=$((rejected + 1))
        mkdir -p "$build/artifacts/ptxas"
        cp "$f" "$ptx/$hash.py" "$build/artifacts/ptxas/"
        echo "ptxas -arch=$arch rejects the PTX of $hash.py:" >&2
        head -n 20 "$tmp/ptxas.err" >&2
      fi
    done
    echo "ptxas: $checked kernels (of $inputs inputs) assembled, $rejected rejected"
    if (( rejected > 0 )); then
      echo "run.sh: reproducers in $build/artifacts/ptxas/ (kernel source with its options, and the PTX)" >&2
      exit 1
    fi
    ;;
  *)
    echo "run.sh: unknown target '$t' (frontend, pipeline)" >&2
    exit 2
    ;;
  esac
done
