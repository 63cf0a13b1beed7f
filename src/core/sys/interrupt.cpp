#include "core/sys/interrupt.h"

#include <atomic>

namespace opcost {

namespace {
std::atomic<InterruptCheck> g_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { g_check.store(check, std::memory_order_release); }

void stop_if_interrupted() {
  const InterruptCheck check = g_check.load(std::memory_order_acquire);
  if (check && check()) throw Interrupted{};
}

}  // namespace opcost
