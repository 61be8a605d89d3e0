// tl.* memory beyond plain load/store: atomics (atomic_add, _max, _min, _and,
// _or, _xor, _xchg, _cas with mask/sem/scope) and block pointers
// (make_block_ptr, advance, and load/store through them with boundary_check
// and padding_option). A block pointer is a compile-time struct; loads and
// stores through it become plain pointer blocks and masks here, as Triton's
// rewrite-tensor-pointer pass does, so codegen never sees it.
#include "dsl/BuiltinArgs.h"

#include <algorithm>
#include <cmath>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

namespace {

enum BlockPtrField { kBase, kShape, kStrides, kOffsets, kBlockShape, kOrder };

std::string constString(const Specializer &sp, const SValue &v, SourceLoc loc, const std::string &what) {
  ConstexprValue c = sp.requireConst(v, loc, what);
  if (c.kind != CK::String) sp.error(loc, what + " must be a string, got " + c.str());
  return c.stringValue;
}

} // namespace

// Pointers, mask (may be null) and the block shape of a load/store through a block pointer.
struct BlockAccess {
  ir::Value *ptrs;
  ir::Value *mask;
};

static BlockAccess lowerBlockPointer(Specializer &sp, ir::Builder &b, const SValue &bp, const SValue &boundaryCheck,
                                     SourceLoc loc) {
  const std::vector<SValue> &f = bp.elems;
  ir::Value *base = f[kBase].value;
  size_t rank = f[kBlockShape].elems.size();
  std::vector<int64_t> blockShape;
  for (const SValue &d : f[kBlockShape].elems) blockShape.push_back(static_cast<int64_t>(d.c.intValue)); // checked by make_block_ptr
  std::vector<int64_t> checked;
  if (!boundaryCheck.isNone()) {
    std::vector<SValue> dims = boundaryCheck.kind == SValue::Kind::Tuple ? boundaryCheck.elems : std::vector<SValue>{boundaryCheck};
    for (const SValue &d : dims) {
      int64_t dim = sp.requireInt(d, loc, "boundary_check's dims");
      if (dim < 0 || dim >= static_cast<int64_t>(rank))
        sp.error(loc, "boundary_check dim " + std::to_string(dim) + " is out of range for a block pointer of rank " +
                          std::to_string(rank));
      checked.push_back(dim);
    }
  }
  // Address math in i64 (strides and shapes may be i64); offsets are i32 as in Triton.
  ir::Type i64(ScalarType::I64);
  ir::Value *offset = nullptr, *mask = nullptr;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = blockShape[d];
    ir::Value *range = b.op(OpCode::MakeRange, {}, ir::Type(ScalarType::I32).withShape({n}), {{"start", int64_t(0)}, {"end", n}});
    ir::Value *index = sp.castElement(range, i64);
    ir::Value *start = sp.castElement(sp.toIR(f[kOffsets].elems[d], loc, &i64), i64);
    index = b.op(OpCode::Add, {index, b.op(OpCode::Splat, {start}, i64.withShape({n}))}, i64.withShape({n}));
    // Place along dim d of the block.
    std::vector<int64_t> shape(rank, 1);
    shape[d] = n;
    auto expand = [&](ir::Value *v) {
      for (size_t k = 0; k < rank; ++k) {
        if (k == d) continue;
        std::vector<int64_t> s = v->type.shape;
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(k), 1);
        v = b.op(OpCode::ExpandDims, {v}, v->type.withShape(s), {{"axis", static_cast<int64_t>(k)}});
      }
      return sp.broadcastTo(v, blockShape, loc);
    };
    ir::Value *stride = sp.castElement(sp.toIR(f[kStrides].elems[d], loc, &i64), i64);
    ir::Value *term = b.op(OpCode::Mul, {index, b.op(OpCode::Splat, {stride}, i64.withShape({n}))}, i64.withShape({n}));
    term = expand(term);
    offset = offset ? b.op(OpCode::Add, {offset, term}, term->type) : term;
    if (std::find(checked.begin(), checked.end(), static_cast<int64_t>(d)) != checked.end()) {
      ir::Value *extent = sp.castElement(sp.toIR(f[kShape].elems[d], loc, &i64), i64);
      ir::Type bools = ir::Type(ScalarType::I1).withShape({n});
      ir::Value *zero = b.op(OpCode::Splat, {b.intConstant(0, i64)}, i64.withShape({n}));
      ir::Value *inside = b.op(OpCode::And, {b.op(OpCode::Cmp, {index, zero}, bools, {{"predicate", std::string("ge")}}),
                                            b.op(OpCode::Cmp, {index, b.op(OpCode::Splat, {extent}, i64.withShape({n}))}, bools,
                                                 {{"predicate", std::string("lt")}})},
                               bools);
      inside = expand(inside);
      mask = mask ? b.op(OpCode::And, {mask, inside}, inside->type) : inside;
    }
  }
  ir::Value *ptrs = b.op(OpCode::Splat, {base}, base->type.withShape(blockShape));
  return {b.op(OpCode::AddPtr, {ptrs, offset}, ptrs->type), mask};
}

