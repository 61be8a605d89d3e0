// Interpret mode (TESSERA_INTERPRET=1 or @tessera.jit(interpret=True)):
// tessera._C.Interpreter runs a kernel's block IR on the host
// (compiler/interp/) with numpy arrays and torch CPU tensors as its pointer
// arguments. Arguments bind and specialise as for GPU launches (same
// signature, ":16"/":1" hints and constexprs), with host arrays in place of
// device memory:
//   numpy arrays (or anything with __array_interface__): pointer = the data
//     pointer, dtype from the array (ml_dtypes' bfloat16/float8 by name);
//     loads and stores are checked against the span of the array's elements;
//     stores to read-only arrays are errors;
//   torch CPU tensors: data_ptr(), dtype, shape and stride() (bf16 included);
//   Python scalars (and numpy scalars): as for GPU launches.
// Specialisations are cached per kernel. Errors found while running are
// tessera.InterpreterError (also tessera._C.InterpreterError), a subclass of
// tessera.CompilationError.
#include "Bindings.h"

#include "compiler/driver/Interpret.h"
#include "compiler/support/Environment.h"

#include <pybind11/stl.h>

#include <unordered_map>

namespace tessera::python {

namespace {

using ir::ScalarType;

[[noreturn]] void typeError(const std::string &kernel, const std::string &param, const std::string &what) {
  throw py::type_error(kernel + "(): argument '" + param + "' " + what);
}

bool hasAttr(py::handle obj, const char *name) { return PyObject_HasAttrString(obj.ptr(), name) == 1; }

std::string typeName(py::handle value) {
  py::handle type = py::type::handle_of(value);
  std::string name = py::str(type.attr("__name__"));
  std::string module = hasAttr(type, "__module__") ? std::string(py::str(type.attr("__module__"))) : "";
  if (!module.empty() && module != "builtins") return module.substr(0, module.find('.')) + "." + name;
  return name;
}

std::optional<ScalarType> dtypeByName(std::string name) {
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  static const std::pair<const char *, ScalarType> table[] = {
      {"float32", ScalarType::F32},   {"float", ScalarType::F32},     {"float16", ScalarType::F16},
      {"half", ScalarType::F16},      {"bfloat16", ScalarType::BF16}, {"float64", ScalarType::F64},
      {"double", ScalarType::F64},    {"int8", ScalarType::I8},       {"int16", ScalarType::I16},
      {"short", ScalarType::I16},     {"int32", ScalarType::I32},     {"int", ScalarType::I32},
      {"int64", ScalarType::I64},     {"long", ScalarType::I64},      {"uint8", ScalarType::U8},
      {"uint16", ScalarType::U16},    {"uint32", ScalarType::U32},    {"uint64", ScalarType::U64},
      {"bool", ScalarType::I1},       {"float8_e4m3fn", ScalarType::F8E4M3},
      {"float8_e5m2", ScalarType::F8E5M2},
      // Triton's names: what a tensor wrapped by triton.reinterpret (TensorWrapper) reports.
      {"fp8e5", ScalarType::F8E5M2},  {"fp8e4nv", ScalarType::F8E4M3}, {"fp16", ScalarType::F16},
      {"bf16", ScalarType::BF16},     {"fp32", ScalarType::F32},       {"fp64", ScalarType::F64},
      {"int1", ScalarType::I1},       {"fp8e4b15", ScalarType::F8E4B15},
  };
  for (const auto &[n, t] : table)
    if (name == n) return t;
  return std::nullopt;
}

// numpy's typestr: "<f4", "|u1", "|b1", ...; "V" (void) types by dtype name (ml_dtypes).
std::optional<ScalarType> typestrDtype(const std::string &typestr) {
  if (typestr.size() < 3 || typestr[0] == '>') return std::nullopt;
  const char kind = typestr[1];
  const std::string size = typestr.substr(2);
  if (kind == 'f') return size == "2" ? ScalarType::F16 : size == "4" ? ScalarType::F32
                          : size == "8" ? std::optional(ScalarType::F64) : std::nullopt;
  if (kind == 'i') return size == "1" ? ScalarType::I8 : size == "2" ? ScalarType::I16 : size == "4" ? ScalarType::I32
                          : size == "8" ? std::optional(ScalarType::I64) : std::nullopt;
  if (kind == 'u') return size == "1" ? ScalarType::U8 : size == "2" ? ScalarType::U16 : size == "4" ? ScalarType::U32
                          : size == "8" ? std::optional(ScalarType::U64) : std::nullopt;
  if (kind == 'b' && size == "1") return ScalarType::I1;
  return std::nullopt;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// A host buffer: where the kernel's pointer points and the span its elements cover.
interp::ArgValue bufferArg(uint64_t pointer, const std::vector<int64_t> &shape, const std::vector<int64_t> &byteStrides,
                           unsigned itemBytes, bool writable, std::string description) {
  interp::ArgValue a;
  a.bits = pointer;
  uint64_t lo = pointer, hi = pointer;
  bool empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) empty = true;
    int64_t extent = (shape[d] - 1) * byteStrides[d];
    if (extent > 0) hi += static_cast<uint64_t>(extent);
    else lo -= static_cast<uint64_t>(-extent);
  }
  a.begin = lo;
  a.end = empty ? lo : hi + itemBytes;
  a.writable = writable;
  a.description = std::move(description);
  return a;
}

struct HostArg {
  ArgSpec spec;
  interp::ArgValue value;
};

HostArg pointerArg(interp::ArgValue value, ScalarType dtype, bool specialize) {
  HostArg h;
  h.spec.type = ir::Type::ptr(dtype);
  h.spec.divisibility = specialize && value.bits % 16 == 0 ? 16 : 1;
  h.value = std::move(value);
  return h;
}

HostArg torchArg(py::handle t, const std::string &kernel, const std::string &param, bool specialize) {
  py::object device = t.attr("device");
  std::string deviceType = hasAttr(device, "type") ? std::string(py::str(device.attr("type"))) : std::string(py::str(device));
  if (deviceType != "cpu")
    typeError(kernel, param, "is a " + deviceType + " tensor; interpret mode runs on the host and needs CPU tensors "
                                                    "or numpy arrays");
  std::string dtypeName = py::str(t.attr("dtype"));
  std::optional<ScalarType> dtype = dtypeByName(dtypeName);
  if (!dtype) {
    rejectUnsupportedFp8(dtypeName, kernel, param);
    typeError(kernel, param, "has dtype " + dtypeName + ", which tessera kernels do not support");
  }
  std::vector<int64_t> shape, strides;
  for (py::handle d : t.attr("shape")) shape.push_back(d.cast<int64_t>());
  for (py::handle s : t.attr("stride")()) strides.push_back(s.cast<int64_t>());
  unsigned item = t.attr("element_size")().cast<unsigned>();
  for (int64_t &s : strides) s *= item;
  uint64_t pointer = t.attr("data_ptr")().cast<uint64_t>();
  return pointerArg(bufferArg(pointer, shape, strides, item, true,
                              "a " + dtypeName + " tensor of shape " + shapeText(shape)),
                    *dtype, specialize);
}

HostArg arrayArg(py::handle a, const std::string &kernel, const std::string &param, bool specialize) {
  py::dict iface = a.attr("__array_interface__");
  std::string typestr = py::str(iface["typestr"]);
  std::optional<ScalarType> dtype = typestrDtype(typestr);
  std::string dtypeName = typestr;
  if (hasAttr(a, "dtype")) {
    dtypeName = py::str(a.attr("dtype"));
    if (!dtype) dtype = dtypeByName(dtypeName); // ml_dtypes: bfloat16, float8_e4m3fn, float8_e5m2
  }
  if (!dtype)
    typeError(kernel, param, "has dtype " + dtypeName + ", which tessera kernels do not support (use float16, "
                             "float32, float64, (u)int8-64, bool, or ml_dtypes' bfloat16/float8 arrays)");
  py::tuple data = iface["data"];
  uint64_t pointer = data[0].is_none() ? 0 : data[0].cast<uint64_t>();
  bool readOnly = data[1].cast<bool>();
  std::vector<int64_t> shape, strides;
  for (py::handle d : iface["shape"]) shape.push_back(d.cast<int64_t>());
  unsigned item = ir::bitWidth(*dtype) < 8 ? 1 : ir::bitWidth(*dtype) / 8;
  if (iface.contains("strides") && !iface["strides"].is_none()) {
    for (py::handle s : iface["strides"]) strides.push_back(s.cast<int64_t>());
  } else { // C-contiguous
    strides.assign(shape.size(), 0);
    int64_t s = item;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = s;
      s *= shape[d];
    }
  }
  return pointerArg(bufferArg(pointer, shape, strides, item, !readOnly,
                              "a " + dtypeName + " array of shape " + shapeText(shape)),
                    *dtype, specialize);
}

