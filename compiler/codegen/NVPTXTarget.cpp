#include "compiler/codegen/NVPTXTarget.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

// Only the NVPTX back-end is linked in; these come from its libraries.
extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();
extern "C" void LLVMInitializeNVPTXAsmPrinter();

namespace tessera::codegen {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";
// PTX 8.0 (CUDA 12.0): the oldest ISA with sm_90a, accepted by CUDA 13's
// ptxas and by any driver that can run sm_90a code.
constexpr const char *kPtxFeatures = "+ptx80";

void initialiseNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

} // namespace

unsigned maxSharedBytes(const std::string &arch) {
  if (arch == "sm_80")
    return 163 * 1024;
  if (arch == "sm_86" || arch == "sm_89")
    return 99 * 1024;
  return 227 * 1024; // sm_90, sm_90a
}

std::unique_ptr<llvm::TargetMachine> createNVPTXTargetMachine(const std::string &arch,
                                                              bool optimize, bool fpFusion) {
  if (arch != "sm_80" && arch != "sm_86" && arch != "sm_89" && arch != "sm_90" &&
      arch != "sm_90a")
    throw std::runtime_error("codegen: unsupported arch '" + arch +
                             "' (expected sm_80, sm_86, sm_89, sm_90 or sm_90a)");
  initialiseNVPTX();
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target)
    throw std::runtime_error("codegen: NVPTX target unavailable: " + error);
  llvm::TargetOptions options;
  if (fpFusion)
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  auto level = optimize ? llvm::CodeGenOptLevel::Aggressive : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, arch, kPtxFeatures, options, std::nullopt, std::nullopt, level));
  if (!machine)
    throw std::runtime_error("codegen: cannot create the NVPTX target machine for " + arch);
  return machine;
}

void verifyOrThrow(const llvm::Module &module, const std::string &stage) {
  std::string report;
  llvm::raw_string_ostream os(report);
  if (llvm::verifyModule(module, &os)) {
    os.flush();
    throw std::runtime_error("codegen: invalid LLVM IR " + stage + ":\n" + report);
  }
}

void linkLibdevice(llvm::Module &module, const std::string &keep, const std::string &path) {
  bool needed = false;
  for (const llvm::Function &f : module)
    needed = needed || (f.isDeclaration() && f.getName().starts_with("__nv_"));
  if (!needed)
    return;
  if (path.empty())
    throw std::runtime_error("codegen: f64 math needs libdevice, and CodegenOptions::libdevicePath is empty");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    throw std::runtime_error("codegen: f64 math needs libdevice, not found at " + path +
                             " (set TESSERA_LIBDEVICE or CUDA_HOME)");
  // Lazily: only the functions the kernel calls (and theirs) are read from the bitcode when the
  // linker asks for them. Parsing all of libdevice's ~500 functions was most of the compile of a
  // kernel that calls one (erf in an Inductor GELU kernel: ~65 of its ~75 ms of CPU).
  auto library = llvm::getOwningLazyBitcodeModule(std::move(*buffer), module.getContext());
  if (!library)
    throw std::runtime_error("codegen: cannot read libdevice " + path + ": " +
                             llvm::toString(library.takeError()));
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  // libdevice asks __nvvm_reflect whether to flush denormals: no.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::Flags::LinkOnlyNeeded))
    throw std::runtime_error("codegen: linking libdevice failed");
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &gv) { return gv.getName() == keep; });
  lowerIntrinsicsNewerThanLlvm(module);
}

