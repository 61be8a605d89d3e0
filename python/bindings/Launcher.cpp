// The JIT launch path, all in C++ so that Python's side of `kernel[grid](...)`
// is one call: bind the arguments to the kernel's parameters, specialise
// them as Triton does (pointer dtypes and 16-byte alignment, ints equal to 1
// or divisible by 16, constexpr values, num_warps, the device's arch), look
// the key up in a per-device cache, compile and load on a miss, and launch
// on the right stream with the device's context current.
#include "Bindings.h"

#include "runtime/Driver.h"

#include <array>
#include <cstring>
#include <unordered_map>

namespace tessera::python {

namespace {

class JitKernel {
public:
  JitKernel(std::string source, std::string path, uint32_t firstLine, std::string kernelName,
            py::object defaults, py::object doNotSpecialize)
      : name(std::move(kernelName)) {
    file = makeSourceFile(std::move(source), std::move(path), firstLine);
    params = kernelParameters(file, name);
    defaults_.resize(params.size());
    specialize.assign(params.size(), true);
    for (size_t i = 0; i < params.size(); ++i) {
      index[params[i].name] = i;
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
          if (i < params.size()) specialize[i] = false;
        } else {
          auto it = index.find(py::str(h));
          if (it == index.end())
            throw py::value_error(name + "(): do_not_specialize names '" + std::string(py::str(h)) +
                                  "', which is not a parameter");
          specialize[it->second] = false;
        }
      }
  }

  std::string name;
  std::shared_ptr<const SourceFile> file;
  std::vector<ParamInfo> params;
  std::vector<py::object> defaults_; // Python default per parameter (null: none)
  std::vector<bool> specialize;
  std::unordered_map<std::string, size_t> index;
  size_t numRuntime = 0;
  std::string runtimeNames, allNames;

