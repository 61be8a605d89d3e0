#include "compiler/ir/IR.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <unordered_map>

namespace tessera::ir {

const char *mnemonic(OpCode code) {
  switch (code) {
#define OP(name, text, traits) case OpCode::name: return text;
#include "compiler/ir/Ops.def"
#undef OP
  }
  return "?";
}

// Every op inside `op`'s regions is pure (terminators pass their values on; nested regions are asked in turn).
static bool regionsArePure(const Operation &op) {
  for (const auto &region : op.regions)
    for (const auto &inner : region->ops) {
      if (opIsTerminator(inner->code) && inner->code != OpCode::Return) continue;
      if (opHasRegions(inner->code) && !opIsPure(inner->code)) {
        if (!regionsArePure(*inner)) return false;
        continue;
      }
      if (!isPure(*inner)) return false;
    }
  return true;
}

bool isPure(const Operation &op) {
  if (op.code == OpCode::InlineAsm) return op.intAttr("pure") != 0;
  if (op.code == OpCode::MapElementwise) return regionsArePure(op);
  return opIsPure(op.code);
}

bool hasSideEffects(const Operation &op) {
  if (op.code == OpCode::Load) return op.hasAttr("volatile") && op.intAttr("volatile");
  if (op.code == OpCode::InlineAsm || op.code == OpCode::MapElementwise) return !isPure(op);
  const uint32_t traits = opTraits(op.code);
  if (traits & op_trait::WritesMemory) return true;
  return !(traits & (op_trait::Pure | op_trait::ReadsMemory | op_trait::Allocates));
}

bool mayWriteMemory(const Operation &op) {
  if (opWritesMemory(op.code) || (op.code == OpCode::InlineAsm && !isPure(op))) return true;
  if (opHasRegions(op.code) && !opIsPure(op.code)) {
    for (auto &region : op.regions)
      for (auto &inner : region->ops)
        if (mayWriteMemory(*inner)) return true;
    return false;
  }
  return !opEffectsKnown(op.code);
}

Value *Block::addArgument(Type type, std::string nameHint) {
  auto v = std::make_unique<Value>();
  v->type = std::move(type);
  v->ownerBlock = this;
  v->index = static_cast<unsigned>(args.size());
  v->nameHint = std::move(nameHint);
  args.push_back(std::move(v));
  return args.back().get();
}

template <typename T> static const T &getAttr(const Operation &op, const std::string &key) {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end() || !std::holds_alternative<T>(it->second))
    throw std::logic_error(std::string("operation '") + mnemonic(op.code) +
                           "' has no attribute '" + key + "' of the expected kind");
  return std::get<T>(it->second);
}

int64_t Operation::intAttr(const std::string &key) const { return getAttr<int64_t>(*this, key); }
double Operation::floatAttr(const std::string &key) const { return getAttr<double>(*this, key); }
const std::string &Operation::stringAttr(const std::string &key) const {
  return getAttr<std::string>(*this, key);
}
const std::vector<int64_t> &Operation::arrayAttr(const std::string &key) const {
  return getAttr<std::vector<int64_t>>(*this, key);
}
bool Operation::isFloatConstant() const {
  auto it = attrs.find("value");
  return code == OpCode::Constant && it != attrs.end() && std::holds_alternative<double>(it->second);
}

Value *Operation::loadMask() const {
  return hasAttr("has_mask") && intAttr("has_mask") ? operands.at(1) : nullptr;
}
Value *Operation::loadOther() const {
  return hasAttr("has_other") && intAttr("has_other") ? operands.at(2) : nullptr;
}
Value *Operation::storeMask() const {
  return hasAttr("has_mask") && intAttr("has_mask") ? operands.at(2) : nullptr;
}

