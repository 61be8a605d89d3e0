#include "compiler/ir/ShapeOpLayouts.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace tessera::ir {

bool isRegisterShapeOp(OpCode code) {
  return code == OpCode::Reshape || code == OpCode::Trans || code == OpCode::Split || code == OpCode::Join;
}

namespace {

// Result k's element at `c` is element (operand, row-major index) of the operands.
std::pair<unsigned, int64_t> sourceOf(const Operation &op, unsigned k, std::vector<int64_t> c) {
  const std::vector<int64_t> &srcShape = op.operand(0)->type.shape;
  switch (op.code) {
  case OpCode::Reshape: case OpCode::ConvertLayout: // the row-major index is kept
    return {0, linearIndex(c, op.result(k)->type.shape)};
  case OpCode::Trans: { // result dim i is operand dim order[i]
    const std::vector<int64_t> &order = op.arrayAttr("order");
    std::vector<int64_t> src(c.size());
    for (size_t i = 0; i < order.size(); ++i) src[order[i]] = c[i];
    return {0, linearIndex(src, srcShape)};
  }
  case OpCode::Split: // result k is [..., k]
    c.push_back(k);
    return {0, linearIndex(c, srcShape)};
  case OpCode::Join: { // [..., j] is operand j's
    unsigned j = static_cast<unsigned>(c.back());
    c.pop_back();
    return {j, linearIndex(c, srcShape)};
  }
  default:
    throw std::logic_error("not a register shape op");
  }
}

// Blocked parameters being assembled for one dim.
struct DimParams {
  unsigned spt = 1, tpw = 1, wpc = 1, interleave = 0;
  int laneStart = -1, warpStart = -1; // lowest lane / warp id bit the dim takes
};

std::vector<unsigned> dropLast(std::vector<unsigned> v) {
  if (!v.empty()) v.pop_back();
  return v;
}

// The blocked form of a layout the tiling pass may hand on (blocked, or an
// mma accumulator); nullptr for slices and operand layouts.
LayoutRef asBlocked(const LayoutRef &l) {
  if (!l) return nullptr;
  if (l->kind == Layout::Kind::Blocked) return l;
  if (l->kind == Layout::Kind::Mma && (l->mmaVersion == 2 || l->mmaVersion == 3) && l->warpsPerCTA.size() == 2)
    return Layout::mmaAsBlocked(*l);
  return nullptr;
}

LayoutRef makeBlocked(std::vector<unsigned> spt, std::vector<unsigned> tpw, std::vector<unsigned> wpc,
                      std::vector<unsigned> order, std::vector<unsigned> interleave) {
  LayoutRef l = Layout::blocked(std::move(spt), std::move(tpw), std::move(wpc), std::move(order));
  if (std::any_of(interleave.begin(), interleave.end(), [](unsigned i) { return i != 0; }))
    std::const_pointer_cast<Layout>(l)->interleave = std::move(interleave);
  // The wgmma accumulator keeps its name, so the passes that look for it find it.
  if (l->sizePerThread.size() == 2 && l->warpsPerCTA[1] == 1) {
    LayoutRef mma = Layout::mma(3, l->warpsPerCTA);
    if (*Layout::mmaAsBlocked(*mma) == *l) return mma;
  }
  return l;
}

std::vector<unsigned> interleaveOf(const Layout &l) {
  std::vector<unsigned> v = l.interleave;
  v.resize(l.sizePerThread.size(), 0);
  return v;
}

LayoutRef transLayout(const Layout &l, const std::vector<int64_t> &order) {
  const size_t n = order.size();
  std::vector<unsigned> spt(n), tpw(n), wpc(n), inter(n), inverse(n), newOrder;
  const std::vector<unsigned> oldInter = interleaveOf(l);
  for (size_t i = 0; i < n; ++i) {
    const size_t d = static_cast<size_t>(order[i]);
    spt[i] = l.sizePerThread[d];
    tpw[i] = l.threadsPerWarp[d];
    wpc[i] = l.warpsPerCTA[d];
    inter[i] = oldInter[d];
    inverse[d] = static_cast<unsigned>(i);
  }
  for (unsigned d : l.order) newOrder.push_back(inverse[d]);
  return makeBlocked(spt, tpw, wpc, newOrder, inter);
}

// The last dim (2 elements) must be in one thread's registers.
LayoutRef splitLayout(const Layout &l) {
  const unsigned last = static_cast<unsigned>(l.sizePerThread.size() - 1);
  if (l.threadsPerWarp[last] != 1 || l.warpsPerCTA[last] != 1) return nullptr;
  std::vector<unsigned> order;
  for (unsigned d : l.order)
    if (d != last) order.push_back(d);
  return makeBlocked(dropLast(l.sizePerThread), dropLast(l.threadsPerWarp), dropLast(l.warpsPerCTA), order,
                     dropLast(interleaveOf(l)));
}

LayoutRef joinLayout(const Layout &l) {
  const unsigned n = static_cast<unsigned>(l.sizePerThread.size());
  std::vector<unsigned> spt = l.sizePerThread, tpw = l.threadsPerWarp, wpc = l.warpsPerCTA, inter = interleaveOf(l);
  spt.push_back(2);
  tpw.push_back(1);
  wpc.push_back(1);
  inter.push_back(0);
  std::vector<unsigned> order{n}; // the new dim fastest: a thread's pairs are adjacent registers
  order.insert(order.end(), l.order.begin(), l.order.end());
  return makeBlocked(spt, tpw, wpc, order, inter);
}

// Consecutive id bits starting at `first` (an empty list is).
bool consecutive(const std::vector<unsigned> &ids) {
  for (size_t i = 1; i < ids.size(); ++i)
    if (ids[i] != ids[i - 1] + 1) return false;
  return true;
}

// Gives the copy lane / warp bits to one dim as its top lanes / warps, where
// a blocked dim wraps (coordinates are taken modulo its extent): a dim of
// extent 1 (as Triton keeps a [1, N] row's copies along its 1), else the dim
// whose lanes (warps) end just below them and that holds nothing above, else a dim held in
// registers alone.
bool placeCopies(std::vector<DimParams> &dims, const std::vector<int64_t> &shape, const std::vector<unsigned> &lanes,
                 const std::vector<unsigned> &warps) {
  if (lanes.empty() && warps.empty()) return true;
  if (!consecutive(lanes) || !consecutive(warps)) return false;
  auto fitsAbove = [&](const DimParams &p) {
    if (p.interleave) return false;
    if (!lanes.empty() && p.tpw > 1 && p.laneStart + static_cast<int>(log2Exact(p.tpw)) != static_cast<int>(lanes[0]))
      return false;
    if (!lanes.empty() && p.wpc > 1) return false; // lanes would go above its warps
    if (!warps.empty() && p.wpc > 1 && p.warpStart + static_cast<int>(log2Exact(p.wpc)) != static_cast<int>(warps[0]))
      return false;
    return true;
  };
  int sink = -1;
  for (size_t t = 0; t < dims.size() && sink < 0; ++t)
    if (shape[t] == 1 && fitsAbove(dims[t])) sink = static_cast<int>(t);
  for (size_t t = dims.size(); t-- > 0 && sink < 0;)
    if ((dims[t].tpw > 1 || dims[t].wpc > 1) && fitsAbove(dims[t])) sink = static_cast<int>(t);
  for (size_t t = 0; t < dims.size() && sink < 0; ++t) // a dim held in registers: every thread has it all
    if (dims[t].tpw == 1 && dims[t].wpc == 1 && fitsAbove(dims[t])) sink = static_cast<int>(t);
  if (sink < 0) return false;
  DimParams &p = dims[static_cast<size_t>(sink)];
  if (!lanes.empty()) {
    if (p.tpw == 1) p.laneStart = static_cast<int>(lanes[0]);
    p.tpw <<= lanes.size();
  }
  if (!warps.empty()) {
    if (p.wpc == 1) p.warpStart = static_cast<int>(warps[0]);
    p.wpc <<= warps.size();
  }
  return true;
}

// See the header: read the operand layout as a map from (register, lane,
// warp) bits to row-major index bits, cut the index bits into the result's
// dims and read each dim's bits as a blocked dim.
LayoutRef reshapeLayout(const Layout &l, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &dstShape,
                        unsigned numWarps) {
  DistributedLayout src(l, srcShape);
  if (src.numWarps() != numWarps) return nullptr;
  int64_t total = 1;
  for (int64_t e : srcShape) total *= e;
  const unsigned bits = log2Exact(total);
  enum class Role { None, Reg, Lane, Warp };
  std::vector<Role> role(bits, Role::None);
  std::vector<unsigned> which(bits, 0); // the lane / warp id bit
  // Lane and warp id bits that set no index bit: those threads hold copies
  // (a [1, N] row on threads along both dims). Copied registers are left out.
  std::vector<unsigned> copyLanes, copyWarps;
  // One input bit: the index bit it sets (it must set exactly one, not yet taken).
  auto place = [&](unsigned tid, unsigned reg, Role r, unsigned bit) {
    const int64_t index = linearIndex(src.coordinates(tid, reg), srcShape);
    if (index == 0) {
      if (r == Role::Lane) copyLanes.push_back(bit);
      if (r == Role::Warp) copyWarps.push_back(bit);
      return true;
    }
    if (!isPowerOfTwo(index)) return false; // not a single bit
    const unsigned b = log2Exact(index);
    if (role[b] != Role::None) return false;
    role[b] = r;
    which[b] = bit;
    return true;
  };
  for (unsigned i = 0; (1u << i) < kWarpSize; ++i)
    if (!place(1u << i, 0, Role::Lane, i)) return nullptr;
  for (unsigned i = 0; (1u << i) < numWarps; ++i)
    if (!place(kWarpSize << i, 0, Role::Warp, i)) return nullptr;
  for (unsigned i = 0; (1u << i) < src.numRegs(); ++i)
    if (!place(0, 1u << i, Role::Reg, i)) return nullptr;
  if (std::find(role.begin(), role.end(), Role::None) != role.end()) return nullptr;

  const unsigned rank = static_cast<unsigned>(dstShape.size());
  std::vector<DimParams> dims(rank);
  unsigned lo = 0; // the dims take index bits from the last one up
  for (unsigned t = rank; t-- > 0;) {
    const unsigned hi = lo + log2Exact(dstShape[t]);
    // Runs of one role, lowest first.
    std::vector<std::pair<Role, unsigned>> runs; // role, length
    for (unsigned b = lo; b < hi; ++b) {
      if (!runs.empty() && runs.back().first == role[b]) {
        // Lanes and warps must be consecutive id bits.
        if (role[b] != Role::Reg && which[b] != which[b - 1] + 1) return nullptr;
        ++runs.back().second;
      } else {
        runs.push_back({role[b], 1});
      }
    }
    DimParams &p = dims[t];
    size_t i = 0;
    auto take = [&](Role r) -> unsigned {
      if (i < runs.size() && runs[i].first == r) return runs[i++].second;
      return 0;
    };
    unsigned lanes = 0, regs = 0;
    // Interleaved only where warps follow (lanes then registers alone read
    // the same either way: the registers are repetitions).
    if (runs.size() >= 3 && runs[0].first == Role::Lane && runs[1].first == Role::Reg &&
        runs[2].first == Role::Warp) {
      lanes = take(Role::Lane); // interleaved: lane bits below the thread's own
      regs = take(Role::Reg);
      p.interleave = 1;
    } else {
      regs = take(Role::Reg);
      lanes = take(Role::Lane);
    }
    const unsigned warps = take(Role::Warp);
    take(Role::Reg); // repetitions
    if (i != runs.size()) return nullptr;
    p.spt = 1u << regs;
    p.tpw = 1u << lanes;
    p.wpc = 1u << warps;
    // The first lane / warp bit of the dim.
    for (unsigned b = lo; b < hi; ++b) {
      if (role[b] == Role::Lane && p.laneStart < 0) p.laneStart = static_cast<int>(which[b]);
      if (role[b] == Role::Warp && p.warpStart < 0) p.warpStart = static_cast<int>(which[b]);
    }
    lo = hi;
  }
  if (!placeCopies(dims, dstShape, copyLanes, copyWarps)) return nullptr;

  // One order numbers both lanes and warps: each dim's lanes (warps) start
  // where the dims before it in the order end.
  std::vector<unsigned> order;
  std::vector<bool> placed(rank, false);
  unsigned laneBit = 0, warpBit = 0;
  while (order.size() < rank) {
    bool progress = false;
    for (unsigned t = rank; t-- > 0;) { // prefer the last dim fastest
      const DimParams &p = dims[t];
      if (placed[t] || (p.tpw > 1 && p.laneStart != static_cast<int>(laneBit)) ||
          (p.wpc > 1 && p.warpStart != static_cast<int>(warpBit)))
        continue;
      placed[t] = true;
      order.push_back(t);
      laneBit += log2Exact(p.tpw);
      warpBit += log2Exact(p.wpc);
      progress = true;
      break;
    }
    if (!progress) return nullptr;
  }
  std::vector<unsigned> spt, tpw, wpc, inter;
  for (const DimParams &p : dims) {
    spt.push_back(p.spt);
    tpw.push_back(p.tpw);
    wpc.push_back(p.wpc);
    inter.push_back(p.interleave);
  }
  return makeBlocked(spt, tpw, wpc, order, inter);
}

} // namespace

