// The C++ API: compile a kernel from source text and launch it.
//
//   tessera::CompileOptions options;
//   options.arch = tessera::targetArch();            // the current GPU's, e.g. "sm_90a"
//   tessera::Kernel k = tessera::compile(source, "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
//                                        {{"BLOCK_SIZE", tessera::ConstexprValue::ofInt(1024)}},
//                                        options);
//   k.launch({blocks}, stream, x.get(), y.get(), out.get(), n);   // CUdeviceptr, ..., int
//
// A tensordesc<fp16[128,64]> parameter (a TMA descriptor, runtime/TensorMap.h) takes a
// TensorDescriptor, encoded once and passed by value like any other argument:
//   tessera::TensorDescriptor a = tessera::makeTensorDescriptor(aPtr, tessera::ir::ScalarType::F16,
//                                                              {M, K}, {K, 1}, {128, 64});
//   k.launch({blocks}, stream, a, n);
//
// A Kernel holds the compiled stages (CompiledKernel: PTX and friends) and,
// lazily on the first launch on each device, an rt::LoadedKernel: the PTX is
// compiled to a cubin by the CUDA toolkit's ptxas and the cubin is kept (without
// a ptxas, or with TESSERA_JIT=whole, the driver compiles the PTX as it loads it;
// TESSERA_JIT=link: the driver's cuLink JIT; docs/runtime.md). Copies of a Kernel share that state; loading is
// thread-safe. Compiling needs no GPU; loading and launching need the CUDA
// driver (else rt::DriverNotFoundError).
//
// compile() goes through the disk cache (runtime/Cache.h): a hit skips the
// front-end and codegen, and a cubin cached for the device's architecture and
// driver skips the PTX JIT too; a miss compiles and stores the PTX, and the
// first load() on a device adds its cubin to the entry. A kernel that came
// from the cache has only its PTX: compiled().ir, .irOpt and .llvmIR are empty
// (fromCache() says so; TESSERA_CACHE=off or TESSERA_KEEP_STAGES=1 keep them).
#pragma once

#include "compiler/driver/Compiler.h"
#include "runtime/CudaTypes.h"
#include "runtime/Device.h"
#include "runtime/Launch.h"
#include "runtime/Module.h"
#include "runtime/TensorMap.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

// The architecture tessera compiles for on `device` (rt::kCurrentDevice: the
// current one): sm_90a on compute capability 9.0, sm_80/86/87/89 on those,
// sm_90 (portable PTX the driver JIT-compiles) on anything newer, sm_80 on
// other 8.x parts. Throws rt::Error for GPUs older than sm_80, and
// rt::DriverNotFoundError without a driver.
std::string targetArch(int device = rt::kCurrentDevice);
// The same mapping from a compute capability (major, minor); "" if unsupported.
std::string targetArchFor(int major, int minor);

class Kernel {
public:
  Kernel() = default; // empty: operator bool is false
  // `signature` is the one the kernel was compiled with (one entry per
  // runtime parameter, in order), used to check the variadic launch.
  Kernel(CompiledKernel compiled, std::vector<ArgSpec> signature, std::string arch);

  explicit operator bool() const { return impl_ != nullptr; }
  const CompiledKernel &compiled() const;
  bool fromCache() const; // its PTX came from the disk cache (no stages but PTX)
  const std::string &name() const;
  const std::string &ptx() const;
  const std::string &arch() const; // what the PTX was compiled for
  unsigned numWarps() const;
  unsigned sharedBytes() const; // dynamic shared memory per block
  const std::vector<ArgSpec> &signature() const;

  // Links the PTX to a cubin and loads it on `device` the first time it is
  // asked for (per device), then returns the same LoadedKernel.
  const rt::LoadedKernel &load(int device = rt::kCurrentDevice) const;
  // The cubin linked for `device` (empty until load() for that device).
  std::vector<char> cubin(int device = rt::kCurrentDevice) const;
  // The kernel load() returned last (any device; nullptr before the first load): launch paths that
  // know their device compare it and skip load()'s lock and lookup.
  const rt::LoadedKernel *lastLoaded() const;
  // Runs ptxas for devices of `deviceArch` ("sm_90") now, without a GPU or a driver, and keeps the
  // cubin with the kernel and in its disk-cache entry: a later load() on such a device, in this
  // process or another, only loads it (torch.compile's workers compile so, docs/torch-compile.md).
  // False, doing nothing, when the PTX JIT is not ptxas (TESSERA_JIT, none found) or the kernel is
  // not in the disk cache; a ptxas failure is an rt::Error.
  bool assembleFor(const std::string &deviceArch) const;

