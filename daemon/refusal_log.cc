#include "daemon/refusal_log.h"

#include <cinttypes>

#include "daemon/clock.h"
#include "daemon/log.h"

namespace xtimer {
namespace daemon {

RefusalLog::RefusalLog(const char* what) : what_(what) {}

void RefusalLog::Refuse(const std::string& cause, const std::string& peer) {
  const int64_t now = MonotonicNs();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[cause];
  std::string key = cause + '\0' + peer;
  if (entries_.count(key) == 0 && entries_.size() >= kMaxKeys) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      const bool quiet = now - it->second.logged_ns >= kIntervalNs && it->second.suppressed == 0;
      it = quiet ? entries_.erase(it) : std::next(it);
    }
    if (entries_.size() >= kMaxKeys) key = cause + '\0' + "(other peers)";
  }
  auto inserted = entries_.emplace(key, Entry());
  Entry& e = inserted.first->second;
  if (!inserted.second && now - e.logged_ns < kIntervalNs) {
    ++e.suppressed;
    return;
  }
  const std::string shown_peer = key.substr(cause.size() + 1);
  Logf("%s refused (%s) from %s; %" PRIu64 " more like it in the last 10 s not logged",
       what_.c_str(), cause.c_str(), shown_peer.c_str(), e.suppressed);
  e.logged_ns = now;
  e.suppressed = 0;
}

uint64_t RefusalLog::count(const std::string& cause) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(cause);
  return it == counts_.end() ? 0 : it->second;
}

std::map<std::string, uint64_t> RefusalLog::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace daemon
}  // namespace xtimer
