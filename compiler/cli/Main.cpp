// The `tessera` command: compile kernel files to PTX (or any earlier
// stage, or a cubin through ptxas), and compile a manifest of kernels ahead
// of time. Needs no GPU.
//
//   tessera compile FILE --kernel NAME --signature SIG [--constexpr K=V]...
//                   [--num-warps N] [--arch sm_90a] [--backend llvm|nvrtc]
//                   [--emit STAGE] [-o OUT]
//   tessera aot [MANIFEST] [--arch sm_90a[,sm_80...]] [--backend llvm|nvrtc] [--emit ptx|cpp] [-o DIR]
//                                          (--emit cpp: AotBundle.cpp)
//   tessera list FILE
//   tessera cache info|list|verify|clear   (CacheCommand.cpp)
//   tessera tune ...                       (CacheCommand.cpp: runs python -m tessera.tune)
//   tessera version
//
// Every command's options are a table (cli::Command, CommandLine.h), which
// also prints its --help; docs/cli.md is the reference.
#include "compiler/cli/AotBundle.h"
#include "compiler/cli/CommandLine.h"
#include "compiler/cli/Locations.h"
#include "compiler/driver/Compiler.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Ptxas.h"

#include <algorithm>
#include <cctype>
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
              "a TMA tensor descriptor: \"tensordesc<bf16[64,128]>\", docs/tma.md;\n"
              "a tuple argument: \"(*fp32:16,(i32,None),4)\", its types passed at run\n"
              "time, other elements constexprs, as Triton spells it)",
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
  std::shared_ptr<const SourceFile> source = loadSource(file);
  std::vector<ArgSpec> specs = signatureWithTuples(source, kernel, signature, constexprs);
  CompiledKernel k = compileKernel(source, kernel, specs, constexprs, options, *stage);
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

// One kernel line of a manifest.
struct ManifestEntry {
  std::string where; // "MANIFEST:LINE: "
  std::string file;  // as the manifest names it
  std::string path;  // relative to the working directory
  std::string kernel;
  std::string signatureText;
  std::map<std::string, ConstexprValue> constexprs;
  unsigned numWarps = 4;
  unsigned maxRegisters = 0;
  std::string cppName; // as=NAME (C++ bundles), else empty
};

