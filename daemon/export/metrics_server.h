// The Prometheus endpoint (GET /metrics) served from one small event loop instead of
// prometheus-cpp's CivetWeb exposer, whose two worker threads any two idle or trickling local
// connections could hold (docs/daemon.md, "The metrics port under load").
//
// The port's accept loop, deadlines, cap and refusal counting are the Listener's
// (daemon/net/listener.h, one thread, non-blocking sockets); this class answers. Each connection
// carries one request and is closed after the answer (`Connection: close`). Limits:
//   - the whole request must arrive, and the whole answer be read, within request_timeout_ms of
//     the connection's accept (or of the request's completion, for the answer); otherwise the
//     connection is closed (cause request_timeout or response_timeout);
//   - at most max_connections are open; a new connection beyond that closes one already answered
//     (quietly), else the oldest one still sending its request, else the oldest other
//     (cause connection_limit); out of descriptors: cause accept_failed.
// Refusals are logged once per cause per 10 s (RefusalLog) and counted in
// xtimer_refused_connections_total{port="metrics",cause}. The exposition is prometheus-cpp's
// TextSerializer over the registered collectables, preceded by the server's own metrics
// (exposer_scrapes_total, exposer_transferred_bytes_total, exposer_request_latencies).
#ifndef XTIMER_DAEMON_METRICS_SERVER_H_
#define XTIMER_DAEMON_METRICS_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>

#include "daemon/base/refusal_log.h"
#include "daemon/net/listener.h"

namespace prometheus {
class Counter;
class Registry;
class Summary;
}  // namespace prometheus

namespace xtimer {
namespace daemon {

struct MetricsServerOptions {
  std::string address = "127.0.0.1";  // numeric IPv4 or IPv6
  int port = 0;                       // 0: any free port
  int max_connections = 256;
  int request_timeout_ms = 5000;
};

class MetricsServer : private ConnectionHandler {
 public:
  // Refusal causes, as in the log and the `cause` label.
  static constexpr const char* kCauses[] = {"request_timeout", "response_timeout",
                                            "connection_limit", "bad_request", "accept_failed"};

  explicit MetricsServer(const MetricsServerOptions& options);
  ~MetricsServer() override;  // Stop()s
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Before Start(): each scrape serializes every collectable's families, in this order.
  void RegisterCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Listens and starts the serving thread. Returns the port, or -1 with *error (e.g.
  // "bind: Address already in use").
  int Start(std::string* error);

  // Closes every connection and the listening socket; joins the thread. Idempotent.
  void Stop();

  const RefusalLog& refusals() const { return listener_.refusals(); }
  // Connections open now (for tests; read from any thread).
  int open_connections() const { return static_cast<int>(listener_.open_connections()); }

 private:
  struct ScrapeConn;

  // ConnectionHandler (the listener's loop thread):
  void OnAccept(Connection* c, int64_t now) override;
  void OnEvent(Connection* c, uint32_t events, int64_t now) override;
  void OnTick(int64_t now) override;

  // Each returns false when the connection is to be closed.
  bool OnReadable(Connection* c, ScrapeConn* s, int64_t now);
  bool OnWritable(Connection* c, ScrapeConn* s, int64_t now);
  void Answer(Connection* c, ScrapeConn* s, int64_t now);
  // Every collectable's families, in registration order.
  std::vector<prometheus::MetricFamily> Collect();
  // Keeps *out's buffer as the next scrape's answer buffer when it fits (see kSpareSlackBytes);
  // empties *out.
  void KeepSpare(std::string* out);

  const MetricsServerOptions options_;
  Listener listener_;
  std::shared_ptr<prometheus::Registry> registry_;  // the server's own metrics
  prometheus::Counter* scrapes_ = nullptr;
  prometheus::Counter* bytes_ = nullptr;
  prometheus::Summary* latency_ = nullptr;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  // The loop thread's only: a finished answer's buffer, reused by the next scrape (no page
  // faults for the exposition), and the size and time of the last /metrics answer.
  std::string spare_;
  size_t last_answer_bytes_ = 0;
  int64_t last_answer_ns_ = 0;  // CLOCK_MONOTONIC
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_METRICS_SERVER_H_
