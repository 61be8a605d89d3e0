// `kernel[grid](*args, **kwargs)` without pybind11 on the way: two plain
// CPython types with vectorcall, so that a launch makes no argument tuple or
// kwargs dict and skips pybind11's overload dispatch (a few hundred ns).
//
//   launcher = tessera._C.KernelLauncher(jit_kernel_handle)   # once per @jit function
//   launcher[grid]            -> a BoundLaunch (holds the grid)
//   launcher[grid](*a, **k)   -> launchVector(...)            # the launch; returns the CompiledKernel
//   launcher(grid, *a, **k)   -> the same, without the intermediate object
//
// and JitFunctionBase, the C base class of tessera.JITFunction, whose
// `kernel[grid]` is a C slot: once the Python side has set `kernel._direct`
// to its KernelLauncher (a kernel that is not interpreted), `kernel[grid]`
// runs no Python at all and hands out the same BoundLaunch again for the
// same grid tuple; otherwise it calls `kernel._subscript(grid)`.
//
// A kernel whose constexprs may receive @jit functions (to compose it with:
// jit.py) gets a guarded launcher, KernelLauncher(handle, fallback): a launch
// whose arguments are all plain values (None, int, float, bool, str, torch
// tensors), which no composition can change, goes straight to C++; any other
// argument (a function, a tuple, an object of another type) makes it call
// fallback(grid, *args, **kwargs), Python's own launch, instead.
//
// C++ exceptions are turned into Python ones by pybind11's registered
// translators (Errors.cpp), through a pybind11 function that rethrows them.
#include "JitKernel.h"

#include <exception>

namespace tessera::python {

namespace {

struct LauncherObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *handle; // the pybind11 JitKernel (owns the C++ object)
  JitKernel *kernel;
  PyObject *fallback; // null, or what launches arguments that are not all plain values
};

struct BoundObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  LauncherObject *launcher;
  PyObject *grid;
};

thread_local std::exception_ptr pending; // for _rethrow_pending
PyObject *rethrowFunction = nullptr;     // tessera._C._rethrow_pending (leaked)

// Sets the Python error for the exception being handled, as pybind11 would.
PyObject *raiseCurrent() {
  pending = std::current_exception();
  PyObject *result = PyObject_CallNoArgs(rethrowFunction); // raises the translated error
  pending = nullptr;
  Py_XDECREF(result);
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "tessera: an exception was lost in the launch path");
  return nullptr;
}

// A value no composition with @jit functions looks into (jit.py's split_function_args leaves it as it is).
bool plainValue(PyObject *o) {
  if (o == Py_None || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) || PyUnicode_CheckExact(o))
    return true;
  return torchTensorType(Py_TYPE(o)) != nullptr;
}

// Whether a guarded launcher's arguments (positional, then kwnames' values) are all plain values.
bool plainArguments(PyObject *const *args, size_t nargs, PyObject *kwnames) {
  const size_t total = nargs + (kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0);
  for (size_t i = 0; i < total; ++i)
    if (!plainValue(args[i])) return false;
  return true;
}

// fallback(grid, *args, **kwargs) (a new reference, or null with the error set).
PyObject *callFallback(PyObject *fallback, PyObject *grid, PyObject *const *args, size_t nargs, PyObject *kwnames) {
  const size_t total = nargs + (kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0);
  std::vector<PyObject *> all(total + 1);
  all[0] = grid;
  std::copy(args, args + total, all.begin() + 1);
  return PyObject_Vectorcall(fallback, all.data(), nargs + 1, kwnames);
}

PyObject *launchOrRaise(JitKernel &k, PyObject *grid, PyObject *const *args, size_t nargs, PyObject *kwnames) {
  try {
    return launchVector(k, grid, args, nargs, kwnames); // the specialisation's CompiledKernel, as Triton's run
  } catch (py::error_already_set &e) {
    e.restore();
    return nullptr;
  } catch (...) {
    return raiseCurrent();
  }
}

PyObject *boundCall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  auto *b = reinterpret_cast<BoundObject *>(self);
  const size_t n = PyVectorcall_NARGS(nargsf);
  if (PyObject *fallback = b->launcher->fallback; fallback && !plainArguments(args, n, kwnames)) [[unlikely]]
    return callFallback(fallback, b->grid, args, n, kwnames);
  return launchOrRaise(*b->launcher->kernel, b->grid, args, n, kwnames);
}

