// Diagnostics: every user error in tessera is one CompileError carrying a
// fully formatted message of the form
//
//   file:line:col: error: message
//   <the source line>
//        ^
//
// The front-end stops at the first error (one clear error, never a cascade).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera {

// A position in a source file; 1-based line and column. line == 0 means unknown.
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
};

// The text of one kernel file. `firstLine` lets Python hand us the source of
// one function (inspect.getsource) while errors still name the real line.
struct SourceFile {
  std::string path;
  std::string text;
  uint32_t firstLine = 1;

  // The text of the given (file-relative, 1-based) line, without its newline.
  std::string_view lineText(uint32_t line) const;
};

class CompileError : public std::runtime_error {
public:
  CompileError(std::string formatted, SourceLoc loc)
      : std::runtime_error(std::move(formatted)), loc_(loc) {}
  SourceLoc loc() const { return loc_; }

private:
  SourceLoc loc_;
};

// Formats "path:line:col: error: msg" plus the source line and a caret.
std::string formatDiagnostic(const SourceFile &file, SourceLoc loc,
                             std::string_view message);

// Throws a CompileError for `loc` in `file`.
[[noreturn]] void raiseError(const SourceFile &file, SourceLoc loc,
                             std::string_view message);

} // namespace tessera
