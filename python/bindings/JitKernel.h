// The launch path's state and hot loop, shared by Launcher.cpp (JitKernel,
// binding, specialisation, the caches) and FastLaunch.cpp (the vectorcall
// objects `kernel[grid]` returns). docs/runtime.md ("Launch path") says
// what a launch costs and why.
#pragma once

#include "Bindings.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace tessera::python {

// A vector with inline room for N elements: launches of kernels with up to
// N parameters allocate nothing. The inline room is left uninitialised (only
// [0, size) is ever read): zeroing three of these cost a launch ~20 ns.
template <typename T, size_t N> class InlineVec {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>);

public:
  InlineVec() {} // NOLINT: inline_ deliberately not value-initialised
  size_t size() const { return size_; }
  T *data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T *data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  T &operator[](size_t i) { return data()[i]; }
  const T &operator[](size_t i) const { return data()[i]; }
  void assign(size_t n, const T &value) {
    size_ = n;
    if (n > N) heap_.assign(n, value);
    else std::fill(inline_.begin(), inline_.begin() + n, value);
  }
  void push_back(const T &value) {
    if (size_ < N && heap_.empty()) {
      inline_[size_++] = value;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_.begin(), inline_.begin() + size_);
    heap_.push_back(value);
    ++size_;
  }

private:
  std::array<T, N> inline_;
  std::vector<T> heap_;
  size_t size_ = 0;
};

// The specialisation key: bytes, built without allocating for short keys.
class KeyBuffer {
public:
  void append(const void *bytes, size_t n) {
    if (size_ + n <= sizeof inline_ && spill_.empty()) [[likely]] {
      std::memcpy(inline_ + size_, bytes, n);
      size_ += n;
      return;
    }
    appendSpilled(bytes, n);
  }
  void push(char c) {
    if (size_ < sizeof inline_ && spill_.empty()) [[likely]] {
      inline_[size_++] = c;
      return;
    }
    appendSpilled(&c, 1);
  }
  std::string_view view() const { return spill_.empty() ? std::string_view(inline_, size_) : std::string_view(spill_); }

private:
  [[gnu::noinline]] void appendSpilled(const void *bytes, size_t n) {
    if (spill_.empty()) spill_.assign(inline_, size_);
    spill_.append(static_cast<const char *>(bytes), n);
    size_ += n;
  }

  char inline_[192];
  size_t size_ = 0;
  std::string spill_;
};

// A runtime argument as the hot path sees it: its key bytes and launch value.
struct FastArg {
  uint8_t scalar = 0; // ir::ScalarType
  uint8_t flags = 0;  // 1 pointer, 2 divisible by 16 / aligned, 4 equals 1, 8 tensor descriptor
  uint64_t bits = 0;
  int device = kUnknownDevice;
  bool torch = false;
};

inline constexpr uint8_t kTensorDescFlag = 8;

// A tensor descriptor's key bytes after its (scalar, flags) pair: the block
// shape, which the compiled kernel depends on (its shape and strides are
// runtime values inside the encoded map, not part of the key).
inline void appendTensorDescBlock(KeyBuffer &key, const std::vector<int64_t> &block) {
  const uint32_t rank = static_cast<uint32_t>(block.size());
  key.append(&rank, sizeof rank);
  key.append(block.data(), block.size() * sizeof(int64_t));
}

// An int known to be an address or handle (>= 0, < 2**64) as 64 bits.
// PyLong_AsUnsignedLongLong takes CPython's slow generic path (through
// _PyLong_AsByteArray) for every int above 2**30, i.e. every pointer; the
// signed conversion loops over the digits. Returns false with the Python
// error set for a negative value or a non-int.
inline bool addressValue(PyObject *o, uint64_t &out) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (!overflow && v >= 0) {
    out = static_cast<uint64_t>(v);
    return true;
  }
  if (v == -1 && !overflow && PyErr_Occurred()) return false;
  if (overflow <= 0) {
    PyErr_SetString(PyExc_OverflowError, "can't convert negative int to unsigned");
    return false;
  }
  unsigned long long u = PyLong_AsUnsignedLongLong(o); // 2**63 .. 2**64 - 1, or an error
  if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
  out = u;
  return true;
}

// torch tensors, exact ints, floats and bools without Python attribute
// storms; false for anything else (then classifyArgument decides).
bool classifyFast(PyObject *value, bool specialize, FastArg &out);
FastArg fromArg(const Arg &a);

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class JitKernel {
public:
  // `knownParams`: [(name, is_constexpr, has_default)] remembered from an
  // earlier process (tessera/_source_cache.py), or None to parse the source.
  JitKernel(std::string source, std::string path, uint32_t firstLine, std::string kernelName,
            py::object defaults, py::object doNotSpecialize, py::object knownParams = py::none());

  std::string name;
  std::shared_ptr<const SourceFile> file;
  std::vector<ParamInfo> params;
  std::vector<py::object> defaults_; // Python default per parameter (null: none)
  std::vector<uint8_t> specialize; // per parameter, 0 or 1 (not vector<bool>: read on every launch)
  std::vector<PyObject *> paramNames; // interned, for keyword lookup by identity
  std::unordered_map<std::string, size_t> index;
  size_t numRuntime = 0;
  std::string runtimeNames, allNames;
  // @tessera.jit(backend=...): "llvm", "nvrtc", or "" for TESSERA_BACKEND.
  std::string backend;

  // arch + '\0' + key → compiled kernel (shared by devices of one arch).
  std::unordered_map<std::string, std::shared_ptr<CompiledEntry>> compiled;
  struct DeviceEntry {
    std::shared_ptr<CompiledEntry> entry;
    const rt::LoadedKernel *loaded = nullptr;
  };
  struct DeviceCache {
    std::string lastKey; // the previous launch's key: most launches repeat it
    const rt::LoadedKernel *last = nullptr;
    std::unordered_map<std::string, DeviceEntry, TransparentHash, std::equal_to<>> map;
  };
  std::vector<DeviceCache> devices; // by ordinal; sized once (references stay valid)
};

// kernel[grid](*args, **kwargs) in vectorcall form: `args` holds the
// positional arguments then the values of `kwnames` (a tuple or null).
void launchVector(JitKernel &k, PyObject *grid, PyObject *const *args, size_t nargs, PyObject *kwnames);

void registerFastLaunch(py::module_ &m); // FastLaunch.cpp
void registerCache(py::module_ &m);      // Cache.cpp (both called from registerLauncher)

} // namespace tessera::python
