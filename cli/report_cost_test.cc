#include "cli/report_cost.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

timeline::Metadata File(int pid, int rank, int device, bool with_cost) {
  timeline::Metadata m;
  m.job = "j";
  m.node = "n0";
  m.pid = pid;
  m.rank = rank;
  m.world_size = 4;
  m.device = device;
  m.dump_time_ns = 11000000000;  // 10 s after the hook started
  if (with_cost) {
    m.hook.present = true;
    m.hook.start_ns = 1000000000;
    m.hook.own_ns = 50000000;  // 50 ms of 10 s: 0.5%
    m.hook.budget_ppm = 10000;
    m.hook.calls = {0, 300, 100};
    m.hook.timed = {0, 20, 100};
  }
  return m;
}

TEST(ReportCostTest, OneRowPerProcessFromTheMetadata) {
  // One process driving two devices (two files, the same figures), one more process, and one
  // file from an older daemon.
  const std::vector<timeline::Metadata> files = {File(42, 1, 0, true), File(42, 2, 1, true),
                                                 File(41, 0, 0, true), File(43, 3, 0, false)};
  int unknown = -1;
  const std::vector<report::CostRow> rows = HookCostRows(files, &unknown);
  EXPECT_EQ(unknown, 1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[0].node, "n0");
  EXPECT_DOUBLE_EQ(rows[0].own_share, 0.005);
  EXPECT_DOUBLE_EQ(rows[0].budget, 0.01);
  EXPECT_EQ(rows[0].calls, 400u);
  EXPECT_EQ(rows[0].timed, 120u);
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
