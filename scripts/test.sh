#!/usr/bin/env bash
# The whole CPU test suite: C++ unit tests (ctest), the Python/CLI tests
# (pytest: golden IR, expected diagnostics, ptxas on every kernel), and a
# bounded fuzzing run (tests/fuzz/run.sh: the front-end and the compiler
# pipeline, half the time each, then ptxas on the PTX of the pipeline corpus).
# Needs the build from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --build build
ctest --test-dir build --output-on-failure -j2 -LE gpu
python3 -m pytest tests/python -q
bash tests/fuzz/run.sh "${TESSERA_FUZZ_SECONDS:-60}"