static SValue pointerArgument(CallArgs &args) {
  if (!args.args.empty()) return args.args[0];
  for (const auto &[k, v] : args.keywords)
    if (k == "pointer") return v;
  return SValue::constant(ConstexprValue::none());
}

std::optional<SValue> Specializer::callMemoryBuiltin(const std::string &name, CallArgs &args) {
  if (name.rfind("lang.", 0) != 0) return std::nullopt;
  const std::string fn = name.substr(5);
  const std::string tlName = "tl." + fn;
  SourceLoc loc = args.loc;

  if (fn == "make_block_ptr") {
    Bound b = bind(*this, args, tlName, {{"base", true}, {"shape", true}, {"strides", true}, {"offsets", true},
                                         {"block_shape", true}, {"order", true}});
    ir::Value *base = toIR(b[0], b.locs[0]);
    if (!base->type.pointer || base->type.isBlock())
      error(b.locs[0], "tl.make_block_ptr's base must be a scalar pointer, got " + describe(b[0]));
    std::vector<SValue> fields = {SValue::ir(base)};
    size_t rank = 0;
    const char *names[] = {"shape", "strides", "offsets", "block_shape", "order"};
    for (size_t i = 1; i <= 5; ++i) {
      SValue t = b[i].kind == SValue::Kind::Tuple ? b[i] : SValue::tuple({b[i]});
      if (i == 1) rank = t.elems.size();
      if (t.elems.size() != rank)
        error(b.locs[i], std::string("tl.make_block_ptr's ") + names[i - 1] + " has " + std::to_string(t.elems.size()) +
                             " entries, the shape has " + std::to_string(rank));
      for (const SValue &e : t.elems) {
        if (i >= 4) {
          int64_t v = requireInt(e, b.locs[i], std::string("tl.make_block_ptr's ") + names[i - 1]);
          if (i == 4 && !isPowerOfTwo(v)) error(b.locs[i], "block dimensions must be powers of 2, got " + std::to_string(v));
        } else if (!(e.isIR() && e.value->type.isIntElement() && !e.value->type.isBlock()) &&
                   !(e.isConst() && (e.c.kind == CK::Int || e.c.kind == CK::Bool))) {
          error(b.locs[i], std::string("tl.make_block_ptr's ") + names[i - 1] + " must be integer scalars, got " + describe(e));
        }
      }
      fields.push_back(t);
    }
    SValue bp;
    bp.kind = SValue::Kind::BlockPointer;
    bp.elems = std::move(fields);
    return bp;
  }
  if (fn == "make_tensor_descriptor") return makeTensorDescriptor(args);
  if (fn == "load_tensor_descriptor" || fn == "store_tensor_descriptor") { // tl.load_tensor_descriptor(desc, offsets)
    if (args.args.empty()) error(loc, tlName + " takes a tensor descriptor first");
    CallArgs rest = args;
    rest.args.erase(rest.args.begin());
    rest.argLocs.erase(rest.argLocs.begin());
    const SValue &desc = args.args[0];
    if (desc.kind != SValue::Kind::TensorDescriptor && !(desc.isIR() && desc.value->type.isTensorDesc()))
      error(args.argLocs[0], tlName + " needs a tensor descriptor, got " + describe(desc));
    return callMethod(desc, fn == "load_tensor_descriptor" ? "load" : "store", rest);
  }
  if (fn == "advance") {
    Bound b = bind(*this, args, tlName, {{"base", true}, {"offsets", true}});
    if (b[0].kind != SValue::Kind::BlockPointer) error(b.locs[0], "tl.advance needs a block pointer, got " + describe(b[0]));
    SValue bp = b[0];
    SValue deltas = b[1].kind == SValue::Kind::Tuple ? b[1] : SValue::tuple({b[1]});
    std::vector<SValue> &offsets = bp.elems[kOffsets].elems;
    if (deltas.elems.size() != offsets.size())
      error(b.locs[1], "tl.advance needs " + std::to_string(offsets.size()) + " offsets, got " + std::to_string(deltas.elems.size()));
    ir::Type i32(ScalarType::I32);
    for (size_t d = 0; d < offsets.size(); ++d) {
      if (offsets[d].isConst() && deltas.elems[d].isConst()) {
        offsets[d] = binary(ast::BinaryOp::Add, offsets[d], deltas.elems[d], loc);
        continue;
      }
      ir::Value *o = castElement(toIR(offsets[d], loc, &i32), i32);
      ir::Value *delta = castElement(toIR(deltas.elems[d], b.locs[1], &i32), i32);
      offsets[d] = SValue::ir(b_.op(OpCode::Add, {o, delta}, i32));
    }
    return bp;
  }
  if ((fn == "load" || fn == "store") && pointerArgument(args).kind == SValue::Kind::BlockPointer) {
    bool load = fn == "load";
    Bound b = load ? bind(*this, args, tlName, {{"pointer", true}, {"mask", false}, {"other", false}, {"boundary_check", false},
                                                {"padding_option", false}, {"cache_modifier", false},
                                                {"eviction_policy", false}, {"volatile", false}})
                   : bind(*this, args, tlName, {{"pointer", true}, {"value", true}, {"mask", false}, {"boundary_check", false},
                                                {"cache_modifier", false}, {"eviction_policy", false}});
    if (b.has(load ? 1 : 2) || (load && b.has(2)))
      error(b.locs[load ? 1 : 2], tlName + " through a block pointer takes boundary_check, not mask/other");
    BlockAccess access = lowerBlockPointer(*this, b_, b[0], b[3], b.locs[3]);
    CallArgs plain;
    plain.loc = loc;
    plain.args = {SValue::ir(access.ptrs)};
    plain.argLocs = {b.locs[0]};
    if (!load) {
      plain.args.push_back(b[1]);
      plain.argLocs.push_back(b.locs[1]);
    }
    if (access.mask) {
      plain.keywords.emplace_back("mask", SValue::ir(access.mask));
      plain.keywordLocs.push_back(b.locs[3]);
    }
    if (load && b.has(4)) {
      std::string padding = constString(*this, b[4], b.locs[4], "padding_option");
      if (padding != "zero" && padding != "nan" && padding != "")
        error(b.locs[4], "padding_option must be \"zero\" or \"nan\", got \"" + padding + "\"");
      if (padding == "nan" && !access.ptrs->type.isFloatElement() && !ir::isFloat(access.ptrs->type.scalar))
        error(b.locs[4], "padding_option \"nan\" needs a float block pointer");
      if (access.mask && !padding.empty()) {
        plain.keywords.emplace_back("other", SValue::constant(ConstexprValue::ofFloat(padding == "nan" ? NAN : 0.0)));
        if (padding == "zero") plain.keywords.back().second = SValue::constant(ConstexprValue::ofInt(0));
        plain.keywordLocs.push_back(b.locs[4]);
      }
    }
    for (size_t i : load ? std::vector<size_t>{5, 6, 7} : std::vector<size_t>{4, 5}) {
      if (!b.has(i)) continue;
      const char *key = load ? (i == 5 ? "cache_modifier" : i == 6 ? "eviction_policy" : "volatile")
                             : (i == 4 ? "cache_modifier" : "eviction_policy");
      plain.keywords.emplace_back(key, b[i]);
      plain.keywordLocs.push_back(b.locs[i]);
    }
    return callBuiltin(name, plain);
  }

  // ---- atomics
  static const char *rmwKinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
  std::string kind;
  for (const char *k : rmwKinds)
    if (fn == std::string("atomic_") + k) kind = k;
  if (kind.empty() && fn != "atomic_cas") return std::nullopt;
  bool cas = fn == "atomic_cas";
  Bound b = cas ? bind(*this, args, tlName, {{"pointer", true}, {"cmp", true}, {"val", true}, {"sem", false}, {"scope", false}})
                : bind(*this, args, tlName, {{"pointer", true}, {"val", true}, {"mask", false}, {"sem", false}, {"scope", false}});
  if (b[0].kind == SValue::Kind::BlockPointer) error(b.locs[0], tlName + " does not take block pointers");
  ir::Value *ptr = toIR(b[0], b.locs[0]);
  if (!ptr->type.pointer) error(b.locs[0], tlName + " needs a pointer or a block of pointers, got " + describe(b[0]));
  if (ptr->type.constPointee) error(b.locs[0], "Cannot store to a constant pointer (a tl.const parameter)");
  ir::Type pointee(ptr->type.scalar);
  std::string sem = b.has(3) ? constString(*this, b[3], b.locs[3], "sem") : "acq_rel";
  std::string scope = b.has(4) ? constString(*this, b[4], b.locs[4], "scope") : "gpu";
  if (sem != "acq_rel" && sem != "acquire" && sem != "release" && sem != "relaxed")
    error(b.locs[3], "sem must be \"acq_rel\", \"acquire\", \"release\" or \"relaxed\", got \"" + sem + "\"");
  if (scope != "gpu" && scope != "cta" && scope != "sys")
    error(b.locs[4], "scope must be \"gpu\", \"cta\" or \"sys\", got \"" + scope + "\"");
  unsigned bits = ir::bitWidth(pointee.scalar);
  if (pointee.scalar == ScalarType::I1 || ir::isFloat(pointee.scalar) && bits == 8)
    error(b.locs[0], tlName + " does not support " + pointee.str());

  if (cas) {
    if (bits < 16) error(b.locs[0], "tl.atomic_cas needs 16-, 32- or 64-bit elements, got " + pointee.str());
    ir::Value *cmp = castElement(toIR(b[1], b.locs[1], &pointee), pointee);
    ir::Value *val = castElement(toIR(b[2], b.locs[2], &pointee), pointee);
    std::vector<int64_t> shape = broadcastShapes(ptr->type, cmp->type, loc);
    shape = broadcastShapes(ptr->type.withShape(shape), val->type, loc);
    ptr = broadcastTo(ptr, shape, b.locs[0]);
    cmp = broadcastTo(cmp, shape, b.locs[1]);
    val = broadcastTo(val, shape, b.locs[2]);
    return SValue::ir(b_.op(OpCode::AtomicCAS, {ptr, cmp, val}, val->type, {{"sem", sem}, {"scope", scope}}));
  }

  ir::Value *val = castElement(toIR(b[1], b.locs[1], &pointee), pointee);
  std::vector<int64_t> shape = broadcastShapes(ptr->type, val->type, loc);
  ir::Value *mask = nullptr;
  if (b.has(2)) {
    mask = toBool(toIR(b[2], b.locs[2]));
    if (!mask->type.isBoolElement()) error(b.locs[2], tlName + "'s mask must be boolean");
    shape = broadcastShapes(ptr->type.withShape(shape), mask->type, b.locs[2]);
  }
  ptr = broadcastTo(ptr, shape, b.locs[0]);
  val = broadcastTo(val, shape, b.locs[1]);
  if (mask) mask = broadcastTo(mask, shape, b.locs[2]);
  bool isFloat = pointee.isFloatElement();
  if ((kind == "and" || kind == "or" || kind == "xor") && !pointee.isIntElement())
    error(b.locs[1], tlName + " needs integers, got " + pointee.str());
  if (kind == "add" && isFloat && bits < 16) error(b.locs[0], tlName + " does not support " + pointee.str());
  if (kind == "xchg" && bits < 16) error(b.locs[0], "tl.atomic_xchg needs 16-, 32- or 64-bit elements, got " + pointee.str());
  if ((kind == "and" || kind == "or" || kind == "xor" || kind == "max" || kind == "min") && bits < 32)
    error(b.locs[0], tlName + " needs 32- or 64-bit elements, got " + pointee.str());

  auto rmw = [&](const std::string &k, ir::Value *p, ir::Value *v, ir::Value *m) {
    std::vector<ir::Value *> operands = {p, v};
    if (m) operands.push_back(m);
    return b_.op(OpCode::AtomicRMW, operands, v->type,
                 {{"kind", k}, {"sem", sem}, {"scope", scope}, {"has_mask", int64_t(m ? 1 : 0)}});
  };
  if ((kind == "max" || kind == "min") && isFloat) {
    // Triton's float max/min (semantic.py atomic_max): on the same bits, signed
    // int max (min) where the sign bit is clear, unsigned int min (max) where it
    // is set. The sign bit, not `val >= 0`: -0.0 and negative NaNs take the
    // unsigned side, and no value (NaN included) is left out of both.
    if (bits != 32 && bits != 64) error(b.locs[0], tlName + " supports float32 and float64 only, got " + pointee.str());
    ir::Type si(bits == 32 ? ScalarType::I32 : ScalarType::I64), ui(bits == 32 ? ScalarType::U32 : ScalarType::U64);
    ir::Value *iPtr = b_.op(OpCode::Bitcast, {ptr}, ptr->type.withElement(ir::Type::ptr(si.scalar)));
    ir::Value *uPtr = b_.op(OpCode::Bitcast, {ptr}, ptr->type.withElement(ir::Type::ptr(ui.scalar)));
    ir::Value *iVal = b_.op(OpCode::Bitcast, {val}, val->type.withElement(si));
    ir::Value *uVal = b_.op(OpCode::Bitcast, {val}, val->type.withElement(ui));
    ir::Value *zero = b_.intConstant(0, iVal->type);
    ir::Type bools = val->type.withElement(ir::Type(ScalarType::I1));
    ir::Value *pos = b_.op(OpCode::Cmp, {iVal, zero}, bools, {{"predicate", std::string("ge")}});
    ir::Value *neg = b_.op(OpCode::Cmp, {iVal, zero}, bools, {{"predicate", std::string("lt")}});
    auto both = [&](ir::Value *cond) { return mask ? b_.op(OpCode::And, {mask, cond}, cond->type) : cond; };
    ir::Value *posOld = rmw(kind, iPtr, iVal, both(pos));
    ir::Value *negOld = rmw(kind == "max" ? "umin" : "umax", uPtr, uVal, both(neg));
    ir::Value *negAsInt = b_.op(OpCode::Bitcast, {negOld}, negOld->type.withElement(si));
    ir::Value *old = b_.op(OpCode::Select, {pos, posOld, negAsInt}, posOld->type);
    return SValue::ir(b_.op(OpCode::Bitcast, {old}, val->type));
  }
  return SValue::ir(rmw(kind, ptr, val, mask));
}

