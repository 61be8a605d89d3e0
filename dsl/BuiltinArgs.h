// Argument binding shared by the builtin files (dsl/Builtins*.cpp): positional
// and keyword arguments are matched to Triton's parameter names; missing
// optional parameters are None.
#pragma once

#include "dsl/SpecializerImpl.h"

#include <string>
#include <vector>

namespace tessera::spec {

struct ParamSpec {
  const char *name;
  bool required;
};

struct Bound {
  std::vector<SValue> values;
  std::vector<SourceLoc> locs;
  const SValue &operator[](size_t i) const { return values[i]; }
  bool has(size_t i) const { return !values[i].isNone(); }
};

Bound bind(const Specializer &sp, CallArgs &args, const std::string &fname, std::vector<ParamSpec> params);

inline bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The attributes of a float min/max op for `propagate_nan=` (None or tl.PropagateNan.NONE: none;
// tl.PropagateNan.ALL: propagate_nan = 1, a NaN operand is the result, as Triton's minimumf).
std::map<std::string, ir::Attribute> propagateNanAttrs(const Specializer &sp, const SValue &v, SourceLoc loc,
                                                       const ir::Type &elem);

// A shape argument: one constexpr int or a tuple of them, each a power of two.
std::vector<int64_t> shapeArgument(const Specializer &sp, const SValue &v, SourceLoc loc, const std::string &fname);

} // namespace tessera::spec
