#include "daemon/ingest/ring_server.h"

#include <grp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/model/job_scope.h"
#include "format/registration.h"
#include "format/stack_request.h"
#include "util/clock.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr size_t kBatch = 1024;
// Read pages of a ring beyond RingServerOptions::mapped_ring_bytes are handed back
// (MADV_DONTNEED) once this many bytes were read, and at each status update: the daemon's RSS
// then holds at most about this much of each such ring however large the ring is.
constexpr size_t kReleaseBytes = size_t{256} << 10;

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

}  // namespace

struct RingServer::Connection {
  int fd = -1;
  Peer peer;
  int64_t accepted_ns = 0;  // monotonic
  std::optional<format::RingReader> reader;
  ProcessId id = 0;
  int pid = 0;
  format::ReadStats stats;
  uint64_t invalid_logged = 0;
  uint64_t invalid_rows = 0;  // in-flight row details that failed validation
  bool invalid_rows_logged = false;
  uint64_t lost_logged = 0;
  double max_fill = 0;  // since the last status update
  int64_t last_read_ns = 0;  // monotonic, the last read of a cycle
  size_t read_since_release = 0;  // records
  enum class Pages { kUndecided, kKept, kReleased } pages = Pages::kUndecided;
  size_t kept_bytes = 0;  // its share of mapped_kept_
  struct PendingStacks {
    uint64_t request_id;
    int64_t deadline_ns;  // monotonic
    int timeout_ms;
    StackSink sink;
  };
  std::vector<PendingStacks> pending;  // at most kMaxPendingStackRequests
  bool bad_reply_logged = false;
  bool crash_reported = false;  // one crash report per connection is taken
};

namespace {

void Answer(const StackSink& sink, const char* outcome, std::string error) {
  StackAnswer a;
  a.outcome = outcome;
  a.error = std::move(error);
  sink(std::move(a));
}

}  // namespace

std::string NoAnswerText(int timeout_ms) {
  char s[64];
  snprintf(s, sizeof(s), "no answer in %g s", timeout_ms / 1000.0);
  return s;
}

std::string PeerName(int pid, uint32_t uid) {
  return "pid " + std::to_string(pid) + " uid " + std::to_string(uid);
}

RingServer::RingServer(const RingServerOptions& options, Aggregator* aggregator)
    : options_(options), aggregator_(aggregator), buffer_(kBatch),
      inflight_(format::kMaxInflight) {
  last_active_ns_.store(MonotonicNs(), std::memory_order_relaxed);
}

RingServer::~RingServer() {
  std::vector<int> fds;
  for (const auto& c : connections_) fds.push_back(c.first);
  for (int fd : fds) Close(fd, nullptr);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (created_socket_) unlink(options_.socket_path.c_str());
}

bool RingServer::Listen(std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.socket_path.empty() || options_.socket_path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path empty or too long: " + options_.socket_path;
    return false;
  }
  memcpy(addr.sun_path, options_.socket_path.c_str(), options_.socket_path.size() + 1);
  struct stat st;
  if (lstat(options_.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = options_.socket_path + " exists and is not a socket";
      return false;
    }
    unlink(options_.socket_path.c_str());  // stale: the caller holds the run-dir lock
  }
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    *error = Errno("socket");
    return false;
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = Errno(("bind " + options_.socket_path).c_str());
    return false;
  }
  created_socket_ = true;
  if (!SetSocketAccess(error)) return false;
  // As deep as the control and metrics servers' backlogs: a local process that floods the socket
  // with connections it never uses (registration_limits_test opens 300) must not fill it, or a
  // job's rank's non-blocking connect fails with EAGAIN until its next retry.
  constexpr int kAcceptBacklog = 1024;
  if (listen(listen_fd_, kAcceptBacklog) != 0) {
    *error = Errno("listen");
    return false;
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    *error = Errno("epoll_create1");
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    *error = Errno("epoll_ctl");
    return false;
  }
  return true;
}

bool RingServer::SetSocketAccess(std::string* error) {
  const std::string& path = options_.socket_path;
  if (!options_.socket_group.empty()) {
    gid_t gid;
    char* end = nullptr;
    const unsigned long n = strtoul(options_.socket_group.c_str(), &end, 10);
    if (*end == '\0') {
      gid = static_cast<gid_t>(n);
    } else {
      const group* g = getgrnam(options_.socket_group.c_str());
      if (g == nullptr) {
        *error = "--socket-group " + options_.socket_group + ": no such group";
        return false;
      }
      gid = g->gr_gid;
    }
    if (chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0) {
      *error = Errno(("--socket-group: chown " + path).c_str());
      return false;
    }
  }
  if (chmod(path.c_str(), static_cast<mode_t>(options_.socket_mode)) != 0) {
    *error = Errno(("--socket-mode: chmod " + path).c_str());
    return false;
  }
  return true;
}

