#include "daemon/control/control_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include "daemon/base/log.h"
#include "daemon/control/control_caller.h"
#include "daemon/control/control_json.h"
#include "daemon/export/http_request.h"
#include "proto/hosting.grpc.pb.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

// gRPC: connections older than this are told to go away (GOAWAY), with this grace for calls in
// progress (a capture may run 600 s); keepalive pings find dead peers.
constexpr int kGrpcMaxAgeMs = 3600 * 1000;
constexpr int kGrpcMaxAgeGraceMs = 660 * 1000;
constexpr int kGrpcKeepaliveMs = 60 * 1000;
constexpr int kGrpcKeepaliveTimeoutMs = 10 * 1000;
constexpr int kGrpcMaxStreams = 16;
constexpr int kGrpcMaxThreads = 32;
constexpr size_t kGrpcMemoryBytes = 256u << 20;
// What is read and dropped after an error answer before closing (CloseAfterError).
constexpr size_t kMaxDrainBytes = 256 * 1024;
constexpr int kDrainTimeoutMs = 500;
// The HTTP/2 client connection preface: gRPC clients send it first.
constexpr char kHttp2Preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kHttp2PrefaceBytes = sizeof(kHttp2Preface) - 1;
// Said to (and logged for) clients that speak neither protocol.
constexpr char kNotOurProtocol[] =
    "this is xtimerd's control port: it speaks gRPC (HostingService) and HTTP/1.1 (POST "
    "/HostingService/<Method> with a JSON body), and the bytes received are neither. Is the "
    "client pointed at the control port? (Prometheus scrapes the metrics port, --metrics-port.)";

grpc::Status ToGrpc(const CallStatus& s) {
  return s.ok() ? grpc::Status::OK
                : grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code)), s.message);
}

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void Reply(int fd, int status, const std::string& body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + HttpReason(status) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  SendAll(fd, out);
}

Code CodeForHttpError(int status) {
  switch (status) {
    case 413:
    case 431: return Code::kResourceExhausted;
    case 405:
    case 501:
    case 505: return Code::kUnimplemented;
    default: return Code::kInvalidArgument;
  }
}

// recv with a deadline. Returns bytes read, 0 on EOF, -1 on error or timeout.
ssize_t RecvSome(int fd, char* buf, size_t n, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return -1;
  ssize_t got;
  do {
    got = ::recv(fd, buf, n, 0);
  } while (got < 0 && errno == EINTR);
  return got;
}

// After an error answer: half-close, then read (bounded in bytes and time) what the client still
// sends, so that closing does not reset the connection before the client has read the answer.
void CloseAfterError(int fd) {
  ::shutdown(fd, SHUT_WR);
  char sink[4096];
  for (size_t drained = 0; drained < kMaxDrainBytes;) {
    const ssize_t n = RecvSome(fd, sink, sizeof sink, kDrainTimeoutMs);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
}

}  // namespace

// The gRPC face: one line per method, forwarding to the handler.
class ControlServer::Service final : public HostingService::Service {
 public:
  Service(ControlHandler* h, const ControlServer* server) : h_(h), server_(server) {}
  grpc::Status DumpKernelTrace(grpc::ServerContext* ctx, const DumpKernelTraceRequest* req,
                               DumpKernelTraceResponse* resp) override {
    return ToGrpc(h_->DumpKernelTrace(*req, resp, CallerOf(ctx)));
  }
  grpc::Status Status(grpc::ServerContext* ctx, const StatusRequest* req,
                      StatusResponse* resp) override {
    return ToGrpc(h_->Status(*req, resp, CallerOf(ctx)));
  }
  grpc::Status HangCheck(grpc::ServerContext* ctx, const HangCheckRequest* req,
                         HangCheckResponse* resp) override {
    return ToGrpc(h_->HangCheck(*req, resp, CallerOf(ctx)));
  }
  grpc::Status DumpStack(grpc::ServerContext* ctx, const DumpStackRequest* req,
                         DumpStackResponse* resp) override {
    return ToGrpc(h_->DumpStack(*req, resp, CallerOf(ctx)));
  }

 private:
  // An unparseable peer is treated as remote.
  Caller CallerOf(grpc::ServerContext* ctx) const {
    sockaddr_storage sa{};
    if (!ParseGrpcPeer(ctx->peer(), &sa)) sa.ss_family = AF_UNSPEC;
    return server_->CallerAt(sa);
  }

  ControlHandler* h_;
  const ControlServer* server_;
};

Caller ControlServer::CallerAt(const sockaddr_storage& client) const {
  return daemon::CallerOf(client, port_, limits_.allow_remote);
}

