// The Driver-API runtime without a GPU: laziness (nothing touches libcuda
// until asked), the one clear error when there is no driver, and the parts
// that need no driver (architecture names, grid validation, argument checks).
// The behaviour with a GPU is tested by tests/gpu (tessera_gpu_tests).
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"
#include "runtime/Stream.h"
#include "runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace tessera::rt;

namespace {

bool libcudaMapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcuda.so") != std::string::npos;
}

// Runs in a fresh process (a "threadsafe" death test re-executes the binary),
// so that no earlier test can have loaded the driver.
[[noreturn]] void constructEverythingAndExit() {
  {
    LoadedKernel kernel;
    DeviceBuffer buffer;
    Stream stream;
    Graph graph;
    Grid grid{4, 2, 1};
    LinkOptions options;
    DeviceProperties properties;
    LinkResult linked;
    validateGrid(grid, "k");
    (void)parseArch("sm_90a");
    (void)jitTargetFor(Arch{9, 0, 'a'});
    (void)bool(kernel);
    (void)stream.get();
    LoadedKernel moved = std::move(kernel);
  } // ...and destroying them does not either
  std::exit(driverLoadAttempted() || libcudaMapped() ? 1 : 0);
}

} // namespace

TEST(RuntimeLaziness, ConstructingAndDestroyingNothingTouchesTheDriver) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(constructEverythingAndExit(), ::testing::ExitedWithCode(0), "")
      << "the driver was loaded (or libcuda mapped) without any launch or load";
}

TEST(RuntimeNoDriver, EveryEntryPointThrowsDriverNotFound) {
  const DriverStatus &status = driverStatus();
  if (status.libraryLoaded)
    GTEST_SKIP() << "libcuda.so.1 is present here (CUDA driver " << status.version
                 << "): the no-driver behaviour cannot be tested; see tessera_gpu_tests";

  EXPECT_FALSE(driverAvailable());
  EXPECT_TRUE(driverLoadAttempted());
  const std::string prefix = "no CUDA driver found: libcuda.so.1 could not be loaded (";
  ASSERT_EQ(status.error.rfind(prefix, 0), 0u) << status.error;
  EXPECT_EQ(status.error.back(), ')');
  EXPECT_GT(status.error.size(), prefix.size() + 1) << "the dlerror text is missing";

  const char ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n";
  char host[16] = {};
  unsigned char map[kTensorMapBytes] = {};
  LoadedKernel empty;
  std::vector<std::pair<const char *, std::function<void()>>> entryPoints = {
      {"driverVersion", [] { driverVersion(); }},
      {"deviceCount", [] { deviceCount(); }},
      {"currentDevice", [] { currentDevice(); }},
      {"setCurrentDevice", [] { setCurrentDevice(0); }},
      {"deviceProperties()", [] { deviceProperties(); }},
      {"deviceProperties(0)", [] { deviceProperties(0); }},
      {"primaryContext", [] { primaryContext(0); }},
      {"synchronizeDevice", [] { synchronizeDevice(); }},
      {"DeviceGuard", [] { DeviceGuard guard(0); }},
      {"linkPtx", [&] { linkPtx(ptx); }},
      {"linkPtx(sm_90a)", [&] { linkPtx(ptx, {"sm_90a", "k", kCurrentDevice}); }},
      {"loadKernel", [&] { loadKernel(ptx, "k", 4, 0); }},
      {"loadPtxKernel", [&] { loadPtxKernel(ptx, "k", 4, 0, "sm_90"); }},
      {"launch", [&] { launch(empty, Grid{1, 1, 1}, nullptr); }},
      {"launch(empty grid)", [&] { launch(empty, Grid{0, 1, 1}, nullptr); }},
      {"memAlloc", [] { memAlloc(256); }},
      {"memAlloc(0)", [] { memAlloc(0); }},
      {"memFree", [] { memFree(0); }},
      {"memcpyHtoD", [&] { memcpyHtoD(0, host, sizeof(host)); }},
      {"memcpyDtoH", [&] { memcpyDtoH(host, 0, sizeof(host)); }},
      {"memsetD8", [] { memsetD8(0, 0, 16); }},
      {"memsetD32", [] { memsetD32(0, 0, 4); }},
      {"DeviceBuffer", [] { DeviceBuffer buffer(64); }},
      {"Stream::create", [] { Stream::create(); }},
      {"synchronizeStream", [] { synchronizeStream(nullptr); }},
      {"beginCapture", [] { beginCapture(nullptr); }},
      {"endCapture", [] { endCapture(nullptr); }},
      {"captureGraph", [] { captureGraph(nullptr, [] {}); }},
      {"Graph::launch", [] { Graph().launch(nullptr); }},
      {"encodeTensorMap", [&] { encodeTensorMap(TensorMapArgs{}, map); }},
      {"makeTensorDescriptor", [] {
         tessera::makeTensorDescriptor(0x10000, tessera::ir::ScalarType::F16, {64, 64}, {64, 1}, {64, 64});
       }},
  };
  for (auto &[name, call] : entryPoints) {
    SCOPED_TRACE(name);
    try {
      call();
      ADD_FAILURE() << name << " did not throw without a driver";
    } catch (const DriverNotFoundError &e) {
      EXPECT_EQ(std::string(e.what()), status.error);
      EXPECT_EQ(e.code(), DriverError::kNoCall);
    } catch (const std::exception &e) {
      ADD_FAILURE() << name << " threw something else: " << e.what();
    }
  }
}

