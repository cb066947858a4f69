// CPython 3.13's self-description: _PyRuntime starts with _Py_DebugOffsets, the field offsets
// that out-of-process debuggers use. They give the frame walker's layout
// (python_frame_walker.h), with which the live capture walks every thread (3.13 no longer exports
// _Py_DumpTracebackThreads) and the crash handler the crashing thread.
#ifndef XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
#define XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_

#include <string>
#include <vector>

#include "hook/python_layout.h"
#include "hook/python_stacks.h"

namespace xtimer {
namespace hook {

// Description: the layout _Py_DebugOffsets at `runtime` (the address of _PyRuntime) describes.
// Not async-signal-safe (the error text); call outside handlers.
// Return: false with *error (no cookie, a layout other than 3.13's, a free-threaded build).
bool LayoutFromDebugOffsets(const void* runtime, PythonLayout* out, std::string* error);

// `runtime` is the address of _PyRuntime, `code_type` of PyCode_Type. Appends every thread of
// every interpreter, with its native tid. False with *error (a layout other than 3.13's,
// unreadable memory).
bool WalkDebugOffsets(const void* runtime, const void* code_type,
                      std::vector<PythonThread>* threads, std::string* error);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
