// What every ring of the pipeline pass needs (SoftwarePipelineLoop.h): address math cloned at
// another iteration, buffers, stage counters, the prologue and epilogue, invariant tiles and
// async wgmma dots.
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <algorithm>
#include <set>

namespace tessera::passes::software_pipeline {

// Cheap ops that address computations are made of. Whether an op has effects is
// Ops.def's (isPure); this list only says which pure ops are cheap enough to clone.
bool isClonable(const Operation &op) {
  if (!isPure(op)) return false;
  switch (op.code) {
  case OpCode::Constant: case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::MakeRange:
  case OpCode::Splat: case OpCode::Broadcast: case OpCode::ExpandDims: case OpCode::ConvertLayout:
  case OpCode::Hint: case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr: case OpCode::Max:
  case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp: case OpCode::Select:
  case OpCode::AddPtr: case OpCode::Cast: case OpCode::Bitcast:
    return op.regions.empty() && op.results.size() == 1;
  default:
    return false;
  }
}

bool LoopPipeliner::constantStep() {
  const Operation *d = loop_.operand(2)->definingOp;
  if (!d || d->code != OpCode::Constant || d->isFloatConstant()) return false;
  step_ = d->intAttr("value");
  return step_ > 0;
}

bool LoopPipeliner::definedInBody(const Value *v) const {
  return v->ownerBlock == body_ || (v->definingOp && v->definingOp->parent == body_);
}

// The yield's `arg + c` / `addptr(arg, c)` for iter arg `arg`, else null. `arg` may be read
// through hints (`tl.multiple_of(a_ptrs, ...)` in the body): they pass it on unchanged.
Operation *LoopPipeliner::advanceOf(const Value *arg) const {
  if (arg->ownerBlock != body_ || arg->index == 0) return nullptr;
  Value *next = body_->terminator()->operand(arg->index - 1);
  Operation *d = next->definingOp;
  if (!d || d->parent != body_ || (d->code != OpCode::AddPtr && d->code != OpCode::Add)) return nullptr;
  const Value *advanced = d->operand(0);
  while (advanced->definingOp && advanced->definingOp->code == OpCode::Hint) advanced = advanced->definingOp->operand(0);
  return advanced == arg ? d : nullptr;
}

bool LoopPipeliner::isInvariant(const Value *v) {
  if (!definedInBody(v)) return true;
  if (v->ownerBlock) return false;
  auto [it, fresh] = invariant_.try_emplace(v, false);
  if (!fresh) return it->second;
  bool ok = isClonable(*v->definingOp);
  for (const Value *o : v->definingOp->operands) ok = ok && isInvariant(o);
  return invariant_[v] = ok;
}

// v can be computed at another iteration from the loop variable,
// invariants and advancing iter args.
bool LoopPipeliner::canClone(const Value *v) {
  if (!definedInBody(v)) return true;
  if (v == body_->args[0].get()) return true;
  if (v->ownerBlock) {
    const Operation *inc = advanceOf(v);
    return inc && isInvariant(inc->operand(1));
  }
  auto [it, fresh] = clonable_.try_emplace(v, false);
  if (!fresh) return it->second;
  bool ok = isClonable(*v->definingOp) || (cloneLoads_ && isLoadThatMayMoveAhead(*v->definingOp));
  for (const Value *o : v->definingOp->operands) ok = ok && canClone(o);
  return clonable_[v] = ok;
}

// A load in the address math of a copy (the page numbers of a paged KV cache): it may run some
// iterations early when nothing in the loop writes global memory (or may: unknown effects).
bool LoopPipeliner::isLoadThatMayMoveAhead(const Operation &op) {
  if (op.code != OpCode::Load || (op.hasAttr("volatile") && op.intAttr("volatile"))) return false;
  if (!bodyWritesMemory_) {
    bool writes = false;
    walk(*body_, [&](Operation &o) {
      writes = writes || (opWritesMemory(o.code) && !opWritesSharedMemory(o.code)) || !opEffectsKnown(o.code);
    });
    bodyWritesMemory_ = writes;
  }
  return !*bodyWritesMemory_;
}

// The load `v` at iteration shift.iv, on the cloned `operands`: masked off past the loop's end,
// as the copies are (the addresses there may be out of bounds), zero there.
Value *LoopPipeliner::cloneLoadAhead(const Value *v, std::vector<Value *> operands, Builder &b, const Shift &shift) {
  const Operation &load = *v->definingOp;
  b.setLoc(load.loc);
  const Type i1(ScalarType::I1);
  Value *mask = b.op(OpCode::Cmp, {shift.iv, loop_.operand(1)}, i1, {{"predicate", std::string("lt")}});
  if (v->type.isBlock()) {
    mask = b.op(OpCode::Splat, {mask}, v->type.withElement(i1));
    mask->layout = v->layout;
  }
  if (load.loadMask()) {
    mask = b.op(OpCode::And, {operands[1], mask}, mask->type);
    mask->layout = v->layout;
  }
  Value *other = load.loadOther() ? operands[2]
                 : v->type.isFloatElement() ? b.floatConstant(0.0, v->type) : b.intConstant(0, v->type);
  other->layout = v->layout;
  std::map<std::string, Attribute> attrs = load.attrs;
  attrs["has_mask"] = int64_t{1};
  attrs["has_other"] = int64_t{1};
  Value *out = b.create(OpCode::Load, {operands[0], mask, other}, {v->type}, attrs)->result();
  out->layout = v->layout;
  out->nameHint = v->nameHint;
  return out;
}

// convert_layout(x) -> #dot_op read only by mma dots of one version at
// that operand: that version, else 0.
// fp8 wgmma reads B K-major only (no transpose bit for 8-bit types): of an
// fp8 B, only a block whose buffer is K-major is buffered: one loaded from a
// column-major matrix (stored transposed by allocateBuffers), or a TMA block
// of B's transpose that reaches the dot through trans (the TMA unit writes its
// rows, B's columns, as they are: a column-major B's descriptor over N x K).
// The dot stages any other B itself, transposing it on the way
// (compiler/codegen/WgmmaDot.cpp).
static bool needsKMajorB(Operation &convert, size_t operand) {
  const Type t = convert.result()->type.element();
  if (operand != 1 || t.pointer || (t.scalar != ScalarType::F8E4M3 && t.scalar != ScalarType::F8E5M2)) return false;
  Operation *load = convert.operand(0)->definingOp;
  if (load && load->code == OpCode::Trans && load->arrayAttr("order") == std::vector<int64_t>{1, 0} &&
      load->operand(0)->definingOp && load->operand(0)->definingOp->code == OpCode::DescLoad)
    return false;
  const LayoutRef &l = load && load->code == OpCode::Load ? load->operand(0)->layout : nullptr;
  return !(l && l->kind == Layout::Kind::Blocked && l->order[0] == 0);
}

unsigned LoopPipeliner::feedsOnlyMmaDots(Operation &convert) {
  if (convert.code != OpCode::ConvertLayout || !convert.result()->layout ||
      convert.result()->layout->kind != Layout::Kind::DotOperand)
    return 0;
  const unsigned opIdx = convert.result()->layout->opIdx;
  bool only = true;
  unsigned version = 0;
  walk(fn_.body, [&](Operation &user) {
    for (size_t i = 0; i < user.operands.size(); ++i)
      if (user.operands[i] == convert.result()) {
        const LayoutRef &l = user.result()->layout;
        only = only && user.code == OpCode::Dot && i == opIdx && l && l->kind == Layout::Kind::Mma &&
               (version == 0 || version == l->mmaVersion) && !(l->mmaVersion == 3 && needsKMajorB(convert, i));
        if (only) version = l->mmaVersion;
      }
  });
  return only ? version : 0;
}

bool LoopPipeliner::anyWgmma(const std::vector<Candidate> &cs) {
  for (const Candidate &c : cs)
    if (c.mmaVersion == 3) return true;
  return false;
}

// The load's threads read its block along dim 0 (the pointers' layout has order [0, 1]).
bool LoopPipeliner::readAlongDim0(const Operation &load) {
  const LayoutRef &l = load.operand(0)->layout;
  return l && l->kind == Layout::Kind::Blocked && l->order[0] == 0 && load.result()->type.shape[0] > 1;
}

bool LoopPipeliner::stageableType(const Type &t) {
  return t.rank() == 2 && !t.pointer &&
         (t.scalar == ScalarType::F16 || t.scalar == ScalarType::BF16 || t.scalar == ScalarType::F32 ||
          t.scalar == ScalarType::I8 || t.scalar == ScalarType::F8E4M3 || t.scalar == ScalarType::F8E5M2);
}

// Operands computed before the loop (FlashAttention's Q tile): staged into
// shared memory once, instead of by the dot in every iteration.
std::vector<Candidate> LoopPipeliner::findInvariantOperands() {
  std::vector<Candidate> found;
  for (auto &op : body_->ops)
    if (op->code == OpCode::ConvertLayout && !definedInBody(op->operand(0)) &&
        op->operand(0)->type.isBlock() && op->operand(0)->layout &&
        op->operand(0)->layout->kind == Layout::Kind::Blocked && stageableType(op->operand(0)->type))
      if (unsigned version = feedsOnlyMmaDots(*op))
        found.push_back({nullptr, op.get(), op->result()->layout->opIdx, version});
  return found;
}

// The invariant tile of an earlier loop of the same block that holds `x` in `layout` (the
// backward's K and V, read by its two key loops), with the local_dealloc that frees it after that
// loop; {null, null} when there is none.
std::pair<Value *, Operation *> LoopPipeliner::earlierInvariantTile(Value *x, const LayoutRef &layout) {
  Block *block = loop_.parent;
  for (auto it = block->ops.begin(); it != positionOf(loop_); ++it) {
    Operation &store = **it;
    if (store.code != OpCode::LocalStore || store.operand(0) != x) continue;
    Value *buffer = store.operand(1);
    const Operation *alloc = buffer->definingOp;
    if (!alloc || alloc->parent != block || buffer->type.shape[0] != 1 || !sameLayout(buffer->layout, layout))
      continue;
    // Freed between that store and this loop, and written by that store only.
    Operation *dealloc = nullptr;
    for (auto at = std::next(it); at != positionOf(loop_) && !dealloc; ++at)
      if ((*at)->code == OpCode::LocalDealloc && (*at)->operand(0) == buffer) dealloc = at->get();
    bool onlyRead = true;
    walk(fn_.body, [&](Operation &op) {
      if (&op == &store || &op == dealloc || !readsValue(op, buffer) || !op.regions.empty()) return;
      onlyRead = onlyRead && op.code == OpCode::LocalLoad;
    });
    if (onlyRead && dealloc) return {buffer, dealloc};
  }
  return {nullptr, nullptr};
}

void LoopPipeliner::stageInvariants(std::vector<Candidate> &cs) {
  if (cs.empty()) return;
  // A tile an earlier loop staged already is read from its buffer, which then lives on to this
  // loop's end, so the registers holding the value are not kept alive across the earlier loop.
  // Buffers are freed in reverse order of allocation (codegen stacks them), so the deallocs
  // moved must be the last of the earlier loop's run of deallocs.
  std::vector<std::pair<Value *, Operation *>> reused;
  std::vector<Candidate *> fresh;
  for (Candidate &c : cs) {
    Value *x = c.convert->operand(0);
    const Type &t = x->type;
    LayoutRef layout =
        Layout::sharedOperandTile(c.mmaVersion, c.opIdx, t.shape[1], bitWidth(t.scalar), false, columnGroups(c));
    auto [buffer, dealloc] = specialize_ ? std::pair<Value *, Operation *>{} : earlierInvariantTile(x, layout);
    if (buffer && std::none_of(reused.begin(), reused.end(), [&](auto &r) { return r.first == buffer; })) {
      c.buffer = buffer;
      reused.emplace_back(buffer, dealloc);
    } else if (buffer) {
      c.buffer = buffer;
    } else {
      fresh.push_back(&c);
    }
  }
  if (!reused.empty()) {
    std::set<Operation *> moved;
    for (auto &r : reused) moved.insert(r.second);
    bool lastOfRun = true;
    for (auto &r : reused)
      for (auto it = positionOf(*r.second); it != loop_.parent->ops.end() && (*it)->code == OpCode::LocalDealloc; ++it)
        lastOfRun = lastOfRun && moved.count(it->get());
    if (!lastOfRun) {
      for (Candidate &c : cs)
        if (c.buffer && std::find(fresh.begin(), fresh.end(), &c) == fresh.end()) fresh.push_back(&c);
      reused.clear();
    }
  }
  // The reused buffers were allocated first: freed last, in reverse order of their allocation.
  std::sort(reused.begin(), reused.end(), [&](auto &a, auto &b) {
    for (auto &op : loop_.parent->ops) {
      if (op.get() == a.first->definingOp) return b.first != a.first;
      if (op.get() == b.first->definingOp) return false;
    }
    return false;
  });
  for (auto &r : reused) {
    allocations_.push_back(r.first);
    loop_.parent->ops.erase(positionOf(*r.second));
  }
  if (!fresh.empty()) {
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, positionOf(loop_));
    b.setLoc(loop_.loc);
    Value *zero = b.intConstant(0, Type(ScalarType::I32));
    bool wgmma = false;
    for (Candidate *c : fresh) {
      c->buffer = nullptr;
      Value *x = c->convert->operand(0);
      const Type &t = x->type;
      c->buffer = b.op(OpCode::LocalAlloc, {}, t.withShape({1, t.shape[0], t.shape[1]}));
      c->buffer->layout =
          Layout::sharedOperandTile(c->mmaVersion, c->opIdx, t.shape[1], bitWidth(t.scalar), false, columnGroups(*c));
      allocations_.push_back(c->buffer);
      b.create(OpCode::LocalStore, {x, c->buffer, zero}, {});
      wgmma = wgmma || c->mmaVersion == 3;
    }
    if (wgmma) b.create(OpCode::FenceAsyncShared, {}, {});
    b.create(OpCode::Barrier, {}, {});
  }
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, positionOf(loop_));
  b.setLoc(loop_.loc);
  Value *zero = b.intConstant(0, Type(ScalarType::I32));
  for (Candidate &c : cs) readFromBuffer(c, zero);
}

