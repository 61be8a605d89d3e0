// tl.reduce / tl.associative_scan with a @jit combine function, and what
// Triton builds on them: max/min with return_indices, argmax, argmin,
// xor_sum, cumsum, cumprod. The combine function is inlined on scalars into
// the region of a reduce_combine / scan op. tl.dot is BuiltinsDot.cpp.
#include "dsl/BuiltinArgs.h"

#include "llvm/Support/Casting.h"

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;

void Specializer::buildCombineRegion(ir::Operation *op, const SValue &combineFn, SourceLoc loc) {
  if (combineFn.kind != SValue::Kind::Function || !isJitFunction(*combineFn.fn, /*fusionDecorators=*/false))
    error(loc, "the combine function must be a @jit function, got " + describe(combineFn));
  size_t n = op->operands.size();
  ir::Block *region = op->region(0);
  std::vector<ir::Type> elems;
  for (ir::Value *v : op->operands) elems.push_back(v->type.element());
  CallArgs call;
  call.loc = loc;
  for (size_t side = 0; side < 2; ++side)
    for (size_t i = 0; i < n; ++i) {
      call.args.push_back(SValue::ir(region->addArgument(elems[i])));
      call.argLocs.push_back(loc);
    }
  ir::Block *outer = b_.block();
  auto after = outer->ops.end();
  for (auto it = outer->ops.begin(); it != outer->ops.end(); ++it)
    if (it->get() == op) after = std::next(it);
  b_.setInsertionPointToEnd(region);
  SValue r = inlineCall(*combineFn.fn, call);
  std::vector<SValue> results = r.kind == SValue::Kind::Tuple ? r.elems : std::vector<SValue>{r};
  if (results.size() != n)
    error(loc, "the combine function '" + combineFn.fn->name + "' must return " + std::to_string(n) + " value" +
                   (n == 1 ? "" : "s") + ", it returns " + std::to_string(results.size()));
  std::vector<ir::Value *> yields;
  for (size_t i = 0; i < n; ++i) {
    ir::Value *v = toIR(results[i], loc, &elems[i]);
    if (v->type.isBlock())
      error(loc, "the combine function '" + combineFn.fn->name + "' must return scalars, it returns " + v->type.str());
    yields.push_back(castElement(v, elems[i]));
  }
  b_.create(OpCode::Yield, yields, {});
  b_.setInsertionPoint(outer, after);
}

namespace {

std::vector<SValue> asList(const SValue &v) { return v.kind == SValue::Kind::Tuple ? v.elems : std::vector<SValue>{v}; }

SValue fromList(std::vector<SValue> values, bool tuple) {
  return tuple ? SValue::tuple(std::move(values)) : values.at(0);
}

// bf16 and small ints are summed / multiplied in wider types, as in Triton.
ir::Type accumulationType(const ir::Type &t) {
  if (t.scalar == ScalarType::BF16) return ir::Type(ScalarType::F32);
  if (t.isIntElement() && ir::bitWidth(t.scalar) < 32) return ir::Type(ir::isSigned(t.scalar) || t.scalar == ScalarType::I1 ? ScalarType::I32 : ScalarType::U32);
  return t.element();
}

} // namespace

// Common part of tl.reduce and tl.associative_scan: operands to IR blocks of one shape.
static std::vector<ir::Value *> combineOperands(Specializer &sp, const SValue &input, SourceLoc loc, const std::string &fname) {
  std::vector<ir::Value *> xs;
  for (const SValue &v : asList(input)) {
    if (!v.isIR()) sp.error(loc, fname + " needs blocks, got " + sp.describe(v));
    if (v.value->type.pointer) sp.error(loc, fname + " cannot combine pointers");
    xs.push_back(v.value);
  }
  if (xs.empty()) sp.error(loc, fname + " needs at least one block");
  for (ir::Value *x : xs)
    if (x->type.shape != xs[0]->type.shape)
      sp.error(loc, fname + "'s inputs must have one shape, got " + xs[0]->type.str() + " and " + x->type.str());
  return xs;
}

