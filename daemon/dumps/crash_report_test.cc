#include "daemon/dumps/crash_report.h"

#include <string>

#include "analysis/analysis.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

stacktrace::Frame PyFrame(const std::string& function, const std::string& file, int line) {
  stacktrace::Frame f;
  f.kind = stacktrace::Frame::kPython;
  f.function = function;
  f.module = file;
  f.line = line;
  return f;
}

TEST(FrameText, NamesNativeFramesByModuleAndPythonFramesByFileAndLine) {
  stacktrace::Frame native;
  native.function = "CrashHere";
  native.module = "/job/crash_program";
  EXPECT_EQ(FrameText(native), "CrashHere (crash_program)");
  EXPECT_EQ(FrameText(PyFrame("load_batch", "/job/data.py", 42)), "load_batch (data.py:42)");
  EXPECT_EQ(FrameText(PyFrame("load_batch", "/job/data.py", 0)), "load_batch (data.py)");
  EXPECT_EQ(FrameText(stacktrace::Frame()), "??");
}

TEST(CrashFrameText, AddsAPythonExceptionOnOneLine) {
  CrashReport r;
  r.frames = {PyFrame("load_batch", "/job/data.py", 42)};
  EXPECT_EQ(CrashFrameText(r), "load_batch (data.py:42)");  // a signal: the frame only
  r.python_exception = true;
  r.exception_type = "ValueError";
  r.exception_message = "bad\nbatch";
  EXPECT_EQ(CrashFrameText(r), "load_batch (data.py:42) [uncaught ValueError: bad batch]");
  r.exception_message = std::string(analysis::kMaxVerdictMessageBytes + 50, 'm');
  EXPECT_EQ(CrashFrameText(r), "load_batch (data.py:42) [uncaught ValueError: " +
                                   std::string(analysis::kMaxVerdictMessageBytes, 'm') + "]");
  r.frames.clear();
  r.exception_message.clear();
  EXPECT_EQ(CrashFrameText(r), "[uncaught ValueError]");
}

TEST(CrashJson, WritesPythonFramesAndTheException) {
  CrashReport r;
  r.job = "train";
  r.signal_name = kPythonExceptionSignal;
  r.python_exception = true;
  r.exception_type = "ValueError";
  r.exception_message = "bad \"batch\"";
  r.frames = {PyFrame("load_batch", "/job/data.py", 42)};
  const std::string j = CrashJson(r);
  EXPECT_NE(j.find("\"signal\": 0, \"signal_name\": \"python_exception\""), std::string::npos)
      << j;
  EXPECT_NE(j.find("\"frames\": [{\"function\": \"load_batch\", \"file\": \"/job/data.py\", "
                   "\"line\": 42}], \"exception\": {\"type\": \"ValueError\", \"message\": "
                   "\"bad \\\"batch\\\"\"}"),
            std::string::npos)
      << j;
  r.python_exception = false;
  EXPECT_EQ(CrashJson(r).find("\"exception\""), std::string::npos);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
