#include "daemon/export/metrics_server.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>

#include "daemon/export/exposition.h"
#include "daemon/export/http_request.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kDrainNs = 1000 * kMs;  // after the answer, how long unread input is drained
constexpr size_t kReadChunk = 4096;
// Room left before a /metrics body for its response head, which is written once the body's length
// is known: the body is rendered in place, never copied.
constexpr size_t kHeadRoom = 192;
// A spare answer buffer is kept for the next scrape unless it is this much larger than the last
// answer needed (ranks left): then it is freed, and the memory goes back to the system.
constexpr size_t kSpareSlackBytes = 64 << 10;
// ... and it is freed when no scrape came for this long (Prometheus scrapes every 15 s at its
// usual setting), so an idle daemon holds no answer.
constexpr int64_t kSpareIdleNs = 20000 * kMs;

std::string ResponseHead(int status, const char* reason, const char* content_type,
                         size_t length) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " +
         content_type + "\r\nContent-Length: " + std::to_string(length) +
         "\r\nConnection: close\r\n\r\n";
}

std::string Response(int status, const char* reason, const char* content_type,
                     const std::string& body) {
  return ResponseHead(status, reason, content_type, body.size()) + body;
}

ListenerOptions ListenerOptionsOf(const MetricsServerOptions& o) {
  ListenerOptions l;
  l.name = "metrics port: connection";
  l.max_connections = static_cast<size_t>(o.max_connections < 1 ? 1 : o.max_connections);
  l.log_peer_port = true;
  l.fd_limit_cause = "accept_failed";
  return l;
}

}  // namespace

// One scrape: the request being read, the answer being written, then unread input drained.
struct MetricsServer::ScrapeConn : ConnectionState {
  enum class Stage { kReading, kWriting, kDraining };
  Stage stage = Stage::kReading;
  HttpRequestParser parser{kMaxHttpHeaderBytes, 0};
  std::string out;
  size_t sent = 0;
};

MetricsServer::MetricsServer(const MetricsServerOptions& options)
    : options_(options),
      listener_(ListenerOptionsOf(options)),
      registry_(std::make_shared<prometheus::Registry>()) {
  scrapes_ = &prometheus::BuildCounter()
                  .Name("exposer_scrapes_total")
                  .Help("GET /metrics requests answered by the metrics port.")
                  .Register(*registry_)
                  .Add({});
  bytes_ = &prometheus::BuildCounter()
                .Name("exposer_transferred_bytes_total")
                .Help("Bytes of /metrics bodies the metrics port produced.")
                .Register(*registry_)
                .Add({});
  latency_ = &prometheus::BuildSummary()
                  .Name("exposer_request_latencies")
                  .Help("Time to collect and serialize one /metrics answer, microseconds.")
                  .Register(*registry_)
                  .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}});
  collectables_.push_back(registry_);
}

MetricsServer::~MetricsServer() { Stop(); }

void MetricsServer::RegisterCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}

int MetricsServer::Start(std::string* error) {
  const int port = listener_.Bind(options_.address, options_.port, error);
  if (port >= 0) listener_.Start(this);
  return port;
}

void MetricsServer::Stop() { listener_.Stop(); }

void MetricsServer::OnAccept(Connection* c, int64_t now) {
  c->state = std::make_unique<ScrapeConn>();
  listener_.Watch(c, EPOLLIN);
  listener_.SetDeadline(c, now + options_.request_timeout_ms * kMs, "request_timeout");
}

void MetricsServer::OnEvent(Connection* c, uint32_t events, int64_t now) {
  (void)events;  // a hang-up or error shows as a failed recv or send
  auto* s = static_cast<ScrapeConn*>(c->state.get());
  const bool keep = s->stage == ScrapeConn::Stage::kWriting ? OnWritable(c, s, now)
                                                            : OnReadable(c, s, now);
  if (!keep) listener_.Close(c, nullptr);
}

void MetricsServer::OnTick(int64_t now) {
  if (spare_.capacity() > 0 && now - last_answer_ns_ > kSpareIdleNs) std::string().swap(spare_);
}

