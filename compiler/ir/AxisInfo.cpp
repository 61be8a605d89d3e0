// The axis analysis (compiler/ir/AxisInfo.h): a forward walk of the kernel
// with a fixpoint over loop-carried values. Sources: make_range, constants,
// parameters (":16" → 16; pointers are at least element-aligned), the `hint`
// op (tl.multiple_of / max_contiguous / max_constancy); propagated through
// splat/broadcast/expand_dims, integer casts, pointer casts (byte alignment
// kept; runs only for an unchanged element size), arithmetic, addptr,
// compares, selects and loop-carried values.
#include "compiler/ir/AxisInfo.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace tessera::ir {

namespace {

// Divisibility is a lower bound, so any cap is sound; this one is far above
// any alignment a vector access needs.
constexpr int64_t kMaxDivisibility = int64_t{1} << 30;

int64_t highestPowerOfTwoDividing(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  return std::min<int64_t>(int64_t(u & (~u + 1)), kMaxDivisibility);
}

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }
int64_t mulCapped(int64_t a, int64_t b) { return a > kMaxDivisibility / b ? kMaxDivisibility : a * b; }

// The dims the analysis tracks: a scalar counts as one dim of extent 1.
std::vector<int64_t> dimsOf(const Type &t) {
  return t.isBlock() ? t.shape : std::vector<int64_t>{1};
}

AxisInfo unknown(const Type &t) {
  size_t n = dimsOf(t).size();
  return {std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::nullopt};
}

AxisInfo constantInfo(const Type &t, std::optional<int64_t> value, int64_t divisibility) {
  AxisInfo a = unknown(t);
  a.constancy = dimsOf(t);
  a.divisibility.assign(a.rank(), divisibility);
  a.constant = value;
  return a;
}

AxisInfo join(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = a;
  for (size_t d = 0; d < r.rank() && d < b.rank(); ++d) {
    r.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
    r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  }
  if (a.constant != b.constant) r.constant.reset();
  return r;
}

unsigned elementBytes(const Type &t) {
  if (t.scalar == ScalarType::I1) return 1;
  return std::max(1u, bitWidth(t.scalar) / 8);
}

bool isConstantDim(const AxisInfo &a, const std::vector<int64_t> &shape, size_t d) {
  return a.constancy[d] == shape[d];
}
bool isContiguousDim(const AxisInfo &a, const std::vector<int64_t> &shape, size_t d) {
  return a.contiguity[d] == shape[d];
}

class AxisAnalyzer {
public:
  explicit AxisAnalyzer(Function &fn) : fn_(fn) {}

  std::unordered_map<const Value *, AxisInfo> run() {
    analyze();
    return std::move(info_);
  }

  std::unordered_map<const Operation *, std::vector<int64_t>> compareConstancy() {
    analyze();
    std::unordered_map<const Operation *, std::vector<int64_t>> out;
    walk(fn_.body, [&](Operation &op) {
      if (op.code == OpCode::Cmp && op.results.size() == 1 && op.result()->type.isBlock()) {
        const std::vector<int64_t> &c = get(op.result()).constancy;
        if (std::any_of(c.begin(), c.end(), [](int64_t v) { return v > 1; })) out[&op] = c;
      }
    });
    return out;
  }

private:
  Function &fn_;
  std::unordered_map<const Value *, AxisInfo> info_;

  void analyze() {
    for (size_t i = 0; i < fn_.body.args.size(); ++i)
      info_[fn_.body.args[i].get()] = paramInfo(fn_.params.at(i));
    visitBlock(fn_.body);
  }

  AxisInfo paramInfo(const Param &p) {
    if (p.equalsOne) return constantInfo(p.type, 1, 1);
    AxisInfo a = unknown(p.type);
    if (p.type.pointer) a.divisibility[0] = std::max<int64_t>(p.divisibility, elementBytes(p.type));
    else if (p.type.isIntElement()) a.divisibility[0] = std::max(1, p.divisibility);
    return a;
  }

  const AxisInfo &get(const Value *v) {
    auto it = info_.find(v);
    if (it == info_.end()) it = info_.emplace(v, unknown(v->type)).first;
    return it->second;
  }
  void set(const Value *v, AxisInfo a) { info_[v] = std::move(a); }

  void visitBlock(Block &block) {
    for (auto &op : block.ops) visitOp(*op);
  }

  // ------------------------------------------------------------------ ops

