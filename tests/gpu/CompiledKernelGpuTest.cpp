// Kernels compiled by tessera (DSL → block IR → LLVM → PTX), run on the GPU
// through the runtime, checked against host references in double precision
// on fresh random inputs with NaN-poisoned outputs. Skips without a GPU.
#include "compiler/driver/Compiler.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera;

namespace {

// The checkout whose kernels/ the tests compile: $TESSERA_SOURCE_DIR if set; else the checkout this
// binary sits in (<checkout>/<build>/tests/tessera_gpu_tests: a build/ copied from another machine,
// at another path, reads the kernels of the checkout it was copied into); else the checkout it was
// built from.
std::string sourceDir() {
  if (const char *env = std::getenv("TESSERA_SOURCE_DIR"); env && *env) return env;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path checkout = exe.parent_path().parent_path().parent_path();
    if (fs::is_regular_file(checkout / "kernels" / "vector_add.py", ec)) return checkout.string();
  }
  return TESSERA_SOURCE_DIR;
}

std::shared_ptr<const SourceFile> kernelFile(const std::string &relative) {
  auto file = std::make_shared<SourceFile>();
  file->path = sourceDir() + "/" + relative;
  std::ifstream in(file->path);
  if (!in) throw std::runtime_error("cannot read " + file->path + " (set TESSERA_SOURCE_DIR to the repo root)");
  std::ostringstream ss;
  ss << in.rdbuf();
  file->text = ss.str();
  return file;
}

std::shared_ptr<const SourceFile> inlineSource(const std::string &text) {
  auto file = std::make_shared<SourceFile>();
  file->path = "<test>";
  file->text = text;
  return file;
}

std::string gpuSkipReason() {
  if (!rt::driverAvailable()) return "no GPU: " + rt::driverStatus().error;
  if (rt::deviceCount() == 0) return "no GPU: no CUDA device";
  return {};
}

std::string deviceArch() {
  const rt::DeviceProperties &p = rt::deviceProperties();
  return p.arch() == "sm_90" ? "sm_90a" : p.arch();
}

rt::LoadedKernel build(std::shared_ptr<const SourceFile> file, const std::string &name, const std::string &signature,
                       std::map<std::string, ConstexprValue> constexprs, unsigned numWarps = 4,
                       std::string arch = "") {
  CompileOptions options;
  options.numWarps = numWarps;
  options.arch = arch.empty() ? deviceArch() : arch;
  CompiledKernel k = compileKernel(file, name, parseSignature(signature), constexprs, options);
  return rt::loadPtxKernel(k.ptx, name, static_cast<int>(k.numWarps), k.sharedBytes);
}

// Device buffer filled from / read into host vectors.
template <typename T> struct Buffer {
  rt::DeviceBuffer mem;
  size_t count;
  explicit Buffer(size_t n) : mem(std::max<size_t>(n, 1) * sizeof(T)), count(n) {}
  void upload(const std::vector<T> &v) { rt::memcpyHtoD(mem.get(), v.data(), v.size() * sizeof(T)); }
  void poison() { rt::memsetD8(mem.get(), 0xff, std::max<size_t>(count, 1) * sizeof(T)); } // NaN for floats
  std::vector<T> download() const {
    std::vector<T> v(count);
    rt::memcpyDtoH(v.data(), mem.get(), count * sizeof(T));
    return v;
  }
  CUdeviceptr ptr() const { return mem.get(); }
};

uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}
float fromBF16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double relativeError(const std::vector<double> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

std::mt19937 &rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

std::vector<float> randomFloats(size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v) x = d(rng());
  return v;
}

unsigned cdiv(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

class CompiledKernels : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::string why = gpuSkipReason(); !why.empty()) GTEST_SKIP() << why;
  }
};

} // namespace

// Needs no GPU: where the kernel files come from (tests/python/test_install_layout.py runs it from a
// copy of the binary in another checkout and reads the line printed).
TEST(KernelSources, FoundInTheCheckoutThisBinarySitsIn) {
  std::printf("kernel sources: %s\n", sourceDir().c_str());
  EXPECT_NO_THROW(kernelFile("kernels/vector_add.py"));
}

TEST_F(CompiledKernels, VectorAddMatchesTheHostForRaggedSizes) {
  for (unsigned warps : {1u, 4u, 8u}) {
    rt::LoadedKernel k = build(kernelFile("kernels/vector_add.py"), "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
                               {{"BLOCK_SIZE", ConstexprValue::ofInt(1024)}}, warps);
    for (size_t n : {size_t(1), size_t(1000), size_t(1024), size_t(98432), size_t((1 << 20) + 3)}) {
      std::vector<float> x = randomFloats(n), y = randomFloats(n);
      Buffer<float> dx(n), dy(n), dout(n);
      dx.upload(x);
      dy.upload(y);
      dout.poison();
      CUdeviceptr px = dx.ptr(), py = dy.ptr(), po = dout.ptr();
      int ni = static_cast<int>(n);
      void *args[] = {&px, &py, &po, &ni};
      rt::launch(k, rt::Grid{cdiv(n, 1024), 1, 1}, args);
      std::vector<float> out = dout.download();
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], x[i] + y[i]) << "n=" << n << " i=" << i << " warps=" << warps;
    }
  }
}

