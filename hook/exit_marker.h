// The exit marker: tells the daemon how this process ends, through the ring header's exit_state
// (format/ring.h), so that it can say "exited with status N" or "killed by signal N" instead of
// "connection lost".
//
// A clean exit is marked from the recorder's on_exit handler (which knows the status). Fatal
// signals are marked by a handler installed in front of the application's handlers for SIGSEGV,
// SIGBUS, SIGABRT, SIGFPE and SIGILL: it makes one atomic store into the shared header and
// then passes the signal on unchanged (to the previous handler, or to the default action, which
// kills the process with that signal). A previous handler that returns (it survived the signal)
// gets the marker cleared again. SIGKILL, SIGTERM and _exit leave no marker.
#ifndef XTIMER_HOOK_EXIT_MARKER_H_
#define XTIMER_HOOK_EXIT_MARKER_H_

#include <atomic>

#include "format/ring.h"

namespace xtimer {
namespace hook {

// Where markers go: the ring's header once it exists (nullptr before).
using HeaderSource = format::RingHeader* (*)();

// Installs the fatal-signal handlers (once per process; later calls do nothing). Returns false
// when a sigaction call failed (that signal is then left alone).
bool InstallFatalSignalMarkers(HeaderSource source);

// Marks a clean exit with `status` (exit(status) or a return from main).
void MarkExited(format::RingHeader* header, int status);

// The handler's work, exposed for tests: marks `signal`, returns the previous marker word.
uint64_t MarkSignal(format::RingHeader* header, int signal);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_EXIT_MARKER_H_
