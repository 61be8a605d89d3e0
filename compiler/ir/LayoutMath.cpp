#include "compiler/ir/LayoutMath.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace tessera::ir {

unsigned log2Exact(int64_t v) {
  unsigned n = 0;
  while ((int64_t{1} << n) < v)
    ++n;
  return n;
}

unsigned DimMap::distinctLanes() const {
  if (sliced)
    return 1;
  if (interleaved) // lane i holds element i first
    return static_cast<unsigned>(std::min<int64_t>(extent, threadsPerWarp));
  if (extent <= sizePerThread)
    return 1;
  return static_cast<unsigned>(std::min<int64_t>(extent / sizePerThread, threadsPerWarp));
}

unsigned DimMap::distinctWarps() const {
  int64_t perWarp = int64_t{sizePerThread} * threadsPerWarp;
  if (sliced || extent <= perWarp)
    return 1;
  return static_cast<unsigned>(std::min<int64_t>(extent / perWarp, warpsPerCTA));
}

namespace {

// Follows slice parents down to the blocked layout; `sliced` marks the base
// dims removed on the way and `valueDims` maps value dims to base dims.
ir::Layout resolveBase(const ir::Layout &layout, std::vector<bool> &sliced,
                       std::vector<unsigned> &valueDims) {
  if (layout.kind == ir::Layout::Kind::Mma) {
    // Version 3 (wgmma) is version 2 with its rows interleaved (compiler/ir/Layout.h).
    if ((layout.mmaVersion != 2 && layout.mmaVersion != 3) || layout.warpsPerCTA.size() != 2)
      throw std::invalid_argument("only 2-D version-2/3 mma layouts are supported: " + layout.str());
    return resolveBase(*ir::Layout::mmaAsBlocked(layout), sliced, valueDims);
  }
  if (layout.kind == ir::Layout::Kind::DotOperand)
    throw std::invalid_argument("a dot-operand layout has no register mapping of its own: " + layout.str());
  if (layout.kind == ir::Layout::Kind::Blocked) {
    unsigned rank = static_cast<unsigned>(layout.sizePerThread.size());
    sliced.assign(rank, false);
    valueDims.clear();
    for (unsigned d = 0; d < rank; ++d)
      valueDims.push_back(d);
    return layout;
  }
  if (!layout.parent)
    throw std::invalid_argument("slice layout without a parent");
  ir::Layout base = resolveBase(*layout.parent, sliced, valueDims);
  if (layout.sliceDim >= valueDims.size())
    throw std::invalid_argument("slice dim out of range in " + layout.str());
  sliced[valueDims[layout.sliceDim]] = true;
  valueDims.erase(valueDims.begin() + layout.sliceDim);
  return base;
}

} // namespace

DistributedLayout::DistributedLayout(const ir::Layout &layout, const std::vector<int64_t> &shape) {
  std::vector<bool> sliced;
  base_ = resolveBase(layout, sliced, valueDims_);
  unsigned rank = static_cast<unsigned>(base_.sizePerThread.size());
  if (base_.threadsPerWarp.size() != rank || base_.warpsPerCTA.size() != rank ||
      base_.order.size() != rank)
    throw std::invalid_argument("malformed layout " + layout.str());
  if (valueDims_.size() != shape.size())
    throw std::invalid_argument("layout " + layout.str() + " has rank " +
                                std::to_string(valueDims_.size()) + " but the value has rank " +
                                std::to_string(shape.size()));
  order_ = base_.order;
  dims_.resize(rank);
  for (unsigned i = 0; i < valueDims_.size(); ++i)
    dims_[valueDims_[i]].extent = shape[i];

  unsigned laneStride = 1, warpStride = 1;
  if (!base_.warpOrder.empty() && base_.warpOrder.size() != rank)
    throw std::invalid_argument("malformed warp order in " + layout.str());
  for (unsigned d : base_.warpOrder.empty() ? order_ : base_.warpOrder) {
    if (d >= rank) throw std::invalid_argument("bad warp order in layout " + layout.str());
    dims_[d].warpStride = warpStride;
    warpStride *= base_.warpsPerCTA[d];
  }
  for (unsigned d : order_) {
    if (d >= rank)
      throw std::invalid_argument("bad order in layout " + layout.str());
    DimMap &m = dims_[d];
    m.sizePerThread = base_.sizePerThread[d];
    m.threadsPerWarp = base_.threadsPerWarp[d];
    m.warpsPerCTA = base_.warpsPerCTA[d];
    m.sliced = sliced[d];
    m.interleaved = d < base_.interleave.size() && base_.interleave[d];
    m.laneStride = laneStride;
    laneStride *= m.threadsPerWarp;
    if (!isPowerOfTwo(m.sizePerThread) || !isPowerOfTwo(m.threadsPerWarp) ||
        !isPowerOfTwo(m.warpsPerCTA))
      throw std::invalid_argument("layout parameters must be powers of two: " + layout.str());
    if (!isPowerOfTwo(m.extent))
      throw std::invalid_argument("block dims must be powers of two, got " +
                                  std::to_string(m.extent));
    m.tile = int64_t{m.sizePerThread} * m.threadsPerWarp * m.warpsPerCTA;
  }
  if (laneStride != kWarpSize)
    throw std::invalid_argument("threadsPerWarp must multiply to 32 in " + layout.str());
  computeRegisterCounts();
}

