// The attention forward kernel (kernels/attention.py) from C++ through
// examples/attention.h: fresh random fp16 and bf16 inputs in a (B, N, H, D)
// layout with grouped-query attention (4 query heads on 2 K/V heads), a
// sequence length that is not a multiple of the block, causal and not; O and
// LSE start as NaN and are checked against a float64 host reference:
// ||O - ref|| / ||ref|| <= 1e-2 and max |LSE - ref| <= 1e-2.
//
//   build/examples/attention [N] [D]      prints PASS or FAIL; exit status 0 only on PASS
//
// The kernel file is found at $TESSERA_SOURCE_DIR/kernels/attention.py, else
// the source tree this was built from, else ./kernels/attention.py. Without a
// CUDA driver or device it compiles the kernels for sm_90a, prints
// "no GPU: <why>" and exits 0.
#include "examples/attention.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rt = tessera::rt;
using tessera::examples::AttentionArgs;
using tessera::examples::AttentionForward;

std::string kernelPath() {
  if (const char *env = std::getenv("TESSERA_SOURCE_DIR")) return std::string(env) + "/kernels/attention.py";
  const std::string built = std::string(TESSERA_SOURCE_DIR) + "/kernels/attention.py";
  if (std::ifstream(built).good()) return built;
  return "kernels/attention.py";
}

std::string noGpuReason() {
  if (!rt::driverAvailable()) return rt::driverStatus().error;
  try {
    if (rt::deviceCount() == 0) return "the CUDA driver reports no devices";
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

// IEEE half and bfloat16 from/to float, rounding to nearest even.
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds past 65504
  if (a < 0x38800000u) {                                              // a half subnormal
    float v;
    std::memcpy(&v, &a, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(v * 16777216.0f)));
  }
  return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
}

float fromHalf(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const uint32_t m = h & 0x3ffu;
  float v = e == 0 ? std::ldexp(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : std::ldexp(static_cast<float>(m | 0x400u), e - 25);
  return (h & 0x8000u) ? -v : v;
}

uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

struct Case {
  const char *dtype;
  bool causal;
};

// One run: returns true when O and LSE match the host reference.
bool runCase(const Case &c, int N, int D, std::mt19937 &rng) {
  const int B = 2, H = 4, HKV = 2;
  const bool half = std::strcmp(c.dtype, "fp16") == 0;
  auto encode = [&](float f) { return half ? toHalf(f) : toBf16(f); };
  auto decode = [&](uint16_t h) { return half ? fromHalf(h) : fromBf16(h); };

  // (B, N, H, D) buffers: strides (N*H*D, D, H*D, 1) in (b, h, n, d) order.
  auto elements = [&](int heads) { return static_cast<size_t>(B) * N * heads * D; };
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int heads) {
    std::vector<uint16_t> v(elements(heads));
    for (auto &x : v) x = encode(normal(rng));
    return v;
  };
  std::vector<uint16_t> q = fill(H), k = fill(HKV), v = fill(HKV), o(elements(H));
  std::vector<float> lse(static_cast<size_t>(B) * H * N);

  rt::DeviceBuffer dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), dout(o.size() * 2), dlse(lse.size() * 4);
  dq.upload(q.data(), q.size() * 2);
  dk.upload(k.data(), k.size() * 2);
  dv.upload(v.data(), v.size() * 2);
  rt::memsetD8(dout.get(), 0xff, o.size() * 2);           // 0xffff: NaN in fp16 and bf16
  rt::memsetD32(dlse.get(), 0x7fc00000u, lse.size()); // NaN

  AttentionForward attn(kernelPath(), c.dtype, D, c.causal);
  AttentionArgs a;
  auto tensor = [&](CUdeviceptr p, int heads) {
    return tessera::examples::AttentionTensor{p, int64_t{N} * heads * D, D, int64_t{heads} * D, 1};
  };
  a.q = tensor(dq.get(), H);
  a.k = tensor(dk.get(), HKV);
  a.v = tensor(dv.get(), HKV);
  a.o = tensor(dout.get(), H);
  a.lse = dlse.get();
  a.batch = B;
  a.heads = H;
  a.kvHeads = HKV;
  a.seqQ = a.seqKV = N;
  rt::Stream stream = rt::Stream::create();
  attn.launch(a, stream.get());
  stream.synchronize();
  dout.download(o.data(), o.size() * 2);
  dlse.download(lse.data(), lse.size() * 4);

  // float64 reference on the rounded inputs.
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  double errSq = 0, refSq = 0, lseErr = 0;
  std::vector<double> s(N), acc(D);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int hk = h / (H / HKV);
      auto at = [&](const std::vector<uint16_t> &t, int heads, int n, int hh, int d) {
        return static_cast<double>(decode(t[((static_cast<size_t>(b) * N + n) * heads + hh) * D + d]));
      };
      for (int i = 0; i < N; ++i) {
        const int keys = c.causal ? i + 1 : N;
        double m = -INFINITY;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += at(q, H, i, h, d) * at(k, HKV, j, hk, d);
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int j = 0; j < keys; ++j) {
          const double p = std::exp(s[j] - m);
          l += p;
          for (int d = 0; d < D; ++d) acc[d] += p * at(v, HKV, j, hk, d);
        }
        for (int d = 0; d < D; ++d) {
          const double ref = acc[d] / l, got = at(o, H, i, h, d);
          errSq += (got - ref) * (got - ref);
          refSq += ref * ref;
        }
        const double got = lse[(static_cast<size_t>(b) * H + h) * N + i];
        lseErr = std::max(lseErr, std::isnan(got) ? INFINITY : std::fabs(got - (m + std::log(l))));
      }
    }
  const double rel = std::isnan(errSq) ? INFINITY : std::sqrt(errSq / refSq);
  const bool ok = rel <= 1e-2 && lseErr <= 1e-2;
  std::printf("  %s %s B=%d H=%d H_KV=%d N=%d D=%d (B, N, H, D): ||O - ref|| / ||ref|| = %.2e, "
              "max |LSE - ref| = %.2e, %d registers: %s\n",
              c.dtype, c.causal ? "causal" : "full", B, H, HKV, N, D, rel, lseErr,
              attn.kernelFor(a).load().attributes().registers, ok ? "ok" : "WRONG");
  return ok;
}

