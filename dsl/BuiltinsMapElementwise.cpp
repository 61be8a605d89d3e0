// tl.map_elementwise(scalar_fn, *args, pack=1): the @jit function scalar_fn
// applied to every element of the broadcast args (`pack` elements of each at
// a time: scalar_fn(a0..a{pack-1}, b0..b{pack-1}, ...) returns pack values of
// each result, result 0's first). The function is inlined once, on scalars,
// into the region of one map_elementwise op; its `if`s stay real branches, run
// per element (compiler/codegen/MapElementwise.cpp, the interpreter's
// evalMapElementwise), so a data-dependent `if` or `return` is exact and only
// the taken side is computed, as in Triton.
#include "dsl/BuiltinArgs.h"

#include "llvm/Support/Casting.h"

namespace tessera::spec {

using ir::OpCode;

// The region's values are one element each, different in every thread: codegen lowers it per
// register, while it runs the kernel's own scalar stores, atomics and debug ops once per program
// (thread 0, a barrier to share the result) and gives blocks a layout. So the function may load,
// compute, branch and loop on scalars, read the timer and run inline asm, and nothing else.
void Specializer::requirePerElementOps(const ir::Block &region, const std::string &fname, const std::string &fnName,
                                       SourceLoc loc) {
  for (const auto &op : region.ops) {
    for (const auto &r : op->results)
      if (r->type.isBlock())
        error(loc, fname + ": the function '" + fnName + "' makes a block (" + r->type.str() + ", '" +
                       ir::mnemonic(op->code) + "' at line " + std::to_string(op->loc.line) +
                       "); it runs on one element at a time, so it may only compute on scalars");
    const bool perThread = op->code == OpCode::GlobalTimer || op->code == OpCode::InlineAsm || ir::opHasRegions(op->code) ||
                           ir::opIsTerminator(op->code);
    if (ir::mayWriteMemory(*op) && !perThread)
      error(loc, fname + ": '" + std::string(ir::mnemonic(op->code)) + "' (line " + std::to_string(op->loc.line) +
                     ") inside the function '" + fnName + "' is not supported: it runs once per element, and tessera "
                     "runs stores, atomics and debug operations on scalars once per program");
    for (const auto &inner : op->regions) requirePerElementOps(*inner, fname, fnName, loc);
  }
}

std::optional<SValue> Specializer::callMapElementwiseBuiltin(const std::string &name, CallArgs &args) {
  if (name != "lang.map_elementwise") return std::nullopt;
  const std::string fname = "tl.map_elementwise";
  const SourceLoc loc = args.loc;
  int64_t pack = 1;
  for (size_t i = 0; i < args.keywords.size(); ++i) {
    const auto &[key, value] = args.keywords[i];
    if (key != "pack") error(args.keywordLocs[i], fname + "() got an unexpected keyword argument '" + key + "'");
    pack = requireInt(value, args.keywordLocs[i], fname + "'s pack");
    if (pack < 1) error(args.keywordLocs[i], fname + "'s pack must be at least 1, got " + std::to_string(pack));
  }
  if (args.args.size() < 2) error(loc, fname + " needs a @jit scalar function and at least one argument");

  // The scalar function: a @jit function, or a string constexpr naming one (a function passed as a constexpr).
  SValue fnValue = args.args[0];
  if (fnValue.isConst() && fnValue.c.kind == ConstexprValue::Kind::String)
    if (auto it = globals_.find(fnValue.c.stringValue); it != globals_.end()) fnValue = it->second;
  if (fnValue.kind != SValue::Kind::Function || !isJitFunction(*fnValue.fn, /*fusionDecorators=*/false))
    error(args.argLocs[0], fname + "'s first argument must be a @jit function, got " + describe(fnValue));
  const ast::FunctionDef &fn = *fnValue.fn;

  // The arguments, broadcast to one shape.
  std::vector<ir::Value *> operands;
  for (size_t i = 1; i < args.args.size(); ++i) operands.push_back(toIR(args.args[i], args.argLocs[i]));
  std::vector<int64_t> shape = operands[0]->type.shape;
  for (size_t i = 0; i < operands.size(); ++i)
    shape = broadcastShapes(ir::Type().withShape(shape), operands[i]->type, args.argLocs[i + 1]);
  for (size_t i = 0; i < operands.size(); ++i) operands[i] = broadcastTo(operands[i], shape, args.argLocs[i + 1]);

  // The region: pack scalars of each operand in, the function inlined on them.
  ir::Operation *op = b_.create(OpCode::MapElementwise, operands, {}, {{"pack", pack}}, 1);
  ir::Block *region = op->region(0);
  CallArgs call;
  call.loc = loc;
  for (ir::Value *v : operands)
    for (int64_t j = 0; j < pack; ++j) {
      call.args.push_back(SValue::ir(region->addArgument(v->type.element())));
      call.argLocs.push_back(loc);
    }
  ir::Block *outer = b_.block();
  auto after = outer->ops.end();
  for (auto it = outer->ops.begin(); it != outer->ops.end(); ++it)
    if (it->get() == op) after = std::next(it);
  b_.setInsertionPointToEnd(region);
  SValue r = inlineCall(fn, call);
  const bool tuple = r.kind == SValue::Kind::Tuple;
  std::vector<SValue> returned = tuple ? r.elems : std::vector<SValue>{r};
  if (returned.empty() || (!tuple && r.isNone()))
    error(loc, fname + ": the function '" + fn.name + "' must return a value");
  if (returned.size() % static_cast<size_t>(pack) != 0)
    error(loc, fname + ": with pack=" + std::to_string(pack) + " the function '" + fn.name +
                   "' must return a multiple of " + std::to_string(pack) + " values, it returns " +
                   std::to_string(returned.size()));
  std::vector<ir::Value *> yields;
  for (const SValue &v : returned) {
    ir::Value *x = toIR(v, loc);
    if (x->type.isBlock())
      error(loc, fname + ": the function '" + fn.name + "' must return scalars, it returns " + x->type.str());
    yields.push_back(x);
  }
  const size_t P = static_cast<size_t>(pack), numResults = yields.size() / P;
  for (size_t m = 0; m < numResults; ++m)
    for (size_t j = 1; j < P; ++j)
      if (yields[m * P + j]->type != yields[m * P]->type)
        error(loc, fname + ": result " + std::to_string(m) + " of '" + fn.name + "' has type " +
                       yields[m * P]->type.str() + " for one element of the pack and " +
                       yields[m * P + j]->type.str() + " for another");
  b_.create(OpCode::Yield, yields, {});
  b_.setInsertionPoint(outer, after);
  requirePerElementOps(*region, fname, fn.name, loc);

  std::vector<SValue> results;
  for (size_t m = 0; m < numResults; ++m) {
    auto v = std::make_unique<ir::Value>();
    v->type = yields[m * P]->type.withShape(shape);
    v->definingOp = op;
    v->index = static_cast<unsigned>(m);
    results.push_back(SValue::ir(v.get()));
    op->results.push_back(std::move(v));
  }
  return numResults == 1 && !tuple ? results[0] : SValue::tuple(std::move(results));
}

} // namespace tessera::spec
