#include "cli/rank_progress.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace cli {
namespace {

// A daemon's HangCheck answer carries each in-flight collective's state; `issued` (left untimed
// by the overhead budget: in flight, started or queued unknown) must stay in flight.
TEST(RankProgressTest, EveryStateOfAnArrivalMapsToTheAnalysisOne) {
  const struct {
    CollectiveArrival::State proto;
    analysis::OpState want;
  } cases[] = {{CollectiveArrival::completed, analysis::OpState::kCompleted},
               {CollectiveArrival::started, analysis::OpState::kStarted},
               {CollectiveArrival::queued, analysis::OpState::kQueued},
               {CollectiveArrival::issued, analysis::OpState::kIssued}};
  for (const auto& c : cases) {
    CollectiveArrival a;
    a.set_comm_id("0x1");
    a.set_seq(7);
    a.set_state(c.proto);
    const analysis::Arrival r = ArrivalFromProto(a, 1000000000000);
    EXPECT_EQ(r.state, c.want) << c.proto;
    EXPECT_EQ(r.seq, 7u);
    EXPECT_EQ(r.comm_id, 1u);
  }
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
