// The C++ source/header pair of an ahead-of-time bundle (AotBundle.h).
//
// The generated code loads the CUDA driver itself (dlopen + cuGetProcAddress,
// as the CUDA runtime does) rather than linking libcuda: a program built with
// a bundle links and starts on a machine without the driver, and a launch
// there returns an error instead of the loader refusing to start it.
#include "compiler/cli/AotBundle.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace tessera::cli {

namespace {

const std::set<std::string> &cppKeywords() {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case",
      "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
      "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
      "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
      "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq"};
  return words;
}

// The bundle's own names (NAME.h), which a launch function must not take.
const std::set<std::string> &bundleApiNames() {
  static const std::set<std::string> names = {"Grid", "Image", "Variant", "Launch", "float16", "bfloat16",
                                              "float8_e4m3", "float8_e5m2", "variant_count", "variant",
                                              "last_launch", "last_error", "load", "unload", "tessera_aot_detail"};
  return names;
}

std::string cppElementType(ir::ScalarType t) {
  using S = ir::ScalarType;
  switch (t) {
  case S::I1: return "bool";
  case S::I8: return "int8_t";
  case S::I16: return "int16_t";
  case S::I32: return "int32_t";
  case S::I64: return "int64_t";
  case S::U8: return "uint8_t";
  case S::U16: return "uint16_t";
  case S::U32: return "uint32_t";
  case S::U64: return "uint64_t";
  case S::F16: return "float16";
  case S::BF16: return "bfloat16";
  case S::F32: return "float";
  case S::F64: return "double";
  case S::F8E4M3: return "float8_e4m3";
  case S::F8E5M2: return "float8_e5m2";
  case S::F8E4B15: return "uint8_t"; // Triton's fp8e4b15: no C type, its bytes
  }
  return "void";
}

std::string cppType(const ir::Type &t) { return cppElementType(t.scalar) + (t.pointer ? " *" : " "); }

// The specialisation a variant assumes of argument `name`, as a C++ condition ("" for none).
std::string condition(const ArgSpec &spec, const std::string &name) {
  if (spec.type.pointer)
    return spec.divisibility >= 16 ? "tessera_aot_detail::aligned16(" + name + ")" : "";
  if (spec.equalsOne) return name + " == 1";
  if (spec.divisibility >= 16) return name + " % 16 == 0";
  return "";
}

// Bytes as a C string literal, in lines: printable characters as they are, the rest as
// three-digit octal escapes (which no following digit can extend).
std::string stringLiteral(const std::string &bytes, const std::string &indent) {
  std::string out = indent + "\"";
  size_t lineLength = 0;
  for (unsigned char c : bytes) {
    if (lineLength >= 100) {
      out += "\"\n" + indent + "\"";
      lineLength = 0;
    }
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
      out += static_cast<char>(c);
      ++lineLength;
    } else {
      char escape[5];
      std::snprintf(escape, sizeof escape, "\\%03o", c);
      out += escape;
      lineLength += 4;
    }
  }
  return out + "\"";
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A C++ name for kernel parameter `name`: itself unless it is a keyword or one of the
// launch function's own names.
std::string paramName(const std::string &name) {
  static const std::set<std::string> taken = {"grid", "stream", "aot_params", "aot_variant", "tessera_aot_detail"};
  return cppKeywords().count(name) || taken.count(name) ? name + "_" : name;
}

std::string constexprsText(const AotFunction &f) {
  std::string text;
  for (const auto &[name, value] : f.constexprs) text += (text.empty() ? "" : ", ") + name + "=" + value.str();
  text += (text.empty() ? "" : ", ") + std::string("num_warps=") + std::to_string(f.numWarps);
  if (f.maxRegisters) text += ", maxnreg=" + std::to_string(f.maxRegisters);
  return text;
}

// The config struct's members: the constexprs C++ can hold (ints, bools, finite floats).
std::string configMembers(const AotFunction &f) {
  std::string out;
  for (const auto &[name, value] : f.constexprs) {
    using K = ConstexprValue::Kind;
    std::string member;
    if (isCppIdentifier(name) && name != "num_warps") {
      if (value.kind == K::Int)
        member = "static constexpr int64_t " + name + " = " + std::to_string(int64_t(value.intValue)) + ";";
      else if (value.kind == K::Bool)
        member = "static constexpr bool " + name + " = " + (value.intValue ? "true;" : "false;");
      else if (value.kind == K::Float && std::isfinite(value.floatValue)) {
        char number[40];
        std::snprintf(number, sizeof number, "%.17g", value.floatValue);
        std::string text = number;
        if (text.find_first_of(".e") == std::string::npos) text += ".0";
        member = "static constexpr double " + name + " = " + text + ";";
      }
    }
    out += "  " + (member.empty() ? "// " + name + "=" + value.str() : member) + "\n";
  }
  out += "  static constexpr unsigned num_warps = " + std::to_string(f.numWarps) + ";\n";
  return out;
}

