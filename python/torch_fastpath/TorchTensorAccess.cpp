// tessera/_torch_fastpath.so: what the launch path needs from a torch tensor
// (CUDA or not, device, dtype, data pointer) and torch's current stream, read
// through torch's C++ API. From Python those are three attribute calls per
// tensor (is_cuda, dtype, data_ptr()) and one call for the stream, 60-120 ns
// each on the GPU machine; here a few nanoseconds.
//
// Built only where the interpreter has torch with its headers, against that
// torch (python/CMakeLists.txt). tessera._C loads it with dlopen when it first
// meets a torch tensor and calls it through the plain C functions below, so
// tessera._C itself never depends on torch's C++ ABI; when it is missing, or
// declines a tensor, _C reads the attributes from Python as before
// (python/bindings/TorchFastPath.cpp, docs/runtime.md "Launch path").
#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>

#define TESSERA_EXPORT extern "C" __attribute__((visibility("default")))

// Bumped when a signature below changes; _C refuses a library of another version.
TESSERA_EXPORT int tessera_torch_fastpath_version() { return 1; }

// 1 when `o` is a torch.Tensor or nn.Parameter (not a subclass: those may
// override attributes through __torch_function__) and no torch function mode
// is active (a mode sees every attribute read from Python). Then *device is
// the CUDA device index, or -1 for a tensor elsewhere; for a CUDA tensor
// *dtype (a borrowed torch.dtype) and *data (data_ptr(), storage offset
// included) are set too. 0: the caller reads the tensor from Python, which
// also raises the error a strange tensor deserves.
TESSERA_EXPORT int tessera_torch_tensor(PyObject *o, std::uint64_t *data, PyObject **dtype, int *device) noexcept {
  if (!THPVariable_CheckExact(o) || at::impl::torch_function_mode_enabled()) return 0;
  try {
    const at::Tensor &t = THPVariable_Unpack(o);
    if (!t.defined()) return 0;
    if (!t.is_cuda()) {
      *device = -1;
      return 1;
    }
    if (t.layout() != c10::kStrided || !t.has_storage()) return 0; // data_ptr() would raise
    *device = t.get_device();
    *dtype = reinterpret_cast<PyObject *>(torch::getTHPDtype(t.scalar_type()));
    *data = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr()));
    return 1;
  } catch (...) {
    return 0;
  }
}

// torch's current stream on `device` (torch.cuda.current_stream(device)):
// 1 and *stream set, or 0 (the caller asks torch from Python).
TESSERA_EXPORT int tessera_torch_current_stream(int device, void **stream) noexcept {
  try {
    *stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    return 1;
  } catch (...) {
    return 0;
  }
}
