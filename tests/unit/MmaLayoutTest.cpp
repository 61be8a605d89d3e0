// The Mma and DotOperand layouts (docs/tensor-cores.md): printing, equality,
// and the register mapping of the mma.sync m16n8k16 accumulator fragments.
#include "compiler/ir/LayoutMath.h"
#include "compiler/ir/Layout.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

using namespace tessera;
using namespace tessera::ir;
using ir::DistributedLayout;
using ir::blockedLayout;
using ir::conversionRowPadding;
using ir::lastDimVectorWidth;
using ir::paddedStrides;
using ir::sharedWavefronts;

TEST(MmaLayout, PrintsAndCompares) {
  LayoutRef mma = Layout::mma(2, {2, 2});
  EXPECT_EQ(mma->str(), "#mma<version=2, wpc=[2,2]>");
  EXPECT_EQ(Layout::dotOperand(1, mma)->str(), "#dot_op<opIdx=1, #mma<version=2, wpc=[2,2]>>");
  EXPECT_EQ(mma->rank(), 2u);
  EXPECT_EQ(Layout::dotOperand(0, mma)->rank(), 2u);
  EXPECT_TRUE(sameLayout(mma, Layout::mma(2, {2, 2})));
  EXPECT_FALSE(sameLayout(mma, Layout::mma(2, {4, 1})));
  EXPECT_FALSE(sameLayout(Layout::dotOperand(0, mma), Layout::dotOperand(1, mma)));
}