void DistributedLayout::computeRegisterCounts() {
  numRegs_ = 1;
  for (DimMap &m : dims_) {
    m.numRegs = m.sliced ? 1
                         : static_cast<unsigned>(m.sizePerThread *
                                                 std::max<int64_t>(1, m.extent / m.tile));
    numRegs_ *= m.numRegs;
  }
}

DistributedLayout DistributedLayout::slicedAlong(unsigned axis) const {
  DistributedLayout out = *this;
  unsigned d = valueDims_.at(axis);
  out.dims_[d].sliced = true;
  out.dims_[d].extent = 1;
  out.valueDims_.erase(out.valueDims_.begin() + axis);
  out.computeRegisterCounts();
  return out;
}

unsigned DistributedLayout::numWarps() const {
  unsigned n = 1;
  for (const DimMap &m : dims_)
    n *= m.warpsPerCTA;
  return n;
}

std::vector<unsigned> DistributedLayout::regIndex(unsigned reg) const {
  std::vector<unsigned> index(dims_.size(), 0);
  for (unsigned d : order_) {
    index[d] = reg % dims_[d].numRegs;
    reg /= dims_[d].numRegs;
  }
  return index;
}

unsigned DistributedLayout::regNumber(const std::vector<unsigned> &index) const {
  unsigned reg = 0;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    reg = reg * dims_[*it].numRegs + index[*it];
  return reg;
}

bool DistributedLayout::isDuplicateRegister(unsigned reg) const {
  std::vector<unsigned> index = regIndex(reg);
  for (unsigned d = 0; d < dims_.size(); ++d)
    if (dims_[d].regOffset(index[d]) >= dims_[d].extent)
      return true;
  return false;
}

std::vector<int64_t> DistributedLayout::coordinates(unsigned tid, unsigned reg) const {
  std::vector<unsigned> index = regIndex(reg);
  std::vector<int64_t> coords;
  for (unsigned d : valueDims_) {
    const DimMap &m = dims_[d];
    coords.push_back((m.regOffset(index[d]) + m.threadOffset(tid)) % m.extent);
  }
  return coords;
}

bool DistributedLayout::isOwner(unsigned tid, unsigned reg) const {
  std::vector<unsigned> index = regIndex(reg);
  for (unsigned d = 0; d < dims_.size(); ++d)
    if (dims_[d].regOffset(index[d]) + dims_[d].threadOffset(tid) >= dims_[d].extent)
      return false;
  return true;
}

std::array<std::array<unsigned, 2>, 4> mmaAFragmentRegisters(const DistributedLayout &layout, int64_t mi,
                                                             int64_t ks) {
  // Register row index 2mi + h: block row 2g + h of m-tile mi (the
  // instruction's row g + 8h); register column index 2ni + j: column
  // 8ni + 2t + j. a0: (g, k 2t..2t+1), a1: (g+8, ...), a2: (g, k 8+2t..), a3: (g+8, k 8+2t..).
  std::array<std::array<unsigned, 2>, 4> regs{};
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned h = i % 2, kb = i / 2;
    const unsigned row = static_cast<unsigned>(2 * mi) + h, col = static_cast<unsigned>(4 * ks) + 2 * kb;
    regs[i] = {layout.regNumber({row, col}), layout.regNumber({row, col + 1})};
  }
  return regs;
}

