// Device memory helpers over cuMemAlloc/cuMemFree/cuMemcpy/cuMemset.
#include "runtime/Memory.h"

#include "runtime/DriverApi.h"

#include <utility>

namespace tessera::rt {

using detail::check;
using detail::driver;

CUdeviceptr memAlloc(std::size_t bytes, int device) {
  const auto &api = driver();
  if (bytes == 0)
    return 0;
  DeviceGuard guard(device);
  CUdeviceptr pointer = 0;
  check(api.cuMemAlloc(&pointer, bytes), [&] {
    return "cuMemAlloc failed while allocating " + std::to_string(bytes) +
           " bytes on device " + std::to_string(guard.device());
  });
  return pointer;
}

std::optional<CUdeviceptr> devicePointerOfHostMemory(std::uint64_t address) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  CUdeviceptr mapped = 0;
  CUresult result = api.cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, address);
  if (result == CUDA_ERROR_INVALID_VALUE) return std::nullopt; // memory the driver does not know
  check(result, "cuPointerGetAttribute failed while looking up the device address of host memory");
  return mapped;
}

void memFree(CUdeviceptr pointer) {
  const auto &api = driver();
  if (!pointer)
    return;
  DeviceGuard guard(kCurrentDevice);
  check(api.cuMemFree(pointer), "cuMemFree failed while freeing device memory");
}

void memcpyHtoD(CUdeviceptr destination, const void *source, std::size_t bytes) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  check(api.cuMemcpyHtoD(destination, source, bytes), [&] {
    return "cuMemcpyHtoD failed while copying " + std::to_string(bytes) + " bytes to the device";
  });
}

void memcpyDtoH(void *destination, CUdeviceptr source, std::size_t bytes) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  check(api.cuMemcpyDtoH(destination, source, bytes), [&] {
    return "cuMemcpyDtoH failed while copying " + std::to_string(bytes) + " bytes from the device";
  });
}

void memsetD8(CUdeviceptr destination, unsigned char value, std::size_t count) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  check(api.cuMemsetD8(destination, value, count), [&] {
    return "cuMemsetD8 failed while filling " + std::to_string(count) + " bytes";
  });
}

void memsetD32(CUdeviceptr destination, unsigned value, std::size_t count) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  check(api.cuMemsetD32(destination, value, count), [&] {
    return "cuMemsetD32 failed while filling " + std::to_string(count) + " words";
  });
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) {
  DeviceGuard guard(device);
  device_ = guard.device();
  pointer_ = memAlloc(bytes, device_);
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  CUdeviceptr pointer = std::exchange(pointer_, 0);
  bytes_ = 0;
  if (!pointer || detail::shuttingDown())
    return;
  try {
    DeviceGuard guard(device_);
    (void)driver().cuMemFree(pointer); // never throw from a destructor
  } catch (...) {
  }
}

void DeviceBuffer::upload(const void *source, std::size_t bytes) {
  if (bytes > bytes_)
    throw Error("cannot upload " + std::to_string(bytes) + " bytes into a device buffer of " +
                std::to_string(bytes_));
  memcpyHtoD(pointer_, source, bytes);
}

void DeviceBuffer::download(void *destination, std::size_t bytes) const {
  if (bytes > bytes_)
    throw Error("cannot download " + std::to_string(bytes) + " bytes from a device buffer of " +
                std::to_string(bytes_));
  memcpyDtoH(destination, pointer_, bytes);
}

} // namespace tessera::rt
