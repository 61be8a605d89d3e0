// The specialiser, control flow: if / for / while, and break, continue and
// return (Triton has no break/continue; tessera adds them).
//
// Python's mutable names become SSA values carried through the IR's
// structured ops. An `if` whose branches may break, continue or return runs
// the rest of the enclosing bodies (up to the loop or the function) inside
// each branch that falls through, so no code runs after an exit; the branches
// meet at the loop's or function's end, where hidden names say what happened:
// "$break" (the loop stops: carried by the loop, which then becomes a while),
// "$ret" (a return inside a loop: the rest of the function is skipped) and
// "$retval" (the value returned).
#include "dsl/SpecializerImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using llvm::cast;
using llvm::dyn_cast;
using llvm::isa;

namespace tessera::spec {

namespace {

SValue boolConst(bool v) { return SValue::constant(ConstexprValue::ofBool(v)); }

bool constTruth(const ConstexprValue &c) {
  switch (c.kind) {
  case ConstexprValue::Kind::Int:
  case ConstexprValue::Kind::Bool: return c.intValue != 0;
  case ConstexprValue::Kind::Float: return c.floatValue != 0;
  case ConstexprValue::Kind::None: return false;
  case ConstexprValue::Kind::String: return !c.stringValue.empty();
  }
  return false;
}

// break/continue that leave the loop whose body this is (not nested loops').
bool hasLoopExit(const ast::Body &body, bool breaksOnly) {
  for (const auto &s : body) {
    if (isa<ast::Break>(s.get())) return true;
    if (!breaksOnly && isa<ast::Continue>(s.get())) return true;
    if (auto *i = dyn_cast<ast::If>(s.get()); i && (hasLoopExit(i->body, breaksOnly) || hasLoopExit(i->orelse, breaksOnly)))
      return true;
  }
  return false;
}

bool hasReturn(const ast::Body &body) {
  for (const auto &s : body) {
    if (isa<ast::Return>(s.get())) return true;
    if (auto *i = dyn_cast<ast::If>(s.get()); i && (hasReturn(i->body) || hasReturn(i->orelse))) return true;
    if (auto *f = dyn_cast<ast::For>(s.get()); f && hasReturn(f->body)) return true;
    if (auto *w = dyn_cast<ast::While>(s.get()); w && hasReturn(w->body)) return true;
  }
  return false;
}

bool ifMayExit(const ast::If &s) {
  return hasLoopExit(s.body, false) || hasLoopExit(s.orelse, false) || hasReturn(s.body) || hasReturn(s.orelse);
}

// A statement after which the rest of its body may have to run inside branches.
bool mayExit(const ast::Stmt &s) {
  if (auto *i = dyn_cast<ast::If>(&s)) return ifMayExit(*i);
  if (auto *f = dyn_cast<ast::For>(&s)) return hasReturn(f->body);
  if (auto *w = dyn_cast<ast::While>(&s)) return hasReturn(w->body);
  return false;
}

// Tuples, block pointers and tensor descriptors made by the kernel are carried leaf by leaf.
bool isStructured(const SValue &v) {
  return v.kind == SValue::Kind::Tuple || v.kind == SValue::Kind::BlockPointer ||
         v.kind == SValue::Kind::TensorDescriptor;
}

// A block pointer's block_shape and order (fields 4, 5), and a tensor
// descriptor's block_shape and padding (fields 3, 4), stay compile-time
// constants: they are opaque leaves, never carried.
bool opaqueField(const SValue &parent, size_t i) {
  return (parent.kind == SValue::Kind::BlockPointer && i >= 4) ||
         (parent.kind == SValue::Kind::TensorDescriptor && i >= 3);
}

void flatten(const SValue &v, std::vector<SValue> &leaves) {
  if (isStructured(v)) {
    for (size_t i = 0; i < v.elems.size(); ++i) {
      if (opaqueField(v, i)) leaves.push_back(v.elems[i]);
      else flatten(v.elems[i], leaves);
    }
    return;
  }
  leaves.push_back(v);
}

SValue rebuild(const SValue &shape, const std::vector<SValue> &leaves, size_t &next) {
  if (!isStructured(shape)) return leaves.at(next++);
  SValue out = shape;
  for (size_t i = 0; i < out.elems.size(); ++i)
    out.elems[i] = opaqueField(shape, i) ? leaves.at(next++) : rebuild(out.elems[i], leaves, next);
  return out;
}

bool sameLeaf(const SValue &a, const SValue &b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
  case SValue::Kind::IR: return a.value == b.value;
  case SValue::Kind::Const: return a.c == b.c;
  case SValue::Kind::DType: return a.dtype == b.dtype && a.path == b.path;
  case SValue::Kind::Function: return a.fn == b.fn;
  case SValue::Kind::Module:
  case SValue::Kind::Builtin: return a.path == b.path;
  case SValue::Kind::Tuple:
    if (a.elems.size() != b.elems.size()) return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!sameLeaf(a.elems[i], b.elems[i])) return false;
    return true;
  default: return false;
  }
}

