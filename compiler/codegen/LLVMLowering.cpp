// Block IR -> LLVM IR: the kernel function, value bookkeeping, index math,
// creation ops, register mappings and structured control flow.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>

#include <stdexcept>

namespace tessera::codegen {

using namespace llvm;

std::string describe(const ir::Operation &op) {
  std::string text = std::string("'") + ir::mnemonic(op.code) + "'";
  if (op.loc.line == 0)
    return text + " (no source location)";
  return text + " at " + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col);
}

void unsupported(const ir::Operation &op, const std::string &why) {
  throw std::runtime_error("codegen: cannot lower " + describe(op) + ": " + why);
}

void notSupported(const ir::Operation &op, const std::string &why) {
  throw UnsupportedError("codegen: cannot lower " + describe(op) + ": " + why, op.loc, why);
}

KernelLowering::KernelLowering(ir::Function &fn, Module &module)
    : fn_(fn), module_(module), ctx_(module.getContext()), b_(module.getContext()) {}

// ------------------------------------------------------------ values, types

const Regs &KernelLowering::lookup(const ir::Value *v) const {
  auto it = regs_.find(v);
  if (it == regs_.end())
    throw std::logic_error("codegen: value used before it was lowered");
  return it->second;
}

void KernelLowering::define(const ir::Value *v, Regs regs) { regs_[v] = std::move(regs); }

Type *KernelLowering::elementType(const ir::Type &t, const ir::Operation *op) const {
  if (t.pointer)
    return PointerType::get(ctx_, 1);
  switch (t.scalar) {
  case ir::ScalarType::I1: return Type::getInt1Ty(ctx_);
  case ir::ScalarType::I8: case ir::ScalarType::U8: return Type::getInt8Ty(ctx_);
  case ir::ScalarType::I16: case ir::ScalarType::U16: return Type::getInt16Ty(ctx_);
  case ir::ScalarType::I32: case ir::ScalarType::U32: return Type::getInt32Ty(ctx_);
  case ir::ScalarType::I64: case ir::ScalarType::U64: return Type::getInt64Ty(ctx_);
  case ir::ScalarType::F16: return Type::getHalfTy(ctx_);
  case ir::ScalarType::BF16: return Type::getBFloatTy(ctx_);
  case ir::ScalarType::F32: return Type::getFloatTy(ctx_);
  case ir::ScalarType::F64: return Type::getDoubleTy(ctx_);
  case ir::ScalarType::F8E4M3: case ir::ScalarType::F8E5M2: case ir::ScalarType::F8E4B15:
    return Type::getInt8Ty(ctx_); // fp8 travels as its bits; casts convert (MathOps.cpp)
  }
  throw std::runtime_error("codegen: unknown element type");
}

Type *KernelLowering::memoryType(const ir::Type &elem, const ir::Operation *op) const {
  if (!elem.pointer && elem.scalar == ir::ScalarType::I1)
    return Type::getInt8Ty(ctx_); // bools live in memory as bytes
  return elementType(elem, op);
}

DistributedLayout KernelLowering::layoutOf(const ir::Value *v, const ir::Operation &op) const {
  if (!v->layout)
    unsupported(op, "block value " + v->type.str() + " has no layout (run assignLayouts first)");
  try {
    DistributedLayout layout(*v->layout, v->type.shape);
    if (layout.numWarps() != fn_.numWarps)
      unsupported(op, "layout " + v->layout->str() + " does not use num_warps = " +
                          std::to_string(fn_.numWarps) + " warps");
    return layout;
  } catch (const std::invalid_argument &e) {
    unsupported(op, e.what());
  }
}

unsigned KernelLowering::numRegs(const ir::Value *v, const ir::Operation &op) const {
  return v->type.isBlock() ? layoutOf(v, op).numRegs() : 1;
}

// ---------------------------------------------------------------- index math

Value *KernelLowering::inEntry(const std::string &key,
                               const std::function<Value *(IRBuilder<> &)> &make) {
  auto it = entryCache_.find(key);
  if (it != entryCache_.end())
    return it->second;
  IRBuilder<> entryBuilder(entry_); // appends; entry_ gets its branch at the end
  return entryCache_[key] = make(entryBuilder);
}

Value *KernelLowering::laneIndex(const DimMap &m) {
  if (m.threadsPerWarp == 1)
    return i32(0);
  return inEntry("lane/" + std::to_string(m.laneStride) + "/" + std::to_string(m.threadsPerWarp),
                 [&](IRBuilder<> &eb) {
                   Value *shifted = eb.CreateLShr(lane_, log2Exact(m.laneStride));
                   return eb.CreateAnd(shifted, m.threadsPerWarp - 1, "lane.idx");
                 });
}

