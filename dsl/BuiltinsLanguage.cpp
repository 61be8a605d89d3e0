// The rest of triton.language: dispatch to the builtin files by concern
// (BuiltinsMath, BuiltinsShape, BuiltinsReduce, BuiltinsDot, BuiltinsMemory, BuiltinsDebug),
// tensor member functions (x.reshape(...), x.cumsum(...)), dtype methods
// (x.dtype.is_floating()), and the language prelude: Triton functions that are
// themselves written in the language (tl.rand, tl.softmax, argmax's combine
// function, ...), kept as Python source in dsl/LanguagePrelude.cpp.
#include "dsl/BuiltinArgs.h"
#include "dsl/LanguagePrelude.h"

#include <algorithm>
#include <cstdint>

namespace tessera::spec {

using ir::ScalarType;

std::optional<SValue> Specializer::callLanguageBuiltin(const std::string &name, CallArgs &args) {
  for (auto handler : {&Specializer::callMathBuiltin, &Specializer::callShapeBuiltin, &Specializer::callReduceBuiltin,
                       &Specializer::callDotBuiltin, &Specializer::callMemoryBuiltin, &Specializer::callDebugBuiltin,
                       &Specializer::callDataDependentBuiltin, &Specializer::callInlineAsmBuiltin,
                       &Specializer::callDotScaledBuiltin, &Specializer::callMapElementwiseBuiltin})
    if (std::optional<SValue> r = (this->*handler)(name, args)) return r;
  // tl.rand & co. are written in the language itself (the prelude).
  static const char *random[] = {"rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox",
                                 "uint_to_uniform_float", "pair_uniform_to_normal", "philox_impl"};
  for (const char *fn : random)
    if (name == std::string("lang.") + fn || name == std::string("lang.random.") + fn) {
      if (!args.args.empty() && !(args.args.size() > 1 && args.args[1].isIR()) && std::string(fn).rfind("rand", 0) == 0)
        error(args.loc, std::string("tl.") + fn + " needs a block (or scalar) of integer offsets as its second argument");
      return callPrelude(fn, args);
    }
  if (name == "lang.add" || name == "lang.sub" || name == "lang.mul") return callPrelude(name.substr(5), args);
  if (name == "lang.to_tensor") {
    Bound b = bind(*this, args, "tl.to_tensor", {{"x", true}});
    return SValue::ir(toIR(b[0], b.locs[0]));
  }
  if (name == "lang.num_threads" || name == "lang.num_warps") { // tl.extra.cuda.num_threads(): a constexpr
    bind(*this, args, "tl.extra.cuda." + name.substr(5), {});
    return SValue::constant(ConstexprValue::ofInt(int64_t(spec_.numWarps) * (name == "lang.num_threads" ? 32 : 1)));
  }
  if (name == "lang.smid" || name == "lang.globaltimer") { // tl.extra.cuda.smid() / globaltimer(): scalars
    bind(*this, args, "tl.extra.cuda." + name.substr(5), {});
    const bool timer = name == "lang.globaltimer";
    return SValue::ir(b_.op(timer ? ir::OpCode::GlobalTimer : ir::OpCode::SmId, {},
                            ir::Type(timer ? ScalarType::I64 : ScalarType::I32)));
  }
  if (name == "lang.gdc_wait" || name == "lang.gdc_launch_dependents") {
    // tl.extra.cuda.gdc_wait() / gdc_launch_dependents(): programmatic dependent launch's
    // griddepcontrol (sm_90+), as Triton emits it: an impure inline asm with a dummy result.
    // Without launch_pdl=True both do nothing; the interpreter skips them.
    bind(*this, args, "tl.extra.cuda." + name.substr(5), {});
    const std::string text = name == "lang.gdc_wait" ? "griddepcontrol.wait; // dummy $0"
                                                     : "griddepcontrol.launch_dependents; // dummy $0";
    b_.create(ir::OpCode::InlineAsm, {}, {ir::Type(ScalarType::I32)},
              {{"asm", text}, {"constraints", std::string("=r")}, {"pure", int64_t(0)}, {"pack", int64_t(1)}});
    return SValue::constant(ConstexprValue::none());
  }
  if (name == "lang.convert_custom_float8_sm80" || name == "lang.convert_custom_float8_sm70") {
    // tl.extra.cuda.convert_custom_float8_sm80(arg, dst_ty, fp_downcast_rounding=None): Triton's fp8e4b15
    // conversion (to or from fp16 / fp32), which a cast to or from fp8e4b15 is here as well.
    Bound b = bind(*this, args, "tl.extra.cuda." + name.substr(5),
                   {{"arg", true}, {"dst_ty", true}, {"fp_downcast_rounding", false}});
    ir::Value *x = toIR(b[0], b.locs[0]);
    ir::Type to = requireDType(b[1], b.locs[1], "dst_ty").element();
    if (x->type.scalar != ScalarType::F8E4B15 && to.scalar != ScalarType::F8E4B15)
      error(args.loc, "tl.extra.cuda." + name.substr(5) + " converts to or from fp8e4b15, not " +
                          x->type.element().str() + " to " + to.str());
    requireCastable(x->type, to, args.loc);
    return SValue::ir(castElement(x, to));
  }
  if (name == "lang.condition") { // `while tl.condition(c, disable_licm=True)`: the hint is not used
    Bound b = bind(*this, args, "tl.condition", {{"arg1", true}, {"disable_licm", false}});
    return b[0];
  }
  if (name == "lang.pointer_type") {
    // const=True (Triton's pointer to const data) is accepted; tessera does not check stores through it.
    Bound b = bind(*this, args, "tl.pointer_type", {{"element_ty", true}, {"address_space", false}, {"const", false}});
    ir::Type elem = requireDType(b[0], b.locs[0], "tl.pointer_type's element type");
    if (elem.pointer) error(b.locs[0], "pointers to pointers are not supported");
    return SValue::dtypeOf(ir::Type::ptr(elem.scalar));
  }
  return std::nullopt;
}

// Triton's tensor member functions: x.f(args) is tl.f(x, args).
static bool isTensorMember(const std::string &m) {
  static const char *members[] = {
      "broadcast_to", "trans", "permute", "split", "view", "reshape", "expand_dims", "ravel", "flip",
      "reduce", "associative_scan", "argmax", "argmin", "xor_sum", "reduce_or", "cumsum", "cumprod", "sort",
      "sigmoid", "softmax", "sin", "cos", "rsqrt", "erf", "floor", "ceil", "exp", "exp2", "log",
      "log2", "sqrt", "abs", "sum", "max", "min", "atomic_add", "atomic_max", "atomic_min",
      "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "cast", "join", "fma",
      "umulhi", "clamp", "logical_and", "logical_or", "gather", "histogram",
  };
  return std::any_of(std::begin(members), std::end(members), [&](const char *n) { return m == n; });
}

// Triton's dtype.name: "fp16", "int32", "pointer<fp32>", ... (also for the dtypes tessera only names).
std::string tritonDTypeName(const SValue &d) {
  if (!d.path.empty()) return d.path;
  static const char *names[] = {"int1",   "int8", "int16", "int32", "int64", "uint8",   "uint16", "uint32",
                                "uint64", "fp16", "bf16",  "fp32",  "fp64",  "fp8e4nv", "fp8e5", "fp8e4b15"};
  std::string scalar = names[size_t(d.dtype.scalar)];
  return d.dtype.pointer ? "pointer<" + scalar + ">" : scalar;
}

static std::optional<bool> dtypePredicate(const SValue &d, const std::string &m) {
  const ir::Type &t = d.dtype;
  if (!d.path.empty()) { // fp8e4b8, fp8e5b16: floating-point, 8 bits
    if (m == "is_floating" || m == "is_fp8") return true;
    if (m == "is_" + d.path) return true;
    if (m.rfind("is_", 0) == 0) return false;
    return std::nullopt;
  }
  bool ptr = t.pointer;
  ScalarType s = t.scalar;
  bool fp = !ptr && ir::isFloat(s), integer = !ptr && ir::isInteger(s);
  if (m == "is_ptr") return ptr;
  if (m == "is_block" || m == "is_const" || m == "is_void") return false;
  if (m == "is_floating") return fp;
  if (m == "is_standard_floating") return fp && (s == ScalarType::F16 || s == ScalarType::BF16 || s == ScalarType::F32 || s == ScalarType::F64);
  if (m == "is_int" || m == "is_integer_type") return integer;
  if (m == "is_int_signed") return integer && ir::isSigned(s);
  if (m == "is_int_unsigned") return integer && !ir::isSigned(s);
  if (m == "is_bool" || m == "is_int1") return !ptr && s == ScalarType::I1;
  if (m == "is_fp8") return !ptr && (s == ScalarType::F8E4M3 || s == ScalarType::F8E5M2 || s == ScalarType::F8E4B15);
  if (m == "is_fp8e4nv") return !ptr && s == ScalarType::F8E4M3;
  if (m == "is_fp8e5") return !ptr && s == ScalarType::F8E5M2;
  if (m == "is_fp8e4b15") return !ptr && s == ScalarType::F8E4B15;
  if (m == "is_fp8e4b8" || m == "is_fp8e5b16") return false;
  if (m == "is_fp16") return !ptr && s == ScalarType::F16;
  if (m == "is_bf16") return !ptr && s == ScalarType::BF16;
  if (m == "is_fp32") return !ptr && s == ScalarType::F32;
  if (m == "is_fp64") return !ptr && s == ScalarType::F64;
  struct { const char *name; ScalarType type; } ints[] = {
      {"is_int8", ScalarType::I8},   {"is_int16", ScalarType::I16},   {"is_int32", ScalarType::I32},
      {"is_int64", ScalarType::I64}, {"is_uint8", ScalarType::U8},   {"is_uint16", ScalarType::U16},
      {"is_uint32", ScalarType::U32}, {"is_uint64", ScalarType::U64}};
  for (const auto &e : ints)
    if (m == e.name) return !ptr && s == e.type;
  return std::nullopt;
}

// The attributes of Triton's dtype / pointer_type / block_type classes (core.py).
SValue Specializer::dtypeAttribute(const SValue &base, const std::string &attr, SourceLoc loc) {
  const ir::Type &t = base.dtype;
  if (t.isBlock()) { // x.type of a block
    if (attr == "element_ty" || attr == "scalar") return SValue::dtypeOf(t.element());
    if (attr == "shape") {
      std::vector<SValue> dims;
      for (int64_t d : t.shape) dims.push_back(SValue::constant(ConstexprValue::ofInt(d)));
      return SValue::tuple(std::move(dims));
    }
    if (attr == "numel") return SValue::constant(ConstexprValue::ofInt(t.numElements()));
    if (attr == "nbytes" && !t.pointer)
      return SValue::constant(ConstexprValue::ofInt(t.numElements() * int64_t(ir::bitWidth(t.scalar) / 8)));
    if (attr == "is_block" || attr == "get_block_shapes") {
      SValue m;
      m.kind = SValue::Kind::BoundMethod;
      m.path = attr;
      m.elems = {base};
      return m;
    }
    error(loc, "block type " + t.str() + " has no attribute '" + attr + "'");
  }
  auto constInt = [](int64_t v) { return SValue::constant(ConstexprValue::ofInt(v)); };
  auto noSuch = [&]() -> SValue {
    error(loc, "dtype " + tritonDTypeName(base) + " has no attribute '" + attr + "'");
  };
  if (attr == "name") return SValue::constant(ConstexprValue::ofString(tritonDTypeName(base)));
  // A dtype parameter of a @jit helper is a tl.constexpr in Triton: FlagGems' get_dtype_max(dtype) reads
  // dtype.value to reach the tl.dtype.
  if (attr == "scalar" || attr == "value") return base;
  if (attr == "element_ty") {
    if (!t.pointer) error(loc, "dtype " + tritonDTypeName(base) + " has no element_ty (it is not a pointer)");
    return SValue::dtypeOf(ir::Type(t.scalar));
  }
  if (attr == "address_space") return t.pointer ? constInt(1) : noSuch();
  const bool scalar = !t.pointer;
  const unsigned bits = base.path.empty() ? ir::bitWidth(t.scalar) : 8;
  if (attr == "primitive_bitwidth") return constInt(bits);
  if (attr == "itemsize") return scalar ? constInt(bits / 8) : noSuch();
  const bool fp = scalar && (!base.path.empty() || ir::isFloat(t.scalar));
  if (attr == "int_bitwidth") return scalar && !fp ? constInt(bits) : noSuch();
  if (attr == "fp_mantissa_width" || attr == "exponent_bias") {
    if (!fp) return noSuch();
    struct Format { const char *name; int mantissa, bias; };
    static const Format formats[] = {{"fp16", 10, 15}, {"bf16", 7, 127}, {"fp32", 23, 127}, {"fp64", 52, 1023},
                                     {"fp8e4nv", 3, 7}, {"fp8e5", 2, 15}, {"fp8e4b15", 3, 15},
                                     {"fp8e4b8", 3, 8}, {"fp8e5b16", 2, 16}};
    for (const Format &f : formats)
      if (tritonDTypeName(base) == f.name) return constInt(attr == "exponent_bias" ? f.bias : f.mantissa);
  }
  // Methods: dtype.is_floating(), dtype.to_int_type(), ... (callLanguageMethod).
  if (attr.rfind("is_", 0) == 0 || attr == "to_int_type" || attr == "get_int_max_value" ||
      attr == "get_int_min_value" || attr == "codegen_name") {
    SValue m;
    m.kind = SValue::Kind::BoundMethod;
    m.path = attr;
    m.elems = {base};
    return m;
  }
  return noSuch();
}

std::optional<SValue> Specializer::callLanguageMethod(const SValue &self, const std::string &method, CallArgs &args) {
  if (self.kind == SValue::Kind::DType && self.dtype.isBlock()) { // x.type.is_block(), get_block_shapes()
    bind(*this, args, method, {});
    if (method == "is_block") return SValue::constant(ConstexprValue::ofBool(true));
    std::vector<SValue> dims;
    for (int64_t d : self.dtype.shape) dims.push_back(SValue::constant(ConstexprValue::ofInt(d)));
    return SValue::tuple(std::move(dims));
  }
  if (self.kind == SValue::Kind::DType) {
    if (std::optional<bool> p = dtypePredicate(self, method)) {
      bind(*this, args, method, {});
      return SValue::constant(ConstexprValue::ofBool(*p));
    }
    if (method == "codegen_name") { // "float16", "bfloat16", "int32", ...
      bind(*this, args, method, {});
      std::string n = tritonDTypeName(self);
      if (n.rfind("fp", 0) == 0) n = "float" + n.substr(2);
      else if (n.rfind("bf", 0) == 0) n = "bfloat" + n.substr(2);
      return SValue::constant(ConstexprValue::ofString(n));
    }
    if (method == "get_int_max_value" || method == "get_int_min_value") {
      bind(*this, args, method, {});
      const ir::Type &t = self.dtype;
      if (t.pointer || !self.path.empty() || !ir::isInteger(t.scalar))
        error(args.loc, method + "() needs an integer dtype, got " + tritonDTypeName(self));
      unsigned bits = ir::bitWidth(t.scalar);
      bool isSigned = ir::isSigned(t.scalar), isMax = method == "get_int_max_value";
      if (!isSigned && bits == 64 && isMax)
        error(args.loc, "uint64's maximum does not fit a 64-bit constexpr"); // 2**64 - 1
      int64_t v = isMax ? (isSigned ? int64_t((uint64_t(1) << (bits - 1)) - 1) : int64_t((uint64_t(1) << bits) - 1))
                        : (isSigned ? (bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1))) : 0);
      return SValue::constant(ConstexprValue::ofInt(v));
    }
    if (method == "to_int_type") {
      bind(*this, args, method, {});
      requireDType(self, args.loc, "to_int_type()'s dtype");
      unsigned bits = ir::bitWidth(self.dtype.scalar);
      ScalarType s = bits == 8 ? ScalarType::I8 : bits == 16 ? ScalarType::I16 : bits == 32 ? ScalarType::I32 : ScalarType::I64;
      return SValue::dtypeOf(ir::Type(s));
    }
    error(args.loc, "dtype has no method '" + method + "'");
  }
  if (self.isIR() && method == "item") { // x.item(): the element of a one-element block
    bind(*this, args, "item", {});
    ir::Value *x = self.value;
    if (x->type.isBlock() && x->type.numElements() != 1)
      error(args.loc, "item() needs a block of one element, got " + x->type.str());
    return SValue::ir(reshapeTo(x, {}, args.loc));
  }
  if (self.isIR() && method != "to" && isTensorMember(method)) {
    CallArgs withSelf = args;
    withSelf.args.insert(withSelf.args.begin(), self);
    withSelf.argLocs.insert(withSelf.argLocs.begin(), args.loc);
    return callBuiltin("lang." + method, withSelf);
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ prelude

// The prelude's AST, parsed once a process (thread-safe: a function-local static) and only read
// after that, by every compile that calls a prelude function (parsing it again was ~1.5 ms of each
// compile of an Inductor kernel).
static std::shared_ptr<const ast::Module> parsedPrelude() {
  static const std::shared_ptr<const ast::Module> prelude = [] {
    auto file = std::make_shared<SourceFile>();
    file->path = "<tessera.language>";
    file->text = languagePreludeSource();
    return std::make_shared<const ast::Module>(ast::parseModule(file));
  }();
  return prelude;
}

void Specializer::loadPrelude() {
  if (prelude_) return;
  prelude_ = parsedPrelude();
  std::swap(globals_, preludeGlobals_);
  bool saved = inPrelude_;
  inPrelude_ = true;
  collectModuleScope(*prelude_);
  inPrelude_ = saved;
  std::swap(globals_, preludeGlobals_);
}

SValue Specializer::preludeFunction(const std::string &fn) {
  loadPrelude();
  const Env &scope = inPrelude_ ? globals_ : preludeGlobals_;
  auto it = scope.find(fn);
  if (it == scope.end() || it->second.kind != SValue::Kind::Function)
    throw std::logic_error("tessera: the language prelude has no function '" + fn + "'");
  return it->second;
}

// An error inside the prelude's code is the caller's: it is reported at the
// tl.* call in the user's file, with the prelude's message.
SValue Specializer::callPrelude(const std::string &fn, CallArgs args) {
  SValue f = preludeFunction(fn);
  if (inPrelude_) return inlineCall(*f.fn, args);
  b_.setLoc(args.loc); // the prelude's ops are the call's (execStmt)
  try {
    return inlineCall(*f.fn, args);
  } catch (const CompileError &e) {
    std::string text = e.what();
    if (text.rfind(prelude_->file->path + ":", 0) != 0) throw;
    size_t start = text.find(": error: ");
    size_t end = text.find('\n', start);
    std::string message = start == std::string::npos ? text : text.substr(start + 9, end - start - 9);
    error(args.loc, "tl." + fn + ": " + message);
  }
}

} // namespace tessera::spec