void RingServer::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        Logf("accept: %s", strerror(errno));
      }
      return;
    }
    Peer peer;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer.pid = cred.pid;
      peer.uid = cred.uid;
    }
    if (const char* cause = Admission(peer)) {
      Refuse(cause, peer);
      close(fd);
      continue;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      Logf("epoll_ctl: %s", strerror(errno));
      close(fd);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->peer = peer;
    ++per_uid_[peer.uid];
    ++per_pid_[peer.pid];
    c->accepted_ns = MonotonicNs();
    connections_[fd] = std::move(c);
  }
}

const char* RingServer::Admission(const Peer& peer) const {
  if (connections_.size() >= options_.max_connections) return "global_cap";
  auto uid = per_uid_.find(peer.uid);
  const size_t uid_count = uid == per_uid_.end() ? 0 : uid->second;
  if (uid_count >= options_.max_per_uid) return "uid_cap";
  auto pid = per_pid_.find(peer.pid);
  if (pid != per_pid_.end() && pid->second >= options_.max_per_pid) return "pid_cap";
  const size_t reserve = std::min(options_.reserve, options_.max_connections);
  if (connections_.size() >= options_.max_connections - reserve &&
      uid_count >= std::max<size_t>(1, reserve / 4)) {
    return "reserve";
  }
  return nullptr;
}

void RingServer::Refuse(const char* cause, const Peer& peer) {
  aggregator_->RefuseRegistration(cause, PeerName(peer.pid, peer.uid));
}

void RingServer::Close(int fd, const char* why) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection* c = it->second.get();
  if (--per_uid_[c->peer.uid] == 0) per_uid_.erase(c->peer.uid);
  if (--per_pid_[c->peer.pid] == 0) per_pid_.erase(c->peer.pid);
  mapped_kept_ -= c->kept_bytes;
  for (const Connection::PendingStacks& p : c->pending) {
    Answer(p.sink, "exited", "the process ended its connection before answering");
  }
  c->pending.clear();
  if (c->reader.has_value()) {
    registered_.fetch_sub(1, std::memory_order_relaxed);
    if (why == nullptr) {
      aggregator_->RemoveProcess(c->id);  // the daemon is stopping
    } else {
      // The hook marks a clean exit or a fatal signal just before its connection closes.
      const ExitCause cause = c->reader->exit_state();
      aggregator_->MarkExited(c->id, cause, RealtimeNs());
      Logf("pid %d unregistered (%s; %s %d): %" PRIu64 " records read, %" PRIu64
           " invalid, %" PRIu64 " lost, %" PRIu64 " dropped by the writer",
           c->pid, why, format::ExitKindName(cause.kind), cause.value, c->stats.records, c->stats.invalid,
           c->stats.lost, c->reader->dropped());
    }
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  connections_.erase(it);
  // The number may be reused by the next accept: it is no longer doomed.
  doomed_.erase(std::remove(doomed_.begin(), doomed_.end(), fd), doomed_.end());
}

