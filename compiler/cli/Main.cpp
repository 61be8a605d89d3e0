// The `tessera` command: compile kernel files to PTX (or any earlier
// stage, or a cubin through ptxas), and compile a manifest of kernels ahead
// of time. Needs no GPU.
//
//   tessera compile FILE --kernel NAME --signature SIG [--constexpr K=V]...
//                   [--num-warps N] [--arch sm_90a] [--backend llvm|nvrtc]
//                   [--emit STAGE] [-o OUT]
//   tessera aot MANIFEST [--arch sm_90a] [--backend llvm|nvrtc] [-o DIR]
//   tessera list FILE
//   tessera cache info|list|verify|clear   (CacheCommand.cpp)
//   tessera tune ...                       (CacheCommand.cpp: runs python -m tessera.tune)
//   tessera version
#include "compiler/driver/Compiler.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Ptxas.h"

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

const char *kUsage = R"(usage: tessera <command> [options]

commands:
  compile FILE   compile one kernel of a kernel file
  aot MANIFEST   compile every kernel listed in a manifest to PTX files
  list FILE      list the @jit functions of a kernel file
  cache          inspect or clear the kernel cache (info, list, verify, clear)
  tune           autotune a kernel ahead of time; export/import tuning databases
  version        print the versions of tessera and LLVM

run 'tessera <command> --help' for a command's options.
)";

const char *kCompileUsage = R"(usage: tessera compile FILE --kernel NAME --signature SIG [options]

  --kernel NAME        the @jit function to compile
  --signature SIG      types of the non-constexpr parameters, in order, e.g.
                       "*fp32:16,*fp32,i32" (pointer types start with '*';
                       ':16' = divisible by 16 / 16-byte aligned, ':1' = equals 1;
                       a TMA tensor descriptor: "tensordesc<bf16[64,128]>", docs/tma.md)
  --constexpr K=V      value of a tl.constexpr parameter (repeatable): 1024, 0.5, True, None,
                       tl.float16, tl.PropagateNan.ALL, a tuple such as [8, 8], other text a string
  --num-warps N        warps per program (power of 2, default 4)
  --num-stages N       software pipelining depth (default 3)
  --arch ARCH          sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a (default sm_90a)
  --backend NAME       llvm (LLVM's NVPTX back-end, the default) or nvrtc (CUDA C++
                       compiled by NVRTC); default: TESSERA_BACKEND, else llvm
  --emit STAGE         ast | ir | ir-opt | llvm | cuda | ptx | cubin (default ptx); cuda
                       is the CUDA C++ the nvrtc back-end compiles (with either back-end);
                       cubin is the PTX compiled by ptxas (as the runtime does: TESSERA_PTXAS,
                       CUDA_HOME, /usr/local/cuda or PATH), binary, so it needs -o FILE
  --debug              check tl.device_assert and runtime asserts on the device
                       (also TESSERA_DEBUG=1)
  --tensor-cores       fp16/bf16 dots on tensor cores (mma.sync, sm_80+); also
                       TESSERA_MMA=1 (off by default for now); --no-tensor-cores
  --no-fp-fusion       keep a * b + c as two rounded operations (default: contract
                       into fused multiply-adds, as Triton; also TESSERA_FP_FUSION=0)
  --maxnreg N          at most N registers a thread (PTX .maxnreg, 16..255), e.g. to
                       fit two CTAs on an SM
  --stop-after PASS    with --emit ir-opt: the IR right after PASS, one of
  -o FILE              write the output to FILE instead of stdout
)";

// The compile usage with the pass names (from the pipeline's list) after --stop-after.
std::string compileUsage() {
  std::string passes, line = "                      ";
  for (const std::string &name : passes::passNames()) {
    if (line.size() + name.size() + 2 > 90) {
      passes += line + "\n";
      line = "                      ";
    }
    line += " " + name;
  }
  passes += line + "\n";
  std::string usage = kCompileUsage;
  const std::string anchor = "the IR right after PASS, one of\n";
  usage.insert(usage.find(anchor) + anchor.size(), passes);
  return usage;
}

const char *kAotUsage = R"(usage: tessera aot MANIFEST [--arch ARCH] [--backend llvm|nvrtc] [-o DIR]

Compiles every kernel listed in MANIFEST to DIR/<file>.<kernel>[.N].ptx
(N counts further specialisations of the same kernel). Each
non-comment line of the manifest is:
  FILE KERNEL SIGNATURE [NAME=VALUE ...] [num_warps=N] [maxnreg=N]
with FILE relative to the manifest's folder.
)";

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
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
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
  out << text;
}

std::shared_ptr<const SourceFile> loadSource(const std::string &path) {
  auto file = std::make_shared<SourceFile>();
  file->path = path;
  file->text = readFile(path);
  return file;
}

