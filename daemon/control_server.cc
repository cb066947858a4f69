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

#include "daemon/log.h"
#include "proto/hosting.grpc.pb.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int kMaxHttpConnections = 64;
constexpr size_t kMaxHeaderBytes = 16 * 1024;
constexpr int kIoTimeoutMs = 5000;
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
    default: return "Internal Server Error";
  }
}

void Reply(int fd, int status, const std::string& body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  SendAll(fd, out);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// recv with the connection's deadline. Returns bytes read, 0 on EOF, -1 on error or timeout.
ssize_t RecvSome(int fd, char* buf, size_t n) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, kIoTimeoutMs);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return -1;
  ssize_t got;
  do {
    got = ::recv(fd, buf, n, 0);
  } while (got < 0 && errno == EINTR);
  return got;
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
  std::string req;
  char buf[4096];
  size_t hdr_end;
  while ((hdr_end = req.find("\r\n\r\n")) == std::string::npos) {
    if (req.size() > kMaxHeaderBytes) {
      Reply(fd, 431, ErrorJson(Code::kResourceExhausted, "request headers too large"));
      return;
    }
    ssize_t n = RecvSome(fd, buf, sizeof buf);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  const std::string head = req.substr(0, hdr_end);
  size_t eol = head.find("\r\n");
  const std::string request_line = head.substr(0, eol);
  const size_t s1 = request_line.find(' ');
  const size_t s2 = s1 == std::string::npos ? s1 : request_line.find(' ', s1 + 1);
  if (s2 == std::string::npos) {
    Reply(fd, 400, ErrorJson(Code::kInvalidArgument,
                             std::string("malformed HTTP request line; ") + kNotOurProtocol));
    return;
  }
  const std::string method = request_line.substr(0, s1);
  std::string path = request_line.substr(s1 + 1, s2 - s1 - 1);
  const size_t q = path.find('?');
  if (q != std::string::npos) path.resize(q);
  long long content_length = -1;
  bool chunked = false, expect_continue = false;
  size_t pos = eol == std::string::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    const std::string line = head.substr(pos, e - pos);
    pos = e + 2;
    const size_t c = line.find(':');
    if (c == std::string::npos) continue;
    const std::string k = Lower(Trim(line.substr(0, c)));
    const std::string v = Trim(line.substr(c + 1));
    if (k == "content-length") {
      char* end = nullptr;
      errno = 0;
      content_length = strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno != 0 || content_length < 0) {
        Reply(fd, 400, ErrorJson(Code::kInvalidArgument, "bad Content-Length"));
        return;
      }
    } else if (k == "transfer-encoding" && Lower(v) != "identity") {
      chunked = true;
    } else if (k == "expect" && Lower(v) == "100-continue") {
      expect_continue = true;
    }
  }
  static const std::string kPrefix = "/HostingService/";
  if (path.compare(0, kPrefix.size(), kPrefix) != 0) {
    Reply(fd, 404, ErrorJson(Code::kNotFound, "no such path '" + path.substr(0, 200) +
                                                  "': use POST /HostingService/<Method>"));
    return;
  }
  if (method != "POST" && method != "GET") {
    Reply(fd, 405, ErrorJson(Code::kUnimplemented, "use POST with a JSON body"));
    return;
  }
  if (chunked) {
    Reply(fd, 411, ErrorJson(Code::kInvalidArgument,
                             "chunked bodies are not supported: send Content-Length"));
    return;
  }
  if (content_length > static_cast<long long>(kMaxRequestBytes)) {
    Reply(fd, 413, ErrorJson(Code::kResourceExhausted,
                             "request body larger than " + std::to_string(kMaxRequestBytes) +
                                 " bytes"));
    return;
  }
  if (content_length < 0) content_length = 0;
  std::string body = req.substr(hdr_end + 4);
  if (expect_continue && body.size() < static_cast<size_t>(content_length)) {
    SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  while (body.size() < static_cast<size_t>(content_length)) {
    ssize_t n = RecvSome(fd, buf, sizeof buf);
    if (n <= 0) return;
    body.append(buf, static_cast<size_t>(n));
  }
  body.resize(static_cast<size_t>(content_length));
  std::string json;
  const int status = handler_->HandleJson(path.substr(kPrefix.size()), body, &json);
  Reply(fd, status, json);
}

}  // namespace daemon
}  // namespace xtimer
