#include "daemon/net/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/base/log.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kMsNs = 1000000;
// Accepts per loop wake-up at most (then the other connections' events get their turn).
constexpr int kAcceptBatch = 64;
constexpr int64_t kAcceptPauseNs = 100 * kMsNs;  // out of descriptors or memory
// Deadlines are checked at most this often (so a flood spread over time costs bounded scans).
constexpr int64_t kExpiryGrainNs = 10 * kMsNs;
// The loop wakes at least this often (OnTick).
constexpr int64_t kMaxWaitNs = 1000 * kMsNs;
constexpr uint64_t kListenerTag = 0;
constexpr uint64_t kWakeTag = 1;

std::string AddressOf(const sockaddr_storage& sa) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (sa.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&sa)->sin_addr, text, sizeof text);
  } else if (sa.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

int PortOf(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&sa)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port);
}

std::string PeerName(const sockaddr_storage& sa) {
  const std::string address = AddressOf(sa);
  const std::string port = std::to_string(PortOf(sa));
  return sa.ss_family == AF_INET6 ? "[" + address + "]:" + port : address + ":" + port;
}

// A bound, listening, non-blocking socket, or -1 with *error.
int ListenOn(const std::string& address, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0 ||
      ai == nullptr) {
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

void Wake(int fd) {
  const uint64_t one = 1;
  ssize_t unused = ::write(fd, &one, sizeof one);
  (void)unused;
}

}  // namespace

Listener::Listener(const ListenerOptions& options)
    : options_(options),
      refusals_(options.name),
      table_(options.max_connections, options.max_connections_per_peer) {}

Listener::~Listener() { Stop(); }

int Listener::Bind(const std::string& address, int port, std::string* error) {
  listen_fd_ = ListenOn(address, port, error);
  if (listen_fd_ < 0) return -1;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerTag;
  const bool ok = epoll_fd_ >= 0 && wake_fd_ >= 0 &&
                  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) == 0;
  ev.data.u64 = kWakeTag;
  if (!ok || ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    *error = std::string("epoll: ") + strerror(errno);
    Stop();
    return -1;
  }
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return -1;
  return PortOf(sa);
}

void Listener::Start(ConnectionHandler* handler) {
  if (listen_fd_ < 0 || thread_.joinable()) return;
  handler_ = handler;
  thread_ = std::thread([this] { Loop(); });
}

void Listener::Stop() {
  stop_.store(true);
  if (thread_.joinable()) {
    Wake(wake_fd_);
    thread_.join();
  }
  for (auto& c : conns_) ::close(c.second->fd);
  conns_.clear();
  std::lock_guard<std::mutex> l(mu_);  // Release() writes to wake_fd_ under it
  for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_, &reserve_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

int Listener::WaitMs(int64_t now) const {
  int64_t until = std::min(next_expiry_ns_, now + kMaxWaitNs);
  if (accept_paused_until_ns_ > now) until = std::min(until, accept_paused_until_ns_);
  return static_cast<int>(std::max<int64_t>(0, until - now) / kMsNs + 1);
}

void Listener::Loop() {
  epoll_event events[256];
  while (!stop_.load()) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, WaitMs(MonotonicNs()));
    const int64_t now = MonotonicNs();
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenerTag) {
        Accept(now);
      } else if (id == kWakeTag) {
        uint64_t v;
        ssize_t unused = ::read(wake_fd_, &v, sizeof v);
        (void)unused;
      } else if (auto it = conns_.find(id); it != conns_.end()) {
        Connection* c = it->second.get();
        if (!c->handed_on) {
          handler_->OnEvent(c, events[i].events, now);
        } else if (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
          Close(c, nullptr);  // the peer or the other server closed it: stop counting
        }
      }
    }
    ReapReleased();
    if (accept_paused_until_ns_ != 0 && now >= accept_paused_until_ns_) {
      accept_paused_until_ns_ = 0;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerTag;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
    }
    if (now >= next_expiry_ns_) ExpireDeadlines(now);
    handler_->OnTick(now);
  }
}

void Listener::Accept(int64_t now) {
  for (int i = 0; i < kAcceptBatch && accept_paused_until_ns_ == 0; ++i) {
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd, &sa, now);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) AcceptFailed(errno, now);
    return;
  }
}

// Out of descriptors: take the pending connection with the reserve descriptor and close it, so
// that the listener does not stay readable (a busy loop) and the client learns at once. Out of
// memory, or no reserve: stop accepting for a moment.
void Listener::AcceptFailed(int err, int64_t now) {
  if ((err == EMFILE || err == ENFILE) && reserve_fd_ >= 0) {
    ::close(reserve_fd_);
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC);
    reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      refusals_.Refuse(options_.fd_limit_cause,
                       options_.log_peer_port ? PeerName(sa) : AddressOf(sa));
      ::close(fd);
      return;
    }
  }
  if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
    refusals_.Refuse(options_.fd_limit_cause, std::string("(not accepted: ") + strerror(err) + ")");
    accept_paused_until_ns_ = now + kAcceptPauseNs;
    epoll_event ev{};
    ev.data.u64 = kListenerTag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
    return;
  }
  Logf("%s: accept: %s", options_.name, strerror(err));
}

