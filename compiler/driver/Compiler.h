// The compile driver: source text + kernel name + signature → every stage
// of the kernel (AST, IR, optimised IR, LLVM IR, CUDA C++, PTX), stopping
// after the stage asked for. Used by the CLI, the Python module and the C++
// API. Two back-ends make the PTX from the same per-thread LLVM form: LLVM's
// NVPTX target ("llvm", the default) and NVRTC ("nvrtc", docs/nvrtc.md).
#pragma once

#include "dsl/Specializer.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Ordered by pipeline depth: "stop after X" is one comparison. CUDA is the
// CUDA C++ the NVRTC back-end prints (with either back-end selected).
enum class Stage { AST, IR, IROpt, LLVM, CUDA, PTX };
std::optional<Stage> parseStage(std::string_view name); // "ast", "ir", "ir-opt", "llvm", "cuda", "ptx"
const char *stageName(Stage stage);

struct CompileOptions {
  unsigned numWarps = 4;
  unsigned numStages = 3;
  std::string arch = "sm_90a";
  std::string stopAfterPass; // ir-opt stops after this pass (golden tests)
  // tl.device_assert (and `assert` on runtime values) are checked on the device;
  // TESSERA_DEBUG=1 turns this on too (ResolvedOptions).
  bool debug = false;
  // Tensor cores for fp16/bf16 dots (accelerate-dot, docs/tensor-cores.md):
  // 1 on, 0 off, -1 from TESSERA_MMA (on unless TESSERA_MMA=0).
  int tensorCores = -1;
  // The last step to PTX: "llvm" (LLVM's NVPTX back-end), "nvrtc" (CUDA C++
  // compiled by NVRTC), or "" for TESSERA_BACKEND (default "llvm").
  std::string backend;
  // Floating-point contraction (a * b + c as one fused multiply-add, Triton's
  // enable_fp_fusion): 1 on, 0 off, -1 from TESSERA_FP_FUSION (on unless it is 0).
  int fpFusion = -1;
  // Registers a thread may use (PTX .maxnreg, Triton's maxnreg), e.g. to keep two
  // CTAs on an SM; 0 leaves it to ptxas. 16..255.
  unsigned maxRegisters = 0;
};

// CompileOptions with every setting that the environment may decide made
// definite (the variables and their rules: compiler/support/Environment.h).
// The passes, codegen and the kernel-cache key read this, so one compile
// reads the environment once.
struct ResolvedOptions {
  bool debug = false;           // options.debug or TESSERA_DEBUG
  bool tensorCores = true;      // options.tensorCores, else TESSERA_MMA
  bool fpFusion = true;         // options.fpFusion, else TESSERA_FP_FUSION
  std::string backend = "llvm"; // options.backend, else TESSERA_BACKEND: "llvm" or "nvrtc"
  bool wgmma = true;            // TESSERA_WGMMA
  bool dumpIR = false;          // TESSERA_DUMP_IR
  bool compareRuns = true;      // TESSERA_COMPARE_RUNS (benchmarks only: not in the cache key)
  bool fp8RegisterA = true;     // TESSERA_WGMMA_FP8_REGISTER_A (an A/B switch; in the cache key when off)
  std::string libdevicePath;    // TESSERA_LIBDEVICE, else under CUDA_HOME
};
// Reads the environment. Throws std::invalid_argument for a back-end other
// than llvm and nvrtc (see resolveBackend).
ResolvedOptions resolveOptions(const CompileOptions &options);

// The ranges of the numeric options, for every front door that reads them
// (compileKernel, the CLI; python/tessera/compiler.py says the same in Python).
// CompileOptions::numWarps: a power of 2, 1..32.
bool numWarpsInRange(long long n);
// CompileOptions::numStages: a positive int (1..2^31-1), as tessera.compile's num_stages.
bool numStagesInRange(long long n);
// A valid CompileOptions::maxRegisters: 0 (no cap) or 16..255.
bool maxRegistersInRange(unsigned n);
// options.backend resolved against TESSERA_BACKEND: "llvm" or "nvrtc".
// Throws std::invalid_argument for any other name.
std::string resolveBackend(const CompileOptions &options);
// "llvm" or "nvrtc" (and "" = the default) are back-ends.
bool isBackendName(std::string_view name);

struct CompiledKernel {
  std::string name;
  std::string ast, ir, irOpt, llvmIR, ptx; // filled up to the stage asked for
  std::string cuda;    // the generated CUDA C++ (NVRTC back-end, or Stage::CUDA)
  std::string backend; // the back-end that made (or would make) the PTX
  unsigned numWarps = 4; // launched: CompileOptions::numWarps, plus 4 with a producer warpgroup (docs/tma.md)
  unsigned sharedBytes = 0;
};

// "*fp32:16, i32, fp32, *bf16" → one ArgSpec per entry. Throws
// std::invalid_argument naming the bad entry.
std::vector<ArgSpec> parseSignature(std::string_view text);
// A signature whose entries may be tuple arguments, as Triton spells them: "(*fp32:16, (i32, None), 4)"
// (nested; an element that is not a type is a constexpr value). `leaves`: every type, tuples flattened
// depth first (the kernel's real parameters); `tuples`: per tuple entry (0-based), its shape, the value
// the tuple's parameter takes in the constexprs (Specialization's Runtime leaves).
struct TupleSignature {
  std::vector<ArgSpec> leaves;
  std::map<size_t, ConstexprValue> tuples;
};
TupleSignature parseTupleSignature(std::string_view text);
// The types of kernel `kernel`'s signature, its tuple entries flattened, each tuple's shape given to its
// parameter in `constexprs` (what tessera compile --signature and tessera.compile(signature=) take).
std::vector<ArgSpec> signatureWithTuples(const std::shared_ptr<const SourceFile> &source, const std::string &kernel,
                                         std::string_view signature,
                                         std::map<std::string, ConstexprValue> &constexprs);
// "tessera X.Y.Z (LLVM 19.1.7)"
std::string versionString();
// The architectures tessera emits PTX for.
bool isSupportedArch(std::string_view arch);

// Throws CompileError for errors in the kernel source, std::invalid_argument
// for bad options. Resolves `options` against the environment (resolveOptions).
CompiledKernel compileKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                             const std::vector<ArgSpec> &signature,
                             const std::map<std::string, ConstexprValue> &constexprs,
                             const CompileOptions &options, Stage stopAfter = Stage::PTX);
// The same with `resolved` = resolveOptions(options) already read (the
// runtime reads it once for the cache key and the compile).
CompiledKernel compileKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                             const std::vector<ArgSpec> &signature,
                             const std::map<std::string, ConstexprValue> &constexprs,
                             const CompileOptions &options, const ResolvedOptions &resolved, Stage stopAfter);

} // namespace tessera
