#include "daemon/model/aggregator.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "daemon/base/test_util.h"
#include "daemon/export/metrics.h"
#include "daemon/model/blocked_by.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

constexpr int64_t kSec = 1000000000;
constexpr int64_t kT0 = int64_t{1700000000} * kSec;

format::Identity Id(int rank) {
  format::Identity id;
  id.job = "job";
  id.host = "host";
  id.pod = "pod";
  id.rank = rank;
  id.local_rank = rank % 8;
  id.world_size = 16;
  return id;
}

AggregatorOptions Options() {
  AggregatorOptions o;
  o.window_ns = 60 * kSec;
  o.window_buckets = 60;
  o.window_samples = 4096;
  o.history = 16;
  return o;
}

const SeriesSnapshot* FindSeries(const ProcessSnapshot& p, Operation op) {
  for (const SeriesSnapshot& s : p.series) {
    if (s.op == static_cast<uint16_t>(op)) return &s;
  }
  return nullptr;
}

std::string Exposition(const Snapshot& snap) {
  return prometheus::TextSerializer().Serialize(BuildFamilies(snap));
}

TEST(AggregatorTest, ExactLatencyStatsOverTheWindow) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(0));
  std::vector<int> us(100);
  for (int i = 0; i < 100; ++i) us[i] = i + 1;
  std::shuffle(us.begin(), us.end(), std::mt19937(7));
  for (int v : us) {
    auto r = MakeOp(Operation::kGemmEx, DType::kBF16, int64_t{v} * 1000);
    agg.Ingest(id, &r, 1, kT0);
  }
  Snapshot snap = agg.TakeSnapshot(kT0 + kSec);
  const SeriesSnapshot* s = FindSeries(snap.processes[0], Operation::kGemmEx);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->count, 100u);
  EXPECT_EQ(s->window.count, 100u);
  EXPECT_EQ(s->window.min_ns, 1000);
  EXPECT_EQ(s->window.max_ns, 100000);
  EXPECT_EQ(s->window.p99_ns, 99000);
  EXPECT_NEAR(s->window.seconds / 100, 50.5e-6, 1e-12);

  // 1000 samples: nearest rank 990.
  for (int v = 101; v <= 1000; ++v) {
    auto r = MakeOp(Operation::kGemmEx, DType::kBF16, int64_t{v} * 1000);
    agg.Ingest(id, &r, 1, kT0);
  }
  snap = agg.TakeSnapshot(kT0 + kSec);
  EXPECT_EQ(FindSeries(snap.processes[0], Operation::kGemmEx)->window.p99_ns, 990000);
}

TEST(AggregatorTest, WindowExpiresButCountersStay) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(0));
  auto slow = MakeOp(Operation::kAllReduce, DType::kF32, 900000);
  auto fast = MakeOp(Operation::kAllReduce, DType::kF32, 100000);
  agg.Ingest(id, &slow, 1, kT0);
  agg.Ingest(id, &fast, 1, kT0 + 30 * kSec);

  Snapshot snap = agg.TakeSnapshot(kT0 + 31 * kSec);
  const SeriesSnapshot* s = FindSeries(snap.processes[0], Operation::kAllReduce);
  EXPECT_EQ(s->window.count, 2u);
  EXPECT_EQ(s->window.max_ns, 900000);

  snap = agg.TakeSnapshot(kT0 + 61 * kSec);  // the first op left the window
  s = FindSeries(snap.processes[0], Operation::kAllReduce);
  EXPECT_EQ(s->window.count, 1u);
  EXPECT_EQ(s->window.max_ns, 100000);
  EXPECT_EQ(s->window.p99_ns, 100000);
  EXPECT_EQ(s->count, 2u);
  EXPECT_DOUBLE_EQ(s->seconds, 1e-3);

  snap = agg.TakeSnapshot(kT0 + 120 * kSec);  // empty window: no latency gauges
  s = FindSeries(snap.processes[0], Operation::kAllReduce);
  EXPECT_EQ(s->window.count, 0u);
  std::string text = Exposition(snap);
  EXPECT_EQ(text.find("xtimer_op_latency_p99_seconds{"), std::string::npos);
  EXPECT_NE(text.find("xtimer_ops_total{"), std::string::npos);
}

TEST(AggregatorTest, P99UsesTheMostRecentSamplesWhenTheBufferIsFull) {
  AggregatorOptions o = Options();
  o.window_samples = 10;
  Aggregator agg(o);
  auto id = agg.AddProcess(100, Id(0));
  for (int v = 1; v <= 100; ++v) {
    auto r = MakeOp(Operation::kMemcpyHtoD, DType::kU8, v);
    agg.Ingest(id, &r, 1, kT0);
  }
  Snapshot snap = agg.TakeSnapshot(kT0);
  const SeriesSnapshot* s = FindSeries(snap.processes[0], Operation::kMemcpyHtoD);
  EXPECT_EQ(s->window.count, 100u);  // avg/min/max cover the whole window
  EXPECT_EQ(s->window.min_ns, 1);
  EXPECT_EQ(s->window.samples, 10u);
  EXPECT_EQ(s->window.p99_ns, 100);
}

TEST(AggregatorTest, BusBandwidthAndFlopRate) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(3));
  // AllReduce of 1 Mi bf16 elements on 8 ranks in 1 ms: algbw 2 MiB/ms, busbw x 2*7/8.
  auto ar = MakeOp(Operation::kAllReduce, DType::kBF16, 1000000);
  ar.op.count = 1 << 20;
  ar.op.bytes = 2 << 20;
  ar.op.comm_size = 8;
  ar.op.comm_id = 0xabc;
  // AllGather of 1 Mi bf16 elements per rank on 4 ranks in 2 ms: the full buffer is 4x.
  auto ag = MakeOp(Operation::kAllGather, DType::kBF16, 2000000);
  ag.op.count = 1 << 20;
  ag.op.bytes = 2 << 20;
  ag.op.comm_size = 4;
  ag.op.comm_id = 0xdef;
  // 4096^3 bf16 GEMM in 0.5 ms.
  auto mm = MakeOp(Operation::kLtMatmul, DType::kBF16, 500000);
  mm.op.m = mm.op.n = mm.op.k = 4096;
  for (int i = 0; i < 10; ++i) {
    agg.Ingest(id, &ar, 1, kT0);
    agg.Ingest(id, &ag, 1, kT0);
    agg.Ingest(id, &mm, 1, kT0);
  }
  Snapshot snap = agg.TakeSnapshot(kT0);
  const ProcessSnapshot& p = snap.processes[0];
  const SeriesSnapshot* s = FindSeries(p, Operation::kAllReduce);
  EXPECT_NEAR(s->window.bus_bytes / s->window.seconds, (2 << 20) / 1e-3 * 2 * 7 / 8, 1);
  EXPECT_NEAR(s->window.algo_bytes / s->window.seconds, (2 << 20) / 1e-3, 1);
  s = FindSeries(p, Operation::kAllGather);
  EXPECT_NEAR(s->window.bus_bytes / s->window.seconds, 4.0 * (2 << 20) / 2e-3 * 3 / 4, 1);
  s = FindSeries(p, Operation::kLtMatmul);
  EXPECT_NEAR(s->window.flop / s->window.seconds, 2.0 * 4096 * 4096 * 4096 / 5e-4, 1e3);
  EXPECT_DOUBLE_EQ(s->flop, 10 * 2.0 * 4096 * 4096 * 4096);

  std::string text = Exposition(snap);
  EXPECT_NE(text.find("xtimer_collective_bus_bandwidth_bytes_per_second{job=\"job\",host=\"host\","
                      "pod=\"pod\",rank=\"3\",local_rank=\"3\",kind=\"collective\","
                      "operation=\"AllReduce\",dtype=\"bf16\",size_class=\"1MiB_16MiB\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_matmul_flop_per_second{job=\"job\""), std::string::npos);
  EXPECT_NE(text.find("size_class=\"16GFLOP_256GFLOP\""), std::string::npos);
}

