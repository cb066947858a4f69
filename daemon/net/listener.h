// One TCP listening port of xtimerd with its connection policy: binding, the accept loop, each
// connection's deadlines, the caps on connections and who gives way past them, and the counting
// of refusals. The metrics port (daemon/export/metrics_server.h) and the control port
// (daemon/control/control_server.h) both serve through it; they keep only what they serve.
//
// One event-loop thread (epoll, non-blocking sockets) accepts (at most 64 per wake-up, so the
// other connections are never starved) and calls the server's ConnectionHandler for each new
// connection and each event on one. No socket operation in the loop blocks, so no client can hold
// it. Policy (docs/daemon.md, "Listening ports"):
//   - Deadlines. A connection has a deadline with its cause (SetDeadline) and may have an idle
//     limit (SetIdle; Touch on progress, cause idle_timeout); past either it is closed and the
//     cause counted (a null cause closes it quietly). The deadline comes first when both passed.
//   - Caps. At most max_connections at once and max_connections_per_peer from one address; a new
//     connection is always taken and the one that gives way most readily closed to make room
//     (daemon/net/conn_table.h: causes connection_limit, peer_limit); only when none can give way
//     is the new one refused (connection_limit).
//   - Out of descriptors. accept failing with EMFILE or ENFILE spends a reserved descriptor to
//     take the connection and close it at once (cause fd_limit_cause), instead of spinning on a
//     readable listener; when that fails too, or on ENOBUFS/ENOMEM, accepting pauses for 100 ms.
//   - Handing on. A connection may leave the loop still counted against the caps: to a worker
//     (Detach, then Release from any thread) or to another server (HandOn: the loop keeps a
//     duplicate descriptor, watches it for hang-up, and shuts the socket down if it must give way).
// Refusals are logged at most once per cause and peer every 10 s and counted by cause
// (daemon/base/refusal_log.h), for xtimer_refused_connections_total{port,cause}.
#ifndef XTIMER_DAEMON_NET_LISTENER_H_
#define XTIMER_DAEMON_NET_LISTENER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/base/refusal_log.h"
#include "daemon/net/conn_table.h"

namespace xtimer {
namespace daemon {

struct ListenerOptions {
  // Starts each refusal log line ("control port"); must outlive the listener.
  const char* name = "port";
  size_t max_connections = 256;
  size_t max_connections_per_peer = std::numeric_limits<size_t>::max();
  // Refusal lines name the peer's port too ("127.0.0.1:51234"); the per-peer cap counts by
  // address either way.
  bool log_peer_port = false;
  const char* fd_limit_cause = "fd_limit";  // accept out of descriptors (or memory)
};

class Listener;

// What the handler keeps per connection: derive from it.
struct ConnectionState {
  virtual ~ConnectionState() = default;
};

// One accepted connection. Owned by the listener; read by the handler, changed only through the
// listener's methods, on the loop thread.
struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string address;  // the peer's address (the per-peer cap's key)
  std::string peer;     // as refusal lines name it
  int64_t accepted_ns = 0;  // CLOCK_MONOTONIC
  std::unique_ptr<ConnectionState> state;  // the handler's

 private:
  friend class Listener;
  int64_t deadline_ns = std::numeric_limits<int64_t>::max();
  const char* deadline_cause = nullptr;
  int64_t idle_ns = 0;  // 0: no idle limit
  int64_t last_ns = 0;  // the last progress (Touch)
  bool handed_on = false;
};

// The server's side. Every call comes from the listener's loop thread.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  // A connection was accepted (and counted). The handler sets its events (Watch), deadlines and
  // state; a connection left without events is only closed by its deadline or a cap.
  virtual void OnAccept(Connection* c, int64_t now) = 0;
  // epoll events on it (EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR).
  virtual void OnEvent(Connection* c, uint32_t events, int64_t now) = 0;
  // Its deadline or idle limit passed: the last word before it is closed with `cause`.
  virtual void OnExpire(Connection* c, const char* cause) {
    (void)c;
    (void)cause;
  }
  // Each loop wake-up, at least once a second.
  virtual void OnTick(int64_t now) { (void)now; }
};

class Listener {
 public:
  explicit Listener(const ListenerOptions& options);
  ~Listener();  // Stop()s
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds address:port (numeric IPv4 or IPv6; port 0: any free port). Returns the bound port, or
  // -1 with *error ("bind: Address already in use", "'x' is not a numeric IP address").
  int Bind(const std::string& address, int port, std::string* error);
  // Starts the loop thread, which calls `handler` (it must outlive Stop()). After Bind.
  void Start(ConnectionHandler* handler);
  // Joins the loop and closes every connection it holds and the listening socket. Idempotent.
  void Stop();

  // The loop thread's (inside handler calls):
  // epoll events to wait for (EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLET ...); 0: none.
  void Watch(Connection* c, uint32_t events);
  // Closed with `cause` (null: quietly) at `at_ns`; max() clears it.
  void SetDeadline(Connection* c, int64_t at_ns, const char* cause);
  // Closed with idle_timeout after `idle_ns` without Touch (0: no limit); counts from `now`.
  void SetIdle(Connection* c, int64_t idle_ns, int64_t now);
  void Touch(Connection* c, int64_t now) { c->last_ns = now; }
  void SetYield(Connection* c, Yield yield);
  // Closes and forgets it (c is gone after): an ordinary end when `cause` is null, else a
  // refusal counted under `cause`.
  void Close(Connection* c, const char* cause);
  // Takes it out of the loop and returns its descriptor, now the caller's: it stays counted
  // (never giving way) until Release(id).
  int Detach(Connection* c);
  // Hands the socket to another server: returns the descriptor for it and keeps a duplicate that
  // counts the connection (giving way as kThen, no deadline) until its hang-up; -1 (and the
  // connection closed, fd_limit_cause) when no duplicate could be made.
  int HandOn(Connection* c);

  // Any thread: a detached connection is over.
  void Release(uint64_t id);
  // Any thread: counts a refusal of this port that the handler decided (bad_request, busy).
  void Refuse(const std::string& cause, const std::string& peer) { refusals_.Refuse(cause, peer); }

  int fd() const { return listen_fd_; }
  const RefusalLog& refusals() const { return refusals_; }
  // Connections the caps count now (any thread).
  size_t open_connections() const { return open_.load(std::memory_order_relaxed); }

 private:
  void Loop();
  void Accept(int64_t now);
  void AcceptFailed(int err, int64_t now);
  void Admit(int fd, const void* sockaddr_storage, int64_t now);
  void ExpireDeadlines(int64_t now);
  void ReapReleased();
  int WaitMs(int64_t now) const;
  void Forget(uint64_t id);

  const ListenerOptions options_;
  RefusalLog refusals_;
  ConnectionHandler* handler_ = nullptr;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;     // eventfd: stop, or a Release
  int reserve_fd_ = -1;  // spent to accept-and-close when out of file descriptors
  std::atomic<bool> stop_{false};
  std::atomic<size_t> open_{0};
  std::thread thread_;

  // The loop thread's.
  ConnTable table_;
  std::map<uint64_t, std::unique_ptr<Connection>> conns_;  // in the loop
  uint64_t next_id_ = 2;  // epoll data 0: the listener, 1: the eventfd
  int64_t accept_paused_until_ns_ = 0;
  int64_t next_expiry_ns_ = 0;  // no deadline passes before it

  std::mutex mu_;                  // guards released_
  std::vector<uint64_t> released_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_NET_LISTENER_H_
