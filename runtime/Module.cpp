// PTX -> cubin with the driver's JIT linker, and loading cubins as kernels.
#include "runtime/Module.h"

#include "runtime/DriverApi.h"

#include <cstdint>
#include <utility>

namespace tessera::rt {

using detail::check;
using detail::driver;

namespace {

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string deviceLabel(const DeviceProperties &props) {
  return "device " + std::to_string(props.ordinal) + " (" + props.name + ", " + props.arch() + ")";
}

std::string trimmedLog(const std::vector<char> &buffer) {
  std::string log(buffer.data()); // the driver NUL-terminates (buffer is zeroed)
  while (!log.empty() && (log.back() == '\n' || log.back() == '\r' || log.back() == ' '))
    log.pop_back();
  return log;
}

void *asOptionValue(std::uintptr_t value) { return reinterpret_cast<void *>(value); }

} // namespace

// --- Architectures --------------------------------------------------------

std::string Arch::str() const {
  std::string s = "sm_" + std::to_string(major) + std::to_string(minor);
  if (suffix)
    s += suffix;
  return s;
}

std::optional<Arch> parseArch(std::string_view text) {
  if (text.starts_with("sm_"))
    text.remove_prefix(3);
  else if (text.starts_with("compute_"))
    text.remove_prefix(8);
  else
    return std::nullopt;
  Arch arch;
  if (!text.empty() && (text.back() == 'a' || text.back() == 'f')) {
    arch.suffix = text.back();
    text.remove_suffix(1);
  }
  // Two or three digits: the last is the minor version (sm_90 -> 9.0,
  // sm_100 -> 10.0, sm_121 -> 12.1).
  if (text.size() < 2 || text.size() > 3)
    return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9')
      return std::nullopt;
  arch.minor = text.back() - '0';
  arch.major = 0;
  for (char c : text.substr(0, text.size() - 1))
    arch.major = arch.major * 10 + (c - '0');
  if (arch.major == 0)
    return std::nullopt;
  return arch;
}

std::optional<int> jitTargetFor(const Arch &arch) {
  // The CUjit_target values the CUDA headers define: plain targets are the
  // compute capability; 'a' and 'f' variants are offset by a base.
  static constexpr int kKnown[] = {
      CU_TARGET_COMPUTE_50,  CU_TARGET_COMPUTE_52,  CU_TARGET_COMPUTE_53,
      CU_TARGET_COMPUTE_60,  CU_TARGET_COMPUTE_61,  CU_TARGET_COMPUTE_62,
      CU_TARGET_COMPUTE_70,  CU_TARGET_COMPUTE_72,  CU_TARGET_COMPUTE_75,
      CU_TARGET_COMPUTE_80,  CU_TARGET_COMPUTE_86,  CU_TARGET_COMPUTE_87,
      CU_TARGET_COMPUTE_89,  CU_TARGET_COMPUTE_90,  CU_TARGET_COMPUTE_100,
      CU_TARGET_COMPUTE_103, CU_TARGET_COMPUTE_110, CU_TARGET_COMPUTE_120,
      CU_TARGET_COMPUTE_121, CU_TARGET_COMPUTE_90A, CU_TARGET_COMPUTE_100A,
      CU_TARGET_COMPUTE_103A, CU_TARGET_COMPUTE_110A, CU_TARGET_COMPUTE_120A,
      CU_TARGET_COMPUTE_121A, CU_TARGET_COMPUTE_100F, CU_TARGET_COMPUTE_103F,
      CU_TARGET_COMPUTE_110F, CU_TARGET_COMPUTE_120F, CU_TARGET_COMPUTE_121F,
  };
  int value = arch.computeCapability();
  if (arch.suffix == 'a')
    value += CU_COMPUTE_ACCELERATED_TARGET_BASE;
  else if (arch.suffix == 'f')
    value += CU_COMPUTE_FAMILY_TARGET_BASE;
  for (int known : kKnown)
    if (known == value)
      return value;
  return std::nullopt;
}

std::optional<Arch> ptxTarget(std::string_view ptx) {
  while (!ptx.empty()) {
    std::size_t eol = ptx.find('\n');
    std::string_view line = ptx.substr(0, eol);
    ptx = eol == std::string_view::npos ? std::string_view() : ptx.substr(eol + 1);
    std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      continue;
    line.remove_prefix(start);
    if (!line.starts_with(".target") || line.size() < 8 || (line[7] != ' ' && line[7] != '\t'))
      continue;
    line.remove_prefix(8);
    start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      return std::nullopt;
    line.remove_prefix(start);
    return parseArch(line.substr(0, line.find_first_of(" \t,\r/")));
  }
  return std::nullopt;
}

// --- PTX -> cubin ---------------------------------------------------------

LinkResult linkPtx(std::string_view ptx, const LinkOptions &options) {
  const std::string kernel = options.kernelName.empty() ? "<unnamed>" : options.kernelName;
  std::string archName = options.arch;
  if (archName.empty())
    if (std::optional<Arch> own = ptxTarget(ptx); own && own->suffix)
      archName = own->str();
  std::optional<int> target;
  if (!archName.empty()) {
    std::optional<Arch> arch = parseArch(archName);
    if (!arch)
      throw Error("cannot compile kernel " + quoted(kernel) + ": unknown GPU architecture " +
                  quoted(archName) + " (expected a name like sm_80, sm_90a or sm_100f)");
    target = jitTargetFor(*arch);
  }

  const auto &api = driver();
  DeviceGuard guard(options.device);
  const DeviceProperties &props = deviceProperties(guard.device());
  auto forWhat = [&] {
    return "the PTX of kernel " + quoted(kernel) + " for " +
           (archName.empty() ? props.arch() : archName) + " on " + deviceLabel(props);
  };

  constexpr std::size_t kLogBytes = 64 * 1024;
  std::vector<char> errorLog(kLogBytes, 0), infoLog(kLogBytes, 0);
  std::vector<CUjit_option> keys = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                    CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                    CU_JIT_LOG_VERBOSE};
  std::vector<void *> values = {errorLog.data(), asOptionValue(kLogBytes - 1), infoLog.data(),
                                asOptionValue(kLogBytes - 1), asOptionValue(0)};
  if (target) { // else the driver targets the device of the current context
    keys.push_back(CU_JIT_TARGET);
    values.push_back(asOptionValue(static_cast<std::uintptr_t>(*target)));
  }

