// The specialiser's kernel parameters: constexpr values, runtime parameters (with their dtype and
// tl.const annotations), tuple arguments rebuilt from their flattened leaves, and tensor descriptor
// arguments from their hidden fields.
#include "dsl/SpecializerImpl.h"

#include "llvm/Support/Casting.h"

using llvm::dyn_cast;
using llvm::isa;

namespace tessera::spec {

bool isConstexprAnnotation(const ast::Expr *e) {
  if (!e) return false;
  if (auto *a = dyn_cast<ast::Attribute>(e)) return a->attr == "constexpr";
  if (auto *n = dyn_cast<ast::Name>(e)) return n->id == "constexpr";
  if (auto *c = dyn_cast<ast::Constant>(e))
    return c->type == ast::Constant::Type::String && c->stringValue.find("constexpr") != std::string::npos;
  return false;
}

// `p: tl.const`: a pointer the kernel only reads through.
static bool isConstAnnotation(const ast::Expr *e) {
  if (!e) return false;
  if (auto *a = dyn_cast<ast::Attribute>(e)) return a->attr == "const";
  if (auto *n = dyn_cast<ast::Name>(e)) return n->id == "const";
  return false;
}

// A scalar dtype annotation of a non-constexpr parameter (`stride: tl.int64`, `v: "tl.uint8"`, `n: int`,
// `x: float`): Triton's KernelParam.annotation_type, which types the argument (_normalize_ty and
// type_canonicalisation_dict: `int` is i32, `float` fp32, `bool` i1). Other annotations (torch.Tensor,
// pointers) say nothing.
static std::optional<ir::Type> annotatedScalarType(const ast::Expr *e) {
  if (!e) return std::nullopt;
  std::string name;
  if (auto *a = dyn_cast<ast::Attribute>(e)) {
    auto *base = dyn_cast<ast::Name>(a->value.get());
    bool language = (base && (base->id == "tl" || base->id == "language" || base->id == "core")) ||
                    (isa<ast::Attribute>(a->value.get()) &&
                     static_cast<const ast::Attribute *>(a->value.get())->attr == "language");
    if (!language) return std::nullopt;
    name = a->attr;
  } else if (auto *n = dyn_cast<ast::Name>(e)) {
    name = n->id;
  } else if (auto *c = dyn_cast<ast::Constant>(e); c && c->type == ast::Constant::Type::String) {
    name = c->stringValue;
    if (name.rfind("tl.", 0) == 0) name = name.substr(3);
  } else {
    return std::nullopt;
  }
  if (name == "int") name = "int32";
  if (name == "float") name = "float32";
  if (name == "double") name = "float64";
  if (name == "half") name = "float16";
  if (name == "u1" || name == "uint1") name = "int1";
  std::optional<ir::ScalarType> t = ir::parseScalarType(name);
  if (!t) return std::nullopt;
  return ir::Type(*t);
}

// A constexpr value as the kernel sees it: a dtype constexpr is a dtype, a tuple a tuple of them.
static SValue constexprArgument(const ConstexprValue &c) {
  if (c.kind == ConstexprValue::Kind::DType) return SValue::dtypeOf(ir::Type(*ir::parseScalarType(c.stringValue)));
  if (c.kind == ConstexprValue::Kind::Tuple) {
    std::vector<SValue> elems;
    for (const ConstexprValue &e : c.elems) elems.push_back(constexprArgument(e));
    SValue t = SValue::tuple(std::move(elems));
    t.fields = c.fields;
    return t;
  }
  return SValue::constant(c);
}

// A non-constexpr parameter given a value by the launch rather than a type: None, or a tuple (whose
// Runtime leaves take signature entries; its other leaves are constexprs).
static const ConstexprValue *givenValue(const Specialization &spec, const std::string &param) {
  auto it = spec.constexprs.find(param);
  if (it == spec.constexprs.end()) return nullptr;
  if (it->second.kind != ConstexprValue::Kind::None && it->second.kind != ConstexprValue::Kind::Tuple) return nullptr;
  return &it->second;
}

// The signature entries a non-constexpr parameter takes.
static size_t signatureEntries(const Specialization &spec, const std::string &param) {
  const ConstexprValue *given = givenValue(spec, param);
  return given ? given->runtimeLeaves() : 1;
}

// The IR parameter of one signature entry, as the kernel sees it (`annotation`: the parameter's, or null for
// a tuple's leaf).
SValue Specializer::bindRuntimeParameter(const std::string &name, const ArgSpec &arg, const ast::Expr *annotation) {
  ir::Type type = arg.type;
  if (type.pointer && isConstAnnotation(annotation)) type.constPointee = true;
  ir::Param param{name, type, arg.divisibility, arg.equalsOne};
  fn_->params.push_back(param);
  ir::Value *v = fn_->body.addArgument(type, name);
  // A dtype annotation types a number argument, as Triton's launcher would pass it
  // (`stride: tl.int64` computes in 64 bits, `v: tl.uint8` is unsigned).
  std::optional<ir::Type> annotated = annotatedScalarType(annotation);
  bool number = !type.pointer && !type.isBlock() && (type.isIntElement() || type.isFloatElement());
  // Triton specialises ints equal to 1 into the constant 1.
  if (arg.equalsOne && arg.type.isIntElement()) return SValue::constant(ConstexprValue::ofInt(1));
  if (annotated && number) return SValue::ir(annotated->isBoolElement() ? toBool(v) : castElement(v, *annotated));
  return SValue::ir(v);
}

// A tuple argument as the kernel sees it (Triton's code generator rebuilds a tl.tuple from the flattened
// leaves): its Runtime leaves are the next signature entries, named `name`_0, `name`_1_0, ...
SValue Specializer::bindTupleArgument(const ConstexprValue &given, const std::string &name, size_t &argIndex,
                                      SourceLoc loc) {
  if (given.kind == ConstexprValue::Kind::Runtime) {
    if (spec_.args[argIndex].type.isTensorDesc())
      error(loc, "argument '" + name + "': a tensor descriptor inside a tuple argument is not supported; "
                         "pass it as an argument of its own");
    return bindRuntimeParameter(name, spec_.args[argIndex++], nullptr);
  }
  if (given.kind != ConstexprValue::Kind::Tuple) return constexprArgument(given);
  std::vector<SValue> elems;
  for (size_t i = 0; i < given.elems.size(); ++i)
    elems.push_back(bindTupleArgument(given.elems[i], name + "_" + std::to_string(i), argIndex, loc));
  SValue t = SValue::tuple(std::move(elems));
  t.fields = given.fields;
  return t;
}

void Specializer::bindParameters(const ast::FunctionDef &kernel) {
  // As in Triton, a None argument for a non-constexpr parameter is specialised
  // as the constexpr None (`if bias_ptr is not None:` folds): it takes no
  // signature entry. A tuple argument takes one per leaf passed at run time.
  size_t runtimeCount = 0;
  for (const auto &p : kernel.params)
    if (!isConstexprAnnotation(p.annotation.get())) runtimeCount += signatureEntries(spec_, p.name);
  if (runtimeCount != spec_.args.size())
    error(kernel.loc, "kernel '" + kernel.name + "' has " + std::to_string(runtimeCount) +
                          " non-constexpr parameter" + (runtimeCount == 1 ? "" : "s") +
                          " but the signature gives " + std::to_string(spec_.args.size()) + " type" +
                          (spec_.args.size() == 1 ? "" : "s"));
  for (const auto &[name, value] : spec_.constexprs) {
    bool found = std::any_of(kernel.params.begin(), kernel.params.end(),
                             [&](const ast::Param &p) { return p.name == name; });
    if (!found) error(kernel.loc, "kernel '" + kernel.name + "' has no parameter named '" + name + "'");
  }
  size_t argIndex = 0;
  for (const auto &p : kernel.params) {
    if (isConstexprAnnotation(p.annotation.get())) {
      auto it = spec_.constexprs.find(p.name);
      if (it != spec_.constexprs.end()) {
        if (it->second.runtimeLeaves())
          error(p.loc, "constexpr parameter '" + p.name + "' was given a tuple with values passed at run time");
        (*env_)[p.name] = constexprArgument(it->second);
      } else if (p.defaultValue) {
        (*env_)[p.name] = evalGlobal(*p.defaultValue);
      } else {
        error(p.loc, "missing value for constexpr parameter '" + p.name + "'");
      }
      continue;
    }
    if (const ConstexprValue *given = givenValue(spec_, p.name)) {
      (*env_)[p.name] = bindTupleArgument(*given, p.name, argIndex, p.loc);
      continue;
    }
    if (spec_.constexprs.count(p.name))
      error(p.loc, "parameter '" + p.name + "' is not a tl.constexpr but a constexpr value was given for it "
                   "(only None or a tuple is, as for a None or tuple argument)");
    const ArgSpec &arg = spec_.args[argIndex++];
    if (arg.type.isTensorDesc()) { // its fields come as hidden parameters after the others (hostDescriptor)
      fn_->params.push_back(ir::Param{p.name, arg.type, 1, false});
      hostDescriptors.emplace_back(p.name, fn_->body.addArgument(arg.type, p.name));
      continue;
    }
    (*env_)[p.name] = bindRuntimeParameter(p.name, arg, p.annotation.get());
  }
  for (const auto &[name, map] : hostDescriptors) (*env_)[name] = hostDescriptor(name, map);
}

// A tensor descriptor argument (tessera.TensorDescriptor / Triton's TensorDescriptor): the kernel
// sees a descriptor as tl.make_tensor_descriptor makes it (base, shape, strides, block_shape) from
// hidden parameters that follow the kernel's own, in this order for each descriptor argument:
// base (a pointer), shape (i32 each), the strides but the last (i64 each; the last is 1), and
// padding (i32: 1 for "nan"). The launchers append them (docs/tma.md, "Parameters"). Its sixth
// field is the encoded CUtensorMap parameter: loads and stores on sm_90 go through the TMA unit,
// everything else (atomics, other targets, the interpreter) through masked pointers.
SValue Specializer::hostDescriptor(const std::string &name, ir::Value *map) {
  const ir::Type &t = map->type;
  auto hidden = [&](const std::string &field, ir::Type type) {
    fn_->params.push_back(ir::Param{name + "." + field, type, 1, false});
    return SValue::ir(fn_->body.addArgument(type, name + "." + field));
  };
  const size_t rank = t.descBlock.size();
  SValue base = hidden("base", ir::Type::ptr(t.scalar));
  std::vector<SValue> shape, strides, block;
  for (size_t d = 0; d < rank; ++d) shape.push_back(hidden("shape" + std::to_string(d), ir::Type(ir::ScalarType::I32)));
  for (size_t d = 0; d + 1 < rank; ++d)
    strides.push_back(hidden("stride" + std::to_string(d), ir::Type(ir::ScalarType::I64)));
  for (int64_t d : t.descBlock) block.push_back(SValue::constant(ConstexprValue::ofInt(d)));
  SValue padding = hidden("padding", ir::Type(ir::ScalarType::I32));
  SValue desc;
  desc.kind = SValue::Kind::TensorDescriptor;
  desc.elems = {base, SValue::tuple(std::move(shape)), SValue::tuple(std::move(strides)),
                SValue::tuple(std::move(block)), padding, SValue::ir(map)};
  return desc;
}

} // namespace tessera::spec