TEST(AggregatorTest, CommunicatorProgressAndHang) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(1));
  auto ar = MakeOp(Operation::kAllReduce, DType::kF32, 1000);
  ar.op.comm_id = 0x1234;
  ar.op.comm_size = 2;
  ar.op.gpu_start_ns = kT0 - 5 * kSec;
  for (uint64_t seq = 1; seq <= 7; ++seq) {
    ar.op.seq = seq;
    agg.Ingest(id, &ar, 1, kT0);
  }
  format::RecordSlot comm = testing::MakeComm(0x1234, 1, 2);
  comm.comm.parent_id = 0x99;
  agg.Ingest(id, &comm, 1, kT0);

  ProcessStatus st;
  st.identity = Id(1);
  st.inflight_valid = true;
  st.inflight.push_back({0x1234, 9, 7, kT0 - 299 * kSec});
  st.inflight.push_back({0, 0, 0, 0});
  agg.UpdateStatus(id, st);
  Snapshot snap = agg.TakeSnapshot(kT0);
  const ProcessSnapshot& p = snap.processes[0];
  ASSERT_EQ(p.comms.size(), 2u);
  const CommSnapshot& none = p.comms[0];
  const CommSnapshot& c = p.comms[1];
  EXPECT_EQ(none.comm_id, 0u);
  EXPECT_EQ(none.oldest_launch_ns, 0);
  EXPECT_EQ(c.comm_id, 0x1234u);
  EXPECT_EQ(c.parent_id, 0x99u);
  EXPECT_EQ(c.last_issued_seq, 9u);
  EXPECT_EQ(c.last_completed_seq, 7u);
  EXPECT_EQ(c.oldest_launch_ns, kT0 - 299 * kSec);
  EXPECT_NEAR(InflightAgeSeconds(p, c.oldest_launch_ns), 299, 1e-6);
  EXPECT_EQ(c.comm_rank, 1);
  EXPECT_EQ(c.comm_size, 2);
  EXPECT_EQ(c.last_completed_ns, kT0 - 5 * kSec + 1000);

  // 301 s in flight: the model keeps the launch time; whether that is a hang is the live
  // diagnosis's decision (daemon/diagnosis), so the model's families carry no waiting gauge.
  snap = agg.TakeSnapshot(kT0 + 2 * kSec);
  EXPECT_EQ(snap.processes[0].comms[1].oldest_launch_ns, kT0 - 299 * kSec);
  EXPECT_NEAR(InflightAgeSeconds(snap.processes[0], kT0 - 299 * kSec), 301, 1e-6);
  std::string text = Exposition(snap);
  EXPECT_NE(text.find("xtimer_comm_oldest_inflight_age_seconds{job=\"job\",host=\"host\","
                      "pod=\"pod\",rank=\"1\",local_rank=\"1\",comm=\"0x0000000000001234\"} 301"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("waiting_hang"), std::string::npos) << text;

  // The op completes: the table no longer lists anything in flight.
  st.inflight[0] = {0x1234, 9, 9, 0};
  agg.UpdateStatus(id, st);
  snap = agg.TakeSnapshot(kT0 + 2 * kSec);
  EXPECT_EQ(snap.processes[0].comms[1].oldest_launch_ns, 0);
}

format::RecordSlot CommOn(uint64_t comm_id, int device, int rank, int size, uint64_t parent) {
  format::RecordSlot comm = testing::MakeComm(comm_id, rank, size);
  comm.comm.device = device;
  comm.comm.parent_id = parent;
  return comm;
}

format::RecordSlot AllReduceOn(uint64_t comm_id, int device, uint64_t seq) {
  auto ar = MakeOp(Operation::kAllReduce, DType::kF32, 1000);
  ar.op.comm_id = comm_id;
  ar.op.device = device;
  ar.op.seq = seq;
  return ar;
}

