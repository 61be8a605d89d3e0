// The interpreter's compile path: source + kernel name + signature → the
// block IR the host interpreter runs (compiler/interp/Interpreter.h): parse,
// specialise, verify, then canonicalize, common-subexpression-elimination
// and dead-code-elimination — the passes before layout assignment, so the
// interpreter sees the same ops the GPU code generator starts from.
#pragma once

#include "compiler/interp/Interpreter.h"
#include "dsl/Specializer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

struct InterpretOptions {
  unsigned numWarps = 4;  // kept in the IR; the interpreter does not use it
  bool optimize = true;   // false: run the specialiser's output as is
  bool debug = true;      // tl.device_assert and runtime `assert`s are checked (the GPU needs debug mode)
  // Run the whole pass pipeline first (tensor cores on, `numStages`, `arch`)
  // and interpret the IR code generation would see: checks the rewrites of
  // the later passes (accelerate-dot, pipeline) on the CPU.
  // Python: TESSERA_INTERPRET_PASSES=1.
  bool allPasses = false;
  unsigned numStages = 3;
  std::string arch = "sm_90a";
};

// One specialisation of a kernel, ready to interpret (cacheable: run() is const).
class InterpretableKernel {
public:
  // Throws CompileError for errors in the kernel.
  InterpretableKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                      const std::vector<ArgSpec> &signature,
                      const std::map<std::string, ConstexprValue> &constexprs,
                      const InterpretOptions &options = {});
  ~InterpretableKernel();
  InterpretableKernel(const InterpretableKernel &) = delete;
  InterpretableKernel &operator=(const InterpretableKernel &) = delete;

  const std::string &name() const;
  const std::vector<ArgSpec> &signature() const { return signature_; }
  // The runtime parameters' names, in signature order.
  std::vector<std::string> parameterNames() const;
  // The IR that run() executes, printed.
  std::string ir() const;
  const ir::Function &function() const { return *fn_; }

  // Runs every program of the grid. Throws interp::InterpreterError (a
  // CompileError) for out-of-bounds, misaligned or read-only accesses.
  void run(interp::Grid grid, const std::vector<interp::ArgValue> &args) const;

private:
  std::shared_ptr<const SourceFile> file_;
  std::unique_ptr<ir::Function> fn_;
  std::vector<ArgSpec> signature_;
};

// Compiles and runs in one call.
void interpretKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                     const std::vector<ArgSpec> &signature,
                     const std::map<std::string, ConstexprValue> &constexprs, interp::Grid grid,
                     const std::vector<interp::ArgValue> &args, const InterpretOptions &options = {});

} // namespace tessera
