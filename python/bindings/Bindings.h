// Shared declarations of the tessera._C extension. One file per concept:
//   Module.cpp     PYBIND11_MODULE: calls the register* functions below
//   Errors.cpp     C++ exceptions → tessera.CompilationError / DriverError / LaunchError
//   Compile.cpp    compile(), kernel_parameters(), CompiledKernel, version
//   Arguments.cpp  Python values → argument types, hints and launch bytes
//   TensorDescriptor.cpp  tessera.TensorDescriptor's C base (TMA descriptors)
//   Specialization.cpp  JitKernel: binding, specialisation key, compile on a miss
//   Launcher.cpp   the launch: the hot pass, caches, grid, device, stream, launch()
//   Runtime.cpp    driver / device queries, synchronize, load_ptx
//
// Only simple C++ types cross into libtessera (std::string, std::vector,
// std::map, the plain structs of Compiler.h and the runtime), so the
// extension may be compiled by a newer g++ than libtessera was.
#pragma once

#include "compiler/driver/Compiler.h"
#include "runtime/Kernel.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::python {

namespace py = pybind11;

void registerErrors(py::module_ &m);
void registerCompile(py::module_ &m);
void registerLauncher(py::module_ &m);
void registerRuntime(py::module_ &m);
void registerInterpreter(py::module_ &m); // Interpreter.cpp: interpret mode on the host
void registerTensorDescriptor(py::module_ &m); // TensorDescriptor.cpp

// out += separator + item, without the separator before the first item.
inline void appendJoined(std::string &out, const char *separator, const std::string &item) {
  if (!out.empty()) out += separator;
  out += item;
}

// ------------------------------------------------------------- parameters

struct ParamInfo {
  std::string name;
  bool isConstexpr = false;
  bool hasDefault = false;
};

// The parameters of @jit function `kernelName` in `file`, read from its AST
// (constexpr: annotated tl.constexpr). Throws CompileError when the file
// does not parse or has no such function.
std::vector<ParamInfo> kernelParameters(const std::shared_ptr<const SourceFile> &file,
                                        const std::string &kernelName);

std::shared_ptr<const SourceFile> makeSourceFile(std::string text, std::string path,
                                                 uint32_t firstLine);

// -------------------------------------------------------------- arguments

inline constexpr int kUnknownDevice = -2; // not a device pointer, or its device is unknown

// One runtime argument, classified.
struct Arg {
  ArgSpec spec;           // type (scalar or pointer) and Triton's hints
  uint64_t bits = 0;      // the value as cuLaunchKernel reads it (little-endian, zero-padded)
  int device = kUnknownDevice;
  bool torch = false;     // a torch tensor: launch on torch's current stream
};

// A torch dtype's name ("torch.bfloat16", "float32", "half", ...) as a
// scalar type; nullopt for dtypes tessera kernels do not take.
std::optional<ir::ScalarType> dtypeFromName(std::string_view name);

// Triton's fp8 types that no NVIDIA target has (a tensor wrapped by triton.reinterpret as
// fp8e4b8, fp8e5b16: AMD's): Triton's CompilationError, "type fp8e4b8 not supported in this
// architecture. ..." (Arguments.cpp); returns for any other name.
void rejectUnsupportedFp8(const std::string &dtypeName, const std::string &kernel, const std::string &param);

// ---------------------------------------------------- tensor descriptors

// A tessera.TensorDescriptor as the launch path reads it: what was read from
// its base, shape, strides (read-only in Python) and block_shape (assignable:
// a new block clears `encoded`), and the encoded CUtensorMap once a launch has encoded it
// (TensorDescriptor.cpp; the encoding rules are runtime/TensorMap.h's).
struct TensorDesc {
  uint64_t address = 0;         // base.data_ptr()
  int scalar = -1;              // ir::ScalarType of base.dtype; -1: a dtype tessera does not take
  std::string dtypeName;        // str(base.dtype), for messages
  int device = kUnknownDevice;  // base.device's CUDA ordinal, if it says
  std::string hostDevice;       // base.device.type when not "cuda" ("cpu"): cannot be launched
  bool torch = false;           // base is a torch tensor: launch on torch's current stream
  std::vector<int64_t> shape, strides, block;
  bool nanPadding = false;      // padding="nan": out-of-bounds elements read as NaN
  bool encoded = false;         // (a block the TMA unit cannot copy, ir::tmaCopiesBlock: the map stays zero)
  unsigned char *map = nullptr; // rt::kTensorMapBytes, 64-byte aligned (inside the Python object)
};

// The TensorDesc of a tessera.TensorDescriptor (or subclass), else null. A
// TensorDescriptor of another library (Triton's triton.tools.tensor_descriptor
// dataclass: base, shape, strides, block_shape, padding) is read through the
// tessera.TensorDescriptor made from its fields (kept on it, made again when they
// change: tessera/tensor_descriptor.py's _adopt).
TensorDesc *tensorDescOf(PyObject *value);

