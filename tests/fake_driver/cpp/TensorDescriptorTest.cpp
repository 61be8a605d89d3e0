// The C++ API's tensor descriptors through the fake CUDA driver
// (tests/tools/fake_libcuda.c, loaded by this binary itself): what
// makeTensorDescriptor asks cuTensorMapEncodeTiled for, the 128 bytes a
// Kernel::launch passes at a 64-byte-aligned place in the parameter block,
// the rules checked before the driver, the fake's own copy of the hardware's
// rules, and the driver's errors.
#include "runtime/Driver.h"
#include "runtime/Kernel.h"
#include "runtime/TensorMap.h"
#include "tests/tools/fake_libcuda.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace tessera;
using ST = ir::ScalarType;

namespace {

// Before anything loads the driver (it is loaded on first use, never at start-up).
// TESSERA_JIT=link: the fake's "cubin" from cuLink is the PTX, from which it reads
// the kernel's parameter sizes (a real cubin from ptxas would hide them).
const bool kFakeDriver = [] {
  return setenv("TESSERA_LIBCUDA", TESSERA_FAKE_LIBCUDA, 1) == 0 && setenv("TESSERA_JIT", "link", 1) == 0;
}();

constexpr CUdeviceptr kBase = 0x7f0000001000;
constexpr int kInvalidValue = 1, kOutOfMemory = 2; // CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY

// The fake's record functions, from the library the runtime loaded.
struct Fake {
  const tessera_fake_launch *(*lastLaunch)() = nullptr;
  const tessera_fake_tensor_map *(*lastTensorMap)() = nullptr;
  uint64_t (*tensorMapCount)() = nullptr;
  void (*failNextTensorMap)(int) = nullptr;

