// Collective completion reported by NCCL (hook/nccl_profiler.h, docs/hook.md "Collective
// completion") on a whole program: two ranks as threads (hook/programs/nccl_report.cu) on the
// simulated NCCL, which loads libxtimer.so as its profiler plugin (NCCL_PROFILER_PLUGIN) and
// reports kernel channels as NCCL 2.28.9 does (docs/gpusim-nccl.md). Under the default budget the
// collectives past the timed ones are tracked by NCCL's report, with no completion mark; after an
// ncclAlltoAll (its send to itself) and in groups they keep their marks; without the plugin or
// with XTIMER_NCCL_PROFILER=off every one is marked; and a hang is exact either way: the row
// names the collective the peer waits in and the one before it as completed.
// Usage: nccl_report_program_test GPUSIM_RUN LIBXTIMER_SO NCCL_REPORT
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "format/record.h"
#include "format/ring.h"
#include "gtest/gtest.h"
#include "hook/testing/fake_daemon.h"
#include "hook/testing/program_runner.h"

namespace xtimer {
namespace hook {
namespace {

using testing::FakeDaemon;

std::string g_run, g_self, g_lib, g_program;

// Sequence numbers per rank under the default budget (hook/budget.h): the first 1,024 and the
// block of 16 after them are timed, the rest of the first 1,500 all-reduces is not.
constexpr uint64_t kAllReduces = 1500;
constexpr uint64_t kTimed = 1040 - 1;  // seqs 1..1039
constexpr uint64_t kUntimedBefore = kAllReduces - kTimed;
constexpr uint64_t kAfter = 1 + 100;  // the all-to-all, then 100 all-reduces
constexpr uint64_t kLastSeq = kAllReduces + kAfter;

testing::Runner Runner() { return testing::Runner{g_run, g_self, g_lib}; }

std::vector<std::string> Env(bool plugin, std::vector<std::string> more = {}) {
  std::vector<std::string> env = {"XTIMER_JOB=ncclreport", "XTIMER_OVERHEAD_BUDGET=1%"};
  if (plugin) env.push_back("NCCL_PROFILER_PLUGIN=" + g_lib);
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

// Both ranks' rows of the one communicator say every collective completed.
void ExpectAllCompleted(const FakeDaemon::Ring& ring, uint64_t last_seq) {
  int rows = 0;
  for (const format::InflightRow& row : ring.inflight) {
    if (row.comm_id == 0) continue;
    ++rows;
    EXPECT_EQ(row.last_issued_seq, last_seq) << "device " << row.device;
    EXPECT_EQ(row.last_completed_seq, last_seq) << "device " << row.device;
    EXPECT_EQ(row.oldest.state, format::InflightState::kNone);
  }
  EXPECT_EQ(rows, 2);
}

TEST(NcclReportProgramTest, UntimedCollectivesAreCompletedByNcclsReportUntilASendToItself) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(Runner().RunHooked({g_program, "steady", std::to_string(kAllReduces)}, "steady",
                              Env(true), &ring, &out));
  EXPECT_EQ(ring.tracked_by_nccl, 2 * kUntimedBefore) << out;
  EXPECT_EQ(ring.tracked_by_mark, 2 * kAfter) << "the all-to-all and everything after it";
  EXPECT_EQ(ring.op_timed[static_cast<int>(format::OpKind::kCollective)], 2 * kTimed);
  ExpectAllCompleted(ring, kLastSeq);
}

TEST(NcclReportProgramTest, WithoutThePluginOrWithItTurnedOffEveryUntimedOneIsMarked) {
  for (bool plugin : {false, true}) {
    FakeDaemon::Ring ring;
    std::string out;
    ASSERT_TRUE(Runner().RunHooked({g_program, "steady", std::to_string(kAllReduces)}, "marked",
                                Env(plugin, {"XTIMER_NCCL_PROFILER=off"}), &ring, &out));
    EXPECT_EQ(ring.tracked_by_nccl, 0u) << "plugin " << plugin;
    EXPECT_EQ(ring.tracked_by_mark, 2 * (kUntimedBefore + kAfter)) << "plugin " << plugin;
    ExpectAllCompleted(ring, kLastSeq);
  }
}

TEST(NcclReportProgramTest, GroupsKeepTheirMarks) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(Runner().RunHooked({g_program, "groups", "700"}, "groups", Env(true), &ring, &out));
  EXPECT_EQ(ring.tracked_by_nccl, 0u);
  EXPECT_GT(ring.tracked_by_mark, 0u);
  ExpectAllCompleted(ring, 1400);
}

// Rank 0 blocks in its all-reduce 1,200 (untimed); rank 1 launches on, and its stream waits in
// 1,200. Rank 1's row must name 1,200 as the one in flight and 1,199 as completed, exactly, and
// the 160 untimed all-reduces each rank completed must be counted the way they were tracked.
void ExpectExactHang(bool plugin) {
  const std::string sock = testing::TmpDir() + "/hang.sock";
  std::string error;
  auto daemon = FakeDaemon::Start(sock, &error);
  ASSERT_NE(daemon, nullptr) << error;
  std::vector<std::string> env = Env(plugin, {"XTIMER_SIM_HANG=0:1200"});
  env.push_back("XT_HOOK_LIB=" + g_lib);
  env.push_back("XTIMER_DAEMON_SOCKET=" + sock);
  const std::string out_path = testing::TmpDir() + "/hang.out";
  const pid_t pid = testing::SpawnProgram(
      Runner().Hooked({g_program, "steady", std::to_string(kAllReduces)}), env, out_path);
  const uint64_t completed_untimed = 2 * (1199 - kTimed);
  format::InflightRow waiting{}, hung{};
  FakeDaemon::Ring ring;
  bool seen = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    daemon->ReadAll();
    for (const auto& r : daemon->rings()) {
      ring = r;
      for (const format::InflightRow& row : r.inflight) {
        if (row.comm_id == 0) continue;
        if (row.device == 1) waiting = row;
        if (row.device == 0) hung = row;
      }
    }
    seen = waiting.last_completed_seq == 1199 && waiting.oldest.seq == 1200 &&
           hung.last_completed_seq == 1199 &&
           ring.tracked_by_nccl + ring.tracked_by_mark == completed_untimed;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  std::string out;
  testing::ReapProgram(pid, out_path, &out);
  ASSERT_TRUE(seen) << "rank 1 completed " << waiting.last_completed_seq << ", oldest "
                    << waiting.oldest.seq << "; rank 0 completed " << hung.last_completed_seq
                    << "; tracked " << ring.tracked_by_nccl << " + " << ring.tracked_by_mark
                    << "\n" << out;
  EXPECT_EQ(waiting.oldest.state, format::InflightState::kIssued) << "untimed: issued";
  EXPECT_EQ(waiting.last_issued_seq, kLastSeq) << "rank 1 launched on";
  EXPECT_EQ(hung.last_issued_seq, 1199u);
  EXPECT_EQ(hung.oldest.state, format::InflightState::kNone);
  EXPECT_EQ(ring.tracked_by_nccl, plugin ? completed_untimed : 0u);
  EXPECT_EQ(ring.tracked_by_mark, plugin ? 0u : completed_untimed);
}

TEST(NcclReportProgramTest, AHangIsExactWithNcclsReport) { ExpectExactHang(true); }

TEST(NcclReportProgramTest, AHangIsExactWithMarks) { ExpectExactHang(false); }

}  // namespace
}  // namespace hook
}  // namespace xtimer

int main(int argc, char** argv) {
  std::vector<std::string> p;
  const int rc = xtimer::hook::testing::StartProgramTest(
      &argc, argv, 1, "nccl_report_program_test GPUSIM_RUN LIBXTIMER_SO NCCL_REPORT", &p);
  if (rc >= 0) return rc;
  xtimer::hook::g_run = p[0];
  xtimer::hook::g_self = p[1];
  xtimer::hook::g_lib = p[2];
  xtimer::hook::g_program = p[3];
  return RUN_ALL_TESTS();
}
