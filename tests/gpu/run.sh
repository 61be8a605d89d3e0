#!/usr/bin/env bash
# The whole GPU suite in one command, from the repository root of the GPU machine:
#
#     bash tests/gpu/run.sh
#
# The GPU machine has no LLVM 19, so the compiler comes prebuilt (by
# scripts/setup.sh on a CPU machine, carried over in build/):
#     build/lib/libtessera.so  build/bin/tessera  build/tests/tessera_gpu_tests  build/examples/vector_add
#     build/examples/matmul  build/examples/attention  build/examples/aot_cpp/aot_cpp_example
# When LLVM 19 is present and something is missing, it is built here instead.
# Steps:
#   1. the pybind11 extension tessera._C only, against build/lib/libtessera.so,
#      in build-gpu-py/ (-DTESSERA_BUILD_COMPILER=OFF -DTESSERA_PREBUILT_LIB=...;
#      plain g++ when cmake is missing);
#   2. build/tests/tessera_gpu_tests    (C++ runtime tests, gtest)
#   3. build/examples/vector_add, matmul, attention  (the C++ API examples; matmul: kernels/matmul.py
#      in fp16 against a host reference in double; attention: the forward kernel)
#   4. python3 -m pytest tests/gpu -q   (torch: vector add, softmax, copy2d,
#                                        streams, CUDA graphs, Triton tutorials)
#   5. with TESSERA_BENCH=1, the benchmarks in bench/ (softmax, layernorm, attention, launch overhead,
#      compile time)
#   6. with TESSERA_SANITIZE=1, compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over
#      build/tests/tessera_gpu_tests and a sample of the Python GPU tests that launches every bundled
#      kernel, ragged shapes and the lang ops (TESSERA_SANITIZE_PYTEST: "FILES [-k EXPR]", default
#      tests/gpu/test_differential.py, which also runs the random generated kernels), with
#      PYTORCH_NO_CUDA_MEMORY_CACHING=1 (torch's caching allocator hides out-of-bounds accesses);
#      the summary reports each tool's error count (zero is the target; any error fails the suite).
#      TESSERA_SANITIZE_TOOLS (default "memcheck racecheck synccheck initcheck") picks the tools,
#      TESSERA_SANITIZE_TIMEOUT (default 600) bounds each sanitizer run in seconds.
#      CUDA API errors are not counted (--report-api-errors no): some C++ tests make launches
#      fail on purpose (too much shared memory, empty grid, broken PTX) and check the error.
# and prints one summary line with the counts and the device; the exit status
# is non-zero if anything failed (or could not run).
#
# Back-end: TESSERA_BACKEND=nvrtc bash tests/gpu/run.sh runs the whole suite with every kernel's
# PTX made by NVRTC from generated CUDA C++ instead of LLVM's NVPTX back-end (docs/nvrtc.md):
# the C++ tests, the example and the Python tests all compile through the default back-end,
# which TESSERA_BACKEND sets. The summary line names the back-end; both should give the same
# counts. NVRTC is checked first (libnvrtc from the CUDA toolkit, the loader's path,
# $TESSERA_NVRTC, or the nvidia-cuda-nvrtc pip wheel).
#
# Environment: PYTHON (default python3), TESSERA_BUILD_DIR (default build),
# TESSERA_GPU_PY_BUILD (default build-gpu-py), PYTEST_ARGS (extra pytest arguments),
# TESSERA_BENCH=1 (step 5), TESSERA_SANITIZE=1 (step 6).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${TESSERA_BUILD_DIR:-build}
PYBUILD=${TESSERA_GPU_PY_BUILD:-build-gpu-py}
PY=${PYTHON:-python3}
LOGS=$PYBUILD/logs
mkdir -p "$LOGS"

failures=()
summary=()
note() { printf '\n=== %s\n' "$*"; }
fail() { failures+=("$1"); }