bool carriable(const SValue &leaf) { return leaf.isIR() || (leaf.isConst() && !leaf.isNone() && leaf.c.kind != ConstexprValue::Kind::String); }

std::string shownName(const std::string &n) {
  if (n == "$retval") return "the return value";
  if (n == "$break") return "the break flag";
  if (n == "$ret") return "the return flag";
  return "variable '" + n + "'";
}

// Names a loop carries: those its body assigns that exist before it and hold
// values (or tuples / block pointers of values).
std::vector<std::string> loopCarriedNames(const ast::Body &body, const Env &env, const std::string &inductionName) {
  std::vector<std::string> carried;
  for (const std::string &n : assignedNames(body)) {
    if (n == inductionName) continue;
    auto it = env.find(n);
    if (it == env.end()) continue;
    std::vector<SValue> leaves;
    flatten(it->second, leaves);
    if (std::any_of(leaves.begin(), leaves.end(), carriable)) carried.push_back(n);
  }
  return carried;
}

} // namespace

// ------------------------------------------------------------------ bodies

Specializer::Flow Specializer::execBody(const ast::Body &body, size_t start) {
  for (size_t i = start; i < body.size(); ++i) {
    const ast::Stmt &s = *body[i];
    bool exits = mayExit(s);
    if (exits) pending_.push_back({&body, i + 1});
    Flow f = execStmt(s);
    if (exits) pending_.pop_back();
    if (f != Flow::Normal) return f; // after break/continue/return the rest is dead
  }
  return Flow::Normal;
}

// Runs the rest of the enclosing bodies, innermost first.
Specializer::Flow Specializer::runPending() {
  std::vector<PendingRest> frames = pending_;
  Flow f = Flow::Normal;
  for (size_t k = frames.size(); k-- > 0 && f == Flow::Normal;) {
    pending_.assign(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(k));
    f = execBody(*frames[k].body, frames[k].next);
  }
  pending_ = frames;
  return f;
}

// A branch reached the end of its loop body or function: record how.
void Specializer::endBranch(Flow f) {
  if (f == Flow::Broke || (f == Flow::Returned && loopDepth_ > 0)) (*env_)["$break"] = boolConst(true);
}

