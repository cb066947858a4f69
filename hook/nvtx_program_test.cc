// libxtimer.so as an NVTX v3 injection (hook/nvtx_injection.cc): a program with nested NVTX
// ranges on two threads, marks, a domain with a registered string and a start/end range
// (hook/programs/nvtx_ranges.cu) runs on the GPU simulator with the hook preloaded and
// NVTX_INJECTION64_PATH naming it; its records reach a fake daemon. A second consumer
// (testing/nvtx_counter.cc) configured with XTIMER_NVTX_FORWARD receives what it receives alone.
// NVTX ranges on threads that never call CUDA (hook/programs/nvtx_loop.cc) are the hook's own time.
// Usage: nvtx_program_test GPUSIM_RUN LIBXTIMER_SO NVTX_RANGES LIBNVTX_COUNTER_SO NVTX_LOOP
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/testing/fake_daemon.h"
#include "hook/testing/program_runner.h"

namespace xtimer {
namespace hook {
namespace {

using format::NvtxEvent;
using format::NvtxRecord;
using format::RecordType;
using testing::FakeDaemon;

testing::Runner g_runner;
std::string g_program, g_counter, g_loop;
constexpr int kSteps = 3;

std::vector<std::string> Env() {
  return {"XTIMER_JOB=nvtxtest", "XTIMER_HOST=testhost", "XTIMER_STEP_RANGE=step",
          "NVTX_INJECTION64_PATH=" + g_runner.hook_lib};
}

std::vector<NvtxRecord> Nvtx(const FakeDaemon::Ring& ring, NvtxEvent event) {
  std::vector<NvtxRecord> out;
  for (const format::RecordSlot& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(RecordType::kNvtx) &&
        r.nvtx.event == static_cast<uint8_t>(event)) {
      out.push_back(r.nvtx);
    }
  }
  return out;
}

std::string Text(const FakeDaemon::Ring& ring, uint32_t id) {
  return id == 0 ? "" : testing::NameOf(ring, id, RecordType::kNvtxString);
}

// The program's "levels:" lines: what each worker's pushes and pops returned.
std::vector<std::string> Levels(const std::string& out) {
  std::vector<std::string> lines;
  size_t at = 0;
  while ((at = out.find("levels:", at)) != std::string::npos) {
    const size_t end = out.find('\n', at);
    lines.push_back(out.substr(at, end - at));
    at = end;
  }
  return lines;
}

// The levels NVTX's push and pop return in one step: step, forward, backward, and the domain's
// optimizer. xtimer keeps a stack per domain (optimizer at 0), the counting consumer one stack
// (at 1), 100 higher.
const std::vector<int> kXtimerLevels = {0, 1, 1, 1, 1, 0, 0, 0};
const std::vector<int> kCounterLevels = {100, 101, 101, 101, 101, 101, 101, 100};
std::string ExpectedLevels(const std::vector<int>& step) {
  std::string one;
  for (int level : step) one += " " + std::to_string(level);
  std::string all = "levels:";
  for (int s = 0; s < kSteps; ++s) all += one;
  return all;
}

TEST(NvtxProgramTest, RangesAreRecordedNestedPerThreadWithTheirNames) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(g_runner.RunHooked({g_program, std::to_string(kSteps)}, "nvtx", Env(), &ring, &out));
  ASSERT_NE(out.find("OK"), std::string::npos) << out;
  EXPECT_EQ(Levels(out), std::vector<std::string>(2, ExpectedLevels(kXtimerLevels))) << out;
  EXPECT_NE(out.find("unmatched pop: -1"), std::string::npos) << out;

