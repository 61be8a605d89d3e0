// The specialiser, part 1: module scope, statements and
// structured control flow. Python's function-level scoping is kept as one
// Env (name -> SValue) per function; control flow copies it per branch and
// turns the names a branch or loop body reassigns into values carried
// through the IR's if/for/while ops.
#include "dsl/SpecializerImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>
#include <charconv>

using llvm::cast;
using llvm::dyn_cast;
using llvm::isa;

namespace tessera {

// "(8, 8)", "[2, 4]", "(3,)", "()": the elements' texts (split at the top-level commas), or nullopt.
static std::optional<std::vector<std::string>> tupleElements(const std::string &text) {
  if (text.size() < 2 || !((text.front() == '(' && text.back() == ')') || (text.front() == '[' && text.back() == ']')))
    return std::nullopt;
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(' '), e = cur.find_last_not_of(' ');
    std::string item = b == std::string::npos ? "" : cur.substr(b, e - b + 1);
    cur.clear();
    return item;
  };
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    char ch = text[i];
    if (ch == '(' || ch == '[') ++depth;
    if (ch == ')' || ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      std::string item = flush();
      if (item.empty()) return std::nullopt;
      out.push_back(item);
    } else {
      cur += ch;
    }
  }
  if (std::string last = flush(); !last.empty()) out.push_back(last);
  return out;
}

ConstexprValue ConstexprValue::parse(const std::string &text) {
  if (text == "True" || text == "true") return ofBool(true);
  if (text == "False" || text == "false") return ofBool(false);
  if (text == "None") return none();
  // tl.float16, triton.language.float16, tessera.language.float16: a dtype; tl.PropagateNan.ALL.
  for (const char *prefix : {"tl.", "triton.language.", "tessera.language."}) {
    std::string_view p(prefix);
    if (text.size() > p.size() && text.compare(0, p.size(), p) == 0) {
      std::string_view rest = std::string_view(text).substr(p.size());
      if (std::optional<ConstexprValue> dtype = ofDTypeName(rest)) return *dtype;
      if (size_t dot = rest.find('.'); dot != std::string_view::npos)
        if (std::optional<ConstexprValue> e = ofEnumMember(rest.substr(0, dot), rest.substr(dot + 1))) return *e;
    }
  }
  if (std::optional<std::vector<std::string>> items = tupleElements(text)) {
    std::vector<ConstexprValue> elems;
    for (const std::string &item : *items) elems.push_back(parse(item));
    return ofTuple(std::move(elems));
  }
  if (auto i = parseConstInt(text)) return ofInt(*i);
  double d = 0;
  auto [q, ec2] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec2 == std::errc() && q == text.data() + text.size() && !text.empty()) return ofFloat(d);
  return ofString(text);
}

ConstexprValue ConstexprValue::ofDType(ir::ScalarType type) {
  static const char *names[] = {"int1",   "int8",    "int16",    "int32",   "int64",      "uint8",   "uint16", "uint32",
                                "uint64", "float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15"};
  static_assert(sizeof names / sizeof names[0] == size_t(ir::ScalarType::F8E4B15) + 1);
  ConstexprValue c;
  c.kind = Kind::DType;
  c.stringValue = names[size_t(type)];
  return c;
}

std::optional<ConstexprValue> ConstexprValue::ofEnumMember(std::string_view enumName, std::string_view member) {
  if (enumName != "PropagateNan" || (member != "NONE" && member != "ALL")) return std::nullopt;
  ConstexprValue c;
  c.kind = Kind::Enum;
  c.stringValue = std::string(enumName) + "." + std::string(member);
  c.intValue = member == "ALL" ? 0xFFFF : 0;
  return c;
}

std::optional<ConstexprValue> ConstexprValue::ofDTypeName(std::string_view name) {
  if (name == "i1" || name == "bool") return std::nullopt; // not triton.language names
  if (std::optional<ir::ScalarType> t = ir::parseScalarType(name)) return ofDType(*t);
  return std::nullopt;
}

std::string ConstexprValue::str() const {
  switch (kind) {
  case Kind::Int: return constIntToString(intValue);
  case Kind::Bool: return intValue ? "True" : "False";
  case Kind::None: return "None";
  case Kind::String: return "'" + stringValue + "'";
  case Kind::DType: return "tl." + stringValue;
  case Kind::Enum: return "tl." + stringValue;
  case Kind::Tuple: {
    std::string out = "(";
    for (size_t i = 0; i < elems.size(); ++i)
      out += (i ? ", " : "") + (i < fields.size() ? fields[i] + "=" : std::string()) + elems[i].str();
    return out + (elems.size() == 1 && fields.empty() ? ",)" : ")");
  }
  case Kind::Runtime: return "<runtime>";
  case Kind::Float: {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, floatValue);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  }
  return "?";
}

