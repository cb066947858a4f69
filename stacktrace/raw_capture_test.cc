#include "stacktrace/raw_capture.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

Frame Native(const std::string& f) {
  Frame fr;
  fr.function = f;
  fr.module = "/lib/x.so";
  return fr;
}

Frame Py(const std::string& f, int line) {
  Frame fr;
  fr.kind = Frame::kPython;
  fr.function = f;
  fr.module = "/job/train.py";
  fr.line = line;
  return fr;
}

std::vector<std::string> Names(const std::vector<Frame>& frames) {
  std::vector<std::string> out;
  for (const Frame& f : frames) out.push_back(f.function);
  return out;
}

TEST(CombineFrames, PythonFramesReplaceTheInterpreterFrames) {
  const std::vector<Frame> native = {Native("nanosleep"), Native("time_sleep"),
                                     Native("_PyEval_EvalFrameDefault"), Native("_PyFunction_Vectorcall"),
                                     Native("_PyEval_EvalFrameDefault"), Native("PyRun_SimpleFile"),
                                     Native("main")};
  const std::vector<Frame> python = {Py("spin", 42), Py("<module>", 50)};
  EXPECT_EQ(Names(CombineFrames(native, python)),
            (std::vector<std::string>{"nanosleep", "time_sleep", "spin", "<module>",
                                      "PyRun_SimpleFile", "main"}));
  // No eval frame: the Python frames go outward of the native ones.
  EXPECT_EQ(Names(CombineFrames({Native("a"), Native("b")}, python)),
            (std::vector<std::string>{"a", "b", "spin", "<module>"}));
  // No Python frames: the native stack as it is, eval frames included.
  EXPECT_EQ(CombineFrames(native, {}).size(), native.size());
  // Bounded.
  EXPECT_EQ(CombineFrames(std::vector<Frame>(1000, Native("x")), std::vector<Frame>(100, Py("y", 1)))
                .size(),
            static_cast<size_t>(kMaxFramesPerThread));
}

TEST(ParseRawCapture, ReadsTheDocumentedExample) {
  RawCapture raw;
  std::string error;
  ASSERT_TRUE(ParseRawCapture(
      R"({"format": "xtimer-raw-stacks", "version": 1, "pid": 4242,
          "capture_time_ns": 1764000000123456789,
          "threads": [
           {"tid": 4242, "name": "python3", "pcs": [140737351991296, 140737351991552]},
           {"tid": 4250, "name": "worker", "pcs": [], "error": "signals blocked"}],
          "python_threads": [
           {"thread_id": 140737353922368, "tid": 4242,
            "frames": [{"function": "spin", "file": "/job/train.py", "line": 42}]}]})",
      &raw, &error))
      << error;
  EXPECT_EQ(raw.pid, 4242);
  EXPECT_EQ(raw.capture_time_ns, 1764000000123456789);
  ASSERT_EQ(raw.threads.size(), 2u);
  EXPECT_EQ(raw.threads[0].pcs[1], 140737351991552u);
  EXPECT_EQ(raw.threads[1].error, "signals blocked");
  ASSERT_EQ(raw.python_threads.size(), 1u);
  EXPECT_EQ(raw.python_threads[0].frames[0].module, "/job/train.py");
  EXPECT_EQ(raw.python_threads[0].frames[0].line, 42);
}

