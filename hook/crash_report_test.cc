#include "hook/crash_report.h"

#include <signal.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "format/stack_request.h"
#include "gtest/gtest.h"
#include "hook/exit_marker.h"

namespace xtimer {
namespace hook {
namespace {

TEST(FormatCrashReport, WritesTheRawCaptureWithACrashObject) {
  CrashFacts f;
  f.pid = 42;
  f.tid = 43;
  strcpy(f.thread_name, "a\"b");
  f.signal = 11;
  f.si_code = 1;
  f.fault_address = 0xffffffffff600000ull;
  f.time_ns = 5;
  const uint64_t pcs[] = {4096, 18446744073709551615ull};
  char buf[4096];
  const size_t n = FormatCrashReport(buf, sizeof(buf), f, pcs, 2);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::string(buf, n),
            "{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": 42, "
            "\"capture_time_ns\": 5,\n\"crash\": {\"signal\": 11, \"si_code\": 1, "
            "\"fault_address\": \"0xffffffffff600000\", \"tid\": 43},\n\"threads\": [\n  "
            "{\"tid\": 43, \"name\": \"a?b\", \"pcs\": [4096, 18446744073709551615]}]}\n");
  EXPECT_EQ(FormatCrashReport(buf, 20, f, pcs, 2), 0u);  // does not fit: nothing
  EXPECT_NE(std::string(buf, FormatCrashReport(buf, sizeof(buf), f, pcs, 0)).find(
                "\"pcs\": [], \"error\": \"unwinding failed\""),
            std::string::npos);
}

TEST(FormatCrashReport, AddsTheCrashingThreadsPythonFrames) {
  CrashFacts f;
  f.pid = 42;
  f.tid = 43;
  strcpy(f.thread_name, "python3");
  f.signal = 11;
  f.time_ns = 5;
  const uint64_t pcs[] = {4096};
  RawPythonFrame py[2] = {};
  strcpy(py[0].function, "crash\"in");
  strcpy(py[0].file, "/j/\xc3\xa9.py");  // UTF-8 kept as it is
  py[0].line = 34;
  strcpy(py[1].function, "<module>");
  strcpy(py[1].file, "/j/t.py");
  char buf[4096];
  const size_t n = FormatCrashReport(buf, sizeof(buf), f, pcs, 1, py, 2);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::string(buf, n),
            "{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": 42, "
            "\"capture_time_ns\": 5,\n\"crash\": {\"signal\": 11, \"si_code\": 0, "
            "\"fault_address\": \"0x0\", \"tid\": 43},\n\"threads\": [\n  "
            "{\"tid\": 43, \"name\": \"python3\", \"pcs\": [4096]}],\n\"python_threads\": [\n  "
            "{\"tid\": 43, \"frames\": [\n    {\"function\": \"crash\\\"in\", \"file\": "
            "\"/j/\xc3\xa9.py\", \"line\": 34},\n    {\"function\": \"<module>\", \"file\": "
            "\"/j/t.py\", \"line\": 0}]}]}\n");
  EXPECT_EQ(FormatCrashReport(buf, n - 1, f, pcs, 1, py, 2), 0u);  // does not fit: nothing
}

TEST(FormatPythonExceptionReport, EscapesAndCutsTheTraceback) {
  CrashFacts f;
  f.pid = 42;
  f.tid = 43;
  strcpy(f.thread_name, "python3");
  f.time_ns = 5;
  const std::string long_message(kMaxPythonExceptionText + 10, 'm');
  const PythonExceptionFrame frames[] = {{"load", "/j/d\"a\\.py", 4}, {"<module>", "/j/t.py", 0}};
  char buf[8192];
  size_t n = FormatPythonExceptionReport(buf, sizeof(buf), f, "ValueError", "bad\n\x01", frames, 2);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::string(buf, n),
            "{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": 42, "
            "\"capture_time_ns\": 5,\n\"crash\": {\"python_exception\": {\"type\": \"ValueError\", "
            "\"message\": \"bad\\u000a\\u0001\"}, \"tid\": 43},\n\"threads\": [\n  {\"tid\": 43, "
            "\"name\": \"python3\", \"pcs\": []}],\n\"python_threads\": [\n  {\"tid\": 43, "
            "\"frames\": [\n    {\"function\": \"load\", \"file\": \"/j/d\\\"a\\\\.py\", \"line\": 4},\n"
            "    {\"function\": \"<module>\", \"file\": \"/j/t.py\", \"line\": 0}]}]}\n");
  // Strings are cut at kMaxPythonExceptionText bytes, never inside a UTF-8 character.
  n = FormatPythonExceptionReport(buf, sizeof(buf), f, "E", long_message.c_str(), frames, 0);
  EXPECT_NE(std::string(buf, n).find("\"" + std::string(kMaxPythonExceptionText, 'm') + "\""),
            std::string::npos);
  std::string accents;
  while (accents.size() < kMaxPythonExceptionText + 1) accents += "\xc3\xa9";  // e-acute
  n = FormatPythonExceptionReport(buf, sizeof(buf), f, "E", accents.substr(1).c_str(), frames, 0);
  const std::string out(buf, n);
  const size_t at = out.find("\"message\": \"") + 12;
  EXPECT_EQ(out.substr(at, out.find('"', at) - at).size() % 2, 1u);  // the stray byte, then pairs
  EXPECT_EQ(FormatPythonExceptionReport(buf, 40, f, "E", "m", frames, 2), 0u);  // does not fit
}

