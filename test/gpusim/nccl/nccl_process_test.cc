// The simulated NCCL with ranks that are separate processes (testing/nccl_worker), including the
// fault knobs. Every job has a deadline: a broken simulator fails the test instead of hanging it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "test/gpusim/nccl/testing/scenarios.h"

extern char** environ;

namespace xtsim {
namespace nccl {
namespace testing {
namespace {

using Env = std::map<std::string, std::string>;

std::string WorkerPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return std::string(srcdir) + "/" + workspace + "/test/gpusim/nccl/nccl_worker";
  }
  return "test/gpusim/nccl/nccl_worker";
}

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One process per rank, spawned with the parent's environment plus `env` and the rank's own.
class Job {
 public:
  Job(std::string scenario, int nranks, Env env)
      : scenario_(std::move(scenario)), nranks_(nranks), env_(std::move(env)) {
    static int counter = 0;
    tag_ = TempDir() + "/" + scenario_ + "-" + std::to_string(getpid()) + "-" +
           std::to_string(counter++);
  }
  ~Job() { KillAll(); }

  // Per-rank variables on top of the job's (XTIMER_SIM_RANK is always set).
  void SetRankEnv(int rank, const std::string& key, const std::string& value) {
    rank_env_[rank][key] = value;
  }

  void Start() {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::string hex = IdToHex(id), worker = WorkerPath();
    for (int r = 0; r < nranks_; ++r) {
      Env env = env_;
      env["XTIMER_SIM_RANK"] = std::to_string(r);
      env["XTIMER_SIM_NCCL_CHUNK_BYTES"] = "4096";
      env["XTIMER_SIM_NCCL_P2P_BYTES"] = "8192";
      for (const auto& [k, v] : rank_env_[r]) env[k] = v;
      std::vector<std::string> strings = EnvironmentWith(env);
      std::vector<char*> envp;
      for (std::string& s : strings) envp.push_back(s.data());
      envp.push_back(nullptr);
      std::string args[] = {worker, scenario_, std::to_string(r), std::to_string(nranks_), hex};
      char* argv[] = {args[0].data(), args[1].data(), args[2].data(),
                      args[3].data(), args[4].data(), nullptr};
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 1, OutPath(r).c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_addopen(&actions, 2, ErrPath(r).c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
      pid_t pid = -1;
      int err = posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv, envp.data());
      posix_spawn_file_actions_destroy(&actions);
      ASSERT_EQ(err, 0) << "posix_spawn " << worker << ": " << strerror(err);
      pids_.push_back(pid);
      status_.push_back(-1);
    }
  }

  // Waits until every rank has exited or `seconds` passed; returns whether all exited.
  bool Wait(double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      bool all = true;
      for (size_t r = 0; r < pids_.size(); ++r) {
        if (status_[r] != -1) continue;
        int st = 0;
        if (waitpid(pids_[r], &st, WNOHANG) == pids_[r]) {
          status_[r] = st;
        } else {
          all = false;
        }
      }
      if (all) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  bool Running(int r) const { return status_[static_cast<size_t>(r)] == -1; }
  int Status(int r) const { return status_[static_cast<size_t>(r)]; }
  std::string Out(int r) const { return ReadFile(OutPath(r)); }
  std::string Err(int r) const { return ReadFile(ErrPath(r)); }

  double Value(int r, const std::string& key) const {
    std::string needle = "VALUE " + key + "=";
    std::string out = Out(r);
    size_t at = out.find(needle);
    if (at == std::string::npos) {
      ADD_FAILURE() << "rank " << r << " reported no " << key << "; stdout:\n"
                    << out << "stderr:\n"
                    << Err(r);
      return -1;
    }
    return atof(out.c_str() + at + needle.size());
  }

  // Every rank exited with status 0 in time.
  void ExpectSuccess(double seconds) {
    bool done = Wait(seconds);
    EXPECT_TRUE(done) << scenario_ << " did not finish within " << seconds << " s";
    for (int r = 0; r < nranks_; ++r) {
      int st = Status(r);
      EXPECT_TRUE(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
          << scenario_ << " rank " << r << " status " << st << "\nstdout:\n"
          << Out(r) << "stderr:\n"
          << Err(r);
    }
  }

  void KillAll() {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (status_[r] != -1) continue;
      kill(pids_[r], SIGKILL);
      waitpid(pids_[r], &status_[r], 0);
    }
  }

 private:
  std::string OutPath(int r) const { return tag_ + "." + std::to_string(r) + ".out"; }
  std::string ErrPath(int r) const { return tag_ + "." + std::to_string(r) + ".err"; }

  static std::vector<std::string> EnvironmentWith(const Env& extra) {
    std::vector<std::string> out;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      if (extra.count(kv.substr(0, kv.find('='))) == 0) out.push_back(kv);
    }
    for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
    return out;
  }

