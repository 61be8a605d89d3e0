// tessera._C: the compiler and the runtime for Python. See Bindings.h for
// the files and python/CMakeLists.txt for how the extension is built and
// finds libtessera.so.
#include "Bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "tessera's C++ compiler and CUDA runtime (compile, specialise, cache, launch)";
  tessera::python::registerErrors(m);
  tessera::python::registerCompile(m);
  tessera::python::registerRuntime(m);
  tessera::python::registerLauncher(m);
  tessera::python::registerInterpreter(m);
  tessera::python::registerTensorDescriptor(m);
}
