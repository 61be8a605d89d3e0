// reshape, trans, join, split, cat and flip: every element moves to a new
// position. Where every thread already holds the elements of its result
// registers (the layouts the tiling pass gives reshape, trans, split and
// join when it can, compiler/ir/ShapeOpLayouts.h) the op only picks
// registers. Otherwise they go through shared memory like convert_layout:
// each thread stores the distinct elements it holds at a row-major index, a
// barrier, each thread loads what its result registers hold (the index of
// their source element), a barrier before reuse.
#include "compiler/codegen/Lowering.h"
#include "compiler/ir/ShapeOpLayouts.h"

#include <optional>

namespace tessera::codegen {

using namespace llvm;
using ir::OpCode;

bool KernelLowering::pickRegisters(ir::Operation &op) {
  if (!ir::isRegisterShapeOp(op.code))
    return false;
  std::vector<DistributedLayout> operands;
  for (ir::Value *v : op.operands) {
    if (!v->type.isBlock() || !v->layout || v->layout->kind == ir::Layout::Kind::DotOperand)
      return false;
    operands.push_back(layoutOf(v, op));
  }
  std::vector<Regs> results;
  for (unsigned k = 0; k < op.results.size(); ++k) {
    ir::Value *result = op.result(k);
    if (!result->type.isBlock() || !result->layout || result->layout->kind == ir::Layout::Kind::DotOperand)
      return false;
    auto picks = ir::registersInThread(op, k, operands, layoutOf(result, op));
    if (!picks)
      return false;
    Regs regs;
    for (auto [operand, reg] : *picks) {
      const Regs &in = lookup(op.operand(operand));
      if (reg >= in.size())
        unsupported(op, "operand register out of range");
      regs.push_back(in[reg]);
    }
    results.push_back(std::move(regs));
  }
  for (unsigned k = 0; k < op.results.size(); ++k)
    define(op.result(k), std::move(results[k]));
  return true;
}

void KernelLowering::lowerShapeOp(ir::Operation &op) {
  if (pickRegisters(op))
    return;
  if (op.code == OpCode::Reshape)
    return lowerThroughSharedMemory(op);
  const ir::Type elem = op.operand(0)->type.element();
  Type *memTy = memoryType(elem, &op);
  const uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;

  // Sources are written one after another: operand k at k * numElements.
  uint64_t total = 0;
  for (ir::Value *v : op.operands)
    total += static_cast<uint64_t>(v->type.numElements());
  Value *base = sharedScratch(total * elemBytes, op);

  auto coordsOf = [&](ir::Value *v, unsigned reg) -> std::vector<Value *> {
    if (!v->type.isBlock())
      return {};
    return coordinates(layoutOf(v, op), reg);
  };
  uint64_t start = 0;
  for (ir::Value *v : op.operands) {
    const Regs &regs = lookup(v);
    std::optional<DistributedLayout> layout;
    if (v->type.isBlock())
      layout.emplace(layoutOf(v, op));
    for (unsigned r = 0; r < regs.size(); ++r) {
      if (layout && layout->isDuplicateRegister(r))
        continue; // copies in other threads write the same value
      Value *index = b_.CreateAdd(i32(static_cast<int64_t>(start)), linearIndex(coordsOf(v, r), v->type.shape));
      b_.CreateStore(toMemory(regs[r], elem), b_.CreateGEP(memTy, base, index));
    }
    start += static_cast<uint64_t>(v->type.numElements());
  }
  barrier();

  const ir::Type &srcType = op.operand(0)->type;
  const std::vector<int64_t> &srcShape = srcType.shape;
  const int64_t srcElems = srcType.numElements();
  for (unsigned k = 0; k < op.results.size(); ++k) {
    ir::Value *result = op.result(k);
    unsigned n = numRegs(result, op);
    Regs out;
    for (unsigned r = 0; r < n; ++r) {
      std::vector<Value *> c = coordsOf(result, r);
      Value *index;
      switch (op.code) {
      case OpCode::Trans: { // result dim i is source dim order[i]
        const std::vector<int64_t> &order = op.arrayAttr("order");
        std::vector<Value *> src(c.size());
        for (size_t i = 0; i < order.size(); ++i)
          src[order[i]] = c[i];
        index = linearIndex(src, srcShape);
        break;
      }
      case OpCode::Join: { // [..., j] comes from operand j
        Value *j = c.back();
        c.pop_back();
        index = b_.CreateAdd(b_.CreateMul(j, i32(srcElems)), linearIndex(c, srcShape));
        break;
      }
      case OpCode::Split: // result k is [..., k] of the source
        c.push_back(i32(k));
        index = linearIndex(c, srcShape);
        break;
      case OpCode::Cat: // a then b: the row-major order of the result
        index = linearIndex(c, result->type.shape);
        break;
      case OpCode::Flip: {
        unsigned axis = static_cast<unsigned>(op.intAttr("axis"));
        c[axis] = b_.CreateSub(i32(srcShape[axis] - 1), c[axis]);
        index = linearIndex(c, srcShape);
        break;
      }
      default:
        unsupported(op, "not a shape op");
      }
      out.push_back(fromMemory(b_.CreateLoad(memTy, b_.CreateGEP(memTy, base, index)), elem));
    }
    define(result, std::move(out));
  }
  barrier(); // the scratch may be reused right after
}

} // namespace tessera::codegen
