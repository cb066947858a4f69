// CPython 3.13's self-description: _PyRuntime starts with _Py_DebugOffsets, the field offsets
// that out-of-process debuggers use. They give the frame walker's layout for 3.13
// (python_layout.h, python_frame_walker.h).
#ifndef XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
#define XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_

#include <string>

#include "hook/python_layout.h"

namespace xtimer {
namespace hook {

// Description: the layout _Py_DebugOffsets at `runtime` (the address of _PyRuntime) describes.
// Not async-signal-safe (the error text); call outside handlers.
// Return: false with *error (no cookie, a layout other than 3.13's, a free-threaded build).
bool LayoutFromDebugOffsets(const void* runtime, PythonLayout* out, std::string* error);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