  std::string scenario_;
  int nranks_;
  Env env_;
  std::map<int, Env> rank_env_;
  std::string tag_;
  std::vector<pid_t> pids_;
  std::vector<int> status_;
};

// Sanitizers install their own SIGSEGV handler; the crash test needs the signal to kill.
std::string WithSegvUnhandled(const char* var) {
  const char* v = getenv(var);
  std::string s = v != nullptr ? v : "";
  return s + (s.empty() ? "" : ":") + "handle_segv=0";
}

constexpr double kDeadlineS = 120;

TEST(NcclProcessTest, Collectives) {
  Job job("collectives", 4, {});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
}

TEST(NcclProcessTest, SendRecv) {
  Job job("sendrecv", 3, {});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
}

TEST(NcclProcessTest, Split) {
  Job job("split", 4, {});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
}

TEST(NcclProcessTest, Shrink) {
  Job job("shrink", 3, {});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
}

TEST(NcclProcessTest, TimingIsMaxArrivalPlusModel) {
  const int n = 4;
  Job job("timing", n, {{"XTIMER_SIM_INTRA_BW_GBPS", "2"}, {"XTIMER_SIM_INTRA_LAT_US", "5"}});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  if (HasFailure()) return;
  const double mib = 1 << 20;
  const double allreduce = ModelMs(mib, 2.0 * (n - 1) / n, 2, 5);
  EXPECT_NEAR(job.Value(0, "allreduce_ms"), allreduce, 1e-3);  // rank 0 arrives last
  EXPECT_NEAR(job.Value(0, "allgather_ms"), ModelMs(n * mib, (n - 1.0) / n, 2, 5), 1e-3);
  EXPECT_NEAR(job.Value(0, "grouped_ms"), 2 * allreduce, 1e-3);
  for (int r = 1; r < n; ++r) {
    EXPECT_GT(job.Value(r, "allreduce_ms"), allreduce + 20) << "rank " << r;
  }
}

// Ranks {0,1} on node 0 and {2,3} on node 1 (intra-node 2 GB/s and 5 us, inter-node 0.5 GB/s
// and 15 us), with `knob` set to "3:4". Returns the time the last rank to arrive measured (exactly
// the modelled time) of the world's and of the pairs' 1 MiB all-reduces.
struct TwoNodeTimes {
  double world_ms, pair01_ms, pair23_ms;
};
TwoNodeTimes RunTwoNodes(const char* knob, const std::string& value = "3:4") {
  const int n = 4;
  Job job("timed_split", n,
          {{"XTIMER_SIM_INTRA_BW_GBPS", "2"},
           {"XTIMER_SIM_INTRA_LAT_US", "5"},
           {"XTIMER_SIM_INTER_BW_GBPS", "0.5"},
           {"XTIMER_SIM_INTER_LAT_US", "15"},
           {knob, value}});
  for (int r = 0; r < n; ++r) job.SetRankEnv(r, "XTIMER_SIM_NODE", std::to_string(r / 2));
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  auto min_of = [&](const std::string& key, std::vector<int> ranks) {
    double v = 1e300;
    for (int r : ranks) v = std::min(v, job.Value(r, key));
    return v;
  };
  return {min_of("world_ms", {0, 1, 2, 3}), min_of("pair_ms", {0, 1}), min_of("pair_ms", {2, 3})};
}

// Rank 3's links are 4x slow. The world crosses nodes and includes rank 3; the pair {0,1} is
// intra-node and healthy; the pair {2,3} intra-node, slow.
TEST(NcclProcessTest, NodesAndSlowLink) {
  const TwoNodeTimes t = RunTwoNodes("XTIMER_SIM_SLOW_LINK");
  if (HasFailure()) return;
  const double mib = 1 << 20;
  EXPECT_NEAR(t.world_ms, ModelMs(mib, 1.5, 0.5 / 4, 15), 1e-3);
  EXPECT_NEAR(t.pair01_ms, ModelMs(mib, 1.0, 2, 5), 1e-3);
  EXPECT_NEAR(t.pair23_ms, ModelMs(mib, 1.0, 2.0 / 4, 5), 1e-3);
}

// Rank 3's network (not its node's fabric) 4x slow: the world, which crosses the nodes, slows
// down; the pair {2,3} inside node 1 does not.
TEST(NcclProcessTest, SlowNicSlowsOnlyTrafficAcrossNodes) {
  const TwoNodeTimes t = RunTwoNodes("XTIMER_SIM_SLOW_NIC");
  if (HasFailure()) return;
  const double mib = 1 << 20;
  EXPECT_NEAR(t.world_ms, ModelMs(mib, 1.5, 0.5 / 4, 15), 1e-3);
  EXPECT_NEAR(t.pair01_ms, ModelMs(mib, 1.0, 2, 5), 1e-3);
  EXPECT_NEAR(t.pair23_ms, ModelMs(mib, 1.0, 2, 5), 1e-3);
}

// With an onset (Unix seconds), the slow NIC slows transfers that start from then on: one long
// past is in force, one an hour ahead is not yet.
TEST(NcclProcessTest, SlowNicFromItsOnset) {
  const double mib = 1 << 20;
  const TwoNodeTimes past = RunTwoNodes("XTIMER_SIM_SLOW_NIC", "3:4:1000");
  if (HasFailure()) return;
  EXPECT_NEAR(past.world_ms, ModelMs(mib, 1.5, 0.5 / 4, 15), 1e-3);
  const std::string later = "3:4:" + std::to_string(static_cast<long>(time(nullptr)) + 3600);
  const TwoNodeTimes ahead = RunTwoNodes("XTIMER_SIM_SLOW_NIC", later);
  if (HasFailure()) return;
  EXPECT_NEAR(ahead.world_ms, ModelMs(mib, 1.5, 0.5, 15), 1e-3);
  EXPECT_NEAR(ahead.pair23_ms, ModelMs(mib, 1.0, 2, 5), 1e-3);
}

TEST(NcclProcessTest, InjectedErrorWithCode) {
  Job job("error", 2, {{"XTIMER_SIM_NCCL_ERROR", "0:2:3"}});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  if (HasFailure()) return;
  EXPECT_EQ(job.Value(0, "result"), ncclInternalError);
  EXPECT_EQ(job.Value(0, "async_error"), ncclInternalError);
  EXPECT_EQ(job.Value(0, "world_async_error"), ncclSuccess);
  EXPECT_NE(job.Err(0).find("XTIMER_SIM_NCCL_ERROR"), std::string::npos) << job.Err(0);
}

TEST(NcclProcessTest, InjectedErrorDefaultsToSystemError) {
  Job job("error", 2, {{"XTIMER_SIM_NCCL_ERROR", "0:2"}});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  if (HasFailure()) return;
  EXPECT_EQ(job.Value(0, "result"), ncclSystemError);
  EXPECT_EQ(job.Value(0, "async_error"), ncclSystemError);
}

// Rank 1 blocks forever in its second collective on the world; rank 0 issued its second one
// and waits for it forever. Both stay alive until killed.
TEST(NcclProcessTest, HangStopsTheRankAndBlocksItsPeers) {
  Job job("hang", 2, {{"XTIMER_SIM_HANG", "1:2"}});
  job.Start();
  EXPECT_FALSE(job.Wait(3)) << "a rank exited; rank 1 stderr:\n" << job.Err(1);
  EXPECT_TRUE(job.Running(0) && job.Running(1));
  EXPECT_NE(
      job.Err(1).find("XTIMER_SIM_HANG: rank 1 hangs in its collective call 2 on communicator #0"),
      std::string::npos)
      << job.Err(1);
  EXPECT_NE(job.Out(1).find("PROGRESS done 1"), std::string::npos) << job.Out(1);
  EXPECT_EQ(job.Out(1).find("PROGRESS issued 2"), std::string::npos) << job.Out(1);
  EXPECT_NE(job.Out(0).find("PROGRESS issued 2"), std::string::npos) << job.Out(0);
  EXPECT_EQ(job.Out(0).find("PROGRESS done 2"), std::string::npos) << job.Out(0);
  job.KillAll();
}

// With a communicator index, only that communicator's count matters: rank 1 hangs in the first
// collective of the second communicator it created (the split child), its third overall.
TEST(NcclProcessTest, HangOnOneCommunicator) {
  Job job("hang", 2, {{"XTIMER_SIM_HANG", "1:1:1"}});
  job.Start();
  EXPECT_FALSE(job.Wait(3));
  EXPECT_NE(job.Err(1).find("hangs in its collective call 1 on communicator #1"), std::string::npos)
      << job.Err(1);
  EXPECT_NE(job.Out(1).find("PROGRESS done 2"), std::string::npos) << job.Out(1);
  EXPECT_NE(job.Out(0).find("PROGRESS issued 3"), std::string::npos) << job.Out(0);
  EXPECT_EQ(job.Out(0).find("PROGRESS done 3"), std::string::npos) << job.Out(0);
  job.KillAll();
}

// Real NCCL does not check that the members of a collective made the same call: mismatched
// kernels wait for data that never comes. The simulator's members compare their calls and all
// stay in the collective until ncclCommAbort releases them.
TEST(NcclProcessTest, MatchingCallsComplete) {
  Job job("mismatch", 2, {{"XTIMER_TEST_MISMATCH", "none"}});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  if (HasFailure()) return;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.Value(r, "completed"), 1) << "rank " << r;
    EXPECT_EQ(job.Value(r, "drained"), 1) << "rank " << r;
  }
}

