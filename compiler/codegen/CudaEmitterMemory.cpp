// Memory in the NVRTC back-end's printer: loads, stores, address arithmetic
// (getelementptr as byte offsets on `unsigned char *`), and the globals a
// kernel may have (the dynamic shared buffer, constant strings). Memory is
// read and written through unsigned integer types of the value's width
// (floats are bit-cast), so that two accesses of one width never differ in
// type for type-based alias analysis.
#include "compiler/codegen/CudaEmitterInternal.h"

#include <llvm/IR/GetElementPtrTypeIterator.h>

#include <algorithm>

namespace tessera::codegen::cuda {

using namespace llvm;

// ---------------------------------------------------------------- values in memory

std::string Printer::bitsType(Type *t) {
  if (auto *v = dyn_cast<FixedVectorType>(t)) {
    Type *elem = v->getElementType();
    if (!elem->isIntegerTy() && !elem->isFloatingPointTy()) fail("LLVM vector type '" + printed(t) + "'");
    need("vec");
    return "tsr_vec<" + bitsType(elem) + ", " + std::to_string(v->getNumElements()) + ">";
  }
  if (t->isPointerTy()) return "unsigned long long";
  if (t->isIntegerTy(1)) fail("memory access of type i1");
  if (t->isIntegerTy()) return cType(t);
  switch (t->getPrimitiveSizeInBits()) {
  case 16: return "unsigned short";
  case 32: return "unsigned int";
  case 64: return "unsigned long long";
  }
  fail("memory access of type '" + printed(t) + "'");
}

std::string Printer::fromBits(const std::string &bits, Type *t) {
  if (t->isFloatTy()) return "__uint_as_float(" + bits + ")";
  if (t->isDoubleTy()) return "__longlong_as_double((long long)" + bits + ")";
  if (t->isPointerTy()) return "(unsigned char *)" + bits;
  if (auto *v = dyn_cast<FixedVectorType>(t); v && v->getElementType()->isFloatingPointTy() &&
                                               !isHalfLike(v->getElementType())) {
    need("bitcast");
    return "tsr_bitcast<" + cType(t) + ">(" + bits + ")";
  }
  return bits; // integers, f16/bf16 bits, vectors of them
}

std::string Printer::toBits(const Value *v) {
  Type *t = v->getType();
  if (t->isFloatTy()) return "__float_as_uint(" + expr(v) + ")";
  if (t->isDoubleTy()) return "(unsigned long long)__double_as_longlong(" + expr(v) + ")";
  if (t->isPointerTy()) return "(unsigned long long)" + expr(v);
  if (auto *vt = dyn_cast<FixedVectorType>(t); vt && vt->getElementType()->isFloatingPointTy() &&
                                                !isHalfLike(vt->getElementType())) {
    need("bitcast");
    return "tsr_bitcast<" + bitsType(t) + ">(" + expr(v) + ")";
  }
  return expr(v);
}

// ---------------------------------------------------------------- loads and stores

std::string Printer::loadExpr(const LoadInst &load) {
  if (load.isAtomic()) failInstruction(load);
  Type *t = load.getType();
  if (t->isVectorTy() && load.getAlign().value() < dl_.getTypeAllocSize(t))
    fail("vector load with less than its size's alignment (" + printed(&load) + ")");
  return fromBits(std::string("*(") + (load.isVolatile() ? "volatile " : "") + "const " + bitsType(t) + " *)" +
                      expr(load.getPointerOperand()),
                  t);
}

void Printer::storeStatement(const StoreInst &store) {
  if (store.isAtomic()) failInstruction(store);
  Type *t = store.getValueOperand()->getType();
  if (t->isVectorTy() && store.getAlign().value() < dl_.getTypeAllocSize(t))
    fail("vector store with less than its size's alignment (" + printed(&store) + ")");
  line(std::string("*(") + (store.isVolatile() ? "volatile " : "") + bitsType(t) + " *)" +
       expr(store.getPointerOperand()) + " = " + toBits(store.getValueOperand()) + ";");
}

// ---------------------------------------------------------------- addresses

std::string Printer::gep(const GetElementPtrInst &inst) {
  if (inst.getType()->isVectorTy()) failInstruction(inst);
  int64_t constant = 0;
  std::string terms;
  for (gep_type_iterator it = gep_type_begin(inst), end = gep_type_end(inst); it != end; ++it) {
    const Value *index = it.getOperand();
    if (StructType *st = it.getStructTypeOrNull()) {
      constant += static_cast<int64_t>(dl_.getStructLayout(st)->getElementOffset(
          static_cast<unsigned>(cast<ConstantInt>(index)->getZExtValue())));
      continue;
    }
    const int64_t stride = static_cast<int64_t>(it.getSequentialElementStride(dl_).getFixedValue());
    if (auto *c = dyn_cast<ConstantInt>(index)) {
      constant += c->getSExtValue() * stride;
      continue;
    }
    const unsigned bits = intBits(index->getType());
    std::string term = bits == 64 ? "(long long)" + expr(index) : "(long long)(" + signedType(bits) + ")" + expr(index);
    terms += " + " + (stride == 1 ? term : term + " * " + std::to_string(stride));
  }
  std::string out = expr(inst.getPointerOperand()) + terms;
  if (constant > 0) out += " + " + std::to_string(constant);
  if (constant < 0) out += " - " + std::to_string(-constant);
  return out;
}

std::string Printer::globalName(const GlobalVariable &g) {
  auto it = globalNames_.find(&g);
  if (it != globalNames_.end()) return it->second;
  std::string name;
  if (g.getAddressSpace() == 3) {
    // The dynamic shared buffer: a zero-length external array.
    auto *array = dyn_cast<ArrayType>(g.getValueType());
    if (g.hasInitializer() || !array || array->getNumElements() != 0)
      fail("shared-memory global '" + g.getName().str() + "' (only the dynamic shared buffer is supported)");
    name = g.getName() == "global_smem" ? "global_smem" : uniqueName(g.getName().str(), taken_);
    globalDecls_.push_back("extern __shared__ __align__(" + std::to_string(std::max<uint64_t>(16, g.getAlign().valueOrOne().value())) +
                           ") unsigned char " + name + "[];");
  } else {
    // Constant byte strings (format strings of tl.device_print, assert messages).
    auto *data = g.hasInitializer() ? dyn_cast<ConstantDataArray>(g.getInitializer()) : nullptr;
    if (!g.isConstant() || !data || !data->isString())
      fail("global variable '" + g.getName().str() + "' (only constant strings are supported)");
    StringRef bytes = data->getAsString();
    name = uniqueName(g.getName().str(), taken_);
    std::string size = std::to_string(bytes.size());
    if (!bytes.empty() && bytes.back() == '\0')
      globalDecls_.push_back("static __device__ const char " + name + "[" + size + "] = " +
                             quoted(bytes.drop_back()) + ";");
    else {
      std::string list;
      for (unsigned char c : bytes) list += (list.empty() ? "" : ", ") + std::to_string(c);
      globalDecls_.push_back("static __device__ const char " + name + "[" + size + "] = {" + list + "};");
    }
  }
  return globalNames_[&g] = name;
}

} // namespace tessera::codegen::cuda
