// Python frames read straight from CPython's memory, async-signal-safe (docs/stacks.md "Capture
// in the process", docs/crash.md): no allocation, no lock, no Python API call; every word is read
// with process_vm_readv on our own pid, so a pointer that changes under us (we hold no GIL) fails
// a read instead of faulting. The crash handler reads the crashing thread's frames with it, and
// the live capture of CPython 3.13 every thread's.
//
// The walk follows each thread's innermost frame outwards through every frame, whatever C-level
// evaluation runs it: since 3.11 one _PyEval_EvalFrameDefault call runs a chain of
// _PyInterpreterFrames linked by `previous` (the outermost of a chain is its entry frame, 3.11's
// is_entry, a shim frame owned by the C stack from 3.12 on), and the walk goes on past it into the
// chain of the evaluation below; 3.8 to 3.10 link one PyFrameObject per evaluation by f_back.
#ifndef XTIMER_HOOK_PYTHON_FRAME_WALKER_H_
#define XTIMER_HOOK_PYTHON_FRAME_WALKER_H_

#include <cstddef>
#include <cstdint>

#include "hook/python_layout.h"

namespace xtimer {
namespace hook {

constexpr size_t kMaxPythonFunctionBytes = 256;  // UTF-8 bytes kept of a function's name
constexpr size_t kMaxPythonFileBytes = 1024;     // ... of a file's name
constexpr int kMaxPythonWalkFrames = 1024;       // frames followed per thread
constexpr int kMaxPythonWalkThreads = 4096;      // thread states followed
constexpr int kMaxPythonWalkInterpreters = 64;

// One Python frame, in fixed storage (NUL-terminated, cut at a UTF-8 character boundary).
struct RawPythonFrame {
  char function[kMaxPythonFunctionBytes];
  char file[kMaxPythonFileBytes];
  int line;  // 0: unknown
};

// What a walk needs: the version's layout and two addresses, found outside any handler
// (FindPythonRuntime, python_stacks.h). `runtime == 0`: no CPython to read.
struct PythonRuntime {
  PythonLayout layout;
  uint64_t runtime = 0;    // &_PyRuntime
  uint64_t code_type = 0;  // &PyCode_Type: a frame's code object must be of this type
};

// Description: the thread states of every interpreter, in CPython's list order.
// Thread safety: async-signal-safe.
// Output: at most `max` thread state addresses.
// Return: how many; -1 when the first interpreter's list cannot be read.
int PythonThreadStates(const PythonRuntime& rt, uint64_t* out, int max);

// Description: the thread state of the thread whose CPython thread id (its pthread_t) is
// `thread_id`, 0 when there is none. Thread safety: async-signal-safe.
uint64_t PythonThreadStateOf(const PythonRuntime& rt, uint64_t thread_id);

// CPython's thread id (pthread_t) of a thread state, and its kernel tid where the version
// records it (3.13), else 0. Thread safety: async-signal-safe.
uint64_t PythonThreadIdOf(const PythonRuntime& rt, uint64_t tstate);
int PythonNativeTidOf(const PythonRuntime& rt, uint64_t tstate);

// Description: the Python frames of a thread state, innermost first; frames without a code
// object of their own (3.12+ shim frames) are left out.
// Thread safety: async-signal-safe.
// Return: how many of `out` were written (at most `max`).
int ReadPythonFrames(const PythonRuntime& rt, uint64_t tstate, RawPythonFrame* out, int max);

// The line of byte offset `addrq` into a code object's instructions, from its line table at
// `table` (`size` bytes) starting at `first_line`: 3.8-3.9's co_lnotab, 3.10's co_linetable, or
// 3.11+'s location table (Objects/locations.md). 0 when the entry has no line or addrq is past
// the table. Async-signal-safe (reads the table with the same checked reads).
int PythonLineOf(PythonLineTable kind, uint64_t table, size_t size, int first_line, int addrq);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_FRAME_WALKER_H_