Value *KernelLowering::warpIndex(const DimMap &m) {
  if (m.warpsPerCTA == 1)
    return i32(0);
  return inEntry("warp/" + std::to_string(m.warpStride) + "/" + std::to_string(m.warpsPerCTA),
                 [&](IRBuilder<> &eb) {
                   Value *shifted = eb.CreateLShr(warp_, log2Exact(m.warpStride));
                   return eb.CreateAnd(shifted, m.warpsPerCTA - 1, "warp.idx");
                 });
}

Value *KernelLowering::uniformWarp() {
  return inEntry("uwarp", [&](IRBuilder<> &eb) {
    // Lane 0's warp number, read through a shuffle: ptxas then knows it is the same in
    // every lane and keeps what is computed from it in uniform registers.
    return eb.CreateIntrinsic(Intrinsic::nvvm_shfl_sync_idx_i32, {},
                              {eb.getInt32(-1), warp_, eb.getInt32(0), eb.getInt32(kWarpSize - 1)}, nullptr,
                              "warp.u");
  });
}

Value *KernelLowering::uniformWarpIndex(const DimMap &m) {
  if (m.warpsPerCTA == 1)
    return i32(0);
  Value *warp = uniformWarp();
  return inEntry("uwarp/" + std::to_string(m.warpStride) + "/" + std::to_string(m.warpsPerCTA),
                 [&](IRBuilder<> &eb) {
                   Value *shifted = eb.CreateLShr(warp, log2Exact(m.warpStride));
                   return eb.CreateAnd(shifted, m.warpsPerCTA - 1, "warp.uidx");
                 });
}

Value *KernelLowering::threadOffset(const DimMap &m) {
  Value *lane = laneIndex(m), *warp = warpIndex(m);
  std::string key = "offset/" + std::to_string(m.laneStride) + "/" +
                    std::to_string(m.threadsPerWarp) + "/" + std::to_string(m.warpStride) + "/" +
                    std::to_string(m.warpsPerCTA) + "/" + std::to_string(m.sizePerThread) + "/" +
                    std::to_string(m.laneMultiplier());
  return inEntry(key, [&](IRBuilder<> &eb) {
    Value *fromWarp = eb.CreateMul(warp, eb.getInt32(m.threadsPerWarp * m.sizePerThread));
    Value *fromLane = eb.CreateMul(lane, eb.getInt32(m.laneMultiplier()));
    return eb.CreateAdd(fromWarp, fromLane, "thread.offset");
  });
}

std::vector<Value *> KernelLowering::coordinates(const DistributedLayout &layout, unsigned reg) {
  std::vector<unsigned> index = layout.regIndex(reg);
  std::vector<Value *> coords;
  for (unsigned d : layout.valueDims()) {
    const DimMap &m = layout.dim(d);
    if (m.extent == 1) {
      coords.push_back(i32(0));
      continue;
    }
    Value *c = b_.CreateAdd(i32(m.regOffset(index[d])), threadOffset(m));
    if (m.wraps()) // copies of a smaller block: wrap around
      c = b_.CreateAnd(c, i32(m.extent - 1));
    coords.push_back(c);
  }
  return coords;
}

Value *KernelLowering::linearIndex(const std::vector<Value *> &coords,
                                   const std::vector<int64_t> &shape) {
  Value *index = i32(0);
  for (size_t i = 0; i < shape.size(); ++i)
    index = b_.CreateAdd(b_.CreateMul(index, i32(shape[i])), coords[i]);
  return index;
}

Value *KernelLowering::andPredicates(Value *a, Value *b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return b_.CreateAnd(a, b);
}

Value *KernelLowering::ownerPredicate(const DistributedLayout &layout, unsigned reg) {
  std::vector<unsigned> index = layout.regIndex(reg);
  Value *pred = nullptr;
  for (unsigned d = 0; d < layout.baseRank(); ++d) {
    const DimMap &m = layout.dim(d);
    if (!m.wraps())
      continue;
    Value *unwrapped = b_.CreateAdd(i32(m.regOffset(index[d])), threadOffset(m));
    Value *owns = b_.CreateICmpULT(unwrapped, i32(m.extent));
    if (auto *c = dyn_cast<ConstantInt>(owns); c && c->isOne())
      continue;
    pred = andPredicates(pred, owns);
  }
  return pred;
}

// ------------------------------------------------------------------ kernel

