// Axis info (Triton's AxisInfo): for every integer and pointer value, per dim,
//   contiguity   runs of this many consecutive elements along the dim
//                differ by 1 (pointers: by one element), runs starting at
//                multiples of the run length;
//   divisibility the largest power of two known to divide the first element
//                of every such run (pointers: in bytes);
//   constancy    runs of this many elements along the dim are equal.
// An analysis of the IR shared by the axis-analysis pass (which writes the
// results onto block loads and stores, compiler/passes/AxisAnalysis.h) and
// codegen (one compare per run of equal results, docs/codegen.md, masks).
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tessera::ir {

struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;
  std::optional<int64_t> constant; // every element is this integer

  size_t rank() const { return contiguity.size(); }
  bool operator==(const AxisInfo &o) const = default;
};

// The axis info of every value of a function, computed once.
class AxisInfoAnalysis {
public:
  explicit AxisInfoAnalysis(Function &fn);
  // Nothing known (all ones) for a value the analysis did not reach.
  AxisInfo of(const Value *value) const;

private:
  std::unordered_map<const Value *, AxisInfo> info_;
};

// Per block compare, the constancy of its result along each dim, for the
// compares with a run longer than 1. Codegen evaluates one compare per run.
std::unordered_map<const Operation *, std::vector<int64_t>> compareConstancy(Function &fn);

} // namespace tessera::ir
