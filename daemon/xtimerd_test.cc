// Runs the real xtimerd binary: registrations from synthetic processes, /metrics over HTTP,
// `promtool check metrics`, series of an exited process disappearing, the one-daemon lock,
// --daemonize with --exit-when-idle, survival of a garbage-writing ring, clean SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "daemon/base/test_util.h"
#include "format/registration.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::HttpGet;
using testing::MakeOp;
using testing::Sample;

constexpr int64_t kSec = 1000000000;

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSec + ts.tv_nsec;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Labels(int rank) {
  return "job=\"train\",host=\"node-a\",pod=\"pod-a\",rank=\"" + std::to_string(rank) +
         "\",local_rank=\"" + std::to_string(rank) + "\"";
}

class XtimerdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("xtimerd_test");
    ASSERT_FALSE(dir_.empty());
    port_ = testing::FreePort();
    binary_ = testing::RunfilesPath("daemon/xtimerd");
    // Root's default dump root, /var/lib/xtimer/dumps, is outside the sandbox.
    setenv("XTIMER_DUMP_ROOT", (dir_ + "/dumps").c_str(), 1);
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      testing::WaitExit(pid_, 5000);
    }
    if (HasFailure()) fprintf(stderr, "daemon log:\n%s\n", testing::ReadFile(log()).c_str());
    testing::RemoveTree(dir_);
  }
  std::string log() const { return dir_ + "/test.log"; }

  void StartDaemon() {
    pid_ = testing::Spawn({binary_, "--run-dir=" + dir_, "--metrics-port=" + std::to_string(port_), "--control-port=0",
                           "--hang-timeout=2", "--stale-timeout=0", "--poll-interval-ms=2"},
                          log());
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          int status;
          HttpGet(port_, "/metrics", &status);
          return status == 200 && Exists(dir_ + "/xtimerd.sock");
        },
        20000));
  }

  std::string Scrape() {
    int status = 0;
    std::string body = HttpGet(port_, "/metrics", &status);
    EXPECT_EQ(status, 200);
    return body;
  }

  format::RingWriter Writer(int rank) {
    format::Identity id;
    id.job = "train";
    id.host = "node-a";
    id.pod = "pod-a";
    id.rank = rank;
    id.local_rank = rank;
    id.world_size = 3;
    std::string error;
    auto w = format::RingWriter::Create(1024, id, &error);
    EXPECT_TRUE(w.has_value()) << error;
    return std::move(*w);
  }

  int Register(const format::RingWriter& w) {
    std::string error;
    int fd = format::ConnectToDaemon(dir_ + "/xtimerd.sock", &error);
    EXPECT_GE(fd, 0) << error;
    EXPECT_TRUE(format::SendRing(fd, w.fd(), &error)) << error;
    return fd;
  }

  std::string dir_, binary_;
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(XtimerdTest, ServesMetricsOfRegisteredProcesses) {
  StartDaemon();

  // A second daemon on the same run dir says so and exits 0.
  std::string out;
  EXPECT_EQ(testing::RunCapture({binary_, "--run-dir=" + dir_,
                                 "--metrics-port=" + std::to_string(testing::FreePort()), "--control-port=0"},
                                "", &out),
            0);
  EXPECT_NE(out.find("already running (pid " + std::to_string(pid_) + ")"), std::string::npos)
      << out;

  format::RingWriter w0 = Writer(0), w1 = Writer(1), w2 = Writer(2);
  int f0 = Register(w0), f1 = Register(w1), f2 = Register(w2);
  const int64_t now = Now();
  for (int i = 0; i < 10; ++i) {
    auto mm = MakeOp(Operation::kGemmEx, DType::kBF16, 500000);  // 0.5 ms
    mm.op.m = mm.op.n = mm.op.k = 4096;
    ASSERT_TRUE(w0.Write(mm));
    auto ar = MakeOp(Operation::kAllReduce, DType::kBF16, 1000000);  // 1 ms
    ar.op.count = 1 << 20;
    ar.op.bytes = 2 << 20;
    ar.op.comm_size = 2;
    ar.op.comm_id = 0x77;
    ar.op.seq = static_cast<uint64_t>(i + 1);
    ar.op.gpu_start_ns = now - kSec;
    ASSERT_TRUE(w1.Write(ar));
    auto cp = MakeOp(Operation::kMemcpyHtoD, DType::kUnknown, 2000 * (i + 1));
    cp.op.bytes = 4096;
    ASSERT_TRUE(w2.Write(cp));
  }
  format::InflightRow row{0x77, 11, 10, now - 5 * kSec};  // in flight longer than --hang-timeout
  row.device = 0;
  row.oldest.state = format::InflightState::kStarted;  // rank 1 waits in it: a victim
  row.oldest.op = static_cast<uint16_t>(Operation::kAllReduce);
  row.oldest.dtype = static_cast<uint8_t>(DType::kBF16);
  row.oldest.seq = 11;
  row.oldest.count = 1 << 20;
  row.oldest.comm_size = 2;
  row.oldest.launch_ns = now - 5 * kSec;
  row.oldest.gpu_start_ns = now - 5 * kSec + 1000;
  w1.PublishInflight(&row, 1);
  const uint64_t untimed[] = {3, 0, 1, 0, 0};  // app_error, no_event, cuda_error, queue_full, no_runtime
  w2.PublishUntimed(untimed, 5);
  for (auto* w : {&w0, &w1, &w2}) w->Heartbeat(now);

  const std::string mm_labels = Labels(0) +
                                ",kind=\"matmul\",operation=\"GemmEx\",dtype=\"bf16\","
                                "size_class=\"16GFLOP_256GFLOP\"";
  const std::string ar_labels = Labels(1) +
                                ",kind=\"collective\",operation=\"AllReduce\",dtype=\"bf16\","
                                "size_class=\"1MiB_16MiB\"";
  const std::string cp_labels = Labels(2) +
                                ",kind=\"memcpy\",operation=\"MemcpyHtoD\",dtype=\"unknown\","
                                "size_class=\"lt64KiB\"";
  std::string m;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        // Every ring read to its end (the reader takes the rings one after another).
        m = Scrape();
        for (int r = 0; r < 3; ++r) {
          if (Sample(m, "xtimer_ring_records_written_total{" + Labels(r) + "}") != 10) {
            return false;
          }
        }
        // ...and every record folded into the op metrics (the ring counters lead them).
        if (Sample(m, "xtimer_ops_total{" + mm_labels + "}") != 10 ||
            Sample(m, "xtimer_op_bytes_total{" + ar_labels + "}") != 10 * (2 << 20) ||
            Sample(m, "xtimer_ops_total{" + cp_labels + "}") != 10) {
          return false;
        }
        return Sample(m, "xtimer_processes_registered") == 3 &&
               Sample(m, "xtimer_rank_waiting_hang{" + Labels(1) + "}") == 1 &&
               Sample(m, "xtimer_untimed_ops_total{" + Labels(2) + ",cause=\"app_error\"}") == 3;
      },
      10000))
      << m;
  EXPECT_EQ(Sample(m, "xtimer_ops_total{" + mm_labels + "}"), 10) << m;
  EXPECT_NEAR(Sample(m, "xtimer_op_seconds_total{" + mm_labels + "}"), 5e-3, 1e-12);
  EXPECT_NEAR(Sample(m, "xtimer_matmul_flop_per_second{" + mm_labels + "}") / 1e12,
              2.0 * 4096 * 4096 * 4096 / 5e-4 / 1e12, 1e-6);
  EXPECT_NEAR(Sample(m, "xtimer_op_latency_p99_seconds{" + mm_labels + "}"), 5e-4, 1e-12);

  EXPECT_NEAR(Sample(m, "xtimer_collective_bus_bandwidth_bytes_per_second{" + ar_labels + "}"),
              (2 << 20) / 1e-3 * 2 * 1 / 2, 1e-3);
  EXPECT_EQ(Sample(m, "xtimer_op_bytes_total{" + ar_labels + "}"), 10 * (2 << 20));
  const std::string comm = Labels(1) + ",comm=\"0x0000000000000077\"";
  EXPECT_EQ(Sample(m, "xtimer_comm_last_issued_seq{" + comm + "}"), 11);
  EXPECT_EQ(Sample(m, "xtimer_comm_last_completed_seq{" + comm + "}"), 10);
  EXPECT_EQ(Sample(m, "xtimer_comm_waiting_hang{" + comm + "}"), 1);
  EXPECT_GE(Sample(m, "xtimer_comm_oldest_inflight_age_seconds{" + comm + "}"), 5);
  EXPECT_EQ(Sample(m, "xtimer_comm_inflight_info{" + comm +
                          ",seq=\"11\",op=\"AllReduce\",dtype=\"bf16\",count=\"1048576\","
                          "root=\"-1\",state=\"started\",blocked_by=\"none\"}"),
            1)
      << m;
  EXPECT_EQ(Sample(m, "xtimer_rank_waiting_hang{" + Labels(0) + "}"), 0);

  EXPECT_NEAR(Sample(m, "xtimer_op_latency_min_seconds{" + cp_labels + "}"), 2e-6, 1e-15);
  EXPECT_NEAR(Sample(m, "xtimer_op_latency_max_seconds{" + cp_labels + "}"), 2e-5, 1e-15);
  EXPECT_NEAR(Sample(m, "xtimer_op_latency_avg_seconds{" + cp_labels + "}"), 1.1e-5, 1e-15);
  EXPECT_EQ(Sample(m, "xtimer_ring_records_written_total{" + Labels(2) + "}"), 10);
  EXPECT_EQ(Sample(m, "xtimer_ring_records_dropped_total{" + Labels(2) + "}"), 0);
  EXPECT_EQ(Sample(m, "xtimer_rank_up{" + Labels(2) + "}"), 1);
  EXPECT_EQ(Sample(m, "xtimer_untimed_ops_total{" + Labels(2) + ",cause=\"app_error\"}"), 3);
  EXPECT_EQ(Sample(m, "xtimer_untimed_ops_total{" + Labels(2) + ",cause=\"cuda_error\"}"), 1);
  EXPECT_EQ(Sample(m, "xtimer_untimed_ops_total{" + Labels(2) + ",cause=\"no_event\"}"), 0);
  EXPECT_EQ(Sample(m, "xtimer_untimed_ops_total{" + Labels(0) + ",cause=\"no_runtime\"}"), 0);

  // The exposition is clean for promtool (exit 0: no parse error, no lint problem).
  std::string promtool;
  int rc = testing::RunCapture({"/usr/bin/promtool", "check", "metrics"}, m, &promtool);
  EXPECT_EQ(rc, 0) << promtool;

  // Process 2 goes without an exit marker: its series stay (exited grace period) with rank_up 0
  // and the cause "connection_lost"; the others are untouched.
  close(f2);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        m = Scrape();
        return Sample(m, "xtimer_processes_registered") == 2;
      },
      10000));
  EXPECT_EQ(Sample(m, "xtimer_processes_exited"), 1);
  EXPECT_EQ(Sample(m, "xtimer_rank_up{" + Labels(2) + "}"), 0);
  EXPECT_EQ(Sample(m, "xtimer_rank_up{" + Labels(1) + "}"), 1);
  EXPECT_EQ(Sample(m, "xtimer_rank_exit_code{" + Labels(2) + ",cause=\"connection_lost\"}"), -1);
  EXPECT_EQ(Sample(m, "xtimer_ring_records_written_total{" + Labels(2) + "}"), 10);
  rc = testing::RunCapture({"/usr/bin/promtool", "check", "metrics"}, m, &promtool);
  EXPECT_EQ(rc, 0) << promtool;

  // SIGTERM: clean exit, socket and pid file removed, lock released.
  close(f0);
  close(f1);
  kill(pid_, SIGTERM);
  EXPECT_EQ(testing::WaitExit(pid_, 10000), 0);
  pid_ = -1;
  EXPECT_FALSE(Exists(dir_ + "/xtimerd.sock"));
  EXPECT_FALSE(Exists(dir_ + "/xtimerd.pid"));
}

