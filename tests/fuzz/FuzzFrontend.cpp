// libFuzzer target for the front-end: arbitrary bytes -> lexer -> parser ->
// AST printer. A CompileError is the expected outcome for most inputs; any
// other exception, a crash, a hang, a sanitizer report or a broken invariant
// (checked below, reported through abort) is a bug in the front-end.
//
// Build and run with tests/fuzz/run.sh.
#include "dsl/AST.h"

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
  if (tessera::ast::printAST(tessera::ast::parseModule(file)) != first)
    fail("printAST differs between two parses", first);
  return 0;
}
