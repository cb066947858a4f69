#include "daemon/model/memory_budget.h"

#include <gtest/gtest.h>

namespace xtimer {
namespace daemon {
namespace {

TEST(MemoryBudgetTest, ChargesProcessAndTotalAndNotesFreedBytes) {
  MemoryBudget b(4000, 1000);
  size_t p = 0, q = 0;
  b.Charge(&p, 600);
  b.Charge(&q, 300);
  EXPECT_EQ(p, 600u);
  EXPECT_EQ(b.total(), 900u);
  b.Charge(&p, -200);
  EXPECT_EQ(p, 400u);
  EXPECT_EQ(b.total(), 700u);
}

TEST(MemoryBudgetTest, GrowthStopsAtTheCapTheBudgetAndAboveHighWaterAtTheShare) {
  MemoryBudget b(4096 * 64, 100000);
  EXPECT_EQ(b.HighWater(), 4096u * 48);
  size_t p = 0;
  EXPECT_TRUE(b.MayGrow(p, 1000, 1));
  EXPECT_FALSE(b.MayGrow(p, 100001, 1)) << "past one process's cap";
  size_t hog = 0;
  for (int i = 0; i < 3; ++i) b.Charge(&hog, 4096 * 16 - 1);  // just below the high water
  EXPECT_FALSE(b.AboveHighWater());
  // Above the high-water mark a process may grow within budget / (4 * max(64, live)) = 1024.
  EXPECT_TRUE(b.MayGrow(p, 1024, 1));
  EXPECT_FALSE(b.MayGrow(p, 1025, 1));
  EXPECT_FALSE(b.MayGrow(hog, 10, 1)) << "the hog is past its share";
  // With more live processes the share is smaller.
  EXPECT_FALSE(b.MayGrow(p, 1024, 128));
  EXPECT_TRUE(b.MayGrow(p, 512, 128));
}

TEST(MemoryBudgetTest, HistoryChangesAreCountedAndCharged) {
  MemoryBudget b(size_t{1} << 30, size_t{1} << 30);
  OpHistory::Change c;
  c.allocated = 3;
  c.freed = 1;
  c.shrunk = 1;
  EXPECT_EQ(b.NoteHistory(c), 2 * static_cast<int64_t>(OpHistory::kChunkBytes));
  EXPECT_EQ(b.history_chunks_allocated(), 3u);
  EXPECT_EQ(b.history_shrinks(), 1u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