TEST_F(CompiledKernels, SoftmaxFp32MatchesFloat64) {
  struct Case { int rows, cols, block, warps, programs; };
  for (Case c : {Case{1, 1, 16, 1, 1}, Case{7, 1000, 1024, 4, 7}, Case{128, 1024, 1024, 4, 64},
                 Case{33, 3000, 4096, 8, 16}, Case{5, 40, 64, 2, 5}, Case{300, 128, 128, 4, 300}}) {
    rt::LoadedKernel k = build(kernelFile("kernels/softmax.py"), "softmax_kernel", "*fp32:16,*fp32:16,i32,i32,i32,i32",
                               {{"BLOCK_SIZE", ConstexprValue::ofInt(c.block)}}, c.warps);
    int inStride = c.cols + 3, outStride = c.cols;
    std::vector<float> x = randomFloats(size_t(c.rows) * inStride, 3.0f);
    Buffer<float> dx(x.size()), dout(size_t(c.rows) * outStride);
    dx.upload(x);
    dout.poison();
    CUdeviceptr po = dout.ptr(), pi = dx.ptr();
    void *args[] = {&po, &pi, &inStride, &outStride, &c.rows, &c.cols};
    rt::launch(k, rt::Grid{unsigned(c.programs), 1, 1}, args);
    std::vector<float> out = dout.download();
    std::vector<double> got, ref;
    for (int r = 0; r < c.rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int j = 0; j < c.cols; ++j) m = std::max(m, double(x[size_t(r) * inStride + j]));
      for (int j = 0; j < c.cols; ++j) s += std::exp(double(x[size_t(r) * inStride + j]) - m);
      for (int j = 0; j < c.cols; ++j) {
        ref.push_back(std::exp(double(x[size_t(r) * inStride + j]) - m) / s);
        got.push_back(out[size_t(r) * outStride + j]);
      }
    }
    EXPECT_LE(relativeError(got, ref), 1e-5) << c.rows << "x" << c.cols << " block " << c.block << " warps " << c.warps;
  }
}

TEST_F(CompiledKernels, SoftmaxBf16MatchesFloat64) {
  int rows = 64, cols = 3000, block = 4096, stride = 3000;
  rt::LoadedKernel k = build(kernelFile("kernels/softmax.py"), "softmax_kernel", "*bf16:16,*bf16:16,i32,i32,i32,i32",
                             {{"BLOCK_SIZE", ConstexprValue::ofInt(block)}}, 16);
  std::vector<float> xf = randomFloats(size_t(rows) * cols, 2.0f);
  std::vector<uint16_t> x(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) x[i] = toBF16(xf[i]);
  Buffer<uint16_t> dx(x.size()), dout(x.size());
  dx.upload(x);
  dout.poison();
  CUdeviceptr po = dout.ptr(), pi = dx.ptr();
  void *args[] = {&po, &pi, &stride, &stride, &rows, &cols};
  rt::launch(k, rt::Grid{32, 1, 1}, args);
  std::vector<uint16_t> out = dout.download();
  std::vector<double> got, ref;
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < cols; ++j) m = std::max(m, double(fromBF16(x[size_t(r) * cols + j])));
    for (int j = 0; j < cols; ++j) s += std::exp(double(fromBF16(x[size_t(r) * cols + j])) - m);
    for (int j = 0; j < cols; ++j) {
      ref.push_back(std::exp(double(fromBF16(x[size_t(r) * cols + j])) - m) / s);
      got.push_back(fromBF16(out[size_t(r) * cols + j]));
    }
  }
  EXPECT_LE(relativeError(got, ref), 1e-2);
}

