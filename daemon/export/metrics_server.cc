#include "daemon/export/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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
constexpr int64_t kAcceptPauseNs = 100 * kMs;  // after EMFILE/ENFILE
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

std::string PeerName(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  port = ntohs(in6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

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

int Listen(const std::string& address, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0) {
    *error = "'" + address + "' is not a numeric IP address";
    return -1;
  }
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const char* step = fd < 0 ? "socket" : ::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ? "bind"
                                       : ::listen(fd, 1024) != 0                      ? "listen"
                                                                                      : nullptr;
  const int saved = errno;
  freeaddrinfo(ai);
  if (step == nullptr) return fd;
  *error = std::string(step) + ": " + strerror(saved);
  if (fd >= 0) ::close(fd);
  return -1;
}

int BoundPort(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return -1;
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port);
}

}  // namespace

struct MetricsServer::ScrapeConn {
  enum class Stage { kReading, kWriting, kDraining };
  ScrapeConn(int f, std::string p, int64_t now, int64_t timeout)
      : fd(f),
        peer(std::move(p)),
        since_ns(now),
        deadline_ns(now + timeout),
        parser(kMaxHttpHeaderBytes, 0) {}
  int fd;
  std::string peer;
  int64_t since_ns;     // accepted
  int64_t deadline_ns;  // of the current stage
  Stage stage = Stage::kReading;
  HttpRequestParser parser;
  std::string out;
  size_t sent = 0;
};

MetricsServer::MetricsServer(const MetricsServerOptions& options)
    : options_(options),
      refusals_("metrics port: connection"),
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
  listen_fd_ = Listen(options_.address, options_.port, error);
  if (listen_fd_ < 0) return -1;
  if (pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return -1;
  }
  const int port = BoundPort(listen_fd_);
  thread_ = std::thread([this] { Loop(); });
  return port;
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    const char b = 0;
    while (write(wake_[1], &b, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void MetricsServer::Loop() {
  std::vector<pollfd> fds;
  for (;;) {
    const int64_t now = MonotonicNs();
    ExpireDeadlines(now);
    if (spare_.capacity() > 0 && now - last_answer_ns_ > kSpareIdleNs) std::string().swap(spare_);
    int64_t next = now + 1000 * kMs;
    for (const auto& c : conns_) next = std::min(next, c->deadline_ns);
    const bool accepting = now >= accept_paused_until_ns_;
    if (!accepting) next = std::min(next, accept_paused_until_ns_);
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    for (const auto& c : conns_) {
      const short ev = c->stage == ScrapeConn::Stage::kWriting ? POLLOUT : POLLIN;
      fds.push_back({c->fd, ev, 0});
    }
    const int timeout_ms = static_cast<int>(std::max<int64_t>(0, (next - now) / kMs) + 1);
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    const int64_t t = MonotonicNs();
    // Connections first (indices match fds[2..]); then new ones, which may evict.
    for (size_t i = conns_.size(); i-- > 0;) {
      const short re = fds[i + 2].revents;
      if (re == 0) continue;
      ScrapeConn* c = conns_[i].get();
      const bool keep =
          c->stage == ScrapeConn::Stage::kWriting ? OnWritable(c, t) : OnReadable(c, t);
      if (!keep) Close(i, nullptr);
    }
    if (fds[1].revents != 0) AcceptAll(t);
  }
  while (!conns_.empty()) Close(conns_.size() - 1, nullptr);
}

void MetricsServer::ExpireDeadlines(int64_t now) {
  for (size_t i = conns_.size(); i-- > 0;) {
    const ScrapeConn& c = *conns_[i];
    if (now < c.deadline_ns) continue;
    Close(i, c.stage == ScrapeConn::Stage::kReading   ? "request_timeout"
             : c.stage == ScrapeConn::Stage::kWriting ? "response_timeout"
                                                      : nullptr);
  }
}

void MetricsServer::AcceptAll(int64_t now) {
  for (;;) {
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        refusals_.Refuse("accept_failed", std::string("(not accepted: ") + strerror(errno) + ")");
        accept_paused_until_ns_ = now + kAcceptPauseNs;
      }
      return;
    }
    if (conns_.size() >= static_cast<size_t>(options_.max_connections)) Evict();
    conns_.push_back(
        std::make_unique<ScrapeConn>(fd, PeerName(sa), now, options_.request_timeout_ms * kMs));
    open_.store(static_cast<int>(conns_.size()), std::memory_order_relaxed);
  }
}