  // Launches on the current device (loading the kernel there on first use)
  // with cuLaunchKernel's argument array: one pointer per runtime parameter,
  // each pointing at the value (CUdeviceptr / pointer for *T, int32_t for
  // i32, int64_t for i64, float for fp32, a TensorDescriptor for
  // tensordesc<...>, ...). Null stream: the legacy default stream. An empty
  // grid (any dimension 0) is an rt::Error.
  // A descriptor argument's pointer is to its TensorDescriptor, whose hidden
  // parameters (base, shape, strides, padding) this appends.
  void launch(rt::Grid grid, void **args, CUstream stream = nullptr) const;

  // The same with `args` already holding every kernel parameter, the
  // descriptors' hidden ones after the others (rt::descriptorFields).
  struct AllParameters {};
  static constexpr AllParameters kAllParameters{};
  void launch(rt::Grid grid, void **args, CUstream stream, AllParameters) const;

  // The same with the arguments themselves; their addresses are packed for
  // cuLaunchKernel. Each argument's size must match its parameter's
  // (pointers 8 bytes, i32 4, a TensorDescriptor its sizeof, ...): a mismatch, or a
  // wrong number of arguments, throws std::invalid_argument naming the
  // parameter. (A descriptor's dtype and block shape are not checked: make
  // it with the block shape of the kernel's tensordesc<DTYPE[...]>.)
  template <typename... Args>
  void launch(rt::Grid grid, CUstream stream, const Args &...args) const {
    std::array<std::size_t, sizeof...(Args)> sizes{sizeof(Args)...};
    checkArgumentSizes(sizes.data(), sizes.size());
    std::array<void *, sizeof...(Args)> pointers{
        const_cast<void *>(static_cast<const void *>(&args))...};
    launch(grid, pointers.data(), stream);
  }

  // The size check of the variadic launch (public for include/tessera/tessera.h's Kernel).
  void checkArgumentSizes(const std::size_t *sizes, std::size_t count) const;

private:
  friend Kernel compileCached(std::shared_ptr<const SourceFile>, const std::string &, std::vector<ArgSpec>,
                              const std::map<std::string, ConstexprValue> &, const CompileOptions &, bool *,
                              const std::string &);
  struct Impl;
  const Impl &state() const; // throws std::logic_error when empty
  // Keeps the cubin of `tag` and writes the disk-cache entry again with it (impl's mutex held).
  void keepCubin(const std::string &tag, std::string bytes) const;
  std::shared_ptr<Impl> impl_;
};

// Compiles kernel `kernelName` of the Python source text `source` (a whole
// kernel file: imports, constexpr globals and the @jit functions it calls)
// for the signature "*fp32:16,i32,..." (one entry per non-constexpr
// parameter) to PTX. `path` names the source in diagnostics; `firstLine` is
// the line of the real file that the text starts at. An empty
// options.arch means targetArch() of the current device.
// Throws CompileError for errors in the kernel and std::invalid_argument for
// a bad signature or options.
Kernel compile(std::string source, std::string kernelName, std::string signature,
               std::map<std::string, ConstexprValue> constexprs = {},
               CompileOptions options = {}, std::string path = "<source>",
               uint32_t firstLine = 1);

// compile()'s work on an already made SourceFile (the Python launcher's
// path): the disk cache's entry for these inputs if there is one (*hit set
// true), else compileKernel() to PTX, stored in the cache. options.arch must
// be set. The key (Cache.h makeKey) is the source text, not its path.
// assembleFor: a device architecture ("sm_90") whose assembleFor() the caller
// will ask for next; on a miss with the ptxas JIT, ptxas starts before the
// compile (rt::EarlyPtxas), so that its start overlaps it.
Kernel compileCached(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                     std::vector<ArgSpec> signature, const std::map<std::string, ConstexprValue> &constexprs,
                     const CompileOptions &options, bool *hit = nullptr, const std::string &assembleFor = {});

// compile() of a file read from disk (the path appears in diagnostics).
Kernel compileFile(const std::string &path, std::string kernelName, std::string signature,
                   std::map<std::string, ConstexprValue> constexprs = {},
                   CompileOptions options = {});

} // namespace tessera
