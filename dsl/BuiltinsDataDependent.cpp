// tl.sort, tl.gather and tl.histogram: ops whose data movement depends on
// the values (an order, positions, bins), so each is one IR op lowered
// through shared memory (compiler/codegen/Sort.cpp, Gather.cpp,
// Histogram.cpp). Argument checks and messages follow Triton's
// standard.py / semantic.py.
#include "dsl/BuiltinArgs.h"

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;

std::optional<SValue> Specializer::callDataDependentBuiltin(const std::string &name, CallArgs &args) {
  SourceLoc loc = args.loc;

  // tl.sort(x, dim=None, descending=False): along the last dim only, as in Triton.
  // Triton's bitonic top-k and merge (standard.py), written in the language (the prelude).
  if (name == "lang.topk" || name == "lang.bitonic_merge") return callPrelude(name.substr(5), args);
  if (name == "lang.sort") {
    Bound b = bind(*this, args, "tl.sort", {{"x", true}, {"dim", false}, {"descending", false}});
    if (!b[0].isIR() || !b[0].value->type.isBlock()) error(b.locs[0], "tl.sort needs a block, got " + describe(b[0]));
    ir::Value *x = b[0].value;
    if (x->type.pointer) error(b.locs[0], "tl.sort cannot sort pointers");
    const int64_t rank = static_cast<int64_t>(x->type.rank());
    if (b.has(1)) {
      int64_t dim = requireInt(b[1], b.locs[1], "tl.sort's dim");
      if (dim != rank - 1) error(b.locs[1], "only minor dimension is currently supported");
    }
    const bool descending = b.has(2) && requireInt(b[2], b.locs[2], "tl.sort's descending") != 0;
    if (x->type.shape.back() == 1) return SValue::ir(x);
    return SValue::ir(b_.op(OpCode::Sort, {x}, x->type, {{"descending", int64_t(descending)}}));
  }

  // tl.gather(src, index, axis): result[i] = src[i with its axis coordinate index[i]].
  if (name == "lang.gather") {
    Bound b = bind(*this, args, "tl.gather", {{"src", true}, {"index", true}, {"axis", true}});
    if (!b[0].isIR() || !b[0].value->type.isBlock()) error(b.locs[0], "tl.gather's src must be a block, got " + describe(b[0]));
    if (!b[1].isIR() || !b[1].value->type.isBlock()) error(b.locs[1], "tl.gather's index must be a block, got " + describe(b[1]));
    ir::Value *src = b[0].value, *index = b[1].value;
    if (!index->type.isIntElement() || index->type.isBoolElement()) error(b.locs[1], "index must be an integer tensor");
    const int64_t rank = static_cast<int64_t>(src->type.rank());
    if (static_cast<int64_t>(index->type.rank()) != rank) error(loc, "source and index tensors must have the same rank");
    int64_t axis = requireInt(b[2], b.locs[2], "tl.gather's axis");
    if (axis < -rank || axis >= rank)
      error(b.locs[2], "gather axis " + std::to_string(axis) + " must be < source rank (" + std::to_string(rank) + ")");
    if (axis < 0) axis += rank;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && index->type.shape[d] != src->type.shape[d])
        error(loc, "index dim " + std::to_string(d) + " must match the corresponding source dim");
    return SValue::ir(b_.op(OpCode::Gather, {src, index}, src->type.withShape(index->type.shape), {{"axis", axis}}));
  }

  // tl.histogram(input, num_bins, mask=None): <num_bins x i32> counts of the values 0 .. num_bins-1.
  if (name == "lang.histogram") {
    Bound b = bind(*this, args, "tl.histogram", {{"input", true}, {"num_bins", true}, {"mask", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    if (x->type.rank() != 1) error(b.locs[0], "histogram only supports 1D input");
    if (!x->type.isIntElement() || x->type.isBoolElement()) error(b.locs[0], "histogram only supports integer input");
    const int64_t bins = requireInt(b[1], b.locs[1], "tl.histogram's num_bins");
    if (!isPowerOfTwo(bins)) error(b.locs[1], "block dimensions must be powers of 2, got " + std::to_string(bins));
    std::vector<ir::Value *> operands = {x};
    if (b.has(2)) {
      ir::Value *mask = broadcastTo(toIR(b[2], b.locs[2]), x->type.shape, b.locs[2]);
      if (!mask->type.isBoolElement()) error(b.locs[2], "Mask must have boolean scalar type");
      operands.push_back(mask);
    }
    return SValue::ir(b_.op(OpCode::Histogram, operands, ir::Type(ScalarType::I32).withShape({bins}),
                            {{"num_bins", bins}, {"has_mask", int64_t(operands.size() > 1)}}));
  }
  return std::nullopt;
}

} // namespace tessera::spec