bool isNumpyScalar(py::handle value) {
  py::handle type = py::type::handle_of(value);
  if (!hasAttr(type, "__module__") || std::string(py::str(type.attr("__module__"))) != "numpy") return false;
  return hasAttr(value, "item") && hasAttr(value, "dtype") && !hasAttr(value, "__len__");
}

HostArg convertHostArgument(py::handle value, const std::string &kernel, const std::string &param, bool specialize) {
  if (hasAttr(value, "data_ptr") && hasAttr(value, "dtype") && hasAttr(value, "device"))
    return torchArg(value, kernel, param, specialize);
  if (isNumpyScalar(value)) return convertHostArgument(value.attr("item")(), kernel, param, specialize);
  if (hasAttr(value, "__array_interface__")) return arrayArg(value, kernel, param, specialize);
  Arg a = classifyArgument(value, kernel, param, specialize);
  if (a.spec.type.pointer)
    typeError(kernel, param, "is device memory (" + typeName(value) + "); interpret mode runs on the host and needs "
                             "numpy arrays or CPU tensors");
  HostArg h;
  h.spec = a.spec;
  h.value = interp::ArgValue::scalar(a.bits);
  return h;
}

// ------------------------------------------------------------------ kernel

// A tensor descriptor argument in interpret mode: its parameter (tensordesc<...>, no map) and
// its hidden fields (rt::descriptorFields' order) read from the descriptor; base is a numpy array
// or a CPU tensor. Returns its key text.
std::string descriptorArgument(const TensorDesc &d, py::handle value, const std::string &kernel,
                               const std::string &param, std::vector<ArgSpec> &signature,
                               std::vector<interp::ArgValue> &fields) {
  if (d.scalar < 0) typeError(kernel, param, "is a TensorDescriptor of dtype " + d.dtypeName + ", which tessera does not take");
  if (d.shape.empty() || d.shape.size() > rt::kMaxTensorMapRank)
    throw py::value_error(kernel + "(): argument '" + param + "' is a TensorDescriptor of rank " +
                          std::to_string(d.shape.size()) + "; descriptors have 1 to 5 dimensions");
  if (d.block.size() != d.shape.size() || d.strides.size() != d.shape.size())
    throw py::value_error(kernel + "(): argument '" + param + "' is a TensorDescriptor whose block_shape has " +
                          std::to_string(d.block.size()) + " dimensions and strides " + std::to_string(d.strides.size()) +
                          " for a tensor of " + std::to_string(d.shape.size()));
  ArgSpec spec;
  spec.type = ir::Type::tensorDesc(static_cast<ScalarType>(d.scalar), d.block);
  signature.push_back(spec);
  HostArg base = convertHostArgument(value.attr("base"), kernel, param + ".base", false);
  fields.push_back(std::move(base.value));
  uint64_t slots[rt::descriptorFieldCount(rt::kMaxTensorMapRank)];
  rt::descriptorFields(d.address, d.shape.data(), d.strides.data(), d.shape.size(), d.nanPadding, slots);
  for (size_t k = 1; k < rt::descriptorFieldCount(d.shape.size()); ++k)
    fields.push_back(interp::ArgValue::scalar(slots[k]));
  return argSpecText(spec);
}

