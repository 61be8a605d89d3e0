// The CUDA driver as tessera sees it: libcuda.so.1 is opened lazily, on the
// first call that needs it, never at library load or object construction, so
// that importing tessera works on machines without a GPU and a process only
// pays for the driver when it launches something. There is no link-time
// dependency on libcuda: symbols come from cuGetProcAddress (or dlsym).
// TESSERA_LIBCUDA=path loads that library instead of libcuda.so.1 (tests use
// a fake driver, tests/tools/fake_libcuda.c, to launch without a GPU).
//
// Errors: every failing driver call becomes one DriverError whose message
// names the action, the CUDA error name and its description; a missing
// driver is a DriverNotFoundError, thrown by every entry point alike.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::rt {

// Base of every error the runtime throws. Errors the caller made (an empty
// grid, too much shared memory, an unknown device) are plain rt::Error.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A CUDA driver call failed. code() is the CUresult (kNoCall when no call
// could be made, as when the driver is missing).
class DriverError : public Error {
public:
  static constexpr int kNoCall = -1;
  DriverError(const std::string &message, int code) : Error(message), code_(code) {}
  int code() const { return code_; }

private:
  int code_;
};

// libcuda.so.1 could not be loaded, or lacks what tessera needs. Message:
// "no CUDA driver found: libcuda.so.1 could not be loaded (<dlerror text>)".
class DriverNotFoundError : public DriverError {
public:
  explicit DriverNotFoundError(const std::string &message)
      : DriverError(message, kNoCall) {}
};

// Outcome of the (one) attempt to load and initialise the driver.
struct DriverStatus {
  bool libraryLoaded = false; // dlopen("libcuda.so.1") worked
  bool ready = false;         // and every symbol resolved and cuInit(0) succeeded
  int version = 0;            // cuDriverGetVersion, e.g. 12080; 0 if unknown
  std::string error;          // why not ready (the message entry points throw)
};

// Loads the driver on first call (thread-safe) and reports; never throws.
const DriverStatus &driverStatus() noexcept;

// driverStatus().ready: libcuda is loaded and initialised.
bool driverAvailable() noexcept;

// Whether anything has tried to load the driver yet in this process (for
// tests of the "constructing nothing touches the driver" promise).
bool driverLoadAttempted() noexcept;

// The driver's CUDA version (cuDriverGetVersion); throws when unavailable.
int driverVersion();

} // namespace tessera::rt
