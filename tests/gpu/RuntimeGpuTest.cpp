// The Driver-API runtime on a real GPU: PTX -> cubin -> module -> launch,
// checked against host computations on fresh random inputs, on the default
// stream, on a created stream and replayed from a CUDA graph, plus the >48 KB
// dynamic shared memory path and the errors users will meet.
//
// Without a CUDA driver or device every test skips with "no GPU: <why>".
// The kernels are committed PTX (tests/gpu/kernels/*.ptx, see tests/gpu/kernels/README.md),
// embedded into the binary by CMakeLists.txt.
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"
#include "runtime/Stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "EmbeddedKernels.h" // k_vector_add_ptx, k_shared_reverse_ptx

using namespace tessera::rt;

namespace {

constexpr unsigned kNaNBits = 0x7fc00000u; // quiet NaN: the "poison" outputs start as

std::string skipReason() {
  if (!driverAvailable())
    return "no GPU: " + driverStatus().error;
  try {
    if (deviceCount() == 0)
      return "no GPU: the CUDA driver reports no devices";
  } catch (const std::exception &e) {
    return std::string("no GPU: ") + e.what();
  }
  return {};
}

// Prints once, before any test, what the tests run on (or why they skip).
class DeviceBanner : public ::testing::Environment {
public:
  void SetUp() override {
    std::string reason = skipReason();
    if (!reason.empty()) {
      std::printf("[tessera] %s; every GPU test will be skipped\n", reason.c_str());
      return;
    }
    int version = driverVersion();
    for (int d = 0; d < deviceCount(); ++d) {
      const DeviceProperties &p = deviceProperties(d);
      std::printf("[tessera] device %d: %s (%s, %d SMs, %d threads/block, shared memory: %d "
                  "bytes/block, %d opt-in, %d per SM, %.1f GiB)\n",
                  d, p.name.c_str(), p.arch().c_str(), p.smCount, p.maxThreadsPerBlock,
                  p.sharedPerBlock, p.sharedPerBlockOptin, p.sharedPerMultiprocessor,
                  static_cast<double>(p.totalMemory) / (1 << 30));
    }
    std::printf("[tessera] CUDA driver %d.%d; tests run on device %d\n", version / 1000,
                version % 1000 / 10, currentDevice());
    std::fflush(stdout);
  }
};

[[maybe_unused]] const auto *const kBanner =
    ::testing::AddGlobalTestEnvironment(new DeviceBanner);

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string reason = skipReason();
    if (!reason.empty())
      GTEST_SKIP() << reason;
    device_ = currentDevice();
    props_ = &deviceProperties(device_);
    vectorAddPtx_ = k_vector_add_ptx;
    sharedReversePtx_ = k_shared_reverse_ptx;
  }

  const LoadedKernel &addKernel() {
    if (!add_)
      add_ = loadPtxKernel(vectorAddPtx_, "add_kernel", 4, 0);
    return add_;
  }

  // Random inputs, poisoned output, one launch via `launchIt`, exact check.
  template <class LaunchFn>
  void checkVectorAdd(int n, LaunchFn &&launchIt) {
    std::random_device entropy;
    const unsigned seed = entropy();
    SCOPED_TRACE("n = " + std::to_string(n) + ", seed = " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1000.f, 1000.f);
    std::vector<float> x(n), y(n), expected(n), got(n);
    for (int i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
      expected[i] = x[i] + y[i];
    }
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
    DeviceBuffer dx(bytes), dy(bytes), dout(bytes + 64); // a tail that must stay poisoned
    dx.upload(x.data(), bytes);
    dy.upload(y.data(), bytes);
    memsetD32(dout.get(), kNaNBits, dout.size() / 4);
    // The copies and the memset ran on the legacy default stream, which a
    // non-blocking stream does not wait for.
    synchronizeDevice();

    CUdeviceptr px = dx.get(), py = dy.get(), pout = dout.get();
    int count = n;
    void *args[] = {&px, &py, &pout, &count};
    const unsigned block = addKernel().blockThreads();
    launchIt(Grid{(static_cast<unsigned>(n) + block - 1) / block, 1, 1}, args);

    std::vector<float> all(dout.size() / 4);
    dout.download(all.data(), dout.size());
    int wrong = 0;
    for (int i = 0; i < n && wrong < 10; ++i)
      if (std::memcmp(&all[i], &expected[i], sizeof(float)) != 0) {
        ADD_FAILURE() << "out[" << i << "] = " << all[i] << ", expected " << expected[i];
        ++wrong;
      }
    for (std::size_t i = n; i < all.size(); ++i)
      EXPECT_TRUE(std::isnan(all[i])) << "the kernel wrote past n at " << i;
  }

  int device_ = 0;
  const DeviceProperties *props_ = nullptr;
  std::string vectorAddPtx_, sharedReversePtx_;
  LoadedKernel add_;
};

