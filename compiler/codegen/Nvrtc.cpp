// NVRTC opened lazily: the handful of entry points the NVRTC back-end uses,
// found with dlsym, and the compile call that turns its log into a report
// naming the generated source lines.
#include "compiler/codegen/Nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <iterator>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <vector>

namespace tessera::codegen {

namespace {

// nvrtc.h, the parts used here (the ABI has been stable since CUDA 7).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct NvrtcApi {
  nvrtcResult (*version)(int *, int *) = nullptr;
  const char *(*errorString)(nvrtcResult) = nullptr;
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                               const char *const *) = nullptr;
  nvrtcResult (*destroyProgram)(nvrtcProgram *) = nullptr;
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getPTX)(nvrtcProgram, char *) = nullptr;
};

struct Loaded {
  NvrtcStatus status;
  NvrtcApi api;
};

std::mutex &extraMutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string> &extraDirectories() {
  static std::vector<std::string> dirs;
  return dirs;
}

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char *path = std::getenv("TESSERA_NVRTC"); path && *path) return {path}; // that one or none
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so", "libnvrtc.so.12"};
  for (const char *n : names) out.push_back(n);
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home) {
    dirs.push_back(std::string(home) + "/lib64");
    dirs.push_back(std::string(home) + "/lib");
  }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/lib");
  Dl_info self{};
  if (dladdr(reinterpret_cast<void *>(&nvrtcStatus), &self) && self.dli_fname) {
    std::string lib = self.dli_fname;
    if (size_t slash = lib.rfind('/'); slash != std::string::npos) dirs.push_back(lib.substr(0, slash));
  }
  {
    std::lock_guard lock(extraMutex());
    dirs.insert(dirs.end(), extraDirectories().begin(), extraDirectories().end());
  }
  for (const std::string &dir : dirs)
    for (const char *n : names) out.push_back(dir + "/" + n);
  return out;
}

Loaded load() {
  Loaded l;
  std::string tried;
  void *handle = nullptr;
  for (const std::string &name : candidates()) {
    dlerror();
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      l.status.library = name;
      break;
    }
    const char *why = dlerror();
    tried += "\n  " + name + ": " + (why ? why : "not loadable");
  }
  if (!handle) {
    l.status.error = "NVRTC (libnvrtc.so.13 or libnvrtc.so) could not be loaded; install the CUDA toolkit's "
                     "NVRTC (e.g. pip install nvidia-cuda-nvrtc, or the cuda-nvrtc package) or point "
                     "TESSERA_NVRTC at the library. Tried:" + tried;
    return l;
  }
  std::string missing;
  auto resolve = [&](auto &slot, const char *symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, symbol));
    if (!slot) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  resolve(l.api.version, "nvrtcVersion");
  resolve(l.api.errorString, "nvrtcGetErrorString");
  resolve(l.api.createProgram, "nvrtcCreateProgram");
  resolve(l.api.destroyProgram, "nvrtcDestroyProgram");
  resolve(l.api.compileProgram, "nvrtcCompileProgram");
  resolve(l.api.getProgramLogSize, "nvrtcGetProgramLogSize");
  resolve(l.api.getProgramLog, "nvrtcGetProgramLog");
  resolve(l.api.getPTXSize, "nvrtcGetPTXSize");
  resolve(l.api.getPTX, "nvrtcGetPTX");
  if (!missing.empty()) {
    l.status.error = "NVRTC library " + l.status.library + " lacks " + missing;
    return l;
  }
  if (l.api.version(&l.status.major, &l.status.minor) != kNvrtcSuccess) l.status.major = l.status.minor = 0;
  l.status.available = true;
  return l; // never dlclose'd
}

const Loaded &loaded() {
  static const Loaded l = load();
  return l;
}

std::string describe(const NvrtcApi &api, nvrtcResult r) {
  const char *text = api.errorString ? api.errorString(r) : nullptr;
  return text ? std::string(text) : "nvrtcResult " + std::to_string(r);
}

