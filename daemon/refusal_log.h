// Rate-limited logging and counting of refusals (connections, registrations): each refusal is
// counted by cause, and logged at most once per cause and peer every 10 s, the next line saying
// how many were suppressed meanwhile. Thread-safe. Memory is bounded: at most kMaxKeys
// (cause, peer) pairs are remembered; beyond that, peers share one "(other peers)" entry.
#ifndef XTIMER_DAEMON_REFUSAL_LOG_H_
#define XTIMER_DAEMON_REFUSAL_LOG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace xtimer {
namespace daemon {

class RefusalLog {
 public:
  static constexpr int64_t kIntervalNs = int64_t{10} * 1000000000;
  static constexpr size_t kMaxKeys = 4096;

  // `what`: what is refused, for the log line ("registration", "metrics connection").
  explicit RefusalLog(const char* what);
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;

  // Counts one refusal and logs it unless (cause, peer) was logged in the last 10 s.
  void Refuse(const std::string& cause, const std::string& peer);
  // Refusals counted for `cause` since construction.
  uint64_t count(const std::string& cause) const;
  // Every cause seen so far with its count (for the Prometheus counters).
  std::map<std::string, uint64_t> counts() const;

 private:
  struct Entry {
    int64_t logged_ns = 0;  // monotonic time of the last line
    uint64_t suppressed = 0;
  };

  const std::string what_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> counts_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_REFUSAL_LOG_H_
