// Devices and their contexts. tessera uses each device's primary context,
// the one the CUDA runtime (and so torch) uses too, which makes its
// pointers, streams and kernels interchangeable with torch's. The current
// device is the device of the thread's current context; when no context is
// current, device 0's primary context is made current on first need
// (as cudaSetDevice would). A context that someone else (torch) made current
// is always respected: tessera only switches contexts when a call names a
// device explicitly, and then restores the previous one.
//
// Device properties are read once per device and cached; they describe the
// limits that Module.cpp checks kernels against.
#pragma once

#include "runtime/CudaTypes.h"

#include <cstddef>
#include <string>

namespace tessera::rt {

// Pass as a device ordinal to mean "the current device".
inline constexpr int kCurrentDevice = -1;

struct DeviceProperties {
  int ordinal = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;        // compute capability
  int smCount = 0;                 // multiprocessors
  int maxThreadsPerBlock = 0;
  int sharedPerBlock = 0;          // bytes, without opt-in (usually 48 KB)
  int sharedPerBlockOptin = 0;     // bytes a kernel may opt in to
  int sharedPerMultiprocessor = 0; // bytes
  int registersPerBlock = 0;
  int warpSize = 0;
  std::size_t totalMemory = 0;     // bytes of global memory

  int computeCapability() const { return major * 10 + minor; } // 90 for 9.0
  std::string arch() const; // "sm_90" (no 'a' suffix: that is the compiler's choice)
};

// Number of CUDA devices (throws DriverNotFoundError without a driver).
int deviceCount();

// Ordinal of the device whose context is current on this thread, making
// device 0's primary context current if there is none.
int currentDevice();

// Makes `device`'s primary context current on this thread.
void setCurrentDevice(int device);

// Cached properties of `device` (kCurrentDevice: the current one).
const DeviceProperties &deviceProperties(int device = kCurrentDevice);

// The retained primary context of `device` (retained once, kept until exit).
CUcontext primaryContext(int device);

// Waits for all work in `device`'s context (cuCtxSynchronize).
void synchronizeDevice(int device = kCurrentDevice);

// For the span of a scope, makes `device`'s primary context current and
// afterwards restores the context that was current before (if there was
// one; otherwise the device's context stays current). With kCurrentDevice
// it keeps the current context, making device 0's current if none is.
class DeviceGuard {
public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

  int device() const { return device_; }
  CUcontext context() const { return context_; } // the context now current

private:
  int device_ = 0;
  CUcontext context_ = nullptr;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

} // namespace tessera::rt
