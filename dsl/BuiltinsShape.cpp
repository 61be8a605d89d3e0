// tl.* shape manipulation: broadcast, broadcast_to, reshape, view, ravel,
// expand_dims, trans, permute, join, split, cat, flip. Shapes are variadic
// or tuples, as in Triton (x.reshape(M, N) and tl.reshape(x, (M, N))).
#include "dsl/BuiltinArgs.h"

#include <algorithm>
#include <numeric>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The ints after the input: one tuple, or several ints, or a keyword.
std::vector<int64_t> intsAfterInput(Specializer &sp, CallArgs &args, const std::string &fname, const char *keyword,
                                    bool powersOfTwo) {
  std::vector<SValue> items;
  SourceLoc loc = args.loc;
  for (size_t i = 1; i < args.args.size(); ++i) {
    items.push_back(args.args[i]);
    loc = args.argLocs[i];
  }
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    if (args.keywords[k].first == keyword) {
      items.push_back(args.keywords[k].second);
      loc = args.keywordLocs[k];
    } else if (args.keywords[k].first != "can_reorder") {
      sp.error(args.keywordLocs[k], fname + "() got an unexpected keyword argument '" + args.keywords[k].first + "'");
    }
  }
  if (items.size() == 1 && items[0].kind == SValue::Kind::Tuple) items = items[0].elems;
  std::vector<int64_t> out;
  for (const SValue &v : items) out.push_back(sp.requireInt(v, loc, fname + "'s " + keyword));
  if (powersOfTwo)
    for (int64_t d : out)
      if (!isPowerOfTwo(d)) sp.error(loc, "block dimensions must be powers of 2, got " + std::to_string(d));
  return out;
}

// `input=x` (Triton's parameter name of reshape, view, broadcast_to, trans and permute, whose other
// parameter is *shape or *dims) as the first positional argument.
void inputKeywordFirst(CallArgs &args) {
  if (!args.args.empty()) return;
  for (size_t k = 0; k < args.keywords.size(); ++k)
    if (args.keywords[k].first == "input") {
      args.args.push_back(args.keywords[k].second);
      args.argLocs.push_back(args.keywordLocs[k]);
      args.keywords.erase(args.keywords.begin() + k);
      args.keywordLocs.erase(args.keywordLocs.begin() + k);
      return;
    }
}

ir::Value *inputBlock(Specializer &sp, CallArgs &args, const std::string &fname) {
  if (args.args.empty()) sp.error(args.loc, fname + "() missing required argument 'input'");
  const SValue &x = args.args[0];
  if (!x.isIR()) sp.error(args.argLocs[0], fname + "() needs a block, got " + sp.describe(x));
  return x.value;
}

} // namespace

ir::Value *Specializer::reshapeTo(ir::Value *x, const std::vector<int64_t> &shape, SourceLoc loc) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (x->type.numElements() != n)
    error(loc, "cannot reshape a block of shape " + shapeText(x->type.shape) + " into " + shapeText(shape) +
                   ": the element counts differ");
  if (x->type.shape == shape) return x;
  if (!x->type.isBlock()) return b_.op(OpCode::Splat, {x}, x->type.withShape(shape));
  if (shape.empty()) // a one-element block to a scalar: sum of one element
    return b_.op(OpCode::Reduce, {reshapeTo(x, {1}, loc)}, x->type.element(), {{"axis", int64_t(0)}, {"kind", std::string("sum")}});
  return b_.op(OpCode::Reshape, {x}, x->type.withShape(shape));
}