Operation *Builder::create(OpCode code, std::vector<Value *> operands, std::vector<Type> resultTypes,
                           std::map<std::string, Attribute> attrs, unsigned numRegions) {
  auto op = std::make_unique<Operation>(code, loc_);
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->parent = block_;
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    auto v = std::make_unique<Value>();
    v->type = std::move(resultTypes[i]);
    v->definingOp = op.get();
    v->index = i;
    op->results.push_back(std::move(v));
  }
  for (unsigned i = 0; i < numRegions; ++i) {
    op->regions.push_back(std::make_unique<Block>());
    op->regions.back()->parentOp = op.get();
  }
  Operation *raw = op.get();
  block_->ops.insert(insertBefore_, std::move(op));
  return raw;
}

Value *Builder::op(OpCode code, std::vector<Value *> operands, Type resultType,
                   std::map<std::string, Attribute> attrs) {
  return create(code, std::move(operands), {std::move(resultType)}, std::move(attrs))->result();
}

Value *Builder::intConstant(int64_t value, Type type) {
  return op(OpCode::Constant, {}, std::move(type), {{"value", value}});
}

Value *Builder::floatConstant(double value, Type type) {
  return op(OpCode::Constant, {}, std::move(type), {{"value", value}});
}

unsigned producerWarps(const Function &fn) {
  for (const auto &op : fn.body.ops) // at the top level only (the pipeline pass puts it there)
    if (op->code == OpCode::WarpSpecialize) return static_cast<unsigned>(op->intAttr("producer_warps"));
  return 0;
}

unsigned consumerGroups(const Function &fn) {
  for (const auto &op : fn.body.ops)
    if (op->code == OpCode::WarpSpecialize && op->hasAttr("consumer_groups"))
      return static_cast<unsigned>(op->intAttr("consumer_groups"));
  return 1;
}

unsigned launchedWarps(const Function &fn) { return fn.numWarps * consumerGroups(fn) + producerWarps(fn); }

void walk(Block &block, const std::function<void(Operation &)> &fn) {
  for (auto &op : block.ops) {
    fn(*op);
    for (auto &region : op->regions)
      walk(*region, fn);
  }
}

void replaceAllUsesWith(Block &block, Value *from, Value *to) { replaceUsesExcept(block, from, to, nullptr); }

void replaceUsesExcept(Block &block, Value *from, Value *to, const Operation *keep) {
  walk(block, [&](Operation &op) {
    if (&op == keep)
      return;
    for (Value *&v : op.operands)
      if (v == from)
        v = to;
  });
}

unsigned countUses(Block &block, const Value *v) {
  unsigned n = 0;
  walk(block, [&](Operation &op) {
    for (const Value *u : op.operands) n += u == v;
  });
  return n;
}

bool readsValue(Operation &op, const Value *v) {
  auto uses = [&](const Operation &o) { return std::count(o.operands.begin(), o.operands.end(), v) > 0; };
  bool found = uses(op);
  for (auto &region : op.regions)
    walk(*region, [&](Operation &inner) { found = found || uses(inner); });
  return found;
}

bool isZeroConstant(const Value *v) {
  const Operation *d = v->definingOp;
  if (!d) return false;
  if (d->code == OpCode::Splat || d->code == OpCode::Broadcast || d->code == OpCode::ConvertLayout)
    return isZeroConstant(d->operand(0));
  if (d->code != OpCode::Constant) return false;
  return d->isFloatConstant() ? d->floatAttr("value") == 0.0 : d->intAttr("value") == 0;
}

bool isWgmmaDot(const Operation &op) {
  const Value *r = op.results.empty() ? nullptr : op.result();
  return op.code == OpCode::Dot && r && r->layout && r->layout->kind == Layout::Kind::Mma &&
         r->layout->mmaVersion == 3;
}

std::list<std::unique_ptr<Operation>>::iterator positionOf(Operation &op) {
  auto it = op.parent->ops.begin();
  while (it->get() != &op) ++it;
  return it;
}

// ------------------------------------------------------------------ printer