TEST_F(XtimerdTest, SurvivesAGarbageWritingRing) {
  StartDaemon();
  format::RingWriter w = Writer(0);
  int fd = Register(w);
  format::RingHeader* h = w.header();
  auto* slots = reinterpret_cast<unsigned char*>(h) + format::kHeaderSize;
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    for (uint32_t s = 0; s < h->capacity; s += 1 + rng() % 7) {
      for (size_t i = 0; i < format::kRecordSize; i += 8) {
        uint64_t v = rng();
        memcpy(slots + s * format::kRecordSize + i, &v, 8);
      }
      if (rng() % 2) slots[s * format::kRecordSize] = format::kRecordVersion;
      if (rng() % 2) slots[s * format::kRecordSize + 1] = 0;
    }
    if (rng() % 3 == 0) {
      h->write_pos.store(rng());
    } else {
      h->write_pos.store(h->read_pos.load() + rng() % (h->capacity + 1));
    }
    memset(h->job, 0x80 | (iter & 0x7f), sizeof(h->job));
    h->inflight_count.store(static_cast<uint32_t>(rng()));
    usleep(1000);
  }
  // The garbage is counted: records rejected as malformed, or skipped over impossible positions
  // (which of the two depends on where the reader catches the scribbler; after a last random
  // write_pos it skips everything). The reader may get there after the scribbling ends (a
  // loaded machine, TSan): wait until it has, rather than look once.
  auto invalid_counted = [](const std::string& text) {
    for (const char* family :
         {"xtimer_ring_records_invalid_total{", "xtimer_ring_records_lost_total{"}) {
      for (const std::string& line : testing::Lines(text, family)) {
        if (strtod(line.substr(line.rfind(' ')).c_str(), nullptr) > 0) return true;
      }
    }
    return false;
  };
  std::string m;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        m = Scrape();
        return Sample(m, "xtimer_processes_registered") == 1 && invalid_counted(m);
      },
      30000))
      << m;
  std::string promtool;
  EXPECT_EQ(testing::RunCapture({"/usr/bin/promtool", "check", "metrics"}, m, &promtool), 0)
      << promtool;
  close(fd);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return Sample(Scrape(), "xtimer_processes_registered") == 0; }, 10000));
  EXPECT_EQ(kill(pid_, 0), 0);  // alive
}

