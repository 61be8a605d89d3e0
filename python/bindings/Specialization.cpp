// Binding and specialisation (Specialization.h): JitKernel's parameters, bind(), the key
// bytes both passes over the arguments write, the full pass (specializeArgs) and the
// compile on a miss (compiledFor).
#include "Specialization.h"

#include "runtime/Cache.h"
#include "runtime/Driver.h"

namespace tessera::python {

JitKernel::JitKernel(std::string source, std::string path, uint32_t firstLine, std::string kernelName,
                     py::object defaults, py::object doNotSpecialize, py::object knownParams)
    : name(std::move(kernelName)) {
  file = makeSourceFile(std::move(source), std::move(path), firstLine);
  if (knownParams.is_none()) {
    params = kernelParameters(file, name);
  } else { // no parse: a new process's warm start (errors surface when compiling)
    for (py::handle p : knownParams) {
      py::tuple t = py::reinterpret_borrow<py::tuple>(p);
      params.push_back({t[0].cast<std::string>(), t[1].cast<bool>(), t[2].cast<bool>()});
    }
  }
  defaults_.resize(params.size());
  specialize.assign(params.size(), 1);
  for (size_t i = 0; i < params.size(); ++i) {
    index[params[i].name] = i;
    // Interned: keyword names at call sites are interned too, so lookups
    // compare pointers. Leaked on purpose (outlive the interpreter's teardown).
    paramNames.push_back(PyUnicode_InternFromString(params[i].name.c_str()));
    if (!params[i].isConstexpr) {
      ++numRuntime;
      appendJoined(runtimeNames, ", ", params[i].name);
    }
    appendJoined(allNames, ", ", params[i].name);
  }
  if (!defaults.is_none())
    for (auto item : py::reinterpret_borrow<py::dict>(defaults)) {
      auto it = index.find(py::str(item.first));
      if (it != index.end()) defaults_[it->second] = py::reinterpret_borrow<py::object>(item.second);
    }
  if (!doNotSpecialize.is_none())
    for (py::handle h : doNotSpecialize) {
      if (PyLong_Check(h.ptr())) {
        size_t i = h.cast<size_t>();
        if (i < params.size()) specialize[i] = 0;
      } else {
        auto it = index.find(py::str(h));
        if (it == index.end())
          throw py::value_error(name + "(): do_not_specialize names '" + std::string(py::str(h)) +
                                "', which is not a parameter");
        specialize[it->second] = 0;
      }
    }
}

namespace {

unsigned optionValue(py::handle v, const std::string &kernel, const char *what) {
  if (PyLong_CheckExact(v.ptr())) { // the common case, without a temporary
    long long n = PyLong_AsLongLong(v.ptr());
    if (n > 0 && n <= 1024) return static_cast<unsigned>(n);
    PyErr_Clear();
  }
  if (!PyIndex_Check(v.ptr()) || PyBool_Check(v.ptr()))
    throw py::type_error(kernel + "(): " + what + " must be an int, got " +
                         std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow || n <= 0 || n > 1024)
    throw py::value_error(kernel + "(): " + what + " must be a positive int, got " + std::string(py::str(v)));
  return static_cast<unsigned>(n);
}

} // namespace

// num_warps must be a power of 2 in 1..32 (the compiler's rule, checked here before the cache
// key): tessera.errors.NumWarpsError, a ValueError that is also the AssertionError Triton raises.
[[noreturn]] void numWarpsError(unsigned n) {
  py::object cls = py::module_::import("tessera.errors").attr("NumWarpsError");
  py::str message("num_warps must be a power of 2 between 1 and 32, got " + std::to_string(n));
  PyErr_SetObject(cls.ptr(), message.ptr());
  throw py::error_already_set();
}

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

PyObject *interned(const char *s) { return PyUnicode_InternFromString(s); }

void checkExternLibs(const std::string &kernel, py::handle value) {
  if (value.is_none()) return;
  if (!PyDict_Check(value.ptr()))
    throw py::type_error(kernel + "(): extern_libs must be a dict {library name: path}, got " +
                         std::string(Py_TYPE(value.ptr())->tp_name));
  for (auto item : py::reinterpret_borrow<py::dict>(value)) {
    std::string lib = py::str(item.first);
    if (lib != "libdevice")
      throw py::value_error(kernel + "(): extern_libs: library '" + lib +
                            "' is not supported (tessera links only libdevice, its own)");
  }
}

// Triton's other launch options that libraries pass: enable_fp_fusion (returned: 0 or 1),
// sanitize_overflow (checks only under debug), extern_libs (None or {"libdevice": path})
// (returned: -1); nullopt when `name` is none of them.
static std::optional<int> tritonLaunchOption(const JitKernel &k, std::string_view name, py::handle value) {
  auto flag = [&]() {
    int truth = PyObject_IsTrue(value.ptr());
    if (truth < 0) throw py::error_already_set();
    return truth;
  };
  if (name == "enable_fp_fusion") return flag();
  if (name == "sanitize_overflow") return flag(), -1;
  if (name == "extern_libs") return checkExternLibs(k.name, value), -1;
  return std::nullopt;
}

// args: positional values then the values of kwnames (a tuple or null).
Bound bind(const JitKernel &k, PyObject *const *args, size_t n, PyObject *kwnames) {
  static PyObject *const sNumWarps = interned("num_warps"), *const sNumStages = interned("num_stages"),
                         *const sStream = interned("stream"), *const sNumCtas = interned("num_ctas"),
                         *const sMaxnreg = interned("maxnreg"),
                         *const sCooperative = interned("launch_cooperative_grid"),
                         *const sPdl = interned("launch_pdl");
  Bound b;
  const size_t numParams = k.params.size();
  b.bound.assign(numParams, nullptr);
  PyObject **values = b.bound.data();
  if (n > numParams)
    throw py::type_error(k.name + "() takes " + plural(numParams, "argument") + " (" + k.allNames + ") but " +
                         std::to_string(n) + (n == 1 ? " was" : " were") + " given");
  for (size_t i = 0; i < n; ++i) values[i] = args[i];

  const size_t numKw = kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  for (size_t j = 0; j < numKw; ++j) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, j);
    PyObject *value = args[n + j];
    // Names are compared by pointer (call sites' keyword names are interned,
    // like paramNames and the option names); text is read only when no
    // pointer matches, and for the error messages.
    size_t param = numParams;
    for (size_t i = 0; i < numParams; ++i)
      if (k.paramNames[i] == key) {
        param = i;
        break;
      }
    std::string_view keyText;
    auto text = [&]() -> std::string_view {
      if (keyText.data()) return keyText;
      Py_ssize_t size = 0;
      const char *utf8 = PyUnicode_AsUTF8AndSize(key, &size);
      if (!utf8) throw py::error_already_set();
      return keyText = std::string_view(utf8, static_cast<size_t>(size));
    };
    if (param == numParams) {
      auto it = k.index.find(std::string(text()));
      if (it != k.index.end()) param = it->second;
    }
    // Is it a launch option? (A parameter named num_stages also sets the option, as in Triton.)
    auto isOption = [&](PyObject *interned, std::string_view name) {
      if (key == interned) return true;
      if (param != numParams && k.paramNames[param] == key) return false; // an interned parameter name
      return text() == name;
    };
    bool option = false;
    if (isOption(sNumWarps, "num_warps")) {
      b.numWarps = optionValue(value, k.name, "num_warps"), option = true;
      if (b.numWarps > 32 || (b.numWarps & (b.numWarps - 1))) numWarpsError(b.numWarps);
    }
    else if (isOption(sNumStages, "num_stages")) b.numStages = optionValue(value, k.name, "num_stages"), option = true;
    if (param != numParams) {
      if (values[param])
        throw py::type_error(k.name + "() got multiple values for argument '" + std::string(text()) + "'");
      values[param] = value;
    } else if (isOption(sStream, "stream")) {
      b.stream = value;
    } else if (isOption(sMaxnreg, "maxnreg")) {
      b.maxRegisters = value == Py_None ? 0 : optionValue(value, k.name, "maxnreg");
      if (!maxRegistersInRange(b.maxRegisters))
        throw py::value_error(k.name + "(): maxnreg must be between 16 and 255 registers a thread, got " +
                              std::to_string(b.maxRegisters));
    } else if (isOption(sNumCtas, "num_ctas")) {
      // Triton's num_ctas makes each program a cluster of CTAs sharing its block; what a program
      // computes does not change, and tessera runs it in one CTA (checked against the arch in compiledFor).
      b.numCtas = optionValue(value, k.name, "num_ctas");
      if (b.numCtas < 1 || b.numCtas > 16)
        throw py::value_error(k.name + "(): num_ctas must be between 1 and 16, got " + std::to_string(b.numCtas));
    } else if (isOption(sCooperative, "launch_cooperative_grid")) {
      const int truth = PyObject_IsTrue(value);
      if (truth < 0) throw py::error_already_set();
      b.cooperative = truth != 0;
    } else if (isOption(sPdl, "launch_pdl")) {
      const int truth = PyObject_IsTrue(value);
      if (truth < 0) throw py::error_already_set();
      b.pdl = truth != 0;
    } else if (std::optional<int> fusion = tritonLaunchOption(k, text(), value)) {
      if (*fusion >= 0) b.fpFusion = *fusion;
    } else if (!option) {
      throw py::type_error(k.name + "() got an unexpected keyword argument '" + std::string(text()) +
                           "' (its parameters: " + k.allNames + "; launch options: num_warps, num_stages, maxnreg, stream, "
                           "num_ctas, launch_cooperative_grid, launch_pdl, enable_fp_fusion)");
    }
  }

  std::string missingRuntime;
  const ParamInfo *missingConstexpr = nullptr;
  size_t givenRuntime = 0, missingCount = 0;
  for (size_t i = 0; i < numParams; ++i) {
    const ParamInfo &p = k.params[i];
    if (values[i]) {
      if (!p.isConstexpr) ++givenRuntime;
      continue;
    }
    if (p.isConstexpr) {
      PyObject *d = k.defaults_[i].ptr();
      // A number or string default is the value Python computed, as Triton binds it: the front-end
      // could not evaluate `FP8_MIN: tl.constexpr = torch.finfo(...).min` (vLLM) itself.
      if (d && (PyLong_CheckExact(d) || PyFloat_CheckExact(d) || PyBool_Check(d) || PyUnicode_CheckExact(d))) {
        values[i] = d;
        continue;
      }
      if (!p.hasDefault && !d && !missingConstexpr) missingConstexpr = &p;
      continue; // another default: the front-end evaluates it
    }
    if (k.defaults_[i]) {
      values[i] = k.defaults_[i].ptr();
      continue;
    }
    ++missingCount;
    missingRuntime += (missingRuntime.empty() ? "'" : ", '") + p.name + "'";
  }
  if (missingCount)
    throw py::type_error(k.name + "() takes " + plural(k.numRuntime, "argument") + " (" + k.runtimeNames + ") but " +
                         std::to_string(givenRuntime) + (givenRuntime == 1 ? " was" : " were") + " given; missing " +
                         missingRuntime);
  if (missingConstexpr)
    throw py::type_error(k.name + "() missing a value for constexpr parameter '" + missingConstexpr->name +
                         "' (pass " + missingConstexpr->name + "=...)");
  return b;
}

