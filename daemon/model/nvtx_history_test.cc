#include "daemon/model/nvtx_history.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

format::NvtxRecord Range(int64_t start, int64_t end, uint32_t name) {
  format::NvtxRecord r;
  std::memset(&r, 0, sizeof(r));
  r.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
  r.start_ns = start;
  r.end_ns = end;
  r.name_id = name;
  return r;
}

std::vector<uint32_t> Names(const std::vector<format::NvtxRecord>& rs) {
  std::vector<uint32_t> out;
  for (const auto& r : rs) out.push_back(r.name_id);
  return out;
}

TEST(NvtxHistoryTest, KeepsTheNewestInOrderAndChargesEachChunk) {
  NvtxHistory h(NvtxHistory::kChunk + 10);
  size_t reserved = 0, charged = 0;
  const auto reserve = [&reserved](size_t bytes) {
    reserved += bytes;
    return true;
  };
  for (uint32_t i = 1; i <= NvtxHistory::kChunk + 15; ++i) {
    charged += h.Add(Range(i, i, i), reserve);
  }
  EXPECT_EQ(charged, reserved);
  EXPECT_EQ(charged, (NvtxHistory::kChunk + 10) * sizeof(format::NvtxRecord));
  EXPECT_EQ(h.size(), NvtxHistory::kChunk + 10);
  EXPECT_EQ(h.total(), NvtxHistory::kChunk + 15);
  const auto all = h.Between(0, INT64_MAX);
  ASSERT_EQ(all.size(), NvtxHistory::kChunk + 10);
  EXPECT_EQ(all.front().name_id, 6u);  // the five oldest were replaced
  EXPECT_EQ(all.back().name_id, NvtxHistory::kChunk + 15);
}

TEST(NvtxHistoryTest, ARefusedChunkKeepsWhatWasGranted) {
  NvtxHistory h(10 * NvtxHistory::kChunk);
  int grants = 1;
  const auto reserve = [&grants](size_t) { return grants-- > 0; };
  for (uint32_t i = 1; i <= 2 * NvtxHistory::kChunk; ++i) h.Add(Range(i, i, i), reserve);
  EXPECT_EQ(h.size(), NvtxHistory::kChunk);
  NvtxHistory none(100);
  EXPECT_EQ(none.Add(Range(1, 2, 1), [](size_t) { return false; }), 0u);
  EXPECT_EQ(none.size(), 0u);
}

TEST(NvtxHistoryTest, BetweenSelectsByTimeSpanStartsAndEndsByTheirOneTime) {
  NvtxHistory h(100);
  const auto yes = [](size_t) { return true; };
  h.Add(Range(10, 20, 1), yes);
  h.Add(Range(30, 40, 2), yes);
  format::NvtxRecord start = Range(50, 0, 3), end = Range(0, 60, 4);
  start.event = static_cast<uint8_t>(format::NvtxEvent::kStart);
  end.event = static_cast<uint8_t>(format::NvtxEvent::kEnd);
  h.Add(start, yes);
  h.Add(end, yes);
  EXPECT_EQ(Names(h.Between(15, 35)), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(Names(h.Between(21, 29)), (std::vector<uint32_t>{}));
  EXPECT_EQ(Names(h.Between(45, 55)), (std::vector<uint32_t>{3}));
  EXPECT_EQ(Names(h.Between(55, 65)), (std::vector<uint32_t>{4}));
}

TEST(NvtxHistoryTest, StringsAreReassembledFromTheirParts) {
  NvtxHistory h(10);
  const std::string text(format::kNameChunk + 3, 's');
  const auto yes = [](size_t) { return true; };
  for (size_t i = 0; i < format::NamePartCount(text.size()); ++i) {
    h.AddString(format::NamePart(7, text, i, format::RecordType::kNvtxString).name, 16, yes);
  }
  ASSERT_NE(h.String(7), nullptr);
  EXPECT_EQ(*h.String(7), text);
  EXPECT_EQ(h.String(8), nullptr);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
