// libFuzzer target for the whole compiler pipeline (GitHub issue 12). The
// input bytes are not source text: they drive a small structured generator
// (KernelGenerator.h) that writes a well-formed tessera kernel — loads
// and stores with masks and cache modifiers, elementwise int/float math,
// casts, where, reductions, scans, broadcasting, shape ops, 2-D blocks, for
// loops with carried values, if/else, tl.dot, atomics — picks its signature,
// constexprs and compile options (num_warps, num_stages, sm_80/sm_90a, tensor
// cores) from the bytes too, and compiles it to PTX with compileKernel, the
// function the CLI and the Python module call.
//
// Outcomes: PTX, a CompileError (a diagnostic with file:line:col, the line
// and a caret), or the documented codegen limit on shared memory. Anything
// else — another exception type, an internal error, an LLVM verifier
// failure, a sanitizer report, an abort — is a finding.
//
// Whether ptxas accepts the PTX is checked outside the fuzzing loop (a
// subprocess per input would be far too slow): with TESSERA_FUZZ_PTX_DIR=DIR
// every input that compiles writes DIR/<hash>.<arch>.ptx and the kernel
// source next to it (<hash>.py, with the options in a comment), and
// tests/fuzz/run.sh replays the corpus that way (-runs=0) and runs ptxas on
// every file. TESSERA_FUZZ_PRINT=1 prints each generated kernel to stderr.
//
// Build and run with tests/fuzz/run.sh; docs/fuzzing.md.
#include "compiler/driver/Compiler.h"
#include "compiler/support/Diagnostics.h"
#include "tests/fuzz/KernelGenerator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using tessera::fuzz::GeneratedKernel;

// ------------------------------------------------------------------ outcome checks

[[noreturn]] void finding(const char *what, std::string_view detail, const GeneratedKernel &g) {
  std::fprintf(stderr,
               "fuzz_pipeline finding: %s\n%.*s\n--- kernel (fuzz.py) ---\n%s--- options ---\n"
               "tessera compile fuzz.py --kernel k --signature \"%s\" --constexpr BLOCK=%lld "
               "--constexpr BM=%lld --constexpr BN=%lld --constexpr DM=%lld --constexpr DN=%lld "
               "--constexpr DK=%lld --num-warps %u --num-stages %u --arch %s %s%s\n",
               what, int(detail.size()), detail.data(), g.source.c_str(), g.signatureText.c_str(),
               (long long)g.constexprs.at("BLOCK").intValue, (long long)g.constexprs.at("BM").intValue,
               (long long)g.constexprs.at("BN").intValue, (long long)g.constexprs.at("DM").intValue,
               (long long)g.constexprs.at("DN").intValue, (long long)g.constexprs.at("DK").intValue,
               g.options.numWarps, g.options.numStages, g.options.arch.c_str(),
               g.options.tensorCores ? "--tensor-cores" : "--no-tensor-cores", g.options.debug ? " --debug" : "");
  std::abort();
}

void checkDiagnostic(const tessera::SourceFile &file, const tessera::CompileError &e, const GeneratedKernel &g) {
  std::string_view msg = e.what();
  tessera::SourceLoc loc = e.loc();
  if (loc.line == 0 || loc.col == 0) finding("diagnostic without a location", msg, g);
  std::string prefix = file.path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": error: ";
  if (msg.substr(0, prefix.size()) != prefix) finding("diagnostic does not start with file:line:col: error:", msg, g);
  size_t lines = 1;
  for (char c : file.text) lines += c == '\n';
  if (loc.line < file.firstLine || loc.line - file.firstLine >= lines) finding("diagnostic line outside the file", msg, g);
  if (msg.back() != '^') finding("diagnostic without a caret", msg, g);
}

// The one error that is not a CompileError but a documented limit.
bool isDocumentedLimit(std::string_view msg) {
  return msg.rfind("codegen: kernel 'k' needs ", 0) == 0 && msg.find(" bytes of shared memory, more than ") != msg.npos;
}

// PTX without its `//` comments: LLVM's NVPTX printer numbers call sequences
// (`// callseq N`) with a process-wide counter, so a second compile in one
// process differs there, and only there.
std::string withoutComments(const std::string &ptx) {
  std::string out;
  out.reserve(ptx.size());
  for (size_t i = 0; i < ptx.size();) {
    if (ptx.compare(i, 2, "//") == 0) {
      while (i < ptx.size() && ptx[i] != '\n') ++i;
      continue;
    }
    out += ptx[i++];
  }
  return out;
}

std::string hexHash(const uint8_t *data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  GeneratedKernel g = tessera::fuzz::generateKernel(data, size);
  static const bool print = [] {
    const char *p = std::getenv("TESSERA_FUZZ_PRINT");
    return p && *p && std::string(p) != "0";
  }();
  static const char *ptxDir = std::getenv("TESSERA_FUZZ_PTX_DIR");
  if (print) std::fprintf(stderr, "--- %s %s\n%s", g.signatureText.c_str(), g.options.arch.c_str(), g.source.c_str());

  auto file = std::make_shared<tessera::SourceFile>();
  file->path = "fuzz.py";
  file->text = g.source;
  tessera::CompiledKernel out;
  try {
    out = tessera::compileKernel(file, "k", g.signature, g.constexprs, g.options);
  } catch (const tessera::CompileError &e) {
    checkDiagnostic(*file, e, g);
    if (print) std::fprintf(stderr, "=> %s\n", e.what());
    return 0;
  } catch (const std::bad_alloc &) {
    throw; // libFuzzer's -rss_limit_mb/-malloc_limit_mb report these
  } catch (const std::runtime_error &e) {
    if (isDocumentedLimit(e.what())) return 0;
    finding("an error that is not a located CompileError", e.what(), g);
  } catch (const std::exception &e) {
    finding("an exception that is not a CompileError", e.what(), g);
  }
  if (out.ptx.find(".entry k") == std::string::npos) finding("no kernel entry in the PTX", out.ptx, g);
  if (print) std::fprintf(stderr, "=> PTX, %zu bytes\n", out.ptx.size());
  if (ptxDir && *ptxDir) {
    // Replay mode: the same input must give the same PTX, and ptxas gets it.
    tessera::CompiledKernel again = tessera::compileKernel(file, "k", g.signature, g.constexprs, g.options);
    std::string base = std::string(ptxDir) + "/" + hexHash(data, size);
    if (withoutComments(again.ptx) != withoutComments(out.ptx)) {
      std::ofstream(base + ".first.txt") << out.ptx;
      std::ofstream(base + ".second.txt") << again.ptx;
      finding("two compiles of one kernel give different PTX (both are in TESSERA_FUZZ_PTX_DIR, .first/.second.txt)",
              "", g);
    }
    std::ofstream(base + "." + g.options.arch + ".ptx") << out.ptx;
    std::ofstream(base + ".py") << "# signature: " << g.signatureText << "  arch: " << g.options.arch
                                << "  num_warps: " << g.options.numWarps << "  num_stages: " << g.options.numStages
                                << "  tensor cores: " << g.options.tensorCores << "\n"
                                << g.source;
  }
  return 0;
}
