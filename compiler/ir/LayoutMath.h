// Layout math: which element of a block value each (thread, register) of a
// CTA holds. Pure C++ (no LLVM) so the tiling pass, codegen and the unit
// tests share one definition; docs/codegen.md explains the formulas.
//
// A layout is resolved to its blocked "base" layout: a slice layout is its
// parent's base with the sliced dims marked. Every base dim d has
//   tile(d)     = spt(d) * tpw(d) * wpc(d)
//   numRegs(d)  = spt(d) * max(1, extent(d) / tile(d))     (1 for a sliced dim)
//   regOffset   = (r / spt) * tile + r % spt               (r: register index along d)
//   threadOffset= warpIdx(d) * tpw(d) * spt(d) + laneIdx(d) * spt(d)
// or, for an interleaved dim (the wgmma accumulator's rows: a thread's spt
// elements tpw apart, compiler/ir/Layout.h),
//   regOffset   = (r / spt) * tile + (r % spt) * tpw
//   threadOffset= warpIdx(d) * tpw(d) * spt(d) + laneIdx(d)
//   coordinate  = (regOffset + threadOffset) mod extent(d)
// A sliced dim behaves like a dim of extent 1 with one register. All extents
// and layout parameters are powers of two, so "mod" wraps cleanly and every
// element has exactly one owner: the copy whose unwrapped coordinate
// (regOffset + threadOffset) is already < extent along every dim.
#pragma once

#include "compiler/ir/Layout.h"
#include "compiler/ir/Types.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::ir {

constexpr unsigned kWarpSize = 32;

inline bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
unsigned log2Exact(int64_t v); // v must be a power of two

// One dim of the base layout, as seen by one value.
struct DimMap {
  unsigned sizePerThread = 1, threadsPerWarp = 1, warpsPerCTA = 1;
  unsigned laneStride = 1; // lane id = sum over dims of laneIdx(d) * laneStride(d)
  unsigned warpStride = 1; // likewise for the warp id
  int64_t extent = 1;      // the value's size along this dim (1 when sliced)
  int64_t tile = 1;        // elements one pass of the CTA covers
  unsigned numRegs = 1;    // registers per thread along this dim
  bool sliced = false;     // removed by a slice layout: not a dim of the value
  bool interleaved = false; // a thread's elements are threadsPerWarp apart

  bool wraps() const { return extent < tile; } // some threads hold copies
  // A thread's consecutive registers hold consecutive elements (vector access).
  unsigned contiguousPerThread() const { return interleaved ? 1 : sizePerThread; }
  unsigned laneMultiplier() const { return interleaved ? 1 : sizePerThread; }
  int64_t regOffset(unsigned r) const {
    return static_cast<int64_t>(r / sizePerThread) * tile + (r % sizePerThread) * (interleaved ? threadsPerWarp : 1);
  }
  unsigned laneIndex(unsigned lane) const { return (lane / laneStride) % threadsPerWarp; }
  unsigned warpIndex(unsigned warp) const { return (warp / warpStride) % warpsPerCTA; }
  int64_t threadOffset(unsigned tid) const {
    return static_cast<int64_t>(warpIndex(tid / kWarpSize)) * threadsPerWarp * sizePerThread +
           static_cast<int64_t>(laneIndex(tid % kWarpSize)) * laneMultiplier();
  }
  // Lanes (resp. warps) along this dim that hold different data; the rest
  // hold copies (wrap-around).
  unsigned distinctLanes() const;
  unsigned distinctWarps() const;
};

class DistributedLayout {
public:
  // Throws std::invalid_argument when the layout does not fit the shape
  // (rank mismatch, non power-of-two extents or parameters, lanes != 32).
  DistributedLayout(const ir::Layout &layout, const std::vector<int64_t> &shape);

  // The same layout with value dim `axis` removed (a reduction's result).
  DistributedLayout slicedAlong(unsigned axis) const;

  unsigned baseRank() const { return static_cast<unsigned>(dims_.size()); }
  unsigned rank() const { return static_cast<unsigned>(valueDims_.size()); }
  const DimMap &dim(unsigned baseDim) const { return dims_[baseDim]; }
  // valueDims()[i]: the base dim that value dim i is.
  const std::vector<unsigned> &valueDims() const { return valueDims_; }
  // Base dims, fastest-varying first (for lanes, warps and registers).
  const std::vector<unsigned> &order() const { return order_; }
  const ir::Layout &base() const { return base_; } // blocked
  unsigned numWarps() const;
  unsigned numRegs() const { return numRegs_; }

  // Register r <-> per-base-dim register indices; order()[0] varies fastest.
  std::vector<unsigned> regIndex(unsigned reg) const;
  unsigned regNumber(const std::vector<unsigned> &index) const;

  // True when register `reg` is a copy in every thread (its offset along
  // some dim is >= the extent): it never needs storing or reducing.
  bool isDuplicateRegister(unsigned reg) const;

