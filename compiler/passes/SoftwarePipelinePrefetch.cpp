// The pipeline pass's register prefetch (SoftwarePipeline.cpp describes the pass): a small load
// in a pipelined loop that is no dot operand itself but feeds a dot through other work (fla's
// chunk_gated_delta_rule_fwd_h: v in `v - w @ h`, the gates g and g_last that scale v and the
// state, all before `h += k^T @ v`) is read one iteration ahead into registers:
//
//   x0 = load(f(lb), mask & lb < ub)                 -- before the loop
//   for iv ... iter_args(..., x = x0):
//     ... uses of the load read x ...
//     x' = load(f(iv + s), mask & iv + s < ub)       -- after the body's other work
//     yield ..., x'
//
// Triton's pipeliner stages such loads with cp.async as it does the dot operands; here they
// stay in their layout and registers, so that their latency overlaps the next iteration's
// start (its copies' wait, stores and first dot) instead of stalling it where they are read.
// The load moves ahead of the stores of the iteration that reads it (as Triton's staged loads
// do): only a load from a kernel argument that nothing in the loop writes through is moved,
// and only small ones (kPrefetchBytes a thread in all; more where the carried state is small), in
// loops whose carried blocks (the
// accumulators) take less than kCarriedBytes a thread: the attention backward's dK/dV loop
// (two 64 x 64 f32 accumulators over 4 warps) spilled with its LSE and delta rows carried.
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <set>