std::optional<SValue> Specializer::callReduceBuiltin(const std::string &name, CallArgs &args) {
  if (name.rfind("lang.", 0) != 0) return std::nullopt;
  const std::string fn = name.substr(5);
  const std::string tlName = "tl." + fn;
  SourceLoc loc = args.loc;

  // tl.reduce(input, axis, combine_fn, keep_dims=False): input may be a tuple.
  auto reduceWith = [&](const SValue &input, const SValue &axisArg, const SValue &combineFn, bool keepDims,
                        const std::string &what) -> SValue {
    std::vector<ir::Value *> xs = combineOperands(*this, input, loc, what);
    bool tuple = input.kind == SValue::Kind::Tuple;
    if (!xs[0]->type.isBlock()) return input; // reducing scalars is the identity
    std::vector<int64_t> inShape = xs[0]->type.shape;
    int64_t rank = static_cast<int64_t>(inShape.size()), axis = 0;
    if (axisArg.isNone()) {
      for (ir::Value *&x : xs) x = reshapeTo(x, {x->type.numElements()}, loc);
    } else {
      axis = requireInt(axisArg, loc, what + "'s axis");
      if (axis < -rank || axis >= rank)
        error(loc, "reduction axis " + std::to_string(axis) + " is out of range for a block of rank " + std::to_string(rank));
      if (axis < 0) axis += rank;
    }
    std::vector<int64_t> outShape = xs[0]->type.shape;
    outShape.erase(outShape.begin() + axis);
    std::vector<ir::Type> types;
    for (ir::Value *x : xs) types.push_back(outShape.empty() ? x->type.element() : x->type.withShape(outShape));
    ir::Operation *op = b_.create(OpCode::ReduceCombine, xs, types, {{"axis", axis}}, 1);
    buildCombineRegion(op, combineFn, loc);
    std::vector<SValue> results;
    for (auto &r : op->results) {
      ir::Value *v = r.get();
      if (keepDims) {
        std::vector<int64_t> kept = inShape;
        if (axisArg.isNone()) kept.assign(inShape.size(), 1);
        else kept[axis] = 1;
        v = v->type.isBlock() ? b_.op(OpCode::ExpandDims, {v}, v->type.withShape(kept), {{"axis", axis}})
                              : b_.op(OpCode::Splat, {v}, v->type.withShape(kept));
      }
      results.push_back(SValue::ir(v));
    }
    return fromList(results, tuple);
  };
  auto scanWith = [&](const SValue &input, const SValue &axisArg, const SValue &combineFn, bool reverse,
                      const std::string &what) -> SValue {
    std::vector<ir::Value *> xs = combineOperands(*this, input, loc, what);
    bool tuple = input.kind == SValue::Kind::Tuple;
    if (!xs[0]->type.isBlock()) return input;
    int64_t rank = static_cast<int64_t>(xs[0]->type.rank());
    int64_t axis = axisArg.isNone() ? 0 : requireInt(axisArg, loc, what + "'s axis");
    if (axis < -rank || axis >= rank)
      error(loc, "scan axis " + std::to_string(axis) + " is out of range for a block of rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    std::vector<ir::Type> types;
    for (ir::Value *x : xs) types.push_back(x->type);
    ir::Operation *op = b_.create(OpCode::Scan, xs, types, {{"axis", axis}, {"reverse", int64_t(reverse)}}, 1);
    buildCombineRegion(op, combineFn, loc);
    std::vector<SValue> results;
    for (auto &r : op->results) results.push_back(SValue::ir(r.get()));
    return fromList(results, tuple);
  };
  auto flag = [&](const Bound &b, size_t i, const char *what) { return b.has(i) && requireInt(b[i], b.locs[i], what) != 0; };
  // max/min with indices: reduce (values, indices along the axis) together.
  auto withIndices = [&](ir::Value *x, const SValue &axisArg, bool tieBreakLeft, bool keepDims, bool isMax) -> SValue {
    if (!x->type.isBlock()) error(loc, tlName + " needs a block");
    if (x->type.scalar == ScalarType::BF16) x = castElement(x, ir::Type(ScalarType::F32));
    std::vector<int64_t> shape = x->type.shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    ir::Value *values = x;
    int64_t axis = 0;
    if (axisArg.isNone()) {
      values = reshapeTo(x, {x->type.numElements()}, loc);
    } else {
      axis = requireInt(axisArg, loc, tlName + "'s axis");
      if (axis < -rank || axis >= rank)
        error(loc, "reduction axis " + std::to_string(axis) + " is out of range for a block of rank " + std::to_string(rank));
      if (axis < 0) axis += rank;
    }
    int64_t n = values->type.shape[axis];
    ir::Value *index = b_.op(OpCode::MakeRange, {}, ir::Type(ScalarType::I32).withShape({n}), {{"start", int64_t(0)}, {"end", n}});
    for (int64_t d = 0; d < static_cast<int64_t>(values->type.rank()); ++d) {
      if (d == axis) continue;
      std::vector<int64_t> s = index->type.shape;
      s.insert(s.begin() + d, 1);
      index = b_.op(OpCode::ExpandDims, {index}, index->type.withShape(s), {{"axis", d}});
    }
    index = broadcastTo(index, values->type.shape, loc);
    std::string combine = std::string(isMax ? "_argmax" : "_argmin") + "_combine_tie_break_" + (tieBreakLeft ? "left" : "fast");
    SValue axisValue = axisArg.isNone() ? SValue::constant(ConstexprValue::ofInt(0)) : SValue::constant(ConstexprValue::ofInt(axis));
    SValue r = reduceWith(SValue::tuple({SValue::ir(values), SValue::ir(index)}), axisValue, preludeFunction(combine), false, tlName);
    if (keepDims) {
      std::vector<int64_t> kept = shape;
      if (axisArg.isNone()) kept.assign(shape.size(), 1);
      else kept[axis] = 1;
      for (SValue &v : r.elems) v = SValue::ir(reshapeTo(v.value, kept, loc));
    }
    return r;
  };

  if (fn == "reduce") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", true}, {"combine_fn", true}, {"keep_dims", false}});
    return reduceWith(b[0], b[1], b[2], flag(b, 3, "keep_dims"), tlName);
  }
  if (fn == "associative_scan") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", true}, {"combine_fn", true}, {"reverse", false}});
    return scanWith(b[0], b[1], b[2], flag(b, 3, "reverse"), tlName);
  }
  if (fn == "cumsum" || fn == "cumprod") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", false}, {"reverse", false}, {"dtype", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    if (x->type.pointer) error(b.locs[0], tlName + " cannot scan pointers");
    x = castElement(x, b.has(3) ? requireDType(b[3], b.locs[3], tlName + "'s dtype") : accumulationType(x->type));
    return scanWith(SValue::ir(x), b[1], preludeFunction(fn == "cumsum" ? "_sum_combine" : "_prod_combine"),
                    flag(b, 2, "reverse"), tlName);
  }
  if (fn == "xor_sum" || fn == "reduce_or") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", fn == "reduce_or"}, {"keep_dims", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    if (!x->type.isIntElement()) error(b.locs[0], tlName + " needs integers, got " + x->type.element().str());
    return reduceWith(SValue::ir(x), b[1], preludeFunction(fn == "xor_sum" ? "_xor_combine" : "_or_combine"),
                      flag(b, 2, "keep_dims"), tlName);
  }
  if (fn == "argmax" || fn == "argmin") {
    Bound b = bind(*this, args, tlName, {{"input", true}, {"axis", true}, {"tie_break_left", false}, {"keep_dims", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    bool left = !b.has(2) || flag(b, 2, "tie_break_left");
    return withIndices(x, b[1], left, flag(b, 3, "keep_dims"), fn == "argmax").elems[1];
  }
  if (fn == "max" || fn == "min") {
    std::vector<ParamSpec> params = {{"input", true}, {"axis", false}, {"return_indices", false},
                                     {"return_indices_tie_break_left", false}, {"keep_dims", false}};
    Bound b = spec::bind(*this, args, tlName, params);
    if (!flag(b, 2, "return_indices")) return std::nullopt; // the plain reduction (Builtins.cpp)
    ir::Value *x = toIR(b[0], b.locs[0]);
    bool left = !b.has(3) || flag(b, 3, "return_indices_tie_break_left");
    return withIndices(x, b[1], left, flag(b, 4, "keep_dims"), fn == "max");
  }
  return std::nullopt;
}

} // namespace tessera::spec
