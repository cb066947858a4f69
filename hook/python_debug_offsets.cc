#include "hook/python_debug_offsets.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace xtimer {
namespace hook {
namespace {

// _Py_DebugOffsets of CPython 3.13 (Include/internal/pycore_runtime.h of 3.13.0): the members
// used here, every one uint64_t, in the header's order up to the last one read.
struct DebugOffsets313 {
  char cookie[8];  // "xdebugpy"
  uint64_t version;  // PY_VERSION_HEX
  uint64_t free_threaded;
  struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
        datastack_chunk, status;
  } thread_state;
  struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct { uint64_t size, ob_type; } pyobject;
  struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
  struct { uint64_t size, ob_item, ob_size; } tuple_object;
  struct { uint64_t size, ob_item, ob_size; } list_object;
  struct { uint64_t size, ma_keys, ma_values; } dict_object;
  struct { uint64_t size, ob_fval; } float_object;
  struct { uint64_t size, lv_tag, ob_digit; } long_object;
  struct { uint64_t size, ob_size, ob_sval; } bytes_object;
  struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};

// Reads our own memory; false (never a fault) when any byte is unmapped.
bool Peek(uint64_t address, void* out, size_t n) {
  if (address == 0) return false;
  iovec local = {out, n};
  iovec remote = {reinterpret_cast<void*>(address), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

}  // namespace

bool LayoutFromDebugOffsets(const void* runtime, PythonLayout* out, std::string* error) {
  DebugOffsets313 o;
  if (!Peek(reinterpret_cast<uint64_t>(runtime), &o, sizeof(o)) ||
      memcmp(o.cookie, "xdebugpy", 8) != 0) {
    *error = "_PyRuntime does not start with _Py_DebugOffsets";
    return false;
  }
  if ((o.version >> 16) != 0x030d) {
    *error = "_Py_DebugOffsets of version " + std::to_string(o.version >> 24) + "." +
             std::to_string((o.version >> 16) & 0xff) + ": only 3.13's layout is known";
    return false;
  }
  if (o.free_threaded != 0) {
    *error = "free-threaded CPython 3.13: not supported yet";
    return false;
  }
  PythonLayout l;
  l.minor = 13;
  l.interpreters_head = o.runtime_state.interpreters_head;
  l.interp_next = o.interpreter_state.next;
  l.interp_threads_head = o.interpreter_state.threads_head;
  l.tstate_next = o.thread_state.next;
  l.tstate_thread_id = o.thread_state.thread_id;
  l.tstate_native_thread_id = o.thread_state.native_thread_id;
  l.tstate_frame = o.thread_state.current_frame;
  l.frame_previous = o.interpreter_frame.previous;
  l.frame_code = o.interpreter_frame.executable;
  l.frame_instr = o.interpreter_frame.instr_ptr;
  l.frame_owner = o.interpreter_frame.owner;
  l.code_filename = o.code_object.filename;
  l.code_name = o.code_object.name;  // as faulthandler
  l.code_firstlineno = o.code_object.firstlineno;
  l.code_linetable = o.code_object.linetable;
  l.code_instructions = o.code_object.co_code_adaptive;
  l.object_type = o.pyobject.ob_type;
  l.unicode_length = o.unicode_object.length;
  l.unicode_state = o.unicode_object.state;
  // ASCII data follows PyASCIIObject; other compact strings follow PyCompactUnicodeObject,
  // which adds utf8_length and utf8 (two words).
  l.unicode_ascii_data = o.unicode_object.asciiobject_size;
  l.unicode_compact_data = o.unicode_object.asciiobject_size + 16;
  l.bytes_size = o.bytes_object.ob_size;
  l.bytes_data = o.bytes_object.ob_sval;
  *out = l;
  return true;
}

}  // namespace hook
}  // namespace xtimer