int64_t mmaKStep(ScalarType in, ScalarType out, const std::string &inputPrecision) {
  if ((in == ScalarType::F16 || in == ScalarType::BF16) && out == ScalarType::F32) return 16; // m16n8k16
  if (in == ScalarType::F16 && out == ScalarType::F16) return 16;                             // m16n8k16 f16 acc
  if (in == ScalarType::F32 && out == ScalarType::F32 && inputPrecision == "tf32") return 8;   // m16n8k8 tf32
  if (in == ScalarType::I8 && out == ScalarType::I32) return 32;                               // m16n8k32 s8
  return 0;
}

ir::LayoutRef defaultBlockedLayout(const std::vector<int64_t> &shape, unsigned numWarps) {
  unsigned rank = static_cast<unsigned>(shape.size());
  std::vector<unsigned> order, spt(rank, 1);
  for (unsigned i = 0; i < rank; ++i)
    order.push_back(rank - 1 - i);

  // Contiguous elements per thread (for wide loads later), but only while
  // every thread of the CTA still gets distinct elements.
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  int64_t threads = int64_t{kWarpSize} * numWarps;
  unsigned vec = 1;
  while (vec < 4 && shape[rank - 1] % (2 * vec) == 0 && total / (2 * vec) >= threads)
    vec *= 2;
  spt[rank - 1] = vec;
  return blockedLayout(shape, spt, order, numWarps);
}

ir::LayoutRef blockedLayout(const std::vector<int64_t> &shape, std::vector<unsigned> spt,
                            std::vector<unsigned> order, unsigned numWarps) {
  unsigned rank = static_cast<unsigned>(shape.size());
  std::vector<unsigned> tpw(rank, 1), wpc(rank, 1);
  // Lanes then warps from the fastest dim outwards (Triton's rule); what is
  // left goes to the slowest dim.
  int64_t remainingThreads = int64_t{kWarpSize} * numWarps;
  unsigned remainingLanes = kWarpSize, remainingWarps = numWarps;
  unsigned usedLanes = 1, usedWarps = 1;
  for (unsigned k = 0; k + 1 < rank; ++k) {
    unsigned d = order[k];
    int64_t threadsHere = std::clamp<int64_t>(remainingThreads, 1, std::max<int64_t>(1, shape[d] / spt[d]));
    tpw[d] = static_cast<unsigned>(std::clamp<int64_t>(threadsHere, 1, remainingLanes));
    wpc[d] = static_cast<unsigned>(std::clamp<int64_t>(threadsHere / tpw[d], 1, remainingWarps));
    remainingWarps /= wpc[d];
    remainingLanes /= tpw[d];
    remainingThreads /= threadsHere;
    usedLanes *= tpw[d];
    usedWarps *= wpc[d];
  }
  tpw[order[rank - 1]] = kWarpSize / usedLanes;
  wpc[order[rank - 1]] = numWarps / usedWarps;
  return ir::Layout::blocked(std::move(spt), tpw, wpc, std::move(order));
}

int64_t linearIndex(const std::vector<int64_t> &coords, const std::vector<int64_t> &shape) {
  int64_t index = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    index = index * shape[i] + coords[i];
  return index;
}

std::vector<unsigned> registersSharingRuns(const DistributedLayout &layout, const std::vector<int64_t> &constancy) {
  const unsigned n = layout.numRegs();
  std::vector<unsigned> first(n);
  for (unsigned r = 0; r < n; ++r) first[r] = r;
  if (constancy.size() != layout.rank()) return first;
  std::vector<int64_t> runOf(layout.baseRank(), 1);
  for (unsigned v = 0; v < layout.rank(); ++v) runOf[layout.valueDims()[v]] = constancy[v];
  std::map<std::vector<int64_t>, unsigned> firstOfRun;
  for (unsigned r = 0; r < n; ++r) {
    const std::vector<unsigned> index = layout.regIndex(r);
    std::vector<int64_t> key;
    for (unsigned d = 0; d < layout.baseRank(); ++d) {
      const DimMap &m = layout.dim(d);
      const int64_t run = runOf[d], reg = index[d];
      const bool usable = run > 1 && isPowerOfTwo(run) && !m.sliced && !m.wraps() && m.numRegs > 1;
      if (usable && run % m.tile == 0)
        key.push_back(m.regOffset(static_cast<unsigned>(reg)) / run);
      else if (usable && !m.interleaved && m.sizePerThread % run == 0)
        key.push_back((reg / m.sizePerThread) * (m.sizePerThread / run) + (reg % m.sizePerThread) / run);
      else
        key.push_back(reg);
    }
    first[r] = firstOfRun.emplace(std::move(key), r).first->second;
  }
  return first;
}