const int kSizes[] = {1, 31, 128, 1000, 4099, (1 << 20) + 17};

} // namespace

TEST_F(Gpu, DevicePropertiesAreSane) {
  EXPECT_GE(device_, 0);
  EXPECT_LT(device_, deviceCount());
  EXPECT_FALSE(props_->name.empty());
  EXPECT_GE(props_->major, 5);
  EXPECT_GT(props_->smCount, 0);
  EXPECT_EQ(props_->warpSize, 32);
  EXPECT_GE(props_->maxThreadsPerBlock, 1024);
  EXPECT_GE(props_->sharedPerBlock, 48 * 1024);
  EXPECT_GE(props_->sharedPerBlockOptin, props_->sharedPerBlock);
  EXPECT_GE(props_->sharedPerMultiprocessor, props_->sharedPerBlockOptin);
  EXPECT_GT(props_->registersPerBlock, 0);
  EXPECT_GT(props_->totalMemory, 0u);
  EXPECT_EQ(&deviceProperties(device_), props_) << "properties should be cached";
  EXPECT_EQ(&deviceProperties(), props_);
  EXPECT_EQ(primaryContext(device_), primaryContext(device_));
}

TEST_F(Gpu, LinksPtxToCubin) {
  std::vector<std::string> arches = {"", props_->arch()};
  if (props_->computeCapability() == 90)
    arches.push_back("sm_90a"); // the compiler's default target on Hopper
  for (const std::string &arch : arches) {
    SCOPED_TRACE("arch = '" + arch + "'");
    LinkResult linked = linkPtx(vectorAddPtx_, {arch, "add_kernel", kCurrentDevice});
    ASSERT_GE(linked.cubin.size(), 4u);
    EXPECT_EQ(std::memcmp(linked.cubin.data(), "\x7f" "ELF", 4), 0) << "a cubin is an ELF file";
    LoadedKernel k = loadKernel(linked.cubin.data(), "add_kernel", 4, 0);
    EXPECT_TRUE(k);
    EXPECT_EQ(k.name(), "add_kernel");
    EXPECT_EQ(k.numWarps(), 4);
    EXPECT_EQ(k.blockThreads(), 128u);
    EXPECT_EQ(k.device(), device_);
    EXPECT_GT(k.attributes().registers, 0);
    EXPECT_EQ(k.attributes().staticSharedBytes, 0);
    EXPECT_GE(k.attributes().maxThreadsPerBlock, 128);
    EXPECT_EQ(k.attributes().binaryVersion / 10, props_->major);
    EXPECT_GT(k.attributes().ptxVersion, 0);
  }
}

