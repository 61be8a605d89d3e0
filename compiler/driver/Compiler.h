// The compile driver: source text + kernel name + signature → every stage
// of the kernel (AST, IR, optimised IR, LLVM IR, PTX), stopping after the
// stage asked for. Used by the CLI, the Python module and the C++ API.
#pragma once

#include "dsl/Specializer.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Ordered by pipeline depth: "stop after X" is one comparison.
enum class Stage { AST, IR, IROpt, LLVM, PTX };
std::optional<Stage> parseStage(std::string_view name); // "ast", "ir", "ir-opt", "llvm", "ptx"
const char *stageName(Stage stage);

struct CompileOptions {
  unsigned numWarps = 4;
  unsigned numStages = 3;
  std::string arch = "sm_90a";
  std::string stopAfterPass; // ir-opt stops after this pass (golden tests)
  // tl.device_assert (and `assert` on runtime values) are checked on the device;
  // TESSERA_DEBUG=1 turns this on too.
  bool debug = false;
  // Tensor cores for fp16/bf16 dots (accelerate-dot, docs/tensor-cores.md):
  // 1 on, 0 off, -1 from TESSERA_MMA (on unless TESSERA_MMA=0).
  int tensorCores = -1;
};

// options.tensorCores resolved against TESSERA_MMA.
bool tensorCoresEnabled(const CompileOptions &options);

struct CompiledKernel {
  std::string name;
  std::string ast, ir, irOpt, llvmIR, ptx; // filled up to the stage asked for
  unsigned numWarps = 4;
  unsigned sharedBytes = 0;
};

// "*fp32:16, i32, fp32, *bf16" → one ArgSpec per entry. Throws
// std::invalid_argument naming the bad entry.
std::vector<ArgSpec> parseSignature(std::string_view text);
// "tessera X.Y.Z (LLVM 19.1.7)"
std::string versionString();
// The architectures tessera emits PTX for.
bool isSupportedArch(std::string_view arch);

// Throws CompileError for errors in the kernel source, std::invalid_argument
// for bad options.
CompiledKernel compileKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                             const std::vector<ArgSpec> &signature,
                             const std::map<std::string, ConstexprValue> &constexprs,
                             const CompileOptions &options, Stage stopAfter = Stage::PTX);

} // namespace tessera
