// Process-wide step totals (StepTimes.h).
#include "runtime/StepTimes.h"

#include <atomic>

namespace tessera::rt {

namespace {

constexpr size_t kSteps = static_cast<size_t>(Step::Count);
std::array<std::atomic<uint64_t>, kSteps> gTotals{};

} // namespace

const char *stepName(Step step) {
  static constexpr const char *kNames[kSteps] = {"driver_init", "specialize",   "target_arch", "cache_key",
                                                 "entry_read",  "entry_decode", "jit_plan",    "module_load",
                                                 "compile",     "assemble",     "result_object",
                                                 "first_launch", "torch_fastpath"};
  return kNames[static_cast<size_t>(step)];
}

void addStepTime(Step step, std::chrono::nanoseconds elapsed) noexcept {
  gTotals[static_cast<size_t>(step)].fetch_add(static_cast<uint64_t>(elapsed.count()), std::memory_order_relaxed);
}

std::array<uint64_t, kSteps> stepTimes() noexcept {
  std::array<uint64_t, kSteps> out{};
  for (size_t i = 0; i < kSteps; ++i) out[i] = gTotals[i].load(std::memory_order_relaxed);
  return out;
}

void resetStepTimes() noexcept {
  for (auto &t : gTotals) t.store(0, std::memory_order_relaxed);
}

} // namespace tessera::rt
