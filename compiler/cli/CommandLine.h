// The command-line parser of the `tessera` command: each command is a table
// of its options and operands, each with its help text and a function that
// takes the value; --help is generated from the table.
//
// Our own rather than LLVM's: cl::opt keeps every option of every subcommand
// in one global registry, its --help lists LLVM's generic options, and a
// parse error calls exit(1) in LLVM's words; OptTable wants a TableGen file
// per command. Both would also link a second copy of LLVMSupport into the
// tool, since libtessera.so hides the copy it holds. The rules below are
// getopt_long's, which users know: --opt=value or --opt value (a value may
// start with '-', as in --num-warps -4), options and operands in any order,
// `--` ends the options, no abbreviations.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli {

// The command line itself is wrong (an unknown option or command, a missing
// value or operand): printed on one line that ends with a hint to --help,
// exit status 2. A value that is read but not accepted (--num-warps 3) is a
// std::invalid_argument, exit status 1, like every other bad input.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Command {
public:
  // path: "tessera cache clear"; synopsis: the rest of the usage line;
  // about: a paragraph under it.
  Command(std::string path, std::string synopsis, std::string about = "");

  // An option with a value: --name VALUE or --name=VALUE (each of `names`,
  // e.g. {"-o", "--output"}; a short name takes its value as -o VALUE).
  // Given twice, `take` sees both values (the later one wins, or both count).
  Command &option(std::vector<std::string> names, std::string metavar, std::string help,
                  std::function<void(const std::string &)> take);
  // An option without a value.
  Command &flag(std::vector<std::string> names, std::string help, std::function<void()> set);
  // The next operand (positional argument); optional operands come last.
  Command &operand(std::string metavar, std::string help, std::function<void(const std::string &)> take,
                   bool required = true);
  // Text printed at the end of --help.
  Command &notes(std::string text);

  // Reads the arguments after the command's name. Returns false when they ask
  // for help (--help or -h anywhere before `--`): the usage is then printed on
  // stdout and nothing else is taken. Throws UsageError.
  bool parse(int argc, char **argv) const;
  std::string usage() const;
  const std::string &path() const { return path_; }
  // A UsageError for this command, with the hint to its --help.
  UsageError usageError(const std::string &message) const;

private:
  struct Option {
    std::vector<std::string> names;
    std::string metavar; // empty: a flag
    std::string help;
    std::function<void(const std::string &)> take;
  };
  struct Operand {
    std::string metavar, help;
    std::function<void(const std::string &)> take;
    bool required;
  };
  const Option *find(const std::string &name) const;
  std::string path_, synopsis_, about_, notes_;
  std::vector<Option> options_;
  std::vector<Operand> operands_;
};

// A command made of subcommands (`tessera`, `tessera cache`): the first
// argument names one, which runs with the rest.
struct Subcommand {
  std::string name, synopsis, summary;
  std::function<int(int argc, char **argv)> run;
};
// With no argument: the usage on stderr and UsageError's status, 2. With
// --help or -h: the usage on stdout, 0.
int dispatch(const std::string &path, const std::vector<Subcommand> &subcommands, const std::string &notes,
             int argc, char **argv);
std::string subcommandUsage(const std::string &path, const std::vector<Subcommand> &subcommands,
                            const std::string &notes);

// An integer option value: the whole text a decimal integer, sign allowed
// (so that --num-warps -4 says -4, not 4294967292). Not an integer: an
// invalid_argument naming the option. Out of the range of long long: the
// nearest bound, which every caller's range refuses.
long long parseInteger(const std::string &option, const std::string &text);

} // namespace tessera::cli