TEST_F(XtimerdTest, DaemonizesAndExitsWhenIdle) {
  std::string out;
  // The caller returns once the daemon serves.
  ASSERT_EQ(testing::RunCapture({binary_, "--run-dir=" + dir_, "--daemonize", "--once=2",
                                 "--metrics-port=" + std::to_string(port_), "--control-port=0"},
                                "", &out),
            0)
      << out;
  // Registered at once, before the 2 s idle limit: the checks below may take long under load.
  format::RingWriter w = Writer(0);
  int fd = Register(w);
  EXPECT_TRUE(Exists(dir_ + "/xtimerd.sock"));
  int status = 0;
  HttpGet(port_, "/metrics", &status);
  EXPECT_EQ(status, 200);
  const int daemon_pid = atoi(testing::ReadFile(dir_ + "/xtimerd.pid").c_str());
  ASSERT_GT(daemon_pid, 0);
  EXPECT_EQ(kill(daemon_pid, 0), 0);
  // A second start finds it.
  ASSERT_EQ(testing::RunCapture({binary_, "--run-dir=" + dir_, "--daemonize"}, "", &out), 0);
  EXPECT_NE(out.find("already running (pid " + std::to_string(daemon_pid) + ")"),
            std::string::npos)
      << out;
  // The registered process keeps it alive past the idle timeout.
  usleep(3000000);
  EXPECT_EQ(kill(daemon_pid, 0), 0);
  close(fd);
  // Idle for 2 s: it exits and cleans up.
  EXPECT_TRUE(testing::WaitFor([&] { return kill(daemon_pid, 0) != 0; }, 15000));
  EXPECT_FALSE(Exists(dir_ + "/xtimerd.sock"));
  std::string log = testing::ReadFile(dir_ + "/xtimerd.log");
  EXPECT_NE(log.find("serving"), std::string::npos) << log;
  EXPECT_NE(log.find("no registered process for 2s"), std::string::npos) << log;
}

TEST_F(XtimerdTest, HelpAndBadFlags) {
  std::string out;
  EXPECT_EQ(testing::RunCapture({binary_, "--help"}, "", &out), 0);
  EXPECT_NE(out.find("--exit-when-idle"), std::string::npos);
  EXPECT_EQ(testing::RunCapture({binary_, "--window=0"}, "", &out), 2);
  EXPECT_NE(out.find("--window"), std::string::npos) << out;
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
