// The JIT launch path, all in C++ so that Python's side of `kernel[grid](...)`
// is one call: bind the arguments to the kernel's parameters, specialise
// them as Triton does (pointer dtypes and 16-byte alignment, ints equal to 1
// or divisible by 16, constexpr values, num_warps, the device's arch), look
// the key up in a per-device cache, compile (or take from the disk cache)
// and load on a miss, and launch on the right stream.
//
// Two passes over the arguments exist: the hot one (launchVector) builds the
// key and the launch slots straight from the Python objects (classifyFast),
// allocating nothing; only on an in-memory miss does the full one
// (specializeArgs: ArgSpecs, constexpr values) run, and the two keys must agree.
//
// Binding and specialisation (the full pass, the key's bytes, the compile on a
// miss) are in Specialization.cpp; this file is the launch: the hot pass, the
// per-device cache, the grid, the device and the stream.
#include "Specialization.h"

#include "runtime/Driver.h"
#include "runtime/StepTimes.h"

#include <optional>
#include <cstring>

namespace tessera::python {

namespace {

// What a callable grid gets: every parameter's value (given or default) by
// name, num_warps and num_stages. Keys are the interned parameter names (no
// str made per launch); the dict is a copy of the kernel's template of all
// keys (PyDict_Copy clones its table: no resizes while it fills), the
// values then replaced.
py::dict metaDict(JitKernel &k, const Bound &b) {
  static PyObject *const sNumWarps = interned("num_warps"), *const sNumStages = interned("num_stages");
  const size_t numParams = k.params.size();
  if (!k.metaTemplate) {
    py::dict t;
    for (size_t i = 0; i < numParams; ++i)
      if (PyDict_SetItem(t.ptr(), k.paramNames[i], Py_None) < 0) throw py::error_already_set();
    for (PyObject *name : {sNumWarps, sNumStages})
      if (PyDict_SetDefault(t.ptr(), name, Py_None) == nullptr) throw py::error_already_set();
    k.metaTemplate = std::move(t);
  }
  py::dict meta = py::reinterpret_steal<py::dict>(PyDict_Copy(k.metaTemplate.ptr()));
  if (!meta) throw py::error_already_set();
  PyObject *const *values = b.values();
  bool shadowed[2] = {false, false}; // a parameter named num_warps / num_stages has a value
  for (size_t i = 0; i < numParams; ++i) {
    PyObject *value = values[i] ? values[i] : k.defaults_[i].ptr();
    PyObject *name = k.paramNames[i];
    // No value (a constexpr the front-end defaults): not in the dict.
    if ((value ? PyDict_SetItem(meta.ptr(), name, value) : PyDict_DelItem(meta.ptr(), name)) < 0)
      throw py::error_already_set();
    if (value && (name == sNumWarps || name == sNumStages)) shadowed[name == sNumStages] = true;
  }
  for (auto [name, number, skip] : {std::tuple{sNumWarps, b.numWarps, shadowed[0]},
                                    std::tuple{sNumStages, b.numStages, shadowed[1]}}) {
    if (skip) continue;
    py::object value = py::reinterpret_steal<py::object>(PyLong_FromUnsignedLong(number));
    if (!value || PyDict_SetItem(meta.ptr(), name, value.ptr()) < 0) throw py::error_already_set();
  }
  return meta;
}

// A grid tuple of 1 to 3 exact ints in range, without any conversion; false
// for anything else (toGrid then converts or explains).
bool tupleGrid(PyObject *g, rt::Grid &out) {
  if (!PyTuple_CheckExact(g)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(g);
  if (n < 1 || n > 3) return false;
  unsigned dims[3] = {1, 1, 1};
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *d = PyTuple_GET_ITEM(g, i);
    long long v = -1;
    if (!PyLong_CheckExact(d) || !exactIntValue(d, v) || v < 0 || v > 0xffffffffLL) return false;
    dims[i] = static_cast<unsigned>(v);
  }
  out = rt::Grid{dims[0], dims[1], dims[2]};
  return true;
}

template <typename MetaFn> bool resolveGrid(py::handle grid, const std::string &kernel, rt::Grid &out, MetaFn meta) {
  PyObject *g = grid.ptr();
  if (tupleGrid(g, out)) [[likely]] // the common case: a tuple of small ints
    return out.x && out.y && out.z;
  if (PyCallable_Check(g)) {
    py::dict m = meta();
    PyObject *result = PyObject_CallOneArg(g, m.ptr());
    if (!result) throw py::error_already_set();
    py::object owned = py::reinterpret_steal<py::object>(result);
    if (tupleGrid(result, out)) return out.x && out.y && out.z;
    return toGrid(owned, out, kernel);
  }
  return toGrid(grid, out, kernel);
}

// The device a launch goes to: the arguments', else the current context's.
// Without a device from the arguments (ints only, no arguments), the current
// context is most often the one this kernel was last launched in: one
// cuCtxGetCurrent compared with those (rt::currentDevice asks the driver for
// the context's device too).
int launchDevice(const JitKernel &k, int fromArgs) {
  if (fromArgs >= 0) return fromArgs;
  if (!k.devices.empty()) {
    const CUcontext current = rt::currentContext();
    for (size_t d = 0; current && d < k.devices.size(); ++d)
      if (const rt::LoadedKernel *last = k.devices[d].last; last && last->context() == current)
        return static_cast<int>(d);
  }
  return rt::currentDevice(); // DriverNotFoundError without a driver
}

// An in-memory miss: the full pass, compile (or the disk cache) and load.
const JitKernel::DeviceEntry &loadOnMiss(JitKernel &k, const Bound &b, int device, std::string_view fastKey) {
  rt::StepTimer specializing(rt::Step::Specialize);
  Specialized s = specializeArgs(k, b);
  if (s.key != fastKey)
    throw std::logic_error("tessera internal error: the launch key of kernel '" + k.name +
                           "' differs between the fast and the full argument pass");
  specializing.stop();
  rt::StepTimer archTimer(rt::Step::TargetArch);
  const std::string arch = targetArch(device);
  archTimer.stop();
  JitKernel::CompiledSlot &slot = compiledFor(k, s, b, arch);
  std::shared_ptr<CompiledEntry> entry = slot.entry;
  const rt::LoadedKernel *loaded = nullptr;
  {
    py::gil_scoped_release nogil;
    loaded = &entry->kernel.load(device);
  }
  return k.devices[device].map.emplace(std::string(fastKey), JitKernel::DeviceEntry{&slot, loaded}).first->second;
}

// The hot pass over the arguments: the key's bytes, the launch slots and
// cuLaunchKernel's kernelParams (pointers to the slots), in one pass.
struct Packed {
  KeyBuffer key;
  InlineVec<uint64_t, 32> slots;  // per runtime parameter: its value (a descriptor: its map's address)
  InlineVec<void *, 32> pointers; // per runtime parameter: &slot, or a descriptor's encoded map itself
  int device = kUnknownDevice;
  bool torch = false;
};

// The leaves of a tuple argument that are not tuples: how many launch slots it may take at most.
size_t tupleLeafCount(PyObject *tuple) {
  size_t n = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    PyObject *e = PyTuple_GET_ITEM(tuple, i);
    n += PyTuple_Check(e) ? tupleLeafCount(e) : 1;
  }
  return n;
}

// The descriptors' hidden parameters after the kernel's own `own` slots (rt::descriptorFields; a tuple
// argument may have grown the vectors past them). The slots may move: every pointer is taken again.
[[gnu::noinline]] void appendDescriptorSlots(InlineVec<const TensorDesc *, 4> &descriptors, Packed &out, size_t own) {
  InlineVec<void *, 32> maps; // a descriptor's entry: its map; else null
  maps.resize(own);
  for (size_t j = 0; j < own; ++j) maps[j] = out.pointers[j] != &out.slots[j] ? out.pointers[j] : nullptr;
  InlineVec<uint64_t, 32> fields;
  for (size_t i = 0; i < descriptors.size(); ++i) appendDescriptorFields(*descriptors[i], fields);
  const size_t total = own + fields.size();
  out.slots.grow(total);
  out.pointers.grow(total);
  for (size_t j = 0; j < fields.size(); ++j) out.slots[own + j] = fields[j];
  for (size_t j = 0; j < total; ++j) out.pointers[j] = j < own && maps[j] ? maps[j] : &out.slots[j];
}

void packArguments(const JitKernel &k, const Bound &b, Packed &out) {
  const size_t numParams = k.params.size();
  PyObject *const *values = b.values();
  out.slots.resize(k.numRuntime);
  out.pointers.resize(k.numRuntime);
  uint64_t *slots = out.slots.data();
  void **pointers = out.pointers.data();
  size_t slot = 0;
  size_t firstDeviceParam = 0;
  InlineVec<const TensorDesc *, 4> descriptors; // their hidden parameters follow the others
  auto noteDevice = [&](int device, size_t i) {
    if (device == kUnknownDevice) return;
    if (out.device == kUnknownDevice) {
      out.device = device;
      firstDeviceParam = i;
    } else if (device != out.device) [[unlikely]] {
      raiseMixedDevices(k, k.params[firstDeviceParam].name, out.device, k.params[i].name, device);
    }
  };
  // One value passed at run time, not classified by classifyFast (`label`: the parameter, or a tuple's leaf).
  auto packSlow = [&](PyObject *value, size_t i, const std::string &label, KeyBuffer &key) {
    FastArg f;
    if (!classifyFast(value, k.specialize[i], f)) {
      if (TensorDesc *d = tensorDescOf(value)) { // encoded by its first launch, then only read
        const void *map = encodedTensorMap(*d, k.name, label, i, numParams);
        appendArgKey(key, static_cast<uint8_t>(d->scalar), kTensorDescFlag);
        appendTensorDescBlock(key, d->block);
        slots[slot] = reinterpret_cast<uint64_t>(map);
        pointers[slot] = const_cast<void *>(map); // the driver copies the 128 bytes themselves
        descriptors.push_back(d);
        ++slot;
        noteDevice(d->device, i);
        out.torch |= d->torch;
        return;
      }
      f = fromArg(classifyArgument(value, k.name, label, k.specialize[i], static_cast<int>(i)));
    }
    appendArgKey(key, f.scalar, f.flags);
    slots[slot] = f.bits;
    pointers[slot] = &slots[slot];
    ++slot;
    noteDevice(f.device, i);
    out.torch |= f.torch;
  };
  for (size_t i = 0; i < numParams; ++i) {
    PyObject *value = values[i];
    if (k.params[i].isConstexpr) {
      if (!value) out.key.push('\xff');
      else appendConstexprFast(out.key, value, k, k.params[i].name);
      continue;
    }
    FastArg f;
    if (!classifyFast(value, k.specialize[i], f)) [[unlikely]] {
      if (value == Py_None) { // specialised as the constexpr None: no slot
        appendNoneArgKey(out.key);
        continue;
      }
      if (PyTuple_Check(value)) { // flattened: a slot per leaf passed at run time
        const size_t need = slot + tupleLeafCount(value) + k.numRuntime;
        if (need > out.slots.size()) { // room for every leaf (and every later parameter), pointers moved along
          const uint64_t *before = slots;
          out.slots.grow(need);
          out.pointers.grow(need);
          slots = out.slots.data();
          pointers = out.pointers.data();
          for (size_t j = 0; j < slot; ++j)
            if (pointers[j] == before + j) pointers[j] = &slots[j];
        }
        KeyBuffer leaves;
        ConstexprValue shape = walkTupleArgument(value, k.name, k.params[i].name,
                                                 [&](py::handle leaf, const std::string &label) {
                                                   packSlow(leaf.ptr(), i, label, leaves);
                                                 });
        appendTupleArgKey(out.key, shape, leaves);
        continue;
      }
      packSlow(value, i, k.params[i].name, out.key);
      continue;
    }
    appendArgKey(out.key, f.scalar, f.flags);
    slots[slot] = f.bits;
    pointers[slot] = &slots[slot];
    ++slot;
    noteDevice(f.device, i);
    out.torch |= f.torch;
  }
  if (descriptors.size()) [[unlikely]]
    appendDescriptorSlots(descriptors, out, slot);
  appendOptions(out.key, b);
}

// Launches and returns the specialisation's Python object (a new reference,
// taken before anything that may run Python: clear_cache() drops the slot's).
PyObject *launchBound(JitKernel &k, const Bound &b, py::handle grid, PyObject *streamArg) {
  Packed packed;
  packArguments(k, b, packed);
  rt::Grid g;
  bool nonEmpty = resolveGrid(grid, k.name, g, [&] { return metaDict(k, b); });
  const int device = launchDevice(k, packed.device);

  if (k.devices.empty()) k.devices.resize(static_cast<size_t>(rt::deviceCount()));
  JitKernel::DeviceCache &cache = k.devices.at(static_cast<size_t>(device));
  const std::string_view key = packed.key.view();
  const rt::LoadedKernel *loaded = nullptr;
  JitKernel::CompiledSlot *slot = nullptr;
  bool miss = false;
  if (cache.last && cache.lastKey == key) [[likely]] {
    loaded = cache.last;
    slot = cache.lastCompiled;
  } else {
    auto it = cache.map.find(key);
    miss = it == cache.map.end();
    const JitKernel::DeviceEntry &e = miss ? loadOnMiss(k, b, device, key) : it->second;
    loaded = e.loaded;
    slot = e.compiled;
    cache.last = loaded;
    cache.lastCompiled = slot;
    cache.lastKey.assign(key);
  }
  // Made by the specialisation's first launch (or warmup), before the launch:
  // a factory that fails stops it.
  PyObject *made = slot->result.ptr();
  if (!made) [[unlikely]] {
    rt::StepTimer making(rt::Step::ResultObject);
    made = compiledKernelOf(k, *slot);
  }
  py::object result = py::reinterpret_borrow<py::object>(made);
  if (!nonEmpty) return result.release().ptr(); // like Triton: a grid with a 0 dimension launches nothing
  std::optional<rt::StepTimer> launching; // a first launch is timed apart: a warm start's last step
  if (miss) [[unlikely]]
    launching.emplace(rt::Step::FirstLaunch);
  CUstream stream = resolveStream(b.stream ? py::handle(b.stream) : py::handle(streamArg), packed.torch, device);
  rt::launchInContext(*loaded, g, packed.pointers.data(), stream, rt::LaunchFlags{b.cooperative, b.pdl});
  return result.release().ptr();
}

// Both passes' keys (tests: they must be equal for every kind of argument).
py::tuple launchKeys(JitKernel &k, py::tuple args, py::handle kwargs) {
  VectorArgs v(args, kwargs);
  Bound b = bind(k, v);
  Packed packed;
  packArguments(k, b, packed);
  Specialized s = specializeArgs(k, b);
  return py::make_tuple(py::bytes(packed.key.view().data(), packed.key.view().size()), py::bytes(s.key));
}

} // namespace

