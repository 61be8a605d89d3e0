// The IR verifier: structural invariants (operands defined before use and
// visible from the use's region, terminators, region arity) and per-op type
// rules. Runs after every pass in debug builds and in tests.
#include "compiler/ir/IR.h"

#include <algorithm>
#include <set>

namespace tessera::ir {

namespace {

class Verifier {
public:
  std::string run(const Function &fn) {
    if (fn.params.size() != fn.body.args.size()) return "parameter count differs from body arguments";
    for (const auto &a : fn.body.args) visible_.insert(a.get());
    if (!verifyBlock(fn.body)) return problem_;
    const Operation *last = fn.body.terminator();
    if (!last || last->code != OpCode::Return) return "the kernel body does not end in 'return'";
    return {};
  }

private:
  std::set<const Value *> visible_;
  std::string problem_;

  bool fail(const Operation &op, const std::string &msg) {
    problem_ = std::string("'") + mnemonic(op.code) + "' at line " + std::to_string(op.loc.line) + ": " + msg;
    return false;
  }

  bool verifyBlock(const Block &block) {
    std::vector<const Value *> added;
    for (const auto &a : block.args) {
      visible_.insert(a.get());
      added.push_back(a.get());
    }
    bool ok = true;
    for (const auto &op : block.ops) {
      bool isLast = op.get() == block.ops.back().get();
      bool terminator = op->code == OpCode::Yield || op->code == OpCode::Condition || op->code == OpCode::Return;
      if (terminator && !isLast) { ok = fail(*op, "terminator in the middle of a block"); break; }
      if (op->parent != &block) { ok = fail(*op, "operation's parent pointer is wrong"); break; }
      if (!verifyOp(*op)) { ok = false; break; }
      for (const auto &r : op->results) {
        visible_.insert(r.get());
        added.push_back(r.get());
      }
    }
    for (const Value *v : added) visible_.erase(v);
    return ok;
  }

  bool sameShape(const Type &a, const Type &b) { return a.shape == b.shape; }
  bool isBuffer(const Value *v) { return v->definingOp && v->definingOp->code == OpCode::LocalAlloc; }
  bool isMbarriers(const Value *v) { return v->definingOp && v->definingOp->code == OpCode::MbarrierAlloc; }

