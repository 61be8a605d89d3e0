// TMA tensor descriptors (Hopper), the host side: a kernel parameter of type
// tensordesc<DTYPE[B0,B1,...]> (Triton's tensor descriptor: `desc.load([i, j])`
// reads one B0 x B1 block through the TMA unit) is the 128-byte CUtensorMap
// that cuTensorMapEncodeTiled writes, passed by value as one 128-byte,
// 64-byte-aligned parameter. docs/runtime.md ("Tensor descriptors") has the
// rules; the Python launcher (python/bindings/TensorDescriptor.cpp) and the
// C++ API (makeTensorDescriptor below) both encode through this file.
//
// Shapes, strides and block shapes are given as in Triton and torch:
// outermost dimension first, strides in elements. The driver wants them
// innermost first and strides in bytes; tensorMapArgs() does that and checks
// the hardware's rules first, so that a bad descriptor is reported with its
// reason instead of the driver's CUDA_ERROR_INVALID_VALUE.
#pragma once

#include "compiler/ir/Types.h"
#include "runtime/CudaTypes.h"
#include "runtime/Device.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera {

// A tensor-descriptor kernel argument: the encoded CUtensorMap, opaque, then
// what the kernel reads as the descriptor's hidden parameters (its base,
// shape, strides and padding: desc.shape, atomics, targets without TMA).
// Pass it to Kernel::launch like any other argument (its address is what
// cuLaunchKernel's kernelParams holds for the map; Kernel::launch appends the
// hidden parameters); it stays valid while the tensor it describes does. Made
// by makeTensorDescriptor.
struct alignas(64) TensorDescriptor {
  unsigned char bytes[128] = {};
  uint64_t base = 0;
  uint32_t rank = 0;
  uint32_t nanPadding = 0; // 1: out-of-bounds elements read as NaN (Triton's padding="nan")
  int64_t shape[5] = {};
  int64_t strides[5] = {};
};
static_assert(offsetof(TensorDescriptor, bytes) == 0 && alignof(TensorDescriptor) == 64);

// Encodes a descriptor for the tensor at device address `base` with elements
// of `dtype`, `shape` and `strides` (elements, outermost first; the innermost
// stride must be 1) read in blocks of `blockShape` (the B0, B1, ... of the
// kernel's tensordesc<DTYPE[B0,B1,...]> parameter). Ranks 1 to 5. Throws
// std::invalid_argument naming the broken rule, rt::DriverError when the
// driver refuses (or lacks cuTensorMapEncodeTiled: CUDA 12.0+ is needed).
// Makes device 0's context current if no context is.
TensorDescriptor makeTensorDescriptor(CUdeviceptr base, ir::ScalarType dtype, const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &strides, const std::vector<int64_t> &blockShape,
                                      bool nanPadding = false);

namespace rt {

inline constexpr std::size_t kTensorMapBytes = 128; // sizeof(CUtensorMap)
inline constexpr std::size_t kTensorMapAlign = 64;  // the parameter's alignment
inline constexpr std::size_t kMaxTensorMapRank = 5;

// A descriptor argument's hidden parameters, which follow the kernel's own
// parameters, for each descriptor argument in order (dsl Specializer::hostDescriptor):
// base (a pointer), shape (i32 each), the strides but the last (i64 each; the last is 1),
// padding (i32, 1 for "nan"). descriptorFields writes one 64-bit slot each
// (a 32-bit parameter reads its slot's low half), descriptorFieldCount(rank) of them.
inline constexpr std::size_t descriptorFieldCount(std::size_t rank) { return 2 * rank + 1; }
inline void descriptorFields(uint64_t base, const int64_t *shape, const int64_t *strides, std::size_t rank,
                             bool nanPadding, uint64_t *out) {
  *out++ = base;
  for (std::size_t d = 0; d < rank; ++d) *out++ = static_cast<uint64_t>(static_cast<uint32_t>(shape[d]));
  for (std::size_t d = 0; d + 1 < rank; ++d) *out++ = static_cast<uint64_t>(strides[d]);
  *out = nanPadding ? 1 : 0;
}

// CUtensorMapSwizzle's values (checked against cuda.h in TensorMap.cpp).
enum class TensorMapSwizzle : int { None = 0, Bytes32 = 1, Bytes64 = 2, Bytes128 = 3 };

// Exactly what cuTensorMapEncodeTiled is called with; enums hold cuda.h's values.
struct TensorMapArgs {
  int dataType = 0; // CUtensorMapDataType
  unsigned rank = 0;
  uint64_t address = 0;
  uint64_t globalDim[kMaxTensorMapRank] = {};         // elements, innermost first
  uint64_t globalStrides[kMaxTensorMapRank - 1] = {}; // bytes, of dimensions 1 .. rank-1
  uint32_t boxDim[kMaxTensorMapRank] = {};            // innermost first; boxDim[0] spans at most 128 bytes
  uint32_t elementStrides[kMaxTensorMapRank] = {};    // all 1
  int interleave = 0;                                 // CU_TENSOR_MAP_INTERLEAVE_NONE
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  int l2Promotion = 0; // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  int oobFill = 0;     // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements outside the tensor read as zero (1: NaN)
};

// The CUtensorMapDataType TMA copies `dtype` as (8-bit floats and signed
// 8/16-bit ints as unsigned ints of their width: TMA moves bits), or -1 when
// it cannot (i1).
int tensorMapDataType(ir::ScalarType dtype);

// tessera's encoding of a Triton-style descriptor, after checking the rules:
// equal ranks of 1 to 5; a dtype TMA copies; block dimensions powers of two
// of at most 256 whose innermost spans at least 16 bytes; dimensions from 1 to
// 2**32; the innermost stride 1 and the others positive multiples of 16 bytes
// below 2**40; a 16-byte-aligned base. The innermost box is the block's
// innermost dimension clamped to 128 bytes (a wider block takes several
// copies), and the swizzle is the box's innermost size in bytes (128, 64, 32;
// else none). Throws std::invalid_argument with the reason alone (callers add
// which argument it was).
// nanPadding: out-of-bounds elements read as NaN (Triton's padding="nan";
// CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA), float dtypes only.
TensorMapArgs tensorMapArgs(uint64_t base, ir::ScalarType dtype, const std::vector<int64_t> &shape,
                            const std::vector<int64_t> &strides, const std::vector<int64_t> &blockShape,
                            bool nanPadding = false);

// cuTensorMapEncodeTiled(args) into `out` (kTensorMapBytes bytes, any
// alignment) with `device`'s context current for the call (kCurrentDevice:
// the current one, else device 0's). No checks of its own: the driver's
// refusal is a DriverError "cuTensorMapEncodeTiled failed: CUDA_ERROR_...".
void encodeTensorMap(const TensorMapArgs &args, void *out, int device = kCurrentDevice);

} // namespace rt
} // namespace tessera