TEST(NcclProcessTest, MismatchedCollectiveNeverCompletesOnAnyMember) {
  for (const char* mode : {"op", "count"}) {
    Job job("mismatch", 2, {{"XTIMER_TEST_MISMATCH", mode}});
    job.Start();
    job.ExpectSuccess(kDeadlineS);
    if (HasFailure()) return;
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(job.Value(r, "completed"), 0) << mode << ", rank " << r;
      EXPECT_EQ(job.Value(r, "drained"), 1) << mode << ", rank " << r;
    }
  }
}

// XTIMER_SIM_STUCK=1:2: the second collective of a communicator holding rank 1 never completes,
// on either member, though both made the same call.
TEST(NcclProcessTest, StuckCollectiveHoldsEveryMember) {
  Job job("mismatch", 2, {{"XTIMER_TEST_MISMATCH", "none"}, {"XTIMER_SIM_STUCK", "1:2"}});
  job.Start();
  job.ExpectSuccess(kDeadlineS);
  if (HasFailure()) return;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.Value(r, "completed"), 0) << "rank " << r;
    EXPECT_NE(job.Err(r).find("XTIMER_SIM_STUCK: rank " + std::to_string(r) +
                              " is stuck in collective 2 (ncclAllReduce) of communicator #0"),
              std::string::npos)
        << job.Err(r);
  }
}