// CUDA 13's libdevice calls NVVM intrinsics that LLVM 19 does not know (its
// __nv_fast_tanhf calls llvm.nvvm.tanh.approx.f32): LLVM would print them as calls
// of an extern function, which ptxas rejects. Each becomes its one PTX instruction;
// any other unknown one is an error here rather than at ptxas.
void lowerIntrinsicsNewerThanLlvm(llvm::Module &module) {
  static const struct {
    const char *name;
    const char *asmText;
  } kAsm[] = {{"llvm.nvvm.tanh.approx.f32", "tanh.approx.f32 $0, $1;"}};
  for (llvm::Function &f : llvm::make_early_inc_range(module)) {
    if (!f.isDeclaration() || !f.getName().starts_with("llvm.nvvm.") ||
        f.getIntrinsicID() != llvm::Intrinsic::not_intrinsic)
      continue;
    const char *asmText = nullptr;
    for (const auto &known : kAsm)
      if (f.getName() == known.name) asmText = known.asmText;
    if (!asmText)
      throw std::runtime_error("codegen: libdevice calls " + f.getName().str() +
                               ", an NVVM intrinsic LLVM 19 cannot lower");
    auto *inlineAsm = llvm::InlineAsm::get(f.getFunctionType(), asmText, "=f,f", /*hasSideEffects=*/false);
    for (llvm::User *user : llvm::make_early_inc_range(f.users())) {
      auto *call = llvm::cast<llvm::CallInst>(user);
      llvm::IRBuilder<> b(call);
      llvm::SmallVector<llvm::Value *, 2> args(call->args());
      llvm::CallInst *replacement = b.CreateCall(inlineAsm, args);
      call->replaceAllUsesWith(replacement);
      call->eraseFromParent();
    }
    f.eraseFromParent();
  }
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine); // registers the NVPTX callbacks
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
}

unsigned lowerCopysignToBits(llvm::Module &module) {
  llvm::SmallVector<llvm::IntrinsicInst *, 16> calls;
  for (llvm::Function &f : module)
    for (llvm::BasicBlock &block : f)
      for (llvm::Instruction &inst : block)
        if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst))
          if (call->getIntrinsicID() == llvm::Intrinsic::copysign &&
              (call->getType()->isFloatTy() || call->getType()->isDoubleTy()))
            calls.push_back(call);
  for (llvm::IntrinsicInst *call : calls) {
    llvm::IRBuilder<> b(call);
    llvm::Type *floatTy = call->getType();
    unsigned bits = floatTy->getPrimitiveSizeInBits();
    llvm::Type *intTy = b.getIntNTy(bits);
    llvm::APInt sign = llvm::APInt::getSignMask(bits);
    // a ^ ((a ^ b) & sign): one constant, which ptxas folds into a single LOP3.
    llvm::Value *a = b.CreateBitCast(call->getArgOperand(0), intTy);
    llvm::Value *differing = b.CreateAnd(b.CreateXor(a, b.CreateBitCast(call->getArgOperand(1), intTy)), sign);
    llvm::Value *result = b.CreateBitCast(b.CreateXor(a, differing), floatTy);
    call->replaceAllUsesWith(result);
    call->eraseFromParent();
  }
  return static_cast<unsigned>(calls.size());
}

std::string emitPTX(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw std::runtime_error("codegen: the NVPTX target cannot emit assembly");
  passes.run(module);
  std::string text(ptx.str());
  // mma.sync on e4m3/e5m2 (sm_89, MmaDot.cpp) came with PTX 8.4; the module is
  // otherwise PTX 8.0 (kPtxFeatures), a subset, so only such modules say 8.4.
  const std::string oldVersion = ".version 8.0\n";
  if (text.find("mma.sync.aligned.m16n8k32.row.col.f32.e") != std::string::npos)
    if (size_t at = text.find(oldVersion); at != std::string::npos) text.replace(at, oldVersion.size(), ".version 8.4\n");
  // Vector atomics (Atomics.cpp, sm_90) came with PTX 8.1.
  if (text.find(".global.add.noftz.v") != std::string::npos || text.find(".global.add.v") != std::string::npos)
    if (size_t at = text.find(oldVersion); at != std::string::npos) text.replace(at, oldVersion.size(), ".version 8.1\n");
  return text;
}

std::string printModule(const llvm::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  os.flush();
  return text;
}

} // namespace tessera::codegen
