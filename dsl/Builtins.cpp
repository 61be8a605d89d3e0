// The specialiser, part 3: the tl.* builtins of the language and Python's
// own builtins that kernels use (float("inf"), min/max on constexprs, ...).
// Each builtin binds its arguments by Triton's parameter names, checks them,
// and emits block IR.
#include "dsl/BuiltinArgs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

// Python's truth of an option's value (None, 0, "" and () are false; a runtime value is true).
static bool pythonTruth(const SValue &v) {
  if (v.kind == SValue::Kind::Tuple) return !v.elems.empty();
  if (!v.isConst()) return true;
  switch (v.c.kind) {
  case CK::Int: case CK::Bool: return v.c.intValue != 0;
  case CK::Float: return v.c.floatValue != 0;
  case CK::None: return false;
  case CK::String: return !v.c.stringValue.empty();
  default: return true;
  }
}

Bound bind(const Specializer &sp, CallArgs &args, const std::string &fname, std::vector<ParamSpec> params) {
  Bound b;
  b.values.assign(params.size(), SValue::constant(ConstexprValue::none()));
  b.locs.assign(params.size(), args.loc);
  std::vector<bool> given(params.size(), false);
  if (args.args.size() > params.size())
    sp.error(args.argLocs[params.size()], fname + "() takes at most " + std::to_string(params.size()) +
                                              " positional argument" + (params.size() == 1 ? "" : "s") + " but " +
                                              std::to_string(args.args.size()) + " were given");
  for (size_t i = 0; i < args.args.size(); ++i) {
    b.values[i] = args.args[i];
    b.locs[i] = args.argLocs[i];
    given[i] = true;
  }
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto &[name, value] = args.keywords[k];
    size_t i = 0;
    while (i < params.size() && name != params[i].name) ++i;
    if (i == params.size()) sp.error(args.keywordLocs[k], fname + "() got an unexpected keyword argument '" + name + "'");
    if (given[i]) sp.error(args.keywordLocs[k], fname + "() got multiple values for argument '" + name + "'");
    b.values[i] = value;
    b.locs[i] = args.keywordLocs[k];
    given[i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].required && !given[i])
      sp.error(args.loc, fname + "() missing required argument '" + std::string(params[i].name) + "'");
  return b;
}

std::map<std::string, ir::Attribute> propagateNanAttrs(const Specializer &sp, const SValue &v, SourceLoc loc,
                                                       const ir::Type &elem) {
  if (v.isNone()) return {};
  if (!v.isConst() || v.c.kind != CK::Enum || v.c.stringValue.rfind("PropagateNan.", 0) != 0)
    sp.error(loc, "propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got " + sp.describe(v));
  if (v.c.stringValue != "PropagateNan.ALL" || !elem.isFloatElement()) return {}; // ints have no NaN
  return {{"propagate_nan", int64_t{1}}};
}

std::vector<int64_t> shapeArgument(const Specializer &sp, const SValue &v, SourceLoc loc, const std::string &fname) {
  std::vector<int64_t> shape;
  if (v.isConst()) {
    shape.push_back(sp.requireInt(v, loc, fname + "'s shape"));
  } else if (v.kind == SValue::Kind::Tuple) {
    for (const SValue &d : v.elems) shape.push_back(sp.requireInt(d, loc, fname + "'s shape"));
  } else {
    sp.error(loc, fname + "'s shape must be a list of constexpr ints, got " + sp.describe(v));
  }
  for (int64_t d : shape)
    if (!isPowerOfTwo(d)) sp.error(loc, "block dimensions must be powers of 2, got " + std::to_string(d));
  return shape;
}

