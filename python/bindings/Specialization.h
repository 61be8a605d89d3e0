// Binding and specialisation: the half of the launch path (Launcher.cpp) that decides what a
// launch compiles for. The arguments are bound to the kernel's parameters (bind), and the full
// pass (specializeArgs) classifies each one as Triton does (pointer dtypes and 16-byte
// alignment, ints equal to 1 or divisible by 16, constexpr values, num_warps) into the key
// and the signature a compile needs; the hot pass (Launcher.cpp, packArguments) writes the
// same key bytes with the append* functions here.
#pragma once

#include "JitKernel.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::python {

struct Bound {
  // Per parameter (borrowed; null: not given, a constexpr's default): the
  // caller's own argument array when every parameter came positionally (no
  // copy), else `bound`, filled by bind().
  PyObject *const *positional = nullptr;
  InlineVec<PyObject *, 32> bound;
  unsigned numWarps = 4;
  unsigned numStages = 3;
  unsigned maxRegisters = 0;  // launch option maxnreg=... (0 or None: ptxas's choice)
  int fpFusion = -1;          // launch option enable_fp_fusion=... (-1: TESSERA_FP_FUSION)
  unsigned numCtas = 1;       // launch option num_ctas=... (accepted on sm_90+; one CTA per program all the same)
  bool cooperative = false;   // launch option launch_cooperative_grid=... (rt::LaunchFlags)
  bool pdl = false;           // launch option launch_pdl=... (rt::LaunchFlags::programmaticDependentLaunch)
  PyObject *stream = nullptr; // launch option stream=..., if given

  PyObject *const *values() const { return positional ? positional : bound.data(); }
};

std::string plural(size_t n, const char *word);
PyObject *interned(const char *s); // leaked: lives as long as the process

// args: positional values then the values of kwnames (a tuple or null).
Bound bind(const JitKernel &k, PyObject *const *args, size_t n, PyObject *kwnames);

// A (tuple, dict) call in vectorcall form: what the slower entry points use.
struct VectorArgs {
  std::vector<PyObject *> values;
  py::object kwnames; // a tuple, or None
  size_t nargs = 0;
  VectorArgs(const py::tuple &args, py::handle kwargs) {
    nargs = args.size();
    for (size_t i = 0; i < nargs; ++i) values.push_back(PyTuple_GET_ITEM(args.ptr(), i));
    if (kwargs && !kwargs.is_none() && py::len(kwargs)) {
      py::list names;
      for (auto item : py::reinterpret_borrow<py::dict>(kwargs)) {
        names.append(item.first);
        values.push_back(item.second.ptr());
      }
      kwnames = py::tuple(names);
    }
  }
  PyObject *kw() const { return kwnames ? kwnames.ptr() : nullptr; }
};

Bound bind(const JitKernel &k, const VectorArgs &v);

// ---- the key: the same bytes from both passes
void appendArgKey(KeyBuffer &key, uint8_t scalar, uint8_t flags);
// A None for a runtime parameter (specialised as the constexpr None, with no launch slot).
void appendNoneArgKey(KeyBuffer &key);
// A tuple for a runtime parameter: its shape (walkTupleArgument) and the key bytes of its leaves passed at
// run time, in order.
void appendTupleArgKey(KeyBuffer &key, const ConstexprValue &shape, const KeyBuffer &leaves);
// The common constexprs (ints, bools, None, floats) without a ConstexprValue.
void appendConstexprFast(KeyBuffer &key, PyObject *o, const JitKernel &k, const std::string &param);
void appendOptions(KeyBuffer &key, const Bound &b);
[[noreturn]] void raiseMixedDevices(const JitKernel &k, const std::string &first, int firstDevice,
                                    const std::string &other, int otherDevice);

struct Specialized {
  std::string key;
  std::vector<Arg> args;                                     // runtime arguments, in order
  std::vector<std::pair<size_t, ConstexprValue>> constexprs; // given constexprs (param index, value)
  int device = kUnknownDevice;
  bool torch = false;
};

// The full pass: every argument classified to an ArgSpec (what compiling needs).
Specialized specializeArgs(const JitKernel &k, const Bound &b);
// The kernel compiled for s on arch (from the kernel's own cache, else compiled or taken
// from the disk cache).
JitKernel::CompiledSlot &compiledFor(JitKernel &k, const Specialized &s, const Bound &b, const std::string &arch);
// The device of the arguments, else the current one.
int resolveDevice(int fromArgs);

// JitKernel's Python methods that specialise without launching (registerLauncher).
// warmup: the specialisation's Python object (compiledKernelOf), the one its launches return.
py::object warmup(JitKernel &k, py::tuple args, py::handle kwargs, const std::string &target);
py::tuple specialization(JitKernel &k, py::tuple args, py::handle kwargs);
// The disk cache's key for the kernel these arguments launch on `target`
// (what compileCached looks up): {"digest", "text", "path"}; None when the
// cache is off. Tests use it to plant an entry (a kernel the compiler cannot
// build yet, given as PTX).
py::object cacheKey(JitKernel &k, py::tuple args, py::handle kwargs, const std::string &target);

} // namespace tessera::python
