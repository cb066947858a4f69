// The registration socket and the ring reader: accepts processes on a Unix stream socket,
// attaches the ring each one sends (format/registration.h), drains every ring into the
// Aggregator once per cycle, and when a connection ends reads the ring's exit marker and marks the
// process exited (the Aggregator keeps it for the exited grace period).
//
// One thread runs everything: epoll on the listening socket and the connections (registrations
// and exits), with a timeout of one poll interval after which every ring is read. The rings are
// untrusted: RingReader validates each record; anything invalid is counted and logged, never
// fatal. Errors in a cycle are logged and the loop goes on.
#ifndef XTIMER_DAEMON_RING_SERVER_H_
#define XTIMER_DAEMON_RING_SERVER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/model/aggregator.h"
#include "daemon/model/job_scope.h"
#include "format/record.h"
#include "format/ring.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {

// Registration limits (docs/daemon.md "Registration limits"). Every connection counts, from
// accept on, against its peer's pid and uid (SO_PEERCRED) and the global cap; a refused one is
// closed at once, counted by cause and logged (rate-limited).
struct RingServerOptions {
  std::string socket_path;
  int socket_mode = 0666;    // --socket-mode: set on the socket after bind, whatever the umask
  std::string socket_group;  // --socket-group: a group name or gid; empty: the daemon's
  int poll_interval_ms = 5;          // read cycle
  // A ring holding fewer than a batch of records (1,024, or a quarter of a smaller ring) is read
  // only once its last read is this old: a ring at a few thousand records/s is read in batches of
  // about 20 ms rather than every cycle (each batch re-touches the cold state of every series it
  // feeds). 0: every ring every cycle. The ring is read whole before its status is published and
  // when its connection ends, so nothing waits longer, and nothing is lost.
  int read_delay_ms = 20;
  int status_interval_ms = 100;      // ring header status (counters, in-flight table)
  size_t max_connections = 1024;     // --max-registrations: all peers together ("global_cap")
  size_t max_per_uid = 256;          // --max-registrations-per-uid ("uid_cap")
  size_t max_per_pid = 4;            // --max-registrations-per-pid ("pid_cap")
  // --registration-reserve: the last `reserve` global slots go only to uids holding fewer than
  // max(1, reserve / 4) connections ("reserve"), so a new job's ranks get in after other uids
  // filled the rest.
  size_t reserve = 64;
  int register_timeout_ms = 2000;    // --register-timeout-ms: no ring sent by then ("timeout")
  size_t max_ring_bytes = size_t{64} << 20;  // --max-ring-mb: larger rings ("ring_too_large")
  // Rings whose records fit in this many bytes in all (first registered first) stay mapped
  // whole: their pages are the writers' shared memory, read without faults. The pages other rings
  // had read are handed back (MADV_DONTNEED) every 256 KiB read, bounding what hostile rings add
  // to the daemon's RSS (docs/daemon.md "Memory").
  size_t mapped_ring_bytes = size_t{64} << 20;
  // Where a registrant's cgroup is read (daemon/model/job_scope.h); tests point it at a fake tree.
  KernelRoots kernel_roots;
};

// The answer to one stack request (docs/stacks.md "Capture"): the reply's memfd (the receiver
// owns it) and its size, or why there is none (`outcome` names it for the metric).
struct StackAnswer {
  int memfd = -1;
  uint64_t size = 0;
  std::string outcome;  // "" with a memfd; else "no_answer", "bad_reply", "exited", "refused"
  std::string error;    // "no answer in 2 s", "bad reply: ...", ...
};
using StackSink = std::function<void(StackAnswer)>;
constexpr size_t kMaxPendingStackRequests = 4;  // per connection
// "no answer in 2 s": a stack request's error past its deadline.
std::string NoAnswerText(int timeout_ms);

// A crash report a process sent unasked (docs/crash.md): its memfd (the sink owns it) and size.
using CrashSink =
    std::function<void(uint64_t process_id, uint32_t uid, int memfd, uint64_t size)>;

