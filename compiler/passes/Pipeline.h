// The optimisation pipeline over block IR, in one function.
#pragma once

#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace tessera::passes {

// The driver fills these from CompileOptions and the environment
// (ResolvedOptions, compiler/driver/Compiler.h).
struct PipelineOptions {
  bool dumpIR = false;      // TESSERA_DUMP_IR=1: print the IR after every pass (stderr)
  bool verifyEach = false;  // run the verifier after every pass (debug builds, tests)
  std::string stopAfter;    // a pass name: skip the passes after it (golden tests)
  std::string arch = "sm_90a"; // accelerate-dot uses tensor cores from sm_80
  bool tensorCores = false;    // run accelerate-dot (CompileOptions::tensorCores)
  unsigned numStages = 3;      // the pipeline pass's ring depth (CompileOptions::numStages)
  bool wgmma = true;           // sm_90a dots on wgmma (TESSERA_WGMMA=0: mma.sync)
};

// The pass names, in pipeline order.
const std::vector<std::string> &passNames();

// Runs every pass in order (up to options.stopAfter); throws std::logic_error if a pass breaks the
// IR, std::invalid_argument if options.stopAfter names no pass or one whose condition was false.
void runPipeline(ir::Function &fn, const PipelineOptions &options);

} // namespace tessera::passes
