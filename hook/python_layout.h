// Where CPython keeps what a frame walk reads (hook/python_frame_walker.h), per version: the
// offsets of the runtime's interpreter list, the thread states, the frames, code objects, str and
// bytes objects of the default (release, GIL, 64-bit) build. 3.8 to 3.12 come from a table
// measured with offsetof against each version's own headers (tools/python_layout.sh prints them
// from any installed CPython); 3.13 and later describe themselves in _Py_DebugOffsets at the
// start of _PyRuntime (python_debug_offsets.h).
#ifndef XTIMER_HOOK_PYTHON_LAYOUT_H_
#define XTIMER_HOOK_PYTHON_LAYOUT_H_

#include <cstdint>

namespace xtimer {
namespace hook {

constexpr uint64_t kNoField = ~0ull;

// How a code object maps instructions to lines.
enum class PythonLineTable : uint8_t {
  kLnotab,       // 3.8-3.9 co_lnotab: (address increment, signed line increment) byte pairs
  kLinetable310, // 3.10 co_linetable: (address delta, signed line delta; -128: no line) pairs
  kLocations,    // 3.11+ co_linetable: the location table of Objects/locations.md
};

// How a frame says where it is.
enum class PythonInstr : uint8_t {
  kLastiBytes,   // 3.8-3.9 PyFrameObject.f_lasti: byte offset of the last instruction (int)
  kLastiUnits,   // 3.10 f_lasti: index of the last 2-byte code unit (int)
  kPointer,      // 3.11+ prev_instr / instr_ptr: a pointer into code->co_code_adaptive
};

struct PythonLayout {
  int minor = 0;  // 3.minor
  // _PyRuntimeState and PyInterpreterState
  uint64_t interpreters_head = 0, interp_next = 0, interp_threads_head = 0;
  // PyThreadState: `frame` is the innermost frame (3.8-3.10 frame, 3.13 current_frame) or,
  // when cframe_current_frame is set, a _PyCFrame whose current_frame it is (3.11-3.12).
  uint64_t tstate_next = 0, tstate_thread_id = 0, tstate_native_thread_id = kNoField,
           tstate_frame = 0, cframe_current_frame = kNoField;
  // Frames: PyFrameObject (3.8-3.10: f_back, f_code, f_lasti) or _PyInterpreterFrame (3.11+:
  // previous, f_code/f_executable, prev_instr/instr_ptr, owner).
  uint64_t frame_previous = 0, frame_code = 0, frame_instr = 0, frame_owner = kNoField;
  // PyCodeObject
  uint64_t code_filename = 0, code_name = 0, code_firstlineno = 0, code_linetable = 0,
           code_instructions = kNoField;  // co_code_adaptive (3.11+)
  uint64_t object_type = 8;  // PyObject.ob_type
  // PyASCIIObject: length, state; ASCII data follows PyASCIIObject, other compact data follows
  // PyCompactUnicodeObject.
  uint64_t unicode_length = 16, unicode_state = 32, unicode_ascii_data = 0,
           unicode_compact_data = 0;
  uint64_t bytes_size = 16, bytes_data = 32;  // PyBytesObject ob_size, ob_sval
  PythonLineTable lines = PythonLineTable::kLocations;
  PythonInstr instr = PythonInstr::kPointer;
};

// Description: the layout of CPython 3.`minor` for 8 <= minor <= 12.
// Return: false for any other version (3.13+: read _Py_DebugOffsets instead).
bool PythonLayoutOf(int minor, PythonLayout* out);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_LAYOUT_H_
