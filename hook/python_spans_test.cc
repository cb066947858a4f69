// The Python tracer's C side (python_spans.h), driven directly: the code table, spans per thread
// as NVTX ranges of the Python domain, folding of same-name nesting, returns not seen, and GC.
#include "hook/python_spans.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "format/python_spans.h"
#include "format/record.h"
#include "hook/budget.h"
#include "hook/recorder.h"
#include "hook/state.h"
#include "hook/testing/fake_cuda.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {
namespace pyspans {
namespace {

using format::PythonSpanKind;

struct Got {
  std::string name;
  int depth;
  uint32_t category;
  uint64_t payload;
};

std::vector<Got> Spans(testing::HookState* hook) {
  std::vector<Got> out;
  State* s = GetState();
  for (const Pending& p : hook->TakeQueue()) {
    if (p.rec.header.type != static_cast<uint8_t>(format::RecordType::kNvtx)) continue;
    const format::NvtxRecord& r = p.rec.nvtx;
    EXPECT_EQ(s->nvtx_strings.Text(r.domain_id), format::kPythonSpanDomain);
    EXPECT_LE(r.start_ns, r.end_ns);
    out.push_back({s->nvtx_strings.Text(r.name_id), r.depth, r.category, r.payload});
  }
  return out;
}

int g_code[kMaxTracedCodes + 2];  // addresses standing for code objects

TEST(PythonSpansTest, TracedCodesAreFoundAndOthersAreNot) {
  testing::HookState hook;
  ResetForTest();
  EXPECT_EQ(Find(&g_code[0]), nullptr);
  ASSERT_TRUE(Register(&g_code[0], "m:f", PythonSpanKind::kData));
  ASSERT_TRUE(Register(&g_code[0], "m:other", PythonSpanKind::kCall));  // keeps its first name
  const Traced* t = Find(&g_code[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(GetState()->nvtx_strings.Text(t->name_id), "m:f");
  EXPECT_EQ(t->kind, PythonSpanKind::kData);
  EXPECT_EQ(Find(&g_code[1]), nullptr);
  for (int i = 1; i < kMaxTracedCodes; ++i) {
    EXPECT_TRUE(Register(&g_code[i], "m:g", PythonSpanKind::kCall));
  }
  EXPECT_FALSE(Register(&g_code[kMaxTracedCodes], "m:g", PythonSpanKind::kCall));  // bounded
  EXPECT_EQ(Find(&g_code[kMaxTracedCodes]), nullptr);
  EXPECT_NE(Find(&g_code[kMaxTracedCodes - 1]), nullptr);
  EXPECT_FALSE(Register(nullptr, "m:g", PythonSpanKind::kCall));
}

// Each traced call's Enter and Leave, and each collection's start and stop, is the hook's own
// time (State::own_ns) and fixed cost in the thread's budget: at least 5 ns each (two clock reads
// apart, with a span's work between), no more than the loop took.
TEST(PythonSpansTest, TracedCallsAndCollectionsAreTheHooksOwnTime) {
  testing::HookState hook;
  ResetForTest();
  ASSERT_TRUE(Register(&g_code[0], "m:f", PythonSpanKind::kCall));
  const Traced* f = Find(&g_code[0]);
  ASSERT_NE(f, nullptr);
  constexpr int kCalls = 2000;
  budget::ResetThreadForTesting();  // nothing of an earlier test left to publish
  const uint64_t fixed_before = budget::t_budget.other_ns;
  const int64_t start = MonotonicNs();
  for (int i = 0; i < kCalls; ++i) {
    Enter(*f);
    Leave(*f);
  }
  GcStart(1);
  GcStop();
  const uint64_t loop_ns = static_cast<uint64_t>(MonotonicNs() - start);
  const uint64_t own = GetState()->own_ns.load();
  const uint64_t fixed = budget::t_budget.other_ns - fixed_before;
  EXPECT_GE(fixed, (2u * kCalls + 2) * 5);
  EXPECT_LE(fixed, loop_ns);
  // The thread publishes its own time in batches (budget::kOwnFlushNs): all but the last.
  EXPECT_LE(own, fixed) << "the thread's budget: fixed cost";
  EXPECT_LT(fixed - own, budget::kOwnFlushNs);
  EXPECT_EQ(Spans(&hook).size(), static_cast<size_t>(kCalls + 1));
}

TEST(PythonSpansTest, NestedCallsAreSpansAndSameNamesFold) {
  testing::HookState hook;
  ResetForTest();
  ASSERT_TRUE(Register(&g_code[0], "m:step", PythonSpanKind::kStep));
  ASSERT_TRUE(Register(&g_code[1], "m:step", PythonSpanKind::kStep));  // an override, same name
  ASSERT_TRUE(Register(&g_code[2], "m:compute", PythonSpanKind::kCall));
  const Traced &sub = *Find(&g_code[0]), &base = *Find(&g_code[1]), &f = *Find(&g_code[2]);
  Enter(sub);
  Enter(base);  // folded into sub's span
  Enter(f);
  Leave(f);
  Leave(base);
  Leave(sub);
  const std::vector<Got> got = Spans(&hook);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "m:compute");
  EXPECT_EQ(got[0].depth, 1);
  EXPECT_EQ(got[0].category, uint32_t(PythonSpanKind::kCall));
  EXPECT_EQ(got[1].name, "m:step");
  EXPECT_EQ(got[1].depth, 0);
  EXPECT_EQ(got[1].category, uint32_t(PythonSpanKind::kStep));
}

TEST(PythonSpansTest, ALeaveWithoutItsEnterIsIgnoredAndUnseenReturnsAreClosed) {
  testing::HookState hook;
  ResetForTest();
  ASSERT_TRUE(Register(&g_code[0], "m:outer", PythonSpanKind::kCall));
  ASSERT_TRUE(Register(&g_code[1], "m:inner", PythonSpanKind::kCall));
  const Traced &outer = *Find(&g_code[0]), &inner = *Find(&g_code[1]);
  Leave(outer);  // began before tracing
  EXPECT_TRUE(Spans(&hook).empty());
  Enter(outer);
  Enter(inner);
  Leave(outer);  // inner's return was not seen: closed with it
  const std::vector<Got> got = Spans(&hook);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "m:inner");
  EXPECT_EQ(got[1].name, "m:outer");
  Enter(inner);  // nothing was left open
  Leave(inner);
  ASSERT_EQ(Spans(&hook).size(), 1u);
}

TEST(PythonSpansTest, CollectionsAreSpansWithTheirGeneration) {
  testing::HookState hook;
  ResetForTest();
  ASSERT_TRUE(Register(&g_code[0], "m:f", PythonSpanKind::kCall));
  GcStop();  // a collection that began before tracing
  Enter(*Find(&g_code[0]));
  GcStart(2);
  GcStop();
  Leave(*Find(&g_code[0]));
  GcStart(0);
  GcStop();
  const std::vector<Got> got = Spans(&hook);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].name, "gc gen2");
  EXPECT_EQ(got[0].depth, 1);
  EXPECT_EQ(got[0].category, uint32_t(PythonSpanKind::kGc));
  EXPECT_EQ(got[0].payload, 2u);
  EXPECT_EQ(got[1].name, "m:f");
  EXPECT_EQ(got[2].name, "gc gen0");
  EXPECT_EQ(got[2].payload, 0u);
}

TEST(PythonSpansTest, ThreadsKeepTheirOwnSpans) {
  testing::HookState hook;
  ResetForTest();
  ASSERT_TRUE(Register(&g_code[0], "m:f", PythonSpanKind::kCall));
  const Traced& f = *Find(&g_code[0]);
  Enter(f);
  std::thread other([&f] {
    Enter(f);
    Leave(f);
  });
  other.join();
  Leave(f);
  const std::vector<Got> got = Spans(&hook);
  ASSERT_EQ(got.size(), 2u);  // not folded across threads
  EXPECT_EQ(got[0].depth, 0);
  EXPECT_EQ(got[1].depth, 0);
}

}  // namespace
}  // namespace pyspans
}  // namespace hook
}  // namespace xtimer
