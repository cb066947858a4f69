// Crash reports (docs/crash.md): on a fatal signal the exit marker's handler (hook/exit_marker.h)
// calls ReportCrash before it passes the signal on. ReportCrash unwinds the crashing thread into
// memory reserved at hook start, writes the raw capture JSON of that one thread with a "crash"
// object (signal, si_code, fault address) into a memfd prepared at hook start, sends the memfd to
// the daemon over the registration connection (format/stack_request.h, kCrashReportId) and waits
// a bounded time for the daemon to symbolize it, while the process's memory map still exists.
#ifndef XTIMER_HOOK_CRASH_REPORT_H_
#define XTIMER_HOOK_CRASH_REPORT_H_

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "hook/python_frame_walker.h"

namespace xtimer {
namespace hook {

constexpr size_t kCrashAltStackBytes = 256 << 10;  // the alternate signal stack (unwinding)
constexpr int kMaxCrashFrames = 256;                // pcs of the crashing thread
constexpr int kMaxCrashPythonFrames = 128;          // its Python frames (innermost kept)

// The registration connection now, -1 when there is none (read from the handler).
using SocketSource = int (*)();

// What a report says besides the pcs.
struct CrashFacts {
  int pid = 0;
  int tid = 0;
  char thread_name[17] = {};
  int signal = 0;
  int si_code = 0;
  uint64_t fault_address = 0;
  int64_t time_ns = 0;  // CLOCK_REALTIME
};

// Description: reserves what ReportCrash uses (the report memfd, mapped; the pcs; libunwind's
// one-time initialisation; the CPython runtime's address and layout, when the process has one,
// and room for its frames) and gives the calling thread an alternate signal stack when it has
// none (other threads run the handler on their own stack: a stack overflow there gets no report).
// Thread safety: call once, at hook start, before InstallFatalSignalMarkers.
// Return: false with *error (crash reports are then off; the signal is still passed on).
bool PrepareCrashReports(SocketSource socket, std::string* error);

// Description: reports the crash `sig` (the first one of the process only; a second crashing
// thread, or a fault inside the report, is passed on without one).
// In a CPython process the crashing thread's Python frames go into the report too (read with
// python_frame_walker.h; outer ones dropped to fit).
// Thread safety: async-signal-safe (atomics, syscalls, libunwind's local unwinder).
void ReportCrash(int sig, const siginfo_t* info, void* context);

// Description: the raw capture JSON of a crash into buf (async-signal-safe, exposed for tests):
// the thread's pcs and, when n_python > 0, its Python frames (innermost first) as the thread's
// entry of "python_threads".
// Return: its length, 0 when it does not fit in `cap`.
size_t FormatCrashReport(char* buf, size_t cap, const CrashFacts& facts, const uint64_t* pcs,
                         int n, const RawPythonFrame* python = nullptr, int n_python = 0);

// One frame of an uncaught Python exception's traceback (UTF-8 strings).
struct PythonExceptionFrame {
  const char* function;
  const char* file;
  int line;  // 0: unknown
};

constexpr int kMaxPythonExceptionFrames = 256;     // innermost kept
constexpr size_t kMaxPythonExceptionText = 1024;   // bytes of the type, the message, each name

// Description: reports an uncaught Python exception (docs/crash.md "Uncaught Python
// exceptions") through the crash report's memfd and connection: the raw capture JSON with a
// "crash" object holding "python_exception" (no signal), the reporting thread with no pcs and
// its Python frames (`frames`, innermost first; outer ones dropped to fit). Waits for the
// daemon's acknowledgement like ReportCrash. Counts as the process's one crash report.
// Thread safety: any thread; not from a signal handler.
// Return: 0 reported and acknowledged; 1 nothing sent (crash reports off, no daemon, a crash
// already reported); -1 sent but not acknowledged in time.
int ReportPythonException(const char* type, const char* message,
                          const PythonExceptionFrame* frames, int n);

// Description: the raw capture JSON of an uncaught Python exception (exposed for tests); strings
// are JSON-escaped and cut to kMaxPythonExceptionText bytes.
// Return: its length, 0 when it does not fit in `cap`.
size_t FormatPythonExceptionReport(char* buf, size_t cap, const CrashFacts& facts,
                                   const char* type, const char* message,
                                   const PythonExceptionFrame* frames, int n);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_CRASH_REPORT_H_
