// The NVTX recorder (nvtx_recorder.h) and its string table (nvtx_strings.h), driven directly:
// levels per thread and domain, the records queued for the poller, interning by content.
#include "hook/nvtx_recorder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "format/record.h"
#include "hook/nvtx_strings.h"
#include "hook/recorder.h"
#include "hook/state.h"
#include "hook/testing/fake_cuda.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {
namespace {

std::vector<format::NvtxRecord> Records(testing::HookState* hook) {
  std::vector<format::NvtxRecord> out;
  for (const Pending& p : hook->TakeQueue()) {
    if (p.rec.header.type == static_cast<uint8_t>(format::RecordType::kNvtx)) {
      out.push_back(p.rec.nvtx);
    }
  }
  return out;
}

int64_t Now() { return RealtimeNs(); }

nvtx::Attrs Named(const char* name) {
  nvtx::Attrs a;
  a.name_id = nvtx::Intern(name);
  return a;
}

TEST(NvtxStringsTest, InternsByContentNotByPointer) {
  NvtxStrings strings;
  char a[] = "forward", b[] = "forward";
  const uint32_t id = strings.Intern(a);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(strings.Intern(b), id);
  std::strcpy(a, "backwrd");  // the same buffer with other text is another string
  EXPECT_NE(strings.Intern(a), id);
  EXPECT_EQ(strings.Text(id), "forward");
  EXPECT_EQ(strings.Intern(""), 0u);
  EXPECT_EQ(strings.Intern(nullptr), 0u);
  EXPECT_EQ(strings.Text(0), "");
  EXPECT_EQ(strings.Text(NvtxStrings::kMaxStrings + 1), "");
}

TEST(NvtxStringsTest, LongStringsAreCutAndTheTableIsBounded) {
  NvtxStrings strings;
  const std::string longer(NvtxStrings::kMaxLength + 10, 'x');
  EXPECT_EQ(strings.Text(strings.Intern(longer.c_str())).size(), NvtxStrings::kMaxLength);
  for (uint32_t i = 1; i < NvtxStrings::kMaxStrings; ++i) {
    EXPECT_NE(strings.Intern(("s" + std::to_string(i)).c_str()), 0u);
  }
  EXPECT_EQ(strings.size(), NvtxStrings::kMaxStrings);
  EXPECT_EQ(strings.Intern("one too many"), 0u);  // unnamed beyond the bound
  EXPECT_EQ(strings.Intern("s1"), 2u);            // known strings keep their ids
}

TEST(NvtxStringsTest, ThreadsInterningTheSameStringsAgreeOnTheirIds) {
  NvtxStrings strings;
  std::vector<std::vector<uint32_t>> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&strings, &ids, t] {
      for (int i = 0; i < 200; ++i) {
        ids[t].push_back(strings.Intern(("n" + std::to_string(i)).c_str()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(ids[t], ids[0]);
  EXPECT_EQ(strings.size(), 200u);
}

TEST(NvtxRecorderTest, LevelsAreKeptPerDomainAndRangesRecordedAtTheirPop) {
  testing::HookState hook;
  const uint32_t dom = nvtx::Intern("domain");
  EXPECT_EQ(nvtx::Push(0, Named("outer"), Now()), 0);
  EXPECT_EQ(nvtx::Push(dom, Named("d0"), Now()), 0);  // another domain's stack
  EXPECT_EQ(nvtx::Push(0, Named("inner"), Now()), 1);
  EXPECT_EQ(nvtx::Pop(dom, Now()), 0);  // closes d0; inner stays open
  EXPECT_EQ(nvtx::Pop(0, Now()), 1);
  EXPECT_EQ(nvtx::Pop(0, Now()), 0);
  EXPECT_EQ(nvtx::Pop(0, Now()), -1);  // nothing open
  const auto r = Records(&hook);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name_id, nvtx::Intern("d0"));
  EXPECT_EQ(r[0].domain_id, dom);
  EXPECT_EQ(r[1].name_id, nvtx::Intern("inner"));
  EXPECT_EQ(r[1].depth, 1);
  EXPECT_EQ(r[2].name_id, nvtx::Intern("outer"));
  EXPECT_EQ(r[2].depth, 0);
  EXPECT_LE(r[2].start_ns, r[1].start_ns);
  EXPECT_LE(r[1].end_ns, r[2].end_ns);
  for (const auto& x : r) {
    EXPECT_EQ(x.event, static_cast<uint8_t>(format::NvtxEvent::kRange));
    EXPECT_EQ(format::Validate(reinterpret_cast<const format::RecordSlot&>(x)), nullptr);
    EXPECT_NE(x.tid, 0u);
  }
}

TEST(NvtxRecorderTest, DeeperThanTheFramesKeptLevelsGoOnUnrecorded) {
  testing::HookState hook;
  for (int i = 0; i < nvtx::kMaxOpenRanges + 3; ++i) {
    EXPECT_EQ(nvtx::Push(0, Named("r"), Now()), i);
  }
  for (int i = nvtx::kMaxOpenRanges + 2; i >= 0; --i) EXPECT_EQ(nvtx::Pop(0, Now()), i);
  EXPECT_EQ(Records(&hook).size(), static_cast<size_t>(nvtx::kMaxOpenRanges));
}

TEST(NvtxRecorderTest, WhileTimingIsOffLevelsAreKeptAndNothingIsRecorded) {
  testing::HookState hook;
  g_mode.store(kOff);
  EXPECT_EQ(nvtx::Push(0, Named("a"), Now()), 0);
  nvtx::Mark(0, Named("m"), Now());
  nvtx::Start(0, Named("s"), 5, Now());
  EXPECT_EQ(nvtx::Pop(0, Now()), 0);
  EXPECT_TRUE(Records(&hook).empty());
}

TEST(NvtxRecorderTest, MarksStartsAndEnds) {
  testing::HookState hook;
  const uint64_t id = nvtx::NextRangeId();
  EXPECT_NE(nvtx::NextRangeId(), id);
  nvtx::Start(0, Named("io"), id, Now());
  nvtx::Mark(0, Named("m"), Now());
  nvtx::End(0, id, Now());
  const auto r = Records(&hook);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].event, static_cast<uint8_t>(format::NvtxEvent::kStart));
  EXPECT_EQ(r[0].range_id, id);
  EXPECT_EQ(r[1].event, static_cast<uint8_t>(format::NvtxEvent::kMark));
  EXPECT_EQ(r[1].start_ns, r[1].end_ns);
  EXPECT_EQ(r[2].event, static_cast<uint8_t>(format::NvtxEvent::kEnd));
  EXPECT_EQ(r[2].range_id, id);
  EXPECT_LE(r[0].start_ns, r[2].end_ns);
}


TEST(NvtxRecorderTest, RangesNamedAsTheStepRangeAreFlaggedAsSteps) {
  testing::HookState hook;
  nvtx::SetStepRange("train_step");
  nvtx::Push(0, Named("train_step"), Now());
  nvtx::Push(0, Named("forward"), Now());
  nvtx::Pop(0, Now());
  nvtx::Pop(0, Now());
  nvtx::SetStepRange(nullptr);
  nvtx::Push(0, Named("train_step"), Now());
  nvtx::Pop(0, Now());
  const auto r = Records(&hook);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].flags & format::kNvtxStep, 0);  // forward
  EXPECT_NE(r[1].flags & format::kNvtxStep, 0);  // train_step
  EXPECT_EQ(r[2].flags & format::kNvtxStep, 0);  // no step range any more
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
