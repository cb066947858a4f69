// The poller's in-flight bookkeeping, unit by unit: a CUDA table whose events the test fires
// (injected into g_api, as hook/cuda_api.h resolves the real one), a real ring, and a fake daemon
// (hook/testing/fake_daemon.h) that receives the ring over its socket and reads the in-flight
// table and the records the poller publishes. No GPU simulator: each event fires exactly when the
// test says, so the states between two cycles can be checked one by one.
#include "hook/poller.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format/record.h"
#include "format/ring.h"
#include "gtest/gtest.h"
#include "hook/cuda_api.h"
#include "hook/state.h"
#include "hook/testing/fake_daemon.h"

namespace xtimer {
namespace hook {
namespace {

// An event the test fires: done, at `ms` on the device's clock (the reference event is at 0).
struct FakeEvent {
  std::atomic<bool> done{false};
  std::atomic<float> ms{0};
};

FakeEvent* Of(cudaEvent_t e) { return reinterpret_cast<FakeEvent*>(e); }
cudaEvent_t Ev(FakeEvent* f) { return reinterpret_cast<cudaEvent_t>(f); }

// The calling thread's CUDA state as the runtime keeps it: no current device until one is set,
// and the default global capture interaction mode.
thread_local int t_device = -1;
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;
// Queries made with no device current (the runtime would create a context on device 0 for
// them) or in the global capture mode (they would invalidate another thread's global capture).
std::atomic<int> g_queries_without_device{0};
std::atomic<int> g_queries_in_global_mode{0};
std::atomic<int> g_query_count{0};

cudaError_t FakeSetDevice(int device) {
  t_device = device;
  return cudaSuccess;
}

cudaError_t FakeExchangeCaptureMode(cudaStreamCaptureMode* mode) {
  std::swap(t_capture_mode, *mode);
  return cudaSuccess;
}

cudaError_t FakeQuery(cudaEvent_t e) {
  g_query_count.fetch_add(1);
  if (t_device != 0) g_queries_without_device.fetch_add(1);
  if (t_capture_mode == cudaStreamCaptureModeGlobal) g_queries_in_global_mode.fetch_add(1);
  return Of(e)->done.load() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t FakeElapsed(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!Of(start)->done.load() || !Of(end)->done.load()) return cudaErrorNotReady;
  *ms = Of(end)->ms.load() - Of(start)->ms.load();
  return cudaSuccess;
}

cudaError_t FakeNoError() { return cudaSuccess; }

constexpr int64_t kRefHostNs = 1700000000000000000;  // the reference event's host time
constexpr uint64_t kComm = 0xC0FFEE;

class PollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_api.event_query = FakeQuery;
    g_api.set_device = FakeSetDevice;
    g_api.exchange_capture_mode = FakeExchangeCaptureMode;
    g_queries_without_device = 0;
    g_queries_in_global_mode = 0;
    g_api.event_elapsed_time = FakeElapsed;
    g_api.get_last_error = FakeNoError;
    g_api.peek_at_last_error = FakeNoError;
    char dir[] = "/tmp/xt-poller-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    std::string error;
    daemon_ = testing::FakeDaemon::Start(dir_ + "/xtimerd.sock", &error);
    ASSERT_NE(daemon_, nullptr) << error;
    state_.config.socket_path = dir_ + "/xtimerd.sock";
    state_.config.ring_capacity = 1024;
    state_.config.job = "poller-test";
    state_.config.rank = 0;
    state_.config.local_rank = 0;
    state_.config.world_size = 2;
    ref_.done = true;
    device_.ok = true;
    device_.created = kMaxEvents;  // full pools: the poller creates no event of its own
    device_.marks_created = kMaxMarks;
    device_.ref_event = Ev(&ref_);
    device_.ref_host_ns = kRefHostNs;
    state_.devices[0].store(&device_);
    state_.device_end.store(1);
    poller_ = std::make_unique<Poller>(&state_);
    poller_->Start();
  }

  void TearDown() override {
    if (poller_) poller_->Stop();
    daemon_.reset();
    state_.devices[0].store(nullptr);
    unlink((dir_ + "/xtimerd.sock").c_str());
    rmdir(dir_.c_str());
  }

  struct Op {
    FakeEvent* start;
    FakeEvent* end;
    int64_t launch_ns;
  };

  FakeEvent* NewEvent() {
    events_.push_back(std::make_unique<FakeEvent>());
    return events_.back().get();
  }