Function *KernelLowering::run() {
  std::vector<Type *> paramTypes;
  for (auto &arg : fn_.body.args) {
    if (arg->type.isBlock())
      throw std::runtime_error("codegen: kernel parameter '" + arg->nameHint + "' is a block");
    // A tensor descriptor: the 128-byte CUtensorMap, by value (byval + grid_constant below).
    paramTypes.push_back(arg->type.isTensorDesc() ? PointerType::get(ctx_, 0) : elementType(arg->type, nullptr));
  }
  auto *fnType = FunctionType::get(Type::getVoidTy(ctx_), paramTypes, false);
  kernel_ = Function::Create(fnType, GlobalValue::ExternalLinkage, fn_.name, module_);
  kernel_->setCallingConv(CallingConv::PTX_Kernel);
  kernel_->addFnAttr(Attribute::NoUnwind);
  for (unsigned i = 0; i < fn_.body.args.size(); ++i) {
    Argument *arg = kernel_->getArg(i);
    arg->setName(fn_.body.args[i]->nameHint);
    int divisibility = i < fn_.params.size() ? fn_.params[i].divisibility : 1;
    if (fn_.body.args[i]->type.pointer && divisibility >= 16) {
      uint64_t align = 16; // the largest power of two dividing it, capped
      while (align < 256 && divisibility % (align * 2) == 0)
        align *= 2;
      arg->addAttr(Attribute::getWithAlignment(ctx_, Align(align)));
    }
  }
  // The calling convention makes it a .entry; the annotations carry the
  // block size bound (and mark the kernel for older consumers).
  NamedMDNode *annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char *key, unsigned value) {
    Metadata *ops[] = {ValueAsMetadata::get(kernel_), MDString::get(ctx_, key),
                       ConstantAsMetadata::get(b_.getInt32(value))};
    annotations->addOperand(MDNode::get(ctx_, ops));
  };
  annotate("kernel", 1);
  // .reqntid, as Triton: the exact block size. With only .maxntid ptxas may budget registers for
  // smaller blocks: SGLang's MLA extend attention (32 x 576 q, 32 x 512 accumulator, 8 warps)
  // got 32 registers and 20 KB of spills, 255 and 3.4 KB with .reqntid.
  annotate("reqntidx", kWarpSize * ir::launchedWarps(fn_));
  if (rebalancesRegisters()) annotate("minctasm", 1); // fixes the register count setmaxnreg starts from
  if (maxRegisters_)
    annotate("maxnreg", maxRegisters_);
  // Descriptors stay in the parameter space, where the TMA unit reads them
  // (CUDA's __grid_constant__): no local copy, their generic address is used.
  std::vector<Metadata *> gridConstants;
  for (unsigned i = 0; i < fn_.body.args.size(); ++i)
    if (fn_.body.args[i]->type.isTensorDesc()) {
      kernel_->getArg(i)->addAttr(Attribute::getWithByValType(ctx_, ArrayType::get(b_.getInt8Ty(), 128)));
      kernel_->getArg(i)->addAttr(Attribute::getWithAlignment(ctx_, Align(64)));
      gridConstants.push_back(ConstantAsMetadata::get(b_.getInt32(i + 1))); // 1-based
    }
  if (!gridConstants.empty()) {
    Metadata *ops[] = {ValueAsMetadata::get(kernel_), MDString::get(ctx_, "grid_constant"),
                       MDNode::get(ctx_, gridConstants)};
    annotations->addOperand(MDNode::get(ctx_, ops));
  }

  entry_ = BasicBlock::Create(ctx_, "entry", kernel_);
  b_.SetInsertPoint(entry_);
  tid_ = b_.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}, nullptr, "tid");
  lane_ = b_.CreateAnd(tid_, kWarpSize - 1, "lane");
  warp_ = b_.CreateLShr(tid_, log2Exact(kWarpSize), "warp");
  BasicBlock *body = BasicBlock::Create(ctx_, "body", kernel_);
  b_.SetInsertPoint(body);
  for (unsigned i = 0; i < fn_.body.args.size(); ++i)
    define(fn_.body.args[i].get(), {kernel_->getArg(i)});
  lowerBlock(fn_.body);
  if (!b_.GetInsertBlock()->getTerminator())
    b_.CreateRetVoid();
  IRBuilder<>(entry_).CreateBr(body);
  finishGroups();
  return kernel_;
}