  // arch + '\0' + key → compiled kernel (shared by devices of one arch).
  std::unordered_map<std::string, std::shared_ptr<CompiledEntry>> compiled;
  struct DeviceEntry {
    std::shared_ptr<CompiledEntry> entry;
    const rt::LoadedKernel *loaded = nullptr;
  };
  // Indexed by device ordinal: key → loaded kernel.
  std::vector<std::unordered_map<std::string, DeviceEntry>> devices;
};

struct Bound {
  std::vector<PyObject *> values; // borrowed; per parameter; null: not given (constexpr default)
  unsigned numWarps = 4;
  unsigned numStages = 3;
  py::handle stream; // launch option stream=..., if given
};

unsigned optionValue(py::handle v, const std::string &kernel, const char *what) {
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

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

Bound bind(const JitKernel &k, const py::tuple &args, const py::handle &kwargs) {
  Bound b;
  b.values.assign(k.params.size(), nullptr);
  const size_t n = args.size();
  if (n > k.params.size())
    throw py::type_error(k.name + "() takes " + plural(k.params.size(), "argument") + " (" + k.allNames +
                         ") but " + std::to_string(n) + (n == 1 ? " was" : " were") + " given");
  for (size_t i = 0; i < n; ++i) b.values[i] = args[i].ptr();

  if (kwargs && !kwargs.is_none()) {
    for (auto item : py::reinterpret_borrow<py::dict>(kwargs)) {
      std::string key = py::str(item.first);
      auto it = k.index.find(key);
      bool option = false;
      if (key == "num_warps") b.numWarps = optionValue(item.second, k.name, "num_warps"), option = true;
      else if (key == "num_stages") b.numStages = optionValue(item.second, k.name, "num_stages"), option = true;
      if (it != k.index.end()) { // a parameter (a parameter named num_stages also sets the option, as in Triton)
        if (b.values[it->second])
          throw py::type_error(k.name + "() got multiple values for argument '" + key + "'");
        b.values[it->second] = item.second.ptr();
      } else if (key == "stream") {
        b.stream = item.second;
      } else if (key == "num_ctas") {
        if (optionValue(item.second, k.name, "num_ctas") != 1)
          throw py::value_error(k.name + "(): tessera launches one CTA per program (num_ctas must be 1)");
      } else if (!option) {
        throw py::type_error(k.name + "() got an unexpected keyword argument '" + key + "' (its parameters: " +
                             k.allNames + "; launch options: num_warps, num_stages, stream)");
      }
    }
  }

  std::string missingRuntime;
  const ParamInfo *missingConstexpr = nullptr;
  size_t givenRuntime = 0, missingCount = 0;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamInfo &p = k.params[i];
    if (b.values[i]) {
      if (!p.isConstexpr) ++givenRuntime;
      continue;
    }
    if (p.isConstexpr) {
      if (!p.hasDefault && !k.defaults_[i] && !missingConstexpr) missingConstexpr = &p;
      continue; // with a default: the front-end evaluates it
    }
    if (k.defaults_[i]) {
      b.values[i] = k.defaults_[i].ptr();
      continue;
    }
    ++missingCount;
    missingRuntime += (missingRuntime.empty() ? "'" : ", '") + p.name + "'";
  }
  if (missingCount)
    throw py::type_error(k.name + "() takes " + plural(k.numRuntime, "argument") + " (" + k.runtimeNames +
                         ") but " + std::to_string(givenRuntime) + (givenRuntime == 1 ? " was" : " were") +
                         " given; missing " + missingRuntime);
  if (missingConstexpr)
    throw py::type_error(k.name + "() missing a value for constexpr parameter '" + missingConstexpr->name +
                         "' (pass " + missingConstexpr->name + "=...)");
  return b;
}

struct Specialized {
  std::string key;
  std::vector<Arg> args;                     // runtime arguments, in order
  std::vector<std::pair<size_t, ConstexprValue>> constexprs; // given constexprs (param index, value)
  int device = kUnknownDevice;
  bool torch = false;
};

void appendConstexpr(std::string &key, const ConstexprValue &v) {
  key.push_back(static_cast<char>(v.kind));
  switch (v.kind) {
  case ConstexprValue::Kind::Int:
  case ConstexprValue::Kind::Bool:
    key.append(reinterpret_cast<const char *>(&v.intValue), sizeof v.intValue);
    break;
  case ConstexprValue::Kind::Float:
    key.append(reinterpret_cast<const char *>(&v.floatValue), sizeof v.floatValue);
    break;
  case ConstexprValue::Kind::String: {
    uint32_t size = static_cast<uint32_t>(v.stringValue.size());
    key.append(reinterpret_cast<const char *>(&size), sizeof size);
    key += v.stringValue;
    break;
  }
  case ConstexprValue::Kind::None:
    break;
  }
}

Specialized specializeArgs(const JitKernel &k, const Bound &b) {
  Specialized s;
  s.key.reserve(4 * k.params.size() + 16);
  s.args.reserve(k.numRuntime);
  const std::string *firstDeviceParam = nullptr;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamInfo &p = k.params[i];
    if (p.isConstexpr) {
      if (!b.values[i]) {
        s.key.push_back('\xff');
        continue;
      }
      ConstexprValue v = toConstexpr(b.values[i], k.name, p.name);
      appendConstexpr(s.key, v);
      s.constexprs.emplace_back(i, std::move(v));
      continue;
    }
    Arg a = classifyArgument(b.values[i], k.name, p.name, k.specialize[i]);
    s.key.push_back(static_cast<char>(a.spec.type.scalar));
    s.key.push_back(static_cast<char>((a.spec.type.pointer ? 1 : 0) | (a.spec.divisibility == 16 ? 2 : 0) |
                                      (a.spec.equalsOne ? 4 : 0)));
    if (a.device != kUnknownDevice) {
      if (s.device == kUnknownDevice) {
        s.device = a.device;
        firstDeviceParam = &p.name;
      } else if (a.device != s.device) {
        throw py::value_error(k.name + "(): arguments are on different devices: '" + *firstDeviceParam +
                              "' on cuda:" + std::to_string(s.device) + ", '" + p.name + "' on cuda:" +
                              std::to_string(a.device));
      }
    }
    s.torch = s.torch || a.torch;
    s.args.push_back(a);
  }
  s.key.append(reinterpret_cast<const char *>(&b.numWarps), sizeof b.numWarps);
  s.key.append(reinterpret_cast<const char *>(&b.numStages), sizeof b.numStages);
  return s;
}