PyObject *launchVector(JitKernel &k, PyObject *grid, PyObject *const *args, size_t nargs, PyObject *kwnames) {
  if (!kwnames && nargs == k.params.size()) [[likely]] { // every parameter positionally: nothing to bind
    Bound b;
    b.positional = args;
    return launchBound(k, b, grid, nullptr);
  }
  Bound b = bind(k, args, nargs, kwnames);
  return launchBound(k, b, grid, nullptr);
}

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
    uint64_t handle = 0;
    if (!addressValue(s.ptr(), handle)) throw py::error_already_set();
    return reinterpret_cast<CUstream>(static_cast<uintptr_t>(handle));
  }
  if (!torchSeen) return nullptr;
  if (void *current = nullptr; gTorchFastPath.currentStream && gTorchFastPath.currentStream(device, &current))
    return static_cast<CUstream>(current);
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
  PyObject *ordinal = PyLong_FromLong(device); // a cached small int
  PyObject *raw = PyObject_CallOneArg(getRawStream, ordinal);
  Py_DECREF(ordinal);
  if (!raw) throw py::error_already_set();
  py::object result = py::reinterpret_steal<py::object>(raw);
  if (!haveRaw) result = result.attr("cuda_stream");
  uint64_t handle = 0;
  if (!addressValue(result.ptr(), handle)) throw py::error_already_set();
  return reinterpret_cast<CUstream>(static_cast<uintptr_t>(handle));
}

