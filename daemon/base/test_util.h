// Helpers for the tests that run the real xtimerd (and Prometheus): processes, ports, HTTP.
#ifndef XTIMER_DAEMON_TEST_UTIL_H_
#define XTIMER_DAEMON_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace testing {

// A fresh directory under $XTIMER_TEST_TMP (or /tmp): short enough for a Unix socket path.
std::string MakeTempDir(const char* prefix);
void RemoveTree(const std::string& dir);

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

// Path of a binary built into this test's runfiles ("daemon/xtimerd").
std::string RunfilesPath(const std::string& relative);

// fork + execv; stdout and stderr appended to `log` when not empty. Returns the pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log);
// Waits up to `timeout_ms`; returns the exit status (WEXITSTATUS, 128+signal) or -1 on timeout.
int WaitExit(pid_t pid, int timeout_ms);
// Runs to completion, capturing stdout+stderr in *output. Returns the exit status.
int RunCapture(const std::vector<std::string>& argv, const std::string& stdin_data,
               std::string* output);

// A blocking TCP connection to 127.0.0.1:port (with `rcvbuf` > 0: that receive buffer, set
// before connecting), or -1.
int ConnectLoopback(int port, int rcvbuf = 0);

// HTTP/1.0 GET on 127.0.0.1:port; returns the body, "" on failure (with *status 0).
std::string HttpGet(int port, const std::string& path, int* status);

// Polls `pred` every 50 ms until true or `timeout_ms`.
template <typename F>
bool WaitFor(F pred, int timeout_ms);

// The value of the first exposition line that starts with `series` (name{labels} exactly as
// serialised, labels in alphabetical order), or NaN.
double Sample(const std::string& exposition, const std::string& series);
// Lines of the exposition whose series name starts with `name`.
std::vector<std::string> Lines(const std::string& exposition, const std::string& name);

std::string ReadFile(const std::string& path);

// One mapping of a /proc/PID/smaps file: its start address, its name (a file's path, "[heap]",
// "memfd:...", or "" for an unnamed anonymous mapping) and its resident kB.
struct Mapping {
  uintptr_t start = 0;
  std::string name;
  int64_t rss_kb = 0;
};
std::vector<Mapping> ResidentMappings(const std::string& smaps_path);

// A valid communicator record: `rank` of `size` on comm_id (the other fields 0: set them on the
// result).
format::RecordSlot MakeComm(uint64_t comm_id, int rank, int size);

// A valid op record.
format::RecordSlot MakeOp(format::Operation op, format::DType dtype, int64_t duration_ns);

}  // namespace testing
}  // namespace daemon
}  // namespace xtimer

#include <unistd.h>
namespace xtimer {
namespace daemon {
namespace testing {
template <typename F>
bool WaitFor(F pred, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 50) {
    if (pred()) return true;
    usleep(50000);
  }
  return pred();
}
}  // namespace testing
}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_TEST_UTIL_H_
