// The parts of the stack capture that need no second process: the Python traceback parser, the
// signal-mask reader, the raw capture JSON and its size bound, and a capture of this process.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "format/stack_request.h"
#include "gtest/gtest.h"
#include "hook/python_stacks.h"
#include "hook/stack_capture.h"
#include "hook/stack_service.h"
#include "stacktrace/json_reader.h"

// ThreadSanitizer's runtime defers an asynchronous signal until the thread next enters one of
// its interceptors, so a thread spinning in plain code never answers the capture signal there.
#ifdef __SANITIZE_THREAD__
#define SKIP_UNDER_TSAN() GTEST_SKIP() << "TSan defers signals to spinning threads"
#else
#define SKIP_UNDER_TSAN() (void)0
#endif

namespace xtimer {
namespace hook {
namespace {

TEST(PythonTracebacksTest, ThreadsAndFrames) {
  const std::string text =
      "Thread 0x00007f2bdfef06c0 (most recent call first):\n"
      "  File \"/tmp/fh.py\", line 3 in spin\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
      "  ...\n"
      "\n"
      "Current thread 0x00007f2be01ab040 (most recent call first):\n"
      "  File \"/a \\\", line 9\", line 6 in <module>\n"
      "  File \"???\", line ??? in ???\n"
      "\n"
      "Thread 0x0000000000000010 (most recent call first):\n"
      "  <no Python frame>\n"
      "...\n";
  std::vector<PythonThread> t;
  std::string error;
  ASSERT_TRUE(ParsePythonTracebacks(text, &t, &error)) << error;
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].thread_id, 0x00007f2bdfef06c0ull);
  ASSERT_EQ(t[0].frames.size(), 2u);
  EXPECT_EQ(t[0].frames[0].function, "spin");
  EXPECT_EQ(t[0].frames[0].file, "/tmp/fh.py");
  EXPECT_EQ(t[0].frames[0].line, 3);
  EXPECT_EQ(t[0].frames[1].line, 975);
  EXPECT_EQ(t[1].thread_id, 0x00007f2be01ab040ull);
  ASSERT_EQ(t[1].frames.size(), 2u);
  EXPECT_EQ(t[1].frames[0].file, "/a \\\", line 9");  // the last ", line " ends the file name
  EXPECT_EQ(t[1].frames[0].function, "<module>");
  EXPECT_EQ(t[1].frames[1].line, 0);  // unknown
  EXPECT_TRUE(t[2].frames.empty());
}

TEST(PythonTracebacksTest, RefusesUnknownText) {
  std::vector<PythonThread> t;
  std::string error;
  EXPECT_FALSE(ParsePythonTracebacks("  File \"f.py\", line 1 in f\n", &t, &error));
  EXPECT_EQ(error, "line 1: a frame before any thread");
  EXPECT_FALSE(ParsePythonTracebacks("Thread 0x1 (most recent call first):\nFatal\n", &t, &error));
  EXPECT_EQ(error, "line 2: unexpected text \"Fatal\"");
}

TEST(SigBlkTest, ReadsTheMask) {
  uint64_t mask = 0;
  EXPECT_TRUE(ParseSigBlk("Name:\tx\nSigPnd:\t0000000000000000\nSigBlk:\t0000001000000000\n", &mask));
  EXPECT_EQ(mask, 1ull << 36);
  EXPECT_FALSE(ParseSigBlk("Name:\tx\n", &mask));
}

TEST(RawStacksJsonTest, MapsPythonThreadsToTids) {
  std::vector<ThreadStack> threads(2);
  threads[0].tid = 10;
  threads[0].name = "main \"x\" \xc3\xa9\t";  // quote, UTF-8 e-acute, tab
  threads[0].pcs = {0x7fffffff0000ull, 2};
  threads[0].pthread_id = 0xabc;
  threads[1].tid = 11;
  threads[1].error = "signals blocked";
  PythonCapture py;
  py.python = true;
  py.threads.resize(2);
  py.threads[0].thread_id = 0xabc;
  py.threads[0].frames.push_back({"f", "a.py", 4});
  py.threads[0].frames.push_back({std::string(5000, 'g'), "b.py", 5});
  py.threads[1].thread_id = 0xdef;  // not among the native threads that answered
  std::string json = RawStacksJson(5, 123, threads, py);
  stacktrace::JsonValue v;
  std::string error;
  ASSERT_TRUE(stacktrace::ParseJson(json, &v, &error)) << error << json;
  EXPECT_EQ(v.Find("format")->str, "xtimer-raw-stacks");
  EXPECT_EQ(v.Find("pid")->integer, 5);
  EXPECT_EQ(v.Find("capture_time_ns")->integer, 123);
  const auto& t = v.Find("threads")->items;
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].Find("name")->str, "main \"x\" \xc3\xa9\t") << "UTF-8 passes unchanged";
  EXPECT_EQ(t[0].Find("pcs")->items[0].integer, 0x7fffffff0000ll);
  EXPECT_EQ(t[0].Find("error"), nullptr);
  EXPECT_EQ(t[1].Find("error")->str, "signals blocked");
  const auto& p = v.Find("python_threads")->items;
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].Find("tid")->integer, 10);
  EXPECT_EQ(p[0].Find("frames")->items[0].Find("line")->integer, 4);
  EXPECT_EQ(p[0].Find("frames")->items[1].Find("function")->str.size(), 4096u) << "bounded";
  EXPECT_EQ(p[1].Find("tid")->integer, 0);
  EXPECT_EQ(v.Find("python_error"), nullptr);
  py.error = "why";
  ASSERT_TRUE(stacktrace::ParseJson(RawStacksJson(5, 1, {}, py), &v, &error)) << error;
  EXPECT_EQ(v.Find("python_error")->str, "why");
  ASSERT_TRUE(stacktrace::ParseJson(RawStacksJson(5, 1, {}, PythonCapture()), &v, &error));
  EXPECT_EQ(v.Find("python_threads"), nullptr) << "no Python: no python_threads";
}

