// tessera._C.TensorDescriptorBase, the C base class of tessera.TensorDescriptor
// (python/tessera/tensor_descriptor.py): a TMA tensor descriptor argument, as
// Triton's triton.tools.tensor_descriptor.TensorDescriptor:
//
//   desc = tessera.TensorDescriptor(x, shape=[M, K], strides=[K, 1], block_shape=[128, 64])
//   kernel[grid](desc, ...)      # the kernel's parameter is tensordesc<bf16[128,64]>
//
// A plain CPython type so that the launch path reads it with one type check
// and no attribute lookups. Everything is read once, when the descriptor is
// made (base.data_ptr(), base.dtype, base.device), and base, shape and
// strides are read-only afterwards: the first launch checks them and encodes
// the 128-byte CUtensorMap (runtime/TensorMap.h), which every later launch
// passes as it is. block_shape may be assigned (an autotuner's pre_hook sets
// it per config, as with Triton's descriptors): a different block is encoded
// again by the next launch. The map sits 64-byte aligned inside the object:
// cuLaunchKernel's kernelParams entry for the parameter points at it.
#include "JitKernel.h"

#include "runtime/Driver.h"
#include "runtime/TensorMap.h"

#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace tessera::python {

namespace {

struct DescObject {
  PyObject_HEAD
  PyObject *base;    // strong references (null only while being made or cleared)
  PyObject *dtype;   // base.dtype
  PyObject *shape;   // tuples of ints
  PyObject *strides;
  PyObject *block;
  TensorDesc desc;   // constructed in place by descNew
  unsigned char storage[rt::kTensorMapBytes + rt::kTensorMapAlign - 1]; // desc.map: its aligned part
};

extern PyTypeObject DescType;

bool hasAttr(PyObject *o, const char *name) { return PyObject_HasAttrString(o, name) == 1; }

std::string typeNameOf(PyObject *o) { return Py_TYPE(o)->tp_name; }

// A sequence of ints as int64s, and the same as a tuple of Python ints.
bool readInts(PyObject *seq, const char *what, std::vector<int64_t> &out, PyObject **tuple) {
  PyObject *fast = PySequence_Fast(seq, "");
  if (!fast) {
    PyErr_Format(PyExc_TypeError, "TensorDescriptor: %s must be a sequence of ints, got %s", what,
                 Py_TYPE(seq)->tp_name);
    return false;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject *t = PyTuple_New(n);
  if (!t) {
    Py_DECREF(fast);
    return false;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
    PyObject *index = PyBool_Check(item) ? nullptr : PyNumber_Index(item);
    if (!index) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "TensorDescriptor: %s[%zd] must be an int, got %s", what, i, Py_TYPE(item)->tp_name);
      Py_DECREF(t), Py_DECREF(fast);
      return false;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow) {
      PyErr_Format(PyExc_ValueError, "TensorDescriptor: %s[%zd] = %S does not fit in 64 bits", what, i, index);
      Py_DECREF(index), Py_DECREF(t), Py_DECREF(fast);
      return false;
    }
    out.push_back(v);
    PyTuple_SET_ITEM(t, i, index); // steals the reference
  }
  Py_DECREF(fast);
  *tuple = t;
  return true;
}

// base.device: a CUDA ordinal, or the device type when it is not CUDA.
void readDevice(PyObject *base, TensorDesc &d) {
  if (!hasAttr(base, "device")) return; // a bare pointer holder: assume device memory
  py::object device = py::reinterpret_borrow<py::object>(base).attr("device");
  std::string type = hasAttr(device.ptr(), "type") ? std::string(py::str(device.attr("type")))
                                                   : std::string(py::str(device));
  if (type != "cuda") {
    d.hostDevice = type;
    return;
  }
  if (hasAttr(device.ptr(), "index")) {
    py::object index = device.attr("index");
    if (!index.is_none()) d.device = index.cast<int>();
  }
}