void RingServer::Register(Connection* c) {
  char peek;
  ssize_t n = recv(c->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    Close(c->fd, nullptr);  // closed before registering
    return;
  }
  format::Hello hello{};
  std::string error;
  int ring_fd = format::ReceiveRing(c->fd, &hello, &error);
  if (ring_fd < 0) {
    Logf("registration rejected: %s", error.c_str());
    Refuse("bad_hello", c->peer);
    Close(c->fd, nullptr);
    return;
  }
  auto reader = format::RingReader::Attach(ring_fd, &error);
  close(ring_fd);
  if (!reader.has_value()) {
    Logf("registration from pid %d rejected: %s", hello.pid, error.c_str());
    Refuse("bad_ring", c->peer);
    Close(c->fd, nullptr);
    return;
  }
  if (size_t{reader->capacity()} * sizeof(format::RecordSlot) > options_.max_ring_bytes) {
    Refuse("ring_too_large", c->peer);
    Close(c->fd, nullptr);
    return;
  }
  reader->set_kinds(&aggregator_->kinds());  // the record kinds the aggregator ingests
  c->pid = c->peer.pid > 0 ? c->peer.pid : reader->pid();
  format::Identity id = reader->identity();
  // Whose job the label names: the connection's uid and the kernel's cgroup of its pid, never
  // the ring's word (daemon/model/job_scope.h).
  const bool privileged = c->peer.uid == 0 || c->peer.uid == geteuid();
  id.job = JobIdFor(SanitizeJobId(id.job), c->peer.uid, privileged,
                    ReadKernelJob(options_.kernel_roots, c->pid));
  std::vector<ProcessId> evicted;
  // The owner is the connection's uid (SO_PEERCRED), never what the ring or the Hello says.
  const Registrant who{c->pid, c->peer.uid, format::HelloToken(hello)};
  c->id = aggregator_->AddProcess(who, id, &evicted);
  for (ProcessId gone : evicted) Evict(gone);
  if (c->id == 0) {  // another owner holds this identity: refused and counted
    Close(c->fd, nullptr);
    return;
  }
  c->reader = std::move(reader);
  registered_.fetch_add(1, std::memory_order_relaxed);
  Logf("pid %d registered: job=%s host=%s pod=%s rank=%d local_rank=%d ring=%u records",
       c->pid, id.job.c_str(), SanitizeLabelText(id.host).c_str(),
       SanitizeLabelText(id.pod).c_str(), id.rank, id.local_rank, c->reader->capacity());
  PublishStatus(c);
}

void RingServer::Evict(ProcessId id) {
  for (auto& entry : connections_) {
    Connection* c = entry.second.get();
    if (c->reader.has_value() && c->id == id) {
      Logf("pid %d (uid %u) evicted: a privileged registrant took its job label", c->pid,
           c->peer.uid);
      doomed_.push_back(entry.first);
      return;
    }
  }
}

void RingServer::CloseDoomed() {
  std::vector<int> fds;
  fds.swap(doomed_);
  for (int fd : fds) {
    auto it = connections_.find(fd);
    if (it == connections_.end()) continue;
    // Already removed from the aggregator: close without marking it exited.
    it->second->reader.reset();
    registered_.fetch_sub(1, std::memory_order_relaxed);
    Close(fd, nullptr);
  }
}

void RingServer::HandleReadable(Connection* c) {
  if (!c->reader.has_value()) {
    Register(c);
    return;
  }
  if (ReceiveStackReplies(c)) return;
  // End of the connection: the process exited. Take what it left in its ring, then forget it.
  Drain(c, RealtimeNs());
  PublishStatus(c);
  Close(c->fd, "connection closed");
}

bool RingServer::ReceiveStackReplies(Connection* c) {
  // Bounded: a peer that keeps sending cannot hold the thread (the rest waits for a later cycle).
  for (int i = 0; i < 16; ++i) {
    format::StackReply reply;
    std::string error;
    const int memfd = format::ReceiveStackReply(c->fd, &reply, &error);
    if (memfd < 0 && error == "would block") return true;
    if (memfd < 0 && (error == "connection closed" || error.rfind("recvmsg", 0) == 0)) return false;
    if (memfd >= 0 && reply.request_id == format::kCrashReportId) {
      // Unasked: the process is crashing and waits for the report to be taken (docs/crash.md).
      if (crash_sink_ && !c->crash_reported) {
        c->crash_reported = true;
        crash_sink_(c->id, c->peer.uid, memfd, reply.size);
      } else {
        close(memfd);
      }
      continue;
    }
    auto it = std::find_if(c->pending.begin(), c->pending.end(),
                           [&](const Connection::PendingStacks& p) {
                             return memfd >= 0 && p.request_id == reply.request_id;
                           });
    if (it != c->pending.end()) {
      StackAnswer a;
      a.memfd = memfd;
      a.size = reply.size;
      it->sink(std::move(a));
      c->pending.erase(it);
      continue;
    }
    if (memfd >= 0) {  // a whole reply too late (its request timed out): dropped
      close(memfd);
      continue;
    }
    error = "bad reply: " + error;
    if (!c->bad_reply_logged) {
      c->bad_reply_logged = true;
      Logf("pid %d: %s (its pending stack requests fail; logged once per process)", c->pid,
           error.c_str());
    }
    // A malformed reply leaves the stream's framing unknown: what is pending fails now.
    for (const Connection::PendingStacks& p : c->pending) Answer(p.sink, "bad_reply", error);
    c->pending.clear();
  }
  return true;
}