  // By thread: every range closed inside its parent (the previous range of lower depth).
  std::map<uint32_t, std::vector<NvtxRecord>> by_thread;
  for (const NvtxRecord& r : Nvtx(ring, NvtxEvent::kRange)) by_thread[r.tid].push_back(r);
  ASSERT_EQ(by_thread.size(), 2u);
  for (auto& kv : by_thread) {
    std::map<std::string, int> count;
    const NvtxRecord* step = nullptr;
    for (const NvtxRecord& r : kv.second) {
      const std::string name = Text(ring, r.name_id);
      const std::string domain = Text(ring, r.domain_id);
      ++count[domain + "/" + name];
      EXPECT_LE(r.start_ns, r.end_ns);
      // XTIMER_STEP_RANGE=step: the step ranges, and only they, are flagged as steps.
      EXPECT_EQ((r.flags & format::kNvtxStep) != 0, name == "step") << name;
      if (name == "step") {
        EXPECT_EQ(r.depth, 0);
        continue;
      }
      if (name == "optimizer") {  // the domain's own stack: level 0, inside no default range
        EXPECT_EQ(domain, "xtimer.test");
        EXPECT_EQ(r.depth, 0);
        EXPECT_EQ(r.color, 0xff00ff00u);
        EXPECT_TRUE(r.flags & format::kNvtxHasColor);
        continue;
      }
      EXPECT_EQ(r.depth, 1) << name;
      step = nullptr;
      for (const NvtxRecord& p : kv.second) {  // its step: the one around it
        if (Text(ring, p.name_id) == "step" && p.start_ns <= r.start_ns && r.end_ns <= p.end_ns) {
          step = &p;
        }
      }
      EXPECT_NE(step, nullptr) << name << " outside every step";
    }
    const std::map<std::string, int> expected = {{"/step", kSteps},
                                                 {"/forward", kSteps},
                                                 {"/backward", kSteps},
                                                 {"xtimer.test/optimizer", kSteps}};
    EXPECT_EQ(count, expected);
  }
}

TEST(NvtxProgramTest, MarksStartEndAndCudaWorkShareTheClock) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(
      g_runner.RunHooked({g_program, std::to_string(kSteps)}, "nvtx_clock", Env(), &ring, &out));
  const auto marks = Nvtx(ring, NvtxEvent::kMark);
  ASSERT_EQ(marks.size(), 2u * kSteps);
  for (const NvtxRecord& m : marks) {
    EXPECT_EQ(Text(ring, m.name_id), "forward_done");
    EXPECT_EQ(m.start_ns, m.end_ns);
  }
  const auto starts = Nvtx(ring, NvtxEvent::kStart), ends = Nvtx(ring, NvtxEvent::kEnd);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(Text(ring, starts[0].name_id), "checkpoint_io");
  EXPECT_EQ(starts[0].range_id, ends[0].range_id);
  EXPECT_NE(starts[0].range_id, 0u);
  EXPECT_NE(starts[0].tid, ends[0].tid);  // ended on another thread
  EXPECT_LT(starts[0].start_ns, ends[0].end_ns);
  // Each memset was issued inside a "forward" range (of its thread; the records of ops do not
  // name threads, and the two threads' ranges overlap), on the same host clock.
  const auto memsets = testing::OpsOfKind(ring, format::OpKind::kMemset);
  ASSERT_EQ(memsets.size(), 2u * kSteps);
  for (const format::OpRecord& m : memsets) {
    int inside = 0;
    for (const NvtxRecord& r : Nvtx(ring, NvtxEvent::kRange)) {
      inside += Text(ring, r.name_id) == "forward" && r.start_ns <= m.cpu_launch_ns &&
                m.cpu_launch_ns <= r.end_ns;
    }
    EXPECT_GE(inside, 1) << m.cpu_launch_ns;
  }
}

// Every NVTX string went once, before its first use.
TEST(NvtxProgramTest, StringsAreSentOnceBeforeTheirFirstUse) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(
      g_runner.RunHooked({g_program, std::to_string(kSteps)}, "nvtx_str", Env(), &ring, &out));
  std::set<uint32_t> sent;
  for (const format::RecordSlot& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(RecordType::kNvtxString)) {
      EXPECT_TRUE(sent.insert(r.name.name_id).second) << "string " << r.name.name_id << " twice";
    } else if (r.header.type == static_cast<uint8_t>(RecordType::kNvtx)) {
      if (r.nvtx.name_id != 0) EXPECT_EQ(sent.count(r.nvtx.name_id), 1u);
      if (r.nvtx.domain_id != 0) EXPECT_EQ(sent.count(r.nvtx.domain_id), 1u);
    }
  }
  // step, forward, forward_done, backward, xtimer.test, optimizer, checkpoint_io
  EXPECT_EQ(sent.size(), 7u);
}

std::map<std::string, int> ReadCounts(const std::string& path) {
  std::map<std::string, int> counts;
  std::ifstream in(path);
  std::string key;
  int n = 0;
  while (in >> key >> n) counts[key] = n;
  return counts;
}

// What the counting consumer receives from the program alone (no xtimer), and its output.
std::map<std::string, int> CountAlone(std::string* out) {
  const std::string path = testing::TmpDir() + "/alone.counts", out_path = path + ".out";
  const int rc = testing::ReapProgram(
      testing::SpawnProgram({g_runner.gpusim_run, g_program, std::to_string(kSteps)},
                            {"NVTX_INJECTION64_PATH=" + g_counter, "NVTX_COUNTER_OUT=" + path},
                            out_path),
      out_path, out);
  EXPECT_EQ(rc, 0) << *out;
  std::map<std::string, int> counts = ReadCounts(path);
  unlink(path.c_str());
  return counts;
}

