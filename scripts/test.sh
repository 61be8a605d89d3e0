#!/usr/bin/env bash
# The whole CPU test suite: the build (which also checks that every C++
# layer includes only the layers below it: scripts/check_layers.py), C++ unit tests (ctest), the Python/CLI tests
# (pytest: golden IR, expected diagnostics, ptxas on every kernel), the
# compile-and-ptxas tests again through the NVRTC back-end (docs/nvrtc.md),
# a bounded fuzzing run (tests/fuzz/run.sh: the front-end and the
# compiler pipeline, half the time each, then ptxas on the PTX of the
# pipeline corpus), and the wheel installed into a fresh venv
# (scripts/check_wheel.sh). Needs the build from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --build build
ctest --test-dir build --output-on-failure -j2 -LE gpu
python3 -m pytest tests/python -q
# Every kernel the language tests compile (and the bundled, generated and matmul kernels), through NVRTC.
TESSERA_BACKEND=nvrtc python3 -m pytest tests/python -q -p no:cacheprovider \
  -k "lang or kernels_ptx or matmul_ptx or vectorized or generated"
bash tests/fuzz/run.sh "${TESSERA_FUZZ_SECONDS:-60}"
# The wheel (against this build's libtessera.so and CLI) installed into a fresh venv and used from
# outside the checkout: `tessera --help`, `tessera aot` of the bundled kernels, tessera.kernels.
bash scripts/check_wheel.sh
