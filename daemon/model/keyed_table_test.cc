#include "daemon/model/keyed_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>

namespace xtimer {
namespace daemon {
namespace {

struct Item {
  explicit Item(int v) : value(v) {}
  int value;
};

TEST(KeyedTableTest, AnEmptyTableFindsNothing) {
  KeyedTable<Item> t;
  EXPECT_EQ(t.Find(0), nullptr);
  EXPECT_EQ(t.Find(~uint64_t{0}), nullptr);
  EXPECT_EQ(t.size(), 0u);
}

// Keys as ingest builds them (kind << 40 | op << 16 | dtype << 8 | size class) and keys that
// differ only in high bits: every one is found after the index grew many times, none is found
// twice, and addresses handed out before a growth stay valid.
TEST(KeyedTableTest, FindsEveryKeyAcrossGrowth) {
  KeyedTable<Item> t;
  std::vector<std::pair<uint64_t, Item*>> added;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t key = i % 2 ? (uint64_t{1} << 40) | (uint64_t(i) << 16) | (i % 5)
                               : uint64_t(i) << 50;
    Item* item = t.Add(key, std::make_unique<Item>(i));
    ASSERT_EQ(item->value, i);
    added.emplace_back(key, item);
  }
  EXPECT_EQ(t.size(), 1000u);
  for (const auto& a : added) {
    ASSERT_EQ(t.Find(a.first), a.second) << a.first;
  }
  EXPECT_EQ(t.Find(12345), nullptr);
  EXPECT_EQ(t.Find((uint64_t{1} << 40) | 2), nullptr);
  std::set<uint64_t> keys;
  t.ForEach([&](uint64_t key, const Item& item) {
    keys.insert(key);
    EXPECT_EQ(t.Find(key), &item);
  });
  EXPECT_EQ(keys.size(), 1000u);
}

TEST(KeyedTableTest, KeyZeroIsAKeyLikeAnyOther) {
  KeyedTable<Item> t;
  EXPECT_EQ(t.Find(0), nullptr);
  Item* zero = t.Add(0, std::make_unique<Item>(7));
  EXPECT_EQ(t.Find(0), zero);
  EXPECT_EQ(t.Find(1), nullptr);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
