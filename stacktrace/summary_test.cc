#include "stacktrace/summary.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

constexpr char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
constexpr char kApp[] = "/job/bin/trainer";

Frame Native(const std::string& function, const std::string& module, int line = 0,
             const std::string& file = "") {
  return Frame{Frame::kNative, function, module, line, file};
}
Frame Python(const std::string& function, const std::string& file, int line) {
  return Frame{Frame::kPython, function, file, line, ""};
}

// One rank whose main thread is `stack` (innermost first), the frames listed in that order.
StacksFile OneRank(const std::vector<Frame>& stack) {
  StacksFile f;
  f.rank = 2;
  f.world_size = 4;
  f.pid = 7;
  f.frames = stack;
  Thread main{7, "trainer", {}, ""};
  for (uint32_t i = 0; i < stack.size(); ++i) main.frames.push_back(i);
  f.threads = {main};
  return f;
}

std::string Summarize(const StacksFile& f, int top = 3) {
  StackTree tree;
  tree.AddRank(f);
  return TopFrames(tree, tree.GroupRanks().front(), top);
}

// The rank: a C++ application function that sleeps. Before, the line named libc's
// clock_nanosleep and two more system frames, and the application's function was cut.
TEST(SummaryTest, CxxRankSleepingInAnApplicationFunction) {
  const StacksFile f = OneRank({
      Native("clock_nanosleep", kLibc),
      Native("nanosleep", kLibc),
      // The standard library's template, instantiated in the application's binary.
      Native("void std::this_thread::sleep_for<long, std::ratio<1l, 1000000000l> >(std::chrono::"
             "duration<long, std::ratio<1l, 1000000000l> > const&)",
             kApp),
      Native("trainer::WaitForPeers(int)", kApp, 42, "/src/trainer/wait.cc"),
      Native("main", kApp, 80, "/src/trainer/main.cc"),
      Native("__libc_start_call_main", kLibc),
      Native("_start", kApp),
  });
  EXPECT_EQ(Summarize(f),
            "trainer::WaitForPeers (wait.cc:42) <- main (main.cc:80) via clock_nanosleep <- "
            "nanosleep <- std::this_thread::sleep_for<...>");
  EXPECT_EQ(Summarize(f, 2),
            "trainer::WaitForPeers (wait.cc:42) <- main (main.cc:80) via clock_nanosleep <- ... "
            "<- std::this_thread::sleep_for<...>");
  EXPECT_EQ(Summarize(f, 1),
            "trainer::WaitForPeers (wait.cc:42) via ... <- std::this_thread::sleep_for<...>");
  // The application's function spinning: nothing inward of it.
  EXPECT_EQ(Summarize(OneRank({f.frames[3], f.frames[4]})),
            "trainer::WaitForPeers (wait.cc:42) <- main (main.cc:80)");
}

// A Python rank in a native call: the Python function that made it, then the C frames below
// (CPython's and ctypes' own left out).
TEST(SummaryTest, PythonRankInANativeCall) {
  const StacksFile f = OneRank({
      Native("clock_nanosleep", kLibc),
      Native("", kLibc),
      Native("ffi_call_unix64", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
      Native("_ctypes_callproc",
             "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
      Native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
      Python("stall_in_native", "/job/pydemo.py", 141),
      Python("step", "/job/pydemo.py", 160),
      Python("<module>", "/job/pydemo.py", 200),
      Native("Py_BytesMain", "/usr/bin/python3.11"),
  });
  EXPECT_EQ(Summarize(f), "stall_in_native (pydemo.py:141) <- step (pydemo.py:160) <- <module> "
                          "(pydemo.py:200) via clock_nanosleep");
}

// A PyTorch rank in an all-reduce: the job's libraries are the application's; past the native
// frames named, the Python call that waits follows after "<- ... <-".
TEST(SummaryTest, PytorchRankInNccl) {
  const std::string torch = "/venv/lib/python3.12/site-packages/torch/lib/";
  const StacksFile f = OneRank({
      Native("", "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"),
      Native("ncclAllReduce", "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"),
      Native("c10d::ProcessGroupNCCL::allreduce_impl(at::Tensor&, c10d::AllreduceOptions const&)",
             torch + "libtorch_cuda.so"),
      Native("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, c10d::AllreduceOptions "
             "const&)",
             torch + "libtorch_cuda.so"),
      Native("c10d::ops::allreduce_CUDA(...)", torch + "libtorch_cuda.so"),
      Native("_PyEval_EvalFrameDefault", "/venv/lib/libpython3.12.so.1.0"),
      Python("all_reduce", "/venv/lib/python3.12/site-packages/torch/distributed/c10d.py", 2501),
      Python("train_step", "/job/train.py", 88),
  });
  EXPECT_EQ(Summarize(f),
            "c10d::ProcessGroupNCCL::allreduce_impl <- c10d::ProcessGroupNCCL::allreduce <- "
            "c10d::ops::allreduce_CUDA <- ... <- all_reduce (c10d.py:2501) via ncclAllReduce");
}

// No frame of the application's (a helper thread's main, a synthetic file): as before, the
// innermost frames that are not CPython's.
TEST(SummaryTest, StackWithoutApplicationFrames) {
  const StacksFile f = OneRank({Native("pthread_cond_wait", kLibc),
                                Native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
                                Python("wait", "/usr/lib/python3.11/threading.py", 320),
                                Native("start_thread", kLibc)});
  EXPECT_EQ(Summarize(f), "pthread_cond_wait <- wait (threading.py:320) <- start_thread");
  EXPECT_EQ(Summarize(OneRank({Native("", "")})), "??");
}

// The JSON summary says which frame the line names.
TEST(SummaryTest, JsonNamesTheApplicationFrame) {
  StackTree tree;
  tree.AddRank(OneRank({Native("pause", kLibc), Native("main", kApp)}));
  SummaryInput in;
  in.tree = &tree;
  in.world_size = 4;
  EXPECT_NE(SummaryJson(in).find("\"app_frame\": 1"), std::string::npos) << SummaryJson(in);
  EXPECT_EQ(InnermostApplicationFrame(tree.frames(), tree.GroupRanks()[0].frames), 1);
  EXPECT_EQ(InnermostApplicationFrame(tree.frames(), {}), -1);
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
