// Python values → kernel arguments, the way Triton specialises them:
//   torch tensors (.data_ptr(), .dtype, .device; torch is never imported here),
//   objects with __cuda_array_interface__ (pointer + typestr) or __dlpack__,
//   → pointers *dtype, ":16" when 16-byte aligned;
//   tessera.TensorDescriptor → tensordesc<dtype[block_shape]> (never specialised);
//   bool → i1; int → i32 if it fits, else i64 (u64 above 2**63 - 1),
//   ":1" when equal to 1, ":16" when divisible by 16; float → fp32.
// Every error names the kernel and the argument.
#include "Bindings.h"
#include "JitKernel.h"

#include "runtime/Memory.h"
#include "runtime/TensorMap.h"

#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace tessera::python {

using ir::ScalarType;

namespace {

// ---- DLPack (the stable C ABI, declared here to need no header) ----------
struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *);
};
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };

[[noreturn]] void typeError(const std::string &kernel, const std::string &param, const std::string &what) {
  throw py::type_error(kernel + "(): argument '" + param + "' " + what);
}
[[noreturn]] void valueError(const std::string &kernel, const std::string &param, const std::string &what) {
  throw py::value_error(kernel + "(): argument '" + param + "' " + what);
}

// "list", "numpy.ndarray", "torch.Tensor".
std::string typeName(py::handle value) {
  py::handle type = py::type::handle_of(value);
  std::string name = py::str(type.attr("__name__"));
  if (PyObject_HasAttrString(type.ptr(), "__module__") == 1) {
    std::string module = py::str(type.attr("__module__"));
    if (module != "builtins" && !module.empty()) return module.substr(0, module.find('.')) + "." + name;
  }
  return name;
}

const char *kSupportedDtypes =
    "float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2, int8, int16, int32, int64, "
    "uint8, uint16, uint32, uint64 and bool";

std::optional<ScalarType> torchDtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  // Triton's dtype names: what tensors wrapped with a Triton dtype (triton's
  // TensorWrapper, reinterpret()) report, e.g. fp8 views of uint8 storage.
  static const std::pair<const char *, ScalarType> tritonNames[] = {
      {"fp8e5", ScalarType::F8E5M2}, {"fp8e4nv", ScalarType::F8E4M3}, {"fp16", ScalarType::F16},
      {"bf16", ScalarType::BF16},    {"fp32", ScalarType::F32},       {"fp64", ScalarType::F64},
      {"int1", ScalarType::I1},      {"fp8e4b15", ScalarType::F8E4B15},
  };
  for (const auto &[n, t] : tritonNames)
    if (name == n) return t;
  static const std::pair<const char *, ScalarType> table[] = {
      {"float32", ScalarType::F32},     {"float", ScalarType::F32},
      {"float16", ScalarType::F16},     {"half", ScalarType::F16},
      {"bfloat16", ScalarType::BF16},   {"float64", ScalarType::F64},
      {"double", ScalarType::F64},      {"int8", ScalarType::I8},
      {"int16", ScalarType::I16},       {"short", ScalarType::I16},
      {"int32", ScalarType::I32},       {"int", ScalarType::I32},
      {"int64", ScalarType::I64},       {"long", ScalarType::I64},
      {"uint8", ScalarType::U8},        {"uint16", ScalarType::U16},
      {"uint32", ScalarType::U32},      {"uint64", ScalarType::U64},
      {"bool", ScalarType::I1},         {"float8_e4m3fn", ScalarType::F8E4M3},
      {"float8_e5m2", ScalarType::F8E5M2},
  };
  for (const auto &[n, t] : table)
    if (name == n) return t;
  return std::nullopt;
}

// dtype objects are singletons (torch.float32 ...): map each once.
ScalarType torchDtypeOf(py::handle dtype, const std::string &kernel, const std::string &param) {
  static std::unordered_map<PyObject *, int> cache; // -1: unsupported
  auto it = cache.find(dtype.ptr());
  if (it == cache.end()) {
    std::string name = py::str(dtype);
    std::optional<ScalarType> t = torchDtype(name);
    dtype.inc_ref(); // keep the key alive for the life of the process
    it = cache.emplace(dtype.ptr(), t ? static_cast<int>(*t) : -1).first;
  }
  if (it->second < 0) {
    rejectUnsupportedFp8(py::str(dtype), kernel, param);
    typeError(kernel, param, "has dtype " + std::string(py::str(dtype)) +
                                 ", which tessera kernels do not support (supported: " + kSupportedDtypes + ")");
  }
  return static_cast<ScalarType>(it->second);
}

