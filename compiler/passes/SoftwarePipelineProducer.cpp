// The pipeline pass's warp specialisation (SoftwarePipeline.cpp describes it): for
// tl.range(..., warp_specialize=True) a producer warpgroup issues the TMA rings' copies.
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <tuple>

namespace tessera::passes::software_pipeline {

// tl.range(..., warp_specialize=True) on a loop of the kernel's top level, or directly in
// one loop of the top level (a persistent kernel's tile loop; the ring then runs across its
// iterations): a producer runs from the kernel's start. The first such loop; the consumers
// are whole warpgroups. warp_specialize=True on the tile loop itself asks for ping-pong
// consumers (wantsPingpong), which need the producer too.
bool LoopPipeliner::wantsProducer() {
  const auto flagged = [](const Operation &op) { return op.hasAttr("warp_specialize") && op.intAttr("warp_specialize"); };
  if (fn_.numWarps % 4 != 0) return false;
  Operation *outer = loop_.parent == &fn_.body ? nullptr : loop_.parent->parentOp;
  if (loop_.parent != &fn_.body && (!outer || outer->code != OpCode::For || outer->parent != &fn_.body)) return false;
  if (!flagged(loop_) && !(outer && flagged(*outer) && fn_.numWarps == 4)) return false;
  bool taken = false;
  walk(fn_.body, [&](Operation &op) { taken = taken || op.code == OpCode::WarpSpecialize; });
  if (taken) return false;
  outer_ = outer;
  pingpong_ = wantsPingpong();
  if (flagged(loop_) || pingpong_) return true;
  outer_ = nullptr;
  return false;
}

// Ping-pong (CUTLASS's and FlashAttention-3's): warp_specialize=True on a persistent kernel's
// tile loop whose K loop takes a producer, with 4 warps: the program is compiled for one
// consumer warpgroup and launched with two, which take alternate tiles (group g the tiles
// lb + (2i + g) * step) and turns at the K loop, so one group's epilogue runs while the other's
// wgmmas do (alternateTiles). Every tile's K loop must have the same trip count (each group
// skips the other's stages of the ring), and the tile loop a constant positive step.
bool LoopPipeliner::wantsPingpong() {
  if (!outer_ || fn_.numWarps != 4 || !(outer_->hasAttr("warp_specialize") && outer_->intAttr("warp_specialize")))
    return false;
  const Operation *step = outer_->operand(2)->definingOp;
  if (!step || step->code != OpCode::Constant || step->isFloatConstant() || step->intAttr("value") <= 0) return false;
  for (unsigned i = 0; i < 2; ++i)
    if (!computableOutside(loop_.operand(i)) || dependsOnOuterIv(loop_.operand(i))) return false;
  return computableOutside(outer_->operand(0)) && computableOutside(outer_->operand(1));
}

bool LoopPipeliner::dependsOnOuterIv(const Value *v) const {
  if (v->ownerBlock) return v->ownerBlock != &fn_.body;
  for (const Value *o : v->definingOp->operands)
    if (dependsOnOuterIv(o)) return true;
  return false;
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
  if (pingpong_) {
    group_ = before.op(OpCode::ConsumerGroup, {}, i32);
    std::map<const Value *, Value *> memo;
    Value *lb = cloneOutside(loop_.operand(0), before, memo, nullptr);
    Value *ub = cloneOutside(loop_.operand(1), before, memo, nullptr);
    innerTrips_ = tripCount(before, lb, ub, cloneOutside(loop_.operand(2), before, memo, nullptr));
  }
  Builder atYield(outerBody());
  atYield.setInsertionPoint(outerBody(), positionOf(*yield));
  atYield.setLoc(loop_.loc);
  for (const TmaRing &r : rings) {
    // With ping-pong group 1 starts where group 0's first tile ends, and each group skips
    // the other's tile after its own.
    Value *stage0 = before.intConstant(0, i32), *phase0 = before.intConstant(0, i32);
    if (pingpong_)
      std::tie(stage0, phase0) = skipRing(before, stage0, phase0, before.op(OpCode::Mul, {group_, innerTrips_}, i32), r.stages);
    Value *stage = appendIterArg(*outer_, stage0, r.stage->nameHint);
    Value *phase = appendIterArg(*outer_, phase0, r.phase->nameHint);
    loop_.operands[2 + r.stage->index] = stage;
    loop_.operands[2 + r.phase->index] = phase;
    Value *nextStage = loop_.result(r.stage->index - 1), *nextPhase = loop_.result(r.phase->index - 1);
    if (pingpong_) std::tie(nextStage, nextPhase) = skipRing(atYield, nextStage, nextPhase, innerTrips_, r.stages);
    yield->operands.push_back(nextStage);
    yield->operands.push_back(nextPhase);
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

// The ring's stage and phase `positions` copies further on (i32 values).
std::pair<Value *, Value *> LoopPipeliner::skipRing(Builder &b, Value *stage, Value *phase, Value *positions,
                                                    unsigned stages) {
  const Type i32(ScalarType::I32);
  Value *to = b.op(OpCode::Add, {stage, positions}, i32);
  Value *wraps = b.op(OpCode::Div, {to, b.intConstant(stages, i32)}, i32);
  Value *flip = b.op(OpCode::And, {wraps, b.intConstant(1, i32)}, i32);
  return {b.op(OpCode::Rem, {to, b.intConstant(stages, i32)}, i32), b.op(OpCode::Xor, {phase, flip}, i32)};
}

// Iterations of `for iv in range(lb, ub, step)` (step > 0), as i32.
Value *LoopPipeliner::tripCount(Builder &b, Value *lb, Value *ub, Value *step) {
  const Type t = lb->type, i32(ScalarType::I32);
  Value *span = b.op(OpCode::Sub, {ub, lb}, t);
  Value *below = b.op(OpCode::Sub, {step, b.intConstant(1, t)}, t);
  Value *trips = b.op(OpCode::Div, {b.op(OpCode::Add, {span, below}, t), step}, t);
  Value *ran = b.op(OpCode::Cmp, {lb, ub}, Type(ScalarType::I1), {{"predicate", std::string("lt")}});
  trips = b.op(OpCode::Select, {ran, trips, b.intConstant(0, t)}, t);
  return t == i32 ? trips : b.op(OpCode::Cast, {trips}, i32);
}

// Ping-pong's consumers (wantsPingpong), after the producer is built from the tile loop as
// written (it fetches every tile, in order): group g runs the tiles lb + g * step, lb + (g + 2)
// * step, ... The groups take turns at the K loop with an ordered pair of named barriers
// (tl.pingpong_*'s: wait before it, pass after it), so they read the ring in the producer's
// order; group 1 lets group 0 go first, and the group that did not run the last K loop takes
// back the last pass (tiles of this program even: group 0).
void LoopPipeliner::alternateTiles() {
  const Type i32(ScalarType::I32), i1(ScalarType::I1);
  walk(fn_.body, [&](Operation &op) {
    if (op.code == OpCode::WarpSpecialize) op.attrs["consumer_groups"] = int64_t{2};
  });
  Builder before(&fn_.body);
  before.setInsertionPoint(&fn_.body, positionOf(*outer_));
  before.setLoc(outer_->loc);
  Value *lb = outer_->operand(0), *ub = outer_->operand(1), *step = outer_->operand(2);
  const Type t = lb->type;
  Value *tiles = tripCount(before, lb, ub, step);
  Value *group = group_->type == t ? group_ : before.op(OpCode::Cast, {group_}, t);
  outer_->operands[0] = before.op(OpCode::Add, {lb, before.op(OpCode::Mul, {group, step}, t)}, t);
  outer_->operands[2] = before.op(OpCode::Mul, {step, before.intConstant(2, t)}, t);
  before.create(OpCode::Barrier, {}, {}, {{"pingpong", std::string("start")}});

  Builder turn(outerBody());
  turn.setInsertionPoint(outerBody(), positionOf(loop_));
  turn.setLoc(loop_.loc);
  turn.create(OpCode::Barrier, {}, {}, {{"pingpong", std::string("wait")}});
  turn.setInsertionPoint(outerBody(), std::next(positionOf(loop_)));
  turn.create(OpCode::Barrier, {}, {}, {{"pingpong", std::string("pass")}});

  Builder end(&fn_.body);
  end.setInsertionPoint(&fn_.body, std::next(positionOf(*outer_)));
  end.setLoc(outer_->loc);
  Value *odd = end.op(OpCode::And, {tiles, end.intConstant(1, i32)}, i32);
  Value *takesBack = end.op(OpCode::Cmp, {odd, group_}, i1, {{"predicate", std::string("eq")}});
  end.create(OpCode::Barrier, {takesBack}, {}, {{"pingpong", std::string("wait")}});
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
