// Whose code a stack frame is (docs/stacks.md "Whose frame it is"): the one judge of "is this
// frame the application's" behind every one-line "where is this rank" (the summary of
// `xtimer stacks`, the culprit lines of `xtimer analyze` and the report), the flame graph's
// colours, and the folding away of xtimer's own threads and frames.
//
// The judge reads only what a frame carries: its kind, its module (the shared object's path, or
// a Python frame's source file) and its function. A native frame is judged by its function's
// name when that is xtimer's, CPython's or the C++ standard library's, else by its module's
// base name, else (no module: a synthetic file) by NVIDIA's function names; a Python frame by
// its file's path.
#ifndef XTIMER_STACKTRACE_FRAME_OWNER_H_
#define XTIMER_STACKTRACE_FRAME_OWNER_H_

#include <string>

#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

enum class Owner {
  kApplication,  // the job's code: its executable, its own and third-party libraries (PyTorch,
                 // NumPy...) and Python files outside the standard library
  kSystem,       // the C and C++ runtimes (libc, libpthread, ld.so, libm, libdl, librt,
                 // libstdc++, libgcc_s, libatomic, libgomp, libunwind, the vdso), the C++
                 // standard library's templates in any module (std::, __gnu_cxx::), _start, and
                 // Python's standard library (files under lib/pythonX.Y/ but not in site- or
                 // dist-packages, frozen modules)
  kInterpreter,  // CPython: libpython*, the python executable, lib-dynload modules, libffi
                 // (ctypes' calls), and functions _Py* / Py* in any module
  kCuda,         // NVIDIA's libraries: libcuda*, libcublas*, libnccl*, libcudnn*, libcufft*,
                 // libcurand*, libcusparse*, libcusolver*, libcupti*, libnvrtc*, libnvJitLink*,
                 // libnvToolsExt*, libnvidia-*
  kXtimer,       // xtimer itself: libxtimer*, and functions xtimer::... in any module
  kUnknown,      // a frame with neither function nor module ("??"), thread and error nodes
};

Owner OwnerOf(const Frame& frame);
inline bool IsApplicationFrame(const Frame& frame) {
  return OwnerOf(frame) == Owner::kApplication;
}

// "application", "system", "interpreter", "cuda", "xtimer", "unknown".
const char* OwnerName(Owner owner);

// A thread of xtimer's hook by its name: "xtimer-" and more (the poller "xtimer-poller", the
// stack service "xtimer-stacks").
bool IsXtimerThreadName(const std::string& name);

// Folds xtimer away from a file (the default of `xtimer stacks`, docs/stacks.md): drops every
// thread of xtimer's (by name, or one whose outermost frame that is not the system's is
// xtimer's: xtimer's code started it) and every xtimer frame from the other threads' stacks, so
// that a call through the hook reads as the call the application (or NCCL's proxy thread) made.
// The frame table is kept as it is (indices stay valid).
void FoldXtimer(StacksFile* file);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_FRAME_OWNER_H_