  CUlinkState state = nullptr;
  check(api.cuLinkCreate(static_cast<unsigned>(keys.size()), keys.data(), values.data(), &state),
        [&] { return "cuLinkCreate failed while preparing to compile " + forWhat(); });
  struct LinkDestroyer {
    const detail::DriverApi &api;
    CUlinkState state;
    ~LinkDestroyer() { (void)api.cuLinkDestroy(state); }
  } destroyer{api, state};

  auto failWithLog = [&](CUresult result, const char *call) {
    std::string message = std::string(call) + " failed while compiling " + forWhat() + ": " +
                          detail::describe(result);
    std::string log = trimmedLog(errorLog);
    message += log.empty() ? std::string("\n(the JIT error log is empty)")
                           : "\nJIT error log:\n" + log;
    throw DriverError(message, static_cast<int>(result));
  };

  std::string text(ptx); // the JIT wants NUL-terminated PTX
  CUresult result = api.cuLinkAddData(state, CU_JIT_INPUT_PTX, text.data(), text.size() + 1,
                                      kernel.c_str(), 0, nullptr, nullptr);
  if (result != CUDA_SUCCESS)
    failWithLog(result, "cuLinkAddData");

  void *cubin = nullptr;
  std::size_t cubinBytes = 0;
  result = api.cuLinkComplete(state, &cubin, &cubinBytes);
  if (result != CUDA_SUCCESS)
    failWithLog(result, "cuLinkComplete");

  LinkResult out; // copy: the cubin belongs to the link state
  out.cubin.assign(static_cast<const char *>(cubin), static_cast<const char *>(cubin) + cubinBytes);
  out.infoLog = trimmedLog(infoLog);
  return out;
}

// --- Loaded kernels -------------------------------------------------------

LoadedKernel::~LoadedKernel() { release(); }

LoadedKernel::LoadedKernel(LoadedKernel &&other) noexcept { *this = std::move(other); }

LoadedKernel &LoadedKernel::operator=(LoadedKernel &&other) noexcept {
  if (this != &other) {
    release();
    module_ = std::exchange(other.module_, nullptr);
    function_ = std::exchange(other.function_, nullptr);
    context_ = std::exchange(other.context_, nullptr);
    device_ = std::exchange(other.device_, -1);
    name_ = std::move(other.name_);
    numWarps_ = std::exchange(other.numWarps_, 0);
    blockThreads_ = std::exchange(other.blockThreads_, 0);
    sharedBytes_ = std::exchange(other.sharedBytes_, 0);
    attributes_ = std::exchange(other.attributes_, {});
  }
  return *this;
}

