// TESSERA_JIT: ptxas, whole-program driver JIT, or the driver's linker.
#include "runtime/Jit.h"

#include "runtime/Cache.h"
#include "runtime/Driver.h"

#include <cstdlib>
#include <optional>

namespace tessera::rt {

namespace {

std::string sassArch(const std::string &ptx, int device) { return sassArchFor(ptx, deviceProperties(device).arch()); }

} // namespace

std::string sassArchFor(const std::string &ptx, const std::string &deviceArch) {
  if (std::optional<Arch> own = ptxTarget(ptx); own && own->suffix) return own->str();
  return deviceArch;
}

std::string JitPlan::describe() const {
  switch (mode) {
  case Ptxas: return "ptxas " + ptxas->version + " (" + ptxas->path + ")";
  case Link: return "link";
  case Whole: break;
  }
  return "whole";
}

std::string JitPlan::cubinCompiler() const {
  switch (mode) {
  case Ptxas: return "ptxas" + ptxas->version;
  case Link: return "cuda" + std::to_string(driverVersion());
  case Whole: break;
  }
  return {};
}

JitPlan jitPlan() {
  const char *env = std::getenv("TESSERA_JIT");
  const std::string_view mode = env ? env : "";
  if (mode.empty()) {
    if (const PtxasTool *tool = findPtxas()) return {JitPlan::Ptxas, tool, true};
    return {JitPlan::Whole};
  }
  if (mode == "whole") return {JitPlan::Whole};
  if (mode == "link") return {JitPlan::Link};
  if (mode == "ptxas") {
    if (const PtxasTool *tool = findPtxas()) return {JitPlan::Ptxas, tool, false};
    throw Error("TESSERA_JIT=ptxas, but no ptxas was found (set TESSERA_PTXAS or CUDA_HOME, or put ptxas on PATH)");
  }
  throw Error("TESSERA_JIT must be 'ptxas', 'whole' or 'link', got '" + std::string(mode) + "'");
}

LoadedKernel loadPtx(const JitPlan &plan, const std::string &ptx, const std::string &name, int numWarps,
                     unsigned sharedBytes, int device, std::vector<char> *cubin) {
  cubin->clear();
  if (plan.mode != JitPlan::Whole) {
    const auto fallBack = [&](const std::string &what, const Error &e) {
      if (!plan.fallBackToWhole) throw;
      cache::warnOnce("jit:" + name, what + " (" + e.what() + "); the driver compiles kernel '" + name +
                                         "' from its PTX instead");
      cubin->clear();
    };
    try {
      if (plan.mode == JitPlan::Ptxas) {
        *cubin = assemblePtx(*plan.ptxas, ptx, sassArch(ptx, device), name);
      } else {
        LinkOptions link;
        link.kernelName = name;
        link.device = device; // arch left empty: the PTX's own target if arch-specific, else the device's
        *cubin = linkPtx(ptx, link).cubin;
      }
      return loadKernel(cubin->data(), name, numWarps, sharedBytes, device);
    } catch (const DriverError &e) {
      fallBack("the driver refuses the cubin", e);
    } catch (const Error &e) {
      if (!cubin->empty()) throw; // the cubin was made; loading it failed a check of its own
      fallBack(plan.mode == JitPlan::Ptxas ? "ptxas failed" : "the driver's linker failed", e);
    }
  }
  return loadKernel(ptx.c_str(), name, numWarps, sharedBytes, device); // the driver compiles the PTX
}

} // namespace tessera::rt