size_t ConstexprValue::runtimeLeaves() const {
  if (kind == Kind::Runtime) return 1;
  size_t n = 0;
  for (const ConstexprValue &e : elems) n += e.runtimeLeaves();
  return n;
}

static bool isJitDecorator(const ast::Expr &e, bool fusionDecorators = true) {
  const ast::Expr *target = &e;
  if (auto *call = dyn_cast<ast::Call>(target)) target = call->func.get();
  // @tessera.elementwise / @tessera.fuse (python/tessera/fusion.py) make @jit functions too; a @builtin
  // function (Triton's triton.language.core.builtin, e.g. `return isinstance(v, tl.constexpr)`) is compiled
  // as one, its `_semantic` parameter left at its default.
  auto jitName = [&](const std::string &n) {
    return n == "jit" || n == "builtin" || (fusionDecorators && (n == "elementwise" || n == "fuse"));
  };
  if (auto *name = dyn_cast<ast::Name>(target)) return jitName(name->id);
  if (auto *attr = dyn_cast<ast::Attribute>(target)) return jitName(attr->attr);
  return false;
}

bool spec::isJitFunction(const ast::FunctionDef &fn, bool fusionDecorators) {
  return std::any_of(fn.decorators.begin(), fn.decorators.end(),
                     [&](const ast::ExprPtr &d) { return isJitDecorator(*d, fusionDecorators); });
}

// @jit(noinline=True): Triton calls it (no inlining), so it takes no non-scalar blocks.
static bool isNoInline(const ast::FunctionDef &fn) {
  for (const auto &d : fn.decorators)
    if (auto *call = dyn_cast<ast::Call>(d.get()); call && isJitDecorator(*d))
      for (const auto &kw : call->keywords)
        if (auto *c = dyn_cast<ast::Constant>(kw.value.get());
            kw.name == "noinline" && c && c->type == ast::Constant::Type::Bool && c->intValue)
          return true;
  return false;
}

std::vector<std::string> jitFunctionNames(const ast::Module &module) {
  std::vector<std::string> names;
  for (const auto &s : module.body)
    if (auto *fn = dyn_cast<ast::FunctionDef>(s.get()); fn && spec::isJitFunction(*fn))
      names.push_back(fn->name);
  return names;
}

