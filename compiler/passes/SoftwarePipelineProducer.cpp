// The pipeline pass's warp specialisation (SoftwarePipeline.cpp describes it): for
// tl.range(..., warp_specialize=True) a producer warpgroup issues the TMA rings' copies.
#include "compiler/passes/SoftwarePipelineLoop.h"

namespace tessera::passes::software_pipeline {

// tl.range(..., warp_specialize=True) on a loop of the kernel's top level, or directly in
// one loop of the top level (a persistent kernel's tile loop; the ring then runs across its
// iterations): a producer runs from the kernel's start. The first such loop; the consumers
// are whole warpgroups.
bool LoopPipeliner::wantsProducer() {
  if (!(loop_.hasAttr("warp_specialize") && loop_.intAttr("warp_specialize")) || fn_.numWarps % 4 != 0)
    return false;
  Operation *outer = loop_.parent == &fn_.body ? nullptr : loop_.parent->parentOp;
  if (loop_.parent != &fn_.body && (!outer || outer->code != OpCode::For || outer->parent != &fn_.body)) return false;
  bool taken = false;
  walk(fn_.body, [&](Operation &op) { taken = taken || op.code == OpCode::WarpSpecialize; });
  if (taken) return false;
  outer_ = outer;
  return true;
}

// v can be computed by the producer outside the loop: a parameter, the enclosing loop's
// variable, or cheap pure ops of the top level (or of the enclosing loop's body) on such values.
bool LoopPipeliner::computableOutside(const Value *v) {
  if (v->ownerBlock) return v->ownerBlock == &fn_.body || (outer_ && v == outerBody()->args[0].get());
  const Operation *d = v->definingOp;
  if (!d || !(d->parent == &fn_.body || (outer_ && d->parent == outerBody())) || !isClonable(*d)) return false;
  for (const Value *o : d->operands)
    if (!computableOutside(o)) return false;
  return true;
}

// v (of the body, clonable: canClone) can be computed by the producer: what it is made of
// from outside the loop is computableOutside.
bool LoopPipeliner::producerComputes(const Value *v) {
  if (!definedInBody(v)) return computableOutside(v);
  if (v == body_->args[0].get()) return true;
  if (v->ownerBlock) {
    const Operation *inc = advanceOf(v);
    return computableOutside(loop_.operand(2 + v->index)) && producerComputes(inc->operand(1));
  }
  for (const Value *o : v->definingOp->operands)
    if (!producerComputes(o)) return false;
  return true;
}

bool LoopPipeliner::producerCanCompute(const std::vector<Candidate> &tma) {
  for (unsigned i = 0; i < 3; ++i)
    if (!computableOutside(loop_.operand(i)) || (outer_ && !computableOutside(outer_->operand(i)))) return false;
  for (const Candidate &c : tma)
    for (size_t i = 1; i < c.load->operands.size(); ++i)
      if (!producerComputes(c.load->operand(i))) return false;
  return true;
}

// v (computableOutside), computed at b's insertion point; the enclosing loop's variable is `outerIv`.
Value *LoopPipeliner::cloneOutside(Value *v, Builder &b, std::map<const Value *, Value *> &memo, Value *outerIv) {
  if (v->ownerBlock) return v->ownerBlock == &fn_.body ? v : outerIv;
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  std::vector<Value *> operands;
  for (Value *o : v->definingOp->operands) operands.push_back(cloneOutside(o, b, memo, outerIv));
  return memo[v] = copyOf(v, operands, b);
}

// With a producer the consumers only wait for stages to land and release them: every
// thread arrives on a stage's empty mbarrier once done with it (emitRelease), and the
// producer waits there before refilling it.
void LoopPipeliner::releaseStages(const std::vector<TmaRing> &rings) {
  Builder b = bodyBuilder(std::next(positionOf(*firstDot_)));
  Builder end = bodyBuilder(positionOf(*body_->terminator()));
  for (const TmaRing &r : rings) {
    Value *previous = stageAhead(b, r.stage, r.stages - 1, r.stages);
    emitRelease(r, b, end, previous, isReadByAsyncFirstDot(r, rings));
  }
}

// Inside an enclosing loop the ring runs on across its iterations: each ring's stage and
// phase pass through it (the next tile's first blocks go where this tile's last ones
// left off, so the producer fetches them while the consumers store this tile), and the
// stage a ring releases an iteration late (read by an async dot) is released after the
// loop, once its dot has been waited for.
void LoopPipeliner::carryRingsAcrossOuterLoop(const std::vector<TmaRing> &rings) {
  Builder before(&fn_.body), after(outerBody());
  before.setInsertionPoint(&fn_.body, positionOf(*outer_));
  before.setLoc(outer_->loc);
  Operation *yield = outerBody()->terminator();
  const Type i32(ScalarType::I32);
  for (const TmaRing &r : rings)
    for (Value *counter : {r.stage, r.phase}) {
      Value *carried = appendIterArg(*outer_, before.intConstant(0, i32), counter->nameHint);
      loop_.operands[2 + counter->index] = carried;
      yield->operands.push_back(loop_.result(counter->index - 1));
    }
  auto at = std::next(positionOf(loop_));
  while (at != outerBody()->ops.end() && (*at)->code == OpCode::DotWait) ++at;
  after.setInsertionPoint(outerBody(), at);
  after.setLoc(loop_.loc);
  Value *ran = after.op(OpCode::Cmp, {loop_.operand(0), loop_.operand(1)}, Type(ScalarType::I1),
                        {{"predicate", std::string("lt")}});
  for (const TmaRing &r : rings) {
    if (!releasedTheStepAfter(r, isReadByAsyncFirstDot(r, rings))) continue;
    Value *last = stageAhead(after, loop_.result(r.stage->index - 1), r.stages - 1, r.stages);
    after.create(OpCode::MbarrierArrive, {r.empty, last, ran}, {});
  }
}

// The producer's program, at the kernel's start (codegen runs it on one more warpgroup,
// which exits after it; the rest are the consumers):
//   warp_specialize {
//     [for the enclosing loop's iv ... iter_args(stage, phase per ring, count):]
//       lb, ub, step, the copies' operands from outside the loop: recomputed from parameters
//       for iv in [lb, ub) iter_args(stage, phase per ring, count, the advancing iter args the copies read):
//         per ring: mbarrier_wait(empty, stage, phase ^ 1, count >= S)  -- its last reader is done
//                   async_tma_copy(iteration iv into stage)
//   }
// count numbers the copies' iterations (the first S fill empty stages). The buffers and
// mbarriers move to the kernel's start, before it (the producer uses them from its first
// copy); the rest of the kernel is the consumers'.
void LoopPipeliner::buildProducer(const std::vector<TmaRing> &rings) {
  auto at = fn_.body.ops.begin();
  for (Value *allocation : allocations_) {
    Operation *op = allocation->definingOp;
    fn_.body.ops.splice(at, op->parent->ops, positionOf(*op));
    op->parent = &fn_.body;
  }
  Builder b(&fn_.body);
  b.setInsertionPoint(&fn_.body, at);
  b.setLoc(loop_.loc);
  Operation *producer = b.create(OpCode::WarpSpecialize, {}, {}, {{"producer_warps", int64_t{kProducerWarps}}}, 1);
  Block *region = producer->region(0);
  Builder pb(region);
  pb.setLoc(loop_.loc);
  const Type i32(ScalarType::I32);
  std::vector<Value *> inits; // stage and phase per ring, then the count
  for (size_t i = 0; i < 2 * rings.size() + 1; ++i) inits.push_back(pb.intConstant(0, i32));
  if (!outer_) {
    std::map<const Value *, Value *> memo;
    buildProducerLoop(rings, pb, inits, memo, nullptr);
    pb.create(OpCode::Yield, {}, {});
    return;
  }
  std::map<const Value *, Value *> memo;
  std::vector<Value *> bounds;
  for (unsigned i = 0; i < 3; ++i) bounds.push_back(cloneOutside(outer_->operand(i), pb, memo, nullptr));
  Operation *tiles = pb.create(OpCode::For, bounds, {}, {}, 1);
  Block *body = tiles->region(0);
  Value *outerIv = body->addArgument(outer_->operand(0)->type, outerBody()->args[0]->nameHint);
  std::vector<Value *> carried;
  for (Value *init : inits) carried.push_back(appendIterArg(*tiles, init, ""));
  pb.create(OpCode::Yield, {}, {});
  Builder tb(body);
  tb.setLoc(outer_->loc);
  std::map<const Value *, Value *> tileMemo;
  Operation *inner = buildProducerLoop(rings, tb, carried, tileMemo, outerIv);
  std::vector<Value *> next;
  for (auto &r : inner->results)
    if (next.size() < carried.size()) next.push_back(r.get());
  tb.create(OpCode::Yield, next, {});
}

// The producer's copy loop at b (buildProducer): iter args start from `inits` (stage and phase
// per ring, count); outside values are recomputed at b (memo), the enclosing loop's variable
// being `outerIv`.
Operation *LoopPipeliner::buildProducerLoop(const std::vector<TmaRing> &rings, Builder &b,
                                            const std::vector<Value *> &inits,
                                            std::map<const Value *, Value *> &outsideMemo, Value *outerIv) {
  Block *where = b.block();
  auto outside = [&, where](Value *v) {
    Builder at(where);
    at.setInsertionPoint(where, positionOf(*loopBeingBuilt_));
    return cloneOutside(v, at, outsideMemo, outerIv);
  };
  std::vector<Value *> bounds;
  for (unsigned i = 0; i < 3; ++i) bounds.push_back(cloneOutside(loop_.operand(i), b, outsideMemo, outerIv));
  Operation *loop = b.create(OpCode::For, bounds, {}, {}, 1);
  loopBeingBuilt_ = loop;
  Block *body = loop->region(0);
  Value *iv = body->addArgument(ivType(), body_->args[0]->nameHint);
  std::vector<Value *> args;
  for (size_t i = 0; i < inits.size(); ++i) args.push_back(appendIterArg(*loop, inits[i], i + 1 == inits.size() ? "count" : ""));
  const Type i32(ScalarType::I32), i1(ScalarType::I1);
  Value *count = args.back();

  Builder lbld(body);
  lbld.setLoc(loop_.loc);
  std::map<const Value *, Value *> memo;
  std::vector<std::pair<Value *, Value *>> advancing; // the loop's advancing iter args and the producer's
  Shift shift;
  shift.iv = iv;
  shift.outside = outside;
  shift.iterArg = [&](Value *arg) {
    for (auto &[theirs, mine] : advancing)
      if (theirs == arg) return mine;
    advancing.emplace_back(arg, appendIterArg(*loop, outside(loop_.operand(2 + arg->index)), arg->nameHint));
    return advancing.back().second;
  };
  for (size_t i = 0; i < rings.size(); ++i) {
    const TmaRing &r = rings[i];
    Value *stage = args[2 * i], *phase = args[2 * i + 1];
    Value *refill = lbld.op(OpCode::Cmp, {count, lbld.intConstant(r.stages, i32)}, i1, {{"predicate", std::string("ge")}});
    Value *parity = lbld.op(OpCode::Xor, {phase, lbld.intConstant(1, i32)}, i32);
    lbld.create(OpCode::MbarrierWait, {r.empty, stage, parity, refill}, {});
    emitTmaCopies(r.cs, lbld, shift, stage);
    lbld.setLoc(loop_.loc);
  }
  std::vector<Value *> next;
  for (size_t i = 0; i < rings.size(); ++i) {
    Value *stage = args[2 * i], *phase = args[2 * i + 1];
    // One compare for both (the consumers' counters are made separately, addStageCounter).
    Value *plus = lbld.op(OpCode::Add, {stage, lbld.intConstant(1, i32)}, i32);
    Value *last = lbld.op(OpCode::Cmp, {stage, lbld.intConstant(rings[i].stages - 1, i32)}, i1,
                          {{"predicate", std::string("eq")}});
    next.push_back(lbld.op(OpCode::Select, {last, lbld.intConstant(0, i32), plus}, i32));
    next.push_back(lbld.op(OpCode::Xor, {phase, lbld.op(OpCode::Cast, {last}, i32)}, i32));
  }
  next.push_back(lbld.op(OpCode::Add, {count, lbld.intConstant(1, i32)}, i32));
  for (auto &[theirs, mine] : advancing) next.push_back(advance(mine, theirs, 1, lbld, shift, memo));
  lbld.create(OpCode::Yield, next, {});
  loopBeingBuilt_ = nullptr;
  return loop;
}

} // namespace tessera::passes::software_pipeline