// __cuda_array_interface__ typestr: "<f4", "|u1", "<i8", "|b1" ...
ScalarType typestrDtype(const std::string &typestr, const std::string &kernel, const std::string &param) {
  auto bad = [&]() -> ScalarType {
    typeError(kernel, param, "has dtype '" + typestr + "' (__cuda_array_interface__ typestr), which tessera "
                             "kernels do not support (supported: " + kSupportedDtypes + ")");
  };
  if (typestr.size() < 3 || typestr[0] == '>') return bad();
  char kind = typestr[1];
  std::string_view size(typestr.data() + 2, typestr.size() - 2);
  if (kind == 'f') {
    if (size == "2") return ScalarType::F16;
    if (size == "4") return ScalarType::F32;
    if (size == "8") return ScalarType::F64;
  } else if (kind == 'i') {
    if (size == "1") return ScalarType::I8;
    if (size == "2") return ScalarType::I16;
    if (size == "4") return ScalarType::I32;
    if (size == "8") return ScalarType::I64;
  } else if (kind == 'u') {
    if (size == "1") return ScalarType::U8;
    if (size == "2") return ScalarType::U16;
    if (size == "4") return ScalarType::U32;
    if (size == "8") return ScalarType::U64;
  } else if (kind == 'b') {
    if (size == "1") return ScalarType::I1;
  }
  return bad();
}

ScalarType dlpackDtype(const DLDataType &t, const std::string &kernel, const std::string &param) {
  if (t.lanes == 1) {
    switch (t.code) {
    case 0: // kDLInt
      if (t.bits == 8) return ScalarType::I8;
      if (t.bits == 16) return ScalarType::I16;
      if (t.bits == 32) return ScalarType::I32;
      if (t.bits == 64) return ScalarType::I64;
      break;
    case 1: // kDLUInt
      if (t.bits == 8) return ScalarType::U8;
      if (t.bits == 16) return ScalarType::U16;
      if (t.bits == 32) return ScalarType::U32;
      if (t.bits == 64) return ScalarType::U64;
      break;
    case 2: // kDLFloat
      if (t.bits == 16) return ScalarType::F16;
      if (t.bits == 32) return ScalarType::F32;
      if (t.bits == 64) return ScalarType::F64;
      break;
    case 4: // kDLBfloat
      if (t.bits == 16) return ScalarType::BF16;
      break;
    case 6: // kDLBool
      if (t.bits == 8) return ScalarType::I1;
      break;
    }
  }
  typeError(kernel, param, "has a DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) +
                               " bits, " + std::to_string(t.lanes) + " lanes) that tessera kernels do not "
                               "support (supported: " + kSupportedDtypes + ")");
}

Arg pointerArg(uint64_t pointer, ScalarType dtype, int device, bool specialize) {
  Arg a;
  a.spec.type = ir::Type::ptr(dtype);
  a.spec.divisibility = specialize && pointer % 16 == 0 ? 16 : 1;
  a.bits = pointer;
  a.device = device;
  return a;
}

bool hasAttr(py::handle obj, const char *name) { return PyObject_HasAttrString(obj.ptr(), name) == 1; }

// A NamedTuple's field names (its class's _fields); empty for a plain tuple.
std::vector<std::string> namedTupleFields(py::handle value) {
  std::vector<std::string> fields;
  py::handle type = py::type::handle_of(value);
  if (PyTuple_CheckExact(value.ptr()) || !hasAttr(type, "_fields")) return fields;
  py::object names = type.attr("_fields");
  if (!PyTuple_Check(names.ptr()) || static_cast<size_t>(py::len(names)) != static_cast<size_t>(py::len(value)))
    return fields;
  for (py::handle n : names) fields.push_back(py::str(n));
  return fields;
}


bool isNumpyBool(py::handle value) {
  py::handle type = py::type::handle_of(value);
  if (!hasAttr(type, "__module__")) return false;
  std::string module = py::str(type.attr("__module__"));
  std::string name = py::str(type.attr("__name__"));
  return module == "numpy" && (name == "bool_" || name == "bool");
}

