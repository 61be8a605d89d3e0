// The Mma and DotOperand layouts (docs/tensor-cores.md): printing, equality,
// and the register mapping of the mma.sync m16n8k16 accumulator fragments.
#include "compiler/codegen/LayoutMath.h"
#include "compiler/ir/Layout.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

using namespace tessera;
using namespace tessera::ir;
using codegen::DistributedLayout;

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
