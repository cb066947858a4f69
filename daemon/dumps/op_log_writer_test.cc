#include "daemon/dumps/op_log_writer.h"

#include <dirent.h>

#include <set>
#include <string>

#include "daemon/base/test_util.h"
#include "gtest/gtest.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.insert(e->d_name);
  }
  closedir(d);
  return names;
}

int CountLines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

class OpLogWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::MakeTempDir("oplogw");
    options_.files.root = root_;
  }
  void TearDown() override { testing::RemoveTree(root_); }

  ProcessId Add(Aggregator* agg, int pid, int rank, format::OpLogRequest request) {
    format::Identity id;
    id.job = "train";
    id.host = "node-a";
    id.pod = "node-a";
    id.rank = rank;
    id.world_size = 4;
    id.op_log = request;
    return agg->AddProcess(pid, id);
  }
  // `steps` GEMMs of one shape, 100 us each, the one numbered `slow` (if any) 5x, issued by a host
  // far ahead of its stream (their whole durations are work: docs/oplog.md).
  void Run(Aggregator* agg, ProcessId id, int steps, int slow) {
    for (int i = 0; i < steps; ++i) {
      format::RecordSlot s = MakeOp(Operation::kGemmEx, DType::kBF16, i == slow ? 500000 : 100000);
      s.op.m = s.op.n = s.op.k = 1024;
      s.op.gpu_start_ns = 1000000000 + i * 1000000;
      s.op.cpu_launch_ns = 1000000000 + i * 1000;  // the host runs ahead of the stream
      agg->Ingest(id, &s, 1, 0);
    }
  }

  std::string root_;
  OpLogOptions options_;
};

TEST_F(OpLogWriterTest, WritesTheRanksThatAskedAndNamesTheSlowOp) {
  Aggregator agg(AggregatorOptions{});
  OpLogWriter writer(&agg, options_, [] { return int64_t{0}; }, "node-a");
  writer.AddTap();
  const auto logged = Add(&agg, 100, 2, format::OpLogRequest::kCsv);
  const auto silent = Add(&agg, 101, 3, format::OpLogRequest::kNone);
  Run(&agg, logged, 300, 250);
  Run(&agg, silent, 300, 250);
  writer.Drain();
  writer.FlushFiles();
  const std::string dir = root_ + "/oplog/train";
  EXPECT_EQ(Names(dir), (std::set<std::string>{"anomalies-node-a.000.csv", "rank-00002.000.csv"}));
  EXPECT_EQ(CountLines(testing::ReadFile(dir + "/rank-00002.000.csv")), 301);  // with the header
  const std::string anomalies = testing::ReadFile(dir + "/anomalies-node-a.000.csv");
  ASSERT_EQ(CountLines(anomalies), 2) << anomalies;
  EXPECT_NE(anomalies.find("\n1250000000,2,0,matmul,GemmEx,"), std::string::npos) << anomalies;
  EXPECT_NE(anomalies.find(",500000,"), std::string::npos);
  EXPECT_NE(anomalies.find(",500000,100000,5,63\n"), std::string::npos) << anomalies;
  const OpLogCounters c = writer.counters();
  EXPECT_EQ(c.written, 300u);
  EXPECT_EQ(c.anomalies, 1u);
  EXPECT_EQ(c.queue_dropped, 0u);
  EXPECT_EQ(c.queued, 300u + 300u);  // the silent process's ops before the writer knew it
  // Now known: its ops are dropped in the tap, never queued.
  Run(&agg, silent, 10, -1);
  EXPECT_EQ(writer.counters().queued, 600u);
}