# The binaries were linked on another machine, maybe at another path: find the library anyway,
# and the kernels of this checkout (the C++ tests and examples read kernels/*.py there; built
# elsewhere, they would look in the checkout that built them).
export LD_LIBRARY_PATH="$ROOT/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSERA_SOURCE_DIR="$ROOT"

BACKEND=${TESSERA_BACKEND:-llvm}
case "$BACKEND" in
  llvm|nvrtc) export TESSERA_BACKEND="$BACKEND" ;;
  *) echo "tests/gpu/run.sh: TESSERA_BACKEND must be llvm or nvrtc, got '$BACKEND'"
     echo "tessera GPU suite: FAIL (bad TESSERA_BACKEND)"; exit 2 ;;
esac

# --- 0. The prebuilt compiler, tests and example ---------------------------------------------
# (examples/aot_cpp: kernels compiled ahead of time into a C++ program; tests/gpu/test_aot_cpp.py runs it)
need=("$BUILD/lib/libtessera.so" "$BUILD/bin/tessera" "$BUILD/tests/tessera_gpu_tests" "$BUILD/examples/vector_add"
      "$BUILD/examples/matmul" "$BUILD/examples/attention" "$BUILD/examples/aot_cpp/aot_cpp_example")
missing=()
for f in "${need[@]}"; do [ -e "$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v llvm-config-19 >/dev/null 2>&1 || [ -d /usr/lib/llvm-19/lib/cmake/llvm ]; then
    note "building what is missing (${missing[*]}) with LLVM 19"
    gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >"$LOGS/configure-build.log" 2>&1 \
      && cmake --build "$BUILD" --target tessera tessera-cli tessera_gpu_tests tessera_example_vector_add \
           tessera_example_matmul tessera_example_attention aot_cpp_example \
           -j "$(nproc)" >"$LOGS/build.log" 2>&1 \
      || cmake --build "$BUILD" -j "$(nproc)" >>"$LOGS/build.log" 2>&1 \
      || { echo "build failed: see $LOGS/build.log"; tail -30 "$LOGS/build.log"; }
  fi
  missing=()
  for f in "${need[@]}"; do [ -e "$f" ] || missing+=("$f"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tests/gpu/run.sh: missing ${missing[*]}: build them first on a CPU machine (bash scripts/setup.sh) and carry build/ over"
    echo "tessera GPU suite: FAIL (missing prebuilt files)"
    exit 2
  fi
fi

# --- 1. The Python extension against the prebuilt library ------------------------------------
note "1. building tessera._C against $BUILD/lib/libtessera.so in $PYBUILD"
ext_ok=1
t0=$(date +%s)
PYEXE=$(command -v "$PY")
if command -v cmake >/dev/null 2>&1; then
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! cmake -S . -B "$PYBUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_COMPILER=OFF \
         -DTESSERA_BUILD_TESTS=OFF -DTESSERA_PREBUILT_LIB="$ROOT/$BUILD/lib/libtessera.so" \
         -DPython_EXECUTABLE="$PYEXE" >"$LOGS/configure-ext.log" 2>&1 \
     || ! cmake --build "$PYBUILD" --target tessera_python -j "$(nproc)" >"$LOGS/build-ext.log" 2>&1; then
    ext_ok=0
    cat "$LOGS/configure-ext.log" "$LOGS/build-ext.log" 2>/dev/null | tail -40
  fi
else
  # No cmake: the same build with g++ directly.
  out="$PYBUILD/python/tessera"
  mkdir -p "$out"
  suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  includes=$("$PY" -m pybind11 --includes 2>/dev/null) || { echo "pybind11 is not installed for $PY"; ext_ok=0; }
  if [ $ext_ok = 1 ]; then
    cp -f "$BUILD/lib/libtessera.so" "$out/libtessera.so"
    if ! ${CXX:-g++} -O2 -std=c++20 -shared -fPIC -fvisibility=hidden $includes -I"$ROOT" \
         python/bindings/*.cpp -L"$out" -ltessera -Wl,-rpath,'$ORIGIN' -o "$out/_C$suffix" \
         >"$LOGS/build-ext.log" 2>&1; then
      ext_ok=0
      tail -40 "$LOGS/build-ext.log"
    fi
  fi
fi
export TESSERA_EXT_DIR="$ROOT/$PYBUILD/python/tessera"
if [ $ext_ok = 1 ] && "$PY" -c "import sys; sys.path.insert(0, 'python'); import tessera; assert tessera._C, tessera._C_error" \
     >"$LOGS/import.log" 2>&1; then
  summary+=("extension: built in $(( $(date +%s) - t0 ))s")
else
  cat "$LOGS/import.log" 2>/dev/null | tail -20
  summary+=("extension: FAILED")
  fail "the extension tessera._C did not build or import"
fi

DEVICE=$("$PY" - <<'EOF' 2>/dev/null
import sys
sys.path.insert(0, "python")
try:
    import tessera
    if not tessera._C.driver_available():
        print("no GPU (" + tessera._C.driver_status()["error"].split(":")[0] + ")")
    else:
        n = tessera._C.device_count()
        p = tessera._C.device_properties(0)
        print(f"{p['name']} ({p['arch']}{f', {n} devices' if n > 1 else ''}), "
              f"tessera target {tessera._C.target_arch(0)}")
except Exception as e:  # noqa: BLE001
    print(f"unknown device ({type(e).__name__})")
EOF
)
[ -n "$DEVICE" ] || DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$DEVICE" ] || DEVICE="unknown device"
note "device: $DEVICE"

# The back-end: with nvrtc, NVRTC must load and compile a bundled kernel before anything else runs.
BACKEND_NOTE="backend $BACKEND"
nvrtc_check() {
  "$BUILD/bin/tessera" compile kernels/vector_add.py --kernel add_kernel --signature "*fp32:16,*fp32:16,*fp32:16,i32" \
    --constexpr BLOCK_SIZE=1024 --backend nvrtc -o "$LOGS/nvrtc-check.ptx" >"$LOGS/nvrtc-check.log" 2>&1
}
if [ "$BACKEND" = nvrtc ]; then
  if ! nvrtc_check && [ -z "${TESSERA_NVRTC:-}" ]; then
    # No toolkit NVRTC where the C++ side looks: torch's pip wheel (nvidia-cuda-nvrtc[-cu12]) will do.
    wheel=$("$PY" - <<'EOF' 2>/dev/null
import os, sys
for base in sys.path:
    for sub in (("nvidia", "cu13", "lib", "libnvrtc.so.13"), ("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")):
        p = os.path.join(base or ".", *sub)
        if os.path.exists(p):
            print(os.path.abspath(p)); sys.exit(0)
EOF
)
    if [ -n "$wheel" ]; then
      export TESSERA_NVRTC="$wheel"
      note "NVRTC from the pip wheel: TESSERA_NVRTC=$wheel"
    fi
  fi
  if nvrtc_check; then
    ver=$("$PY" -c "import sys; sys.path.insert(0, 'python'); import tessera; s = tessera._C.nvrtc_status(); print('NVRTC %d.%d (%s)' % (*s['version'], s['library']))" 2>/dev/null)
    BACKEND_NOTE="backend nvrtc${ver:+, $ver}"
  else
    cat "$LOGS/nvrtc-check.log"
    echo "tessera GPU suite on $DEVICE: FAIL — TESSERA_BACKEND=nvrtc but NVRTC cannot compile a kernel (see above)"
    exit 2
  fi
fi
note "$BACKEND_NOTE"
summary=("$BACKEND_NOTE" "${summary[@]}")

# --- 2. C++ runtime tests ----------------------------------------------------------------------
note "2. $BUILD/tests/tessera_gpu_tests"
"$BUILD/tests/tessera_gpu_tests" 2>&1 | tee "$LOGS/gtest.log"
rc=${PIPESTATUS[0]}
passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$LOGS/gtest.log" | grep -oE '[0-9]+$' | tail -1)
failed=$(grep -oE '^\[  FAILED  \] [0-9]+ tests?,' "$LOGS/gtest.log" | grep -oE '[0-9]+' | tail -1)
skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ tests?,' "$LOGS/gtest.log" | grep -oE '[0-9]+' | tail -1)
summary+=("C++ runtime: ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped")
[ "$rc" = 0 ] || fail "tessera_gpu_tests (exit $rc)"
# Only the multi-GPU tests may skip (on a one-GPU machine); anything else means no GPU.
multi=$(grep -cE 'needs (two|2) GPUs' "$LOGS/gtest.log" || true)
[ "${skipped:-0}" -le "${multi:-0}" ] || fail "tessera_gpu_tests skipped ${skipped} tests (no GPU?)"

# --- 3. The C++ API examples -------------------------------------------------------------------
# (from the repository root, with TESSERA_SOURCE_DIR: the examples read kernels/*.py there)
for example in vector_add matmul attention; do
  note "3. $BUILD/examples/$example"
  log="$LOGS/example-$example.log"
  "$BUILD/examples/$example" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] && grep -q '^PASS' "$log"; then
    summary+=("example $example: PASS")
  else
    summary+=("example $example: FAIL")
    fail "examples/$example (exit $rc$(grep -q '^no GPU' "$log" && echo ', no GPU'))"
  fi
done

# --- 4. The Python GPU suite -------------------------------------------------------------------
note "4. $PY -m pytest tests/gpu -q"
# PYTEST_ARGS is split as the shell would (quotes group words: PYTEST_ARGS="-k 'a or b'").
pytest_extra=()
eval "pytest_extra=(${PYTEST_ARGS:-})"
"$PY" -m pytest tests/gpu -q -rs "${pytest_extra[@]}" 2>&1 | tee "$LOGS/pytest.log"
rc=${PIPESTATUS[0]}
line=$(grep -E '(passed|failed|error|skipped|no tests ran)' "$LOGS/pytest.log" | tail -1 | sed -E 's/=+//g; s/^ +| +$//g')
summary+=("pytest: ${line:-no result}")
[ "$rc" = 0 ] || fail "pytest tests/gpu (exit $rc)"
if grep -qE '[0-9]+ skipped' <<<"$line" && ! grep -qE '[0-9]+ passed' <<<"$line"; then
  fail "pytest skipped everything (no torch or no GPU?)"
fi

# --- 5. Benchmarks -----------------------------------------------------------------------------
# Benchmarks (softmax, layernorm, matmul, attention, fusion, launch overhead, compile time) with TESSERA_BENCH=1;
# TESSERA_BENCH_ARGS passes options (e.g. --quick). Results: $LOGS/bench/*.json. The softmax,
# layernorm, matmul and compile-time benchmarks report both back-ends side by side ("tessera" = LLVM,
# "tessera-nvrtc" = NVRTC; --backend llvm|nvrtc|both in TESSERA_BENCH_ARGS picks).
if [ "${TESSERA_BENCH:-0}" = 1 ]; then
  for b in softmax layernorm matmul attention fusion launch_overhead compile_time; do
    note "5. bench/$b.py"
    # shellcheck disable=SC2086
    "$PY" "bench/$b.py" --out "$LOGS/bench" ${TESSERA_BENCH_ARGS:-} 2>&1 | tee "$LOGS/bench-$b.log"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "bench/$b.py"
  done
  headline=$("$PY" - "$LOGS/bench" <<'EOF' 2>/dev/null
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
out = []
try:
    rows = json.loads((d / "launch_overhead.json").read_text())["rows"]
    us = next(r for r in rows if r["case"].startswith("4 tensors"))["us"]
    out.append("launch " + ", ".join(f"{k} {v:.1f}" for k, v in us.items()) + " us")
except Exception:
    pass
try:
    p = json.loads((d / "compile_time.json").read_text())["providers"]
    t, tr = p["tessera"], p.get("triton", {})
    tn = p.get("tessera-nvrtc", {})
    out.append(f"compile cold tessera {t['cold_ms']:.0f} ms"
               + (f" (nvrtc back-end {tn['cold_ms']:.0f} ms)" if "cold_ms" in tn else "")
               + " vs triton " + (f"{tr['cold_ms']:.0f} ms" if "cold_ms" in tr else "FAILED")
               + f", warm disk hit {t['warm_ms']:.2f} ms")
except Exception:
    pass
print("; ".join(out))
EOF
)
  summary+=("bench: ${headline:-no numbers}")
fi

# --- 6. compute-sanitizer ----------------------------------------------------------------------
if [ "${TESSERA_SANITIZE:-0}" = 1 ]; then
  SAN=$(command -v compute-sanitizer || true)
  [ -n "$SAN" ] || { [ -x /usr/local/cuda/bin/compute-sanitizer ] && SAN=/usr/local/cuda/bin/compute-sanitizer; }
  if [ -z "$SAN" ]; then
    summary+=("sanitizer: compute-sanitizer NOT FOUND")
    fail "TESSERA_SANITIZE=1 but compute-sanitizer is neither on PATH nor in /usr/local/cuda/bin"
  else
    SAN_TIMEOUT=${TESSERA_SANITIZE_TIMEOUT:-600}
    SAN_PYTEST=${TESSERA_SANITIZE_PYTEST:-"tests/gpu/test_differential.py"}
    read -r -a san_py <<<"${SAN_PYTEST%% -k *}"
    san_k=""; [[ "$SAN_PYTEST" == *" -k "* ]] && san_k=${SAN_PYTEST#* -k }
    san_counts=()
    for tool in ${TESSERA_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
      errors=0; bad=""
      for what in gtest pytest; do
        log="$LOGS/sanitize-$tool-$what.log"
        note "6. compute-sanitizer --tool $tool: $what"
        if [ "$what" = gtest ]; then
          cmd=("$BUILD/tests/tessera_gpu_tests")
        else
          cmd=("$PY" -m pytest -q -p no:cacheprovider "${san_py[@]}")
          [ -n "$san_k" ] && cmd+=(-k "$san_k")
        fi
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$SAN_TIMEOUT" "$SAN" --tool "$tool" --error-exitcode 1 \
          --report-api-errors no --print-limit 20 "${cmd[@]}" >"$log" 2>&1
        rc=$?
        tail -5 "$log"
        # memcheck/synccheck/initcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, ...)".
        n=$(grep -oE '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: .*\([0-9]+ error)' "$log" \
              | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}')
        errors=$((errors + n))
        if [ "$rc" = 124 ]; then bad+=" $what timed out"; fail "compute-sanitizer --tool $tool $what: timed out after ${SAN_TIMEOUT}s"
        elif [ "$rc" != 0 ]; then
          [ "$n" -gt 0 ] || bad+=" $what exit $rc"
          fail "compute-sanitizer --tool $tool $what (exit $rc, $n errors): see $log"
        fi
      done
      san_counts+=("$tool $errors${bad:+ (${bad# })}")
    done
    summary+=("sanitizer errors: $(IFS=','; echo "${san_counts[*]}" | sed 's/,/, /g')")
  fi
fi

# --- Summary -----------------------------------------------------------------------------------
status=PASS
[ ${#failures[@]} -eq 0 ] || status=FAIL
printf '\n'
for f in "${failures[@]}"; do echo "FAILED: $f"; done
(IFS=';'; echo "tessera GPU suite on $DEVICE: $status —${summary[*]/#/ }")
[ "$status" = PASS ]
