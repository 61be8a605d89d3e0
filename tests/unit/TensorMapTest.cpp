// TMA tensor descriptors without a driver (runtime/TensorMap.h): what
// cuTensorMapEncodeTiled would be called with for Triton-style descriptions,
// each rule's message, and the places a tensordesc parameter shows in the
// runtime (its 128 bytes in the C++ launch, the cache key). The encoding
// itself and launches are tested through the fake driver
// (tests/fake_driver/cpp/, tests/fake_driver/test_tensor_descriptor.py).
#include "runtime/Cache.h"
#include "runtime/Kernel.h"
#include "runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace tessera;
using rt::TensorMapArgs;
using rt::TensorMapSwizzle;
using ST = ir::ScalarType;

namespace {

constexpr uint64_t kBase = 0x7f0000001000;

// CUtensorMapDataType values (cuda.h)
constexpr int kUint8 = 0, kUint16 = 1, kUint32 = 2, kInt32 = 3, kUint64 = 4, kInt64 = 5, kFloat16 = 6, kFloat32 = 7,
              kFloat64 = 8, kBfloat16 = 9;

std::string reason(uint64_t base, ST dtype, std::vector<int64_t> shape, std::vector<int64_t> strides,
                   std::vector<int64_t> block) {
  try {
    rt::tensorMapArgs(base, dtype, shape, strides, block);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "(accepted)";
}

} // namespace

TEST(TensorMap, DimensionsInnermostFirstAndStridesInBytes) {
  TensorMapArgs a = rt::tensorMapArgs(kBase, ST::BF16, {512, 256}, {256, 1}, {128, 64});
  EXPECT_EQ(a.dataType, kBfloat16);
  EXPECT_EQ(a.rank, 2u);
  EXPECT_EQ(a.address, kBase);
  EXPECT_EQ(a.globalDim[0], 256u);
  EXPECT_EQ(a.globalDim[1], 512u);
  EXPECT_EQ(a.globalStrides[0], 512u); // 256 bf16
  EXPECT_EQ(a.boxDim[0], 64u);
  EXPECT_EQ(a.boxDim[1], 128u);
  EXPECT_EQ(a.elementStrides[0], 1u);
  EXPECT_EQ(a.elementStrides[1], 1u);
  EXPECT_EQ(a.swizzle, TensorMapSwizzle::Bytes128);
  EXPECT_EQ(a.interleave, 0);   // CU_TENSOR_MAP_INTERLEAVE_NONE
  EXPECT_EQ(a.l2Promotion, 2);  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  EXPECT_EQ(a.oobFill, 0);      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE

  // Rank 5, a padded (non-contiguous) layout: strides reversed, each in bytes.
  TensorMapArgs b = rt::tensorMapArgs(kBase, ST::F32, {2, 3, 5, 7, 100}, {5 * 3 * 1024, 5 * 1024, 1024, 128, 1},
                                      {1, 2, 4, 8, 16});
  EXPECT_EQ(b.rank, 5u);
  const uint64_t dims[5] = {100, 7, 5, 3, 2}, strides[4] = {512, 4096, 5 * 4096, 15 * 4096};
  const uint32_t box[5] = {16, 8, 4, 2, 1};
  for (int d = 0; d < 5; ++d) {
    EXPECT_EQ(b.globalDim[d], dims[d]) << d;
    EXPECT_EQ(b.boxDim[d], box[d]) << d;
    if (d < 4) EXPECT_EQ(b.globalStrides[d], strides[d]) << d;
  }
  EXPECT_EQ(b.swizzle, TensorMapSwizzle::Bytes64); // 16 fp32

  TensorMapArgs c = rt::tensorMapArgs(kBase, ST::I64, {1000}, {1}, {4});
  EXPECT_EQ(c.rank, 1u);
  EXPECT_EQ(c.globalDim[0], 1000u);
  EXPECT_EQ(c.boxDim[0], 4u);
  EXPECT_EQ(c.swizzle, TensorMapSwizzle::Bytes32); // 4 x 8 bytes
}

TEST(TensorMap, InnermostBoxClampedTo128BytesWithItsSwizzle) {
  struct Case {
    ST dtype;
    int64_t inner;
    uint32_t box;
    TensorMapSwizzle swizzle;
  } cases[] = {
      {ST::F16, 256, 64, TensorMapSwizzle::Bytes128}, {ST::F16, 128, 64, TensorMapSwizzle::Bytes128},
      {ST::F16, 64, 64, TensorMapSwizzle::Bytes128},  {ST::F16, 32, 32, TensorMapSwizzle::Bytes64},
      {ST::F16, 16, 16, TensorMapSwizzle::Bytes32},   {ST::F16, 8, 8, TensorMapSwizzle::None},
      {ST::F32, 64, 32, TensorMapSwizzle::Bytes128},  {ST::F32, 4, 4, TensorMapSwizzle::None},
      {ST::F64, 32, 16, TensorMapSwizzle::Bytes128},  {ST::F64, 2, 2, TensorMapSwizzle::None},
      {ST::F8E4M3, 256, 128, TensorMapSwizzle::Bytes128}, {ST::U8, 64, 64, TensorMapSwizzle::Bytes64},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(ir::name(c.dtype)) + " x " + std::to_string(c.inner));
    TensorMapArgs a = rt::tensorMapArgs(kBase, c.dtype, {64, 1024}, {1024, 1}, {32, c.inner});
    EXPECT_EQ(a.boxDim[0], c.box);
    EXPECT_EQ(a.boxDim[1], 32u);
    EXPECT_EQ(a.swizzle, c.swizzle);
  }
}