TEST(ParseRawCapture, RefusesWithTheFieldNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "not a JSON object"},
      {R"({"format": "xtimer-stacks", "version": 1, "threads": []})", "\"format\" is not"},
      {R"({"format": "xtimer-raw-stacks", "version": 2, "threads": []})",
       "\"version\" is 2: this daemon reads version 1"},
      {R"({"format": "xtimer-raw-stacks", "version": 1})", "\"threads\" is missing"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [{"tid": -1, "pcs": []}]})",
       "threads[0]: \"tid\" is -1"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [{"tid": 1, "pcs": [-5]}]})",
       "threads[0]: \"pcs\" holds a value that is no address"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [],
           "python_threads": [{"frames": [{"file": "x"}]}]})",
       "python_threads[0]: frames[0]: \"function\" is missing"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [{"tid": 1, "pcs": [1,)",
       "byte"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "crash": 11, "threads": []})",
       "\"crash\" is not an object"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "crash": {"signal": 99}, "threads": []})",
       "crash: \"signal\" is 99"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "crash": {"tid": 1}, "threads": []})",
       "crash: \"signal\" is missing"},
      {R"({"format": "xtimer-raw-stacks", "version": 1, "crash": {"python_exception": 1},
           "threads": []})",
       "crash: \"python_exception\" is not an object"},
      {R"({"format": "xtimer-raw-stacks", "version": 1,
           "crash": {"python_exception": {"message": "m"}}, "threads": []})",
       "crash: python_exception: \"type\" is missing"},
  };
  for (const auto& c : cases) {
    RawCapture raw;
    std::string error;
    EXPECT_FALSE(ParseRawCapture(c.first, &raw, &error)) << c.first;
    EXPECT_NE(error.find(c.second), std::string::npos) << error;
  }
  std::string many = R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [{"tid": 1, "pcs": [)";
  for (int i = 0; i <= kMaxFramesPerThread; ++i) many += (i ? ",1" : "1");
  many += "]}]}";
  RawCapture raw;
  std::string error;
  EXPECT_FALSE(ParseRawCapture(many, &raw, &error));
  EXPECT_NE(error.find("\"pcs\" has 1025 entries, over 1024"), std::string::npos) << error;
}

TEST(ParseRawCapture, ReadsACrashReport) {
  // The shape hook/crash_report.cc writes (docs/crash.md).
  const std::string text = R"({"format": "xtimer-raw-stacks", "version": 1, "pid": 7,
    "capture_time_ns": 5, "crash": {"signal": 11, "si_code": 1, "fault_address": "0x10",
    "tid": 8}, "threads": [{"tid": 8, "name": "main", "pcs": [4096, 8192]}]})";
  RawCapture raw;
  std::string error;
  ASSERT_TRUE(ParseRawCapture(text, &raw, &error)) << error;
  EXPECT_TRUE(raw.crash.present);
  EXPECT_EQ(raw.crash.signal, 11);
  EXPECT_EQ(raw.crash.si_code, 1);
  EXPECT_EQ(raw.crash.fault_address, "0x10");
  EXPECT_EQ(raw.crash.tid, 8);
  ASSERT_EQ(raw.threads.size(), 1u);
  EXPECT_EQ(raw.threads[0].pcs.size(), 2u);
  // A stack capture has no crash object.
  ASSERT_TRUE(ParseRawCapture(R"({"format": "xtimer-raw-stacks", "version": 1, "threads": []})",
                              &raw, &error));
  EXPECT_FALSE(raw.crash.present);
}

TEST(ParseRawCapture, ReadsAPythonExceptionReport) {
  // The shape hook/crash_report.cc writes for an uncaught Python exception (docs/crash.md).
  const std::string text = R"({"format": "xtimer-raw-stacks", "version": 1, "pid": 7,
    "capture_time_ns": 5, "crash": {"python_exception": {"type": "ValueError",
    "message": "bad \"batch\"\n"}, "tid": 8}, "threads": [{"tid": 8, "name": "main", "pcs": []}],
    "python_threads": [{"tid": 8, "frames": [{"function": "load", "file": "/j/d.py", "line": 4},
    {"function": "<module>", "file": "/j/t.py", "line": 9}]}]})";
  RawCapture raw;
  std::string error;
  ASSERT_TRUE(ParseRawCapture(text, &raw, &error)) << error;
  EXPECT_TRUE(raw.crash.present);
  EXPECT_TRUE(raw.crash.python_exception);
  EXPECT_EQ(raw.crash.signal, 0);
  EXPECT_EQ(raw.crash.exception_type, "ValueError");
  EXPECT_EQ(raw.crash.exception_message, "bad \"batch\"\n");
  ASSERT_EQ(raw.python_threads.size(), 1u);
  ASSERT_EQ(raw.python_threads[0].frames.size(), 2u);
  EXPECT_EQ(raw.python_threads[0].frames[0].function, "load");
  EXPECT_EQ(raw.python_threads[0].frames[0].line, 4);
}

TEST(BuildThreads, SharesFramesAndAddsUnmatchedPythonThreads) {
  RawCapture raw;
  raw.threads = {{10, "main", {1, 2}, ""}, {11, "worker", {1}, "signals blocked"}};
  raw.python_threads = {{77, 10, {Py("train_step", 88)}}, {78, 0, {Py("loader", 3)}}};
  StacksFile out;
  BuildThreads(raw,
               [](const std::vector<uint64_t>& pcs) {
                 std::vector<Frame> f;
                 for (uint64_t pc : pcs) f.push_back(Native(pc == 1 ? "poll" : "_PyEval_EvalFrameDefault"));
                 return f;
               },
               &out);
  ASSERT_EQ(out.threads.size(), 3u);
  EXPECT_EQ(out.frames.size(), 3u);  // poll, train_step, loader: each once
  EXPECT_EQ(out.threads[0].frames.size(), 2u);
  EXPECT_EQ(out.frames[out.threads[0].frames[1]].function, "train_step");
  EXPECT_EQ(out.threads[1].frames, std::vector<uint32_t>{out.threads[0].frames[0]});
  EXPECT_EQ(out.threads[1].error, "signals blocked");
  EXPECT_EQ(out.threads[2].name, "python thread 78");
  // The file it makes reads back.
  out.rank = 0;
  out.world_size = 1;
  StacksFile back;
  std::string error;
  EXPECT_TRUE(ParseStacksJson(WriteStacksJson(out), &back, &error)) << error;
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
