#include "compiler/driver/Compiler.h"

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/Nvrtc.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/support/Environment.h"

#include <cstdlib>
#include <stdexcept>

namespace tessera {

std::optional<Stage> parseStage(std::string_view name) {
  if (name == "ast") return Stage::AST;
  if (name == "ir") return Stage::IR;
  if (name == "ir-opt") return Stage::IROpt;
  if (name == "llvm") return Stage::LLVM;
  if (name == "cuda") return Stage::CUDA;
  if (name == "ptx") return Stage::PTX;
  return std::nullopt;
}

const char *stageName(Stage stage) {
  switch (stage) {
  case Stage::AST: return "ast";
  case Stage::IR: return "ir";
  case Stage::IROpt: return "ir-opt";
  case Stage::LLVM: return "llvm";
  case Stage::CUDA: return "cuda";
  case Stage::PTX: return "ptx";
  }
  return "?";
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

namespace {

// "tensordesc<bf16[128,64]>" (Triton's spelling): a TMA descriptor argument.
ArgSpec parseTensorDesc(std::string_view entry, const std::string &where) {
  const std::string_view prefix = "tensordesc<";
  auto bad = [&](const std::string &why) {
    return std::invalid_argument(where + ": " + why + "; expected e.g. tensordesc<bf16[128,64]>");
  };
  if (entry.size() < prefix.size() + 1 || entry.back() != '>') throw bad("unterminated tensor descriptor");
  std::string_view inner = entry.substr(prefix.size(), entry.size() - prefix.size() - 1);
  size_t open = inner.find('[');
  if (open == std::string_view::npos || inner.back() != ']') throw bad("no block shape");
  auto scalar = ir::parseScalarType(trim(inner.substr(0, open)));
  if (!scalar) throw bad("unknown element type");
  std::vector<int64_t> block;
  std::string_view dims = inner.substr(open + 1, inner.size() - open - 2);
  while (true) {
    size_t comma = dims.find(',');
    std::string dim(trim(dims.substr(0, comma)));
    char *end = nullptr;
    long long v = dim.empty() ? 0 : std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || v <= 0) throw bad("block dimension '" + dim + "' is not a positive integer");
    block.push_back(v);
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  if (block.size() > 5) throw bad("at most 5 block dimensions");
  ArgSpec spec;
  spec.type = ir::Type::tensorDesc(*scalar, std::move(block));
  return spec;
}

// The next entry of a signature: up to the first comma outside <>, [] and ().
std::string_view nextEntry(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<' || c == '[' || c == '(') ++depth;
    else if ((c == '>' || c == ']' || c == ')') && depth > 0) --depth;
    else if (c == ',' && depth == 0) return text.substr(0, i);
  }
  return text;
}

} // namespace

std::vector<ArgSpec> parseSignature(std::string_view text) {
  std::vector<ArgSpec> out;
  if (trim(text).empty()) return out;
  size_t index = 0;
  while (true) {
    std::string_view raw = nextEntry(text);
    std::string_view entry = trim(raw);
    ++index;
    std::string where = "signature entry " + std::to_string(index) + " ('" + std::string(entry) + "')";
    if (entry.rfind("tensordesc<", 0) == 0) {
      out.push_back(parseTensorDesc(entry, where));
    } else {
      ArgSpec spec;
      std::string_view typeText = entry;
      if (size_t colon = entry.find(':'); colon != std::string_view::npos) {
        typeText = trim(entry.substr(0, colon));
        std::string_view hint = trim(entry.substr(colon + 1));
        if (hint == "16") spec.divisibility = 16;
        else if (hint == "1") spec.equalsOne = true;
        else throw std::invalid_argument(where + ": the hint after ':' must be 16 (divisible by 16) or 1 (equals 1)");
      }
      bool pointer = !typeText.empty() && typeText.front() == '*';
      if (pointer) typeText.remove_prefix(1);
      auto scalar = ir::parseScalarType(typeText);
      if (typeText.empty() || !scalar)
        throw std::invalid_argument(where + ": unknown type; expected e.g. *fp32, *fp16, *bf16, i32, i64, fp32, "
                                            "tensordesc<bf16[128,64]>");
      spec.type = pointer ? ir::Type::ptr(*scalar) : ir::Type(*scalar);
      if (spec.equalsOne && (pointer || !spec.type.isIntElement()))
        throw std::invalid_argument(where + ": only integers can carry the ':1' hint");
      out.push_back(spec);
    }
    if (raw.size() == text.size()) break;
    text.remove_prefix(raw.size() + 1);
  }
  return out;
}

// A tuple entry's shape: "(*fp32:16, (i32, None), 4)": types are Runtime leaves (their specs appended to
// `leaves`), other text a constexpr value (ConstexprValue::parse).
static ConstexprValue parseTupleEntry(std::string_view entry, std::vector<ArgSpec> &leaves, const std::string &where) {
  if (entry.size() < 2 || entry.back() != ')')
    throw std::invalid_argument(where + ": a tuple entry is written (T, T, ...)");
  std::string_view inner = trim(entry.substr(1, entry.size() - 2));
  std::vector<ConstexprValue> elems;
  while (!inner.empty()) {
    std::string_view raw = nextEntry(inner);
    std::string_view item = trim(raw);
    if (item.empty()) throw std::invalid_argument(where + ": an empty element");
    if (item.front() == '(') {
      elems.push_back(parseTupleEntry(item, leaves, where));
    } else if (ConstexprValue c = ConstexprValue::parse(std::string(item)); c.kind != ConstexprValue::Kind::String) {
      elems.push_back(c); // None, 4, True, tl.float16, ...
    } else {
      std::vector<ArgSpec> type = parseSignature(item);
      leaves.insert(leaves.end(), type.begin(), type.end());
      elems.push_back(ConstexprValue::runtime());
    }
    if (raw.size() == inner.size()) break;
    inner.remove_prefix(raw.size() + 1);
    if (trim(inner).empty()) break; // "(i32,)": a one-element tuple
  }
  return ConstexprValue::ofTuple(std::move(elems));
}

TupleSignature parseTupleSignature(std::string_view text) {
  TupleSignature out;
  if (trim(text).empty()) return out;
  for (size_t index = 0;; ++index) {
    std::string_view raw = nextEntry(text);
    std::string_view entry = trim(raw);
    if (!entry.empty() && entry.front() == '(')
      out.tuples[index] = parseTupleEntry(entry, out.leaves, "signature entry " + std::to_string(index + 1) + " ('" +
                                                                 std::string(entry) + "')");
    else
      try {
        for (const ArgSpec &a : parseSignature(entry)) out.leaves.push_back(a);
      } catch (const std::invalid_argument &e) { // parsed alone, the entry is number 1: say which it is
        std::string message = e.what();
        const std::string alone = "signature entry 1 ";
        if (message.rfind(alone, 0) == 0)
          message = "signature entry " + std::to_string(index + 1) + " " + message.substr(alone.size());
        throw std::invalid_argument(message);
      }
    if (raw.size() == text.size()) break;
    text.remove_prefix(raw.size() + 1);
  }
  return out;
}

std::vector<ArgSpec> signatureWithTuples(const std::shared_ptr<const SourceFile> &source, const std::string &kernel,
                                         std::string_view signature,
                                         std::map<std::string, ConstexprValue> &constexprs) {
  TupleSignature parsed = parseTupleSignature(signature);
  if (parsed.tuples.empty()) return parsed.leaves;
  std::vector<std::string> names =
      runtimeParameterNames(ast::parseModule(source, /*recoverFunctionBodies=*/true), kernel, constexprs);
  for (auto &[index, shape] : parsed.tuples) {
    if (index >= names.size())
      throw std::invalid_argument("signature entry " + std::to_string(index + 1) + " is a tuple, but kernel '" +
                                  kernel + "' has " + std::to_string(names.size()) + " non-constexpr parameters");
    constexprs[names[index]] = shape;
  }
  return parsed.leaves;
}

std::string versionString() { return std::string("tessera ") + TESSERA_VERSION + " (LLVM " + TESSERA_LLVM_VERSION + ")"; }

bool isSupportedArch(std::string_view arch) {
  for (const char *a : {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"})
    if (arch == a) return true;
  return false;
}

namespace {

void checkOptions(const CompileOptions &options) {
  if (!isSupportedArch(options.arch))
    throw std::invalid_argument("unsupported architecture '" + options.arch +
                                "' (supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)");
  if (!numWarpsInRange(options.numWarps))
    throw std::invalid_argument("num_warps must be a power of 2 between 1 and 32, got " +
                                std::to_string(options.numWarps));
  if (!maxRegistersInRange(options.maxRegisters))
    throw std::invalid_argument("maxnreg must be between 16 and 255 registers a thread (or 0: no limit), got " +
                                std::to_string(options.maxRegisters));
}

} // namespace

CompiledKernel compileKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                             const std::vector<ArgSpec> &signature,
                             const std::map<std::string, ConstexprValue> &constexprs,
                             const CompileOptions &options, Stage stopAfter) {
  checkOptions(options); // before the back-end's name, as always
  return compileKernel(std::move(file), kernelName, signature, constexprs, options, resolveOptions(options), stopAfter);
}

CompiledKernel compileKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                             const std::vector<ArgSpec> &signature,
                             const std::map<std::string, ConstexprValue> &constexprs,
                             const CompileOptions &options, const ResolvedOptions &resolved, Stage stopAfter) {
  checkOptions(options);
  CompiledKernel out;
  out.name = kernelName;
  out.numWarps = options.numWarps;
  out.backend = resolved.backend;
  const bool nvrtc = out.backend == "nvrtc";

  // The AST stage shows the whole file (strict); compiling recovers from errors in functions the kernel
  // does not reach.
  ast::Module module = ast::parseModule(file, /*recoverFunctionBodies=*/stopAfter != Stage::AST);
  if (stopAfter == Stage::AST) {
    out.ast = ast::printAST(module);
    return out;
  }

  Specialization spec{kernelName, signature, constexprs, options.numWarps};
  spec.debug = resolved.debug;
  spec.arch = options.arch;
  std::unique_ptr<ir::Function> fn = specialize(module, spec);
  if (std::string problem = ir::verify(*fn); !problem.empty())
    throw std::logic_error("internal error: the specialiser produced invalid IR: " + problem + "\n" + ir::print(*fn));
  out.ir = ir::print(*fn);
  if (stopAfter == Stage::IR) return out;

  passes::PipelineOptions pipeline;
  pipeline.dumpIR = resolved.dumpIR;
#ifndef NDEBUG
  pipeline.verifyEach = true;
#endif
  pipeline.stopAfter = options.stopAfterPass;
  pipeline.arch = options.arch;
  pipeline.tensorCores = resolved.tensorCores;
  pipeline.numStages = options.numStages;
  pipeline.wgmma = resolved.wgmma;
  passes::runPipeline(*fn, pipeline);
  if (!options.stopAfterPass.empty() && stopAfter > Stage::IROpt)
    throw std::invalid_argument("--stop-after only goes with --emit ir-opt");
  out.irOpt = ir::print(*fn);
  out.numWarps = ir::launchedWarps(*fn); // the warps launched (fn->numWarps is options.numWarps)
  if (stopAfter == Stage::IROpt) return out;

  codegen::CodegenOptions cg;
  cg.arch = options.arch;
  cg.fpFusion = resolved.fpFusion;
  cg.maxRegisters = options.maxRegisters;
  cg.compareRuns = resolved.compareRuns;
  cg.fp8RegisterA = resolved.fp8RegisterA;
  cg.libdevicePath = resolved.libdevicePath;
  // The NVRTC back-end prints the per-thread form as CUDA C++ instead of
  // optimising it; --emit cuda prints it whichever back-end is selected.
  cg.cuda = nvrtc || stopAfter == Stage::CUDA;
  codegen::CodegenResult result;
  try {
    result = codegen::generate(*fn, cg, stopAfter == Stage::PTX && !cg.cuda);
  } catch (const codegen::UnsupportedError &e) {
    // What this target cannot compile is the user's error: point at it.
    if (e.loc.line == 0) throw;
    raiseError(*file, e.loc, e.reason);
  }
  out.llvmIR = std::move(result.llvmIR);
  out.cuda = std::move(result.cudaSource);
  out.ptx = std::move(result.ptx);
  out.sharedBytes = result.sharedBytes;
  if (stopAfter == Stage::PTX && nvrtc)
    out.ptx = codegen::nvrtcCompileToPtx(out.cuda, kernelName + ".cu", options.arch, cg.fpFusion);
  return out;
}

bool isBackendName(std::string_view name) { return name.empty() || name == "llvm" || name == "nvrtc"; }

namespace {

// options.backend, else the environment's (TESSERA_BACKEND), else "llvm".
std::string backendOf(const std::string &option, const std::string &environment) {
  std::string name = option;
  const char *from = "backend";
  if (name.empty()) {
    name = environment;
    from = "TESSERA_BACKEND";
  }
  if (name.empty()) return "llvm";
  if (name == "llvm" || name == "nvrtc") return name;
  throw std::invalid_argument(std::string(from) + " must be 'llvm' or 'nvrtc', got '" + name + "'");
}

} // namespace

std::string resolveBackend(const CompileOptions &options) {
  return backendOf(options.backend, env::text("TESSERA_BACKEND"));
}

ResolvedOptions resolveOptions(const CompileOptions &options) {
  const env::CompilerEnvironment e = env::readCompilerEnvironment();
  ResolvedOptions r;
  r.debug = options.debug || e.debug;
  // The FMA loop stays the fallback for what MMA can't do.
  r.tensorCores = options.tensorCores >= 0 ? options.tensorCores != 0 : e.tensorCores;
  // As Triton's enable_fp_fusion.
  r.fpFusion = options.fpFusion >= 0 ? options.fpFusion != 0 : e.fpFusion;
  r.backend = backendOf(options.backend, e.backend);
  r.wgmma = e.wgmma;
  r.dumpIR = e.dumpIR;
  r.compareRuns = e.compareRuns;
  r.fp8RegisterA = e.fp8RegisterA;
  r.libdevicePath = e.libdevicePath;
  return r;
}

bool numWarpsInRange(long long n) { return n >= 1 && n <= 32 && (n & (n - 1)) == 0; }
bool numStagesInRange(long long n) { return n >= 1 && n <= 0x7fffffff; }
bool maxRegistersInRange(unsigned n) { return n == 0 || (n >= 16 && n <= 255); }

} // namespace tessera