Bound bind(const JitKernel &k, const VectorArgs &v) { return bind(k, v.values.data(), v.nargs, v.kw()); }

namespace {

void appendConstexpr(KeyBuffer &key, const ConstexprValue &v) {
  key.push(static_cast<char>(v.kind));
  switch (v.kind) {
  case ConstexprValue::Kind::Int:
  case ConstexprValue::Kind::Bool: key.append(&v.intValue, sizeof v.intValue); break;
  case ConstexprValue::Kind::Float: key.append(&v.floatValue, sizeof v.floatValue); break;
  case ConstexprValue::Kind::String:
  case ConstexprValue::Kind::DType:
  case ConstexprValue::Kind::Enum: {
    uint32_t size = static_cast<uint32_t>(v.stringValue.size());
    key.append(&size, sizeof size);
    key.append(v.stringValue.data(), size);
    break;
  }
  case ConstexprValue::Kind::Tuple: {
    uint32_t size = static_cast<uint32_t>(v.elems.size()), fields = static_cast<uint32_t>(v.fields.size());
    key.append(&size, sizeof size);
    for (const ConstexprValue &e : v.elems) appendConstexpr(key, e);
    key.append(&fields, sizeof fields);
    for (const std::string &f : v.fields) {
      uint32_t length = static_cast<uint32_t>(f.size());
      key.append(&length, sizeof length);
      key.append(f.data(), length);
    }
    break;
  }
  case ConstexprValue::Kind::Runtime: // its key bytes are the leaf's own (appendTupleArgKey)
  case ConstexprValue::Kind::None: break;
  }
}

} // namespace

