// tl.dot_scaled: the product of two blocks in microscaling formats (OCP MX: e2m1, e4m3,
// e5m2 with one e8m0 scale per 32 elements along K; bf16 and fp16 too). The arguments are
// checked here with the rules and messages of Triton's semantic.py (dot_scaled,
// _bitcast_to_fp_type, verify_scaled_shape); the product is the language prelude's
// _dot_scaled (dsl/LanguagePrelude.cpp), the decomposition Triton runs where the tensor
// cores have no microscaled formats (Hopper and older): each operand upcast to bf16 (fp16
// when a format is fp16) with its scale applied, then a plain tl.dot with an f32
// accumulator, so it takes the bf16/fp16 tensor-core dot.
#include "dsl/BuiltinArgs.h"

#include <algorithm>
#include <cctype>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The float type a format's elements have once bitcast (e2m1 stays packed bytes).
std::optional<ScalarType> formatFloatType(const std::string &format) {
  if (format == "e4m3") return ScalarType::F8E4M3;
  if (format == "e5m2") return ScalarType::F8E5M2;
  if (format == "bf16") return ScalarType::BF16;
  if (format == "fp16") return ScalarType::F16;
  return std::nullopt;
}

} // namespace

std::optional<SValue> Specializer::callDotScaledBuiltin(const std::string &name, CallArgs &args) {
  if (name != "lang.dot_scaled") return std::nullopt;
  const std::string fname = "tl.dot_scaled";
  Bound b = bind(*this, args, fname,
                 {{"lhs", true}, {"lhs_scale", true}, {"lhs_format", true}, {"rhs", true}, {"rhs_scale", true},
                  {"rhs_format", true}, {"acc", false}, {"fast_math", false}, {"lhs_k_pack", false},
                  {"rhs_k_pack", false}, {"out_dtype", false}});
  enum { kLhs, kLhsScale, kLhsFormat, kRhs, kRhsScale, kRhsFormat, kAcc, kFastMath, kLhsKPack, kRhsKPack, kOutDType };
  const SourceLoc loc = args.loc;

  if (b.has(kOutDType) && requireDType(b[kOutDType], b.locs[kOutDType], "tl.dot_scaled's out_dtype") !=
                              ir::Type(ScalarType::F32))
    error(b.locs[kOutDType], "Only float32 is supported for out_dtype at the moment");

  auto block = [&](size_t i, const char *what) {
    if (!b[i].isIR() || !b[i].value->type.isBlock() || b[i].value->type.pointer)
      error(b.locs[i], std::string("tl.dot_scaled's ") + what + " must be a block of numbers, got " + describe(b[i]));
    return b[i].value;
  };
  ir::Value *lhs = block(kLhs, "lhs"), *rhs = block(kRhs, "rhs");
  const size_t rank = lhs->type.rank();
  if ((rank != 2 && rank != 3) || rhs->type.rank() != rank)
    error(loc, "Both inputs must be either 2D or 3D; (lhs: " + shapeText(lhs->type.shape) +
                   " vs rhs: " + shapeText(rhs->type.shape) + ")");

  // The formats: constexpr strings naming one of Triton's ScaleDotElemType values, of which
  // e2m3 and e3m2 are not implemented (by Triton either).
  auto format = [&](size_t i, const char *what) {
    if (b[i].kind == SValue::Kind::DType || (b[i].isConst() && b[i].c.kind != ConstexprValue::Kind::String))
      error(b.locs[i], std::string("tl.dot_scaled's ") + what + " must be a string (\"e2m1\", \"e4m3\", \"e5m2\", "
                                                                  "\"bf16\" or \"fp16\"), got " + describe(b[i]));
    ConstexprValue c = requireConst(b[i], b.locs[i], std::string("tl.dot_scaled's ") + what);
    std::string lower;
    for (char ch : c.stringValue) lower += char(std::tolower(static_cast<unsigned char>(ch)));
    static const char *known[] = {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "bf16", "fp16"};
    if (std::find(std::begin(known), std::end(known), lower) == std::end(known))
      error(b.locs[i], "Invalid float format: " + c.stringValue + ".");
    if (c.stringValue != "e2m1" && !formatFloatType(c.stringValue))
      error(b.locs[i], std::string("NYI: ") + what + " " + c.stringValue);
    return c.stringValue;
  };
  const std::string lhsFormat = format(kLhsFormat, "lhs_format"), rhsFormat = format(kRhsFormat, "rhs_format");

  // _bitcast_to_fp_type: e2m1 comes packed in uint8; the others as their float type or as
  // the unsigned integers of their width, bitcast here.
  auto asFormat = [&](ir::Value *x, const std::string &fmt, size_t i) {
    const ScalarType have = x->type.scalar;
    std::optional<ScalarType> want = formatFloatType(fmt);
    if (!want) {
      if (have != ScalarType::U8)
        error(b.locs[i], "e2m1 format must be packed as uint8. Got " + tritonDTypeName(SValue::dtypeOf(ir::Type(have))));
      return x;
    }
    if (have == *want) return x;
    const ScalarType bits = ir::bitWidth(*want) == 8 ? ScalarType::U8 : ScalarType::U16;
    if (have != bits)
      error(b.locs[i], "Unexpected dtype for " + fmt + ". Got " + tritonDTypeName(SValue::dtypeOf(ir::Type(have))));
    return b_.op(OpCode::Bitcast, {x}, x->type.withElement(ir::Type(*want)));
  };
  lhs = asFormat(lhs, lhsFormat, kLhs);
  rhs = asFormat(rhs, rhsFormat, kRhs);

  auto flag = [&](size_t i, const char *what, bool byDefault) {
    return b.has(i) ? requireInt(b[i], b.locs[i], std::string("tl.dot_scaled's ") + what) != 0 : byDefault;
  };
  const bool lhsKPack = flag(kLhsKPack, "lhs_k_pack", true), rhsKPack = flag(kRhsKPack, "rhs_k_pack", true);
  const bool fastMath = flag(kFastMath, "fast_math", false);
  if (!lhsKPack && lhsFormat != "e2m1")
    error(b.locs[kLhsKPack], "only mxfp4 inputs can be packed along a dimension different than K");
  if (!rhsKPack && rhsFormat != "e2m1")
    error(b.locs[kRhsKPack], "only mxfp4 inputs can be packed along a dimension different than K");

  // The unpacked shapes: e2m1 holds two elements a byte, along K or (k_pack=False) along M / N.
  int64_t M = lhs->type.shape[rank - 2], kLhsBytes = lhs->type.shape[rank - 1];
  int64_t kRhsBytes = rhs->type.shape[rank - 2], N = rhs->type.shape[rank - 1];
  const int64_t packedA = lhsFormat == "e2m1" ? 2 : 1, packedB = rhsFormat == "e2m1" ? 2 : 1;
  const int64_t K = lhsKPack ? packedA * kLhsBytes : kLhsBytes;
  if (K != (rhsKPack ? packedB * kRhsBytes : kRhsBytes))
    error(loc, "Reduction dimension should pack the same number of elements; (lhs: " + shapeText(lhs->type.shape) +
                   " vs rhs: " + shapeText(rhs->type.shape) + ")");
  if (!lhsKPack) M *= packedA;
  if (!rhsKPack) N *= packedB;
  std::vector<int64_t> batch;
  if (rank == 3) {
    if (lhs->type.shape[0] != rhs->type.shape[0])
      error(loc, "tl.dot_scaled: the batch dims differ (lhs: " + shapeText(lhs->type.shape) +
                     " vs rhs: " + shapeText(rhs->type.shape) + ")");
    batch.push_back(lhs->type.shape[0]);
  }
  std::vector<int64_t> resultShape = batch;
  resultShape.push_back(M);
  resultShape.push_back(N);

  if (b.has(kAcc)) {
    ir::Value *acc = toIR(b[kAcc], b.locs[kAcc]);
    if (acc->type.shape != resultShape || acc->type.pointer || acc->type.scalar != ScalarType::F32)
      error(b.locs[kAcc], "tl.dot_scaled's acc must be a float32 block of shape " + shapeText(resultShape) +
                              ", got " + acc->type.str());
  }

  // verify_scaled_shape: one uint8 (e8m0) scale per 32 elements along K, the rows of the lhs'
  // scales along M and of the rhs' along N: [M, K // 32] and [N, K // 32] (batched: [B, ...]).
  auto checkScale = [&](size_t i, const char *what, int64_t rows) {
    if (b[i].isNone()) return;
    if (!b[i].isIR() || !b[i].value->type.isBlock())
      error(b.locs[i], std::string(what) + " must be a uint8 block of e8m0 scales or None, got " + describe(b[i]));
    const ir::Type &t = b[i].value->type;
    if (t.pointer || t.scalar != ScalarType::U8)
      error(b.locs[i], std::string(what) + " must hold uint8 (e8m0) scales, got " +
                           tritonDTypeName(SValue::dtypeOf(t.element())) +
                           (t.scalar == ScalarType::F8E4M3 ? " (fp8e4nv scales for groups of 16 are not supported)" : ""));
    if (K % 32 != 0)
      error(b.locs[i], std::string(what) + ": with scales, K (" + std::to_string(K) +
                           ") must be a multiple of the group size 32");
    std::vector<int64_t> want = batch;
    want.push_back(rows);
    want.push_back(K / 32);
    if (t.shape != want)
      error(b.locs[i], std::string(what) + " must be a tensor of shape " + shapeText(want) + ". Got " +
                           shapeText(t.shape));
  };
  checkScale(kLhsScale, "lhs_scale", M);
  checkScale(kRhsScale, "rhs_scale", N);

  CallArgs call;
  call.loc = loc;
  auto pass = [&](SValue v, SourceLoc at) {
    call.args.push_back(std::move(v));
    call.argLocs.push_back(at);
  };
  auto constant = [](ConstexprValue c) { return SValue::constant(std::move(c)); };
  pass(SValue::ir(lhs), b.locs[kLhs]);
  pass(b[kLhsScale], b.locs[kLhsScale]);
  pass(constant(ConstexprValue::ofString(lhsFormat)), b.locs[kLhsFormat]);
  pass(constant(ConstexprValue::ofBool(lhsKPack)), b.locs[kLhsKPack]);
  pass(SValue::ir(rhs), b.locs[kRhs]);
  pass(b[kRhsScale], b.locs[kRhsScale]);
  pass(constant(ConstexprValue::ofString(rhsFormat)), b.locs[kRhsFormat]);
  pass(constant(ConstexprValue::ofBool(rhsKPack)), b.locs[kRhsKPack]);
  pass(b[kAcc], b.locs[kAcc]);
  pass(constant(ConstexprValue::ofBool(fastMath)), b.locs[kFastMath]);
  return callPrelude("dot_scaled", call);
}

} // namespace tessera::spec
