// Minimal device-memory helpers, enough for tests and for the Python layer
// to move data without torch: allocation, synchronous copies and memset in
// a device's primary (or the current) context. Tensor memory normally comes
// from torch; these are not a caching allocator.
#pragma once

#include "runtime/CudaTypes.h"
#include "runtime/Device.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tessera::rt {

// cuMemAlloc in the context of `device`. Zero bytes gives a null pointer.
CUdeviceptr memAlloc(std::size_t bytes, int device = kCurrentDevice);
// cuMemFree; freeing a null pointer does nothing (but still needs a driver).
void memFree(CUdeviceptr pointer);
// Synchronous copies (they wait for the legacy default stream, not for
// non-blocking streams: synchronise those first).
void memcpyHtoD(CUdeviceptr destination, const void *source, std::size_t bytes);
void memcpyDtoH(void *destination, CUdeviceptr source, std::size_t bytes);
// Fill `count` bytes / 32-bit words.
void memsetD8(CUdeviceptr destination, unsigned char value, std::size_t count);
void memsetD32(CUdeviceptr destination, unsigned value, std::size_t count);

// The address kernels use for host memory at `address`: pinned (page-locked)
// host memory, such as torch's pin_memory(), is mapped into the device's
// address space (with unified addressing, at the same address). nullopt when
// the driver does not know the address (pageable host memory: a kernel cannot
// read it); other driver errors throw. cuPointerGetAttribute in the current
// device's context (made current if none is).
std::optional<CUdeviceptr> devicePointerOfHostMemory(std::uint64_t address);

// An owned device allocation. Default-constructed: empty, touches nothing.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes, int device = kCurrentDevice);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr get() const { return pointer_; }
  std::size_t size() const { return bytes_; }
  int device() const { return device_; }

  // Copies (at most size() bytes, else rt::Error).
  void upload(const void *source, std::size_t bytes);
  void download(void *destination, std::size_t bytes) const;

private:
  void release() noexcept;

  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
  int device_ = -1;
};

} // namespace tessera::rt