void appendArgKey(KeyBuffer &key, uint8_t scalar, uint8_t flags) {
  const uint8_t bytes[2] = {scalar, flags};
  key.append(bytes, 2);
}

// A None for a runtime parameter: the constexpr None, as in Triton (no launch
// slot). Two bytes like any runtime argument's, with a scalar no type has.
void appendNoneArgKey(KeyBuffer &key) { appendArgKey(key, 0xff, 0); }

// A tuple for a runtime parameter: a scalar no type has, its shape (which tells how many leaves are passed
// at run time), then those leaves' key bytes.
void appendTupleArgKey(KeyBuffer &key, const ConstexprValue &shape, const KeyBuffer &leaves) {
  appendArgKey(key, 0xfe, 0);
  appendConstexpr(key, shape);
  const std::string_view bytes = leaves.view();
  key.append(bytes.data(), bytes.size());
}

void appendConstexprFast(KeyBuffer &key, PyObject *o, const JitKernel &k, const std::string &param) {
  if (PyBool_Check(o)) return appendConstexpr(key, ConstexprValue::ofBool(o == Py_True));
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow && !(v == -1 && PyErr_Occurred())) {
      key.push(static_cast<char>(ConstexprValue::Kind::Int));
      ConstInt value = v; // the bytes appendConstexpr writes
      key.append(&value, sizeof value);
      return;
    }
    PyErr_Clear();
  }
  appendConstexpr(key, toConstexpr(o, k.name, param)); // raises the error, if any
}

