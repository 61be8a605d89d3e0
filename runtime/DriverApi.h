// Internal to the runtime (includes <cuda.h>; not part of the public API):
// the table of driver entry points resolved from libcuda.so.1, and check(),
// the one place a CUresult becomes an exception.
//
// The table is an X-macro list of (name, ABI version) pairs: each entry is
// resolved as the function `name` had at CUDA `version`, which is also the
// version cuGetProcAddress is asked for, and typed with cudaTypedefs.h's
// PFN_name_vversion. Asking for the header's (newest) version instead would
// be wrong: CUDA 13 gave cuCtxGetDevice and cuCtxSynchronize an extra
// argument under the same name. cuda.h #defines some names to versioned
// symbols (cuMemAlloc -> cuMemAlloc_v2); #name keeps the unversioned name
// cuGetProcAddress wants, the macro-expanded name is the symbol dlsym wants
// as a fallback, and ## pastes the unexpanded name into the PFN type.
#pragma once

#include "runtime/Driver.h"

#include <cuda.h>
#include <cudaTypedefs.h> // PFN_cuX_vN: the type of cuX as of CUDA version N

#include <string>
#include <string_view>
#include <type_traits>

namespace tessera::rt::detail {

#define TESSERA_CUDA_DRIVER_SYMBOLS(X)    \
  X(cuGetErrorName, 6000)                 \
  X(cuGetErrorString, 6000)               \
  X(cuInit, 2000)                         \
  X(cuDriverGetVersion, 2020)             \
  X(cuDeviceGet, 2000)                    \
  X(cuDeviceGetCount, 2000)               \
  X(cuDeviceGetName, 2000)                \
  X(cuDeviceGetAttribute, 2000)           \
  X(cuDeviceTotalMem, 3020)               \
  X(cuDevicePrimaryCtxRetain, 7000)       \
  X(cuCtxGetCurrent, 4000)                \
  X(cuCtxSetCurrent, 4000)                \
  X(cuCtxGetDevice, 2000)                 \
  X(cuCtxSynchronize, 2000)               \
  X(cuLinkCreate, 6050)                   \
  X(cuLinkAddData, 6050)                  \
  X(cuLinkComplete, 5050)                 \
  X(cuLinkDestroy, 5050)                  \
  X(cuModuleLoadData, 2000)               \
  X(cuModuleUnload, 2000)                 \
  X(cuModuleGetFunction, 2000)            \
  X(cuFuncGetAttribute, 2020)             \
  X(cuFuncSetAttribute, 9000)             \
  X(cuLaunchKernel, 4000)                 \
  X(cuPointerGetAttribute, 4000)          \
  X(cuMemAlloc, 3020)                     \
  X(cuMemFree, 3020)                      \
  X(cuMemcpyHtoD, 3020)                   \
  X(cuMemcpyDtoH, 3020)                   \
  X(cuMemsetD8, 3020)                     \
  X(cuMemsetD32, 3020)                    \
  X(cuStreamCreate, 2000)                 \
  X(cuStreamDestroy, 4000)                \
  X(cuStreamSynchronize, 2000)            \
  X(cuStreamBeginCapture, 10010)          \
  X(cuStreamEndCapture, 10000)            \
  X(cuGraphInstantiateWithFlags, 11040)   \
  X(cuGraphLaunch, 10000)                 \
  X(cuGraphExecDestroy, 10000)            \
  X(cuGraphDestroy, 10000)                \
  X(cuEventCreate, 2000)                  \
  X(cuEventRecord, 2000)                  \
  X(cuEventSynchronize, 2000)             \
  X(cuEventElapsedTime, 2000)             \
  X(cuEventDestroy, 4000)

// Entry points only some features need: null when the driver lacks them
// (an older driver still loads; the feature says what it needs).
#define TESSERA_CUDA_DRIVER_OPTIONAL_SYMBOLS(X) \
  X(cuTensorMapEncodeTiled, 12000) /* TMA tensor descriptors (runtime/TensorMap.cpp) */ \
  X(cuLaunchKernelEx, 11060)       /* cooperative launches (runtime/Launch.cpp) */

struct DriverApi {
#define TESSERA_DECLARE_SYMBOL(name, version) PFN_##name##_v##version name = nullptr;
  TESSERA_CUDA_DRIVER_SYMBOLS(TESSERA_DECLARE_SYMBOL)
  TESSERA_CUDA_DRIVER_OPTIONAL_SYMBOLS(TESSERA_DECLARE_SYMBOL)
#undef TESSERA_DECLARE_SYMBOL
};

// Loads and initialises the driver on first use; throws DriverNotFoundError
// (or the DriverError of a failed cuInit) when it is not usable. After the
// first call this is one test of an initialised static: cheap enough for the
// launch path.
const DriverApi &driver();

// True once the process has begun to exit (an atexit handler registered when
// the driver was loaded): destructors must not call into the driver then.
bool shuttingDown() noexcept;

// "<what>: CUDA_ERROR_X (description)" as a DriverError.
[[noreturn]] void throwDriverError(CUresult result, std::string_view what);

// The one check every driver call goes through. `what` says what was being
// done ("cuModuleLoadData failed while loading kernel 'k'"); pass a callable
// returning std::string when the text must be built, so that nothing is
// formatted unless the call failed.
inline void check(CUresult result, std::string_view what) {
  if (result != CUDA_SUCCESS) [[unlikely]]
    throwDriverError(result, what);
}

template <class F>
  requires std::is_invocable_r_v<std::string, F>
inline void check(CUresult result, F &&what) {
  if (result != CUDA_SUCCESS) [[unlikely]]
    throwDriverError(result, what());
}

// "CUDA_ERROR_X (description)" for a result; usable without throwing.
std::string describe(CUresult result);

} // namespace tessera::rt::detail