  bool verifyOp(const Operation &op) {
    for (const Value *v : op.operands) {
      if (!v) return fail(op, "null operand");
      if (!visible_.count(v)) return fail(op, "operand is not defined before its use");
    }
    for (size_t i = 0; i < op.results.size(); ++i)
      if (op.results[i]->definingOp != &op || op.results[i]->index != i) return fail(op, "bad result bookkeeping");
    auto nOperands = [&](size_t n) { return op.operands.size() == n || fail(op, "expects " + std::to_string(n) + " operands"); };
    auto nResults = [&](size_t n) { return op.results.size() == n || fail(op, "expects " + std::to_string(n) + " results"); };
    const Type *r = op.results.empty() ? nullptr : &op.results[0]->type;
    switch (op.code) {
    case OpCode::Constant:
      return nOperands(0) && nResults(1) && (op.hasAttr("value") || fail(op, "needs a value"));
    case OpCode::ProgramId:
    case OpCode::NumPrograms:
      return nOperands(0) && nResults(1) && (*r == Type(ScalarType::I32) || fail(op, "result must be i32"));
    case OpCode::MakeRange:
      return nOperands(0) && nResults(1) &&
             (r->rank() == 1 && r->shape[0] == op.intAttr("end") - op.intAttr("start") ||
              fail(op, "result shape does not match the range"));
    case OpCode::Splat:
      return nOperands(1) && nResults(1) &&
             (!op.operand(0)->type.isBlock() && op.operand(0)->type == r->element() ||
              fail(op, "splat needs a scalar of the result's element type"));
    case OpCode::Broadcast: {
      if (!nOperands(1) || !nResults(1)) return false;
      const Type &in = op.operand(0)->type;
      if (in.element() != r->element() || in.rank() != r->rank()) return fail(op, "broadcast keeps element type and rank");
      for (size_t i = 0; i < in.rank(); ++i)
        if (in.shape[i] != r->shape[i] && in.shape[i] != 1) return fail(op, "broadcast can only expand size-1 dims");
      return true;
    }
    case OpCode::ExpandDims: {
      if (!nOperands(1) || !nResults(1)) return false;
      std::vector<int64_t> s = op.operand(0)->type.shape;
      int64_t axis = op.intAttr("axis");
      if (axis < 0 || axis > static_cast<int64_t>(s.size())) return fail(op, "axis out of range");
      s.insert(s.begin() + axis, 1);
      return s == r->shape || fail(op, "result shape is wrong");
    }
    case OpCode::Reshape:
      return nOperands(1) && nResults(1) &&
             (op.operand(0)->type.numElements() == r->numElements() || fail(op, "reshape changes the element count"));
    case OpCode::ConvertLayout:
      return nOperands(1) && nResults(1) && (op.operand(0)->type == *r || fail(op, "convert_layout changes the type"));
    case OpCode::Hint: {
      if (!nOperands(1) || !nResults(1)) return false;
      if (op.operand(0)->type != *r) return fail(op, "hint changes the type");
      size_t dims = std::max<size_t>(1, r->rank());
      for (const char *key : {"multiple_of", "max_contiguous", "max_constancy"}) {
        if (!op.hasAttr(key)) continue;
        const auto *values = std::get_if<std::vector<int64_t>>(&op.attrs.at(key));
        if (!values || values->size() != dims) return fail(op, std::string(key) + " needs one value per dim");
        for (int64_t v : *values)
          if (v < 1) return fail(op, std::string(key) + " values must be positive");
      }
      return true;
    }
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
    case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
    case OpCode::Max: case OpCode::Min:
      if (!nOperands(2) || !nResults(1)) return false;
      if (op.operand(0)->type != *r || op.operand(1)->type != *r) return fail(op, "operands and result must have one type");
      if (r->pointer) return fail(op, "arithmetic on pointers (use addptr)");
      if ((op.code == OpCode::And || op.code == OpCode::Or || op.code == OpCode::Xor || op.code == OpCode::Shl ||
           op.code == OpCode::Shr) && !r->isIntElement())
        return fail(op, "needs integer operands");
      return true;
    case OpCode::Neg: case OpCode::Not: case OpCode::Exp: case OpCode::Exp2: case OpCode::Log:
    case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs:
      if (!nOperands(1) || !nResults(1)) return false;
      if (op.operand(0)->type != *r) return fail(op, "operand and result must have one type");
      if (op.code >= OpCode::Exp && op.code <= OpCode::Sqrt && !r->isFloatElement()) return fail(op, "needs floats");
      return true;
    case OpCode::Cmp:
      if (!nOperands(2) || !nResults(1)) return false;
      if (op.operand(0)->type != op.operand(1)->type) return fail(op, "operands must have one type");
      if (!r->isBoolElement() || !sameShape(*r, op.operand(0)->type)) return fail(op, "result must be i1 of the operands' shape");
      return true;
    case OpCode::Select:
      if (!nOperands(3) || !nResults(1)) return false;
      if (!op.operand(0)->type.isBoolElement() || !sameShape(op.operand(0)->type, *r)) return fail(op, "condition must be i1 of the result's shape");
      if (op.operand(1)->type != *r || op.operand(2)->type != *r) return fail(op, "both sides must have the result's type");
      return true;
    case OpCode::AddPtr:
      if (!nOperands(2) || !nResults(1)) return false;
      if (!r->pointer || op.operand(0)->type != *r) return fail(op, "first operand and result must be the same pointer type");
      if (!op.operand(1)->type.isIntElement() || !sameShape(op.operand(1)->type, *r)) return fail(op, "offset must be an int of the same shape");
      return true;
    case OpCode::Cast:
    case OpCode::Bitcast:
      return nOperands(1) && nResults(1) && (sameShape(op.operand(0)->type, *r) || fail(op, "shape must not change"));
    case OpCode::Load: {
      size_t n = 1 + (op.loadMask() ? 1 : 0) + (op.loadOther() ? 1 : 0);
      if (!nOperands(n) || !nResults(1)) return false;
      const Type &p = op.operand(0)->type;
      if (!p.pointer || r->pointer || r->scalar != p.scalar || !sameShape(p, *r)) return fail(op, "result must be the pointee of the pointer operand");
      if (Value *m = op.loadMask(); m && (!m->type.isBoolElement() || !sameShape(m->type, p))) return fail(op, "mask must be i1 of the pointer's shape");
      if (Value *o = op.loadOther(); o && o->type != *r) return fail(op, "other must have the result's type");
      return true;
    }
    case OpCode::DescLoad: {
      if (op.operands.empty() || !nResults(1)) return false;
      const Type &d = op.operand(0)->type;
      if (!d.isTensorDesc()) return fail(op, "first operand must be a tensor descriptor");
      if (op.operands.size() != 1 + d.descBlock.size()) return fail(op, "one offset per block dimension");
      for (size_t i = 1; i < op.operands.size(); ++i)
        if (op.operand(i)->type != Type(ScalarType::I32)) return fail(op, "offsets must be i32 scalars");
      if (r->shape != d.descBlock || r->pointer || r->scalar != d.scalar) return fail(op, "result must be the descriptor's block");
      return true;
    }
    case OpCode::DescStore: {
      if (op.operands.empty() || !nResults(0)) return false;
      const Type &d = op.operand(0)->type;
      if (!d.isTensorDesc()) return fail(op, "first operand must be a tensor descriptor");
      if (op.operands.size() != 2 + d.descBlock.size()) return fail(op, "one offset per block dimension, then the value");
      for (size_t i = 1; i + 1 < op.operands.size(); ++i)
        if (op.operand(i)->type != Type(ScalarType::I32)) return fail(op, "offsets must be i32 scalars");
      const Type &v = op.operands.back()->type;
      if (v.shape != d.descBlock || v.pointer || v.scalar != d.scalar) return fail(op, "value must be the descriptor's block");
      return true;
    }
    case OpCode::Store: {
      size_t n = 2 + (op.storeMask() ? 1 : 0);
      if (!nOperands(n) || !nResults(0)) return false;
      const Type &p = op.operand(0)->type;
      if (!p.pointer || op.operand(1)->type != p.withElement(Type(p.scalar))) return fail(op, "value must be the pointee of the pointer operand");
      if (Value *m = op.storeMask(); m && (!m->type.isBoolElement() || !sameShape(m->type, p))) return fail(op, "mask must be i1 of the pointer's shape");
      return true;
    }
    case OpCode::Reduce: {
      if (!nOperands(1) || !nResults(1)) return false;
      std::vector<int64_t> s = op.operand(0)->type.shape;
      int64_t axis = op.intAttr("axis");
      if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return fail(op, "axis out of range");
      s.erase(s.begin() + axis);
      if (r->shape != s || r->element() != op.operand(0)->type.element()) return fail(op, "result type is wrong");
      const std::string &kind = op.stringAttr("kind");
      if (op.hasAttr("partial") && op.intAttr("partial") && kind != "sum") return fail(op, "only a sum can be partial");
      return kind == "sum" || kind == "max" || kind == "min" || fail(op, "unknown kind '" + kind + "'");
    }
    case OpCode::LaneReduce: {
      if (!nOperands(1) || !nResults(1)) return false;
      if (op.operand(0)->type != *r) return fail(op, "result type must be the operand's");
      if (op.stringAttr("kind") != "sum") return fail(op, "kind must be sum");
      for (int64_t m : op.arrayAttr("lane_masks"))
        if (m <= 0 || m >= 32) return fail(op, "lane masks must be in 1..31");
      return true;
    }
    case OpCode::For: {
      if (op.operands.size() < 3 || op.regions.size() != 1) return fail(op, "needs lb, ub, step and one region");
      size_t n = op.operands.size() - 3;
      const Block &body = *op.regions[0];
      if (op.results.size() != n || body.args.size() != n + 1) return fail(op, "iter values, region args and results disagree");
      for (size_t i = 0; i < n; ++i)
        if (op.operand(3 + i)->type != op.results[i]->type || body.args[i + 1]->type != op.results[i]->type)
          return fail(op, "iter value types disagree");
      return verifyRegion(op, body, OpCode::Yield, op.results);
    }
    case OpCode::If: {
      if (op.operands.size() != 1 || op.regions.size() != 2) return fail(op, "needs a condition and two regions");
      if (op.operand(0)->type != Type(ScalarType::I1)) return fail(op, "condition must be a scalar i1");
      return verifyRegion(op, *op.regions[0], OpCode::Yield, op.results) &&
             verifyRegion(op, *op.regions[1], OpCode::Yield, op.results);
    }
    case OpCode::While: {
      if (op.regions.size() != 2) return fail(op, "needs two regions");
      if (!verifyBlock(*op.regions[0])) return false;
      const Operation *cond = op.regions[0]->terminator();
      if (!cond || cond->code != OpCode::Condition) return fail(op, "before region must end in 'condition'");
      if (!verifyBlock(*op.regions[1])) return false;
      const Operation *y = op.regions[1]->terminator();
      if (!y || y->code != OpCode::Yield) return fail(op, "after region must end in 'yield'");
      return true;
    }
    case OpCode::Yield:
    case OpCode::Condition:
    case OpCode::Return:
      return true;
    default:
      return verifyLanguageOp(op);
    }
    return fail(op, "unknown operation");
  }