TEST(ReportPythonException, SendsNothingWithoutADaemon) {
  const PythonExceptionFrame frame = {"f", "f.py", 1};
  EXPECT_EQ(ReportPythonException("E", "m", &frame, 1), 1);  // not prepared in this process
}

int g_socket = -1;
int SocketNow() { return g_socket; }

extern "C" __attribute__((noinline, no_sanitize("address", "thread", "undefined"))) void
XtCrashReportTestFault() {
  int* volatile target = nullptr;
  *target = 1;
}

void CalledHandler(int) {
  _exit(42);  // the application's handler ends the process its own way
}

// Forks a child that prepares crash reports, installs the markers and faults; the parent is the
// daemon: it takes the report, acknowledges and returns the child's wait status.
int CrashChild(bool own_handler_first, std::string* report) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    g_socket = sv[1];
    if (own_handler_first) signal(SIGSEGV, &CalledHandler);
    std::string error;
    if (!PrepareCrashReports(&SocketNow, &error) ||
        !InstallFatalSignalMarkers([]() -> format::RingHeader* { return nullptr; })) {
      _exit(3);
    }
    XtCrashReportTestFault();
    _exit(4);
  }
  close(sv[1]);
  format::StackReply reply;
  std::string error;
  int memfd = -1;
  while ((memfd = format::ReceiveStackReply(sv[0], &reply, &error)) < 0 &&
         error == "would block") {
    pollfd p{sv[0], POLLIN, 0};
    poll(&p, 1, 10000);
  }
  if (memfd >= 0) {
    EXPECT_EQ(reply.request_id, format::kCrashReportId);
    EXPECT_TRUE(format::ReadRawStacks(memfd, reply.size, report, &error)) << error;
    EXPECT_TRUE(format::AckCrashReport(memfd));
    close(memfd);
  }
  close(sv[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ReportCrash, SendsTheReportThenDiesOfTheSignal) {
  std::string report;
  const int status = CrashChild(false, &report);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer's SEGV handler was installed before the hook: the hook chains to it, and it
  // ends the process its own way (ASan aborts, TSan exits 66).
  EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
              (WIFEXITED(status) && WEXITSTATUS(status) == 66))
      << status;
#else
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
#endif
  EXPECT_NE(report.find("\"crash\": {\"signal\": 11, \"si_code\": 1, \"fault_address\": \"0x0\""),
            std::string::npos)
      << report;
  // The first pc is the faulting instruction, inside XtCrashReportTestFault.
  const size_t at = report.find("\"pcs\": [");
  ASSERT_NE(at, std::string::npos) << report;
  const uint64_t pc = strtoull(report.c_str() + at + 8, nullptr, 10);
  const auto start = reinterpret_cast<uint64_t>(&XtCrashReportTestFault);
  EXPECT_TRUE(pc >= start && pc < start + 64) << pc << " vs " << start;
}

TEST(ReportCrash, ChainsToTheHandlerInstalledBefore) {
  std::string report;
  const int status = CrashChild(true, &report);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 42) << status;
  EXPECT_NE(report.find("\"signal\": 11"), std::string::npos) << report;
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
