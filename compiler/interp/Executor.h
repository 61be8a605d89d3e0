// The interpreter's internals, shared by its files:
//   Interpreter.cpp  run(), the Executor (values, dispatch, control flow, errors)
//   Elementwise.cpp  arithmetic, comparisons, select, addptr, math, casts
//   BlockOps.cpp     creation ops, splat/broadcast/expand_dims/reshape, reduce
//   Memory.cpp       load/store/atomics with their bounds, alignment and write checks
//   LanguageOps.cpp  math functions, trans/join/split/cat/flip, reduce_combine/scan,
//                    dot, print/assert/assume/barrier
//   DataDependentOps.cpp  sort, gather, histogram (inline_asm: an error)
//   Values.cpp       host values and element encodings
#pragma once

#include "compiler/interp/Interpreter.h"
#include "compiler/interp/Values.h"

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::interp {

// What every program of one run shares.
struct RunContext {
  const ir::Function &fn;
  const std::vector<ArgValue> &args;
  const Options &options;
  Grid grid;
};

// Runs one program: holds the values of the IR values defined so far.
class Executor {
public:
  Executor(const RunContext &ctx, std::array<uint32_t, 3> programId) : ctx_(ctx), pid_(programId) {}

  void runKernel();
  // Binds a region's arguments, runs it, returns its terminator's operands
  // from `firstResult` on (combine regions of reduce_combine/scan use it).
  std::vector<HostValue> runRegion(const ir::Block &block, std::vector<HostValue> args, size_t firstResult = 0);

  const HostValue &get(const ir::Value *v) const;
  void set(const ir::Value *v, HostValue value);
  // A value updated in place: a local_alloc buffer that async_copy fills.
  HostValue &getMutable(const ir::Value *v);

  const RunContext &context() const { return ctx_; }
  std::array<uint32_t, 3> programId() const { return pid_; }
  // "(1, 0, 0)"
  std::string programText() const;

  // Throws InterpreterError at op's location.
  [[noreturn]] void error(const ir::Operation &op, const std::string &message) const;

private:
  const RunContext &ctx_;
  std::array<uint32_t, 3> pid_;
  std::unordered_map<const ir::Value *, HostValue> values_;

  // Returns false once a `return` ran.
  bool runBlock(const ir::Block &block);
  void exec(const ir::Operation &op);
  void execFor(const ir::Operation &op);
  void execIf(const ir::Operation &op);
  void execWhile(const ir::Operation &op);
};

// Each computes the result of one op from its operands' values.
HostValue evalElementwise(Executor &ex, const ir::Operation &op); // binary, unary, cmp, select, addptr, math
HostValue evalCast(Executor &ex, const ir::Operation &op);        // cast, bitcast
HostValue evalCreation(Executor &ex, const ir::Operation &op);    // constant, program_id, num_programs, make_range
HostValue evalShape(Executor &ex, const ir::Operation &op);       // splat, broadcast, expand_dims, reshape, convert_layout, hint
HostValue evalReduce(Executor &ex, const ir::Operation &op);
HostValue evalLoad(Executor &ex, const ir::Operation &op);
void evalStore(Executor &ex, const ir::Operation &op);
HostValue evalAtomic(Executor &ex, const ir::Operation &op); // atomic_rmw, atomic_cas (Memory.cpp)
void evalAsyncCopy(Executor &ex, const ir::Operation &op);   // async_copy (Memory.cpp)
// The index of element 0 of stage `stage` (an i32 operand) of a local_alloc
// buffer; an error at `op` when the stage is out of range (Memory.cpp).
size_t stageStart(Executor &ex, const ir::Operation &op, const HostValue &buffer, const ir::Value *stage);
// The ops of the second half of Ops.def (LanguageOps.cpp); false if `op` is none of them.
bool evalLanguageOp(Executor &ex, const ir::Operation &op);
// sort, gather, histogram, inline_asm (DataDependentOps.cpp); false if `op` is none of them.
bool evalDataDependentOp(Executor &ex, const ir::Operation &op);

} // namespace tessera::interp
