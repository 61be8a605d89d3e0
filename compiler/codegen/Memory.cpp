// Global loads and stores, vectorised: when the axis analysis proves
// (attributes contiguity, alignment, mask_constancy on the op) that `vec`
// consecutive registers of a thread are consecutive, aligned addresses under
// one mask bit, they move in one access of 32, 64 or 128 bits
// (ld.global.v4.b32: 4 x fp32, or 8 x bf16 packed two per b32 word).
// Masked accesses, and accesses with a cache modifier (.ca/.cg/.cs/.cv;
// stores .wb/.cg/.cs/.wt) or an eviction policy (evict_first/evict_last:
// .L1::evict_* plus an L2 createpolicy operand), are predicated inline PTX
// (`@p ld.global...`), as in Triton: no branch per element, `other` moved
// into the destination first. Plain ones are ordinary LLVM vector loads and
// stores the optimiser can see through. A store is done only by the thread
// that owns the elements (replicated layouts).
//
// Except when a thread stores very many times (a 256x256 fp32 tile unaligned:
// 512 stores a thread): then plain stores are inline PTX too (and plain loads,
// when there are very many of them). LLVM's
// SelectionDAG combiner compares each plain store with the others of its basic
// block (store merging, alias chains), which grows faster than quadratically:
// 16 s to 300 s for one kernel (issue 32). Inline stores keep the compile time
// linear in the block size; ptxas still folds their address arithmetic.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

#include <algorithm>
#include <optional>

