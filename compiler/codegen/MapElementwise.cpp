// map_elementwise (tl.map_elementwise): the region (the inlined @jit scalar
// function) lowered once per `pack` registers of the thread, with one
// register per region argument. Its `if`s become real branches, so each
// element runs only its own path (a data-dependent `if` is exact, and only
// one side is computed). The operands and results share one layout, so the
// same registers hold the same elements everywhere; a thread holding fewer
// than `pack` registers repeats its last one and drops the extra results, as
// inline_asm does.
#include "compiler/codegen/Lowering.h"

namespace tessera::codegen {

using namespace llvm;

void KernelLowering::lowerMapElementwise(ir::Operation &op) {
  ir::Block &region = *op.region(0);
  const unsigned pack = static_cast<unsigned>(op.intAttr("pack"));
  const unsigned n = numRegs(op.result(0), op);
  std::vector<Regs> results(op.results.size(), Regs(n, nullptr));
  for (unsigned first = 0; first < n; first += pack) {
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const Regs &x = lookup(op.operand(static_cast<unsigned>(k)));
      for (unsigned j = 0; j < pack; ++j)
        define(region.args.at(k * pack + j).get(), {x[std::min<size_t>(first + j, x.size() - 1)]});
    }
    lowerBlock(region);
    std::vector<Regs> out = terminatorValues(region, 0);
    if (out.size() != op.results.size() * pack)
      unsupported(op, "the region yields " + std::to_string(out.size()) + " values, expected " +
                          std::to_string(op.results.size() * pack));
    for (size_t m = 0; m < op.results.size(); ++m)
      for (unsigned j = 0; j < pack && first + j < n; ++j) results[m][first + j] = out[m * pack + j][0];
  }
  for (size_t m = 0; m < op.results.size(); ++m) define(op.result(static_cast<unsigned>(m)), std::move(results[m]));
}

} // namespace tessera::codegen