// Carries every name defined on both sides whose values differ.
void Specializer::mergeBranches(ir::Operation *ifOp, const Env &thenEnv, const Env &elseEnv, SourceLoc loc) {
  std::vector<ir::Value *> thenValues, elseValues;
  struct Pending { std::string name; SValue shape; std::vector<SValue> leaves; std::vector<int> slot; };
  std::vector<Pending> merged;
  for (auto it = env_->begin(); it != env_->end();) {
    if (!thenEnv.count(it->first) || !elseEnv.count(it->first)) it = env_->erase(it);
    else ++it;
  }
  // Zeros of `like`'s types in `region`: what a path that returns nothing gives (Triton's poison: any value).
  std::function<SValue(const SValue &)> anyValueLike = [&](const SValue &like) -> SValue {
    if (like.kind == SValue::Kind::Tuple) {
      SValue out = like;
      for (SValue &e : out.elems) e = anyValueLike(e);
      return out;
    }
    if (!like.isIR()) return like;
    const ir::Type &t = like.value->type;
    if (t.pointer || !(t.isFloatElement() || t.isIntElement()))
      error(loc, "a function that returns " + t.str() + " on one path must return on every path");
    return SValue::ir(t.isFloatElement() ? b_.floatConstant(0.0, t) : b_.intConstant(0, t));
  };
  for (const auto &[name, thenValue] : thenEnv) {
    auto e = elseEnv.find(name);
    if (e == elseEnv.end()) {
      env_->erase(name);
      continue;
    }
    SValue tv = thenValue, ev = e->second;
    if (name == "$retval" && isNoReturnValue(tv) && !ev.isNone()) {
      b_.setInsertionPointToEnd(ifOp->region(0));
      tv = anyValueLike(ev);
    } else if (name == "$retval" && isNoReturnValue(ev) && !tv.isNone()) {
      b_.setInsertionPointToEnd(ifOp->region(1));
      ev = anyValueLike(tv);
    }
    std::vector<SValue> tl, el;
    flatten(tv, tl);
    flatten(ev, el);
    bool sameShape = tl.size() == el.size() && isStructured(tv) == isStructured(ev);
    Pending p{name, tv, tl, std::vector<int>(tl.size(), -1)};
    bool ok = sameShape;
    for (size_t i = 0; ok && i < tl.size(); ++i) {
      if (sameLeaf(tl[i], el[i])) continue;
      if (!carriable(tl[i]) || !carriable(el[i])) {
        ok = false;
        break;
      }
      const ir::Type *peerForThen = el[i].isIR() ? &el[i].value->type : nullptr;
      const ir::Type *peerForElse = tl[i].isIR() ? &tl[i].value->type : nullptr;
      b_.setInsertionPointToEnd(ifOp->region(0));
      ir::Value *a = toIR(tl[i], loc, peerForThen);
      b_.setInsertionPointToEnd(ifOp->region(1));
      ir::Value *b = toIR(el[i], loc, peerForElse);
      if (a->type != b->type && name == "$retval") // Triton's wording
        error(loc, "Inconsistent return types: " + a->type.str() + " on one path and " + b->type.str() + " on another");
      if (a->type != b->type)
        error(loc, shownName(name) + " has type " + a->type.str() + " on one path and " + b->type.str() + " on another");
      p.slot[i] = static_cast<int>(thenValues.size());
      thenValues.push_back(a);
      elseValues.push_back(b);
    }
    if (!ok) {
      if (name == "$retval") error(loc, "a function must return a value on every path or on none, and the same kind of value");
      env_->erase(name); // not usable after the if (like a name defined on one path only)
      continue;
    }
    merged.push_back(std::move(p));
  }
  b_.setInsertionPointToEnd(ifOp->region(0));
  b_.create(ir::OpCode::Yield, thenValues, {});
  b_.setInsertionPointToEnd(ifOp->region(1));
  b_.create(ir::OpCode::Yield, elseValues, {});
  for (size_t i = 0; i < thenValues.size(); ++i) {
    auto v = std::make_unique<ir::Value>();
    v->type = thenValues[i]->type;
    v->definingOp = ifOp;
    v->index = static_cast<unsigned>(i);
    ifOp->results.push_back(std::move(v));
  }
  for (Pending &p : merged) {
    for (size_t i = 0; i < p.leaves.size(); ++i)
      if (p.slot[i] >= 0) p.leaves[i] = SValue::ir(ifOp->result(static_cast<unsigned>(p.slot[i])));
    size_t next = 0;
    (*env_)[p.name] = rebuild(p.shape, p.leaves, next);
  }
}

// An if whose branches may leave the loop or function: each branch runs to
// that boundary (thenFn/elseFn include the pending rest), then they merge.
Specializer::Flow Specializer::escapingIf(ir::Value *cond, const std::function<Flow()> &thenFn,
                                          const std::function<Flow()> &elseFn, SourceLoc loc) {
  if (inStaticLoop_)
    error(loc, "unsupported construct: 'break', 'continue' or 'return' under a runtime condition inside tl.static_range");
  ir::Operation *ifOp = b_.create(ir::OpCode::If, {cond}, {}, {}, 2);
  auto after = b_.block()->ops.end();
  ir::Block *outer = b_.block();
  Env before = *env_;
  Env *saved = env_;
  auto runBranch = [&](const std::function<Flow()> &fn, ir::Block *region) {
    Env branchEnv = before;
    env_ = &branchEnv;
    b_.setInsertionPointToEnd(region);
    endBranch(fn());
    env_ = saved;
    return branchEnv;
  };
  Env thenEnv = runBranch(thenFn, ifOp->region(0));
  Env elseEnv = runBranch(elseFn, ifOp->region(1));
  if (loopDepth_ == 0) {
    // Both branches ran to the end of the function: only its result is still live, so a name that
    // changed type on one path (`if pid >= n: return` before `P = P + offs[:, None]`) merges nothing.
    auto keepResult = [](Env &e) {
      for (auto it = e.begin(); it != e.end();)
        it = (it->first == "$retval" || it->first == "$ret") ? std::next(it) : e.erase(it);
    };
    keepResult(thenEnv);
    keepResult(elseEnv);
  }
  mergeBranches(ifOp, thenEnv, elseEnv, loc);
  b_.setInsertionPoint(outer, after);
  return Flow::Finished;
}

// ---------------------------------------------------------------------- if