  static format::OpRecord Collective(uint64_t seq, uint64_t stream, int64_t launch_ns) {
    format::OpRecord r{};
    r.version = format::kRecordVersion;
    r.type = static_cast<uint8_t>(format::RecordType::kOp);
    r.kind = static_cast<uint8_t>(format::OpKind::kCollective);
    r.op = static_cast<uint16_t>(format::Operation::kAllReduce);
    r.dtype = static_cast<uint8_t>(format::DType::kF32);
    r.device = 0;
    r.stream = stream;
    r.cpu_launch_ns = launch_ns;
    r.bytes = 4096;
    r.count = 1024;
    r.comm_id = kComm;
    r.comm_size = 2;
    r.seq = seq;
    r.peer = -1;
    r.root = -1;
    return r;
  }

  // Queues a timed all-reduce, as EndTimed does: its events are not fired yet.
  Op Timed(uint64_t seq, uint64_t stream) {
    Op op{NewEvent(), NewEvent(), kRefHostNs + static_cast<int64_t>(seq) * 1000};
    Pending p{};
    p.rec.op = Collective(seq, stream, op.launch_ns);
    p.start = Ev(op.start);
    p.end = Ev(op.end);
    p.device = 0;
    p.state = Pending::kTimed;
    EXPECT_TRUE(state_.queue.Push(p));
    return op;
  }

  // Queues an all-reduce the budget left untimed, as TrackCompletion does: only its mark.
  // `from_pool`: its mark is a timing event (no mark was free).
  FakeEvent* Tracked(uint64_t seq, uint64_t stream, bool from_pool = false) {
    FakeEvent* mark = NewEvent();
    Pending p{};
    p.rec.op = Collective(seq, stream, kRefHostNs + static_cast<int64_t>(seq) * 1000);
    p.start = nullptr;
    p.end = Ev(mark);
    p.mark_from_pool = from_pool;
    p.device = 0;
    p.state = Pending::kTracked;
    EXPECT_TRUE(state_.queue.Push(p));
    return mark;
  }

  static void Fire(FakeEvent* e, float ms) {
    e->ms = ms;
    e->done = true;
  }

  // The poller's row of kComm once `ok` holds for it (it republishes at least every 100 ms);
  // fails the test after 10 s with `what`.
  format::InflightRow WaitForRow(const std::function<bool(const format::InflightRow&)>& ok,
                                 const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    format::InflightRow last{};
    while (std::chrono::steady_clock::now() < deadline) {
      daemon_->ReadAll();
      for (const auto& ring : daemon_->rings()) {
        for (const format::InflightRow& row : ring.inflight) {
          if (row.comm_id != kComm) continue;
          last = row;
          if (ok(row)) return row;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << what << ": last row issued " << last.last_issued_seq << " completed "
                  << last.last_completed_seq << " oldest launch " << last.oldest_launch_ns
                  << " oldest seq " << last.oldest.seq << " state "
                  << static_cast<int>(last.oldest.state);
    return last;
  }

  // Waits until the ring header counts `by_mark` and `by_nccl` tracked completions (10 s).
  void WaitForTracked(uint64_t by_mark, uint64_t by_nccl) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    uint64_t mark = 0, nccl = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      daemon_->ReadAll();
      for (const auto& ring : daemon_->rings()) {
        mark = ring.tracked_by_mark;
        nccl = ring.tracked_by_nccl;
      }
      if (mark == by_mark && nccl == by_nccl) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "tracked by mark " << mark << " (want " << by_mark << "), by NCCL " << nccl
                  << " (want " << by_nccl << ")";
  }

  // The op records of kComm the daemon has received, in ring order.
  std::vector<format::OpRecord> Records() {
    daemon_->ReadAll();
    std::vector<format::OpRecord> out;
    for (const auto& ring : daemon_->rings()) {
      for (const format::RecordSlot& s : ring.records) {
        if (s.header.type == static_cast<uint8_t>(format::RecordType::kOp) &&
            s.op.comm_id == kComm) {
          out.push_back(s.op);
        }
      }
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<testing::FakeDaemon> daemon_;
  State state_;
  DeviceState device_{0};
  FakeEvent ref_;
  std::vector<std::unique_ptr<FakeEvent>> events_;
  std::unique_ptr<Poller> poller_;
};

// The poller's queries never create a context on another device and never invalidate an
// application's global-mode capture: each is made with the op's device current, in the
// thread-local capture mode.
TEST_F(PollerTest, QueriesRunOnTheOpsDeviceInTheThreadLocalCaptureMode) {
  const Op a = Timed(1, /*stream=*/1);
  WaitForRow([](const format::InflightRow& r) { return r.last_issued_seq == 1; }, "issued");
  Fire(a.start, 1.0f);
  Fire(a.end, 2.0f);
  WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 1; }, "done");
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(g_queries_without_device.load(), 0);
  EXPECT_EQ(g_queries_in_global_mode.load(), 0);
}

// An all-reduce left untimed by the budget is in flight as `issued` (started or queued is not
// known) until its mark fires; then it is completed, with no record (nothing was timed), and its
// mark goes back to the marks' pool.
TEST_F(PollerTest, AnUntimedCollectiveIsIssuedUntilItsMarkFires) {
  FakeEvent* mark = Tracked(1, /*stream=*/1);
  format::InflightRow row = WaitForRow(
      [](const format::InflightRow& r) {
        return r.last_issued_seq == 1 && r.oldest.state == format::InflightState::kIssued;
      },
      "issued");
  EXPECT_EQ(row.oldest.seq, 1u);
  EXPECT_EQ(row.oldest.gpu_start_ns, 0);
  EXPECT_EQ(row.oldest.blocker.op, 0);
  EXPECT_EQ(format::ValidateInflightRow(row), nullptr);
  Fire(mark, 1.0f);
  row = WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 1; }, "done");
  EXPECT_EQ(row.oldest.state, format::InflightState::kNone);
  EXPECT_TRUE(Records().empty());
  cudaEvent_t back = nullptr;
  ASSERT_TRUE(device_.marks.Pop(&back));
  EXPECT_EQ(back, Ev(mark));
  WaitForTracked(/*by_mark=*/1, /*by_nccl=*/0);
}

// A timing event that stood in for a mark (none was free) goes back to the timing events' pool.
TEST_F(PollerTest, ATimingEventThatMarkedACollectiveGoesBackToItsPool) {
  FakeEvent* mark = Tracked(1, /*stream=*/1, /*from_pool=*/true);
  Fire(mark, 1.0f);
  WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 1; }, "done");
  WaitForTracked(/*by_mark=*/1, /*by_nccl=*/0);
  cudaEvent_t back = nullptr;
  EXPECT_FALSE(device_.marks.Pop(&back));
  ASSERT_TRUE(device_.pool.Pop(&back));
  EXPECT_EQ(back, Ev(mark));
}

