#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh venv and uses it from outside the checkout, as a new
# user would (issue 31): `tessera --help`, `python -m tessera --help`, a bundled kernel compiled to
# PTX (and through ptxas when there is one), `tessera aot` with the bundled manifest, and
# tessera.kernels finding its kernel sources, all with no TESSERA_* variable set.
#
#     bash scripts/check_wheel.sh            # the wheel against the plain build's libtessera.so and CLI
#                                            # (build/ from scripts/setup.sh; only the extension is
#                                            # compiled, in build-wheel-prebuilt/, kept between runs:
#                                            # on 2 busy cores 5 minutes the first time, then 20 s in all)
#     bash scripts/check_wheel.sh --full     # the wheel as `pip install .` builds it: everything, with
#                                            # scikit-build-core's build directory build-wheel/<tag>/
#                                            # kept between runs (the first run takes long: on 2 busy
#                                            # cores 25 minutes; again with nothing changed, 40 s in all)
#
# scripts/test.sh (CI) runs the prebuilt mode: the extension compiled once more, then the wheel
# checked as above. scikit-build-core comes from scripts/setup.sh (else a venv build-wheel-env/ is
# made for it, which needs the network once).
# Environment: PYTHON (default python3), TESSERA_BUILD_DIR (default build), WORK (default: a new
# temporary folder; the wheel is WORK/wheel/*.whl, the venv WORK/venv), WHEEL (check this wheel
# instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
BUILD=$(realpath -m "${TESSERA_BUILD_DIR:-build}")
MODE=prebuilt
case "${1:-}" in
  --full) MODE=full ;;
  "") ;;
  *) echo "usage: bash scripts/check_wheel.sh [--full]" >&2; exit 2 ;;
esac
WORK=${WORK:-$(mktemp -d /tmp/tessera-wheel.XXXXXX)}
mkdir -p "$WORK"
step() { printf '\n=== %s\n' "$*"; }
die() { echo "check_wheel.sh: FAIL: $*" >&2; exit 1; }

if [ -n "${WHEEL:-}" ]; then
  wheel=$(realpath "$WHEEL")
  step "1. the given wheel $wheel"
else
  step "1. pip wheel ($MODE) -> $WORK/wheel"
  rm -rf "$WORK/wheel"
  args=()
  if [ "$MODE" = prebuilt ]; then
    for f in "$BUILD/lib/libtessera.so" "$BUILD/bin/tessera"; do
      [ -e "$f" ] || die "$f is missing: build first (bash scripts/setup.sh), or use --full"
    done
    args=(-C cmake.define.TESSERA_BUILD_COMPILER=OFF
          -C "cmake.define.TESSERA_PREBUILT_LIB=$BUILD/lib/libtessera.so"
          -C "build-dir=build-wheel-prebuilt/{wheel_tag}")
  fi
  # Without build isolation, from a Python that has the build requirements (this one, else the venv
  # build-wheel-env/, made once): the paths CMake sees (pybind11's) then stay the same from run to
  # run, so the kept build directory rebuilds nothing that did not change. pip's isolated build would
  # put pybind11 in a new temporary folder each time, and the extension would be compiled again.
  BUILD_PY=$PY
  if ! "$PY" -c "import scikit_build_core, pybind11" 2>/dev/null; then
    BUILD_PY=$ROOT/build-wheel-env/bin/python
    if ! "$BUILD_PY" -c "import scikit_build_core, pybind11" 2>/dev/null; then
      "$PY" -m venv --system-site-packages "$ROOT/build-wheel-env" \
        && "$BUILD_PY" -m pip install -q "scikit-build-core>=0.8" "pybind11>=2.10" \
        || die "could not make build-wheel-env/ with scikit-build-core and pybind11"
    fi
  fi
  t0=$(date +%s)
  "$BUILD_PY" -m pip wheel . --no-deps --no-build-isolation -w "$WORK/wheel" "${args[@]}" \
    >"$WORK/pip-wheel.log" 2>&1 \
    || { tail -40 "$WORK/pip-wheel.log"; die "pip wheel failed (log: $WORK/pip-wheel.log)"; }
  wheel=$(ls "$WORK"/wheel/tessera-*.whl)
  echo "$wheel ($(( $(date +%s) - t0 )) s)"
