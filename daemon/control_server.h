// The control port: one TCP listener that speaks gRPC (HostingService) and HTTP/1.1 JSON
// (`POST /HostingService/<Method>`), both answered by the same ControlHandler.
//
// We own the listening socket and peek at each connection's first bytes: the HTTP/2 client
// preface ("PRI * HTTP/2.0...") goes to the gRPC server through
// ServerBuilder::experimental().AddExternalConnectionAcceptor (the fd made non-blocking and
// TCP_NODELAY first: gRPC's poller assumes both); anything else is HTTP/1.1, read and answered
// here on a short-lived thread (bounded in number, size and time).
#ifndef XTIMER_DAEMON_CONTROL_SERVER_H_
#define XTIMER_DAEMON_CONTROL_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/control_handler.h"

namespace grpc {
class Server;
namespace experimental {
class ExternalConnectionAcceptor;
}
}  // namespace grpc

namespace xtimer {
namespace daemon {

class ControlServer {
 public:
  explicit ControlServer(ControlHandler* handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds address:port (numeric IPv4 or IPv6; port 0 = any free port) and starts serving.
  // Returns the bound port, or -1 with *error.
  int Start(const std::string& address, int port, std::string* error);
  void Shutdown();

 private:
  class Service;
  void AcceptLoop();
  void ServeHttp(int fd);

  ControlHandler* handler_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<grpc::Server> server_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int active_http_ = 0;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONTROL_SERVER_H_