TEST_F(Gpu, ArchSpecificPtxIsCompiledForItsOwnTarget) {
  if (props_->computeCapability() != 90)
    GTEST_SKIP() << "needs a compute capability 9.0 GPU (sm_90a PTX), not " << props_->arch();
  // PTX written for sm_90a cannot be compiled for plain sm_90 (the context's
  // default): linkPtx must take the target from the PTX when given none.
  std::string ptx = vectorAddPtx_;
  ptx.replace(ptx.find(".version 7.0"), 12, ".version 8.0");
  ptx.replace(ptx.find(".target sm_80"), 13, ".target sm_90a");
  ASSERT_EQ(ptxTarget(ptx), (Arch{9, 0, 'a'}));
  add_ = loadPtxKernel(ptx, "add_kernel", 4, 0);
  checkVectorAdd(777, [&](Grid grid, void **args) { launch(addKernel(), grid, args); });
}

TEST_F(Gpu, VectorAddOnTheDefaultStreamMatchesTheHost) {
  for (int n : kSizes)
    checkVectorAdd(n, [&](Grid grid, void **args) {
      launch(addKernel(), grid, args); // null stream; the DtoH copy waits for it
    });
}

TEST_F(Gpu, VectorAddOnACreatedStreamMatchesTheHost) {
  Stream stream = Stream::create();
  ASSERT_NE(stream.get(), nullptr);
  for (int n : kSizes)
    checkVectorAdd(n, [&](Grid grid, void **args) {
      launch(addKernel(), grid, args, stream.get());
      stream.synchronize(); // a non-blocking stream: the copy would not wait
    });
}

TEST_F(Gpu, LoadsPtxDirectlyThroughTheModuleLoader) {
  std::string ptx = vectorAddPtx_; // NUL-terminated: cuModuleLoadData JIT-compiles it
  add_ = loadKernel(ptx.c_str(), "add_kernel", 2, 0);
  EXPECT_EQ(add_.blockThreads(), 64u);
  checkVectorAdd(1000, [&](Grid grid, void **args) { launch(addKernel(), grid, args); });
}

TEST_F(Gpu, LaunchesCapturedIntoACudaGraphReplay) {
  const LoadedKernel &k = addKernel();
  const int n = 5000;
  const std::size_t bytes = n * sizeof(float);
  DeviceBuffer dx(bytes), dy(bytes), dout(bytes);
  CUdeviceptr px = dx.get(), py = dy.get(), pout = dout.get();
  int count = n;
  void *args[] = {&px, &py, &pout, &count};
  Stream stream = Stream::create();
  Grid grid{(n + k.blockThreads() - 1) / k.blockThreads(), 1, 1};
  Graph graph = captureGraph(stream.get(), [&] { launch(k, grid, args, stream.get()); });
  ASSERT_TRUE(graph);

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-10.f, 10.f);
  for (int replay = 0; replay < 3; ++replay) { // new inputs each time, same graph
    SCOPED_TRACE("replay " + std::to_string(replay));
    std::vector<float> x(n), y(n), got(n);
    for (int i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
    }
    dx.upload(x.data(), bytes);
    dy.upload(y.data(), bytes);
    memsetD32(dout.get(), kNaNBits, n);
    synchronizeDevice(); // the stream does not wait for the legacy default stream
    graph.launch(stream.get());
    stream.synchronize();
    dout.download(got.data(), bytes);
    int wrong = 0;
    for (int i = 0; i < n && wrong < 10; ++i)
      if (got[i] != x[i] + y[i]) {
        ADD_FAILURE() << "out[" << i << "] = " << got[i] << ", expected " << x[i] + y[i];
        ++wrong;
      }
  }
}

TEST_F(Gpu, FailedCaptureLeavesTheStreamUsable) {
  Stream stream = Stream::create();
  EXPECT_THROW(captureGraph(stream.get(), [] { throw std::runtime_error("boom"); }),
               std::runtime_error);
  checkVectorAdd(100, [&](Grid grid, void **args) {
    launch(addKernel(), grid, args, stream.get());
    stream.synchronize();
  });
}