Specializer::Flow Specializer::execIf(const ast::If &s) {
  SValue cond = eval(*s.cond);
  if (cond.isConst()) // like Triton: a constexpr condition selects a branch at compile time
    return execBody(constTruth(cond.c) ? s.body : s.orelse);
  if (!cond.isIR()) error(s.cond->loc, "an if condition must be a scalar, got " + describe(cond));
  ir::Value *c = toBool(toIR(cond, s.cond->loc));
  if (c->type.isBlock() && c->type.numElements() == 1) // Triton takes a one-element block's element
    c = reshapeTo(c, {}, s.cond->loc);
  if (c->type.isBlock())
    error(s.cond->loc, "an if condition must be a scalar, got a block of type " + c->type.str() +
                           " (use tl.where for elementwise choice)");
  if (ifMayExit(s)) {
    auto branch = [&](const ast::Body &body) {
      return [&]() {
        Flow f = execBody(body);
        return f == Flow::Normal ? runPending() : f;
      };
    };
    return escapingIf(c, branch(s.body), branch(s.orelse), s.loc);
  }

  ir::Operation *ifOp = b_.create(ir::OpCode::If, {c}, {}, {}, 2);
  auto after = b_.block()->ops.end();
  ir::Block *outer = b_.block();
  Env before = *env_;

  auto runBranch = [&](const ast::Body &body, ir::Block *region) {
    Env branchEnv = before;
    Env *saved = env_;
    env_ = &branchEnv;
    b_.setInsertionPointToEnd(region);
    execBody(body);
    env_ = saved;
    return branchEnv;
  };
  Env thenEnv = runBranch(s.body, ifOp->region(0));
  Env elseEnv = runBranch(s.orelse, ifOp->region(1));

  // Names visible after the if: assigned in a branch and defined on both paths.
  std::vector<std::string> names = assignedNames(s.body);
  for (const std::string &n : assignedNames(s.orelse))
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  std::vector<std::string> carried;
  std::vector<ir::Value *> thenValues, elseValues;
  std::vector<std::string> structured; // tuples / block pointers: merged leaf by leaf below
  for (const std::string &n : names) {
    auto t = thenEnv.find(n), e = elseEnv.find(n);
    if (t == thenEnv.end() || e == elseEnv.end()) continue;
    const SValue &tv = t->second, &ev = e->second;
    if (tv.isConst() && ev.isConst() && tv.c == ev.c) {
      (*env_)[n] = tv;
      continue;
    }
    if (isStructured(tv) || isStructured(ev)) {
      structured.push_back(n);
      continue;
    }
    if (!(tv.isIR() || tv.isConst()) || !(ev.isIR() || ev.isConst())) {
      if (sameLeaf(tv, ev)) {
        (*env_)[n] = tv;
        continue;
      }
      error(s.loc, "variable '" + n + "' must be a value in both branches of the if");
    }
    // Materialise each side inside its own region, typed like the other side.
    const ir::Type *peerForThen = ev.isIR() ? &ev.value->type : nullptr;
    const ir::Type *peerForElse = tv.isIR() ? &tv.value->type : nullptr;
    b_.setInsertionPointToEnd(ifOp->region(0));
    ir::Value *tval = toIR(tv, s.loc, peerForThen);
    b_.setInsertionPointToEnd(ifOp->region(1));
    ir::Value *eval_ = toIR(ev, s.loc, peerForElse);
    if (tval->type != eval_->type)
      error(s.loc, "Mismatched type for " + n + " between the then branch (" + tval->type.str() +
                       ") and the else branch (" + eval_->type.str() + ") of the if");
    carried.push_back(n);
    thenValues.push_back(tval);
    elseValues.push_back(eval_);
  }
  if (!structured.empty()) {
    // Tuples or block pointers: the general merge carries every differing name, leaf by leaf.
    mergeBranches(ifOp, thenEnv, elseEnv, s.loc);
    b_.setInsertionPoint(outer, after);
    return Flow::Normal;
  }
  b_.setInsertionPointToEnd(ifOp->region(0));
  b_.create(ir::OpCode::Yield, thenValues, {});
  b_.setInsertionPointToEnd(ifOp->region(1));
  b_.create(ir::OpCode::Yield, elseValues, {});
  for (size_t i = 0; i < carried.size(); ++i) {
    auto v = std::make_unique<ir::Value>();
    v->type = thenValues[i]->type;
    v->definingOp = ifOp;
    v->index = static_cast<unsigned>(i);
    (*env_)[carried[i]] = SValue::ir(v.get());
    ifOp->results.push_back(std::move(v));
  }
  b_.setInsertionPoint(outer, after);
  return Flow::Normal;
}

// ------------------------------------------------------------------- loops

namespace {

// The leaves a loop carries for its names, and how to rebuild them.
struct Carried {
  std::vector<std::string> names;
  std::vector<SValue> shapes;             // per name, its value before the loop
  std::vector<std::vector<SValue>> leaves; // per name
  std::vector<ir::Value *> inits;         // carriable leaves, in order

