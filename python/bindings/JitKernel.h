// The launch path's state and hot loop, shared by Specialization.cpp
// (JitKernel, binding, specialisation), Launcher.cpp (the launch, the caches)
// and FastLaunch.cpp (the vectorcall objects `kernel[grid]` returns). docs/runtime.md ("Launch path") says
// what a launch costs and why.
#pragma once

#include "Bindings.h"
#include "ExactInt.h"
#include "TorchFastPath.h"

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
  // n elements, left uninitialised (the caller writes each one).
  void resize(size_t n) {
    size_ = n;
    if (n > N) heap_.resize(n);
  }
  // n elements, the first size() kept (the rest uninitialised); data() may move.
  void grow(size_t n) {
    if (n <= size_) return;
    if (n > N && heap_.empty()) heap_.assign(inline_.begin(), inline_.begin() + size_);
    if (n > N) heap_.resize(n);
    size_ = n;
  }
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
// Bytes stay in `inline_` while they fit; the append that would overflow it
// moves them all to `spill_` for good (size_ then exceeds the inline room, so
// one comparison tells where they are).
class KeyBuffer {
public:
  void append(const void *bytes, size_t n) {
    if (size_ + n <= sizeof inline_) [[likely]] {
      std::memcpy(inline_ + size_, bytes, n);
      size_ += n;
      return;
    }
    appendSpilled(bytes, n);
  }
  void push(char c) { append(&c, 1); }
  std::string_view view() const {
    return size_ <= sizeof inline_ ? std::string_view(inline_, size_) : std::string_view(spill_);
  }

private:
  [[gnu::noinline]] void appendSpilled(const void *bytes, size_t n) {
    if (size_ <= sizeof inline_) spill_.assign(inline_, size_);
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

// What the hot path reads from a torch tensor type, looked up once per type
// (Arguments.cpp): the descriptors of is_cuda, dtype and data_ptr, called
// directly (no attribute lookup per launch). Subclasses get their own entry
// (and their own overrides, if any).
struct TorchType {
  PyTypeObject *type = nullptr;
  PyObject *isCuda = nullptr, *dtype = nullptr, *dataPtr = nullptr; // strong references
};

// The entry for `type`, or null when it is not a torch tensor type the hot
// path can read (then the general classifier decides).
const TorchType *torchTensorTypeSlow(PyTypeObject *type);
inline const TorchType *gLastTorchType = nullptr; // the last type found (most launches pass one)
inline const TorchType *torchTensorType(PyTypeObject *type) {
  const TorchType *t = gLastTorchType;
  if (t && t->type == type) [[likely]]
    return t;
  return torchTensorTypeSlow(type);
}

// torch dtype singleton -> ir::ScalarType (-1: not one tessera takes).
int torchScalarTypeSlow(PyObject *dtype);
inline std::pair<PyObject *, int> gTorchDtypes[24] = {}; // seen dtypes (strong references)
inline int torchScalarType(PyObject *dtype) {
  for (const auto &[d, t] : gTorchDtypes) {
    if (d == dtype) return t;
    if (!d) break;
  }
  return torchScalarTypeSlow(dtype);
}

// The device of a CUDA torch tensor: 0 on one-GPU machines (no call at all),
// else tensor.get_device().
int torchDeviceSlow(PyObject *tensor);
inline int gDeviceCountForTorch = -1; // rt::deviceCount(), once
inline int torchDevice(PyObject *tensor) {
  if (gDeviceCountForTorch == 1) [[likely]]
    return 0;
  return torchDeviceSlow(tensor);
}

// A CUDA torch tensor's address, dtype and device: through torch's C++ API
// (TorchFastPath.h) where it is loaded and takes the tensor, else through its
// type's descriptors: three calls (is_cuda, dtype, data_ptr()), no
// torch.device objects. False for a CPU tensor or a dtype tessera does not
// take (the general classifier explains the error).
inline bool readTorch(const TorchType &t, PyObject *o, uint64_t &bits, int &scalar, int &device) {
  if (gTorchFastPath.tensor) [[likely]] { // torch's C++ API: no Python calls at all
    PyObject *dtype = nullptr;
    if (gTorchFastPath.tensor(o, &bits, &dtype, &device)) [[likely]] {
      if (device < 0) return false;
      scalar = torchScalarType(dtype);
      return scalar >= 0;
    }
  }
  PyObject *isCuda = Py_TYPE(t.isCuda)->tp_descr_get(t.isCuda, o, reinterpret_cast<PyObject *>(Py_TYPE(o)));
  if (!isCuda) throw py::error_already_set();
  Py_DECREF(isCuda); // True/False are singletons
  if (isCuda != Py_True) return false;
  PyObject *dtype = Py_TYPE(t.dtype)->tp_descr_get(t.dtype, o, reinterpret_cast<PyObject *>(Py_TYPE(o)));
  if (!dtype) throw py::error_already_set();
  scalar = torchScalarType(dtype);
  Py_DECREF(dtype);
  if (scalar < 0) return false;
  PyObject *pointer = PyObject_Vectorcall(t.dataPtr, &o, 1, nullptr); // Tensor.data_ptr(o)
  if (!pointer) throw py::error_already_set();
  long long v = 0;
  bool ok;
  if (PyLong_CheckExact(pointer) && exactIntValue(pointer, v) && v >= 0) [[likely]] {
    bits = static_cast<uint64_t>(v);
    ok = true;
  } else {
    ok = addressValue(pointer, bits);
  }
  Py_DECREF(pointer);
  if (!ok) throw py::error_already_set();
  device = torchDevice(o);
  return true;
}

inline bool classifyTorch(const TorchType &t, PyObject *o, bool specialize, FastArg &out) {
  uint64_t bits = 0;
  int scalar = -1, device = 0;
  if (!readTorch(t, o, bits, scalar, device)) return false;
  out.scalar = static_cast<uint8_t>(scalar);
  out.flags = static_cast<uint8_t>(1 | (specialize && bits % 16 == 0 ? 2 : 0));
  out.bits = bits;
  out.device = device;
  out.torch = true;
  return true;
}

// An exact int by intArg's rules: i32 if it fits, else i64; ":16" and ":1"
// hints. False for ints beyond 64 signed bits (the general classifier).
inline bool classifyInt(PyObject *o, bool specialize, FastArg &out) {
  long long v = 0;
  if (!exactIntValue(o, v)) return false;
  const bool narrow = v >= INT32_MIN && v <= INT32_MAX;
  out.scalar = static_cast<uint8_t>(narrow ? ir::ScalarType::I32 : ir::ScalarType::I64);
  out.bits = narrow ? static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))) : static_cast<uint64_t>(v);
  out.flags = specialize ? static_cast<uint8_t>(((v & 15) == 0 ? 2 : 0) | (v == 1 ? 4 : 0)) : 0;
  return true;
}