  void visitOp(Operation &op) {
    switch (op.code) {
    case OpCode::For: return visitFor(op);
    case OpCode::If: return visitIf(op);
    case OpCode::While: return visitWhile(op);
    case OpCode::Store: case OpCode::Yield: case OpCode::Condition: case OpCode::Return: return;
    default: break;
    }
    if (op.results.size() != 1) {
      for (auto &r : op.results) set(r.get(), unknown(r->type));
      return;
    }
    set(op.result(), compute(op));
  }

  AxisInfo compute(Operation &op) {
    const Type &t = op.result()->type;
    const std::vector<int64_t> shape = dimsOf(t);
    switch (op.code) {
    case OpCode::Constant: {
      if (op.isFloatConstant() || t.isFloatElement()) return constantInfo(t, std::nullopt, 1);
      int64_t v = op.intAttr("value");
      return constantInfo(t, v, highestPowerOfTwoDividing(v));
    }
    case OpCode::MakeRange: {
      AxisInfo a = unknown(t);
      int64_t start = op.intAttr("start");
      a.contiguity[0] = shape[0];
      a.divisibility[0] = highestPowerOfTwoDividing(start);
      if (shape[0] == 1) a = constantInfo(t, start, highestPowerOfTwoDividing(start));
      return a;
    }
    case OpCode::Splat: {
      const AxisInfo &x = get(op.operand(0));
      return constantInfo(t, x.constant, x.divisibility[0]);
    }
    case OpCode::Broadcast: {
      AxisInfo a = get(op.operand(0));
      const std::vector<int64_t> &in = op.operand(0)->type.shape;
      for (size_t d = 0; d < shape.size(); ++d)
        if (in[d] == 1 && shape[d] != 1) {
          a.contiguity[d] = 1;
          a.constancy[d] = shape[d];
        }
      return a;
    }
    case OpCode::ExpandDims: return expandDims(op);
    case OpCode::ConvertLayout: return get(op.operand(0));
    case OpCode::Hint: return hint(op);
    case OpCode::Reshape: {
      const AxisInfo &x = get(op.operand(0));
      if (x.constant) return constantInfo(t, x.constant, x.divisibility[0]);
      return unknown(t);
    }
    case OpCode::Add: case OpCode::Sub: case OpCode::AddPtr: return addLike(op);
    case OpCode::Mul: return mul(op);
    case OpCode::Div: case OpCode::Shr: return divLike(op);
    case OpCode::Rem: return rem(op);
    case OpCode::Shl: return shl(op);
    case OpCode::Cmp: return cmp(op);
    case OpCode::Select: return select(op);
    case OpCode::Cast:
      if (t.pointer && op.operand(0)->type.pointer) return pointerCast(op);
      // Integer widening/narrowing keeps the facts; anything else keeps
      // only which elements are equal.
      if (t.isIntElement() && !t.isBoolElement() && op.operand(0)->type.isIntElement() &&
          !op.operand(0)->type.isBoolElement())
        return get(op.operand(0));
      return constancyOnly(op);
    case OpCode::Load: case OpCode::Reduce: case OpCode::ProgramId: case OpCode::NumPrograms:
    case OpCode::Trans: case OpCode::Join: case OpCode::Cat: case OpCode::Flip: case OpCode::Scan:
    case OpCode::ReduceCombine: case OpCode::Dot: case OpCode::AtomicRMW: case OpCode::AtomicCAS:
    case OpCode::Sort: case OpCode::Gather: case OpCode::Histogram: case OpCode::InlineAsm:
    case OpCode::MapElementwise: case OpCode::SmId: case OpCode::GlobalTimer:
      if (op.code == OpCode::Load) return constancyOnly(op);
      return unknown(t);
    default:
      return constancyOnly(op); // elementwise: equal inputs give equal outputs
    }
  }

  // A pointer cast (ptr<bf16> -> ptr<i32>) moves no address: byte divisibility and equal elements
  // hold. Runs of consecutive elements do only for an unchanged element size; otherwise every
  // element is its own run, known aligned only to the old element size unless runs were single.
  AxisInfo pointerCast(Operation &op) {
    AxisInfo a = get(op.operand(0));
    const Type &from = op.operand(0)->type;
    if (elementBytes(from) == elementBytes(op.result()->type)) return a;
    for (size_t d = 0; d < a.rank(); ++d) {
      if (a.contiguity[d] > 1) a.divisibility[d] = gcd(a.divisibility[d], elementBytes(from));
      a.contiguity[d] = 1;
    }
    return a;
  }

  // Equal operands give equal results; nothing else is known.
  AxisInfo constancyOnly(Operation &op) {
    AxisInfo a = unknown(op.result()->type);
    for (size_t d = 0; d < a.rank(); ++d) {
      int64_t c = dimsOf(op.result()->type)[d];
      for (Value *v : op.operands) {
        if (dimsOf(v->type).size() != a.rank()) { c = 1; break; }
        c = gcd(c, get(v).constancy[d]);
      }
      a.constancy[d] = c;
    }
    return a;
  }