  // Each name's value with its k-th carriable leaf replaced by valueOf(k)
  // (the region's arguments, the yields, or the op's results).
  std::vector<SValue> rebuildWith(const std::function<ir::Value *(size_t)> &valueOf) const {
    size_t k = 0;
    std::vector<SValue> values;
    for (size_t n = 0; n < names.size(); ++n) {
      std::vector<SValue> copy = leaves[n];
      for (SValue &leaf : copy)
        if (carriable(leaf)) leaf = SValue::ir(valueOf(k++));
      size_t next = 0;
      values.push_back(rebuild(shapes[n], copy, next));
    }
    return values;
  }
};

} // namespace

Specializer::Flow Specializer::afterLoopThatMayReturn(SourceLoc loc) {
  auto it = env_->find("$ret");
  if (it == env_->end() || (it->second.isConst() && !constTruth(it->second.c))) return Flow::Normal;
  if (it->second.isConst()) return Flow::Returned;
  ir::Value *returned = it->second.value;
  return escapingIf(returned, [] { return Flow::Returned; }, [&] { return runPending(); }, loc);
}

Specializer::Flow Specializer::execFor(const ast::For &s) {
  auto *call = dyn_cast<ast::Call>(s.iter.get());
  SValue callee = call ? eval(*call->func) : SValue();
  std::string kind = callee.kind == SValue::Kind::Builtin ? callee.path : "";
  if (kind != "range" && kind != "lang.range" && kind != "lang.static_range")
    error(s.iter->loc, "unsupported loop: iterate over range(...), tl.range(...) or tl.static_range(...)");
  if (!s.orelse.empty()) error(s.loc, "unsupported construct: 'else' on a for loop");
  auto *target = dyn_cast<ast::Name>(s.target.get());
  if (!target) error(s.target->loc, "a for loop's target must be a single name");

  std::vector<SValue> bounds;
  std::vector<SourceLoc> boundLocs;
  evalPositionalArguments(call->args, bounds, boundLocs);
  std::optional<SValue> stepKeyword; // tl.range / tl.static_range(start, end, step=...)
  for (const auto &kw : call->keywords) {
    if (kw.name == "step" && kind != "range" && bounds.size() < 3) {
      stepKeyword = eval(*kw.value);
      continue;
    }
    // Triton's parameter names of range / static_range (arg1, arg2): the first two bounds.
    if (kind != "range" && ((kw.name == "arg1" && bounds.empty()) || (kw.name == "arg2" && bounds.size() == 1))) {
      bounds.push_back(eval(*kw.value));
      boundLocs.push_back(kw.value->loc);
      continue;
    }
    if (kw.name != "num_stages" && kw.name != "loop_unroll_factor" && kw.name != "warp_specialize" &&
        kw.name != "disallow_acc_multi_buffer" && kw.name != "flatten" && kw.name != "disable_licm")
      error(kw.loc, "unexpected keyword argument '" + kw.name + "' to range");
  }
  if (bounds.empty() || bounds.size() > 3)
    error(call->loc, "range() takes 1 to 3 positional arguments, got " + std::to_string(bounds.size()));
  SValue lb = bounds.size() >= 2 ? bounds[0] : SValue::constant(ConstexprValue::ofInt(0));
  SValue ub = bounds.size() >= 2 ? bounds[1] : bounds[0];
  SValue step = bounds.size() == 3 ? bounds[2] : stepKeyword ? *stepKeyword : SValue::constant(ConstexprValue::ofInt(1));

  if (kind == "lang.static_range") {
    int64_t l = requireInt(lb, call->loc, "tl.static_range's start");
    int64_t u = requireInt(ub, call->loc, "tl.static_range's end");
    int64_t st = requireInt(step, call->loc, "tl.static_range's step");
    if (st == 0) error(call->loc, "tl.static_range's step must not be zero");
    if ((u - l) / st > 4096) error(call->loc, "tl.static_range would unroll more than 4096 iterations");
    std::vector<PendingRest> savedPending;
    std::swap(savedPending, pending_);
    bool savedStatic = inStaticLoop_;
    inStaticLoop_ = true;
    Flow result = Flow::Normal;
    for (int64_t i = l; st > 0 ? i < u : i > u; i += st) {
      (*env_)[target->id] = SValue::constant(ConstexprValue::ofInt(i));
      Flow f = execBody(s.body);
      if (f == Flow::Broke) break;
      if (f == Flow::Returned) {
        result = f;
        break;
      }
    }
    inStaticLoop_ = savedStatic;
    std::swap(savedPending, pending_);
    return result;
  }

  // Bounds become IR scalars of one integer type (i64 if any is i64).
  ir::Type ivType(ir::ScalarType::I32);
  for (const SValue *v : {&lb, &ub, &step}) {
    if (v->isIR()) {
      if (v->value->type.isBlock() || !v->value->type.isIntElement())
        error(call->loc, "range() bounds must be integer scalars, got " + v->value->type.str());
      if (ir::bitWidth(v->value->type.scalar) == 64) ivType = ir::Type(ir::ScalarType::I64);
    } else if (!v->isConst() || (v->c.kind != ConstexprValue::Kind::Int && v->c.kind != ConstexprValue::Kind::Bool)) {
      error(call->loc, "range() bounds must be integers, got " + describe(*v));
    }
  }
  if (step.isConst() && step.c.intValue == 0) error(call->loc, "range() arg 3 must not be zero");
  if (hasLoopExit(s.body, true) || hasReturn(s.body)) {
    execForAsWhile(s, lb, ub, step, ivType);
    return hasReturn(s.body) ? afterLoopThatMayReturn(s.loc) : Flow::Normal;
  }
  // A negative constant step counts up from end to start by -step and maps the
  // counter i back to start - (i - end), as Triton's visit_For does: Python's trip
  // count, and a for op whose step is positive. (A runtime step is the for op's
  // step as it is, as in Triton: it must be positive.)
  const bool negativeStep = step.isConst() && step.c.intValue < 0;
  if (negativeStep) {
    step = SValue::constant(ConstexprValue::ofInt(-step.c.intValue));
    std::swap(lb, ub);
  }
  ir::Value *lbv = castElement(toIR(lb, call->loc, &ivType), ivType);
  ir::Value *ubv = castElement(toIR(ub, call->loc, &ivType), ivType);
  ir::Value *stepv = castElement(toIR(step, call->loc, &ivType), ivType);

  Carried c;
  c.names = loopCarriedNames(s.body, *env_, target->id);
  for (const std::string &n : c.names) {
    c.shapes.push_back((*env_)[n]);
    c.leaves.emplace_back();
    flatten((*env_)[n], c.leaves.back());
    for (const SValue &leaf : c.leaves.back())
      if (carriable(leaf)) c.inits.push_back(toIR(leaf, s.loc));
  }
  std::vector<ir::Value *> operands = {lbv, ubv, stepv};
  operands.insert(operands.end(), c.inits.begin(), c.inits.end());
  std::vector<ir::Type> resultTypes;
  for (ir::Value *v : c.inits) resultTypes.push_back(v->type);

  ir::Operation *forOp = b_.create(ir::OpCode::For, operands, resultTypes, {}, 1);
  // tl.range(..., warp_specialize=True): a hint to the pipeline pass (a producer warpgroup
  // issues the loop's TMA copies, docs/tma.md); constexpr, as in Triton.
  for (const auto &kw : call->keywords)
    if (kw.name == "warp_specialize") {
      SValue v = eval(*kw.value);
      if (!v.isConst() || (v.c.kind != ConstexprValue::Kind::Bool && v.c.kind != ConstexprValue::Kind::Int))
        error(kw.loc, "warp_specialize must be a constexpr bool, got " + describe(v));
      if (constTruth(v.c)) forOp->attrs["warp_specialize"] = int64_t{1};
    }
  auto after = b_.block()->ops.end();
  ir::Block *outer = b_.block();
  ir::Block *body = forOp->region(0);
  ir::Value *iv = body->addArgument(ivType, target->id);
  Env bodyEnv = *env_;
  bodyEnv[target->id] = SValue::ir(iv);
  {
    size_t k = 0;
    std::vector<SValue> args = c.rebuildWith([&](size_t i) {
      ++k;
      return body->addArgument(c.inits[i]->type, "");
    });
    for (size_t n = 0; n < c.names.size(); ++n) bodyEnv[c.names[n]] = args[n];
    // Name the block arguments after their variables (printer hints).
    size_t arg = 1;
    for (size_t n = 0; n < c.names.size(); ++n)
      for (const SValue &leaf : c.leaves[n])
        if (carriable(leaf)) body->args[arg++]->nameHint = c.names[n];
  }

  Env *saved = env_;
  env_ = &bodyEnv;
  std::vector<PendingRest> savedPending;
  std::swap(savedPending, pending_);
  bool savedStatic = inStaticLoop_;
  inStaticLoop_ = false;
  ++loopDepth_;
  b_.setInsertionPointToEnd(body);
  if (negativeStep) // lb and ub are swapped: the original start is ub
    bodyEnv[target->id] = SValue::ir(b_.op(ir::OpCode::Add, {b_.op(ir::OpCode::Sub, {ubv, iv}, ivType), lbv}, ivType));
  endBranch(execBody(s.body));
  --loopDepth_;
  inStaticLoop_ = savedStatic;
  std::swap(savedPending, pending_);
  std::vector<ir::Value *> yields;
  for (size_t n = 0, k = 0; n < c.names.size(); ++n) {
    std::vector<SValue> leaves;
    flatten(bodyEnv[c.names[n]], leaves);
    if (leaves.size() != c.leaves[n].size())
      error(s.loc, "loop-carried variable '" + c.names[n] + "' changes its structure in the loop");
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!carriable(c.leaves[n][i])) continue;
      const ir::Type &want = c.inits[k]->type;
      ir::Value *v = toIR(leaves[i], s.loc, &want);
      if (v->type != want)
        error(s.loc, "loop-carried variable '" + c.names[n] + "' has type " + want.str() +
                         " before the loop and " + v->type.str() +
                         " after an iteration; give it its loop type before the loop");
      yields.push_back(v);
      ++k;
    }
  }
  b_.create(ir::OpCode::Yield, yields, {});
  env_ = saved;
  b_.setInsertionPoint(outer, after);
  std::vector<SValue> results = c.rebuildWith([&](size_t i) { return forOp->result(static_cast<unsigned>(i)); });
  for (size_t n = 0; n < c.names.size(); ++n) (*env_)[c.names[n]] = results[n];
  return Flow::Normal;
}