TEST(RawStacksJsonTest, CutsStacksToTheSizeLimit) {
  std::vector<ThreadStack> threads(kMaxCaptureThreads);
  for (int i = 0; i < kMaxCaptureThreads; ++i) {
    threads[i].tid = i + 1;
    threads[i].pcs.assign(kMaxCaptureFrames, 0x7fffffffffffull);
  }
  const std::string json = RawStacksJson(1, 1, threads, PythonCapture());
  EXPECT_LE(json.size(), format::kMaxRawStacksBytes);
  EXPECT_GT(json.size(), format::kMaxRawStacksBytes / 4) << "cut more than needed";
  // Text checks only: a DOM of 16 MiB of numbers is slow under the sanitizers.
  size_t threads_seen = 0;
  for (size_t at = json.find("{\"tid\": "); at != std::string::npos;
       at = json.find("{\"tid\": ", at + 1)) {
    ++threads_seen;
  }
  EXPECT_EQ(threads_seen, static_cast<size_t>(kMaxCaptureThreads));
  const size_t cut = json.find("\"stack cut to ");
  ASSERT_NE(cut, std::string::npos);
  int kept = 0, had = 0;
  ASSERT_EQ(sscanf(json.c_str() + cut, "\"stack cut to %d of %d frames", &kept, &had), 2);
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, kMaxCaptureFrames);
  EXPECT_EQ(had, kMaxCaptureFrames);
  const std::string first_pcs = json.substr(json.find("\"pcs\": ["), json.find(']') - json.find("\"pcs\": ["));
  EXPECT_EQ(static_cast<int>(std::count(first_pcs.begin(), first_pcs.end(), ',')), kept - 1);
}

extern "C" __attribute__((noinline)) void UnitTestSpin(std::atomic<bool>* running,
                                                      std::atomic<bool>* stop) {
  running->store(true);
  while (!stop->load(std::memory_order_relaxed)) {
  }
}

TEST(CaptureNativeStacksTest, ThisProcess) {
  SKIP_UNDER_TSAN();
  std::string error;
  ASSERT_TRUE(InstallStackSignal(SIGRTMIN + 3, &error)) << error;
  EXPECT_EQ(StackSignal(), SIGRTMIN + 3);
  std::atomic<bool> running{false}, stop{false};
  std::thread spinner(&UnitTestSpin, &running, &stop);
  const pthread_t spinner_id = spinner.native_handle();
  pthread_setname_np(spinner_id, "unit-spinner");
  // A thread starts with every signal blocked until glibc's start routine sets its mask: a
  // capture before the spinner runs its function would rightly say "signals blocked".
  while (!running.load()) std::this_thread::yield();
  std::vector<ThreadStack> threads;
  std::thread capturer([&threads] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
    threads = CaptureNativeStacks();
  });
  capturer.join();
  stop.store(true);
  spinner.join();
  bool found = false;
  for (const ThreadStack& t : threads) {
    if (t.name != "unit-spinner") continue;
    found = true;
    EXPECT_EQ(t.error, "");
    EXPECT_FALSE(t.pcs.empty());
    EXPECT_EQ(t.pthread_id, static_cast<uint64_t>(spinner_id));
  }
  EXPECT_TRUE(found);
  EXPECT_GE(threads.size(), 2u);  // the main thread too (the capturer is left out)
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
