#include "daemon/control_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

#include "daemon/http_request.h"
#include "daemon/log.h"
#include "proto/hosting.grpc.pb.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int kMaxHttpConnections = 64;
constexpr int kIoTimeoutMs = 5000;
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

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
  }
}

void Reply(int fd, int status, const std::string& body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
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
ssize_t RecvSome(int fd, char* buf, size_t n, int timeout_ms = kIoTimeoutMs) {
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
  explicit Service(ControlHandler* h) : h_(h) {}
  grpc::Status DumpKernelTrace(grpc::ServerContext*, const DumpKernelTraceRequest* req,
                               DumpKernelTraceResponse* resp) override {
    return ToGrpc(h_->DumpKernelTrace(*req, resp));
  }
  grpc::Status Status(grpc::ServerContext*, const StatusRequest* req,
                      StatusResponse* resp) override {
    return ToGrpc(h_->Status(*req, resp));
  }

 private:
  ControlHandler* h_;
};

ControlServer::ControlServer(ControlHandler* handler) : handler_(handler) {}

ControlServer::~ControlServer() { Shutdown(); }

int ControlServer::Start(const std::string& address, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  const std::string ps = std::to_string(port);
  int rc = getaddrinfo(address.c_str(), ps.c_str(), &hints, &ai);
  if (rc != 0 || ai == nullptr) {
    *error = "control address '" + address + "' is not a numeric IP address: " + gai_strerror(rc);
    return -1;
  }
  listen_fd_ = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listen_fd_ < 0 || ::bind(listen_fd_, ai->ai_addr, ai->ai_addrlen) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    *error = "cannot serve the control port on " + address + ":" + ps + ": " + strerror(errno);
    freeaddrinfo(ai);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    return -1;
  }
  freeaddrinfo(ai);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  const int bound = ntohs(sa.ss_family == AF_INET6
                              ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                              : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);

  service_ = std::make_unique<Service>(handler_);
  grpc::ServerBuilder b;
  b.RegisterService(service_.get());
  b.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBytes));
  acceptor_ = b.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      grpc::InsecureServerCredentials());
  server_ = b.BuildAndStart();  // no AddListeningPort: the socket is ours
  if (!server_) {
    *error = "cannot start the gRPC server";
    ::close(listen_fd_);
    listen_fd_ = -1;
    return -1;
  }
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return bound;
}

void ControlServer::Shutdown() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return active_http_ == 0; });
  }
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void ControlServer::AcceptLoop() {
  while (!stop_.load()) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_.load()) break;
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
        if (errno == EMFILE || errno == ENFILE) usleep(10000);
        continue;
      }
      Logf("control port: accept: %s", strerror(errno));
      break;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      if (active_http_ >= kMaxHttpConnections) {
        ::close(fd);
        continue;
      }
      ++active_http_;  // counts the sniffing thread too
    }
    std::thread([this, fd] {
      // Peek (without consuming) until we know which protocol this is: the whole HTTP/2
      // preface, or a first byte that cannot start it.
      char buf[kHttp2PrefaceBytes];
      ssize_t n = 0;
      bool http2 = false;
      const int64_t tries = kIoTimeoutMs / 50;
      for (int64_t t = 0; t < tries && !stop_.load(); ++t) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        n = ::recv(fd, buf, sizeof buf, MSG_PEEK);
        if (n <= 0 || std::memcmp(buf, kHttp2Preface, static_cast<size_t>(n)) != 0) break;
        if (static_cast<size_t>(n) == kHttp2PrefaceBytes) {
          http2 = true;
          break;
        }
      }
      if (http2 && !stop_.load()) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
        p.listener_fd = listen_fd_;
        p.fd = fd;  // gRPC owns it from here
        acceptor_->HandleNewConnection(&p);
      } else {
        // An HTTP/1.1 request starts with a method in capitals (GET, POST, ...).
        if (n > 0 && buf[0] >= 'A' && buf[0] <= 'Z') {
          ServeHttp(fd);
        } else if (n > 0) {
          Logf("control port: a client sent bytes that are neither HTTP/1.1 nor gRPC (is it "
               "pointed at the control port?)");
          // Read what arrived, so that closing sends FIN after the answer, not a reset.
          char sink[4096];
          while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
          }
          Reply(fd, 400, ErrorJson(Code::kInvalidArgument, kNotOurProtocol));
          ::shutdown(fd, SHUT_WR);
        }
        ::close(fd);
      }
      std::lock_guard<std::mutex> l(mu_);
      if (--active_http_ == 0) cv_.notify_all();
    }).detach();
  }
}

void ControlServer::ServeHttp(int fd) {
  HttpRequestParser parser(kMaxHttpHeaderBytes, kMaxRequestBytes);
  char buf[4096];
  bool continue_sent = false;
  while (parser.state() == HttpRequestParser::State::kNeedMore) {
    if (parser.headers_done() && parser.request().expect_continue && !continue_sent) {
      continue_sent = true;
      SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    ssize_t n = RecvSome(fd, buf, sizeof buf);
    if (n <= 0) return;
    parser.Feed(buf, static_cast<size_t>(n));
  }
  if (parser.state() == HttpRequestParser::State::kError) {
    Reply(fd, parser.error_status(),
          ErrorJson(CodeForHttpError(parser.error_status()), parser.error_reason()));
    CloseAfterError(fd);
    return;
  }
  const HttpRequest& r = parser.request();
  static const std::string kPrefix = "/HostingService/";
  if (r.path.compare(0, kPrefix.size(), kPrefix) != 0) {
    Reply(fd, 404, ErrorJson(Code::kNotFound, "no such path '" + r.path.substr(0, 200) +
                                                  "': use POST /HostingService/<Method>"));
    return;
  }
  std::string json;
  const int status = handler_->HandleJson(r.path.substr(kPrefix.size()), r.body, &json);
  Reply(fd, status, json);
}

}  // namespace daemon
}  // namespace xtimer