SValue Specializer::reduce(ir::Value *x, const SValue &axisArg, const std::string &kind, bool keepDims, SourceLoc loc) {
  if (!x->type.isBlock()) return SValue::ir(x); // reducing a scalar is the identity
  if (x->type.pointer) error(loc, "cannot reduce a block of pointers");
  if (axisArg.isNone()) {
    // Reduce over every dim: innermost first.
    ir::Value *v = x;
    while (v->type.isBlock()) {
      int64_t axis = static_cast<int64_t>(v->type.rank()) - 1;
      std::vector<int64_t> shape = v->type.shape;
      shape.erase(shape.begin() + axis);
      v = b_.op(OpCode::Reduce, {v}, v->type.withShape(shape), {{"axis", axis}, {"kind", kind}});
    }
    if (keepDims) {
      std::vector<int64_t> ones(x->type.rank(), 1);
      v = b_.op(OpCode::Splat, {v}, v->type.withShape(ones));
    }
    return SValue::ir(v);
  }
  int64_t axis = requireInt(axisArg, loc, "the reduction axis");
  int64_t rank = static_cast<int64_t>(x->type.rank());
  if (axis < -rank || axis >= rank)
    error(loc, "reduction axis " + std::to_string(axis) + " is out of range for a block of rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  std::vector<int64_t> shape = x->type.shape;
  shape.erase(shape.begin() + axis);
  ir::Value *r = b_.op(OpCode::Reduce, {x}, x->type.withShape(shape), {{"axis", axis}, {"kind", kind}});
  if (keepDims) {
    std::vector<int64_t> kept = x->type.shape;
    kept[axis] = 1;
    r = r->type.isBlock() ? b_.op(OpCode::ExpandDims, {r}, r->type.withShape(kept), {{"axis", axis}})
                          : b_.op(OpCode::Splat, {r}, r->type.withShape(kept));
  }
  return SValue::ir(r);
}

SValue Specializer::callMethod(const SValue &self, const std::string &method, CallArgs &args) {
  if (self.isIR() && self.value->type.isTensorDesc()) return callDescriptorMethod(self.value, method, args);
  if (self.kind == SValue::Kind::TensorDescriptor) return callMadeDescriptorMethod(self, method, args);
  if (std::optional<SValue> r = callLanguageMethod(self, method, args)) return *r;
  if (method == "to") {
    Bound b = bind(*this, args, "to", {{"dtype", true}, {"fp_downcast_rounding", false}, {"bitcast", false}});
    ir::Type target = requireDType(b[0], b.locs[0], "to()'s dtype");
    ir::Value *x = self.value;
    bool bitcast = b.has(2) && requireInt(b[2], b.locs[2], "bitcast") != 0;
    // A bitcast involving a pointer is a cast (Triton's semantic.bitcast).
    if (bitcast && !x->type.pointer && !target.pointer) {
      if (bitWidth(x->type.scalar) != bitWidth(target.scalar))
        error(args.loc, "Cannot bitcast data-type of size " + std::to_string(bitWidth(x->type.scalar)) +
                            " to data-type of size " + std::to_string(bitWidth(target.scalar)) + " (" +
                            x->type.element().str() + " to " + target.str() + ")");
      if (x->type.element() == target.element()) return SValue::ir(x);
      return SValue::ir(b_.op(OpCode::Bitcast, {x}, x->type.withElement(target)));
    }
    // Pointers convert to and from integers (int64/uint64; to int1: "not null"), and to other pointers.
    if (x->type.pointer && !target.pointer) {
      if (!target.isIntElement() || (bitWidth(target.scalar) != 64 && !target.isBoolElement()))
        error(args.loc, "cannot cast " + x->type.element().str() + " to " + target.str() +
                            " (a pointer converts to a 64-bit integer, to int1, or to another pointer)");
      if (target.isBoolElement()) {
        ir::Value *address = castElement(x, ir::Type(ScalarType::I64));
        ir::Value *zero = b_.intConstant(0, ir::Type(ScalarType::I64));
        if (address->type.isBlock()) zero = b_.op(OpCode::Splat, {zero}, address->type);
        return SValue::ir(b_.op(OpCode::Cmp, {address, zero}, address->type.withElement(target),
                                {{"predicate", std::string("ne")}}));
      }
    }
    if (target.pointer && !x->type.pointer && !x->type.isIntElement())
      error(args.loc, "cannot cast " + x->type.element().str() + " to " + target.str() +
                          " (only integers convert to pointers)");
    requireCastable(x->type, target, args.loc);
    // fp_downcast_rounding (Triton's semantic.cast): "rtne" (the default) or "rtz", and only for a
    // float conversion that narrows.
    if (b.has(1) && x->type.element() != target.element()) {
      const SValue &r = b[1];
      std::string mode = r.isConst() && r.c.kind == CK::String ? r.c.stringValue : describe(r);
      if (mode != "rtne" && mode != "rtz")
        error(b.locs[1], "Invalid rounding mode: " + mode + ". Supported rounding modes are 'rtne' and 'rtz'.");
      bool narrowing = x->type.isFloatElement() && target.isFloatElement() && !target.pointer &&
                       bitWidth(target.scalar) < bitWidth(x->type.scalar);
      if (!narrowing)
        error(b.locs[1], "fp_downcast_rounding should be set only for truncating fp conversions. Source scalar "
                         "type is " + x->type.element().str() + " and destination type is " + target.str());
      // fp8e4b15 rounds its own way whatever the mode (Triton's convert_custom_types ignores it).
      if (mode == "rtz" && target.scalar != ScalarType::F8E4B15) return SValue::ir(castTowardZero(x, target));
    }
    return SValue::ir(castElement(x, target));
  }
  // x.sum(axis), x.max(axis), ... mirror the tl functions.
  static const char *forwarded[] = {"sum", "max", "min", "exp", "exp2", "log", "log2", "sqrt", "abs"};
  for (const char *f : forwarded)
    if (method == f) {
      CallArgs withSelf = args;
      withSelf.args.insert(withSelf.args.begin(), self);
      withSelf.argLocs.insert(withSelf.argLocs.begin(), args.loc);
      return callBuiltin(std::string("lang.") + f, withSelf);
    }
  error(args.loc, describe(self) + " has no method '" + method + "'");
}

// desc.load([o0, o1, ...]): the block of the descriptor's shape at those
// element offsets; desc.store([o0, o1, ...], value) writes one there.
SValue Specializer::callDescriptorMethod(ir::Value *desc, const std::string &method, CallArgs &args) {
  const ir::Type &t = desc->type;
  // atomic_<op>: a TMA reduction (cp.reduce.async.bulk.tensor), which callMadeDescriptorMethod asks for
  // where only the TMA unit has the operation (fp16 / bf16 min and max).
  const bool reduce = method.rfind("atomic_", 0) == 0;
  if (method != "load" && method != "store" && !reduce)
    error(args.loc, "a tensor descriptor has no method '" + method + "' (it has load and store)");
  const bool store = method == "store" || reduce;
  Bound b = store ? bind(*this, args, method, {{"offsets", true}, {"value", true}})
                  : bind(*this, args, "load", {{"offsets", true}});
  if (b[0].kind != SValue::Kind::Tuple)
    error(b.locs[0], method + "()'s offsets must be a list or tuple of " + std::to_string(t.descBlock.size()) +
                         " integers");
  if (b[0].elems.size() != t.descBlock.size())
    error(b.locs[0], method + "() takes " + std::to_string(t.descBlock.size()) + " offsets for a " +
                         std::to_string(t.descBlock.size()) + "-D descriptor, got " + std::to_string(b[0].elems.size()));
  std::vector<ir::Value *> operands = {desc};
  const ir::Type i32(ScalarType::I32);
  for (const SValue &o : b[0].elems) {
    ir::Value *v = toIR(o, b.locs[0], &i32);
    if (v->type.isBlock() || !v->type.isIntElement())
      error(b.locs[0], method + "()'s offsets must be integer scalars, got " + v->type.str());
    operands.push_back(v->type == i32 ? v : castElement(v, i32));
  }
  const ir::Type block = ir::Type(t.scalar).withShape(t.descBlock);
  if (!store) return SValue::ir(b_.op(OpCode::DescLoad, operands, block));
  ir::Value *value = toIR(b[1], b.locs[1]);
  if (!value->type.isBlock() || value->type.pointer || value->type.shape != block.shape)
    error(b.locs[1], "store()'s value must be a block of the descriptor's shape " + block.str() + ", got " +
                         value->type.str());
  requireCastable(value->type, ir::Type(t.scalar), b.locs[1]);
  if (value->type.scalar != t.scalar) value = castElement(value, ir::Type(t.scalar)); // as tl.store converts
  operands.push_back(value);
  std::map<std::string, ir::Attribute> attrs;
  if (reduce) attrs["reduce"] = method.substr(7); // "min", "max", ...
  b_.create(OpCode::DescStore, operands, {}, std::move(attrs));
  return SValue::constant(ConstexprValue::none());
}

// Python's hasattr on the object Triton's code generator holds for the value: a tensor
// (Triton's `tensor`: its fields and member functions), a constexpr (`value`, `type` and
// its operators; None and Python numbers are constexprs), a dtype, a tuple, ...
static bool hasAttribute(Specializer &sp, CallArgs &args) {
  Bound b = bind(sp, args, "hasattr", {{"obj", true}, {"name", true}});
  ConstexprValue attr = sp.requireConst(b[1], b.locs[1], "hasattr()'s name");
  if (attr.kind != CK::String) sp.error(b.locs[1], "hasattr()'s name must be a string, got " + attr.str());
  const std::string &name = attr.stringValue;
  const SValue &v = b[0];
  static const char *const tensorMembers[] = {
      "handle", "type", "dtype", "shape", "numel", "T", "abs", "advance", "argmax", "argmin", "associative_scan",
      "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor",
      "broadcast_to", "cast", "cdiv", "cos", "cumprod", "cumsum", "exp", "expand_dims", "flip", "gather", "histogram",
      "item", "log", "logical_and", "logical_or", "max", "min", "permute", "ravel", "reduce", "reduce_or", "reshape",
      "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "store", "sum", "to", "trans", "view", "xor_sum"};
  static const char *const constexprMembers[] = {"value", "type", "logical_and", "logical_or"};
  auto in = [&](const auto &names) {
    return std::any_of(std::begin(names), std::end(names), [&](const char *n) { return name == n; });
  };
  switch (v.kind) {
  case SValue::Kind::IR:
    if (v.value->type.isTensorDesc()) break;
    return in(tensorMembers);
  case SValue::Kind::Const:
    if (v.c.kind == CK::Enum) return name == "name" || name == "value";
    return in(constexprMembers);
  case SValue::Kind::Module: case SValue::Kind::Builtin: case SValue::Kind::Function:
    sp.error(b.locs[0], "hasattr() on " + sp.describe(v) + " is not supported: test for a language feature on the host");
  default:
    break;
  }
  try { // dtypes, tuples, descriptors, block pointers: what attribute access accepts
    sp.attributeOf(v, name, b.locs[0]);
    return true;
  } catch (const CompileError &) {
    return false;
  }
}

SValue Specializer::callBuiltin(const std::string &name0, CallArgs &args) {
  // tl.math.exp and tl.exp are the same function.
  std::string name = name0;
  if (name.rfind("lang.math.", 0) == 0) name = "lang." + name.substr(10);
  if (name.rfind("lang.extra.", 0) == 0) name = "lang." + name.substr(11); // from triton.language.extra.cuda import smid
  if (name == "top.cdiv") name = "lang.cdiv";
  SourceLoc loc = args.loc;
  auto constResult = [](ConstexprValue c) { return SValue::constant(std::move(c)); };
  if (std::optional<SValue> r = callLanguageBuiltin(name, args)) return *r; // dsl/BuiltinsLanguage.cpp

  // ---- tl.target_info (Triton's constexpr functions on the compile target): triton_kernels guards inline PTX
  // with `if tl.target_info.is_cuda():`, newer instructions with cuda_capability_geq(9, 0).
  if (name.rfind("lang.target_info.", 0) == 0) {
    std::string fn = name.substr(17);
    // "sm_90a" -> 90; 0 in the interpreter (no CUDA target: every query is False, as in Triton without a driver)
    int cc = spec_.arch.rfind("sm_", 0) == 0 ? std::atoi(spec_.arch.c_str() + 3) : 0;
    if (fn == "is_cuda" || fn == "is_hip" || fn == "is_hip_cdna3" || fn == "is_hip_cdna4") {
      bind(*this, args, fn, {});
      return constResult(ConstexprValue::ofBool(fn == "is_cuda" && cc > 0));
    }
    if (fn == "cuda_capability_geq") {
      Bound b = bind(*this, args, fn, {{"major", true}, {"minor", false}});
      ConstexprValue major = requireConst(b[0], b.locs[0], "cuda_capability_geq()'s major");
      ConstexprValue minor = b.has(1) ? requireConst(b[1], b.locs[1], "cuda_capability_geq()'s minor")
                                      : ConstexprValue::ofInt(0);
      if (major.kind != CK::Int || minor.kind != CK::Int)
        error(loc, "cuda_capability_geq() takes ints, got " + major.str() + " and " + minor.str());
      return constResult(ConstexprValue::ofBool(cc > 0 && cc >= int(major.intValue) * 10 + int(minor.intValue)));
    }
    error(loc, "tl.target_info." + fn + " is not supported (tessera has is_cuda, is_hip, is_hip_cdna3, "
               "is_hip_cdna4 and cuda_capability_geq)");
  }

  // ---- f"..{value}..": Triton formats constexpr values only (its visit_JoinedStr), as Python's str() / repr()
  if (name == "$format") {
    const SValue &v = args.args[0];
    bool repr = args.args[1].c.stringValue == "r";
    if (v.kind == SValue::Kind::DType) // str(tl.float32) is its name, "fp32"
      return constResult(ConstexprValue::ofString(tritonDTypeName(v)));
    if (!v.isConst())
      error(loc, "Cannot evaluate f-string containing non-constexpr conversion values, found " + describe(v));
    const ConstexprValue &c = v.c;
    return constResult(ConstexprValue::ofString(c.kind == CK::String && !repr ? c.stringValue : c.str()));
  }

  // ---- Python builtins on constexprs
  if (name == "float") {
    Bound b = bind(*this, args, "float", {{"x", true}});
    ConstexprValue c = requireConst(b[0], b.locs[0], "float()'s argument");
    if (c.kind == CK::String) {
      std::string s = c.stringValue;
      for (char &ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (s == "inf" || s == "+inf" || s == "infinity") return constResult(ConstexprValue::ofFloat(INFINITY));
      if (s == "-inf" || s == "-infinity") return constResult(ConstexprValue::ofFloat(-INFINITY));
      if (s == "nan") return constResult(ConstexprValue::ofFloat(NAN));
      ConstexprValue parsed = ConstexprValue::parse(c.stringValue);
      if (parsed.kind == CK::Float) return constResult(parsed);
      if (parsed.kind == CK::Int) return constResult(ConstexprValue::ofFloat(double(parsed.intValue)));
      error(b.locs[0], "could not convert string to float: " + c.str());
    }
    if (c.kind == CK::Float) return constResult(c);
    if (c.kind == CK::Int || c.kind == CK::Bool) return constResult(ConstexprValue::ofFloat(double(c.intValue)));
    error(b.locs[0], "float() needs a number or a string, got " + c.str());
  }
  if (name == "int" || name == "bool") {
    Bound b = bind(*this, args, name, {{"x", true}});
    ConstexprValue c = requireConst(b[0], b.locs[0], name + "()'s argument");
    if (c.kind != CK::Float && c.kind != CK::Int && c.kind != CK::Bool)
      error(b.locs[0], name + "() needs a number, got " + c.str());
    if (c.kind == CK::Float && !(std::fabs(c.floatValue) < std::ldexp(1.0, 127)))
      error(b.locs[0], name + "() of " + c.str() + " does not fit tessera's 128-bit integer constants");
    ConstInt v = c.kind == CK::Float ? static_cast<ConstInt>(c.floatValue) : c.intValue;
    return constResult(name == "int" ? ConstexprValue::ofInt(v) : ConstexprValue::ofBool(v != 0));
  }
  if (name == "min" || name == "max") {
    // Triton's builtin_min/builtin_max: constexprs fold as in Python; otherwise
    // a left fold of tl.minimum / tl.maximum (on scalars and blocks).
    for (size_t k = 0; k < args.keywords.size(); ++k)
      if (args.keywords[k].first != "propagate_nan")
        error(args.keywordLocs[k], name + "() got an unexpected keyword argument '" + args.keywords[k].first + "'");
    if (args.args.size() < 2) error(loc, name + "() takes two or more arguments");
    bool allConst = std::all_of(args.args.begin(), args.args.end(), [](const SValue &v) { return v.isConst(); });
    if (allConst) {
      if (!args.keywords.empty()) error(args.keywordLocs[0], "propagate_nan is not supported on constexprs");
      ConstexprValue best = requireConst(args.args[0], args.argLocs[0], name + "()'s argument");
      for (size_t i = 1; i < args.args.size(); ++i) {
        ConstexprValue c = requireConst(args.args[i], args.argLocs[i], name + "()'s argument");
        double a = best.kind == CK::Float ? best.floatValue : double(best.intValue);
        double x = c.kind == CK::Float ? c.floatValue : double(c.intValue);
        if (name == "min" ? x < a : x > a) best = c;
      }
      return constResult(best);
    }
    SValue acc = args.args[0];
    SourceLoc accLoc = args.argLocs[0];
    for (size_t i = 1; i < args.args.size(); ++i) {
      CallArgs pair;
      pair.loc = loc;
      pair.args = {acc, args.args[i]};
      pair.argLocs = {accLoc, args.argLocs[i]};
      pair.keywords = args.keywords;
      pair.keywordLocs = args.keywordLocs;
      acc = callBuiltin(name == "min" ? "lang.minimum" : "lang.maximum", pair);
    }
    return acc;
  }
  if (name == "getattr") {
    // getattr(tl, NAME) with a constexpr string; a default is returned where the attribute is missing.
    if (args.args.size() < 2 || args.args.size() > 3 || !args.keywords.empty())
      error(loc, "getattr() takes an object, a constexpr string and an optional default");
    ConstexprValue attr = requireConst(args.args[1], args.argLocs[1], "getattr()'s name");
    if (attr.kind != CK::String) error(args.argLocs[1], "getattr()'s name must be a string, got " + attr.str());
    if (args.args.size() == 2) return attributeOf(args.args[0], attr.stringValue, loc);
    try {
      return attributeOf(args.args[0], attr.stringValue, loc);
    } catch (const CompileError &) {
      return args.args[2];
    }
  }
  if (name == "constexpr_type" || name == "lang.constexpr_type" || name == "lang.core.constexpr_type") {
    Bound b = bind(*this, args, "constexpr_type", {{"value", true}});
    return constexprTypeOf(b[0], b.locs[0]);
  }
  if (name == "hasattr") return constResult(ConstexprValue::ofBool(hasAttribute(*this, args)));
  if (name == "$namedtuple") { // __tessera_namedtuple__("Tensor", "ptr", "shape"): the class, its fields in its name
    std::string type = "$namedtuple:";
    for (size_t i = 0; i < args.args.size(); ++i) {
      ConstexprValue s = requireConst(args.args[i], args.argLocs[i], "a NamedTuple's name and fields");
      if (s.kind != CK::String) error(args.argLocs[i], "a NamedTuple's name and fields are strings");
      type += (i > 1 ? "," : i == 1 ? ":" : "") + s.stringValue;
    }
    return SValue::builtin(type);
  }
  if (name.rfind("$namedtuple:", 0) == 0) { // Tensor(ptr, shape=..., stride=...): a tuple with field names
    const size_t colon = name.find(':', 12);
    const std::string type = name.substr(12, colon - 12);
    std::vector<std::string> fields;
    for (size_t start = colon + 1; colon != std::string::npos && start <= name.size();) {
      size_t comma = name.find(',', start);
      fields.push_back(name.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (args.args.size() > fields.size())
      error(loc, type + "() takes " + std::to_string(fields.size()) + " fields but " +
                     std::to_string(args.args.size()) + " were given");
    std::vector<std::optional<SValue>> values(fields.size());
    for (size_t i = 0; i < args.args.size(); ++i) values[i] = args.args[i];
    for (size_t k = 0; k < args.keywords.size(); ++k) {
      const auto &[key, value] = args.keywords[k];
      auto it = std::find(fields.begin(), fields.end(), key);
      if (it == fields.end()) error(args.keywordLocs[k], type + "() has no field '" + key + "'");
      if (values[it - fields.begin()]) error(args.keywordLocs[k], type + "() got multiple values for field '" + key + "'");
      values[it - fields.begin()] = value;
    }
    std::vector<SValue> elems;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!values[i]) error(loc, type + "() is missing field '" + fields[i] + "'");
      elems.push_back(*values[i]);
    }
    SValue t = SValue::tuple(std::move(elems));
    t.fields = std::move(fields);
    return t;
  }
  if (name == "isinstance") {
    // isinstance(v, tl.dtype / tl.tensor / tl.tensor_descriptor / tl.constexpr / int / float / bool, or a tuple of them).
    Bound b = bind(*this, args, "isinstance", {{"obj", true}, {"class_or_tuple", true}});
    const SValue &v = b[0];
    std::vector<SValue> classes = b[1].kind == SValue::Kind::Tuple ? b[1].elems : std::vector<SValue>{b[1]};
    bool result = false;
    for (const SValue &c : classes) {
      if (c.kind != SValue::Kind::Builtin) error(b.locs[1], "isinstance()'s second argument must be a class, got " + describe(c));
      const std::string &cls = c.path;
      bool isConst = v.isConst();
      if (cls == "lang.dtype") result |= v.kind == SValue::Kind::DType;
      else if (cls == "lang.pointer_type") result |= v.kind == SValue::Kind::DType && v.dtype.pointer && !v.dtype.isBlock();
      else if (cls == "lang.block_type") result |= v.kind == SValue::Kind::DType && v.dtype.isBlock();
      else if (cls == "lang.tensor") // a block pointer is a tensor in Triton; a descriptor is not
        result |= (v.isIR() && !v.value->type.isTensorDesc()) || v.kind == SValue::Kind::BlockPointer;
      else if (cls == "lang.tensor_descriptor" || cls == "lang.tensor_descriptor_base") // made by the kernel or passed in
        result |= v.kind == SValue::Kind::TensorDescriptor || (v.isIR() && v.value->type.isTensorDesc());
      else if (cls == "lang.constexpr") result |= isConst || v.kind == SValue::Kind::DType;
      else if (cls == "int") result |= isConst && (v.c.kind == CK::Int || v.c.kind == CK::Bool);
      else if (cls == "float") result |= isConst && v.c.kind == CK::Float;
      else if (cls == "bool") result |= isConst && v.c.kind == CK::Bool;
      else error(b.locs[1], "isinstance() does not know the class " + cls);
    }
    return constResult(ConstexprValue::ofBool(result));
  }
  if (name == "lang.dtype") { // tl.dtype("fp16"): Triton's dtype by its name
    Bound b = bind(*this, args, "tl.dtype", {{"name", true}});
    ConstexprValue n = requireConst(b[0], b.locs[0], "tl.dtype's name");
    if (n.kind == CK::String) {
      if (std::optional<ConstexprValue> d = ConstexprValue::ofDTypeName(n.stringValue))
        return SValue::dtypeOf(ir::Type(*ir::parseScalarType(d->stringValue)));
      for (const char *other : {"fp8e4b8", "fp8e5b16"})
        if (n.stringValue == other) {
          SValue d = SValue::dtypeOf(ir::Type(ScalarType::F8E4M3));
          d.path = other;
          return d;
        }
    }
    error(b.locs[0], "tl.dtype(): unknown dtype name " + n.str());
  }
  if (name == "top.next_power_of_2") {
    Bound b = bind(*this, args, "triton.next_power_of_2", {{"n", true}});
    int64_t n = requireInt(b[0], b.locs[0], "next_power_of_2()'s argument");
    if (n > (int64_t(1) << 62)) error(b.locs[0], "next_power_of_2(" + std::to_string(n) + ") does not fit in 64 bits");
    int64_t p = n <= 0 ? 0 : 1; // Triton's bit trick gives 0 for n <= 0
    while (p < n) p <<= 1;
    return constResult(ConstexprValue::ofInt(p));
  }
  // triton.language.core.get_int_dtype(bitwidth, signed): Inductor's sort and select helpers bitcast through it.
  if (name == "lang.get_int_dtype") {
    Bound b = bind(*this, args, "get_int_dtype", {{"bitwidth", true}, {"signed", true}});
    int64_t bits = requireInt(b[0], b.locs[0], "get_int_dtype()'s bitwidth");
    bool isSigned = truthy(requireConst(b[1], b.locs[1], "get_int_dtype()'s signed"));
    switch (bits) {
    case 1: return SValue::dtypeOf(ir::Type(ScalarType::I1));
    case 8: return SValue::dtypeOf(ir::Type(isSigned ? ScalarType::I8 : ScalarType::U8));
    case 16: return SValue::dtypeOf(ir::Type(isSigned ? ScalarType::I16 : ScalarType::U16));
    case 32: return SValue::dtypeOf(ir::Type(isSigned ? ScalarType::I32 : ScalarType::U32));
    case 64: return SValue::dtypeOf(ir::Type(isSigned ? ScalarType::I64 : ScalarType::U64));
    default: error(b.locs[0], "get_int_dtype(): unsupported bitwidth " + std::to_string(bits));
    }
  }
  // triton.language.standard's constexpr functions (Inductor's sort_with_index uses _log2).
  if (name == "lang._log2" || name == "lang._is_power_of_two") {
    Bound b = bind(*this, args, name.substr(5), {{"i", true}});
    int64_t n = requireInt(b[0], b.locs[0], name.substr(5) + "()'s argument");
    if (name == "lang._is_power_of_two") return constResult(ConstexprValue::ofBool(n != 0 && (n & (n - 1)) == 0));
    int64_t log2 = 0;
    for (; n > 1; n >>= 1) ++log2;
    return constResult(ConstexprValue::ofInt(log2));
  }
  if (name == "len") {
    Bound b = bind(*this, args, "len", {{"x", true}});
    if (b[0].kind != SValue::Kind::Tuple) error(b.locs[0], "len() needs a tuple, got " + describe(b[0]));
    return constResult(ConstexprValue::ofInt(static_cast<int64_t>(b[0].elems.size())));
  }
  if (name == "abs" && !args.args.empty() && args.args[0].isConst()) {
    ConstexprValue c = args.args[0].c;
    if (c.kind == CK::Float) return constResult(ConstexprValue::ofFloat(std::fabs(c.floatValue)));
    return constResult(ConstexprValue::ofInt(c.intValue < 0 ? -c.intValue : c.intValue));
  }
  if (name == "abs") name = "lang.abs";
  if (name == "print" || name == "lang.static_print") return SValue::constant(ConstexprValue::none());
  if (name == "range" || name == "lang.range" || name == "lang.static_range")
    error(loc, "range() can only be used as the iterable of a for loop");

  // ---- the language
  if (name == "lang.constexpr") {
    Bound b = bind(*this, args, "tl.constexpr", {{"value", true}});
    if (b[0].isIR()) error(b.locs[0], "tl.constexpr() needs a compile-time value, got " + describe(b[0]));
    return b[0];
  }
  if (name == "lang.static_assert") {
    // code_generator.execute_static_assert takes its arguments by position only.
    if (args.args.empty() || args.args.size() > 2 || !args.keywords.empty())
      error(loc, "`static_assert` requires one or two positional arguments only");
    Bound b = bind(*this, args, "tl.static_assert", {{"cond", true}, {"msg", false}});
    ConstexprValue c = requireConst(b[0], b.locs[0], "tl.static_assert's condition");
    bool ok = c.kind == CK::Float ? c.floatValue != 0 : c.intValue != 0;
    if (!ok)
      error(loc, "static assertion failed" +
                     (b.has(1) && b[1].isConst() ? ": " + (b[1].c.kind == CK::String ? b[1].c.stringValue : b[1].c.str())
                                                 : std::string()));
    return SValue::constant(ConstexprValue::none());
  }
  if (name == "lang.program_id" || name == "lang.num_programs") {
    Bound b = bind(*this, args, "tl." + name.substr(5), {{"axis", true}});
    int64_t axis = requireInt(b[0], b.locs[0], "the axis");
    if (axis < 0 || axis > 2) // Triton's words: its tests match them
      error(b.locs[0], name.substr(5) + " axis must be 0, 1, or 2 but got " + std::to_string(axis));
    return SValue::ir(b_.op(name == "lang.program_id" ? OpCode::ProgramId : OpCode::NumPrograms, {},
                            ir::Type(ScalarType::I32), {{"axis", axis}}));
  }
  if (name == "lang.arange") {
    Bound b = bind(*this, args, "tl.arange", {{"start", true}, {"end", true}});
    int64_t start = requireInt(b[0], b.locs[0], "tl.arange's start");
    int64_t end = requireInt(b[1], b.locs[1], "tl.arange's end");
    if (end <= start) error(loc, "tl.arange needs end > start, got " + std::to_string(start) + " and " + std::to_string(end));
    if (!isPowerOfTwo(end - start))
      error(loc, "tl.arange's range must be a power of 2, got " + std::to_string(end - start));
    if (end - start > (1 << 20)) // Triton's words (its block_type's check)
      error(loc, "numel (" + std::to_string(end - start) + ") exceeds triton maximum tensor numel (1048576)");
    return SValue::ir(b_.op(OpCode::MakeRange, {}, ir::Type(ScalarType::I32).withShape({end - start}),
                            {{"start", start}, {"end", end}}));
  }
  if (name == "lang.zeros" || name == "lang.full") {
    bool full = name == "lang.full";
    Bound b = full ? bind(*this, args, "tl.full", {{"shape", true}, {"value", true}, {"dtype", true}})
                   : bind(*this, args, "tl.zeros", {{"shape", true}, {"dtype", true}});
    std::vector<int64_t> shape = shapeArgument(*this, b[0], b.locs[0], full ? "tl.full" : "tl.zeros");
    ir::Type dtype = requireDType(b[full ? 2 : 1], b.locs[full ? 2 : 1], "the dtype");
    ir::Value *scalar;
    if (full && b[1].isIR()) {
      scalar = castElement(b[1].value, dtype);
      if (scalar->type.isBlock()) error(b.locs[1], "tl.full's value must be a scalar");
    } else {
      SValue value = full ? b[1] : SValue::constant(ConstexprValue::ofInt(0));
      ConstexprValue c = requireConst(value, b.locs[full ? 1 : 0], "tl.full's value");
      if (c.kind != CK::Int && c.kind != CK::Float && c.kind != CK::Bool)
        error(b.locs[1], "tl.full's value must be a number, got " + c.str());
      if (dtype.isFloatElement())
        return SValue::ir(b_.floatConstant(c.kind == CK::Float ? c.floatValue : double(c.intValue), dtype.withShape(shape)));
      if (dtype.pointer) error(b.locs[0], "cannot fill a block of pointers with a number");
      if (c.kind == CK::Int) literalType(c, b.locs[1]); // rejects values beyond 64 bits
      return SValue::ir(b_.intConstant(c.kind == CK::Float ? int64_t(c.floatValue) : int64_t(uint64_t(c.intValue)),
                                       dtype.withShape(shape)));
    }
    return SValue::ir(b_.op(OpCode::Splat, {scalar}, dtype.withShape(shape)));
  }
  if (name == "lang.zeros_like") {
    Bound b = bind(*this, args, "tl.zeros_like", {{"input", true}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    if (x->type.isFloatElement()) return SValue::ir(b_.floatConstant(0.0, x->type));
    return SValue::ir(b_.intConstant(0, x->type));
  }
  if (name == "lang.cdiv") {
    Bound b = bind(*this, args, "tl.cdiv", {{"x", true}, {"div", true}});
    SValue one = SValue::constant(ConstexprValue::ofInt(1));
    SValue sum = binary(ast::BinaryOp::Sub, binary(ast::BinaryOp::Add, b[0], b[1], loc), one, loc);
    return binary(ast::BinaryOp::FloorDiv, sum, b[1], loc);
  }
  if (name == "lang.multiple_of" || name == "lang.max_contiguous" || name == "lang.max_constancy") {
    // Facts the axis analysis cannot derive (compiler/passes/AxisAnalysis.cpp):
    // a `hint` op that passes the value through with one int per dim.
    std::string fname = "tl." + name.substr(5);
    Bound b = bind(*this, args, fname, {{"input", true}, {"values", true}});
    if (!b[0].isIR()) return b[0]; // a constexpr already says everything
    ir::Value *x = b[0].value;
    std::vector<int64_t> values;
    if (b[1].kind == SValue::Kind::Tuple)
      for (const SValue &v : b[1].elems) values.push_back(requireInt(v, b.locs[1], fname + "'s values"));
    else
      values.push_back(requireInt(b[1], b.locs[1], fname + "'s values"));
    size_t dims = std::max<size_t>(1, x->type.rank());
    if (values.size() == 1) values.assign(dims, values[0]);
    if (values.size() != dims)
      error(b.locs[1], fname + " needs one value per dimension (" + std::to_string(dims) + "), got " +
                           std::to_string(values.size()));
    for (int64_t v : values)
      if (v < 1) error(b.locs[1], fname + "'s values must be positive, got " + std::to_string(v));
    ir::Value *hinted = b_.op(OpCode::Hint, {x}, x->type, {{name.substr(5), values}});
    // Triton sets the hint on x itself (semantic.multiple_of: x.handle.set_attr), so it holds
    // where the result is dropped too: the tutorial grouped GEMM's `tl.multiple_of(a_ptrs, [16, 16])`
    // as a statement. The variables holding x hold the hinted value from here on.
    rebindValue(x, hinted);
    return SValue::ir(hinted);
  }
  if (name == "lang.load") {
    Bound b = bind(*this, args, "tl.load",
                   {{"pointer", true}, {"mask", false}, {"other", false}, {"boundary_check", false},
                    {"padding_option", false}, {"cache_modifier", false}, {"eviction_policy", false},
                    {"volatile", false}});
    ir::Value *ptr = toIR(b[0], b.locs[0]);
    if (!ptr->type.pointer) error(b.locs[0], "tl.load needs a pointer or a block of pointers, got " + describe(b[0]));
    std::vector<ir::Value *> operands = {ptr};
    std::map<std::string, ir::Attribute> attrs = {{"has_mask", int64_t(0)}, {"has_other", int64_t(0)}};
    if (b.has(1)) {
      ir::Value *mask = toBool(toIR(b[1], b.locs[1]));
      if (!mask->type.isBoolElement()) error(b.locs[1], "tl.load's mask must be boolean, got " + mask->type.element().str());
      // Triton's semantic.load: a scalar pointer takes no block mask or other (it does not broadcast the pointer).
      if (!ptr->type.isBlock() && mask->type.isBlock())
        error(b.locs[1], "Mask argument cannot be block type if pointer argument is not a block");
      if (!ptr->type.isBlock() && b.has(2) && b[2].isIR() && b[2].value->type.isBlock())
        error(b.locs[2], "Other argument cannot be block type if pointer argument is not a block");
      auto shape = broadcastShapes(ptr->type, mask->type, b.locs[1]);
      ptr = broadcastTo(ptr, shape, b.locs[0]);
      operands[0] = ptr;
      operands.push_back(broadcastTo(mask, shape, b.locs[1]));
      attrs["has_mask"] = int64_t(1);
      if (b.has(2)) {
        ir::Type pointee(ptr->type.scalar);
        requireCastable(elementTypeOf(b[2], b.locs[2]), pointee, b.locs[2]);
        ir::Value *other = castElement(toIR(b[2], b.locs[2], &pointee), pointee);
        operands.push_back(broadcastTo(other, shape, b.locs[2]));
        attrs["has_other"] = int64_t(1);
      }
    } else if (b.has(2)) {
      error(b.locs[2], "tl.load's 'other' needs a 'mask'");
    }
    for (size_t i : {size_t(5), size_t(6)})
      if (b.has(i)) attrs[i == 5 ? "cache" : "eviction"] = requireConst(b[i], b.locs[i], "the policy").stringValue;
    if (b.has(7) && requireInt(b[7], b.locs[7], "volatile")) attrs["volatile"] = int64_t(1);
    // semantic._load_legacy: `if padding or boundary_check` (Triton's defaults, () and "", pass).
    for (size_t i : {size_t(3), size_t(4)})
      if (b.has(i) && pythonTruth(b[i]))
        error(b.locs[i], "`padding_option` or `boundary_check` argument is not supported for loading a tensor of "
                         "pointers or loading a scalar. Because the compiler does not know the boundary; please use "
                         "block pointers (defined by `make_block_ptr`) instead");
    return SValue::ir(b_.op(OpCode::Load, operands, ptr->type.withElement(ir::Type(ptr->type.scalar)), attrs));
  }
  if (name == "lang.store") {
    Bound b = bind(*this, args, "tl.store",
                   {{"pointer", true}, {"value", true}, {"mask", false}, {"boundary_check", false},
                    {"cache_modifier", false}, {"eviction_policy", false}});
    ir::Value *ptr = toIR(b[0], b.locs[0]);
    if (!ptr->type.pointer) error(b.locs[0], "tl.store needs a pointer or a block of pointers, got " + describe(b[0]));
    if (ptr->type.constPointee) error(b.locs[0], "Cannot store to a constant pointer (a tl.const parameter)");
    ir::Type pointee(ptr->type.scalar);
    requireCastable(elementTypeOf(b[1], b.locs[1]), pointee, b.locs[1]);
    ir::Value *value = toIR(b[1], b.locs[1], &pointee);
    // Triton's semantic.store: a scalar pointer stores a scalar (a block value would need a block of pointers).
    if (!ptr->type.isBlock() && value->type.isBlock())
      error(b.locs[1], "Value argument cannot be block type if pointer argument is not a block");
    if (!ptr->type.isBlock() && b.has(2) && b[2].isIR() && b[2].value->type.isBlock())
      error(b.locs[2], "Mask argument cannot be block type if pointer argument is not a block");
    // Pointers are stored as their 64-bit addresses (Triton's cast to the pointee type).
    if (value->type.pointer && !(pointee.isIntElement() && ir::bitWidth(pointee.scalar) == 64))
      error(b.locs[1], "tl.store stores pointers only through pointers to 64-bit integers, got " + ptr->type.element().str());
    auto shape = broadcastShapes(ptr->type, value->type, b.locs[1]);
    ir::Value *mask = nullptr;
    if (b.has(2)) {
      mask = toBool(toIR(b[2], b.locs[2]));
      shape = broadcastShapes(ptr->type.withShape(shape), mask->type, b.locs[2]);
    }
    if (shape != ptr->type.shape && ptr->type.isBlock() && ptr->type.numElements() < ir::Type().withShape(shape).numElements()) {
      // Storing a larger block through fewer pointers would drop values.
    }
    ptr = broadcastTo(ptr, shape, b.locs[0]);
    std::vector<ir::Value *> operands = {ptr, broadcastTo(castElement(value, pointee), shape, b.locs[1])};
    std::map<std::string, ir::Attribute> attrs = {{"has_mask", int64_t(mask ? 1 : 0)}};
    if (mask) operands.push_back(broadcastTo(mask, shape, b.locs[2]));
    for (size_t i : {size_t(4), size_t(5)})
      if (b.has(i)) attrs[i == 4 ? "cache" : "eviction"] = requireConst(b[i], b.locs[i], "the policy").stringValue;
    if (b.has(3) && pythonTruth(b[3]))
      error(b.locs[3], "`boundary_check` argument is not supported for storing a tensor of pointers or storing a "
                       "scalar. Because the compiler does not know the boundary; please use block pointers "
                       "(defined by `make_block_ptr`) instead");
    b_.create(OpCode::Store, operands, {}, attrs);
    return SValue::constant(ConstexprValue::none());
  }
  if (name == "lang.where") {
    Bound b = bind(*this, args, "tl.where", {{"condition", true}, {"x", true}, {"y", true}});
    if (b[0].isConst()) {
      // A constexpr condition picks a side (still typed like the pair).
    }
    ir::Value *c = toBool(toIR(b[0], b.locs[0]));
    SValue x = b[1], y = b[2];
    ir::Value *xv = x.isIR() ? x.value : nullptr;
    ir::Value *yv = y.isIR() ? y.value : nullptr;
    if (!xv && !yv) {
      xv = toIR(x, b.locs[1]);
      yv = toIR(y, b.locs[2]);
    } else {
      if (!xv) xv = arithmeticOperand(x, b.locs[1], yv->type);
      if (!yv) yv = arithmeticOperand(y, b.locs[2], xv->type);
    }
    ir::Type elem = xv->type.pointer && yv->type.pointer && xv->type.element() == yv->type.element()
                        ? xv->type.element()
                        : promote(xv->type, yv->type, "where", loc);
    auto shape = broadcastShapes(c->type, xv->type, loc);
    shape = broadcastShapes(c->type.withShape(shape), yv->type, loc);
    c = broadcastTo(c, shape, b.locs[0]);
    xv = broadcastTo(castElement(xv, elem), shape, b.locs[1]);
    yv = broadcastTo(castElement(yv, elem), shape, b.locs[2]);
    return SValue::ir(b_.op(OpCode::Select, {c, xv, yv}, xv->type));
  }
  if (name == "lang.maximum" || name == "lang.minimum") {
    Bound b = bind(*this, args, "tl." + name.substr(5), {{"x", true}, {"y", true}, {"propagate_nan", false}});
    if (b[0].isConst() && b[1].isConst()) {
      CallArgs pair = args;
      pair.keywords.clear();
      return callBuiltin(name == "lang.maximum" ? "max" : "min", pair);
    }
    ir::Value *x = b[0].isIR() ? b[0].value : arithmeticOperand(b[0], b.locs[0], b[1].value->type);
    ir::Value *y = b[1].isIR() ? b[1].value : arithmeticOperand(b[1], b.locs[1], x->type);
    ir::Type elem = promote(x->type, y->type, name.c_str() + 5, loc);
    auto shape = broadcastShapes(x->type, y->type, loc);
    x = broadcastTo(castElement(x, elem), shape, b.locs[0]);
    y = broadcastTo(castElement(y, elem), shape, b.locs[1]);
    return SValue::ir(b_.op(name == "lang.maximum" ? OpCode::Max : OpCode::Min, {x, y}, x->type,
                            propagateNanAttrs(*this, b[2], b.locs[2], elem)));
  }
  struct MathFn { const char *name; OpCode code; };
  static const MathFn mathFns[] = {{"exp", OpCode::Exp},   {"exp2", OpCode::Exp2}, {"log", OpCode::Log},
                                   {"log2", OpCode::Log2}, {"sqrt", OpCode::Sqrt}, {"abs", OpCode::Abs}};
  for (const MathFn &m : mathFns) {
    if (name != std::string("lang.") + m.name) continue;
    Bound b = bind(*this, args, std::string("tl.") + m.name, {{"x", true}});
    if (b[0].isConst()) {
      ConstexprValue c = b[0].c;
      double v = c.kind == CK::Float ? c.floatValue : double(c.intValue);
      if (c.kind != CK::Float && c.kind != CK::Int) error(b.locs[0], std::string(m.name) + "() needs a number");
      double r = m.code == OpCode::Exp ? std::exp(v) : m.code == OpCode::Exp2 ? std::exp2(v)
               : m.code == OpCode::Log ? std::log(v) : m.code == OpCode::Log2 ? std::log2(v)
               : m.code == OpCode::Sqrt ? std::sqrt(v) : std::fabs(v);
      if (m.code == OpCode::Abs && c.kind == CK::Int) return constResult(ConstexprValue::ofInt(c.intValue < 0 ? -c.intValue : c.intValue));
      return constResult(ConstexprValue::ofFloat(r));
    }
    ir::Value *x = toIR(b[0], b.locs[0]);
    if (x->type.pointer) error(b.locs[0], std::string(m.name) + "() needs numbers, got pointers");
    if (m.code != OpCode::Abs && x->type.isIntElement()) x = castElement(x, ir::Type(ScalarType::F32));
    if (m.code == OpCode::Abs && (x->type.scalar == ScalarType::F8E4M3 || x->type.scalar == ScalarType::F8E5M2 ||
                                  x->type.scalar == ScalarType::F8E4B15)) {
      // fp8 has no arithmetic; |x| clears the sign bit of the byte, as Triton's abs of fp8 does.
      ir::Value *bits = b_.op(OpCode::Bitcast, {x}, x->type.withElement(ir::Type(ScalarType::I8)));
      ir::Value *mask = b_.intConstant(0x7F, bits->type); // a block constant is a splat
      return SValue::ir(b_.op(OpCode::Bitcast, {b_.op(OpCode::And, {bits, mask}, bits->type)}, x->type));
    }
    return SValue::ir(b_.op(m.code, {x}, x->type));
  }
  if (name == "lang.max" || name == "lang.min" || name == "lang.sum") {
    Bound b = bind(*this, args, "tl." + name.substr(5),
                   {{"input", true}, {"axis", false}, {"return_indices", false}, {"return_indices_tie_break_left", false},
                    {"keep_dims", false}, {"dtype", false}});
    if (name == "lang.sum") {
      // tl.sum(input, axis=None, keep_dims=False, dtype=None): positional order differs.
      b = bind(*this, args, "tl.sum", {{"input", true}, {"axis", false}, {"keep_dims", false}, {"dtype", false}});
      ir::Value *x = toIR(b[0], b.locs[0]);
      // Triton's _pick_sum_dtype: the dtype given, else ints narrower than 32 bits widen to int32 / uint32
      // (by their signedness; int1 counts as unsigned).
      if (b.has(3) && !b[3].isNone()) x = castElement(x, requireDType(b[3], b.locs[3], "sum's dtype"));
      else if (x->type.isIntElement() && bitWidth(x->type.scalar) < 32)
        x = castElement(x, ir::Type(isSigned(x->type.scalar) ? ScalarType::I32 : ScalarType::U32));
      bool keep = b.has(2) && requireInt(b[2], b.locs[2], "keep_dims");
      return reduce(x, b[1], "sum", keep, loc);
    }
    if (b.has(2) && requireInt(b[2], b.locs[2], "return_indices"))
      error(b.locs[2], "return_indices is not supported yet");
    ir::Value *x = toIR(b[0], b.locs[0]);
    bool keep = b.has(4) && requireInt(b[4], b.locs[4], "keep_dims");
    return reduce(x, b[1], name.substr(5), keep, loc);
  }
  if (name == "lang.cast") {
    Bound b = bind(*this, args, "tl.cast", {{"input", true}, {"dtype", true}, {"fp_downcast_rounding", false}, {"bitcast", false}});
    CallArgs rest;
    rest.loc = loc;
    rest.args = {b[1], b[2], b[3]};
    rest.argLocs = {b.locs[1], b.locs[2], b.locs[3]};
    return callMethod(SValue::ir(toIR(b[0], b.locs[0])), "to", rest);
  }
  if (name == "lang.tuple") {
    // tl.tuple(iterable): a tuple of its elements (a list display is one already); tl.tuple() is empty.
    Bound b = bind(*this, args, "tl.tuple", {{"args", false}, {"type", false}});
    if (!b.has(0)) return SValue::tuple({});
    if (b[0].kind != SValue::Kind::Tuple) error(b.locs[0], "tl.tuple() takes a tuple or a list, got " + describe(b[0]));
    return b[0];
  }
  if (name.rfind("lang.", 0) == 0) error(loc, "tl." + name.substr(5) + " is not supported yet");
  if (name.rfind("top.", 0) == 0) error(loc, "'" + name.substr(4) + "' cannot be called inside a kernel");
  error(loc, "'" + name + "' cannot be called inside a kernel");
}

} // namespace tessera::spec