std::string launchSignature(const AotFunction &f) {
  std::string out = "CUresult " + f.name + "(Grid grid, CUstream stream";
  const std::vector<ArgSpec> &sig = f.variants.front().signature;
  for (size_t i = 0; i < sig.size(); ++i) out += ", " + cppType(sig[i].type) + paramName(f.paramNames[i]);
  return out + ")";
}

std::string variantsText(const AotFunction &f) {
  std::string out;
  for (const AotVariant &v : f.variants) out += (out.empty() ? "" : " | ") + v.signatureText;
  return out;
}

const char *kHeaderApi = R"cpp(// The grid of a launch, in blocks: Grid{blocks}, Grid{x, y}, ...
struct Grid {
  unsigned x = 1, y = 1, z = 1;
};

// Element types without a standard C++ name. A __half* or __nv_bfloat16* of the CUDA
// headers (same layout) is passed with reinterpret_cast, as is a CUdeviceptr.
struct float16 { uint16_t bits; };
struct bfloat16 { uint16_t bits; };
struct float8_e4m3 { uint8_t bits; };
struct float8_e5m2 { uint8_t bits; };
)cpp";

const char *kHeaderIntrospection = R"cpp(
// ---- What the bundle holds, and what a launch chose

struct Image {
  const char *arch;          // "sm_90a"
  bool cubin;                // false: PTX, which the driver compiles when it is loaded
  const unsigned char *data; // the cubin, or the PTX text (NUL-terminated)
  std::size_t size;          // bytes (without the PTX's NUL)
  unsigned num_warps;        // the block is 32 * num_warps threads
  unsigned shared_bytes;     // dynamic shared memory per block
};

struct Variant {
  const char *function;  // the launch function
  const char *kernel;    // the kernel's name in its module
  const char *signature; // its specialisation: ':16' a 16-byte aligned pointer or a multiple of 16, ':1' equal to 1
  const Image *images;
  std::size_t image_count;
};

std::size_t variant_count();
const Variant &variant(std::size_t index);

struct Launch {
  const Variant *variant; // the variant the arguments fit (null: none)
  const Image *image;     // the image loaded for the device (null: none)
};
// The calling thread's last launch through this bundle.
Launch last_launch();
// Why the calling thread's last launch failed; "" after one that did not.
const char *last_error();

// Loads every variant's kernel into the current context now instead of at its first
// launch (e.g. before capturing a CUDA graph).
CUresult load();
// Unloads every module the bundle loaded, in every context: call it before destroying a
// context the bundle launched in (a new context may reuse its address). No launch may be running.
void unload();
)cpp";

// The generated .cpp's runtime: the driver, module loading per context, the launch.
const char *kSourceRuntime = R"cpp(
// ---- The CUDA driver, opened on first use

struct Driver {
  CUresult status = CUDA_SUCCESS; // why it is unusable, if it is
  std::string error;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice *) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **) = nullptr;
};