TEST(NvtxProgramTest, ASecondConsumerReceivesTheSameRangesAndItsValuesReachTheProgram) {
  std::string alone_out;
  const std::map<std::string, int> alone = CountAlone(&alone_out);
  ASSERT_EQ(alone.at("push:step"), 2 * kSteps) << alone_out;
  EXPECT_EQ(alone.count("bad_handle"), 0u);

  const std::string path = testing::TmpDir() + "/beside.counts";
  std::vector<std::string> env = Env();
  env.push_back("XTIMER_NVTX_FORWARD=" + g_counter);
  env.push_back("NVTX_COUNTER_OUT=" + path);
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(
      g_runner.RunHooked({g_program, std::to_string(kSteps)}, "nvtx_fwd", env, &ring, &out));
  EXPECT_EQ(ReadCounts(path), alone);  // every range, mark, domain and string, its own handles
  unlink(path.c_str());
  // The program saw the consumer's values, as without xtimer; xtimer recorded all the same.
  EXPECT_EQ(Levels(out), Levels(alone_out));
  EXPECT_EQ(Levels(out), std::vector<std::string>(2, ExpectedLevels(kCounterLevels))) << out;
  EXPECT_EQ(Nvtx(ring, NvtxEvent::kRange).size(), 2u * 4 * kSteps);
  const auto starts = Nvtx(ring, NvtxEvent::kStart);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].range_id, 7000u);  // the consumer's id, which the program holds
}

// The NVTX callbacks' time is the hook's own time (ring header hook_own_ns): in a process whose
// threads make NVTX ranges and no CUDA call, at least 5 ns per callback (two clock reads apart,
// with the work between), and no more than the threads' loops took.
TEST(NvtxProgramTest, RangesOnThreadsWithoutCudaAreTheHooksOwnTime) {
  constexpr int kThreads = 2;
  constexpr long kPairs = 10000;
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(g_runner.RunHooked({g_loop, std::to_string(kThreads), std::to_string(kPairs)},
                                 "nvtx_own", Env(), &ring, &out));
  const size_t at = out.find("loop_ns: ");
  ASSERT_NE(at, std::string::npos) << out;
  const uint64_t loop_ns = std::stoull(out.substr(at + 9));
  EXPECT_GE(ring.hook_own_ns, 2u * kThreads * kPairs * 5) << "loop_ns " << loop_ns;
  EXPECT_LE(ring.hook_own_ns, loop_ns);
  EXPECT_FALSE(Nvtx(ring, NvtxEvent::kRange).empty());  // (a burst beyond the queue is dropped)
  uint64_t ops = 0;
  for (uint64_t calls : ring.op_calls) ops += calls;
  EXPECT_EQ(ops, 0u) << "no op: all of it is NVTX time";
}

TEST(NvtxProgramTest, WithoutTheHookNvtxCallsAreNoOps) {
  const std::string out_path = testing::TmpDir() + "/plain.out";
  std::string out;
  const int rc = testing::ReapProgram(
      testing::SpawnProgram({g_runner.gpusim_run, g_program, std::to_string(kSteps)}, {},
                            out_path),
      out_path, &out);
  EXPECT_EQ(rc, 0) << out;
  std::string none = "levels:";
  for (int i = 0; i < 8 * kSteps; ++i) none += " -2";  // NVTX_NO_PUSH_POP_TRACKING
  EXPECT_EQ(Levels(out), std::vector<std::string>(2, none)) << out;
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

int main(int argc, char** argv) {
  std::vector<std::string> p;
  const int rc = xtimer::hook::testing::StartProgramTest(
      &argc, argv, 3,
      "nvtx_program_test GPUSIM_RUN LIBXTIMER_SO NVTX_RANGES LIBNVTX_COUNTER_SO NVTX_LOOP", &p);
  if (rc >= 0) return rc;
  xtimer::hook::g_runner.gpusim_run = p[0];
  xtimer::hook::g_runner.self = p[1];
  xtimer::hook::g_runner.hook_lib = p[2];
  xtimer::hook::g_program = p[3];
  xtimer::hook::g_counter = p[4];
  xtimer::hook::g_loop = p[5];
  const int status = RUN_ALL_TESTS();
  rmdir(xtimer::hook::testing::TmpDir().c_str());
  return status;
}