// A CPU tensor: pinned host memory (tensor.is_pinned(), torch's pin_memory()) is passed at the
// address the driver maps it to (with unified addressing, its own), as Triton's launcher does
// (cuPointerGetAttribute); any other is Triton's ValueError (tessera.errors.HostTensorError, also
// a TypeError as tessera raised before). Pinned tensors take this slower path at every launch.
Arg hostTensorArg(py::handle value, const std::string &kernel, const std::string &param, bool specialize,
                  int position) {
  ScalarType dtype = torchDtypeOf(value.attr("dtype"), kernel, param);
  const uint64_t pointer = value.attr("data_ptr")().cast<uint64_t>();
  const bool pinned = hasAttr(value, "is_pinned") && value.attr("is_pinned")().cast<bool>();
  if (pinned)
    if (std::optional<CUdeviceptr> mapped = rt::devicePointerOfHostMemory(pointer)) {
      Arg a = pointerArg(*mapped, dtype, kUnknownDevice, specialize);
      std::string module = py::str(py::type::handle_of(value).attr("__module__"));
      a.torch = module.starts_with("torch");
      return a;
    }
  py::object cls = py::module_::import("tessera.errors").attr("HostTensorError");
  py::str message(kernel + "(): argument '" + param + "' is a CPU tensor; tessera kernels need CUDA tensors or pinned "
                  "host memory (Pointer argument (at " + (position >= 0 ? std::to_string(position) : std::string("?")) +
                  ") cannot be accessed from Triton (cpu tensor?))");
  PyErr_SetObject(cls.ptr(), message.ptr());
  throw py::error_already_set();
}

// A torch tensor or look-alike: .data_ptr(), .dtype, .device.
Arg tensorArg(py::handle value, const std::string &kernel, const std::string &param, bool specialize, int position) {
  py::object device = value.attr("device");
  std::string deviceType = hasAttr(device, "type") ? std::string(py::str(device.attr("type"))) : std::string(py::str(device));
  if (deviceType == "cpu") return hostTensorArg(value, kernel, param, specialize, position);
  if (deviceType != "cuda") typeError(kernel, param, "is a " + deviceType + " tensor; tessera kernels need CUDA tensors");
  int index = kUnknownDevice;
  if (hasAttr(device, "index")) {
    py::object i = device.attr("index");
    if (!i.is_none()) index = i.cast<int>();
  }
  ScalarType dtype = torchDtypeOf(value.attr("dtype"), kernel, param);
  uint64_t pointer = value.attr("data_ptr")().cast<uint64_t>();
  Arg a = pointerArg(pointer, dtype, index, specialize);
  std::string module = py::str(py::type::handle_of(value).attr("__module__"));
  a.torch = module.starts_with("torch");
  return a;
}

Arg cudaArrayInterfaceArg(py::handle value, const std::string &kernel, const std::string &param,
                          bool specialize) {
  py::object iface = value.attr("__cuda_array_interface__");
  if (!py::isinstance<py::dict>(iface)) typeError(kernel, param, "has a __cuda_array_interface__ that is not a dict");
  py::dict d = py::reinterpret_borrow<py::dict>(iface);
  if (!d.contains("data") || !d.contains("typestr"))
    typeError(kernel, param, "has a __cuda_array_interface__ without 'data' and 'typestr'");
  py::object data = d["data"];
  uint64_t pointer = 0;
  if (py::isinstance<py::tuple>(data) && py::len(data) >= 1) {
    py::object p = py::reinterpret_borrow<py::tuple>(data)[0];
    pointer = p.is_none() ? 0 : p.cast<uint64_t>();
  } else {
    typeError(kernel, param, "has a __cuda_array_interface__ whose 'data' is not a (pointer, read_only) tuple");
  }
  ScalarType dtype = typestrDtype(py::str(d["typestr"]), kernel, param);
  return pointerArg(pointer, dtype, kUnknownDevice, specialize);
}

Arg dlpackArg(py::handle value, const std::string &kernel, const std::string &param, bool specialize) {
  int32_t deviceType = 0, deviceId = 0;
  if (hasAttr(value, "__dlpack_device__")) {
    py::tuple dev = value.attr("__dlpack_device__")();
    deviceType = py::int_(dev[0]).cast<int32_t>();
    deviceId = py::int_(dev[1]).cast<int32_t>();
    if (deviceType == kDLCPU || deviceType == kDLCUDAHost)
      typeError(kernel, param, "is a CPU array (" + typeName(value) + "); tessera kernels need CUDA memory");
    if (deviceType != kDLCUDA && deviceType != kDLCUDAManaged)
      typeError(kernel, param, "is on a non-CUDA device (DLPack device type " + std::to_string(deviceType) +
                                   "); tessera kernels need CUDA memory");
  }
  py::object capsule;
  try {
    capsule = value.attr("__dlpack__")(py::arg("stream") = -1); // -1: no synchronisation
  } catch (py::error_already_set &e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = value.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    typeError(kernel, param, "returned something other than a DLPack 'dltensor' capsule from __dlpack__()");
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor &t = managed->dl_tensor;
  if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost)
    typeError(kernel, param, "is a CPU array (" + typeName(value) + "); tessera kernels need CUDA memory");
  ScalarType dtype = dlpackDtype(t.dtype, kernel, param);
  uint64_t pointer = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
  // The unconsumed capsule's destructor calls the producer's deleter; the
  // memory itself stays owned by `value`.
  return pointerArg(pointer, dtype, deviceType ? deviceId : t.device.device_id, specialize);
}