void appendOptions(KeyBuffer &key, const Bound &b) {
  key.append(&b.numWarps, sizeof b.numWarps);
  key.append(&b.numStages, sizeof b.numStages);
  key.append(&b.maxRegisters, sizeof b.maxRegisters);
  key.append(&b.fpFusion, sizeof b.fpFusion);
  key.append(&b.numCtas, sizeof b.numCtas); // checked against the arch on a miss (compiledFor)
}

[[noreturn]] void raiseMixedDevices(const JitKernel &k, const std::string &first, int firstDevice,
                                    const std::string &other, int otherDevice) {
  throw py::value_error(k.name + "(): arguments are on different devices: '" + first + "' on cuda:" +
                        std::to_string(firstDevice) + ", '" + other + "' on cuda:" + std::to_string(otherDevice));
}

Specialized specializeArgs(const JitKernel &k, const Bound &b) {
  Specialized s;
  KeyBuffer key;
  s.args.reserve(k.numRuntime);
  std::string firstDeviceParam;
  PyObject *const *values = b.values();
  // One argument passed at run time (a parameter's, or a tuple's leaf): its key bytes, device and Arg.
  auto addRuntime = [&](Arg a, const std::string &label, KeyBuffer &into) {
    FastArg f = fromArg(a);
    appendArgKey(into, f.scalar, f.flags);
    if (a.spec.type.isTensorDesc()) appendTensorDescBlock(into, a.spec.type.descBlock);
    if (a.device != kUnknownDevice) {
      if (s.device == kUnknownDevice) {
        s.device = a.device;
        firstDeviceParam = label;
      } else if (a.device != s.device) {
        raiseMixedDevices(k, firstDeviceParam, s.device, label, a.device);
      }
    }
    s.torch = s.torch || a.torch;
    s.args.push_back(std::move(a));
  };
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamInfo &p = k.params[i];
    if (p.isConstexpr) {
      if (!values[i]) {
        key.push('\xff');
        continue;
      }
      ConstexprValue v = toConstexpr(values[i], k.name, p.name);
      appendConstexpr(key, v);
      s.constexprs.emplace_back(i, std::move(v));
      continue;
    }
    if (values[i] == Py_None) {
      appendNoneArgKey(key);
      s.constexprs.emplace_back(i, ConstexprValue::none());
      continue;
    }
    if (PyTuple_Check(values[i])) { // flattened: its leaves passed at run time take signature entries
      KeyBuffer leaves;
      ConstexprValue shape = walkTupleArgument(values[i], k.name, p.name, [&](py::handle leaf, const std::string &label) {
        addRuntime(classifyArgument(leaf, k.name, label, k.specialize[i], static_cast<int>(i)), label, leaves);
      });
      appendTupleArgKey(key, shape, leaves);
      s.constexprs.emplace_back(i, std::move(shape));
      continue;
    }
    addRuntime(classifyArgument(values[i], k.name, p.name, k.specialize[i], static_cast<int>(i)), p.name, key);
  }
  appendOptions(key, b);
  s.key = key.view();
  return s;
}

