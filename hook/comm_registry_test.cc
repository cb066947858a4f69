#include "hook/comm_registry.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace hook {
namespace {

TEST(CommIdTest, DeterministicAndDistinct) {
  unsigned char id_a[128] = {1, 2, 3};
  unsigned char id_b[128] = {1, 2, 4};
  uint64_t a = CommIdFromUniqueId(id_a, sizeof(id_a));
  EXPECT_EQ(a, CommIdFromUniqueId(id_a, sizeof(id_a)));  // every rank computes the same id
  EXPECT_NE(a, CommIdFromUniqueId(id_b, sizeof(id_b)));
  EXPECT_NE(a, 0u);
  // Split children: by parent, per-parent counter and color.
  EXPECT_EQ(CommIdForSplit(a, 0, 1), CommIdForSplit(a, 0, 1));
  EXPECT_NE(CommIdForSplit(a, 0, 1), CommIdForSplit(a, 0, 2));
  EXPECT_NE(CommIdForSplit(a, 0, 1), CommIdForSplit(a, 1, 1));
  // Shrink: the exclude list's order does not matter.
  int ex1[] = {3, 1};
  int ex2[] = {1, 3};
  int ex3[] = {1};
  EXPECT_EQ(CommIdForShrink(a, 0, ex1, 2), CommIdForShrink(a, 0, ex2, 2));
  EXPECT_NE(CommIdForShrink(a, 0, ex1, 2), CommIdForShrink(a, 0, ex3, 1));
  EXPECT_NE(CommIdForInitAll(10, 0), CommIdForInitAll(10, 1));
}

TEST(CommRegistryTest, InsertLookupResolveRemove) {
  static CommRegistry reg;  // large: keep it off the stack
  int c1, c2;
  EXPECT_EQ(reg.Lookup(&c1), nullptr);
  CommEntry* e1 = reg.Insert(&c1, 42, 0, CommOrigin::kInit);
  CommEntry* e2 = reg.Insert(&c2, 43, 42, CommOrigin::kSplit);
  EXPECT_EQ(reg.Lookup(&c1), e1);
  EXPECT_EQ(reg.Lookup(&c2), e2);
  EXPECT_EQ(reg.unresolved.load(), 2);
  EXPECT_EQ(e1->NextP2PSeq(1), 0u);  // size unknown yet
  EXPECT_TRUE(reg.Resolve(e1, 0, 4, 0));
  EXPECT_FALSE(reg.Resolve(e1, 0, 4, 0));
  EXPECT_EQ(reg.unresolved.load(), 1);
  EXPECT_EQ(e1->NextCollectiveSeq(), 1u);
  EXPECT_EQ(e1->NextCollectiveSeq(), 2u);
  EXPECT_EQ(e1->NextP2PSeq(1), 1u);
  EXPECT_EQ(e1->NextP2PSeq(1), 2u);
  EXPECT_EQ(e1->NextP2PSeq(2), 1u);  // per peer
  EXPECT_EQ(e1->NextP2PSeq(4), 0u);  // out of range
  int n = 0;
  reg.ForEachUnresolved([&](const void* comm, CommEntry* e) {
    EXPECT_EQ(comm, &c2);
    EXPECT_EQ(e, e2);
    ++n;
  });
  EXPECT_EQ(n, 1);
  reg.Remove(&c1);
  EXPECT_EQ(reg.Lookup(&c1), nullptr);
  EXPECT_EQ(reg.Lookup(&c2), e2);  // found past the tombstone
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
