// torch's C++ fast path for the launch: the plain C functions of
// tessera/_torch_fastpath.so (python/torch_fastpath/TorchTensorAccess.cpp),
// loaded when the first torch tensor type is seen. Empty (null functions)
// when that library was not built, failed to load, or was switched off; the
// launch path then reads tensors and streams from Python.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

namespace tessera::python {

struct TorchFastPath {
  // 1: a plain torch tensor, *device (-1: not CUDA), and for CUDA tensors *data and *dtype (borrowed).
  int (*tensor)(PyObject *o, std::uint64_t *data, PyObject **dtype, int *device) = nullptr;
  // 1: torch's current stream on `device` in *stream.
  int (*currentStream)(int device, void **stream) = nullptr;
};
inline TorchFastPath gTorchFastPath;

// Loads the library next to tessera._C, once (later calls return at once).
// TESSERA_TORCH_FASTPATH=0 in the environment keeps it unloaded.
void loadTorchFastPath();
// "on (<path>)", "off (<reason>)": for tests, benchmarks and bug reports.
std::string torchFastPathStatus();
// Switches the loaded fast path off or back on (benchmarks compare the two).
void setTorchFastPathEnabled(bool enabled);

} // namespace tessera::python
