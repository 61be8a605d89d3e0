// The bundled GEMM through the C++ API: compile kernels/matmul.py for fp16
// (tensor cores, cp.async pipeline) with the default configuration of
// tessera.kernels.matmul (128x128x32 tiles, GROUP_M 8, 4 warps, 3 stages),
// run C = A * B on the GPU with random inputs, and check C against a host
// reference computed in double from the same fp16 inputs: once with B
// row-major and once with B column-major (the kernel takes strides, so a
// transposed operand is only other stride arguments and another
// specialisation). The output is poisoned with NaN before each launch.
//
//   build/examples/matmul [M N K] [--kernel-file PATH]
//       prints PASS or FAIL; exit status 0 only on PASS (default 1000 777 700, ragged)
//
// The kernel file is PATH, else $TESSERA_KERNELS_DIR/matmul.py, else
// kernels/matmul.py under the current directory (the repository root), else
// under the source tree this example was built from. Without a CUDA driver or
// device it still compiles the kernel, prints "no GPU: <why>" and exits 0.
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Kernel.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#ifndef TESSERA_SOURCE_DIR
#define TESSERA_SOURCE_DIR "."
#endif

namespace {

namespace rt = tessera::rt;

// The default configuration (MATMUL_CONFIGS[0] in python/tessera/kernels/matmul.py).
constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 32, kGroupM = 8;
constexpr unsigned kWarps = 4, kStages = 3;

// ---- fp16 <-> float on the host (IEEE binary16, round to nearest even) -------------------

uint16_t halfFromFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return uint16_t(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u)); // NaN, inf
  if (absx >= 0x47800000u) return uint16_t(sign | 0x7c00u);                                  // >= 65536: inf
  if (absx < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    if (absx < 0x33000000u) return uint16_t(sign); // at most 2^-25: rounds to zero
    const uint32_t e = absx >> 23, mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e; // value / 2^-24 = mant >> shift, shift in 14..24
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t h = (((absx >> 23) - 112) << 10) | ((absx & 0x7fffffu) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h; // a carry into the exponent is right (up to inf)
  return uint16_t(sign | h);
}

float floatFromHalf(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- the run ------------------------------------------------------------------------------

std::string noGpuReason() {
  if (!rt::driverAvailable()) return rt::driverStatus().error;
  try {
    if (rt::deviceCount() == 0) return "the CUDA driver reports no devices";
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

std::string findKernelFile(const std::string &given) {
  namespace fs = std::filesystem;
  if (!given.empty()) return given;
  if (const char *dir = std::getenv("TESSERA_KERNELS_DIR"); dir && *dir) return std::string(dir) + "/matmul.py";
  if (fs::exists("kernels/matmul.py")) return "kernels/matmul.py";
  return std::string(TESSERA_SOURCE_DIR) + "/kernels/matmul.py";
}

// A signature entry for an int argument, specialised as the Python launcher does:
// ":1" for the value 1, ":16" for multiples of 16.
std::string intEntry(int64_t v) {
  if (v == 1) return "i32:1";
  return v % 16 == 0 ? "i32:16" : "i32";
}

struct Problem {
  int M, N, K;
  bool bColumnMajor;
};

// Compiles the kernel for this problem's specialisation, runs it, compares with `ref`
// (M x N, row-major, double). Returns the number of failures (0 or 1).
int runOne(const std::string &path, const Problem &p, const std::vector<uint16_t> &a, const std::vector<uint16_t> &b,
           const std::vector<double> &ref, const std::string &noGpu) {
  const int M = p.M, N = p.N, K = p.K;
  // A: M x K row-major. B: K x N, row-major (strides N, 1) or column-major (strides 1, K;
  // `b` then holds B^T row-major). C: M x N row-major.
  const int64_t sam = K, sak = 1, scm = N, scn = 1;
  const int64_t sbk = p.bColumnMajor ? 1 : N, sbn = p.bColumnMajor ? K : 1;
  std::string signature = "*fp16:16,*fp16:16,*fp16:16";
  for (int64_t v : {int64_t(M), int64_t(N), int64_t(K), sam, sak, sbk, sbn, scm, scn}) signature += "," + intEntry(v);

  tessera::CompileOptions options;
  options.numWarps = kWarps;
  options.numStages = kStages;
  options.arch = noGpu.empty() ? tessera::targetArch() : "sm_90a";
  const auto t0 = std::chrono::steady_clock::now();
  tessera::Kernel kernel = tessera::compileFile(path, "matmul_kernel", signature,
                                                {{"BLOCK_M", tessera::ConstexprValue::ofInt(kBlockM)},
                                                 {"BLOCK_N", tessera::ConstexprValue::ofInt(kBlockN)},
                                                 {"BLOCK_K", tessera::ConstexprValue::ofInt(kBlockK)},
                                                 {"GROUP_M", tessera::ConstexprValue::ofInt(kGroupM)}},
                                                options);
  const double compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const char *layout = p.bColumnMajor ? "B column-major" : "B row-major";
  std::printf("%s: compiled %s (%s) for %s in %.0f ms%s: %zu bytes of PTX, %u warps, %u bytes of shared memory, "
              "mma.sync %s, cp.async %s\n",
              layout, kernel.name().c_str(), signature.c_str(), kernel.arch().c_str(), compileMs,
              kernel.fromCache() ? " (disk cache)" : "", kernel.ptx().size(), kernel.numWarps(), kernel.sharedBytes(),
              kernel.ptx().find("mma.sync") != std::string::npos ? "yes" : "NO",
              kernel.ptx().find("cp.async") != std::string::npos ? "yes" : "NO");
  if (!noGpu.empty()) return 0;

  const size_t bytesA = a.size() * 2, bytesB = b.size() * 2, bytesC = size_t(M) * N * 2;
  rt::DeviceBuffer da(bytesA), db(bytesB), dc(bytesC);
  da.upload(a.data(), bytesA);
  db.upload(b.data(), bytesB);
  rt::memsetD8(dc.get(), 0xff, bytesC); // 0xffff: a NaN in fp16

  rt::Stream stream = rt::Stream::create();
  const unsigned blocks = unsigned(((M + kBlockM - 1) / kBlockM) * ((N + kBlockN - 1) / kBlockN));
  auto launch = [&] {
    kernel.launch(rt::Grid{blocks, 1, 1}, stream.get(), da.get(), db.get(), dc.get(), int32_t(M), int32_t(N),
                  int32_t(K), int32_t(sam), int32_t(sak), int32_t(sbk), int32_t(sbn), int32_t(scm), int32_t(scn));
  };
  launch();
  stream.synchronize();
  std::vector<uint16_t> c(size_t(M) * N);
  dc.download(c.data(), bytesC);

  double num = 0, den = 0;
  size_t nans = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double got = floatFromHalf(c[i]);
    if (std::isnan(got)) {
      ++nans;
      continue;
    }
    num += (got - ref[i]) * (got - ref[i]);
    den += ref[i] * ref[i];
  }
  const double err = std::sqrt(num) / std::sqrt(den);

  // A rough timing (host clock around back-to-back launches on the stream; bench/matmul.py measures properly).
  const int reps = 10;
  const auto t1 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) launch();
  stream.synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() / reps;
  std::printf("%s: %u blocks, %d registers per thread, %.3f ms per launch (~%.1f TFLOP/s), relative error %.2e, "
              "%zu NaN\n",
              layout, blocks, kernel.load().attributes().registers, ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12, err,
              nans);
  if (nans || !(err <= 1e-2)) {
    std::printf("FAIL: %s: C = A * B for M=%d N=%d K=%d: relative error %.3e (limit 1e-2), %zu of %zu elements NaN\n",
                layout, M, N, K, err, nans, c.size());
    return 1;
  }
  return 0;
}

int run(int M, int N, int K, const std::string &kernelFile) {
  const std::string noGpu = noGpuReason();
  const std::string path = findKernelFile(kernelFile);
  std::printf("kernel file: %s\n", path.c_str());
  if (noGpu.empty()) {
    const rt::DeviceProperties &props = rt::deviceProperties();
    std::printf("device %d: %s (%s)\n", props.ordinal, props.name.c_str(), props.arch().c_str());
  }

  // Fresh random inputs every run, rounded to fp16; the reference uses the rounded values.
  std::random_device seed;
  std::mt19937 rng(seed());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> a(size_t(M) * K), b(size_t(K) * N), bT(size_t(N) * K);
  std::vector<double> av(a.size()), bv(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = halfFromFloat(dist(rng));
    av[i] = floatFromHalf(a[i]);
  }
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) {
      const uint16_t h = halfFromFloat(dist(rng));
      b[size_t(k) * N + n] = h;
      bT[size_t(n) * K + k] = h;
      bv[size_t(k) * N + n] = floatFromHalf(h);
    }
  std::vector<double> ref;
  if (noGpu.empty()) {
    ref.assign(size_t(M) * N, 0.0);
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k) {
        const double x = av[size_t(m) * K + k];
        const double *brow = &bv[size_t(k) * N];
        double *crow = &ref[size_t(m) * N];
        for (int n = 0; n < N; ++n) crow[n] += x * brow[n];
      }
  }

  int failures = runOne(path, {M, N, K, false}, a, b, ref, noGpu);
  failures += runOne(path, {M, N, K, true}, a, bT, ref, noGpu);
  if (!noGpu.empty()) {
    std::printf("no GPU: %s; skipping the launches\n", noGpu.c_str());
    return 0;
  }
  if (failures) return 1;
  std::printf("PASS: C = A * B (fp16, fp32 accumulation) for M=%d N=%d K=%d, B row- and column-major, "
              "%dx%dx%d tiles, %u warps, %u stages\n",
              M, N, K, kBlockM, kBlockN, kBlockK, kWarps, kStages);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> dims;
  std::string kernelFile;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kernel-file" && i + 1 < argc) {
      kernelFile = argv[++i];
    } else {
      char *end = nullptr;
      const long v = std::strtol(arg.c_str(), &end, 10);
      if (!end || *end || v <= 0 || v > (1 << 20)) {
        std::fprintf(stderr, "usage: %s [M N K] [--kernel-file PATH]   (M, N, K > 0)\n", argv[0]);
        return 2;
      }
      dims.push_back(int(v));
    }
  }
  if (!dims.empty() && dims.size() != 3) {
    std::fprintf(stderr, "usage: %s [M N K] [--kernel-file PATH]   (give all three sizes or none)\n", argv[0]);
    return 2;
  }
  const int M = dims.empty() ? 1000 : dims[0], N = dims.empty() ? 777 : dims[1], K = dims.empty() ? 700 : dims[2];
  try {
    return run(M, N, K, kernelFile);
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