// Returns false when the connection is to be closed.
bool MetricsServer::OnReadable(Connection* c, ScrapeConn* s, int64_t now) {
  char buf[kReadChunk];
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;  // the peer closed (before its request completed, or draining)
    if (s->stage == ScrapeConn::Stage::kDraining) continue;
    if (s->parser.Feed(buf, static_cast<size_t>(n)) != HttpRequestParser::State::kNeedMore) {
      Answer(c, s, now);
      return OnWritable(c, s, now);
    }
  }
  return true;
}

bool MetricsServer::OnWritable(Connection* c, ScrapeConn* s, int64_t now) {
  while (s->sent < s->out.size()) {
    const ssize_t n = send(c->fd, s->out.data() + s->sent, s->out.size() - s->sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    s->sent += static_cast<size_t>(n);
  }
  // All sent: half-close, then read and drop what the client still sends until it closes, so
  // that closing with unread input (a reset) cannot destroy the answer in flight. Past the cap a
  // draining connection is the first to go, quietly.
  KeepSpare(&s->out);
  shutdown(c->fd, SHUT_WR);
  s->stage = ScrapeConn::Stage::kDraining;
  listener_.SetDeadline(c, now + kDrainNs, nullptr);
  listener_.SetYield(c, Yield::kQuietly);
  listener_.Watch(c, EPOLLIN);
  return true;
}

void MetricsServer::Answer(Connection* c, ScrapeConn* s, int64_t now) {
  s->stage = ScrapeConn::Stage::kWriting;
  listener_.SetDeadline(c, now + options_.request_timeout_ms * kMs, "response_timeout");
  listener_.SetYield(c, Yield::kThen);
  listener_.Watch(c, EPOLLOUT);
  const HttpRequestParser& p = s->parser;
  if (p.state() == HttpRequestParser::State::kError) {
    listener_.Refuse("bad_request", c->peer);
    s->out = Response(p.error_status(), HttpReason(p.error_status()), "text/plain",
                      p.error_reason() + "\n");
  } else if (p.request().path != "/metrics") {
    s->out = Response(404, HttpReason(404), "text/plain", "only /metrics is served here\n");
  } else if (p.request().method != "GET") {
    s->out = Response(405, HttpReason(405), "text/plain", "/metrics takes GET\n");
  } else {
    const int64_t start = MonotonicNs();
    // The body is rendered after kHeadRoom bytes of a reused buffer; the head goes right before
    // it, and sending starts there.
    s->out.swap(spare_);
    s->out.reserve(kHeadRoom + last_answer_bytes_ + last_answer_bytes_ / 8);
    s->out.assign(kHeadRoom, ' ');
    AppendExposition(Collect(), &s->out);
    const size_t body = s->out.size() - kHeadRoom;
    const std::string head =
        ResponseHead(200, HttpReason(200), "text/plain; version=0.0.4; charset=utf-8", body);
    s->sent = kHeadRoom - head.size();
    s->out.replace(s->sent, head.size(), head);
    last_answer_bytes_ = s->out.size();
    last_answer_ns_ = now;
    scrapes_->Increment();
    bytes_->Increment(static_cast<double>(body));
    latency_->Observe(static_cast<double>(MonotonicNs() - start) / 1000.0);
  }
}

std::vector<prometheus::MetricFamily> MetricsServer::Collect() {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables_) {
    std::vector<prometheus::MetricFamily> f = c->Collect();
    families.insert(families.end(), std::make_move_iterator(f.begin()),
                    std::make_move_iterator(f.end()));
  }
  return families;
}

void MetricsServer::KeepSpare(std::string* out) {
  out->clear();
  if (out->capacity() > spare_.capacity() &&
      out->capacity() <= 2 * last_answer_bytes_ + kSpareSlackBytes) {
    out->swap(spare_);
  }
  std::string().swap(*out);
  if (spare_.capacity() > 2 * last_answer_bytes_ + kSpareSlackBytes) std::string().swap(spare_);
}

}  // namespace daemon
}  // namespace xtimer
