// Python tracing without code changes (hook/python_trace.h): hook/programs/pytrace_program.py runs
// on Debian's python3 (3.11) and pyenv's 3.8, 3.12 and 3.13 (a version missing fails the test)
// with libxtimer.so preloaded and a fake daemon; XTIMER_PY_TRACE names its functions. Its spans
// reach the ring as NVTX ranges of the domain "xtimer.python": every traced call on the main
// thread and on a thread started after tracing began, a subclass's override under the base's
// spec, a call left by an exception, the data loader's waits (each at least what the loader
// measured of itself), and one collection of each generation. A profiler of the program's own
// (sys.setprofile before or after, sys.monitoring on 3.12+) receives every one of its events.
// The tracer's callbacks are the hook's own time (hook_own_ns), CUDA or not.
// Usage: python_trace_program_test GPUSIM_RUN LIBXTIMER_SO PYTRACE_PROGRAM
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "format/python_spans.h"
#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/testing/fake_daemon.h"
#include "hook/testing/program_runner.h"

namespace xtimer {
namespace hook {
namespace {

using format::NvtxEvent;
using format::NvtxRecord;
using format::PythonSpanKind;
using format::RecordType;
using testing::FakeDaemon;

testing::Runner g_runner;
std::string g_program;
constexpr int kCalls = 5;
const char kSpecs[] =
    "__main__:compute,__main__:Model.step@step,__main__:SlowLoader.__next__@data,__main__:fails";

// Debian's python3 and pyenv's newest 3.8, 3.12 and 3.13.
std::vector<std::string> Pythons() {
  std::vector<std::string> pythons = {"/usr/bin/python3"};
  const char* home = getenv("HOME");
  for (const char* v : {"3.8", "3.12", "3.13"}) {
    const std::string glob = std::string(home != nullptr ? home : "/root") + "/.pyenv/versions/" +
                             v + ".*/bin/python" + v;
    FILE* p = popen(("ls -d " + glob + " 2>/dev/null | tail -1").c_str(), "r");
    char buf[1024] = {};
    if (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) {
      std::string path(buf);
      path.pop_back();
      pythons.push_back(path);
    } else {
      ADD_FAILURE() << "CPython " << v << " is required: no " << glob;
    }
    if (p != nullptr) pclose(p);
  }
  return pythons;
}

// A span: the range record with its name.
struct Span {
  NvtxRecord r;
  std::string name;
};

std::vector<Span> PythonSpans(const FakeDaemon::Ring& ring) {
  std::vector<Span> out;
  for (const format::RecordSlot& s : ring.records) {
    if (s.header.type != static_cast<uint8_t>(RecordType::kNvtx)) continue;
    const NvtxRecord& r = s.nvtx;
    if (testing::NameOf(ring, r.domain_id, RecordType::kNvtxString) !=
        format::kPythonSpanDomain) {
      continue;
    }
    EXPECT_EQ(r.event, static_cast<uint8_t>(NvtxEvent::kRange));
    EXPECT_LE(r.start_ns, r.end_ns);
    out.push_back({r, testing::NameOf(ring, r.name_id, RecordType::kNvtxString)});
  }
  return out;
}

// The value after "KEY " in the program's output.
std::string Line(const std::string& out, const std::string& key) {
  const std::string text = "\n" + out;
  const size_t at = text.find("\n" + key + " ");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

std::vector<int64_t> LoaderNs(const std::string& out) {
  std::vector<int64_t> ns;
  std::stringstream in(Line(out, "loader_ns"));
  for (std::string item; std::getline(in, item, ',');) ns.push_back(std::stoll(item));
  return ns;
}

struct ProgramRun {
  std::string out;
  std::vector<Span> spans;
  int minor = 0;
};

std::vector<std::string> Env(const std::string& mode) {
  std::vector<std::string> env = {"XTIMER_JOB=pytrace", "XTIMER_HOST=testhost"};
  if (mode != "idle") env.push_back(std::string("XTIMER_PY_TRACE=") + kSpecs);
  // Under ASan: CPython leaves its objects allocated at exit (LeakSanitizer would report them).
  const char* asan = getenv("ASAN_OPTIONS");
  env.push_back(std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") + ":detect_leaks=0");
  return env;
}

ProgramRun RunProgram(const std::string& python, const std::string& mode) {
  ProgramRun run;
  FakeDaemon::Ring ring;
  EXPECT_TRUE(g_runner.RunHooked({python, g_program, mode, std::to_string(kCalls)}, "pytrace",
                                 Env(mode), &ring, &run.out));
  run.spans = PythonSpans(ring);
  run.minor = atoi(Line(run.out, "minor").c_str());
  return run;
}

std::vector<Span> Named(const std::vector<Span>& spans, const std::string& name) {
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (s.name == name) out.push_back(s);
  }
  return out;
}

// What every mode shows. `main_traced`: whether the main thread's calls after the installation
// are traced (not on 3.8-3.11 once the program's own profiler replaced xtimer's there).
void CheckSpans(const ProgramRun& run, const std::string& label, bool main_traced) {
  const int main_calls = main_traced ? kCalls : 0;
  const auto compute = Named(run.spans, "__main__:compute");
  std::map<uint32_t, int> by_thread;
  for (const Span& s : compute) ++by_thread[s.r.tid];
  // Direct calls and the calls inside Model.step on the main thread; the worker's calls.
  ASSERT_EQ(static_cast<int>(compute.size()), 2 * main_calls + kCalls) << label << run.out;
  EXPECT_EQ(by_thread.size(), main_traced ? 2u : 1u) << label;
  const auto step = Named(run.spans, "__main__:Model.step");  // Sub.step wraps Model.step: one
  EXPECT_EQ(static_cast<int>(step.size()), main_calls) << label;
  for (const Span& s : step) {
    EXPECT_EQ(s.r.category, uint32_t(PythonSpanKind::kStep)) << label;
    EXPECT_NE(s.r.flags & format::kNvtxStep, 0) << label;  // a training step for every reader
  }
  for (const Span& s : compute) EXPECT_EQ(s.r.flags & format::kNvtxStep, 0) << label;
  const auto fails = Named(run.spans, "__main__:fails");
  EXPECT_EQ(static_cast<int>(fails.size()), main_calls) << label;
  int nested = 0;  // compute inside a step is one level down; a raise closed its span
  for (const Span& s : compute) {
    nested += s.r.depth == 1;
    EXPECT_LE(s.r.depth, 1) << label;
  }
  EXPECT_EQ(nested, main_calls) << label;
  EXPECT_TRUE(Named(run.spans, "__main__:untraced").empty()) << label;
  const auto loader = Named(run.spans, "__main__:SlowLoader.__next__");
  const std::vector<int64_t> inner = LoaderNs(run.out);
  ASSERT_EQ(inner.size(), static_cast<size_t>(kCalls)) << label;
  ASSERT_EQ(static_cast<int>(loader.size()), main_calls) << label;
  for (size_t i = 0; i < loader.size(); ++i) {  // in ring order: the program's order
    EXPECT_EQ(loader[i].r.category, uint32_t(PythonSpanKind::kData)) << label;
    EXPECT_GE(loader[i].r.end_ns - loader[i].r.start_ns, inner[i]) << label << " batch " << i;
  }
  std::map<uint64_t, int> gc;
  for (const Span& s : run.spans) {
    if (s.r.category != uint32_t(PythonSpanKind::kGc)) continue;
    EXPECT_EQ(s.r.flags & format::kNvtxHasPayload, format::kNvtxHasPayload);
    EXPECT_EQ(s.name, "gc gen" + std::to_string(s.r.payload)) << label;
    ++gc[s.r.payload];
  }
  for (uint64_t g = 0; g < 3; ++g) EXPECT_GE(gc[g], 1) << label << " generation " << g;
}

TEST(PythonTraceProgramTest, TracesEveryThreadWithoutAProfilerOfTheProgram) {
  for (const std::string& python : Pythons()) {
    const ProgramRun run = RunProgram(python, "none");
    EXPECT_NE(run.out.find("\nOK"), std::string::npos) << python << run.out;
    CheckSpans(run, python, true);
    EXPECT_EQ(Line(run.out, "profiler"), "call=0 return=0");
    EXPECT_GE(run.minor, 8) << run.out;
    EXPECT_EQ(Line(run.out, "profile_hook"), run.minor >= 12 ? "none" : "set") << python;
  }
}

// The program's own sys.setprofile receives all its events, installed before the hook starts
// (chained on 3.8-3.11) or after (then it replaces xtimer's on its thread there; 3.12+ traces on
// through sys.monitoring). The main thread's compute runs kCalls times directly and kCalls in
// Model.step.
TEST(PythonTraceProgramTest, TheProgramsProfilerKeepsAllItsEvents) {
  const std::string all = "call=" + std::to_string(2 * kCalls) +
                          " return=" + std::to_string(2 * kCalls);
  for (const std::string& python : Pythons()) {
    for (const char* mode : {"before", "after"}) {
      const ProgramRun run = RunProgram(python, mode);
      const std::string label = python + " " + mode;
      EXPECT_EQ(Line(run.out, "profiler"), all) << label << run.out;
      CheckSpans(run, label, run.minor >= 12 || std::string(mode) == "before");
    }
  }
}

// Without XTIMER_PY_TRACE (the PyTorch/Megatron defaults, none of which this program imports):
// on 3.8-3.11 no profile function is installed (it would slow every call), on 3.12+ the
// monitoring tool waits with no local event; collections are traced everywhere.
TEST(PythonTraceProgramTest, TheDefaultsCostUntracedCallsNothing) {
  for (const std::string& python : Pythons()) {
    const ProgramRun run = RunProgram(python, "idle");
    EXPECT_NE(run.out.find("\nOK"), std::string::npos) << python << run.out;
    EXPECT_EQ(Line(run.out, "profile_hook"), "none") << python;
    EXPECT_EQ(Line(run.out, "tool4"), run.minor >= 12 ? "xtimer" : "None") << python;
    std::map<uint64_t, int> gc;
    for (const Span& s : run.spans) {
      EXPECT_EQ(s.r.category, uint32_t(PythonSpanKind::kGc)) << python << " " << s.name;
      ++gc[s.r.payload];
    }
    for (uint64_t g = 0; g < 3; ++g) EXPECT_GE(gc[g], 1) << python << " generation " << g;
  }
}

// 3.12+: a sys.monitoring tool of the program's (PROFILER_ID) sees every call on every thread.
TEST(PythonTraceProgramTest, AMonitoringToolOfTheProgramKeepsAllItsEvents) {
  const std::string all = "call=" + std::to_string(3 * kCalls) +
                          " return=" + std::to_string(3 * kCalls);
  int checked = 0;
  for (const std::string& python : Pythons()) {
    if (python.find("python3.1") == std::string::npos) continue;  // 3.12, 3.13
    const ProgramRun run = RunProgram(python, "monitoring");
    ASSERT_GE(run.minor, 12) << python;
    EXPECT_EQ(Line(run.out, "profiler"), all) << python << run.out;
    CheckSpans(run, python, true);
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// The hook_own_ns of a run of the program's "count" mode: `calls` traced calls and no CUDA call.
// *wall_ns: how long the run took, start to exit.
uint64_t OwnNsOfCalls(const std::string& python, int calls, int64_t* wall_ns) {
  FakeDaemon::Ring ring;
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(g_runner.RunHooked({python, g_program, "count", std::to_string(calls)}, "pycount",
                                 Env("count"), &ring, &out));
  *wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now() - start)
                 .count();
  EXPECT_NE(out.find("\nOK"), std::string::npos) << python << out;
  for (uint64_t n : ring.op_calls) EXPECT_EQ(n, 0u) << python << ": no op";
  return ring.hook_own_ns;
}

// The tracer's callbacks are the hook's own time (the ring header's hook_own_ns; budget.h
// AddFixedOwnTime) in a process that makes no CUDA call: 40,000 more traced calls add at least
// 10 ns each (a call and a return, each charged from one clock read to the next:
// budget::ChargeSince), on the profile function (3.8-3.11) and sys.monitoring (3.12+) alike, and
// the run's own time is no more than the run took. (Load only adds to the callbacks' time.)
TEST(PythonTraceProgramTest, TracedCallsAreTheHooksOwnTime) {
  constexpr int kFew = 1000, kMany = 41000;  // spans: well within the ring
  for (const std::string& python : Pythons()) {
    int64_t few_wall = 0, wall = 0;
    const uint64_t few = OwnNsOfCalls(python, kFew, &few_wall);
    const uint64_t many = OwnNsOfCalls(python, kMany, &wall);
    const std::string got = python + ": hook_own_ns " + std::to_string(few) + " for " +
                            std::to_string(kFew) + " calls, " + std::to_string(many) + " for " +
                            std::to_string(kMany);
    EXPECT_GE(many, few + uint64_t{kMany - kFew} * 2 * 5) << got;
    EXPECT_LE(many, static_cast<uint64_t>(wall)) << got;
  }
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

int main(int argc, char** argv) {
  std::vector<std::string> p;
  const int rc = xtimer::hook::testing::StartProgramTest(
      &argc, argv, 1, "python_trace_program_test GPUSIM_RUN LIBXTIMER_SO PYTRACE_PROGRAM", &p);
  if (rc >= 0) return rc;
  xtimer::hook::g_runner.gpusim_run = p[0];
  xtimer::hook::g_runner.self = p[1];
  xtimer::hook::g_runner.hook_lib = p[2];
  xtimer::hook::g_program = p[3];
  const int status = RUN_ALL_TESTS();
  rmdir(xtimer::hook::testing::TmpDir().c_str());
  return status;
}
