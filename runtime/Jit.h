// How PTX becomes SASS (TESSERA_JIT; docs/runtime.md has the measurements):
//   ptxas  the CUDA toolkit's ptxas (runtime/Ptxas.h) compiles it as one program;
//          its cubin is handed back, to be kept.
//   whole  the driver compiles it as one program (cuModuleLoadData on the PTX);
//          no cubin comes back (the driver has its own JIT cache).
//   link   the driver's cuLink JIT compiles it as relocatable code, like ptxas -c,
//          which allocates registers differently (more, in most kernels); the
//          cubin is handed back.
// Unset: ptxas when one is found, else whole; a ptxas that fails, or whose cubin
// the driver refuses, then falls back to whole with one warning.
#pragma once

#include "runtime/Module.h"
#include "runtime/Ptxas.h"

#include <string>
#include <string_view>
#include <vector>

namespace tessera::rt {

struct JitPlan {
  enum Mode { Ptxas, Whole, Link } mode = Whole;
  const PtxasTool *ptxas = nullptr; // mode Ptxas
  bool fallBackToWhole = false;     // the default, not asked for by name

  // "ptxas 13.0.88 (/usr/local/cuda/bin/ptxas)", "whole" or "link".
  std::string describe() const;
  // What made the cubin, for the cache's tag: "ptxas13.0.88", "cuda13000" (the
  // driver's version; link); empty for whole (no cubin).
  std::string cubinCompiler() const;
};

// The plan for TESSERA_JIT as it is now; an rt::Error for a value it does not know,
// or for ptxas asked for by name where none is found.
JitPlan jitPlan();

// The architecture ptxas compiles `ptx` for on a device of `deviceArch` ("sm_90"): the PTX's own
// target where it is arch- or family-specific (sm_90a PTX cannot run as plain sm_90), else the device's.
std::string sassArchFor(const std::string &ptx, const std::string &deviceArch);

// Loads `ptx` as `plan` says into the context of `device`, with loadKernel's
// checks. *cubin gets the cubin loaded, or stays empty when the driver compiled
// the PTX itself (whole, or the fallback).
LoadedKernel loadPtx(const JitPlan &plan, const std::string &ptx, const std::string &name, int numWarps,
                     unsigned sharedBytes, int device, std::vector<char> *cubin);

} // namespace tessera::rt