// wgmma dots of the body whose result the yield passes back as iter arg X
// (its only reader): the dot runs on past the loop's back edge. When X has
// readers in the body other than the dot itself (attention's rescaling
// acc * alpha before acc += dot(p, v)), X = dot_wait(X) goes before the
// first of them, after the next iteration's earlier dots have been issued.
// A carried value that the body reads before its first wgmma dot (fla's state h, stored and
// cast for w @ h at the top of each iteration) would be waited for right there: such a dot is
// not made async (nothing would run beside it, and the copies would go a stage less far ahead).
std::vector<Operation *> LoopPipeliner::findAsyncDots() {
  std::vector<Operation *> found;
  Operation *yield = body_->terminator();
  auto firstDot = std::find_if(body_->ops.begin(), body_->ops.end(), [](auto &op) { return isWgmmaDot(*op); });
  for (auto &op : body_->ops) {
    if (!isWgmmaDot(*op) || countUses(fn_.body, op->result()) != 1)
      continue;
    auto slot = std::find(yield->operands.begin(), yield->operands.end(), op->result());
    if (slot == yield->operands.end()) continue;
    Value *carried = body_->args.at(static_cast<size_t>(slot - yield->operands.begin()) + 1).get();
    bool readEarly = false;
    for (auto it = body_->ops.begin(); it != firstDot && !readEarly; ++it) readEarly = readsValue(**it, carried);
    if (readEarly) continue;
    if (op->operand(2) != carried) waitBeforeFirstReader(carried);
    op->attrs["async"] = int64_t{1};
    found.push_back(op.get());
  }
  return found;
}

