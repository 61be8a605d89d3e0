// The `tessera` command: compile kernel files to PTX (or any earlier
// stage, or a cubin through ptxas), and compile a manifest of kernels ahead
// of time. Needs no GPU.
//
//   tessera compile FILE --kernel NAME --signature SIG [--constexpr K=V]...
//                   [--num-warps N] [--arch sm_90a] [--backend llvm|nvrtc]
//                   [--emit STAGE] [-o OUT]
//   tessera aot [MANIFEST] [--arch sm_90a] [--backend llvm|nvrtc] [-o DIR]
//   tessera list FILE
//   tessera cache info|list|verify|clear   (CacheCommand.cpp)
//   tessera tune ...                       (CacheCommand.cpp: runs python -m tessera.tune)
//   tessera version
//
// Every command's options are a table (cli::Command, CommandLine.h), which
// also prints its --help; docs/cli.md is the reference.
#include "compiler/cli/CommandLine.h"
#include "compiler/cli/Locations.h"
#include "compiler/driver/Compiler.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Ptxas.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include <unistd.h>

using namespace tessera;

int commandCache(int argc, char **argv); // CacheCommand.cpp
int commandTune(int argc, char **argv);

namespace {

using cli::Command;

std::string readFile(const std::string &path, const char *what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument("'" + path + "' is a directory, not " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeOutput(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  out << text;
}

std::shared_ptr<const SourceFile> loadSource(const std::string &path) {
  auto file = std::make_shared<SourceFile>();
  file->path = path;
  file->text = readFile(path, "a kernel file");
  return file;
}

// A numeric option's value within its range, else an error naming the option
// and the value as given ("--num-warps must be a power of 2 between 1 and 32, got -4").
unsigned number(const std::string &option, const std::string &text, bool (*inRange)(long long), const char *rule) {
  long long n = cli::parseInteger(option, text);
  if (!inRange(n)) throw std::invalid_argument(option + " must be " + rule + ", got " + text);
  return static_cast<unsigned>(n);
}
unsigned numWarps(const std::string &option, const std::string &text) {
  return number(option, text, numWarpsInRange, "a power of 2 between 1 and 32");
}
unsigned numStages(const std::string &option, const std::string &text) {
  return number(option, text, numStagesInRange, "a positive integer");
}
unsigned maxRegisters(const std::string &option, const std::string &text) {
  return number(
      option, text, [](long long n) { return n >= 0 && n <= 255 && maxRegistersInRange(static_cast<unsigned>(n)); },
      "between 16 and 255 registers a thread (or 0: no limit)");
}

std::string backendValue(const std::string &name) {
  if (name.empty() || !isBackendName(name))
    throw std::invalid_argument("--backend must be llvm or nvrtc, got '" + name + "'");
  return name;
}

void addConstexpr(std::map<std::string, ConstexprValue> &out, const std::string &assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("--constexpr needs NAME=VALUE, got '" + assignment + "'");
  out[assignment.substr(0, eq)] = ConstexprValue::parse(assignment.substr(eq + 1));
}

const std::string &stageText(const CompiledKernel &k, Stage s) {
  switch (s) {
  case Stage::AST: return k.ast;
  case Stage::IR: return k.ir;
  case Stage::IROpt: return k.irOpt;
  case Stage::LLVM: return k.llvmIR;
  case Stage::CUDA: return k.cuda;
  case Stage::PTX: return k.ptx;
  }
  return k.ptx;
}

// --stop-after's help: the pass names, from the pipeline's list.
std::string stopAfterHelp() {
  std::string help = "with --emit ir-opt: the IR right after PASS, one of", line;
  for (const std::string &name : passes::passNames()) {
    if (!line.empty() && line.size() + name.size() + 1 > 66) {
      help += "\n" + line;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + name;
  }
  return help + "\n" + line;
}

const char *kArchHelp = "sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a (default sm_90a)";
const char *kBackendHelp = "llvm (LLVM's NVPTX back-end, the default) or nvrtc (CUDA C++\n"
                           "compiled by NVRTC); default: TESSERA_BACKEND, else llvm";

int commandCompile(int argc, char **argv) {
  std::string file, kernel, signature, output, emit = "ptx";
  bool haveSignature = false;
  std::map<std::string, ConstexprValue> constexprs;
  CompileOptions options;
  Command command("tessera compile", "FILE --kernel NAME --signature SIG [options]",
                  "Compiles one @jit function of FILE to PTX, or stops at an earlier stage. Needs no GPU.");
  command.operand("FILE", "the kernel file (Python source with @jit functions)", [&](const std::string &v) { file = v; })
      .option({"--kernel"}, "NAME", "the @jit function to compile", [&](const std::string &v) { kernel = v; })
      .option({"--signature"}, "SIG",
              "types of the non-constexpr parameters, in order, e.g.\n"
              "\"*fp32:16,*fp32,i32\" (pointer types start with '*';\n"
              "':16' = divisible by 16 / 16-byte aligned, ':1' = equals 1;\n"
              "a TMA tensor descriptor: \"tensordesc<bf16[64,128]>\", docs/tma.md)",
              [&](const std::string &v) { signature = v, haveSignature = true; })
      .option({"--constexpr"}, "K=V", "value of a tl.constexpr parameter (repeatable): 1024, 0.5, True, None,\n"
              "tl.float16, tl.PropagateNan.ALL, a tuple such as [8, 8], other text a string",
              [&](const std::string &v) { addConstexpr(constexprs, v); })
      .option({"--num-warps"}, "N", "warps per program (a power of 2 between 1 and 32, default 4)",
              [&](const std::string &v) { options.numWarps = numWarps("--num-warps", v); })
      .option({"--num-stages"}, "N", "software pipelining depth (a positive integer, default 3)",
              [&](const std::string &v) { options.numStages = numStages("--num-stages", v); })
      .option({"--arch"}, "ARCH", kArchHelp, [&](const std::string &v) { options.arch = v; })
      .option({"--backend"}, "NAME", kBackendHelp, [&](const std::string &v) { options.backend = backendValue(v); })
      .option({"--emit"}, "STAGE",
              "ast | ir | ir-opt | llvm | cuda | ptx | cubin (default ptx); cuda\n"
              "is the CUDA C++ the nvrtc back-end compiles (with either back-end);\n"
              "cubin is the PTX compiled by ptxas (as the runtime does: TESSERA_PTXAS,\n"
              "CUDA_HOME, /usr/local/cuda or PATH), binary, so it needs -o FILE",
              [&](const std::string &v) { emit = v; })
      .flag({"--debug"}, "check tl.device_assert and runtime asserts on the device\n(also TESSERA_DEBUG=1)",
            [&] { options.debug = true; })
      .flag({"--tensor-cores"}, "fp16/bf16 dots on tensor cores (mma.sync, sm_80+; the default\nunless TESSERA_MMA=0)",
            [&] { options.tensorCores = 1; })
      .flag({"--no-tensor-cores"}, "fp16/bf16 dots on the CUDA cores (also TESSERA_MMA=0)",
            [&] { options.tensorCores = 0; })
      .flag({"--fp-fusion"}, "contract a * b + c into fused multiply-adds, as Triton (the\ndefault unless TESSERA_FP_FUSION=0)",
            [&] { options.fpFusion = 1; })
      .flag({"--no-fp-fusion"}, "keep a * b + c as two rounded operations (also TESSERA_FP_FUSION=0)",
            [&] { options.fpFusion = 0; })
      .option({"--maxnreg"}, "N",
              "at most N registers a thread (PTX .maxnreg, 16..255), e.g. to\nfit two CTAs on an SM",
              [&](const std::string &v) { options.maxRegisters = maxRegisters("--maxnreg", v); })
      .option({"--stop-after"}, "PASS", stopAfterHelp(), [&](const std::string &v) { options.stopAfterPass = v; })
      .option({"-o", "--output"}, "FILE", "write the output to FILE instead of stdout",
              [&](const std::string &v) { output = v; });
  if (!command.parse(argc, argv)) return 0;
  const bool cubin = emit == "cubin"; // the PTX, then ptxas
  auto stage = cubin ? std::optional<Stage>(Stage::PTX) : parseStage(emit);
  if (!stage)
    throw std::invalid_argument("--emit must be one of ast, ir, ir-opt, llvm, cuda, ptx, cubin; got '" + emit + "'");
  if (cubin && (output.empty() || output == "-") && isatty(STDOUT_FILENO))
    throw std::invalid_argument("--emit cubin writes a binary: give -o FILE (or redirect stdout)");
  if (*stage != Stage::AST) {
    if (kernel.empty()) throw command.usageError("'tessera compile' needs --kernel NAME");
    if (!haveSignature) throw command.usageError("'tessera compile' needs --signature SIG (e.g. \"*fp32,*fp32,i32\")");
  }
  CompiledKernel k = compileKernel(loadSource(file), kernel, parseSignature(signature), constexprs, options, *stage);
  if (cubin) {
    const rt::PtxasTool *ptxas = rt::findPtxas();
    if (!ptxas)
      throw std::runtime_error("--emit cubin needs ptxas: none found (set TESSERA_PTXAS or CUDA_HOME, or put it on PATH)");
    std::vector<char> bytes = rt::assemblePtx(*ptxas, k.ptx, options.arch, kernel);
    writeOutput(output, std::string(bytes.begin(), bytes.end()));
    return 0;
  }
  writeOutput(output, stageText(k, *stage));
  return 0;
}

std::vector<std::string> splitWords(const std::string &line) {
  std::vector<std::string> words;
  std::istringstream ss(line);
  std::string w;
  while (ss >> w) words.push_back(w);
  return words;
}

int commandAot(int argc, char **argv) {
  std::string manifest, outDir = ".";
  CompileOptions base;
  Command command("tessera aot", "[MANIFEST] [--arch ARCH] [--backend llvm|nvrtc] [-o DIR]",
                  "Compiles every kernel listed in MANIFEST to DIR/<file>.<kernel>[.N].ptx\n"
                  "(N counts further specialisations of the same kernel). Each\n"
                  "non-comment line of the manifest is:\n"
                  "  FILE KERNEL SIGNATURE [NAME=VALUE ...] [num_warps=N] [maxnreg=N]\n"
                  "with FILE relative to the manifest's folder. With no MANIFEST, the\n"
                  "bundled kernels' manifest.txt: in $TESSERA_KERNELS_DIR if set, else\n"
                  "the one shipped beside this tessera (a wheel's tessera/kernels/src,\n"
                  "an install's share/tessera/kernels, a build's checkout kernels/).");
  command.operand("MANIFEST", "the list of kernels (default: the bundled kernels/manifest.txt)",
                  [&](const std::string &v) { manifest = v; }, /*required=*/false)
      .option({"--arch"}, "ARCH", kArchHelp, [&](const std::string &v) { base.arch = v; })
      .option({"--backend"}, "NAME", kBackendHelp, [&](const std::string &v) { base.backend = backendValue(v); })
      .option({"-o", "--output"}, "DIR", "the folder for the PTX files (default: the current one)",
              [&](const std::string &v) { outDir = v; });
  if (!command.parse(argc, argv)) return 0;
  namespace fs = std::filesystem;
  if (manifest.empty()) manifest = cli::bundledManifest().string();
  std::istringstream lines(readFile(manifest, "a manifest file"));
  if (std::error_code ec; fs::exists(outDir, ec) && !fs::is_directory(outDir, ec))
    throw std::invalid_argument("-o '" + outDir + "' is a file, not a directory");
  fs::create_directories(outDir);
  fs::path root = fs::path(manifest).parent_path();
  std::string line;
  int lineNo = 0, count = 0;
  std::map<std::string, int> specialisations;
  while (std::getline(lines, line)) {
    ++lineNo;
    const std::string where = manifest + ":" + std::to_string(lineNo) + ": ";
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::vector<std::string> words = splitWords(line);
    if (words.empty()) continue;
    if (words.size() < 3) throw std::invalid_argument(where + "expected FILE KERNEL SIGNATURE [K=V ...]");
    CompileOptions options = base;
    std::map<std::string, ConstexprValue> constexprs;
    try {
      for (size_t w = 3; w < words.size(); ++w) {
        if (words[w].rfind("num_warps=", 0) == 0) options.numWarps = numWarps("num_warps", words[w].substr(10));
        else if (words[w].rfind("maxnreg=", 0) == 0) options.maxRegisters = maxRegisters("maxnreg", words[w].substr(8));
        else addConstexpr(constexprs, words[w]);
      }
    } catch (const std::invalid_argument &e) {
      throw std::invalid_argument(where + e.what());
    }
    std::string path = (root / words[0]).string();
    CompiledKernel k = compileKernel(loadSource(path), words[1], parseSignature(words[2]), constexprs, options);
    // Several specialisations of one kernel get numbered files.
    std::string stem = fs::path(words[0]).stem().string() + "." + words[1];
    int seen = ++specialisations[stem];
    if (seen > 1) stem += "." + std::to_string(seen);
    std::string outPath = (fs::path(outDir) / (stem + ".ptx")).string();
    writeOutput(outPath, k.ptx);
    std::printf("%s\n", outPath.c_str());
    ++count;
  }
  std::printf("compiled %d kernel%s for %s (%s back-end)\n", count, count == 1 ? "" : "s", base.arch.c_str(),
              resolveBackend(base).c_str());
  return 0;
}

int commandList(int argc, char **argv) {
  std::string file;
  Command command("tessera list", "FILE", "Prints the names of the @jit functions of FILE, one a line.");
  command.operand("FILE", "the kernel file", [&](const std::string &v) { file = v; });
  if (!command.parse(argc, argv)) return 0;
  ast::Module module = ast::parseModule(loadSource(file));
  for (const std::string &name : jitFunctionNames(module)) std::printf("%s\n", name.c_str());
  return 0;
}

int commandVersion(int argc, char **argv) {
  Command command("tessera version", "", "Prints the versions of tessera and of the LLVM it links.");
  if (!command.parse(argc, argv)) return 0;
  std::printf("%s\n", versionString().c_str());
  return 0;
}

const std::vector<cli::Subcommand> kCommands = {
    {"compile", "FILE", "compile one kernel of a kernel file", commandCompile},
    {"aot", "[MANIFEST]", "compile every kernel listed in a manifest to PTX files", commandAot},
    {"list", "FILE", "list the @jit functions of a kernel file", commandList},
    {"cache", "", "inspect or clear the kernel cache (info, list, verify, clear)", commandCache},
    {"tune", "", "autotune a kernel ahead of time; export/import tuning databases", commandTune},
    {"version", "", "print the versions of tessera and LLVM", commandVersion},
};

} // namespace

int main(int argc, char **argv) {
  try {
    if (argc >= 2 && !std::strcmp(argv[1], "--version")) return commandVersion(argc - 2, argv + 2);
    return cli::dispatch("tessera", kCommands, "", argc - 1, argv + 1);
  } catch (const cli::UsageError &e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 2;
  } catch (const CompileError &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  }
}
