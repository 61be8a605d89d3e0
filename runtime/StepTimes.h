// Where the time of a launch's first call goes: a few named steps of the
// in-memory miss path (load the driver, specialise, key the disk cache,
// read and decode its entry, decide how PTX becomes SASS, load the module,
// or compile), each timed where it runs and added to a process-wide total.
// bench/compile_time.py reads the totals of a warm start in a new process
// (tessera._C.step_times()) to show where its milliseconds go. Misses only:
// a cached launch takes no clock reading.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace tessera::rt {

enum class Step : uint8_t {
  DriverInit,  // dlopen of libcuda, its entry points, cuInit
  Specialize,  // the full argument pass of an in-memory miss (Python bindings)
  TargetArch,  // the device's arch (its properties, read once per device)
  CacheKey,    // the disk cache key (the source's digest, the fingerprint, libdevice's stamp)
  EntryRead,   // opening and reading the entry's file, refreshing its last-used time
  EntryDecode, // its checksum and sections
  JitPlan,     // TESSERA_JIT and the ptxas to use (its version)
  ModuleLoad,  // cuModuleLoadData of the cubin (or the PTX), the function, its attributes
  Compile,     // source -> PTX (a disk miss)
  Assemble,    // PTX -> cubin (ptxas, or the driver's linker) and its load, after a disk miss
  ResultObject, // the specialisation's Python CompiledKernel (its factory), made at its first launch
  FirstLaunch,  // the stream and cuLaunchKernel of a specialisation's first launch on a device
  TorchFastPath, // loading tessera/_torch_fastpath.so when the first torch tensor is met (dlopen, RTLD_NOW)
  Count,
};

// "driver_init", "specialize", ... (the keys of tessera._C.step_times()).
const char *stepName(Step step);

void addStepTime(Step step, std::chrono::nanoseconds elapsed) noexcept;
// Total nanoseconds per step since the process started (or resetStepTimes()).
std::array<uint64_t, static_cast<size_t>(Step::Count)> stepTimes() noexcept;
void resetStepTimes() noexcept;

// Adds the time from its construction to its destruction (or to stop()) to `step`.
class StepTimer {
public:
  explicit StepTimer(Step step) : step_(step), start_(std::chrono::steady_clock::now()) {}
  ~StepTimer() { stop(); }
  void stop() noexcept {
    if (running_) addStepTime(step_, std::chrono::steady_clock::now() - start_);
    running_ = false;
  }
  StepTimer(const StepTimer &) = delete;
  StepTimer &operator=(const StepTimer &) = delete;

private:
  Step step_;
  std::chrono::steady_clock::time_point start_;
  bool running_ = true;
};

} // namespace tessera::rt