unsigned lastDimVectorWidth(const DistributedLayout &layout, unsigned maxElems) {
  if (layout.rank() == 0)
    return 1;
  // The base dim a thread's consecutive registers step along: the fastest one
  // the value has (sliced dims have one register).
  unsigned fastest = layout.baseRank();
  for (unsigned d : layout.order())
    if (!layout.dim(d).sliced) {
      fastest = d;
      break;
    }
  if (fastest != layout.valueDims().back())
    return 1;
  const DimMap &m = layout.dim(fastest);
  int64_t n = std::min<int64_t>({m.contiguousPerThread(), m.extent, maxElems});
  unsigned width = 1;
  while (int64_t{width} * 2 <= n) width *= 2;
  return width;
}

std::vector<int64_t> paddedStrides(const std::vector<int64_t> &shape, int64_t rowPad) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i] + (i == shape.size() - 1 ? rowPad : 0);
  return strides;
}

int64_t sharedWavefronts(const DistributedLayout &layout, const std::vector<int64_t> &strides,
                         unsigned elemBytes, unsigned vec, bool skipDuplicates) {
  constexpr int64_t kBanks = 32, kBankBytes = 4;
  const int64_t accessBytes = static_cast<int64_t>(vec) * elemBytes;
  // A warp's access is served in phases of 128 bytes' worth of threads; in
  // a phase, a bank serves one 4-byte word per wavefront (same words broadcast).
  const unsigned threadsPerPhase =
      static_cast<unsigned>(std::min<int64_t>(kWarpSize, kBanks * kBankBytes / std::max(kBankBytes, accessBytes)));
  int64_t total = 0;
  for (unsigned r = 0; r < layout.numRegs(); r += vec) {
    if (skipDuplicates && layout.isDuplicateRegister(r))
      continue;
    for (unsigned first = 0; first < kWarpSize; first += threadsPerPhase) {
      std::vector<std::vector<int64_t>> wordsPerBank(kBanks);
      for (unsigned tid = first; tid < first + threadsPerPhase; ++tid) {
        std::vector<int64_t> c = layout.coordinates(tid, r);
        int64_t offset = 0;
        for (size_t i = 0; i < c.size(); ++i) offset += c[i] * strides[i];
        const int64_t begin = offset * elemBytes / kBankBytes;
        const int64_t end = (offset * elemBytes + accessBytes - 1) / kBankBytes;
        for (int64_t w = begin; w <= end; ++w) {
          std::vector<int64_t> &bank = wordsPerBank[w % kBanks];
          if (std::find(bank.begin(), bank.end(), w) == bank.end())
            bank.push_back(w);
        }
      }
      size_t worst = 0;
      for (const auto &bank : wordsPerBank) worst = std::max(worst, bank.size());
      total += static_cast<int64_t>(worst);
    }
  }
  return total;
}

int64_t conversionRowPadding(const DistributedLayout &from, const DistributedLayout &to,
                             const std::vector<int64_t> &shape, unsigned elemBytes, unsigned storeVec,
                             unsigned loadVec) {
  if (shape.size() < 2)
    return 0;
  const int64_t align = std::max(storeVec, loadVec); // elements a padded row start must stay aligned to
  int64_t bestPad = 0, bestCost = -1;
  for (int64_t padBytes : {0, 4, 8, 16, 32, 64}) {
    if (padBytes % elemBytes != 0 || (padBytes / elemBytes) % align != 0)
      continue;
    const int64_t pad = padBytes / elemBytes;
    std::vector<int64_t> strides = paddedStrides(shape, pad);
    int64_t cost = sharedWavefronts(from, strides, elemBytes, storeVec, /*skipDuplicates=*/true) +
                   sharedWavefronts(to, strides, elemBytes, loadVec, /*skipDuplicates=*/false);
    if (bestCost < 0 || cost < bestCost) {
      bestCost = cost;
      bestPad = pad;
    }
  }
  return bestPad;
}

} // namespace tessera::ir
