#include "hook/python_layout.h"

namespace xtimer {
namespace hook {
namespace {

// 3.8 and 3.9 (Include/internal/pycore_pystate.h, pycore_interp.h, cpython/pystate.h,
// frameobject.h, code.h, cpython/unicodeobject.h of 3.8.18 and 3.9.18: the same offsets).
PythonLayout Layout38() {
  PythonLayout l;
  l.interpreters_head = 32;  // _PyRuntimeState.interpreters.head
  l.interp_next = 0;
  l.interp_threads_head = 8;  // PyInterpreterState.tstate_head
  l.tstate_next = 8;
  l.tstate_thread_id = 176;
  l.tstate_frame = 24;  // PyThreadState.frame
  l.frame_previous = 24;  // PyFrameObject.f_back
  l.frame_code = 32;
  l.frame_instr = 104;  // f_lasti
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;  // co_lnotab
  l.unicode_ascii_data = 48;  // sizeof(PyASCIIObject), with wstr
  l.unicode_compact_data = 72;
  l.lines = PythonLineTable::kLnotab;
  l.instr = PythonInstr::kLastiBytes;
  return l;
}

// 3.11 (3.11.2 of Debian's /usr/include/python3.11 and 3.11.7: the same offsets).
PythonLayout Layout311() {
  PythonLayout l;
  l.interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 16;  // PyInterpreterState.threads.head
  l.tstate_next = 8;
  l.tstate_thread_id = 152;
  l.tstate_frame = 56;  // PyThreadState.cframe
  l.cframe_current_frame = 8;
  l.frame_previous = 48;  // _PyInterpreterFrame.previous
  l.frame_code = 32;  // f_code
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 69;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_instructions = 184;  // co_code_adaptive
  l.unicode_ascii_data = 48;
  l.unicode_compact_data = 72;
  return l;
}

}  // namespace

bool PythonLayoutOf(int minor, PythonLayout* out) {
  PythonLayout l;
  switch (minor) {
    case 8:
    case 9:
      l = Layout38();
      break;
    case 10:  // 3.10.13: f_lasti moved and counts code units; co_linetable replaced co_lnotab
      l = Layout38();
      l.frame_instr = 96;
      l.lines = PythonLineTable::kLinetable310;
      l.instr = PythonInstr::kLastiUnits;
      break;
    case 11:
      l = Layout311();
      break;
    case 12:  // 3.12.1: f_code first in the frame; wstr gone from str objects
      l = Layout311();
      l.interp_threads_head = 72;
      l.tstate_thread_id = 136;
      l.cframe_current_frame = 0;
      l.frame_previous = 8;
      l.frame_code = 0;
      l.frame_owner = 70;
      l.code_firstlineno = 68;
      l.code_instructions = 192;
      l.unicode_ascii_data = 40;
      l.unicode_compact_data = 56;
      break;
    default:
      return false;
  }
  l.minor = minor;
  *out = l;
  return true;
}

}  // namespace hook
}  // namespace xtimer
