// Lowering of laid-out block IR to LLVM IR and, through LLVM's NVPTX
// back-end, to PTX. The input must have a layout on every block value
// (compiler/passes/LayoutAssignment).
#pragma once

#include "compiler/ir/IR.h"

#include <string>

namespace tessera::codegen {

struct CodegenOptions {
  std::string arch = "sm_90a"; // sm_80, sm_86, sm_89, sm_90, sm_90a
  bool optimize = true;        // run LLVM's O3 pipeline
};

struct CodegenResult {
  std::string llvmIR; // the (optimised) LLVM module as text
  std::string ptx;    // empty when PTX was not asked for
  unsigned sharedBytes = 0; // dynamic shared memory the kernel needs
};

// Throws std::runtime_error naming the op for anything it cannot lower.
CodegenResult generate(ir::Function &fn, const CodegenOptions &options, bool emitPTX);

} // namespace tessera::codegen