// tl.make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
// a descriptor made by the kernel, with Triton's checks (semantic.make_tensor_descriptor)
// at the argument they concern. Like a block pointer it is a compile-time struct of
// its fields (base, shape, strides but the last, block_shape, padding); desc.load/desc.store become masked loads/stores of the block (elements
// outside the tensor read as the padding and are not written), as Triton's
// rewrite-tensor-descriptor-to-pointer pass does on targets without TMA. Not yet a
// tensormap in global scratch (docs/tma.md, "Descriptors made in the kernel").
// A made descriptor's strides: the leading ones it holds, then the last, 1.
SValue descriptorStrides(const SValue &desc) {
  SValue strides = desc.elems[2];
  strides.elems.push_back(SValue::constant(ConstexprValue::ofInt(1)));
  return strides;
}

SValue Specializer::makeTensorDescriptor(CallArgs &args) {
  const std::string tlName = "tl.make_tensor_descriptor";
  Bound b = bind(*this, args, tlName,
                 {{"base", true}, {"shape", true}, {"strides", true}, {"block_shape", true}, {"padding_option", false}});
  auto listOf = [](const SValue &v) { return v.kind == SValue::Kind::Tuple ? v : SValue::tuple({v}); };
  const SValue shape = listOf(b[1]), strides = listOf(b[2]), block = listOf(b[3]);
  const size_t rank = shape.elems.size();
  if (rank < 1 || rank > 5)
    error(b.locs[1], "Expected 1 <= ndim <= 5 but got " + std::to_string(rank) + " dimensions");
  if (strides.elems.size() != rank)
    error(b.locs[2], "Expected " + std::to_string(rank) + " strides but got " + std::to_string(strides.elems.size()));
  if (block.elems.size() != rank)
    error(b.locs[3], "Expected block_shape to have " + std::to_string(rank) + " dimensions but got " +
                         std::to_string(block.elems.size()));
  if (b[0].kind != SValue::Kind::IR && b[0].kind != SValue::Kind::Const)
    error(b.locs[0], tlName + "'s base must be a scalar pointer, got " + describe(b[0]));
  ir::Value *base = toIR(b[0], b.locs[0]);
  if (!base->type.pointer || base->type.isBlock())
    error(b.locs[0], tlName + "'s base must be a scalar pointer, got " + describe(b[0]));
  std::vector<SValue> blockShape;
  for (const SValue &e : block.elems) {
    int64_t v = requireInt(e, b.locs[3], tlName + "'s block_shape");
    if (!isPowerOfTwo(v)) error(b.locs[3], "block dimensions must be powers of 2, got " + std::to_string(v));
    blockShape.push_back(SValue::constant(ConstexprValue::ofInt(v)));
  }
  const int64_t elemBytes = std::max(ir::bitWidth(base->type.scalar) / 8, 1u);
  const int64_t lastBytes = blockShape.back().c.intValue * elemBytes;
  if (lastBytes < 16)
    error(b.locs[3], "Descriptor block shape must have at least 16 bytes in the last dimension, but got " +
                         constIntToString(blockShape.back().c.intValue) + " * " + std::to_string(elemBytes) + " = " +
                         std::to_string(lastBytes) + " bytes");
  const SValue &lastStride = strides.elems.back();
  if (!lastStride.isConst() || (lastStride.c.kind != CK::Int && lastStride.c.kind != CK::Bool) ||
      lastStride.c.intValue != 1)
    error(b.locs[2], "Tensor descriptor last dim must be 1 but got " +
                         (lastStride.isConst() ? lastStride.c.str() : describe(lastStride)));
  std::string padding = b.has(4) ? constString(*this, b[4], b.locs[4], "padding_option") : "zero";
  if (padding != "zero" && padding != "nan")
    error(b.locs[4], "padding_option must be \"zero\" or \"nan\", got \"" + padding + "\"");
  if (padding == "nan" && !ir::isFloat(base->type.scalar))
    error(b.locs[4], "Padding option `nan` is not supported for integer blocks");
  // shape as i32 and strides as i64 scalars (Triton's types); constants stay constants.
  auto scalars = [&](const SValue &list, SourceLoc loc, const std::string &what, ScalarType type) {
    std::vector<SValue> out;
    const ir::Type t(type);
    for (const SValue &e : list.elems) {
      if (e.isConst() && (e.c.kind == CK::Int || e.c.kind == CK::Bool)) {
        out.push_back(SValue::constant(ConstexprValue::ofInt(e.c.intValue)));
        continue;
      }
      if (!(e.isIR() && e.value->type.isIntElement() && !e.value->type.isBlock()))
        error(loc, tlName + "'s " + what + " must be integer scalars, got " + describe(e));
      out.push_back(SValue::ir(e.value->type == t ? e.value : castElement(e.value, t)));
    }
    return SValue::tuple(std::move(out));
  };
  SValue desc;
  desc.kind = SValue::Kind::TensorDescriptor;
  // The last stride, 1, is left out: a loop carries the other fields as values.
  SValue leadingStrides = strides;
  leadingStrides.elems.pop_back();
  desc.elems = {SValue::ir(base), scalars(shape, b.locs[1], "shape", ScalarType::I32),
                scalars(leadingStrides, b.locs[2], "strides", ScalarType::I64), SValue::tuple(std::move(blockShape)),
                SValue::constant(ConstexprValue::ofString(padding))};
  return desc;
}

