#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine: installs what tessera needs, builds it,
# and runs the main job: compiling every bundled kernel (kernels/manifest.txt)
# to PTX with the CLI, then assembling each PTX file with ptxas.
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
python3 -m pip install -q pybind11 pytest numpy nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

# The main job: every bundled kernel to PTX, each accepted by ptxas.
ARCH="${TESSERA_ARCH:-sm_90a}"
rm -rf build/ptx
build/bin/tessera aot kernels/manifest.txt --arch "$ARCH" -o build/ptx
PTXAS="${CUDA_HOME:-/usr/local/cuda}/bin/ptxas"
for ptx in build/ptx/*.ptx; do
  "$PTXAS" -arch="$ARCH" "$ptx" -o "${ptx%.ptx}.cubin"
done
echo "ptxas accepted $(ls build/ptx/*.ptx | wc -l) PTX files for $ARCH"