namespace spec {

static void collectAssigned(const ast::Expr &target, std::vector<std::string> &out) {
  if (auto *n = dyn_cast<ast::Name>(&target)) {
    if (std::find(out.begin(), out.end(), n->id) == out.end()) out.push_back(n->id);
  } else if (auto *t = dyn_cast<ast::Tuple>(&target)) {
    for (const auto &e : t->elts) collectAssigned(*e, out);
  } else if (auto *l = dyn_cast<ast::List>(&target)) {
    for (const auto &e : l->elts) collectAssigned(*e, out);
  }
}

static void collectAssigned(const ast::Body &body, std::vector<std::string> &out) {
  for (const auto &s : body) {
    if (auto *a = dyn_cast<ast::Assign>(s.get())) {
      for (const auto &t : a->targets) collectAssigned(*t, out);
    } else if (auto *a = dyn_cast<ast::AugAssign>(s.get())) {
      collectAssigned(*a->target, out);
    } else if (auto *a = dyn_cast<ast::AnnAssign>(s.get())) {
      if (a->value) collectAssigned(*a->target, out);
    } else if (auto *i = dyn_cast<ast::If>(s.get())) {
      collectAssigned(i->body, out);
      collectAssigned(i->orelse, out);
    } else if (auto *f = dyn_cast<ast::For>(s.get())) {
      collectAssigned(*f->target, out);
      collectAssigned(f->body, out);
    } else if (auto *w = dyn_cast<ast::While>(s.get())) {
      collectAssigned(w->body, out);
    }
  }
}

std::vector<std::string> assignedNames(const ast::Body &body) {
  std::vector<std::string> out;
  collectAssigned(body, out);
  return out;
}

Specializer::Specializer(const ast::Module &module, const Specialization &spec)
    : module_(module), spec_(spec), b_(&scratch_) {}

void Specializer::error(SourceLoc loc, const std::string &message) const {
  raiseError(inPrelude_ && prelude_ ? *prelude_->file : *module_.file, loc, message);
}

// The canonical path of a tessera / triton module ("top", "lang", "lang.math",
// "lang.extra"), or "" for any other module.
static std::string canonicalModule(const std::string &module) {
  for (const char *top : {"tessera", "triton"}) {
    std::string t = top;
    if (module == t) return "top";
    // triton.language re-exports core's and standard's names (FlagGems: `import triton.language.core as
    // core`, `from triton.language.standard import _log2, zeros_like`).
    if (module == t + ".language" || module == t + ".language.core" || module == t + ".language.standard")
      return "lang";
    if (module == t + ".language.math" || module == t + ".language.extra.libdevice" ||
        module == t + ".language.extra.cuda.libdevice")
      return "lang.math";
    if (module == t + ".language.extra" || module == t + ".language.extra.cuda") return "lang.extra";
    if (module == t + ".language.target_info") return "lang.target_info";
  }
  return "";
}

// A submodule of tessera.language / triton.language that does not exist (Triton
// 3.6's package, or tessera's: triton.language.libdevice, tessera.language.extra.hip):
// importing it is the ImportError a module-level `try` catches.
static bool unknownLanguageModule(const std::string &module) {
  static const char *triton[] = {"core", "math", "random", "semantic", "standard", "target_info", "extra",
                                 "extra.libdevice", "extra.cuda", "extra.cuda.libdevice", "extra.cuda.utils",
                                 "extra.cuda.gdc", "extra.hip", "extra.hip.libdevice", "extra.hip.utils"};
  static const char *tessera[] = {"math", "random", "extra", "extra.libdevice", "extra.cuda", "extra.cuda.libdevice"};
  for (bool isTriton : {true, false}) {
    std::string prefix = isTriton ? "triton.language." : "tessera.language.";
    if (module.compare(0, prefix.size(), prefix) != 0) continue;
    std::string sub = module.substr(prefix.size());
    if (isTriton) return std::none_of(std::begin(triton), std::end(triton), [&](const char *m) { return sub == m; });
    return std::none_of(std::begin(tessera), std::end(tessera), [&](const char *m) { return sub == m; });
  }
  return false;
}

// The names a statement list binds at module level (for an `if` whose branch
// is not known at compile time).
static void boundNames(const ast::Body &body, std::vector<std::string> &out) {
  for (const std::string &n : assignedNames(body)) out.push_back(n);
  for (const auto &s : body) {
    if (auto *imp = dyn_cast<ast::Import>(s.get()))
      for (const auto &alias : imp->names)
        out.push_back(alias.asName.empty() ? alias.module.substr(0, alias.module.find('.')) : alias.asName);
    else if (auto *imp = dyn_cast<ast::ImportFrom>(s.get()))
      for (const auto &alias : imp->names) out.push_back(alias.asName.empty() ? alias.name : alias.asName);
    else if (auto *fn = dyn_cast<ast::FunctionDef>(s.get()))
      out.push_back(fn->name);
    else if (auto *t = dyn_cast<ast::Try>(s.get())) {
      boundNames(t->body, out);
      for (const auto &h : t->handlers) boundNames(h.body, out);
      boundNames(t->orelse, out);
      boundNames(t->finalbody, out);
    } else if (auto *i = dyn_cast<ast::If>(s.get())) {
      boundNames(i->body, out);
      boundNames(i->orelse, out);
    }
  }
}

// The names a kernel file can use at module level: imports (to recognise
// tl / triton / tessera), @jit functions, and constants.
void Specializer::collectModuleScope(const ast::Module &module) {
  globals_["range"] = SValue::builtin("range");
  globals_["float"] = SValue::builtin("float");
  globals_["int"] = SValue::builtin("int");
  globals_["bool"] = SValue::builtin("bool");
  globals_["min"] = SValue::builtin("min");
  globals_["max"] = SValue::builtin("max");
  globals_["len"] = SValue::builtin("len");
  globals_["isinstance"] = SValue::builtin("isinstance");
  globals_["$format"] = SValue::builtin("$format"); // a value of an f-string (the parser's desugaring)
  globals_["abs"] = SValue::builtin("abs");
  globals_["print"] = SValue::builtin("print");
  globals_["getattr"] = SValue::builtin("getattr");
  globals_["hasattr"] = SValue::builtin("hasattr");
  // triton.language.core.constexpr_type, which kernels name after importing it (test_core.py's
  // test_constexpr_assignment imports it inside a test function: no module-level binding)
  globals_["constexpr_type"] = SValue::builtin("constexpr_type");
  // A NamedTuple class of the kernel's file, as the host writes it (python/tessera/_source.py).
  globals_["__tessera_namedtuple__"] = SValue::builtin("$namedtuple");
  // @jit functions are visible everywhere (kernels call helpers defined below them).
  for (const auto &s : module.body)
    if (auto *fn = dyn_cast<ast::FunctionDef>(s.get())) globals_[fn->name] = SValue::function(fn);
  collectModuleStatements(module.body, false);
}

// Runs the module's top-level statements in order, as Python does, so later
// constants can use earlier ones: imports, defs and constant assignments bind
// names; an `if` whose condition folds runs its branch; a `try` runs its body
// and, when it imports a tessera / triton module tessera does not know, its
// first ImportError handler instead. Inside a `try` body (`inTry`), returns
// false at such an import; elsewhere the import binds nothing.
bool Specializer::collectModuleStatements(const ast::Body &body, bool inTry) {
  auto bind = [&](const std::string &name, SValue v) {
    globals_[name] = std::move(v);
    undecidedGlobals_.erase(name);
  };
  // A name imported from another library: a module whose attributes are the @jit functions the
  // host appended (kOtherModule); a @jit function of that name the host appended stays.
  auto bindOther = [&](const std::string &name) {
    auto it = globals_.find(name);
    if (it != globals_.end() && it->second.kind == SValue::Kind::Function) return;
    bind(name, SValue::module(kOtherModule + name));
  };
  for (const auto &s : body) {
    if (auto *imp = dyn_cast<ast::Import>(s.get())) {
      for (const auto &alias : imp->names) {
        if (unknownLanguageModule(alias.module) && inTry) return false;
        std::string path = canonicalModule(alias.module);
        if (!alias.asName.empty()) {
          if (!path.empty()) bind(alias.asName, SValue::module(path));
          else bindOther(alias.asName);
        } else {
          // "import triton.language" binds "triton".
          std::string first = alias.module.substr(0, alias.module.find('.'));
          if (!canonicalModule(first).empty()) bind(first, SValue::module(canonicalModule(first)));
          else bindOther(first);
        }
      }
    } else if (auto *imp = dyn_cast<ast::ImportFrom>(s.get())) {
      if (unknownLanguageModule(imp->module) && inTry) return false;
      std::string path = canonicalModule(imp->module);
      if (path.empty()) { // another library's names: its @jit functions, when the host appended them
        for (const auto &alias : imp->names)
          if (alias.name != "*") bindOther(alias.asName.empty() ? alias.name : alias.asName);
        continue;
      }
      for (const auto &alias : imp->names) {
        const std::string &local = alias.asName.empty() ? alias.name : alias.asName;
        if (alias.name == "language")
          bind(local, SValue::module(path == "top" ? "lang" : path + ".language"));
        else if (alias.name == "libdevice" || (alias.name == "math" && path == "lang"))
          bind(local, SValue::module("lang.math")); // from triton.language.extra.cuda import libdevice
        else if (alias.name == "cuda" && path == "lang.extra")
          bind(local, SValue::module("lang.math")); // from triton.language.extra import cuda (as tl.extra.cuda)
        else if ((alias.name == "core" || alias.name == "standard") && path == "lang")
          bind(local, SValue::module("lang")); // from triton.language import core
        else if (alias.name != "*")
          bind(local, SValue::builtin(path + "." + alias.name));
      }
    } else if (auto *fn = dyn_cast<ast::FunctionDef>(s.get())) {
      bind(fn->name, SValue::function(fn));
    } else if (isa<ast::Assign>(s.get()) || isa<ast::AnnAssign>(s.get())) {
      const ast::Expr *value = nullptr;
      std::vector<const ast::Expr *> targets;
      if (auto *a = dyn_cast<ast::Assign>(s.get())) {
        value = a->value.get();
        for (const auto &t : a->targets) targets.push_back(t.get());
      } else if (auto *a = dyn_cast<ast::AnnAssign>(s.get()); a->value) {
        value = a->value.get();
        targets.push_back(a->target.get());
      }
      if (!value) continue;
      SValue v;
      try {
        v = evalGlobal(*value);
      } catch (const CompileError &) {
        continue; // not a constant a kernel can use (e.g. a torch tensor); ignore it
      }
      std::function<void(const ast::Expr &, const SValue &)> assign = [&](const ast::Expr &t, const SValue &x) {
        if (auto *n = dyn_cast<ast::Name>(&t)) {
          bind(n->id, x);
          return;
        }
        const std::vector<ast::ExprPtr> *elts = nullptr;
        if (auto *tt = dyn_cast<ast::Tuple>(&t)) elts = &tt->elts;
        if (auto *l = dyn_cast<ast::List>(&t)) elts = &l->elts;
        if (elts && x.kind == SValue::Kind::Tuple && x.elems.size() == elts->size())
          for (size_t i = 0; i < elts->size(); ++i) assign(*(*elts)[i], x.elems[i]); // A, B = 1, 2
      };
      for (const ast::Expr *t : targets) assign(*t, v);
    } else if (auto *i = dyn_cast<ast::If>(s.get())) {
      std::optional<bool> taken;
      try {
        SValue cond = evalGlobal(*i->cond);
        if (cond.isConst()) taken = truthy(cond.c);
        else if (cond.kind == SValue::Kind::DType || cond.kind == SValue::Kind::Module) taken = true;
      } catch (const CompileError &) {
      }
      if (taken) {
        if (!collectModuleStatements(*taken ? i->body : i->orelse, inTry)) return false;
        continue;
      }
      // Not known at compile time (torch.cuda.is_available(), ...): what either
      // branch binds is an error to use. (From Python, tessera/_source.py writes
      // the branch Python took into the condition.)
      std::vector<std::string> names;
      boundNames(i->body, names);
      boundNames(i->orelse, names);
      for (const std::string &n : names) {
        globals_.erase(n);
        undecidedGlobals_[n] = i->loc;
      }
    } else if (auto *t = dyn_cast<ast::Try>(s.get())) {
      if (collectModuleStatements(t->body, true)) {
        if (!collectModuleStatements(t->orelse, inTry)) return false;
      } else {
        for (const auto &h : t->handlers) {
          std::string type;
          if (auto *n = h.type ? dyn_cast<ast::Name>(h.type.get()) : nullptr) type = n->id;
          if (h.type && type != "ImportError" && type != "ModuleNotFoundError" && type != "Exception" &&
              type != "BaseException")
            continue;
          if (!h.name.empty()) undecidedGlobals_[h.name] = h.loc;
          if (!collectModuleStatements(h.body, inTry)) return false;
          break;
        }
      }
      if (!collectModuleStatements(t->finalbody, inTry)) return false;
    }
  }
  return true;
}

// Globals are evaluated with an empty environment and no IR builder access:
// only constant expressions succeed.
SValue Specializer::evalGlobal(const ast::Expr &e) {
  Env empty;
  Env *saved = env_;
  env_ = &empty;
  bool wasGlobal = evaluatingGlobal_;
  evaluatingGlobal_ = true;
  try {
    SValue v = eval(e);
    env_ = saved;
    evaluatingGlobal_ = wasGlobal;
    if (v.isIR()) error(e.loc, "module-level value is not a constant");
    return v;
  } catch (...) {
    env_ = saved;
    evaluatingGlobal_ = wasGlobal;
    throw;
  }
}

const ast::FunctionDef *Specializer::findKernel() const {
  for (const auto &s : module_.body)
    if (auto *fn = dyn_cast<ast::FunctionDef>(s.get()); fn && fn->name == spec_.kernelName) {
      if (fn->skippedHostCode) throw CompileError(fn->parseError, fn->parseErrorLoc);
      if (!isJitFunction(*fn))
        error(fn->loc, "function '" + fn->name + "' is not decorated with @jit");
      if (!fn->parseError.empty()) throw CompileError(fn->parseError, fn->parseErrorLoc);
      return fn;
    }
  std::string known;
  for (const std::string &n : jitFunctionNames(module_)) known += (known.empty() ? "" : ", ") + n;
  raiseError(*module_.file, SourceLoc{},
             "no @jit function named '" + spec_.kernelName + "' in this file" +
                 (known.empty() ? std::string(" (it defines none)") : " (it defines: " + known + ")"));
}

std::unique_ptr<ir::Function> Specializer::run() {
  collectModuleScope(module_);
  const ast::FunctionDef *kernel = findKernel();
  fn_ = std::make_unique<ir::Function>();
  fn_->name = kernel->name;
  fn_->numWarps = spec_.numWarps;
  fn_->sourcePath = module_.file->path;
  Env env;
  env_ = &env;
  b_.setInsertionPointToEnd(&fn_->body);
  bindParameters(*kernel);
  b_.setLoc(kernel->loc);
  env["$retval"] = SValue::constant(ConstexprValue::none());
  execBody(kernel->body);
  if (!env["$retval"].isNone()) error(kernel->loc, "a kernel cannot return a value");
  b_.setInsertionPointToEnd(&fn_->body);
  b_.create(ir::OpCode::Return, {}, {});
  env_ = nullptr;
  return std::move(fn_);
}


void Specializer::execAssign(const ast::Expr &target, const SValue &value) {
  if (auto *n = dyn_cast<ast::Name>(&target)) {
    (*env_)[n->id] = value;
    return;
  }
  const std::vector<ast::ExprPtr> *elts = nullptr;
  if (auto *t = dyn_cast<ast::Tuple>(&target)) elts = &t->elts;
  if (auto *l = dyn_cast<ast::List>(&target)) elts = &l->elts;
  if (elts) {
    if (value.kind != SValue::Kind::Tuple)
      error(target.loc, "cannot unpack " + describe(value) + " into " + std::to_string(elts->size()) + " names");
    if (value.elems.size() != elts->size())
      error(target.loc, "cannot unpack a tuple of " + std::to_string(value.elems.size()) + " values into " +
                            std::to_string(elts->size()) + " names");
    for (size_t i = 0; i < elts->size(); ++i) execAssign(*(*elts)[i], value.elems[i]);
    return;
  }
  if (isa<ast::Subscript>(&target))
    error(target.loc, "cannot assign to an element of a block: blocks are immutable (build a new one with tl.where)");
  error(target.loc, "unsupported assignment target");
}

// Triton's visit_Assign (_sanitize_value): a Python number (int, float, bool,
// constexpr) bound by a plain or augmented assignment becomes a scalar tensor of
// its to_tensor type (ints by range i32/u32/i64/u64, floats f32 or f64, bools
// i1), so `a = 100; x_i8 * a` is i32 and `acc = 0; acc.to(...)` works. Only
// `x: tl.constexpr = ...` keeps a compile-time constant. None, dtypes, functions
// and strings stay. The elements of a tuple literal (`a, b = 1, 2`) are
// converted one by one; other tuples (`M, N = x.shape`: Python tuples, which
// Triton refuses to assign) stay constant, as tessera always had them.
SValue Specializer::assignedValue(const ast::Expr &target, const SValue &value, const ast::Expr *valueExpr,
                                  SourceLoc loc) {
  if (value.kind == SValue::Kind::Tuple) {
    if (!valueExpr || !(isa<ast::Tuple>(valueExpr) || isa<ast::List>(valueExpr))) return value;
    const std::vector<ast::ExprPtr> *names = nullptr;
    if (auto *t = dyn_cast<ast::Tuple>(&target)) names = &t->elts;
    if (auto *l = dyn_cast<ast::List>(&target)) names = &l->elts;
    SValue t = value;
    for (size_t i = 0; i < t.elems.size(); ++i) {
      const ast::Expr &elemTarget = names && names->size() == t.elems.size() ? *(*names)[i] : target;
      t.elems[i] = assignedValue(elemTarget, t.elems[i], valueExpr, loc);
    }
    return t;
  }
  if (!value.isConst()) return value;
  ConstexprValue::Kind k = value.c.kind;
  if (k != ConstexprValue::Kind::Int && k != ConstexprValue::Kind::Float && k != ConstexprValue::Kind::Bool)
    return value;
  ir::Value *v = toIR(value, loc);
  if (auto *n = dyn_cast<ast::Name>(&target)) assignedNumbers_[v] = {n->id, value.c.str()};
  return SValue::ir(v);
}

void Specializer::rebindValue(ir::Value *from, ir::Value *to) {
  if (!env_) return;
  for (auto &[name, value] : *env_)
    if (value.isIR() && value.value == from) value = SValue::ir(to);
}

Specializer::Flow Specializer::execStmt(const ast::Stmt &s) {
  // IR ops carry locations in the user's file: the prelude's statements keep
  // the location of the user's tl.* call (callPrelude), so that an error found
  // later (codegen, the interpreter) points at that call, not at a prelude line.
  if (!inPrelude_) b_.setLoc(s.loc);
  switch (s.kind) {
  case ast::StmtKind::Expr: {
    auto &e = cast<ast::ExprStmt>(s);
    if (auto *c = dyn_cast<ast::Constant>(e.value.get()); c && c->type == ast::Constant::Type::String)
      return Flow::Normal; // docstring
    eval(*e.value);
    return Flow::Normal;
  }
  case ast::StmtKind::Assign: {
    auto &a = cast<ast::Assign>(s);
    SValue v = eval(*a.value);
    for (const auto &t : a.targets) execAssign(*t, assignedValue(*t, v, a.value.get(), a.value->loc));
    return Flow::Normal;
  }
  case ast::StmtKind::AugAssign: {
    auto &a = cast<ast::AugAssign>(s);
    if (!isa<ast::Name>(a.target.get()))
      error(a.target->loc, "augmented assignment needs a plain name on the left");
    SValue current = eval(*a.target);
    SValue rhs = eval(*a.value);
    execAssign(*a.target, assignedValue(*a.target, binary(a.op, current, rhs, s.loc), nullptr, s.loc));
    return Flow::Normal;
  }
  case ast::StmtKind::AnnAssign: {
    auto &a = cast<ast::AnnAssign>(s);
    if (!a.value) return Flow::Normal;
    SValue v = eval(*a.value);
    if (!isConstexprAnnotation(a.annotation.get())) {
      execAssign(*a.target, assignedValue(*a.target, v, a.value.get(), a.value->loc));
      return Flow::Normal;
    }
    if (v.isIR())
      error(a.value->loc, "a name annotated tl.constexpr needs a compile-time value, but this is " + describe(v));
    execAssign(*a.target, v);
    return Flow::Normal;
  }
  case ast::StmtKind::If:
    return execIf(cast<ast::If>(s));
  case ast::StmtKind::For:
    return execFor(cast<ast::For>(s));
  case ast::StmtKind::While:
    return execWhile(cast<ast::While>(s));
  case ast::StmtKind::Break:
    if (loopDepth_ == 0 && !inStaticLoop_) error(s.loc, "'break' outside a loop");
    return Flow::Broke;
  case ast::StmtKind::Continue:
    if (loopDepth_ == 0 && !inStaticLoop_) error(s.loc, "'continue' outside a loop");
    return Flow::Continued;
  case ast::StmtKind::Return: {
    auto &r = cast<ast::Return>(s);
    SValue value = r.value ? eval(*r.value) : SValue::constant(ConstexprValue::none());
    if (loopDepth_ > 0 && !value.isNone())
      error(s.loc, "unsupported construct: 'return' with a value inside a loop");
    (*env_)["$retval"] = value;
    (*env_)["$ret"] = SValue::constant(ConstexprValue::ofBool(true));
    return Flow::Returned;
  }
  case ast::StmtKind::Assert: {
    auto &a = cast<ast::Assert>(s);
    SValue c = eval(*a.cond);
    if (c.isConst()) {
      bool ok = c.c.kind == ConstexprValue::Kind::Float ? c.c.floatValue != 0
                                                        : (c.c.kind != ConstexprValue::Kind::None && c.c.intValue != 0);
      if (c.c.kind == ConstexprValue::Kind::String) ok = !c.c.stringValue.empty();
      if (!ok) {
        std::string msg = "assertion failed";
        if (a.msg) {
          SValue m = eval(*a.msg);
          if (m.isConst()) msg += ": " + (m.c.kind == ConstexprValue::Kind::String ? m.c.stringValue : m.c.str());
        }
        error(s.loc, msg);
      }
    }
    if (c.isIR() && debugEnabled()) { // a runtime condition: a device assert, as in Triton
      CallArgs assertArgs;
      assertArgs.loc = s.loc;
      assertArgs.args = {c};
      assertArgs.argLocs = {a.cond->loc};
      if (a.msg) {
        assertArgs.args.push_back(eval(*a.msg));
        assertArgs.argLocs.push_back(a.msg->loc);
      }
      callBuiltin("lang.device_assert", assertArgs);
    }
    return Flow::Normal;
  }
  case ast::StmtKind::Pass:
    return Flow::Normal;
  case ast::StmtKind::Raise: {
    // Reached: the specialisation takes this branch. `raise E("msg")` says E: msg, as Python would.
    auto &r = cast<ast::Raise>(s);
    std::string what = "a 'raise' statement was reached while compiling the kernel";
    if (auto *call = r.exc ? dyn_cast<ast::Call>(r.exc.get()) : nullptr) {
      std::string type = isa<ast::Name>(call->func.get()) ? cast<ast::Name>(call->func.get())->id : "";
      std::string msg;
      if (!call->args.empty())
        if (auto *c = dyn_cast<ast::Constant>(call->args[0].get()); c && c->type == ast::Constant::Type::String)
          msg = c->stringValue;
      if (!type.empty()) what += ": " + type + (msg.empty() ? "" : ": " + msg);
    } else if (auto *n = r.exc ? dyn_cast<ast::Name>(r.exc.get()) : nullptr) {
      what += ": " + n->id;
    }
    error(s.loc, what);
  }
  case ast::StmtKind::FunctionDef:
    error(s.loc, "unsupported construct: a function defined inside a kernel");
  case ast::StmtKind::Import:
  case ast::StmtKind::ImportFrom:
    error(s.loc, "unsupported construct: 'import' inside a kernel");
  case ast::StmtKind::Try:
    error(s.loc, "unsupported construct: 'try' inside a kernel");
  }
  error(s.loc, "unsupported statement");
}

// Calls to @jit functions are inlined: bind arguments, run the body in a
// fresh environment (module globals stay visible), return its value.
SValue Specializer::inlineCall(const ast::FunctionDef &fn, CallArgs &args) {
  if (!fn.parseError.empty()) throw CompileError(fn.parseError, fn.parseErrorLoc);
  if (++inlineDepth_ > 64) error(args.loc, "call depth exceeds 64 (recursive @jit functions are not supported)");
  Env callee;
  if (args.args.size() > fn.params.size())
    error(args.loc, "'" + fn.name + "' takes " + std::to_string(fn.params.size()) + " argument" +
                        (fn.params.size() == 1 ? "" : "s") + " but " + std::to_string(args.args.size()) +
                        " were given");
  for (size_t i = 0; i < args.args.size(); ++i) callee[fn.params[i].name] = args.args[i];
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto &[name, value] = args.keywords[k];
    bool known = std::any_of(fn.params.begin(), fn.params.end(), [&](const ast::Param &p) { return p.name == name; });
    if (!known) error(args.keywordLocs[k], "'" + fn.name + "' got an unexpected keyword argument '" + name + "'");
    if (callee.count(name)) error(args.keywordLocs[k], "'" + fn.name + "' got multiple values for argument '" + name + "'");
    callee[name] = value;
  }
  if (isNoInline(fn)) // Triton's rule, though tessera inlines it like any @jit function
    for (const ast::Param &p : fn.params) {
      auto it = callee.find(p.name);
      if (it != callee.end() && it->second.isIR() && it->second.value->type.isBlock() &&
          it->second.value->type.numElements() != 1)
        error(args.loc, "Function " + fn.name + " is marked noinline, but was called with non-scalar argument " +
                            p.name + ":" + it->second.value->type.str());
    }
  // A prelude function runs with the prelude's globals (and a user combine
  // function called from the prelude with the user's).
  bool fromPrelude = false;
  if (prelude_)
    for (const auto &st : prelude_->body)
      fromPrelude = fromPrelude || st.get() == &fn;
  bool switchScope = fromPrelude != inPrelude_;
  if (switchScope) {
    std::swap(globals_, preludeGlobals_);
    inPrelude_ = fromPrelude;
  }
  Env *saved = env_;
  SourceLoc savedLoc = b_.loc(); // the rest of the caller's statement keeps its location
  std::vector<PendingRest> savedPending;
  std::swap(savedPending, pending_); // the callee's body is its own boundary
  unsigned savedLoopDepth = loopDepth_;
  loopDepth_ = 0;
  bool savedStatic = inStaticLoop_;
  inStaticLoop_ = false;
  auto restore = [&] {
    env_ = saved;
    b_.setLoc(savedLoc);
    std::swap(savedPending, pending_);
    loopDepth_ = savedLoopDepth;
    inStaticLoop_ = savedStatic;
    if (switchScope) {
      std::swap(globals_, preludeGlobals_);
      inPrelude_ = !fromPrelude;
    }
    --inlineDepth_;
  };
  SValue result;
  try {
    for (const auto &p : fn.params) {
      if (callee.count(p.name)) continue;
      if (!p.defaultValue) error(args.loc, "'" + fn.name + "' is missing a value for parameter '" + p.name + "'");
      callee[p.name] = evalGlobal(*p.defaultValue);
    }
    callee["$retval"] = noReturnValue();
    env_ = &callee;
    execBody(fn.body);
    result = callee["$retval"];
    if (isNoReturnValue(result)) result = SValue::constant(ConstexprValue::none());
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return result;
}

} // namespace spec

