#include "test/gpusim/common/call_cost.h"

#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace {

constexpr int kCalls = static_cast<int>(CallCost::kLaunch) + 1;
// call_cost.h's table, in CallCost order.
constexpr int64_t kH200Ns[kCalls] = {1932, 628, 310, 615, 432, 2500};

enum Mode : int { kUnread = 0, kOff = 1, kH200 = 2, kH200Serialized = 3 };
std::atomic<int> g_mode{kUnread};
// h200-serialized: every charged call of every thread of the process holds this lock while it
// spends its time, as if the driver ran one call at a time.
std::mutex g_driver_lock;

int ReadMode() {
  const char* v = getenv("XTIMER_SIM_CALL_COSTS");
  int mode = kOff;
  if (v != nullptr && *v != '\0' && strcmp(v, "off") != 0) {
    if (strcmp(v, "h200") == 0) {
      mode = kH200;
    } else if (strcmp(v, "h200-serialized") == 0) {
      mode = kH200Serialized;
    } else {
      Fatal("XTIMER_SIM_CALL_COSTS=%s: use off (the default), h200 or h200-serialized", v);
    }
  }
  g_mode.store(mode, std::memory_order_relaxed);
  return mode;
}

}  // namespace

void ChargeCall(CallCost call) {
  int mode = g_mode.load(std::memory_order_relaxed);
  if (mode == kUnread) mode = ReadMode();
  if (mode == kOff) return;
  std::unique_lock<std::mutex> lock(g_driver_lock, std::defer_lock);
  if (mode == kH200Serialized) lock.lock();
  const int64_t until = NowNs() + kH200Ns[static_cast<int>(call)];
  while (NowNs() < until) {
  }
}

}  // namespace xtsim
