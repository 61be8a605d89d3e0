// print (tl.device_print), assert (tl.device_assert), assume, barrier.
// print calls vprintf (a PTX system call, like CUDA's printf) once per element
// from the thread that owns it: "pid (x, y, z) idx (i, j) prefix: value";
// a scalar is printed by thread 0. assert calls __assertfail (CUDA's assert)
// where the condition is false, which stops the kernel with an error.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <optional>

namespace tessera::codegen {

using namespace llvm;
using ir::OpCode;

// A generic pointer to a NUL-terminated global string.
Value *KernelLowering::formatString(const std::string &text) {
  GlobalVariable *g = b_.CreateGlobalString(text, ".str", /*AddressSpace=*/1, &module_);
  return b_.CreateAddrSpaceCast(g, PointerType::get(ctx_, 0));
}

static std::string printfFormat(const ir::Type &t, bool hex) {
  if (t.pointer) return "%p";
  if (t.isFloatElement()) return hex ? "0x%llx" : "%f";
  unsigned bits = ir::bitWidth(t.scalar);
  if (hex) return bits == 64 ? "0x%llx" : "0x%x";
  if (bits == 64) return ir::isSigned(t.scalar) ? "%lld" : "%llu";
  return ir::isSigned(t.scalar) ? "%d" : "%u";
}

void KernelLowering::lowerDebugOp(ir::Operation &op) {
  switch (op.code) {
  case OpCode::Barrier:
    if (op.hasAttr("pingpong") && op.operands.size() == 1) // only where the predicate holds (warpgroup-uniform)
      onlyWhere(lookup(op.operand(0))[0], [&] { pingpong(op.stringAttr("pingpong")); }, "pingpong.when");
    else if (op.hasAttr("pingpong"))
      pingpong(op.stringAttr("pingpong"));
    else if (op.hasAttr("join_producer") && op.intAttr("join_producer"))
      joinProducer();
    else
      barrier();
    return;
  case OpCode::Assume:
    for (Value *c : lookup(op.operand(0)))
      b_.CreateAssumption(c);
    return;
  default:
    break;
  }
  ir::Value *value = op.operands.empty() ? nullptr : op.operand(0);
  std::optional<DistributedLayout> layout;
  if (value && value->type.isBlock())
    layout.emplace(layoutOf(value, op));
  const unsigned regs = value ? static_cast<unsigned>(lookup(value).size()) : 1;

  // The per-element branch: owner only (thread 0 for scalars and prefix-only prints).
  auto forEachElement = [&](const std::function<void(unsigned, BasicBlock *)> &body) {
    for (unsigned r = 0; r < regs; ++r) {
      if (layout && layout->isDuplicateRegister(r))
        continue;
      Value *pred = layout ? ownerPredicate(*layout, r) : b_.CreateICmpEQ(tid_, i32(0));
      BasicBlock *then = BasicBlock::Create(ctx_, "debug.element", kernel_);
      BasicBlock *next = BasicBlock::Create(ctx_, "debug.next", kernel_);
      b_.CreateCondBr(pred ? pred : b_.getTrue(), then, next);
      b_.SetInsertPoint(then);
      body(r, next);
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
    }
  };

  if (op.code == OpCode::Assert) {
    const Regs &conds = lookup(value);
    std::string message = op.stringAttr("message");
    std::string file = op.stringAttr("file");
    int64_t line = op.intAttr("line");
    FunctionCallee assertFail = module_.getOrInsertFunction(
        "__assertfail", FunctionType::get(b_.getVoidTy(),
                                          {PointerType::get(ctx_, 0), PointerType::get(ctx_, 0), b_.getInt32Ty(),
                                           PointerType::get(ctx_, 0), b_.getInt64Ty()},
                                          false));
    for (unsigned r = 0; r < regs; ++r) {
      if (layout && layout->isDuplicateRegister(r))
        continue;
      BasicBlock *fail = BasicBlock::Create(ctx_, "assert.fail", kernel_);
      BasicBlock *ok = BasicBlock::Create(ctx_, "assert.ok", kernel_);
      b_.CreateCondBr(conds[r], ok, fail);
      b_.SetInsertPoint(fail);
      b_.CreateCall(assertFail, {formatString(message), formatString(file), i32(line),
                                 formatString(op.stringAttr("func")), b_.getInt64(1)});
      b_.CreateBr(ok);
      b_.SetInsertPoint(ok);
    }
    return;
  }

  // print
  const std::string prefix = op.stringAttr("prefix");
  const bool hex = op.hasAttr("hex") && op.intAttr("hex");
  FunctionCallee vprintf = module_.getOrInsertFunction(
      "vprintf", FunctionType::get(b_.getInt32Ty(), {PointerType::get(ctx_, 0), PointerType::get(ctx_, 0)}, false));
  Value *pid[3];
  static const Intrinsic::ID ctaid[] = {Intrinsic::nvvm_read_ptx_sreg_ctaid_x, Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                        Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
  for (int i = 0; i < 3; ++i)
    pid[i] = b_.CreateIntrinsic(ctaid[i], {}, {});
  const unsigned rank = layout ? layout->rank() : 0;
  std::string format = "pid (%d, %d, %d)";
  if (rank) {
    format += " idx (";
    for (unsigned d = 0; d < rank; ++d)
      format += d ? ", %d" : "%d";
    format += ")";
  }
  format += " " + prefix;
  if (value) format += (prefix.empty() ? "" : ": ") + printfFormat(value->type.element(), hex);
  format += "\n";
  Value *formatPtr = formatString(format);
  forEachElement([&](unsigned r, BasicBlock *) {
    // vprintf's arguments: a buffer laid out like C varargs (floats as double, small ints as i32).
    std::vector<Value *> args(pid, pid + 3);
    if (layout)
      for (Value *c : coordinates(*layout, r))
        args.push_back(c);
    if (value) {
      Value *v = lookup(value)[r];
      const ir::Type t = value->type.element();
      if (t.pointer) v = b_.CreatePtrToInt(v, b_.getInt64Ty());
      else if (t.isFloatElement() && hex) {
        unsigned bits = v->getType()->isIntegerTy() ? v->getType()->getIntegerBitWidth() : v->getType()->getPrimitiveSizeInBits();
        v = b_.CreateZExt(v->getType()->isIntegerTy() ? v : b_.CreateBitCast(v, b_.getIntNTy(bits)), b_.getInt64Ty());
      } else if (t.isFloatElement()) {
        v = castElement(op, v, t, ir::Type(ir::ScalarType::F64));
      } else if (ir::bitWidth(t.scalar) < 32) {
        v = ir::isSigned(t.scalar) ? b_.CreateSExt(v, b_.getInt32Ty()) : b_.CreateZExt(v, b_.getInt32Ty());
      }
      args.push_back(v);
    }
    std::vector<Type *> fields;
    for (Value *a : args) fields.push_back(a->getType());
    StructType *bufferTy = StructType::get(ctx_, fields);
    IRBuilder<> entry(entry_, entry_->begin());
    Value *buffer = entry.CreateAlloca(bufferTy);
    for (unsigned i = 0; i < args.size(); ++i)
      b_.CreateStore(args[i], b_.CreateStructGEP(bufferTy, buffer, i));
    b_.CreateCall(vprintf, {formatPtr, buffer});
  });
}

} // namespace tessera::codegen
