#include "compiler/support/Diagnostics.h"

namespace tessera {

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line < firstLine)
    return {};
  uint32_t want = line - firstLine;
  size_t begin = 0;
  for (uint32_t i = 0; i < want; ++i) {
    size_t nl = text.find('\n', begin);
    if (nl == std::string::npos)
      return {};
    begin = nl + 1;
  }
  size_t end = text.find('\n', begin);
  if (end == std::string::npos)
    end = text.size();
  std::string_view view(text.data() + begin, end - begin);
  if (!view.empty() && view.back() == '\r')
    view.remove_suffix(1);
  if (begin == 0 && view.substr(0, 3) == "\xEF\xBB\xBF")
    view.remove_prefix(3); // a byte-order mark is no part of the first line (the lexer skips it)
  return view;
}

std::string formatDiagnostic(const SourceFile &file, SourceLoc loc,
                             std::string_view message) {
  std::string out = file.path.empty() ? "<source>" : file.path;
  if (loc.line != 0)
    out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  out += ": error: ";
  out += message;
  if (loc.line == 0)
    return out;
  std::string_view line = file.lineText(loc.line);
  out += "\n";
  out += line;
  out += "\n";
  // Keep tabs so the caret lines up under tab-indented code.
  for (uint32_t i = 1; i < loc.col; ++i)
    out += (i - 1 < line.size() && line[i - 1] == '\t') ? '\t' : ' ';
  out += "^";
  return out;
}

void raiseError(const SourceFile &file, SourceLoc loc, std::string_view message) {
  throw CompileError(formatDiagnostic(file, loc, message), loc);
}

} // namespace tessera
