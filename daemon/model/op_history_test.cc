#include "daemon/model/op_history.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr size_t kChunk = OpHistory::kChunk;

format::OpRecord Op(uint64_t seq) {
  format::OpRecord r{};
  r.seq = seq;
  return r;
}

std::vector<uint64_t> Seqs(const OpHistory& h) {
  std::vector<uint64_t> out;
  h.ForEach([&](const format::OpRecord& r) { out.push_back(r.seq); });
  return out;
}

// Appends records [from, to) and sums what the appends did.
OpHistory::Change Fill(OpHistory* h, uint64_t from, uint64_t to, bool may_allocate = true) {
  OpHistory::Change sum;
  for (uint64_t i = from; i < to; ++i) {
    const OpHistory::Change c = h->Append(Op(i), [may_allocate] { return may_allocate; });
    sum.allocated += c.allocated;
    sum.freed += c.freed;
    sum.shrunk += c.shrunk;
  }
  return sum;
}

TEST(OpHistoryTest, KeepsTheNewestRecordsInOrder) {
  OpHistory h(10000);
  Fill(&h, 0, 25000);
  const std::vector<uint64_t> seqs = Seqs(h);
  ASSERT_EQ(seqs.size(), 10000u);
  EXPECT_EQ(h.size(), 10000u);
  EXPECT_EQ(seqs.front(), 15000u);
  for (size_t i = 1; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], seqs[i - 1] + 1);
}

TEST(OpHistoryTest, AnIdleHistoryHoldsNoChunk) {
  OpHistory h(10000);
  EXPECT_EQ(h.chunks(), 0u);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_TRUE(Seqs(h).empty());
}

TEST(OpHistoryTest, AFullHistoryRotatesThroughItsOwnChunks) {
  OpHistory h(3 * kChunk);
  const OpHistory::Change first = Fill(&h, 0, 4 * kChunk);
  // The chunks the newest records span, plus one spare that the next chunk reuses.
  EXPECT_EQ(first.allocated, 4u);
  const OpHistory::Change later = Fill(&h, 4 * kChunk, 40 * kChunk);
  EXPECT_EQ(later.allocated, 0u);
  EXPECT_EQ(later.freed, 0u);
  EXPECT_EQ(later.shrunk, 0u);
  EXPECT_EQ(h.chunks(), 4u);
  EXPECT_EQ(Seqs(h).front(), 37 * kChunk);
}

TEST(OpHistoryTest, WithoutRoomTheOldestChunkIsReused) {
  OpHistory h(100 * kChunk);
  Fill(&h, 0, 2 * kChunk);  // two chunks granted
  const OpHistory::Change c = Fill(&h, 2 * kChunk, 3 * kChunk, /*may_allocate=*/false);
  EXPECT_EQ(c.allocated, 0u);
  EXPECT_EQ(c.shrunk, 1u);
  EXPECT_EQ(h.chunks(), 2u);
  const std::vector<uint64_t> seqs = Seqs(h);
  ASSERT_EQ(seqs.size(), 2 * kChunk);
  EXPECT_EQ(seqs.front(), kChunk);
  EXPECT_EQ(seqs.back(), 3 * kChunk - 1);
}

TEST(OpHistoryTest, WithoutAnyChunkNothingIsKept) {
  OpHistory h(100);
  const OpHistory::Change c = Fill(&h, 0, 5, /*may_allocate=*/false);
  EXPECT_EQ(c.shrunk, 5u);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_EQ(h.chunks(), 0u);
  Fill(&h, 5, 7);  // room again: kept from there on
  EXPECT_EQ(Seqs(h), (std::vector<uint64_t>{5, 6}));
}

TEST(OpHistoryTest, HalvingDropsTheOldestChunksAndKeepsOne) {
  OpHistory h(100 * kChunk);
  Fill(&h, 0, 8 * kChunk);
  const OpHistory::Change c = h.HalveForBudget();
  EXPECT_EQ(c.shrunk, 4u);
  EXPECT_EQ(c.freed, 4u);
  EXPECT_EQ(h.chunks(), 4u);
  EXPECT_EQ(Seqs(h).front(), 4 * kChunk);
  h.HalveForBudget();
  h.HalveForBudget();
  EXPECT_EQ(h.chunks(), 1u);
  EXPECT_EQ(h.HalveForBudget().freed, 0u);
  EXPECT_EQ(h.chunks(), 1u);
  EXPECT_EQ(Seqs(h).back(), 8 * kChunk - 1);
}

// Appends (with chunks granted or refused at random) and halvings, interleaved, at capacities
// around the chunk size: the chunks allocated less those freed are the chunks held, and the
// records kept are always the newest ones, contiguous, at most `capacity`, ending with the last.
TEST(OpHistoryTest, AccountingAndOrderHoldThroughAppendsAndHalvings) {
  for (size_t capacity : {size_t{1}, size_t{100}, kChunk - 1, kChunk, kChunk + 1, 5 * kChunk / 2}) {
    SCOPED_TRACE(capacity);
    OpHistory h(capacity);
    int64_t held = 0;
    uint64_t next = 0;
    uint32_t random = 12345;
    for (int step = 0; step < 200; ++step) {
      random = random * 1103515245u + 12345u;
      if (random % 16 == 0) {
        const OpHistory::Change c = h.HalveForBudget();
        held -= static_cast<int64_t>(c.freed);
      } else {
        const uint64_t n = random % (2 * kChunk);
        const OpHistory::Change c = Fill(&h, next, next + n, /*may_allocate=*/random % 8 != 1);
        held += static_cast<int64_t>(c.allocated) - static_cast<int64_t>(c.freed);
        next += n;
      }
      ASSERT_EQ(held, static_cast<int64_t>(h.chunks())) << "step " << step;
      const std::vector<uint64_t> seqs = Seqs(h);
      ASSERT_EQ(seqs.size(), h.size());
      ASSERT_LE(seqs.size(), capacity);
      if (seqs.empty()) continue;
      ASSERT_EQ(seqs.back(), next - 1) << "step " << step;
      ASSERT_EQ(seqs.back() - seqs.front() + 1, seqs.size()) << "step " << step;
    }
    // With chunks granted, the history fills to its capacity again.
    Fill(&h, next, next + capacity + 3 * kChunk);
    EXPECT_EQ(h.size(), capacity);
  }
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