void LoopPipeliner::waitBeforeFirstReader(Value *carried) {
  auto first = std::find_if(body_->ops.begin(), body_->ops.end(),
                            [&](auto &op) { return readsValue(*op, carried); });
  if (first == body_->ops.end()) return;
  Builder b(body_);
  b.setInsertionPoint(body_, first);
  b.setLoc((*first)->loc);
  Value *waited = b.op(OpCode::DotWait, {carried}, carried->type);
  waited->layout = carried->layout;
  replaceUsesExcept(*body_, carried, waited, waited->definingOp);
}

// After the loop: r = dot_wait(loop result) for the async dot's accumulator.
void LoopPipeliner::waitAfterLoop(Operation &dot) {
  Operation *yield = body_->terminator();
  auto slot = std::find(yield->operands.begin(), yield->operands.end(), dot.result());
  Value *result = loop_.result(static_cast<unsigned>(slot - yield->operands.begin()));
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, std::next(positionOf(loop_)));
  b.setLoc(dot.loc);
  Value *waited = b.op(OpCode::DotWait, {result}, result->type);
  waited->layout = result->layout;
  replaceUsesExcept(fn_.body, result, waited, waited->definingOp);
}

// `op` converts to a #dot_op the result of a `code` op of the body that
// nothing else reads: that op, else null.
Operation *LoopPipeliner::loadFeedingDotOperand(Operation &op, OpCode code) {
  if (op.code != OpCode::ConvertLayout || !op.result()->layout ||
      op.result()->layout->kind != Layout::Kind::DotOperand)
    return nullptr;
  return readOnceInBody(op.operand(0), code);
}