namespace tessera::codegen {

using namespace llvm;

namespace {

unsigned floorPowerOfTwo(int64_t v) {
  unsigned p = 1;
  while (int64_t{p} * 2 <= v) p *= 2;
  return p;
}

// The PTX spelling of an access: qualifiers after ld/st, register class.
struct AccessForm {
  unsigned units = 1;     // registers moved (b32 words, or one 8/16-bit value)
  unsigned unitBits = 32;
  std::string ptxType;    // "b32", "b16", "u8"
  const char *constraint; // "r" or "h"
  std::string qualifiers; // ".global.cg.L2::cache_hint", ...
  std::string eviction;   // "evict_first"/"evict_last": needs a policy operand
};

std::string stripDot(std::string s) { return !s.empty() && s[0] == '.' ? s.substr(1) : s; }

AccessForm accessForm(const ir::Operation &op, unsigned vec, unsigned elemBits, bool isLoad) {
  AccessForm f;
  unsigned total = vec * elemBits;
  if (total >= 32) {
    f.units = total / 32;
    f.ptxType = "b32";
    f.constraint = "r";
  } else { // one 8- or 16-bit element, in a 16-bit register
    f.unitBits = 16;
    f.ptxType = elemBits == 8 ? "u8" : "b16";
    f.constraint = "h";
  }
  std::string cache = op.hasAttr("cache") ? stripDot(op.stringAttr("cache")) : "";
  std::string eviction = op.hasAttr("eviction") ? op.stringAttr("eviction") : "";
  const bool isVolatile = isLoad && op.hasAttr("volatile") && op.intAttr("volatile");
  static const char *loadCaches[] = {"ca", "cg", "cs", "cv", "lu"};
  static const char *storeCaches[] = {"wb", "cg", "cs", "wt"};
  if (!cache.empty()) {
    bool known = false;
    for (const char *c : isLoad ? std::vector<const char *>(std::begin(loadCaches), std::end(loadCaches))
                                : std::vector<const char *>(std::begin(storeCaches), std::end(storeCaches)))
      known = known || cache == c;
    if (!known)
      notSupported(op, "unknown cache modifier '." + cache + "' for a " + (isLoad ? "load" : "store") +
                          (isLoad ? " (.ca, .cg, .cs, .cv, .lu)" : " (.wb, .cg, .cs, .wt)"));
  }
  if (!eviction.empty() && eviction != "evict_first" && eviction != "evict_last" && eviction != "evict_normal")
    notSupported(op, "unknown eviction policy '" + eviction + "' (evict_first, evict_last, evict_normal)");
  if (isVolatile) { // ld.volatile takes no cache qualifiers
    f.qualifiers = ".volatile.global";
    return f;
  }
  f.qualifiers = ".global";
  if (!cache.empty())
    f.qualifiers += "." + cache; // a cache operator excludes the L1 eviction priority
  else if (eviction == "evict_first" || eviction == "evict_last")
    f.qualifiers += ".L1::" + eviction;
  if (eviction == "evict_first" || eviction == "evict_last") {
    f.qualifiers += ".L2::cache_hint";
    f.eviction = eviction;
  }
  return f;
}

bool needsAsm(const AccessForm &f, Value *pred) {
  return pred || f.qualifiers != ".global";
}

// Plain stores a thread may issue, over the whole kernel, before they all become
// inline PTX: below it LLVM's instruction selection stays fast (64 stores of a
// 32x256 fp32 tile: 0.07 s; 128: 1 s; 256: 11 s), and every bundled kernel is
// below it, so its PTX is unchanged.
constexpr unsigned kMaxPlainStores = 64;
// The same for loads: past it, O3's VectorCombine (which compares each vector load with
// the instructions after it) took 3.4 s of the 1024 x 1024 aligned tile, and llc's
// load/store vectorizer 1.4 s more.
constexpr unsigned kMaxPlainLoads = 64;

std::string operandList(unsigned first, unsigned n) {
  if (n == 1) return "$" + std::to_string(first);
  std::string s = "{";
  for (unsigned i = 0; i < n; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

} // namespace

unsigned KernelLowering::vectorWidth(const ir::Operation &op, const DistributedLayout &layout,
                                     unsigned elemBits, bool masked) const {
  if (!op.hasAttr("contiguity") || !op.hasAttr("alignment"))
    return 1;
  // Consecutive registers run along the fastest dim the value has.
  unsigned base = layout.baseRank();
  for (unsigned d : layout.order())
    if (!layout.dim(d).sliced) {
      base = d;
      break;
    }
  auto valueDim = std::find(layout.valueDims().begin(), layout.valueDims().end(), base);
  if (valueDim == layout.valueDims().end())
    return 1;
  size_t vd = static_cast<size_t>(valueDim - layout.valueDims().begin());
  const DimMap &m = layout.dim(base);
  const std::vector<int64_t> &contiguity = op.arrayAttr("contiguity"), &alignment = op.arrayAttr("alignment");
  if (vd >= contiguity.size() || vd >= alignment.size())
    return 1;
  int64_t vec = std::min<int64_t>(m.contiguousPerThread(), m.extent);
  vec = std::min(vec, contiguity[vd]);
  vec = std::min<int64_t>(vec, std::max<int64_t>(1, alignment[vd] * 8 / elemBits));
  vec = std::min<int64_t>(vec, 128 / elemBits);
  if (masked) {
    if (!op.hasAttr("mask_constancy") || vd >= op.arrayAttr("mask_constancy").size())
      return 1;
    vec = std::min(vec, op.arrayAttr("mask_constancy")[vd]);
  }
  unsigned v = floorPowerOfTwo(std::max<int64_t>(1, vec));
  return v * elemBits < 32 ? 1 : v; // narrower than a word: element by element
}

Value *KernelLowering::cachePolicy(const std::string &eviction) {
  return inEntry("policy/" + eviction, [&](IRBuilder<> &eb) -> Value * {
    auto *type = FunctionType::get(eb.getInt64Ty(), {}, false);
    InlineAsm *create = InlineAsm::get(type, "createpolicy.fractional.L2::" + eviction + ".b64 $0, 1.0;",
                                       "=l", /*hasSideEffects=*/false);
    return eb.CreateCall(create, {}, "policy");
  });
}

// Elements (memory types: i8 for bools, ptr, floats, ints) <-> raw units.
static Value *toBits(IRBuilder<> &b, Value *v, unsigned bits) {
  if (v->getType()->isPointerTy()) return b.CreatePtrToInt(v, b.getIntNTy(bits));
  return v->getType()->isIntegerTy() ? v : b.CreateBitCast(v, b.getIntNTy(bits));
}
static Value *fromBits(IRBuilder<> &b, Value *v, Type *memTy) {
  if (memTy->isPointerTy()) return b.CreateIntToPtr(v, memTy);
  return v->getType() == memTy ? v : b.CreateBitCast(v, memTy);
}

static SmallVector<Value *, 4> packUnits(IRBuilder<> &b, ArrayRef<Value *> elems, unsigned elemBits,
                                         const AccessForm &f) {
  if (f.unitBits == 16) // one narrow element
    return {b.CreateZExt(toBits(b, elems[0], elemBits), b.getInt16Ty())};
  Value *vec = PoisonValue::get(FixedVectorType::get(b.getIntNTy(elemBits), elems.size()));
  for (unsigned i = 0; i < elems.size(); ++i) vec = b.CreateInsertElement(vec, toBits(b, elems[i], elemBits), i);
  Value *words = b.CreateBitCast(vec, FixedVectorType::get(b.getInt32Ty(), f.units));
  SmallVector<Value *, 4> out;
  for (unsigned i = 0; i < f.units; ++i) out.push_back(b.CreateExtractElement(words, i));
  return out;
}

static Regs unpackUnits(IRBuilder<> &b, ArrayRef<Value *> units, unsigned vec, unsigned elemBits, Type *memTy,
                        const AccessForm &f) {
  if (f.unitBits == 16)
    return {fromBits(b, b.CreateTrunc(units[0], b.getIntNTy(elemBits)), memTy)};
  Value *words = PoisonValue::get(FixedVectorType::get(b.getInt32Ty(), f.units));
  for (unsigned i = 0; i < f.units; ++i) words = b.CreateInsertElement(words, units[i], i);
  Value *vecBits = b.CreateBitCast(words, FixedVectorType::get(b.getIntNTy(elemBits), vec));
  Regs out;
  for (unsigned i = 0; i < vec; ++i) out.push_back(fromBits(b, b.CreateExtractElement(vecBits, i), memTy));
  return out;
}

Regs KernelLowering::loadVector(ir::Operation &op, Type *memTy, unsigned vec, Value *ptr, Value *pred,
                                ArrayRef<Value *> others) {
  const unsigned elemBits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  if (elemBits != 8 && elemBits != 16 && elemBits != 32 && elemBits != 64)
    unsupported(op, "load of a " + std::to_string(elemBits) + "-bit element");
  AccessForm f = accessForm(op, vec, elemBits, /*isLoad=*/true);
  Type *unitTy = b_.getIntNTy(f.unitBits);

  if (!needsAsm(f, pred) && !manyGlobalLoads()) {
    if (vec == 1)
      return {b_.CreateAlignedLoad(memTy, ptr, Align(elemBits / 8))};
    auto *wordsTy = FixedVectorType::get(b_.getInt32Ty(), f.units);
    Value *words = b_.CreateAlignedLoad(wordsTy, ptr, Align(vec * elemBits / 8));
    SmallVector<Value *, 4> units;
    for (unsigned i = 0; i < f.units; ++i) units.push_back(b_.CreateExtractElement(words, i));
    return unpackUnits(b_, units, vec, elemBits, memTy, f);
  }

  // Operands: outputs $0..$n-1, then ptr, [pred], [policy], [fallbacks].
  const unsigned n = f.units;
  std::vector<Value *> args = {ptr};
  std::vector<Type *> argTypes = {ptr->getType()};
  std::string constraints;
  for (unsigned i = 0; i < n; ++i) constraints += std::string(i ? ",=" : "=") + f.constraint;
  constraints += ",l";
  unsigned next = n + 1;
  std::string text, predText, policyText;
  if (pred) {
    args.push_back(pred);
    argTypes.push_back(b_.getInt1Ty());
    constraints += ",b";
    predText = "@$" + std::to_string(next++) + " ";
  }
  if (!f.eviction.empty()) {
    args.push_back(cachePolicy(f.eviction));
    argTypes.push_back(b_.getInt64Ty());
    constraints += ",l";
    policyText = ", $" + std::to_string(next++);
  }
  if (pred) { // masked-off lanes keep `other` (or zero)
    SmallVector<Value *, 16> fallback;
    for (unsigned i = 0; i < vec; ++i)
      fallback.push_back(i < others.size() && others[i] ? others[i] : Constant::getNullValue(memTy));
    SmallVector<Value *, 4> units = packUnits(b_, fallback, elemBits, f);
    const char *mov = f.unitBits == 16 ? "mov.b16" : "mov.b32";
    for (unsigned i = 0; i < n; ++i) {
      args.push_back(units[i]);
      argTypes.push_back(unitTy);
      constraints += std::string(",") + f.constraint;
      text += std::string(mov) + " $" + std::to_string(i) + ", $" + std::to_string(next++) + ";\n\t";
    }
  }
  text += predText + "ld" + f.qualifiers + (n > 1 ? ".v" + std::to_string(n) : "") + "." + f.ptxType + " " +
          operandList(0, n) + ", [$" + std::to_string(n) + "]" + policyText + ";";

  Type *resultTy = unitTy;
  if (n > 1) resultTy = StructType::get(ctx_, SmallVector<Type *, 4>(n, unitTy));
  auto *asmType = FunctionType::get(resultTy, argTypes, false);
  const bool isVolatile = op.hasAttr("volatile") && op.intAttr("volatile");
  CallInst *call = b_.CreateCall(InlineAsm::get(asmType, text, constraints, /*hasSideEffects=*/isVolatile), args);
  if (!isVolatile) call->setOnlyReadsMemory(); // may be CSE'd, never moved across stores
  call->setDoesNotThrow();
  SmallVector<Value *, 4> units;
  for (unsigned i = 0; i < n; ++i) units.push_back(n == 1 ? call : b_.CreateExtractValue(call, i));
  return unpackUnits(b_, units, vec, elemBits, memTy, f);
}

void KernelLowering::storeVector(ir::Operation &op, Type *memTy, Value *ptr, ArrayRef<Value *> values, Value *pred) {
  const unsigned elemBits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  if (elemBits != 8 && elemBits != 16 && elemBits != 32 && elemBits != 64)
    unsupported(op, "store of a " + std::to_string(elemBits) + "-bit element");
  const unsigned vec = static_cast<unsigned>(values.size());
  AccessForm f = accessForm(op, vec, elemBits, /*isLoad=*/false);
  if (!needsAsm(f, pred) && !manyGlobalStores()) {
    if (vec == 1) {
      b_.CreateAlignedStore(values[0], ptr, Align(elemBits / 8));
      return;
    }
    SmallVector<Value *, 4> units = packUnits(b_, values, elemBits, f);
    Value *words = PoisonValue::get(FixedVectorType::get(b_.getInt32Ty(), f.units));
    for (unsigned i = 0; i < f.units; ++i) words = b_.CreateInsertElement(words, units[i], i);
    b_.CreateAlignedStore(words, ptr, Align(vec * elemBits / 8));
    return;
  }
  // Operands: ptr $0, values $1..$n, [pred], [policy].
  const unsigned n = f.units;
  SmallVector<Value *, 4> units = packUnits(b_, values, elemBits, f);
  std::vector<Value *> args = {ptr};
  std::vector<Type *> argTypes = {ptr->getType()};
  std::string constraints = "l";
  for (unsigned i = 0; i < n; ++i) {
    args.push_back(units[i]);
    argTypes.push_back(units[i]->getType());
    constraints += std::string(",") + f.constraint;
  }
  unsigned next = n + 1;
  std::string predText, policyText;
  if (pred) {
    args.push_back(pred);
    argTypes.push_back(b_.getInt1Ty());
    constraints += ",b";
    predText = "@$" + std::to_string(next++) + " ";
  }
  if (!f.eviction.empty()) {
    args.push_back(cachePolicy(f.eviction));
    argTypes.push_back(b_.getInt64Ty());
    constraints += ",l";
    policyText = ", $" + std::to_string(next++);
  }
  constraints += ",~{memory}";
  std::string type = f.unitBits == 16 && elemBits == 8 ? "u8" : f.ptxType;
  std::string text = predText + "st" + f.qualifiers + (n > 1 ? ".v" + std::to_string(n) : "") + "." + type +
                     " [$0], " + operandList(1, n) + policyText + ";";
  auto *asmType = FunctionType::get(b_.getVoidTy(), argTypes, false);
  b_.CreateCall(InlineAsm::get(asmType, text, constraints, /*hasSideEffects=*/true), args)->setDoesNotThrow();
}

// Accesses of `code` (Load or Store) a thread issues over the kernel (each op once).
unsigned KernelLowering::globalAccessCount(ir::OpCode code) const {
  unsigned accesses = 0;
  ir::walk(fn_.body, [&](ir::Operation &op) {
    if (op.code != code || !op.operand(0)->type.isBlock()) return;
    const bool isStore = code == ir::OpCode::Store;
    const ir::Type elem = isStore ? op.operand(1)->type.element() : op.result()->type.element();
    Type *memTy = memoryType(elem, &op);
    const unsigned elemBits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
    DistributedLayout layout = layoutOf(op.operand(0), op);
    const bool masked = isStore ? op.storeMask() != nullptr : op.loadMask() != nullptr;
    accesses += layout.numRegs() / vectorWidth(op, layout, elemBits, masked);
  });
  return accesses;
}

bool KernelLowering::manyGlobalStores() {
  if (!manyGlobalStores_) manyGlobalStores_ = globalAccessCount(ir::OpCode::Store) > kMaxPlainStores;
  return *manyGlobalStores_;
}

bool KernelLowering::manyGlobalLoads() {
  if (!manyGlobalLoads_) manyGlobalLoads_ = globalAccessCount(ir::OpCode::Load) > kMaxPlainLoads;
  return *manyGlobalLoads_;
}

void KernelLowering::lowerLoad(ir::Operation &op) {
  const ir::Type elem = op.result()->type.element();
  Type *memTy = memoryType(elem, &op);
  const bool isBool = !elem.pointer && elem.scalar == ir::ScalarType::I1;
  const unsigned elemBits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  unsigned n = numRegs(op.result(), op);
  const Regs &ptrs = lookup(op.operand(0));
  const Regs *masks = op.loadMask() ? &lookup(op.loadMask()) : nullptr;
  const Regs *others = op.loadOther() ? &lookup(op.loadOther()) : nullptr;
  if (ptrs.size() != n || (masks && masks->size() != n) || (others && others->size() != n))
    unsupported(op, "pointer, mask and other must share the result's layout");
  unsigned vec = 1;
  if (op.result()->type.isBlock())
    vec = vectorWidth(op, layoutOf(op.result(), op), elemBits, masks != nullptr);

  Regs out;
  for (unsigned r = 0; r < n; r += vec) {
    SmallVector<Value *, 16> fallback;
    for (unsigned i = 0; others && i < vec; ++i)
      fallback.push_back(isBool ? b_.CreateZExt((*others)[r + i], memTy) : (*others)[r + i]);
    Regs v = loadVector(op, memTy, vec, ptrs[r], masks ? (*masks)[r] : nullptr, fallback);
    for (Value *x : v)
      out.push_back(isBool ? b_.CreateICmpNE(x, ConstantInt::get(memTy, 0)) : x);
  }
  define(op.result(), std::move(out));
}

void KernelLowering::lowerStore(ir::Operation &op) {
  ir::Value *ptrValue = op.operand(0);
  const ir::Type elem = op.operand(1)->type.element();
  Type *memTy = memoryType(elem, &op);
  const unsigned elemBits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  const Regs &ptrs = lookup(ptrValue);
  const Regs &values = lookup(op.operand(1));
  const Regs *masks = op.storeMask() ? &lookup(op.storeMask()) : nullptr;
  if (values.size() != ptrs.size() || (masks && masks->size() != ptrs.size()))
    unsupported(op, "pointer, value and mask must share one layout");

  std::optional<DistributedLayout> layout;
  unsigned vec = 1;
  if (ptrValue->type.isBlock()) {
    layout.emplace(layoutOf(ptrValue, op));
    vec = vectorWidth(op, *layout, elemBits, masks != nullptr);
  }
  for (unsigned r = 0; r < ptrs.size(); r += vec) {
    // A vector is all copies or all owned, under one mask bit (vectorWidth).
    Value *pred;
    if (layout) {
      if (layout->isDuplicateRegister(r))
        continue; // this register is a copy in every thread
      pred = ownerPredicate(*layout, r);
    } else {
      pred = b_.CreateICmpEQ(tid_, i32(0)); // a scalar store: thread 0 only
    }
    if (masks)
      pred = andPredicates(pred, (*masks)[r]);
    SmallVector<Value *, 16> group;
    for (unsigned i = 0; i < vec; ++i) {
      Value *v = values[r + i];
      group.push_back(memTy != v->getType() ? b_.CreateZExt(v, memTy) : v); // i1 -> i8
    }
    storeVector(op, memTy, ptrs[r], group, pred);
  }
}

} // namespace tessera::codegen
