// NVTX records through the daemon into a dump: the aggregator keeps a process's NVTX events and
// strings (daemon/model/nvtx_history.h), and a history dump writes those that meet its window
// into the timeline file (kTagNvtx) with their strings in its string table.
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/base/test_util.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/model/aggregator.h"
#include "format/record.h"
#include "timeline/timeline_io.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

format::RecordSlot Nvtx(format::NvtxEvent event, uint32_t name, uint32_t domain, int64_t start,
                        int64_t end, int32_t depth) {
  format::RecordSlot s;
  std::memset(&s, 0, sizeof(s));
  format::NvtxRecord& r = s.nvtx;
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  r.event = static_cast<uint8_t>(event);
  r.tid = 99;
  r.name_id = name;
  r.domain_id = domain;
  r.start_ns = start;
  r.end_ns = end;
  r.depth = depth;
  return s;
}

TEST(NvtxDumpTest, TheDumpCarriesTheNvtxEventsOfItsWindowWithTheirStrings) {
  const std::string tmp = testing::MakeTempDir("nvtxdump"), root = tmp + "/root";
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  Aggregator agg(AggregatorOptions(), RealtimeNs());
  format::Identity id;
  id.job = "job1";
  id.rank = 0;
  id.world_size = 1;
  const ProcessId pid = agg.AddProcess(4242, id);
  const int64_t t0 = RealtimeNs() - 1000000000;
  std::vector<format::RecordSlot> v;
  for (const char* s : {"step", "forward", "my.domain", "old"}) {
    const uint32_t n = static_cast<uint32_t>(v.size()) + 1;
    v.push_back(format::NamePart(n, s, 0, format::RecordType::kNvtxString));
  }
  for (int i = 0; i < 10; ++i) {  // ops from t0 to t0 + 9000: the dump's window
    format::RecordSlot s = testing::MakeOp(format::Operation::kGemmEx, format::DType::kBF16, 100);
    s.op.cpu_launch_ns = t0 + 1000 * i;
    v.push_back(s);
  }
  using format::NvtxEvent;
  v.push_back(Nvtx(NvtxEvent::kRange, 2, 3, t0 + 1000, t0 + 2000, 1));   // forward, my.domain
  v.back().nvtx.category = 3;  // kept (a Python span's kind, analysis/host_spans.h)
  v.push_back(Nvtx(NvtxEvent::kRange, 1, 0, t0 - 500, t0 + 9500, 0));    // step, around them
  v.back().nvtx.category = 70000;  // beyond the entry's u16: 0
  v.push_back(Nvtx(NvtxEvent::kRange, 4, 0, t0 - 90000, t0 - 80000, 0));  // old: before it
  agg.Ingest(pid, v.data(), v.size(), RealtimeNs());

  DumpManager dumps(&agg, root, "node", RealtimeNs);
  DumpRequest q;
  q.dir = root + "/d";
  q.history = 10;
  q.dump_time_ns = RealtimeNs();
  DumpStatus st;
  std::string error;
  ASSERT_EQ(dumps.Start(q, &st, &error), DumpError::kNone) << error;
  ASSERT_EQ(st.files.size(), 1u);
  const timeline::ReadResult r = timeline::ReadTimelineMetadata(st.files[0].path);
  ASSERT_TRUE(r.ok) << r.error;
  const timeline::Metadata& m = r.metadata;
  ASSERT_EQ(m.nvtx.size(), 2u);  // "old" ended before the window
  EXPECT_EQ(m.strings.at(m.nvtx[0].name), "forward");
  EXPECT_EQ(m.strings.at(m.nvtx[0].domain), "my.domain");
  EXPECT_EQ(m.nvtx[0].depth, 1);
  EXPECT_EQ(m.nvtx[0].start_ns, t0 + 1000);
  EXPECT_EQ(m.nvtx[0].tid, 99u);
  EXPECT_EQ(m.nvtx[0].category, 3u);
  EXPECT_EQ(m.nvtx[1].category, 0u);
  EXPECT_EQ(m.strings.at(m.nvtx[1].name), "step");
  EXPECT_EQ(m.nvtx[1].domain, 0u);
  EXPECT_EQ(m.nvtx[1].end_ns, t0 + 9500);
  testing::RemoveTree(tmp);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