  AxisInfo expandDims(Operation &op) {
    AxisInfo x = get(op.operand(0));
    if (!op.operand(0)->type.isBlock()) { // a scalar becomes a block of one
      x.constancy[0] = 1;
      return x;
    }
    size_t axis = static_cast<size_t>(op.intAttr("axis"));
    // The new dim has extent 1: every element of it starts a run.
    int64_t div = x.constant ? highestPowerOfTwoDividing(*x.constant) : kMaxDivisibility;
    for (size_t d = 0; d < x.rank(); ++d)
      div = gcd(div, x.contiguity[d] > 1 ? 1 : x.divisibility[d]);
    x.contiguity.insert(x.contiguity.begin() + axis, 1);
    x.divisibility.insert(x.divisibility.begin() + axis, div);
    x.constancy.insert(x.constancy.begin() + axis, 1);
    return x;
  }

  // The user's promises; they can only add to what is derived.
  AxisInfo hint(Operation &op) {
    AxisInfo a = get(op.operand(0));
    const std::vector<int64_t> shape = dimsOf(op.result()->type);
    auto apply = [&](const char *key, std::vector<int64_t> &field, bool capAtShape) {
      if (!op.hasAttr(key)) return;
      const std::vector<int64_t> &v = op.arrayAttr(key);
      for (size_t d = 0; d < field.size() && d < v.size(); ++d)
        field[d] = std::max(field[d], std::min(v[d], capAtShape ? shape[d] : kMaxDivisibility));
    };
    apply("multiple_of", a.divisibility, false);
    apply("max_contiguous", a.contiguity, true);
    apply("max_constancy", a.constancy, true);
    return a;
  }

  // add, sub, addptr (an offset counts in elements: its divisibility scales
  // by the element size in bytes).
  AxisInfo addLike(Operation &op) {
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    const Type &t = op.result()->type;
    AxisInfo a = unknown(t);
    int64_t scale = op.code == OpCode::AddPtr ? elementBytes(t) : 1; // result units per offset unit
    for (size_t d = 0; d < a.rank(); ++d) {
      int64_t c = gcd(l.contiguity[d], r.constancy[d]);
      if (op.code != OpCode::Sub) c = std::max(c, gcd(l.constancy[d], r.contiguity[d]));
      a.contiguity[d] = c;
      // Run starts of the result are run starts of both operands, or (when
      // the runs got shorter) c elements further into an operand's run.
      int64_t ld = l.contiguity[d] > c ? gcd(l.divisibility[d], mulCapped(c, scale)) : l.divisibility[d];
      int64_t rd = r.contiguity[d] > c ? gcd(r.divisibility[d], c) : r.divisibility[d];
      a.divisibility[d] = gcd(ld, mulCapped(rd, scale));
      a.constancy[d] = gcd(l.constancy[d], r.constancy[d]);
    }
    if (l.constant && r.constant && op.code != OpCode::AddPtr)
      a.constant = op.code == OpCode::Add ? *l.constant + *r.constant : *l.constant - *r.constant;
    return a;
  }

  AxisInfo mul(Operation &op) {
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    AxisInfo a = unknown(op.result()->type);
    if (!op.result()->type.isIntElement()) return constancyOnly(op);
    for (size_t d = 0; d < a.rank(); ++d) {
      a.contiguity[d] = r.constant == 1 ? l.contiguity[d] : l.constant == 1 ? r.contiguity[d] : 1;
      // Inside a contiguous run only the first element has the divisibility.
      int64_t ld = l.contiguity[d] > 1 && r.constant != 1 ? 1 : l.divisibility[d];
      int64_t rd = r.contiguity[d] > 1 && l.constant != 1 ? 1 : r.divisibility[d];
      a.divisibility[d] = mulCapped(ld, rd);
      a.constancy[d] = gcd(l.constancy[d], r.constancy[d]);
    }
    if (l.constant && r.constant) a.constant = *l.constant * *r.constant;
    return a;
  }