void KernelLowering::lowerBlock(ir::Block &block) {
  for (auto &op : block.ops) {
    if (op->code == ir::OpCode::Yield || op->code == ir::OpCode::Condition)
      return; // the parent op reads it
    if (op->code == ir::OpCode::Return) {
      if (&block != &fn_.body)
        unsupported(*op, "'return' inside a region (early exit) is not supported yet");
      b_.CreateRetVoid();
      return;
    }
    lowerOp(*op);
  }
}

void KernelLowering::lowerOp(ir::Operation &op) {
  using ir::OpCode;
  switch (op.code) {
  case OpCode::Constant: return lowerConstant(op);
  case OpCode::ProgramId: case OpCode::NumPrograms: return lowerSpecialRegister(op);
  case OpCode::SmId: case OpCode::GlobalTimer: return lowerSmIdOrGlobalTimer(op);
  case OpCode::MakeRange: return lowerMakeRange(op);
  case OpCode::Splat:
    define(op.result(), Regs(numRegs(op.result(), op), lookup(op.operand(0))[0]));
    return;
  case OpCode::Broadcast: case OpCode::ExpandDims: return lowerRegisterMapping(op);
  case OpCode::Hint: // facts for the passes; same layout as its operand
    define(op.result(), lookup(op.operand(0)));
    return;
  case OpCode::ConvertLayout: return lowerThroughSharedMemory(op);
  case OpCode::Load: return lowerLoad(op);
  case OpCode::DescLoad: return lowerDescLoad(op);
  case OpCode::DescStore: return lowerDescStore(op);
  case OpCode::MbarrierAlloc: return lowerMbarrierAlloc(op);
  case OpCode::AsyncTmaCopy: return lowerAsyncTmaCopy(op);
  case OpCode::MbarrierWait: return lowerMbarrierWait(op);
  case OpCode::MbarrierArrive: return lowerMbarrierArrive(op);
  case OpCode::WarpSpecialize: return lowerWarpSpecialize(op);
  case OpCode::ConsumerGroup: return lowerConsumerGroup(op);
  case OpCode::Store: return lowerStore(op);
  case OpCode::Reduce: return lowerReduce(op);
  case OpCode::LaneReduce: return lowerLaneReduce(op);
  case OpCode::For: case OpCode::If: case OpCode::While: {
    // A region is entered from more than one place (a loop's back edge): what
    // was waited for before it says nothing inside it, nor after it.
    wgmmaAllWaited_ = false;
    if (op.code == OpCode::For) lowerFor(op);
    else if (op.code == OpCode::If) lowerIf(op);
    else lowerWhile(op);
    wgmmaAllWaited_ = false;
    return;
  }
  case OpCode::Yield: case OpCode::Condition: case OpCode::Return:
    unsupported(op, "terminator in an unexpected position");
  // the rest of triton.language
  case OpCode::Sin: case OpCode::Cos: case OpCode::Rsqrt: case OpCode::Erf: case OpCode::Floor:
  case OpCode::Ceil: case OpCode::Fma: case OpCode::UMulHi: case OpCode::Libdevice:
    return lowerMathOp(op);
  case OpCode::Reshape: case OpCode::Trans: case OpCode::Join: case OpCode::Split: case OpCode::Cat:
  case OpCode::Flip:
    return lowerShapeOp(op);
  case OpCode::ReduceCombine: return lowerReduceCombine(op);
  case OpCode::Scan: return lowerScan(op);
  case OpCode::Sort: return lowerSort(op);
  case OpCode::Gather: return lowerGather(op);
  case OpCode::Histogram: return lowerHistogram(op);
  case OpCode::InlineAsm: return lowerInlineAsm(op);
  case OpCode::MapElementwise: return lowerMapElementwise(op);
  case OpCode::Dot: return lowerDot(op);
  case OpCode::LocalAlloc: return lowerLocalAlloc(op);
  case OpCode::LocalDealloc: return lowerLocalDealloc(op);
  case OpCode::AsyncCopy: return lowerAsyncCopy(op);
  case OpCode::AsyncCommit: case OpCode::AsyncWait: return lowerAsyncGroup(op);
  case OpCode::FenceAsyncShared: return fenceProxyAsync();
  case OpCode::DotWait: return lowerDotWait(op);
  case OpCode::LocalLoad: return lowerLocalLoad(op);
  case OpCode::LocalStore: return lowerLocalStore(op);
  case OpCode::AtomicRMW: case OpCode::AtomicCAS: return lowerAtomic(op);
  case OpCode::Print: case OpCode::Assert: case OpCode::Assume: case OpCode::Barrier:
    return lowerDebugOp(op);
  default:
    return lowerElementwise(op);
  }
}

// ------------------------------------------------------------ creation ops

void KernelLowering::lowerConstant(ir::Operation &op) {
  const ir::Type elem = op.result()->type.element();
  Type *type = elementType(elem, &op);
  const ir::Attribute &value = op.attrs.at("value");
  const bool isDouble = std::holds_alternative<double>(value);
  const double asDouble = isDouble ? std::get<double>(value)
                                   : static_cast<double>(std::get<int64_t>(value));
  const int64_t asInt = isDouble ? static_cast<int64_t>(std::get<double>(value))
                                 : std::get<int64_t>(value);
  Constant *c;
  if (elem.pointer)
    c = asInt == 0 ? ConstantPointerNull::get(cast<PointerType>(type))
                   : ConstantExpr::getIntToPtr(b_.getInt64(asInt), type);
  else if (elem.scalar == ir::ScalarType::F8E4M3 || elem.scalar == ir::ScalarType::F8E5M2)
    c = b_.getInt8(encodeFp8(asDouble, elem.scalar == ir::ScalarType::F8E4M3));
  else if (elem.scalar == ir::ScalarType::F8E4B15)
    c = b_.getInt8(ir::fp8E4B15Bits(asDouble));
  else if (elem.isFloatElement())
    c = ConstantFP::get(type, asDouble);
  else if (elem.scalar == ir::ScalarType::I1)
    c = b_.getInt1(asInt != 0);
  else
    c = ConstantInt::get(type, static_cast<uint64_t>(asInt), /*isSigned=*/true);
  define(op.result(), Regs(numRegs(op.result(), op), c));
}