namespace {

// A short answer from the loop thread: one non-blocking send, dropped if it does not fit.
void ReplyNow(int fd, int status, Code code, const std::string& message) {
  const std::string body = ErrorJson(code, message);
  const std::string out = "HTTP/1.1 " + std::to_string(status) + " " + HttpReason(status) +
                          "\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  ssize_t unused = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)unused;
}

// Workers write blocking, each send bounded by `timeout_ms`.
void MakeBlocking(int fd, int64_t timeout_ms) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  timeval tv{static_cast<time_t>(timeout_ms / 1000),
             static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// The caps need two descriptors per gRPC connection (gRPC's and the loop's duplicate): raise the
// soft RLIMIT_NOFILE towards the hard one when it is short, and say so when it stays short.
void EnsureFdLimit(size_t max_connections) {
  const rlim_t needed = static_cast<rlim_t>(2 * max_connections + 1024);
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= needed) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= needed ? needed : rl.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < needed) {
    Logf("control port: the open-file limit (%llu) is below the %llu that "
         "--control-max-connections %zu needs (2 per connection + 1024); connections over it are "
         "refused (cause fd_limit): raise it (ulimit -n, LimitNOFILE=) or lower the cap",
         static_cast<unsigned long long>(rl.rlim_cur), static_cast<unsigned long long>(needed),
         max_connections);
  }
}

ListenerOptions ListenerOptionsOf(const ControlLimits& limits) {
  ListenerOptions o;
  o.name = "control port";
  o.max_connections = limits.max_connections;
  o.max_connections_per_peer = limits.max_connections_per_peer;
  o.fd_limit_cause = "fd_limit";
  return o;
}

}  // namespace

// What the control port keeps of a connection in the listener's loop: being sniffed, or an
// HTTP request being read. (A gRPC one is the listener's alone once handed on.)
struct ControlServer::Conn : ConnectionState {
  enum class Phase { kSniff, kHttp };
  Phase phase = Phase::kSniff;
  ssize_t peeked = 0;
  std::unique_ptr<HttpRequestParser> parser;
  bool continue_sent = false;
};

// A connection handed to a worker: a parsed request (or parse error) to answer, or bytes that
// are neither protocol.
struct ControlServer::Handoff {
  uint64_t id = 0;
  int fd = -1;
  std::unique_ptr<HttpRequestParser> parser;  // null: not our protocol
};

ControlServer::ControlServer(ControlHandler* handler, ControlLimits limits)
    : handler_(handler), limits_(limits), listener_(ListenerOptionsOf(limits)) {}

ControlServer::~ControlServer() { Shutdown(); }

int ControlServer::Start(const std::string& address, int port, std::string* error) {
  const int bound = listener_.Bind(address, port, error);
  if (bound < 0) return -1;
  port_ = static_cast<uint16_t>(bound);
  EnsureFdLimit(limits_.max_connections);
  if (!StartGrpc(error)) {
    Shutdown();
    return -1;
  }
  for (int i = 0; i < limits_.http_workers; ++i) workers_.emplace_back([this] { Worker(); });
  listener_.Start(this);
  return bound;
}

bool ControlServer::StartGrpc(std::string* error) {
  service_ = std::make_unique<Service>(handler_, this);
  grpc::ServerBuilder b;
  b.RegisterService(service_.get());
  b.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBytes));
  const int idle_ms = static_cast<int>(limits_.idle_timeout_ms);
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms);
  b.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                       static_cast<int>(limits_.request_timeout_ms));
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, kGrpcMaxAgeMs);
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, kGrpcMaxAgeGraceMs);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kGrpcKeepaliveMs);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kGrpcKeepaliveTimeoutMs);
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kGrpcMaxStreams);
  grpc::ResourceQuota quota("xtimerd-control");
  quota.SetMaxThreads(kGrpcMaxThreads);
  quota.Resize(kGrpcMemoryBytes);
  b.SetResourceQuota(quota);
  acceptor_ = b.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      grpc::InsecureServerCredentials());
  server_ = b.BuildAndStart();  // no AddListeningPort: the socket is ours
  if (!server_) *error = "cannot start the gRPC server";
  return server_ != nullptr;
}

