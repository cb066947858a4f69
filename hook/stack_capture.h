// Native stacks of every thread of this process, taken without stopping the process
// (docs/stacks.md "Capture in the process"). Each thread in turn is interrupted by the capture
// signal (XTIMER_STACK_SIGNAL); its handler unwinds the thread's own stack into a slot reserved
// in advance and returns, so a thread pauses only for its own unwind.
#ifndef XTIMER_HOOK_STACK_CAPTURE_H_
#define XTIMER_HOOK_STACK_CAPTURE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace hook {

constexpr int kMaxCaptureThreads = 4096;   // threads listed per capture (docs/stacks.md limits)
constexpr int kMaxCaptureFrames = 1024;    // pcs per thread
constexpr int kThreadAnswerMs = 250;       // how long one thread has to answer the signal
constexpr int kCaptureBudgetMs = 5000;     // the whole native capture; later threads get an error

struct ThreadStack {
  int tid = 0;
  std::string name;            // /proc/self/task/TID/comm
  std::vector<uint64_t> pcs;   // innermost first; pcs[0] is the interrupted pc
  uint64_t pthread_id = 0;     // pthread_self() of the thread, 0 when it did not answer
  int64_t handler_ns = 0;      // how long it ran the capture handler (its pause), 0 unanswered
  std::string error;           // why the stack is missing or short; empty when complete
};

// Installs the handler of `signo` (a real-time signal) once, remembering the one it replaces.
// Call at hook start, before any capture. False with *error when sigaction fails.
bool InstallStackSignal(int signo, std::string* error);

// The installed capture signal, 0 when none.
int StackSignal();

// Every thread of the process but the caller, by ascending tid (at most kMaxCaptureThreads; the
// last entry says when more were left out). Slow and cold: call it from a thread that has the
// capture signal blocked, never from a signal handler.
// Threads not reached once *stop is true get the error "capture stopped: the process is exiting".
std::vector<ThreadStack> CaptureNativeStacks(const std::atomic<bool>* stop = nullptr);

// Reads the signal mask "SigBlk:" of /proc/self/task/TID/status text; false when absent.
bool ParseSigBlk(const std::string& status_text, uint64_t* mask);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_STACK_CAPTURE_H_