fi
"$PY" - "$wheel" <<'EOF' || die "the wheel lacks files"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["tessera/__main__.py", "tessera/bin/tessera", "tessera/libtessera.so", "tessera/kernels/src/manifest.txt",
        "tessera/kernels/src/softmax.py", "tessera/kernels/src/matmul.py", "tessera/kernels/src/attention.py",
        "tessera/kernels/softmax.py"]
missing = [n for n in need if n not in names]
missing += [] if any(n.startswith("tessera/_C.") and n.endswith(".so") for n in names) else ["tessera/_C*.so"]
missing += [] if any(n.endswith(".dist-info/entry_points.txt") for n in names) else ["entry_points.txt"]
print("missing:", missing) if missing else print(len(names), "files, all expected ones present")
sys.exit(1 if missing else 0)
EOF

step "2. a fresh venv ($WORK/venv), pip install the wheel"
rm -rf "$WORK/venv"
"$PY" -m venv "$WORK/venv" --system-site-packages  # numpy from the system, if it has it
"$WORK/venv/bin/python" -m pip install -q --no-deps --no-index "$wheel" || die "pip install $wheel"

step "3. from $WORK/run, with no TESSERA_* variable and no checkout on the path"
mkdir -p "$WORK/run"
cd "$WORK/run"
unset PYTHONPATH TESSERA_KERNELS_DIR TESSERA_BUILD_DIR TESSERA_EXT_DIR TESSERA_SOURCE_DIR TESSERA_PYTHON
export TESSERA_CACHE_DIR="$WORK/cache"
export PATH="$WORK/venv/bin:$PATH"
site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
[ "$(command -v tessera)" = "$WORK/venv/bin/tessera" ] || die "tessera is not the venv's ($(command -v tessera))"
tessera --help | grep -q '^usage: tessera' || die "tessera --help"
python -m tessera --help | grep -q '^usage: tessera' || die "python -m tessera --help"
tessera version
lib=$(ldd "$site/tessera/bin/tessera" | awk '$1 == "libtessera.so" {print $3}')
[ -n "$lib" ] && [ "$(realpath "$lib")" = "$(realpath "$site/tessera/libtessera.so")" ] \
  || { ldd "$site/tessera/bin/tessera"; die "the CLI does not load the package's libtessera.so"; }
tessera tune --help | grep -q '^usage: tessera tune' || die "tessera tune --help (python -m tessera.tune)"

tessera compile "$site/tessera/kernels/src/vector_add.py" --kernel add_kernel \
  --signature "*fp32:16,*fp32:16,*fp32:16,i32" --constexpr BLOCK_SIZE=1024 --arch sm_90a -o add.ptx \
  || die "tessera compile of the bundled vector_add.py"
grep -q '^.entry add_kernel\|\.entry add_kernel' add.ptx || die "add.ptx has no .entry add_kernel"
PTXAS=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
if [ -x "$PTXAS" ]; then "$PTXAS" -arch=sm_90a add.ptx -o add.cubin || die "ptxas add.ptx"; echo "ptxas: add.cubin"; fi

tessera aot --arch sm_90a -o out | tail -1 || die "tessera aot with the bundled manifest"
lines=$(grep -cvE '^\s*(#|$)' "$site/tessera/kernels/src/manifest.txt")
written=$(ls out/*.ptx | wc -l)
[ "$written" = "$lines" ] || die "tessera aot wrote $written PTX files for $lines manifest lines"

python - "$site" <<'EOF' || die "tessera.kernels does not find its kernel sources"
import pathlib, sys
site = pathlib.Path(sys.argv[1]).resolve()
import tessera
assert pathlib.Path(tessera.__file__).resolve().parent == site / "tessera", tessera.__file__
assert tessera._C is not None, tessera._C_error
from tessera.kernels import _files
assert _files.kernels_dir() == site / "tessera" / "kernels" / "src", _files.kernels_dir()
for name in ("softmax", "matmul", "attention"):
    module = _files.load(name)
    assert pathlib.Path(module.__file__).parent == _files.kernels_dir(), module.__file__
try:
    import tessera.kernels as tk  # the wrappers (torch is optional: `pip install tessera[torch]`)
    print("import tessera.kernels: ok,", tk.softmax.__name__, tk.matmul.__name__, tk.attention.__name__)
except ImportError as e:
    print("import tessera.kernels:", e)
    raise
print("tessera.kernels finds", ", ".join(sorted(p.name for p in _files.kernels_dir().glob("*.py"))))
EOF
echo "check_wheel.sh: PASS ($wheel)"
