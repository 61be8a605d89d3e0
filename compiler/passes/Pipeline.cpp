// The whole pass pipeline, top to bottom: one list of (name, function,
// condition). A pass's name is its --stop-after value, its TESSERA_DUMP_IR tag
// and its golden-test folder (tests/golden/<name>/). After each pass the IR is
// optionally verified and dumped.
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
#include "compiler/passes/HoistEpilogueLoads.h"
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

// One step of the pipeline: it runs when `condition` holds (null: always); `when` says, in
// words, when that is (the error of a --stop-after naming a pass that did not run).
struct Pass {
  const char *name;
  void (*run)(ir::Function &, const PipelineOptions &);
  bool (*condition)(ir::Function &, const PipelineOptions &) = nullptr;
  const char *when = nullptr;
};

bool hasDot(ir::Function &fn) {
  bool found = false;
  ir::walk(fn.body, [&](ir::Operation &op) { found |= op.code == ir::OpCode::Dot; });
  return found;
}

bool tensorCoreDots(ir::Function &fn, const PipelineOptions &options) { return options.tensorCores && hasDot(fn); }

// The passes, in order: each runs when its condition holds (no condition: always).
const std::vector<Pass> &passes() {
  using ir::Function;
  using O = const PipelineOptions &;
  static const char *const kTensorCoreDots = "tensor cores are on and the kernel has a dot";
  static const std::vector<Pass> list = {
      {"canonicalize", [](Function &fn, O) { canonicalize(fn); }},
      {"common-subexpression-elimination", [](Function &fn, O) { eliminateCommonSubexpressions(fn); }},
      {"dead-code-elimination", [](Function &fn, O) { eliminateDeadCode(fn); }},
      {"axis-analysis", [](Function &fn, O) { analyzeAxes(fn); }},
      {"layout-assignment", [](Function &fn, O) { assignLayouts(fn); }},
      {"coalesce", [](Function &fn, O) { coalesce(fn); }},
      {"remove-layout-conversions", [](Function &fn, O) { removeLayoutConversions(fn); }},
      {"accelerate-dot", [](Function &fn, O o) { accelerateDot(fn, o.arch, o.wgmma); }, tensorCoreDots,
       kTensorCoreDots},
      {"propagate-mma-layout", [](Function &fn, O) { propagateMmaLayout(fn); }, tensorCoreDots, kTensorCoreDots},
      {"software-pipeline", [](Function &fn, O o) { softwarePipeline(fn, o.numStages); }, tensorCoreDots,
       kTensorCoreDots},
      {"defer-lane-reductions", [](Function &fn, O) { deferLaneReductions(fn); }},
      {"fusion", [](Function &fn, O) { fuseElementwiseChains(fn); }},
      {"hoist-epilogue-loads", [](Function &fn, O) { hoistEpilogueLoads(fn); }},
      {"defer-wgmma-waits", [](Function &fn, O) { deferWgmmaWaits(fn); }},
  };
  return list;
}

void runPass(const Pass &pass, ir::Function &fn, const PipelineOptions &options) {
  auto start = std::chrono::steady_clock::now();
  pass.run(fn, options);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  if (options.verifyEach) {
    std::string problem = ir::verify(fn);
    if (!problem.empty())
      throw std::logic_error(std::string("IR is invalid after pass '") + pass.name + "': " + problem + "\n" +
                             ir::print(fn));
  }
  if (options.dumpIR)
    std::fprintf(stderr, "// ----- IR after %s (%lld us) -----\n%s\n", pass.name, static_cast<long long>(micros),
                 ir::print(fn).c_str());
}

std::string joinedPassNames() {
  std::string text;
  for (const std::string &name : passNames()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

} // namespace

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Pass &pass : passes()) out.push_back(pass.name);
    return out;
  }();
  return names;
}

void runPipeline(ir::Function &fn, const PipelineOptions &options) {
  if (!options.stopAfter.empty() &&
      std::find(passNames().begin(), passNames().end(), options.stopAfter) == passNames().end())
    throw std::invalid_argument("unknown pass '" + options.stopAfter + "'; the passes are " + joinedPassNames());
  for (const Pass &pass : passes()) {
    const bool runs = !pass.condition || pass.condition(fn, options);
    if (runs) runPass(pass, fn, options);
    if (options.stopAfter != pass.name) continue;
    if (!runs)
      throw std::invalid_argument("pass '" + options.stopAfter + "' did not run for this kernel: it runs only when " +
                                  pass.when);
    return;
  }
}

} // namespace tessera::passes