Driver openDriver() {
  Driver d;
  void *library = dlopen(TESSERA_AOT_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    d.status = CUDA_ERROR_NO_DEVICE;
    d.error = std::string("cannot load the CUDA driver " TESSERA_AOT_LIBCUDA ": ") + (why ? why : "unknown error");
    return d;
  }
  // cuGetProcAddress (CUDA 12+) hands out each entry point at the ABI version asked
  // for; older drivers export the same unversioned names.
  using GetProcAddress = CUresult (*)(const char *, void **, int, unsigned long long, void *);
  auto getProcAddress = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  bool complete = true;
  auto find = [&](auto &slot, const char *name, int version) {
    void *fn = nullptr;
    if (!getProcAddress || getProcAddress(name, &fn, version, 0, nullptr) != CUDA_SUCCESS) fn = nullptr;
    if (!fn) fn = dlsym(library, name);
    if (!fn && complete) {
      complete = false;
      d.error = std::string("the CUDA driver " TESSERA_AOT_LIBCUDA " has no ") + name;
    }
    slot = reinterpret_cast<typename std::remove_reference<decltype(slot)>::type>(fn);
  };
  find(d.cuInit, "cuInit", 2000);
  find(d.cuGetErrorName, "cuGetErrorName", 6000);
  find(d.cuCtxGetCurrent, "cuCtxGetCurrent", 4000);
  find(d.cuCtxSetCurrent, "cuCtxSetCurrent", 4000);
  find(d.cuCtxGetDevice, "cuCtxGetDevice", 2000);
  find(d.cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000);
  find(d.cuModuleLoadData, "cuModuleLoadData", 2000);
  find(d.cuModuleUnload, "cuModuleUnload", 2000);
  find(d.cuModuleGetFunction, "cuModuleGetFunction", 2000);
  find(d.cuFuncGetAttribute, "cuFuncGetAttribute", 2020);
  find(d.cuFuncSetAttribute, "cuFuncSetAttribute", 9000);
  find(d.cuLaunchKernel, "cuLaunchKernel", 4000);
  if (!complete) {
    d.status = CUDA_ERROR_NOT_SUPPORTED;
    return d;
  }
  if (CUresult r = d.cuInit(0)) {
    const char *name = nullptr;
    d.status = r;
    d.error = std::string("cuInit failed: ") +
              (d.cuGetErrorName(r, &name) == CUDA_SUCCESS && name ? name : std::to_string(int(r)).c_str());
  }
  return d;
}

const Driver &driver() {
  static const Driver d = openDriver();
  return d;
}

thread_local std::string t_error;
thread_local Launch t_last = {nullptr, nullptr};

CUresult fail(CUresult code, std::string message) {
  t_error = std::move(message);
  return code;
}

