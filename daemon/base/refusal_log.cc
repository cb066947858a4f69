#include "daemon/base/refusal_log.h"

#include <time.h>

#include "daemon/base/log.h"

namespace xtimer {
namespace daemon {
namespace {

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace

RefusalLog::RefusalLog(const char* what)
    : RefusalLog(what, MonotonicNowNs,
                 [](const std::string& line) { Logf("%s", line.c_str()); }) {}

RefusalLog::RefusalLog(const char* what, std::function<int64_t()> clock,
                       std::function<void(const std::string&)> sink)
    : what_(what), clock_(std::move(clock)), sink_(std::move(sink)) {}

void RefusalLog::Refuse(const std::string& cause, const std::string& peer) {
  const int64_t now = clock_();
  std::string line;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++counts_[cause];
    auto key = std::make_pair(cause, peer);
    auto it = throttle_.find(key);
    if (it == throttle_.end()) {
      if (throttle_.size() >= kMaxTracked) {
        // Forget throttles that are past their interval; if none is, forget them all (a flood
        // of distinct peers then logs at most kMaxTracked lines per interval).
        for (auto i = throttle_.begin(); i != throttle_.end();) {
          i = now - i->second.last_ns >= kIntervalNs ? throttle_.erase(i) : std::next(i);
        }
        if (throttle_.size() >= kMaxTracked) throttle_.clear();
      }
      it = throttle_.emplace(key, Throttle{now - kIntervalNs, 0}).first;
    }
    Throttle& t = it->second;
    if (now - t.last_ns < kIntervalNs) {
      ++t.suppressed;
      return;
    }
    line = std::string(what_) + ": refused " + peer + ": " + cause;
    if (t.suppressed > 0) {
      line += " (and " + std::to_string(t.suppressed) + " more from this peer for this cause " +
              "in the last " + std::to_string((now - t.last_ns) / 1000000000LL) + " s)";
    }
    t.last_ns = now;
    t.suppressed = 0;
  }
  sink_(line);
}

uint64_t RefusalLog::count(const std::string& cause) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = counts_.find(cause);
  return it == counts_.end() ? 0 : it->second;
}

std::map<std::string, uint64_t> RefusalLog::counts() const {
  std::lock_guard<std::mutex> l(mu_);
  return counts_;
}

}  // namespace daemon
}  // namespace xtimer