  static const Fake &get() {
    static const Fake fake = [] {
      rt::driverVersion(); // loads the driver (TESSERA_LIBCUDA)
      Fake f;
      void *lib = dlopen(TESSERA_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
      if (!lib) throw std::runtime_error("the fake driver is not the loaded one");
      f.lastLaunch = reinterpret_cast<decltype(f.lastLaunch)>(dlsym(lib, "tessera_fake_last_launch"));
      f.lastTensorMap = reinterpret_cast<decltype(f.lastTensorMap)>(dlsym(lib, "tessera_fake_last_tensor_map"));
      f.tensorMapCount = reinterpret_cast<decltype(f.tensorMapCount)>(dlsym(lib, "tessera_fake_tensor_map_count"));
      f.failNextTensorMap = reinterpret_cast<decltype(f.failNextTensorMap)>(dlsym(lib, "tessera_fake_fail_next_tensor_map"));
      return f;
    }();
    return fake;
  }
};

ArgSpec spec(ir::Type type) {
  ArgSpec s;
  s.type = std::move(type);
  return s;
}

// A kernel "compiled" by hand: its .entry declares (i32 n, tensordesc desc) with the descriptor ABI.
Kernel handWrittenKernel() {
  CompiledKernel compiled;
  compiled.name = "k";
  compiled.ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k(\n"
                 "\t.param .u32 k_param_0,\n\t.param .align 64 .b8 k_param_1[128]\n)\n{\n\tret;\n}\n";
  return Kernel(compiled, {spec(ir::Type(ST::I32)), spec(ir::Type::tensorDesc(ST::F16, {64, 64}))}, "sm_90a");
}

void expectLaunchedWith(const TensorDescriptor &d, int32_t n) {
  const tessera_fake_launch &l = *Fake::get().lastLaunch();
  ASSERT_EQ(l.num_params, 2);
  EXPECT_EQ(l.param_sizes[0], 4);
  EXPECT_EQ(l.param_sizes[1], 128);
  EXPECT_EQ(l.param_offsets[0], 0);
  EXPECT_EQ(l.param_offsets[1], 64); // the next 64-byte boundary after the int
  EXPECT_EQ(l.param_block_bytes, 192);
  EXPECT_EQ(std::memcmp(l.param_block, &n, 4), 0);
  EXPECT_EQ(std::memcmp(l.param_block + 64, d.bytes, 128), 0);
  EXPECT_EQ(l.param_addresses[1], reinterpret_cast<uint64_t>(&d)); // the descriptor itself, 64-byte aligned
  EXPECT_EQ(l.param_addresses[1] % 64, 0u);
}

} // namespace

TEST(FakeDriverTensorMap, TheDriverIsTheFake) {
  ASSERT_TRUE(kFakeDriver);
  EXPECT_EQ(rt::driverVersion(), 99000);
  EXPECT_NE(Fake::get().lastTensorMap, nullptr);
}

TEST(FakeDriverTensorMap, MakeTensorDescriptorEncodes) {
  const Fake &fake = Fake::get();
  const uint64_t before = fake.tensorMapCount();
  TensorDescriptor d = makeTensorDescriptor(kBase, ST::F16, {256, 1000}, {1024, 1}, {64, 128});
  ASSERT_EQ(fake.tensorMapCount(), before + 1);
  const tessera_fake_tensor_map &t = *fake.lastTensorMap();
  EXPECT_EQ(t.result, 0);
  EXPECT_EQ(t.data_type, 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  EXPECT_EQ(t.rank, 2u);
  EXPECT_EQ(t.address, kBase);
  EXPECT_EQ(t.global_dim[0], 1000u);
  EXPECT_EQ(t.global_dim[1], 256u);
  EXPECT_EQ(t.global_strides[0], 2048u);
  EXPECT_EQ(t.box_dim[0], 64u); // 128 fp16 clamped to 128 bytes
  EXPECT_EQ(t.box_dim[1], 64u);
  EXPECT_EQ(t.element_strides[0], 1u);
  EXPECT_EQ(t.element_strides[1], 1u);
  EXPECT_EQ(t.swizzle, 3);      // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(t.l2_promotion, 2); // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  EXPECT_EQ(t.oob_fill, 0);
  EXPECT_EQ(t.interleave, 0);
  EXPECT_EQ(std::memcmp(d.bytes, t.map, 128), 0);
  uint64_t magic = 0;
  std::memcpy(&magic, d.bytes, 8);
  EXPECT_EQ(magic, TESSERA_FAKE_TENSOR_MAP_MAGIC);
}

TEST(FakeDriverTensorMap, KernelLaunchPassesTheMapAsOneAlignedParameter) {
  Kernel k = handWrittenKernel();
  TensorDescriptor d = makeTensorDescriptor(kBase, ST::F16, {256, 512}, {512, 1}, {64, 64});
  const uint64_t encodes = Fake::get().tensorMapCount();
  k.launch(rt::Grid{3, 1, 1}, nullptr, int32_t(5), d);
  expectLaunchedWith(d, 5);
  EXPECT_EQ(Fake::get().lastLaunch()->grid[0], 3u);

  int32_t n = 9;
  void *args[] = {&n, &d}; // cuLaunchKernel's form
  k.launch(rt::Grid{1, 1, 1}, args);
  expectLaunchedWith(d, 9);
  EXPECT_EQ(Fake::get().tensorMapCount(), encodes); // launching encodes nothing
}

TEST(FakeDriverTensorMap, RulesAreCheckedBeforeTheDriver) {
  const Fake &fake = Fake::get();
  const uint64_t before = fake.tensorMapCount();
  EXPECT_THROW(
      {
        try {
          makeTensorDescriptor(kBase + 4, ST::BF16, {64, 64}, {64, 1}, {64, 64});
        } catch (const std::invalid_argument &e) {
          EXPECT_STREQ(e.what(), "the base address 0x7f0000001004 is not 16-byte aligned");
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(makeTensorDescriptor(kBase, ST::BF16, {64, 64}, {68, 1}, {64, 64}), std::invalid_argument);
  EXPECT_THROW(makeTensorDescriptor(kBase, ST::BF16, {64, 64}, {64, 1}, {64, 48}), std::invalid_argument);
  EXPECT_EQ(fake.tensorMapCount(), before);
}

TEST(FakeDriverTensorMap, TheFakeRefusesWhatTheHardwareWould) {
  const rt::TensorMapArgs good = rt::tensorMapArgs(kBase, ST::F16, {256, 512}, {512, 1}, {64, 64});
  unsigned char map[128];
  rt::encodeTensorMap(good, map); // accepted
  std::vector<std::pair<const char *, std::function<void(rt::TensorMapArgs &)>>> bad = {
      {"address not 16-byte aligned", [](auto &a) { a.address += 8; }},
      {"stride not a multiple of 16", [](auto &a) { a.globalStrides[0] = 1000; }},
      {"stride of 2**40", [](auto &a) { a.globalStrides[0] = uint64_t(1) << 40; }},
      {"box over 256", [](auto &a) { a.boxDim[1] = 512; }},
      {"box of 0", [](auto &a) { a.boxDim[1] = 0; }},
      {"rank 0", [](auto &a) { a.rank = 0; }},
      {"rank 6", [](auto &a) { a.rank = 6; }},
      {"dimension 0", [](auto &a) { a.globalDim[0] = 0; }},
      {"dimension over 2**32", [](auto &a) { a.globalDim[1] = (uint64_t(1) << 32) + 1; }},
      {"inner box not a multiple of 16 bytes", [](auto &a) { a.boxDim[0] = 4; a.swizzle = rt::TensorMapSwizzle::None; }},
      {"inner box wider than the swizzle", [](auto &a) { a.swizzle = rt::TensorMapSwizzle::Bytes64; }},
      {"inner box over 128 bytes", [](auto &a) { a.boxDim[0] = 128; }},
      {"element stride over 8", [](auto &a) { a.elementStrides[1] = 9; }},
      {"unknown data type", [](auto &a) { a.dataType = 99; }},
      {"NaN fill of integers", [](auto &a) { a.dataType = 3; a.oobFill = 1; }},
  };
  for (auto &[what, change] : bad) {
    SCOPED_TRACE(what);
    rt::TensorMapArgs a = good;
    change(a);
    try {
      rt::encodeTensorMap(a, map);
      ADD_FAILURE() << "accepted";
    } catch (const rt::DriverError &e) {
      EXPECT_EQ(e.code(), kInvalidValue);
      EXPECT_STREQ(e.what(), "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
    }
  }
}

TEST(FakeDriverTensorMap, DriverErrorsNameTheCudaError) {
  Fake::get().failNextTensorMap(kOutOfMemory);
  try {
    makeTensorDescriptor(kBase, ST::BF16, {64, 64}, {64, 1}, {64, 64});
    FAIL() << "the driver's error was lost";
  } catch (const rt::DriverError &e) {
    EXPECT_EQ(e.code(), kOutOfMemory);
    EXPECT_STREQ(e.what(), "cuTensorMapEncodeTiled failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  }
  makeTensorDescriptor(kBase, ST::BF16, {64, 64}, {64, 1}, {64, 64}); // one failure only
}
