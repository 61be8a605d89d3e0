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
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

struct Layout;
using LayoutRef = std::shared_ptr<const Layout>;

struct Layout {
  enum class Kind { Blocked, Slice };
  Kind kind = Kind::Blocked;
  // Blocked
  std::vector<unsigned> sizePerThread, threadsPerWarp, warpsPerCTA, order;
  // Slice
  unsigned sliceDim = 0;
  LayoutRef parent;

  unsigned rank() const;
  // "#blocked<spt=[1,4], tpw=[4,8], wpc=[4,1], order=[1,0]>", "#slice<dim=1, #blocked<...>>"
  std::string str() const;
  bool operator==(const Layout &o) const;

  static LayoutRef blocked(std::vector<unsigned> spt, std::vector<unsigned> tpw,
                           std::vector<unsigned> wpc, std::vector<unsigned> order);
  static LayoutRef slice(unsigned dim, LayoutRef parent);
};

inline bool sameLayout(const LayoutRef &a, const LayoutRef &b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

} // namespace tessera::ir