std::optional<std::vector<std::pair<unsigned, unsigned>>>
registersInThread(const Operation &op, unsigned k, const std::vector<DistributedLayout> &operands,
                  const DistributedLayout &result) {
  if (!(isRegisterShapeOp(op.code) || op.code == OpCode::ConvertLayout) || operands.size() != op.operands.size())
    return std::nullopt;
  const unsigned threads = kWarpSize * result.numWarps();
  for (const DistributedLayout &l : operands)
    if (l.numWarps() != result.numWarps()) return std::nullopt;
  // Thread 0 picks the registers (the first that holds the element) ...
  std::vector<std::unordered_map<int64_t, unsigned>> held(operands.size());
  for (size_t j = 0; j < operands.size(); ++j)
    for (unsigned r = operands[j].numRegs(); r-- > 0;)
      held[j][linearIndex(operands[j].coordinates(0, r), op.operand(j)->type.shape)] = r;
  std::vector<std::pair<unsigned, unsigned>> picks;
  for (unsigned r = 0; r < result.numRegs(); ++r) {
    auto [j, index] = sourceOf(op, k, result.coordinates(0, r));
    auto it = held[j].find(index);
    if (it == held[j].end()) return std::nullopt;
    picks.push_back({j, it->second});
  }
  // ... and every thread must find its element there too.
  for (unsigned tid = 1; tid < threads; ++tid)
    for (unsigned r = 0; r < result.numRegs(); ++r) {
      auto [j, index] = sourceOf(op, k, result.coordinates(tid, r));
      if (j != picks[r].first ||
          linearIndex(operands[j].coordinates(tid, picks[r].second), op.operand(j)->type.shape) != index)
        return std::nullopt;
    }
  return picks;
}