TEST(RuntimeErrors, HierarchyLetsCallersCatchBroadlyOrNarrowly) {
  try {
    throw DriverNotFoundError("no CUDA driver found: libcuda.so.1 could not be loaded (x)");
  } catch (const DriverError &e) {
    EXPECT_EQ(e.code(), DriverError::kNoCall);
  }
  try {
    throw DriverError("cuModuleLoadData failed while loading kernel 'k': CUDA_ERROR_INVALID_IMAGE "
                      "(device kernel image is invalid)",
                      200);
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_INVALID_IMAGE"), std::string::npos);
    EXPECT_EQ(dynamic_cast<const DriverError &>(e).code(), 200);
  }
  EXPECT_THROW(throw Error("x"), std::runtime_error);
}

TEST(RuntimeArch, ParsesArchitectureNames) {
  EXPECT_EQ(parseArch("sm_90a"), (Arch{9, 0, 'a'}));
  EXPECT_EQ(parseArch("sm_90"), (Arch{9, 0, 0}));
  EXPECT_EQ(parseArch("sm_80"), (Arch{8, 0, 0}));
  EXPECT_EQ(parseArch("sm_86"), (Arch{8, 6, 0}));
  EXPECT_EQ(parseArch("sm_89"), (Arch{8, 9, 0}));
  EXPECT_EQ(parseArch("sm_100a"), (Arch{10, 0, 'a'}));
  EXPECT_EQ(parseArch("sm_100f"), (Arch{10, 0, 'f'}));
  EXPECT_EQ(parseArch("sm_121"), (Arch{12, 1, 0}));
  EXPECT_EQ(parseArch("compute_90"), (Arch{9, 0, 0}));
  EXPECT_EQ(parseArch("sm_90a")->computeCapability(), 90);
  EXPECT_EQ(parseArch("sm_103f")->computeCapability(), 103);
  for (const char *bad : {"", "sm_", "sm_9", "sm_1000", "sm_90b", "sm_90aa", "sm_x0", "sm_09",
                          "gfx90a", "SM_90", "sm90", "sm_9 0", "compute_", "90"})
    EXPECT_FALSE(parseArch(bad).has_value()) << "'" << bad << "' should not parse";
}

TEST(RuntimeArch, PrintsArchitectureNames) {
  for (const char *name : {"sm_80", "sm_90", "sm_90a", "sm_100f", "sm_120a"})
    EXPECT_EQ(parseArch(name)->str(), name);
  EXPECT_EQ(parseArch("compute_86")->str(), "sm_86");
}

TEST(RuntimeArch, MapsToJitTargets) {
  // CUjit_target: the compute capability, plus 0x10000 for 'a', 0x20000 for 'f'.
  EXPECT_EQ(jitTargetFor(*parseArch("sm_80")), 80);
  EXPECT_EQ(jitTargetFor(*parseArch("sm_89")), 89);
  EXPECT_EQ(jitTargetFor(*parseArch("sm_90")), 90);
  EXPECT_EQ(jitTargetFor(*parseArch("sm_90a")), 0x10000 + 90);
  EXPECT_EQ(jitTargetFor(*parseArch("sm_100a")), 0x10000 + 100);
  EXPECT_EQ(jitTargetFor(*parseArch("sm_100f")), 0x20000 + 100);
  // Unknown to the CUDA headers: the driver picks the context's device.
  EXPECT_FALSE(jitTargetFor(*parseArch("sm_99")).has_value());
  EXPECT_FALSE(jitTargetFor(*parseArch("sm_80a")).has_value());
  EXPECT_FALSE(jitTargetFor(*parseArch("sm_90f")).has_value());
}