// Appends a descriptor argument's hidden parameters (rt::descriptorFields) to `out`.
template <typename Slots> void appendDescriptorFields(const TensorDesc &d, Slots &out) {
  uint64_t fields[rt::descriptorFieldCount(rt::kMaxTensorMapRank)];
  rt::descriptorFields(d.address, d.shape.data(), d.strides.data(), d.shape.size(), d.nanPadding, fields);
  for (size_t i = 0; i < rt::descriptorFieldCount(d.shape.size()); ++i) out.push_back(fields[i]);
}

// "kernel(): tensor descriptor argument 'a_desc' (parameter 1 of 5)": how
// descriptor errors name their argument (`index` counts from 0).
std::string tensorDescLabel(const std::string &kernel, const std::string &param, size_t index, size_t count);

[[gnu::noinline]] void encodeTensorDesc(TensorDesc &d, const std::string &kernel, const std::string &param,
                                        size_t index, size_t count);

// The descriptor's 128-byte CUtensorMap, encoded by the first call (checked
// first: TypeError / ValueError / DriverError naming the argument); later
// calls return the cached bytes (a launch reads them, nothing else).
inline const void *encodedTensorMap(TensorDesc &d, const std::string &kernel, const std::string &param,
                                    size_t index, size_t count) {
  if (!d.encoded) [[unlikely]]
    encodeTensorDesc(d, kernel, param, index, count);
  return d.map;
}

// Classifies the value of runtime parameter `param` of kernel `kernel`
// (`position`: its index among the kernel's parameters, for Triton's wording; -1: unknown).
// `specialize` false: no ":16" / ":1" hints (do_not_specialize).
// Throws TypeError / ValueError naming the argument.
Arg classifyArgument(py::handle value, const std::string &kernel, const std::string &param,
                     bool specialize = true, int position = -1);

// Converts to the exact parameter type `want` of an already compiled kernel
// (ints narrowed or widened, pointers' dtypes checked).
Arg convertArgument(py::handle value, const ArgSpec &want, const std::string &kernel,
                    const std::string &param);

// The value of a constexpr parameter (or an entry of compile(constexprs=)).
ConstexprValue toConstexpr(py::handle value, const std::string &kernel, const std::string &param);

// A tuple argument of a runtime parameter, flattened depth first as Triton's launcher does (its jit.py): each
// leaf is a nested tuple (a NamedTuple keeps its field names), a constexpr (None, tl.constexpr(v), a
// string, a dtype) or a value passed at run time, given to `runtimeLeaf` with its label ("Ptrs[1][0]",
// which errors name). Returns the tuple's shape: a Tuple whose leaves passed at run time are Runtime.
ConstexprValue walkTupleArgument(py::handle value, const std::string &kernel, const std::string &label,
                                 const std::function<void(py::handle, const std::string &)> &runtimeLeaf);
// Python's value of a constexpr (a Runtime leaf: Ellipsis).
py::object fromConstexpr(const ConstexprValue &value);

// "*fp32:16", "i32:1", "fp32", "tensordesc<bf16[128,64]>".
std::string argSpecText(const ArgSpec &spec);
std::string signatureText(const std::vector<ArgSpec> &signature);

// --------------------------------------------------------------- launches

// A grid from a tuple/list of 1-3 ints or an int. Returns false (launch
// nothing) when a dimension is 0, like Triton.
bool toGrid(py::handle grid, rt::Grid &out, const std::string &kernel);
// Triton's extern_libs launch option: None, {} or {"libdevice": path} (tessera's libdevice functions are its
// own, so the path changes nothing); any other library is a ValueError naming it (Specialization.cpp).
void checkExternLibs(const std::string &kernel, py::handle value);

// The stream to launch on: an explicit one (int handle, object with
// .cuda_stream, or None), else torch's current stream of `device` when a
// torch tensor was among the arguments, else the legacy default stream.
CUstream resolveStream(py::handle explicitStream, bool torchSeen, int device);

// A kernel compiled for one specialisation (what warmup()/compile() return
// and what the launch caches hold).
struct CompiledEntry {
  std::shared_ptr<const SourceFile> file;
  std::vector<ParamInfo> params; // all parameters, constexprs included
  Kernel kernel;                 // PTX + lazily loaded modules per device
  std::map<std::string, ConstexprValue> constexprs;
  unsigned numWarps = 4;  // as asked for; kernel.numWarps() is what runs (a producer warpgroup adds 4)
  unsigned numStages = 3;
  unsigned maxRegisters = 0; // maxnreg (0: none)
  int fpFusion = -1;         // enable_fp_fusion (-1: TESSERA_FP_FUSION)
  std::string backend; // as asked for ("" = TESSERA_BACKEND); kernel.compiled().backend is the resolved one
  // The runtime parameters' indices into params (not constexpr, not specialised as None), made by
  // the first launch (launchCompiled, under the GIL).
  mutable std::vector<size_t> runtimeParams;
  mutable bool runtimeParamsKnown = false;
  mutable bool hasNoneParams = false; // some runtime parameter was specialised as None
  mutable bool hasTupleParams = false; // some runtime parameter was given a tuple (its leaves are the entries)
};

// Launches `entry` with the values of its runtime parameters (`args` gives
// either all parameters, constexprs included, or only the runtime ones).
void launchCompiled(const std::shared_ptr<CompiledEntry> &entry, py::handle grid, py::tuple args,
                    py::handle stream);

} // namespace tessera::python
