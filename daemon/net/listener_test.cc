// The listener's policy against a real socket on a free port, with a test handler: caps and who
// gives way, refusal past the cap, deadlines and idle limits, detached and handed-on connections.
// Every wait is on a condition (a socket's end, a counter), bounded by a generous limit.
#include "daemon/net/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "daemon/base/test_util.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int kLongMs = 30000;  // a bound for waits that end much sooner on any machine

int Connect(int port) {
  const int fd = testing::ConnectLoopback(port);
  EXPECT_GE(fd, 0) << strerror(errno);
  return fd;
}

// True once the server closed fd (EOF or reset); false if it is still open after timeout_ms.
bool ClosedWithin(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

bool StillOpen(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

// Records what the listener tells it, and applies a policy set by the test.
class TestHandler : public ConnectionHandler {
 public:
  explicit TestHandler(Listener* l) : l_(l) {}

  void OnAccept(Connection* c, int64_t now) override {
    l_->Watch(c, EPOLLIN | EPOLLRDHUP);
    if (deadline_ms > 0) l_->SetDeadline(c, now + deadline_ms * kMs, "request_timeout");
    if (idle_ms > 0) l_->SetIdle(c, idle_ms * kMs, now);
    if (never_give_way) l_->SetYield(c, Yield::kNever);
    Note([&] { ++accepted; });
  }

  void OnEvent(Connection* c, uint32_t events, int64_t now) override {
    char buf[256];
    const ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
      l_->Close(c, nullptr);
      return;
    }
    if (n < 0) return;
    l_->Touch(c, now);
    if (buf[0] == 'd') {
      const uint64_t id = c->id;
      const int fd = l_->Detach(c);  // c is gone
      Note([&] { detached.push_back({id, fd}); });
    } else if (buf[0] == 'h') {
      const uint64_t id = c->id;
      const int fd = l_->HandOn(c);
      Note([&] { handed.push_back({id, fd}); });
    }
    (void)events;
  }

  void OnExpire(Connection* c, const char* cause) override {
    (void)c;
    Note([&] { expired.push_back(cause); });
  }

  // Waits until `done` holds (read under the lock), or timeout_ms.
  bool WaitUntil(const std::function<bool()>& done, int timeout_ms = kLongMs) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::milliseconds(timeout_ms), done);
  }

  // Set before Start.
  int64_t deadline_ms = 0;
  int64_t idle_ms = 0;
  bool never_give_way = false;

  // Under mu.
  std::mutex mu;
  std::condition_variable cv;
  int accepted = 0;
  std::vector<std::string> expired;
  std::vector<std::pair<uint64_t, int>> detached;  // id, fd
  std::vector<std::pair<uint64_t, int>> handed;

 private:
  void Note(const std::function<void()>& f) {
    {
      std::lock_guard<std::mutex> l(mu);
      f();
    }
    cv.notify_all();
  }
  Listener* l_;
};

struct Fixture {
  explicit Fixture(ListenerOptions o, std::function<void(TestHandler*)> setup = nullptr)
      : listener(o), handler(&listener) {
    if (setup) setup(&handler);
    std::string error;
    port = listener.Bind("127.0.0.1", 0, &error);
    EXPECT_GT(port, 0) << error;
    listener.Start(&handler);
  }
  ~Fixture() {
    listener.Stop();
    for (int fd : clients) close(fd);
  }
  int Connect() {
    clients.push_back(daemon::Connect(port));
    return clients.back();
  }
  // Connects and waits until the listener has taken the connection.
  int ConnectAccepted() {
    std::unique_lock<std::mutex> l(handler.mu);
    const int before = handler.accepted;
    l.unlock();
    const int fd = Connect();
    EXPECT_TRUE(handler.WaitUntil([&] { return handler.accepted > before; }));
    return fd;
  }
  Listener listener;
  TestHandler handler;
  int port = -1;
  std::vector<int> clients;
};

ListenerOptions Options(size_t max_connections, size_t per_peer = SIZE_MAX) {
  ListenerOptions o;
  o.name = "test port";
  o.max_connections = max_connections;
  o.max_connections_per_peer = per_peer;
  return o;
}

TEST(ListenerTest, PastTheCapTheOldestPendingGivesWayAndIsCounted) {
  Fixture f(Options(2));
  const int a = f.ConnectAccepted();
  const int b = f.ConnectAccepted();
  const int c = f.ConnectAccepted();
  EXPECT_TRUE(ClosedWithin(a, kLongMs));  // the oldest without a request
  EXPECT_TRUE(StillOpen(b));
  EXPECT_TRUE(StillOpen(c));
  EXPECT_EQ(f.listener.refusals().count("connection_limit"), 1u);
  EXPECT_EQ(f.listener.open_connections(), 2u);
}

