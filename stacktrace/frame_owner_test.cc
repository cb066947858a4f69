#include "stacktrace/frame_owner.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

Frame Native(const std::string& function, const std::string& module) {
  return Frame{Frame::kNative, function, module, 0, ""};
}
Frame Python(const std::string& function, const std::string& file, int line) {
  return Frame{Frame::kPython, function, file, line, ""};
}

constexpr char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
constexpr char kHook[] = "/opt/xtimer/lib/libxtimer.so";

// A C++ rank of the simulated job (stacktrace/testdata/sim_cpp_hang): its own binary, the
// stand-in CUDA runtime, libc, libstdc++ and the hook.
TEST(FrameOwnerTest, CxxApplicationOnTheSimulator) {
  EXPECT_EQ(OwnerOf(Native("(anonymous namespace)::StopInHostCode((anonymous namespace)::Rank "
                           "const&, char const*, long)",
                           "/opt/xtimer/bin/demo/diag_job")),
            Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("main", "/opt/xtimer/bin/demo/diag_job")), Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("", "/opt/xtimer/bin/demo/diag_job")), Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("pause", kLibc)), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("", kLibc)), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("clock_nanosleep", "/lib/x86_64-linux-gnu/libc-2.31.so")),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("pthread_cond_wait", "/lib64/libpthread.so.0")), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("_dl_start_user", "/lib64/ld-linux-x86-64.so.2")), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("execute_native_thread_routine",
                           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30")),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("_Unwind_RaiseException", "/lib/x86_64-linux-gnu/libgcc_s.so.1")),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("__vdso_clock_gettime", "[vdso]")), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("cudaEventSynchronize", "/opt/xtimer/bin/test/gpusim/libcudart.so.13")),
            Owner::kCuda);
  EXPECT_EQ(OwnerOf(Native("cudaEventSynchronize", kHook)), Owner::kXtimer);  // the shim
  EXPECT_EQ(OwnerOf(Native("cudaError xtimer::hook::SyncCall<cudaEventSynchronize::{lambda()#1}>("
                           "cudaEventSynchronize::{lambda()#1}&&, xtimer::format::Operation, "
                           "CUstream_st*)",
                           kHook)),
            Owner::kXtimer);
  // The C++ standard library's templates and the C runtime's entry point, compiled or linked
  // into the application's binary, are the system's; in NVIDIA's or xtimer's module, theirs.
  EXPECT_EQ(OwnerOf(Native("void std::this_thread::sleep_for<long, std::ratio<1l, 1000000000l> "
                           ">(std::chrono::duration<long, std::ratio<1l, 1000000000l> > const&)",
                           "/opt/xtimer/bin/demo/diag_job")),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("_start", "/opt/xtimer/bin/demo/diag_job")), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("void std::condition_variable::wait<cudaEventSynchronize::{lambda()#1}>"
                           "(std::unique_lock<std::mutex>&, cudaEventSynchronize::{lambda()#1})",
                           "/opt/xtimer/bin/test/gpusim/libcudart.so.13")),
            Owner::kCuda);
  // xtimer's functions by name wherever they are (a return type first, as demangled).
  EXPECT_EQ(OwnerOf(Native("cudaError xtimer::hook::SyncCall<F>(F&&, xtimer::format::Operation, "
                           "CUstream_st*)",
                           "/job/bin/static_train")),
            Owner::kXtimer);
  // A library whose name only starts like a system one is the application's.
  EXPECT_EQ(OwnerOf(Native("Solve", "/job/lib/libmpi_solver.so")), Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("Solve", "/job/lib/libcore.so")), Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("Load", "/job/lib/ldap_loader.so")), Owner::kApplication);
}

