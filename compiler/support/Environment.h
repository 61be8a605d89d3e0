// The environment variables that change what tessera compiles, each read in
// this one place with its rule. The compile driver reads them once per
// compile (resolveOptions, compiler/driver/Compiler.h) into the options that
// the passes, codegen and the kernel-cache key read; the layers below the
// driver never look at the environment themselves.
//
//   TESSERA_DEBUG=1          device-side asserts (as CompileOptions::debug)   on when set, non-empty and not "0"
//   TESSERA_DUMP_IR=1        print the IR after every pass (stderr)           on when set, non-empty and not "0"
//   TESSERA_MMA=0            no tensor cores (CompileOptions::tensorCores)    on unless "0"
//   TESSERA_WGMMA=0          sm_90a dots on mma.sync instead of wgmma         on unless "0"
//   TESSERA_FP_FUSION=0      no fused multiply-adds (CompileOptions::fpFusion) on unless "0"
//   TESSERA_WGMMA_FP8_REGISTER_A=0  fp8 wgmma's A from a register tile staged through shared memory (A/B switch) on unless "0"
//   TESSERA_COMPARE_RUNS=0   one compare per register (an A/B switch for benchmarks) on unless "0"
//   TESSERA_BACKEND=NAME     the back-end (CompileOptions::backend)          the text, "" when unset
//   TESSERA_LIBDEVICE=PATH   libdevice.10.bc; else $CUDA_HOME (default /usr/local/cuda)/nvvm/libdevice/libdevice.10.bc
//
// Where a tool is found (TESSERA_NVRTC, TESSERA_PTXAS, TESSERA_LIBCUDA) is
// read where it is loaded; the runtime's own switches (TESSERA_CACHE,
// TESSERA_KEEP_STAGES) follow `truthy`. docs/runtime.md lists every variable.
#pragma once

#include <string>

namespace tessera::env {

// On when the variable is set, non-empty and not "0".
bool setAndNotZero(const char *name);
// On unless the variable is exactly "0" (unset and empty are on).
bool onUnlessZero(const char *name);
// A value that means yes: non-empty and not 0, false, no or off (any case).
bool truthy(const char *value);
// The variable's text; "" when unset.
std::string text(const char *name);

// The compile switches above, as the environment has them now.
struct CompilerEnvironment {
  bool debug = false;
  bool dumpIR = false;
  bool tensorCores = true;
  bool wgmma = true;
  bool fpFusion = true;
  bool compareRuns = true;
  bool fp8RegisterA = true;
  std::string backend;
  std::string libdevicePath;
};
CompilerEnvironment readCompilerEnvironment();

} // namespace tessera::env
