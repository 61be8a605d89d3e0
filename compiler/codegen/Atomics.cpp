// atomic_rmw / atomic_cas: one predicated PTX `atom` per element, done by
// the element's owner only (copies in other threads must not repeat it) and
// only where the mask holds; a scalar atomic is done by thread 0. The old
// value then reaches every thread that holds a copy through shared memory
// (skipped when no thread holds copies or the result is unused).
//   @p atom.<sem>.<scope>.global.<op>.<type> old, [ptr], val (, cmp)
// A float atomic add whose old values nobody reads (a split-K GEMM's partial
// sums) goes a vector of a thread's consecutive elements at a time, as
// Triton's: f16x2 / bf16x2 pairs, on sm_90 up to 16 bytes (.v8.f16, .v4.f32;
// PTX 8.1).
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

#include <optional>

namespace tessera::codegen {

using namespace llvm;
using ir::OpCode;

bool KernelLowering::valueIsUsed(const ir::Value *v) {
  bool used = false;
  ir::walk(fn_.body, [&](ir::Operation &op) {
    for (ir::Value *o : op.operands)
      used = used || o == v;
  });
  return used;
}

// The PTX op and type suffix, e.g. "add.f32", "max.s32", "cas.b64".
static std::string atomSuffix(const ir::Operation &op, const ir::Type &t) {
  const unsigned bits = ir::bitWidth(t.scalar);
  const std::string b = std::to_string(bits);
  if (op.code == OpCode::AtomicCAS)
    return "cas.b" + b;
  const std::string &kind = op.stringAttr("kind");
  const bool isSigned = ir::isSigned(t.scalar);
  if (kind == "add") {
    if (t.scalar == ir::ScalarType::F16) return "add.noftz.f16";
    if (t.scalar == ir::ScalarType::BF16) return "add.noftz.bf16";
    if (t.isFloatElement()) return "add.f" + b;
    return bits == 64 ? "add.u64" : "add.u" + b; // two's complement: signedness does not matter
  }
  if (kind == "max" || kind == "min") return kind + (isSigned ? ".s" : ".u") + b;
  if (kind == "umax" || kind == "umin") return kind.substr(1) + ".u" + b;
  if (kind == "and" || kind == "or" || kind == "xor") return kind + ".b" + b;
  if (kind == "xchg") return "exch.b" + b;
  unsupported(op, "unknown atomic kind '" + kind + "'");
}

void KernelLowering::lowerAtomic(ir::Operation &op) {
  const bool cas = op.code == OpCode::AtomicCAS;
  ir::Value *ptrValue = op.operand(0);
  const ir::Type elem = op.result()->type.element();
  const unsigned bits = ir::bitWidth(elem.scalar);
  if (bits != 16 && bits != 32 && bits != 64)
    notSupported(op, "atomics need 16-, 32- or 64-bit elements, got " + elem.str());
  // PTX has no 16-bit atom but cas.b16 and add.noftz.f16/.bf16 (found by fuzz_pipeline: ptxas
  // rejected atom.exch.b16 and atom.add.u16).
  if (bits == 16 && !cas && !(op.stringAttr("kind") == "add" && elem.isFloatElement()))
    notSupported(op, "16-bit atomics are atomic_cas and atomic_add on float16/bfloat16 only, got '" +
                         op.stringAttr("kind") + "' on " + elem.str() + " (use 32-bit elements)");
  if (elem.scalar == ir::ScalarType::BF16 && arch_ != "sm_90" && arch_ != "sm_90a")
    notSupported(op, "bfloat16 atomic add needs sm_90 (this is " + arch_ + ")");
  Type *valueTy = elementType(elem, &op);
  Type *bitsTy = b_.getIntNTy(bits);
  const char *reg = bits == 16 ? "h" : bits == 32 ? "r" : "l";
  const std::string sem = op.stringAttr("sem"), scope = op.stringAttr("scope");
  const std::string text = std::string("mov.b") + std::to_string(bits) + " $0, 0;\n\t@$" + (cas ? "4" : "3") +
                           " atom." + sem + "." + scope + ".global." + atomSuffix(op, elem) + " $0, [$1], $2" +
                           (cas ? ", $3;" : ";");
  std::string constraints = std::string("=") + reg + ",l," + reg + (cas ? std::string(",") + reg : "") + ",b,~{memory}";
  std::vector<Type *> params = {PointerType::get(ctx_, 1), bitsTy};
  if (cas) params.push_back(bitsTy);
  params.push_back(b_.getInt1Ty());
  InlineAsm *atom = InlineAsm::get(FunctionType::get(bitsTy, params, false), text, constraints, true);

  const Regs &ptrs = lookup(ptrValue);
  const Regs &vals = lookup(op.operand(1));
  const Regs *cmps = cas ? &lookup(op.operand(1)) : nullptr;
  const Regs *news = cas ? &lookup(op.operand(2)) : nullptr;
  const Regs *masks = !cas && op.hasAttr("has_mask") && op.intAttr("has_mask") ? &lookup(op.operand(2)) : nullptr;
  std::optional<DistributedLayout> layout;
  if (ptrValue->type.isBlock())
    layout.emplace(layoutOf(ptrValue, op));
  auto raw = [&](Value *v) { return v->getType() == bitsTy ? v : b_.CreateBitCast(v, bitsTy); };

  if (!cas && layout && op.stringAttr("kind") == "add" && elem.isFloatElement() && bits <= 32 &&
      !valueIsUsed(op.result()) && lowerVectorAtomicAdd(op, *layout, ptrs, vals, masks))
    return;

  Regs old(ptrs.size(), nullptr);
  bool copies = !layout; // a scalar: thread 0 does it, everyone needs it
  for (unsigned r = 0; r < ptrs.size(); ++r) {
    Value *pred;
    if (layout) {
      if (layout->isDuplicateRegister(r)) {
        copies = true;
        continue;
      }
      pred = ownerPredicate(*layout, r);
      copies = copies || pred != nullptr;
    } else {
      pred = b_.CreateICmpEQ(tid_, i32(0));
    }
    if (masks)
      pred = andPredicates(pred, (*masks)[r]);
    if (!pred)
      pred = b_.getTrue();
    std::vector<Value *> args = {ptrs[r]};
    if (cas) {
      args.push_back(raw((*cmps)[r]));
      args.push_back(raw((*news)[r]));
    } else {
      args.push_back(raw(vals[r]));
    }
    args.push_back(pred);
    Value *bitsOld = b_.CreateCall(atom, args);
    old[r] = bitsOld->getType() == valueTy ? bitsOld : b_.CreateBitCast(bitsOld, valueTy);
  }
  if (!copies || !valueIsUsed(op.result())) {
    for (Value *&v : old)
      if (!v) v = UndefValue::get(valueTy);
    define(op.result(), std::move(old));
    return;
  }
  // Owners publish the old values; every copy reads them.
  Value *base = sharedScratch(static_cast<uint64_t>(op.result()->type.numElements()) * (bits / 8), op);
  std::vector<Value *> index(ptrs.size());
  for (unsigned r = 0; r < ptrs.size(); ++r) {
    index[r] = layout ? linearIndex(coordinates(*layout, r), ptrValue->type.shape) : i32(0);
    if (!old[r])
      continue;
    Value *owner = layout ? ownerPredicate(*layout, r) : b_.CreateICmpEQ(tid_, i32(0));
    BasicBlock *write = BasicBlock::Create(ctx_, "atomic.publish", kernel_);
    BasicBlock *next = BasicBlock::Create(ctx_, "atomic.published", kernel_);
    b_.CreateCondBr(owner ? owner : b_.getTrue(), write, next);
    b_.SetInsertPoint(write);
    b_.CreateStore(old[r], b_.CreateGEP(valueTy, base, index[r]));
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
  barrier();
  Regs out;
  for (unsigned r = 0; r < ptrs.size(); ++r)
    out.push_back(b_.CreateLoad(valueTy, b_.CreateGEP(valueTy, base, index[r])));
  barrier();
  define(op.result(), std::move(out));
}

bool KernelLowering::lowerVectorAtomicAdd(ir::Operation &op, const DistributedLayout &layout, const Regs &ptrs,
                                          const Regs &vals, const Regs *masks) {
  const ir::Type elem = op.result()->type.element();
  const unsigned bits = ir::bitWidth(elem.scalar);
  const bool hopper = arch_ == "sm_90" || arch_ == "sm_90a";
  unsigned vec = vectorWidth(op, layout, bits, masks != nullptr);
  vec = std::min(vec, hopper ? 128 / bits : bits == 16 ? 2u : 1u);
  if (vec < 2) return false;
  const bool half = bits == 16;
  const std::string type = elem.scalar == ir::ScalarType::F16 ? "f16" : elem.scalar == ir::ScalarType::BF16 ? "bf16" : "f32";
  // Before sm_90 only the packed pair: one .b32 of two halves.
  const bool packed = half && !hopper;
  const unsigned operands = packed ? 1 : vec;
  const std::string sem = op.stringAttr("sem"), scope = op.stringAttr("scope");
  const std::string reg = half && !packed ? "b16" : "b32";
  std::string text = "{\n\t.reg ." + reg + " old<" + std::to_string(operands) + ">;\n\t@$" +
                     std::to_string(operands + 1) + " atom." + sem + "." + scope + ".global.add" +
                     (half ? ".noftz" : "") + (packed ? "." + type + "x2" : ".v" + std::to_string(vec) + "." + type) + " ";
  std::string olds, news;
  for (unsigned i = 0; i < operands; ++i) {
    olds += (i ? ", old" : "old") + std::to_string(i);
    news += (i ? ", $" : "$") + std::to_string(i + 1);
  }
  text += operands == 1 ? olds + ", [$0], " + news + ";\n\t}" : "{" + olds + "}, [$0], {" + news + "};\n\t}";
  Type *unitTy = packed ? b_.getInt32Ty() : b_.getIntNTy(bits);
  std::vector<Type *> params = {PointerType::get(ctx_, 1)};
  std::string constraints = "l";
  for (unsigned i = 0; i < operands; ++i) {
    params.push_back(unitTy);
    constraints += half && !packed ? ",h" : ",r";
  }
  params.push_back(b_.getInt1Ty());
  constraints += ",b,~{memory}";
  InlineAsm *atom = InlineAsm::get(FunctionType::get(b_.getVoidTy(), params, false), text, constraints, true);
  for (unsigned r = 0; r < ptrs.size(); r += vec) {
    if (layout.isDuplicateRegister(r)) continue; // a vector is all copies or all owned (vectorWidth)
    Value *pred = ownerPredicate(layout, r);
    if (masks) pred = andPredicates(pred, (*masks)[r]);
    std::vector<Value *> args = {ptrs[r]};
    auto raw = [&](Value *v) { return b_.CreateBitCast(v, b_.getIntNTy(bits)); };
    if (packed) {
      Value *pair = b_.CreateOr(b_.CreateZExt(raw(vals[r]), b_.getInt32Ty()),
                                b_.CreateShl(b_.CreateZExt(raw(vals[r + 1]), b_.getInt32Ty()), 16));
      args.push_back(pair);
    } else {
      for (unsigned i = 0; i < vec; ++i) args.push_back(raw(vals[r + i]));
    }
    args.push_back(pred ? pred : b_.getTrue());
    b_.CreateCall(atom, args);
  }
  Type *valueTy = elementType(elem, &op);
  define(op.result(), Regs(ptrs.size(), UndefValue::get(valueTy)));
  return true;
}

} // namespace tessera::codegen