// ncclCommInitAll over devices 0..3 of one process (comm 0xa, size 4) and a split into halves
// (0xb: devices 0,1; 0xc: devices 2,3): four ranks, named by their place in 0xa.
TEST(AggregatorMultiDeviceTest, EachDeviceIsARankNamedByItsLargestCommunicator) {
  AggregatorOptions o = Options();
  o.history = 1000;
  Aggregator agg(o);
  format::Identity id = Id(0);
  id.rank = -1;
  id.local_rank = -1;
  id.world_size = -1;
  auto pid = agg.AddProcess(100, id);
  auto memset0 = MakeOp(Operation::kMemset, DType::kUnknown, 10);
  memset0.op.device = 0;
  agg.Ingest(pid, &memset0, 1, kT0);  // before any communicator: the process's first rank
  // Devices in a different order than their ranks in the world communicator.
  const int rank_of[4] = {2, 0, 3, 1};
  for (int d = 0; d < 4; ++d) {
    auto c = CommOn(0xa, d, rank_of[d], 4, 0);
    agg.Ingest(pid, &c, 1, kT0);
  }
  for (int d = 0; d < 4; ++d) {
    auto c = CommOn(d < 2 ? 0xb : 0xc, d, d % 2, 2, 0xa);
    agg.Ingest(pid, &c, 1, kT0);
  }
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    for (int d = 0; d < 4; ++d) {
      auto world = AllReduceOn(0xa, d, seq);
      auto half = AllReduceOn(d < 2 ? 0xb : 0xc, d, seq);
      agg.Ingest(pid, &world, 1, kT0);
      agg.Ingest(pid, &half, 1, kT0);
    }
  }
  auto sync = MakeOp(Operation::kStreamSynchronize, DType::kUnknown, 10);
  sync.op.device = -1;
  agg.Ingest(pid, &sync, 1, kT0);

  const Snapshot snap = agg.TakeSnapshot(kT0);
  EXPECT_EQ(snap.connected, 1u);
  ASSERT_EQ(snap.processes.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    const ProcessSnapshot& p = snap.processes[d];
    SCOPED_TRACE(d);
    EXPECT_EQ(p.device, d);
    EXPECT_EQ(p.local_rank, d);
    EXPECT_EQ(p.rank, rank_of[d]);
    EXPECT_EQ(p.world_size, 4);
    EXPECT_EQ(p.pid, 100);
    EXPECT_EQ(p.first_rank, d == 0);
    EXPECT_FALSE(p.hidden);
    const SeriesSnapshot* ar = FindSeries(p, Operation::kAllReduce);
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->count, 10u);
    ASSERT_EQ(p.comms.size(), 2u);
    EXPECT_EQ(p.comms[0].comm_id, 0xau);
    EXPECT_EQ(p.comms[0].comm_rank, rank_of[d]);
    EXPECT_EQ(p.comms[0].last_completed_seq, 5u);
    EXPECT_EQ(p.comms[1].comm_rank, d % 2);
    // Ops without a device, and those before the second device joined, count for the first.
    EXPECT_EQ(FindSeries(p, Operation::kMemset) != nullptr, d == 0);
    EXPECT_EQ(FindSeries(p, Operation::kStreamSynchronize) != nullptr, d == 0);
  }

  // Dumps: the history of one device rank, and of the whole process.
  EXPECT_EQ(agg.History({pid, 2}).size(), 10u);
  EXPECT_EQ(agg.History({pid}).size(), 42u);
  EXPECT_EQ(agg.History({pid, 0}).size(), 12u);  // with the memset and the sync

  // The ring's values once per process; every rank's own series and its pid in rank_info.
  const std::string text = Exposition(snap);
  EXPECT_EQ(testing::Lines(text, "xtimer_ring_records_written_total{").size(), 1u) << text;
  EXPECT_EQ(testing::Lines(text, "xtimer_rank_info{").size(), 4u);
  EXPECT_NE(text.find("xtimer_rank_info{job=\"job\",host=\"host\",pod=\"pod\",rank=\"3\","
                      "local_rank=\"2\",pid=\"100\",world_size=\"4\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_processes_registered 1"), std::string::npos);
}

// Two devices without a communicator between them (each in its own 2-rank job communicator with
// another process): each takes its rank from its communicator; with none, the process's.
TEST(AggregatorMultiDeviceTest, ARankWithoutSizedCommunicatorKeepsTheProcessIdentity) {
  Aggregator agg(Options());
  auto pid = agg.AddProcess(100, Id(5));
  auto a = CommOn(0xa, 0, 1, 2, 0);
  auto b = CommOn(0xb, 1, -1, 0, 0);  // size not known (yet)
  agg.Ingest(pid, &a, 1, kT0);
  agg.Ingest(pid, &b, 1, kT0);
  const Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_EQ(snap.processes[0].rank, 1);
  EXPECT_EQ(snap.processes[0].world_size, 2);
  EXPECT_EQ(snap.processes[1].rank, 5);
  EXPECT_EQ(snap.processes[1].world_size, 16);
  EXPECT_EQ(snap.processes[1].local_rank, 1);
}

// One process per GPU: communicators on one device keep the process's single rank unchanged.
TEST(AggregatorMultiDeviceTest, OneDeviceStaysOneRankWithTheProcessIdentity) {
  Aggregator agg(Options());
  auto pid = agg.AddProcess(100, Id(3));
  auto a = CommOn(0xa, 3, 1, 8, 0);
  auto b = CommOn(0xb, 3, 0, 2, 0xa);
  auto op = AllReduceOn(0xa, 3, 1);
  auto stray = MakeOp(Operation::kMemset, DType::kUnknown, 10);
  stray.op.device = 0;
  agg.Ingest(pid, &a, 1, kT0);
  agg.Ingest(pid, &b, 1, kT0);
  agg.Ingest(pid, &op, 1, kT0);
  agg.Ingest(pid, &stray, 1, kT0);
  const Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 1u);
  const ProcessSnapshot& p = snap.processes[0];
  EXPECT_EQ(p.device, -1);
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.local_rank, 3);
  EXPECT_EQ(p.world_size, 16);
  EXPECT_EQ(p.series.size(), 2u);
  EXPECT_EQ(p.comms.size(), 2u);
  EXPECT_EQ(agg.History({pid, 3}).size(), 2u);
}

// A process cannot grow ranks without bound: devices past the limit count for its first rank.
TEST(AggregatorMultiDeviceTest, RanksPerProcessAreBounded) {
  AggregatorOptions o = Options();
  o.max_ranks_per_process = 3;
  Aggregator agg(o);
  auto pid = agg.AddProcess(100, Id(0));
  for (int d = 0; d < 100; ++d) {
    auto c = CommOn(0x100 + d, d, 0, 2, 0);
    agg.Ingest(pid, &c, 1, kT0);
  }
  const Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 3u);
  EXPECT_EQ(snap.processes[0].device, 0);
  EXPECT_LE(snap.processes[0].comms.size(), o.max_comms_per_process);
}

format::RecordSlot NameRecord(uint32_t id, const std::string& text) {
  return format::NamePart(id, text, 0);  // names of one part
}

format::InflightRow CollectiveRow(uint64_t comm, format::InflightState state, Operation op,
                                  uint64_t seq, int64_t launch_ns) {
  format::InflightRow row{comm, seq, seq - 1, launch_ns};
  row.device = 0;
  row.oldest.state = state;
  row.oldest.op = static_cast<uint16_t>(op);
  row.oldest.dtype = static_cast<uint8_t>(DType::kF32);
  row.oldest.seq = seq;
  row.oldest.count = 1024;
  row.oldest.comm_size = 4;
  row.oldest.launch_ns = launch_ns;
  if (state == format::InflightState::kStarted) row.oldest.gpu_start_ns = launch_ns + 1000;
  return row;
}