std::optional<SValue> Specializer::callShapeBuiltin(const std::string &name, CallArgs &args) {
  if (name.rfind("lang.", 0) != 0) return std::nullopt;
  const std::string fn = name.substr(5);
  const std::string tlName = "tl." + fn;
  SourceLoc loc = args.loc;
  if (fn == "broadcast_to" || fn == "reshape" || fn == "view" || fn == "trans" || fn == "permute")
    inputKeywordFirst(args);

  if (fn == "broadcast") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"other", true}});
    ir::Value *x = b[0].isIR() ? b[0].value : toIR(b[0], b.locs[0], b[1].isIR() ? &b[1].value->type : nullptr);
    ir::Value *y = b[1].isIR() ? b[1].value : toIR(b[1], b.locs[1], &x->type);
    auto shape = broadcastShapes(x->type, y->type, loc);
    return SValue::tuple({SValue::ir(broadcastTo(x, shape, b.locs[0])), SValue::ir(broadcastTo(y, shape, b.locs[1]))});
  }
  if (fn == "broadcast_to") {
    if (args.args.empty()) error(loc, "tl.broadcast_to() missing required argument 'input'");
    ir::Value *x = toIR(args.args[0], args.argLocs[0]);
    std::vector<int64_t> shape = intsAfterInput(*this, args, tlName, "shape", true);
    return SValue::ir(broadcastTo(x, shape, loc));
  }
  if (fn == "reshape" || fn == "view") {
    if (args.args.empty()) error(loc, tlName + "() missing required argument 'input'");
    ir::Value *x = toIR(args.args[0], args.argLocs[0]);
    std::vector<int64_t> shape = intsAfterInput(*this, args, tlName, "shape", true);
    return SValue::ir(reshapeTo(x, shape, loc));
  }
  if (fn == "ravel") {
    Bound b = bind(*this, args, tlName, {{"x", true}, {"can_reorder", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    return SValue::ir(reshapeTo(x, {x->type.numElements()}, loc));
  }
  if (fn == "expand_dims") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", true}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    std::vector<int64_t> axes;
    if (b[1].kind == SValue::Kind::Tuple)
      for (const SValue &a : b[1].elems) axes.push_back(requireInt(a, b.locs[1], "tl.expand_dims's axis"));
    else
      axes.push_back(requireInt(b[1], b.locs[1], "tl.expand_dims's axis"));
    int64_t newRank = static_cast<int64_t>(x->type.rank() + axes.size());
    for (int64_t &a : axes) { // Triton's messages (core._wrap_axis, core.expand_dims)
      if (a < -newRank || a >= newRank)
        error(b.locs[1], "invalid axis " + std::to_string(a) + ". Expected " + std::to_string(-newRank) +
                             " <= axis < " + std::to_string(newRank));
      if (a < 0) a += newRank;
    }
    const std::string normalized = shapeText(axes);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      error(b.locs[1], "expand_dims received duplicate axes, normalized axes = " + normalized);
    if (!x->type.isBlock()) // every dim of the result is a new size-1 dim
      return SValue::ir(b_.op(OpCode::Splat, {x}, x->type.withShape(std::vector<int64_t>(newRank, 1))));
    for (int64_t a : axes) {
      std::vector<int64_t> s = x->type.shape;
      s.insert(s.begin() + a, 1);
      x = b_.op(OpCode::ExpandDims, {x}, x->type.withShape(s), {{"axis", a}});
    }
    return SValue::ir(x);
  }
  if (fn == "trans" || fn == "permute") { // core.trans / core.permute and semantic.permute, with their messages
    ir::Value *x = inputBlock(*this, args, tlName);
    std::vector<int64_t> order = intsAfterInput(*this, args, tlName, "dims", false);
    int64_t rank = static_cast<int64_t>(x->type.rank());
    if (order.empty() && fn == "trans") { // the last two dims swapped: an (optionally batched) transpose
      if (rank < 2) error(loc, "tl.trans invoked with a 0- or 1-dimensional tensor");
      order.resize(static_cast<size_t>(rank));
      std::iota(order.begin(), order.end(), 0);
      std::swap(order[rank - 2], order[rank - 1]);
    }
    if (static_cast<int64_t>(order.size()) != rank) error(loc, "permute dims must have the same length as input shape");
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> iota(static_cast<size_t>(rank));
    std::iota(iota.begin(), iota.end(), 0);
    if (sorted != iota) {
      std::string dims;
      for (int64_t d : order) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      error(loc, "permute dims must be a permutation of 0, 1, ..., n-1, but were (" + dims + ")");
    }
    if (order == iota) return SValue::ir(x);
    std::vector<int64_t> shape;
    for (int64_t d : order) shape.push_back(x->type.shape[d]);
    return SValue::ir(b_.op(OpCode::Trans, {x}, x->type.withShape(shape), {{"order", order}}));
  }
  if (fn == "join") {
    Bound b = bind(*this, args, tlName, {{"a", true}, {"b", true}});
    ir::Value *x = b[0].isIR() ? b[0].value : toIR(b[0], b.locs[0], b[1].isIR() ? &b[1].value->type : nullptr);
    ir::Value *y = b[1].isIR() ? b[1].value : toIR(b[1], b.locs[1], &x->type);
    ir::Type elem = x->type.pointer && y->type.pointer && x->type.element() == y->type.element()
                        ? x->type.element() : promote(x->type, y->type, "join", loc);
    auto shape = broadcastShapes(x->type, y->type, loc);
    x = broadcastTo(castElement(x, elem), shape, b.locs[0]);
    y = broadcastTo(castElement(y, elem), shape, b.locs[1]);
    shape.push_back(2);
    return SValue::ir(b_.op(OpCode::Join, {x, y}, x->type.withShape(shape)));
  }
  if (fn == "interleave") { // Triton's: join, then the last two dims merged (a0, b0, a1, b1, ...)
    CallArgs joinArgs = args;
    ir::Value *joined = toIR(*callShapeBuiltin("lang.join", joinArgs), loc);
    std::vector<int64_t> shape = joined->type.shape;
    if (shape.size() == 1) return SValue::ir(joined); // two scalars: <2>
    shape[shape.size() - 2] *= 2;
    shape.pop_back();
    return SValue::ir(reshapeTo(joined, shape, loc));
  }
  if (fn == "split") {
    Bound b = bind(*this, args, tlName, {{"a", true}});
    if (!b[0].isIR() || !b[0].value->type.isBlock() || b[0].value->type.shape.back() != 2)
      error(b.locs[0], "tl.split needs a block whose last dim is 2, got " + describe(b[0]));
    ir::Value *x = b[0].value;
    std::vector<int64_t> shape(x->type.shape.begin(), x->type.shape.end() - 1);
    ir::Type half = shape.empty() ? x->type.element() : x->type.withShape(shape);
    ir::Operation *op = b_.create(OpCode::Split, {x}, {half, half});
    return SValue::tuple({SValue::ir(op->result(0)), SValue::ir(op->result(1))});
  }
  if (fn == "cat") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"other", true}, {"can_reorder", false}, {"dim", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    ir::Value *y = toIR(b[1], b.locs[1], &x->type);
    if (!x->type.isBlock() || x->type != y->type)
      error(loc, "tl.cat needs two blocks of one type, got " + x->type.str() + " and " + y->type.str());
    if (b.has(3) && requireInt(b[3], b.locs[3], "tl.cat's dim") != 0) error(b.locs[3], "tl.cat only joins along dim 0");
    std::vector<int64_t> shape = x->type.shape;
    shape[0] *= 2;
    return SValue::ir(b_.op(OpCode::Cat, {x, y}, x->type.withShape(shape)));
  }
  if (fn == "flip") {
    Bound b = bind(*this, args, tlName, {{"x", true}, {"dim", false}});
    if (!b[0].isIR() || !b[0].value->type.isBlock()) error(b.locs[0], "tl.flip needs a block, got " + describe(b[0]));
    ir::Value *x = b[0].value;
    int64_t rank = static_cast<int64_t>(x->type.rank());
    int64_t dim = b.has(1) ? requireInt(b[1], b.locs[1], "tl.flip's dim") : rank - 1;
    if (dim < -rank || dim >= rank) error(b.locs[1], "tl.flip's dim " + std::to_string(dim) + " is out of range");
    if (dim < 0) dim += rank;
    if (x->type.shape[dim] == 1) return SValue::ir(x);
    return SValue::ir(b_.op(OpCode::Flip, {x}, x->type, {{"axis", dim}}));
  }
  return std::nullopt;
}

} // namespace tessera::spec
