// tl.dot, as Triton 3.6's core.dot and semantic.dot type it:
// - any rank >= 2 with equal leading (batch) dims: a rank above 3 is reshaped
//   to one batch dim, dotted as a 3-D (batched) dot and reshaped back;
// - fp8 operands are widened to f16 (exact), other mixed types promoted;
// - input_precision "tf32" / "tf32x3" / "ieee" go on the dot op (codegen picks
//   the instruction), "bf16x3" / "bf16x6" on f32 operands become Triton's sum of
//   bf16 dots (its F32DotTC pass) here, so the interpreter and every back-end
//   compute the same emulation and the bf16 dots take the tensor cores.
#include "dsl/BuiltinArgs.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;

namespace {

// Triton's allowed_dot_input_precisions on NVIDIA, in its order (its error prints the tuple).
const char *const kInputPrecisions[] = {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"};

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return "[" + dims + "]";
}

// x (f32) as the sum of `parts` bf16 values, largest first: each part is the
// remainder so far rounded to bf16 (round to nearest even, arith.truncf).
std::vector<ir::Value *> splitIntoBf16(Specializer &sp, ir::Value *x, int parts) {
  ir::Builder &b = sp.builder();
  std::vector<ir::Value *> out;
  for (int i = 0; i < parts; ++i) {
    ir::Value *part = sp.castElement(x, ir::Type(ScalarType::BF16));
    if (i + 1 < parts) x = b.op(OpCode::Sub, {x, sp.castElement(part, ir::Type(ScalarType::F32))}, x->type);
    out.push_back(part);
  }
  return out;
}

// Triton's BF16xN rewrite of an f32 dot (F32DotTC): with a = a0 + a1 + a2 and
// b = b0 + b1 + b2 split into bf16, bf16x3 adds a1*b0 + a0*b1 and bf16x6 also
// a1*b1 + a2*b0 + a0*b2, small terms first, each a bf16 dot accumulating in f32.
// A NaN among the small terms is dropped (an infinite operand has a0 = inf and
// a1 = NaN), then a0*b0 and the accumulator are added.
ir::Value *bf16EmulatedDot(Specializer &sp, ir::Value *a, ir::Value *b, ir::Value *acc, int parts) {
  ir::Builder &bld = sp.builder();
  const std::vector<ir::Value *> as = splitIntoBf16(sp, a, parts), bs = splitIntoBf16(sp, b, parts);
  const ir::Type f32 = acc->type.withElement(ir::Type(ScalarType::F32));
  const std::map<std::string, ir::Attribute> ieee = {{"input_precision", std::string("ieee")}};
  auto dot = [&](ir::Value *x, ir::Value *y, ir::Value *c) { return bld.op(OpCode::Dot, {x, y, c}, f32, ieee); };
  enum { hi = 0, mid = 1, lo = 2 };
  ir::Value *zero = bld.floatConstant(0.0, f32);
  ir::Value *sum = zero;
  if (parts == 3) {
    sum = dot(as[mid], bs[mid], sum);
    sum = dot(as[lo], bs[hi], sum);
    sum = dot(as[hi], bs[lo], sum);
  }
  sum = dot(as[mid], bs[hi], sum);
  sum = dot(as[hi], bs[mid], sum);
  ir::Value *isNan = bld.op(OpCode::Cmp, {sum, sum}, f32.withElement(ir::Type(ScalarType::I1)),
                            {{"predicate", std::string("ne")}});
  sum = bld.op(OpCode::Select, {isNan, zero, sum}, f32);
  sum = dot(as[hi], bs[hi], sum);
  sum = bld.op(OpCode::Add, {sum, sp.castElement(acc, ir::Type(ScalarType::F32))}, f32);
  return sp.castElement(sum, acc->type.element());
}

} // namespace