class RingServer {
 public:
  RingServer(const RingServerOptions& options, Aggregator* aggregator);
  ~RingServer();  // closes every connection and unlinks the socket if Listen() created it
  RingServer(const RingServer&) = delete;
  RingServer& operator=(const RingServer&) = delete;

  // Binds and listens (an existing file at the path is replaced: callers hold the run-dir lock).
  bool Listen(std::string* error);
  // One cycle: waits up to `timeout_ms` for socket events, handles them, reads every ring.
  void RunOnce(int timeout_ms);
  // Cycles until *stop is true.
  void Run(const std::atomic<bool>* stop);

  // Asks the registered process `id` for its stacks (safe from any thread). `sink` is called
  // exactly once, on the ring thread: with the reply, or when the process is not registered, has
  // kMaxPendingStackRequests requests unanswered already, sends a malformed reply, closes its
  // connection, or does not answer within `timeout_ms`. Never blocks the ring thread.
  void AskStacks(ProcessId id, int timeout_ms, StackSink sink);

  // Where crash reports go (called on the ring thread: it must not block). Set before Run; without
  // a sink reports are dropped. One report per connection is taken.
  void SetCrashSink(CrashSink sink);

  // Processes registered now (safe from any thread).
  size_t registered() const { return registered_.load(std::memory_order_relaxed); }
  // Monotonic ns of the last time the number of registered processes was > 0 or changed.
  int64_t last_active_ns() const { return last_active_ns_.load(std::memory_order_relaxed); }

 private:
  struct Connection;
  struct Peer {
    int pid = 0;
    uint32_t uid = 0;
  };

  // Applies --socket-group and --socket-mode to the bound socket.
  bool SetSocketAccess(std::string* error);
  // The refusal cause for a new connection from `peer`, or nullptr to accept it.
  const char* Admission(const Peer& peer) const;
  void Refuse(const char* cause, const Peer& peer);
  // Hands the ring's pages this daemon touched back to the kernel once enough were read, unless
  // the ring fits in what is left of options_.mapped_ring_bytes (decided at its first read).
  void ReleaseRead(Connection* c, size_t records);

  void Accept();
  void HandleReadable(Connection* c);
  void Register(Connection* c);
  void Close(int fd, const char* why);
  // The connection of a process the aggregator removed for its identity is closed at the end of
  // the cycle (never while the cycle walks the connections).
  void Evict(ProcessId id);
  void CloseDoomed();
  // Drains the ring of `c` (at most one ring's worth of records).
  void Drain(Connection* c, int64_t now_ns);
  // Whether the cycle at `mono_ns` reads the ring of `c` (options_.read_delay_ms).
  bool DueForRead(Connection* c, int64_t mono_ns);
  void PublishStatus(Connection* c);
  // Sends the asks posted since the last cycle; answers those past their deadline.
  void ServeStackAsks(int64_t mono_ns);
  void ExpireStackRequests(Connection* c, int64_t mono_ns);
  // Takes the connection's stack replies; false when it ended (the caller closes it).
  bool ReceiveStackReplies(Connection* c);

  const RingServerOptions options_;
  Aggregator* aggregator_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  bool created_socket_ = false;
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::unordered_map<uint32_t, size_t> per_uid_;  // open connections by peer uid
  std::unordered_map<int, size_t> per_pid_;       // open connections by peer pid
  std::vector<format::RecordSlot> buffer_;
  std::vector<format::InflightRow> inflight_;
  std::vector<int> doomed_;  // fds to close at the end of the cycle (Evict)
  int64_t last_status_ns_ = 0;
  size_t mapped_kept_ = 0;  // record bytes of the rings kept mapped whole
  struct StackAsk {
    ProcessId id;
    int timeout_ms;
    StackSink sink;
  };
  std::mutex asks_mu_;
  std::vector<StackAsk> asks_;  // posted by AskStacks, taken by the ring thread
  uint64_t next_stack_request_ = 1;  // 1 on: format::kCrashReportId (0) is never asked
  CrashSink crash_sink_;
  std::atomic<size_t> registered_{0};
  std::atomic<int64_t> last_active_ns_{0};
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_RING_SERVER_H_