Arg intArg(py::handle value, const std::string &kernel, const std::string &param, bool specialize) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  Arg a;
  if (overflow == 0) {
    a.spec.type = ir::Type(v >= INT32_MIN && v <= INT32_MAX ? ScalarType::I32 : ScalarType::I64);
    if (a.spec.type.scalar == ScalarType::I32) {
      int32_t narrow = static_cast<int32_t>(v);
      std::memcpy(&a.bits, &narrow, sizeof narrow);
    } else {
      std::memcpy(&a.bits, &v, sizeof v);
    }
    if (specialize) {
      a.spec.equalsOne = v == 1;
      a.spec.divisibility = v % 16 == 0 ? 16 : 1;
    }
    return a;
  }
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
    if (!PyErr_Occurred()) {
      a.spec.type = ir::Type(ScalarType::U64);
      a.bits = u;
      if (specialize) a.spec.divisibility = u % 16 == 0 ? 16 : 1;
      return a;
    }
    PyErr_Clear();
  }
  // tessera.errors.ArgumentOverflowError: a ValueError, and the OverflowError Triton raises.
  py::object cls = py::module_::import("tessera.errors").attr("ArgumentOverflowError");
  py::str message(kernel + "(): argument '" + param + "' = " + std::string(py::str(value)) + " does not fit in 64 bits");
  PyErr_SetObject(cls.ptr(), message.ptr());
  throw py::error_already_set();
}

Arg floatArg(double d) {
  Arg a;
  a.spec.type = ir::Type(ScalarType::F32);
  float f = static_cast<float>(d);
  std::memcpy(&a.bits, &f, sizeof f);
  return a;
}

Arg boolArg(bool b) {
  Arg a;
  a.spec.type = ir::Type(ScalarType::I1);
  a.bits = b ? 1 : 0;
  return a;
}

const char *scalarName(ScalarType t) {
  switch (t) {
  case ScalarType::F16: return "fp16";
  case ScalarType::BF16: return "bf16";
  case ScalarType::F32: return "fp32";
  case ScalarType::F64: return "fp64";
  case ScalarType::F8E4M3: return "fp8e4nv";
  case ScalarType::F8E5M2: return "fp8e5";
  case ScalarType::F8E4B15: return "fp8e4b15";
  default: return ir::name(t);
  }
}

// A tessera.TensorDescriptor: its type carries the element type and the
// block shape; the launch value (bits) is the address of its encoded map.
Arg tensorDescArg(const TensorDesc &d, const std::string &kernel, const std::string &param) {
  if (!d.hostDevice.empty())
    typeError(kernel, param, "is a TensorDescriptor of a " + (d.hostDevice == "cpu" ? std::string("CPU") : d.hostDevice) +
                                 " tensor; tessera kernels need CUDA tensors");
  if (d.scalar < 0 || rt::tensorMapDataType(static_cast<ScalarType>(d.scalar)) < 0)
    typeError(kernel, param, "is a TensorDescriptor of dtype " + d.dtypeName + ", which TMA descriptors do not "
                             "support (fp16, bf16, fp32, fp64, fp8 and integers of 8 to 64 bits)");
  if (d.block.empty()) valueError(kernel, param, "is a TensorDescriptor with an empty block_shape");
  Arg a;
  a.spec.type = ir::Type::tensorDesc(static_cast<ScalarType>(d.scalar), d.block);
  a.bits = d.encoded ? reinterpret_cast<uint64_t>(d.map) : 0;
  a.device = d.device;
  a.torch = d.torch;
  return a;
}

// ---- the hot path: torch tensors and plain scalars -------------------------

PyObject *internedName(const char *s) { return PyUnicode_InternFromString(s); } // leaked on purpose

} // namespace