void Listener::Admit(int fd, const void* storage, int64_t now) {
  const sockaddr_storage& sa = *static_cast<const sockaddr_storage*>(storage);
  ReapReleased();  // room made by connections released until now counts for this one
  auto c = std::make_unique<Connection>();
  c->id = next_id_++;
  c->fd = fd;
  c->address = AddressOf(sa);
  c->peer = options_.log_peer_port ? PeerName(sa) : c->address;
  c->accepted_ns = c->last_ns = now;
  std::vector<Eviction> evict;
  const bool admitted = table_.Admit(c->id, c->address, &evict);
  for (const Eviction& e : evict) {
    auto it = conns_.find(e.id);
    if (it != conns_.end()) Close(it->second.get(), e.cause);
  }
  if (!admitted) {
    refusals_.Refuse("connection_limit", c->peer);
    ::close(fd);
    return;
  }
  Connection* raw = c.get();
  conns_.emplace(c->id, std::move(c));
  open_.store(table_.size(), std::memory_order_relaxed);
  handler_->OnAccept(raw, now);
}

void Listener::ExpireDeadlines(int64_t now) {
  std::vector<std::pair<Connection*, const char*>> expired;
  int64_t next = std::numeric_limits<int64_t>::max();
  for (auto& entry : conns_) {
    Connection* c = entry.second.get();
    const int64_t idle_at =
        c->idle_ns > 0 ? c->last_ns + c->idle_ns : std::numeric_limits<int64_t>::max();
    if (now >= c->deadline_ns) {
      expired.emplace_back(c, c->deadline_cause);
    } else if (now >= idle_at) {
      expired.emplace_back(c, "idle_timeout");
    } else {
      next = std::min({next, c->deadline_ns, idle_at});
    }
  }
  next_expiry_ns_ = std::max(next, now + kExpiryGrainNs);
  for (const auto& e : expired) {
    handler_->OnExpire(e.first, e.second);
    Close(e.first, e.second);
  }
}

void Listener::Watch(Connection* c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev) != 0 && errno == ENOENT) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
  }
}

void Listener::SetDeadline(Connection* c, int64_t at_ns, const char* cause) {
  c->deadline_ns = at_ns;
  c->deadline_cause = cause;
  next_expiry_ns_ = std::min(next_expiry_ns_, at_ns);
}

void Listener::SetIdle(Connection* c, int64_t idle_ns, int64_t now) {
  c->idle_ns = idle_ns;
  c->last_ns = now;
  if (idle_ns > 0) next_expiry_ns_ = std::min(next_expiry_ns_, now + idle_ns);
}

void Listener::SetYield(Connection* c, Yield yield) { table_.SetYield(c->id, yield); }

void Listener::Close(Connection* c, const char* cause) {
  if (cause != nullptr) refusals_.Refuse(cause, c->peer);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  // A handed-on connection's other descriptor belongs to the other server: end the connection.
  if (cause != nullptr && c->handed_on) ::shutdown(c->fd, SHUT_RDWR);
  const int fd = c->fd;
  Forget(c->id);  // counted out before the peer can see the end
  ::close(fd);
}

void Listener::Forget(uint64_t id) {
  conns_.erase(id);
  table_.Remove(id);
  open_.store(table_.size(), std::memory_order_relaxed);
}

int Listener::Detach(Connection* c) {
  const int fd = c->fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  table_.SetYield(c->id, Yield::kNever);
  const uint64_t id = c->id;
  conns_.erase(id);  // the table still counts it
  return fd;
}

int Listener::HandOn(Connection* c) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  const int dup = ::fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) {
    Close(c, options_.fd_limit_cause);
    return -1;
  }
  const int fd = c->fd;
  c->fd = dup;
  c->handed_on = true;
  c->state.reset();
  c->deadline_ns = std::numeric_limits<int64_t>::max();
  c->idle_ns = 0;
  table_.SetYield(c->id, Yield::kThen);
  // Hang-ups only (EPOLLHUP and EPOLLERR are always reported): the other server reads the data.
  Watch(c, EPOLLRDHUP | EPOLLET);
  return fd;
}

void Listener::Release(uint64_t id) {
  std::lock_guard<std::mutex> l(mu_);
  released_.push_back(id);
  if (wake_fd_ >= 0) Wake(wake_fd_);
}

void Listener::ReapReleased() {
  std::vector<uint64_t> done;
  {
    std::lock_guard<std::mutex> l(mu_);
    done.swap(released_);
  }
  for (uint64_t id : done) table_.Remove(id);
  if (!done.empty()) open_.store(table_.size(), std::memory_order_relaxed);
}

}  // namespace daemon
}  // namespace xtimer