TEST_F(Gpu, MoreThan48KBOfDynamicSharedMemory) {
  if (props_->sharedPerBlockOptin <= 48 * 1024)
    GTEST_SKIP() << props_->name << " cannot opt in to more than 48 KB of shared memory";
  // As much as allowed, up to 160 KB, in whole floats.
  const int perBlock = std::min(props_->sharedPerBlockOptin, 160 * 1024) / 4;
  const unsigned sharedBytes = static_cast<unsigned>(perBlock) * 4;
  ASSERT_GT(sharedBytes, 48u * 1024);
  LoadedKernel k = loadPtxKernel(sharedReversePtx_, "shared_reverse", 8, sharedBytes);
  EXPECT_EQ(k.sharedBytes(), sharedBytes);
  EXPECT_GE(k.attributes().maxDynamicSharedBytes, static_cast<int>(sharedBytes))
      << "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES was not raised";

  const int blocks = 3, n = blocks * perBlock;
  std::vector<float> in(n), got(n);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float &v : in)
    v = dist(rng);
  DeviceBuffer din(n * sizeof(float)), dout(n * sizeof(float));
  din.upload(in.data(), din.size());
  memsetD32(dout.get(), kNaNBits, n);
  CUdeviceptr pin = din.get(), pout = dout.get();
  int count = perBlock;
  void *args[] = {&pin, &pout, &count};
  launch(k, Grid{blocks, 1, 1}, args);
  dout.download(got.data(), dout.size());
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < perBlock && wrong < 10; ++i) {
      float expected = in[b * perBlock + perBlock - 1 - i];
      if (std::memcmp(&got[b * perBlock + i], &expected, 4) != 0) {
        ADD_FAILURE() << "block " << b << ", element " << i << ": " << got[b * perBlock + i]
                      << ", expected " << expected;
        ++wrong;
      }
    }
}

TEST_F(Gpu, TooMuchSharedMemoryIsRefusedClearly) {
  const unsigned tooMuch = static_cast<unsigned>(props_->sharedPerBlockOptin) + 4;
  try {
    loadPtxKernel(sharedReversePtx_, "shared_reverse", 4, tooMuch);
    FAIL() << "a kernel needing " << tooMuch << " bytes of shared memory was accepted";
  } catch (const Error &e) {
    std::string message = e.what();
    std::printf("[tessera] expected error: %s\n", message.c_str());
    EXPECT_NE(message.find("kernel 'shared_reverse' needs " + std::to_string(tooMuch) +
                           " bytes of shared memory per block"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("at most " + std::to_string(props_->sharedPerBlockOptin) + " bytes"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(props_->name), std::string::npos) << message;
  }
}

TEST_F(Gpu, TooManyThreadsAreRefusedClearly) {
  try {
    loadPtxKernel(vectorAddPtx_, "add_kernel", 64, 0); // 2048 threads
    FAIL() << "a 2048-thread block was accepted";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("kernel 'add_kernel' needs 2048 threads per block (64 warps of 32)"),
              std::string::npos)
        << message;
  }
}

TEST_F(Gpu, EmptyGridIsRefusedClearly) {
  DeviceBuffer buffer(16);
  CUdeviceptr p = buffer.get();
  int n = 0;
  void *args[] = {&p, &p, &p, &n};
  for (Grid grid : {Grid{0, 1, 1}, Grid{1, 0, 1}, Grid{1, 1, 0}}) {
    try {
      launch(addKernel(), grid, args);
      ADD_FAILURE() << "an empty grid was launched";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("cannot launch kernel 'add_kernel': empty grid ("),
                std::string::npos)
          << e.what();
    }
  }
  synchronizeDevice(); // and nothing went wrong on the device
}

