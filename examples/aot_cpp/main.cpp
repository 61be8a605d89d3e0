// Kernels compiled ahead of time, launched from C++ with no Python, no compiler
// and no tessera library in the process: tessera_kernels.h/.cpp are generated
// at build time by `tessera aot manifest.txt --emit cpp` (CMakeLists.txt) and
// hold the cubins of the bundled vector_add and softmax kernels; this program
// uses the CUDA driver API for everything else.
//
//   aot_cpp_example [DIR]   checks each launch against the host and prints "ok"
//                           (exit status 0) or what was wrong (exit status 1);
//                           with DIR, also writes the inputs and outputs there as
//                           raw little-endian arrays (tests/gpu/test_aot_cpp.py
//                           compares them with the JIT's results).
//
// Each launch function picks its variant from the arguments: cuMemAlloc's
// pointers are 16-byte aligned and get the variant compiled for that; the
// launches on pointers one element in get the generic one.
#include "tessera_kernels.h"

#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

bool check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return true;
  const char *name = nullptr;
  cuGetErrorName(r, &name);
  std::printf("%s failed: %s", what, name ? name : "unknown error");
  const char *detail = tessera_kernels::last_error();
  std::printf("%s%s\n", *detail ? ": " : "", detail);
  return false;
}

// A small deterministic generator, so that a rerun sees the same inputs.
struct Random {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  float next() { // uniform in [-4, 4)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return float((state >> 40) & 0xffffff) / float(1 << 24) * 8.0f - 4.0f;
  }
};

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  explicit DeviceBuffer(size_t bytes) { check(cuMemAlloc(&ptr, bytes), "cuMemAlloc"); }
  ~DeviceBuffer() { cuMemFree(ptr); }
  float *floats(size_t offset = 0) const { return reinterpret_cast<float *>(ptr) + offset; }
};

void save(const std::string &dir, const char *name, const std::vector<float> &values) {
  if (dir.empty()) return;
  std::string path = dir + "/" + name;
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(values.data(), sizeof(float), values.size(), f);
    std::fclose(f);
  }
}

// What the last launch chose, e.g. "vector_add: *fp32:16,*fp32:16,*fp32:16,i32 on sm_90a (cubin)".
void printChoice() {
  tessera_kernels::Launch l = tessera_kernels::last_launch();
  if (l.variant && l.image)
    std::printf("  %s: %s on %s (%s)\n", l.variant->function, l.variant->signature, l.image->arch,
                l.image->cubin ? "cubin" : "PTX, compiled by the driver");
}

// out = x + y for n elements, `offset` elements into each buffer; compared exactly.
bool vectorAdd(int n, int offset, const std::string &dir) {
  Random random;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) x[i] = random.next(), y[i] = random.next();
  size_t bytes = (n + offset) * sizeof(float);
  DeviceBuffer dx(bytes), dy(bytes), dout(bytes);
  if (!check(cuMemcpyHtoD(CUdeviceptr(dx.floats(offset)), x.data(), n * sizeof(float)), "cuMemcpyHtoD") ||
      !check(cuMemcpyHtoD(CUdeviceptr(dy.floats(offset)), y.data(), n * sizeof(float)), "cuMemcpyHtoD") ||
      !check(cuMemsetD32(dout.ptr, 0x7fc00000u, n + offset), "cuMemsetD32")) // NaN: a missed store shows
    return false;
  const int64_t block = tessera_kernels::vector_add_config::BLOCK_SIZE;
  tessera_kernels::Grid grid{unsigned((n + block - 1) / block)};
  if (!check(tessera_kernels::vector_add(grid, nullptr, dx.floats(offset), dy.floats(offset), dout.floats(offset), n),
             "vector_add"))
    return false;
  printChoice();
  if (!check(cuCtxSynchronize(), "cuCtxSynchronize") ||
      !check(cuMemcpyDtoH(out.data(), CUdeviceptr(dout.floats(offset)), n * sizeof(float)), "cuMemcpyDtoH"))
    return false;
  for (int i = 0; i < n; ++i)
    if (out[i] != x[i] + y[i]) {
      std::printf("vector_add (offset %d): out[%d] = %g, expected %g\n", offset, i, out[i], x[i] + y[i]);
      return false;
    }
  if (offset == 0) save(dir, "add_x.bin", x), save(dir, "add_y.bin", y), save(dir, "add_out.bin", out);
  return true;
}

// Row-wise softmax of a rows x cols matrix whose rows are `stride` elements apart,
// against the host in double.
bool softmax(int rows, int cols, int stride, int offset, const std::string &dir) {
  Random random;
  std::vector<float> in(size_t(rows) * stride, 0.0f), out(in.size(), 0.0f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) in[size_t(r) * stride + c] = random.next();
  size_t bytes = (in.size() + offset) * sizeof(float);
  DeviceBuffer din(bytes), dout(bytes);
  if (!check(cuMemcpyHtoD(CUdeviceptr(din.floats(offset)), in.data(), in.size() * sizeof(float)), "cuMemcpyHtoD") ||
      !check(cuMemsetD32(dout.ptr, 0x7fc00000u, in.size() + offset), "cuMemsetD32"))
    return false;
  // One program per row (the kernel loops over rows num_programs apart).
  if (!check(tessera_kernels::softmax(tessera_kernels::Grid{unsigned(rows)}, nullptr, dout.floats(offset),
                                      din.floats(offset), stride, stride, rows, cols),
             "softmax"))
    return false;
  printChoice();
  if (!check(cuCtxSynchronize(), "cuCtxSynchronize") ||
      !check(cuMemcpyDtoH(out.data(), CUdeviceptr(dout.floats(offset)), out.size() * sizeof(float)), "cuMemcpyDtoH"))
    return false;
  for (int r = 0; r < rows; ++r) {
    const float *x = &in[size_t(r) * stride];
    double max = x[0], sum = 0;
    for (int c = 1; c < cols; ++c) max = std::fmax(max, x[c]);
    for (int c = 0; c < cols; ++c) sum += std::exp(double(x[c]) - max);
    for (int c = 0; c < cols; ++c) {
      double expected = std::exp(double(x[c]) - max) / sum, got = out[size_t(r) * stride + c];
      if (!(std::fabs(got - expected) <= 1e-6 + 1e-5 * expected)) {
        std::printf("softmax (stride %d, offset %d): row %d col %d = %.9g, expected %.9g\n", stride, offset, r, c,
                    got, expected);
        return false;
      }
    }
  }
  if (offset == 0 && stride % 16 == 0) save(dir, "softmax_in.bin", in), save(dir, "softmax_out.bin", out);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  const std::string dir = argc > 1 ? argv[1] : "";
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(context), "cuCtxSetCurrent"))
    return 1;
  char name[256] = {};
  int major = 0, minor = 0;
  cuDeviceGetName(name, sizeof name, device);
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  std::printf("device 0: %s (sm_%d%d)\n", name, major, minor);

  bool ok = vectorAdd(100003, 0, dir)      // aligned: the ':16' variant
            && vectorAdd(100003, 1, dir)   // 4 bytes in: the generic one
            && softmax(37, 781, 784, 0, dir) // strides that are multiples of 16
            && softmax(37, 781, 781, 0, dir) // strides that are not: generic
            && softmax(5, 1000, 1008, 3, dir);
  tessera_kernels::unload();
  cuDevicePrimaryCtxRelease(device);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
