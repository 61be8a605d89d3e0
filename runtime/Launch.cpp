// The launch path: kept to a few comparisons around one cuLaunchKernel.
#include "runtime/Launch.h"

#include "runtime/Device.h"
#include "runtime/DriverApi.h"
#include "runtime/Module.h"

namespace tessera::rt {

using detail::driver;

namespace {

constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridYZ = 65535u;

std::string gridText(const Grid &grid) {
  return "(" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
         std::to_string(grid.z) + ")";
}

[[noreturn, gnu::noinline]] void raiseBadGrid(const Grid &grid, std::string_view kernelName) {
  std::string prefix = "cannot launch kernel '" + std::string(kernelName) + "': ";
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    throw Error(prefix + "empty grid " + gridText(grid) +
                "; every grid dimension must be at least 1");
  throw Error(prefix + "grid " + gridText(grid) + " exceeds the limits (" +
              std::to_string(kMaxGridX) + ", " + std::to_string(kMaxGridYZ) + ", " +
              std::to_string(kMaxGridYZ) + ")");
}

inline bool gridOk(const Grid &grid) {
  return grid.x - 1 < kMaxGridX && grid.y - 1 < kMaxGridYZ && grid.z - 1 < kMaxGridYZ;
}

[[noreturn, gnu::noinline]] void raiseWrongContext(const LoadedKernel &kernel) {
  std::string where;
  try {
    where = " (one of device " + std::to_string(currentDevice()) + ")";
  } catch (...) {
  }
  throw Error("cannot launch kernel '" + kernel.name() + "': it was loaded on device " +
              std::to_string(kernel.device()) + " but another CUDA context is current" + where +
              "; make device " + std::to_string(kernel.device()) +
              " current or load the kernel for the current device");
}

} // namespace

void validateGrid(const Grid &grid, std::string_view kernelName) {
  if (!gridOk(grid)) [[unlikely]]
    raiseBadGrid(grid, kernelName);
}

namespace {

void launchCurrent(const detail::DriverApi &api, const LoadedKernel &kernel, const Grid &grid, void **args,
                   CUstream stream, LaunchFlags flags);

// Makes the kernel's context current; true when it switched away from another.
bool enterContext(const detail::DriverApi &api, const LoadedKernel &kernel, CUcontext current) {
  detail::check(api.cuCtxSetCurrent(kernel.context()), [&] {
    return "cuCtxSetCurrent failed while making the context of kernel '" + kernel.name() + "' current";
  });
  return current != nullptr;
}

} // namespace

CUcontext currentContext() {
  CUcontext current = nullptr;
  detail::check(driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent failed");
  return current;
}

void launchInContext(const LoadedKernel &kernel, Grid grid, void **args, CUstream stream, LaunchFlags flags) {
  const auto &api = driver();
  if (!kernel) [[unlikely]]
    throw Error("cannot launch an empty kernel (nothing was loaded into it)");
  if (!gridOk(grid)) [[unlikely]]
    raiseBadGrid(grid, kernel.name());
  CUcontext current = nullptr;
  detail::check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent failed before a launch");
  if (current == kernel.context()) [[likely]]
    return launchCurrent(api, kernel, grid, args, stream, flags);
  struct Restore { // put the caller's context back, even when the launch throws
    const detail::DriverApi &api;
    CUcontext previous;
    bool active;
    ~Restore() {
      if (active) (void)api.cuCtxSetCurrent(previous);
    }
  } restore{api, current, enterContext(api, kernel, current)};
  launchCurrent(api, kernel, grid, args, stream, flags);
}

void launch(const LoadedKernel &kernel, Grid grid, void **args, CUstream stream, LaunchFlags flags) {
  const auto &api = driver();
  if (!kernel) [[unlikely]]
    throw Error("cannot launch an empty kernel (nothing was loaded into it)");
  if (!gridOk(grid)) [[unlikely]]
    raiseBadGrid(grid, kernel.name());

  CUcontext current = nullptr;
  detail::check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent failed before a launch");
  if (current != kernel.context()) [[unlikely]] {
    if (current)
      raiseWrongContext(kernel);
    // A fresh thread: adopt the kernel's context (not a switch).
    enterContext(api, kernel, current);
  }
  launchCurrent(api, kernel, grid, args, stream, flags);
}

namespace {

std::string launchText(const LoadedKernel &kernel, const Grid &grid) {
  return "kernel '" + kernel.name() + "' with grid " + gridText(grid) + ", " +
         std::to_string(kernel.blockThreads()) + " threads per block and " +
         std::to_string(kernel.sharedBytes()) + " bytes of dynamic shared memory";
}

// launch_cooperative_grid=True / launch_pdl=True: the same launch through cuLaunchKernelEx with
// the cooperative attribute (the driver checks that the whole grid fits on the device at once)
// and / or programmatic stream serialization.
[[gnu::noinline]] void launchWithAttributes(const detail::DriverApi &api, const LoadedKernel &kernel, const Grid &grid,
                                            void **args, CUstream stream, LaunchFlags flags) {
  const char *option = flags.cooperative ? "cooperatively (launch_cooperative_grid=True)" : "with launch_pdl=True";
  if (!api.cuLaunchKernelEx)
    throw Error("cannot launch kernel '" + kernel.name() + "' " + option + ": the CUDA driver has no "
                "cuLaunchKernelEx (it needs CUDA 11.6 or newer)");
  CUlaunchAttribute attrs[2]{};
  unsigned numAttrs = 0;
  if (flags.cooperative) {
    attrs[numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[numAttrs++].value.cooperative = 1;
  }
  if (flags.programmaticDependentLaunch) {
    attrs[numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[numAttrs++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
  config.blockDimX = kernel.blockThreads(), config.blockDimY = 1, config.blockDimZ = 1;
  config.sharedMemBytes = kernel.sharedBytes();
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = numAttrs;
  CUresult result = api.cuLaunchKernelEx(&config, kernel.function(), args, nullptr);
  if (result == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    detail::throwDriverError(result, "cooperative launch (launch_cooperative_grid=True) of " + launchText(kernel, grid) +
                                         " refused: the grid's blocks cannot all be resident on the device at once");
  if (result != CUDA_SUCCESS)
    detail::throwDriverError(result, "cuLaunchKernelEx failed while launching " + std::string(option) + " " +
                                         launchText(kernel, grid));
}

void launchCurrent(const detail::DriverApi &api, const LoadedKernel &kernel, const Grid &grid, void **args,
                   CUstream stream, LaunchFlags flags) {
  if (flags.cooperative || flags.programmaticDependentLaunch) [[unlikely]]
    return launchWithAttributes(api, kernel, grid, args, stream, flags);
  CUresult result = api.cuLaunchKernel(kernel.function(), grid.x, grid.y, grid.z,
                                       kernel.blockThreads(), 1, 1, kernel.sharedBytes(),
                                       stream, args, nullptr);
  if (result != CUDA_SUCCESS) [[unlikely]]
    detail::throwDriverError(result, "cuLaunchKernel failed while launching kernel '" +
                                         kernel.name() + "' with grid " + gridText(grid) +
                                         ", " + std::to_string(kernel.blockThreads()) +
                                         " threads per block and " +
                                         std::to_string(kernel.sharedBytes()) +
                                         " bytes of dynamic shared memory");
}

} // namespace

} // namespace tessera::rt
