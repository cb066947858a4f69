#include "daemon/refusal_log.h"

#include "daemon/clock.h"
#include "daemon/log.h"

namespace xtimer {
namespace daemon {

RefusalLog::RefusalLog(const char* what) : what_(what) {}

void RefusalLog::Refuse(const std::string& cause, const std::string& peer) {
  const int64_t now = MonotonicNs();
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Cause& c = causes_[cause];
    ++c.count;
    if (c.logged && now - c.last_log_ns < kLogIntervalNs) {
      ++c.suppressed;
      return;
    }
    suppressed = c.suppressed;
    c.suppressed = 0;
    c.last_log_ns = now;
    c.logged = true;
  }
  if (suppressed > 0) {
    Logf("%s refused (%s) from %s; %llu more refused for this cause since the last line",
         what_.c_str(), cause.c_str(), peer.c_str(), static_cast<unsigned long long>(suppressed));
  } else {
    Logf("%s refused (%s) from %s", what_.c_str(), cause.c_str(), peer.c_str());
  }
}

uint64_t RefusalLog::count(const std::string& cause) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = causes_.find(cause);
  return it == causes_.end() ? 0 : it->second.count;
}

}  // namespace daemon
}  // namespace xtimer
