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

// Issue 34: a SIGSEGV in a ctypes call read "in ?? (libc.so.6)"; the verdict names the
// application's innermost frame, the crash site after "via".
TEST(CrashFrameText, NamesTheApplicationsFrameViaTheCrashSite) {
  stacktrace::Frame libc, ffi, eval;
  libc.function = "__strlen_avx2";
  libc.module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  ffi.function = "ffi_call";
  ffi.module = "/usr/lib/x86_64-linux-gnu/libffi.so.8.1.4";
  eval.function = "_PyEval_EvalFrameDefault";
  eval.module = "/usr/bin/python3.12";
  CrashReport r;
  r.frames = {libc, ffi, eval, PyFrame("crash_here", "/job/train.py", 12),
              PyFrame("main", "/job/train.py", 30)};
  EXPECT_EQ(AppFrameText(r.frames), "crash_here (train.py:12)");
  EXPECT_EQ(CrashFrameText(r), "crash_here (train.py:12) via __strlen_avx2 (libc.so.6)");
  r.frames = {libc, ffi};  // no frame of the application's: the crash site alone
  EXPECT_EQ(CrashFrameText(r), "__strlen_avx2 (libc.so.6)");
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
