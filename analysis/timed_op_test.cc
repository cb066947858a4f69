// TimedOpOfRecord, the one copy from a record to the analysis's TimedOp: the ring's OpRecord (the
// live daemon) and the timeline's EventRecord (dumps read by the CLI) give the same TimedOp for
// the same op, every field carried.
#include "analysis/analysis.h"
#include "format/record.h"
#include "gtest/gtest.h"
#include "timeline/format.h"

namespace xtimer {
namespace analysis {
namespace {

template <typename Record>
Record Filled() {
  Record r{};
  r.op = 7;
  r.kind = 2;
  r.dtype = 5;
  r.device = 3;
  r.root = 1;
  r.peer = 4;
  r.comm_id = 0xC0FFEE;
  r.seq = 42;
  r.bytes = 1 << 20;
  r.cpu_launch_ns = 1000;
  r.gpu_start_ns = 2000;
  r.duration_ns = 300;
  return r;
}

void ExpectCarried(const TimedOp& t) {
  EXPECT_EQ(t.op, 7);
  EXPECT_EQ(t.kind, 2);
  EXPECT_EQ(t.dtype, 5);
  EXPECT_EQ(t.device, 3);
  EXPECT_EQ(t.root, 1);
  EXPECT_EQ(t.peer, 4);
  EXPECT_EQ(t.comm_size, 8);
  EXPECT_EQ(t.comm_id, 0xC0FFEEu);
  EXPECT_EQ(t.seq, 42u);
  EXPECT_EQ(t.count, 262144u);
  EXPECT_EQ(t.bytes, 1u << 20);
  EXPECT_EQ(t.issue_ns, 1000);
  EXPECT_EQ(t.start_ns, 2000);
  EXPECT_EQ(t.duration_ns, 300);
}

TEST(TimedOpTest, RingAndTimelineRecordsGiveTheSameOp) {
  const TimedOp live = TimedOpOfRecord(Filled<format::OpRecord>(), 8, 262144);
  const TimedOp dumped = TimedOpOfRecord(Filled<timeline::EventRecord>(), 8, 262144);
  ExpectCarried(live);
  ExpectCarried(dumped);
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer
