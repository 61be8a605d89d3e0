// The NVRTC back-end's printer: the per-thread LLVM form of a kernel (what
// KernelLowering builds, before O3) as CUDA C++. docs/nvrtc.md lists what
// maps to what.
//
// Shape of the output: a few helpers (only those used), the shared buffer,
// then one extern "C" __global__ function. Every SSA value is a local
// declared at the top (so gotos never jump over an initialisation); each
// basic block is a label; a phi `x` gets a second local `x_in` that its
// predecessors assign before their branch, and `x = x_in;` opens its block
// (so phis that read each other on a back edge still see the old values).
//
// The printer's pieces, by op family, are listed in CudaEmitterInternal.h;
// this file has the clean-up before printing, the kernel, names, statement
// dispatch and control flow.
#include "compiler/codegen/CudaEmitter.h"
#include "compiler/codegen/CudaEmitterInternal.h"

#include <llvm/IR/Metadata.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/DCE.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Local.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tessera::codegen {

using namespace llvm;

void cleanupForCuda(Module &module) {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder builder;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  for (Function &f : module) {
    if (f.isDeclaration())
      continue;
    removeUnreachableBlocks(f);
    FunctionPassManager passes;
    passes.addPass(EarlyCSEPass());
    passes.addPass(DCEPass());
    passes.run(f, fam);
    // A block whose only predecessor only branches to it is the same block.
    for (auto it = f.begin(); it != f.end();) {
      BasicBlock *block = &*it++;
      MergeBlockIntoPredecessor(block);
    }
  }
}