void KernelLowering::lowerSpecialRegister(ir::Operation &op) {
  static const Intrinsic::ID ctaid[] = {Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                        Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                        Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
  static const Intrinsic::ID nctaid[] = {Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                         Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                         Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
  int64_t axis = op.intAttr("axis");
  if (axis < 0 || axis > 2)
    unsupported(op, "axis must be 0, 1 or 2");
  Intrinsic::ID id = op.code == ir::OpCode::ProgramId ? ctaid[axis] : nctaid[axis];
  Value *v = b_.CreateIntrinsic(id, {}, {});
  Type *want = elementType(op.result()->type, &op);
  define(op.result(), {b_.CreateZExtOrTrunc(v, want)});
}

// As Triton's tl.extra.cuda functions: one mov from the register in inline asm, which the
// CUDA C++ back-end prints as an asm statement too. %globaltimer's asm has side effects (LLVM
// neither merges, moves nor drops it: the time is read where the kernel reads it); %smid's is
// pure, as in Triton.
void KernelLowering::lowerSmIdOrGlobalTimer(ir::Operation &op) {
  const bool timer = op.code == ir::OpCode::GlobalTimer;
  Type *type = timer ? b_.getInt64Ty() : b_.getInt32Ty();
  InlineAsm *read = InlineAsm::get(FunctionType::get(type, false),
                                   timer ? "mov.u64 $0, %globaltimer;" : "mov.u32 $0, %smid;",
                                   timer ? "=l,~{memory}" : "=r", /*hasSideEffects=*/timer);
  define(op.result(), {b_.CreateCall(read)});
}

void KernelLowering::lowerMakeRange(ir::Operation &op) {
  DistributedLayout layout = layoutOf(op.result(), op);
  Type *type = elementType(op.result()->type.element(), &op);
  int64_t start = op.intAttr("start");
  Regs regs;
  for (unsigned r = 0; r < layout.numRegs(); ++r) {
    Value *v = b_.CreateAdd(coordinates(layout, r)[0], i32(start));
    regs.push_back(b_.CreateSExtOrTrunc(v, type));
  }
  define(op.result(), std::move(regs));
}

// broadcast / expand_dims: same base layout, so each result register is one
// of the operand's registers (no data moves between threads).
void KernelLowering::lowerRegisterMapping(ir::Operation &op) {
  DistributedLayout src = layoutOf(op.operand(0), op);
  DistributedLayout dst = layoutOf(op.result(), op);
  if (!(src.base() == dst.base()))
    unsupported(op, "operand layout " + op.operand(0)->layout->str() +
                        " is not compatible with result layout " + op.result()->layout->str());
  const Regs &in = lookup(op.operand(0));
  Regs out;
  for (unsigned r = 0; r < dst.numRegs(); ++r) {
    std::vector<unsigned> index = dst.regIndex(r);
    for (unsigned d = 0; d < dst.baseRank(); ++d)
      if (src.dim(d).numRegs != dst.dim(d).numRegs)
        index[d] = 0; // a size-1 (or sliced) dim of the operand: all copies
    out.push_back(in[src.regNumber(index)]);
  }
  define(op.result(), std::move(out));
}

// ------------------------------------------------------------ control flow

std::vector<Regs> KernelLowering::terminatorValues(ir::Block &region, unsigned firstOperand) {
  std::vector<Regs> values;
  ir::Operation *term = region.terminator();
  if (!term || (term->code != ir::OpCode::Yield && term->code != ir::OpCode::Condition))
    return values;
  for (unsigned i = firstOperand; i < term->operands.size(); ++i)
    values.push_back(lookup(term->operand(i)));
  return values;
}

std::vector<Regs> KernelLowering::makePhis(const std::vector<Regs> &incoming, BasicBlock *from) {
  std::vector<Regs> phis;
  for (const Regs &regs : incoming) {
    Regs out;
    for (Value *v : regs) {
      PHINode *phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, from);
      out.push_back(phi);
    }
    phis.push_back(std::move(out));
  }
  return phis;
}

void KernelLowering::addIncoming(std::vector<Regs> &phis, const std::vector<Regs> &values,
                                 BasicBlock *from, const ir::Operation &op) {
  if (phis.size() != values.size())
    unsupported(op, "region yields " + std::to_string(values.size()) + " values, expected " +
                        std::to_string(phis.size()));
  for (size_t i = 0; i < phis.size(); ++i) {
    if (phis[i].size() != values[i].size())
      unsupported(op, "yielded block has a different layout than the carried value");
    for (size_t r = 0; r < phis[i].size(); ++r)
      cast<PHINode>(phis[i][r])->addIncoming(values[i][r], from);
  }
}

namespace {

// 16-bit floats a loop carries go around it in pairs, as <2 x half/bfloat>
// (one 32-bit register): a pair that one paired conversion made stays one
// word, so a carried bf16 tile used as a tensor-core A fragment needs no
// repacking in the body (FlashAttention's P carried to the next step's P V).
bool carriedInPairs(const Regs &regs) {
  return !regs.empty() && regs.size() % 2 == 0 && (regs[0]->getType()->isHalfTy() || regs[0]->getType()->isBFloatTy());
}

Regs packPairs(IRBuilder<> &b, const Regs &regs) {
  Regs packed;
  for (size_t i = 0; i < regs.size(); i += 2) {
    auto *lo = dyn_cast<ExtractElementInst>(regs[i]);
    auto *hi = dyn_cast<ExtractElementInst>(regs[i + 1]);
    auto index = [](ExtractElementInst *e) {
      auto *c = dyn_cast<ConstantInt>(e->getIndexOperand());
      return c ? static_cast<int64_t>(c->getZExtValue()) : -1;
    };
    if (lo && hi && lo->getVectorOperand() == hi->getVectorOperand() && index(lo) == 0 && index(hi) == 1 &&
        cast<FixedVectorType>(lo->getVectorOperand()->getType())->getNumElements() == 2) {
      packed.push_back(lo->getVectorOperand());
      continue;
    }
    Value *v = PoisonValue::get(FixedVectorType::get(regs[i]->getType(), 2));
    v = b.CreateInsertElement(v, regs[i], uint64_t{0});
    packed.push_back(b.CreateInsertElement(v, regs[i + 1], uint64_t{1}));
  }
  return packed;
}

Regs unpackPairs(IRBuilder<> &b, const Regs &packed) {
  Regs regs;
  for (Value *v : packed) {
    regs.push_back(b.CreateExtractElement(v, uint64_t{0}));
    regs.push_back(b.CreateExtractElement(v, uint64_t{1}));
  }
  return regs;
}

} // namespace

namespace {

constexpr int64_t kMaxClampedTrips = 8; // iterations of a clamped loop's full copy (unrolled by LLVM)
constexpr size_t kMaxClampedBodyOps = 64;

int64_t intConstantOf(const ir::Value *v) {
  const ir::Operation *d = v->definingOp;
  return d && d->code == ir::OpCode::Constant && !d->isFloatConstant() ? d->intAttr("value") : 0;
}

// Ops a loop body may hold for lowering it twice: no shared memory, no nested regions.
bool lowersTwice(const ir::Block &body) {
  if (body.ops.size() > kMaxClampedBodyOps) return false;
  for (const auto &op : body.ops) {
    if (!op->regions.empty()) return false;
    switch (op->code) {
    case ir::OpCode::Constant: case ir::OpCode::MakeRange: case ir::OpCode::Splat: case ir::OpCode::Broadcast:
    case ir::OpCode::ExpandDims: case ir::OpCode::Load: case ir::OpCode::Store: case ir::OpCode::Yield:
      break;
    default:
      if (!ir::opIsElementwise(op->code)) return false;
    }
  }
  return true;
}

// `for iv in range(lb, min(lb + C, x), s)`: C / s items a program, the last group cut short (Unsloth's
// RoPE over groups of heads). The trip count is C / s but where the group is cut short, and LLVM 19
// does not see it, so it runs a generic loop whose loads wait for the stores before them. Such a loop
// gets a second copy for the uncut groups, counted to C / s, which LLVM unrolls: the loads of every
// iteration can then be issued together. The add lb + C of the min (trips = C / s), else null.
const ir::Operation *clampedLoopBound(const ir::Operation &loop, int64_t &trips) {
  const ir::Operation *min = loop.operand(1)->definingOp;
  const int64_t step = intConstantOf(loop.operand(2));
  if (!min || min->code != ir::OpCode::Min || step <= 0 || !lowersTwice(*loop.region(0))) return nullptr;
  for (const ir::Value *side : min->operands) {
    const ir::Operation *add = side->definingOp;
    if (!add || add->code != ir::OpCode::Add) continue;
    for (unsigned i = 0; i < 2; ++i) {
      const int64_t c = intConstantOf(add->operand(1 - i));
      if (add->operand(i) == loop.operand(0) && c > step && c % step == 0 && c / step <= kMaxClampedTrips) {
        trips = c / step;
        return add;
      }
    }
  }
  return nullptr;
}

} // namespace

void KernelLowering::lowerFor(ir::Operation &op) {
  Value *lb = lookup(op.operand(0))[0], *ub = lookup(op.operand(1))[0];
  Value *step = lookup(op.operand(2))[0];
  std::vector<Regs> inits;
  std::vector<bool> paired;
  for (unsigned i = 3; i < op.operands.size(); ++i) {
    inits.push_back(lookup(op.operand(i)));
    paired.push_back(carriedInPairs(inits.back()));
    if (paired.back()) inits.back() = packPairs(b_, inits.back());
  }
  ir::Block &body = *op.region(0);
  // The loop from lb below ub by step; `trips` > 0: exactly that many iterations, counted from 0.
  // Its results, at its exit.
  auto lowerLoop = [&](int64_t trips) {
    BasicBlock *pre = b_.GetInsertBlock();
    BasicBlock *header = BasicBlock::Create(ctx_, "for.header", kernel_);
    BasicBlock *bodyBB = BasicBlock::Create(ctx_, "for.body", kernel_);
    BasicBlock *exit = BasicBlock::Create(ctx_, "for.exit", kernel_);
    b_.CreateBr(header);

    b_.SetInsertPoint(header);
    std::vector<Regs> counter = makePhis({{trips ? ConstantInt::get(lb->getType(), 0) : lb}}, pre);
    std::vector<Regs> carried = makePhis(inits, pre);
    bool isSigned = ir::isSigned(op.operand(0)->type.scalar);
    Value *more = trips      ? b_.CreateICmpSLT(counter[0][0], ConstantInt::get(lb->getType(), trips))
                  : isSigned ? b_.CreateICmpSLT(counter[0][0], ub)
                             : b_.CreateICmpULT(counter[0][0], ub);
    b_.CreateCondBr(more, bodyBB, exit);

    b_.SetInsertPoint(bodyBB);
    define(body.args.at(0).get(), {trips ? b_.CreateAdd(lb, b_.CreateMul(counter[0][0], step)) : counter[0][0]});
    for (size_t i = 0; i < carried.size(); ++i)
      define(body.args.at(i + 1).get(), paired[i] ? unpackPairs(b_, carried[i]) : carried[i]);
    lowerBlock(body);
    std::vector<Regs> next = terminatorValues(body, 0);
    for (size_t i = 0; i < next.size(); ++i)
      if (paired[i]) next[i] = packPairs(b_, next[i]);
    Value *nextCounter = b_.CreateAdd(counter[0][0], trips ? ConstantInt::get(lb->getType(), 1) : step);
    BasicBlock *latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    addIncoming(counter, {{nextCounter}}, latch, op);
    addIncoming(carried, next, latch, op);

    b_.SetInsertPoint(exit);
    std::vector<Regs> results;
    for (size_t i = 0; i < carried.size(); ++i)
      results.push_back(paired[i] ? unpackPairs(b_, carried[i]) : carried[i]);
    return results;
  };

  std::vector<Regs> results;
  int64_t trips = 0;
  if (const ir::Operation *bound = clampedLoopBound(op, trips)) {
    BasicBlock *uncut = BasicBlock::Create(ctx_, "for.uncut", kernel_);
    BasicBlock *cut = BasicBlock::Create(ctx_, "for.cut", kernel_);
    BasicBlock *merge = BasicBlock::Create(ctx_, "for.merge", kernel_);
    // Uncut: min(lb + C, x) is lb + C, and lb + C did not wrap around.
    const bool isSigned = ir::isSigned(op.operand(0)->type.scalar);
    Value *runs = isSigned ? b_.CreateICmpSLT(lb, ub) : b_.CreateICmpULT(lb, ub);
    b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpEQ(ub, lookup(bound->result())[0]), runs), uncut, cut);
    b_.SetInsertPoint(uncut);
    std::vector<Regs> uncutResults = lowerLoop(trips);
    BasicBlock *uncutEnd = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(cut);
    std::vector<Regs> cutResults = lowerLoop(0);
    BasicBlock *cutEnd = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    results = makePhis(uncutResults, uncutEnd);
    addIncoming(results, cutResults, cutEnd, op);
  } else {
    results = lowerLoop(0);
  }
  for (size_t i = 0; i < results.size(); ++i) define(op.result(static_cast<unsigned>(i)), results[i]);
}

