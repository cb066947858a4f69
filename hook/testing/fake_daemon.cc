#include "hook/testing/fake_daemon.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "format/registration.h"
#include "format/stack_request.h"

namespace xtimer {
namespace hook {
namespace testing {

std::unique_ptr<FakeDaemon> FakeDaemon::Start(const std::string& socket_path,
                                              std::string* error) {
  std::unique_ptr<FakeDaemon> d(new FakeDaemon());
  d->path_ = socket_path;
  unlink(socket_path.c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long";
    close(fd);
    return nullptr;
  }
  strcpy(addr.sun_path, socket_path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    *error = std::string("bind/listen: ") + strerror(errno);
    close(fd);
    return nullptr;
  }
  d->listen_fd_ = fd;
  d->thread_ = std::thread([p = d.get()] { p->AcceptLoop(); });
  return d;
}

FakeDaemon::~FakeDaemon() {
  Kill();
}

void FakeDaemon::Kill() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (int c : connections_) close(c);
  connections_.clear();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
  }
}

void FakeDaemon::AcceptLoop() {
  while (!stop_.load()) {
    pollfd pfd = {listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 20) <= 0) continue;
    int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    format::Hello hello;
    std::string error;
    int ring_fd = format::ReceiveRing(c, &hello, &error);
    if (ring_fd < 0) {
      close(c);
      continue;
    }
    auto reader = format::RingReader::Attach(ring_fd, &error);
    close(ring_fd);
    std::lock_guard<std::mutex> lock(mu_);
    connections_.push_back(c);
    if (!reader) continue;
    readers_.push_back(std::make_unique<format::RingReader>(std::move(*reader)));
    Ring r;
    r.pid = hello.pid;
    r.connection = c;
    rings_.push_back(r);
    registrations_.fetch_add(1);
  }
}

void FakeDaemon::ReadAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < readers_.size(); ++i) {
    format::RingReader& reader = *readers_[i];
    Ring& ring = rings_[i];
    format::RecordSlot buf[256];
    format::ReadStats stats;
    size_t n;
    while ((n = reader.Read(buf, 256, &stats)) > 0) {
      ring.records.insert(ring.records.end(), buf, buf + n);
    }
    ring.invalid += stats.invalid;
    ring.identity = reader.identity();
    ring.dropped = reader.dropped();
    ring.heartbeat_ns = reader.heartbeat_ns();
    ring.hook_own_ns = reader.hook_own_ns();
    for (uint8_t k = 0; k < format::kOpKindSlots; ++k) {
      ring.op_calls[k] = reader.op_calls(k);
      ring.op_timed[k] = reader.op_timed(k);
    }
    ring.tracked_by_mark = reader.tracked_by_mark();
    ring.tracked_by_nccl = reader.tracked_by_nccl();
    for (uint32_t c = 0; c < format::kUntimedSlots; ++c) {
      ring.untimed[c] = reader.untimed(static_cast<format::UntimedCause>(c));
    }
    ring.budget_ppm = reader.budget_ppm();
    format::InflightRow rows[format::kMaxInflight];
    int count = 0;
    if (reader.Inflight(rows, &count)) ring.inflight.assign(rows, rows + count);
  }
}

bool FakeDaemon::RequestStacks(size_t index, uint64_t request_id, int timeout_ms,
                               std::string* json, std::string* error) {
  int c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= rings_.size()) {
      *error = "no ring " + std::to_string(index);
      return false;
    }
    c = rings_[index].connection;
  }
  if (!format::SendStackRequest(c, request_id, error)) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd = {c, POLLIN, 0};
    if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
      *error = "no stack reply in " + std::to_string(timeout_ms) + " ms";
      return false;
    }
    format::StackReply reply;
    int memfd = format::ReceiveStackReply(c, &reply, error);
    if (memfd < 0) return false;
    bool ok = reply.request_id == request_id && format::ReadRawStacks(memfd, reply.size, json, error);
    close(memfd);
    if (ok) return true;
    if (reply.request_id == request_id) return false;  // else an older request's late reply
  }
}

std::vector<FakeDaemon::Ring> FakeDaemon::rings() {
  std::lock_guard<std::mutex> lock(mu_);
  return rings_;
}

}  // namespace testing
}  // namespace hook
}  // namespace xtimer