// NVIDIA's libraries as a real machine and pip wheels install them.
TEST(FrameOwnerTest, CudaLibraries) {
  for (const char* module : {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                             "/usr/local/cuda/lib64/libcudart.so.13",
                             "/usr/local/cuda/lib64/libcublas.so.13",
                             "/usr/local/cuda/lib64/libcublasLt.so.13",
                             "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                             "/usr/local/cuda/lib64/libcudnn_ops.so.9",
                             "/usr/local/cuda/lib64/libcufft.so.12",
                             "/usr/local/cuda/lib64/libnvrtc.so.13",
                             "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1"}) {
    EXPECT_EQ(OwnerOf(Native("", module)), Owner::kCuda) << module;
  }
  EXPECT_EQ(OwnerOf(Native("ncclAllReduce", "/usr/lib/x86_64-linux-gnu/libnccl.so.2")),
            Owner::kCuda);
  // Without a module (a synthetic file), by the function's name.
  EXPECT_EQ(OwnerOf(Native("ncclAllReduce", "")), Owner::kCuda);
  EXPECT_EQ(OwnerOf(Native("pncclAllReduce", "")), Owner::kCuda);
  EXPECT_EQ(OwnerOf(Native("cuLaunchKernel", "")), Owner::kCuda);
  EXPECT_EQ(OwnerOf(Native("cublasGemmEx", "")), Owner::kCuda);
  EXPECT_EQ(OwnerOf(Native("cumulative_sum", "")), Owner::kApplication);
  // An application function named like CUDA's, in the application's module, is its own.
  EXPECT_EQ(OwnerOf(Native("cudaCheck", "/job/bin/train")), Owner::kApplication);
  // PyTorch's CUDA code is a library of the job's, not NVIDIA's.
  EXPECT_EQ(OwnerOf(Native("c10d::ProcessGroupNCCL::allreduce(...)",
                           "/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so")),
            Owner::kApplication);
}

// A Python rank blocked in a native call: its Python files, CPython (Debian's python3.11 holds
// the interpreter in the executable; pyenv's builds in libpython), ctypes and the stdlib.
TEST(FrameOwnerTest, PythonApplicationWithNativeFrames) {
  EXPECT_EQ(OwnerOf(Python("stall_in_native", "/job/demo/python/pydemo.py", 141)),
            Owner::kApplication);
  EXPECT_EQ(OwnerOf(Python("<module>", "<string>", 1)), Owner::kApplication);
  EXPECT_EQ(OwnerOf(Python("forward", "/venv/lib/python3.12/site-packages/torch/nn/module.py", 9)),
            Owner::kApplication);
  EXPECT_EQ(OwnerOf(Python("all_reduce",
                           "/usr/lib/python3/dist-packages/torch/distributed/c10d.py", 2)),
            Owner::kApplication);
  EXPECT_EQ(OwnerOf(Python("wait", "/usr/lib/python3.11/threading.py", 320)), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Python("get", "/root/.pyenv/versions/3.12.1/lib/python3.12/queue.py", 171)),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Python("_find_and_load", "<frozen importlib._bootstrap>", 1176)),
            Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11")),
            Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("pymain_run_python", "/usr/bin/python3.11")), Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("", "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0")),
            Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("_ctypes_callproc", "/usr/lib/python3.11/lib-dynload/"
                                                "_ctypes.cpython-311-x86_64-linux-gnu.so")),
            Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("ffi_call_unix64", "/usr/lib/x86_64-linux-gnu/libffi.so.8")),
            Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("PyObject_Call", "/job/ext/fastops.cpython-311-x86_64-linux-gnu.so")),
            Owner::kInterpreter);
  EXPECT_EQ(OwnerOf(Native("fastops::Sum(double const*, long)",
                           "/job/ext/fastops.cpython-311-x86_64-linux-gnu.so")),
            Owner::kApplication);
  EXPECT_EQ(OwnerOf(Native("sleep", kLibc)), Owner::kSystem);
  EXPECT_EQ(OwnerOf(Native("main", "/job/bin/python_like_app")), Owner::kApplication);
}

