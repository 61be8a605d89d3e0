// tessera's public C++ API, installed as <tessera/tessera.h> (docs/cpp-api.md):
// compile a Triton-syntax kernel from source text, to PTX without a GPU or to a
// Kernel that loads and launches through the CUDA driver, and manage the disk cache.
//
//   std::string ptx = tessera::compileToPtx(source, "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
//                                           {{"BLOCK_SIZE", tessera::ConstexprValue::ofInt(1024)}},
//                                           "sm_90a");
//
//   tessera::Kernel k = tessera::compile(source, "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32",
//                                        {{"BLOCK_SIZE", tessera::ConstexprValue::ofInt(1024)}});
//   k.launch({blocks}, stream, xPtr, yPtr, outPtr, n);   // CUdeviceptr..., int32_t
//
// Self-contained C++17: it includes only the standard library, neither cuda.h
// nor tessera's internal IR headers. Errors are thrown as std::exception
// subclasses: std::runtime_error for an error in the kernel (the message has
// file:line:col and a caret) or from the CUDA driver, std::invalid_argument for
// a bad signature, constexpr or option.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

// The CUDA driver API's stream handle, declared as cuda.h declares it.
struct CUstream_st;
typedef struct CUstream_st *CUstream;

namespace tessera {
// The public types live in an inline namespace so that their symbols stay apart
// from libtessera's internal types of the same names (tessera::Kernel, ...);
// users write tessera::Kernel, tessera::ConstexprValue as usual.
inline namespace api {

// A constexpr argument's value (a tl.constexpr parameter), as Python would pass it.
struct ConstexprValue {
  enum class Kind { None, Int, Float, Bool, String, DType, Tuple };
  Kind kind = Kind::None;
  int64_t intValue = 0;     // Int; Bool (0/1)
  double floatValue = 0;    // Float
  std::string stringValue;  // String; DType: the dtype's name ("float16", "fp32", "int8", ...)
  std::vector<ConstexprValue> elems; // Tuple

  static ConstexprValue ofInt(int64_t v) { ConstexprValue c; c.kind = Kind::Int; c.intValue = v; return c; }
  static ConstexprValue ofFloat(double v) { ConstexprValue c; c.kind = Kind::Float; c.floatValue = v; return c; }
  static ConstexprValue ofBool(bool v) { ConstexprValue c; c.kind = Kind::Bool; c.intValue = v; return c; }
  static ConstexprValue ofString(std::string s) { ConstexprValue c; c.kind = Kind::String; c.stringValue = std::move(s); return c; }
  // tl.float16 and friends; std::invalid_argument at compile time for an unknown name.
  static ConstexprValue ofDType(std::string name) { ConstexprValue c; c.kind = Kind::DType; c.stringValue = std::move(name); return c; }
  static ConstexprValue ofTuple(std::vector<ConstexprValue> e) { ConstexprValue c; c.kind = Kind::Tuple; c.elems = std::move(e); return c; }
  static ConstexprValue none() { return {}; }
};

using Constexprs = std::map<std::string, ConstexprValue>;

struct CompileOptions {
  unsigned numWarps = 4;    // a power of 2, 1..32
  unsigned numStages = 3;
  std::string arch;         // "sm_80", "sm_90a", ...; empty: the current GPU's (needs the driver)
  bool debug = false;       // tl.device_assert checks on the device
  std::string backend;      // "llvm", "nvrtc", or empty for TESSERA_BACKEND (default llvm)
  unsigned maxRegisters = 0; // PTX .maxnreg, 16..255; 0 leaves it to ptxas
};

// The grid of a launch, in blocks.
struct Grid {
  unsigned x = 1, y = 1, z = 1;
};

// "tessera X.Y.Z (LLVM ...)".
std::string version();

// The architecture tessera compiles for on CUDA device `device` (-1: the current
// one), e.g. "sm_90a". Needs the CUDA driver.
std::string targetArch(int device = -1);

// Compiles kernel `kernelName` of the Python source text `source` (a whole
// kernel file: imports, constexpr globals, the @jit functions it calls) for
// `signature` ("*fp32:16,i32,...": one entry per non-constexpr parameter) and
// returns its PTX for `arch`. Needs no GPU and no CUDA driver. Goes through the
// disk cache like compile().
std::string compileToPtx(const std::string &source, const std::string &kernelName,
                         const std::string &signature, const Constexprs &constexprs = {},
                         const std::string &arch = "sm_90a");

// A compiled kernel. Loading (PTX to cubin, on the first launch on each
// device) and launching need the CUDA driver (libcuda.so.1, opened at run
// time). Copies share their state; loading is thread-safe.
class Kernel {
public:
  Kernel() = default; // empty: operator bool is false
  explicit operator bool() const { return impl_ != nullptr; }

  const std::string &name() const;
  const std::string &ptx() const;
  const std::string &arch() const;  // what the PTX was compiled for
  unsigned numWarps() const;
  unsigned sharedBytes() const;     // dynamic shared memory per block
  bool fromCache() const;           // its PTX came from the disk cache

  // Loads the kernel on `device` (-1: the current one) if it is not loaded yet.
  void load(int device = -1) const;
  // The cubin linked for `device` (empty until it is loaded there).
  std::vector<char> cubin(int device = -1) const;

  // Launches on the current device with cuLaunchKernel's argument array: one
  // pointer per runtime parameter, each pointing at the value (CUdeviceptr for
  // *T, int32_t for i32, int64_t for i64, float for fp32, ...). Null stream:
  // the legacy default stream.
  void launch(Grid grid, void **args, CUstream stream = nullptr) const;

  // The same with the arguments themselves. Each argument's size must match its
  // parameter's (pointers 8 bytes, i32 4, ...): a mismatch, or a wrong number
  // of arguments, throws std::invalid_argument naming the parameter.
  template <typename... Args>
  void launch(Grid grid, CUstream stream, const Args &...args) const {
    std::size_t sizes[sizeof...(Args) + 1] = {sizeof(Args)...};
    void *pointers[sizeof...(Args) + 1] = {const_cast<void *>(static_cast<const void *>(&args))...};
    launchChecked(grid, stream, pointers, sizes, sizeof...(Args));
  }

  struct Impl; // libtessera's side
  explicit Kernel(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

private:
  void launchChecked(Grid grid, CUstream stream, void **args, const std::size_t *sizes,
                     std::size_t count) const;
  std::shared_ptr<const Impl> impl_;
};

// Compiles to PTX (through the disk cache) and returns the kernel, loaded on
// its first launch. `path` names the source in diagnostics.
Kernel compile(const std::string &source, const std::string &kernelName, const std::string &signature,
               const Constexprs &constexprs = {}, const CompileOptions &options = {},
               const std::string &path = "<source>");
// compile() of a kernel file read from disk.
Kernel compileFile(const std::string &path, const std::string &kernelName, const std::string &signature,
                   const Constexprs &constexprs = {}, const CompileOptions &options = {});

// The disk cache (TESSERA_CACHE_DIR, default ~/.cache/tessera; docs/runtime.md).
struct CacheUsage {
  bool enabled = true;
  std::string directory;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};
CacheUsage cacheUsage();
// Removes every cached kernel (with `tuning`, the autotuning results too);
// returns the number of files removed.
uint64_t clearCache(bool tuning = false);

} // namespace api
} // namespace tessera
