// C++ exceptions → the Python exception classes of tessera/errors.py:
//   tessera::CompileError           → tessera.CompilationError (.path, .line, .col)
//   rt::DriverNotFoundError         → tessera.DriverNotFoundError (a DriverError)
//   rt::DriverError                 → tessera.DriverError (RuntimeError; .code = CUresult)
//   rt::Error (launch/load misuse)  → tessera.LaunchError (RuntimeError)
//   codegen::OutOfResources         → tessera.OutOfResources (a LaunchError; .required, .limit, .name)
// Everything else keeps pybind11's mapping (std::invalid_argument → ValueError, ...).
#include "Bindings.h"

#include "compiler/codegen/OutOfResources.h"
#include "runtime/Driver.h"

namespace tessera::python {

namespace {

py::object errorClass(const char *name) {
  // Looked up on each error (errors are rare): survives module reloads.
  return py::module_::import("tessera.errors").attr(name);
}

// Builds tessera.errors.<name>(*args) and sets it as the Python error. A
// failure while doing so (never expected) leaves that failure set instead.
template <typename... Args>
void raise(const char *name, Args &&...args) {
  try {
    py::object cls = errorClass(name);
    py::object instance = cls(std::forward<Args>(args)...);
    PyErr_SetObject(cls.ptr(), instance.ptr());
  } catch (py::error_already_set &e) {
    e.restore();
  }
}

// "path:12:5: error: ..." → "path" given line 12, column 5.
std::string pathOf(const std::string &message, SourceLoc loc) {
  std::string marker = ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
  size_t at = message.find(marker);
  if (loc.line == 0 || at == std::string::npos) {
    size_t colon = message.find(": error:");
    return colon == std::string::npos ? std::string() : message.substr(0, colon);
  }
  return message.substr(0, at);
}

} // namespace

void registerErrors(py::module_ &m) {
  // Fail at import if tessera/errors.py is missing, not at the first error.
  (void)py::module_::import("tessera.errors");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CompileError &e) {
      SourceLoc loc = e.loc();
      std::string message = e.what();
      py::object path = py::str(pathOf(message, loc));
      py::object line = loc.line ? py::object(py::int_(loc.line)) : py::object(py::none());
      py::object col = loc.line ? py::object(py::int_(loc.col)) : py::object(py::none());
      raise("CompilationError", py::str(message), path, line, col);
    } catch (const rt::DriverNotFoundError &e) {
      raise("DriverNotFoundError", py::str(e.what()), e.code());
    } catch (const rt::DriverError &e) {
      raise("DriverError", py::str(e.what()), e.code());
    } catch (const rt::Error &e) {
      raise("LaunchError", py::str(e.what()));
    } catch (const codegen::OutOfResources &e) {
      raise("OutOfResources", e.required, e.limit, py::str(e.resource), py::str(e.what()));
    }
  });
  m.attr("_errors_registered") = true;
}

} // namespace tessera::python
