// The C++ API (Kernel.h): source text → CompiledKernel → per-device
// LoadedKernel (PTX compiled to a cubin by ptxas, or by the driver) → launches.
#include "runtime/Kernel.h"

#include "runtime/Cache.h"
#include "runtime/Driver.h"
#include "runtime/Jit.h"
#include "runtime/StepTimes.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
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
  if (spec.type.isTensorDesc()) return static_cast<unsigned>(sizeof(TensorDescriptor));
  if (spec.type.pointer) return 8;
  unsigned bits = ir::bitWidth(spec.type.scalar);
  return bits < 8 ? 1 : bits / 8;
}

} // namespace

struct Kernel::Impl {
  CompiledKernel compiled;
  std::vector<ArgSpec> signature;
  bool hasDescriptors = false; // tensordesc parameters: launch() appends their hidden fields
  std::string arch;
  // The disk cache's entry (empty key: not cached): cubins found there and
  // linked since, so that load() on a new device type can add its own.
  cache::Key key;
  bool fromCache = false;
  unsigned numStages = 3;
  mutable std::vector<std::pair<std::string, std::string>> cubins; // cubinTag -> bytes; under mutex

  struct PerDevice {
    std::vector<char> cubin;
    rt::LoadedKernel kernel;
  };
  mutable std::mutex mutex;
  // unique_ptr: references handed out stay valid while the map grows.
  mutable std::unordered_map<int, std::unique_ptr<PerDevice>> devices;
  // The last device's kernel: launch() checks it against the current context
  // and skips the lock and the map.
  mutable std::atomic<const PerDevice *> last{nullptr};
  // ptxas started while the kernel compiled (compileCached's assembleFor), for assembleFor(); under mutex.
  mutable std::unique_ptr<rt::EarlyPtxas> earlyPtxas;
};

Kernel::Kernel(CompiledKernel compiled, std::vector<ArgSpec> signature, std::string arch)
    : impl_(std::make_shared<Impl>()) {
  impl_->compiled = std::move(compiled);
  impl_->signature = std::move(signature);
  impl_->arch = std::move(arch);
  for (const ArgSpec &a : impl_->signature) impl_->hasDescriptors |= a.type.isTensorDesc();
}

const Kernel::Impl &Kernel::state() const {
  if (!impl_) throw std::logic_error("tessera::Kernel: this kernel is empty (default-constructed)");
  return *impl_;
}

const CompiledKernel &Kernel::compiled() const { return state().compiled; }
bool Kernel::fromCache() const { return state().fromCache; }
const std::string &Kernel::name() const { return state().compiled.name; }
const std::string &Kernel::ptx() const { return state().compiled.ptx; }
const std::string &Kernel::arch() const { return state().arch; }
unsigned Kernel::numWarps() const { return state().compiled.numWarps; }
unsigned Kernel::sharedBytes() const { return state().compiled.sharedBytes; }
const std::vector<ArgSpec> &Kernel::signature() const { return state().signature; }

void Kernel::keepCubin(const std::string &tag, std::string bytes) const {
  const Impl &impl = state();
  bool replaced = false;
  for (auto &[t, b] : impl.cubins)
    if (t == tag) b = bytes, replaced = true;
  if (!replaced) impl.cubins.emplace_back(tag, std::move(bytes));
  cache::Entry stored;
  stored.key = impl.key.text;
  stored.kernelName = impl.compiled.name;
  stored.arch = impl.arch;
  stored.signature = cache::signatureKey(impl.signature);
  stored.numWarps = impl.compiled.numWarps;
  stored.numStages = impl.numStages;
  stored.sharedBytes = impl.compiled.sharedBytes;
  stored.ptx = impl.compiled.ptx;
  stored.cubins = impl.cubins;
  cache::DiskCache().store(impl.key, stored);
}

bool Kernel::assembleFor(const std::string &deviceArch) const {
  const Impl &impl = state();
  const rt::JitPlan plan = rt::jitPlan();
  if (!impl.key || plan.mode != rt::JitPlan::Ptxas || impl.compiled.ptx.empty()) return false;
  const std::string tag = cache::cubinTag(deviceArch, plan.cubinCompiler());
  std::lock_guard<std::mutex> lock(impl.mutex);
  for (const auto &[t, bytes] : impl.cubins)
    if (t == tag) return true;
  const std::string arch = rt::sassArchFor(impl.compiled.ptx, deviceArch);
  std::unique_ptr<rt::EarlyPtxas> early = std::move(impl.earlyPtxas);
  std::vector<char> cubin;
  if (early && early->arch() == arch && plan.ptxas->path == early->tool().path) {
    try {
      cubin = early->finish(impl.compiled.ptx);
    } catch (const rt::Error &) {
      // Run again from a file, whose error is the one reported (a system without /dev/stdin fails
      // only here).
    }
  }
  early.reset(); // not the one asked for (or done): killed, reaped
  if (cubin.empty()) cubin = rt::assemblePtx(*plan.ptxas, impl.compiled.ptx, arch, impl.compiled.name);
  keepCubin(tag, std::string(cubin.begin(), cubin.end()));
  return true;
}