// A kernel compiled ahead of time (tessera.compile / warmup) assumed its
// signature's hints: a pointer that is not 16-byte aligned, an int not
// divisible by 16, or an int other than 1 where ':1' was promised would make
// it compute wrong results or fault, so such a launch is refused.
static void checkSpecialisation(uint64_t bits, const ArgSpec &spec, const std::string &kernel,
                                const std::string &param) {
  if (spec.type.isTensorDesc()) return; // never specialised
  if (spec.type.pointer) {
    if (spec.divisibility >= 16 && bits % 16 != 0)
      throw py::value_error(kernel + "(): argument '" + param + "' is not 16-byte aligned, but the kernel was "
                            "compiled assuming it is (':16' in its signature)");
    return;
  }
  if (!spec.type.isIntElement() || spec.type.scalar == ir::ScalarType::I1) return;
  unsigned width = ir::bitWidth(spec.type.scalar);
  int64_t value = width == 64 ? int64_t(bits)
                  : ir::isSigned(spec.type.scalar) ? int64_t(int32_t(uint32_t(bits)))
                                                   : int64_t(uint32_t(bits));
  if (width < 32) value = int64_t(bits & ((uint64_t(1) << width) - 1));
  if (spec.divisibility >= 16 && value % 16 != 0)
    throw py::value_error(kernel + "(): argument '" + param + "' is " + std::to_string(value) +
                          ", not a multiple of 16, but the kernel was compiled assuming it is (':16' in its signature)");
  if (spec.equalsOne && value != 1)
    throw py::value_error(kernel + "(): argument '" + param + "' is " + std::to_string(value) +
                          ", but the kernel was compiled for the value 1 (':1' in its signature)");
}