// The `code` op of the body that defines v, which nothing else reads; else null.
Operation *LoopPipeliner::readOnceInBody(Value *v, OpCode code) {
  Operation *def = v->definingOp;
  if (!def || def->code != code || def->parent != body_ || countUses(fn_.body, v) != 1) return nullptr;
  return def;
}

Value *LoopPipeliner::clone(Value *v, Builder &b, const Shift &shift, std::map<const Value *, Value *> &memo) {
  if (!definedInBody(v)) return shift.outside ? shift.outside(v) : v;
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  Value *out;
  if (v == body_->args[0].get()) {
    out = shift.iv;
  } else if (v->ownerBlock) {
    out = shift.iterArg(v);
  } else {
    std::vector<Value *> operands;
    for (Value *o : v->definingOp->operands) operands.push_back(clone(o, b, shift, memo));
    out = v->definingOp->code == OpCode::Load ? cloneLoadAhead(v, operands, b, shift) : copyOf(v, operands, b);
  }
  return memo[v] = out;
}

// v's defining op again at b, on `operands`.
Value *LoopPipeliner::copyOf(const Value *v, const std::vector<Value *> &operands, Builder &b) {
  const Operation &op = *v->definingOp;
  b.setLoc(op.loc);
  Value *out = b.create(op.code, operands, {v->type}, op.attrs)->result();
  out->layout = v->layout;
  out->nameHint = v->nameHint;
  return out;
}