int run(int N, int D) {
  const std::string noGpu = noGpuReason();
  if (!noGpu.empty()) {
    // Compile anyway (no GPU needed for that), as a check of the C++ path.
    for (const char *dtype : {"fp16", "bf16"}) {
      AttentionForward attn(kernelPath(), dtype, D, true, "sm_90a");
      AttentionArgs a;
      a.q = a.k = a.v = a.o = {16, 1024, 64, 64, 1};
      a.lse = 16;
      const tessera::Kernel &k = attn.kernelFor(a);
      std::printf("compiled %s (%s, D=%d) for %s: %zu bytes of PTX, %u warps, %u bytes of shared memory\n",
                  k.name().c_str(), dtype, D, k.arch().c_str(), k.ptx().size(), k.numWarps(), k.sharedBytes());
    }
    std::printf("no GPU: %s; skipping the launch\n", noGpu.c_str());
    return 0;
  }
  const rt::DeviceProperties &props = rt::deviceProperties();
  std::printf("device %d: %s (%s); kernel file %s\n", props.ordinal, props.name.c_str(), props.arch().c_str(),
              kernelPath().c_str());
  std::random_device seed;
  const unsigned s = seed();
  std::mt19937 rng(s);
  int bad = 0;
  for (Case c : {Case{"fp16", false}, Case{"fp16", true}, Case{"bf16", false}, Case{"bf16", true}})
    bad += !runCase(c, N, D, rng);
  if (bad) {
    std::printf("FAIL: %d of 4 attention cases wrong (seed %u)\n", bad, s);
    return 1;
  }
  std::printf("PASS: attention forward from C++ matches the float64 reference (N = %d, D = %d)\n", N, D);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const int N = argc > 1 ? std::atoi(argv[1]) : 300; // not a multiple of the block
  const int D = argc > 2 ? std::atoi(argv[2]) : 64;
  if (N <= 0 || (D != 16 && D != 32 && D != 64 && D != 128)) {
    std::fprintf(stderr, "usage: %s [N > 0] [D in 16, 32, 64, 128]\n", argv[0]);
    return 2;
  }
  try {
    return run(N, D);
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
