#include "daemon/model/live_ops.h"

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kMs = 1000000;

format::OpRecord Op(format::OpKind kind, format::Operation op, uint64_t comm, uint64_t seq,
                    int64_t start, int64_t dur) {
  format::OpRecord r;
  memset(&r, 0, sizeof(r));
  r.kind = static_cast<uint8_t>(kind);
  r.op = static_cast<uint16_t>(op);
  r.dtype = static_cast<uint8_t>(format::DType::kF32);
  r.device = 3;
  r.comm_id = comm;
  r.seq = seq;
  r.comm_size = comm != 0 ? 2 : 0;
  r.count = comm != 0 ? 256 : 0;
  r.bytes = comm != 0 ? 1024 : 0;
  r.root = r.peer = -1;
  r.cpu_launch_ns = start - 1;
  r.gpu_start_ns = start;
  r.duration_ns = dur;
  return r;
}

TEST(LiveOpsTest, SendReceiveEndsAreKeptPerCommunicatorNewestLast) {
  LiveOps ops;
  for (uint64_t i = 1; i <= kP2PCadence + 10; ++i) {
    const int64_t t = static_cast<int64_t>(i) * 100 * kMs;
    ops.Add(RankKey{7}, Op(format::OpKind::kP2P, i % 2 ? format::Operation::kSend : format::Operation::kRecv,
                  0xb, i, t, 5 * kMs));
  }
  auto copy = ops.Copy({RankKey{7}});
  const CommOps& c = copy[RankKey{7}].comms.at(0xb);
  EXPECT_TRUE(c.arrivals.empty()) << "sends and receives are not collective arrivals";
  ASSERT_EQ(c.p2p_ends.size(), kP2PCadence);
  EXPECT_EQ(c.p2p_ends.front(), 11 * 100 * kMs + 5 * kMs);
  EXPECT_EQ(c.p2p_ends.back(), static_cast<int64_t>(kP2PCadence + 10) * 100 * kMs + 5 * kMs);
  EXPECT_TRUE(std::is_sorted(c.p2p_ends.begin(), c.p2p_ends.end()));
}

TEST(LiveOpsTest, RingKeepsTheNewestArrivalsAndCountersKeepEverything) {
  LiveOps ops(/*ring_size=*/4, /*max_comms=*/2);
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    const int64_t t = static_cast<int64_t>(seq) * 100 * kMs;
    ops.Add(RankKey{7}, Op(format::OpKind::kMatmul, format::Operation::kGemmEx, 0, 0, t, 30 * kMs));
    ops.Add(RankKey{7}, Op(format::OpKind::kCollective, format::Operation::kAllReduce, 0xa, seq,
                  t + 50 * kMs, 10 * kMs));
  }
  auto copy = ops.Copy({RankKey{7}});
  ASSERT_EQ(copy.size(), 1u);
  const ProcessOps& p = copy[RankKey{7}];
  EXPECT_EQ(p.device, 3);
  EXPECT_TRUE(p.last.valid);
  EXPECT_EQ(p.last.seq, 10u);
  const CommOps& c = p.comms.at(0xa);
  ASSERT_EQ(c.arrivals.size(), 4u);
  EXPECT_EQ(c.arrivals.front().seq, 7u);
  EXPECT_EQ(c.arrivals.back().seq, 10u);
  EXPECT_EQ(c.counters.instances, 10u);
  EXPECT_NEAR(c.counters.time_s, 0.1, 1e-9);
  // From the second collective on: 30 ms GEMM and 60 ms idle between collectives.
  EXPECT_NEAR(c.counters.busy_before_s, 9 * 0.030, 1e-9);
  EXPECT_NEAR(c.counters.idle_before_s, 9 * 0.060, 1e-9);
  EXPECT_NEAR(c.counters.bus_bytes, 10 * 1024.0, 1e-6);  // AllReduce on 2 ranks: factor 1
  EXPECT_EQ(c.new_slices.size(), 10u);
  // New slices are handed over once.
  EXPECT_TRUE(ops.Copy({RankKey{7}})[RankKey{7}].comms.at(0xa).new_slices.empty());
}

TEST(LiveOpsTest, CommunicatorsAndProcessesAreBounded) {
  LiveOps ops(4, 2);
  ops.Add(RankKey{1}, Op(format::OpKind::kCollective, format::Operation::kAllReduce, 0xa, 1, 100, 10));
  ops.Add(RankKey{1}, Op(format::OpKind::kCollective, format::Operation::kAllReduce, 0xb, 1, 200, 10));
  ops.Add(RankKey{1}, Op(format::OpKind::kCollective, format::Operation::kAllReduce, 0xc, 1, 300, 10));
  ops.Add(RankKey{2}, Op(format::OpKind::kCollective, format::Operation::kAllReduce, 0xa, 1, 100, 10));
  size_t forgotten = 0;
  auto copy = ops.Copy({RankKey{1}}, &forgotten);
  ASSERT_EQ(copy[RankKey{1}].comms.size(), 2u);
  EXPECT_EQ(copy[RankKey{1}].comms.count(0xa), 0u);  // the least recent went
  EXPECT_EQ(ops.process_count(), 1u);       // process 2 is gone from the aggregator
  // What forgetting it freed is reported (the daemon returns it to the system): its ring of one
  // arrival and one slice at least.
  EXPECT_GE(forgotten, sizeof(analysis::Arrival) + sizeof(Slice));
  forgotten = 0;
  ops.Copy({RankKey{1}}, &forgotten);
  EXPECT_EQ(forgotten, 0u);  // nothing more to forget
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