  // x / c and x >> k: a contiguous x gives runs of equal results.
  AxisInfo divLike(Operation &op) {
    if (!op.result()->type.isIntElement()) return constancyOnly(op);
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    const std::vector<int64_t> shape = dimsOf(op.result()->type);
    std::optional<int64_t> divisor = r.constant;
    if (op.code == OpCode::Shr && divisor) divisor = *divisor >= 0 && *divisor < 62 ? std::optional<int64_t>(int64_t{1} << *divisor) : std::nullopt;
    if (divisor == 1) return l;
    AxisInfo a = unknown(op.result()->type);
    for (size_t d = 0; d < a.rank(); ++d) {
      int64_t c = gcd(l.constancy[d], r.constancy[d]);
      int64_t rd = divisor ? highestPowerOfTwoDividing(*divisor) : r.divisibility[d];
      if (isContiguousDim(l, shape, d) && isConstantDim(r, shape, d))
        c = std::max(c, gcd(l.contiguity[d], gcd(l.divisibility[d], rd)));
      a.constancy[d] = c;
      if (divisor && *divisor > 0 && l.contiguity[d] == 1 && l.divisibility[d] % *divisor == 0)
        a.divisibility[d] = l.divisibility[d] / *divisor;
    }
    return a;
  }

  AxisInfo rem(Operation &op) {
    if (!op.result()->type.isIntElement()) return constancyOnly(op);
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    const std::vector<int64_t> shape = dimsOf(op.result()->type);
    AxisInfo a = unknown(op.result()->type);
    for (size_t d = 0; d < a.rank(); ++d) {
      a.constancy[d] = gcd(l.constancy[d], r.constancy[d]);
      if (isConstantDim(r, shape, d) && (r.constant ? *r.constant > 0 : r.divisibility[d] > 1)) {
        // x % m, m the same along d (a constant, or a scalar like N known to
        // be a multiple of 16): a run of x that starts at a multiple of g =
        // gcd(run, x's divisibility, m) stays a run for g elements, since no
        // multiple of m falls inside it. (The tutorial's `offs % N`.)
        int64_t m = r.constant ? highestPowerOfTwoDividing(*r.constant) : r.divisibility[d];
        a.contiguity[d] = gcd(l.contiguity[d], gcd(l.divisibility[d], m));
        a.divisibility[d] = gcd(l.divisibility[d], m);
      }
    }
    return a;
  }

  AxisInfo shl(Operation &op) {
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    AxisInfo a = constancyOnly(op);
    if (!r.constant || *r.constant < 0 || *r.constant > 30) return a;
    int64_t factor = int64_t{1} << *r.constant;
    if (factor == 1) return l;
    for (size_t d = 0; d < a.rank(); ++d)
      a.divisibility[d] = mulCapped(l.contiguity[d] > 1 ? 1 : l.divisibility[d], factor);
    return a;
  }

  // Triton's rule: a compare of a contiguous run against a constant changes
  // at most where the constant (a multiple of its divisibility) falls.
  AxisInfo cmp(Operation &op) {
    const AxisInfo &l = get(op.operand(0)), &r = get(op.operand(1));
    const std::vector<int64_t> shape = dimsOf(op.result()->type);
    const std::string &p = op.stringAttr("predicate");
    AxisInfo a = unknown(op.result()->type);
    bool intLike = op.operand(0)->type.isIntElement() || op.operand(0)->type.pointer;
    for (size_t d = 0; d < a.rank(); ++d) {
      int64_t c = gcd(l.constancy[d], r.constancy[d]);
      if (intLike && (p == "gt" || p == "le") && isConstantDim(l, shape, d))
        c = std::max(c, gcd(r.contiguity[d], gcd(l.divisibility[d], r.divisibility[d])));
      else if (intLike && (p == "lt" || p == "ge") && isConstantDim(r, shape, d))
        c = std::max(c, gcd(l.contiguity[d], gcd(l.divisibility[d], r.divisibility[d])));
      a.constancy[d] = c;
    }
    return a;
  }

  AxisInfo select(Operation &op) {
    const AxisInfo &c = get(op.operand(0)), &x = get(op.operand(1)), &y = get(op.operand(2));
    if (c.constant) return *c.constant ? x : y;
    AxisInfo a = unknown(op.result()->type);
    for (size_t d = 0; d < a.rank(); ++d) {
      a.constancy[d] = gcd(c.constancy[d], gcd(x.constancy[d], y.constancy[d]));
      int64_t run = std::min({x.contiguity[d], y.contiguity[d], c.constancy[d]});
      int64_t xd = x.contiguity[d] > run ? gcd(x.divisibility[d], run) : x.divisibility[d];
      int64_t yd = y.contiguity[d] > run ? gcd(y.divisibility[d], run) : y.divisibility[d];
      a.contiguity[d] = run;
      a.divisibility[d] = gcd(xd, yd);
    }
    return a;
  }

  // -------------------------------------------------------- control flow