  // The ops of the rest of triton.language (the second half of Ops.def).
  bool verifyLanguageOp(const Operation &op) {
    auto nOperands = [&](size_t n) { return op.operands.size() == n || fail(op, "expects " + std::to_string(n) + " operands"); };
    auto nResults = [&](size_t n) { return op.results.size() == n || fail(op, "expects " + std::to_string(n) + " results"); };
    auto operandsLikeResult = [&]() {
      for (const Value *v : op.operands)
        if (v->type != op.result()->type) return fail(op, "operands and result must have one type");
      return true;
    };
    switch (op.code) {
    case OpCode::Sin: case OpCode::Cos: case OpCode::Rsqrt: case OpCode::Erf: case OpCode::Floor:
    case OpCode::Ceil:
      return nOperands(1) && nResults(1) && operandsLikeResult() &&
             (op.result()->type.isFloatElement() || fail(op, "needs floats"));
    case OpCode::Fma:
      return nOperands(3) && nResults(1) && operandsLikeResult() &&
             (op.result()->type.isFloatElement() || fail(op, "needs floats"));
    case OpCode::UMulHi:
      return nOperands(2) && nResults(1) && operandsLikeResult() &&
             (op.result()->type.isIntElement() || fail(op, "needs integers"));
    case OpCode::Libdevice:
      if (op.operands.empty() || op.operands.size() > 4) return fail(op, "takes 1 to 4 operands");
      return nResults(1) && operandsLikeResult() && (op.hasAttr("fn") || fail(op, "needs a function name")) &&
             (op.result()->type.isFloatElement() || fail(op, "needs floats"));
    case OpCode::Trans: {
      if (!nOperands(1) || !nResults(1)) return false;
      const Type &in = op.operand(0)->type, &r = op.result()->type;
      const std::vector<int64_t> &order = op.arrayAttr("order");
      if (order.size() != in.rank() || r.rank() != in.rank() || r.element() != in.element())
        return fail(op, "order must be a permutation of the operand's dims");
      std::vector<bool> seen(order.size(), false);
      for (size_t i = 0; i < order.size(); ++i) {
        if (order[i] < 0 || order[i] >= int64_t(order.size()) || seen[order[i]]) return fail(op, "order is not a permutation");
        seen[order[i]] = true;
        if (r.shape[i] != in.shape[order[i]]) return fail(op, "result shape does not follow the order");
      }
      return true;
    }
    case OpCode::Join: {
      if (!nOperands(2) || !nResults(1)) return false;
      const Type &a = op.operand(0)->type;
      std::vector<int64_t> s = a.shape;
      s.push_back(2);
      return (op.operand(1)->type == a || fail(op, "operands must have one type")) &&
             (op.result()->type == a.withShape(s) || fail(op, "result must be the operands' shape plus a dim of 2"));
    }
    case OpCode::Split: {
      if (!nOperands(1) || !nResults(2)) return false;
      const Type &x = op.operand(0)->type;
      if (x.rank() == 0 || x.shape.back() != 2) return fail(op, "the last dim must be 2");
      std::vector<int64_t> s(x.shape.begin(), x.shape.end() - 1);
      Type want = s.empty() ? x.element() : x.withShape(s);
      return (op.result(0)->type == want && op.result(1)->type == want) || fail(op, "results must drop the last dim");
    }
    case OpCode::Cat: {
      if (!nOperands(2) || !nResults(1)) return false;
      const Type &a = op.operand(0)->type;
      if (op.operand(1)->type != a || a.rank() == 0) return fail(op, "operands must be blocks of one type");
      std::vector<int64_t> s = a.shape;
      s[0] *= 2;
      return op.result()->type == a.withShape(s) || fail(op, "result must double dim 0");
    }
    case OpCode::Flip: {
      if (!nOperands(1) || !nResults(1)) return false;
      int64_t axis = op.intAttr("axis");
      return (op.operand(0)->type == op.result()->type || fail(op, "flip keeps the type")) &&
             ((axis >= 0 && axis < int64_t(op.result()->type.rank())) || fail(op, "axis out of range"));
    }
    case OpCode::Sort: {
      if (!nOperands(1) || !nResults(1)) return false;
      const Type &x = op.operand(0)->type;
      return (x.isBlock() && !x.pointer && x == op.result()->type) || fail(op, "sorts a block of numbers into its own type");
    }
    case OpCode::Gather: {
      if (!nOperands(2) || !nResults(1)) return false;
      const Type &src = op.operand(0)->type, &index = op.operand(1)->type, &out = op.result()->type;
      const int64_t axis = op.intAttr("axis");
      if (!src.isBlock() || !index.isIntElement() || index.rank() != src.rank())
        return fail(op, "src and an integer index of one rank");
      if (axis < 0 || axis >= int64_t(src.rank())) return fail(op, "axis out of range");
      for (size_t d = 0; d < src.rank(); ++d)
        if (int64_t(d) != axis && index.shape[d] != src.shape[d]) return fail(op, "index and src differ off the axis");
      return out == src.withShape(index.shape) || fail(op, "result must be src's element in index's shape");
    }
    case OpCode::Histogram: {
      const bool masked = op.hasAttr("has_mask") && op.intAttr("has_mask");
      if (!nOperands(masked ? 2 : 1) || !nResults(1)) return false;
      const Type &x = op.operand(0)->type;
      if (x.rank() != 1 || !x.isIntElement()) return fail(op, "counts a 1-D block of integers");
      if (masked && op.operand(1)->type != x.withElement(Type(ScalarType::I1))) return fail(op, "mask must be i1 of x's shape");
      return op.result()->type == Type(ScalarType::I32).withShape({op.intAttr("num_bins")}) ||
             fail(op, "result must be <num_bins x i32>");
    }
    case OpCode::InlineAsm: {
      if (op.results.empty()) return fail(op, "gives results");
      // No arguments: scalar results (gdc_wait's dummy register).
      const Type first = op.operands.empty() ? Type(op.result(0)->type.scalar) : op.operand(0)->type;
      for (const Value *v : op.operands)
        if (!sameShape(v->type, first)) return fail(op, "arguments must have one shape");
      for (const auto &res : op.results)
        if (!sameShape(res->type, first) || res->type.pointer) return fail(op, "results must be numbers of the arguments' shape");
      return (op.hasAttr("asm") && op.hasAttr("constraints") && op.intAttr("pack") >= 1) ||
             fail(op, "needs asm, constraints and pack >= 1");
    }
    case OpCode::ReduceCombine:
    case OpCode::Scan:
      return verifyCombineOp(op);
    case OpCode::MapElementwise:
      return verifyMapElementwise(op);
    case OpCode::SmId:
    case OpCode::GlobalTimer: {
      const Type want(op.code == OpCode::SmId ? ScalarType::I32 : ScalarType::I64);
      return (op.operands.empty() && op.results.size() == 1 && op.result()->type == want) ||
             fail(op, std::string("takes no operands and gives one ") + (op.code == OpCode::SmId ? "i32" : "i64"));
    }
    case OpCode::Dot: {
      if (!nOperands(3) || !nResults(1)) return false;
      const Type &a = op.operand(0)->type, &b = op.operand(1)->type, &c = op.operand(2)->type;
      const size_t n = a.rank();
      if ((n != 2 && n != 3) || b.rank() != n || c.rank() != n)
        return fail(op, "operands must be 2-D blocks, or 3-D (batched) ones");
      if (a.shape[n - 1] != b.shape[n - 2] || c.shape[n - 2] != a.shape[n - 2] || c.shape[n - 1] != b.shape[n - 1])
        return fail(op, "shapes do not match (a [B]xMxK, b [B]xKxN, acc [B]xMxN)");
      if (n == 3 && (a.shape[0] != b.shape[0] || c.shape[0] != a.shape[0]))
        return fail(op, "batch dims do not match");
      // fp8 operands may mix e4m3 and e5m2 (what accelerate-dot gives the fp8 tensor cores).
      auto fp8 = [](const Type &t) { return t.scalar == ScalarType::F8E4M3 || t.scalar == ScalarType::F8E5M2; };
      if (a.element() != b.element() && !(fp8(a.element()) && fp8(b.element()) && !a.pointer && !b.pointer))
        return fail(op, "a and b must have one element type");
      return op.result()->type == c || fail(op, "result must have the accumulator's type");
    }
    case OpCode::AtomicRMW: {
      bool masked = op.hasAttr("has_mask") && op.intAttr("has_mask");
      if (!nOperands(masked ? 3 : 2) || !nResults(1)) return false;
      const Type &p = op.operand(0)->type;
      if (!p.pointer || op.operand(1)->type != p.withElement(Type(p.scalar)) || op.result()->type != op.operand(1)->type)
        return fail(op, "value and result must be the pointee of the pointer operand");
      if (masked && (!op.operand(2)->type.isBoolElement() || !sameShape(op.operand(2)->type, p)))
        return fail(op, "mask must be i1 of the pointer's shape");
      const std::string &k = op.stringAttr("kind");
      for (const char *known : {"add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg"})
        if (k == known) return true;
      return fail(op, "unknown kind '" + k + "'");
    }
    case OpCode::AtomicCAS: {
      if (!nOperands(3) || !nResults(1)) return false;
      const Type &p = op.operand(0)->type;
      Type value = p.withElement(Type(p.scalar));
      return (p.pointer && op.operand(1)->type == value && op.operand(2)->type == value && op.result()->type == value) ||
             fail(op, "cmp, val and result must be the pointee of the pointer operand");
    }
    case OpCode::Print:
      return (op.operands.size() <= 1 || fail(op, "prints at most one value")) && nResults(0);
    case OpCode::Assert:
    case OpCode::Assume:
      return nOperands(1) && nResults(0) && (op.operand(0)->type.isBoolElement() || fail(op, "condition must be i1"));
    case OpCode::Barrier:
      if (op.hasAttr("pingpong")) {
        const std::string &kind = op.stringAttr("pingpong");
        if (kind != "start" && kind != "wait" && kind != "pass" && kind != "end")
          return fail(op, "pingpong must be start, wait, pass or end");
        if (op.operands.size() == 1)
          return nResults(0) && (op.operand(0)->type == Type(ScalarType::I1) || fail(op, "the predicate must be i1"));
      }
      return nOperands(0) && nResults(0);
    case OpCode::ConsumerGroup:
      return nOperands(0) && nResults(1) && (op.result()->type == Type(ScalarType::I32) || fail(op, "result must be i32"));
    case OpCode::AsyncCommit:
    case OpCode::FenceAsyncShared:
      return nOperands(0) && nResults(0);
    case OpCode::DotWait: // (acc, values to compute first...)
      return (!op.operands.empty() || fail(op, "takes the accumulator")) && nResults(1) &&
             (op.operand(0)->type == op.result()->type || fail(op, "result type must be the operand's")) &&
             (!op.hasAttr("pending") || op.intAttr("pending") >= 0 || fail(op, "pending must be >= 0"));
    case OpCode::AsyncWait:
      return nOperands(0) && nResults(0) && (op.intAttr("pending") >= 0 || fail(op, "pending must be >= 0"));
    case OpCode::WarpSpecialize:
      if (!nOperands(0) || !nResults(0)) return false;
      if (op.regions.size() != 1) return fail(op, "needs one region (the producer's program)");
      if (!op.hasAttr("producer_warps") || op.intAttr("producer_warps") != 4)
        return fail(op, "producer_warps must be 4 (one warpgroup)");
      if (op.hasAttr("consumer_groups") && op.intAttr("consumer_groups") != 1 && op.intAttr("consumer_groups") != 2)
        return fail(op, "consumer_groups must be 1 or 2");
      return verifyRegion(op, *op.regions[0], OpCode::Yield, {});
    case OpCode::LocalAlloc:
      return nOperands(0) && nResults(1) &&
             (op.result()->type.rank() == 3 || fail(op, "a buffer is [stages, rows, cols]")) &&
             (!op.result()->type.pointer || fail(op, "a buffer holds values, not pointers"));
    case OpCode::LocalDealloc:
      return nOperands(1) && nResults(0) &&
             (isBuffer(op.operand(0)) || isMbarriers(op.operand(0)) ||
              fail(op, "operand is not a local_alloc or mbarrier_alloc"));
    case OpCode::MbarrierAlloc: {
      if (!nOperands(0) || !nResults(1)) return false;
      const Type &t = op.result()->type;
      if (t.rank() != 3 || t.shape[1] != 1 || t.shape[2] != 1 || t.pointer || t.scalar != ScalarType::I64)
        return fail(op, "mbarriers are <stages x 1 x 1 x i64>");
      return op.intAttr("arrivals") >= 1 || fail(op, "arrivals must be >= 1");
    }
    case OpCode::MbarrierWait: {
      const bool leader = op.hasAttr("leader") && op.intAttr("leader");
      if (op.operands.size() != 4 && (leader || op.operands.size() != 3))
        return fail(op, leader ? "expects (mbarriers, stage, phase, pred)" : "expects (mbarriers, stage, phase [, pred])");
      if (!nResults(0)) return false;
      if (!isMbarriers(op.operand(0))) return fail(op, "operand 0 is not an mbarrier_alloc");
      if (op.operands.size() == 4 && op.operand(3)->type != Type(ScalarType::I1)) return fail(op, "pred must be i1");
      return (op.operand(1)->type == Type(ScalarType::I32) && op.operand(2)->type == Type(ScalarType::I32)) ||
             fail(op, "stage and phase must be i32");
    }
    case OpCode::MbarrierArrive:
      if (!nOperands(3) || !nResults(0)) return false;
      if (!isMbarriers(op.operand(0))) return fail(op, "operand 0 is not an mbarrier_alloc");
      return (op.operand(1)->type == Type(ScalarType::I32) && op.operand(2)->type == Type(ScalarType::I1)) ||
             fail(op, "stage must be i32 and pred i1");
    case OpCode::AsyncTmaCopy: {
      if (op.operands.empty() || !nResults(0)) return false;
      const Type &d = op.operand(0)->type;
      if (!d.isTensorDesc()) return fail(op, "first operand must be a tensor descriptor");
      const size_t rank = d.descBlock.size();
      if (op.operands.size() != 1 + rank + 4) return fail(op, "expects (desc, one offset per dim, buffer, stage, mbarriers, pred)");
      for (size_t i = 1; i <= rank; ++i)
        if (op.operand(i)->type != Type(ScalarType::I32)) return fail(op, "offsets must be i32 scalars");
      const Value *buf = op.operand(1 + rank);
      if (!isBuffer(buf)) return fail(op, "the destination is not a local_alloc");
      // A stage holds the block, or (a buffer of transposed tiles: the block's rows are
      // the columns of the B operand read from it) its transpose.
      const std::vector<int64_t> stageShape(buf->type.shape.begin() + 1, buf->type.shape.end());
      const bool transposedTiles = buf->layout && buf->layout->transposed;
      if (buf->type.element() != Type(d.scalar) || d.descBlock.size() != 2 ||
          stageShape != (transposedTiles ? std::vector<int64_t>{d.descBlock[1], d.descBlock[0]} : d.descBlock))
        return fail(op, "one stage of the buffer must be the descriptor's block (transposed in a transposed tile)");
      if (op.operand(2 + rank)->type != Type(ScalarType::I32) || op.operand(4 + rank)->type != Type(ScalarType::I1))
        return fail(op, "stage must be i32 and pred i1");
      return isMbarriers(op.operand(3 + rank)) || fail(op, "operand after the stage is not an mbarrier_alloc");
    }
    case OpCode::AsyncCopy: {
      bool masked = op.hasAttr("has_mask") && op.intAttr("has_mask");
      if (!nOperands(masked ? 5 : 4) || !nResults(0)) return false;
      const Type &p = op.operand(0)->type, &buf = op.operand(1)->type;
      if (!isBuffer(op.operand(1)) || buf.rank() != 3) return fail(op, "operand 1 is not a local_alloc");
      const bool transpose = op.hasAttr("transpose") && op.intAttr("transpose");
      const std::vector<int64_t> stageShape = transpose ? std::vector<int64_t>{buf.shape[2], buf.shape[1]}
                                                        : std::vector<int64_t>(buf.shape.begin() + 1, buf.shape.end());
      if (!p.pointer || p.rank() != 2 || Type(p.scalar) != buf.element() || stageShape != p.shape)
        return fail(op, "the pointer block must match one stage of the buffer (transposed with transpose = 1)");
      if (op.operand(2)->type != Type(ScalarType::I32) || op.operand(3)->type != Type(ScalarType::I1))
        return fail(op, "stage must be i32 and pred i1");
      if (masked && (!op.operand(4)->type.isBoolElement() || !sameShape(op.operand(4)->type, p)))
        return fail(op, "mask must be i1 of the pointer's shape");
      return true;
    }
    case OpCode::LocalStore: {
      if (!nOperands(3) || !nResults(0)) return false;
      const Type &buf = op.operand(1)->type;
      if (!isBuffer(op.operand(1)) || op.operand(2)->type != Type(ScalarType::I32))
        return fail(op, "expects (value, buffer, i32 stage)");
      return op.operand(0)->type == buf.withShape({buf.shape[1], buf.shape[2]}) ||
             fail(op, "the value must be one stage of the buffer");
    }
    case OpCode::LocalLoad: {
      if (!nOperands(2) || !nResults(1)) return false;
      const Type &buf = op.operand(0)->type;
      if (!isBuffer(op.operand(0)) || op.operand(1)->type != Type(ScalarType::I32))
        return fail(op, "expects (buffer, i32 stage)");
      const bool transposed = op.hasAttr("transpose") && op.intAttr("transpose");
      return op.result()->type == (transposed ? buf.withShape({buf.shape[2], buf.shape[1]})
                                              : buf.withShape({buf.shape[1], buf.shape[2]})) ||
             fail(op, transposed ? "result must be one stage of the buffer, transposed"
                                 : "result must be one stage of the buffer");
    }
    default:
      return fail(op, "unknown operation");
    }
  }