PyObject *descNew(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static const char *names[] = {"base", "shape", "strides", "block_shape", "padding", nullptr};
  PyObject *base = nullptr, *shape = nullptr, *strides = nullptr, *block = nullptr;
  const char *padding = "zero";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|s:TensorDescriptor", const_cast<char **>(names), &base, &shape,
                                   &strides, &block, &padding))
    return nullptr;
  if (std::strcmp(padding, "zero") != 0 && std::strcmp(padding, "nan") != 0) {
    PyErr_Format(PyExc_ValueError, "TensorDescriptor: Illegal value for padding: '%s' (it is 'zero' or 'nan')", padding);
    return nullptr;
  }
  auto *self = reinterpret_cast<DescObject *>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  new (&self->desc) TensorDesc();
  TensorDesc &d = self->desc;
  const uintptr_t room = reinterpret_cast<uintptr_t>(self->storage);
  d.map = reinterpret_cast<unsigned char *>((room + rt::kTensorMapAlign - 1) / rt::kTensorMapAlign * rt::kTensorMapAlign);
  Py_INCREF(base);
  self->base = base;
  d.nanPadding = std::strcmp(padding, "nan") == 0;
  try {
    const bool array = !hasAttr(base, "data_ptr") && hasAttr(base, "__array_interface__"); // numpy: interpret mode
    if ((!hasAttr(base, "data_ptr") && !array) || !hasAttr(base, "dtype"))
      throw py::type_error("TensorDescriptor: base must be a tensor (with .data_ptr() and .dtype), got " +
                           typeNameOf(base));
    if (array) {
      py::object data = py::reinterpret_borrow<py::object>(base).attr("__array_interface__")["data"];
      d.address = py::cast<uint64_t>(py::reinterpret_borrow<py::tuple>(data)[0]);
      d.hostDevice = "cpu";
    } else {
      py::object pointer = py::reinterpret_borrow<py::object>(base).attr("data_ptr")();
      if (!addressValue(pointer.ptr(), d.address)) throw py::error_already_set();
    }
    self->dtype = PyObject_GetAttrString(base, "dtype");
    if (!self->dtype) throw py::error_already_set();
    d.dtypeName = py::str(self->dtype);
    if (std::optional<ir::ScalarType> t = dtypeFromName(d.dtypeName)) d.scalar = static_cast<int>(*t);
    else if (std::optional<ir::ScalarType> n = dtypeFromName("torch." + d.dtypeName)) d.scalar = static_cast<int>(*n);
    if (!array) readDevice(base, d);
    PyObject *module = PyObject_GetAttrString(reinterpret_cast<PyObject *>(Py_TYPE(base)), "__module__");
    if (module && PyUnicode_Check(module)) d.torch = std::string_view(PyUnicode_AsUTF8(module)).starts_with("torch");
    Py_XDECREF(module);
    PyErr_Clear();
    if (!readInts(shape, "shape", d.shape, &self->shape) || !readInts(strides, "strides", d.strides, &self->strides) ||
        !readInts(block, "block_shape", d.block, &self->block))
      throw py::error_already_set();
  } catch (py::error_already_set &e) {
    e.restore();
    Py_DECREF(self);
    return nullptr;
  } catch (const std::exception &e) {
    // pybind11's exception types (type_error, ...) set their own Python class.
    if (auto *p = dynamic_cast<const py::builtin_exception *>(&e)) p->set_error();
    else PyErr_SetString(PyExc_RuntimeError, e.what());
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject *>(self);
}

int descTraverse(PyObject *o, visitproc visit, void *arg) {
  auto *self = reinterpret_cast<DescObject *>(o);
  Py_VISIT(self->base);
  Py_VISIT(self->dtype);
  Py_VISIT(self->shape);
  Py_VISIT(self->strides);
  Py_VISIT(self->block);
  return 0;
}

int descClear(PyObject *o) {
  auto *self = reinterpret_cast<DescObject *>(o);
  Py_CLEAR(self->base);
  Py_CLEAR(self->dtype);
  Py_CLEAR(self->shape);
  Py_CLEAR(self->strides);
  Py_CLEAR(self->block);
  return 0;
}

void descDealloc(PyObject *o) {
  PyObject_GC_UnTrack(o);
  descClear(o);
  reinterpret_cast<DescObject *>(o)->desc.~TensorDesc();
  Py_TYPE(o)->tp_free(o);
}

PyObject *field(PyObject *value) { return Py_NewRef(value ? value : Py_None); }

PyObject *getBase(PyObject *o, void *) { return field(reinterpret_cast<DescObject *>(o)->base); }
PyObject *getDtype(PyObject *o, void *) { return field(reinterpret_cast<DescObject *>(o)->dtype); }
PyObject *getShape(PyObject *o, void *) { return field(reinterpret_cast<DescObject *>(o)->shape); }
PyObject *getStrides(PyObject *o, void *) { return field(reinterpret_cast<DescObject *>(o)->strides); }
PyObject *getBlock(PyObject *o, void *) { return field(reinterpret_cast<DescObject *>(o)->block); }
int setBlock(PyObject *o, PyObject *value, void *) {
  auto *self = reinterpret_cast<DescObject *>(o);
  if (!value) {
    PyErr_SetString(PyExc_AttributeError, "TensorDescriptor: block_shape cannot be deleted");
    return -1;
  }
  std::vector<int64_t> block;
  PyObject *tuple = nullptr;
  if (!readInts(value, "block_shape", block, &tuple)) return -1;
  if (block != self->desc.block) {
    self->desc.block = std::move(block);
    self->desc.encoded = false; // the next launch checks and encodes the new box
  }
  Py_SETREF(self->block, tuple);
  return 0;
}

PyObject *getPadding(PyObject *o, void *) {
  return PyUnicode_FromString(reinterpret_cast<DescObject *>(o)->desc.nanPadding ? "nan" : "zero");
}

PyObject *getTensorMap(PyObject *o, void *) {
  const TensorDesc &d = reinterpret_cast<DescObject *>(o)->desc;
  if (!d.encoded) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(reinterpret_cast<const char *>(d.map), rt::kTensorMapBytes);
}

