// Layouts: how the elements of a block value are spread over the registers,
// lanes and warps of a CTA. The tiling pass (compiler/passes/LayoutAssignment)
// attaches one to every block value; codegen reads them.
//
// Blocked (as in Triton): along each dim d a thread holds sizePerThread[d]
// consecutive elements; threadsPerWarp[d] lanes and warpsPerCTA[d] warps tile
// the dim; order lists dims fastest-varying first (for lane/warp numbering).
// A shape larger than the tile repeats it (more registers per thread); a
// smaller one wraps around (elements replicated across threads).
//
// Slice(dim, parent): the layout of a value obtained by removing `dim` from a
// value in `parent` (a reduction result); expand_dims along `dim` gives back
// `parent`.
//
// Mma(version 2, warpsPerCTA): the accumulator of mma.sync m16n8k16 (tensor
// cores, compiler/passes/AccelerateDot.cpp): each warp holds a grid of 16x8
// tiles; in a tile, lane (g = lane/4, t = lane%4) holds rows 2g, 2g+1 (the
// instruction's rows g and g+8; codegen feeds A's rows permuted so that they
// land there) and columns 2t, 2t+1. Warps tile the block [wpc0*16, wpc1*8]
// at a time. Register-for-register it is
// #blocked<spt=[2,2], tpw=[8,4], wpc=warpsPerCTA, order=[1,0]>, which is how
// codegen's layout math treats it (docs/tensor-cores.md).
//
// DotOperand(opIdx, parent): operand opIdx (0 = A, 1 = B) of a dot whose
// result has the Mma layout `parent`. Only dot consumes such values; codegen
// keeps the registers of the converted value and loads the mma fragments
// through shared memory with ldmatrix.
//
// Shared(opIdx, vec, perPhase, maxPhase): a multi-buffered tile of a dot
// operand in shared memory, shape [stages, rows, cols] (the pipeline pass's
// local_alloc, compiler/passes/SoftwarePipeline.cpp). Rows are row-major
// runs of 16-byte chunks of `vec` elements; chunk c of row r is stored at
// chunk c ^ ((r / perPhase) % maxPhase), so the 8 rows one ldmatrix reads
// fall on 8 different bank groups. For operand A (opIdx 0) the rows of each
// 16-row group are stored in mma order (block row 2g + h at row 8h + g,
// see Mma above) so that those 8 rows are consecutive; wgmma tiles
// (blockCols != 0) keep A's rows in natural order. A transposed tile
// (operand B only, order=[0,1]) is stored the other way round, [cols][rows]
// with the block's dim 0 contiguous, as B arrives from a column-major matrix
// (K^T read through strides); ldmatrix then needs no .trans.
//
// Mma(version 3, warpsPerCTA = [numWarps, 1]): the accumulator of Hopper's
// wgmma.mma_async m64nNk16 (compiler/codegen/WgmmaDot.cpp). Each warpgroup
// (4 consecutive warps) computes 64-row slabs; warp w of the CTA holds rows
// 16w.. of every 16 * numWarps rows, in the instruction's own order: lane
// (g, t) holds rows g and g + 8 of the warp's 16, columns 2t, 2t+1. A is
// stored in natural row order (what a TMA copy writes). Register-for-register
// it is #blocked<spt=[2,2], tpw=[8,4], wpc=warpsPerCTA, order=[1,0],
// interleave=[1,0]>: the version-2 numbering of registers, with a thread's
// two rows 8 apart instead of adjacent.
//
// Mma(version 3, warpsPerCTA = [wm, wn], wn > 1; Triton's [4, 2] for a 64-row
// block on 8 warps): warps are numbered along M first (warp w is row warp
// w % wm, column warp w / wm), so that each warpgroup's 4 warps hold the 16-row
// groups of its slab; column warp c holds the 8-column tiles c, c + wn, ...
// (the version-2 numbering). Its B tile has columnGroups = wn: block column n
// is stored at ((n / 8) % wn) * (N / wn) + (n / (8 * wn)) * 8 + n % 8, so the
// columns of column warp c are the contiguous N / wn from c * N / wn, which its
// warpgroup's wgmmas read (compiler/codegen/WgmmaDot.cpp). Register-for-register
// it is the [numWarps, 1] form's blocked layout with these warps and
// warpOrder = [0, 1].
//
// Blocked with interleave[d] = 1: along dim d a thread's sizePerThread[d]
// elements are threadsPerWarp[d] apart (the lanes fill the gaps) instead of
// consecutive; only the wgmma accumulator has such a dim.
//
// Shared with blockCols != 0: the tile as wgmma reads it through a matrix
// descriptor. Each stored row is cut into lines of blockCols elements (32,
// 64 or 128 bytes, the swizzle width): line j of every row is stored in
// block j, [rows][blockCols]; blocks follow one another. Within a block the
// swizzle above is the hardware's (chunk ^= (row / perPhase) % maxPhase, on
// 1024-byte aligned atoms).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