void rejectUnsupportedFp8(const std::string &dtypeName, const std::string &kernel, const std::string &param) {
  for (const char *name : {"fp8e4b8", "fp8e5b16"})
    if (dtypeName == name)
      throw CompileError(kernel + "(): argument '" + param + "': type " + dtypeName +
                             " not supported in this architecture. The supported fp8 dtypes are ('fp8e4nv', 'fp8e5')",
                         SourceLoc{});
}

// Finds (and caches, for 8 types each) the torch tensor types the hot path
// reads through their descriptors, and the types that are not.
const TorchType *torchTensorTypeSlow(PyTypeObject *type) {
  static TorchType known[8];
  static PyTypeObject *notTorch[8] = {};
  static unsigned nextKnown = 0, nextNot = 0;
  for (const TorchType &t : known)
    if (t.type == type) return gLastTorchType = &t;
  for (PyTypeObject *t : notTorch)
    if (t == type) return nullptr;
  py::handle h(reinterpret_cast<PyObject *>(type));
  bool torch = false;
  if (hasAttr(h, "__module__") && hasAttr(h, "data_ptr") && hasAttr(h, "dtype") && hasAttr(h, "is_cuda")) {
    std::string module = py::str(h.attr("__module__"));
    torch = module.starts_with("torch");
  }
  TorchType entry;
  if (torch) {
    entry.isCuda = PyObject_GetAttrString(h.ptr(), "is_cuda"); // on the class: the descriptors themselves
    entry.dtype = PyObject_GetAttrString(h.ptr(), "dtype");
    entry.dataPtr = PyObject_GetAttrString(h.ptr(), "data_ptr");
    PyErr_Clear();
    auto isDescriptor = [](PyObject *d) { return d && Py_TYPE(d)->tp_descr_get; };
    if (!isDescriptor(entry.isCuda) || !isDescriptor(entry.dtype) || !entry.dataPtr || !PyCallable_Check(entry.dataPtr))
      torch = false; // an unusual tensor type: the general path handles it
  }
  Py_INCREF(type); // the cache keeps the type alive (pointer comparisons stay sound)
  if (!torch) {
    Py_XDECREF(entry.isCuda), Py_XDECREF(entry.dtype), Py_XDECREF(entry.dataPtr);
    PyTypeObject *&slot = notTorch[nextNot++ % 8];
    Py_XDECREF(slot);
    slot = type;
    return nullptr;
  }
  entry.type = type;
  loadTorchFastPath(); // torch is imported: its C++ fast path can load now (once)
  TorchType &slot = known[nextKnown++ % 8];
  if (slot.type) { // an older type falls out (only with more than 8 tensor types)
    Py_DECREF(slot.type), Py_DECREF(slot.isCuda), Py_DECREF(slot.dtype), Py_DECREF(slot.dataPtr);
  }
  slot = entry;
  return gLastTorchType = &slot;
}

int torchDeviceSlow(PyObject *tensor) {
  if (gDeviceCountForTorch < 0) gDeviceCountForTorch = rt::deviceCount();
  if (gDeviceCountForTorch == 1) return 0;
  static PyObject *const sGetDevice = internedName("get_device");
  PyObject *index = PyObject_CallMethodNoArgs(tensor, sGetDevice);
  if (!index) throw py::error_already_set();
  long value = PyLong_AsLong(index);
  Py_DECREF(index);
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int>(value);
}

// A dtype not in gTorchDtypes yet: its name decides (kept when tessera takes it).
int torchScalarTypeSlow(PyObject *dtype) {
  std::optional<ScalarType> t = torchDtype(std::string(py::str(dtype)));
  if (!t) return -1;
  for (auto &slot : gTorchDtypes)
    if (!slot.first) {
      Py_INCREF(dtype);
      slot = {dtype, static_cast<int>(*t)};
      break;
    }
  return static_cast<int>(*t);
}

std::optional<ScalarType> dtypeFromName(std::string_view name) { return torchDtype(name); }

FastArg fromArg(const Arg &a) {
  FastArg f;
  f.scalar = static_cast<uint8_t>(a.spec.type.scalar);
  f.flags = static_cast<uint8_t>((a.spec.type.pointer ? 1 : 0) | (a.spec.divisibility == 16 ? 2 : 0) |
                                 (a.spec.equalsOne ? 4 : 0) | (a.spec.type.isTensorDesc() ? kTensorDescFlag : 0));
  f.bits = a.bits;
  f.device = a.device;
  f.torch = a.torch;
  return f;
}

