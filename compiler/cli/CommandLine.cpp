#include "compiler/cli/CommandLine.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace tessera::cli {

namespace {

constexpr size_t kHelpColumn = 23; // where an option's help starts in --help

bool startsWith(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

// Levenshtein distance, for "did you mean" on a misspelt option or command.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean 'X'?" for the closest candidate within two edits and a
// third of the word (so that -x does not suggest -o), else "".
std::string suggestion(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDistance = std::min<size_t>(2, word.size() / 3) + 1;
  for (const std::string &c : candidates)
    if (size_t d = editDistance(word, c); d < bestDistance) bestDistance = d, best = c;
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

// "  LEFT   help", the help's further lines indented to the help column.
std::string helpEntry(const std::string &left, const std::string &help) {
  std::string out = "  " + left;
  out += out.size() + 1 < kHelpColumn ? std::string(kHelpColumn - out.size(), ' ') : "\n" + std::string(kHelpColumn, ' ');
  for (char c : help) {
    out += c;
    if (c == '\n') out += std::string(kHelpColumn, ' ');
  }
  return out + "\n";
}

} // namespace

Command::Command(std::string path, std::string synopsis, std::string about)
    : path_(std::move(path)), synopsis_(std::move(synopsis)), about_(std::move(about)) {}

Command &Command::option(std::vector<std::string> names, std::string metavar, std::string help,
                         std::function<void(const std::string &)> take) {
  options_.push_back({std::move(names), std::move(metavar), std::move(help), std::move(take)});
  return *this;
}

Command &Command::flag(std::vector<std::string> names, std::string help, std::function<void()> set) {
  options_.push_back({std::move(names), "", std::move(help), [set = std::move(set)](const std::string &) { set(); }});
  return *this;
}

Command &Command::operand(std::string metavar, std::string help, std::function<void(const std::string &)> take,
                          bool required) {
  operands_.push_back({std::move(metavar), std::move(help), std::move(take), required});
  return *this;
}

Command &Command::notes(std::string text) {
  notes_ = std::move(text);
  return *this;
}

const Command::Option *Command::find(const std::string &name) const {
  for (const Option &o : options_)
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return &o;
  return nullptr;
}

UsageError Command::usageError(const std::string &message) const {
  return UsageError(message + " (see '" + path_ + " --help')");
}

bool Command::parse(int argc, char **argv) const {
  // Help first, so that `tessera compile --kernel --help` is help too.
  for (int i = 0; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
  std::vector<std::string> names;
  for (const Option &o : options_) names.insert(names.end(), o.names.begin(), o.names.end());
  size_t nextOperand = 0;
  bool optionsEnded = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (optionsEnded || arg == "-" || arg.empty() || arg[0] != '-') {
      if (nextOperand == operands_.size()) {
        std::string expected;
        for (const Operand &o : operands_) expected += (expected.empty() ? "" : " ") + o.metavar;
        throw usageError("unexpected argument '" + arg + "' ('" + path_ + "' takes " +
                         (expected.empty() ? "no arguments" : expected) + ")");
      }
      operands_[nextOperand++].take(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    // --name=value (long options only: a short option's value is the next argument)
    std::string name = arg, inlineValue;
    bool hasInlineValue = false;
    if (size_t eq = arg.find('='); startsWith(arg, "--") && eq != std::string::npos) {
      name = arg.substr(0, eq);
      inlineValue = arg.substr(eq + 1);
      hasInlineValue = true;
    }
    const Option *option = find(name);
    if (!option) throw usageError("unknown option '" + name + "' for '" + path_ + "'" + suggestion(name, names));
    if (option->metavar.empty()) {
      if (hasInlineValue) throw usageError(name + " takes no value, got '" + arg + "'");
      option->take("");
    } else if (hasInlineValue) {
      option->take(inlineValue);
    } else {
      if (i + 1 >= argc) throw usageError(name + " needs a value: " + name + " " + option->metavar);
      option->take(argv[++i]);
    }
  }
  for (size_t k = nextOperand; k < operands_.size(); ++k)
    if (operands_[k].required) throw usageError("'" + path_ + "' needs " + operands_[k].metavar);
  return true;
}

std::string Command::usage() const {
  std::string out = "usage: " + path_ + (synopsis_.empty() ? "" : " " + synopsis_) + "\n";
  if (!about_.empty()) out += "\n" + about_ + (about_.back() == '\n' ? "" : "\n");
  if (!operands_.empty()) {
    out += "\narguments:\n";
    for (const Operand &o : operands_) out += helpEntry(o.metavar, o.help);
  }
  out += "\noptions:\n";
  for (const Option &o : options_) {
    std::string left;
    for (const std::string &n : o.names) left += (left.empty() ? "" : ", ") + n;
    if (!o.metavar.empty()) left += " " + o.metavar;
    out += helpEntry(left, o.help);
  }
  out += helpEntry("-h, --help", "print this help and exit");
  if (!notes_.empty()) out += "\n" + notes_ + (notes_.back() == '\n' ? "" : "\n");
  return out;
}

std::string subcommandUsage(const std::string &path, const std::vector<Subcommand> &subcommands,
                            const std::string &notes) {
  std::string out = "usage: " + path + " <command> [options]\n\ncommands:\n";
  size_t width = 0;
  for (const Subcommand &s : subcommands)
    width = std::max(width, s.name.size() + (s.synopsis.empty() ? 0 : 1 + s.synopsis.size()));
  for (const Subcommand &s : subcommands) {
    std::string left = s.name + (s.synopsis.empty() ? "" : " " + s.synopsis);
    out += "  " + left + std::string(width + 3 - left.size(), ' ') + s.summary + "\n";
  }
  out += "\nrun '" + path + " <command> --help' for a command's options.\n";
  if (!notes.empty()) out += "\n" + notes + (notes.back() == '\n' ? "" : "\n");
  return out;
}

int dispatch(const std::string &path, const std::vector<Subcommand> &subcommands, const std::string &notes,
             int argc, char **argv) {
  if (argc < 1) {
    std::fputs(subcommandUsage(path, subcommands, notes).c_str(), stderr);
    return 2;
  }
  std::string name = argv[0];
  if (name == "--help" || name == "-h") {
    std::fputs(subcommandUsage(path, subcommands, notes).c_str(), stdout);
    return 0;
  }
  std::vector<std::string> names;
  for (const Subcommand &s : subcommands) {
    if (s.name == name) return s.run(argc - 1, argv + 1);
    names.push_back(s.name);
  }
  std::string list;
  for (const std::string &n : names) list += (list.empty() ? "" : ", ") + n;
  std::string what = !name.empty() && name[0] == '-' ? "unknown option '" : "unknown command '";
  std::string hint = suggestion(name, names);
  throw UsageError(what + name + "' for '" + path + "'" + (hint.empty() ? "; the commands are " + list : hint) +
                   " (see '" + path + " --help')");
}

long long parseInteger(const std::string &option, const std::string &text) {
  const char *begin = text.c_str();
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(begin, &end, 10);
  // strtoll skips leading spaces; a value is the number alone.
  if (text.empty() || end != begin + text.size() || !(std::isdigit(static_cast<unsigned char>(text[0])) ||
                                                      ((text[0] == '-' || text[0] == '+') && text.size() > 1)))
    throw std::invalid_argument(option + " needs an integer, got '" + text + "'");
  return value; // on overflow, LLONG_MIN or LLONG_MAX (errno ERANGE)
}

} // namespace tessera::cli