void KernelLowering::lowerIf(ir::Operation &op) {
  Value *cond = lookup(op.operand(0))[0];
  BasicBlock *thenBB = BasicBlock::Create(ctx_, "if.then", kernel_);
  BasicBlock *elseBB = BasicBlock::Create(ctx_, "if.else", kernel_);
  BasicBlock *merge = BasicBlock::Create(ctx_, "if.end", kernel_);
  b_.CreateCondBr(cond, thenBB, elseBB);

  b_.SetInsertPoint(thenBB);
  lowerBlock(*op.region(0));
  std::vector<Regs> thenValues = terminatorValues(*op.region(0), 0);
  BasicBlock *thenEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);

  b_.SetInsertPoint(elseBB);
  std::vector<Regs> elseValues;
  if (op.regions.size() > 1) {
    lowerBlock(*op.region(1));
    elseValues = terminatorValues(*op.region(1), 0);
  }
  BasicBlock *elseEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);

  b_.SetInsertPoint(merge);
  if (op.results.empty())
    return;
  std::vector<Regs> phis = makePhis(thenValues, thenEnd);
  addIncoming(phis, elseValues, elseEnd, op);
  for (size_t i = 0; i < op.results.size(); ++i)
    define(op.result(static_cast<unsigned>(i)), phis.at(i));
}

