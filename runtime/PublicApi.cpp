// include/tessera/tessera.h, the installed C++ API: thin wrappers over the
// runtime's Kernel, compile() and the disk cache, converting the public types
// (tessera::api::*) to the internal ones of the same names.
//
// The internal headers come first and their types get aliases here, because
// once tessera.h is included, tessera::Kernel and friends name both the
// internal type and the public one (in the inline namespace api).
#include "runtime/Cache.h"
#include "runtime/Kernel.h"

namespace tessera::internal_api {
using InternalKernel = ::tessera::Kernel;
using InternalConstexpr = ::tessera::ConstexprValue;
using InternalOptions = ::tessera::CompileOptions;
using InternalConstexprs = std::map<std::string, InternalConstexpr>;
inline InternalKernel compileInternal(std::string source, std::string kernelName, std::string signature,
                                      InternalConstexprs constexprs, InternalOptions options, std::string path) {
  return ::tessera::compile(std::move(source), std::move(kernelName), std::move(signature),
                            std::move(constexprs), std::move(options), std::move(path), 1);
}
inline std::string internalTargetArch(int device) { return ::tessera::targetArch(device); }
} // namespace tessera::internal_api

#include "tessera/tessera.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::api {

using namespace tessera::internal_api;

struct Kernel::Impl {
  InternalKernel kernel;
};

namespace {

InternalConstexpr toInternal(const ConstexprValue &value, const std::string &name) {
  using Kind = ConstexprValue::Kind;
  switch (value.kind) {
  case Kind::None: return InternalConstexpr::none();
  case Kind::Int: return InternalConstexpr::ofInt(value.intValue);
  case Kind::Float: return InternalConstexpr::ofFloat(value.floatValue);
  case Kind::Bool: return InternalConstexpr::ofBool(value.intValue != 0);
  case Kind::String: return InternalConstexpr::ofString(value.stringValue);
  case Kind::DType: {
    auto dtype = InternalConstexpr::ofDTypeName(value.stringValue);
    if (!dtype) throw std::invalid_argument("constexpr '" + name + "': unknown dtype '" + value.stringValue + "'");
    return *dtype;
  }
  case Kind::Tuple: {
    std::vector<InternalConstexpr> elems;
    for (const ConstexprValue &e : value.elems) elems.push_back(toInternal(e, name));
    return InternalConstexpr::ofTuple(std::move(elems));
  }
  }
  throw std::invalid_argument("constexpr '" + name + "': invalid kind");
}

InternalConstexprs toInternal(const Constexprs &constexprs) {
  InternalConstexprs out;
  for (const auto &[name, value] : constexprs) out.emplace(name, toInternal(value, name));
  return out;
}

InternalOptions toInternal(const CompileOptions &options) {
  InternalOptions out;
  out.numWarps = options.numWarps;
  out.numStages = options.numStages;
  out.arch = options.arch;
  out.debug = options.debug;
  out.backend = options.backend;
  out.maxRegisters = options.maxRegisters;
  return out;
}

} // namespace

std::string version() { return versionString(); }

std::string targetArch(int device) { return internalTargetArch(device); }

std::string compileToPtx(const std::string &source, const std::string &kernelName, const std::string &signature,
                         const Constexprs &constexprs, const std::string &arch) {
  if (arch.empty()) throw std::invalid_argument("compileToPtx: no architecture given (e.g. \"sm_90a\")");
  CompileOptions options;
  options.arch = arch;
  return compile(source, kernelName, signature, constexprs, options).ptx();
}

Kernel compile(const std::string &source, const std::string &kernelName, const std::string &signature,
               const Constexprs &constexprs, const CompileOptions &options, const std::string &path) {
  auto impl = std::make_shared<Kernel::Impl>();
  impl->kernel = compileInternal(source, kernelName, signature, toInternal(constexprs), toInternal(options), path);
  return Kernel(std::move(impl));
}

Kernel compileFile(const std::string &path, const std::string &kernelName, const std::string &signature,
                   const Constexprs &constexprs, const CompileOptions &options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read kernel file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return compile(text.str(), kernelName, signature, constexprs, options, path);
}

static const InternalKernel &state(const std::shared_ptr<const Kernel::Impl> &impl) {
  if (!impl) throw std::logic_error("tessera::Kernel: empty kernel");
  return impl->kernel;
}

const std::string &Kernel::name() const { return state(impl_).name(); }
const std::string &Kernel::ptx() const { return state(impl_).ptx(); }
const std::string &Kernel::arch() const { return state(impl_).arch(); }
unsigned Kernel::numWarps() const { return state(impl_).numWarps(); }
unsigned Kernel::sharedBytes() const { return state(impl_).sharedBytes(); }
bool Kernel::fromCache() const { return state(impl_).fromCache(); }
void Kernel::load(int device) const { state(impl_).load(device); }
std::vector<char> Kernel::cubin(int device) const { return state(impl_).cubin(device); }

void Kernel::launch(Grid grid, void **args, CUstream stream) const {
  state(impl_).launch(rt::Grid{grid.x, grid.y, grid.z}, args, stream);
}

void Kernel::launchChecked(Grid grid, CUstream stream, void **args, const std::size_t *sizes,
                           std::size_t count) const {
  const InternalKernel &kernel = state(impl_);
  kernel.checkArgumentSizes(sizes, count);
  kernel.launch(rt::Grid{grid.x, grid.y, grid.z}, args, stream);
}

CacheUsage cacheUsage() {
  cache::DiskCache disk;
  CacheUsage usage;
  usage.enabled = disk.enabled();
  usage.directory = disk.config().dir;
  if (!usage.enabled) return usage;
  cache::Usage u = disk.usage();
  usage.entries = u.entries;
  usage.bytes = u.bytes;
  return usage;
}

uint64_t clearCache(bool tuning) {
  cache::DiskCache disk;
  if (!disk.enabled()) return 0;
  return disk.clear(tuning);
}

} // namespace tessera::api