void RingServer::SetCrashSink(CrashSink sink) { crash_sink_ = std::move(sink); }

void RingServer::AskStacks(ProcessId id, int timeout_ms, StackSink sink) {
  std::lock_guard<std::mutex> lock(asks_mu_);
  asks_.push_back({id, timeout_ms, std::move(sink)});
}

void RingServer::ServeStackAsks(int64_t mono_ns) {
  std::vector<StackAsk> asks;
  {
    std::lock_guard<std::mutex> lock(asks_mu_);
    asks.swap(asks_);
  }
  for (StackAsk& a : asks) {
    Connection* c = nullptr;
    for (auto& entry : connections_) {
      if (entry.second->reader.has_value() && entry.second->id == a.id) c = entry.second.get();
    }
    if (c == nullptr) {
      Answer(a.sink, "exited", "the process is no longer registered");
      continue;
    }
    if (c->pending.size() >= kMaxPendingStackRequests) {
      Answer(a.sink, "refused", std::to_string(kMaxPendingStackRequests) +
                                    " stack requests to this process are still unanswered");
      continue;
    }
    const uint64_t request_id = next_stack_request_++;
    std::string error;
    if (!format::SendStackRequest(c->fd, request_id, &error)) {
      Answer(a.sink, "bad_reply", "the request could not be sent: " + error);
      continue;
    }
    c->pending.push_back({request_id, mono_ns + int64_t{a.timeout_ms} * 1000000, a.timeout_ms,
                          std::move(a.sink)});
  }
  for (auto& entry : connections_) ExpireStackRequests(entry.second.get(), mono_ns);
}

void RingServer::ExpireStackRequests(Connection* c, int64_t mono_ns) {
  auto& p = c->pending;
  for (auto it = p.begin(); it != p.end();) {
    if (mono_ns < it->deadline_ns) {
      ++it;
      continue;
    }
    Answer(it->sink, "no_answer", NoAnswerText(it->timeout_ms));
    it = p.erase(it);
  }
}

bool RingServer::DueForRead(Connection* c, int64_t mono_ns) {
  const format::RingReader& r = *c->reader;
  const uint64_t backlog = r.backlog();
  c->max_fill = std::max(c->max_fill, static_cast<double>(backlog) / r.capacity());
  if (backlog == 0) return false;
  const uint64_t batch = std::min<uint64_t>(kBatch, std::max<uint64_t>(1, r.capacity() / 4));
  return backlog >= batch || mono_ns - c->last_read_ns >= int64_t{options_.read_delay_ms} * 1000000;
}

void RingServer::Drain(Connection* c, int64_t now_ns) {
  format::RingReader& r = *c->reader;
  // Bounded: a writer that keeps writing cannot hold the thread.
  size_t budget = r.capacity() + kBatch;
  while (budget > 0) {
    size_t n = r.Read(buffer_.data(), buffer_.size(), &c->stats);
    if (n > 0) aggregator_->Ingest(c->id, buffer_.data(), n, now_ns);
    ReleaseRead(c, n);
    if (n < buffer_.size()) break;
    budget -= std::min(budget, n);
  }
}

void RingServer::ReleaseRead(Connection* c, size_t records) {
  if (c->pages == Connection::Pages::kUndecided) {
    const size_t bytes = size_t{c->reader->capacity()} * sizeof(format::RecordSlot);
    const bool keep = mapped_kept_ + bytes <= options_.mapped_ring_bytes;
    c->pages = keep ? Connection::Pages::kKept : Connection::Pages::kReleased;
    if (keep) {
      c->kept_bytes = bytes;
      mapped_kept_ += bytes;
    }
  }
  if (c->pages == Connection::Pages::kKept) return;
  c->read_since_release += records;
  if (c->read_since_release * sizeof(format::RecordSlot) < kReleaseBytes) return;
  c->read_since_release = 0;
  c->reader->ReleasePages();
}

