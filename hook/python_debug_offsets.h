// Python stacks of CPython 3.13, which no longer exports _Py_DumpTracebackThreads: the runtime
// (_PyRuntime) starts with _Py_DebugOffsets, the field offsets that out-of-process debuggers
// use. We walk interpreters, thread states and frames with them in-process, reading every word
// with process_vm_readv on our own pid, so a pointer that changes under us (we hold no GIL) fails
// a read instead of faulting.
#ifndef XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
#define XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_

#include <string>
#include <vector>

#include "hook/python_stacks.h"

namespace xtimer {
namespace hook {

// `runtime` is the address of _PyRuntime, `code_type` of PyCode_Type. Appends every thread of
// every interpreter, with its native tid. False with *error (a layout other than 3.13's,
// unreadable memory).
bool WalkDebugOffsets(const void* runtime, const void* code_type,
                      std::vector<PythonThread>* threads, std::string* error);

// The line of code unit `addrq` (in bytes from the first instruction) in a 3.11+ location table
// (Objects/locations.md), starting at `first_line`; 0 when the entry has no line.
int LineFromLocationTable(const std::string& table, int first_line, int addrq);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_DEBUG_OFFSETS_H_