PyGetSetDef descGetSet[] = {
    {"base", getBase, nullptr, "The tensor described (kept alive by the descriptor).", nullptr},
    {"dtype", getDtype, nullptr, "base.dtype", nullptr},
    {"shape", getShape, nullptr, "The tensor's shape in elements, outermost first (a tuple).", nullptr},
    {"strides", getStrides, nullptr, "The tensor's strides in elements, outermost first (a tuple).", nullptr},
    {"block_shape", getBlock, setBlock,
     "The block one load reads (a tuple): the kernel's tensordesc<DTYPE[...]>. Assignable (re-encoded by the next "
     "launch when it changes).",
     nullptr},
    {"padding", getPadding, nullptr, "What out-of-bounds elements read as: 'zero' or 'nan'.", nullptr},
    {"tensor_map", getTensorMap, nullptr,
     "The encoded 128-byte CUtensorMap (bytes), or None before the first launch encodes it.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject DescType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "tessera._C.TensorDescriptorBase";
  t.tp_doc = "TensorDescriptorBase(base, shape, strides, block_shape): a TMA tensor descriptor argument "
             "(tessera.TensorDescriptor is the class to use).";
  t.tp_basicsize = sizeof(DescObject);
  t.tp_dealloc = descDealloc;
  t.tp_traverse = descTraverse;
  t.tp_clear = descClear;
  t.tp_getset = descGetSet;
  t.tp_new = descNew;
  t.tp_free = PyObject_GC_Del;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  return t;
}();

} // namespace

TensorDesc *tensorDescOf(PyObject *value) {
  if (PyObject_TypeCheck(value, &DescType)) [[likely]]
    return &reinterpret_cast<DescObject *>(value)->desc;
  if (std::strcmp(_PyType_Name(Py_TYPE(value)), "TensorDescriptor") != 0 || !hasAttr(value, "block_shape") ||
      !hasAttr(value, "base"))
    return nullptr;
  static PyObject *adopt = [] { // tessera.tensor_descriptor._adopt, kept for the process
    py::object f = py::module_::import("tessera.tensor_descriptor").attr("_adopt");
    return f.release().ptr();
  }();
  PyObject *made = PyObject_CallOneArg(adopt, value);
  if (!made) throw py::error_already_set();
  TensorDesc *d = PyObject_TypeCheck(made, &DescType) ? &reinterpret_cast<DescObject *>(made)->desc : nullptr;
  Py_DECREF(made); // kept alive by `value`, which holds it
  return d;
}

std::string tensorDescLabel(const std::string &kernel, const std::string &param, size_t index, size_t count) {
  return kernel + "(): tensor descriptor argument '" + param + "' (parameter " + std::to_string(index + 1) + " of " +
         std::to_string(count) + ")";
}

void encodeTensorDesc(TensorDesc &d, const std::string &kernel, const std::string &param, size_t index,
                      size_t count) {
  auto label = [&] { return tensorDescLabel(kernel, param, index, count); };
  if (!d.hostDevice.empty())
    throw py::type_error(label() + ": its base is a " + (d.hostDevice == "cpu" ? std::string("CPU") : d.hostDevice) +
                         " tensor; tessera kernels need CUDA tensors");
  if (d.scalar < 0 || rt::tensorMapDataType(static_cast<ir::ScalarType>(d.scalar)) < 0)
    throw py::type_error(label() + ": dtype " + d.dtypeName + " is not supported (TMA copies fp16, bf16, fp32, "
                                   "fp64, fp8 and integers of 8 to 64 bits)");
  // A block dimension over 256 (Triton takes them): the kernel reads such blocks through
  // pointers (ir::tmaCopiesBlock), so the map stays zero; the rules are checked all the same.
  std::vector<int64_t> box = d.block;
  bool wide = false;
  for (size_t i = 0; i < box.size(); ++i)
    if (box[i] > 256 && !(box[i] & (box[i] - 1))) box[i] = 256, wide = true;
  rt::TensorMapArgs args;
  try {
    args = rt::tensorMapArgs(d.address, static_cast<ir::ScalarType>(d.scalar), d.shape, d.strides, box,
                             d.nanPadding);
  } catch (const std::invalid_argument &e) {
    throw py::value_error(label() + ": " + e.what());
  }
  if (wide) {
    std::memset(d.map, 0, rt::kTensorMapBytes);
    d.encoded = true;
    return;
  }
  try {
    rt::encodeTensorMap(args, d.map, d.device >= 0 ? d.device : rt::kCurrentDevice);
  } catch (const rt::DriverNotFoundError &) {
    throw; // no driver at all: the usual message
  } catch (const rt::DriverError &e) {
    throw rt::DriverError(label() + ": " + e.what(), e.code());
  }
  d.encoded = true;
}

void registerTensorDescriptor(py::module_ &m) {
  if (PyType_Ready(&DescType) < 0) throw py::error_already_set();
  Py_INCREF(&DescType);
  m.add_object("TensorDescriptorBase", reinterpret_cast<PyObject *>(&DescType));
}

} // namespace tessera::python