// An all-reduce NCCL reports (hook/nccl_profiler.h) is in flight until the last kernel channel
// of its launch stopped, and then completed with no record and no CUDA call of the poller's;
// the poller drops its reference to the launch.
TEST_F(PollerTest, ACollectiveNcclReportsIsIssuedUntilItsLastChannelStopsWithoutAQuery) {
  g_query_count = 0;
  nccl_profiler::Launch launch;
  launch.refs.store(nccl_profiler::kUserUnit + 2);  // one waiter, two channels running
  Pending p{};
  p.rec.op = Collective(1, /*stream=*/1, kRefHostNs + 1000);
  p.launch = &launch;
  p.device = 0;
  p.state = Pending::kProfiled;
  ASSERT_TRUE(state_.queue.Push(p));
  format::InflightRow row = WaitForRow(
      [](const format::InflightRow& r) {
        return r.last_issued_seq == 1 && r.oldest.state == format::InflightState::kIssued;
      },
      "issued");
  EXPECT_EQ(row.oldest.seq, 1u);
  EXPECT_EQ(format::ValidateInflightRow(row), nullptr);
  launch.refs.fetch_sub(1);  // one channel stopped
  EXPECT_EQ(g_query_count.load(), 0) << "NCCL's report needs no CUDA call";
  const Op next = Timed(2, /*stream=*/1);  // queued behind it, not started
  row = WaitForRow([](const format::InflightRow& r) { return r.last_issued_seq == 2; }, "next");
  EXPECT_EQ(row.last_completed_seq, 0u) << "a channel still runs";
  EXPECT_EQ(row.oldest.seq, 1u);
  launch.refs.fetch_sub(1);  // the last
  row = WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 1; }, "done");
  EXPECT_EQ(row.oldest.seq, 2u);
  EXPECT_EQ(launch.refs.load(), 0u) << "the poller released it";
  EXPECT_TRUE(Records().empty()) << "nothing was timed";
  WaitForTracked(/*by_mark=*/0, /*by_nccl=*/1);
  Fire(next.start, 1.0f);
  Fire(next.end, 2.0f);
  WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 2; }, "next done");
}

