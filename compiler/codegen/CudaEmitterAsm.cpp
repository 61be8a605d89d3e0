// Inline asm (ldmatrix, mma.sync, predicated loads, ... from the lowering)
// as CUDA asm statements: LLVM's constraints and $N operands renumbered the
// way CUDA numbers them (outputs, then untied inputs), predicate operands
// ('b') passed as integers and turned into .pred registers inside, pointers
// into shared memory passed as shared addresses.
#include "compiler/codegen/CudaEmitterInternal.h"

#include <llvm/IR/InlineAsm.h>

#include <algorithm>

namespace tessera::codegen::cuda {

using namespace llvm;

void Printer::inlineAsm(const CallInst &call) {
  const auto *ia = cast<InlineAsm>(call.getCalledOperand());
  InlineAsm::ConstraintInfoVector constraints = ia->ParseConstraints();
  struct Output {
    std::string code, var;
    const Value *tied = nullptr;
  };
  struct Input {
    std::string code;
    const Value *value;
    int tiedTo = -1;
  };
  std::vector<Output> outputs;
  std::vector<Input> inputs;
  bool clobbersMemory = false;
  unsigned argument = 0;
  for (const InlineAsm::ConstraintInfo &c : constraints) {
    if (c.Type == InlineAsm::isClobber) {
      clobbersMemory = clobbersMemory || (c.Codes.size() == 1 && c.Codes[0] == "{memory}");
      continue;
    }
    if (c.isIndirect || c.isMultipleAlternative || c.Codes.size() != 1 || c.Type == InlineAsm::isLabel)
      fail("inline asm constraint string '" + ia->getConstraintString() + "'");
    if (c.Type == InlineAsm::isOutput) {
      outputs.push_back({c.Codes[0], ""});
    } else {
      Input in{c.Codes[0], call.getArgOperand(argument++)};
      if (!in.code.empty() && std::all_of(in.code.begin(), in.code.end(), ::isdigit)) in.tiedTo = std::stoi(in.code);
      inputs.push_back(in);
    }
  }
  // Output variables: the call's own local, or one per field of its struct.
  if (outputs.size() == 1 && !call.getType()->isStructTy()) outputs[0].var = names_.at(&call);
  else if (!outputs.empty()) {
    const std::vector<std::string> &vars = asmOutputs_.at(&call);
    if (vars.size() != outputs.size()) fail("inline asm with mismatched outputs (" + printed(&call) + ")");
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].var = vars[i];
  }
  // CUDA operand numbers: outputs first, then the inputs not tied to an output.
  const unsigned numOutputs = static_cast<unsigned>(outputs.size());
  std::vector<int> cudaIndex(numOutputs + inputs.size(), -1);
  std::vector<int> predicate(numOutputs + inputs.size(), -1); // "b" operands: index of their .pred register
  for (unsigned i = 0; i < numOutputs; ++i) cudaIndex[i] = static_cast<int>(i);
  unsigned next = numOutputs, predicates = 0;
  std::string inputList, prologue;
  for (size_t j = 0; j < inputs.size(); ++j) {
    Input &in = inputs[j];
    const unsigned llvmIndex = numOutputs + static_cast<unsigned>(j);
    if (in.tiedTo >= 0) {
      if (in.tiedTo >= static_cast<int>(numOutputs)) fail("inline asm tied operand '" + in.code + "'");
      outputs[in.tiedTo].tied = in.value;
      cudaIndex[llvmIndex] = in.tiedTo;
      continue;
    }
    std::string code = in.code, value = expr(in.value);
    Type *t = in.value->getType();
    if (code == "b") { // a predicate: passed as a 32-bit integer and turned into a .pred inside
      predicate[llvmIndex] = static_cast<int>(predicates);
      prologue += "setp.ne.b32 tsr_p" + std::to_string(predicates++) + ", %" + std::to_string(next) + ", 0;\n\t";
      code = "r";
      value = "(unsigned int)" + value;
    } else if (t->isPointerTy()) {
      if (code != "l") fail("inline asm pointer operand with constraint '" + code + "'");
      value = t->getPointerAddressSpace() == 3 ? "(unsigned long long)__cvta_generic_to_shared(" + value + ")"
                                               : "(unsigned long long)" + value;
    } else if (code != "r" && code != "h" && code != "l" && code != "f" && code != "d" && code != "n") {
      fail("inline asm constraint '" + code + "'");
    }
    cudaIndex[llvmIndex] = static_cast<int>(next++);
    inputList += std::string(inputList.empty() ? "" : ", ") + "\"" + code + "\"(" + value + ")";
  }
  std::string outputList;
  for (Output &o : outputs) {
    std::string code = o.code; // ParseConstraints took the '=' (and an early-clobber '&') off
    if (code != "r" && code != "h" && code != "l" && code != "f" && code != "d")
      fail("inline asm output constraint '" + o.code + "'");
    if (o.tied) {
      line(o.var + " = " + expr(o.tied) + ";");
      code = "+" + code;
    } else {
      code = "=" + code;
    }
    outputList += std::string(outputList.empty() ? "" : ", ") + "\"" + code + "\"(" + o.var + ")";
  }
  // The template: $N -> %N (renumbered), $$ -> $, % -> %%.
  const std::string &text = ia->getAsmString();
  std::string body;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      body += "%%";
      continue;
    }
    if (c != '$') {
      body += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      body += '$';
      ++i;
      continue;
    }
    size_t start = i + 1;
    const bool braced = start < text.size() && text[start] == '{';
    if (braced) ++start;
    size_t end = start;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == start || (braced && (end >= text.size() || text[end] != '}')))
      fail("inline asm template '" + text + "'");
    const unsigned operand = static_cast<unsigned>(std::stoul(text.substr(start, end - start)));
    if (operand >= cudaIndex.size()) fail("inline asm operand $" + std::to_string(operand));
    body += predicate[operand] >= 0 ? "tsr_p" + std::to_string(predicate[operand])
                                     : "%" + std::to_string(cudaIndex[operand]);
    i = braced ? end : end - 1;
  }
  if (predicates) {
    std::string declare = "{\n\t.reg .pred ";
    for (unsigned p = 0; p < predicates; ++p) declare += (p ? ", tsr_p" : "tsr_p") + std::to_string(p);
    body = declare + ";\n\t" + prologue + body + "\n\t}";
  }
  // Pure asm (no side effects, no memory) may be moved, merged or dropped; anything
  // touching memory stays where it is.
  bool touchesMemory = ia->hasSideEffects() || clobbersMemory || !call.doesNotAccessMemory();
  if (touchesMemory && !ia->hasSideEffects() && !clobbersMemory && !call.onlyReadsMemory()) {
    // No attributes: trust the instruction (our lowering's convention).
    touchesMemory = false;
    for (const char *op : {"ld.", "st.", "atom.", "red.", "ldmatrix", "stmatrix", "cp.", "bar.", "barrier", "fence",
                           "membar", "shfl", "vote", "prefetch"})
      touchesMemory = touchesMemory || text.find(op) != std::string::npos;
  }
  std::string statement = std::string("asm") + (touchesMemory ? " volatile" : "") + "(" + quoted(body);
  const std::string clobbers = clobbersMemory ? "\"memory\"" : "";
  if (!outputList.empty() || !inputList.empty() || !clobbers.empty()) statement += " : " + outputList;
  if (!inputList.empty() || !clobbers.empty()) statement += " : " + inputList;
  if (!clobbers.empty()) statement += " : " + clobbers;
  line(statement + ");");
}

} // namespace tessera::codegen::cuda