std::string errorName(CUresult r) {
  const char *name = nullptr;
  if (driver().cuGetErrorName && driver().cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA error " + std::to_string(int(r));
}

std::string describe(const Variant &v) {
  return std::string(v.function) + " (kernel " + v.kernel + ", " + v.signature + ")";
}

CUresult driverFailure(CUresult r, const char *call, const Variant &v, const std::string &context) {
  return fail(r, std::string(call) + " failed for " + describe(v) + context + ": " + errorName(r));
}

// ---- Images and modules

struct Arch {
  int major = 0, minor = 0;
  bool specific = false; // sm_90a: runs on exactly that architecture
};

Arch parseArch(const char *name) { // "sm_XY" or "sm_XYZ", maybe with an 'a'
  Arch a;
  std::string digits;
  for (const char *p = name + 3; *p; ++p) {
    if (*p >= '0' && *p <= '9') digits += *p;
    else a.specific = true;
  }
  if (digits.size() >= 2) {
    a.minor = digits.back() - '0';
    a.major = std::stoi(digits.substr(0, digits.size() - 1));
  }
  return a;
}

// The image that suits a device of compute capability major.minor: a cubin made for
// it (an sm_90a one before an sm_90 one), else a cubin of the same major version and a
// lower minor one, else PTX the driver can compile for it (the newest).
const Image *chooseImage(const Variant &v, int major, int minor) {
  const Image *best = nullptr;
  int bestRank = 0;
  for (std::size_t i = 0; i < v.image_count; ++i) {
    const Image &image = v.images[i];
    Arch a = parseArch(image.arch);
    bool exact = a.major == major && a.minor == minor;
    int rank = 0;
    if (image.cubin) {
      if (exact) rank = a.specific ? 1000 : 999;
      else if (!a.specific && a.major == major && a.minor < minor) rank = 500 + a.minor;
    } else {
      if (exact && a.specific) rank = 400;
      else if (!a.specific && a.major * 10 + a.minor <= major * 10 + minor) rank = 100 + a.major * 10 + a.minor;
    }
    if (rank > bestRank) best = &image, bestRank = rank;
  }
  return best;
}

struct Loaded {
  CUcontext context;
  CUmodule module;
  CUfunction function;
  const Image *image;
  Loaded *next;
};

std::atomic<Loaded *> g_loaded[kVariantCount];
std::mutex g_loadMutex;

const Loaded *findLoaded(std::size_t index, CUcontext context) {
  for (Loaded *l = g_loaded[index].load(std::memory_order_acquire); l; l = l->next)
    if (l->context == context) return l;
  return nullptr;
}

CUresult loadInto(std::size_t index, CUcontext context, const Loaded **out) {
  std::lock_guard<std::mutex> lock(g_loadMutex);
  if ((*out = findLoaded(index, context))) return CUDA_SUCCESS;
  const Driver &d = driver();
  const Variant &v = k_variants[index];
  CUdevice device = 0;
  int major = 0, minor = 0;
  if (CUresult r = d.cuCtxGetDevice(&device)) return driverFailure(r, "cuCtxGetDevice", v, "");
  if (CUresult r = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    return driverFailure(r, "cuDeviceGetAttribute", v, "");
  if (CUresult r = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    return driverFailure(r, "cuDeviceGetAttribute", v, "");
  const Image *image = chooseImage(v, major, minor);
  const std::string device_arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (!image) {
    std::string have;
    for (std::size_t i = 0; i < v.image_count; ++i)
      have += std::string(i ? ", " : "") + v.images[i].arch + (v.images[i].cubin ? " cubin" : " PTX");
    return fail(CUDA_ERROR_NO_BINARY_FOR_GPU, describe(v) + " has no image for device " + std::to_string(device) +
                                                  " (" + device_arch + "); it holds " + have);
  }
  const std::string on = " on device " + std::to_string(device) + " (" + device_arch + ", " + image->arch +
                         (image->cubin ? " cubin)" : " PTX)");
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (CUresult r = d.cuModuleLoadData(&module, image->data)) return driverFailure(r, "cuModuleLoadData", v, on);
  CUresult r = d.cuModuleGetFunction(&function, module, v.kernel);
  if (r != CUDA_SUCCESS) {
    d.cuModuleUnload(module);
    return driverFailure(r, "cuModuleGetFunction", v, on);
  }
  int allowed = 0;
  const char *call = "cuFuncGetAttribute";
  r = d.cuFuncGetAttribute(&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function);
  if (r == CUDA_SUCCESS && int(image->shared_bytes) > allowed) { // over the default 48 KB: opt in
    call = "cuFuncSetAttribute";
    r = d.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(image->shared_bytes));
  }
  if (r != CUDA_SUCCESS) {
    d.cuModuleUnload(module);
    return driverFailure(r, call, v,
                         on + ", allowing " + std::to_string(image->shared_bytes) + " bytes of dynamic shared memory");
  }
  Loaded *l = new Loaded{context, module, function, image, g_loaded[index].load(std::memory_order_relaxed)};
  g_loaded[index].store(l, std::memory_order_release);
  *out = l;
  return CUDA_SUCCESS;
}

CUresult currentContext(const Variant &v, CUcontext *context) {
  const Driver &d = driver();
  if (d.status != CUDA_SUCCESS) return fail(d.status, d.error);
  if (CUresult r = d.cuCtxGetCurrent(context)) return driverFailure(r, "cuCtxGetCurrent", v, "");
  if (!*context)
    return fail(CUDA_ERROR_INVALID_CONTEXT, describe(v) + ": no CUDA context is current on this thread "
                                            "(cuCtxSetCurrent, or cudaSetDevice with the CUDA runtime)");
  return CUDA_SUCCESS;
}

CUresult launch(std::size_t index, Grid grid, CUstream stream, void **params) {
  const Variant &v = k_variants[index];
  t_last = {&v, nullptr};
  CUcontext context = nullptr;
  if (CUresult r = currentContext(v, &context)) return r;
  const Loaded *l = findLoaded(index, context);
  if (!l)
    if (CUresult r = loadInto(index, context, &l)) return r;
  t_last.image = l->image;
  CUresult r = driver().cuLaunchKernel(l->function, grid.x, grid.y, grid.z, 32 * l->image->num_warps, 1, 1,
                                       l->image->shared_bytes, stream, params, nullptr);
  if (r != CUDA_SUCCESS)
    return driverFailure(r, "cuLaunchKernel", v,
                         " with grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                             std::to_string(grid.z) + ") on " + l->image->arch);
  if (!t_error.empty()) t_error.clear();
  return CUDA_SUCCESS;
}

// inline: no warning where every function has a generic variant and this goes unused.
inline CUresult noVariant(const char *function, const char *variants) {
  t_last = {nullptr, nullptr};
  return fail(CUDA_ERROR_INVALID_VALUE, std::string(function) + ": the arguments fit none of its variants (" +
                                            variants + "; ':16' is a 16-byte aligned pointer or a multiple "
                                            "of 16, ':1' the value 1)");
}

inline bool aligned16(const void *p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

CUresult loadAll() {
  for (std::size_t i = 0; i < kVariantCount; ++i) {
    CUcontext context = nullptr;
    if (CUresult r = currentContext(k_variants[i], &context)) return r;
    const Loaded *l = nullptr;
    if (CUresult r = loadInto(i, context, &l)) return r;
  }
  t_error.clear();
  return CUDA_SUCCESS;
}

void unloadAll() {
  std::lock_guard<std::mutex> lock(g_loadMutex);
  const Driver &d = driver();
  if (d.status != CUDA_SUCCESS) return;
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  for (std::size_t i = 0; i < kVariantCount; ++i) {
    Loaded *l = g_loaded[i].exchange(nullptr);
    while (l) {
      Loaded *next = l->next;
      // cuModuleUnload acts on the module's context, which must be current.
      if (l->context != current) d.cuCtxSetCurrent(l->context);
      d.cuModuleUnload(l->module);
      delete l;
      l = next;
    }
  }
  d.cuCtxSetCurrent(current);
}

} // namespace
} // namespace tessera_aot_detail

std::size_t variant_count() { return tessera_aot_detail::kVariantCount; }
const Variant &variant(std::size_t index) { return tessera_aot_detail::k_variants[index]; }
Launch last_launch() { return tessera_aot_detail::t_last; }
const char *last_error() { return tessera_aot_detail::t_error.c_str(); }
CUresult load() { return tessera_aot_detail::loadAll(); }
void unload() { tessera_aot_detail::unloadAll(); }
)cpp";

} // namespace