// Lane (g = lane/4, t = lane%4) of warp (wm_i, wn_i) holds, in mma tile
// (mi, ni), rows 2g and 2g+1 (the instruction's rows g and g+8) and columns
// 2t, 2t+1; every element exactly once.
TEST(MmaLayout, AccumulatorFragments) {
  const unsigned wm = 2, wn = 4;
  const int64_t M = 64, N = 64;
  DistributedLayout d(*Layout::mma(2, {wm, wn}), {M, N});
  ASSERT_EQ(d.numRegs(), static_cast<unsigned>(M * N / (32 * wm * wn)));
  std::map<std::pair<int64_t, int64_t>, int> seen;
  for (unsigned tid = 0; tid < 32 * wm * wn; ++tid) {
    unsigned lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
    unsigned warpM = warp / wn, warpN = warp % wn;
    for (unsigned r = 0; r < d.numRegs(); ++r) {
      std::vector<unsigned> idx = d.regIndex(r);
      unsigned mi = idx[0] / 2, h = idx[0] % 2, ni = idx[1] / 2, j = idx[1] % 2;
      std::vector<int64_t> c = d.coordinates(tid, r);
      EXPECT_EQ(c[0], int64_t(mi) * 16 * wm + warpM * 16 + 2 * g + h);
      EXPECT_EQ(c[1], int64_t(ni) * 8 * wn + warpN * 8 + 2 * t + j);
      EXPECT_TRUE(d.isOwner(tid, r));
      ++seen[{c[0], c[1]}];
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(M * N));
  for (auto &[k, n] : seen) EXPECT_EQ(n, 1);
}

TEST(MmaLayout, DotOperandHasNoRegisterMapping) {
  EXPECT_THROW(DistributedLayout(*Layout::dotOperand(0, Layout::mma(2, {1, 1})), {16, 16}), std::invalid_argument);
}

// FlashAttention-2's register reuse (MmaDot.cpp): the registers
// mmaAFragmentRegisters picks from an #mma<wpc=[wm, 1]> value hold, in every
// lane, exactly the elements of the mma.sync m16n8k16 A fragment (PTX ISA:
// element i of a0..a7, two per register, sits at row g for i % 4 < 2 and
// g + 8 otherwise, column 2t + i % 2, + 8 for i >= 4) with the instruction's
// rows fed in the Mma layout's order: instruction row r of the m-tile is
// block row 2r (r < 8) or 2(r - 8) + 1, as the ldmatrix path stores A.
TEST(MmaLayout, AccumulatorRegistersAreTheNextDotsAFragments) {
  for (unsigned wm : {1u, 4u, 8u}) {
    const int64_t M = 16 * wm * 2, K = 64;
    DistributedLayout d(*Layout::mma(2, {wm, 1}), {M, K});
    for (unsigned tid = 0; tid < 32 * wm; ++tid) {
      const unsigned lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
      for (int64_t mi = 0; mi < M / (16 * wm); ++mi)
        for (int64_t ks = 0; ks < K / 16; ++ks) {
          auto regs = ir::mmaAFragmentRegisters(d, mi, ks);
          for (unsigned r = 0; r < 4; ++r)
            for (unsigned e = 0; e < 2; ++e) {
              const unsigned i = 2 * r + e;
              const unsigned instrRow = g + ((i % 4) < 2 ? 0 : 8);
              const unsigned blockRow = instrRow < 8 ? 2 * instrRow : 2 * (instrRow - 8) + 1;
              const int64_t col = 16 * ks + 2 * t + i % 2 + (i >= 4 ? 8 : 0);
              std::vector<int64_t> c = d.coordinates(tid, regs[r][e]);
              EXPECT_EQ(c[0], (mi * wm + warp) * 16 + blockRow) << "wm " << wm << " tid " << tid << " a" << i;
              EXPECT_EQ(c[1], col) << "wm " << wm << " tid " << tid << " a" << i;
            }
        }
    }
  }
}

// Row statistics of an accumulator (a reduction along dim 1) live in
// #slice<dim=1, #mma>: lane (g, t) of warp w holds rows 2g, 2g+1 of its
// m-tiles, the same in the 4 lanes of a group (t) -- so expand_dims gives
// back the #mma registers without moving data.
TEST(MmaLayout, SliceOfMmaHoldsTheRowsOfTheAccumulator) {
  const unsigned wm = 4;
  const int64_t M = 128, N = 64;
  LayoutRef mma = Layout::mma(2, {wm, 1});
  DistributedLayout full(*mma, {M, N});
  DistributedLayout rows(*Layout::slice(1, mma), {M});
  ASSERT_EQ(rows.numRegs(), static_cast<unsigned>(M / (8 * wm)));
  for (unsigned tid = 0; tid < 32 * wm; ++tid) {
    const unsigned g = (tid % 32) / 4, warp = tid / 32;
    for (unsigned r = 0; r < rows.numRegs(); ++r) {
      const unsigned mi = r / 2, h = r % 2;
      EXPECT_EQ(rows.coordinates(tid, r)[0], int64_t(mi) * 16 * wm + warp * 16 + 2 * g + h);
      // the same row as register (r, any column) of the accumulator
      EXPECT_EQ(rows.coordinates(tid, r)[0], full.coordinates(tid, full.regNumber({r, 3}))[0]);
    }
  }
  EXPECT_EQ(full.slicedAlong(1).base(), rows.base());
}

// The wgmma accumulator (#mma<version=3>): the instruction's D fragment in
// its own row order. Lane (g, t) of warp w holds rows 16w + g and 16w + g + 8
// of every 16 * warps rows (register index 2mi + h along dim 0: h = 0, 1),
// columns 2t, 2t+1 of every 8; every element exactly once; its printed base
// is the interleaved blocked layout; the register numbering (and so the next
// dot's A fragment registers, the instruction's rows g and g + 8) is version 2's.
TEST(MmaLayout, WgmmaAccumulatorKeepsTheInstructionsRowOrder) {
  for (unsigned warps : {4u, 8u}) {
    const int64_t M = 128, N = 64;
    DistributedLayout v3(*Layout::mma(3, {warps, 1}), {M, N});
    DistributedLayout v2(*Layout::mma(2, {warps, 1}), {M, N});
    EXPECT_EQ(v3.base().str(), "#blocked<spt=[2,2], tpw=[8,4], wpc=[" + std::to_string(warps) +
                                   ",1], order=[1,0], interleave=[1,0]>");
    EXPECT_FALSE(v3.base() == v2.base());
    ASSERT_EQ(v3.numRegs(), v2.numRegs());
    std::map<std::pair<int64_t, int64_t>, int> seen;
    for (unsigned tid = 0; tid < 32 * warps; ++tid) {
      const unsigned lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
      for (unsigned r = 0; r < v3.numRegs(); ++r) {
        std::vector<unsigned> idx = v3.regIndex(r);
        const unsigned mi = idx[0] / 2, h = idx[0] % 2, ni = idx[1] / 2, j = idx[1] % 2;
        std::vector<int64_t> c = v3.coordinates(tid, r);
        EXPECT_EQ(c[0], int64_t(mi) * 16 * warps + warp * 16 + g + 8 * h);
        EXPECT_EQ(c[1], int64_t(ni) * 8 + 2 * t + j);
        EXPECT_TRUE(v3.isOwner(tid, r));
        ++seen[{c[0], c[1]}];
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(M * N));
    for (auto &[k, n] : seen) EXPECT_EQ(n, 1);
    EXPECT_EQ(v3.dim(0).distinctLanes(), 8u);
    EXPECT_EQ(v3.dim(0).contiguousPerThread(), 1u);
    EXPECT_EQ(v3.dim(1).contiguousPerThread(), 2u);
  }
}

// wgmma warps split over N as well (#mma<version=3, wpc=[4, 2]>, a 64-row block on 8
// warps): warps along M first, so warps 4g .. 4g+3 are warpgroup g, holding rows 16 (w % 4)
// + g and + 8 of the slab; warpgroup c holds the 8-column tiles c, c + 2, ... (the version-2
// numbering), which its wgmmas read as the contiguous columns c * N / 2 .. of B's tile
// (columnGroups = 2, codegen's sharedElementOffset).
TEST(MmaLayout, WgmmaWarpgroupsSplitNWithWarpsAlongMFirst) {
  const int64_t M = 64, N = 128;
  LayoutRef mma = Layout::mma(3, {4, 2});
  DistributedLayout d(*mma, {M, N});
  EXPECT_EQ(d.base().str(), "#blocked<spt=[2,2], tpw=[8,4], wpc=[4,2], order=[1,0], interleave=[1,0], warpOrder=[0,1]>");
  EXPECT_FALSE(sameLayout(Layout::mmaAsBlocked(*mma), Layout::mmaAsBlocked(*Layout::mma(2, {4, 2}))));
  ASSERT_EQ(d.numRegs(), static_cast<unsigned>(M * N / 256));
  std::map<std::pair<int64_t, int64_t>, int> seen;
  for (unsigned tid = 0; tid < 256; ++tid) {
    const unsigned lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
    for (unsigned r = 0; r < d.numRegs(); ++r) {
      std::vector<unsigned> idx = d.regIndex(r);
      const unsigned h = idx[0] % 2, j = idx[1] / 2, c = idx[1] % 2;
      std::vector<int64_t> at = d.coordinates(tid, r);
      EXPECT_EQ(at[0], int64_t(warp % 4) * 16 + g + 8 * h);
      EXPECT_EQ(at[1], int64_t(j) * 16 + (warp / 4) * 8 + 2 * t + c);
      // its warpgroup's wgmma writes it at instruction column 8j + 2t + c of its N / 2
      const int64_t stored = ((at[1] / 8) % 2) * (N / 2) + (at[1] / 16) * 8 + at[1] % 8;
      EXPECT_EQ(stored, int64_t(warp / 4) * (N / 2) + 8 * j + 2 * t + c);
      ++seen[{at[0], at[1]}];
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(M * N));
  for (auto &[k, n] : seen) EXPECT_EQ(n, 1);
  EXPECT_EQ(Layout::sharedOperandTile(3, 1, 64, 16, true, 2)->str(),
            "#shared<opIdx=1, vec=8, perPhase=1, maxPhase=8, order=[0,1], blockCols=64, columnGroups=2>");
  EXPECT_EQ(Layout::sharedOperandTile(3, 0, 64, 16, false, 2)->columnGroups, 1u); // A is not split
}

// The epilogue's convert_layout (wgmma accumulator -> coalesced blocked
// layout) goes through shared memory: 2-element stores along rows g and
// g+8 of 8 lanes hit one bank unless the rows are padded; 16 bytes of
// padding make every store and every 16-byte load one wavefront per phase.
TEST(MmaLayout, AccumulatorConversionPadsSharedRowsAgainstBankConflicts) {
  const std::vector<int64_t> shape = {128, 256};
  DistributedLayout acc(*Layout::mma(3, {8, 1}), shape);
  DistributedLayout rowsOf8(*blockedLayout(shape, {1, 8}, {1, 0}, 8), shape);
  const unsigned bf16 = 2;
  const unsigned storeVec = lastDimVectorWidth(acc, 8), loadVec = lastDimVectorWidth(rowsOf8, 8);
  EXPECT_EQ(storeVec, 2u);
  EXPECT_EQ(loadVec, 8u);
  EXPECT_EQ(lastDimVectorWidth(acc, 1), 1u);
  const int64_t pad = conversionRowPadding(acc, rowsOf8, shape, bf16, storeVec, loadVec);
  EXPECT_EQ(pad, 8);
  const int64_t stores = acc.numRegs() / storeVec, loads = rowsOf8.numRegs() / loadVec;
  EXPECT_EQ(sharedWavefronts(acc, paddedStrides(shape, pad), bf16, storeVec, true), stores);
  EXPECT_EQ(sharedWavefronts(acc, paddedStrides(shape, 0), bf16, storeVec, true), 8 * stores);
  EXPECT_EQ(sharedWavefronts(rowsOf8, paddedStrides(shape, pad), bf16, loadVec, false), 4 * loads);
  EXPECT_EQ(paddedStrides(shape, pad), (std::vector<int64_t>{264, 1}));
  EXPECT_EQ(conversionRowPadding(acc, rowsOf8, {256}, bf16, 1, 1), 0);
}

// registersSharingRuns (codegen evaluates one compare per run of equal elements): in every
// thread, registers mapped to one another hold elements of the same run, for the wgmma and
// mma accumulators, their row/column slices and blocked layouts; and it does share where the
// attention key mask needs it (runs of 16 columns of a 64-column #mma value: 4 compares of 16).
TEST(MmaLayout, RegistersSharingRunsStayInOneRun) {
  struct Case {
    LayoutRef layout;
    std::vector<int64_t> shape, constancy;
    int sliceAxis; // -1: none
  };
  const std::vector<Case> cases = {
      {Layout::mma(3, {8, 1}), {128, 64}, {1, 16}, -1},
      {Layout::mma(3, {8, 1}), {128, 64}, {1, 16}, 0},
      {Layout::mma(3, {4, 1}), {64, 64}, {16, 64}, -1},
      {Layout::mma(3, {4, 1}), {64, 64}, {8, 2}, -1},
      {Layout::mma(2, {4, 2}), {64, 32}, {16, 4}, -1},
      {Layout::mma(2, {2, 2}), {64, 64}, {32, 8}, 1},
      {blockedLayout({64, 64}, {1, 4}, {1, 0}, 4), {64, 64}, {2, 16}, -1},
      {blockedLayout({64, 64}, {1, 4}, {1, 0}, 4), {64, 64}, {1, 2}, -1},
      {blockedLayout({1024}, {4}, {0}, 4), {1024}, {512}, -1},
      {blockedLayout({16, 16}, {1, 1}, {1, 0}, 4), {16, 16}, {16, 16}, -1}, // wraps
  };
  for (const Case &c : cases) {
    DistributedLayout full(*c.layout, c.shape);
    DistributedLayout d = c.sliceAxis < 0 ? full : full.slicedAlong(static_cast<unsigned>(c.sliceAxis));
    std::vector<int64_t> shape = c.shape, constancy = c.constancy;
    if (c.sliceAxis >= 0) {
      shape.erase(shape.begin() + c.sliceAxis);
      constancy.erase(constancy.begin() + c.sliceAxis);
    }
    std::vector<unsigned> first = ir::registersSharingRuns(d, constancy);
    ASSERT_EQ(first.size(), d.numRegs());
    for (unsigned tid = 0; tid < 32 * d.numWarps(); ++tid)
      for (unsigned r = 0; r < d.numRegs(); ++r) {
        ASSERT_LE(first[r], r);
        std::vector<int64_t> a = d.coordinates(tid, r), b = d.coordinates(tid, first[r]);
        for (size_t k = 0; k < a.size(); ++k)
          ASSERT_EQ(a[k] / constancy[k], b[k] / constancy[k])
              << c.layout->str() << " tid " << tid << " reg " << r << " dim " << k;
      }
  }
  DistributedLayout columns = DistributedLayout(*Layout::mma(3, {8, 1}), {128, 64}).slicedAlong(0);
  std::vector<unsigned> first = ir::registersSharingRuns(columns, {16});
  std::set<unsigned> distinct(first.begin(), first.end());
  EXPECT_EQ(columns.numRegs(), 16u);
  EXPECT_EQ(distinct.size(), 4u);
}
