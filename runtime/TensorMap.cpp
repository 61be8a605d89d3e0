// TMA tensor descriptors: the rules, the argument order the driver wants,
// and the one call to cuTensorMapEncodeTiled (TensorMap.h).
#include "runtime/TensorMap.h"

#include "runtime/DriverApi.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera {
namespace rt {

static_assert(sizeof(CUtensorMap) == kTensorMapBytes);
static_assert(static_cast<int>(TensorMapSwizzle::None) == CU_TENSOR_MAP_SWIZZLE_NONE &&
              static_cast<int>(TensorMapSwizzle::Bytes32) == CU_TENSOR_MAP_SWIZZLE_32B &&
              static_cast<int>(TensorMapSwizzle::Bytes64) == CU_TENSOR_MAP_SWIZZLE_64B &&
              static_cast<int>(TensorMapSwizzle::Bytes128) == CU_TENSOR_MAP_SWIZZLE_128B);

namespace {

constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;
constexpr uint64_t kMaxGlobalStrideBytes = uint64_t(1) << 40; // exclusive
constexpr int64_t kMaxBoxDim = 256;
constexpr int64_t kMaxBoxInnerBytes = 128; // the widest swizzle span

[[noreturn]] void invalid(const std::string &why) { throw std::invalid_argument(why); }

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::string item(const char *list, size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

} // namespace

int tensorMapDataType(ir::ScalarType dtype) {
  using ir::ScalarType;
  switch (dtype) {
  case ScalarType::F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case ScalarType::BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case ScalarType::F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case ScalarType::F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case ScalarType::I8:
  case ScalarType::U8:
  case ScalarType::F8E4M3:
  case ScalarType::F8E5M2:
  case ScalarType::F8E4B15: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case ScalarType::I16:
  case ScalarType::U16: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  case ScalarType::I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case ScalarType::U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case ScalarType::I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case ScalarType::U64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
  case ScalarType::I1: break;
  }
  return -1;
}

TensorMapArgs tensorMapArgs(uint64_t base, ir::ScalarType dtype, const std::vector<int64_t> &shape,
                            const std::vector<int64_t> &strides, const std::vector<int64_t> &blockShape,
                            bool nanPadding) {
  const size_t rank = shape.size();
  if (strides.size() != rank || blockShape.size() != rank)
    invalid("rank mismatch: shape has " + std::to_string(rank) + " dimensions, strides " +
            std::to_string(strides.size()) + " and block_shape " + std::to_string(blockShape.size()) +
            "; all three need one entry per dimension");
  if (rank < 1 || rank > kMaxTensorMapRank)
    invalid("rank " + std::to_string(rank) + " is not supported: TMA descriptors have 1 to " +
            std::to_string(kMaxTensorMapRank) + " dimensions");
  const int dataType = tensorMapDataType(dtype);
  if (dataType < 0)
    invalid(std::string("dtype ") + ir::name(dtype) + " is not supported: TMA copies floats (fp8 to fp64) and "
            "integers of 8 to 64 bits");
  const int64_t elementBytes = ir::bitWidth(dtype) / 8;

  for (size_t i = 0; i < rank; ++i) {
    const int64_t b = blockShape[i];
    if (b < 1 || b > kMaxBoxDim)
      invalid(item("block_shape", i) + " = " + std::to_string(b) + " is out of range: TMA blocks have 1 to " +
              std::to_string(kMaxBoxDim) + " elements per dimension");
    if (b & (b - 1)) invalid(item("block_shape", i) + " = " + std::to_string(b) + " is not a power of two");
  }
  const int64_t innerBlock = blockShape[rank - 1];
  if (innerBlock * elementBytes < 16)
    invalid("the innermost block dimension (" + item("block_shape", rank - 1) + " = " + std::to_string(innerBlock) +
            ") spans " + std::to_string(innerBlock * elementBytes) + " bytes; TMA copies at least 16 bytes per row");
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 1 || static_cast<uint64_t>(shape[i]) > kMaxGlobalDim)
      invalid(item("shape", i) + " = " + std::to_string(shape[i]) + " is out of range (1 to 2**32)");
  if (strides[rank - 1] != 1)
    invalid("the innermost stride (" + item("strides", rank - 1) + ") is " + std::to_string(strides[rank - 1]) +
            ", not 1: TMA needs the innermost dimension contiguous");
  for (size_t i = 0; i + 1 < rank; ++i) {
    const int64_t s = strides[i];
    if (s < 1 || static_cast<uint64_t>(s) >= kMaxGlobalStrideBytes / static_cast<uint64_t>(elementBytes))
      invalid(item("strides", i) + " = " + std::to_string(s) + " is out of range (1 element to 2**40 bytes)");
    if (s * elementBytes % 16 != 0)
      invalid(item("strides", i) + " = " + std::to_string(s) + " elements is " + std::to_string(s * elementBytes) +
              " bytes, not a multiple of 16 bytes as TMA needs");
  }
  if (base % 16 != 0) invalid("the base address " + hex(base) + " is not 16-byte aligned");
  if (nanPadding && !ir::isFloat(dtype))
    invalid(std::string("padding 'nan' is only supported for floating point tensors, not ") + ir::name(dtype));

