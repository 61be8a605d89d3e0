// Lowering of laid-out block IR to LLVM IR and, through LLVM's NVPTX
// back-end, to PTX; or (the NVRTC back-end, docs/nvrtc.md) the same
// per-thread LLVM form printed as CUDA C++ for NVRTC. The input must have a
// layout on every block value (compiler/passes/LayoutAssignment).
#pragma once

#include "compiler/ir/IR.h"

#include <stdexcept>
#include <string>

namespace tessera::codegen {

// A construct the language accepts but this target or code generator cannot
// compile (fp8 conversions before sm_90, an unknown cache modifier, ...),
// thrown by `notSupported` in the lowering. what() is the old
// "codegen: cannot lower 'op' at L:C: reason"; compileKernel turns it into a
// CompileError at `loc` (file:line:col, the line, a caret) saying `reason`.
// Broken invariants of the IR stay plain std::runtime_error / logic_error.
class UnsupportedError : public std::runtime_error {
public:
  UnsupportedError(const std::string &message, SourceLoc loc, std::string reason)
      : std::runtime_error(message), loc(loc), reason(std::move(reason)) {}
  SourceLoc loc;
  std::string reason;
};

struct CodegenOptions {
  std::string arch = "sm_90a"; // sm_80, sm_86, sm_89, sm_90, sm_90a
  bool optimize = true;        // run LLVM's O3 pipeline
  // Print the lowered kernel as CUDA C++ (CodegenResult::cudaSource) instead
  // of optimising it: llvmIR is then the form the source was printed from,
  // and no PTX is made here (NVRTC makes it: compiler/codegen/Nvrtc.h).
  bool cuda = false;
  // Contract a * b + c into fused multiply-adds (LLVM's FPOpFusion::Fast; the PTX
  // keeps the rest contractible by ptxas). Off: every mul/add is .rn, rounded apart.
  bool fpFusion = true;
  // The kernel's .maxnreg (nvvm.annotations "maxnreg"; __maxnreg__ in CUDA C++); 0: none.
  unsigned maxRegisters = 0;
  // Evaluate a compare once per run of equal results (docs/codegen.md, masks);
  // off only to measure what that saves (TESSERA_COMPARE_RUNS=0).
  bool compareRuns = true;
  // fp8 wgmma takes a register A (attention's P) from registers, permuted across lanes into
  // its 8-bit fragments; off (TESSERA_WGMMA_FP8_REGISTER_A=0): staged through shared memory.
  bool fp8RegisterA = true;
  // libdevice.10.bc, linked when the kernel calls libdevice (f64 math); the
  // driver gives TESSERA_LIBDEVICE's or CUDA_HOME's (ResolvedOptions).
  std::string libdevicePath;
};

struct CodegenResult {
  std::string llvmIR; // the (optimised) LLVM module as text
  std::string ptx;    // empty when PTX was not asked for
  std::string cudaSource; // with CodegenOptions::cuda
  unsigned sharedBytes = 0; // dynamic shared memory the kernel needs
};

// Throws std::runtime_error naming the op for anything it cannot lower.
CodegenResult generate(ir::Function &fn, const CodegenOptions &options, bool emitPTX);

// The NVRTC back-end's printer on LLVM assembly text (a module in the form
// KernelLowering builds): the CUDA C++ of `kernelName`, printed as is (no
// clean-up). For tests and debugging; throws std::runtime_error for text
// that does not parse and for what the printer does not support.
std::string cudaFromLLVMAssembly(const std::string &text, const std::string &kernelName);

} // namespace tessera::codegen