TEST(AggregatorTest, InflightDetailsNameTheOldestCollectiveAndWhatBlocksIt) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(1));
  format::RecordSlot name = NameRecord(7, "gemm_big");
  agg.Ingest(id, &name, 1, kT0);
  ProcessStatus st;
  st.identity = Id(1);
  st.inflight_valid = true;
  format::InflightRow queued = CollectiveRow(0x1234, format::InflightState::kQueued,
                                             Operation::kAllReduce, 10, kT0 - 41200 * 1000000LL);
  queued.oldest.blocker.op = static_cast<uint16_t>(Operation::kKernelLaunch);
  queued.oldest.blocker.kind = static_cast<uint8_t>(format::OpKind::kKernel);
  queued.oldest.blocker.name_id = 7;
  queued.oldest.blocker.launch_ns = kT0 - 41200 * 1000000LL;
  format::InflightRow started = CollectiveRow(0x5678, format::InflightState::kStarted,
                                              Operation::kBroadcast, 3, kT0 - kSec / 2);
  started.oldest.root = 1;
  st.inflight = {{0, 0, 0, 0}, queued, started};
  agg.UpdateStatus(id, st);

  Snapshot snap = agg.TakeSnapshot(kT0);
  const ProcessSnapshot& p = snap.processes[0];
  ASSERT_EQ(p.comms.size(), 3u);
  const CommSnapshot& q = p.comms[1];
  EXPECT_EQ(q.comm_id, 0x1234u);
  EXPECT_EQ(q.device, 0);
  EXPECT_EQ(q.inflight.state, format::InflightState::kQueued);
  EXPECT_EQ(q.inflight.seq, 10u);
  EXPECT_NEAR(InflightAgeSeconds(p, q.inflight.launch_ns), 41.2, 1e-6);
  EXPECT_EQ(q.blocked_by, "kernel gemm_big launched 41.2 s ago");
  const CommSnapshot& b = p.comms[2];
  EXPECT_EQ(b.inflight.state, format::InflightState::kStarted);
  EXPECT_EQ(b.inflight.root, 1);
  EXPECT_EQ(b.blocked_by, "");
  EXPECT_EQ(p.comms[0].inflight.state, format::InflightState::kNone);

  // The info series: only for collectives at least 1 s old.
  std::string text = Exposition(snap);
  const std::string rank = "job=\"job\",host=\"host\",pod=\"pod\",rank=\"1\",local_rank=\"1\",";
  EXPECT_NE(text.find("xtimer_comm_inflight_info{" + rank +
                      "comm=\"0x0000000000001234\",seq=\"10\",op=\"AllReduce\",dtype=\"fp32\","
                      "count=\"1024\",root=\"-1\",state=\"queued\",blocked_by=\"work\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("comm=\"0x0000000000005678\",seq="), std::string::npos) << text;
  text = Exposition(agg.TakeSnapshot(kT0 + kSec));
  EXPECT_NE(text.find("xtimer_comm_inflight_info{" + rank +
                      "comm=\"0x0000000000005678\",seq=\"3\",op=\"Broadcast\",dtype=\"fp32\","
                      "count=\"1024\",root=\"1\",state=\"started\",blocked_by=\"none\"} 1"),
            std::string::npos)
      << text;

  // Both complete: the series go away.
  st.inflight = {{0, 0, 0, 0}, {0x1234, 10, 10, 0}, {0x5678, 3, 3, 0}};
  agg.UpdateStatus(id, st);
  snap = agg.TakeSnapshot(kT0 + 2 * kSec);
  EXPECT_EQ(Exposition(snap).find("xtimer_comm_inflight_info{"), std::string::npos);
  EXPECT_EQ(snap.processes[0].comms[1].blocked_by, "");
}

// CI, peer_e2e: the daemon's ring reader fell 20 s behind (a slow tap), its last in-flight
// tables aged meanwhile, and a healthy job got hang verdicts. Ages now run up to the time the
// table was read, or the hook's last heartbeat when that is older (a poller that stopped).
TEST(AggregatorTest, InflightAgesStopAtTheLastTimeTheTableWasSeen) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(1));
  ProcessStatus st;
  st.identity = Id(1);
  st.inflight_valid = true;
  st.read_ns = kT0;
  st.heartbeat_ns = kT0 - kSec / 100;
  st.inflight = {{0, 0, 0, 0}, CollectiveRow(0x1234, format::InflightState::kStarted,
                                             Operation::kAllReduce, 10, kT0 - 2 * kSec)};
  agg.UpdateStatus(id, st);
  // 400 s later, nothing read since: the op was 1.99 s old at the last heartbeat: no hang.
  Snapshot snap = agg.TakeSnapshot(kT0 + 400 * kSec);
  const ProcessSnapshot& p = snap.processes[0];
  const CommSnapshot& c = p.comms[1];
  EXPECT_EQ(p.observed_ns, kT0 - kSec / 100);
  EXPECT_NEAR(InflightAgeSeconds(p, c.oldest_launch_ns), 1.99, 1e-6);
  EXPECT_NEAR(InflightAgeSeconds(p, c.inflight.launch_ns), 1.99, 1e-6);

  // Read again with a fresh heartbeat: the same op, still in flight, is 302 s old and a hang.
  st.read_ns = kT0 + 300 * kSec;
  st.heartbeat_ns = st.read_ns;
  agg.UpdateStatus(id, st);
  snap = agg.TakeSnapshot(kT0 + 300 * kSec);
  EXPECT_NEAR(InflightAgeSeconds(snap.processes[0], snap.processes[0].comms[1].oldest_launch_ns),
              302, 1e-6);

  // A poller that stopped beating 290 s before the read: its table holds as of its heartbeat.
  st.heartbeat_ns = kT0 + 10 * kSec;
  st.read_ns = kT0 + 300 * kSec;
  agg.UpdateStatus(id, st);
  snap = agg.TakeSnapshot(kT0 + 300 * kSec);
  EXPECT_NEAR(InflightAgeSeconds(snap.processes[0], kT0 - 2 * kSec), 12, 1e-6);
  // A heartbeat from the future (a forged ring, a clock step) counts as the read time.
  st.heartbeat_ns = kT0 + 900 * kSec;
  agg.UpdateStatus(id, st);
  EXPECT_NEAR(InflightAgeSeconds(agg.TakeSnapshot(kT0 + 300 * kSec).processes[0], kT0 - 2 * kSec),
              302, 1e-6);
}

TEST(AggregatorTest, RowsOfOneCommunicatorOnSeveralDevicesMerge) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(0));
  ProcessStatus st;
  st.identity = Id(0);
  st.inflight_valid = true;
  format::InflightRow dev0 = CollectiveRow(0x42, format::InflightState::kStarted,
                                           Operation::kAllReduce, 8, kT0 - 2 * kSec);
  format::InflightRow dev1 = CollectiveRow(0x42, format::InflightState::kQueued,
                                           Operation::kAllReduce, 7, kT0 - 5 * kSec);
  dev1.device = 1;
  dev1.last_completed_seq = 5;
  format::InflightRow none0{0, 100, 90, kT0 - kSec};
  format::InflightRow none1{0, 50, 45, 0};
  none1.device = 1;
  st.inflight = {none0, none1, dev0, dev1};
  agg.UpdateStatus(id, st);
  Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes[0].comms.size(), 2u);
  const CommSnapshot& none = snap.processes[0].comms[0];
  EXPECT_EQ(none.last_issued_seq, 150u);  // row 0 counts ops: the devices add up
  EXPECT_EQ(none.last_completed_seq, 135u);
  const CommSnapshot& c = snap.processes[0].comms[1];
  EXPECT_EQ(c.last_issued_seq, 8u);
  EXPECT_EQ(c.last_completed_seq, 5u);  // the lagging device
  EXPECT_EQ(c.device, 1);               // the oldest collective's device
  EXPECT_EQ(c.inflight.seq, 7u);
  EXPECT_EQ(c.oldest_launch_ns, kT0 - 5 * kSec);
}

