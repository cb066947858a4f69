// A new record kind is one registration (issue 19): AddRecordKind tells the ring readers how to
// validate it and routes its records to a handler, with no switch to edit. Driven through a real
// ring (format::RingWriter -> RingReader -> Aggregator::Ingest), as the RingServer drives it.
#include "format/record_kinds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/base/test_util.h"
#include "daemon/model/aggregator.h"
#include "format/record.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr uint8_t kMarkType = 200;  // a kind no build of xtimer defines

// A test record: a step marker, laid out in the slot as a real kind would be.
struct MarkRecord {
  uint16_t version;
  uint8_t type;
  uint8_t pad;
  uint32_t step;
};

format::RecordSlot Mark(uint32_t step) {
  format::RecordSlot slot;
  std::memset(&slot, 0, sizeof(slot));
  const MarkRecord m{format::kRecordVersion, kMarkType, 0, step};
  std::memcpy(&slot, &m, sizeof(m));
  return slot;
}

uint32_t StepOf(const format::RecordSlot& slot) {
  MarkRecord m;
  std::memcpy(&m, &slot, sizeof(m));
  return m.step;
}

const char* ValidateMark(const format::RecordSlot& slot) {
  return StepOf(slot) == 0 ? "step 0" : nullptr;
}

// Writes an op, two marks (one invalid) and another op through a real ring, reads them with
// `kinds`, and ingests what the reader accepts.
std::vector<format::RecordSlot> ThroughRing(const format::RecordKinds* kinds,
                                            format::ReadStats* stats) {
  std::string error;
  format::Identity id;
  id.job = "job";
  auto writer = format::RingWriter::Create(64, id, &error);
  EXPECT_TRUE(writer.has_value()) << error;
  const format::RecordSlot op =
      testing::MakeOp(format::Operation::kGemmEx, format::DType::kBF16, 1000);
  for (const format::RecordSlot& s : {op, Mark(7), Mark(0), op}) EXPECT_TRUE(writer->Write(s));
  auto reader = format::RingReader::Attach(writer->fd(), &error);
  EXPECT_TRUE(reader.has_value()) << error;
  if (kinds != nullptr) reader->set_kinds(kinds);
  std::vector<format::RecordSlot> out(16);
  out.resize(reader->Read(out.data(), out.size(), stats));
  return out;
}

TEST(RecordKindsTest, ANewKindIsOneRegistration) {
  Aggregator agg(AggregatorOptions{});
  const ProcessId pid = agg.AddProcess(42, format::Identity{});
  std::vector<std::pair<ProcessId, uint32_t>> seen;
  agg.AddRecordKind(kMarkType, {"mark", ValidateMark},
                    [&seen](ProcessId id, const format::RecordSlot& slot) {
                      seen.emplace_back(id, StepOf(slot));
                    });
  ASSERT_NE(agg.kinds().Find(kMarkType), nullptr);
  EXPECT_STREQ(agg.kinds().Find(kMarkType)->name, "mark");

  format::ReadStats stats;
  const std::vector<format::RecordSlot> read = ThroughRing(&agg.kinds(), &stats);
  ASSERT_EQ(read.size(), 3u);  // op, mark 7, op: the mark of step 0 failed its validator
  EXPECT_EQ(stats.invalid, 1u);
  agg.Ingest(pid, read.data(), read.size(), int64_t{1700000000} * 1000000000);

  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, pid);
  EXPECT_EQ(seen[0].second, 7u);
  // The built-in kinds still go where they went: both ops counted in their series.
  const Snapshot snap = agg.TakeSnapshot(int64_t{1700000000} * 1000000000);
  ASSERT_EQ(snap.processes.size(), 1u);
  ASSERT_EQ(snap.processes[0].series.size(), 1u);
  EXPECT_EQ(snap.processes[0].series[0].count, 2u);
  EXPECT_EQ(snap.processes[0].history, 2u);
}

// Ingest hands each handler a run of consecutive records of its kind: runs of every length, in
// the ring's order, and nothing of another kind.
TEST(RecordKindsTest, RunsOfEachKindReachTheirHandlerInOrder) {
  Aggregator agg(AggregatorOptions{});
  const ProcessId pid = agg.AddProcess(42, format::Identity{});
  std::vector<uint32_t> steps;
  agg.AddRecordKind(kMarkType, {"mark", ValidateMark},
                    [&steps](ProcessId, const format::RecordSlot& slot) {
                      ASSERT_EQ(slot.header.type, kMarkType);
                      steps.push_back(StepOf(slot));
                    });
  const format::RecordSlot op =
      testing::MakeOp(format::Operation::kGemmEx, format::DType::kBF16, 1000);
  const std::vector<format::RecordSlot> records = {op,      op,      Mark(1), Mark(2), Mark(3),
                                                   op,      Mark(4), op,      op,      op};
  agg.Ingest(pid, records.data(), records.size(), int64_t{1700000000} * 1000000000);
  EXPECT_EQ(steps, (std::vector<uint32_t>{1, 2, 3, 4}));
  const Snapshot snap = agg.TakeSnapshot(int64_t{1700000000} * 1000000000);
  ASSERT_EQ(snap.processes.size(), 1u);
  ASSERT_EQ(snap.processes[0].series.size(), 1u);
  EXPECT_EQ(snap.processes[0].series[0].count, 6u);
  EXPECT_EQ(snap.processes[0].history, 6u);
}

TEST(RecordKindsTest, AReaderWithoutTheRegistrationRefusesTheKind) {
  format::ReadStats stats;
  const std::vector<format::RecordSlot> read = ThroughRing(nullptr, &stats);  // built-in kinds
  EXPECT_EQ(read.size(), 2u);
  EXPECT_EQ(stats.invalid, 2u);
  EXPECT_STREQ(format::RecordKinds::Builtin().Validate(Mark(7)), "unknown record type");
  EXPECT_EQ(format::RecordKinds::Builtin().Find(kMarkType), nullptr);
  EXPECT_STREQ(format::Validate(Mark(7)), "unknown record type");
}

TEST(RecordKindsTest, TheBuiltinKindsAreNamed) {
  const format::RecordKinds& k = format::RecordKinds::Builtin();
  EXPECT_STREQ(k.Find(static_cast<uint8_t>(format::RecordType::kOp))->name, "op");
  EXPECT_STREQ(k.Find(static_cast<uint8_t>(format::RecordType::kName))->name, "name");
  EXPECT_STREQ(k.Find(static_cast<uint8_t>(format::RecordType::kComm))->name, "comm");
  format::RecordSlot slot = Mark(7);
  slot.header.version = format::kRecordVersion + 1;
  EXPECT_STREQ(k.Validate(slot), "unknown record version");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