class Interpreter {
public:
  Interpreter(std::string source, std::string path, uint32_t firstLine, std::string kernelName, py::object defaults,
              py::object doNotSpecialize, bool debug)
      : name_(std::move(kernelName)), debug_(debug) {
    file_ = makeSourceFile(std::move(source), std::move(path), firstLine);
    params_ = kernelParameters(file_, name_);
    defaults_.resize(params_.size());
    specialize_.assign(params_.size(), true);
    for (size_t i = 0; i < params_.size(); ++i) index_[params_[i].name] = i;
    if (!defaults.is_none())
      for (auto item : py::reinterpret_borrow<py::dict>(defaults)) {
        auto it = index_.find(py::str(item.first));
        if (it != index_.end()) defaults_[it->second] = py::reinterpret_borrow<py::object>(item.second);
      }
    if (!doNotSpecialize.is_none())
      for (py::handle h : doNotSpecialize) {
        if (PyLong_Check(h.ptr())) {
          size_t i = h.cast<size_t>();
          if (i < params_.size()) specialize_[i] = false;
        } else if (auto it = index_.find(py::str(h)); it != index_.end()) {
          specialize_[it->second] = false;
        }
      }
  }

  // Returns the specialisation's Python object (see resultFactory).
  py::object run(py::handle grid, py::tuple args, py::handle kwargs) {
    // Bind: positional, then keywords; launch options are accepted and ignored.
    std::vector<py::object> values(params_.size());
    if (args.size() > params_.size())
      throw py::type_error(name_ + "() takes " + std::to_string(params_.size()) + " arguments but " +
                           std::to_string(args.size()) + " were given");
    for (size_t i = 0; i < args.size(); ++i) values[i] = args[i];
    unsigned numWarps = 4, numStages = 3;
    if (kwargs && !kwargs.is_none())
      for (auto item : py::reinterpret_borrow<py::dict>(kwargs)) {
        std::string key = py::str(item.first);
        if (key == "num_warps") numWarps = item.second.cast<unsigned>();
        if (key == "num_stages") numStages = item.second.cast<unsigned>();
        if (key == "extern_libs") checkExternLibs(name_, item.second);
        auto it = index_.find(key);
        if (it != index_.end()) {
          if (values[it->second]) throw py::type_error(name_ + "() got multiple values for argument '" + key + "'");
          values[it->second] = py::reinterpret_borrow<py::object>(item.second);
        } else if (key != "num_warps" && key != "num_stages" && key != "stream" && key != "num_ctas" &&
                   key != "maxnreg" && key != "enable_fp_fusion" && key != "launch_pdl" &&
                   key != "sanitize_overflow" && key != "extern_libs" && key != "launch_cooperative_grid") {
          // register caps, contraction and scheduling hints mean nothing to the interpreter; nor do
          // clusters (num_ctas) or cooperative launches: programs run one after another, and no
          // tessera operation makes one program wait for another
          throw py::type_error(name_ + "() got an unexpected keyword argument '" + key + "'");
        }
      }
    std::vector<ArgSpec> signature;
    std::vector<interp::ArgValue> hostArgs, descriptorFields;
    std::map<std::string, ConstexprValue> constexprs;
    std::string key;
    for (size_t i = 0; i < params_.size(); ++i) {
      const ParamInfo &p = params_[i];
      if (!values[i] && defaults_[i]) values[i] = defaults_[i];
      if (p.isConstexpr) {
        if (!values[i]) {
          if (!p.hasDefault)
            throw py::type_error(name_ + "() missing a value for constexpr parameter '" + p.name + "' (pass " +
                                 p.name + "=...)");
          continue; // the front-end evaluates the default
        }
        ConstexprValue c = toConstexpr(values[i], name_, p.name);
        key += p.name + "=" + std::to_string(static_cast<int>(c.kind)) + c.str() + ";";
        constexprs[p.name] = std::move(c);
        continue;
      }
      if (!values[i]) throw py::type_error(name_ + "() missing argument '" + p.name + "'");
      if (values[i].is_none()) { // the constexpr None, as in Triton (launches do the same)
        key += p.name + "=None;";
        constexprs[p.name] = ConstexprValue::none();
        continue;
      }
      auto addRuntime = [&](py::handle value, const std::string &label) {
        HostArg h = convertHostArgument(value, name_, label, specialize_[i]);
        key += argSpecText(h.spec) + ",";
        signature.push_back(h.spec);
        hostArgs.push_back(std::move(h.value));
      };
      if (PyTuple_Check(values[i].ptr())) { // flattened as launches do: its leaves passed at run time take entries
        ConstexprValue shape = walkTupleArgument(values[i], name_, p.name, addRuntime);
        key += p.name + "=" + shape.str() + ";";
        constexprs[p.name] = std::move(shape);
        continue;
      }
      if (const TensorDesc *d = tensorDescOf(values[i].ptr())) { // its fields follow the other arguments
        key += descriptorArgument(*d, values[i], name_, p.name, signature, descriptorFields) + ",";
        hostArgs.push_back(interp::ArgValue::scalar(0)); // the map: only TMA reads it
        continue;
      }
      addRuntime(values[i], p.name);
    }
    for (interp::ArgValue &f : descriptorFields) hostArgs.push_back(std::move(f));
    key += "w" + std::to_string(numWarps) + "s" + std::to_string(numStages);

    rt::Grid g;
    bool nonEmpty;
    if (PyCallable_Check(grid.ptr())) {
      py::dict meta;
      for (size_t i = 0; i < params_.size(); ++i)
        if (values[i]) meta[py::str(params_[i].name)] = values[i];
      meta["num_warps"] = numWarps;
      meta["num_stages"] = numStages;
      nonEmpty = toGrid(py::reinterpret_borrow<py::object>(grid)(meta), g, name_);
    } else {
      nonEmpty = toGrid(grid, g, name_);
    }

    Specialisation &spec = cache_[key];
    std::shared_ptr<InterpretableKernel> &kernel = spec.kernel;
    if (!kernel) {
      InterpretOptions options;
      options.numWarps = numWarps;
      options.numStages = numStages;
      options.debug = debug_;
      options.allPasses = env::setAndNotZero("TESSERA_INTERPRET_PASSES");
      try {
        kernel = std::make_shared<InterpretableKernel>(file_, name_, signature, constexprs, options);
      } catch (...) {
        cache_.erase(key);
        throw;
      }
    }
    if (!spec.result) {
      py::dict given;
      for (const auto &[name, value] : constexprs) given[py::str(name)] = fromConstexpr(value);
      py::object made = resultFactory.is_none()
                            ? py::object(py::none())
                            : resultFactory(signatureText(signature), given, numWarps, numStages);
      spec.result = std::move(made);
    }
    py::object result = spec.result; // kept: a later launch may drop the cache entry's
    if (nonEmpty) kernel->run(interp::Grid{g.x, g.y, g.z}, hostArgs);
    return result;
  }