PyObject *launcherCall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  auto *l = reinterpret_cast<LauncherObject *>(self);
  size_t n = PyVectorcall_NARGS(nargsf);
  if (n < 1) {
    PyErr_SetString(PyExc_TypeError, "KernelLauncher(grid, *args, **kwargs) needs the grid first");
    return nullptr;
  }
  if (l->fallback && !plainArguments(args + 1, n - 1, kwnames)) [[unlikely]]
    return callFallback(l->fallback, args[0], args + 1, n - 1, kwnames);
  return launchOrRaise(*l->kernel, args[0], args + 1, n - 1, kwnames);
}

void boundDealloc(PyObject *self) {
  auto *b = reinterpret_cast<BoundObject *>(self);
  Py_XDECREF(reinterpret_cast<PyObject *>(b->launcher));
  Py_XDECREF(b->grid);
  Py_TYPE(self)->tp_free(self);
}

void launcherDealloc(PyObject *self) {
  auto *l = reinterpret_cast<LauncherObject *>(self);
  Py_XDECREF(l->handle);
  Py_XDECREF(l->fallback);
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject BoundType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "tessera._C.BoundLaunch";
  t.tp_doc = "kernel[grid]: calling it launches the kernel.";
  t.tp_basicsize = sizeof(BoundObject);
  t.tp_dealloc = boundDealloc;
  t.tp_vectorcall_offset = offsetof(BoundObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  return t;
}();

PyObject *launcherSubscript(PyObject *self, PyObject *grid) {
  BoundObject *b = PyObject_New(BoundObject, &BoundType);
  if (!b) return nullptr;
  b->vectorcall = boundCall;
  Py_INCREF(self);
  b->launcher = reinterpret_cast<LauncherObject *>(self);
  Py_INCREF(grid);
  b->grid = grid;
  return reinterpret_cast<PyObject *>(b);
}

PyMappingMethods launcherMapping = {nullptr, launcherSubscript, nullptr};

PyObject *launcherNew(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *handle = nullptr, *fallback = nullptr;
  static const char *names[] = {"handle", "fallback", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:KernelLauncher", const_cast<char **>(names), &handle,
                                   &fallback))
    return nullptr;
  if (fallback == Py_None) fallback = nullptr;
  if (fallback && !PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "KernelLauncher(handle, fallback): fallback must be callable");
    return nullptr;
  }
  JitKernel *kernel = nullptr;
  try {
    kernel = py::cast<JitKernel *>(py::handle(handle));
  } catch (...) {
    PyErr_SetString(PyExc_TypeError, "KernelLauncher() takes a tessera._C.JitKernel");
    return nullptr;
  }
  auto *l = reinterpret_cast<LauncherObject *>(type->tp_alloc(type, 0));
  if (!l) return nullptr;
  l->vectorcall = launcherCall;
  Py_INCREF(handle);
  l->handle = handle;
  l->kernel = kernel;
  l->fallback = Py_XNewRef(fallback);
  return reinterpret_cast<PyObject *>(l);
}

PyTypeObject LauncherType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "tessera._C.KernelLauncher";
  t.tp_doc = "KernelLauncher(handle, fallback=None): launcher[grid](*args, **kwargs) launches handle's kernel; "
             "with a fallback, arguments that are not all None/int/float/bool/str/torch tensors go to "
             "fallback(grid, *args, **kwargs) instead.";
  t.tp_basicsize = sizeof(LauncherObject);
  t.tp_dealloc = launcherDealloc;
  t.tp_vectorcall_offset = offsetof(LauncherObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_as_mapping = &launcherMapping;
  t.tp_new = launcherNew;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  return t;
}();

// ---- JitFunctionBase ---------------------------------------------------------

struct JitBaseObject {
  PyObject_HEAD
  PyObject *direct;    // a KernelLauncher, or null: ask _subscript
  PyObject *lastGrid;  // the grid tuple lastBound was made for (kept alive: its id stays unique)
  PyObject *lastBound; // a BoundLaunch of `direct` for lastGrid
};

void jitBaseForget(JitBaseObject *j) {
  Py_CLEAR(j->lastBound);
  Py_CLEAR(j->lastGrid);
}