// A for loop with break (or return) becomes a while loop carrying "$break".
void Specializer::execForAsWhile(const ast::For &s, const SValue &lb, const SValue &ub, const SValue &step,
                                 ir::Type ivType) {
  auto *call = cast<ast::Call>(s.iter.get());
  auto *target = cast<ast::Name>(s.target.get());
  ir::Value *lbv = castElement(toIR(lb, call->loc, &ivType), ivType);
  ir::Value *ubv = castElement(toIR(ub, call->loc, &ivType), ivType);
  ir::Value *stepv = castElement(toIR(step, call->loc, &ivType), ivType);
  const std::string ivName = "$iv" + std::to_string(loopDepth_); // nested loops each have their own
  (*env_)[ivName] = SValue::ir(lbv);
  execWhileLoop(s.body, s.loc, ivName, true, [&](const Env &condEnv) {
    ir::Value *iv = condEnv.at(ivName).value;
    const char *predicate = step.isConst() && step.c.intValue < 0 ? "gt" : "lt";
    return b_.op(ir::OpCode::Cmp, {iv, ubv}, ir::Type(ir::ScalarType::I1), {{"predicate", std::string(predicate)}});
  }, [&](Env &bodyEnv) {
    bodyEnv[target->id] = bodyEnv[ivName];
  }, [&](Env &bodyEnv) {
    ir::Value *iv = bodyEnv.at(ivName).value;
    bodyEnv[ivName] = SValue::ir(b_.op(ir::OpCode::Add, {iv, stepv}, iv->type));
  });
  env_->erase(ivName);
}

