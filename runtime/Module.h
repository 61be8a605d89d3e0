// From PTX to a launchable function. PTX is compiled to a cubin in-process
// by the driver's JIT linker (cuLink*), so no ptxas binary is needed at run
// time and the cubin bytes can be cached on disk by the caller; the cubin is
// then loaded into a context as a module (cuModuleLoadData).
//
// A LoadedKernel owns its module and carries what a launch needs (function,
// block size, dynamic shared memory), validated against the device's limits
// once at load time so that launching costs no checks beyond the grid.
#pragma once

#include "runtime/CudaTypes.h"
#include "runtime/Device.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::rt {

// A GPU architecture as the compiler names it: sm_80, sm_90a, sm_100f.
struct Arch {
  int major = 0;
  int minor = 0;
  char suffix = 0; // 0, 'a' (arch-specific features) or 'f' (family)

  int computeCapability() const { return major * 10 + minor; }
  std::string str() const; // back to "sm_90a"
  bool operator==(const Arch &) const = default;
};

// Parses "sm_XY[a|f]" (also "sm_XYZ" for 10.0 and later, and "compute_XY");
// nullopt for anything else.
std::optional<Arch> parseArch(std::string_view text);

// The CUjit_target value for an architecture, or nullopt when the CUDA
// headers tessera was built with do not know it (the link then lets the
// driver target the current context's device).
std::optional<int> jitTargetFor(const Arch &arch);

// The architecture named by a PTX module's ".target" directive, if any.
std::optional<Arch> ptxTarget(std::string_view ptx);

struct LinkOptions {
  // The cubin's architecture, e.g. "sm_90a". Empty: the PTX's own .target if
  // that is arch- or family-specific (sm_90a PTX cannot be compiled for plain
  // sm_90), else the device of the context (sm_80 PTX runs natively on sm_90).
  std::string arch;
  std::string kernelName;  // only for messages
  int device = kCurrentDevice;
};

struct LinkResult {
  std::vector<char> cubin;
  std::string infoLog; // the JIT's info log (usually empty: verbose is off)
};

// Compiles PTX text to a cubin with cuLinkCreate/cuLinkAddData/cuLinkComplete
// in the context of options.device. On failure the DriverError carries the
// JIT's error log. An arch string that does not parse is an rt::Error.
LinkResult linkPtx(std::string_view ptx, const LinkOptions &options = {});

// Static resource usage of a loaded function (cuFuncGetAttribute).
struct FunctionAttributes {
  int registers = 0;             // per thread
  int staticSharedBytes = 0;
  int localBytes = 0;            // per thread (spills, local arrays)
  int constBytes = 0;
  int maxThreadsPerBlock = 0;    // what the function can launch with
  int maxDynamicSharedBytes = 0; // after tessera's opt-in, if any
  int ptxVersion = 0;            // e.g. 80 for PTX ISA 8.0
  int binaryVersion = 0;         // e.g. 90 for sm_90
};

// A function loaded into one context, ready to launch; owns its module
// (unloaded by the destructor). Move-only; a default-constructed one is empty.
class LoadedKernel {
public:
  LoadedKernel() = default;
  ~LoadedKernel();
  LoadedKernel(LoadedKernel &&other) noexcept;
  LoadedKernel &operator=(LoadedKernel &&other) noexcept;
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;

  explicit operator bool() const { return function_ != nullptr; }
  const std::string &name() const { return name_; }
  int numWarps() const { return numWarps_; }
  unsigned blockThreads() const { return blockThreads_; } // 32 * numWarps
  unsigned sharedBytes() const { return sharedBytes_; }   // dynamic, per block
  int device() const { return device_; }
  CUcontext context() const { return context_; }
  CUmodule module() const { return module_; }
  CUfunction function() const { return function_; }
  const FunctionAttributes &attributes() const { return attributes_; }

private:
  friend LoadedKernel loadKernel(const void *, std::string_view, int, unsigned, int);
  void release() noexcept;

  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUcontext context_ = nullptr;
  int device_ = -1;
  std::string name_;
  int numWarps_ = 0;
  unsigned blockThreads_ = 0;
  unsigned sharedBytes_ = 0;
  FunctionAttributes attributes_;
};

// Loads `image` (a cubin from linkPtx, or NUL-terminated PTX, which the
// driver then JIT-compiles) into the context of `device` and looks up the
// function `name`. Refuses, with an rt::Error naming the kernel, numbers and
// limits, a kernel that needs more shared memory (dynamic + static) than the
// device's opt-in limit or more threads than the device or function allows;
// opts in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) when it needs more
// than the default 48 KB.
LoadedKernel loadKernel(const void *image, std::string_view name, int numWarps,
                        unsigned sharedBytes, int device = kCurrentDevice);

// linkPtx followed by loadKernel of the cubin.
LoadedKernel loadPtxKernel(std::string_view ptx, std::string_view name, int numWarps,
                           unsigned sharedBytes, std::string_view arch = {},
                           int device = kCurrentDevice);

} // namespace tessera::rt