std::shared_ptr<CompiledEntry> compiledFor(JitKernel &k, const Specialized &s, const Bound &b,
                                           const std::string &arch) {
  std::string fullKey = arch;
  fullKey.push_back('\0');
  fullKey += s.key;
  auto it = k.compiled.find(fullKey);
  if (it != k.compiled.end()) return it->second;

  auto entry = std::make_shared<CompiledEntry>();
  entry->file = k.file;
  entry->params = k.params;
  entry->numStages = b.numStages;
  for (const auto &[i, v] : s.constexprs) entry->constexprs[k.params[i].name] = v;
  std::vector<ArgSpec> signature;
  signature.reserve(s.args.size());
  for (const Arg &a : s.args) signature.push_back(a.spec);
  CompileOptions options;
  options.numWarps = b.numWarps;
  options.numStages = b.numStages;
  options.arch = arch;
  CompiledKernel compiled;
  {
    py::gil_scoped_release nogil;
    compiled = compileKernel(k.file, k.name, signature, entry->constexprs, options, Stage::PTX);
  }
  entry->kernel = Kernel(std::move(compiled), std::move(signature), arch);
  // Another thread may have compiled the same key meanwhile: keep the first.
  return k.compiled.emplace(std::move(fullKey), entry).first->second;
}

py::dict metaDict(const JitKernel &k, const Bound &b) {
  py::dict meta;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (b.values[i]) meta[py::str(k.params[i].name)] = py::handle(b.values[i]);
    else if (k.defaults_[i]) meta[py::str(k.params[i].name)] = k.defaults_[i];
  }
  if (!meta.contains("num_warps")) meta["num_warps"] = b.numWarps;
  if (!meta.contains("num_stages")) meta["num_stages"] = b.numStages;
  return meta;
}

bool resolveGrid(py::handle grid, const std::string &kernel, rt::Grid &out,
                 const std::function<py::dict()> &meta) {
  if (PyCallable_Check(grid.ptr())) {
    py::object result = py::reinterpret_borrow<py::object>(grid)(meta());
    return toGrid(result, out, kernel);
  }
  return toGrid(grid, out, kernel);
}

// Launch argument storage: one 8-byte slot per runtime argument.
struct Packed {
  static constexpr size_t kInline = 32;
  std::array<uint64_t, kInline> slotBuf;
  std::array<void *, kInline> ptrBuf;
  std::vector<uint64_t> slotHeap;
  std::vector<void *> ptrHeap;
  void **pointers = nullptr;

  explicit Packed(const std::vector<Arg> &args) {
    uint64_t *slots = slotBuf.data();
    pointers = ptrBuf.data();
    if (args.size() > kInline) {
      slotHeap.resize(args.size());
      ptrHeap.resize(args.size());
      slots = slotHeap.data();
      pointers = ptrHeap.data();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      slots[i] = args[i].bits;
      pointers[i] = &slots[i];
    }
  }
};

void launchOn(const rt::LoadedKernel &loaded, int device, const rt::Grid &grid, const std::vector<Arg> &args,
              CUstream stream) {
  Packed packed(args);
  rt::DeviceGuard guard(device);
  rt::launch(loaded, grid, packed.pointers, stream);
}

int resolveDevice(int fromArgs) { return fromArgs >= 0 ? fromArgs : rt::currentDevice(); }

void launch(JitKernel &k, py::handle grid, py::tuple args, py::handle kwargs, py::handle stream) {
  Bound b = bind(k, args, kwargs);
  Specialized s = specializeArgs(k, b);
  rt::Grid g;
  bool nonEmpty = resolveGrid(grid, k.name, g, [&] { return metaDict(k, b); });
  const int device = resolveDevice(s.device); // DriverNotFoundError without a driver

  if (static_cast<size_t>(device) >= k.devices.size()) k.devices.resize(device + 1);
  auto &perDevice = k.devices[device];
  auto it = perDevice.find(s.key);
  if (it == perDevice.end()) {
    std::shared_ptr<CompiledEntry> entry = compiledFor(k, s, b, targetArch(device));
    const rt::LoadedKernel *loaded = nullptr;
    {
      py::gil_scoped_release nogil;
      loaded = &entry->kernel.load(device);
    }
    it = k.devices[device].emplace(s.key, JitKernel::DeviceEntry{entry, loaded}).first;
  }
  if (!nonEmpty) return; // like Triton: a grid with a 0 dimension launches nothing
  CUstream st = resolveStream(b.stream ? b.stream : stream, s.torch, device);
  launchOn(*it->second.loaded, device, g, s.args, st);
}