Specializer::Flow Specializer::execWhile(const ast::While &s) {
  if (!s.orelse.empty()) error(s.loc, "unsupported construct: 'else' on a while loop");
  bool breaks = hasLoopExit(s.body, true) || hasReturn(s.body);
  execWhileLoop(s.body, s.loc, "", breaks, [&](const Env &) -> ir::Value * {
    SValue cond = eval(*s.cond);
    if (cond.isConst()) {
      if (!constTruth(cond.c)) return b_.intConstant(0, ir::Type(ir::ScalarType::I1));
      if (!breaks) error(s.cond->loc, "a while condition that is always true needs a 'break' or 'return' in the loop");
      return nullptr; // only "$break" stops it
    }
    ir::Value *c = toBool(toIR(cond, s.cond->loc));
    if (c->type.isBlock()) error(s.cond->loc, "a while condition must be a scalar, got " + c->type.str());
    return c;
  }, nullptr, nullptr);
  return hasReturn(s.body) ? afterLoopThatMayReturn(s.loc) : Flow::Normal;
}

// The while op: `condition(env)` gives the user condition (null: none), and-ed
// with !$break when the loop carries it; `enter`/`latch` adjust the body env.
void Specializer::execWhileLoop(const ast::Body &bodyAst, SourceLoc loc, const std::string &extraName, bool breaks,
                                const std::function<ir::Value *(const Env &)> &condition,
                                const std::function<void(Env &)> &enter, const std::function<void(Env &)> &latch) {
  // "$break" belongs to this loop (an outer loop's is restored afterwards);
  // "$ret" to the function (it outlives the loop).
  std::optional<SValue> outerBreak;
  if (auto it = env_->find("$break"); it != env_->end()) outerBreak = it->second;
  env_->erase("$break");
  if (breaks) (*env_)["$break"] = boolConst(false);
  if (hasReturn(bodyAst) && !env_->count("$ret")) (*env_)["$ret"] = boolConst(false);
  Carried c;
  c.names = loopCarriedNames(bodyAst, *env_, "");
  for (const char *hidden : {"$break", "$ret"})
    if (env_->count(hidden) && std::find(c.names.begin(), c.names.end(), hidden) == c.names.end())
      c.names.push_back(hidden);
  if (!extraName.empty()) c.names.insert(c.names.begin(), extraName);
  for (const std::string &n : c.names) {
    c.shapes.push_back((*env_)[n]);
    c.leaves.emplace_back();
    flatten((*env_)[n], c.leaves.back());
    for (const SValue &leaf : c.leaves.back())
      if (carriable(leaf)) c.inits.push_back(toIR(leaf, loc));
  }
  std::vector<ir::Type> types;
  for (ir::Value *v : c.inits) types.push_back(v->type);
  auto nameArgs = [&](ir::Block *block) {
    size_t arg = 0;
    for (size_t n = 0; n < c.names.size(); ++n)
      for (const SValue &leaf : c.leaves[n])
        if (carriable(leaf)) block->args[arg++]->nameHint = c.names[n][0] == '$' ? "" : c.names[n];
  };

  ir::Operation *whileOp = b_.create(ir::OpCode::While, c.inits, types, {}, 2);
  auto after = b_.block()->ops.end();
  ir::Block *outer = b_.block();
  Env *saved = env_;

  // before: evaluate the condition on the carried values.
  ir::Block *beforeBlock = whileOp->region(0);
  std::vector<SValue> beforeValues = c.rebuildWith([&](size_t i) { return beforeBlock->addArgument(types[i]); });
  nameArgs(beforeBlock);
  Env condEnv = *saved;
  for (size_t n = 0; n < c.names.size(); ++n) condEnv[c.names[n]] = beforeValues[n];
  env_ = &condEnv;
  b_.setInsertionPointToEnd(beforeBlock);
  ir::Value *cond = condition(condEnv);
  if (condEnv.count("$break")) {
    const SValue &brk = condEnv["$break"];
    if (brk.isIR()) {
      ir::Value *notBroken = b_.op(ir::OpCode::Not, {brk.value}, brk.value->type);
      cond = cond ? b_.op(ir::OpCode::And, {cond, notBroken}, cond->type) : notBroken;
    }
  }
  if (!cond) cond = b_.intConstant(1, ir::Type(ir::ScalarType::I1));
  std::vector<ir::Value *> condOperands = {cond};
  for (auto &arg : beforeBlock->args) condOperands.push_back(arg.get());
  b_.create(ir::OpCode::Condition, condOperands, {});

  // after: the body (it only runs when "$break" is false).
  ir::Block *afterBlock = whileOp->region(1);
  std::vector<SValue> afterValues = c.rebuildWith([&](size_t i) { return afterBlock->addArgument(types[i]); });
  nameArgs(afterBlock);
  Env bodyEnv = *saved;
  for (size_t n = 0; n < c.names.size(); ++n) bodyEnv[c.names[n]] = afterValues[n];
  if (bodyEnv.count("$break")) bodyEnv["$break"] = boolConst(false);
  env_ = &bodyEnv;
  b_.setInsertionPointToEnd(afterBlock);
  if (enter) enter(bodyEnv);
  std::vector<PendingRest> savedPending;
  std::swap(savedPending, pending_);
  bool savedStatic = inStaticLoop_;
  inStaticLoop_ = false;
  ++loopDepth_;
  endBranch(execBody(bodyAst));
  --loopDepth_;
  inStaticLoop_ = savedStatic;
  std::swap(savedPending, pending_);
  if (latch) latch(bodyEnv);
  std::vector<ir::Value *> yields;
  for (size_t n = 0, k = 0; n < c.names.size(); ++n) {
    std::vector<SValue> leaves;
    flatten(bodyEnv[c.names[n]], leaves);
    if (leaves.size() != c.leaves[n].size())
      error(loc, "loop-carried " + shownName(c.names[n]) + " changes its structure in the loop");
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!carriable(c.leaves[n][i])) continue;
      ir::Value *v = toIR(leaves[i], loc, &types[k]);
      if (v->type != types[k])
        error(loc, "loop-carried " + shownName(c.names[n]) + " has type " + types[k].str() + " before the loop and " +
                       v->type.str() + " after an iteration");
      yields.push_back(v);
      ++k;
    }
  }
  b_.create(ir::OpCode::Yield, yields, {});
  env_ = saved;
  b_.setInsertionPoint(outer, after);
  std::vector<SValue> results = c.rebuildWith([&](size_t i) { return whileOp->result(static_cast<unsigned>(i)); });
  for (size_t n = 0; n < c.names.size(); ++n) (*env_)[c.names[n]] = results[n];
  env_->erase("$break");
  if (outerBreak) (*env_)["$break"] = *outerBreak;
}

} // namespace tessera::spec