struct Layout;
using LayoutRef = std::shared_ptr<const Layout>;

struct Layout {
  enum class Kind { Blocked, Slice, Mma, DotOperand, Shared };
  Kind kind = Kind::Blocked;
  // Blocked
  std::vector<unsigned> sizePerThread, threadsPerWarp, warpsPerCTA, order;
  std::vector<unsigned> interleave; // empty, or one 0/1 per dim (see above)
  std::vector<unsigned> warpOrder;  // empty: `order`; else the dims, fastest first, for warp ids only
  // Slice
  unsigned sliceDim = 0;
  LayoutRef parent; // also DotOperand's Mma parent
  // Mma (warpsPerCTA above) / DotOperand
  unsigned mmaVersion = 2;
  unsigned opIdx = 0; // also Shared's
  // Shared: the swizzle (elements per 16-byte chunk, rows per phase, phases)
  unsigned vec = 8, perPhase = 1, maxPhase = 1;
  bool transposed = false;
  unsigned blockCols = 0; // wgmma tiles: elements per line block (0: whole rows)
  unsigned columnGroups = 1; // wgmma B tiles: N split over this many warpgroups (see above)

  unsigned rank() const;
  // "#blocked<spt=[1,4], tpw=[4,8], wpc=[4,1], order=[1,0]>", "#slice<dim=1, #blocked<...>>",
  // "#mma<version=2, wpc=[2,2]>", "#dot_op<opIdx=0, #mma<...>>",
  // "#shared<opIdx=0, vec=8, perPhase=2, maxPhase=4>"
  std::string str() const;
  bool operator==(const Layout &o) const;
  bool isInterleaved() const; // some dim of a blocked layout is interleaved

  static LayoutRef blocked(std::vector<unsigned> spt, std::vector<unsigned> tpw,
                           std::vector<unsigned> wpc, std::vector<unsigned> order);
  static LayoutRef slice(unsigned dim, LayoutRef parent);
  static LayoutRef mma(unsigned version, std::vector<unsigned> wpc);
  static LayoutRef dotOperand(unsigned opIdx, LayoutRef parent);
  // The swizzled shared tile of mma operand opIdx with `rowLength` elements
  // of `elemBits` bits per stored row (a multiple of 128 bits): the block's
  // dim 1, or dim 0 when transposed.
  static LayoutRef sharedMmaOperand(unsigned opIdx, int64_t rowLength, unsigned elemBits, bool transposed = false);
  // The same tile as wgmma reads it (blockCols set): lines of
  // min(128, rowLength * elemBits / 8) bytes, which must be >= 32.
  static LayoutRef sharedWgmmaOperand(unsigned opIdx, int64_t rowLength, unsigned elemBits, bool transposed = false);
  // The tile an operand of a dot with Mma layout version `mmaVersion` is
  // read from: sharedWgmmaOperand for 3 (wgmma), else sharedMmaOperand.
  static LayoutRef sharedOperandTile(unsigned mmaVersion, unsigned opIdx, int64_t rowLength, unsigned elemBits,
                                     bool transposed = false, unsigned columnGroups = 1);
  // The blocked layout an Mma layout is register-for-register.
  static LayoutRef mmaAsBlocked(const Layout &mma);
};

inline bool sameLayout(const LayoutRef &a, const LayoutRef &b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

} // namespace tessera::ir