  // factory(signature, constexprs, num_warps, num_stages) -> the object run() returns for a
  // specialisation, made once per specialisation; None: run() returns None.
  py::object resultFactory = py::none();

  std::string ir() const {
    std::string out;
    for (const auto &[k, v] : cache_) out += v.kernel->ir();
    return out;
  }

  size_t cacheSize() const { return cache_.size(); }

private:
  std::string name_;
  bool debug_;
  std::shared_ptr<const SourceFile> file_;
  std::vector<ParamInfo> params_;
  std::vector<py::object> defaults_;
  std::vector<bool> specialize_;
  std::unordered_map<std::string, size_t> index_;
  struct Specialisation {
    std::shared_ptr<InterpretableKernel> kernel;
    py::object result; // what run() returns for it (resultFactory's), made by its first run
  };
  std::unordered_map<std::string, Specialisation> cache_;
};

// tessera._C.interpret: one specialisation given explicitly (like compile()),
// runtime arguments only, each converted to its signature entry.
void interpretOnce(const std::string &source, const std::string &path, uint32_t firstLine, const std::string &kernel,
                   const std::string &signatureText, py::dict constexprs, py::handle grid, py::sequence args,
                   unsigned numWarps, bool debug) {
  std::vector<ArgSpec> signature;
  try {
    signature = parseSignature(signatureText);
  } catch (const std::invalid_argument &e) {
    throw py::value_error(e.what());
  }
  if (static_cast<size_t>(py::len(args)) != signature.size())
    throw py::type_error(kernel + "(): the signature has " + std::to_string(signature.size()) + " entries but " +
                         std::to_string(py::len(args)) + " arguments were given");
  std::vector<interp::ArgValue> hostArgs;
  for (size_t i = 0; i < signature.size(); ++i) {
    const std::string param = "#" + std::to_string(i);
    py::handle value = args[i];
    if (signature[i].type.pointer) {
      HostArg h = convertHostArgument(value, kernel, param, false);
      if (!h.spec.type.pointer || h.spec.type.scalar != signature[i].type.scalar)
        typeError(kernel, param, "is a " + argSpecText(h.spec) + " but the signature says " + argSpecText(signature[i]));
      hostArgs.push_back(std::move(h.value));
    } else {
      py::object scalar = isNumpyScalar(value) ? value.attr("item")() : py::reinterpret_borrow<py::object>(value);
      hostArgs.push_back(interp::ArgValue::scalar(convertArgument(scalar, signature[i], kernel, param).bits));
    }
  }
  std::map<std::string, ConstexprValue> cx;
  for (auto item : constexprs) {
    std::string name = py::str(item.first);
    cx[name] = toConstexpr(item.second, kernel, name);
  }
  rt::Grid g;
  if (!toGrid(grid, g, kernel)) return;
  InterpretOptions options;
  options.numWarps = numWarps;
  options.debug = debug;
  InterpretableKernel(makeSourceFile(source, path, firstLine), kernel, signature, cx, options)
      .run(interp::Grid{g.x, g.y, g.z}, hostArgs);
}