void KernelLowering::lowerWhile(ir::Operation &op) {
  ir::Block &before = *op.region(0), &after = *op.region(1);
  std::vector<Regs> inits;
  for (ir::Value *v : op.operands)
    inits.push_back(lookup(v));

  BasicBlock *pre = b_.GetInsertBlock();
  BasicBlock *beforeBB = BasicBlock::Create(ctx_, "while.before", kernel_);
  BasicBlock *afterBB = BasicBlock::Create(ctx_, "while.after", kernel_);
  BasicBlock *exit = BasicBlock::Create(ctx_, "while.exit", kernel_);
  b_.CreateBr(beforeBB);

  b_.SetInsertPoint(beforeBB);
  std::vector<Regs> carried = makePhis(inits, pre);
  for (size_t i = 0; i < carried.size(); ++i)
    define(before.args.at(i).get(), carried[i]);
  lowerBlock(before);
  ir::Operation *condition = before.terminator();
  if (!condition || condition->code != ir::OpCode::Condition)
    unsupported(op, "the before region must end with 'condition'");
  Value *keepGoing = lookup(condition->operand(0))[0];
  std::vector<Regs> passed = terminatorValues(before, 1);
  b_.CreateCondBr(keepGoing, afterBB, exit);

  // The passed values are defined in (or dominate) the block that branches
  // to both afterBB and exit, so they can be used there directly.
  b_.SetInsertPoint(afterBB);
  for (size_t i = 0; i < passed.size(); ++i)
    define(after.args.at(i).get(), passed[i]);
  lowerBlock(after);
  std::vector<Regs> next = terminatorValues(after, 0);
  BasicBlock *latch = b_.GetInsertBlock();
  b_.CreateBr(beforeBB);
  addIncoming(carried, next, latch, op);

  b_.SetInsertPoint(exit);
  for (size_t i = 0; i < op.results.size(); ++i)
    define(op.result(static_cast<unsigned>(i)), passed.at(i));
}

} // namespace tessera::codegen