// Iter arg `arg` advanced `times` iterations from `base` (its value now).
Value *LoopPipeliner::advance(Value *base, Value *arg, int64_t times, Builder &b, const Shift &shift,
                              std::map<const Value *, Value *> &memo) {
  if (times == 0) return base;
  Operation *inc = advanceOf(arg);
  Value *by = clone(inc->operand(1), b, shift, memo);
  if (times > 1) {
    Value *n = b.intConstant(times, by->type);
    n->layout = by->layout;
    Value *scaled = b.op(OpCode::Mul, {by, n}, by->type);
    scaled->layout = by->layout;
    by = scaled;
  }
  Value *r = b.op(inc->code, {base, by}, inc->result()->type, inc->attrs);
  r->layout = inc->result()->layout;
  return r;
}

// `stages` tiles of the block c stages (transposed by trans where it has one).
Type LoopPipeliner::ringType(const Candidate &c, unsigned stages) {
  const Type &t = (c.trans ? c.trans : c.load)->result()->type;
  return t.withShape({stages, t.shape[0], t.shape[1]});
}

void LoopPipeliner::allocateBuffers(std::vector<Candidate> &cs, unsigned stages) {
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, positionOf(loop_));
  for (Candidate &c : cs) {
    const Type &t = (c.trans ? c.trans : c.load)->result()->type;
    b.setLoc(c.load->loc);
    c.buffer = b.op(OpCode::LocalAlloc, {}, ringType(c, stages));
    allocations_.push_back(c.buffer);
    // B (and 16-bit A of wgmma: only 16-bit wgmma reads a transposed A) read along
    // its dim 0 (a column-major matrix, K^T through strides) is stored transposed,
    // so that cp.async still moves 16-byte runs; so is B = trans(block) of a block
    // read along its dim 1. The TMA unit writes blocks as they are: transposed when
    // trans makes B of them.
    const bool transposableA = c.mmaVersion == 3 && bitWidth(t.scalar) == 16;
    const bool alongDim0 = c.load->code == OpCode::Load && (c.opIdx == 1 || transposableA) &&
                           readAlongDim0(*c.load);
    const bool transposed = c.load->code == OpCode::DescLoad ? c.trans != nullptr : (c.trans != nullptr) != alongDim0;
    c.buffer->layout = Layout::sharedOperandTile(c.mmaVersion, c.opIdx, t.shape[transposed ? 0 : 1],
                                                 bitWidth(t.scalar), transposed, columnGroups(c));
  }
}