namespace cuda {

// ---------------------------------------------------------------- statements

std::string Printer::rhs(const Instruction &inst) {
  if (auto *b = dyn_cast<BinaryOperator>(&inst)) return binary(*b);
  if (auto *c = dyn_cast<CmpInst>(&inst)) return compare(*c);
  if (auto *c = dyn_cast<CastInst>(&inst)) return castExpr(*c);
  if (auto *g = dyn_cast<GetElementPtrInst>(&inst)) return gep(*g);
  switch (inst.getOpcode()) {
  case Instruction::FNeg: {
    Type *t = inst.getType();
    if (t->isVectorTy()) failInstruction(inst);
    if (isHalfLike(t)) return "(" + cType(t) + ")(" + expr(inst.getOperand(0)) + " ^ 0x8000)";
    return "-" + expr(inst.getOperand(0));
  }
  case Instruction::Select:
    if (inst.getOperand(0)->getType()->isVectorTy()) failInstruction(inst);
    return expr(inst.getOperand(0)) + " ? " + expr(inst.getOperand(1)) + " : " + expr(inst.getOperand(2));
  case Instruction::Freeze:
    return expr(inst.getOperand(0));
  case Instruction::ExtractElement: {
    auto &e = cast<ExtractElementInst>(inst);
    return expr(e.getVectorOperand()) + ".e[" + index(e.getIndexOperand()) + "]";
  }
  case Instruction::Load:
    return loadExpr(cast<LoadInst>(inst));
  case Instruction::Call:
    return callExpr(cast<CallInst>(inst));
  default:
    failInstruction(inst);
  }
}

void Printer::statement(const Instruction &inst) {
  switch (inst.getOpcode()) {
  case Instruction::PHI:
  case Instruction::ExtractValue: // named after the asm output it reads
  case Instruction::Alloca:       // a buffer declared at the top
    return;
  case Instruction::Store:
    return storeStatement(cast<StoreInst>(inst));
  case Instruction::InsertElement: {
    auto &ins = cast<InsertElementInst>(inst);
    const std::string &name = names_.at(&inst);
    line(name + " = " + expr(ins.getOperand(0)) + ";");
    line(name + ".e[" + index(ins.getOperand(2)) + "] = " + expr(ins.getOperand(1)) + ";");
    return;
  }
  case Instruction::ShuffleVector: {
    auto &sh = cast<ShuffleVectorInst>(inst);
    const unsigned n = cast<FixedVectorType>(sh.getOperand(0)->getType())->getNumElements();
    std::string list;
    for (unsigned i = 0; i < sh.getShuffleMask().size(); ++i) {
      const int m = sh.getMaskValue(i);
      std::string e = m < 0 ? zero(cast<VectorType>(inst.getType())->getElementType())
                            : expr(sh.getOperand(m < static_cast<int>(n) ? 0 : 1)) + ".e[" +
                                  std::to_string(m % n) + "]";
      list += (i ? ", " : "") + e;
    }
    line(names_.at(&inst) + " = " + cType(inst.getType()) + "{{" + list + "}};");
    return;
  }
  case Instruction::Call:
    return callStatement(cast<CallInst>(inst));
  default:
    if (inst.isTerminator()) return terminator(inst);
    if (inst.getType()->isVoidTy() || inst.getType()->isStructTy()) failInstruction(inst);
    line(names_.at(&inst) + " = " + rhs(inst) + ";");
  }
}

// ---------------------------------------------------------------- control flow

void Printer::edgeCopies(const BasicBlock *from, const BasicBlock *to) {
  for (const PHINode &phi : to->phis()) line(phiIn_.at(&phi) + " = " + expr(phi.getIncomingValueForBlock(from)) + ";");
}

void Printer::jump(const BasicBlock *from, const BasicBlock *to, bool mayFallThrough) {
  edgeCopies(from, to);
  if (mayFallThrough && to == nextBlock_) return;
  gotoTargets_.insert(to);
  line("goto " + labels_.at(to) + ";");
}

void Printer::terminator(const Instruction &inst) {
  const BasicBlock *from = inst.getParent();
  if (auto *ret = dyn_cast<ReturnInst>(&inst)) {
    if (ret->getReturnValue()) failInstruction(inst);
    line("return;");
    return;
  }
  if (auto *br = dyn_cast<BranchInst>(&inst)) {
    if (br->isUnconditional()) return jump(from, br->getSuccessor(0), true);
    const BasicBlock *yes = br->getSuccessor(0), *no = br->getSuccessor(1);
    const bool copies = !yes->phis().empty() || !no->phis().empty();
    if (!copies) {
      gotoTargets_.insert(yes);
      line("if (" + expr(br->getCondition()) + ") goto " + labels_.at(yes) + ";");
      return jump(from, no, true);
    }
    line("if (" + expr(br->getCondition()) + ") {");
    std::string saved;
    std::swap(saved, out_);
    jump(from, yes, false);
    std::string thenPart;
    std::swap(thenPart, out_);
    jump(from, no, false);
    std::string elsePart;
    std::swap(elsePart, out_);
    out_ = saved;
    for (const std::string *part : {&thenPart, &elsePart}) {
      std::istringstream lines(*part);
      for (std::string l; std::getline(lines, l);) out_ += "  " + l + "\n";
      if (part == &thenPart) line("} else {");
    }
    line("}");
    return;
  }
  if (auto *sw = dyn_cast<SwitchInst>(&inst)) {
    line("switch (" + expr(sw->getCondition()) + ") {");
    for (auto &c : sw->cases()) {
      line("case " + expr(c.getCaseValue()) + ":");
      jump(from, c.getCaseSuccessor(), false);
    }
    line("default:");
    jump(from, sw->getDefaultDest(), false);
    line("}");
    return;
  }
  if (isa<UnreachableInst>(inst)) {
    line("__builtin_unreachable();");
    return;
  }
  failInstruction(inst);
}

// ---------------------------------------------------------------- the kernel

std::string Printer::uniqueName(std::string base, std::set<std::string> &taken) {
  std::string s;
  for (char c : base)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  if (reservedNames().count(s) || s.rfind("tsr_", 0) == 0 || s.rfind("__", 0) == 0 || s == kernel_ ||
      cudaMathFunctions().count(s) || cudaMathFunctions().count(s.substr(0, s.size() - 1)))
    s = "v_" + s;
  std::string name = s;
  for (unsigned n = 1; taken.count(name); ++n) name = s + "_" + std::to_string(n);
  taken.insert(name);
  return name;
}

void Printer::nameValues() {
  for (const Argument &a : fn_.args()) names_[&a] = uniqueName(a.hasName() ? a.getName().str() : "arg", taken_);
  std::vector<const ExtractValueInst *> extracts;
  for (const BasicBlock &block : fn_) {
    labels_[&block] = uniqueName(block.hasName() ? block.getName().str() : "block", labelsTaken_);
    for (const Instruction &inst : block) {
      if (inst.getType()->isVoidTy()) continue;
      if (auto *e = dyn_cast<ExtractValueInst>(&inst)) {
        extracts.push_back(e);
        continue;
      }
      if (auto *alloca = dyn_cast<AllocaInst>(&inst)) {
        auto size = alloca->getAllocationSize(dl_);
        if (!size || size->isScalable()) failInstruction(inst);
        std::string name = localName(inst);
        storage_.push_back("__align__(" + std::to_string(std::max<uint64_t>(alloca->getAlign().value(), 8)) +
                           ") unsigned char " + name + "[" + std::to_string(size->getFixedValue()) + "];");
        names_[&inst] = name;
        continue;
      }
      if (auto *st = dyn_cast<StructType>(inst.getType())) {
        auto *c = dyn_cast<CallInst>(&inst);
        if (!c || !c->isInlineAsm()) failInstruction(inst);
        std::string base = localName(inst);
        std::vector<std::string> vars;
        for (unsigned i = 0; i < st->getNumElements(); ++i) {
          vars.push_back(uniqueName(base + "_" + std::to_string(i), taken_));
          declare(cType(st->getElementType(i)), vars.back());
        }
        asmOutputs_[&inst] = vars;
        continue;
      }
      std::string name = localName(inst);
      names_[&inst] = name;
      declare(cType(inst.getType()), name);
      if (auto *phi = dyn_cast<PHINode>(&inst)) {
        phiIn_[phi] = uniqueName(name + "_in", taken_);
        declare(cType(inst.getType()), phiIn_[phi]);
      }
    }
  }
  for (const ExtractValueInst *e : extracts) {
    auto it = asmOutputs_.find(e->getAggregateOperand());
    if (it == asmOutputs_.end() || e->getNumIndices() != 1 || e->getIndices()[0] >= it->second.size())
      failInstruction(*e);
    names_[e] = it->second[e->getIndices()[0]];
  }
}

std::string Printer::run() {
  const std::string stem = !kernel_.empty() && kernel_.back() == 'f' ? kernel_.substr(0, kernel_.size() - 1) : kernel_;
  if (reservedNames().count(kernel_) || kernel_.rfind("tsr_", 0) == 0 || kernel_.rfind("__", 0) == 0 ||
      cudaMathFunctions().count(kernel_) || cudaMathFunctions().count(stem))
    fail("kernel name (a C++ keyword or a name the generated code uses)");
  taken_.insert(kernel_);
  nameValues();

  // Parameters; 16-byte (or more) aligned pointers say so. A tensor descriptor (byval)
  // stays in the parameter space, where the TMA unit reads it (__grid_constant__): the
  // kernel takes its address, as the LLVM form does.
  std::string params, prologue;
  for (const Argument &a : fn_.args()) {
    const std::string &name = names_.at(&a);
    if (a.hasByValAttr()) {
      need("tensor_map");
      const std::string param = uniqueName(name + "_map", taken_);
      params += (params.empty() ? "" : ", ") + std::string("const __grid_constant__ tsr_tensor_map ") + param;
      prologue += "  unsigned char *" + name + " = (unsigned char *)&" + param + ";\n";
      continue;
    }
    params += (params.empty() ? "" : ", ") + cType(a.getType()) + (a.getType()->isPointerTy() ? "" : " ") + name;
    if (a.getType()->isPointerTy())
      if (MaybeAlign align = a.getParamAlign(); align && align->value() >= 16)
        prologue += "  " + name + " = (unsigned char *)__builtin_assume_aligned(" + name + ", " +
                    std::to_string(align->value()) + ");\n";
  }

  // Blocks, in layout order.
  std::vector<std::pair<const BasicBlock *, std::string>> blocks;
  for (auto it = fn_.begin(); it != fn_.end(); ++it) {
    const BasicBlock &block = *it;
    auto next = std::next(it);
    nextBlock_ = next == fn_.end() ? nullptr : &*next;
    out_.clear();
    for (const PHINode &phi : block.phis()) line(names_.at(&phi) + " = " + phiIn_.at(&phi) + ";");
    for (const Instruction &inst : block) statement(inst);
    blocks.emplace_back(&block, out_);
  }

  // Launch bounds: the lowering's reqntidx (or maxntidx), minctasm and maxnreg annotations.
  unsigned maxThreads = 0, maxRegisters = 0, minBlocks = 0;
  if (const NamedMDNode *annotations = module_.getNamedMetadata("nvvm.annotations")) {
    for (const MDNode *node : annotations->operands()) {
      if (node->getNumOperands() != 3) continue;
      auto *target = mdconst::dyn_extract_or_null<Function>(node->getOperand(0));
      auto *key = dyn_cast<MDString>(node->getOperand(1));
      auto *value = mdconst::dyn_extract_or_null<ConstantInt>(node->getOperand(2));
      if (target != &fn_ || !key || !value) continue;
      if (key->getString() == "maxntidx" || key->getString() == "reqntidx")
        maxThreads = static_cast<unsigned>(value->getZExtValue());
      if (key->getString() == "maxnreg") maxRegisters = static_cast<unsigned>(value->getZExtValue());
      if (key->getString() == "minctasm") minBlocks = static_cast<unsigned>(value->getZExtValue());
    }
  }

  std::ostringstream os;
  os << "// CUDA C++ for NVRTC, generated by tessera from kernel '" << kernel_ << "' (docs/nvrtc.md).\n";
  bool any = false;
  for (const Helper &h : helperDefinitions())
    if (helpers_.count(h.name)) {
      os << (any ? "" : "\n") << h.text;
      any = true;
    }
  for (const std::string &e : externs_) os << (any ? "" : "\n") << e, any = true;
  if (!globalDecls_.empty()) os << "\n";
  for (const std::string &g : globalDecls_) os << g << "\n";
  os << "\nextern \"C\" __global__ void ";
  // CUDA C++ takes one or the other; with a register cap the thread bound adds nothing.
  if (maxRegisters) os << "__maxnreg__(" << maxRegisters << ") ";
  else if (maxThreads && minBlocks) os << "__launch_bounds__(" << maxThreads << ", " << minBlocks << ") ";
  else if (maxThreads) os << "__launch_bounds__(" << maxThreads << ") ";
  os << kernel_ << "(" << params << ") {\n";
  // Locals, grouped by type in order of first appearance.
  std::vector<std::string> typeOrder;
  std::map<std::string, std::vector<std::string>> byType;
  for (const auto &[type, name] : locals_) {
    if (!byType.count(type)) typeOrder.push_back(type);
    byType[type].push_back(name);
  }
  for (const std::string &type : typeOrder) {
    std::string text = "  " + type + (type.back() == '*' ? "" : " ");
    size_t width = text.size();
    const std::vector<std::string> &names = byType[type];
    for (size_t i = 0; i < names.size(); ++i) {
      std::string item = (type.back() == '*' && i ? "*" : "") + names[i] + (i + 1 < names.size() ? ", " : ";");
      if (width + item.size() > 110) {
        text += "\n     ";
        width = 5;
      }
      text += item;
      width += item.size();
    }
    os << text << "\n";
  }
  for (const std::string &s : storage_) os << "  " << s << "\n";
  os << prologue;
  for (const auto &[block, text] : blocks) {
    if (gotoTargets_.count(block)) os << labels_.at(block) << ":\n";
    os << text;
  }
  os << "}\n";
  return os.str();
}

} // namespace cuda

std::string emitCuda(const Module &module, const std::string &kernelName) {
  const Function *fn = module.getFunction(kernelName);
  if (!fn || fn->isDeclaration())
    throw std::runtime_error("NVRTC back-end: no kernel '" + kernelName + "' in the lowered module");
  return cuda::Printer(module, *fn).run();
}

} // namespace tessera::codegen