  TensorMapArgs a;
  a.dataType = dataType;
  a.rank = static_cast<unsigned>(rank);
  a.address = base;
  for (size_t d = 0; d < rank; ++d) { // d: the driver's dimension, innermost first
    const size_t i = rank - 1 - d;    // i: the same dimension in Triton's order
    a.globalDim[d] = static_cast<uint64_t>(shape[i]);
    a.boxDim[d] = static_cast<uint32_t>(blockShape[i]);
    a.elementStrides[d] = 1;
    if (d > 0) a.globalStrides[d - 1] = static_cast<uint64_t>(strides[i] * elementBytes);
  }
  a.boxDim[0] = static_cast<uint32_t>(std::min<int64_t>(innerBlock, kMaxBoxInnerBytes / elementBytes));
  switch (a.boxDim[0] * elementBytes) {
  case 128: a.swizzle = TensorMapSwizzle::Bytes128; break;
  case 64: a.swizzle = TensorMapSwizzle::Bytes64; break;
  case 32: a.swizzle = TensorMapSwizzle::Bytes32; break;
  default: a.swizzle = TensorMapSwizzle::None; break;
  }
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  a.l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  a.oobFill = nanPadding ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return a;
}

void encodeTensorMap(const TensorMapArgs &args, void *out, int device) {
  const detail::DriverApi &api = detail::driver();
  if (!api.cuTensorMapEncodeTiled) {
    const int v = driverVersion();
    throw DriverError("cannot encode a tensor descriptor: this CUDA driver (CUDA " + std::to_string(v / 1000) +
                          "." + std::to_string(v % 1000 / 10) +
                          ") has no cuTensorMapEncodeTiled; TMA descriptors need CUDA 12.0 or newer",
                      DriverError::kNoCall);
  }
  // cuda.h's cuuint64_t is unsigned long long, a type of its own beside uint64_t.
  cuuint64_t globalDim[kMaxTensorMapRank] = {}, globalStrides[kMaxTensorMapRank - 1] = {};
  cuuint32_t boxDim[kMaxTensorMapRank] = {}, elementStrides[kMaxTensorMapRank] = {};
  for (size_t d = 0; d < kMaxTensorMapRank; ++d) {
    globalDim[d] = args.globalDim[d];
    boxDim[d] = args.boxDim[d];
    elementStrides[d] = args.elementStrides[d];
    if (d + 1 < kMaxTensorMapRank) globalStrides[d] = args.globalStrides[d];
  }
  CUtensorMap map; // aligned as cuda.h wants; `out` need not be
  DeviceGuard guard(device);
  detail::check(api.cuTensorMapEncodeTiled(
                    &map, static_cast<CUtensorMapDataType>(args.dataType), args.rank,
                    reinterpret_cast<void *>(static_cast<uintptr_t>(args.address)), globalDim, globalStrides, boxDim,
                    elementStrides, static_cast<CUtensorMapInterleave>(args.interleave),
                    static_cast<CUtensorMapSwizzle>(args.swizzle), static_cast<CUtensorMapL2promotion>(args.l2Promotion),
                    static_cast<CUtensorMapFloatOOBfill>(args.oobFill)),
                "cuTensorMapEncodeTiled failed");
  std::memcpy(out, &map, kTensorMapBytes);
}

} // namespace rt

TensorDescriptor makeTensorDescriptor(CUdeviceptr base, ir::ScalarType dtype, const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &strides, const std::vector<int64_t> &blockShape,
                                      bool nanPadding) {
  const rt::TensorMapArgs args = rt::tensorMapArgs(base, dtype, shape, strides, blockShape, nanPadding);
  TensorDescriptor d;
  rt::encodeTensorMap(args, d.bytes);
  d.base = base;
  d.rank = static_cast<uint32_t>(shape.size());
  d.nanPadding = nanPadding ? 1 : 0;
  std::copy(shape.begin(), shape.end(), d.shape);
  std::copy(strides.begin(), strides.end(), d.strides);
  return d;
}

} // namespace tessera