// FILE KERNEL SIGNATURE [NAME=VALUE ...] [num_warps=N] [maxnreg=N] [as=NAME] per line; '#' starts a comment.
std::vector<ManifestEntry> readManifest(const std::string &manifest) {
  namespace fs = std::filesystem;
  std::istringstream lines(readFile(manifest, "a manifest file"));
  fs::path root = fs::path(manifest).parent_path();
  std::vector<ManifestEntry> entries;
  std::string line;
  int lineNo = 0;
  while (std::getline(lines, line)) {
    ++lineNo;
    ManifestEntry e;
    e.where = manifest + ":" + std::to_string(lineNo) + ": ";
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::vector<std::string> words = splitWords(line);
    if (words.empty()) continue;
    if (words.size() < 3) throw std::invalid_argument(e.where + "expected FILE KERNEL SIGNATURE [K=V ...]");
    e.file = words[0];
    e.path = (root / words[0]).string();
    e.kernel = words[1];
    e.signatureText = words[2];
    try {
      for (size_t w = 3; w < words.size(); ++w) {
        if (words[w].rfind("num_warps=", 0) == 0) e.numWarps = numWarps("num_warps", words[w].substr(10));
        else if (words[w].rfind("maxnreg=", 0) == 0) e.maxRegisters = maxRegisters("maxnreg", words[w].substr(8));
        else if (words[w].rfind("as=", 0) == 0) e.cppName = words[w].substr(3);
        else addConstexpr(e.constexprs, words[w]);
      }
    } catch (const std::invalid_argument &error) {
      throw std::invalid_argument(e.where + error.what());
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

// "sm_90a,sm_80" → each architecture once, checked.
std::vector<std::string> archList(const std::string &text) {
  std::vector<std::string> archs;
  std::stringstream ss(text);
  std::string arch;
  while (std::getline(ss, arch, ',')) {
    if (!isSupportedArch(arch))
      throw std::invalid_argument("--arch: unsupported architecture '" + arch +
                                  "' (supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a; several: sm_90a,sm_80)");
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) archs.push_back(arch);
  }
  if (archs.empty()) throw std::invalid_argument("--arch needs at least one architecture, e.g. sm_90a");
  return archs;
}

std::string joined(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

CompileOptions entryOptions(const ManifestEntry &e, const CompileOptions &base, const std::string &arch) {
  CompileOptions options = base;
  options.numWarps = e.numWarps;
  options.maxRegisters = e.maxRegisters;
  options.arch = arch;
  return options;
}

// Every listed kernel to PTX: DIR/<file>.<kernel>[.N].ptx, under DIR/<arch>/ when there are several.
int writePtxFiles(const std::vector<ManifestEntry> &entries, const CompileOptions &base,
                  const std::vector<std::string> &archs, const std::string &outDir) {
  namespace fs = std::filesystem;
  int count = 0;
  for (const std::string &arch : archs) {
    fs::path dir = archs.size() > 1 ? fs::path(outDir) / arch : fs::path(outDir);
    fs::create_directories(dir);
    std::map<std::string, int> specialisations;
    for (const ManifestEntry &e : entries) {
      std::vector<ArgSpec> signature;
      std::map<std::string, ConstexprValue> constexprs = e.constexprs; // and the tuple entries' shapes
      try {
        signature = signatureWithTuples(loadSource(e.path), e.kernel, e.signatureText, constexprs);
      } catch (const std::invalid_argument &error) {
        throw std::invalid_argument(e.where + error.what());
      }
      CompiledKernel k = compileKernel(loadSource(e.path), e.kernel, signature, constexprs,
                                       entryOptions(e, base, arch));
      // Several specialisations of one kernel get numbered files.
      std::string stem = fs::path(e.file).stem().string() + "." + e.kernel;
      int seen = ++specialisations[stem];
      if (seen > 1) stem += "." + std::to_string(seen);
      std::string outPath = (dir / (stem + ".ptx")).string();
      writeOutput(outPath, k.ptx);
      std::printf("%s\n", outPath.c_str());
      ++count;
    }
  }
  std::printf("compiled %d kernel%s for %s (%s back-end)\n", count, count == 1 ? "" : "s", joined(archs).c_str(),
              resolveBackend(base).c_str());
  return 0;
}

// A type as signatures spell it: fp32 (ir::name says f32), bf16, i32, ...
std::string typeName(ir::ScalarType t) {
  std::string name = ir::name(t);
  if (name.size() > 1 && name[0] == 'f' && std::isdigit(static_cast<unsigned char>(name[1]))) name.insert(1, "p");
  return name;
}

// The signature as the manifest spells it; without `hints`, the types alone (no :16 / :1).
std::string signatureText(const std::vector<ArgSpec> &signature, bool hints = true) {
  std::string text;
  for (const ArgSpec &a : signature) {
    text += text.empty() ? "" : ",";
    if (a.type.pointer) text += "*";
    text += typeName(a.type.scalar);
    if (!hints) continue;
    if (a.equalsOne) text += ":1";
    else if (a.divisibility >= 16) text += ":16";
  }
  return text;
}

std::string withoutHints(const std::vector<ArgSpec> &signature) { return signatureText(signature, false); }

size_t hintCount(const std::vector<ArgSpec> &signature) {
  return std::count_if(signature.begin(), signature.end(),
                       [](const ArgSpec &a) { return a.equalsOne || a.divisibility >= 16; });
}

struct BundleSettings {
  std::string name = "tessera_aot";
  std::string embed = "cubin"; // cubin | ptx | cubin+ptx
  bool generic = true;         // add the variant with no hints
  std::string command;
};

// `tessera aot --emit cpp`: the manifest's kernels as NAME.h/NAME.cpp (AotBundle.h).
int writeCppBundle(const std::vector<ManifestEntry> &entries, const CompileOptions &base,
                   const std::vector<std::string> &archs, const std::string &outDir, const BundleSettings &settings) {
  namespace fs = std::filesystem;
  if (settings.embed != "cubin" && settings.embed != "ptx" && settings.embed != "cubin+ptx")
    throw std::invalid_argument("--embed must be cubin, ptx or cubin+ptx; got '" + settings.embed + "'");
  if (!cli::isCppIdentifier(settings.name))
    throw std::invalid_argument("--name must be a C++ identifier (it names the namespace and the files), got '" +
                                settings.name + "'");
  if (entries.empty()) throw std::invalid_argument("the manifest lists no kernels: a C++ bundle needs one");
  bool wantCubins = settings.embed != "ptx", wantPtx = settings.embed != "cubin";
  const rt::PtxasTool *ptxas = wantCubins ? rt::findPtxas() : nullptr;
  if (wantCubins && !ptxas) {
    std::fprintf(stderr, "tessera: note: no ptxas found (set TESSERA_PTXAS or CUDA_HOME, or put it on PATH): "
                         "the bundle embeds PTX instead of cubins, which the CUDA driver compiles when a "
                         "process first launches each kernel\n");
    wantCubins = false, wantPtx = true;
  }

  // Lines of one C++ name are the variants of one launch function: the same kernel,
  // types, constexprs and options, different hints.
  cli::AotBundle bundle;
  std::map<std::string, std::pair<size_t, std::string>> functionOf; // name → (index, first line)
  for (const ManifestEntry &e : entries) {
    std::vector<ArgSpec> signature;
    std::map<std::string, ConstexprValue> constexprs = e.constexprs; // and the tuple entries' shapes
    try {
      signature = signatureWithTuples(loadSource(e.path), e.kernel, e.signatureText, constexprs);
    } catch (const std::invalid_argument &error) {
      throw std::invalid_argument(e.where + error.what());
    }
    for (const ArgSpec &a : signature) {
      if (a.type.isTensorDesc())
        throw std::invalid_argument(e.where + "C++ bundles do not take tensor descriptor parameters (" +
                                    e.signatureText + ") yet: list this kernel with pointers, or use the JIT");
      if ((a.equalsOne || a.divisibility >= 16) && !a.type.pointer && !a.type.isIntElement())
        throw std::invalid_argument(e.where + "only pointers and integers can carry ':16' or ':1' in a C++ bundle");
    }
    const std::string name = e.cppName.empty() ? e.kernel : e.cppName;
    if (!cli::isCppIdentifier(name))
      throw std::invalid_argument(e.where + "'" + name + "' cannot name a C++ function" +
                                  (e.cppName.empty() ? ": give it one with as=NAME" : ""));
    if (cli::isBundleApiName(name) || cli::isBundleApiName(name + "_config") || name == settings.name)
      throw std::invalid_argument(e.where + "'" + name + "' is one of the bundle's own names: give the launch "
                                  "function another with as=NAME");
    auto [it, fresh] = functionOf.try_emplace(name, bundle.functions.size(), e.where);
    if (fresh) {
      cli::AotFunction f;
      f.name = name;
      f.file = e.file;
      f.kernel = e.kernel;
      f.constexprs = constexprs;
      f.numWarps = e.numWarps;
      f.maxRegisters = e.maxRegisters;
      f.paramNames = runtimeParameterNames(ast::parseModule(loadSource(e.path), /*recoverFunctionBodies=*/true),
                                           e.kernel, constexprs);
      bundle.functions.push_back(std::move(f));
    }
    cli::AotFunction &f = bundle.functions[it->second.first];
    const std::string firstLine = it->second.second.substr(0, it->second.second.size() - 2);
    if (!fresh) {
      auto refuse = [&](const std::string &what) {
        throw std::invalid_argument(e.where + "launch function '" + name + "' (" + firstLine + ") has " + what +
                                    ": give this line another name with as=NAME");
      };
      if (f.file != e.file || f.kernel != e.kernel) refuse("kernel " + f.file + ":" + f.kernel);
      if (withoutHints(f.variants.front().signature) != withoutHints(signature))
        refuse("the types " + withoutHints(f.variants.front().signature) + ", this line " + withoutHints(signature));
      if (f.constexprs != constexprs || f.numWarps != e.numWarps || f.maxRegisters != e.maxRegisters)
        refuse("other constexprs or options");
      for (const cli::AotVariant &v : f.variants)
        if (v.signatureText == signatureText(signature))
          throw std::invalid_argument(e.where + "launch function '" + name + "' has this specialisation (" +
                                      v.signatureText + ") already, from " + v.origin);
    }
    cli::AotVariant v;
    v.signature = signature;
    v.signatureText = signatureText(signature);
    v.origin = e.where.substr(0, e.where.size() - 2);
    f.variants.push_back(std::move(v));
  }

  // Dispatch order: the most hints first (stable: the manifest's order among equals); the
  // generic variant, with none, serves whatever the others do not fit.
  size_t imageCount = 0;
  for (cli::AotFunction &f : bundle.functions) {
    if (settings.generic &&
        std::none_of(f.variants.begin(), f.variants.end(),
                     [](const cli::AotVariant &v) { return hintCount(v.signature) == 0; })) {
      cli::AotVariant generic;
      generic.signature = f.variants.front().signature;
      for (ArgSpec &a : generic.signature) a.divisibility = 1, a.equalsOne = false;
      generic.signatureText = signatureText(generic.signature);
      generic.origin = "added (no hints)";
      f.variants.push_back(std::move(generic));
    }
    std::stable_sort(f.variants.begin(), f.variants.end(), [](const cli::AotVariant &a, const cli::AotVariant &b) {
      return hintCount(a.signature) > hintCount(b.signature);
    });
    const ManifestEntry *entry = nullptr;
    for (const ManifestEntry &e : entries)
      if ((e.cppName.empty() ? e.kernel : e.cppName) == f.name) entry = &e;
    for (cli::AotVariant &v : f.variants) {
      for (const std::string &arch : archs) {
        CompiledKernel k = compileKernel(loadSource(entry->path), f.kernel, v.signature, f.constexprs,
                                         entryOptions(*entry, base, arch));
        if (wantCubins) {
          std::vector<char> cubin = rt::assemblePtx(*ptxas, k.ptx, arch, f.kernel);
          v.images.push_back({arch, true, std::string(cubin.begin(), cubin.end()), k.numWarps, k.sharedBytes});
        }
        if (wantPtx) v.images.push_back({arch, false, k.ptx, k.numWarps, k.sharedBytes});
      }
      imageCount += v.images.size();
    }
  }

  bundle.name = settings.name;
  bundle.command = settings.command;
  bundle.version = versionString();
  if (wantCubins) bundle.imagesNote = "cubins for " + joined(archs) + " (ptxas " + ptxas->version + ")";
  if (wantPtx) bundle.imagesNote += std::string(wantCubins ? ", and " : "") + "PTX for " + joined(archs);
  cli::AotSources sources = cli::generateBundle(bundle);
  if (std::error_code ec; fs::exists(outDir, ec) && !fs::is_directory(outDir, ec))
    throw std::invalid_argument("-o '" + outDir + "' is a file, not a directory");
  fs::create_directories(outDir);
  std::string header = (fs::path(outDir) / (settings.name + ".h")).string();
  std::string source = (fs::path(outDir) / (settings.name + ".cpp")).string();
  writeOutput(header, sources.header);
  writeOutput(source, sources.source);
  std::printf("%s\n%s\n", header.c_str(), source.c_str());
  size_t variants = 0;
  for (const cli::AotFunction &f : bundle.functions) variants += f.variants.size();
  std::printf("bundled %zu launch function%s (%zu variant%s, %zu image%s: %s; %s back-end)\n",
              bundle.functions.size(), bundle.functions.size() == 1 ? "" : "s", variants, variants == 1 ? "" : "s",
              imageCount, imageCount == 1 ? "" : "s", bundle.imagesNote.c_str(), resolveBackend(base).c_str());
  return 0;
}

int commandAot(int argc, char **argv) {
  std::string manifest, outDir = ".", emit = "ptx", arch = "sm_90a";
  std::string cppOption; // the first option that only --emit cpp takes
  BundleSettings bundle;
  CompileOptions base;
  Command command("tessera aot", "[MANIFEST] [--arch ARCH[,ARCH...]] [--emit ptx|cpp] [-o DIR] [options]",
                  "Compiles every kernel listed in MANIFEST ahead of time, to PTX files\n"
                  "DIR/<file>.<kernel>[.N].ptx (N counts further specialisations of the\n"
                  "same kernel; under DIR/<arch>/ for several architectures), or with\n"
                  "--emit cpp to a C++ bundle DIR/NAME.h + DIR/NAME.cpp: the cubins and a\n"
                  "typed launch function per kernel, needing only the CUDA driver at run\n"
                  "time (docs/cli.md). Each non-comment line of the manifest is:\n"
                  "  FILE KERNEL SIGNATURE [NAME=VALUE ...] [num_warps=N] [maxnreg=N] [as=NAME]\n"
                  "with FILE relative to the manifest's folder; as=NAME names the C++\n"
                  "launch function (default: the kernel's name). Lines of one name are the\n"
                  "variants of one launch function: the same types and constexprs, other\n"
                  "':16' / ':1' hints. With no MANIFEST, the bundled kernels'\n"
                  "manifest.txt: in $TESSERA_KERNELS_DIR if set, else the one shipped\n"
                  "beside this tessera (a wheel's tessera/kernels/src, an install's\n"
                  "share/tessera/kernels, a build's checkout kernels/).");
  command.operand("MANIFEST", "the list of kernels (default: the bundled kernels/manifest.txt)",
                  [&](const std::string &v) { manifest = v; }, /*required=*/false)
      .option({"--arch"}, "ARCH", std::string(kArchHelp) + ";\nseveral, comma-separated: sm_90a,sm_80",
              [&](const std::string &v) { arch = v; })
      .option({"--backend"}, "NAME", kBackendHelp, [&](const std::string &v) { base.backend = backendValue(v); })
      .option({"--emit"}, "WHAT", "ptx (PTX files, the default) or cpp (a C++ bundle)",
              [&](const std::string &v) { emit = v; })
      .option({"--name"}, "NAME",
              "with --emit cpp: the bundle's namespace and file names\n(a C++ identifier; default tessera_aot)",
              [&](const std::string &v) { bundle.name = v, cppOption = cppOption.empty() ? "--name" : cppOption; })
      .option({"--embed"}, "WHAT",
              "with --emit cpp: cubin (the default: ptxas's cubins; PTX, with a\n"
              "note, when no ptxas is found), ptx (the driver compiles it at the\n"
              "first launch), or cubin+ptx (PTX too, for GPUs no cubin fits)",
              [&](const std::string &v) { bundle.embed = v, cppOption = cppOption.empty() ? "--embed" : cppOption; })
      .flag({"--no-generic"},
            "with --emit cpp: no variant without hints is added to a launch\n"
            "function whose lines all have some; arguments that fit none of its\n"
            "variants then make it return CUDA_ERROR_INVALID_VALUE",
            [&] { bundle.generic = false, cppOption = cppOption.empty() ? "--no-generic" : cppOption; })
      .option({"-o", "--output"}, "DIR", "the folder for the output files (default: the current one)",
              [&](const std::string &v) { outDir = v; });
  if (!command.parse(argc, argv)) return 0;
  if (emit != "ptx" && emit != "cpp") throw std::invalid_argument("--emit must be ptx or cpp, got '" + emit + "'");
  if (emit == "ptx" && !cppOption.empty())
    throw command.usageError(cppOption + " is for C++ bundles: add --emit cpp");
  std::vector<std::string> archs = archList(arch);
  if (manifest.empty()) manifest = cli::bundledManifest().string();
  std::vector<ManifestEntry> entries = readManifest(manifest);
  namespace fs = std::filesystem;
  if (std::error_code ec; fs::exists(outDir, ec) && !fs::is_directory(outDir, ec))
    throw std::invalid_argument("-o '" + outDir + "' is a file, not a directory");
  if (emit == "ptx") return writePtxFiles(entries, base, archs, outDir);
  bundle.command = "tessera aot";
  for (int i = 0; i < argc; ++i) bundle.command += std::string(" ") + argv[i];
  return writeCppBundle(entries, base, archs, outDir, bundle);
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
