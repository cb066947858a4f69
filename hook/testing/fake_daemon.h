// A stand-in for xtimerd in tests: listens on a Unix socket, accepts ring registrations
// (format::ReceiveRing) and reads every ring (format::RingReader) until stopped; sends stack requests
// (RequestStacks).
#ifndef XTIMER_HOOK_TESTING_FAKE_DAEMON_H_
#define XTIMER_HOOK_TESTING_FAKE_DAEMON_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "format/ring.h"

namespace xtimer {
namespace hook {
namespace testing {

class FakeDaemon {
 public:
  // Listens on `socket_path` (removing a stale file first). Null with *error on failure.
  static std::unique_ptr<FakeDaemon> Start(const std::string& socket_path, std::string* error);
  ~FakeDaemon();

  // Closes every connection and the listening socket (a daemon that died). Rings already
  // received are still read by ReadAll.
  void Kill();
  // Reads what the rings hold now (call after the program exited to get everything).
  void ReadAll();

  struct Ring {
    int pid;
    format::Identity identity;  // as of the last ReadAll
    std::vector<format::RecordSlot> records;
    uint64_t dropped = 0;
    uint64_t invalid = 0;
    std::vector<format::InflightRow> inflight;
    int64_t heartbeat_ns = 0;
    uint64_t hook_own_ns = 0;  // the header's hook_own_ns as of the last ReadAll
    // The header's ops considered / timed by OpKind, untimed ops by cause, and budget.
    uint64_t op_calls[format::kOpKindSlots] = {};
    uint64_t op_timed[format::kOpKindSlots] = {};
    uint64_t tracked_by_mark = 0, tracked_by_nccl = 0;  // the header's, as of the last ReadAll
    uint64_t untimed[format::kUntimedSlots] = {};
    uint32_t budget_ppm = 0;
    int connection = -1;  // the registration connection (owned by the daemon)
  };
  // Rings received so far (one per registration; a re-registration adds a new entry).
  std::vector<Ring> rings();
  int registrations() const { return registrations_.load(); }

  // Asks the process of ring `index` for its stacks (format/stack_request.h) and waits up to
  // `timeout_ms` for the reply. The raw capture JSON, or false with *error.
  bool RequestStacks(size_t index, uint64_t request_id, int timeout_ms, std::string* json,
                     std::string* error);

 private:
  FakeDaemon() = default;
  void AcceptLoop();

  std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> connections_;
  std::vector<std::unique_ptr<format::RingReader>> readers_;
  std::vector<Ring> rings_;
  std::atomic<int> registrations_{0};
};

}  // namespace testing
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_TESTING_FAKE_DAEMON_H_