TEST_F(PollerTest, TheRowFollowsTheOldestCollectiveFromQueuedToStartedToDone) {
  const Op a = Timed(1, /*stream=*/1);
  const Op b = Timed(2, /*stream=*/1);
  format::InflightRow row = WaitForRow(
      [](const format::InflightRow& r) {
        return r.last_issued_seq == 2 && r.oldest.state == format::InflightState::kQueued;
      },
      "both issued, the first queued");
  EXPECT_EQ(row.last_completed_seq, 0u);
  EXPECT_EQ(row.oldest.seq, 1u);
  EXPECT_EQ(row.oldest_launch_ns, a.launch_ns);

  Fire(a.start, 1.0f);
  row = WaitForRow(
      [](const format::InflightRow& r) { return r.oldest.state == format::InflightState::kStarted; },
      "the first started");
  EXPECT_EQ(row.oldest.seq, 1u);
  EXPECT_EQ(row.oldest.gpu_start_ns, kRefHostNs + 1000000);

  Fire(a.end, 3.5f);
  row = WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 1; },
                   "the first completed");
  EXPECT_EQ(row.oldest.seq, 2u);
  EXPECT_EQ(row.oldest_launch_ns, b.launch_ns);
  std::vector<format::OpRecord> done = Records();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].seq, 1u);
  EXPECT_EQ(done[0].gpu_start_ns, kRefHostNs + 1000000);
  EXPECT_EQ(done[0].duration_ns, 2500000);

  Fire(b.start, 3.5f);
  Fire(b.end, 4.0f);
  row = WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 2; },
                   "the second completed");
  EXPECT_EQ(row.oldest_launch_ns, 0);
  EXPECT_EQ(row.oldest.state, format::InflightState::kNone);
  EXPECT_EQ(Records().size(), 2u);
}

// A communicator's collectives run one after another: when seq 2 (on another stream) completes,
// seq 1 is over even if its end event has not been seen yet, and must not stay the oldest op in
// flight (a stale entry there made a false hang verdict in stop 25's suite).
TEST_F(PollerTest, ALaterCollectiveCompletingDropsAnEarlierOneStillListed) {
  const Op a = Timed(1, /*stream=*/1);
  const Op b = Timed(2, /*stream=*/2);
  WaitForRow([](const format::InflightRow& r) { return r.last_issued_seq == 2; }, "both issued");
  Fire(b.start, 1.0f);
  Fire(b.end, 2.0f);
  format::InflightRow row = WaitForRow(
      [](const format::InflightRow& r) { return r.last_completed_seq == 2; }, "seq 2 completed");
  EXPECT_EQ(row.oldest_launch_ns, 0) << "seq 1 is passed: nothing of the communicator waits";
  EXPECT_EQ(row.oldest.state, format::InflightState::kNone);

  // Its end event fires later: its record still goes out, and the row stays as it is.
  Fire(a.start, 0.5f);
  Fire(a.end, 0.9f);
  ASSERT_TRUE(poller_->WaitFor(2, 10000));
  std::vector<format::OpRecord> done = Records();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].seq, 2u);
  EXPECT_EQ(done[1].seq, 1u);
  EXPECT_EQ(done[1].duration_ns, 400000);
  row = WaitForRow([](const format::InflightRow& r) { return r.last_completed_seq == 2; },
                   "the row after seq 1's late end");
  EXPECT_EQ(row.oldest_launch_ns, 0);
}

// An op whose events failed (cudaEventQuery reports an error) is finished, untimed: nothing of
// it stays in flight, and no record claims a time for it.
TEST_F(PollerTest, AnOpWhoseEventFailedLeavesNothingInFlight) {
  g_api.event_query = [](cudaEvent_t e) -> cudaError_t {
    if (Of(e)->ms.load() < 0) return cudaErrorLaunchFailure;
    return Of(e)->done.load() ? cudaSuccess : cudaErrorNotReady;
  };
  const Op a = Timed(1, /*stream=*/1);
  WaitForRow([](const format::InflightRow& r) { return r.oldest_launch_ns != 0; }, "issued");
  a.end->ms = -1.0f;
  format::InflightRow row = WaitForRow(
      [](const format::InflightRow& r) { return r.oldest_launch_ns == 0; }, "finished");
  EXPECT_EQ(row.last_completed_seq, 1u);
  EXPECT_TRUE(Records().empty());
  ASSERT_TRUE(poller_->WaitFor(1, 10000));
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
