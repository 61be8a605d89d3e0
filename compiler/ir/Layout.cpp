#include "compiler/ir/Layout.h"

#include <algorithm>

namespace tessera::ir {

static std::string list(const std::vector<unsigned> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

unsigned Layout::rank() const {
  if (kind == Kind::Blocked)
    return static_cast<unsigned>(sizePerThread.size());
  if (kind == Kind::Mma)
    return static_cast<unsigned>(warpsPerCTA.size());
  if (kind == Kind::DotOperand)
    return parent->rank();
  if (kind == Kind::Shared)
    return 3;
  return parent->rank() - 1;
}

std::string Layout::str() const {
  if (kind == Kind::Slice)
    return "#slice<dim=" + std::to_string(sliceDim) + ", " + parent->str() + ">";
  if (kind == Kind::Mma)
    return "#mma<version=" + std::to_string(mmaVersion) + ", wpc=" + list(warpsPerCTA) + ">";
  if (kind == Kind::DotOperand)
    return "#dot_op<opIdx=" + std::to_string(opIdx) + ", " + parent->str() + ">";
  if (kind == Kind::Shared)
    return "#shared<opIdx=" + std::to_string(opIdx) + ", vec=" + std::to_string(vec) +
           ", perPhase=" + std::to_string(perPhase) + ", maxPhase=" + std::to_string(maxPhase) +
           (transposed ? ", order=[0,1]" : "") +
           (blockCols ? ", blockCols=" + std::to_string(blockCols) : "") +
           (columnGroups > 1 ? ", columnGroups=" + std::to_string(columnGroups) : "") + ">";
  return "#blocked<spt=" + list(sizePerThread) + ", tpw=" + list(threadsPerWarp) +
         ", wpc=" + list(warpsPerCTA) + ", order=" + list(order) +
         (isInterleaved() ? ", interleave=" + list(interleave) : "") +
         (!warpOrder.empty() && warpOrder != order ? ", warpOrder=" + list(warpOrder) : "") + ">";
}

bool Layout::operator==(const Layout &o) const {
  if (kind != o.kind)
    return false;
  if (kind == Kind::Slice)
    return sliceDim == o.sliceDim && sameLayout(parent, o.parent);
  if (kind == Kind::Mma)
    return mmaVersion == o.mmaVersion && warpsPerCTA == o.warpsPerCTA;
  if (kind == Kind::DotOperand)
    return opIdx == o.opIdx && sameLayout(parent, o.parent);
  if (kind == Kind::Shared)
    return opIdx == o.opIdx && vec == o.vec && perPhase == o.perPhase && maxPhase == o.maxPhase &&
           transposed == o.transposed && blockCols == o.blockCols && columnGroups == o.columnGroups;
  return sizePerThread == o.sizePerThread && threadsPerWarp == o.threadsPerWarp &&
         warpsPerCTA == o.warpsPerCTA && order == o.order && isInterleaved() == o.isInterleaved() &&
         (!isInterleaved() || interleave == o.interleave) &&
         (warpOrder.empty() ? order : warpOrder) == (o.warpOrder.empty() ? o.order : o.warpOrder);
}

bool Layout::isInterleaved() const {
  return std::any_of(interleave.begin(), interleave.end(), [](unsigned i) { return i != 0; });
}

LayoutRef Layout::blocked(std::vector<unsigned> spt, std::vector<unsigned> tpw,
                          std::vector<unsigned> wpc, std::vector<unsigned> order) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::Blocked;
  l->sizePerThread = std::move(spt);
  l->threadsPerWarp = std::move(tpw);
  l->warpsPerCTA = std::move(wpc);
  l->order = std::move(order);
  return l;
}

LayoutRef Layout::slice(unsigned dim, LayoutRef parent) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::Slice;
  l->sliceDim = dim;
  l->parent = std::move(parent);
  return l;
}

LayoutRef Layout::mma(unsigned version, std::vector<unsigned> wpc) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::Mma;
  l->mmaVersion = version;
  l->warpsPerCTA = std::move(wpc);
  return l;
}

LayoutRef Layout::dotOperand(unsigned opIdx, LayoutRef parent) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::DotOperand;
  l->opIdx = opIdx;
  l->parent = std::move(parent);
  return l;
}

LayoutRef Layout::sharedMmaOperand(unsigned opIdx, int64_t rowLength, unsigned elemBits, bool transposed) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::Shared;
  l->opIdx = opIdx;
  l->transposed = transposed;
  l->vec = 128 / elemBits;
  const int64_t cols = rowLength;
  // A 128-byte line holds 8 chunks: rows shorter than that share a line, so
  // the phase advances every 8 / chunksPerRow rows.
  const int64_t chunksPerRow = std::max<int64_t>(1, cols / l->vec);
  l->maxPhase = static_cast<unsigned>(std::min<int64_t>(chunksPerRow, 8));
  l->perPhase = static_cast<unsigned>(std::max<int64_t>(1, 8 / chunksPerRow));
  return l;
}

LayoutRef Layout::sharedWgmmaOperand(unsigned opIdx, int64_t rowLength, unsigned elemBits, bool transposed) {
  auto l = std::make_shared<Layout>();
  l->kind = Kind::Shared;
  l->opIdx = opIdx;
  l->transposed = transposed;
  l->vec = 128 / elemBits;
  const int64_t lineBytes = std::min<int64_t>(128, rowLength * elemBits / 8);
  l->maxPhase = static_cast<unsigned>(lineBytes / 16);
  l->perPhase = static_cast<unsigned>(128 / lineBytes);
  l->blockCols = static_cast<unsigned>(lineBytes * 8 / elemBits);
  return l;
}

LayoutRef Layout::sharedOperandTile(unsigned mmaVersion, unsigned opIdx, int64_t rowLength, unsigned elemBits,
                                    bool transposed, unsigned columnGroups) {
  if (mmaVersion != 3) return sharedMmaOperand(opIdx, rowLength, elemBits, transposed);
  LayoutRef l = sharedWgmmaOperand(opIdx, rowLength, elemBits, transposed);
  if (opIdx == 1 && columnGroups > 1) std::const_pointer_cast<Layout>(l)->columnGroups = columnGroups;
  return l;
}

LayoutRef Layout::mmaAsBlocked(const Layout &mma) {
  LayoutRef l = blocked({2, 2}, {8, 4}, mma.warpsPerCTA, {1, 0});
  if (mma.mmaVersion == 3) std::const_pointer_cast<Layout>(l)->interleave = {1, 0};
  if (mma.mmaVersion == 3 && mma.warpsPerCTA.size() == 2 && mma.warpsPerCTA[1] > 1)
    std::const_pointer_cast<Layout>(l)->warpOrder = {0, 1}; // warpgroups along M (Layout.h)
  return l;
}

} // namespace tessera::ir