// The warpgroups that split the N of the dots reading c's tile (Layout.h: a B tile stores
// each one's columns together), 1 when they do not.
unsigned LoopPipeliner::columnGroups(const Candidate &c) {
  const LayoutRef &mma = c.convert->result()->layout->parent;
  return c.mmaVersion == 3 && c.opIdx == 1 && mma && mma->warpsPerCTA.size() == 2 ? mma->warpsPerCTA[1] : 1;
}

// The copies (emitCopies or emitTmaCopies) of the first `count` iterations,
// iteration d into stage d, before the loop.
void LoopPipeliner::emitPrologue(const std::vector<Candidate> &cs, unsigned count, CopyEmitter emit) {
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, positionOf(loop_));
  b.setLoc(loop_.loc);
  for (unsigned d = 0; d < count; ++d) {
    std::map<const Value *, Value *> memo;
    Shift shift;
    shift.iv = d == 0 ? loop_.operand(0)
                      : b.op(OpCode::Add, {loop_.operand(0), b.intConstant(d * step_, ivType())}, ivType());
    shift.iterArg = [&, d](Value *arg) {
      return advance(loop_.operand(2 + arg->index), arg, d, b, shift, memo);
    };
    (this->*emit)(cs, b, shift, b.intConstant(d, Type(ScalarType::I32)));
    b.setLoc(loop_.loc);
  }
}

// stage + ahead mod stages, at b's insertion point.
Value *LoopPipeliner::stageAhead(Builder &b, Value *stage, int64_t ahead, unsigned stages) {
  const Type i32(ScalarType::I32);
  Value *sum = b.op(OpCode::Add, {stage, b.intConstant(ahead, i32)}, i32);
  Value *wraps = b.op(OpCode::Cmp, {sum, b.intConstant(stages, i32)}, Type(ScalarType::I1),
                      {{"predicate", std::string("ge")}});
  return b.op(OpCode::Select, {wraps, b.op(OpCode::Sub, {sum, b.intConstant(stages, i32)}, i32), sum}, i32);
}

// In the body at b's insertion point: the copies of iteration iv + ahead
// into `target` (stageAhead(stage, ahead, S)).
void LoopPipeliner::emitCopiesAhead(const std::vector<Candidate> &cs, Builder &b, Value *target, int64_t ahead, CopyEmitter emit) {
  std::map<const Value *, Value *> memo;
  Shift shift;
  shift.iv = b.op(OpCode::Add, {body_->args[0].get(), b.intConstant(ahead * step_, ivType())}, ivType());
  shift.iterArg = [&](Value *arg) { return advance(arg, arg, ahead, b, shift, memo); };
  (this->*emit)(cs, b, shift, target);
}

