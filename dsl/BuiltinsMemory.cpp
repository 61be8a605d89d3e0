// tl.* memory beyond plain load/store: atomics (atomic_add, _max, _min, _and,
// _or, _xor, _xchg, _cas with mask/sem/scope) and block pointers
// (make_block_ptr, advance, and load/store through them with boundary_check
// and padding_option). A block pointer is a compile-time struct; loads and
// stores through it become plain pointer blocks and masks here, as Triton's
// rewrite-tensor-pointer pass does, so codegen never sees it.
#include "dsl/BuiltinArgs.h"

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

} // namespace tessera::spec
