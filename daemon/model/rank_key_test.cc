#include "daemon/model/rank_key.h"

#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

namespace xtimer {
namespace daemon {
namespace {

TEST(RankKeyTest, TheWholeProcessAndEachDeviceAreDistinctRanks) {
  const RankKey whole{7, kWholeProcess};
  const RankKey dev0{7, 0};
  const RankKey dev1{7, 1};
  const RankKey other{8, kWholeProcess};
  std::set<RankKey> ordered{dev1, other, whole, dev0};
  EXPECT_EQ(ordered.size(), 4u);
  EXPECT_EQ(*ordered.begin(), whole);  // a process's ranks sort together, whole process first
  EXPECT_EQ(*ordered.rbegin(), other);
  std::unordered_set<RankKey, RankKeyHash> hashed{whole, dev0, dev1, other, RankKey{7, 0}};
  EXPECT_EQ(hashed.size(), 4u);
}

TEST(RankKeyTest, PackedKeepsProcessAndDeviceApart) {
  EXPECT_NE((RankKey{1, 0}).Packed(), (RankKey{0, 65535 - 1}).Packed());
  EXPECT_NE((RankKey{1, kWholeProcess}).Packed(), (RankKey{0, kWholeProcess}).Packed());
  EXPECT_EQ((RankKey{3, 2}).Packed(), (uint64_t{3} << 16) | 3u);
  EXPECT_EQ((RankKey{3, kWholeProcess}).Packed(), uint64_t{3} << 16);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
