// tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
// PTX run on every element (`pack` elements at a time) of the broadcast
// arguments, one result block per output dtype. Lowered in
// compiler/codegen/InlineAsm.cpp; the interpreter cannot run PTX and says so
// (as Triton's interpreter does).
#include "dsl/BuiltinArgs.h"

#include <algorithm>

namespace tessera::spec {

using ir::OpCode;

std::optional<SValue> Specializer::callInlineAsmBuiltin(const std::string &name, CallArgs &args) {
  if (name != "lang.inline_asm_elementwise") return std::nullopt;
  const std::string fname = "tl.inline_asm_elementwise";
  Bound b = bind(*this, args, fname,
                 {{"asm", true}, {"constraints", true}, {"args", true}, {"dtype", true}, {"is_pure", true}, {"pack", true}});
  ConstexprValue text = requireConst(b[0], b.locs[0], fname + "'s asm");
  ConstexprValue constraints = requireConst(b[1], b.locs[1], fname + "'s constraints");
  if (text.kind != ConstexprValue::Kind::String) error(b.locs[0], fname + "'s asm must be a string");
  if (constraints.kind != ConstexprValue::Kind::String) error(b.locs[1], fname + "'s constraints must be a string");
  const bool pure = requireInt(b[4], b.locs[4], fname + "'s is_pure") != 0;
  const int64_t pack = requireInt(b[5], b.locs[5], fname + "'s pack");
  if (pack < 1) error(b.locs[5], fname + "'s pack must be at least 1, got " + std::to_string(pack));

  // The arguments, broadcast to one shape (pointers allowed).
  std::vector<SValue> argList = b[2].kind == SValue::Kind::Tuple ? b[2].elems : std::vector<SValue>{b[2]};
  // No arguments (Triton's gdc_wait: "griddepcontrol.wait; // dummy $0"): one scalar result per dtype.
  std::vector<ir::Value *> operands;
  for (const SValue &a : argList) operands.push_back(toIR(a, b.locs[2]));
  std::vector<int64_t> shape = operands.empty() ? std::vector<int64_t>{} : operands[0]->type.shape;
  for (ir::Value *v : operands) shape = broadcastShapes(ir::Type().withShape(shape), v->type, b.locs[2]);
  for (ir::Value *&v : operands) v = broadcastTo(v, shape, b.locs[2]);

  const bool tuple = b[3].kind == SValue::Kind::Tuple;
  std::vector<ir::Type> resultTypes;
  for (const SValue &d : tuple ? b[3].elems : std::vector<SValue>{b[3]}) {
    ir::Type t = requireDType(d, b.locs[3], fname + "'s dtype");
    if (t.pointer) error(b.locs[3], fname + " cannot return pointers");
    resultTypes.push_back(t.withShape(shape));
  }
  if (resultTypes.empty()) error(b.locs[3], fname + "'s dtype must name at least one type");

  // The constraint string must list one output per result register and one input per argument register.
  std::string codes;
  for (char c : constraints.stringValue)
    if (!std::isspace(static_cast<unsigned char>(c))) codes += c;
  int64_t outputs = 0, inputs = 0;
  size_t start = 0;
  while (start <= codes.size()) {
    size_t end = std::min(codes.find(',', start), codes.size());
    std::string code = codes.substr(start, end - start);
    if (code.empty()) error(b.locs[1], fname + "'s constraints have an empty entry: '" + constraints.stringValue + "'");
    if (code[0] == '=') ++outputs;
    else if (code[0] != '~') ++inputs;
    start = end + 1;
  }
  int64_t wantOutputs = 0, wantInputs = 0;
  for (const ir::Type &t : resultTypes) wantOutputs += (pack + ir::inlineAsmElementsPerRegister(t, pack) - 1) / ir::inlineAsmElementsPerRegister(t, pack);
  for (ir::Value *v : operands)
    wantInputs += (pack + ir::inlineAsmElementsPerRegister(v->type, pack) - 1) / ir::inlineAsmElementsPerRegister(v->type, pack);
  if (outputs != wantOutputs || inputs != wantInputs)
    error(b.locs[1], fname + "'s constraints name " + std::to_string(outputs) + " outputs and " + std::to_string(inputs) +
                         " inputs; with pack=" + std::to_string(pack) + " the dtypes and args need " +
                         std::to_string(wantOutputs) + " and " + std::to_string(wantInputs) +
                         " (elements narrower than 32 bits share 32-bit registers)");

  ir::Operation *op = b_.create(OpCode::InlineAsm, operands, resultTypes,
                                {{"asm", text.stringValue}, {"constraints", codes}, {"pure", int64_t(pure)}, {"pack", pack}});
  std::vector<SValue> results;
  for (auto &r : op->results) results.push_back(SValue::ir(r.get()));
  return tuple ? SValue::tuple(std::move(results)) : results[0];
}

} // namespace tessera::spec