TEST(ListenerTest, WhenNothingGivesWayTheNewConnectionIsRefusedAndCounted) {
  Fixture f(Options(2), [](TestHandler* h) { h->never_give_way = true; });
  const int a = f.ConnectAccepted();
  const int b = f.ConnectAccepted();
  const int c = f.Connect();
  EXPECT_TRUE(ClosedWithin(c, kLongMs));
  EXPECT_EQ(f.listener.refusals().count("connection_limit"), 1u);  // counted before the close
  EXPECT_TRUE(StillOpen(a));
  EXPECT_TRUE(StillOpen(b));
  EXPECT_EQ(f.listener.open_connections(), 2u);
}

TEST(ListenerTest, ThePerPeerCapGivesWayWithItsOwnCause) {
  Fixture f(Options(10, 2));
  const int a = f.ConnectAccepted();
  f.ConnectAccepted();
  f.ConnectAccepted();
  EXPECT_TRUE(ClosedWithin(a, kLongMs));
  EXPECT_EQ(f.listener.refusals().count("peer_limit"), 1u);
  EXPECT_EQ(f.listener.refusals().count("connection_limit"), 0u);
}

TEST(ListenerTest, AClientThatSendsNothingIsDroppedAtTheDeadline) {
  Fixture f(Options(8), [](TestHandler* h) { h->deadline_ms = 300; });
  const int64_t start = MonotonicNs();
  const int fd = f.ConnectAccepted();
  ASSERT_TRUE(ClosedWithin(fd, kLongMs));
  EXPECT_GE(MonotonicNs() - start, 300 * kMs);  // not before its deadline
  EXPECT_TRUE(f.handler.WaitUntil([&] { return f.handler.expired.size() == 1; }));
  EXPECT_EQ(f.handler.expired[0], "request_timeout");
  EXPECT_EQ(f.listener.refusals().count("request_timeout"), 1u);  // counted before the close
  EXPECT_EQ(f.listener.open_connections(), 0u);
}

TEST(ListenerTest, AnIdleLimitClosesASilentClientAsIdle) {
  Fixture f(Options(8), [](TestHandler* h) { h->idle_ms = 200; });
  const int fd = f.ConnectAccepted();
  ASSERT_TRUE(ClosedWithin(fd, kLongMs));
  EXPECT_EQ(f.listener.refusals().count("idle_timeout"), 1u);
}

TEST(ListenerTest, ADetachedConnectionStaysCountedUntilReleased) {
  Fixture f(Options(1), [](TestHandler* h) { h->never_give_way = false; });
  const int a = f.ConnectAccepted();
  ASSERT_EQ(send(a, "d", 1, MSG_NOSIGNAL), 1);
  ASSERT_TRUE(f.handler.WaitUntil([&] { return f.handler.detached.size() == 1; }));
  // Detached: never gives way, so a new connection past the cap is refused.
  const int b = f.Connect();
  EXPECT_TRUE(ClosedWithin(b, kLongMs));
  EXPECT_EQ(f.listener.refusals().count("connection_limit"), 1u);  // counted before the close
  EXPECT_EQ(f.listener.open_connections(), 1u);
  const auto detached = f.handler.detached[0];
  close(detached.second);
  f.listener.Release(detached.first);  // from this thread, as a worker would
  f.ConnectAccepted();                 // now there is room
  EXPECT_EQ(f.listener.refusals().count("connection_limit"), 1u);
}

TEST(ListenerTest, AHandedOnConnectionIsCountedUntilItsHangUp) {
  Fixture f(Options(4));
  const int a = f.ConnectAccepted();
  ASSERT_EQ(send(a, "h", 1, MSG_NOSIGNAL), 1);
  ASSERT_TRUE(f.handler.WaitUntil([&] { return f.handler.handed.size() == 1; }));
  const int theirs = f.handler.handed[0].second;
  ASSERT_GE(theirs, 0);
  EXPECT_EQ(f.listener.open_connections(), 1u);
  close(theirs);  // the other server lets go of its descriptor: the connection lives on
  EXPECT_TRUE(StillOpen(a));
  close(a);  // the peer hangs up
  f.clients.clear();
  const int64_t until = MonotonicNs() + kLongMs * kMs;
  while (f.listener.open_connections() != 0 && MonotonicNs() < until) {
    pollfd none{-1, 0, 0};
    poll(&none, 0, 5);
  }
  EXPECT_EQ(f.listener.open_connections(), 0u);
  EXPECT_EQ(f.listener.refusals().counts().size(), 0u);  // an ordinary end
}

TEST(ListenerTest, ATakenPortOrABadAddressIsAnError) {
  Fixture f(Options(4));
  Listener second(Options(4));
  std::string error;
  EXPECT_EQ(second.Bind("127.0.0.1", f.port, &error), -1);
  EXPECT_NE(error.find("Address already in use"), std::string::npos) << error;
  Listener third(Options(4));
  EXPECT_EQ(third.Bind("localhost", 0, &error), -1);
  EXPECT_NE(error.find("not a numeric IP address"), std::string::npos) << error;
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