// In a process with a rank per device, each in-flight row goes to its device's rank.
TEST(AggregatorMultiDeviceTest, InflightRowsGoToTheirDevicesRank) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(0));
  for (int d = 0; d < 2; ++d) {
    auto c = CommOn(0x42, d, d, 2, 0);
    agg.Ingest(id, &c, 1, kT0);
  }
  ProcessStatus st;
  st.identity = Id(0);
  st.inflight_valid = true;
  format::InflightRow dev0{0x42, 8, 8, 0};
  dev0.device = 0;
  format::InflightRow dev1{0x42, 8, 5, kT0 - 400 * kSec};
  dev1.device = 1;
  st.inflight = {dev0, dev1};
  agg.UpdateStatus(id, st);
  const Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 2u);
  ASSERT_EQ(snap.processes[0].comms.size(), 1u);
  ASSERT_EQ(snap.processes[1].comms.size(), 1u);
  EXPECT_EQ(snap.processes[0].comms[0].last_completed_seq, 8u);
  EXPECT_EQ(snap.processes[0].comms[0].oldest_launch_ns, 0);
  EXPECT_EQ(snap.processes[1].comms[0].last_completed_seq, 5u);
  EXPECT_EQ(snap.processes[1].comms[0].oldest_launch_ns, kT0 - 400 * kSec);  // only device 1
}

// Rows of a version 1 ring carry no device: each goes to the rank that holds its communicator.
TEST(AggregatorMultiDeviceTest, RowsWithoutDeviceGoToTheRankOfTheirCommunicator) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(100, Id(0));
  auto a = CommOn(0xa, 0, 0, 2, 0);
  auto b = CommOn(0xb, 1, 1, 2, 0);
  agg.Ingest(id, &a, 1, kT0);
  agg.Ingest(id, &b, 1, kT0);
  ProcessStatus st;
  st.identity = Id(0);
  st.inflight_valid = true;
  st.inflight = {{0xb, 3, 2, kT0 - kSec}, {0xc, 1, 1, 0}};
  agg.UpdateStatus(id, st);
  const Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 2u);
  ASSERT_EQ(snap.processes[1].comms.size(), 1u);
  EXPECT_EQ(snap.processes[1].comms[0].last_issued_seq, 3u);
  EXPECT_EQ(snap.processes[0].comms.size(), 2u);  // 0xa and the unknown 0xc
}

TEST(BlockedByTest, DescribesEachKindOfBlocker) {
  format::InflightBlocker b;
  EXPECT_EQ(DescribeBlocker(b, "", kT0), "");
  b.launch_ns = kT0 - 3 * kSec;
  b.op = static_cast<uint16_t>(Operation::kGemmEx);
  b.kind = static_cast<uint8_t>(format::OpKind::kMatmul);
  b.m = 8192;
  b.n = 4096;
  b.k = 1024;
  EXPECT_EQ(DescribeBlocker(b, "", kT0), "GemmEx m=8192 n=4096 k=1024 launched 3.0 s ago");
  b.op = static_cast<uint16_t>(Operation::kMemcpyHtoD);
  b.kind = static_cast<uint8_t>(format::OpKind::kMemcpy);
  b.bytes = 1 << 20;
  EXPECT_EQ(DescribeBlocker(b, "", kT0), "MemcpyHtoD of 1048576 bytes launched 3.0 s ago");
  b.op = static_cast<uint16_t>(Operation::kAllGather);
  b.kind = static_cast<uint8_t>(format::OpKind::kCollective);
  b.comm_id = 0xab;
  b.seq = 12;
  EXPECT_EQ(DescribeBlocker(b, "", kT0),
            "AllGather seq 12 on comm 0x00000000000000ab launched 3.0 s ago");
  b.op = static_cast<uint16_t>(Operation::kKernelLaunch);
  b.kind = static_cast<uint8_t>(format::OpKind::kKernel);
  b.name_id = 9;
  EXPECT_EQ(DescribeBlocker(b, "", kT0), "kernel #9 launched 3.0 s ago");
  b.launch_ns = kT0 + kSec;  // a clock step: never a negative age
  EXPECT_EQ(DescribeBlocker(b, "k", kT0), "kernel k launched 0.0 s ago");
}

TEST(AggregatorTest, RemovedProcessSeriesDisappear) {
  Aggregator agg(Options());
  auto a = agg.AddProcess(100, Id(0));
  auto b = agg.AddProcess(101, Id(1));
  auto r = MakeOp(Operation::kGemmEx, DType::kF16, 1000);
  agg.Ingest(a, &r, 1, kT0);
  agg.Ingest(b, &r, 1, kT0);
  std::string text = Exposition(agg.TakeSnapshot(kT0));
  EXPECT_NE(text.find("rank=\"1\""), std::string::npos);
  EXPECT_NE(text.find("xtimer_processes_registered 2"), std::string::npos);
  agg.RemoveProcess(b);
  EXPECT_EQ(agg.process_count(), 1u);
  text = Exposition(agg.TakeSnapshot(kT0));
  EXPECT_EQ(text.find("rank=\"1\""), std::string::npos);
  EXPECT_NE(text.find("rank=\"0\""), std::string::npos);
  EXPECT_NE(text.find("xtimer_processes_registered 1"), std::string::npos);
  agg.Ingest(b, &r, 1, kT0);  // a late batch for a removed process is ignored
  EXPECT_EQ(agg.TakeSnapshot(kT0).processes.size(), 1u);
}

