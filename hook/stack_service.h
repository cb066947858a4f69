// Answers the daemon's stack requests (format/stack_request.h) on a capture thread of its own,
// started at the first request with every signal blocked: the poller only reads requests and
// hands them over, so a slow capture never delays it, and the hot path never sees either.
#ifndef XTIMER_HOOK_STACK_SERVICE_H_
#define XTIMER_HOOK_STACK_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hook/python_stacks.h"
#include "hook/stack_capture.h"

namespace xtimer {
namespace hook {

constexpr size_t kMaxQueuedStackRequests = 16;

class StackService {
 public:
  StackService() = default;
  ~StackService() { Stop(); }

  // Queues a request to answer on `socket_fd`, which the service owns from now on (a dup of the
  // daemon connection: the poller may close its own meanwhile). False (fd closed) when
  // kMaxQueuedStackRequests are waiting.
  bool Submit(int socket_fd, uint64_t request_id);
  // Stops and joins the thread; queued requests are dropped and a capture in progress skips the
  // threads it has not reached (so exit waits at most for one thread's answer).
  void Stop();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, uint64_t>> queue_;
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // read by a capture in progress
  std::thread thread_;
};

// The raw capture JSON ("xtimer-raw-stacks" v1, docs/stacks.md), bounded by
// format::kMaxRawStacksBytes: when over, pcs and frames are cut (each cut thread says so).
std::string RawStacksJson(int pid, int64_t capture_time_ns, const std::vector<ThreadStack>& threads,
                          const PythonCapture& python);

// Captures now and answers `request_id` on `socket_fd` with the JSON in a memfd (the send never
// blocks: the connection is non-blocking). A capture cut short by *stop still answers. False with
// *error.
bool AnswerStackRequest(int socket_fd, uint64_t request_id, const std::atomic<bool>* stop,
                        std::string* error);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_STACK_SERVICE_H_