namespace {

std::string formatDouble(double d) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  // Keep floats recognisable as floats: "1" -> "1.0".
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string formatAttribute(const Attribute &a) {
  if (auto *i = std::get_if<int64_t>(&a))
    return std::to_string(*i);
  if (auto *d = std::get_if<double>(&a))
    return formatDouble(*d);
  if (auto *s = std::get_if<std::string>(&a))
    return "\"" + *s + "\"";
  std::string out = "[";
  const auto &v = std::get<std::vector<int64_t>>(a);
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

class Printer {
public:
  std::string run(const Function &fn) {
    for (const auto &arg : fn.body.args)
      names_[arg.get()] = "%" + arg->nameHint;
    std::string body;
    printBlockOps(fn.body, 1, body);

    std::string out;
    for (size_t i = 0; i < layouts_.size(); ++i)
      out += "#L" + std::to_string(i) + " = " + layouts_[i]->str() + "\n";
    out += "kernel @" + fn.name + "(";
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Param &p = fn.params[i];
      out += (i ? ", " : "") + names_[fn.body.args[i].get()] + ": " + typeText(*fn.body.args[i]);
      if (p.divisibility > 1)
        out += " {divisibility = " + std::to_string(p.divisibility) + "}";
      if (p.equalsOne)
        out += " {equals_one}";
    }
    out += ") num_warps = " + std::to_string(fn.numWarps) + " {\n" + body + "}\n";
    return out;
  }

private:
  std::unordered_map<const Value *, std::string> names_;
  std::vector<LayoutRef> layouts_;
  unsigned next_ = 0;

  const std::string &name(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    return names_[v] = "%" + std::to_string(next_++);
  }
  std::string nameOrUnknown(const Value *v) {
    auto it = names_.find(v);
    return it != names_.end() ? it->second : "%<undefined>";
  }

  std::string typeText(const Value &v) {
    std::string t = v.type.str();
    if (!v.layout)
      return t;
    for (size_t i = 0; i < layouts_.size(); ++i)
      if (*layouts_[i] == *v.layout)
        return t + " #L" + std::to_string(i);
    layouts_.push_back(v.layout);
    return t + " #L" + std::to_string(layouts_.size() - 1);
  }

  void printBlockOps(const Block &block, int depth, std::string &out) {
    for (const auto &op : block.ops)
      printOp(*op, depth, out);
  }

  void printOp(const Operation &op, int depth, std::string &out) {
    std::string indent(2 * depth, ' ');
    out += indent;
    for (size_t i = 0; i < op.results.size(); ++i)
      out += (i ? ", " : "") + name(op.results[i].get());
    if (!op.results.empty())
      out += " = ";
    out += mnemonic(op.code);
    for (size_t i = 0; i < op.operands.size(); ++i)
      out += (i ? ", " : " ") + nameOrUnknown(op.operands[i]);
    if (!op.attrs.empty()) {
      out += " {";
      bool first = true;
      for (const auto &[key, value] : op.attrs) {
        out += (first ? "" : ", ") + key + " = " + formatAttribute(value);
        first = false;
      }
      out += "}";
    }
    if (!op.results.empty()) {
      out += " : ";
      for (size_t i = 0; i < op.results.size(); ++i)
        out += (i ? ", " : "") + typeText(*op.results[i]);
    }
    for (const auto &region : op.regions) {
      out += " {\n" + indent + "^(";
      for (size_t i = 0; i < region->args.size(); ++i)
        out += (i ? ", " : "") + name(region->args[i].get()) + ": " + typeText(*region->args[i]);
      out += "):\n";
      printBlockOps(*region, depth + 1, out);
      out += indent + "}";
    }
    out += "\n";
  }
};

} // namespace

std::string print(const Function &fn) { return Printer().run(fn); }

int64_t inlineAsmElementsPerRegister(const Type &t, int64_t pack) {
  unsigned bits = t.pointer ? 64 : std::max(8u, bitWidth(t.scalar));
  return bits >= 32 ? 1 : std::min<int64_t>(32 / bits, pack);
}

} // namespace tessera::ir
