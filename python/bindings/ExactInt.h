// exactIntValue: the value of a Python int as a C long long, for the launch
// path (python/bindings/JitKernel.h). Needs only Python.h (a test can build it
// against any CPython).
#pragma once

#include <Python.h>

namespace tessera::python {

// The value of an exact int (PyLong_CheckExact) that fits in 64 signed bits;
// false, with no Python error set, when it does not. Reads CPython's digits
// directly for the sizes launches pass (small ints; pointers, below 2**60):
// the generic conversion loops over the digits with checks, ~50 instructions
// for a pointer. Any other size takes PyLong_AsLongLongAndOverflow.
inline bool exactIntValue(PyObject *o, long long &out) {
#if PY_VERSION_HEX >= 0x030C0000
  PyLongObject *l = reinterpret_cast<PyLongObject *>(o);
  if (PyUnstable_Long_IsCompact(l)) { // |value| < 2**30
    out = static_cast<long long>(PyUnstable_Long_CompactValue(l));
    return true;
  }
#if defined(_PyLong_NON_SIZE_BITS) && defined(_PyLong_SIGN_MASK) && PyLong_SHIFT == 30
  // 3.12+: lv_tag holds the digit count above _PyLong_NON_SIZE_BITS and the
  // sign below (0 positive, 1 zero, 2 negative).
  const uintptr_t tag = l->long_value.lv_tag;
  if (tag >> _PyLong_NON_SIZE_BITS == 2 && (tag & _PyLong_SIGN_MASK) != 1) {
    const digit *d = l->long_value.ob_digit;
    const long long magnitude = static_cast<long long>(d[0]) | static_cast<long long>(d[1]) << 30;
    out = (tag & _PyLong_SIGN_MASK) == 2 ? -magnitude : magnitude;
    return true;
  }
#endif
#elif PY_VERSION_HEX >= 0x030B0000 && PyLong_SHIFT == 30
  // 3.11: ob_size is the digit count, negative for negative values.
  const digit *d = reinterpret_cast<PyLongObject *>(o)->ob_digit;
  switch (Py_SIZE(o)) {
  case 0: out = 0; return true;
  case 1: out = static_cast<long long>(d[0]); return true;
  case -1: out = -static_cast<long long>(d[0]); return true;
  case 2: out = static_cast<long long>(d[0]) | static_cast<long long>(d[1]) << 30; return true;
  case -2: out = -(static_cast<long long>(d[0]) | static_cast<long long>(d[1]) << 30); return true;
  default: break;
  }
#endif
  int overflow = 0;
  out = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (out == -1 && PyErr_Occurred())) [[unlikely]] {
    PyErr_Clear();
    return false;
  }
  return true;
}

} // namespace tessera::python