std::optional<SValue> Specializer::callDotBuiltin(const std::string &name, CallArgs &args) {
  if (name != "lang.dot") return std::nullopt;
  const std::string tlName = "tl.dot";
  SourceLoc loc = args.loc;
  Bound b = bind(*this, args, tlName,
                 {{"input", true}, {"other", true}, {"acc", false}, {"input_precision", false}, {"allow_tf32", false},
                  {"max_num_imprecise_acc", false}, {"out_dtype", false}});
  ir::Value *a = toIR(b[0], b.locs[0]), *bb = toIR(b[1], b.locs[1]);
  if (b.has(3) && b.has(4)) error(loc, "Only one of input_precision and allow_tf32 can be specified");
  // core.dot's shape checks (its messages, with the shapes).
  const size_t rank = a->type.rank();
  const std::string shapes = ", got " + a->type.str() + " and " + bb->type.str();
  if (rank < 2 || bb->type.rank() != rank) error(loc, "input and other must have equal ranks >= 2" + shapes);
  const std::vector<int64_t> batch(a->type.shape.begin(), a->type.shape.end() - 2);
  if (!std::equal(batch.begin(), batch.end(), bb->type.shape.begin()))
    error(loc, "input and other must have equal batch shapes" + shapes);
  if (a->type.shape[rank - 1] != bb->type.shape[rank - 2])
    error(loc, "input and other must have equal reduction dimensions" + shapes);
  if (a->type.pointer || bb->type.pointer) error(loc, "tl.dot needs numbers, got pointers");
  const int64_t M = a->type.shape[rank - 2], K = a->type.shape[rank - 1], N = bb->type.shape[rank - 1];

  // semantic.dot: float inputs never accumulate in bf16.
  if (b.has(6) && !a->type.isIntElement() &&
      requireDType(b[6], b.locs[6], "tl.dot's out_dtype").scalar == ScalarType::BF16)
    error(b.locs[6], "out_dtype=bfloat16 is unsupported. Please use out_dtype=float32/float16 and cast with "
                     "`.to(tl.bfloat16)`");
  // semantic.dot upcasts fp8e4b15 operands to fp16 (no MMA takes it; Triton warns that it is slow on sm_90).
  if (a->type.scalar == ScalarType::F8E4B15) a = castElement(a, ir::Type(ScalarType::F16));
  if (bb->type.scalar == ScalarType::F8E4B15) bb = castElement(bb, ir::Type(ScalarType::F16));
  auto isFp8 = [](const ir::Type &t) { return t.scalar == ScalarType::F8E4M3 || t.scalar == ScalarType::F8E5M2; };
  const bool fp8Operands = isFp8(a->type) && isFp8(bb->type); // any pair, mixed too, as Triton
  std::map<std::string, ir::Attribute> fp8Attrs;
  if (fp8Operands) {
    // Triton's limit on how many products Hopper's fp8 wgmma may add in its own reduced
    // precision before they go into the f32 accumulator (WgmmaDot.cpp); absent: no limit,
    // Triton's default on sm_90 (2^30).
    fp8Attrs["fp8"] = int64_t{1};
    if (b.has(5)) {
      const int64_t imprecise = requireInt(b[5], b.locs[5], "tl.dot's max_num_imprecise_acc");
      fp8Attrs["max_num_imprecise_acc"] = imprecise;
      if (imprecise > K)
        error(b.locs[5], "max_num_imprecise_acc (" + std::to_string(imprecise) + ") must be <= K (" +
                             std::to_string(K) + ")");
    }
    if (b.has(6)) {
      const ir::Type out = requireDType(b[6], b.locs[6], "tl.dot's out_dtype");
      if (out.scalar != ScalarType::F32 && out.scalar != ScalarType::F16)
        error(b.locs[6], "tl.dot of fp8 inputs needs out_dtype float32 or float16, got " + out.str());
    }
    // Every e4m3 and e5m2 value is an f16, and the products of two are exact in f32: the
    // f16 tensor-core dot with an f32 accumulator gives the fp8 dot's exact products. Where
    // the GPU has fp8 tensor cores, accelerate-dot takes these casts off again (the `fp8`
    // attribute says they are the front-end's, not the user's).
    a = castElement(a, ir::Type(ScalarType::F16));
    bb = castElement(bb, ir::Type(ScalarType::F16));
  }
  if (a->type.element() != bb->type.element()) {
    ir::Type common = promote(a->type, bb->type, "dot", loc);
    a = castElement(a, common);
    bb = castElement(bb, common);
  }

  // semantic._str_to_dot_input_precision: any case, one of the allowed names.
  std::string precision = "tf32", given;
  if (b.has(3)) {
    const ConstexprValue p = requireConst(b[3], b.locs[3], "input_precision");
    if (p.kind != ConstexprValue::Kind::String)
      error(b.locs[3], "tl.dot's input_precision must be a string, got " + describe(b[3]));
    given = precision = p.stringValue;
    for (char &c : precision) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  } else if (b.has(4) && !requireInt(b[4], b.locs[4], "allow_tf32")) {
    precision = "ieee";
  }
  if (std::find(std::begin(kInputPrecisions), std::end(kInputPrecisions), precision) == std::end(kInputPrecisions)) {
    std::string allowed;
    for (const char *p : kInputPrecisions) allowed += (allowed.empty() ? "'" : ", '") + std::string(p) + "'";
    error(b.locs[3], "input_precision must be one of (" + allowed + "). Got " + given);
  }

  std::vector<int64_t> shape = batch;
  shape.push_back(M);
  shape.push_back(N);
  ir::Type elem = a->type.element();
  ir::Type out = elem.isIntElement() ? ir::Type(ScalarType::I32)
                 : elem.scalar == ScalarType::F64 ? ir::Type(ScalarType::F64) : ir::Type(ScalarType::F32);
  // Float inputs accumulate in a float, int inputs in an int (the code generator has no mixed dot).
  auto kind = [](const ir::Type &t) { return t.isFloatElement() ? "float" : "integer"; };
  if (b.has(6)) {
    out = requireDType(b[6], b.locs[6], "tl.dot's out_dtype");
    if (out.isFloatElement() != elem.isFloatElement())
      error(b.locs[6], std::string("tl.dot of ") + kind(elem) + " inputs (" + elem.str() + ") needs a " + kind(elem) +
                           " out_dtype, got " + out.str());
    // Triton: int8 dots give int32, f32 and bf16 dots f32, f64 dots f64, whatever out_dtype says.
    if (elem.isIntElement()) out = ir::Type(ScalarType::I32);
    else if (elem.scalar == ScalarType::F32 || elem.scalar == ScalarType::BF16) out = ir::Type(ScalarType::F32);
    else if (elem.scalar == ScalarType::F64) out = ir::Type(ScalarType::F64);
  }
  ir::Value *acc;
  if (b.has(2)) {
    acc = toIR(b[2], b.locs[2]);
    if (acc->type.shape != shape)
      error(b.locs[2], "tl.dot's acc must have shape " + shapeText(shape) + ", got " + acc->type.str());
    if (acc->type.pointer || acc->type.isFloatElement() != elem.isFloatElement())
      error(b.locs[2], std::string("tl.dot of ") + kind(elem) + " inputs (" + elem.str() + ") needs a " + kind(elem) +
                           " accumulator, got " + acc->type.str());
  } else {
    acc = out.isFloatElement() ? b_.floatConstant(0.0, out.withShape(shape)) : b_.intConstant(0, out.withShape(shape));
  }

  // Ranks above 3: the batch dims as one (core.dot's reshape, row-major, so no data moves).
  const ir::Type resultType = acc->type;
  if (rank > 3) {
    const int64_t batches = std::accumulate(batch.begin(), batch.end(), int64_t(1), std::multiplies<int64_t>());
    a = reshapeTo(a, {batches, M, K}, loc);
    bb = reshapeTo(bb, {batches, K, N}, loc);
    acc = reshapeTo(acc, {batches, M, N}, loc);
  }
  ir::Value *result;
  if ((precision == "bf16x3" || precision == "bf16x6") && elem.scalar == ScalarType::F32)
    result = bf16EmulatedDot(*this, a, bb, acc, precision == "bf16x3" ? 2 : 3);
  else {
    std::map<std::string, ir::Attribute> attrs = fp8Attrs;
    attrs["input_precision"] = precision;
    result = b_.op(OpCode::Dot, {a, bb, acc}, acc->type, attrs);
  }
  return SValue::ir(reshapeTo(result, resultType.shape, loc));
}

} // namespace tessera::spec