TEST(AggregatorTest, ExitedProcessStaysWithItsCauseUntilTheGraceEnds) {
  AggregatorOptions o = Options();
  o.exited_grace_ns = 600 * kSec;
  Aggregator agg(o);
  auto a = agg.AddProcess(100, Id(0));
  auto b = agg.AddProcess(101, Id(1));
  auto r = MakeOp(Operation::kGemmEx, DType::kF16, 1000);
  agg.Ingest(a, &r, 1, kT0);
  agg.Ingest(b, &r, 1, kT0);
  agg.MarkExited(b, ExitCause{format::ExitKind::kSignal, 11}, kT0 + kSec);
  EXPECT_FALSE(agg.Connected(b));
  EXPECT_TRUE(agg.Connected(a));
  agg.Ingest(b, &r, 1, kT0 + 2 * kSec);  // a late batch for an exited process is ignored
  Snapshot snap = agg.TakeSnapshot(kT0 + 2 * kSec);
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_EQ(snap.connected, 1u);
  EXPECT_EQ(snap.processes[1].series[0].count, 1u);
  std::string text = Exposition(snap);
  const std::string labels =
      "job=\"job\",host=\"host\",pod=\"pod\",rank=\"1\",local_rank=\"1\"";
  EXPECT_NE(text.find("xtimer_rank_up{" + labels + "} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("xtimer_rank_exit_code{" + labels + ",cause=\"signal\"} 11"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_rank_exit_timestamp_seconds{" + labels + ",cause=\"signal\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("xtimer_rank_exit_code{job=\"job\",host=\"host\",pod=\"pod\",rank=\"0\""),
            std::string::npos);
  EXPECT_NE(text.find("xtimer_processes_registered 1"), std::string::npos);
  EXPECT_NE(text.find("xtimer_processes_exited 1"), std::string::npos);
  EXPECT_EQ(agg.History({b}).size(), 1u);
  EXPECT_EQ(agg.ExpireExited(kT0 + 600 * kSec), 0u);
  EXPECT_EQ(agg.ExpireExited(kT0 + 601 * kSec), 1u);
  EXPECT_EQ(agg.process_count(), 1u);
}

TEST(AggregatorTest, ZeroGraceDropsAtOnceAndBoundsDropTheOldestExited) {
  AggregatorOptions o = Options();
  o.exited_grace_ns = 0;
  Aggregator none(o);
  none.MarkExited(none.AddProcess(1, Id(0)), ExitCause(), kT0);
  EXPECT_EQ(none.process_count(), 0u);

  o.exited_grace_ns = 600 * kSec;
  o.max_exited = 2;
  Aggregator agg(o);
  std::vector<ProcessId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(agg.AddProcess(10 + i, Id(i)));
  for (int i = 0; i < 4; ++i) agg.MarkExited(ids[i], ExitCause(), kT0 + i * kSec);
  Snapshot snap = agg.TakeSnapshot(kT0 + 10 * kSec);
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_EQ(snap.processes[0].rank, 2);
  EXPECT_EQ(snap.processes[1].rank, 3);

  // The memory bound: one history chunk (4096 records) is more than 1 KiB.
  o.max_exited = 64;
  o.max_exited_bytes = 1024;
  Aggregator small(o);
  auto p = small.AddProcess(1, Id(0));
  auto r = MakeOp(Operation::kGemmEx, DType::kF16, 1000);
  small.Ingest(p, &r, 1, kT0);
  small.MarkExited(p, ExitCause(), kT0);
  EXPECT_EQ(small.process_count(), 0u);
}

TEST(AggregatorTest, RestartedRankIsExportedAndItsExitedPredecessorHidden) {
  AggregatorOptions o = Options();
  o.exited_grace_ns = 600 * kSec;
  Aggregator agg(o);
  auto old_id = agg.AddProcess(1, Id(0));
  agg.MarkExited(old_id, ExitCause{format::ExitKind::kExited, 1}, kT0);
  agg.AddProcess(2, Id(0));  // the same rank, restarted
  Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_TRUE(snap.processes[0].hidden);
  EXPECT_FALSE(snap.processes[1].hidden);
  EXPECT_EQ(snap.identity_conflicts, 0u);
  const std::string text = Exposition(snap);
  EXPECT_NE(text.find("pid=\"2\""), std::string::npos);
  EXPECT_EQ(text.find("pid=\"1\""), std::string::npos);
}

TEST(AggregatorTest, EveryFamilyIsAlwaysPresent) {
  Aggregator empty(Options());
  auto families = BuildFamilies(empty.TakeSnapshot(kT0));
  Aggregator busy(Options());
  auto id = busy.AddProcess(1, Id(0));
  auto r = MakeOp(Operation::kAllReduce, DType::kF32, 1000);
  r.op.comm_id = 5;
  r.op.comm_size = 2;
  busy.Ingest(id, &r, 1, kT0);
  auto families2 = BuildFamilies(busy.TakeSnapshot(kT0));
  ASSERT_EQ(families.size(), families2.size());
  for (size_t i = 0; i < families.size(); ++i) {
    EXPECT_EQ(families[i].name, families2[i].name);
    EXPECT_EQ(families[i].name.rfind("xtimer_", 0), 0u);
    const bool counter = families[i].type == prometheus::MetricType::Counter;
    const bool total = families[i].name.size() > 6 &&
                       families[i].name.compare(families[i].name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(counter, total) << families[i].name;
  }
}

TEST(AggregatorTest, IdentityConflictsAndHostileLabels) {
  Aggregator agg(Options());
  format::Identity bad = Id(0);
  bad.job = std::string("j\"o\nb\xff", 6);
  bad.host = std::string("h\"o\nst\xff", 7);
  agg.AddProcess(1, bad);
  agg.AddProcess(2, bad);
  Snapshot snap = agg.TakeSnapshot(kT0);
  EXPECT_EQ(snap.identity_conflicts, 1u);
  EXPECT_FALSE(snap.processes[0].hidden);
  EXPECT_TRUE(snap.processes[1].hidden);
  // One rule per kind of label (util/label.h): a job id, free text.
  EXPECT_EQ(snap.processes[0].job, "j_o_b_");
  EXPECT_EQ(snap.processes[0].host, "h\"o_st_");
  std::string text = Exposition(snap);
  EXPECT_NE(text.find("job=\"j_o_b_\""), std::string::npos) << text;
  EXPECT_NE(text.find("host=\"h\\\"o_st_\""), std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"2\""), std::string::npos);
}

// Identity bound to its owner (daemon/model/identity_claims.h, docs/security.md "Peers and
// identity").
// Uids 1000 and 1001 stand for two unprivileged users; 0 is root.
TEST(AggregatorIdentityTest, AnotherUidCannotTakeARankOfAJobItDoesNotOwn) {
  Aggregator agg(Options());
  ASSERT_NE(agg.AddProcess(Registrant{10, 0, "T"}, Id(1), nullptr), 0u);  // rank 1 of root's job
  // An impostor registers as rank 0 before the real rank 0 starts.
  EXPECT_EQ(agg.AddProcess(Registrant{20, 1000, "T"}, Id(0), nullptr), 0u);
  EXPECT_EQ(agg.refused("identity_owner"), 1u);
  ASSERT_NE(agg.AddProcess(Registrant{11, 0, "T"}, Id(0), nullptr), 0u);
  Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_EQ(snap.processes[1].pid, 11);
  EXPECT_EQ(snap.processes[1].uid, 0u);
  EXPECT_FALSE(snap.processes[1].hidden);
  EXPECT_EQ(snap.identity_conflicts, 0u);
}

TEST(AggregatorIdentityTest, LabelsAreComparedAsExported) {
  Aggregator agg(Options());
  format::Identity real = Id(1);
  real.job = "job_x";
  ASSERT_NE(agg.AddProcess(Registrant{10, 0, "T"}, real, nullptr), 0u);
  format::Identity spoof = Id(0);
  spoof.job = std::string("job\x01x");  // exported as job_x too
  EXPECT_EQ(agg.AddProcess(Registrant{20, 1000, ""}, spoof, nullptr), 0u);
  EXPECT_EQ(agg.refused("identity_owner"), 1u);
}

TEST(AggregatorIdentityTest, RootTakesAJobLabelFromAnUnprivilegedFirstComer) {
  Aggregator agg(Options());
  const auto impostor = agg.AddProcess(Registrant{20, 1000, ""}, Id(0), nullptr);
  ASSERT_NE(impostor, 0u);
  EXPECT_EQ(agg.AddProcess(Registrant{30, 1001, ""}, Id(0), nullptr), 0u);  // first uid wins
  std::vector<ProcessId> evicted;
  ASSERT_NE(agg.AddProcess(Registrant{11, 0, "T"}, Id(0), &evicted), 0u);
  EXPECT_EQ(evicted, std::vector<ProcessId>{impostor});
  EXPECT_EQ(agg.refused("identity_owner"), 2u);
  EXPECT_FALSE(agg.UpdateStatus(impostor, ProcessStatus{}));  // its connection must close
  Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 1u);
  EXPECT_EQ(snap.processes[0].pid, 11);
}

TEST(AggregatorIdentityTest, OneUidTwoTokensFirstLiveHolderKeepsTheRank) {
  Aggregator agg(Options());
  const auto first = agg.AddProcess(Registrant{20, 1000, "A"}, Id(0), nullptr);
  ASSERT_NE(first, 0u);
  EXPECT_EQ(agg.AddProcess(Registrant{21, 1000, "B"}, Id(0), nullptr), 0u);
  EXPECT_EQ(agg.refused("identity_token"), 1u);
  // The same token: a duplicate of the same job; the oldest wins, the other is hidden.
  ASSERT_NE(agg.AddProcess(Registrant{22, 1000, "A"}, Id(0), nullptr), 0u);
  EXPECT_EQ(agg.TakeSnapshot(kT0).identity_conflicts, 1u);
  // Once the holders exited, the next run of that user gets the rank.
  agg.MarkExited(first, ExitCause{}, kT0);
  agg.MarkExited(first + 1, ExitCause{}, kT0);
  EXPECT_NE(agg.AddProcess(Registrant{23, 1000, "B"}, Id(0), nullptr), 0u);
}

TEST(AggregatorIdentityTest, ARankLearnedLaterIsCheckedAndTheJobStaysAsRegistered) {
  Aggregator agg(Options());
  ASSERT_NE(agg.AddProcess(Registrant{20, 1000, "A"}, Id(0), nullptr), 0u);
  const auto late = agg.AddProcess(Registrant{21, 1000, "B"}, Id(-1), nullptr);
  ASSERT_NE(late, 0u);
  ProcessStatus st;
  st.identity = Id(-1);
  st.identity.job = "another-job";  // the ring may say anything: the job stays
  EXPECT_TRUE(agg.UpdateStatus(late, st));
  EXPECT_EQ(agg.TakeSnapshot(kT0).processes[1].job, "job");
  st.identity.rank = 0;  // learned from NCCL, or written by hand: the rank of another job
  st.identity.local_rank = 0;
  EXPECT_FALSE(agg.UpdateStatus(late, st));
  EXPECT_EQ(agg.refused("identity_token"), 1u);
  Snapshot snap = agg.TakeSnapshot(kT0);
  ASSERT_EQ(snap.processes.size(), 1u);
  EXPECT_EQ(snap.processes[0].pid, 20);
}

TEST(AggregatorTest, SeriesLimitCountsUnaggregatedRecords) {
  AggregatorOptions o = Options();
  o.max_series_per_process = 2;
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    auto r = MakeOp(Operation::kGemmEx, d, 10);
    agg.Ingest(id, &r, 1, kT0);
  }
  Snapshot snap = agg.TakeSnapshot(kT0);
  EXPECT_EQ(snap.processes[0].series.size(), 2u);
  EXPECT_EQ(snap.processes[0].unaggregated, 2u);
}

TEST(AggregatorTest, HistoryKeepsTheMostRecentRecords) {
  Aggregator agg(Options());  // history 16
  auto id = agg.AddProcess(1, Id(0));
  for (int i = 0; i < 40; ++i) {
    auto r = MakeOp(Operation::kMemset, DType::kU8, i);
    agg.Ingest(id, &r, 1, kT0);
  }
  auto h = agg.History({id});
  ASSERT_EQ(h.size(), 16u);
  EXPECT_EQ(h.front().duration_ns, 24);
  EXPECT_EQ(h.back().duration_ns, 39);
}

TEST(AggregatorTest, KernelNamesAreAssembledFromChunks) {
  Aggregator agg(Options());
  auto id = agg.AddProcess(1, Id(0));
  std::string name(150, 'k');
  name += "_end";
  std::vector<format::RecordSlot> parts;
  for (size_t off = 0, part = 0; off < name.size(); off += format::kNameChunk, ++part) {
    format::RecordSlot s;
    memset(&s, 0, sizeof(s));
    s.name.version = format::kRecordVersion;
    s.name.type = static_cast<uint8_t>(format::RecordType::kName);
    s.name.name_id = 7;
    s.name.part = static_cast<uint16_t>(part);
    s.name.length = static_cast<uint16_t>(std::min(format::kNameChunk, name.size() - off));
    memcpy(s.name.text, name.data() + off, s.name.length);
    if (off + format::kNameChunk >= name.size()) s.name.flags = format::kNameLast;
    parts.push_back(s);
  }
  agg.Ingest(id, parts.data(), parts.size(), kT0);
  EXPECT_EQ(agg.KernelName(id, 7), name);
  EXPECT_EQ(agg.KernelName(id, 8), "");
}

TEST(AggregatorTest, StaleHeartbeatMarksRankDown) {
  AggregatorOptions o = Options();
  o.stale_heartbeat_ns = 10 * kSec;
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  ProcessStatus st;
  st.identity = Id(0);
  st.heartbeat_ns = kT0;
  agg.UpdateStatus(id, st);
  EXPECT_TRUE(agg.TakeSnapshot(kT0 + 9 * kSec).processes[0].up);
  EXPECT_FALSE(agg.TakeSnapshot(kT0 + 11 * kSec).processes[0].up);
}

// Op records of `n` distinct series or of one series.
std::vector<format::RecordSlot> Ops(size_t n, bool distinct, uint64_t first_seq = 0) {
  std::vector<format::RecordSlot> out;
  for (size_t i = 0; i < n; ++i) {
    format::RecordSlot s = MakeOp(Operation::kMemcpyHtoD, DType::kF32, 1000);
    s.op.bytes = 4096;
    if (distinct) s.op.op = static_cast<uint16_t>(1000 + i);  // the aggregator keys on it as is
    s.op.seq = first_seq + i;  // tells records apart in the history
    out.push_back(s);
  }
  return out;
}

TEST(AggregatorBudgetTest, HistoryKeepsTheNewestRecordsAcrossChunks) {
  AggregatorOptions o = Options();
  o.history = 10000;  // three chunks of 4096
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  const auto ops = Ops(25000, false);
  agg.Ingest(id, ops.data(), ops.size(), kT0);
  const std::vector<format::OpRecord> h = agg.History({id});
  ASSERT_EQ(h.size(), 10000u);
  EXPECT_EQ(h.front().seq, 15000u);
  EXPECT_EQ(h.back().seq, 24999u);
  EXPECT_EQ(agg.TakeSnapshot(kT0).processes[0].history, 10000u);
}

TEST(AggregatorBudgetTest, AFullHistoryReusesItsChunks) {
  AggregatorOptions o = Options();
  o.history = 100000;  // 24.4 chunks of 4096
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  for (uint64_t first = 0; first < 400000; first += 1000) {
    const auto ops = Ops(1000, false, first);
    agg.Ingest(id, ops.data(), ops.size(), kT0);
  }
  // The newest records, contiguous, in at most the chunks they span plus one spare.
  EXPECT_LE(agg.history_chunks_allocated(), 27u);
  const std::vector<format::OpRecord> h = agg.History({id});
  ASSERT_EQ(h.size(), 100000u);
  EXPECT_EQ(h.front().seq, 300000u);
  for (size_t i = 1; i < h.size(); ++i) ASSERT_EQ(h[i].seq, h[i - 1].seq + 1);
}

TEST(AggregatorBudgetTest, MemoryIsHandedBackOnlyWhenReallyFreed) {
  AggregatorOptions o = Options();
  o.history = 10000;
  o.exited_grace_ns = kSec;
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  for (int round = 0; round < 20; ++round) {  // steady ingest, rotating history, scrapes
    const auto ops = Ops(5000, false, round * 5000);
    agg.Ingest(id, ops.data(), ops.size(), kT0);
    agg.TakeSnapshot(kT0);
    agg.ExpireExited(kT0);
  }
  EXPECT_EQ(agg.memory_returns(), 0u);
  agg.MarkExited(id, ExitCause(), kT0);
  EXPECT_EQ(agg.ExpireExited(kT0 + 2 * kSec), 1u);  // its grace is over: really freed
  EXPECT_EQ(agg.memory_returns(), 1u);
}

TEST(AggregatorBudgetTest, HistoriesShrinkOldestFirstUnderTheBudget) {
  AggregatorOptions o = Options();
  o.history = 100000;
  o.memory_budget_bytes = size_t{8} << 20;  // 16 history chunks
  Aggregator agg(o);
  auto id = agg.AddProcess(1, Id(0));
  const auto ops = Ops(100000, false);
  agg.Ingest(id, ops.data(), ops.size(), kT0);
  EXPECT_LE(agg.memory_bytes(), o.memory_budget_bytes);
  const std::vector<format::OpRecord> h = agg.History({id});
  ASSERT_FALSE(h.empty());
  EXPECT_LT(h.size(), 100000u);
  EXPECT_EQ(h.back().seq, 99999u);  // the newest records stay
  for (size_t i = 1; i < h.size(); ++i) ASSERT_EQ(h[i].seq, h[i - 1].seq + 1);
  EXPECT_GT(agg.TakeSnapshot(kT0).history_shrinks, 0u);
}

TEST(AggregatorBudgetTest, ALateProcessStillGetsSeriesWhenOthersFilledTheBudget) {
  AggregatorOptions o = Options();
  o.memory_budget_bytes = size_t{64} << 20;  // shares of 256 KiB
  Aggregator agg(o);
  std::vector<ProcessId> hostile;
  for (int i = 0; i < 8; ++i) {
    hostile.push_back(agg.AddProcess(10 + i, Id(i)));
    const auto ops = Ops(600, true);
    agg.Ingest(hostile.back(), ops.data(), ops.size(), kT0);
  }
  EXPECT_LE(agg.memory_bytes(), o.memory_budget_bytes + 8 * (16 << 10));
  auto late = agg.AddProcess(99, Id(9));
  const auto ops = Ops(3, true);
  agg.Ingest(late, ops.data(), ops.size(), kT0);
  const Snapshot snap = agg.TakeSnapshot(kT0);
  EXPECT_EQ(snap.processes.back().series.size(), 3u);
  EXPECT_GT(snap.processes.front().unaggregated, 0u);  // the hostile ones were cut off
  EXPECT_LE(snap.memory_bytes, o.memory_budget_bytes + 9 * (16 << 10));
}

TEST(AggregatorBudgetTest, MemoryIsReturnedWhenProcessesLeave) {
  AggregatorOptions o = Options();
  o.history = 100000;
  o.exited_grace_ns = kSec;
  Aggregator agg(o);
  std::vector<ProcessId> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(agg.AddProcess(10 + i, Id(i)));
    const auto ops = Ops(20000, true);
    agg.Ingest(ids.back(), ops.data(), ops.size(), kT0);
  }
  EXPECT_GT(agg.memory_bytes(), size_t{4} << 20);
  for (auto id : ids) agg.MarkExited(id, ExitCause(), kT0);
  EXPECT_GT(agg.memory_bytes(), size_t{4} << 20);  // kept for the grace period
  EXPECT_EQ(agg.ExpireExited(kT0 + 2 * kSec), 4u);
  EXPECT_EQ(agg.memory_bytes(), 0u);
}

TEST(AggregatorBudgetTest, ExitedProcessesGoFirstUnderTheBudget) {
  AggregatorOptions o = Options();
  o.history = 100000;
  o.memory_budget_bytes = size_t{16} << 20;
  Aggregator agg(o);
  auto old_id = agg.AddProcess(1, Id(0));
  auto ops = Ops(40000, false);
  agg.Ingest(old_id, ops.data(), ops.size(), kT0);
  agg.MarkExited(old_id, ExitCause(), kT0);
  auto live = agg.AddProcess(2, Id(1));
  ops = Ops(100000, false);
  agg.Ingest(live, ops.data(), ops.size(), kT0);
  EXPECT_EQ(agg.process_count(), 1u);  // the exited one was dropped before any history shrank
  EXPECT_LE(agg.memory_bytes(), o.memory_budget_bytes);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