TEST_F(Gpu, BrokenPtxShowsTheJitErrorLog) {
  std::string broken = vectorAddPtx_;
  std::size_t at = broken.find("add.f32");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 7, "add.f33");
  try {
    linkPtx(broken, {props_->arch(), "add_kernel", kCurrentDevice});
    FAIL() << "broken PTX was accepted";
  } catch (const DriverError &e) {
    std::string message = e.what();
    std::printf("[tessera] expected error: %s\n", message.c_str());
    EXPECT_EQ(message.rfind("cuLinkAddData failed while compiling the PTX of kernel 'add_kernel'", 0),
              0u)
        << message;
    EXPECT_NE(message.find("CUDA_ERROR_"), std::string::npos) << message;
    std::size_t log = message.find("\nJIT error log:\n");
    ASSERT_NE(log, std::string::npos) << message;
    EXPECT_NE(message.find("error", log + 16), std::string::npos) << message;
    EXPECT_NE(message.find("f33", log + 16), std::string::npos) << message;
  }
}

TEST_F(Gpu, BadImagesAndNamesAreNamedInErrors) {
  try {
    loadPtxKernel(vectorAddPtx_, "no_such_kernel", 4, 0);
    FAIL() << "a missing kernel was found";
  } catch (const DriverError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("cuModuleGetFunction failed while looking up kernel 'no_such_kernel'"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("CUDA_ERROR_NOT_FOUND"), std::string::npos) << message;
  }
  const char garbage[] = "\x7f" "ELF this is not a cubin";
  try {
    loadKernel(garbage, "add_kernel", 4, 0);
    FAIL() << "garbage was loaded";
  } catch (const DriverError &e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("cuModuleLoadData failed while loading kernel 'add_kernel' on device ",
                            0),
              0u)
        << message;
    EXPECT_NE(message.find("CUDA_ERROR_"), std::string::npos) << message;
    EXPECT_NE(e.code(), 0);
  }
}

TEST_F(Gpu, AThreadWithoutAContextAdoptsTheKernels) {
  const LoadedKernel &k = addKernel();
  const int n = 300;
  std::vector<float> x(n, 1.5f), y(n, 2.25f), got(n);
  DeviceBuffer dx(n * 4), dy(n * 4), dout(n * 4);
  dx.upload(x.data(), n * 4);
  dy.upload(y.data(), n * 4);
  memsetD32(dout.get(), kNaNBits, n);
  std::exception_ptr failure;
  std::thread worker([&] { // a fresh thread has no current context
    try {
      CUdeviceptr px = dx.get(), py = dy.get(), pout = dout.get();
      int count = n;
      void *args[] = {&px, &py, &pout, &count};
      launch(k, Grid{(n + 127) / 128, 1, 1}, args);
      synchronizeDevice();
      EXPECT_EQ(currentDevice(), k.device());
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure)
    std::rethrow_exception(failure);
  dout.download(got.data(), n * 4);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(got[i], 3.75f) << "at " << i;
}

TEST_F(Gpu, KernelsStayOnTheirDevice) {
  if (deviceCount() < 2)
    GTEST_SKIP() << "needs two GPUs";
  const int other = device_ == 0 ? 1 : 0;
  LoadedKernel k = loadPtxKernel(vectorAddPtx_, "add_kernel", 4, 0, "", other);
  EXPECT_EQ(k.device(), other);
  EXPECT_EQ(currentDevice(), device_) << "loading on another device must restore the context";
  int n = 1;
  CUdeviceptr p = 0;
  void *args[] = {&p, &p, &p, &n};
  try {
    launch(k, Grid{1, 1, 1}, args);
    FAIL() << "a kernel of device " << other << " was launched from device " << device_;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("it was loaded on device " + std::to_string(other)),
              std::string::npos)
        << e.what();
  }
  {
    DeviceGuard guard(other);
    DeviceBuffer dx(4 * 256), dout(4 * 256);
    std::vector<float> ones(256, 1.f), got(256);
    dx.upload(ones.data(), 4 * 256);
    CUdeviceptr px = dx.get(), pout = dout.get();
    int count = 256;
    void *args2[] = {&px, &px, &pout, &count};
    launch(k, Grid{2, 1, 1}, args2);
    dout.download(got.data(), 4 * 256);
    for (float v : got)
      ASSERT_EQ(v, 2.f);
  }
  EXPECT_EQ(currentDevice(), device_);
}

