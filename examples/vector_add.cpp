// The C++ API end to end: compile a Triton-style vector-add kernel from a
// source string, allocate device memory with the runtime's helpers, launch,
// and check the result on the host against fresh random inputs (the output
// is poisoned with NaN first, so a kernel that writes nothing fails).
//
//   build/examples/vector_add [n]      prints PASS or FAIL; exit status 0 only on PASS
//
// Without a CUDA driver or device it still compiles the kernel (no GPU is
// needed for that), prints "no GPU: <why>" and exits 0.
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Kernel.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

namespace {

const char *kSource = R"py(
import tessera
import tessera.language as tl


@tessera.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
)py";

constexpr int kBlock = 1024;

// Why there is no GPU to run on, or "" if there is one.
std::string noGpuReason() {
  using namespace tessera::rt;
  if (!driverAvailable()) return driverStatus().error;
  try {
    if (deviceCount() == 0) return "the CUDA driver reports no devices";
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

int run(int n) {
  namespace rt = tessera::rt;
  const std::string noGpu = noGpuReason();

  tessera::CompileOptions options;
  options.numWarps = 4;
  options.arch = noGpu.empty() ? tessera::targetArch() : "sm_90a"; // the GPU's own, e.g. sm_90a on H100
  tessera::Kernel kernel =
      tessera::compile(kSource, "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
                       {{"BLOCK_SIZE", tessera::ConstexprValue::ofInt(kBlock)}}, options,
                       "examples/vector_add.cpp:kSource");
  std::printf("compiled %s for %s: %zu bytes of PTX, %u warps, %u bytes of shared memory\n",
              kernel.name().c_str(), kernel.arch().c_str(), kernel.ptx().size(), kernel.numWarps(),
              kernel.sharedBytes());
  if (!noGpu.empty()) {
    std::printf("no GPU: %s; skipping the launch\n", noGpu.c_str());
    return 0;
  }

  const rt::DeviceProperties &props = rt::deviceProperties();
  std::printf("device %d: %s (%s)\n", props.ordinal, props.name.c_str(), props.arch().c_str());

  // Fresh random inputs every run; the output starts as NaN.
  std::random_device seed;
  std::mt19937 rng(seed());
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  rt::DeviceBuffer dx(bytes), dy(bytes), dout(bytes);
  dx.upload(x.data(), bytes);
  dy.upload(y.data(), bytes);
  rt::memsetD32(dout.get(), 0x7fc00000u, static_cast<size_t>(n)); // quiet NaN

  // On a stream of our own, with the variadic launch (argument sizes are checked
  // against the signature: CUdeviceptr for *fp32, int32_t for i32).
  rt::Stream stream = rt::Stream::create();
  const unsigned blocks = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  kernel.launch(rt::Grid{blocks, 1, 1}, stream.get(), dx.get(), dy.get(), dout.get(), static_cast<int32_t>(n));
  stream.synchronize();
  dout.download(out.data(), bytes);

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    float want = x[i] + y[i];
    if (!(out[i] == want)) { // exact: one fp32 add either way; NaN fails
      if (bad < 5) std::printf("  out[%d] = %g, expected %g\n", i, out[i], want);
      ++bad;
    }
  }
  // The second launch form: cuLaunchKernel's argument array, on the default stream.
  rt::memsetD32(dout.get(), 0x7fc00000u, static_cast<size_t>(n));
  CUdeviceptr px = dx.get(), py = dy.get(), po = dout.get();
  int32_t count = n;
  void *args[] = {&px, &py, &po, &count};
  kernel.launch(rt::Grid{blocks, 1, 1}, args);
  rt::synchronizeDevice();
  dout.download(out.data(), bytes);
  for (int i = 0; i < n; ++i)
    if (!(out[i] == x[i] + y[i])) ++bad;

  std::vector<char> cubin = kernel.cubin();
  std::printf("cubin: %zu bytes; %d registers per thread\n", cubin.size(),
              kernel.load().attributes().registers);
  if (bad) {
    std::printf("FAIL: %d of %d elements wrong (n = %d, block = %d)\n", bad, 2 * n, n, kBlock);
    return 1;
  }
  std::printf("PASS: out = x + y for n = %d (%u blocks of %d)\n", n, blocks, kBlock);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 98432; // not a multiple of the block
  if (n <= 0) {
    std::fprintf(stderr, "usage: %s [n > 0]\n", argv[0]);
    return 2;
  }
  try {
    return run(n);
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
