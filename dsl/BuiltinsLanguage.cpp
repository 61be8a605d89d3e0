// The rest of triton.language: dispatch to the builtin files by concern
// (BuiltinsMath, BuiltinsShape, BuiltinsReduce, BuiltinsMemory, BuiltinsDebug),
// tensor member functions (x.reshape(...), x.cumsum(...)), dtype methods
// (x.dtype.is_floating()), and the language prelude: Triton functions that are
// themselves written in the language (tl.rand, tl.softmax, argmax's combine
// function, ...), kept as Python source in dsl/LanguagePrelude.cpp.
#include "dsl/BuiltinArgs.h"
#include "dsl/LanguagePrelude.h"

#include <algorithm>

namespace tessera::spec {

using ir::ScalarType;

std::optional<SValue> Specializer::callLanguageBuiltin(const std::string &name, CallArgs &args) {
  for (auto handler : {&Specializer::callMathBuiltin, &Specializer::callShapeBuiltin, &Specializer::callReduceBuiltin,
                       &Specializer::callMemoryBuiltin, &Specializer::callDebugBuiltin})
    if (std::optional<SValue> r = (this->*handler)(name, args)) return r;
  // tl.rand & co. are written in the language itself (the prelude).
  static const char *random[] = {"rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox",
                                 "uint_to_uniform_float", "pair_uniform_to_normal"};
  for (const char *fn : random)
    if (name == std::string("lang.") + fn || name == std::string("lang.random.") + fn) {
      if (!args.args.empty() && !(args.args.size() > 1 && args.args[1].isIR()) && std::string(fn).rfind("rand", 0) == 0)
        error(args.loc, std::string("tl.") + fn + " needs a block (or scalar) of integer offsets as its second argument");
      return callPrelude(fn, args);
    }
  if (name == "lang.to_tensor") {
    Bound b = bind(*this, args, "tl.to_tensor", {{"x", true}});
    return SValue::ir(toIR(b[0], b.locs[0]));
  }
  if (name == "lang.pointer_type") {
    Bound b = bind(*this, args, "tl.pointer_type", {{"element_ty", true}, {"address_space", false}});
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
      "umulhi", "clamp", "logical_and", "logical_or",
  };
  return std::any_of(std::begin(members), std::end(members), [&](const char *n) { return m == n; });
}

static std::optional<bool> dtypePredicate(const ir::Type &t, const std::string &m) {
  bool ptr = t.pointer;
  ScalarType s = t.scalar;
  bool fp = !ptr && ir::isFloat(s), integer = !ptr && ir::isInteger(s);
  if (m == "is_ptr") return ptr;
  if (m == "is_floating") return fp;
  if (m == "is_int" || m == "is_integer_type") return integer;
  if (m == "is_int_signed") return integer && ir::isSigned(s);
  if (m == "is_int_unsigned") return integer && !ir::isSigned(s);
  if (m == "is_bool" || m == "is_int1") return !ptr && s == ScalarType::I1;
  if (m == "is_fp8") return !ptr && (s == ScalarType::F8E4M3 || s == ScalarType::F8E5M2);
  if (m == "is_fp8e4nv") return !ptr && s == ScalarType::F8E4M3;
  if (m == "is_fp8e5") return !ptr && s == ScalarType::F8E5M2;
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

std::optional<SValue> Specializer::callLanguageMethod(const SValue &self, const std::string &method, CallArgs &args) {
  if (self.kind == SValue::Kind::DType) {
    if (std::optional<bool> p = dtypePredicate(self.dtype, method)) {
      bind(*this, args, method, {});
      return SValue::constant(ConstexprValue::ofBool(*p));
    }
    if (method == "to_int_type") {
      bind(*this, args, method, {});
      unsigned bits = ir::bitWidth(self.dtype.scalar);
      ScalarType s = bits == 8 ? ScalarType::I8 : bits == 16 ? ScalarType::I16 : bits == 32 ? ScalarType::I32 : ScalarType::I64;
      return SValue::dtypeOf(ir::Type(s));
    }
    error(args.loc, "dtype has no method '" + method + "'");
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

void Specializer::loadPrelude() {
  if (prelude_) return;
  auto file = std::make_shared<SourceFile>();
  file->path = "<tessera.language>";
  file->text = languagePreludeSource();
  prelude_ = std::make_unique<ast::Module>(ast::parseModule(file));
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