namespace tessera::passes::software_pipeline {

namespace {

// Bytes a thread may hold for the prefetched values of one loop.
constexpr int64_t kPrefetchBytes = 64;
// ... and in a loop whose carried blocks take at most kSmallStateBytes a thread (a small-M GEMM's
// 16 x 16 accumulator), where the registers are free: GPTQ's small-M GEMM reads 256 x 16 blocks of
// weight words, zero words and scales (320 bytes a thread), which Triton stages with cp.async.
constexpr int64_t kSmallStateBytes = 64;
constexpr int64_t kPrefetchBytesSmallState = 384;
// Bytes a thread holds for the loop's carried blocks, from which on nothing is prefetched.
constexpr int64_t kCarriedBytes = 256;

int64_t bytesPerThread(const Type &t, int64_t threads) {
  const int64_t elementBytes = std::max<int64_t>(bitWidth(t.scalar) / 8, 1);
  return t.isBlock() ? (t.numElements() * elementBytes + threads - 1) / threads : elementBytes;
}

// The kernel argument a pointer is computed from (addptr's base, through shape ops and pointer
// blocks a loop carries and advances, `b_ptrs += BLOCK_K * stride`), or null.
const Value *rootArgument(const Value *ptr, const Block &kernelBody) {
  const Value *carried = nullptr; // a loop's pointer argument being followed to its update
  for (int depth = 0; ptr && depth < 64; ++depth) {
    if (ptr->ownerBlock == &kernelBody) return ptr;
    if (ptr->ownerBlock) {
      const Operation *loop = ptr->ownerBlock->parentOp;
      const Operation *yield = ptr->ownerBlock->terminator();
      if (!loop || loop->code != OpCode::For || ptr->index == 0 || !yield || yield->code != OpCode::Yield)
        return nullptr;
      if (carried == ptr) { // its update advances it: the root is its init's
        ptr = loop->operand(2 + ptr->index);
        carried = nullptr;
      } else if (!carried) {
        carried = ptr;
        ptr = yield->operand(ptr->index - 1);
      } else {
        return nullptr;
      }
      continue;
    }
    const Operation *def = ptr->definingOp;
    if (!def) return nullptr;
    switch (def->code) {
    case OpCode::AddPtr: case OpCode::Splat: case OpCode::Broadcast: case OpCode::ExpandDims:
    case OpCode::ConvertLayout: case OpCode::Hint:
      ptr = def->operand(0);
      break;
    default:
      return nullptr;
    }
  }
  return nullptr;
}

} // namespace

// Whether v reaches a dot of the body through the ops that use it there.
bool LoopPipeliner::feedsDot(Value *v) {
  std::set<const Value *> seen;
  std::vector<const Value *> work = {v};
  while (!work.empty() && seen.size() < 512) {
    const Value *x = work.back();
    work.pop_back();
    if (!seen.insert(x).second) continue;
    for (auto &op : body_->ops) {
      bool uses = false;
      for (const Value *o : op->operands) uses = uses || o == x;
      if (!uses) continue;
      if (op->code == OpCode::Dot) return true;
      for (auto &r : op->results) work.push_back(r.get());
    }
  }
  return false;
}

// Whether v is read as a dot operand (converted to a #dot_op layout): the dot stages such a block.
static bool isDotOperand(const Value *v, Block &body) {
  bool operand = false;
  walk(body, [&](Operation &op) {
    for (const Value *o : op.operands)
      operand = operand || (o == v && op.code == OpCode::ConvertLayout && op.result()->layout &&
                            op.result()->layout->kind == Layout::Kind::DotOperand);
  });
  return operand;
}

std::vector<Operation *> LoopPipeliner::findPrefetchLoads(const std::vector<Candidate> &staged) {
  std::vector<Operation *> found;
  std::set<const Operation *> ringLoads; // copied into the cp.async ring (through trans too)
  for (const Candidate &c : staged) ringLoads.insert(c.load);
  std::set<const Value *> written;
  bool unknownWrites = false;
  walk(*body_, [&](Operation &op) {
    if (!opEffectsKnown(op.code)) unknownWrites = true;
    if (!opWritesMemory(op.code) || opWritesSharedMemory(op.code)) return;
    const Value *root = op.operands.empty() ? nullptr : rootArgument(op.operand(0), fn_.body);
    if (root) written.insert(root);
    else unknownWrites = true;
  });
  if (unknownWrites) return found;
  const int64_t threads = 32 * int64_t{fn_.numWarps};
  int64_t carried = 0;
  for (size_t i = 1; i < body_->args.size(); ++i)
    if (body_->args[i]->type.isBlock() && !body_->args[i]->type.pointer)
      carried += bytesPerThread(body_->args[i]->type, threads);
  if (carried >= kCarriedBytes) return found;
  // The address math may read memory (GPTQ's weights at rows of the g_idx just read): the loop
  // writes none, checked above.
  cloneLoads_ = true;
  clonable_.clear();
  int64_t bytes = 0;
  for (auto &op : body_->ops) {
    if (op->code != OpCode::Load || ringLoads.count(op.get()) || (op->hasAttr("volatile") && op->intAttr("volatile")))
      continue;
    Value *loaded = op->result();
    if (loaded->type.pointer || (loaded->type.isBlock() && !loaded->layout)) continue;
    const Value *root = rootArgument(op->operand(0), fn_.body);
    if (!root || written.count(root)) continue;
    bool clonable = true, invariant = true;
    for (Value *o : op->operands) {
      clonable = clonable && canClone(o);
      invariant = invariant && isInvariant(o);
    }
    if (!clonable || invariant || isDotOperand(loaded, *body_) || !feedsDot(loaded)) continue;
    const int64_t perThread = bytesPerThread(loaded->type, threads);
    if (bytes + perThread > (carried <= kSmallStateBytes ? kPrefetchBytesSmallState : kPrefetchBytes)) continue;
    bytes += perThread;
    found.push_back(op.get());
  }
  cloneLoads_ = false;
  clonable_.clear();
  return found;
}

void LoopPipeliner::prefetchIntoRegisters(const std::vector<Operation *> &loads) {
  if (loads.empty()) return;
  Operation *yield = body_->terminator();
  Builder before(loop_.parent);
  before.setInsertionPoint(loop_.parent, positionOf(loop_));
  Builder end(body_);
  end.setInsertionPoint(body_, positionOf(*yield));
  std::map<const Value *, Value *> firstMemo, nextMemo;
  Shift first;
  first.iv = loop_.operand(0);
  first.iterArg = [&](Value *arg) { return loop_.operand(2 + arg->index); };
  Shift next;
  end.setLoc(loop_.loc);
  next.iv = end.op(OpCode::Add, {body_->args[0].get(), end.intConstant(step_, ivType())}, ivType());
  next.iterArg = [&](Value *arg) { return advance(arg, arg, 1, end, next, nextMemo); };
  for (Operation *load : loads) {
    Value *loaded = load->result();
    Value *initial = clone(loaded, before, first, firstMemo);
    Value *carried = appendIterArg(loop_, initial, loaded->nameHint);
    carried->layout = loaded->layout;
    loop_.results.back()->layout = loaded->layout;
    replaceAllUsesWith(fn_.body, loaded, carried);
    Value *ahead = clone(loaded, end, next, nextMemo);
    yield->operands.push_back(ahead);
    // Later prefetched loads whose addresses read this one read its copies.
    firstMemo[carried] = initial;
    nextMemo[carried] = ahead;
  }
}

} // namespace tessera::passes::software_pipeline