void LoadedKernel::release() noexcept {
  CUmodule module = std::exchange(module_, nullptr);
  function_ = nullptr;
  // At exit the driver may already have torn itself down: leak instead.
  if (!module || detail::shuttingDown())
    return;
  try {
    const auto &api = driver();
    // cuModuleUnload acts on the module's context, which must be current.
    CUcontext current = nullptr;
    bool switched = false;
    if (api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != context_)
      switched = api.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
    (void)api.cuModuleUnload(module); // failures (e.g. a torn-down context) are ignored
    if (switched)
      (void)api.cuCtxSetCurrent(current);
  } catch (...) {
  }
}

LoadedKernel loadKernel(const void *image, std::string_view name, int numWarps,
                        unsigned sharedBytes, int device) {
  if (!image)
    throw Error("cannot load kernel " + quoted(name) + ": no image given");
  if (numWarps < 1 || numWarps > 1024)
    throw Error("cannot load kernel " + quoted(name) + ": numWarps must be between 1 and 1024, got " +
                std::to_string(numWarps));
  const auto &api = driver();
  DeviceGuard guard(device);
  const DeviceProperties &props = deviceProperties(guard.device());

  LoadedKernel k;
  k.name_ = std::string(name);
  k.device_ = guard.device();
  k.context_ = guard.context();
  k.numWarps_ = numWarps;
  k.blockThreads_ = 32u * static_cast<unsigned>(numWarps);
  k.sharedBytes_ = sharedBytes;
  check(api.cuModuleLoadData(&k.module_, image), [&] {
    return "cuModuleLoadData failed while loading kernel " + quoted(name) + " on " +
           deviceLabel(props);
  });
  // From here on k's destructor unloads the module if we throw.
  check(api.cuModuleGetFunction(&k.function_, k.module_, k.name_.c_str()), [&] {
    return "cuModuleGetFunction failed while looking up kernel " + quoted(name) +
           " in its module";
  });

  auto attribute = [&](CUfunction_attribute which, const char *what) {
    int value = 0;
    check(api.cuFuncGetAttribute(&value, which, k.function_), [&] {
      return std::string("cuFuncGetAttribute failed while reading the ") + what +
             " of kernel " + quoted(name);
    });
    return value;
  };
  FunctionAttributes &a = k.attributes_;
  a.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, "register count");
  a.staticSharedBytes = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory");
  a.localBytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local memory");
  a.constBytes = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "constant memory");
  a.maxThreadsPerBlock = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "thread limit");
  a.ptxVersion = attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX version");
  a.binaryVersion = attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "binary version");
  a.maxDynamicSharedBytes =
      attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "dynamic shared memory limit");

  const long long threads = k.blockThreads_;
  if (threads > props.maxThreadsPerBlock)
    throw Error("kernel " + quoted(name) + " needs " + std::to_string(threads) +
                " threads per block (" + std::to_string(numWarps) + " warps of 32) but " +
                deviceLabel(props) + " allows at most " +
                std::to_string(props.maxThreadsPerBlock));
  if (threads > a.maxThreadsPerBlock)
    throw Error("kernel " + quoted(name) + " needs " + std::to_string(threads) +
                " threads per block (" + std::to_string(numWarps) +
                " warps of 32) but, using " + std::to_string(a.registers) +
                " registers per thread, it can run at most " +
                std::to_string(a.maxThreadsPerBlock) + " on " + deviceLabel(props));

  const long long shared = static_cast<long long>(sharedBytes) + a.staticSharedBytes;
  if (shared > props.sharedPerBlockOptin)
    throw Error("kernel " + quoted(name) + " needs " + std::to_string(shared) +
                " bytes of shared memory per block (" + std::to_string(sharedBytes) +
                " dynamic + " + std::to_string(a.staticSharedBytes) + " static) but " +
                deviceLabel(props) + " allows at most " +
                std::to_string(props.sharedPerBlockOptin) + " bytes per block (opt-in limit)");
  if (static_cast<long long>(sharedBytes) > a.maxDynamicSharedBytes) {
    // More than the default 48 KB: opt in to exactly what the kernel needs.
    check(api.cuFuncSetAttribute(k.function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(sharedBytes)),
          [&] {
            return "cuFuncSetAttribute failed while allowing kernel " + quoted(name) + " " +
                   std::to_string(sharedBytes) + " bytes of dynamic shared memory on " +
                   deviceLabel(props);
          });
    a.maxDynamicSharedBytes =
        attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "dynamic shared memory limit");
  }
  return k;
}

LoadedKernel loadPtxKernel(std::string_view ptx, std::string_view name, int numWarps,
                           unsigned sharedBytes, std::string_view arch, int device) {
  LinkOptions options;
  options.arch = std::string(arch);
  options.kernelName = std::string(name);
  options.device = device;
  LinkResult linked = linkPtx(ptx, options);
  return loadKernel(linked.cubin.data(), name, numWarps, sharedBytes, device);
}

} // namespace tessera::rt
