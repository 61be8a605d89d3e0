// Loading tessera/_torch_fastpath.so (see TorchFastPath.h). It sits next to
// tessera._C (the build puts it there when torch is installed); dladdr on a
// function of this library finds that directory.
#include "TorchFastPath.h"

#include "compiler/support/Environment.h"
#include "runtime/StepTimes.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string_view>

namespace tessera::python {
namespace {

constexpr int kExpectedVersion = 1; // tessera_torch_fastpath_version() this file speaks

bool gTried = false;
TorchFastPath gLoaded;      // what the library provides (kept while switched off)
std::string gStatus = "off (no torch tensor seen yet)";

std::string extensionDirectory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&loadTorchFastPath), &info) || !info.dli_fname) return {};
  std::string_view path(info.dli_fname);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string(".") : std::string(path.substr(0, slash));
}

} // namespace

void loadTorchFastPath() {
  if (gTried) return;
  gTried = true;
  rt::StepTimer loading(rt::Step::TorchFastPath); // part of a warm start's first launch
  if (!env::onUnlessZero("TESSERA_TORCH_FASTPATH")) {
    gStatus = "off (TESSERA_TORCH_FASTPATH=0)";
    return;
  }
  const std::string path = extensionDirectory() + "/_torch_fastpath.so";
  // torch is imported already (a torch tensor exists), so the torch libraries
  // this one links resolve to the loaded ones.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    gStatus = "off (" + (why ? std::string(why) : path + " did not load") + ")";
    return;
  }
  auto version = reinterpret_cast<int (*)()>(dlsym(handle, "tessera_torch_fastpath_version"));
  TorchFastPath f;
  f.tensor = reinterpret_cast<decltype(f.tensor)>(dlsym(handle, "tessera_torch_tensor"));
  f.currentStream = reinterpret_cast<decltype(f.currentStream)>(dlsym(handle, "tessera_torch_current_stream"));
  if (!version || version() != kExpectedVersion || !f.tensor || !f.currentStream) {
    gStatus = "off (" + path + " is of another version; rebuild the extension)";
    return; // the handle stays open: harmless, and nothing from it is used
  }
  gLoaded = gTorchFastPath = f;
  gStatus = "on (" + path + ")";
}

std::string torchFastPathStatus() {
  if (gLoaded.tensor && !gTorchFastPath.tensor) return "off (switched off)";
  return gStatus;
}

void setTorchFastPathEnabled(bool enabled) {
  gTorchFastPath = enabled ? gLoaded : TorchFastPath{};
}

} // namespace tessera::python
