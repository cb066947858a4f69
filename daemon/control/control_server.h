// The control port: one TCP listener that speaks gRPC (HostingService) and HTTP/1.1 JSON
// (`POST /HostingService/<Method>`), both answered by the same ControlHandler.
//
// The port's accept loop, deadlines, caps and refusal counting are the Listener's
// (daemon/net/listener.h: one event-loop thread, epoll, non-blocking sockets); this class peeks
// at each connection's first bytes and reads HTTP/1.1 requests, with deadlines: a connection that
// sends nothing for `idle_timeout_ms` before its request is complete, or whose whole request takes
// longer than `request_timeout_ms`, is closed. The HTTP/2 client preface ("PRI * HTTP/2.0...")
// goes to the gRPC server through ServerBuilder::experimental().AddExternalConnectionAcceptor
// (non-blocking, TCP_NODELAY); the listener keeps a duplicate of the fd to count the connection
// against the caps until gRPC or the peer closes it (Listener::HandOn). Complete HTTP requests (and
// error answers) go to a small worker pool that calls the handler and writes the answer under a
// send deadline. Caps and who gives way: daemon/net/conn_table.h. docs/control.md.
#ifndef XTIMER_DAEMON_CONTROL_SERVER_H_
#define XTIMER_DAEMON_CONTROL_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "daemon/base/refusal_log.h"
#include "daemon/control/control_handler.h"
#include "daemon/net/listener.h"

namespace grpc {
class Server;
namespace experimental {
class ExternalConnectionAcceptor;
}
}  // namespace grpc

namespace xtimer {
namespace daemon {

class HttpRequestParser;

// Flags: --control-idle-timeout, --control-request-timeout, --control-max-connections,
// --control-max-connections-per-peer (daemon/flags.h).
struct ControlLimits {
  int64_t idle_timeout_ms = 5000;      // silence allowed before a complete request; gRPC idle
  int64_t request_timeout_ms = 10000;  // a whole HTTP request, from accept; sending the answer
  size_t max_connections = 512;        // open at once on the port (gRPC ones included)
  size_t max_connections_per_peer = 256;  // from one peer address
  int http_workers = 4;                // threads answering HTTP requests
  size_t http_queue = 64;              // complete requests waiting for a worker; more: 503
  // --control-allow-remote: callers not on this host may dump and HangCheck every job (their
  // user cannot be known); without it they see no job (daemon/control/control_caller.h).
  bool allow_remote = false;
};

class ControlServer : private ConnectionHandler {
 public:
  explicit ControlServer(ControlHandler* handler, ControlLimits limits = ControlLimits());
  ~ControlServer() override;
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds address:port (numeric IPv4 or IPv6; port 0 = any free port) and starts serving.
  // Returns the bound port, or -1 with *error.
  int Start(const std::string& address, int port, std::string* error);
  void Shutdown();

  // Connections closed or refused, by cause (docs/control.md): the Prometheus counter
  // xtimer_refused_connections_total{port="control",cause}.
  const RefusalLog& refusals() const { return listener_.refusals(); }
  // Connections the caps count now.
  size_t open_connections() const { return listener_.open_connections(); }

 private:
  class Service;
  struct Conn;
  struct Handoff;

  bool StartGrpc(std::string* error);
  // ConnectionHandler (the listener's loop thread):
  void OnAccept(Connection* c, int64_t now) override;
  void OnEvent(Connection* c, uint32_t events, int64_t now) override;
  void OnExpire(Connection* c, const char* cause) override;

  void Sniff(Connection* c, Conn* s, int64_t now);
  void ReadHttp(Connection* c, Conn* s, int64_t now);
  void HandToGrpc(Connection* c);
  void Dispatch(Connection* c, Conn* s, bool not_ours);
  void Worker();
  void Answer(Handoff* job);
  void ServeHttp(int fd, const HttpRequestParser& parser);
  // Who is at the other end of an accepted connection (daemon/control/control_caller.h).
  Caller CallerAt(const sockaddr_storage& client) const;

  ControlHandler* handler_;
  const ControlLimits limits_;
  Listener listener_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_ = 0;  // bound
  std::atomic<bool> stop_{false};

  // Worker pool.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Handoff>> jobs_;
  bool workers_stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONTROL_SERVER_H_