  std::vector<AxisInfo> yielded(Block &region, unsigned first) {
    std::vector<AxisInfo> out;
    if (Operation *t = region.terminator())
      if (t->code == OpCode::Yield || t->code == OpCode::Condition)
        for (unsigned i = first; i < t->operands.size(); ++i) out.push_back(get(t->operand(i)));
    return out;
  }

  // Loop-carried values: start from the inits, join what the body yields
  // until nothing changes (the lattice only goes down, so it ends; a cap
  // falls back to knowing nothing).
  static constexpr int kMaxIterations = 8;

  void visitFor(Operation &op) {
    Block &body = *op.region(0);
    const AxisInfo &lb = get(op.operand(0)), &step = get(op.operand(2));
    AxisInfo iv = unknown(body.args.at(0)->type);
    iv.divisibility[0] = gcd(lb.divisibility[0], step.divisibility[0]);
    set(body.args[0].get(), iv);
    std::vector<AxisInfo> carried;
    for (unsigned i = 3; i < op.operands.size(); ++i) carried.push_back(get(op.operand(i)));
    iterate(body, 1, carried);
    for (unsigned i = 0; i < carried.size(); ++i) set(op.result(i), carried[i]);
  }

  void iterate(Block &body, unsigned firstArg, std::vector<AxisInfo> &carried) {
    for (int iteration = 0;; ++iteration) {
      for (unsigned i = 0; i < carried.size(); ++i) set(body.args.at(firstArg + i).get(), carried[i]);
      visitBlock(body);
      std::vector<AxisInfo> next = carried, ys = yielded(body, 0);
      for (unsigned i = 0; i < next.size() && i < ys.size(); ++i) next[i] = join(next[i], ys[i]);
      if (next == carried) return;
      carried = std::move(next);
      if (iteration == kMaxIterations) {
        for (unsigned i = 0; i < carried.size(); ++i)
          carried[i] = unknown(body.args.at(firstArg + i)->type);
        for (unsigned i = 0; i < carried.size(); ++i) set(body.args[firstArg + i].get(), carried[i]);
        visitBlock(body);
        return;
      }
    }
  }

  void visitIf(Operation &op) {
    visitBlock(*op.region(0));
    std::vector<AxisInfo> out = yielded(*op.region(0), 0);
    if (op.regions.size() > 1) {
      visitBlock(*op.region(1));
      std::vector<AxisInfo> other = yielded(*op.region(1), 0);
      for (size_t i = 0; i < out.size() && i < other.size(); ++i) out[i] = join(out[i], other[i]);
    }
    for (unsigned i = 0; i < op.results.size(); ++i)
      set(op.result(i), i < out.size() ? out[i] : unknown(op.result(i)->type));
  }

  void visitWhile(Operation &op) {
    Block &before = *op.region(0), &after = *op.region(1);
    std::vector<AxisInfo> carried;
    for (Value *v : op.operands) carried.push_back(get(v));
    for (int iteration = 0;; ++iteration) {
      for (unsigned i = 0; i < carried.size(); ++i) set(before.args.at(i).get(), carried[i]);
      visitBlock(before);
      std::vector<AxisInfo> passed = yielded(before, 1);
      for (unsigned i = 0; i < passed.size() && i < after.args.size(); ++i) set(after.args[i].get(), passed[i]);
      visitBlock(after);
      std::vector<AxisInfo> next = carried, ys = yielded(after, 0);
      for (unsigned i = 0; i < next.size() && i < ys.size(); ++i) next[i] = join(next[i], ys[i]);
      if (next == carried || iteration == kMaxIterations) {
        if (next != carried) { // give up: nothing is known about the carried values
          for (unsigned i = 0; i < carried.size(); ++i) set(before.args[i].get(), unknown(before.args[i]->type));
          visitBlock(before);
          passed = yielded(before, 1);
          for (unsigned i = 0; i < passed.size() && i < after.args.size(); ++i) set(after.args[i].get(), passed[i]);
          visitBlock(after);
        }
        for (unsigned i = 0; i < op.results.size() && i < passed.size(); ++i) set(op.result(i), passed[i]);
        return;
      }
      carried = std::move(next);
    }
  }
};

} // namespace

AxisInfoAnalysis::AxisInfoAnalysis(Function &fn) : info_(AxisAnalyzer(fn).run()) {}

AxisInfo AxisInfoAnalysis::of(const Value *value) const {
  auto it = info_.find(value);
  return it == info_.end() ? unknown(value->type) : it->second;
}

std::unordered_map<const Operation *, std::vector<int64_t>> compareConstancy(Function &fn) {
  return AxisAnalyzer(fn).compareConstancy();
}

} // namespace tessera::ir
