#include "daemon/model/comm_progress.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

format::InflightRow Row(uint64_t comm, uint64_t issued, uint64_t completed, int64_t oldest_ns,
                        int device = 0) {
  format::InflightRow row;
  row.comm_id = comm;
  row.last_issued_seq = issued;
  row.last_completed_seq = completed;
  row.oldest_launch_ns = oldest_ns;
  row.device = device;
  return row;
}

TEST(CommProgressTest, RowsOfOneCommunicatorKeepTheLaggingDevice) {
  format::InflightRow into = Row(7, 10, 9, 500, 0);
  MergeRow(Row(7, 12, 6, 300, 1), &into);
  EXPECT_EQ(into.last_issued_seq, 12u);
  EXPECT_EQ(into.last_completed_seq, 6u);
  EXPECT_EQ(into.oldest_launch_ns, 300);
  MergeRow(Row(7, 1, 8, 0, 2), &into);  // nothing in flight there: the oldest stays
  EXPECT_EQ(into.oldest_launch_ns, 300);
}

TEST(CommProgressTest, RowZeroCountsAddUp) {
  format::InflightRow into = Row(0, 10, 9, 0);
  MergeRow(Row(0, 5, 4, 0, 1), &into);
  EXPECT_EQ(into.last_issued_seq, 15u);
  EXPECT_EQ(into.last_completed_seq, 13u);
}

TEST(CommProgressTest, TheOldestCollectiveInFlightBringsItsDevice) {
  format::InflightRow into = Row(7, 3, 2, 500, 0);
  into.oldest.state = format::InflightState::kStarted;
  into.oldest.launch_ns = 500;
  format::InflightRow other = Row(7, 3, 2, 400, 3);
  other.oldest.state = format::InflightState::kQueued;
  other.oldest.launch_ns = 400;
  MergeRow(other, &into);
  EXPECT_EQ(into.oldest.state, format::InflightState::kQueued);
  EXPECT_EQ(into.device, 3);
}

TEST(CommProgressTest, AFullTableEvictsTheLeastRecentlyActiveWithoutARow) {
  CommTable comms;
  for (uint64_t id = 1; id <= 3; ++id) {
    CommState* c = FindOrAddComm(&comms, id, 3);
    ASSERT_NE(c, nullptr);
    c->last_activity_ns = static_cast<int64_t>(id);
  }
  comms[1].has_row = true;  // the oldest is still in flight: the next oldest goes
  ASSERT_NE(FindOrAddComm(&comms, 4, 3), nullptr);
  EXPECT_EQ(comms.size(), 3u);
  EXPECT_EQ(comms.count(2), 0u);
  EXPECT_EQ(FindOrAddComm(&comms, 1, 3), &comms[1]);  // found, not added
  for (auto& c : comms) c.second.has_row = true;
  EXPECT_EQ(FindOrAddComm(&comms, 5, 3), nullptr);  // every one in flight: no room
}

TEST(CommProgressTest, TheLargestCommunicatorNamesTheRank) {
  CommTable comms;
  uint64_t id = 0;
  EXPECT_EQ(NamingComm(comms, &id), nullptr);
  comms[5] = CommState{};
  comms[5].comm_rank = 1;
  comms[5].comm_size = 2;
  comms[9].comm_rank = 3;
  comms[9].comm_size = 8;
  comms[9].parent_id = 5;  // split, but larger
  comms[4].comm_rank = 0;
  comms[4].comm_size = 8;
  comms[4].parent_id = 5;
  comms[6].comm_size = 0;  // size unknown: never names
  ASSERT_NE(NamingComm(comms, &id), nullptr);
  EXPECT_EQ(id, 4u);  // equal size and both split: the lower id
  comms[11].comm_rank = 2;
  comms[11].comm_size = 8;  // made by an init call
  EXPECT_EQ(NamingComm(comms, &id)->comm_rank, 2);
  EXPECT_EQ(id, 11u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
