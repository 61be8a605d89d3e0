// run(): every program of the grid, one after the other; the Executor walks
// the IR of one program (dispatch, structured control flow, errors).
#include "compiler/interp/Executor.h"

#include <stdexcept>

namespace tessera::interp {

using ir::OpCode;

bool supports(OpCode code) {
  switch (code) {
  case OpCode::Constant: case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::MakeRange:
  case OpCode::Splat: case OpCode::Broadcast: case OpCode::ExpandDims: case OpCode::Reshape:
  case OpCode::ConvertLayout: case OpCode::Hint:
  case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
  case OpCode::Max: case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp:
  case OpCode::Select: case OpCode::AddPtr:
  case OpCode::Exp: case OpCode::Exp2: case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs:
  case OpCode::Cast: case OpCode::Bitcast:
  case OpCode::Load: case OpCode::Store: case OpCode::Reduce: case OpCode::LaneReduce:
  case OpCode::For: case OpCode::If: case OpCode::While:
  case OpCode::Yield: case OpCode::Condition: case OpCode::Return:
  case OpCode::Sin: case OpCode::Cos: case OpCode::Rsqrt: case OpCode::Erf: case OpCode::Floor:
  case OpCode::Ceil: case OpCode::Fma: case OpCode::UMulHi: case OpCode::Libdevice:
  case OpCode::Trans: case OpCode::Join: case OpCode::Split: case OpCode::Cat: case OpCode::Flip:
  case OpCode::ReduceCombine: case OpCode::Scan: case OpCode::Dot:
  case OpCode::MapElementwise: case OpCode::SmId: case OpCode::GlobalTimer:
  case OpCode::Sort: case OpCode::Gather: case OpCode::Histogram:
  case OpCode::AtomicRMW: case OpCode::AtomicCAS:
  case OpCode::Print: case OpCode::Assert: case OpCode::Barrier: case OpCode::Assume:
  case OpCode::LocalAlloc: case OpCode::LocalDealloc: case OpCode::AsyncCopy: case OpCode::AsyncCommit: case OpCode::FenceAsyncShared: case OpCode::DotWait:
  case OpCode::AsyncWait: case OpCode::LocalLoad: case OpCode::LocalStore:
    return true;
  default:
    return false;
  }
}

// ---------------------------------------------------------------- values

const HostValue &Executor::get(const ir::Value *v) const {
  auto it = values_.find(v);
  if (it == values_.end()) {
    const ir::Operation *user = v->definingOp;
    throw std::logic_error(std::string("interpreter: a value is used before it is defined") +
                           (user ? std::string(" (result of '") + ir::mnemonic(user->code) + "')" : std::string()));
  }
  return it->second;
}

void Executor::set(const ir::Value *v, HostValue value) { values_[v] = std::move(value); }

HostValue &Executor::getMutable(const ir::Value *v) {
  auto it = values_.find(v);
  if (it == values_.end())
    throw std::logic_error("interpreter: value used before it was computed");
  return it->second;
}

std::string Executor::programText() const {
  return "(" + std::to_string(pid_[0]) + ", " + std::to_string(pid_[1]) + ", " + std::to_string(pid_[2]) + ")";
}

void Executor::error(const ir::Operation &op, const std::string &message) const {
  if (ctx_.options.file) throw InterpreterError(formatDiagnostic(*ctx_.options.file, op.loc, message), op.loc);
  std::string out = ctx_.fn.sourcePath.empty() ? "<source>" : ctx_.fn.sourcePath;
  if (op.loc.line) out += ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col);
  throw InterpreterError(out + ": error: " + message, op.loc);
}

// ------------------------------------------------------------- execution

void Executor::runKernel() {
  const ir::Function &fn = ctx_.fn;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Type &t = fn.params[i].type;
    HostValue v(t.element());
    if (t.pointer) {
      v.data[0].u = ctx_.args[i].bits;
      v.origin[0] = static_cast<int32_t>(i);
    } else {
      v.data[0] = decodeElement(ctx_.args[i].bits, t);
    }
    set(fn.body.args[i].get(), std::move(v));
  }
  runBlock(fn.body);
}

bool Executor::runBlock(const ir::Block &block) {
  for (const auto &op : block.ops) {
    switch (op->code) {
    case OpCode::Return: return false;
    case OpCode::Yield: case OpCode::Condition: return true; // read by the region's owner
    default: exec(*op);
    }
  }
  return true;
}

std::vector<HostValue> Executor::runRegion(const ir::Block &block, std::vector<HostValue> args, size_t firstResult) {
  for (size_t i = 0; i < block.args.size() && i < args.size(); ++i) set(block.args[i].get(), std::move(args[i]));
  const ir::Operation *term = block.terminator();
  if (!runBlock(block))
    error(*term, "'return' inside a region is not supported");
  std::vector<HostValue> out;
  if (term && (term->code == OpCode::Yield || term->code == OpCode::Condition))
    for (size_t i = firstResult; i < term->operands.size(); ++i) out.push_back(get(term->operand(i)));
  return out;
}