PyObject *jitBaseSubscript(PyObject *self, PyObject *grid) {
  auto *j = reinterpret_cast<JitBaseObject *>(self);
  if (!j->direct) {
    static PyObject *const sSubscript = PyUnicode_InternFromString("_subscript"); // leaked
    return PyObject_CallMethodOneArg(self, sSubscript, grid);
  }
  if (grid == j->lastGrid) {
    Py_INCREF(j->lastBound);
    return j->lastBound;
  }
  if (j->lastBound && Py_REFCNT(j->lastBound) == 1 && PyTuple_CheckExact(grid)) {
    // A new grid tuple (kernel[(n,)] builds one per call) and nobody but us
    // holds the previous BoundLaunch: it takes the new grid instead of a new
    // object being made (and the old one freed).
    auto *b = reinterpret_cast<BoundObject *>(j->lastBound);
    Py_INCREF(grid);
    Py_SETREF(b->grid, grid);
    Py_INCREF(grid);
    Py_SETREF(j->lastGrid, grid);
    Py_INCREF(j->lastBound);
    return j->lastBound;
  }
  PyObject *bound = launcherSubscript(j->direct, grid);
  // Only tuples are remembered: they are immutable and small (a callable
  // grid could be a closure over large tensors, which must not be kept).
  if (bound && PyTuple_CheckExact(grid)) {
    Py_INCREF(grid);
    Py_INCREF(bound);
    Py_XSETREF(j->lastGrid, grid);
    Py_XSETREF(j->lastBound, bound);
  }
  return bound;
}

PyMappingMethods jitBaseMapping = {nullptr, jitBaseSubscript, nullptr};

PyObject *jitBaseGetDirect(PyObject *self, void *) {
  PyObject *d = reinterpret_cast<JitBaseObject *>(self)->direct;
  return Py_NewRef(d ? d : Py_None);
}

int jitBaseSetDirect(PyObject *self, PyObject *value, void *) {
  auto *j = reinterpret_cast<JitBaseObject *>(self);
  if (value && value != Py_None && !PyObject_TypeCheck(value, &LauncherType)) {
    PyErr_SetString(PyExc_TypeError, "_direct must be a tessera._C.KernelLauncher or None");
    return -1;
  }
  jitBaseForget(j);
  Py_XSETREF(j->direct, value && value != Py_None ? Py_NewRef(value) : nullptr);
  return 0;
}

PyGetSetDef jitBaseGetSet[] = {
    {"_direct", jitBaseGetDirect, jitBaseSetDirect,
     "The KernelLauncher kernel[grid] uses without calling _subscript (None: call it).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

void jitBaseDealloc(PyObject *self) {
  auto *j = reinterpret_cast<JitBaseObject *>(self);
  jitBaseForget(j);
  Py_CLEAR(j->direct);
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject JitBaseType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "tessera._C.JitFunctionBase";
  t.tp_doc = "Base of tessera.JITFunction: kernel[grid] in C (see FastLaunch.cpp).";
  t.tp_basicsize = sizeof(JitBaseObject);
  t.tp_dealloc = jitBaseDealloc;
  t.tp_as_mapping = &jitBaseMapping;
  t.tp_getset = jitBaseGetSet;
  t.tp_new = PyType_GenericNew;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  return t;
}();

} // namespace

void registerFastLaunch(py::module_ &m) {
  if (PyType_Ready(&BoundType) < 0 || PyType_Ready(&LauncherType) < 0 || PyType_Ready(&JitBaseType) < 0)
    throw py::error_already_set();
  Py_INCREF(&BoundType);
  Py_INCREF(&LauncherType);
  Py_INCREF(&JitBaseType);
  m.add_object("BoundLaunch", reinterpret_cast<PyObject *>(&BoundType));
  m.add_object("KernelLauncher", reinterpret_cast<PyObject *>(&LauncherType));
  m.add_object("JitFunctionBase", reinterpret_cast<PyObject *>(&JitBaseType));
  m.def("_rethrow_pending", [] {
    if (std::exception_ptr p = pending) std::rethrow_exception(p); // translated by pybind11's dispatcher
  });
  rethrowFunction = m.attr("_rethrow_pending").ptr();
  Py_INCREF(rethrowFunction);
}

} // namespace tessera::python
