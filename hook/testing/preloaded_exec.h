// How the hook's process tests start a program with libxtimer.so preloaded: the preload is
// appended inside gpusim-run, after the sanitizer runtimes that gpusim-run puts first for
// sanitizer builds (the bash script itself must not load an instrumented hook), by the test binary
// re-executed as "TEST --exec-preloaded PROGRAM ARGS..." (a shell would do, but dash does not
// start with libtsan preloaded). XT_HOOK_LIB names the library.
#ifndef XTIMER_HOOK_TESTING_PRELOADED_EXEC_H_
#define XTIMER_HOOK_TESTING_PRELOADED_EXEC_H_

#include <string>

namespace xtimer {
namespace hook {
namespace testing {

// Call first in main(): when argv is "--exec-preloaded PROGRAM ARGS...", appends $XT_HOOK_LIB to
// LD_PRELOAD and execs PROGRAM (returns 127 only if that fails); otherwise returns -1.
int ExecPreloadedIfAsked(int argc, char** argv);

// An absolute path: `path` resolved (symbolic links included), or relative to the working
// directory without resolving when `resolve` is false (gpusim-run must stay beside its libraries).
std::string AbsolutePath(const char* path, bool resolve = true);

}  // namespace testing
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_TESTING_PRELOADED_EXEC_H_