TEST(FrameOwnerTest, UnknownFramesAndNames) {
  EXPECT_EQ(OwnerOf(Native("", "")), Owner::kUnknown);
  EXPECT_EQ(OwnerOf(Frame{Frame::kThread, "MainThread", "", 0, ""}), Owner::kUnknown);
  EXPECT_EQ(OwnerOf(Frame{Frame::kError, "signals blocked", "", 0, ""}), Owner::kUnknown);
  EXPECT_STREQ(OwnerName(Owner::kApplication), "application");
  EXPECT_STREQ(OwnerName(Owner::kXtimer), "xtimer");
  EXPECT_TRUE(IsXtimerThreadName("xtimer-poller"));
  EXPECT_TRUE(IsXtimerThreadName("xtimer-stacks"));
  EXPECT_FALSE(IsXtimerThreadName("xtimer"));
  EXPECT_FALSE(IsXtimerThreadName("pt_autograd_0"));
}

// The file of a rank whose main thread waits in a call through the hook, with the poller, an
// unnamed hook thread and a helper thread of the CUDA library's.
StacksFile HookedRank() {
  StacksFile f;
  f.rank = 0;
  f.world_size = 1;
  f.pid = 100;
  f.frames = {Native("", kLibc),                                                // 0
              Native("pthread_cond_wait", kLibc),                               // 1
              Native("cudaEventSynchronize", "/gpusim/libcudart.so.13"),        // 2
              Native("xtimer::hook::SyncCall<...>(...)", kHook),                // 3
              Native("cudaEventSynchronize", kHook),                            // 4
              Native("WaitForStep(Rank&, long)", "/job/bin/train"),             // 5
              Native("main", "/job/bin/train"),                                 // 6
              Native("xtimer::hook::Poller::Run()", kHook),                     // 7
              Native("execute_native_thread_routine", "/usr/lib/libstdc++.so.6"),  // 8
              Native("start_thread", kLibc),                                    // 9
              Native("ncclProxyService(void*)", "/usr/lib/libnccl.so.2")};      // 10
  f.threads = {{100, "train", {0, 1, 2, 3, 4, 5, 6}, ""},
               {101, "xtimer-poller", {}, "signals blocked"},
               {102, "train", {1, 7, 8, 9}, ""},  // a hook thread that kept the process's name
               {103, "cuda-EvtHandlr", {0, 9}, ""},
               {104, "train", {1, 2, 3, 4, 10, 9}, ""}};  // NCCL's thread calls through the hook
  return f;
}

TEST(FrameOwnerTest, FoldXtimerDropsItsThreadsAndFrames) {
  StacksFile f = HookedRank();
  const size_t table = f.frames.size();
  FoldXtimer(&f);
  ASSERT_EQ(f.threads.size(), 3u);
  EXPECT_EQ(f.threads[0].tid, 100);
  EXPECT_EQ(f.threads[0].frames, (std::vector<uint32_t>{0, 1, 2, 5, 6}));  // the hook's cut out
  EXPECT_EQ(f.threads[1].tid, 103);  // CUDA's own helper thread stays
  EXPECT_EQ(f.threads[1].frames, (std::vector<uint32_t>{0, 9}));
  EXPECT_EQ(f.threads[2].tid, 104);  // so does NCCL's, without the hook's frames
  EXPECT_EQ(f.threads[2].frames, (std::vector<uint32_t>{1, 2, 10, 9}));
  EXPECT_EQ(f.frames.size(), table);  // indices stay valid
}

TEST(FrameOwnerTest, FoldXtimerKeepsAFileWithoutTheHookAsItIs) {
  StacksFile f = HookedRank();
  f.threads = {{100, "train", {0, 1, 2, 5, 6}, ""}, {103, "cuda-EvtHandlr", {0, 9}, ""}};
  const std::vector<Thread> before = f.threads;
  FoldXtimer(&f);
  ASSERT_EQ(f.threads.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(f.threads[i].tid, before[i].tid);
    EXPECT_EQ(f.threads[i].frames, before[i].frames);
  }
  // The poller blocks the capture signal: no frame of the hook's, its name alone says whose.
  f.frames.resize(3);
  f.threads = {{100, "train", {0, 1, 2}, ""}, {101, "xtimer-poller", {}, "signals blocked"}};
  FoldXtimer(&f);
  ASSERT_EQ(f.threads.size(), 1u);
  EXPECT_EQ(f.threads[0].tid, 100);
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
