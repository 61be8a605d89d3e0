// The pipeline pass's machinery (SoftwarePipeline.cpp describes the pass): a LoopPipeliner
// rewrites one loop. Its members are defined along the pass's ideas:
//   SoftwarePipeline.cpp          run(): the steps, in order, and the pass
//   SoftwarePipelineLoop.cpp      what every ring needs: address math cloned at another
//                                 iteration (Shift, clone, advance), buffers, stage counters,
//                                 prologue and epilogue, invariant tiles, async wgmma dots
//   SoftwarePipelineCpAsync.cpp   cp.async rings (loads staged by cp.async)
//   SoftwarePipelineTma.cpp       TMA rings (desc_loads staged by the TMA unit, mbarriers)
//   SoftwarePipelineProducer.cpp  warp specialisation: a producer warpgroup issues the TMA copies
//   SoftwarePipelinePrefetch.cpp  small loads feeding dots through other work, read an iteration ahead
//   SoftwarePipelineOperandBuffers.cpp  one-stage buffers for wgmma B operands computed in the loop
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::passes::software_pipeline {

using namespace ir;

// Cheap ops without side effects that address computations are made of.
bool isClonable(const Operation &op);

// Warps of the producer warpgroup (buildProducer).
constexpr unsigned kProducerWarps = 4;

struct Candidate {
  Operation *load; // load, or desc_load (staged by the TMA unit)
  Operation *convert;
  unsigned opIdx;
  unsigned mmaVersion; // of the dots it feeds
  Value *buffer = nullptr;
  Operation *trans = nullptr; // (desc_)load -> trans -> B: the block's rows are B's columns
  Value *mbarriers = nullptr; // TMA: its ring's "full" mbarriers
  // More readers of the same block (the attention backward's Q^T and dO: B of one dot as they
  // are and, through trans, of another): each convert reads the one stage too, transposed
  // (local_load {transpose = 1}) where its route and the primary's differ by a trans.
  std::vector<std::pair<Operation *, bool>> views;
};

// Blocks staged by the TMA unit with one stage counter, one phase and one
// set of mbarriers.
struct TmaRing {
  std::vector<Candidate> cs;
  unsigned stages;
  unsigned ahead = 0; // iterations its copies run ahead (refillRings)
  Value *full = nullptr, *empty = nullptr; // mbarriers: a stage has landed / been read by every warp
  Value *stage = nullptr, *phase = nullptr;
};

class LoopPipeliner {
public:
  LoopPipeliner(Function &fn, Operation &loop, unsigned stages)
      : fn_(fn), loop_(loop), body_(loop.region(0)), stages_(stages) {}

  // Pipelines the loop; false when nothing in it is staged (SoftwarePipeline.cpp).
  bool run();

private:
  // Where cloned address computations take the loop variable and iter args from.
  struct Shift {
    Value *iv;
    std::function<Value *(Value *arg)> iterArg;
    std::function<Value *(Value *v)> outside; // values from before the loop (null: as they are)
  };
  // The copies of one iteration into a stage: emitCopies (cp.async) or emitTmaCopies.
  using CopyEmitter = void (LoopPipeliner::*)(const std::vector<Candidate> &, Builder &, const Shift &, Value *);

  Function &fn_;
  Operation &loop_;
  Block *body_;
  unsigned stages_;
  unsigned ahead_ = stages_ - 1; // iterations the copies run ahead
  Operation *copiesAfter_ = nullptr; // the async GEMM dot the cp.async copies follow (lateCopyDot)
  int64_t step_ = 0;
  std::vector<Value *> allocations_; // buffers and mbarriers, in the order allocated
  Operation *firstDot_ = nullptr;    // the body's first dot that reads a TMA-staged block
  bool specialize_ = false;          // a producer warpgroup issues the TMA copies (buildProducer)
  Operation *outer_ = nullptr;       // with a producer: the loop around this one, if any
  bool pingpong_ = false;            // two consumer groups take turns over outer_'s tiles (alternateTiles)
  Value *group_ = nullptr, *innerTrips_ = nullptr; // with pingpong_: the consumer group, the K loop's trip count
  Operation *loopBeingBuilt_ = nullptr; // buildProducerLoop's loop (outside values go before it)
  std::map<const Value *, bool> clonable_, invariant_;
  bool cloneLoads_ = false;                // canClone takes loads (the cp.async rings' address math)
  std::optional<bool> bodyWritesMemory_;   // global memory, decided before the pass changes the body

  Type ivType() const { return loop_.operand(0)->type; }
  // Programs of more than one warpgroup free a TMA stage through "empty" mbarriers (allocateMbarriers).
  bool hasEmptyMbarriers() const { return specialize_ || fn_.numWarps > 4; }
  // With a producer: the body of the loop around this one (null without one).
  Block *outerBody() const { return outer_ ? outer_->region(0) : nullptr; }

  // What every ring needs (SoftwarePipelineLoop.cpp).
  bool constantStep();
  bool definedInBody(const Value *v) const;
  Operation *advanceOf(const Value *arg) const;
  static unsigned columnGroups(const Candidate &c);
  bool isInvariant(const Value *v);
  bool canClone(const Value *v);
  bool isLoadThatMayMoveAhead(const Operation &op);
  Value *cloneLoadAhead(const Value *v, std::vector<Value *> operands, Builder &b, const Shift &shift);
  unsigned feedsOnlyMmaDots(Operation &convert);
  static bool anyWgmma(const std::vector<Candidate> &cs);
  static bool readAlongDim0(const Operation &load);
  static bool stageableType(const Type &t);
  std::vector<Candidate> findInvariantOperands();
  std::pair<Value *, Operation *> earlierInvariantTile(Value *x, const LayoutRef &layout);
  void stageInvariants(std::vector<Candidate> &cs);
  std::vector<Operation *> findAsyncDots();
  void waitBeforeFirstReader(Value *carried);
  void waitAfterLoop(Operation &dot);
  Operation *loadFeedingDotOperand(Operation &op, OpCode code);
  Operation *readOnceInBody(Value *v, OpCode code);
  Value *clone(Value *v, Builder &b, const Shift &shift, std::map<const Value *, Value *> &memo);
  static Value *copyOf(const Value *v, const std::vector<Value *> &operands, Builder &b);
  Value *advance(Value *base, Value *arg, int64_t times, Builder &b, const Shift &shift,
                 std::map<const Value *, Value *> &memo);
  static Type ringType(const Candidate &c, unsigned stages);
  void allocateBuffers(std::vector<Candidate> &cs, unsigned stages);
  void emitPrologue(const std::vector<Candidate> &cs, unsigned count, CopyEmitter emit);
  Value *stageAhead(Builder &b, Value *stage, int64_t ahead, unsigned stages);
  void emitCopiesAhead(const std::vector<Candidate> &cs, Builder &b, Value *target, int64_t ahead, CopyEmitter emit);
  Value *addIterArg(const Type &type, const std::string &name);
  static Value *appendIterArg(Operation &loop, Value *init, const std::string &name);
  Value *addStageCounter(unsigned stages);
  void readFromBuffer(Candidate &c, Value *stage);
  void emitEpilogue(bool cpAsync);

  // cp.async rings (SoftwarePipelineCpAsync.cpp).
  std::vector<Candidate> findCandidates();
  std::vector<Candidate> findSharedBlocks();
  bool fitsCpAsyncRing(Operation &load);
  void emitCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage);
  void emitLoopHead(const std::vector<Candidate> &cs, Value *stage);
  Operation *lateCopyDot(const std::vector<Candidate> &cs, const std::vector<Operation *> &asyncDots);

  // TMA rings (SoftwarePipelineTma.cpp).
  std::vector<Candidate> findTmaCandidates();
  Operation *transposedBFeeding(Operation &op);
  void allocateMbarriers(TmaRing &r);
  void emitTmaCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage);
  std::vector<TmaRing> formRings(const std::vector<Candidate> &tma, const std::vector<Candidate> &others);
  bool doneAtFirstDot(const TmaRing &r) const;
  static uint64_t alignedBytes(const Type &t);
  uint64_t ringBytes(const TmaRing &r) const;
  unsigned programsPerSm(uint64_t bytes) const;
  Value *addPhaseCounter(Value *stage, unsigned stages);
  void waitForRing(const TmaRing &r, bool atTop);
  void refillRings(const std::vector<TmaRing> &rings);
  void emitEmptyWait(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot);
  Builder bodyBuilder(std::list<std::unique_ptr<Operation>>::iterator at);
  void emitRelease(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot);
  bool isReadByAsyncFirstDot(const TmaRing &r, const std::vector<TmaRing> &rings) const;
  static bool releasedTheStepAfter(const TmaRing &r, bool readByAsyncFirstDot);
  Value *ivAtLeast(Builder &at, int64_t iterations);

  // Loads read one iteration ahead into registers (SoftwarePipelinePrefetch.cpp).
  bool feedsDot(Value *v);
  std::vector<Operation *> findPrefetchLoads(const std::vector<Candidate> &staged);
  void prefetchIntoRegisters(const std::vector<Operation *> &loads);

  // wgmma B operands computed in the body, each in its own buffer (SoftwarePipelineOperandBuffers.cpp).
  void bufferRegisterOperands();

  // The producer warpgroup (SoftwarePipelineProducer.cpp).
  bool wantsProducer();
  bool computableOutside(const Value *v);
  bool producerComputes(const Value *v);
  bool producerCanCompute(const std::vector<Candidate> &tma);
  Value *cloneOutside(Value *v, Builder &b, std::map<const Value *, Value *> &memo, Value *outerIv);
  void releaseStages(const std::vector<TmaRing> &rings);
  void carryRingsAcrossOuterLoop(const std::vector<TmaRing> &rings);
  bool wantsPingpong();
  bool dependsOnOuterIv(const Value *v) const;
  std::pair<Value *, Value *> skipRing(Builder &b, Value *stage, Value *phase, Value *positions, unsigned stages);
  Value *tripCount(Builder &b, Value *lb, Value *ub, Value *step);
  void alternateTiles();
  void buildProducer(const std::vector<TmaRing> &rings);
  Operation *buildProducerLoop(const std::vector<TmaRing> &rings, Builder &b, const std::vector<Value *> &inits,
                               std::map<const Value *, Value *> &outsideMemo, Value *outerIv);
};

} // namespace tessera::passes::software_pipeline