namespace {

CompileOptions compileOptions(const JitKernel &k, const Bound &b, const std::string &arch) {
  CompileOptions options;
  options.numWarps = b.numWarps;
  options.numStages = b.numStages;
  options.maxRegisters = b.maxRegisters;
  options.fpFusion = b.fpFusion;
  options.arch = arch;
  options.backend = k.backend;
  return options;
}

std::vector<ArgSpec> signatureOf(const Specialized &s) {
  std::vector<ArgSpec> signature;
  signature.reserve(s.args.size());
  for (const Arg &a : s.args) signature.push_back(a.spec);
  return signature;
}

std::map<std::string, ConstexprValue> constexprsOf(const JitKernel &k, const Specialized &s) {
  std::map<std::string, ConstexprValue> out;
  for (const auto &[i, v] : s.constexprs) out[k.params[i].name] = v;
  return out;
}

} // namespace

// Triton's check (backends/nvidia/compiler.py): clusters exist from sm_90 on. "sm_90a" -> 90.
static void checkNumCtas(const JitKernel &k, const Bound &b, const std::string &arch) {
  if (b.numCtas == 1) return;
  int capability = 0;
  for (char c : arch)
    if (c >= '0' && c <= '9') capability = capability * 10 + (c - '0');
  if (capability < 90)
    throw py::value_error(k.name + "(): num_ctas > 1 requires NVIDIA SM90+ (Hopper). Current target is " + arch +
                          ". Please set num_ctas=1 or target an SM90+ GPU.");
}

