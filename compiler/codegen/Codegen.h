// Lowering of laid-out block IR to LLVM IR and, through LLVM's NVPTX
// back-end, to PTX. The input must have a layout on every block value
// (compiler/passes/LayoutAssignment).
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
};

struct CodegenResult {
  std::string llvmIR; // the (optimised) LLVM module as text
  std::string ptx;    // empty when PTX was not asked for
  unsigned sharedBytes = 0; // dynamic shared memory the kernel needs
};

// Throws std::runtime_error naming the op for anything it cannot lower.
CodegenResult generate(ir::Function &fn, const CodegenOptions &options, bool emitPTX);

} // namespace tessera::codegen