std::vector<LayoutRef> inRegisterResultLayouts(const Operation &op, const LayoutRef &operandLayout,
                                               unsigned numWarps) {
  LayoutRef in = asBlocked(operandLayout);
  if (!in || !isRegisterShapeOp(op.code) || !op.operand(0)->type.isBlock()) return {};
  std::vector<LayoutRef> out;
  try {
    switch (op.code) {
    case OpCode::Reshape:
      out.push_back(reshapeLayout(*in, op.operand(0)->type.shape, op.result()->type.shape, numWarps));
      break;
    case OpCode::Trans:
      out.push_back(transLayout(*in, op.arrayAttr("order")));
      break;
    case OpCode::Split:
      out.assign(op.results.size(), splitLayout(*in));
      break;
    case OpCode::Join:
      out.push_back(joinLayout(*in));
      break;
    default:
      return {};
    }
    if (std::find(out.begin(), out.end(), nullptr) != out.end()) return {};
    // The layouts must do what they promise (and fit their shapes).
    std::vector<DistributedLayout> operands;
    for (Value *v : op.operands) operands.emplace_back(*operandLayout, v->type.shape);
    for (unsigned k = 0; k < op.results.size(); ++k)
      if (!registersInThread(op, k, operands, DistributedLayout(*out[k], op.result(k)->type.shape)))
        return {};
  } catch (const std::invalid_argument &) {
    return {};
  }
  return out;
}