bool isBundleApiName(const std::string &name) { return bundleApiNames().count(name) != 0; }

bool isCppIdentifier(const std::string &name) {
  if (name.empty() || cppKeywords().count(name)) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

AotSources generateBundle(const AotBundle &bundle) {
  if (!isCppIdentifier(bundle.name))
    throw std::invalid_argument("--name must be a C++ identifier (it names the namespace and the files), got '" +
                                bundle.name + "'");
  std::set<std::string> taken;
  for (const AotFunction &f : bundle.functions) {
    if (!isCppIdentifier(f.name))
      throw std::invalid_argument("the launch function name '" + f.name + "' (" + f.file + ":" + f.kernel +
                                  ") is not a C++ identifier: give it another with as=NAME");
    for (const std::string &name : {f.name, f.name + "_config"}) {
      if (bundleApiNames().count(name) || name == bundle.name)
        throw std::invalid_argument("the launch function name '" + f.name + "' (" + f.file + ":" + f.kernel +
                                    ") is one of the bundle's own names: give it another with as=NAME");
      if (!taken.insert(name).second)
        throw std::invalid_argument("two launch functions would be named '" + name +
                                    "': give one another name with as=NAME");
    }
  }

  size_t variantCount = 0;
  for (const AotFunction &f : bundle.functions) variantCount += f.variants.size();

  // ---- NAME.h
  std::string h;
  h += "// " + bundle.name + ".h: kernels compiled ahead of time by " + bundle.version +
       ", with a launch function each.\n";
  h += "// Generated by: " + bundle.command + "\n";
  h += "// Do not edit: regenerate instead. Images: " + bundle.imagesNote + ".\n";
  h += "//\n"
       "// Needs cuda.h to compile and, at run time, only the CUDA driver (libcuda.so.1, opened on\n"
       "// the first launch): no Python, no LLVM, no NVRTC, no tessera library. C++14.\n"
       "// A launch function launches on the calling thread's current context (loading its kernel\n"
       "// there on first use) and returns the driver's CUresult; last_error() says why one failed.\n"
       "// It picks the first variant whose specialisation the arguments fit (':16': a 16-byte\n"
       "// aligned pointer or a multiple of 16; ':1': the value 1), and the image that fits the\n"
       "// device: its own cubin, a cubin of an earlier minor version, or PTX. docs/cli.md.\n";
  h += "#pragma once\n\n#include <cuda.h>\n\n#include <cstddef>\n#include <cstdint>\n\n";
  h += "namespace " + bundle.name + " {\n\n";
  h += kHeaderApi;
  for (const AotFunction &f : bundle.functions) {
    h += "\n// " + f.file + ":" + f.kernel + ", " + constexprsText(f) + ".\n";
    h += "// Variants, tried in this order: " + variantsText(f) + "\n";
    h += launchSignature(f) + ";\n";
    h += "struct " + f.name + "_config {\n" + configMembers(f) + "};\n";
  }
  h += kHeaderIntrospection;
  h += "\n} // namespace " + bundle.name + "\n";

  // ---- NAME.cpp
  std::string s;
  s += "// " + bundle.name + ".cpp: the kernels and launch functions of " + bundle.name + ".h (" + bundle.version +
       ").\n// Generated by: " + bundle.command + "\n// Do not edit: regenerate instead.\n";
  s += "#include \"" + bundle.name + ".h\"\n\n";
  s += "#if defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Woverlength-strings\" // the images\n#endif\n\n";
  s += "#include <atomic>\n#include <mutex>\n#include <string>\n#include <type_traits>\n\n#include <dlfcn.h>\n\n";
  s += "// The CUDA driver library, opened on the first launch (-DTESSERA_AOT_LIBCUDA=\\\"...\\\" names another).\n"
       "#ifndef TESSERA_AOT_LIBCUDA\n#define TESSERA_AOT_LIBCUDA \"libcuda.so.1\"\n#endif\n\n";
  // The images and the runtime live in tessera_aot_detail, where no launch function's name
  // (declared in the enclosing namespace) can hide them.
  s += "namespace " + bundle.name + " {\nnamespace tessera_aot_detail {\nnamespace {\n\n";
  s += "// ---- The images\n\n";
  size_t imageIndex = 0, variantIndex = 0;
  std::string variantsTable = "const Variant k_variants[] = {\n";
  for (const AotFunction &f : bundle.functions) {
    for (const AotVariant &v : f.variants) {
      std::string table = "const Image k_images_" + std::to_string(variantIndex) + "[] = {\n";
      for (const AotImage &image : v.images) {
        std::string array = "k_image_" + std::to_string(imageIndex++);
        s += "// " + f.name + ": " + v.signatureText + ", " + image.arch + (image.cubin ? " cubin" : " PTX") + "\n";
        s += "alignas(64) const char " + array + "[] =\n" + stringLiteral(image.bytes, "    ") + ";\n\n";
        table += "    {" + quoted(image.arch) + ", " + (image.cubin ? "true" : "false") +
                 ", reinterpret_cast<const unsigned char *>(" + array + "), sizeof " + array + " - 1, " +
                 std::to_string(image.numWarps) + ", " + std::to_string(image.sharedBytes) + "},\n";
      }
      s += table + "};\n\n";
      variantsTable += "    {" + quoted(f.name) + ", " + quoted(f.kernel) + ", " + quoted(v.signatureText) +
                       ", k_images_" + std::to_string(variantIndex) + ", " + std::to_string(v.images.size()) +
                       "},\n";
      ++variantIndex;
    }
  }
  s += variantsTable + "};\n";
  s += "constexpr std::size_t kVariantCount = " + std::to_string(variantCount) + ";\n";
  s += kSourceRuntime;

  // The launch functions: pick the variant, then launch it.
  variantIndex = 0;
  for (const AotFunction &f : bundle.functions) {
    s += "\n" + launchSignature(f) + " {\n";
    s += "  std::size_t aot_variant;\n";
    bool exhaustive = false;
    for (size_t vi = 0; vi < f.variants.size(); ++vi) {
      const AotVariant &v = f.variants[vi];
      std::string conditions;
      for (size_t i = 0; i < v.signature.size(); ++i) {
        std::string c = condition(v.signature[i], paramName(f.paramNames[i]));
        if (!c.empty()) conditions += (conditions.empty() ? "" : " && ") + c;
      }
      std::string index = std::to_string(variantIndex + vi);
      if (conditions.empty()) {
        s += vi ? "  else\n    aot_variant = " + index + ";\n" : "  aot_variant = " + index + ";\n";
        exhaustive = true;
        break;
      }
      s += std::string(vi ? "  else if (" : "  if (") + conditions + ")\n    aot_variant = " + index + ";\n";
    }
    if (!exhaustive)
      s += "  else\n    return tessera_aot_detail::noVariant(" + quoted(f.name) + ", " + quoted(variantsText(f)) + ");\n";
    const std::vector<ArgSpec> &sig = f.variants.front().signature;
    if (sig.empty()) {
      s += "  return tessera_aot_detail::launch(aot_variant, grid, stream, nullptr);\n}\n";
    } else {
      s += "  void *aot_params[] = {";
      for (size_t i = 0; i < sig.size(); ++i) s += (i ? ", &" : "&") + paramName(f.paramNames[i]);
      s += "};\n  return tessera_aot_detail::launch(aot_variant, grid, stream, aot_params);\n}\n";
    }
    variantIndex += f.variants.size();
  }
  s += "\n} // namespace " + bundle.name + "\n";
  return {h, s};
}

} // namespace tessera::cli