void RingServer::PublishStatus(Connection* c) {
  format::RingReader& r = *c->reader;
  ProcessStatus st;
  st.identity = r.identity();
  st.written = r.written();
  st.dropped = r.dropped();
  for (int i = 0; i < format::kUntimedSlots; ++i) {
    st.untimed[i] = r.untimed(static_cast<format::UntimedCause>(i));
  }
  st.hook_own_ns = r.hook_own_ns();
  for (uint8_t k = 0; k < format::kOpKindSlots; ++k) {
    st.timing.calls[k] = r.op_calls(k);
    st.timing.timed[k] = r.op_timed(k);
  }
  st.timing.budget_ppm = r.budget_ppm();
  st.timing.tracked_by_mark = r.tracked_by_mark();
  st.timing.tracked_by_nccl = r.tracked_by_nccl();
  st.timing.start_ns = r.start_ns();
  st.invalid = c->stats.invalid;
  st.lost = c->stats.lost;
  st.fill = c->max_fill;
  c->max_fill = static_cast<double>(r.backlog()) / r.capacity();
  st.heartbeat_ns = r.heartbeat_ns();
  st.read_ns = RealtimeNs();
  int count = 0;
  st.inflight_valid = r.Inflight(inflight_.data(), &count, &c->invalid_rows);
  if (st.inflight_valid) st.inflight.assign(inflight_.begin(), inflight_.begin() + count);
  if (!aggregator_->UpdateStatus(c->id, st)) {
    // Its ring now names a rank another owner holds: removed (and counted) by the aggregator.
    if (std::find(doomed_.begin(), doomed_.end(), c->fd) == doomed_.end()) {
      Logf("pid %d (uid %u) removed: its ring claims a rank another owner holds", c->pid,
           c->peer.uid);
      doomed_.push_back(c->fd);
    }
    return;
  }
  if (c->invalid_rows > 0 && !c->invalid_rows_logged) {
    c->invalid_rows_logged = true;
    Logf("pid %d: its ring's in-flight table holds malformed op details; they are ignored "
         "(logged once per process)",
         c->pid);
  }
  if (c->stats.invalid != c->invalid_logged || c->stats.lost != c->lost_logged) {
    Logf("pid %d: ring holds bad data: %" PRIu64 " invalid records, %" PRIu64
         " lost to impossible positions so far",
         c->pid, c->stats.invalid, c->stats.lost);
    c->invalid_logged = c->stats.invalid;
    c->lost_logged = c->stats.lost;
  }
}

void RingServer::RunOnce(int timeout_ms) {
  try {
    epoll_event events[64];
    int n = epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (n < 0 && errno != EINTR) Logf("epoll_wait: %s", strerror(errno));
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        Accept();
        continue;
      }
      auto it = connections_.find(fd);
      if (it != connections_.end()) HandleReadable(it->second.get());
    }
    const int64_t mono = MonotonicNs();
    ServeStackAsks(mono);
    const int64_t now = RealtimeNs();
    for (auto& entry : connections_) {
      Connection* c = entry.second.get();
      if (c->reader.has_value() && DueForRead(c, mono)) {
        Drain(c, now);
        c->last_read_ns = mono;
      }
    }
    if (mono - last_status_ns_ >= int64_t{options_.status_interval_ms} * 1000000) {
      last_status_ns_ = mono;
      std::vector<int> stale;
      for (auto& entry : connections_) {
        Connection* c = entry.second.get();
        if (c->reader.has_value()) {
          // The status (in-flight table, counters) never runs ahead of the records read.
          if (c->last_read_ns != mono) {
            Drain(c, now);
            c->last_read_ns = mono;
          }
          PublishStatus(c);
          if (c->read_since_release > 0) ReleaseRead(c, kReleaseBytes);
        } else if (mono - c->accepted_ns > int64_t{options_.register_timeout_ms} * 1000000) {
          stale.push_back(entry.first);
        }
      }
      for (int fd : stale) {
        // A long cycle may have left a Hello unread: take it before timing the connection out.
        Register(connections_.at(fd).get());
        auto it = connections_.find(fd);
        if (it == connections_.end() || it->second->reader.has_value()) continue;
        Refuse("timeout", it->second->peer);
        Close(fd, nullptr);
      }
      aggregator_->ExpireExited(RealtimeNs());
    }
    CloseDoomed();
    if (registered_.load(std::memory_order_relaxed) > 0) {
      last_active_ns_.store(mono, std::memory_order_relaxed);
    }
  } catch (const std::exception& e) {
    Logf("read cycle failed: %s", e.what());
  }
}

void RingServer::Run(const std::atomic<bool>* stop) {
  while (!stop->load(std::memory_order_acquire)) RunOnce(options_.poll_interval_ms);
}

}  // namespace daemon
}  // namespace xtimer