// "path:12:5: error: ..." → "path".
std::string pathOf(const std::string &message) {
  size_t colon = message.find(": error:");
  std::string head = colon == std::string::npos ? std::string() : message.substr(0, colon);
  for (int i = 0; i < 2; ++i) { // strip ":col" then ":line"
    size_t c = head.rfind(':');
    if (c == std::string::npos || head.find_first_not_of("0123456789", c + 1) != std::string::npos) break;
    head.resize(c);
  }
  return head;
}

} // namespace

void registerInterpreter(py::module_ &m) {
  // InterpreterError: a CompilationError raised while interpreting (the
  // message names the op's line like a compile error).
  py::object cls = py::module_::import("tessera.errors").attr("InterpreterError");
  m.attr("InterpreterError") = cls;
  static PyObject *errorClass = cls.inc_ref().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const interp::InterpreterError &e) {
      SourceLoc loc = e.loc();
      std::string message = e.what();
      py::object line = loc.line ? py::object(py::int_(loc.line)) : py::object(py::none());
      py::object col = loc.line ? py::object(py::int_(loc.col)) : py::object(py::none());
      try {
        py::object instance = py::handle(errorClass)(py::str(message), py::str(pathOf(message)), line, col);
        PyErr_SetObject(errorClass, instance.ptr());
      } catch (py::error_already_set &err) {
        err.restore();
      }
    }
  });

  py::class_<Interpreter, std::shared_ptr<Interpreter>>(m, "Interpreter",
                                                        "A @jit kernel run on the host by the interpreter.")
      .def(py::init<std::string, std::string, uint32_t, std::string, py::object, py::object, bool>(),
           py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
           py::arg("defaults") = py::none(), py::arg("do_not_specialize") = py::none(), py::arg("debug") = true,
           "debug: check tl.device_assert and runtime `assert`s (on by default in interpret mode).")
      .def("run", &Interpreter::run, py::arg("grid"), py::arg("args"), py::arg("kwargs") = py::none(),
           "Binds and specialises the arguments (numpy arrays / CPU tensors as pointers) and runs every "
           "program of the grid on the host.")
      .def("ir", &Interpreter::ir, "The block IR of every specialisation interpreted so far.")
      .def_readwrite("result_factory", &Interpreter::resultFactory,
                     "factory(signature, constexprs, num_warps, num_stages) -> what run() returns for a "
                     "specialisation (called once per specialisation); None: run() returns None.")
      .def_property_readonly("cache_size", &Interpreter::cacheSize);

  m.def("interpret", &interpretOnce, py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
        py::arg("signature"), py::arg("constexprs"), py::arg("grid"), py::arg("args"), py::arg("num_warps") = 4,
        py::arg("debug") = true,
        "Runs one specialisation (signature \"*fp32,i32\", constexprs) on the host: args are the runtime "
        "arguments (host arrays for pointers), grid a tuple of 1-3 ints.");
}

} // namespace tessera::python