// NVRTC's log with the generated source line under each "NAME(LINE): ..." message.
std::string annotateLog(const std::string &log, const std::string &source, const std::string &name) {
  std::vector<std::string> lines;
  {
    std::istringstream in(source);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::string out;
  std::istringstream in(log);
  const std::string prefix = name + "(";
  std::vector<std::string> logLines;
  for (std::string l; std::getline(in, l);) logLines.push_back(l);
  auto trimmed = [](const std::string &s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  for (size_t i = 0; i < logLines.size(); ++i) {
    const std::string &l = logLines[i];
    out += l + "\n";
    if (l.rfind(prefix, 0) != 0) continue;
    size_t close = l.find(')', prefix.size());
    if (close == std::string::npos) continue;
    try {
      size_t n = std::stoul(l.substr(prefix.size(), close - prefix.size()));
      // NVRTC usually quotes the line itself; say which line it is when it does not.
      if (n >= 1 && n <= lines.size() &&
          (i + 1 >= logLines.size() || trimmed(logLines[i + 1]) != trimmed(lines[n - 1])))
        out += "  generated line " + std::to_string(n) + ": " + trimmed(lines[n - 1]) + "\n";
    } catch (const std::exception &) {
    }
  }
  return out;
}

} // namespace

const NvrtcStatus &nvrtcStatus() { return loaded().status; }

void addNvrtcSearchDirectory(const std::string &dir) {
  std::lock_guard lock(extraMutex());
  extraDirectories().push_back(dir);
}

std::string nvrtcCompileToPtx(const std::string &source, const std::string &name, const std::string &arch,
                              bool fmad) {
  const Loaded &l = loaded();
  if (!l.status.available) throw NvrtcError(l.status.error);
  const NvrtcApi &api = l.api;
  if (arch.rfind("sm_", 0) != 0) throw NvrtcError("NVRTC back-end: bad architecture '" + arch + "'");
  const std::string archOption = "--gpu-architecture=compute_" + arch.substr(3);
  const char *options[] = {archOption.c_str(), fmad ? "--fmad=true" : "--fmad=false", "--std=c++17", "-default-device",
                           "--disable-warnings"};
  nvrtcProgram program = nullptr;
  if (nvrtcResult r = api.createProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
      r != kNvrtcSuccess)
    throw NvrtcError("NVRTC back-end: nvrtcCreateProgram failed: " + describe(api, r));
  struct Destroy {
    const NvrtcApi &api;
    nvrtcProgram &program;
    ~Destroy() { api.destroyProgram(&program); }
  } destroy{api, program};

  nvrtcResult compiled = api.compileProgram(program, static_cast<int>(std::size(options)), options);
  std::string log;
  size_t logSize = 0;
  if (api.getProgramLogSize(program, &logSize) == kNvrtcSuccess && logSize > 1) {
    log.resize(logSize);
    if (api.getProgramLog(program, log.data()) != kNvrtcSuccess) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  if (compiled != kNvrtcSuccess)
    throw NvrtcError("NVRTC back-end: NVRTC " + std::to_string(l.status.major) + "." +
                     std::to_string(l.status.minor) + " could not compile the generated CUDA C++ of '" + name +
                     "' for " + arch + " (" + describe(api, compiled) + "), a tessera bug:\n" +
                     annotateLog(log, source, name));
  size_t size = 0;
  if (nvrtcResult r = api.getPTXSize(program, &size); r != kNvrtcSuccess)
    throw NvrtcError("NVRTC back-end: nvrtcGetPTXSize failed: " + describe(api, r));
  std::string ptx(size, '\0');
  if (nvrtcResult r = api.getPTX(program, ptx.data()); r != kNvrtcSuccess)
    throw NvrtcError("NVRTC back-end: nvrtcGetPTX failed: " + describe(api, r));
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

} // namespace tessera::codegen
