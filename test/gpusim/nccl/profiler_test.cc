// The simulated NCCL's profiler-plugin support (docs/gpusim-nccl.md, "Profiler plugin"): real
// processes (testing/profiler_worker, ranks as threads) load the recording plugin
// (testing/recording_profiler.cc) as NCCL 2.28.9 would, and the calls it saw are checked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
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

#include "third_party/nccl_profiler/nccl_profiler_v5.h"

extern char** environ;

namespace xtsim {
namespace nccl {
namespace {

using Env = std::map<std::string, std::string>;

std::string Runfile(const std::string& path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  std::string p = "test/gpusim/nccl/" + path;
  if (srcdir != nullptr && workspace != nullptr)
    p = std::string(srcdir) + "/" + workspace + "/" + p;
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

// The plugin by path, reading each task's buffer when a kernel channel stops.
Env ByPath() {
  return {{"NCCL_PROFILER_PLUGIN", Runfile("testing/libnccl-profiler-xtsimtest.so")},
          {"XTSIM_TEST_PROFILER_READ", "1"}};
}

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

TEST(ProfilerLoadTest, PathIsOpenedAsGiven) {
  ExpectInitAndFinalize(RunWorker("none", 2, ByPath()), 2);
}

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

TEST(ProfilerLoadTest, AbortFinalizes) {
  ExpectInitAndFinalize(RunWorker("abort", 2, ByPath()), 2);
}

// --- Events ----------------------------------------------------------------------------------

// The calls made on thread `tid`, in order, as "start TYPE", "record STATE" and "stop TYPE".
std::vector<std::string> CallsOn(const Record& run, long tid) {
  std::vector<std::string> out;
  for (const Line& l : run.lines) {
    if (!l.f.count("tid") || l.Int("tid") != tid) continue;
    if (l.kind == "start") out.push_back("start " + l.f.at("type"));
    if (l.kind == "record") out.push_back("record " + l.f.at("state"));
    if (l.kind == "stop") out.push_back("stop " + run.Start(l.Int("id"))->f.at("type"));
  }
  return out;
}

// The events of `type` started on thread `tid`.
std::vector<const Line*> StartsOn(const Record& run, const std::string& type, long tid) {
  std::vector<const Line*> out;
  for (const Line* l : run.Starts(type)) {
    if (l->Int("tid") == tid) out.push_back(l);
  }
  return out;
}

// Every kernel channel of task event `parent`: started off the application threads, once per
// channel, stopped after recording ncclProfilerKernelChStop with a later GPU time, and after
// the result was in place (`first`: the first float of the task's buffer at each stop; empty:
// not checked).
void ExpectChannels(const Record& run, const Line& parent, int nch, const std::string& first) {
  std::set<long> channels;
  for (const Line* ch : run.Starts("KernelCh")) {
    if (ch->Int("parent") != parent.Int("id")) continue;
    long id = ch->Int("id");
    channels.insert(ch->Int("channel"));
    EXPECT_EQ(run.AppTids().count(ch->Int("tid")), 0u) << "a kernel channel on an app thread";
    EXPECT_GT(run.IndexOf("start", id), run.IndexOf("start", parent.Int("id")));
    long rec = run.IndexOf("record", id), stop = run.IndexOf("stop", id);
    ASSERT_GE(rec, 0);
    ASSERT_GT(stop, rec);
    const Line& r = run.lines[static_cast<size_t>(rec)];
    EXPECT_EQ(r.Int("state"), 22);
    EXPECT_GE(std::stoull(r.f.at("pTimer")), std::stoull(ch->f.at("pTimer")));
    EXPECT_EQ(r.Int("tid"), ch->Int("tid"));
    if (!first.empty()) EXPECT_EQ(run.lines[static_cast<size_t>(stop)].f.at("first"), first);
  }
  EXPECT_EQ(channels.size(), static_cast<size_t>(nch)) << "channels of event " << parent.f.at("id");
}

TEST(ProfilerEventTest, UngroupedAllReduce) {
  Record run = RunWorker("allreduce", 2, ByPath());
  ASSERT_EQ(run.AppTids().size(), 2u);
  const std::vector<std::string> expected = {
      "start GroupApi", "record 23",          "start CollApi",     "stop CollApi",
      "record 24",      "start KernelLaunch", "stop KernelLaunch", "start Group",
      "start Coll",     "stop Coll",          "stop Group",        "stop GroupApi"};
  for (long tid : run.AppTids()) {
    EXPECT_EQ(CallsOn(run, tid), expected);
    const Line& group_api = *StartsOn(run, "GroupApi", tid).at(0);
    const Line& coll_api = *StartsOn(run, "CollApi", tid).at(0);
    const Line& launch = *StartsOn(run, "KernelLaunch", tid).at(0);
    const Line& group = *StartsOn(run, "Group", tid).at(0);
    const Line& coll = *StartsOn(run, "Coll", tid).at(0);
    EXPECT_EQ(group_api.Int("depth"), 1);  // the implicit group of an ungrouped call
    EXPECT_EQ(coll_api.f.at("parent"), group_api.f.at("id"));
    EXPECT_EQ(coll_api.f.at("func"), "AllReduce");
    EXPECT_EQ(coll_api.Int("count"), 1024);
    EXPECT_EQ(launch.f.at("parent"), group_api.f.at("id"));
    EXPECT_EQ(launch.f.at("stream"), coll_api.f.at("stream"));
    EXPECT_EQ(coll.f.at("parent"), coll_api.f.at("id"));
    EXPECT_EQ(coll.f.at("group"), group.f.at("id"));
    EXPECT_EQ(coll.Int("seq"), 0);
    EXPECT_EQ(coll.f.at("dtype"), "ncclFloat32");
    EXPECT_EQ(coll.Int("nch"), 2);
    EXPECT_EQ(coll.f.at("algo") + "/" + coll.f.at("proto"), "RING/SIMPLE");
    // 1 + 2: the sum is in the receive buffer when each channel stops.
    ExpectChannels(run, coll, 2, "3");
  }
  // finalize() after every kernel channel of its communicator.
  for (const Line* ch : run.Starts("KernelCh")) {
    long fin = -1;
    for (size_t i = 0; i < run.lines.size(); ++i) {
      if (run.lines[i].kind == "finalize" && run.lines[i].f.at("ctx") == ch->f.at("ctx")) {
        fin = static_cast<long>(i);
      }
    }
    EXPECT_GT(fin, run.IndexOf("stop", ch->Int("id")));
  }
}

TEST(ProfilerEventTest, GroupOfCollectives) {
  Record run = RunWorker("group", 2, ByPath());
  for (long tid : run.AppTids()) {
    auto group_api = StartsOn(run, "GroupApi", tid);
    ASSERT_EQ(group_api.size(), 1u);
    EXPECT_EQ(group_api[0]->Int("depth"), 2);  // the user's group and the call's own
    EXPECT_EQ(StartsOn(run, "KernelLaunch", tid).size(), 1u);
    EXPECT_EQ(StartsOn(run, "Group", tid).size(), 1u);
    auto apis = StartsOn(run, "CollApi", tid);
    auto colls = StartsOn(run, "Coll", tid);
    ASSERT_EQ(apis.size(), 3u);
    ASSERT_EQ(colls.size(), 3u);
    std::map<std::string, const Line*> by_func;
    for (const Line* c : colls) by_func[c->f.at("func")] = c;
    for (const Line* a : apis) {
      EXPECT_EQ(a->f.at("parent"), group_api[0]->f.at("id"));
      ASSERT_TRUE(by_func.count(a->f.at("func")));
      EXPECT_EQ(by_func[a->f.at("func")]->f.at("parent"), a->f.at("id"));
      EXPECT_EQ(by_func[a->f.at("func")]->Int("seq"), 0);
    }
    // NCCL moves AllGather and Broadcast as bytes of ncclInt8.
    EXPECT_EQ(by_func["AllGather"]->f.at("dtype"), "ncclInt8");
    EXPECT_EQ(by_func["AllGather"]->Int("count"), 4096);
    EXPECT_EQ(by_func["Broadcast"]->Int("count"), 4096);
    EXPECT_EQ(by_func["AllReduce"]->f.at("dtype"), "ncclFloat32");
    for (const Line* c : colls) ExpectChannels(run, *c, 2, "");
    // The group API event stops last, after every task event.
    EXPECT_EQ(CallsOn(run, tid).back(), "stop GroupApi");
  }
}

TEST(ProfilerEventTest, SendRecv) {
  const int n = 3;
  Record run = RunWorker("sendrecv", n, ByPath());
  for (const Line* p2p : run.Starts("P2p")) {
    int rank = static_cast<int>(p2p->Int("rank"));
    const Line* api = run.Start(p2p->Int("parent"));
    ASSERT_NE(api, nullptr);
    EXPECT_EQ(api->f.at("type"), "P2pApi");
    EXPECT_EQ(api->f.at("func"), p2p->f.at("func"));
    bool send = p2p->f.at("func") == "Send";
    int peer = send ? (rank + 1) % n : (rank + n - 1) % n;
    EXPECT_EQ(p2p->Int("peer"), peer);
    EXPECT_EQ(p2p->Int("nch"), 2);
    // A receive holds the peer's value (peer + 1) when its channels stop.
    ExpectChannels(run, *p2p, 2, std::to_string(send ? rank + 1 : peer + 1));
  }
  EXPECT_EQ(run.Starts("P2p").size(), 2u * n);
  EXPECT_EQ(run.Starts("P2pApi").size(), 2u * n);
}

TEST(ProfilerEventTest, SequenceNumbersArePerFunction) {
  Env env = ByPath();
  env.erase("XTSIM_TEST_PROFILER_READ");  // later operations write the buffers
  Record run = RunWorker("repeat", 2, env);
  for (long tid : run.AppTids()) {
    std::vector<std::string> seen;
    for (const Line* c : StartsOn(run, "Coll", tid)) {
      seen.push_back(c->f.at("func") + ":" + c->f.at("seq"));
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"AllReduce:0", "AllGather:0", "AllReduce:1"}));
  }
}

std::set<std::string> TypesUnderMask(int mask) {
  Env env = ByPath();
  env["XTSIM_TEST_PROFILER_MASK"] = std::to_string(mask);
  Record run = RunWorker("allreduce", 2, env);
  std::set<std::string> types;
  for (const Line* l : run.Of("start")) types.insert(l->f.at("type"));
  return types;
}

TEST(ProfilerEventTest, MaskGatesEventsAsNcclDoes) {
  using Set = std::set<std::string>;
  EXPECT_EQ(TypesUnderMask(ncclProfileColl), (Set{"GroupApi", "CollApi", "Group", "Coll"}));
  EXPECT_EQ(TypesUnderMask(ncclProfileKernelLaunch), (Set{"GroupApi", "KernelLaunch"}));
  EXPECT_EQ(TypesUnderMask(ncclProfileCollApi), (Set{"GroupApi", "CollApi"}));
  // Kernel channels need their parents: every event above them is made.
  EXPECT_EQ(TypesUnderMask(ncclProfileKernelCh),
            (Set{"GroupApi", "CollApi", "Group", "Coll", "KernelCh"}));
  EXPECT_EQ(TypesUnderMask(0), Set{});
}

TEST(ProfilerEventTest, EmptyOperations) {
  Record run = RunWorker("empty", 2, ByPath());
  // An empty collective is dropped before any event; empty send/recv still run a kernel.
  EXPECT_TRUE(run.Starts("CollApi").empty());
  EXPECT_TRUE(run.Starts("Coll").empty());
  EXPECT_EQ(run.Starts("P2pApi").size(), 4u);
  ASSERT_EQ(run.Starts("P2p").size(), 4u);
  for (const Line* p2p : run.Starts("P2p")) {
    EXPECT_EQ(p2p->Int("count"), 0);
    EXPECT_EQ(p2p->Int("nch"), 1);
    ExpectChannels(run, *p2p, 1, "");
  }
}

TEST(ProfilerEventTest, OneRankCommunicator) {
  Record coll = RunWorker("allreduce", 1, ByPath());
  EXPECT_EQ(coll.Of("init").size(), 1u);
  EXPECT_TRUE(coll.Of("start").empty()) << "a 1-rank collective is a copy: no event";
  EXPECT_EQ(coll.Of("finalize").size(), 1u);
  // Send/recv with oneself: P2p events (with their channel count), but NCCL adds no proxy
  // operation for them, so no kernel channel is ever reported.
  Record p2p = RunWorker("sendrecv", 1, ByPath());
  ASSERT_EQ(p2p.Starts("P2p").size(), 2u);
  for (const Line* l : p2p.Starts("P2p")) {
    EXPECT_EQ(l->Int("peer"), 0);
    EXPECT_EQ(l->Int("nch"), 2);
  }
  EXPECT_TRUE(p2p.Starts("KernelCh").empty());
}

TEST(ProfilerEventTest, SimulatedGroupLaunchesNothing) {
  Record run = RunWorker("simulate", 2, ByPath());
  EXPECT_EQ(run.Starts("GroupApi").size(), 2u);
  EXPECT_EQ(run.Starts("CollApi").size(), 2u);
  for (const char* type : {"KernelLaunch", "Group", "Coll", "KernelCh"}) {
    EXPECT_TRUE(run.Starts(type).empty()) << type;
  }
}

// With kernel channels, a captured plan makes its task events at every graph launch, off the
// application thread, and counts them; the API and launch events come once, at capture.
TEST(ProfilerEventTest, GraphReplaysReportEachLaunch) {
  Env env = ByPath();
  env.erase("XTSIM_TEST_PROFILER_READ");  // the second launch rewrites the buffer
  Record run = RunWorker("graph", 2, env);
  for (long tid : run.AppTids()) {
    auto group_api = StartsOn(run, "GroupApi", tid);
    auto coll_api = StartsOn(run, "CollApi", tid);
    ASSERT_EQ(group_api.size(), 1u);
    ASSERT_EQ(coll_api.size(), 1u);
    EXPECT_EQ(group_api[0]->Int("captured"), 1);
    EXPECT_EQ(coll_api[0]->Int("captured"), 1);
    EXPECT_EQ(StartsOn(run, "KernelLaunch", tid).size(), 1u);
    EXPECT_TRUE(StartsOn(run, "Coll", tid).empty());
    std::vector<long> seqs;
    for (const Line* c : run.Starts("Coll")) {
      if (c->f.at("parent") != coll_api[0]->f.at("id")) continue;
      EXPECT_EQ(run.AppTids().count(c->Int("tid")), 0u);
      seqs.push_back(c->Int("seq"));
      ExpectChannels(run, *c, 2, "");
    }
    EXPECT_EQ(seqs, (std::vector<long>{0, 1}));
  }
}

// Without kernel channels a captured plan has no proxy work: its task events come once, at
// capture, and do not advance the sequence number.
TEST(ProfilerEventTest, GraphWithoutKernelChannelsReportsAtCapture) {
  Env env = ByPath();
  env.erase("XTSIM_TEST_PROFILER_READ");
  env["XTSIM_TEST_PROFILER_MASK"] = std::to_string(ncclProfileCollApi | ncclProfileColl);
  Record run = RunWorker("graph", 2, env);
  for (long tid : run.AppTids()) {
    auto colls = StartsOn(run, "Coll", tid);
    ASSERT_EQ(colls.size(), 1u);
    EXPECT_EQ(colls[0]->Int("seq"), 0);
  }
  EXPECT_EQ(run.Starts("Coll").size(), 2u);
  EXPECT_TRUE(run.Starts("KernelCh").empty());
}

}  // namespace
}  // namespace nccl
}  // namespace xtsim
