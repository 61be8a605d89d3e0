// The whole pass pipeline, top to bottom. Each step names the pass (its
// dump tag and its golden-test folder share that name), runs it, then
// optionally verifies and dumps the IR.
#include "compiler/passes/Pipeline.h"

#include "compiler/passes/AccelerateDot.h"
#include "compiler/passes/AxisAnalysis.h"
#include "compiler/passes/Canonicalize.h"
#include "compiler/passes/Coalesce.h"
#include "compiler/passes/CommonSubexpressionElimination.h"
#include "compiler/passes/DeadCodeElimination.h"
#include "compiler/passes/DeferLaneReductions.h"
#include "compiler/passes/DeferWgmmaWaits.h"
#include "compiler/passes/Fusion.h"
#include "compiler/passes/LayoutAssignment.h"
#include "compiler/passes/PropagateMmaLayout.h"
#include "compiler/passes/RemoveLayoutConversions.h"
#include "compiler/passes/SoftwarePipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace tessera::passes {

namespace {

// Returns false once the pipeline should stop (after options.stopAfter).
template <typename PassFn>
bool runPass(const char *name, PassFn pass, ir::Function &fn, const PipelineOptions &options) {
  auto start = std::chrono::steady_clock::now();
  pass(fn);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  if (options.verifyEach) {
    std::string problem = ir::verify(fn);
    if (!problem.empty())
      throw std::logic_error(std::string("IR is invalid after pass '") + name + "': " + problem + "\n" + ir::print(fn));
  }
  if (options.dumpIR)
    std::fprintf(stderr, "// ----- IR after %s (%lld us) -----\n%s\n", name, static_cast<long long>(micros),
                 ir::print(fn).c_str());
  return options.stopAfter != name;
}

bool hasDot(ir::Function &fn) {
  bool found = false;
  ir::walk(fn.body, [&](ir::Operation &op) { found |= op.code == ir::OpCode::Dot; });
  return found;
}

} // namespace

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = {"canonicalize", "common-subexpression-elimination", "dead-code-elimination",
                                                 "axis-analysis", "layout-assignment", "coalesce",
                                                 "remove-layout-conversions", "accelerate-dot",
                                                 "propagate-mma-layout", "pipeline", "defer-lane-reductions",
                                                 "fusion", "defer-wgmma-waits"};
  return names;
}

void runPipeline(ir::Function &fn, const PipelineOptions &options) {
  if (!options.stopAfter.empty() &&
      std::find(passNames().begin(), passNames().end(), options.stopAfter) == passNames().end())
    throw std::invalid_argument("unknown pass '" + options.stopAfter + "'");
  runPass("canonicalize", canonicalize, fn, options) &&
  runPass("common-subexpression-elimination", eliminateCommonSubexpressions, fn, options) &&
  runPass("dead-code-elimination", eliminateDeadCode, fn, options) &&
  runPass("axis-analysis", analyzeAxes, fn, options) &&
  runPass("layout-assignment", static_cast<void (*)(ir::Function &)>(assignLayouts), fn, options) &&
  runPass("coalesce", coalesce, fn, options) &&
  runPass("remove-layout-conversions", removeLayoutConversions, fn, options) &&
  // accelerate-dot, propagate-mma-layout and pipeline run (and dump) only when tensor cores are on and the kernel has a dot.
  (!options.tensorCores || !hasDot(fn) ||
   (runPass("accelerate-dot", [&](ir::Function &f) { accelerateDot(f, options.arch, options.wgmma); }, fn, options) &&
    runPass("propagate-mma-layout", propagateMmaLayout, fn, options) &&
    runPass("pipeline", [&](ir::Function &f) { pipelineLoops(f, options.numStages); }, fn, options))) &&
  runPass("defer-lane-reductions", deferLaneReductions, fn, options) &&
  runPass("fusion", fuseElementwiseChains, fn, options) &&
  runPass("defer-wgmma-waits", deferWgmmaWaits, fn, options);
}

} // namespace tessera::passes