// A new i32 iter arg starting at 0 (the caller adds its yield operand).
Value *LoopPipeliner::addIterArg(const Type &type, const std::string &name) {
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, positionOf(loop_));
  b.setLoc(loop_.loc);
  return appendIterArg(loop_, b.intConstant(0, type), name);
}

// loop's new iter arg starting at init: its operand, block argument and result.
Value *LoopPipeliner::appendIterArg(Operation &loop, Value *init, const std::string &name) {
  loop.operands.push_back(init);
  Value *arg = loop.region(0)->addArgument(init->type, name);
  auto result = std::make_unique<Value>();
  result->type = init->type;
  result->definingOp = &loop;
  result->index = static_cast<unsigned>(loop.results.size());
  loop.results.push_back(std::move(result));
  return arg;
}

Value *LoopPipeliner::addStageCounter(unsigned stages) {
  const Type i32(ScalarType::I32);
  Value *stage = addIterArg(i32, "stage");
  // stage + 1 mod stages, passed on by the yield
  Operation *yield = body_->terminator();
  Builder b(body_);
  b.setLoc(loop_.loc);
  b.setInsertionPoint(body_, positionOf(*yield));
  Value *plus = b.op(OpCode::Add, {stage, b.intConstant(1, i32)}, i32);
  Value *wrap = b.op(OpCode::Cmp, {plus, b.intConstant(stages, i32)}, Type(ScalarType::I1),
                     {{"predicate", std::string("eq")}});
  yield->operands.push_back(b.op(OpCode::Select, {wrap, b.intConstant(0, i32), plus}, i32));
  return stage;
}

void LoopPipeliner::readFromBuffer(Candidate &c, Value *stage) {
  Builder b(body_);
  b.setInsertionPoint(body_, positionOf(*c.convert));
  b.setLoc(c.convert->loc);
  Value *old = c.convert->result();
  Value *fromShared = b.op(OpCode::LocalLoad, {c.buffer, stage}, old->type);
  fromShared->layout = old->layout;
  replaceAllUsesWith(fn_.body, old, fromShared);
  body_->ops.erase(positionOf(*c.convert));
  for (auto [convert, transposed] : c.views) {
    Builder at(body_);
    at.setInsertionPoint(body_, positionOf(*convert));
    at.setLoc(convert->loc);
    Value *view = convert->result();
    std::map<std::string, Attribute> attrs;
    if (transposed) attrs["transpose"] = int64_t{1};
    Value *read = at.op(OpCode::LocalLoad, {c.buffer, stage}, view->type, attrs);
    read->layout = view->layout;
    replaceAllUsesWith(fn_.body, view, read);
    body_->ops.erase(positionOf(*convert));
  }
}

void LoopPipeliner::emitEpilogue(bool cpAsync) {
  // With a producer around an enclosing loop, the ring lives until that loop is done.
  Operation &last = specialize_ && outer_ ? *outer_ : loop_;
  Builder b(last.parent);
  b.setInsertionPoint(last.parent, std::next(positionOf(last)));
  b.setLoc(loop_.loc);
  // Copies past the end are still writing zeros: let them land before the
  // space is handed to whatever comes next.
  if (cpAsync) b.create(OpCode::AsyncWait, {}, {}, {{"pending", int64_t{0}}});
  // With a producer, it too (arriving as it exits) before the mbarriers are invalidated.
  std::map<std::string, Attribute> attrs;
  if (specialize_) attrs["join_producer"] = int64_t{1};
  b.create(OpCode::Barrier, {}, {}, attrs);
  // Freed in reverse order of allocation (codegen stacks them).
  for (auto it = allocations_.rbegin(); it != allocations_.rend(); ++it) b.create(OpCode::LocalDealloc, {*it}, {});
}

} // namespace tessera::passes::software_pipeline