unsigned parseUnsigned(const std::string &flag, const std::string &text) {
  try {
    size_t used = 0;
    unsigned long v = std::stoul(text, &used);
    if (used == text.size()) return static_cast<unsigned>(v);
  } catch (const std::exception &) {
  }
  throw std::invalid_argument(flag + " needs a number, got '" + text + "'");
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

int commandCompile(int argc, char **argv) {
  std::string file, kernel, signature, output, emit = "ptx";
  bool haveSignature = false;
  std::map<std::string, ConstexprValue> constexprs;
  CompileOptions options;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(compileUsage().c_str(), stdout);
      return 0;
    } else if (arg == "--kernel") kernel = value();
    else if (arg == "--signature") { signature = value(); haveSignature = true; }
    else if (arg == "--constexpr") addConstexpr(constexprs, value());
    else if (arg == "--num-warps") options.numWarps = parseUnsigned(arg, value());
    else if (arg == "--num-stages") options.numStages = parseUnsigned(arg, value());
    else if (arg == "--arch") options.arch = value();
    else if (arg == "--backend") options.backend = backendValue(value());
    else if (arg == "--debug") options.debug = true;
    else if (arg == "--tensor-cores") options.tensorCores = 1;
    else if (arg == "--no-tensor-cores") options.tensorCores = 0;
    else if (arg == "--fp-fusion") options.fpFusion = 1;
    else if (arg == "--no-fp-fusion") options.fpFusion = 0;
    else if (arg == "--maxnreg") options.maxRegisters = parseUnsigned(arg, value());
    else if (arg == "--emit") emit = value();
    else if (arg == "--stop-after") options.stopAfterPass = value();
    else if (arg == "-o" || arg == "--output") output = value();
    else if (!arg.empty() && arg[0] == '-') throw std::invalid_argument("unknown option '" + arg + "'");
    else if (file.empty()) file = arg;
    else throw std::invalid_argument("unexpected argument '" + arg + "' (only one FILE)");
  }
  if (file.empty()) throw std::invalid_argument("compile needs a kernel FILE (see 'tessera compile --help')");
  const bool cubin = emit == "cubin"; // the PTX, then ptxas
  auto stage = cubin ? std::optional<Stage>(Stage::PTX) : parseStage(emit);
  if (!stage)
    throw std::invalid_argument("--emit must be one of ast, ir, ir-opt, llvm, cuda, ptx, cubin; got '" + emit + "'");
  if (cubin && (output.empty() || output == "-") && isatty(STDOUT_FILENO))
    throw std::invalid_argument("--emit cubin writes a binary: give -o FILE (or redirect stdout)");
  if (*stage != Stage::AST) {
    if (kernel.empty()) throw std::invalid_argument("compile needs --kernel NAME");
    if (!haveSignature) throw std::invalid_argument("compile needs --signature (e.g. \"*fp32,*fp32,i32\")");
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
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kAotUsage, stdout);
      return 0;
    } else if (arg == "--arch") base.arch = value();
    else if (arg == "--backend") base.backend = backendValue(value());
    else if (arg == "-o" || arg == "--output") outDir = value();
    else if (!arg.empty() && arg[0] == '-') throw std::invalid_argument("unknown option '" + arg + "'");
    else manifest = arg;
  }
  if (manifest.empty()) throw std::invalid_argument("aot needs a MANIFEST (see 'tessera aot --help')");
  namespace fs = std::filesystem;
  fs::create_directories(outDir);
  fs::path root = fs::path(manifest).parent_path();
  std::istringstream lines(readFile(manifest));
  std::string line;
  int lineNo = 0, count = 0;
  std::map<std::string, int> specialisations;
  while (std::getline(lines, line)) {
    ++lineNo;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::vector<std::string> words = splitWords(line);
    if (words.empty()) continue;
    if (words.size() < 3)
      throw std::invalid_argument(manifest + ":" + std::to_string(lineNo) + ": expected FILE KERNEL SIGNATURE [K=V ...]");
    CompileOptions options = base;
    std::map<std::string, ConstexprValue> constexprs;
    for (size_t w = 3; w < words.size(); ++w) {
      if (words[w].rfind("num_warps=", 0) == 0) options.numWarps = parseUnsigned("num_warps", words[w].substr(10));
      else if (words[w].rfind("maxnreg=", 0) == 0) options.maxRegisters = parseUnsigned("maxnreg", words[w].substr(8));
      else addConstexpr(constexprs, words[w]);
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
  if (argc != 1) throw std::invalid_argument("list needs exactly one FILE");
  ast::Module module = ast::parseModule(loadSource(argv[0]));
  for (const std::string &name : jitFunctionNames(module)) std::printf("%s\n", name.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  std::string command = argv[1];
  try {
    if (command == "compile") return commandCompile(argc - 2, argv + 2);
    if (command == "aot") return commandAot(argc - 2, argv + 2);
    if (command == "list") return commandList(argc - 2, argv + 2);
    if (command == "cache") return commandCache(argc - 2, argv + 2);
    if (command == "tune") return commandTune(argc - 2, argv + 2);
    if (command == "version" || command == "--version") {
      std::printf("%s\n", versionString().c_str());
      return 0;
    }
    std::fprintf(stderr, "tessera: error: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 1;
  } catch (const CompileError &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  }
}