const rt::LoadedKernel &Kernel::load(int device) const {
  const Impl &impl = state();
  if (impl.compiled.ptx.empty())
    throw rt::Error("cannot load kernel '" + impl.compiled.name + "': it was not compiled to PTX");
  rt::DeviceGuard guard(device);
  const int ordinal = guard.device();
  std::lock_guard<std::mutex> lock(impl.mutex);
  auto it = impl.devices.find(ordinal);
  if (it != impl.devices.end()) {
    impl.last.store(it->second.get(), std::memory_order_release);
    return it->second->kernel;
  }

  auto entry = std::make_unique<Impl::PerDevice>();
  rt::StepTimer planning(rt::Step::JitPlan);
  const rt::JitPlan plan = rt::jitPlan();
  // The SASS depends on the device's architecture and on what compiled it.
  std::string tag;
  if (impl.key && plan.mode != rt::JitPlan::Whole)
    tag = cache::cubinTag(rt::deviceProperties(ordinal).arch(), plan.cubinCompiler());
  if (!tag.empty())
    for (const auto &[t, bytes] : impl.cubins)
      if (t == tag) entry->cubin.assign(bytes.begin(), bytes.end());
  planning.stop();
  if (!entry->cubin.empty()) {
    rt::StepTimer loading(rt::Step::ModuleLoad);
    try {
      entry->kernel = rt::loadKernel(entry->cubin.data(), impl.compiled.name,
                                     static_cast<int>(impl.compiled.numWarps), impl.compiled.sharedBytes, ordinal);
    } catch (const rt::DriverError &e) { // a cubin the driver refuses: compile the PTX again
      cache::warnOnce("cubin:" + impl.key.digest, "the cached cubin of kernel '" + impl.compiled.name +
                                                      "' does not load (" + e.what() + "); compiling the PTX again");
      entry->cubin.clear();
    }
  }
  if (!entry->kernel) {
    rt::StepTimer assembling(rt::Step::Assemble); // PTX -> SASS and the load
    entry->kernel = rt::loadPtx(plan, impl.compiled.ptx, impl.compiled.name, static_cast<int>(impl.compiled.numWarps),
                                impl.compiled.sharedBytes, ordinal, &entry->cubin);
    if (!entry->cubin.empty() && !tag.empty()) keepCubin(tag, std::string(entry->cubin.begin(), entry->cubin.end()));
  }
  const rt::LoadedKernel &out = entry->kernel;
  impl.last.store(entry.get(), std::memory_order_release);
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

const rt::LoadedKernel *Kernel::lastLoaded() const {
  const Impl::PerDevice *last = state().last.load(std::memory_order_acquire);
  return last ? &last->kernel : nullptr;
}

// A kernel with descriptor arguments takes their hidden parameters after its own
// (descriptorFields): read from the TensorDescriptors the caller passed.
static void launchWithDescriptorFields(const Kernel &kernel, const std::vector<ArgSpec> &sig, rt::Grid grid,
                                       void **args, CUstream stream) {
  std::vector<uint64_t> fields;
  for (size_t i = 0; i < sig.size(); ++i)
    if (sig[i].type.isTensorDesc()) {
      const auto *d = static_cast<const TensorDescriptor *>(args[i]);
      const size_t rank = sig[i].type.descBlock.size();
      if (d->rank != rank)
        throw std::invalid_argument("kernel '" + kernel.name() + "': argument " + std::to_string(i + 1) +
                                    " is a TensorDescriptor of rank " + std::to_string(d->rank) +
                                    " but its parameter (" + sig[i].type.str() + ") has rank " + std::to_string(rank));
      fields.resize(fields.size() + rt::descriptorFieldCount(rank));
      rt::descriptorFields(d->base, d->shape, d->strides, rank, d->nanPadding != 0,
                           fields.data() + fields.size() - rt::descriptorFieldCount(rank));
    }
  std::vector<void *> all(args, args + sig.size());
  for (uint64_t &f : fields) all.push_back(&f);
  kernel.launch(grid, all.data(), stream, Kernel::kAllParameters);
}

void Kernel::launch(rt::Grid grid, void **args, CUstream stream) const {
  const Impl &impl = state();
  if (impl.hasDescriptors) return launchWithDescriptorFields(*this, impl.signature, grid, args, stream);
  launch(grid, args, stream, kAllParameters);
}

void Kernel::launch(rt::Grid grid, void **args, CUstream stream, AllParameters) const {
  const Impl &impl = state();
  if (const Impl::PerDevice *last = impl.last.load(std::memory_order_acquire))
    if (last->kernel.context() == rt::currentContext()) // the common case: no lock, no lookup
      return rt::launch(last->kernel, grid, args, stream);
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

namespace {

std::string readStage(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

// ptxas for devices of `deviceArch`, started before the PTX of a kernel compiled for `targetArch`
// exists: the architecture is the one the PTX will name (`.target targetArch`, checked again by
// assembleFor()). nullptr when the JIT is not ptxas or it does not start.
std::unique_ptr<rt::EarlyPtxas> startPtxas(const std::string &targetArch, const std::string &deviceArch,
                                           const std::string &kernelName) {
  try {
    const rt::JitPlan plan = rt::jitPlan();
    if (plan.mode != rt::JitPlan::Ptxas) return nullptr;
    return rt::EarlyPtxas::start(*plan.ptxas, rt::sassArchFor(".target " + targetArch + "\n", deviceArch),
                                 kernelName);
  } catch (const rt::Error &) {
    return nullptr; // a bad TESSERA_JIT or ptxas is reported where it is used, as before
  }
}

} // namespace

Kernel compileCached(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                     std::vector<ArgSpec> signature, const std::map<std::string, ConstexprValue> &constexprs,
                     const CompileOptions &options, bool *hit, const std::string &assembleFor) {
  if (hit) *hit = false;
  cache::DiskCache disk;
  cache::Key key;
  // The environment, read once for the key and the compile.
  rt::StepTimer keying(rt::Step::CacheKey);
  const ResolvedOptions resolved = resolveOptions(options);
  if (disk.enabled()) key = cache::makeKey(file->text, kernelName, signature, constexprs, options, resolved);
  keying.stop();
  if (key) {
    if (std::optional<cache::Entry> e = disk.load(key)) {
      CompiledKernel compiled;
      compiled.name = kernelName;
      compiled.ptx = std::move(e->ptx);
      compiled.numWarps = e->numWarps;
      compiled.sharedBytes = e->sharedBytes;
      compiled.backend = resolved.backend;
      if (disk.config().keepStages) { // the stages written next to the entry, when there
        std::string stem = disk.entryPath(key);
        stem.resize(stem.size() - 4);
        compiled.ir = readStage(stem + ".ir");
        compiled.irOpt = readStage(stem + ".ir-opt");
        compiled.llvmIR = readStage(stem + ".ll");
        compiled.cuda = readStage(stem + ".cu");
      }
      Kernel k(std::move(compiled), std::move(signature), options.arch);
      k.impl_->key = std::move(key);
      k.impl_->fromCache = true;
      k.impl_->numStages = options.numStages;
      k.impl_->cubins = std::move(e->cubins);
      if (hit) *hit = true;
      return k;
    }
  }
  std::unique_ptr<rt::EarlyPtxas> early; // killed if the compile throws
  if (key && !assembleFor.empty()) early = startPtxas(options.arch, assembleFor, kernelName);
  rt::StepTimer compiling(rt::Step::Compile);
  CompiledKernel compiled = compileKernel(file, kernelName, signature, constexprs, options, resolved, Stage::PTX);
  compiling.stop();
  if (key) {
    cache::Entry stored;
    stored.key = key.text;
    stored.kernelName = kernelName;
    stored.arch = options.arch;
    stored.signature = cache::signatureKey(signature);
    stored.numWarps = compiled.numWarps;
    stored.numStages = options.numStages;
    stored.sharedBytes = compiled.sharedBytes;
    stored.ptx = compiled.ptx;
    cache::Stages stages{compiled.ir, compiled.irOpt, compiled.llvmIR, compiled.ptx, compiled.cuda};
    if (!disk.store(key, stored, &stages)) key = {}; // unwritable: do not try again on load()
  }
  Kernel k(std::move(compiled), std::move(signature), options.arch);
  if (key) k.impl_->earlyPtxas = std::move(early); // else assembleFor() does nothing: killed now
  k.impl_->key = std::move(key);
  k.impl_->numStages = options.numStages;
  return k;
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
  return compileCached(std::move(file), kernelName, std::move(specs), constexprs, options);
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