  // map_elementwise: n operands and m results of one shape; a region taking pack scalars of
  // each operand's element type and yielding pack scalars of each result's.
  bool verifyMapElementwise(const Operation &op) {
    if (op.operands.empty() || op.results.empty() || op.regions.size() != 1)
      return fail(op, "needs operands, results and a region");
    const int64_t pack = op.hasAttr("pack") ? op.intAttr("pack") : 0;
    if (pack < 1) return fail(op, "needs pack >= 1");
    const Type &first = op.operand(0)->type;
    for (const Value *v : op.operands)
      if (v->type.shape != first.shape) return fail(op, "operands must have one shape");
    for (const auto &res : op.results)
      if (res->type.shape != first.shape) return fail(op, "results must have the operands' shape");
    const Block &body = *op.region(0);
    const size_t p = static_cast<size_t>(pack);
    if (body.args.size() != op.operands.size() * p) return fail(op, "region must take pack scalars per operand");
    for (size_t i = 0; i < body.args.size(); ++i)
      if (body.args[i]->type != op.operand(i / p)->type.element())
        return fail(op, "region argument " + std::to_string(i) + " must be an element of operand " +
                            std::to_string(i / p));
    if (!verifyBlock(body)) return false;
    const Operation *yield = body.terminator();
    if (!yield || yield->code != OpCode::Yield || yield->operands.size() != op.results.size() * p)
      return fail(op, "region must end in a yield of pack scalars per result");
    for (size_t i = 0; i < yield->operands.size(); ++i)
      if (yield->operands[i]->type != op.result(static_cast<unsigned>(i / p))->type.element())
        return fail(op, "yielded value " + std::to_string(i) + " must be an element of result " +
                            std::to_string(i / p));
    return true;
  }

