// libFuzzer target for the front-end: arbitrary bytes -> lexer -> parser ->
// AST printer -> specialiser (every @jit function, with a signature made up
// from its parameter names) -> IR verifier -> the IR pass pipeline. A CompileError is the expected outcome for most inputs; any
// other exception, a crash, a hang, a sanitizer report or a broken invariant
// (checked below, reported through abort) is a bug in the front-end.
//
// Build and run with tests/fuzz/run.sh.
#include "compiler/passes/Pipeline.h"
#include "dsl/AST.h"
#include "dsl/Specializer.h"

#include "llvm/Support/Casting.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char *what, std::string_view detail) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n%.*s\n", what, int(detail.size()),
               detail.data());
  std::abort();
}

// Every diagnostic has the documented shape and points into the file.
void checkDiagnostic(const tessera::SourceFile &file, const tessera::CompileError &e) {
  std::string_view msg = e.what();
  tessera::SourceLoc loc = e.loc();
  if (loc.line == 0 || loc.col == 0)
    fail("diagnostic without a location", msg);
  std::string prefix = file.path + ":" + std::to_string(loc.line) + ":" +
                       std::to_string(loc.col) + ": error: ";
  if (msg.substr(0, prefix.size()) != prefix)
    fail("diagnostic does not start with file:line:col: error:", msg);
  size_t lines = 1;
  for (char c : file.text)
    lines += c == '\n';
  if (loc.line < file.firstLine || loc.line - file.firstLine >= lines)
    fail("diagnostic line outside the file", msg);
  if (msg.back() != '^')
    fail("diagnostic without a caret", msg);
}

// A plausible signature: *_ptr parameters are pointers, others i32; each
// constexpr gets 16 unless it has a default.
tessera::Specialization makeUpSpecialization(const tessera::ast::FunctionDef &fn) {
  tessera::Specialization spec;
  spec.kernelName = fn.name;
  for (const auto &p : fn.params) {
    bool constexprParam = false;
    if (auto *a = llvm::dyn_cast_or_null<tessera::ast::Attribute>(p.annotation.get()))
      constexprParam = a->attr == "constexpr";
    if (constexprParam) {
      if (!p.defaultValue) spec.constexprs[p.name] = tessera::ConstexprValue::ofInt(16);
      continue;
    }
    bool pointer = p.name.size() >= 3 && p.name.compare(p.name.size() - 3, 3, "ptr") == 0;
    tessera::ArgSpec arg;
    arg.type = pointer ? tessera::ir::Type::ptr(tessera::ir::ScalarType::F32)
                       : tessera::ir::Type(tessera::ir::ScalarType::I32);
    spec.args.push_back(arg);
  }
  return spec;
}

// Specialises every @jit function; user errors must be located diagnostics
// (or the one "no such kernel" error, which has no location), and whatever
// the specialiser accepts must verify and survive the pass pipeline.
void specializeAll(const std::shared_ptr<tessera::SourceFile> &file, const tessera::ast::Module &module) {
  for (const std::string &name : tessera::jitFunctionNames(module)) {
    const tessera::ast::FunctionDef *fn = nullptr;
    for (const auto &s : module.body)
      if (auto *f = llvm::dyn_cast<tessera::ast::FunctionDef>(s.get()); f && f->name == name) fn = f;
    if (!fn) continue;
    std::unique_ptr<tessera::ir::Function> ir;
    try {
      ir = tessera::specialize(module, makeUpSpecialization(*fn));
    } catch (const tessera::CompileError &e) {
      if (e.loc().line != 0) checkDiagnostic(*file, e);
      continue;
    }
    if (std::string problem = tessera::ir::verify(*ir); !problem.empty())
      fail("the specialiser produced invalid IR", problem);
    tessera::passes::PipelineOptions options;
    options.verifyEach = true;
    try {
      tessera::passes::runPipeline(*ir, options);
    } catch (const std::logic_error &e) {
      fail("a pass broke the IR", e.what());
    } catch (const std::runtime_error &) {
      // Codegen-level limits (e.g. a block too large) are reported as errors.
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = std::make_shared<tessera::SourceFile>();
  file->path = "fuzz.py";
  file->text.assign(reinterpret_cast<const char *>(data), size);
  std::string first;
  try {
    tessera::ast::Module module = tessera::ast::parseModule(file);
    first = tessera::ast::printAST(module);
  } catch (const tessera::CompileError &e) {
    checkDiagnostic(*file, e);
    return 0;
  }
  // Parsing is deterministic.
  tessera::ast::Module module = tessera::ast::parseModule(file);
  if (tessera::ast::printAST(module) != first)
    fail("printAST differs between two parses", first);
  specializeAll(file, module);
  return 0;
}
