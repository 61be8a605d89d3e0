#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine: installs what tessera needs, builds it,
# and runs the main job: compiling every bundled kernel (kernels/manifest.txt)
# to PTX with the CLI, then assembling each PTX file with ptxas, with each of
# the two back-ends (LLVM's NVPTX, and NVRTC from generated CUDA C++).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v llvm-config-19 >/dev/null || ! command -v clang++-19 >/dev/null || ! command -v ninja >/dev/null \
   || ! command -v ccache >/dev/null || [ ! -f /usr/lib/x86_64-linux-gnu/libgtest.a ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    llvm-19-dev clang-19 libclang-rt-19-dev ninja-build ccache cmake g++ libgtest-dev \
    zlib1g-dev libzstd-dev libxml2-dev libffi-dev python3-dev
fi
python3 -m pip install -q pybind11 pytest numpy ml_dtypes nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm "scikit-build-core>=0.8"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

# The NVRTC back-end (docs/nvrtc.md) needs libnvrtc: the CUDA toolkit's (/usr/local/cuda,
# $CUDA_HOME, the loader's path), else the pip wheel, linked next to libtessera.so where
# the runtime also looks.
have_nvrtc() {
  ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvrtc.so* /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1 \
    || /sbin/ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' || ls build/lib/libnvrtc.so* >/dev/null 2>&1
}
if ! have_nvrtc; then
  python3 -m pip install -q "nvidia-cuda-nvrtc>=13,<14"
  wheel=$(python3 -m pip show nvidia-cuda-nvrtc | sed -n 's/^Location: //p')/nvidia/cu13/lib
  ln -sf "$wheel"/libnvrtc* build/lib/
fi

# The main job: every bundled kernel to PTX with each back-end, each accepted by ptxas.
ARCH="${TESSERA_ARCH:-sm_90a}"
PTXAS="${CUDA_HOME:-/usr/local/cuda}/bin/ptxas"
for backend in llvm nvrtc; do
  out=build/ptx; [ "$backend" = llvm ] || out=build/ptx-$backend
  rm -rf "$out"
  build/bin/tessera aot kernels/manifest.txt --arch "$ARCH" --backend "$backend" -o "$out"
  for ptx in "$out"/*.ptx; do
    "$PTXAS" -arch="$ARCH" "$ptx" -o "${ptx%.ptx}.cubin"
  done
  echo "ptxas accepted $(ls "$out"/*.ptx | wc -l) PTX files for $ARCH ($backend back-end)"
done