LayoutRef inRegisterReshapeOperandLayout(const Operation &reshape, const LayoutRef &result, unsigned numWarps) {
  // A slice of a blocked layout reads as one too (its sliced dim's threads hold copies): a row of
  // shifts a broadcast spreads over a block, every thread holding all of it.
  LayoutRef out = result && result->kind == Layout::Kind::Slice && asBlocked(result->parent) ? result : asBlocked(result);
  if (!out || reshape.code != OpCode::Reshape || !reshape.operand(0)->type.isBlock()) return nullptr;
  const auto &srcShape = reshape.operand(0)->type.shape, &dstShape = reshape.result()->type.shape;
  try {
    LayoutRef in = reshapeLayout(*out, dstShape, srcShape, numWarps);
    if (!in || !registersInThread(reshape, 0, {DistributedLayout(*in, srcShape)}, DistributedLayout(*result, dstShape)))
      return nullptr;
    return in;
  } catch (const std::invalid_argument &) {
    return nullptr;
  }
}

LayoutRef inRegisterJoinOperandLayout(const Operation &join, const LayoutRef &result) {
  LayoutRef out = asBlocked(result);
  if (!out || join.code != OpCode::Join || join.operands.size() != 2 || !join.operand(0)->type.isBlock()) return nullptr;
  try {
    LayoutRef in = splitLayout(*out);
    if (!in) return nullptr;
    DistributedLayout operand(*in, join.operand(0)->type.shape);
    if (!registersInThread(join, 0, {operand, operand}, DistributedLayout(*result, join.result()->type.shape)))
      return nullptr;
    return in;
  } catch (const std::invalid_argument &) {
    return nullptr;
  }
}

} // namespace tessera::ir