TEST_F(OpLogWriterTest, DaemonModeLogsEveryProcessSampledAndFiltered) {
  options_.mode = OpLogMode::kJsonl;
  options_.sample_rate = 0.5;
  options_.seed = 9;
  std::string error;
  ASSERT_TRUE(ParseRanks("1", &options_.filter.ranks, &error)) << error;
  Aggregator agg(AggregatorOptions{});
  OpLogWriter writer(&agg, options_, [] { return int64_t{0}; }, "node-a");
  writer.AddTap();
  const auto r0 = Add(&agg, 100, 0, format::OpLogRequest::kNone);
  const auto r1 = Add(&agg, 101, 1, format::OpLogRequest::kNone);
  Run(&agg, r0, 1000, -1);
  Run(&agg, r1, 1000, -1);
  writer.Drain();
  writer.FlushFiles();
  const std::string dir = root_ + "/oplog/train";
  EXPECT_EQ(Names(dir), std::set<std::string>{"rank-00001.000.jsonl"});  // rank 0 filtered out
  const int lines = CountLines(testing::ReadFile(dir + "/rank-00001.000.jsonl"));
  EXPECT_GT(lines, 400);
  EXPECT_LT(lines, 600);
  const OpLogCounters c = writer.counters();
  EXPECT_EQ(c.filtered_out, 1000u);
  EXPECT_EQ(c.sampled_out + c.written, 1000u);
}

TEST_F(OpLogWriterTest, FullQueueDropsAndCountsWithoutWaiting) {
  options_.max_queue = 100;
  Aggregator agg(AggregatorOptions{});
  OpLogWriter writer(&agg, options_, [] { return int64_t{0}; }, "node-a");
  writer.AddTap();
  Run(&agg, Add(&agg, 100, 0, format::OpLogRequest::kJsonl), 250, -1);
  EXPECT_EQ(writer.counters().queued, 100u);
  EXPECT_EQ(writer.counters().queue_dropped, 150u);
}

// The thread: ops ingested while it runs all reach the file by Stop (its last drain and flush).
TEST_F(OpLogWriterTest, StartedWriterWritesEverythingByStop) {
  options_.poll_ms = 1;
  options_.flush_ms = 10;
  Aggregator agg(AggregatorOptions{});
  OpLogWriter writer(&agg, options_, MonotonicNs, "node-a");
  const auto id = Add(&agg, 100, 0, format::OpLogRequest::kJsonl);
  writer.Start();
  for (int i = 0; i < 20; ++i) Run(&agg, id, 100, -1);
  writer.Stop();
  EXPECT_EQ(CountLines(testing::ReadFile(root_ + "/oplog/train/rank-00000.000.jsonl")), 2000);
  EXPECT_EQ(writer.counters().written, 2000u);
}

TEST(OpLogOptionsTest, FromFlagsNamesTheBadFlag) {
  OpLogFlags flags;
  OpLogOptions o;
  std::string error;
  ASSERT_TRUE(OpLogOptionsFromFlags(flags, "/r", &o, &error)) << error;
  EXPECT_EQ(o.mode, OpLogMode::kJob);
  EXPECT_EQ(o.sample_rate, 1);
  EXPECT_EQ(o.files.root, "/r");
  EXPECT_EQ(o.files.rotate_bytes, uint64_t{64} << 20);
  EXPECT_EQ(o.files.max_total_bytes, uint64_t{1} << 30);
  EXPECT_EQ(o.filter.max_bytes, UINT64_MAX);
  EXPECT_EQ(o.anomaly.factor, 3);
  flags.kinds = "matmul,gemm";
  EXPECT_FALSE(OpLogOptionsFromFlags(flags, "/r", &o, &error));
  EXPECT_NE(error.find("--op-log-kinds: unknown kind 'gemm': use matmul"), std::string::npos)
      << error;
  flags.kinds = "";
  flags.anomaly_factor = "1";
  EXPECT_FALSE(OpLogOptionsFromFlags(flags, "/r", &o, &error));
  EXPECT_NE(error.find("--op-log-anomaly-factor: expected a number above 1"), std::string::npos)
      << error;
}

TEST_F(OpLogWriterTest, ModeOffInstallsNoTap) {
  options_.mode = OpLogMode::kOff;
  Aggregator agg(AggregatorOptions{});
  OpLogWriter writer(&agg, options_, [] { return int64_t{0}; }, "node-a");
  writer.AddTap();
  Run(&agg, Add(&agg, 100, 0, format::OpLogRequest::kJsonl), 10, -1);
  EXPECT_EQ(writer.counters().queued, 0u);
  OpLogMode mode;
  std::string error;
  EXPECT_FALSE(ParseOpLogMode("on", &mode, &error));
  EXPECT_NE(error.find("use job (follow each job's XTIMER_LOG), off, jsonl or csv"),
            std::string::npos);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
