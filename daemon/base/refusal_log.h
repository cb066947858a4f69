// Rate-limited logging and counting of refusals (connections closed or refused, registrations
// turned away): one log line per cause and peer at most every 10 s, with the number of refusals
// suppressed since the last line; a count per cause for the Prometheus counters
// (docs/metrics.md). Thread-safe.
#ifndef XTIMER_DAEMON_REFUSAL_LOG_H_
#define XTIMER_DAEMON_REFUSAL_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace xtimer {
namespace daemon {

class RefusalLog {
 public:
  // `what` starts each line ("control port"); it must outlive the log.
  explicit RefusalLog(const char* what);
  // Tests: replaces the monotonic clock (nanoseconds) and the line sink (default Logf).
  RefusalLog(const char* what, std::function<int64_t()> clock,
             std::function<void(const std::string&)> sink);

  void Refuse(const std::string& cause, const std::string& peer);
  uint64_t count(const std::string& cause) const;
  // Every cause refused at least once, with its count (for the exporters).
  std::map<std::string, uint64_t> counts() const;

  static constexpr int64_t kIntervalNs = 10 * 1000000000LL;

 private:
  struct Throttle {
    int64_t last_ns = 0;
    uint64_t suppressed = 0;
  };
  // Peers tracked for throttling at most; beyond it the oldest line state is dropped.
  static constexpr size_t kMaxTracked = 4096;

  const char* what_;
  std::function<int64_t()> clock_;
  std::function<void(const std::string&)> sink_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> counts_;
  std::map<std::pair<std::string, std::string>, Throttle> throttle_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_REFUSAL_LOG_H_