SValue Specializer::callMadeDescriptorMethod(const SValue &desc, const std::string &method, CallArgs &args) {
  enum { kDescBase, kDescShape, kDescStrides, kDescBlockShape, kDescPadding, kDescTensorMap };
  static const char *atomics[] = {"atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor"};
  const bool atomic = std::find(std::begin(atomics), std::end(atomics), method) != std::end(atomics);
  // A descriptor argument's loads and stores on sm_90: through the TMA unit (its encoded map),
  // where one map copies its block and Tma.cpp's copies take it (checkTmaBlock: rank 2 to 5,
  // rows of at least 32 bytes).
  // fp16 / bf16 atomic_min / atomic_max, which only the TMA unit has (Triton's native reductions),
  // are TMA reductions there; the other atomics are pointer atomics everywhere.
  if (desc.elems.size() > kDescTensorMap && (spec_.arch == "sm_90" || spec_.arch == "sm_90a")) {
    ir::Value *map = desc.elems[kDescTensorMap].value;
    const std::vector<int64_t> &block = map->type.descBlock;
    const ScalarType t = map->type.scalar;
    const bool tma = ir::tmaCopiesBlock(t, block) && block.size() >= 2 && block.back() * (ir::bitWidth(t) / 8) >= 32;
    const bool onlyTmaReduces = (method == "atomic_min" || method == "atomic_max") &&
                                (t == ScalarType::F16 || t == ScalarType::BF16);
    if (tma && (method == "load" || method == "store" || onlyTmaReduces))
      return callDescriptorMethod(map, method, args);
  }
  if (method != "load" && method != "store" && !atomic)
    error(args.loc, "a tensor descriptor has no method '" + method +
                        "' (it has load, store and atomic_add/min/max/and/or/xor)");
  const bool store = method == "store" || atomic;
  Bound b = store ? bind(*this, args, method, {{"offsets", true}, {"value", true}})
                  : bind(*this, args, "load", {{"offsets", true}, {"cache_modifier", false}, {"eviction_policy", false}});
  if (atomic) { // the element types Triton's descriptor atomics take (semantic.descriptor_atomic_*)
    const ScalarType t = desc.elems[kDescBase].value->type.scalar;
    auto among = [&](std::initializer_list<ScalarType> ok) { return std::find(ok.begin(), ok.end(), t) != ok.end(); };
    bool supported = method == "atomic_add" ? among({ScalarType::U32, ScalarType::I32, ScalarType::U64, ScalarType::F32,
                                                     ScalarType::F16, ScalarType::BF16})
                     : method == "atomic_min" || method == "atomic_max"
                         ? among({ScalarType::U32, ScalarType::I32, ScalarType::U64, ScalarType::I64})
                         : among({ScalarType::U32, ScalarType::I32, ScalarType::U64, ScalarType::I64});
    if (!supported)
      error(args.loc, "desc." + method + " does not take " + ir::Type(t).str() + " elements (Unsupported dtype" +
                          ((method == "atomic_min" || method == "atomic_max") &&
                                   (t == ScalarType::F16 || t == ScalarType::BF16)
                               ? ": 16-bit float types require native tma support)"
                               : ")"));
  }
  const size_t rank = desc.elems[kDescBlockShape].elems.size();
  if (b[0].kind != SValue::Kind::Tuple)
    error(b.locs[0], method + "()'s offsets must be a list or tuple of " + std::to_string(rank) + " integers");
  if (b[0].elems.size() != rank)
    error(b.locs[0], method + "() takes " + std::to_string(rank) + " offsets for a " + std::to_string(rank) +
                         "-D descriptor, got " + std::to_string(b[0].elems.size()));
  for (const SValue &o : b[0].elems)
    if (!(o.isConst() && (o.c.kind == CK::Int || o.c.kind == CK::Bool)) &&
        !(o.isIR() && o.value->type.isIntElement() && !o.value->type.isBlock()))
      error(b.locs[0], method + "()'s offsets must be integer scalars, got " + describe(o));
  // The block pointer at those offsets, every dimension bounds-checked.
  std::vector<SValue> order, checked;
  for (size_t d = 0; d < rank; ++d) {
    order.push_back(SValue::constant(ConstexprValue::ofInt(static_cast<int64_t>(rank - 1 - d))));
    checked.push_back(SValue::constant(ConstexprValue::ofInt(static_cast<int64_t>(d))));
  }
  SValue bp;
  bp.kind = SValue::Kind::BlockPointer;
  bp.elems = {desc.elems[kDescBase], desc.elems[kDescShape], descriptorStrides(desc), b[0],
              desc.elems[kDescBlockShape], SValue::tuple(std::move(order))};
  BlockAccess access = lowerBlockPointer(*this, b_, bp, SValue::tuple(std::move(checked)), b.locs[0]);
  const ir::Type elem(access.ptrs->type.scalar);
  CallArgs plain;
  plain.loc = args.loc;
  plain.args = {SValue::ir(access.ptrs)};
  plain.argLocs = {b.locs[0]};
  if (store) {
    ir::Value *value = toIR(b[1], b.locs[1]);
    if (!value->type.isBlock() || value->type.pointer || value->type.shape != access.ptrs->type.shape)
      error(b.locs[1], method + "()'s value must be a block of the descriptor's shape " +
                           elem.withShape(access.ptrs->type.shape).str() + ", got " + value->type.str());
    plain.args.push_back(SValue::ir(value)); // converted to the element type, as tl.store converts
    plain.argLocs.push_back(b.locs[1]);
  }
  plain.keywords.emplace_back("mask", SValue::ir(access.mask));
  plain.keywordLocs.push_back(b.locs[0]);
  if (!store) {
    const SValue &padding = desc.elems[kDescPadding];
    SValue other;
    if (padding.isIR() && ir::isFloat(elem.scalar)) { // a descriptor argument's: 1 for "nan", known at the launch
      CallArgs pick;
      pick.loc = args.loc;
      pick.args = {SValue::ir(toBool(padding.value)), SValue::constant(ConstexprValue::ofFloat(NAN)),
                   SValue::constant(ConstexprValue::ofFloat(0))};
      pick.argLocs = {args.loc, args.loc, args.loc};
      other = callBuiltin("lang.where", pick);
    } else {
      const bool nan = padding.isConst() && padding.c.stringValue == "nan";
      other = SValue::constant(nan ? ConstexprValue::ofFloat(NAN) : ConstexprValue::ofInt(0));
    }
    plain.keywords.emplace_back("other", other);
    plain.keywordLocs.push_back(b.locs[0]);
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!b.has(i)) continue;
      plain.keywords.emplace_back(i == 1 ? "cache_modifier" : "eviction_policy", b[i]);
      plain.keywordLocs.push_back(b.locs[i]);
    }
  }
  if (atomic) {
    callBuiltin("lang." + method, plain);
    return SValue::constant(ConstexprValue::none()); // Triton's descriptor atomics return nothing
  }
  return callBuiltin(store ? "lang.store" : "lang.load", plain);
}

} // namespace tessera::spec