TEST_F(CompiledKernels, MaskedCopy2DHandlesRaggedEdgesAndStrides) {
  for (unsigned warps : {1u, 4u}) {
    rt::LoadedKernel k = build(kernelFile("kernels/copy2d.py"), "copy2d_kernel", "*fp32,*fp32,i32,i32,i32,i32",
                               {{"BLOCK_M", ConstexprValue::ofInt(32)}, {"BLOCK_N", ConstexprValue::ofInt(64)}}, warps);
    int rows = 100, cols = 77, srcStride = 131, dstStride = 80;
    std::vector<float> src = randomFloats(size_t(rows) * srcStride);
    Buffer<float> dsrc(src.size()), ddst(size_t(rows) * dstStride);
    dsrc.upload(src);
    ddst.poison();
    CUdeviceptr ps = dsrc.ptr(), pd = ddst.ptr();
    void *args[] = {&ps, &pd, &rows, &cols, &srcStride, &dstStride};
    rt::launch(k, rt::Grid{cdiv(rows, 32), cdiv(cols, 64), 1}, args);
    std::vector<float> dst = ddst.download();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < dstStride; ++c) {
        float v = dst[size_t(r) * dstStride + c];
        if (c < cols) ASSERT_EQ(v, src[size_t(r) * srcStride + c]) << r << "," << c;
        else ASSERT_TRUE(std::isnan(v)) << "wrote outside the mask at " << r << "," << c;
      }
  }
}

// 2-D reductions along both axes, a loop-carried accumulator, and a scalar if.
static const char *kReductions = R"(
import tessera
import tessera.language as tl

@tessera.jit
def row_col_sums(x_ptr, rows_out, cols_out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    mask = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :], mask=mask, other=0.0)
    tl.store(rows_out + r, tl.sum(x, axis=1), mask=r < M)
    tl.store(cols_out + c, tl.max(tl.where(mask, x, -float("inf")), axis=0), mask=c < N)

@tessera.jit
def chunked_sum(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    total = tl.sum(acc, axis=0)
    if flag > 0:
        total = total * 2.0
    tl.store(out_ptr, total)
)";

TEST_F(CompiledKernels, TwoDimensionalReductionsAlongEachAxis) {
  for (unsigned warps : {1u, 2u, 4u, 8u}) {
    rt::LoadedKernel k = build(inlineSource(kReductions), "row_col_sums", "*fp32,*fp32,*fp32,i32,i32",
                               {{"BM", ConstexprValue::ofInt(64)}, {"BN", ConstexprValue::ofInt(128)}}, warps);
    int M = 50, N = 100;
    std::vector<float> x = randomFloats(size_t(M) * N);
    Buffer<float> dx(x.size()), drows(M), dcols(N);
    dx.upload(x);
    drows.poison();
    dcols.poison();
    CUdeviceptr px = dx.ptr(), pr = drows.ptr(), pc = dcols.ptr();
    void *args[] = {&px, &pr, &pc, &M, &N};
    rt::launch(k, rt::Grid{1, 1, 1}, args);
    std::vector<float> rows = drows.download(), cols = dcols.download();
    for (int i = 0; i < M; ++i) {
      double s = 0;
      for (int j = 0; j < N; ++j) s += x[size_t(i) * N + j];
      ASSERT_NEAR(rows[i], s, 1e-4) << "row " << i << " warps " << warps;
    }
    for (int j = 0; j < N; ++j) {
      float m = -INFINITY;
      for (int i = 0; i < M; ++i) m = std::max(m, x[size_t(i) * N + j]);
      ASSERT_EQ(cols[j], m) << "col " << j << " warps " << warps;
    }
  }
}

TEST_F(CompiledKernels, LoopCarriedAccumulatorAndScalarIf) {
  rt::LoadedKernel k = build(inlineSource(kReductions), "chunked_sum", "*fp32,*fp32,i32,i32",
                             {{"BLOCK", ConstexprValue::ofInt(256)}});
  for (int flag : {0, 1}) {
    int n = 10007;
    std::vector<float> x = randomFloats(n);
    Buffer<float> dx(n), dout(1);
    dx.upload(x);
    dout.poison();
    CUdeviceptr px = dx.ptr(), po = dout.ptr();
    void *args[] = {&px, &po, &n, &flag};
    rt::launch(k, rt::Grid{1, 1, 1}, args);
    double s = 0;
    for (float v : x) s += v;
    if (flag) s *= 2;
    EXPECT_NEAR(dout.download()[0], s, 1e-3) << "flag " << flag;
  }
}

TEST_F(CompiledKernels, Sm80PtxRunsOnThisGpuToo) {
  rt::LoadedKernel k = build(kernelFile("kernels/vector_add.py"), "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
                             {{"BLOCK_SIZE", ConstexprValue::ofInt(512)}}, 4, "sm_80");
  size_t n = 5000;
  std::vector<float> x = randomFloats(n), y = randomFloats(n);
  Buffer<float> dx(n), dy(n), dout(n);
  dx.upload(x);
  dy.upload(y);
  dout.poison();
  CUdeviceptr px = dx.ptr(), py = dy.ptr(), po = dout.ptr();
  int ni = static_cast<int>(n);
  void *args[] = {&px, &py, &po, &ni};
  rt::launch(k, rt::Grid{cdiv(n, 512), 1, 1}, args);
  std::vector<float> out = dout.download();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]);
}