std::string argSpecText(const ArgSpec &spec) {
  if (spec.type.isTensorDesc()) { // tensordesc<bf16[128,64]>: no hints (descriptors are never specialised)
    std::string out = "tensordesc<";
    out += scalarName(spec.type.scalar);
    for (size_t i = 0; i < spec.type.descBlock.size(); ++i)
      out += (i ? "," : "[") + std::to_string(spec.type.descBlock[i]);
    return out + "]>";
  }
  std::string out = spec.type.pointer ? "*" : "";
  out += scalarName(spec.type.scalar);
  if (spec.equalsOne) out += ":1";
  else if (spec.divisibility == 16) out += ":16";
  return out;
}

std::string signatureText(const std::vector<ArgSpec> &signature) {
  std::string out;
  for (const ArgSpec &s : signature) appendJoined(out, ",", argSpecText(s));
  return out;
}

Arg classifyArgument(py::handle value, const std::string &kernel, const std::string &param, bool specialize,
                     int position) {
  PyObject *o = value.ptr();
  if (PyBool_Check(o)) return boolArg(o == Py_True);
  if (PyLong_Check(o)) return intArg(value, kernel, param, specialize);
  if (PyFloat_Check(o)) return floatArg(PyFloat_AS_DOUBLE(o));
  if (o == Py_None) // launches specialise None as a constexpr before classifying (Launcher.cpp)
    typeError(kernel, param, "is None, but the kernel was compiled for a value here");
  if (const TensorDesc *d = tensorDescOf(o)) return tensorDescArg(*d, kernel, param);
  if (hasAttr(value, "data_ptr") && hasAttr(value, "dtype") && hasAttr(value, "device"))
    return tensorArg(value, kernel, param, specialize, position);
  if (hasAttr(value, "__cuda_array_interface__")) return cudaArrayInterfaceArg(value, kernel, param, specialize);
  if (hasAttr(value, "__dlpack__")) return dlpackArg(value, kernel, param, specialize);
  if (isNumpyBool(value)) return boolArg(PyObject_IsTrue(o) == 1);
  if (PyIndex_Check(o)) {
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!i) throw py::error_already_set();
    return intArg(i, kernel, param, specialize);
  }
  if (hasAttr(value, "__float__") && !py::isinstance<py::str>(value)) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return floatArg(d);
  }
  typeError(kernel, param, "has unsupported type '" + typeName(value) +
                               "'; expected a CUDA tensor (torch, or an object with __cuda_array_interface__ "
                               "or __dlpack__), an int, a float or a bool");
}

Arg convertArgument(py::handle value, const ArgSpec &want, const std::string &kernel, const std::string &param) {
  if (want.type.isTensorDesc()) {
    const TensorDesc *d = tensorDescOf(value.ptr());
    if (!d)
      typeError(kernel, param, "is a " + typeName(value) + " but the kernel was compiled for " + argSpecText(want) +
                                   " (pass a tessera.TensorDescriptor)");
    Arg got = tensorDescArg(*d, kernel, param);
    if (!(got.spec.type == want.type))
      typeError(kernel, param, "is a " + argSpecText(got.spec) + " but the kernel was compiled for " +
                                   argSpecText(want));
    return got;
  }
  Arg got = classifyArgument(value, kernel, param, false);
  const std::string wantText = argSpecText(ArgSpec{want.type, 1, false});
  if (got.spec.type.isTensorDesc())
    typeError(kernel, param, "is a TensorDescriptor but the kernel was compiled for " + wantText);
  if (want.type.pointer) {
    if (!got.spec.type.pointer)
      typeError(kernel, param, "is a " + argSpecText(got.spec) + " but the kernel was compiled for " + wantText +
                                   " (a tensor)");
    if (got.spec.type.scalar != want.type.scalar)
      typeError(kernel, param, "is a " + std::string(scalarName(got.spec.type.scalar)) +
                                   " tensor but the kernel was compiled for " + wantText);
    return got;
  }
  if (got.spec.type.pointer)
    typeError(kernel, param, "is a tensor but the kernel was compiled for the scalar type " + wantText);
  Arg out = got;
  out.spec = want;
  out.bits = 0;
  const ScalarType w = want.type.scalar;
  const bool gotInt = got.spec.type.isIntElement() && got.spec.type.scalar != ScalarType::I1;
  if (w == ScalarType::I1) {
    if (!got.spec.type.isIntElement()) typeError(kernel, param, "must be a bool (the kernel takes i1)");
    out.bits = got.bits != 0;
    return out;
  }
  if (ir::isInteger(w)) {
    if (!gotInt && got.spec.type.scalar != ScalarType::I1)
      typeError(kernel, param, "must be an int (the kernel was compiled for " + wantText + ")");
    // Re-read the exact Python value and check it fits the parameter.
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!i) throw py::error_already_set();
    unsigned bits = ir::bitWidth(w);
    if (ir::isSigned(w)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      long long lo = bits >= 64 ? INT64_MIN : -(1LL << (bits - 1));
      long long hi = bits >= 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;
      if (overflow || v < lo || v > hi)
        valueError(kernel, param, "= " + std::string(py::str(value)) + " does not fit in " + wantText);
      std::memcpy(&out.bits, &v, sizeof v); // little-endian: the low bytes are the narrow value
      if (bits < 64) out.bits &= (1ULL << bits) - 1;
    } else {
      unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        valueError(kernel, param, "= " + std::string(py::str(value)) + " does not fit in " + wantText);
      }
      if (bits < 64 && u >> bits)
        valueError(kernel, param, "= " + std::string(py::str(value)) + " does not fit in " + wantText);
      out.bits = u;
    }
    return out;
  }
  // Floating-point parameters take floats and ints.
  double d = PyFloat_AsDouble(value.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  if (w == ScalarType::F32) {
    float f = static_cast<float>(d);
    std::memcpy(&out.bits, &f, sizeof f);
  } else if (w == ScalarType::F64) {
    std::memcpy(&out.bits, &d, sizeof d);
  } else {
    typeError(kernel, param, "cannot be passed from Python: the kernel takes a " + wantText + " scalar");
  }
  return out;
}