namespace {

// One argument of a compiled kernel's launch: kernel[grid]'s fast classification (JitKernel.h) where it
// gives exactly the parameter's type (a torch tensor of its dtype, an int for an i32 or i64, a float
// for an fp32), convertArgument's conversions and errors otherwise. torch.compile launches every
// Inductor kernel through here (docs/torch-compile.md).
Arg compiledArgument(py::handle value, const ArgSpec &want, const std::string &kernel, const std::string &param) {
  FastArg f;
  if (!want.type.isTensorDesc() && classifyFast(value.ptr(), false, f)) {
    const bool pointer = (f.flags & 1) != 0;
    const auto scalar = static_cast<ir::ScalarType>(f.scalar);
    Arg a;
    a.spec = want;
    a.device = f.device;
    a.torch = f.torch;
    if (pointer && want.type.pointer && scalar == want.type.scalar) {
      a.bits = f.bits;
      return a;
    }
    if (!pointer && !want.type.pointer) {
      const bool isInt = scalar == ir::ScalarType::I32 || scalar == ir::ScalarType::I64;
      if (isInt && want.type.scalar == ir::ScalarType::I32 && scalar == ir::ScalarType::I32) {
        a.bits = f.bits;
        return a;
      }
      if (isInt && want.type.scalar == ir::ScalarType::I64) {
        long long v = 0;
        if (exactIntValue(value.ptr(), v)) {
          std::memcpy(&a.bits, &v, sizeof v);
          return a;
        }
      }
      if (scalar == ir::ScalarType::F32 && want.type.scalar == ir::ScalarType::F32) {
        a.bits = f.bits;
        return a;
      }
    }
  }
  return convertArgument(value, want, kernel, param);
}

} // namespace

