// The TESSERA_* compile switches: each variable's rule (compiler/support/Environment.h)
// and how the driver resolves CompileOptions against them (resolveOptions), which is
// what the passes, codegen and the kernel-cache key read.
#include "compiler/driver/Compiler.h"
#include "compiler/support/Environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

using namespace tessera;

namespace {

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::optional<std::string> &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace

TEST(Environment, SetAndNotZero) {
  const char *v = "TESSERA_TEST_SWITCH";
  { ScopedEnv e(v, std::nullopt); EXPECT_FALSE(env::setAndNotZero(v)); }
  { ScopedEnv e(v, ""); EXPECT_FALSE(env::setAndNotZero(v)); }
  { ScopedEnv e(v, "0"); EXPECT_FALSE(env::setAndNotZero(v)); }
  { ScopedEnv e(v, "1"); EXPECT_TRUE(env::setAndNotZero(v)); }
  { ScopedEnv e(v, "off"); EXPECT_TRUE(env::setAndNotZero(v)); } // only "0" is off
}

TEST(Environment, OnUnlessZero) {
  const char *v = "TESSERA_TEST_SWITCH";
  { ScopedEnv e(v, std::nullopt); EXPECT_TRUE(env::onUnlessZero(v)); }
  { ScopedEnv e(v, ""); EXPECT_TRUE(env::onUnlessZero(v)); }
  { ScopedEnv e(v, "0"); EXPECT_FALSE(env::onUnlessZero(v)); }
  { ScopedEnv e(v, "1"); EXPECT_TRUE(env::onUnlessZero(v)); }
}

TEST(Environment, Truthy) {
  EXPECT_FALSE(env::truthy(nullptr));
  EXPECT_FALSE(env::truthy(""));
  for (const char *no : {"0", "false", "No", "OFF"}) EXPECT_FALSE(env::truthy(no)) << no;
  for (const char *yes : {"1", "yes", "on", "true"}) EXPECT_TRUE(env::truthy(yes)) << yes;
}

TEST(Environment, LibdevicePath) {
  ScopedEnv cudaHome("CUDA_HOME", "/opt/cuda");
  {
    ScopedEnv libdevice("TESSERA_LIBDEVICE", std::nullopt);
    EXPECT_EQ(env::readCompilerEnvironment().libdevicePath, "/opt/cuda/nvvm/libdevice/libdevice.10.bc");
  }
  ScopedEnv libdevice("TESSERA_LIBDEVICE", "/x/libdevice.bc");
  EXPECT_EQ(env::readCompilerEnvironment().libdevicePath, "/x/libdevice.bc");
}

TEST(ResolveOptions, TheEnvironmentDecidesWhatTheOptionsLeaveOpen) {
  ScopedEnv debug("TESSERA_DEBUG", "1"), mma("TESSERA_MMA", "0"), fusion("TESSERA_FP_FUSION", "0"),
      wgmma("TESSERA_WGMMA", "0"), dump("TESSERA_DUMP_IR", "1"), runs("TESSERA_COMPARE_RUNS", "0"),
      backend("TESSERA_BACKEND", "nvrtc");
  ResolvedOptions r = resolveOptions(CompileOptions{});
  EXPECT_TRUE(r.debug);
  EXPECT_FALSE(r.tensorCores);
  EXPECT_FALSE(r.fpFusion);
  EXPECT_FALSE(r.wgmma);
  EXPECT_TRUE(r.dumpIR);
  EXPECT_FALSE(r.compareRuns);
  EXPECT_EQ(r.backend, "nvrtc");

  CompileOptions o;
  o.tensorCores = 1;
  o.fpFusion = 1;
  o.backend = "llvm";
  r = resolveOptions(o);
  EXPECT_TRUE(r.tensorCores);
  EXPECT_TRUE(r.fpFusion);
  EXPECT_EQ(r.backend, "llvm");
}

TEST(ResolveOptions, DefaultsWithoutTheVariables) {
  ScopedEnv debug("TESSERA_DEBUG", std::nullopt), mma("TESSERA_MMA", std::nullopt),
      fusion("TESSERA_FP_FUSION", std::nullopt), wgmma("TESSERA_WGMMA", std::nullopt),
      dump("TESSERA_DUMP_IR", std::nullopt), runs("TESSERA_COMPARE_RUNS", std::nullopt),
      backend("TESSERA_BACKEND", std::nullopt);
  ResolvedOptions r = resolveOptions(CompileOptions{});
  EXPECT_FALSE(r.debug);
  EXPECT_TRUE(r.tensorCores);
  EXPECT_TRUE(r.fpFusion);
  EXPECT_TRUE(r.wgmma);
  EXPECT_FALSE(r.dumpIR);
  EXPECT_TRUE(r.compareRuns);
  EXPECT_EQ(r.backend, "llvm");
  CompileOptions o;
  o.debug = true;
  EXPECT_TRUE(resolveOptions(o).debug);
}

TEST(ResolveOptions, ABadBackendNameIsAnError) {
  ScopedEnv backend("TESSERA_BACKEND", "ptxas");
  try {
    resolveOptions(CompileOptions{});
    FAIL() << "TESSERA_BACKEND=ptxas should be rejected";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()), "TESSERA_BACKEND must be 'llvm' or 'nvrtc', got 'ptxas'");
  }
}
