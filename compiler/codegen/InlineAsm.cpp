// inline_asm (tl.inline_asm_elementwise): one asm statement per `pack`
// registers of the thread (the operands and results share one layout, so the
// same registers hold the same elements everywhere). Elements narrower than
// 32 bits are packed into one register (ir::inlineAsmElementsPerRegister),
// element 0 in the low bits; each operand is then widened or reinterpreted to
// the type its constraint letter names (r: i32, h: i16, l: i64, f: f32,
// d: f64). A thread holding fewer than `pack` registers repeats its last one
// and drops the extra results. Asm that is not pure has side effects and
// clobbers memory, so it is neither moved, merged nor dropped.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

namespace tessera::codegen {

using namespace llvm;

namespace {

std::vector<std::string> splitConstraints(const std::string &text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The LLVM type of an operand with constraint `code` (the letters after '=' / '&').
Type *registerType(LLVMContext &ctx, const std::string &code, Type *packed) {
  const char letter = code.empty() ? ' ' : code.back();
  switch (letter) {
  case 'r': return Type::getInt32Ty(ctx);
  case 'h': return Type::getInt16Ty(ctx);
  case 'c': return Type::getInt8Ty(ctx);
  case 'l': return packed->isPointerTy() ? packed : Type::getInt64Ty(ctx);
  case 'f': return Type::getFloatTy(ctx);
  case 'd': return Type::getDoubleTy(ctx);
  default: return packed;
  }
}

} // namespace

// `v` reinterpreted as an integer of its width, resized to `to`'s width and reinterpreted as `to`.
Value *KernelLowering::resizeBits(Value *v, Type *to) {
  Type *from = v->getType();
  if (from == to)
    return v;
  if (from->isPointerTy())
    v = b_.CreatePtrToInt(v, b_.getInt64Ty());
  else if (!from->isIntegerTy())
    v = b_.CreateBitCast(v, b_.getIntNTy(static_cast<unsigned>(from->getPrimitiveSizeInBits())));
  if (to->isPointerTy())
    return b_.CreateIntToPtr(b_.CreateZExtOrTrunc(v, b_.getInt64Ty()), to);
  Type *toInt = b_.getIntNTy(static_cast<unsigned>(to->getPrimitiveSizeInBits()));
  v = b_.CreateZExtOrTrunc(v, toInt);
  return to->isIntegerTy() ? v : b_.CreateBitCast(v, to);
}

void KernelLowering::lowerInlineAsm(ir::Operation &op) {
  const int64_t pack = op.intAttr("pack");
  std::vector<std::string> outputCodes, inputCodes;
  for (const std::string &code : splitConstraints(op.stringAttr("constraints"))) {
    if (!code.empty() && code[0] == '=') outputCodes.push_back(code.substr(1));
    else if (!code.empty() && code[0] != '~') inputCodes.push_back(code);
  }
  const bool pure = op.intAttr("pure") != 0;
  const std::string constraints = op.stringAttr("constraints") + (pure ? "" : ",~{memory}");
  const unsigned n = numRegs(op.result(0), op);

  // The elements one asm operand holds (packed, element 0 lowest), from `regs` starting at `first`.
  auto packed = [&](const ir::Type &t, int64_t perRegister, const Regs &regs, int64_t first) -> Value * {
    auto reg = [&](int64_t i) { return regs[static_cast<size_t>(std::min<int64_t>(i, int64_t(regs.size()) - 1))]; };
    Value *v = reg(first);
    if (t.isBoolElement())
      v = b_.CreateZExt(v, b_.getInt8Ty());
    if (perRegister == 1)
      return v;
    Type *elemTy = v->getType();
    Value *vec = PoisonValue::get(FixedVectorType::get(elemTy, static_cast<unsigned>(perRegister)));
    for (int64_t i = 0; i < perRegister; ++i) {
      Value *e = reg(first + i);
      if (t.isBoolElement())
        e = b_.CreateZExt(e, b_.getInt8Ty());
      vec = b_.CreateInsertElement(vec, e, static_cast<uint64_t>(i));
    }
    return b_.CreateBitCast(vec, b_.getIntNTy(static_cast<unsigned>(elemTy->getPrimitiveSizeInBits() * perRegister)));
  };

  std::vector<Regs> out(op.results.size());
  for (int64_t first = 0; first < int64_t(n); first += pack) {
    std::vector<Value *> args;
    std::vector<Type *> argTypes;
    size_t input = 0;
    for (ir::Value *v : op.operands) {
      const int64_t per = ir::inlineAsmElementsPerRegister(v->type, pack);
      for (int64_t chunk = 0; chunk < pack; chunk += per) {
        Value *p = packed(v->type, per, lookup(v), first + chunk);
        args.push_back(resizeBits(p, registerType(ctx_, inputCodes.at(input++), p->getType())));
        argTypes.push_back(args.back()->getType());
      }
    }
    // The result registers: per result, its packed chunks in order.
    struct Chunk {
      unsigned result;
      int64_t firstElement, perRegister;
      Type *packedTy;
    };
    std::vector<Chunk> chunks;
    std::vector<Type *> outTypes;
    for (unsigned k = 0; k < op.results.size(); ++k) {
      const ir::Type &t = op.result(k)->type;
      const int64_t per = ir::inlineAsmElementsPerRegister(t, pack);
      Type *elemTy = t.isBoolElement() ? b_.getInt8Ty() : elementType(t.element(), &op);
      for (int64_t chunk = 0; chunk < pack; chunk += per) {
        Type *packedTy = per == 1 ? elemTy : b_.getIntNTy(static_cast<unsigned>(elemTy->getPrimitiveSizeInBits() * per));
        chunks.push_back({k, first + chunk, per, packedTy});
        outTypes.push_back(registerType(ctx_, outputCodes.at(outTypes.size()), packedTy));
      }
    }
    Type *returnTy = outTypes.size() == 1 ? outTypes[0] : StructType::get(ctx_, outTypes);
    InlineAsm *statement = InlineAsm::get(FunctionType::get(returnTy, argTypes, false), op.stringAttr("asm"),
                                          constraints, /*hasSideEffects=*/!pure);
    CallInst *call = b_.CreateCall(statement, args);
    if (pure)
      call->setDoesNotAccessMemory();
    for (size_t c = 0; c < chunks.size(); ++c) {
      const Chunk &ch = chunks[c];
      const ir::Type &t = op.result(ch.result)->type;
      Value *reg = outTypes.size() == 1 ? static_cast<Value *>(call) : b_.CreateExtractValue(call, {static_cast<unsigned>(c)});
      Value *v = resizeBits(reg, ch.packedTy);
      Type *elemTy = t.isBoolElement() ? b_.getInt8Ty() : elementType(t.element(), &op);
      Value *vec = ch.perRegister == 1 ? nullptr
                                      : b_.CreateBitCast(v, FixedVectorType::get(elemTy, static_cast<unsigned>(ch.perRegister)));
      for (int64_t i = 0; i < ch.perRegister && ch.firstElement + i < int64_t(n); ++i) {
        Value *e = vec ? b_.CreateExtractElement(vec, static_cast<uint64_t>(i)) : v;
        if (t.isBoolElement())
          e = b_.CreateICmpNE(e, b_.getInt8(0));
        out[ch.result].push_back(e);
      }
    }
  }
  for (unsigned k = 0; k < op.results.size(); ++k)
    define(op.result(k), std::move(out[k]));
}

} // namespace tessera::codegen
