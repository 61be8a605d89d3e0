// Device enumeration, primary contexts and cached device properties.
#include "runtime/Device.h"

#include "runtime/DriverApi.h"

#include <memory>
#include <mutex>
#include <vector>

namespace tessera::rt {

using detail::check;
using detail::driver;

namespace {

struct DeviceSlot {
  CUdevice handle = 0;
  CUcontext primary = nullptr;                  // retained on first need
  std::unique_ptr<DeviceProperties> properties; // read on first need
};

struct DeviceTable {
  std::mutex mutex;
  std::vector<DeviceSlot> slots; // sized once; never resized
};

// Built on first use (after the driver loaded); deliberately never destroyed,
// so that nothing here runs during exit, when the driver may be gone. If the
// driver is unavailable the initialiser throws and the next call retries.
DeviceTable &devices() {
  static DeviceTable *table = [] {
    const auto &api = driver();
    int count = 0;
    check(api.cuDeviceGetCount(&count), "cuDeviceGetCount failed while counting CUDA devices");
    auto built = std::make_unique<DeviceTable>();
    built->slots.resize(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      check(api.cuDeviceGet(&built->slots[i].handle, i),
            [&] { return "cuDeviceGet failed while enumerating CUDA device " + std::to_string(i); });
    return built.release();
  }();
  return *table;
}

int validOrdinal(int device) {
  int count = static_cast<int>(devices().slots.size());
  if (device < 0 || device >= count)
    throw Error("no CUDA device " + std::to_string(device) + ": this machine has " +
                std::to_string(count) + " device" + (count == 1 ? "" : "s"));
  return device;
}

int ordinalOf(CUdevice handle) {
  const auto &slots = devices().slots;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].handle == handle)
      return static_cast<int>(i);
  throw Error("the current CUDA context belongs to device handle " + std::to_string(handle) +
              ", which is not among the " + std::to_string(slots.size()) + " enumerated devices");
}

// Device of the current context, or -1 when no context is current.
int deviceOfCurrentContext(CUcontext *current) {
  const auto &api = driver();
  check(api.cuCtxGetCurrent(current), "cuCtxGetCurrent failed while looking for the current device");
  if (!*current)
    return -1;
  CUdevice handle = 0;
  check(api.cuCtxGetDevice(&handle), "cuCtxGetDevice failed while looking for the current device");
  return ordinalOf(handle);
}

} // namespace

std::string DeviceProperties::arch() const {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

int deviceCount() { return static_cast<int>(devices().slots.size()); }

CUcontext primaryContext(int device) {
  DeviceTable &table = devices();
  validOrdinal(device);
  std::lock_guard lock(table.mutex);
  DeviceSlot &slot = table.slots[device];
  if (!slot.primary)
    check(driver().cuDevicePrimaryCtxRetain(&slot.primary, slot.handle), [&] {
      return "cuDevicePrimaryCtxRetain failed while creating the context of device " +
             std::to_string(device);
    });
  return slot.primary;
}

void setCurrentDevice(int device) {
  CUcontext context = primaryContext(validOrdinal(device));
  check(driver().cuCtxSetCurrent(context), [&] {
    return "cuCtxSetCurrent failed while making device " + std::to_string(device) + " current";
  });
}

int currentDevice() {
  CUcontext current = nullptr;
  int device = deviceOfCurrentContext(&current);
  if (device >= 0)
    return device;
  setCurrentDevice(0);
  return 0;
}

const DeviceProperties &deviceProperties(int device) {
  const int ordinal = device == kCurrentDevice ? currentDevice() : validOrdinal(device);
  DeviceTable &table = devices();
  std::lock_guard lock(table.mutex);
  DeviceSlot &slot = table.slots[ordinal];
  if (slot.properties)
    return *slot.properties;

  const auto &api = driver();
  auto props = std::make_unique<DeviceProperties>();
  props->ordinal = ordinal;
  auto attribute = [&](CUdevice_attribute which, const char *what) {
    int value = 0;
    check(api.cuDeviceGetAttribute(&value, which, slot.handle), [&] {
      return std::string("cuDeviceGetAttribute failed while reading the ") + what +
             " of device " + std::to_string(ordinal);
    });
    return value;
  };
  char name[256] = {};
  check(api.cuDeviceGetName(name, sizeof(name) - 1, slot.handle), [&] {
    return "cuDeviceGetName failed while reading the name of device " + std::to_string(ordinal);
  });
  props->name = name;
  props->major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  props->minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  props->smCount = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  props->maxThreadsPerBlock =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads-per-block limit");
  props->sharedPerBlock =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block");
  props->sharedPerBlockOptin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                         "opt-in shared memory per block");
  props->sharedPerMultiprocessor = attribute(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM");
  props->registersPerBlock =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  props->warpSize = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  size_t bytes = 0;
  check(api.cuDeviceTotalMem(&bytes, slot.handle), [&] {
    return "cuDeviceTotalMem failed while reading the memory size of device " +
           std::to_string(ordinal);
  });
  props->totalMemory = bytes;
  slot.properties = std::move(props);
  return *slot.properties;
}

void synchronizeDevice(int device) {
  DeviceGuard guard(device);
  check(driver().cuCtxSynchronize(), [&] {
    return "cuCtxSynchronize failed while synchronising device " + std::to_string(guard.device());
  });
}

DeviceGuard::DeviceGuard(int device) {
  const int currentOrdinal = deviceOfCurrentContext(&previous_);
  if (device == kCurrentDevice) {
    if (previous_) {
      device_ = currentOrdinal;
      context_ = previous_;
    } else {
      setCurrentDevice(0); // nothing was current: device 0 stays current
      device_ = 0;
      context_ = primaryContext(0);
    }
    return;
  }
  device_ = validOrdinal(device);
  if (previous_ && currentOrdinal == device_) {
    context_ = previous_; // respect the caller's context of that device
    return;
  }
  setCurrentDevice(device_);
  context_ = primaryContext(device_);
  switched_ = previous_ != nullptr;
}

DeviceGuard::~DeviceGuard() {
  if (!switched_ || detail::shuttingDown())
    return;
  try {
    (void)driver().cuCtxSetCurrent(previous_); // a destructor must not throw
  } catch (...) {
  }
}

} // namespace tessera::rt