// Closes one connection to make room: a draining one (already answered) if any, else the oldest
// still sending its request, else the oldest.
void MetricsServer::Evict() {
  size_t victim = conns_.size();
  int rank = 3;  // lower is evicted first
  for (size_t i = 0; i < conns_.size(); ++i) {
    const ScrapeConn& c = *conns_[i];
    const int r = c.stage == ScrapeConn::Stage::kDraining  ? 0
                  : c.stage == ScrapeConn::Stage::kReading ? 1
                                                           : 2;
    if (r < rank || (r == rank && c.since_ns < conns_[victim]->since_ns)) {
      victim = i;
      rank = r;
    }
  }
  if (victim < conns_.size()) Close(victim, rank == 0 ? nullptr : "connection_limit");
}

void MetricsServer::Close(size_t i, const char* cause) {
  if (cause != nullptr) refusals_.Refuse(cause, conns_[i]->peer);
  ::close(conns_[i]->fd);
  conns_[i] = std::move(conns_.back());
  conns_.pop_back();
  open_.store(static_cast<int>(conns_.size()), std::memory_order_relaxed);
}

// Returns false when the connection is to be closed.
bool MetricsServer::OnReadable(ScrapeConn* c, int64_t now) {
  char buf[kReadChunk];
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;  // the peer closed (before its request completed, or draining)
    if (c->stage == ScrapeConn::Stage::kDraining) continue;
    if (c->parser.Feed(buf, static_cast<size_t>(n)) != HttpRequestParser::State::kNeedMore) {
      Answer(c, now);
      return OnWritable(c, now);
    }
  }
  return true;
}

bool MetricsServer::OnWritable(ScrapeConn* c, int64_t now) {
  while (c->sent < c->out.size()) {
    const ssize_t n = send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c->sent += static_cast<size_t>(n);
  }
  // All sent: half-close, then read and drop what the client still sends until it closes, so
  // that closing with unread input (a reset) cannot destroy the answer in flight.
  KeepSpare(&c->out);
  shutdown(c->fd, SHUT_WR);
  c->stage = ScrapeConn::Stage::kDraining;
  c->deadline_ns = now + kDrainNs;
  return true;
}

void MetricsServer::Answer(ScrapeConn* c, int64_t now) {
  c->stage = ScrapeConn::Stage::kWriting;
  c->deadline_ns = now + options_.request_timeout_ms * kMs;
  const HttpRequestParser& p = c->parser;
  if (p.state() == HttpRequestParser::State::kError) {
    refusals_.Refuse("bad_request", c->peer);
    c->out = Response(p.error_status(), HttpReason(p.error_status()), "text/plain",
                      p.error_reason() + "\n");
  } else if (p.request().path != "/metrics") {
    c->out = Response(404, HttpReason(404), "text/plain", "only /metrics is served here\n");
  } else if (p.request().method != "GET") {
    c->out = Response(405, HttpReason(405), "text/plain", "/metrics takes GET\n");
  } else {
    const int64_t start = MonotonicNs();
    // The body is rendered after kHeadRoom bytes of a reused buffer; the head goes right before
    // it, and sending starts there.
    c->out.swap(spare_);
    c->out.reserve(kHeadRoom + last_answer_bytes_ + last_answer_bytes_ / 8);
    c->out.assign(kHeadRoom, ' ');
    AppendExposition(Collect(), &c->out);
    const size_t body = c->out.size() - kHeadRoom;
    const std::string head =
        ResponseHead(200, HttpReason(200), "text/plain; version=0.0.4; charset=utf-8", body);
    c->sent = kHeadRoom - head.size();
    c->out.replace(c->sent, head.size(), head);
    last_answer_bytes_ = c->out.size();
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