TEST(RuntimeArch, ReadsThePtxTarget) {
  EXPECT_EQ(ptxTarget("//\n// .target sm_70 in a comment\n.version 8.0\n.target sm_90a\n"
                      ".address_size 64\n"),
            (Arch{9, 0, 'a'}));
  EXPECT_EQ(ptxTarget(".version 7.0\n  .target\tsm_80, texmode_independent // x\n"), (Arch{8, 0, 0}));
  EXPECT_EQ(ptxTarget(".version 8.7\r\n.target sm_100f\r\n"), (Arch{10, 0, 'f'}));
  EXPECT_FALSE(ptxTarget(".version 7.0\n.address_size 64\n").has_value());
  EXPECT_FALSE(ptxTarget(".targets sm_80\n").has_value());
  EXPECT_FALSE(ptxTarget("").has_value());
}

TEST(RuntimeArch, LinkRejectsUnknownArchitectureBeforeTouchingTheDriver) {
  try {
    linkPtx(".version 7.0\n", {"sm_9x", "add_kernel", kCurrentDevice});
    FAIL() << "expected an error";
  } catch (const DriverError &e) {
    FAIL() << "the architecture should be checked before the driver: " << e.what();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "cannot compile kernel 'add_kernel': unknown GPU architecture 'sm_9x' "
                           "(expected a name like sm_80, sm_90a or sm_100f)");
  }
}

TEST(RuntimeGrid, EmptyGridsAreErrors) {
  for (Grid grid : {Grid{0, 1, 1}, Grid{1, 0, 1}, Grid{1, 1, 0}, Grid{0, 0, 0}}) {
    try {
      validateGrid(grid, "add_kernel");
      ADD_FAILURE() << "no error for an empty grid";
    } catch (const Error &e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind("cannot launch kernel 'add_kernel': empty grid (", 0), 0u) << message;
      EXPECT_NE(message.find("every grid dimension must be at least 1"), std::string::npos);
    }
  }
  try {
    validateGrid(Grid{0, 2, 3}, "k");
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "cannot launch kernel 'k': empty grid (0, 2, 3); every grid "
                           "dimension must be at least 1");
  }
}

TEST(RuntimeGrid, OversizedGridsAreErrors) {
  for (Grid grid : {Grid{0x80000000u, 1, 1}, Grid{1, 65536, 1}, Grid{1, 1, 65536},
                    Grid{0xffffffffu, 1, 1}}) {
    try {
      validateGrid(grid, "k");
      ADD_FAILURE() << "no error for grid (" << grid.x << ", " << grid.y << ", " << grid.z << ")";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("exceeds the limits (2147483647, 65535, 65535)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(RuntimeGrid, ValidGridsPass) {
  EXPECT_NO_THROW(validateGrid(Grid{}, "k"));
  EXPECT_NO_THROW(validateGrid(Grid{1, 1, 1}, "k"));
  EXPECT_NO_THROW(validateGrid(Grid{1000, 7, 3}, "k"));
  EXPECT_NO_THROW(validateGrid(Grid{0x7fffffffu, 65535, 65535}, "k"));
}

TEST(RuntimeLoad, BadArgumentsAreErrorsBeforeTheDriver) {
  const char image[] = "not a cubin";
  for (int warps : {0, -1, 1025}) {
    try {
      loadKernel(image, "add_kernel", warps, 0);
      ADD_FAILURE() << "no error for numWarps = " << warps;
    } catch (const DriverError &e) {
      ADD_FAILURE() << "numWarps should be checked before the driver: " << e.what();
    } catch (const Error &e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot load kernel 'add_kernel': numWarps must be between 1 and 1024, got " +
                    std::to_string(warps));
    }
  }
  EXPECT_THROW(loadKernel(nullptr, "k", 4, 0), Error);
}

TEST(RuntimeLoad, EmptyObjectsAreEmpty) {
  LoadedKernel kernel;
  EXPECT_FALSE(kernel);
  EXPECT_EQ(kernel.function(), nullptr);
  EXPECT_EQ(kernel.module(), nullptr);
  EXPECT_EQ(kernel.blockThreads(), 0u);
  DeviceBuffer buffer;
  EXPECT_EQ(buffer.get(), 0u);
  EXPECT_EQ(buffer.size(), 0u);
  Stream stream;
  EXPECT_EQ(stream.get(), nullptr);
  Graph graph;
  EXPECT_FALSE(graph);
}