std::shared_ptr<CompiledEntry> warmup(JitKernel &k, py::tuple args, py::handle kwargs, const std::string &target) {
  Bound b = bind(k, args, kwargs);
  Specialized s = specializeArgs(k, b);
  std::string arch = target;
  if (arch.empty()) {
    if (rt::driverAvailable() && rt::deviceCount() > 0)
      arch = targetArch(resolveDevice(s.device));
    else
      arch = "sm_90a"; // no GPU here: compile for Hopper
  }
  return compiledFor(k, s, b, arch);
}

py::tuple specialization(JitKernel &k, py::tuple args, py::handle kwargs) {
  Bound b = bind(k, args, kwargs);
  Specialized s = specializeArgs(k, b);
  std::string signature;
  for (const Arg &a : s.args) appendJoined(signature, ",", argSpecText(a.spec));
  py::dict constexprs;
  for (const auto &[i, v] : s.constexprs) constexprs[py::str(k.params[i].name)] = fromConstexpr(v);
  py::dict options;
  options["num_warps"] = b.numWarps;
  options["num_stages"] = b.numStages;
  py::object device = s.device == kUnknownDevice ? py::object(py::none()) : py::object(py::int_(s.device));
  return py::make_tuple(signature, constexprs, options, device);
}

} // namespace

bool toGrid(py::handle grid, rt::Grid &out, const std::string &kernel) {
  auto dim = [&](py::handle v, int axis) -> unsigned {
    if (!PyIndex_Check(v.ptr()) || PyBool_Check(v.ptr()))
      throw py::type_error(kernel + "[grid]: grid dimension " + std::to_string(axis) + " must be an int, got " +
                           std::string(py::str(py::type::handle_of(v).attr("__name__"))));
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow || n < 0 || n > 0xffffffffLL)
      throw py::value_error(kernel + "[grid]: grid dimension " + std::to_string(axis) + " = " +
                            std::string(py::str(v)) + " is out of range");
    return static_cast<unsigned>(n);
  };
  out = rt::Grid{};
  if (PyTuple_Check(grid.ptr()) || PyList_Check(grid.ptr())) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(grid);
    size_t n = seq.size();
    if (n < 1 || n > 3)
      throw py::value_error(kernel + "[grid]: the grid must have 1 to 3 dimensions, got " + std::to_string(n));
    unsigned *dims[3] = {&out.x, &out.y, &out.z};
    for (size_t i = 0; i < n; ++i) *dims[i] = dim(seq[i], static_cast<int>(i));
  } else if (PyIndex_Check(grid.ptr())) {
    out.x = dim(grid, 0);
  } else {
    throw py::type_error(kernel + "[grid]: the grid must be a tuple of 1 to 3 ints or a callable taking the "
                         "meta-parameters and returning one, got " +
                         std::string(py::str(py::type::handle_of(grid).attr("__name__"))));
  }
  return out.x && out.y && out.z;
}

CUstream resolveStream(py::handle explicitStream, bool torchSeen, int device) {
  if (explicitStream && !explicitStream.is_none()) {
    py::handle s = explicitStream;
    py::object holder;
    if (!PyLong_Check(s.ptr()) && PyObject_HasAttrString(s.ptr(), "cuda_stream") == 1) {
      holder = s.attr("cuda_stream");
      s = holder;
    }
    if (!PyLong_Check(s.ptr()))
      throw py::type_error("stream must be an int (a CUstream handle), an object with .cuda_stream, or None");
    return reinterpret_cast<CUstream>(s.cast<uintptr_t>());
  }
  if (!torchSeen) return nullptr;
  // torch's current stream for the device (what torch.cuda.current_stream() is).
  // Kept as a leaked reference: a static py::object would be released after
  // the interpreter is gone.
  static PyObject *getRawStream = nullptr;
  static bool haveRaw = false;
  if (!getRawStream) {
    py::module_ torch = py::module_::import("torch");
    py::object c = torch.attr("_C");
    py::object f;
    if (PyObject_HasAttrString(c.ptr(), "_cuda_getCurrentRawStream") == 1) {
      f = c.attr("_cuda_getCurrentRawStream");
      haveRaw = true;
    } else {
      f = torch.attr("cuda").attr("current_stream");
    }
    getRawStream = f.release().ptr();
  }
  py::object result = py::handle(getRawStream)(device);
  if (!haveRaw) result = result.attr("cuda_stream");
  return reinterpret_cast<CUstream>(result.cast<uintptr_t>());
}

