// The C++ API (Kernel.h): source text → CompiledKernel → per-device
// LoadedKernel (PTX linked to a cubin by the driver's JIT) → launches.
#include "runtime/Kernel.h"

#include "runtime/Driver.h"

#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace tessera {

std::string targetArchFor(int major, int minor) {
  const int cc = major * 10 + minor;
  if (cc == 90) return "sm_90a"; // Hopper: the arch-specific features
  if (cc == 80 || cc == 86 || cc == 87 || cc == 89) return "sm_" + std::to_string(cc);
  if (cc > 90) return "sm_90"; // newer GPUs: portable PTX, JIT-compiled by the driver
  if (cc > 80) return "sm_80";
  return {};
}

std::string targetArch(int device) {
  rt::DeviceGuard guard(device);
  const rt::DeviceProperties &props = rt::deviceProperties(guard.device());
  std::string arch = targetArchFor(props.major, props.minor);
  if (arch.empty())
    throw rt::Error("device " + std::to_string(guard.device()) + " (" + props.name + ", " +
                    props.arch() + ") is not supported: tessera needs sm_80 or newer");
  return arch;
}

namespace {

unsigned parameterBytes(const ArgSpec &spec) {
  if (spec.type.pointer) return 8;
  unsigned bits = ir::bitWidth(spec.type.scalar);
  return bits < 8 ? 1 : bits / 8;
}

} // namespace

struct Kernel::Impl {
  CompiledKernel compiled;
  std::vector<ArgSpec> signature;
  std::string arch;

  struct PerDevice {
    std::vector<char> cubin;
    rt::LoadedKernel kernel;
  };
  mutable std::mutex mutex;
  // unique_ptr: references handed out stay valid while the map grows.
  mutable std::unordered_map<int, std::unique_ptr<PerDevice>> devices;
};

Kernel::Kernel(CompiledKernel compiled, std::vector<ArgSpec> signature, std::string arch)
    : impl_(std::make_shared<Impl>()) {
  impl_->compiled = std::move(compiled);
  impl_->signature = std::move(signature);
  impl_->arch = std::move(arch);
}

const Kernel::Impl &Kernel::state() const {
  if (!impl_) throw std::logic_error("tessera::Kernel: this kernel is empty (default-constructed)");
  return *impl_;
}

const CompiledKernel &Kernel::compiled() const { return state().compiled; }
const std::string &Kernel::name() const { return state().compiled.name; }
const std::string &Kernel::ptx() const { return state().compiled.ptx; }
const std::string &Kernel::arch() const { return state().arch; }
unsigned Kernel::numWarps() const { return state().compiled.numWarps; }
unsigned Kernel::sharedBytes() const { return state().compiled.sharedBytes; }
const std::vector<ArgSpec> &Kernel::signature() const { return state().signature; }

const rt::LoadedKernel &Kernel::load(int device) const {
  const Impl &impl = state();
  if (impl.compiled.ptx.empty())
    throw rt::Error("cannot load kernel '" + impl.compiled.name + "': it was not compiled to PTX");
  rt::DeviceGuard guard(device);
  const int ordinal = guard.device();
  std::lock_guard<std::mutex> lock(impl.mutex);
  auto it = impl.devices.find(ordinal);
  if (it != impl.devices.end()) return it->second->kernel;

  auto entry = std::make_unique<Impl::PerDevice>();
  rt::LinkOptions link;
  link.kernelName = impl.compiled.name;
  link.device = ordinal; // arch left empty: the PTX's own target if arch-specific, else the device's
  entry->cubin = rt::linkPtx(impl.compiled.ptx, link).cubin;
  entry->kernel = rt::loadKernel(entry->cubin.data(), impl.compiled.name,
                                 static_cast<int>(impl.compiled.numWarps),
                                 impl.compiled.sharedBytes, ordinal);
  const rt::LoadedKernel &out = entry->kernel;
  impl.devices.emplace(ordinal, std::move(entry));
  return out;
}

std::vector<char> Kernel::cubin(int device) const {
  const Impl &impl = state();
  rt::DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(impl.mutex);
  auto it = impl.devices.find(guard.device());
  return it == impl.devices.end() ? std::vector<char>{} : it->second->cubin;
}

void Kernel::launch(rt::Grid grid, void **args, CUstream stream) const {
  rt::launch(load(rt::kCurrentDevice), grid, args, stream);
}

void Kernel::checkArgumentSizes(const std::size_t *sizes, std::size_t count) const {
  const Impl &impl = state();
  const std::vector<ArgSpec> &sig = impl.signature;
  if (count != sig.size())
    throw std::invalid_argument("kernel '" + impl.compiled.name + "' takes " +
                                std::to_string(sig.size()) + " runtime argument" +
                                (sig.size() == 1 ? "" : "s") + " but " + std::to_string(count) +
                                (count == 1 ? " was" : " were") + " given");
  for (std::size_t i = 0; i < count; ++i) {
    unsigned want = parameterBytes(sig[i]);
    bool ok = sizes[i] == want || (sig[i].type.scalar == ir::ScalarType::I1 && !sig[i].type.pointer &&
                                   sizes[i] <= 4);
    if (!ok)
      throw std::invalid_argument("kernel '" + impl.compiled.name + "': argument " +
                                  std::to_string(i + 1) + " is " + std::to_string(sizes[i]) +
                                  " bytes but its parameter (" + sig[i].type.str() + ") takes " +
                                  std::to_string(want));
  }
}

Kernel compile(std::string source, std::string kernelName, std::string signature,
               std::map<std::string, ConstexprValue> constexprs, CompileOptions options,
               std::string path, uint32_t firstLine) {
  if (options.arch.empty()) options.arch = targetArch(rt::kCurrentDevice);
  std::vector<ArgSpec> specs = parseSignature(signature);
  auto file = std::make_shared<SourceFile>();
  file->path = std::move(path);
  file->text = std::move(source);
  file->firstLine = firstLine == 0 ? 1 : firstLine;
  CompiledKernel compiled = compileKernel(file, kernelName, specs, constexprs, options, Stage::PTX);
  return Kernel(std::move(compiled), std::move(specs), options.arch);
}

Kernel compileFile(const std::string &path, std::string kernelName, std::string signature,
                   std::map<std::string, ConstexprValue> constexprs, CompileOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read kernel file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return compile(text.str(), std::move(kernelName), std::move(signature), std::move(constexprs),
                 std::move(options), path, 1);
}

} // namespace tessera
