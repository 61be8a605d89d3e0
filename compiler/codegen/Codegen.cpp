// codegen::generate: lower the laid-out kernel to LLVM IR, check it,
// optimise it and (optionally) emit PTX. Each call has its own LLVMContext,
// so concurrent calls from different threads are safe.
#include "compiler/codegen/Codegen.h"

#include "compiler/codegen/CudaEmitter.h"
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/NVPTXTarget.h"
#include "compiler/codegen/OutOfResources.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <stdexcept>

namespace tessera::codegen {

CodegenResult generate(ir::Function &fn, const CodegenOptions &options, bool emitPTX) {
  std::unique_ptr<llvm::TargetMachine> machine =
      createNVPTXTargetMachine(options.arch, options.optimize, options.fpFusion);
  llvm::LLVMContext context;
  llvm::Module module(fn.name, context);
  module.setTargetTriple(machine->getTargetTriple().str());
  module.setDataLayout(machine->createDataLayout());

  KernelLowering lowering(fn, module);
  lowering.setArch(options.arch);
  lowering.setMaxRegisters(options.maxRegisters);
  lowering.setCompareRuns(options.compareRuns);
  lowering.setFp8RegisterA(options.fp8RegisterA);
  lowering.run();
  CodegenResult result;
  result.sharedBytes = lowering.sharedBytes();
  if (result.sharedBytes > maxSharedBytes(options.arch))
    throw OutOfResources("codegen: kernel '" + fn.name + "' needs " +
                             std::to_string(result.sharedBytes) +
                             " bytes of shared memory, more than " + options.arch + " allows (" +
                             std::to_string(maxSharedBytes(options.arch)) + ")",
                         result.sharedBytes, maxSharedBytes(options.arch), "shared memory");

  verifyOrThrow(module, "after lowering (a tessera bug)");
  fn.sharedBytes = result.sharedBytes;
  if (options.cuda) {
    // The NVRTC back-end: the same per-thread form, printed as CUDA C++.
    cleanupForCuda(module);
    verifyOrThrow(module, "after the clean-up for CUDA C++ (a tessera bug)");
    result.llvmIR = printModule(module);
    result.cudaSource = emitCuda(module, fn.name);
    return result;
  }
  linkLibdevice(module, fn.name, options.libdevicePath);
  if (options.optimize) {
    optimizeModule(module, *machine);
    verifyOrThrow(module, "after optimisation");
  }
  // After O3, which would fold the masks back into llvm.copysign.
  lowerCopysignToBits(module);
  result.llvmIR = printModule(module);
  if (emitPTX)
    result.ptx = ::tessera::codegen::emitPTX(module, *machine);
  fn.sharedBytes = result.sharedBytes;
  return result;
}

std::string cudaFromLLVMAssembly(const std::string &text, const std::string &kernelName) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(text, error, context);
  if (!module) {
    std::string message;
    llvm::raw_string_ostream os(message);
    error.print("llvm", os, /*ShowColors=*/false);
    os.flush();
    throw std::runtime_error("cannot parse the LLVM assembly: " + message);
  }
  verifyOrThrow(*module, "given to the CUDA C++ printer");
  return emitCuda(*module, kernelName);
}

} // namespace tessera::codegen