TEST(TensorMap, DataTypes) {
  EXPECT_EQ(rt::tensorMapDataType(ST::F16), kFloat16);
  EXPECT_EQ(rt::tensorMapDataType(ST::BF16), kBfloat16);
  EXPECT_EQ(rt::tensorMapDataType(ST::F32), kFloat32);
  EXPECT_EQ(rt::tensorMapDataType(ST::F64), kFloat64);
  for (ST t : {ST::I8, ST::U8, ST::F8E4M3, ST::F8E5M2}) EXPECT_EQ(rt::tensorMapDataType(t), kUint8) << ir::name(t);
  EXPECT_EQ(rt::tensorMapDataType(ST::I16), kUint16);
  EXPECT_EQ(rt::tensorMapDataType(ST::U16), kUint16);
  EXPECT_EQ(rt::tensorMapDataType(ST::I32), kInt32);
  EXPECT_EQ(rt::tensorMapDataType(ST::U32), kUint32);
  EXPECT_EQ(rt::tensorMapDataType(ST::I64), kInt64);
  EXPECT_EQ(rt::tensorMapDataType(ST::U64), kUint64);
  EXPECT_EQ(rt::tensorMapDataType(ST::I1), -1);
}

TEST(TensorMap, EachRuleHasItsMessage) {
  EXPECT_EQ(reason(kBase + 8, ST::BF16, {512, 256}, {256, 1}, {128, 64}),
            "the base address 0x7f0000001008 is not 16-byte aligned");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {100, 1}, {128, 64}),
            "strides[0] = 100 elements is 200 bytes, not a multiple of 16 bytes as TMA needs");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {512, 2}, {128, 64}),
            "the innermost stride (strides[1]) is 2, not 1: TMA needs the innermost dimension contiguous");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {0, 1}, {128, 64}),
            "strides[0] = 0 is out of range (1 element to 2**40 bytes)");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {int64_t(1) << 39, 1}, {128, 64}),
            "strides[0] = 549755813888 is out of range (1 element to 2**40 bytes)");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {256, 1}, {512, 64}),
            "block_shape[0] = 512 is out of range: TMA blocks have 1 to 256 elements per dimension");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {256, 1}, {128, 0}),
            "block_shape[1] = 0 is out of range: TMA blocks have 1 to 256 elements per dimension");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {256, 1}, {96, 64}), "block_shape[0] = 96 is not a power of two");
  EXPECT_EQ(reason(kBase, ST::F32, {512, 256}, {256, 1}, {64, 2}),
            "the innermost block dimension (block_shape[1] = 2) spans 8 bytes; TMA copies at least 16 bytes per row");
  EXPECT_EQ(reason(kBase, ST::BF16, {512, 256}, {256, 1}, {64}),
            "rank mismatch: shape has 2 dimensions, strides 2 and block_shape 1; all three need one entry per "
            "dimension");
  EXPECT_EQ(reason(kBase, ST::BF16, {2, 2, 2, 2, 2, 256}, {512, 256, 256, 256, 256, 1}, {1, 1, 1, 1, 1, 64}),
            "rank 6 is not supported: TMA descriptors have 1 to 5 dimensions");
  EXPECT_EQ(reason(kBase, ST::BF16, {}, {}, {}), "rank 0 is not supported: TMA descriptors have 1 to 5 dimensions");
  EXPECT_EQ(reason(kBase, ST::I1, {512, 256}, {256, 1}, {128, 64}),
            "dtype i1 is not supported: TMA copies floats (fp8 to fp64) and integers of 8 to 64 bits");
  EXPECT_EQ(reason(kBase, ST::BF16, {0, 256}, {256, 1}, {128, 64}), "shape[0] = 0 is out of range (1 to 2**32)");
  EXPECT_EQ(reason(kBase, ST::BF16, {(int64_t(1) << 32) + 1, 256}, {256, 1}, {128, 64}),
            "shape[0] = 4294967297 is out of range (1 to 2**32)");
  // The limits themselves are fine.
  EXPECT_EQ(reason(kBase, ST::U8, {int64_t(1) << 32, 256}, {(int64_t(1) << 40) - 16, 1}, {256, 16}), "(accepted)");
}

TEST(TensorMap, DescriptorParametersTake128BytesInTheCppLaunch) {
  ArgSpec desc;
  desc.type = ir::Type::tensorDesc(ST::BF16, {128, 64});
  ArgSpec i32;
  i32.type = ir::Type(ST::I32);
  CompiledKernel compiled;
  compiled.name = "k";
  compiled.ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  Kernel k(compiled, {desc, i32}, "sm_90a");
  try {
    k.launch(rt::Grid{1, 1, 1}, nullptr, int64_t(0), int32_t(7)); // an 8-byte value where the map goes
    FAIL() << "a wrong-sized descriptor argument was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()), "kernel 'k': argument 1 is 8 bytes but its parameter (tensordesc<128x64xbf16>) takes " +
                                         std::to_string(sizeof(TensorDescriptor)));
  }
  // The map first (what the parameter copies), then the hidden parameters' fields.
  static_assert(offsetof(TensorDescriptor, bytes) == 0 && alignof(TensorDescriptor) == rt::kTensorMapAlign);
  static_assert(offsetof(TensorDescriptor, base) == rt::kTensorMapBytes);
}

TEST(TensorMap, TheCacheKeyHasTheBlockShape) {
  ArgSpec a, b;
  a.type = ir::Type::tensorDesc(ST::BF16, {128, 64});
  b.type = ir::Type::tensorDesc(ST::F8E4M3, {64});
  ArgSpec n;
  n.type = ir::Type(ST::I32);
  n.divisibility = 16;
  EXPECT_EQ(cache::signatureKey({a, n, b}), "tensordesc<bf16[128,64]>,i32:16,tensordesc<fp8e4m3[64]>");
}