std::unique_ptr<ir::Function> specialize(const ast::Module &module, const Specialization &spec) {
  return spec::Specializer(module, spec).run();
}

std::vector<std::string> runtimeParameterNames(const ast::Module &module, const std::string &kernelName,
                                               const std::map<std::string, ConstexprValue> &constexprs) {
  std::vector<std::string> names;
  // As bindParameters: constexprs and parameters given None take no signature entry, a tuple one per
  // Runtime leaf.
  std::function<void(const ConstexprValue &, const std::string &)> leaves = [&](const ConstexprValue &c,
                                                                                const std::string &name) {
    if (c.kind == ConstexprValue::Kind::Runtime) names.push_back(name);
    for (size_t i = 0; i < c.elems.size(); ++i) leaves(c.elems[i], name + "_" + std::to_string(i));
  };
  for (const auto &s : module.body)
    if (auto *fn = dyn_cast<ast::FunctionDef>(s.get()); fn && fn->name == kernelName) {
      for (const ast::Param &p : fn->params) {
        if (spec::isConstexprAnnotation(p.annotation.get())) continue;
        auto given = constexprs.find(p.name);
        if (given == constexprs.end()) names.push_back(p.name);
        else if (given->second.kind == ConstexprValue::Kind::Tuple) leaves(given->second, p.name);
        else if (given->second.kind != ConstexprValue::Kind::None) names.push_back(p.name);
      }
      break;
    }
  return names;
}

} // namespace tessera
