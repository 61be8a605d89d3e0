// Lazy loading of libcuda.so.1 and resolution of the driver entry points.
#include "runtime/DriverApi.h"
#include "runtime/StepTimes.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

namespace tessera::rt {
namespace detail {
namespace {

constexpr const char *kLibcudaName = "libcuda.so.1";

// TESSERA_LIBCUDA=path loads another driver library instead (the fake one
// tests and host-side benchmarks use: tests/tools/fake_libcuda.c).
std::string libcudaName() {
  const char *path = std::getenv("TESSERA_LIBCUDA");
  return path && *path ? std::string(path) : std::string(kLibcudaName);
}

std::atomic<bool> gLoadAttempted{false};
std::atomic<bool> gExiting{false};

void markExiting() { gExiting.store(true, std::memory_order_relaxed); }

struct LoadedDriver {
  DriverStatus status;
  DriverApi api;
  bool notFound = false;           // throw DriverNotFoundError, else DriverError
  int errorCode = DriverError::kNoCall;
};

// CUDA 12+ exports cuGetProcAddress_v2 (with a query-result out-parameter);
// CUDA 11.3-11.8 only the four-argument cuGetProcAddress.
using GetProcAddressV2 = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
using GetProcAddressV1 = CUresult (*)(const char *, void **, int, cuuint64_t);

// For when the driver cannot name its own errors (a stub libcuda cannot).
const char *fallbackName(CUresult result, const char **text) {
  switch (result) {
  case CUDA_ERROR_STUB_LIBRARY:
    *text = "the CUDA driver loaded is a stub library, not a real driver";
    return "CUDA_ERROR_STUB_LIBRARY";
  case CUDA_ERROR_NO_DEVICE:
    *text = "no CUDA-capable device is detected";
    return "CUDA_ERROR_NO_DEVICE";
  default:
    return nullptr;
  }
}

std::string describeWith(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (!name) {
    const char *fallbackText = nullptr;
    name = fallbackName(result, &fallbackText);
    if (!text)
      text = fallbackText;
  }
  std::string out = name ? name : "CUresult " + std::to_string(static_cast<int>(result));
  out += " (";
  out += text ? text : "unknown error";
  out += ")";
  return out;
}

#define TESSERA_STRINGIFY_EXPANDED(x) TESSERA_STRINGIFY(x)
#define TESSERA_STRINGIFY(x) #x

LoadedDriver load() {
  gLoadAttempted.store(true);
  LoadedDriver d;

  const std::string library = libcudaName();
  dlerror();
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    d.notFound = true;
    d.status.error = "no CUDA driver found: " + library + " could not be loaded (" +
                     (why ? why : "unknown reason") + ")";
    return d;
  }
  d.status.libraryLoaded = true;
  // The driver is never dlclose'd: modules and contexts live until exit.
  // From here on, destructors must know when the process is exiting.
  std::atexit(markExiting);

  auto getVersion =
      reinterpret_cast<decltype(&::cuDriverGetVersion)>(dlsym(handle, "cuDriverGetVersion"));
  if (!getVersion || getVersion(&d.status.version) != CUDA_SUCCESS)
    d.status.version = 0;

  auto getProc2 = reinterpret_cast<GetProcAddressV2>(dlsym(handle, "cuGetProcAddress_v2"));
  auto getProc1 = getProc2 ? nullptr
                           : reinterpret_cast<GetProcAddressV1>(dlsym(handle, "cuGetProcAddress"));
  // Each entry point is asked for as of the CUDA version whose ABI its type
  // has (see DriverApi.h). The legacy-stream flag makes a null CUstream mean
  // the legacy default stream, whatever the per-thread default says.
  auto resolve = [&](const char *name, int abi, const char *versionedName) -> void * {
    void *fn = nullptr;
    if (getProc2) {
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (getProc2(name, &fn, abi, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) == CUDA_SUCCESS &&
          found == CU_GET_PROC_ADDRESS_SUCCESS && fn)
        return fn;
    } else if (getProc1) {
      if (getProc1(name, &fn, abi, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == CUDA_SUCCESS && fn)
        return fn;
    }
    return dlsym(handle, versionedName);
  };

  std::string missing;
#define TESSERA_RESOLVE_SYMBOL(name, version)                                           \
  d.api.name = reinterpret_cast<decltype(d.api.name)>(                                  \
      resolve(#name, version, TESSERA_STRINGIFY_EXPANDED(name)));                       \
  if (!d.api.name)                                                                      \
    missing += (missing.empty() ? "" : ", ") + std::string(TESSERA_STRINGIFY_EXPANDED(name));
  TESSERA_CUDA_DRIVER_SYMBOLS(TESSERA_RESOLVE_SYMBOL)
#undef TESSERA_RESOLVE_SYMBOL
#define TESSERA_RESOLVE_OPTIONAL_SYMBOL(name, version) \
  d.api.name = reinterpret_cast<decltype(d.api.name)>(resolve(#name, version, TESSERA_STRINGIFY_EXPANDED(name)));
  TESSERA_CUDA_DRIVER_OPTIONAL_SYMBOLS(TESSERA_RESOLVE_OPTIONAL_SYMBOL)
#undef TESSERA_RESOLVE_OPTIONAL_SYMBOL

  if (!missing.empty()) {
    d.notFound = true;
    d.status.error = "no usable CUDA driver found: " + library +
                     " (CUDA " + std::to_string(d.status.version / 1000) + "." +
                     std::to_string(d.status.version % 1000 / 10) + ") lacks " + missing +
                     "; a newer NVIDIA driver is needed";
    return d;
  }

  CUresult init = d.api.cuInit(0);
  if (init != CUDA_SUCCESS) {
    d.errorCode = init;
    d.status.error = "cuInit failed while initialising the CUDA driver: " +
                     describeWith(d.api, init);
    return d;
  }
  d.status.ready = true;
  return d;
}

LoadedDriver timedLoad() {
  StepTimer timer(Step::DriverInit);
  return load();
}

const LoadedDriver &loaded() {
  static const LoadedDriver d = timedLoad();
  return d;
}

[[noreturn, gnu::noinline]] void raiseUnavailable(const LoadedDriver &d) {
  if (d.notFound)
    throw DriverNotFoundError(d.status.error);
  throw DriverError(d.status.error, d.errorCode);
}

} // namespace

const DriverApi &driver() {
  const LoadedDriver &d = loaded();
  if (!d.status.ready) [[unlikely]]
    raiseUnavailable(d);
  return d.api;
}

bool shuttingDown() noexcept { return gExiting.load(std::memory_order_relaxed); }

std::string describe(CUresult result) { return describeWith(loaded().api, result); }

void throwDriverError(CUresult result, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += describe(result);
  throw DriverError(message, static_cast<int>(result));
}

} // namespace detail

const DriverStatus &driverStatus() noexcept { return detail::loaded().status; }

bool driverAvailable() noexcept { return driverStatus().ready; }

bool driverLoadAttempted() noexcept { return detail::gLoadAttempted.load(); }

int driverVersion() {
  detail::driver();
  return driverStatus().version;
}

} // namespace tessera::rt