// Rank 1 dies of SIGSEGV in its second collective; rank 0 sees ncclRemoteError, aborts, drains.
TEST(NcclProcessTest, CrashKillsTheRankWithSigsegv) {
  Job job("crash", 2, {{"XTIMER_SIM_CRASH", "1:2"}});
  job.SetRankEnv(1, "ASAN_OPTIONS", WithSegvUnhandled("ASAN_OPTIONS"));
  job.SetRankEnv(1, "TSAN_OPTIONS", WithSegvUnhandled("TSAN_OPTIONS"));
  job.SetRankEnv(1, "UBSAN_OPTIONS", WithSegvUnhandled("UBSAN_OPTIONS"));
  job.Start();
  ASSERT_TRUE(job.Wait(kDeadlineS));
  int st = job.Status(1);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) << "status " << st << "\n" << job.Err(1);
  EXPECT_NE(job.Err(1).find("XTIMER_SIM_CRASH: rank 1 crashes"), std::string::npos) << job.Err(1);
  st = job.Status(0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "\n" << job.Err(0);
  EXPECT_EQ(job.Value(0, "async_error"), ncclRemoteError);
  EXPECT_EQ(job.Value(0, "drained"), 1);
}

}  // namespace
}  // namespace testing
}  // namespace nccl
}  // namespace xtsim
