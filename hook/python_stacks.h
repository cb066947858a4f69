// Python stacks of every thread of this process's CPython interpreter, taken without the GIL
// (docs/stacks.md "Capture in the process"): where CPython exports _Py_DumpTracebackThreads
// (3.8, 3.11, 3.12; the function faulthandler's watchdog thread calls without the GIL), it writes
// every thread's traceback as text into a memfd, which is parsed here. Where it does not (3.9 and
// 3.10 build it hidden, 3.13 dropped it), the frame walker reads the frames
// (python_frame_walker.h).
#ifndef XTIMER_HOOK_PYTHON_STACKS_H_
#define XTIMER_HOOK_PYTHON_STACKS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace hook {

struct PythonFrame {
  std::string function;
  std::string file;
  int line = 0;  // 0: unknown
};

struct PythonThread {
  uint64_t thread_id = 0;  // CPython's thread id (the thread's pthread_t)
  int tid = 0;             // its kernel thread id when CPython records it (3.13), else 0
  std::vector<PythonFrame> frames;  // innermost first
};

struct PythonRuntime;  // python_frame_walker.h

struct PythonCapture {
  bool python = false;  // a CPython runtime is loaded in this process
  std::vector<PythonThread> threads;
  std::string error;    // why frames are missing (only when `python`)
};

// A CPython symbol: in the global scope, else in a libpython* loaded RTLD_LOCAL (embedding hosts,
// a Python extension loaded by a non-Python host); nullptr when there is none.
void* FindPythonSymbol(const char* symbol);

// Description: this process's CPython for a frame walk (python_frame_walker.h): the addresses
// of _PyRuntime and PyCode_Type and the layout of its version (3.8 to 3.13).
// Thread safety: any thread; not async-signal-safe (dlsym, dl_iterate_phdr).
// Return: false with *error ("" when the process has no CPython).
bool FindPythonRuntime(PythonRuntime* out, std::string* error);

// Every thread of every interpreter of `rt`, with its frames (the frame walker's), and its native
// tid where the version records it (3.13). False with *error when the thread list is unreadable.
bool WalkPythonThreads(const PythonRuntime& rt, std::vector<PythonThread>* threads,
                       std::string* error);

// Python stacks, read without the GIL. Slow and cold: call from the capture thread.
PythonCapture CapturePythonStacks();

// Parses _Py_DumpTracebackThreads' text ("Thread 0x... (most recent call first):", then
// "  File \"f.py\", line 42 in func" lines). False with *error on text it does not know.
bool ParsePythonTracebacks(const std::string& text, std::vector<PythonThread>* threads,
                           std::string* error);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_STACKS_H_
