// The simulated NCCL's profiler-plugin support (docs/gpusim-nccl.md, "Profiler plugin"): real
// processes (testing/profiler_worker, ranks as threads) load the recording plugin
// (testing/recording_profiler.cc) as NCCL 2.28.9 would, and the calls it saw are checked.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace xtsim {
namespace nccl {
namespace {

using Env = std::map<std::string, std::string>;

std::string Runfile(const std::string& path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  std::string p = "test/gpusim/nccl/" + path;
  if (srcdir != nullptr && workspace != nullptr) p = std::string(srcdir) + "/" + workspace + "/" + p;
  char real[4096];
  return realpath(p.c_str(), real) != nullptr ? real : p;
}

std::string PluginDir() {
  std::string p = Runfile("testing/libnccl-profiler-xtsimtest.so");
  return p.substr(0, p.rfind('/'));
}

// One recorded line: its kind (the first word) and its key=value fields.
struct Line {
  std::string kind;
  std::map<std::string, std::string> f;
  long Int(const std::string& key) const { return std::stol(f.at(key)); }
};

struct Record {
  int status = -1;
  std::vector<Line> lines;
  std::string stderr_text;

  std::vector<const Line*> Of(const std::string& kind) const {
    std::vector<const Line*> out;
    for (const Line& l : lines) {
      if (l.kind == kind) out.push_back(&l);
    }
    return out;
  }
  std::vector<const Line*> Starts(const std::string& type) const {
    std::vector<const Line*> out;
    for (const Line* l : Of("start")) {
      if (l->f.at("type") == type) out.push_back(l);
    }
    return out;
  }
  const Line* Start(long id) const {
    for (const Line* l : Of("start")) {
      if (l->Int("id") == id) return l;
    }
    return nullptr;
  }
  // The index of the first line of `kind` about event `id`, or -1.
  long IndexOf(const std::string& kind, long id) const {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].kind == kind && lines[i].f.count("id") && lines[i].Int("id") == id) {
        return static_cast<long>(i);
      }
    }
    return -1;
  }
  std::set<long> AppTids() const {
    std::set<long> out;
    for (const Line* l : Of("app")) out.insert(l->Int("tid"));
    return out;
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Line> Parse(const std::string& text) {
  std::vector<Line> out;
  std::istringstream in(text);
  std::string row;
  while (std::getline(in, row)) {
    std::istringstream words(row);
    Line l;
    words >> l.kind;
    std::string w;
    while (words >> w) {
      size_t eq = w.find('=');
      if (eq != std::string::npos) l.f[w.substr(0, eq)] = w.substr(eq + 1);
    }
    out.push_back(l);
  }
  return out;
}

// Runs the worker with the test's environment minus the plugin knobs, plus `env`.
Record RunWorker(const std::string& scenario, int nranks, const Env& env) {
  static int counter = 0;
  const char* tmp = getenv("TEST_TMPDIR");
  std::string tag = std::string(tmp != nullptr ? tmp : "/tmp") + "/prof-" + scenario + "-" +
                    std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    if (v.rfind("NCCL_PROFILER_PLUGIN=", 0) == 0 || v.rfind("XTSIM_TEST_PROFILER", 0) == 0 ||
        v.rfind("LD_LIBRARY_PATH=", 0) == 0) {
      continue;
    }
    vars.push_back(v);
  }
  vars.push_back("XTSIM_TEST_PROFILER_LOG=" + tag + ".log");
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string worker = Runfile("profiler_worker"), n = std::to_string(nranks);
  std::vector<char*> argv = {worker.data(), const_cast<char*>(scenario.c_str()), n.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string err_path = tag + ".err";
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid;
  Record run;
  if (posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) {
    ADD_FAILURE() << "cannot start " << worker;
    return run;
  }
  posix_spawn_file_actions_destroy(&actions);
  // A broken simulator fails the test instead of hanging it.
  std::promise<int> exited;
  std::future<int> exit_status = exited.get_future();
  std::thread waiter([&] {
    int status = 0;
    waitpid(pid, &status, 0);
    exited.set_value(status);
  });
  if (exit_status.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    kill(pid, SIGKILL);
    ADD_FAILURE() << scenario << ": the worker did not finish in 120 s";
  }
  int status = exit_status.get();
  waiter.join();
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.lines = Parse(ReadFile(tag + ".log"));
  run.stderr_text = ReadFile(err_path);
  EXPECT_EQ(run.status, 0) << scenario << ": " << run.stderr_text;
  return run;
}

Env ByPath() { return {{"NCCL_PROFILER_PLUGIN", Runfile("testing/libnccl-profiler-xtsimtest.so")}}; }

// --- Loading ---------------------------------------------------------------------------------

void ExpectInitAndFinalize(const Record& run, int nranks) {
  auto inits = run.Of("init");
  ASSERT_EQ(inits.size(), static_cast<size_t>(nranks)) << run.stderr_text;
  std::set<long> ranks, contexts;
  for (const Line* l : inits) {
    ranks.insert(l->Int("rank"));
    contexts.insert(l->Int("ctx"));
    EXPECT_EQ(l->f.at("commId"), inits[0]->f.at("commId"));  // the same communicator
    EXPECT_EQ(l->f.at("name"), "xtsim-test-comm");
    EXPECT_EQ(l->Int("nranks"), nranks);
    EXPECT_EQ(l->Int("nNodes"), 1);
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(nranks));
  auto finals = run.Of("finalize");
  ASSERT_EQ(finals.size(), static_cast<size_t>(nranks));
  std::set<long> finalized;
  for (const Line* l : finals) finalized.insert(l->Int("ctx"));
  EXPECT_EQ(finalized, contexts);
}

TEST(ProfilerLoadTest, PathIsOpenedAsGiven) { ExpectInitAndFinalize(RunWorker("none", 2, ByPath()), 2); }

TEST(ProfilerLoadTest, NameBecomesLibncclProfilerName) {
  Env env = {{"NCCL_PROFILER_PLUGIN", "xtsimtest"}, {"LD_LIBRARY_PATH", PluginDir()}};
  ExpectInitAndFinalize(RunWorker("none", 2, env), 2);
}

TEST(ProfilerLoadTest, UnsetOpensLibncclProfiler) {
  ExpectInitAndFinalize(RunWorker("none", 2, {{"LD_LIBRARY_PATH", PluginDir()}}), 2);
}

TEST(ProfilerLoadTest, NoneMissingOrWithoutSymbolLoadsNothing) {
  const Env cases[] = {
      {{"NCCL_PROFILER_PLUGIN", "none"}, {"LD_LIBRARY_PATH", PluginDir()}},
      {{"NCCL_PROFILER_PLUGIN", PluginDir() + "/libnccl-profiler-absent.so"}},
      {{"NCCL_PROFILER_PLUGIN", "absent"}, {"LD_LIBRARY_PATH", PluginDir()}},
      {{"NCCL_PROFILER_PLUGIN", Runfile("testing/libnccl-profiler-nosymbol.so")}},
  };
  for (const Env& env : cases) {
    Record run = RunWorker("allreduce", 2, env);
    EXPECT_EQ(run.Of("app").size(), 2u);
    EXPECT_TRUE(run.Of("init").empty() && run.Of("start").empty())
        << env.begin()->second << " loaded a plugin";
  }
}

TEST(ProfilerLoadTest, FailedInitIsLoggedAndNeverFinalized) {
  Env env = ByPath();
  env["XTSIM_TEST_PROFILER_INIT_FAIL"] = "1";
  Record run = RunWorker("allreduce", 2, env);
  EXPECT_EQ(run.Of("init-failed").size(), 2u);
  // Its mask stayed 0 (the plugin set none), so no event either.
  EXPECT_TRUE(run.Of("start").empty());
  EXPECT_TRUE(run.Of("finalize").empty());
}

TEST(ProfilerLoadTest, AbortFinalizes) { ExpectInitAndFinalize(RunWorker("abort", 2, ByPath()), 2); }

}  // namespace
}  // namespace nccl
}  // namespace xtsim
