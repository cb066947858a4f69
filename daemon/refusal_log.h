// Rate-limited logging and counting of refused requests, connections or registrations: one place
// for "what was refused, why, from whom". Each cause is logged at most once per kLogIntervalNs
// (10 s); the next line for that cause says how many refusals were not logged in between. Counts
// per cause are exact and feed the Prometheus counters (e.g. xtimer_refused_connections_total).
// Thread-safe.
#ifndef XTIMER_DAEMON_REFUSAL_LOG_H_
#define XTIMER_DAEMON_REFUSAL_LOG_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace xtimer {
namespace daemon {

class RefusalLog {
 public:
  static constexpr int64_t kLogIntervalNs = 10LL * 1000000000;

  // `what` names the refused thing in the log, e.g. "metrics port: connection".
  explicit RefusalLog(const char* what);

  // Counts one refusal for `cause` (a short token such as "request_timeout") from `peer`
  // (e.g. "127.0.0.1:51234"), and logs it unless this cause was logged less than 10 s ago.
  void Refuse(const std::string& cause, const std::string& peer);

  // Refusals so far for `cause` (0 for a cause never seen).
  uint64_t count(const std::string& cause) const;

 private:
  struct Cause {
    uint64_t count = 0;
    uint64_t suppressed = 0;  // since the last line
    int64_t last_log_ns = 0;
    bool logged = false;
  };

  const std::string what_;
  mutable std::mutex mu_;
  std::map<std::string, Cause> causes_;  // bounded: causes are fixed tokens from the code
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_REFUSAL_LOG_H_
