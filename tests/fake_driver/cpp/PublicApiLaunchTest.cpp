// include/tessera/tessera.h's Kernel through the fake CUDA driver
// (tests/tools/fake_libcuda.c): the variadic launch packs the arguments as
// cuLaunchKernel wants them and checks their sizes first. Includes only the
// public header of tessera, as an installed user would.
#include <tessera/tessera.h>

#include "tests/tools/fake_libcuda.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {

// Before anything loads the driver (as TensorDescriptorTest.cpp: the same values).
const bool kFakeDriver = [] {
  return setenv("TESSERA_LIBCUDA", TESSERA_FAKE_LIBCUDA, 1) == 0 && setenv("TESSERA_JIT", "link", 1) == 0;
}();

const tessera_fake_launch &lastLaunch() {
  void *lib = dlopen(TESSERA_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) throw std::runtime_error("the fake driver is not the loaded one");
  auto last = reinterpret_cast<const tessera_fake_launch *(*)()>(dlsym(lib, "tessera_fake_last_launch"));
  return *last();
}

TEST(PublicApiLaunch, VariadicLaunchPacksAndChecksArguments) {
  ASSERT_TRUE(kFakeDriver);
  setenv("TESSERA_CACHE", "off", 1);
  const char *src = "import tessera\nimport tessera.language as tl\n@tessera.jit\n"
                    "def k(x, n, B: tl.constexpr):\n"
                    "    o = tl.arange(0, B)\n"
                    "    tl.store(x + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)\n";
  tessera::CompileOptions options;
  options.arch = "sm_80";
  tessera::Kernel k = tessera::compile(src, "k", "*fp32:16,i32", {{"B", tessera::ConstexprValue::ofInt(128)}},
                                       options);
  const unsigned long long x = 0x7f0000001000ull; // a CUdeviceptr
  k.launch({3, 2, 1}, nullptr, x, int32_t(77));
  const tessera_fake_launch &l = lastLaunch();
  EXPECT_STREQ(l.kernel, "k");
  EXPECT_EQ(l.grid[0], 3u);
  EXPECT_EQ(l.grid[1], 2u);
  EXPECT_EQ(l.block[0], 128u); // 4 warps
  ASSERT_EQ(l.num_params, 2);
  EXPECT_EQ(l.params[0], x);
  EXPECT_EQ(l.params[1], 77u);

  int32_t n = 5;
  void *args[] = {const_cast<unsigned long long *>(&x), &n}; // cuLaunchKernel's form
  k.launch({1, 1, 1}, args);
  EXPECT_EQ(lastLaunch().params[1], 5u);

  const uint64_t launches = lastLaunch().count;
  EXPECT_THROW(k.launch({1, 1, 1}, nullptr, x, int64_t(77)), std::invalid_argument); // i32 given 8 bytes
  EXPECT_THROW(k.launch({1, 1, 1}, nullptr, x), std::invalid_argument);              // one argument short
  EXPECT_EQ(lastLaunch().count, launches); // nothing reached the driver
  unsetenv("TESSERA_CACHE");
}

} // namespace
