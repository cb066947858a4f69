// The raw capture a process sends ("xtimer-raw-stacks" v1, docs/stacks.md "Capture"): its reader,
// and the step that turns it, symbolized, into the per-rank .stacks file's frames and threads
// (docs/stacks.md "Symbolization": how native and Python frames are combined).
#ifndef XTIMER_STACKTRACE_RAW_CAPTURE_H_
#define XTIMER_STACKTRACE_RAW_CAPTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

constexpr char kRawStacksFormat[] = "xtimer-raw-stacks";
constexpr int kRawStacksVersion = 1;

struct RawThread {
  int64_t tid = 0;
  std::string name;
  std::vector<uint64_t> pcs;  // innermost first
  std::string error;
};

struct RawPythonThread {
  int64_t thread_id = 0;  // CPython's (pthread_t)
  int64_t tid = 0;        // kernel tid; 0: unknown
  std::vector<Frame> frames;  // kind kPython, innermost first
};

// A crash report's "crash" object (docs/crash.md): the fatal signal the crashing thread got, or
// the uncaught Python exception it reports (signal 0, "python_exception").
struct RawCrash {
  bool present = false;
  int64_t signal = 0;  // 0 for a Python exception
  bool python_exception = false;
  std::string exception_type;     // "ValueError", "pkg.mod.MyError"
  std::string exception_message;  // str() of the exception, cut
  int64_t si_code = 0;
  std::string fault_address;  // "0x..." (hex text: kernel addresses do not fit int64)
  int64_t tid = 0;            // the crashing thread
};

struct RawCapture {
  int64_t pid = 0;
  int64_t capture_time_ns = 0;
  std::vector<RawThread> threads;
  std::vector<RawPythonThread> python_threads;
  std::string python_error;
  RawCrash crash;
};

// Parses and range-checks a raw capture (the .stacks file's limits: threads, frames per thread,
// string lengths). False with *error naming the field.
bool ParseRawCapture(const std::string& text, RawCapture* out, std::string* error);

// True for the native frames of CPython's evaluation loop (_PyEval_EvalFrameDefault), where the
// Python frames of a thread belong.
bool IsEvalFrame(const Frame& f);

// One thread's frames, innermost first: the native frames inward of the innermost eval frame,
// then the Python frames, then the native frames outward of the outermost eval frame (the
// interpreter's frames between are dropped). Without an eval frame the Python frames go outward
// of all native ones. At most kMaxFramesPerThread (the outermost cut).
std::vector<Frame> CombineFrames(const std::vector<Frame>& native,
                                 const std::vector<Frame>& python);

// Fills out->frames and out->threads from `raw`: each thread's pcs through `symbolize`, combined
// with the Python frames of the same tid; Python threads with no native thread of their tid are
// added as threads of their own ("python thread <id>"). A thread cut short, or a frame table
// that is full, is said in the thread's error.
using SymbolizeFn = std::function<std::vector<Frame>(const std::vector<uint64_t>& pcs)>;
void BuildThreads(const RawCapture& raw, const SymbolizeFn& symbolize, StacksFile* out);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_RAW_CAPTURE_H_
