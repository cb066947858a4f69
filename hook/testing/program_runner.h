// Running a test program under the GPU simulator with libxtimer.so preloaded and a fake daemon on
// the socket (fake_daemon.h, preloaded_exec.h), for the hook's process tests.
#ifndef XTIMER_HOOK_TESTING_PROGRAM_RUNNER_H_
#define XTIMER_HOOK_TESTING_PROGRAM_RUNNER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "format/record.h"
#include "hook/testing/fake_daemon.h"

namespace xtimer {
namespace hook {
namespace testing {

// A private directory with a short path (Unix socket paths are limited to 107 bytes), unique even
// when parallel runs share /tmp and, in PID namespaces, their pids. Under $XTIMER_TEST_TMP.
std::string TmpDir();

// Starts argv with the extra environment, stdout and stderr going to `out_path`.
pid_t SpawnProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& out_path);
// Waits for a SpawnProgram child; its output goes to *out (and `out_path` is removed). Returns
// the exit status (or 128 + signal).
int ReapProgram(pid_t pid, const std::string& out_path, std::string* out);

// Where a test runs its programs: gpusim-run, the test binary itself (re-executed to preload the
// hook: preloaded_exec.h) and libxtimer.so, all absolute.
struct Runner {
  std::string gpusim_run;
  std::string self;
  std::string hook_lib;

  // argv that runs `program_and_args` on the simulator with the hook preloaded.
  std::vector<std::string> Hooked(const std::vector<std::string>& program_and_args) const;
  // Runs it with a fake daemon on a fresh socket named by `tag` and `env` added to
  // XT_HOOK_LIB and XTIMER_DAEMON_SOCKET; expects exit status 0, one ring, nothing dropped or
  // invalid (gtest expectations). *out: the program's output.
  bool RunHooked(const std::vector<std::string>& program_and_args, const char* tag,
                 const std::vector<std::string>& env, FakeDaemon::Ring* ring,
                 std::string* out) const;
};

// The start of main() in a test that runs programs under the hook, whose arguments are
// "GPUSIM_RUN LIBXTIMER_SO" and `more` paths: re-executes when asked (preloaded_exec.h), starts
// gtest, and fills *paths with gpusim-run (absolute, not resolved: its libraries sit beside it),
// this test binary, libxtimer.so and the others (resolved). Returns -1 to go on to RUN_ALL_TESTS,
// else main's exit status (2 with `usage` on stderr for wrong arguments).
int StartProgramTest(int* argc, char** argv, int more, const char* usage,
                     std::vector<std::string>* paths);

// The ring's OpRecords of kind `kind`, by host launch time.
std::vector<format::OpRecord> OpsOfKind(const FakeDaemon::Ring& ring, format::OpKind kind);
// The kernel name the ring's NameRecords give `name_id` ("" until its last part was read); with
// `type` kNvtxString, the NVTX string of that id.
std::string NameOf(const FakeDaemon::Ring& ring, uint32_t name_id,
                   format::RecordType type = format::RecordType::kName);

}  // namespace testing
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_TESTING_PROGRAM_RUNNER_H_
