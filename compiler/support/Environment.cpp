#include "compiler/support/Environment.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace tessera::env {

bool setAndNotZero(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::string(value) != "0";
}

bool onUnlessZero(const char *name) {
  const char *value = std::getenv(name);
  return !(value && std::string(value) == "0");
}

bool truthy(const char *value) {
  if (!value || !*value) return false;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v != "0" && v != "false" && v != "no" && v != "off";
}

std::string text(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

namespace {

std::string libdevicePath() {
  if (const char *path = std::getenv("TESSERA_LIBDEVICE")) return path;
  const char *home = std::getenv("CUDA_HOME");
  return std::string(home ? home : "/usr/local/cuda") + "/nvvm/libdevice/libdevice.10.bc";
}

} // namespace

CompilerEnvironment readCompilerEnvironment() {
  CompilerEnvironment e;
  e.debug = setAndNotZero("TESSERA_DEBUG");
  e.dumpIR = setAndNotZero("TESSERA_DUMP_IR");
  e.tensorCores = onUnlessZero("TESSERA_MMA");
  e.wgmma = onUnlessZero("TESSERA_WGMMA");
  e.fpFusion = onUnlessZero("TESSERA_FP_FUSION");
  e.compareRuns = onUnlessZero("TESSERA_COMPARE_RUNS");
  e.fp8RegisterA = onUnlessZero("TESSERA_WGMMA_FP8_REGISTER_A");
  e.backend = text("TESSERA_BACKEND");
  e.libdevicePath = libdevicePath();
  return e;
}

} // namespace tessera::env