ConstexprValue toConstexpr(py::handle value, const std::string &kernel, const std::string &param) {
  PyObject *o = value.ptr();
  auto bad = [&](const std::string &why) -> ConstexprValue {
    throw py::type_error(kernel + "(): constexpr '" + param + "' " + why);
  };
  if (o == Py_None) return ConstexprValue::none();
  if (o == Py_Ellipsis) return ConstexprValue::runtime(); // a tuple argument's leaf passed at run time (fromConstexpr)
  if (PyBool_Check(o)) return ConstexprValue::ofBool(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) { // Python's ints are unbounded; constexprs keep 128 bits (dsl/ConstInt.h)
      std::string text = py::str(value);
      if (auto wide = parseConstInt(text)) return ConstexprValue::ofInt(*wide);
      throw py::value_error(kernel + "(): constexpr '" + param + "' = " + text + " does not fit in 128 bits");
    }
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return ConstexprValue::ofInt(v);
  }
  if (PyFloat_Check(o)) return ConstexprValue::ofFloat(PyFloat_AS_DOUBLE(o));
  if (PyUnicode_Check(o)) return ConstexprValue::ofString(value.cast<std::string>());
  const std::string type = py::str(py::type::handle_of(value).attr("__name__"));
  // tl.constexpr(x) wraps a value.
  if (type == "constexpr" && hasAttr(value, "value")) return toConstexpr(value.attr("value"), kernel, param);
  // A torch dtype (torchao passes out_dtype=torch.float32 to a constexpr; Triton takes any value there):
  // the dtype of the same name, as a tensor of that dtype would have.
  if (type == "dtype" && !hasAttr(value, "name")) {
    const std::string text = py::str(value);
    if (text.starts_with("torch."))
      if (std::optional<ScalarType> t = torchDtype(text)) return ConstexprValue::ofDType(*t);
  }
  // A triton.language / tessera.language dtype (OUT_DTYPE=tl.float16): its .name is "fp16", "int32", ...
  if (type == "dtype" && hasAttr(value, "name")) {
    py::object name = value.attr("name");
    if (py::isinstance<py::str>(name))
      if (std::optional<ConstexprValue> d = ConstexprValue::ofDTypeName(name.cast<std::string>())) return *d;
    return bad("is the dtype " + std::string(py::str(value)) + ", which tessera does not support (supported: " +
               "int1, int8 .. int64, uint8 .. uint64, float16, bfloat16, float32, float64, float8e4nv, float8e5)");
  }
  // tl.PropagateNan.ALL (tessera's or Triton's enum): its member name.
  if (type == "PropagateNan" && hasAttr(value, "name")) {
    py::object name = value.attr("name");
    if (py::isinstance<py::str>(name))
      if (std::optional<ConstexprValue> e = ConstexprValue::ofEnumMember(type, name.cast<std::string>())) return *e;
  }
  // A tuple or list of constexprs (`out_shape=(8, 8)`): Triton's tuple constexpr.
  if (PyTuple_Check(o) || PyList_Check(o)) {
    std::vector<ConstexprValue> elems;
    for (py::handle item : value) elems.push_back(toConstexpr(item, kernel, param));
    ConstexprValue t = ConstexprValue::ofTuple(std::move(elems));
    if (PyTuple_Check(o)) t.fields = namedTupleFields(value);
    return t;
  }
  if (hasAttr(value, "data_ptr") || hasAttr(value, "__cuda_array_interface__") || hasAttr(value, "__dlpack__"))
    return bad("is a tensor; tl.constexpr parameters take ints, floats, bools, strings, dtypes, tuples or None");
  if (isNumpyBool(value)) return ConstexprValue::ofBool(PyObject_IsTrue(o) == 1);
  if (PyIndex_Check(o)) {
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!i) throw py::error_already_set();
    return toConstexpr(i, kernel, param);
  }
  if (hasAttr(value, "__float__")) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return ConstexprValue::ofFloat(d);
  }
  return bad("has unsupported type '" + typeName(value) +
             "'; tl.constexpr parameters take ints, floats, bools, strings, dtypes, tuples or None");
}

