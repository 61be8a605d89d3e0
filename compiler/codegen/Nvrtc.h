// NVRTC, CUDA's run-time C++ compiler, opened lazily with dlopen (like
// libcuda in runtime/Driver.cpp): the compiler half of the NVRTC back-end,
// beside its emitter (CudaEmitter.h: CUDA C++ → PTX here), as NVPTXTarget.h
// is beside the LLVM lowering. Needs no GPU. docs/nvrtc.md.
//
// The library is $TESSERA_NVRTC when set (that file and no other); else
// libnvrtc.so.13, libnvrtc.so or libnvrtc.so.12 on the loader's path, then
// in $CUDA_HOME/lib64, $CUDA_HOME/lib, /usr/local/cuda/lib64,
// /usr/local/cuda/lib, the folder of libtessera.so, and the folders given
// to addNvrtcSearchDirectory (the Python package adds the pip wheels'
// nvidia/cu13/lib and nvidia/cuda_nvrtc/lib).
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::codegen {

// NVRTC could not be loaded, or could not compile the program. what() is the
// whole report (for a compile error: NVRTC's log, each error followed by the
// generated source line it points at).
class NvrtcError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct NvrtcStatus {
  bool available = false;
  std::string library; // the path or name that was loaded
  int major = 0, minor = 0;
  std::string error;   // why it is not available
};

// Loads NVRTC on the first call (thread-safe); never throws.
const NvrtcStatus &nvrtcStatus();
// One more folder to look in, after the others; only before the first load.
void addNvrtcSearchDirectory(const std::string &dir);

// Compiles `source` (one CUDA C++ translation unit, named `name` in
// messages, e.g. "add_kernel.cu") to PTX for `arch` (sm_80 ... sm_90a).
// fmad: floating-point contraction (--fmad), as CompileOptions::fpFusion asks the
// LLVM back-end; denormals, division and square root are IEEE (NVRTC's defaults).
// Throws NvrtcError.
std::string nvrtcCompileToPtx(const std::string &source, const std::string &name, const std::string &arch,
                              bool fmad = true);

} // namespace tessera::codegen