void Executor::exec(const ir::Operation &op) {
  switch (op.code) {
  case OpCode::Constant: case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::MakeRange:
    set(op.result(), evalCreation(*this, op));
    return;
  case OpCode::Splat: case OpCode::Broadcast: case OpCode::ExpandDims: case OpCode::Reshape:
  case OpCode::ConvertLayout: case OpCode::Hint:
    set(op.result(), evalShape(*this, op));
    return;
  case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
  case OpCode::Max: case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp:
  case OpCode::Select: case OpCode::AddPtr:
  case OpCode::Exp: case OpCode::Exp2: case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs:
    set(op.result(), evalElementwise(*this, op));
    return;
  case OpCode::Cast: case OpCode::Bitcast:
    set(op.result(), evalCast(*this, op));
    return;
  case OpCode::Load:
    set(op.result(), evalLoad(*this, op));
    return;
  case OpCode::Store:
    evalStore(*this, op);
    return;
  case OpCode::Reduce: // a `partial` sum is whole here: one program holds all its lanes
    set(op.result(), evalReduce(*this, op));
    return;
  case OpCode::LaneReduce: // ... so adding the lanes up is nothing more
    set(op.result(), get(op.operand(0)));
    return;
  case OpCode::For: execFor(op); return;
  case OpCode::If: execIf(op); return;
  case OpCode::While: execWhile(op); return;
  default:
    if (evalLanguageOp(*this, op)) return;
    if (evalDataDependentOp(*this, op)) return;
    break;
  }
  error(op, std::string("the interpreter does not support the operation '") + ir::mnemonic(op.code) +
                "' yet (compiler/interp/)");
}

// ----------------------------------------------------------- control flow

void Executor::execFor(const ir::Operation &op) {
  const ir::Type &ivType = op.operand(0)->type;
  const bool isSigned = ir::isSigned(ivType.scalar);
  Scalar iv = get(op.operand(0)).data[0];
  const Scalar ub = get(op.operand(1)).data[0];
  const Scalar step = get(op.operand(2)).data[0];
  std::vector<HostValue> carried;
  for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(get(op.operand(i)));
  const ir::Block &body = *op.region(0);
  const bool runs = isSigned ? iv.i < ub.i : iv.u < ub.u;
  if (runs && (isSigned ? step.i <= 0 : step.u == 0))
    error(op, "the loop's step is " + elementText(step, ivType) + " at run time (program " + programText() +
                  "): it would never reach its end (the GPU would hang)");
  while (isSigned ? iv.i < ub.i : iv.u < ub.u) {
    std::vector<HostValue> args;
    args.reserve(carried.size() + 1);
    HostValue ivValue(ivType);
    ivValue.data[0] = iv;
    args.push_back(std::move(ivValue));
    for (HostValue &c : carried) args.push_back(std::move(c));
    carried = runRegion(body, std::move(args));
    iv.i = wrapInt(iv.u + step.u, ivType.scalar);
  }
  for (size_t i = 0; i < op.results.size(); ++i) set(op.result(static_cast<unsigned>(i)), std::move(carried.at(i)));
}

void Executor::execIf(const ir::Operation &op) {
  bool cond = get(op.operand(0)).data[0].u != 0;
  std::vector<HostValue> results = runRegion(*op.region(cond ? 0 : 1), {});
  for (size_t i = 0; i < op.results.size(); ++i) set(op.result(static_cast<unsigned>(i)), std::move(results.at(i)));
}

void Executor::execWhile(const ir::Operation &op) {
  std::vector<HostValue> carried;
  for (const ir::Value *v : op.operands) carried.push_back(get(v));
  const ir::Block &before = *op.region(0), &after = *op.region(1);
  const ir::Operation *condition = before.terminator();
  if (!condition || condition->code != OpCode::Condition) error(op, "the before region must end in 'condition'");
  while (true) {
    std::vector<HostValue> passed = runRegion(before, std::move(carried), 1);
    if (get(condition->operand(0)).data[0].u == 0) {
      for (size_t i = 0; i < op.results.size(); ++i)
        set(op.result(static_cast<unsigned>(i)), std::move(passed.at(i)));
      return;
    }
    carried = runRegion(after, std::move(passed));
  }
}

// -------------------------------------------------------------------- run

void run(const ir::Function &fn, Grid grid, const std::vector<ArgValue> &args, const Options &options) {
  if (args.size() != fn.params.size())
    throw std::invalid_argument("interpreter: kernel '" + fn.name + "' takes " + std::to_string(fn.params.size()) +
                                " runtime arguments, got " + std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (fn.params[i].type.pointer && args[i].end < args[i].begin)
      throw std::invalid_argument("interpreter: argument '" + fn.params[i].name + "' has an empty buffer range");
  RunContext ctx{fn, args, options, grid};
  for (uint32_t z = 0; z < grid.z; ++z)
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x) {
        Executor ex(ctx, {x, y, z});
        ex.runKernel();
      }
}

} // namespace tessera::interp