  // CPU model of what codegen emits, for tests and assertions.
  std::vector<int64_t> coordinates(unsigned tid, unsigned reg) const; // value dims
  bool isOwner(unsigned tid, unsigned reg) const;

private:
  DistributedLayout() = default;
  ir::Layout base_;
  std::vector<DimMap> dims_;
  std::vector<unsigned> valueDims_;
  std::vector<unsigned> order_;
  unsigned numRegs_ = 1;
  void computeRegisterCounts();
};

// FlashAttention-2's register reuse (MmaDot.cpp): `layout` is an
// #mma<version=2, wpc=[wm, 1]> layout of a 16-bit [M, K] value (the cast
// result of a dot with those warps). Returns, for this warp's m-tile `mi`
// and the k-step `ks` (16 columns) of an mma.sync m16n8k16 that takes the
// value as operand A, the registers holding the A fragment a0..a3, each as
// {low half, high half}: the C fragments of n-tiles 2ks and 2ks+1, with A's
// rows fed in the Mma layout's order (the instruction's row g + 8h is block
// row 2g + h of the 16-row tile, as the shared-memory path stores them).
std::array<std::array<unsigned, 2>, 4> mmaAFragmentRegisters(const DistributedLayout &layout, int64_t mi,
                                                             int64_t ks);

// The k extent of one mma.sync for inputs `in` accumulating into `out`
// (16 for f16/bf16 -> f32 and f16 -> f16, 8 for tf32, 32 for i8 -> i32), or 0 when no
// tensor-core instruction fits. input_precision "ieee"/"tf32x3" keep f32
// dots exact (FMA lowering). Accelerate-dot picks dots by it; codegen
// issues that instruction.
int64_t mmaKStep(ScalarType in, ScalarType out, const std::string &inputPrecision);

// The blocked layout the tiling pass gives a shape (see docs/codegen.md):
// up to 4 consecutive elements per thread along the last dim while every
// thread still gets distinct elements, then lanes and warps from the last
// dim outwards; leftover lanes/warps go to the first dim (they wrap).
ir::LayoutRef defaultBlockedLayout(const std::vector<int64_t> &shape, unsigned numWarps);

// A blocked layout with the given elements per thread and dim order (fastest
// first): lanes, then warps, go to dims in `order`, each dim taking at most
// extent / spt threads; what is left goes to the slowest dim (it wraps).
ir::LayoutRef blockedLayout(const std::vector<int64_t> &shape, std::vector<unsigned> spt,
                            std::vector<unsigned> order, unsigned numWarps);

// For a value whose elements are equal over runs of constancy[d] elements along each value
// dim d (runs starting at multiples of it; powers of two, from the axis analysis), the first
// register each register can take its value from in every thread (itself when none): along
// a base dim, the run of regOffset(r) + threadOffset is the same for every thread when the run
// is a multiple of the tile (it is regOffset(r) / run) or divides a thread's consecutive
// elements ((r / spt, (r % spt) / run)); other dims, and dims that wrap, share nothing.
std::vector<unsigned> registersSharingRuns(const DistributedLayout &layout, const std::vector<int64_t> &constancy);

// Row-major linear index of a coordinate in a shape.
int64_t linearIndex(const std::vector<int64_t> &coords, const std::vector<int64_t> &shape);

// The largest n (a power of two, at most maxElems) such that registers
// r .. r+n-1, r a multiple of n, hold consecutive elements of the value's
// last dim, starting at a multiple of n: one vector access. 1 when a
// thread's consecutive registers run along another dim.
unsigned lastDimVectorWidth(const DistributedLayout &layout, unsigned maxElems);

// Row-major strides of `shape` whose rows (the last dim) are `rowPad`
// elements longer than the shape says.
std::vector<int64_t> paddedStrides(const std::vector<int64_t> &shape, int64_t rowPad);

// Shared-memory wavefronts warp 0 needs to access every register of
// `layout` at the row-major `strides` (elements of elemBytes), `vec`
// registers per access; registers that are copies in every thread are
// skipped when `skipDuplicates` (stores write one copy).
int64_t sharedWavefronts(const DistributedLayout &layout, const std::vector<int64_t> &strides,
                         unsigned elemBytes, unsigned vec, bool skipDuplicates);

// The row padding (elements) of a layout conversion's shared scratch: of
// the pads that keep both sides' vectors aligned, the one whose stores
// (`from`, storeVec per access) and loads (`to`, loadVec) take warp 0 the
// fewest wavefronts; the smallest such pad. 0 for values of rank < 2.
int64_t conversionRowPadding(const DistributedLayout &from, const DistributedLayout &to,
                             const std::vector<int64_t> &shape, unsigned elemBytes, unsigned storeVec,
                             unsigned loadVec);

} // namespace tessera::ir