void ControlServer::Shutdown() {
  if (stop_.exchange(true)) return;
  listener_.Stop();  // no new work; the connections in the loop closed
  {
    std::lock_guard<std::mutex> l(mu_);
    workers_stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void ControlServer::OnAccept(Connection* c, int64_t now) {
  c->state = std::make_unique<Conn>();
  listener_.SetDeadline(c, now + limits_.request_timeout_ms * 1000000LL, "request_timeout");
  listener_.SetIdle(c, limits_.idle_timeout_ms * 1000000LL, now);
  listener_.Watch(c, EPOLLIN | EPOLLRDHUP | EPOLLET);
}

void ControlServer::OnEvent(Connection* c, uint32_t events, int64_t now) {
  (void)events;  // a hang-up shows as the end of the data
  auto* s = static_cast<Conn*>(c->state.get());
  if (s->phase == Conn::Phase::kSniff) Sniff(c, s, now);  // may end, dispatch or hand on c
  else ReadHttp(c, s, now);
}

// A request that took too long gets a 408 before the listener closes it.
void ControlServer::OnExpire(Connection* c, const char* cause) {
  const auto* s = static_cast<const Conn*>(c->state.get());
  if (std::strcmp(cause, "request_timeout") == 0 && s->phase == Conn::Phase::kHttp) {
    ReplyNow(c->fd, 408, Code::kInvalidArgument,
             "the request took longer than " + std::to_string(limits_.request_timeout_ms) +
                 " ms to arrive (--control-request-timeout)");
  }
}

// Peeks (without consuming) until the protocol is known: the whole HTTP/2 preface, or a first
// byte that cannot start it. Edge-triggered: each new arrival wakes us again.
void ControlServer::Sniff(Connection* c, Conn* s, int64_t now) {
  char buf[kHttp2PrefaceBytes];
  const ssize_t n = ::recv(c->fd, buf, sizeof buf, MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    listener_.Close(c, nullptr);  // the client left (or the socket failed) before saying anything
    return;
  }
  if (n > s->peeked) listener_.Touch(c, now);
  s->peeked = n;
  if (std::memcmp(buf, kHttp2Preface, static_cast<size_t>(n)) != 0) {
    if (buf[0] >= 'A' && buf[0] <= 'Z') {
      s->phase = Conn::Phase::kHttp;
      s->parser = std::make_unique<HttpRequestParser>(kMaxHttpHeaderBytes, kMaxRequestBytes);
      ReadHttp(c, s, now);
    } else {
      Dispatch(c, s, /*not_ours=*/true);
    }
  } else if (static_cast<size_t>(n) == kHttp2PrefaceBytes) {
    HandToGrpc(c);
  }
}

void ControlServer::ReadHttp(Connection* c, Conn* s, int64_t now) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      listener_.Close(c, nullptr);  // closed before the request was complete
      return;
    }
    listener_.Touch(c, now);
    if (s->parser->Feed(buf, static_cast<size_t>(n)) != HttpRequestParser::State::kNeedMore) {
      Dispatch(c, s, /*not_ours=*/false);
      return;
    }
  }
  if (s->parser->headers_done() && s->parser->request().expect_continue && !s->continue_sent) {
    s->continue_sent = true;
    static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ssize_t unused = ::send(c->fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)unused;
  }
}

// gRPC owns the socket from here; the listener keeps counting it (daemon/net/listener.h).
void ControlServer::HandToGrpc(Connection* c) {
  const int fd = listener_.HandOn(c);
  if (fd < 0) return;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
  p.listener_fd = listener_.fd();
  p.fd = fd;
  acceptor_->HandleNewConnection(&p);
}

// Hands the connection to the worker pool (or answers 503 when its queue is full).
void ControlServer::Dispatch(Connection* c, Conn* s, bool not_ours) {
  auto job = std::make_unique<Handoff>();
  job->id = c->id;
  if (!not_ours) job->parser = std::move(s->parser);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (jobs_.size() < limits_.http_queue) {
      job->fd = listener_.Detach(c);  // the worker owns the fd now; the listener still counts it
      jobs_.push_back(std::move(job));
      cv_.notify_one();
      return;
    }
  }
  ReplyNow(c->fd, 503, Code::kResourceExhausted,
           "the control port is answering too many requests; retry in a moment");
  listener_.Close(c, "busy");
}

void ControlServer::Worker() {
  for (;;) {
    std::unique_ptr<Handoff> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return workers_stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (!stop_.load()) Answer(job.get());
    ::close(job->fd);
    listener_.Release(job->id);
  }
}

void ControlServer::Answer(Handoff* job) {
  MakeBlocking(job->fd, limits_.request_timeout_ms);
  if (job->parser == nullptr) {
    Logf("control port: a client sent bytes that are neither HTTP/1.1 nor gRPC (is it "
         "pointed at the control port?)");
    // Read what arrived, so that closing sends FIN after the answer, not a reset.
    char sink[4096];
    while (::recv(job->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    Reply(job->fd, 400, ErrorJson(Code::kInvalidArgument, kNotOurProtocol));
    ::shutdown(job->fd, SHUT_WR);
    return;
  }
  const HttpRequestParser& parser = *job->parser;
  if (parser.state() == HttpRequestParser::State::kError) {
    Reply(job->fd, parser.error_status(),
          ErrorJson(CodeForHttpError(parser.error_status()), parser.error_reason()));
    CloseAfterError(job->fd);
    return;
  }
  ServeHttp(job->fd, parser);
}

void ControlServer::ServeHttp(int fd, const HttpRequestParser& parser) {
  const HttpRequest& r = parser.request();
  static const std::string kPrefix = "/HostingService/";
  if (r.path.compare(0, kPrefix.size(), kPrefix) != 0) {
    Reply(fd, 404, ErrorJson(Code::kNotFound, "no such path '" + r.path.substr(0, 200) +
                                                  "': use POST /HostingService/<Method>"));
    return;
  }
  std::string json;
  sockaddr_storage client{};
  socklen_t len = sizeof client;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&client), &len) != 0) {
    client.ss_family = AF_UNSPEC;  // gone: treated as remote
  }
  const int status =
      HandleJson(handler_, r.path.substr(kPrefix.size()), r.body, &json, CallerAt(client));
  Reply(fd, status, json);
}

}  // namespace daemon
}  // namespace xtimer
