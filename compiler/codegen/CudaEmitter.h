// The CUDA C++ printer of the NVRTC back-end (docs/nvrtc.md).
//
// Both back-ends share every pass and the per-thread lowering: the LLVM
// module KernelLowering builds (one LLVM value per register a thread holds,
// inline PTX for ldmatrix, mma.sync, predicated loads, ...). The LLVM
// back-end optimises it and prints PTX with LLVM's NVPTX target; the NVRTC
// back-end prints the same module, before any optimisation, as one CUDA C++
// kernel for NVRTC to compile. Internal to codegen.
#pragma once

#include <llvm/IR/Module.h>

#include <string>

namespace tessera::codegen {

// Light clean-up before printing (dead code, common subexpressions, blocks
// merged into their only predecessor); keeps to the instructions the
// lowering itself produces, so the printer sees nothing new.
void cleanupForCuda(llvm::Module &module);

// The kernel `kernelName` of `module` as CUDA C++: one extern "C" __global__
// function, SSA values as locals, basic blocks as labels (phis become copies
// at the end of their predecessors), the shared scratch buffer as
// `extern __shared__`, inline PTX as asm statements. Throws
// std::runtime_error("NVRTC back-end: unsupported ...") naming the construct
// and the kernel for anything it cannot print.
std::string emitCuda(const llvm::Module &module, const std::string &kernelName);

} // namespace tessera::codegen