namespace {

// A tuple leaf Triton specialises as a constexpr: tl.constexpr(v), a string, a dtype, an enum member.
bool isConstexprLeaf(py::handle value) {
  PyObject *o = value.ptr();
  if (PyUnicode_Check(o)) return true;
  if (PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o)) return false;
  const std::string type = py::str(py::type::handle_of(value).attr("__name__"));
  return (type == "constexpr" && hasAttr(value, "value")) || type == "dtype" || type == "PropagateNan";
}

} // namespace

ConstexprValue walkTupleArgument(py::handle value, const std::string &kernel, const std::string &label,
                                 const std::function<void(py::handle, const std::string &)> &runtimeLeaf) {
  PyObject *o = value.ptr();
  if (PyTuple_Check(o)) {
    std::vector<ConstexprValue> elems;
    Py_ssize_t n = PyTuple_GET_SIZE(o);
    for (Py_ssize_t i = 0; i < n; ++i)
      elems.push_back(walkTupleArgument(PyTuple_GET_ITEM(o, i), kernel, label + "[" + std::to_string(i) + "]",
                                        runtimeLeaf));
    ConstexprValue t = ConstexprValue::ofTuple(std::move(elems));
    t.fields = namedTupleFields(value);
    return t;
  }
  if (o == Py_None) return ConstexprValue::none();
  if (isConstexprLeaf(value)) return toConstexpr(value, kernel, label);
  runtimeLeaf(value, label);
  return ConstexprValue::runtime();
}

py::object fromConstexpr(const ConstexprValue &value) {
  switch (value.kind) {
  case ConstexprValue::Kind::Int:
    if (fitsInt64(value.intValue)) return py::int_(static_cast<int64_t>(value.intValue));
    return py::reinterpret_steal<py::object>(PyLong_FromString(constIntToString(value.intValue).c_str(), nullptr, 10));
  case ConstexprValue::Kind::Float: return py::float_(value.floatValue);
  case ConstexprValue::Kind::Bool: return py::bool_(value.intValue != 0);
  case ConstexprValue::Kind::String: return py::str(value.stringValue);
  case ConstexprValue::Kind::DType: return py::module_::import("tessera.language").attr(value.stringValue.c_str());
  case ConstexprValue::Kind::Enum: { // "PropagateNan.ALL"
    size_t dot = value.stringValue.find('.');
    return py::module_::import("tessera.language")
        .attr(value.stringValue.substr(0, dot).c_str())
        .attr(value.stringValue.substr(dot + 1).c_str());
  }
  case ConstexprValue::Kind::Tuple: {
    py::tuple out(value.elems.size());
    for (size_t i = 0; i < value.elems.size(); ++i) out[i] = fromConstexpr(value.elems[i]);
    if (value.fields.empty()) return std::move(out);
    // A NamedTuple: one of the same field names, which toConstexpr reads back.
    py::list names;
    for (const std::string &f : value.fields) names.append(py::str(f));
    py::object type = py::module_::import("collections").attr("namedtuple")("NamedTuple", names);
    return type(*out);
  }
  case ConstexprValue::Kind::Runtime: return py::ellipsis(); // a tuple's leaf passed at run time
  case ConstexprValue::Kind::None: break;
  }
  return py::none();
}

} // namespace tessera::python
