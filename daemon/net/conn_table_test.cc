#include "daemon/net/conn_table.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

TEST(ConnTableTest, PeerCapEvictsThatPeersOldestPendingFirst) {
  ConnTable t(10, 3);
  std::vector<Eviction> ev;
  ASSERT_TRUE(t.Admit(1, "a", &ev));
  ASSERT_TRUE(t.Admit(2, "b", &ev));
  ASSERT_TRUE(t.Admit(3, "a", &ev));
  ASSERT_TRUE(t.Admit(4, "a", &ev));
  t.SetYield(1, Yield::kNever);  // being answered: never gives way
  ASSERT_TRUE(t.Admit(5, "a", &ev));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 3u);
  EXPECT_STREQ(ev[0].cause, "peer_limit");
  EXPECT_EQ(t.peer_count("a"), 3u);
  EXPECT_EQ(t.peer_count("b"), 1u);
}

TEST(ConnTableTest, GlobalCapEvictsPendingBeforeGrpcAndRefusesWhenNothingGivesWay) {
  ConnTable t(3, 3);
  std::vector<Eviction> ev;
  ASSERT_TRUE(t.Admit(1, "a", &ev));
  ASSERT_TRUE(t.Admit(2, "b", &ev));
  ASSERT_TRUE(t.Admit(3, "c", &ev));
  t.SetYield(1, Yield::kThen);
  ASSERT_TRUE(t.Admit(4, "d", &ev));  // 2 (pending) goes before 1 (gRPC, older)
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 2u);
  EXPECT_STREQ(ev[0].cause, "connection_limit");
  t.SetYield(3, Yield::kNever);
  t.SetYield(4, Yield::kNever);
  ev.clear();
  ASSERT_TRUE(t.Admit(5, "e", &ev));  // only the gRPC one can give way
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 1u);
  t.SetYield(5, Yield::kNever);
  ev.clear();
  EXPECT_FALSE(t.Admit(6, "f", &ev));
  EXPECT_TRUE(ev.empty());
  EXPECT_EQ(t.size(), 3u);
  t.Remove(3);
  EXPECT_TRUE(t.Admit(6, "f", &ev));
  EXPECT_EQ(t.count(Yield::kFirst), 1u);
}

TEST(ConnTableTest, AnAnsweredConnectionGivesWayFirstAndQuietly) {
  ConnTable t(3, 3);
  std::vector<Eviction> ev;
  ASSERT_TRUE(t.Admit(1, "a", &ev));
  ASSERT_TRUE(t.Admit(2, "b", &ev));
  ASSERT_TRUE(t.Admit(3, "c", &ev));
  t.SetYield(1, Yield::kThen);
  t.SetYield(3, Yield::kQuietly);
  ASSERT_TRUE(t.Admit(4, "d", &ev));  // 3 (answered) before 2 (pending, older)
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 3u);
  EXPECT_EQ(ev[0].cause, nullptr);
  ev.clear();
  ASSERT_TRUE(t.Admit(5, "e", &ev));  // then the oldest pending: 2
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 2u);
  EXPECT_STREQ(ev[0].cause, "connection_limit");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