  // reduce_combine / scan: n operands of one shape, a region taking 2n
  // scalars and yielding n, results reduced (or scanned) along the axis.
  bool verifyCombineOp(const Operation &op) {
    size_t n = op.operands.size();
    if (n == 0 || op.results.size() != n || op.regions.size() != 1) return fail(op, "needs n operands, n results and a region");
    int64_t axis = op.intAttr("axis");
    const std::vector<int64_t> &shape = op.operand(0)->type.shape;
    if (axis < 0 || axis >= int64_t(shape.size())) return fail(op, "axis out of range");
    std::vector<int64_t> reduced = shape;
    reduced.erase(reduced.begin() + axis);
    const Block &body = *op.regions[0];
    if (body.args.size() != 2 * n) return fail(op, "the combine region takes two scalars per operand");
    for (size_t i = 0; i < n; ++i) {
      const Type &t = op.operand(i)->type;
      if (t.shape != shape) return fail(op, "operands must have one shape");
      Type want = op.code == OpCode::Scan ? t : (reduced.empty() ? t.element() : t.withShape(reduced));
      if (op.result(i)->type != want) return fail(op, "result type is wrong");
      if (body.args[i]->type != t.element() || body.args[n + i]->type != t.element())
        return fail(op, "combine arguments must be the operands' element types");
    }
    if (!verifyBlock(body)) return false;
    const Operation *y = body.terminator();
    if (!y || y->code != OpCode::Yield || y->operands.size() != n) return fail(op, "the combine region must yield n values");
    for (size_t i = 0; i < n; ++i)
      if (y->operands[i]->type != op.operand(i)->type.element()) return fail(op, "the combine region yields a wrong type");
    return true;
  }

  bool verifyRegion(const Operation &op, const Block &region, OpCode terminator,
                    const std::vector<std::unique_ptr<Value>> &results) {
    if (!verifyBlock(region)) return false;
    const Operation *t = region.terminator();
    if (!t || t->code != terminator) return fail(op, std::string("region must end in '") + mnemonic(terminator) + "'");
    if (t->operands.size() != results.size()) return fail(op, "terminator yields the wrong number of values");
    for (size_t i = 0; i < results.size(); ++i)
      if (t->operands[i]->type != results[i]->type) return fail(op, "terminator yields a value of the wrong type");
    return true;
  }
};

} // namespace

std::string verify(const Function &fn) { return Verifier().run(fn); }

} // namespace tessera::ir