void launchCompiled(const std::shared_ptr<CompiledEntry> &entry, py::handle grid, py::tuple args,
                    py::handle stream) {
  const Kernel &kernel = entry->kernel;
  const std::vector<ArgSpec> &sig = kernel.signature();
  const std::string &name = kernel.name();
  auto compiledForNone = [&](size_t i) { // a runtime parameter specialised as None
    auto it = entry->constexprs.find(entry->params[i].name);
    return it != entry->constexprs.end() && it->second.kind == ConstexprValue::Kind::None;
  };
  if (!entry->runtimeParamsKnown) {
    for (size_t i = 0; i < entry->params.size(); ++i) {
      if (entry->params[i].isConstexpr) continue;
      if (compiledForNone(i)) entry->hasNoneParams = true;
      else entry->runtimeParams.push_back(i);
      auto given = entry->constexprs.find(entry->params[i].name);
      if (given != entry->constexprs.end() && given->second.kind == ConstexprValue::Kind::Tuple)
        entry->hasTupleParams = true;
    }
    entry->runtimeParamsKnown = true;
  }
  const std::vector<size_t> &runtimeParams = entry->runtimeParams; // indices into entry->params
  if (entry->hasNoneParams && args.size() == entry->params.size())
    for (size_t i = 0; i < entry->params.size(); ++i)
      if (!entry->params[i].isConstexpr && !args[i].is_none() && compiledForNone(i))
        throw py::type_error(name + "(): argument '" + entry->params[i].name +
                             "' must be None: the kernel was compiled for None there");
  const size_t n = args.size();
  const bool all = n == entry->params.size();
  if (!all && n != sig.size()) {
    std::string names;
    for (size_t i : runtimeParams) appendJoined(names, ", ", entry->params[i].name);
    throw py::type_error(name + "() takes " + plural(sig.size(), "argument") + " (" + names +
                         "), or all its parameters with the constexprs, but " + std::to_string(n) +
                         (n == 1 ? " was" : " were") + " given");
  }
  // All parameters given, a parameter compiled for a tuple gives one signature entry per leaf passed at run
  // time (its shape's Runtime leaves): `leaves` lists each entry's value, label and parameter. Without tuples
  // (torch.compile's launches) the entries are the runtime parameters themselves, read in place.
  struct Leaf {
    py::handle value;
    std::string label;
    size_t param;
  };
  std::vector<Leaf> leaves;
  if (all && entry->hasTupleParams) {
    std::function<void(py::handle, const ConstexprValue &, const std::string &, size_t)> collect =
        [&](py::handle value, const ConstexprValue &shape, const std::string &label, size_t param) {
          if (shape.kind == ConstexprValue::Kind::Runtime) return leaves.push_back({value, label, param});
          if (shape.kind != ConstexprValue::Kind::Tuple) return;
          if (!PyTuple_Check(value.ptr()) || static_cast<size_t>(PyTuple_GET_SIZE(value.ptr())) != shape.elems.size())
            throw py::type_error(name + "(): argument '" + label + "' must be a tuple of " +
                                 plural(shape.elems.size(), "value") + ": the kernel was compiled for " + shape.str());
          for (size_t e = 0; e < shape.elems.size(); ++e)
            collect(PyTuple_GET_ITEM(value.ptr(), e), shape.elems[e], label + "[" + std::to_string(e) + "]", param);
        };
    for (size_t param : runtimeParams) {
      const std::string &pname = entry->params[param].name;
      auto given = entry->constexprs.find(pname);
      if (given != entry->constexprs.end() && given->second.kind == ConstexprValue::Kind::Tuple)
        collect(args[param], given->second, pname, param);
      else
        leaves.push_back({args[param], pname, param});
    }
    if (leaves.size() != sig.size())
      throw py::type_error(name + "() was given " + plural(leaves.size(), "runtime value") +
                           " but the kernel takes " + std::to_string(sig.size()));
  }
  std::vector<uint64_t> slots;
  slots.reserve(sig.size());
  std::vector<const TensorDesc *> descriptors; // their hidden parameters follow the others
  int device = kUnknownDevice;
  bool torch = false;
  for (size_t j = 0; j < sig.size(); ++j) {
    const bool leaf = !leaves.empty();
    const size_t param = leaf ? leaves[j].param : j < runtimeParams.size() ? runtimeParams[j] : j;
    const std::string &pname = leaf ? leaves[j].label
                               : param < entry->params.size() ? entry->params[param].name : std::to_string(j);
    py::handle value = leaf ? leaves[j].value : args[all ? param : j];
    Arg a = compiledArgument(value, sig[j], name, pname);
    if (sig[j].type.isTensorDesc()) { // the slot holds the address of its encoded map
      TensorDesc *d = tensorDescOf(value.ptr());
      a.bits = reinterpret_cast<uint64_t>(encodedTensorMap(*d, name, pname, param, entry->params.size()));
      descriptors.push_back(d);
    }
    checkSpecialisation(a.bits, sig[j], name, pname);
    if (a.device != kUnknownDevice) {
      if (device != kUnknownDevice && device != a.device)
        throw py::value_error(name + "(): arguments are on different devices (cuda:" + std::to_string(device) +
                              " and cuda:" + std::to_string(a.device) + ")");
      device = a.device;
    }
    torch = torch || a.torch;
    slots.push_back(a.bits);
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
  const rt::LoadedKernel *loaded = kernel.lastLoaded();
  if (!loaded || loaded->device() != device) { // first launch on this device: load (maybe compile) it
    py::gil_scoped_release nogil;
    loaded = &kernel.load(device);
  }
  if (!nonEmpty) return;
  for (const TensorDesc *d : descriptors) appendDescriptorFields(*d, slots);
  std::vector<void *> pointers;
  for (size_t j = 0; j < slots.size(); ++j)
    pointers.push_back(j < sig.size() && sig[j].type.isTensorDesc()
                           ? reinterpret_cast<void *>(static_cast<uintptr_t>(slots[j]))
                           : static_cast<void *>(&slots[j]));
  rt::launchInContext(*loaded, g, pointers.data(), resolveStream(stream, torch, device));
}

void registerLauncher(py::module_ &m) {
  py::class_<JitKernel, std::shared_ptr<JitKernel>>(m, "JitKernel",
                                                    "A @jit kernel's source, parameters and caches.")
      .def(py::init<std::string, std::string, uint32_t, std::string, py::object, py::object, py::object>(),
           py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
           py::arg("defaults") = py::none(), py::arg("do_not_specialize") = py::none(),
           py::arg("params") = py::none())
      .def_readonly("name", &JitKernel::name)
      .def_property(
          "backend", [](const JitKernel &k) { return k.backend; },
          [](JitKernel &k, const std::string &name) {
            if (!isBackendName(name))
              throw py::value_error(k.name + ": backend must be 'llvm' or 'nvrtc', got '" + name + "'");
            if (name != k.backend) k.clearCaches(); // what was compiled and loaded belongs to the old back-end
            k.backend = name;
          },
          "The back-end that makes its PTX: 'llvm', 'nvrtc', or '' for TESSERA_BACKEND (default llvm).")
      .def_property_readonly("path", [](const JitKernel &k) { return k.file->path; })
      .def_property_readonly("source", [](const JitKernel &k) { return k.file->text; })
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
      .def("_launch_keys", &launchKeys, py::arg("args"), py::arg("kwargs") = py::none(),
           "(fast key, full key) of the launch path's two passes (tests: always equal).")
      .def("_cache_key", &cacheKey, py::arg("args"), py::arg("kwargs") = py::none(), py::arg("target") = "sm_90a",
           "{digest, text, path} of the disk-cache entry these arguments compile to for target (None: cache off).")
      .def("cache_info",
           [](const JitKernel &k) {
             py::dict out;
             out["compiled"] = k.compiled.size();
             py::dict loaded;
             for (size_t d = 0; d < k.devices.size(); ++d)
               if (!k.devices[d].map.empty()) loaded[py::int_(d)] = k.devices[d].map.size();
             out["loaded"] = loaded;
             return out;
           })
      .def_readwrite("compiled_kernel_factory", &JitKernel::compiledKernelFactory,
                     "factory(tessera._C.CompiledKernel) -> what launches and warmup() return for a "
                     "specialisation (called once per specialisation); None: the tessera._C.CompiledKernel.")
      .def("clear_cache", &JitKernel::clearCaches);

  m.def(
      "launch",
      [](JitKernel &k, py::handle grid, py::tuple args, py::handle kwargs, py::handle stream) {
        VectorArgs v(args, kwargs);
        Bound b = bind(k, v);
        return py::reinterpret_steal<py::object>(launchBound(k, b, grid, stream.ptr()));
      },
      py::arg("handle"), py::arg("grid"), py::arg("args"), py::arg("kwargs") = py::none(),
      py::arg("stream") = py::none(),
      "Binds, specialises, compiles on a cache miss and launches handle's kernel; returns the "
      "specialisation's compiled kernel (see JitKernel.compiled_kernel_factory).");
  m.def(
      "load_torch_fastpath",
      [] {
        loadTorchFastPath();
        return torchFastPathStatus();
      },
      "Loads the torch fast path now (once; call only after `import torch`): `import tessera` does when torch "
      "is imported already, else the first launch with a torch tensor does.");
  m.def(
      "torch_fastpath",
      [](py::object enable) {
        if (!enable.is_none()) setTorchFastPathEnabled(enable.cast<bool>());
        return torchFastPathStatus();
      },
      py::arg("enable") = py::none(),
      "The launch path's torch C++ fast path (tessera/_torch_fastpath.so): 'on (<path>)' or 'off (<why>)'; "
      "enable=False/True switches a loaded one off and on again.");
  registerFastLaunch(m);
  registerCache(m);
}

} // namespace tessera::python