JitKernel::CompiledSlot &compiledFor(JitKernel &k, const Specialized &s, const Bound &b, const std::string &arch) {
  checkNumCtas(k, b, arch);
  std::string fullKey = arch;
  fullKey.push_back('\0');
  fullKey += s.key;
  auto it = k.compiled.find(fullKey);
  if (it != k.compiled.end()) return it->second;

  auto entry = std::make_shared<CompiledEntry>();
  entry->file = k.file;
  entry->params = k.params;
  entry->numWarps = b.numWarps;
  entry->numStages = b.numStages;
  entry->maxRegisters = b.maxRegisters;
  entry->fpFusion = b.fpFusion;
  entry->backend = k.backend;
  entry->constexprs = constexprsOf(k, s);
  std::vector<ArgSpec> signature = signatureOf(s);
  const CompileOptions options = compileOptions(k, b, arch);
  {
    py::gil_scoped_release nogil; // parallel compiles (the autotuner's threads); disk I/O too
    entry->kernel = compileCached(k.file, k.name, std::move(signature), entry->constexprs, options);
  }
  // Another thread may have compiled the same key meanwhile: keep the first.
  return k.compiled.emplace(std::move(fullKey), JitKernel::CompiledSlot{entry, py::object()}).first->second;
}

PyObject *compiledKernelOf(const JitKernel &k, JitKernel::CompiledSlot &slot) {
  if (!slot.result) {
    py::object entry = py::cast(slot.entry);
    py::object made = k.compiledKernelFactory && !k.compiledKernelFactory.is_none()
                          ? k.compiledKernelFactory(entry)
                          : entry;
    if (!slot.result) slot.result = std::move(made); // the factory may have run Python that made it already
  }
  return slot.result.ptr();
}

int resolveDevice(int fromArgs) { return fromArgs >= 0 ? fromArgs : rt::currentDevice(); }

py::object warmup(JitKernel &k, py::tuple args, py::handle kwargs, const std::string &target) {
  Bound b = bind(k, VectorArgs(args, kwargs));
  Specialized s = specializeArgs(k, b);
  std::string arch = target;
  if (arch.empty()) {
    if (rt::driverAvailable() && rt::deviceCount() > 0)
      arch = targetArch(resolveDevice(s.device));
    else
      arch = "sm_90a"; // no GPU here: compile for Hopper
  }
  return py::reinterpret_borrow<py::object>(compiledKernelOf(k, compiledFor(k, s, b, arch)));
}

py::tuple specialization(JitKernel &k, py::tuple args, py::handle kwargs) {
  Bound b = bind(k, VectorArgs(args, kwargs));
  Specialized s = specializeArgs(k, b);
  std::string signature;
  for (const Arg &a : s.args) appendJoined(signature, ",", argSpecText(a.spec));
  py::dict constexprs;
  for (const auto &[i, v] : s.constexprs) constexprs[py::str(k.params[i].name)] = fromConstexpr(v);
  py::dict options;
  options["num_warps"] = b.numWarps;
  options["num_stages"] = b.numStages;
  if (b.maxRegisters) options["maxnreg"] = b.maxRegisters;
  if (b.fpFusion >= 0) options["enable_fp_fusion"] = b.fpFusion != 0;
  if (b.numCtas != 1) options["num_ctas"] = b.numCtas;
  if (b.cooperative) options["launch_cooperative_grid"] = true;
  if (b.pdl) options["launch_pdl"] = true;
  py::object device = s.device == kUnknownDevice ? py::object(py::none()) : py::object(py::int_(s.device));
  return py::make_tuple(signature, constexprs, options, device);
}

py::object cacheKey(JitKernel &k, py::tuple args, py::handle kwargs, const std::string &target) {
  Bound b = bind(k, VectorArgs(args, kwargs));
  Specialized s = specializeArgs(k, b);
  cache::DiskCache disk;
  if (!disk.enabled()) return py::none();
  cache::Key key = cache::makeKey(k.file->text, k.name, signatureOf(s), constexprsOf(k, s), compileOptions(k, b, target));
  if (!key) return py::none();
  py::dict out;
  out["digest"] = key.digest;
  out["text"] = key.text;
  out["path"] = disk.entryPath(key);
  return out;
}

} // namespace tessera::python
