// Launching a LoadedKernel. The launch path is one cuLaunchKernel plus a few
// comparisons: block size and shared memory were fixed and validated when
// the kernel was loaded, so nothing is looked up, allocated or formatted
// unless something fails. It never synchronises or switches contexts, so a
// launch can be captured into a CUDA graph.
#pragma once

#include "runtime/CudaTypes.h"

#include <string_view>

namespace tessera::rt {

class LoadedKernel;

// Grid of blocks; every dimension must be at least 1 (x up to 2^31 - 1, y and
// z up to 65535).
struct Grid {
  unsigned x = 1, y = 1, z = 1;
};

// How a launch is made, beyond its grid and stream.
struct LaunchFlags {
  // Triton's launch_cooperative_grid=True: every block of the grid is resident
  // at once (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE), so blocks
  // may wait for each other. A grid that cannot be co-resident is refused by
  // the driver (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, an rt::DriverError
  // that says so); a driver without cuLaunchKernelEx (before CUDA 11.6) is an
  // rt::Error.
  bool cooperative = false;
  // Triton's launch_pdl=True: programmatic dependent launch (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
  // SERIALIZATION): the kernel may start before the previous kernel on the stream has finished,
  // once that one's programs ran griddepcontrol.launch_dependents (tl.extra.cuda.gdc_launch_dependents);
  // its tl.extra.cuda.gdc_wait() waits for the previous kernel's results. Needs sm_90.
  bool programmaticDependentLaunch = false;
};

// Throws rt::Error for an empty grid ("empty grid (0, 1, 1)") or one over the
// hardware limits; the message names `kernelName`. Needs no driver.
void validateGrid(const Grid &grid, std::string_view kernelName);

// Launches `kernel` on `stream` (null: the legacy default stream) with
// 32 * numWarps threads per block and kernel.sharedBytes() of dynamic shared
// memory. `args` points to one pointer per kernel parameter, each pointing
// to the argument's value (cuLaunchKernel's kernelParams).
//
// The kernel's context must be current, as it is when the caller's current
// device is the one the kernel was loaded on; if no context is current on
// this thread the kernel's is made current. A kernel of another device is
// refused with an rt::Error, as is an empty kernel or grid.
void launch(const LoadedKernel &kernel, Grid grid, void **args, CUstream stream = nullptr,
            LaunchFlags flags = {});

// The same from any thread and any current context: when another context is
// current (another device's), the kernel's is made current for the launch
// and the previous one restored after. The common case (the kernel's context
// is current) costs one cuCtxGetCurrent besides cuLaunchKernel.
void launchInContext(const LoadedKernel &kernel, Grid grid, void **args, CUstream stream = nullptr,
                     LaunchFlags flags = {});

// The context current on this thread (null if none). One driver call.
CUcontext currentContext();

} // namespace tessera::rt