void launchCompiled(const std::shared_ptr<CompiledEntry> &entry, py::handle grid, py::tuple args,
                    py::handle stream) {
  const Kernel &kernel = entry->kernel;
  const std::vector<ArgSpec> &sig = kernel.signature();
  const std::string &name = kernel.name();
  std::vector<size_t> runtimeParams; // indices into entry->params
  for (size_t i = 0; i < entry->params.size(); ++i)
    if (!entry->params[i].isConstexpr) runtimeParams.push_back(i);
  const size_t n = args.size();
  const bool all = n == entry->params.size();
  if (!all && n != sig.size()) {
    std::string names;
    for (size_t i : runtimeParams) appendJoined(names, ", ", entry->params[i].name);
    throw py::type_error(name + "() takes " + plural(sig.size(), "argument") + " (" + names +
                         "), or all its parameters with the constexprs, but " + std::to_string(n) +
                         (n == 1 ? " was" : " were") + " given");
  }
  std::vector<Arg> values;
  values.reserve(sig.size());
  int device = kUnknownDevice;
  bool torch = false;
  for (size_t j = 0; j < sig.size(); ++j) {
    size_t param = j < runtimeParams.size() ? runtimeParams[j] : j;
    const std::string &pname = param < entry->params.size() ? entry->params[param].name : std::to_string(j);
    Arg a = convertArgument(args[all ? param : j], sig[j], name, pname);
    if (a.device != kUnknownDevice) {
      if (device != kUnknownDevice && device != a.device)
        throw py::value_error(name + "(): arguments are on different devices (cuda:" + std::to_string(device) +
                              " and cuda:" + std::to_string(a.device) + ")");
      device = a.device;
    }
    torch = torch || a.torch;
    values.push_back(a);
  }
  rt::Grid g;
  bool nonEmpty = resolveGrid(grid, name, g, [&] {
    py::dict meta;
    for (const auto &[k, v] : entry->constexprs) meta[py::str(k)] = fromConstexpr(v);
    meta["num_warps"] = kernel.numWarps();
    meta["num_stages"] = entry->numStages;
    return meta;
  });
  device = resolveDevice(device);
  const rt::LoadedKernel *loaded = nullptr;
  {
    py::gil_scoped_release nogil;
    loaded = &kernel.load(device);
  }
  if (!nonEmpty) return;
  launchOn(*loaded, device, g, values, resolveStream(stream, torch, device));
}

void registerLauncher(py::module_ &m) {
  py::class_<JitKernel, std::shared_ptr<JitKernel>>(m, "JitKernel",
                                                    "A @jit kernel's source, parameters and caches.")
      .def(py::init<std::string, std::string, uint32_t, std::string, py::object, py::object>(),
           py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
           py::arg("defaults") = py::none(), py::arg("do_not_specialize") = py::none())
      .def_readonly("name", &JitKernel::name)
      .def_property_readonly("path", [](const JitKernel &k) { return k.file->path; })
      .def_property_readonly("params",
                             [](const JitKernel &k) {
                               py::list out;
                               for (const ParamInfo &p : k.params)
                                 out.append(py::make_tuple(p.name, p.isConstexpr, p.hasDefault));
                               return out;
                             })
      .def("specialization", &specialization, py::arg("args"), py::arg("kwargs") = py::none(),
           "(signature, constexprs, options, device) the arguments specialise to; compiles nothing.")
      .def("warmup", &warmup, py::arg("args"), py::arg("kwargs") = py::none(), py::arg("target") = "",
           "Compiles (without launching) for the arguments; target '' = the GPU's arch, or sm_90a "
           "when there is no GPU.")
      .def("cache_info",
           [](const JitKernel &k) {
             py::dict out;
             out["compiled"] = k.compiled.size();
             py::dict loaded;
             for (size_t d = 0; d < k.devices.size(); ++d)
               if (!k.devices[d].empty()) loaded[py::int_(d)] = k.devices[d].size();
             out["loaded"] = loaded;
             return out;
           })
      .def("clear_cache", [](JitKernel &k) {
        k.devices.clear();
        k.compiled.clear();
      });

  m.def(
      "launch",
      [](JitKernel &k, py::handle grid, py::tuple args, py::handle kwargs, py::handle stream) {
        launch(k, grid, args, kwargs, stream);
      },
      py::arg("handle"), py::arg("grid"), py::arg("args"), py::arg("kwargs") = py::none(),
      py::arg("stream") = py::none(),
      "Binds, specialises, compiles on a cache miss and launches handle's kernel.");
}

} // namespace tessera::python
