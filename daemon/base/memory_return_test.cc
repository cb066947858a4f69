#include "daemon/base/memory_return.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kSec = 1000000000;
constexpr int64_t kT0 = 1000 * kSec;  // a monotonic time far from 0

TEST(MemoryReturnerTest, NothingFreedNothingReturned) {
  MemoryReturner r;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(r.MaybeReturn(kT0 + i * kSec));
  EXPECT_EQ(r.returns(), 0u);
}

TEST(MemoryReturnerTest, LargeFreesAreReturnedAtOnce) {
  MemoryReturner r;
  r.NoteFreed(1);
  EXPECT_TRUE(r.MaybeReturn(kT0));
  r.NoteFreed(MemoryReturner::kReturnAfterBytes - 1);
  EXPECT_FALSE(r.Pressing());
  EXPECT_FALSE(r.MaybeReturn(kT0 + 1));  // small, within the second
  r.NoteFreed(1);
  EXPECT_TRUE(r.Pressing());
  EXPECT_TRUE(r.MaybeReturn(kT0 + 2));  // large: at once
  EXPECT_FALSE(r.Pressing());
  EXPECT_EQ(r.returns(), 2u);
}

TEST(MemoryReturnerTest, SmallFreesWaitASecond) {
  MemoryReturner r;
  r.NoteFreed(4096);
  EXPECT_TRUE(r.MaybeReturn(kT0));
  r.NoteFreed(4096);
  EXPECT_FALSE(r.MaybeReturn(kT0 + kSec / 2));
  EXPECT_TRUE(r.MaybeReturn(kT0 + kSec));
}

TEST(MemoryReturnerTest, ReturnsGoOnWhileSettlingThenStop) {
  MemoryReturner r;
  r.NoteFreed(4096);
  EXPECT_TRUE(r.MaybeReturn(kT0));
  // Nothing more freed: once a second until the settling period ends.
  int64_t t = kT0;
  int returned = 0;
  for (int i = 0; i < 30; ++i) {
    t += kSec;
    if (r.MaybeReturn(t)) ++returned;
  }
  EXPECT_EQ(returned, MemoryReturner::kSettleNs / kSec - 1);
  EXPECT_FALSE(r.MaybeReturn(t + kSec));
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