// torch tensors, exact ints, floats and bools without Python attribute
// storms; false for anything else (then classifyArgument decides).
inline bool classifyFast(PyObject *o, bool specialize, FastArg &out) {
  if (PyLong_CheckExact(o)) return classifyInt(o, specialize, out);
  if (PyFloat_CheckExact(o)) {
    float f = static_cast<float>(PyFloat_AS_DOUBLE(o));
    out.scalar = static_cast<uint8_t>(ir::ScalarType::F32);
    out.bits = 0;
    std::memcpy(&out.bits, &f, sizeof f);
    out.flags = 0;
    return true;
  }
  if (PyBool_Check(o)) {
    out.scalar = static_cast<uint8_t>(ir::ScalarType::I1);
    out.bits = o == Py_True;
    out.flags = 0;
    return true;
  }
  if (const TorchType *t = torchTensorType(Py_TYPE(o))) return classifyTorch(*t, o, specialize, out);
  return false;
}
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
  // A callable grid's meta dict before its values: every parameter name,
  // num_warps, num_stages (Launcher.cpp, metaDict); made by the first such launch.
  py::object metaTemplate;

  // Makes the Python object a launch returns for a specialisation
  // (tessera.CompiledKernel) from its tessera._C.CompiledKernel; None: the
  // latter itself. Set by tessera/jit.py.
  py::object compiledKernelFactory;

  // One compiled specialisation and the Python object launches and warmup()
  // return for it: made by the first that asks (compiledKernelOf), then the
  // same object every time. Held here, not in the CompiledEntry, which that
  // object holds (a cycle the garbage collector could not see).
  struct CompiledSlot {
    std::shared_ptr<CompiledEntry> entry;
    py::object result;
  };
  // arch + '\0' + key → compiled kernel (shared by devices of one arch).
  // Slots stay where they are until clearCaches() (unordered_map nodes):
  // the device caches point at them.
  std::unordered_map<std::string, CompiledSlot> compiled;
  struct DeviceEntry {
    CompiledSlot *compiled = nullptr; // in `compiled`
    const rt::LoadedKernel *loaded = nullptr;
  };
  struct DeviceCache {
    std::string lastKey; // the previous launch's key: most launches repeat it
    const rt::LoadedKernel *last = nullptr;
    CompiledSlot *lastCompiled = nullptr; // last's slot
    std::unordered_map<std::string, DeviceEntry, TransparentHash, std::equal_to<>> map;
  };
  std::vector<DeviceCache> devices; // by ordinal; sized once (references stay valid)

  // Forgets every compiled and loaded specialisation (the device caches
  // first: they point into `compiled`).
  void clearCaches() {
    for (DeviceCache &d : devices) { // not the vector: references to it stay valid
      d.map.clear();
      d.last = nullptr;
      d.lastCompiled = nullptr;
      d.lastKey.clear();
    }
    compiled.clear();
  }
};

// The slot's Python object (borrowed), made on first use by the kernel's
// compiledKernelFactory.
PyObject *compiledKernelOf(const JitKernel &k, JitKernel::CompiledSlot &slot);

// kernel[grid](*args, **kwargs) in vectorcall form: `args` holds the
// positional arguments then the values of `kwnames` (a tuple or null).
// Returns (a new reference) the launched specialisation's Python object, as
// Triton's JITFunction.run returns its CompiledKernel.
PyObject *launchVector(JitKernel &k, PyObject *grid, PyObject *const *args, size_t nargs, PyObject *kwnames);

void registerFastLaunch(py::module_ &m); // FastLaunch.cpp
void registerCache(py::module_ &m);      // Cache.cpp (both called from registerLauncher)

} // namespace tessera::python
