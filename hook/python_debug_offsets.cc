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

constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreads = 4096;
constexpr int kMaxFrames = 1024;
constexpr size_t kMaxString = 4096;  // characters and bytes of a name or file
constexpr size_t kMaxLineTable = 1u << 20;
constexpr int kFrameOwnedByCStack = 3;  // pycore_frame.h: a shim frame, no code of its own

// Reads our own memory; false (never a fault) when any byte is unmapped.
bool Peek(uint64_t address, void* out, size_t n) {
  if (address == 0) return false;
  iovec local = {out, n};
  iovec remote = {reinterpret_cast<void*>(address), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

uint64_t Word(uint64_t address, bool* ok) {
  uint64_t v = 0;
  if (!Peek(address, &v, sizeof(v))) *ok = false;
  return v;
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    *out += static_cast<char>(c);
  } else if (c < 0x800) {
    *out += static_cast<char>(0xc0 | (c >> 6));
    *out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    *out += static_cast<char>(0xe0 | (c >> 12));
    *out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (c >> 18));
    *out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// A compact str object as UTF-8 (at most kMaxString characters); "" when unreadable.
std::string ReadUnicode(const DebugOffsets313& o, uint64_t object) {
  uint32_t state = 0;
  int64_t length = 0;
  if (!Peek(object + o.unicode_object.state, &state, sizeof(state)) ||
      !Peek(object + o.unicode_object.length, &length, sizeof(length)) || length < 0) {
    return "";
  }
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return "";
  const size_t n = std::min(static_cast<size_t>(length), kMaxString);
  // ASCII data follows PyASCIIObject; other compact strings follow PyCompactUnicodeObject,
  // which adds utf8_length and utf8 (two words).
  const uint64_t data = object + o.unicode_object.asciiobject_size + (ascii ? 0 : 16);
  std::string raw(n * kind, '\0');
  if (n > 0 && !Peek(data, &raw[0], raw.size())) return "";
  if (ascii) return raw;
  std::string out;
  // At most kMaxString bytes of UTF-8 too: the .stacks file's limit for a string.
  for (size_t i = 0; i < n && out.size() + 4 <= kMaxString; ++i) {
    uint32_t c = 0;
    memcpy(&c, &raw[i * kind], kind);  // little-endian: the low bytes
    AppendUtf8(c, &out);
  }
  return out;
}

std::string ReadBytes(const DebugOffsets313& o, uint64_t object) {
  int64_t size = 0;
  if (!Peek(object + o.bytes_object.ob_size, &size, sizeof(size)) || size < 0 ||
      static_cast<size_t>(size) > kMaxLineTable) {
    return "";
  }
  std::string out(static_cast<size_t>(size), '\0');
  if (size > 0 && !Peek(object + o.bytes_object.ob_sval, &out[0], out.size())) return "";
  return out;
}

// One frame's function, file and line; false for frames without a code object (shims).
bool ReadFrame(const DebugOffsets313& o, uint64_t frame, uint64_t code_type, PythonFrame* out) {
  bool ok = true;
  char owner = 0;
  if (!Peek(frame + o.interpreter_frame.owner, &owner, 1) || owner == kFrameOwnedByCStack) {
    return false;
  }
  const uint64_t code = Word(frame + o.interpreter_frame.executable, &ok);
  if (!ok || code == 0 || Word(code + o.pyobject.ob_type, &ok) != code_type || !ok) return false;
  out->function = ReadUnicode(o, Word(code + o.code_object.name, &ok));  // as faulthandler
  out->file = ReadUnicode(o, Word(code + o.code_object.filename, &ok));
  int32_t first_line = 0;
  Peek(code + o.code_object.firstlineno, &first_line, sizeof(first_line));
  const uint64_t instr = Word(frame + o.interpreter_frame.instr_ptr, &ok);
  const int64_t addrq = static_cast<int64_t>(instr - (code + o.code_object.co_code_adaptive));
  const std::string table = ReadBytes(o, Word(code + o.code_object.linetable, &ok));
  out->line = ok && addrq >= 0 && addrq < (1 << 30)
                  ? LineFromLocationTable(table, first_line, static_cast<int>(addrq))
                  : 0;
  return true;
}

void ReadThread(const DebugOffsets313& o, uint64_t tstate, uint64_t code_type, PythonThread* t) {
  bool ok = true;
  t->thread_id = Word(tstate + o.thread_state.thread_id, &ok);
  t->tid = static_cast<int>(Word(tstate + o.thread_state.native_thread_id, &ok));
  uint64_t frame = Word(tstate + o.thread_state.current_frame, &ok);
  for (int n = 0; ok && frame != 0 && n < kMaxFrames; ++n) {
    PythonFrame f;
    if (ReadFrame(o, frame, code_type, &f)) t->frames.push_back(f);
    frame = Word(frame + o.interpreter_frame.previous, &ok);
  }
}

unsigned ScanVarint(const std::string& t, size_t* p) {
  unsigned read = *p < t.size() ? static_cast<unsigned char>(t[(*p)++]) : 0;
  unsigned val = read & 63, shift = 0;
  while ((read & 64) && *p < t.size() && shift < 28) {
    read = static_cast<unsigned char>(t[(*p)++]);
    shift += 6;
    val |= (read & 63) << shift;
  }
  return val;
}

}  // namespace

int LineFromLocationTable(const std::string& table, int first_line, int addrq) {
  int line = first_line;
  int start = 0;  // bytes
  size_t p = 0;
  while (p < table.size()) {
    const unsigned char first = static_cast<unsigned char>(table[p]);
    const int code = (first >> 3) & 15;
    const int end = start + ((first & 7) + 1) * 2;  // code units of 2 bytes
    size_t q = p + 1;
    int delta = 0;
    if (code == 13 || code == 14) {  // no columns, long form: a signed varint first
      const unsigned u = ScanVarint(table, &q);
      delta = (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
    } else if (code == 11 || code == 12) {  // one line forms 1 and 2
      delta = code - 10;
    }
    line += delta;
    if (addrq >= start && addrq < end) return code == 15 ? 0 : line;  // 15: no location
    start = end;
    do {
      ++p;
    } while (p < table.size() && (static_cast<unsigned char>(table[p]) & 128) == 0);
  }
  return 0;
}

bool WalkDebugOffsets(const void* runtime, const void* code_type,
                      std::vector<PythonThread>* threads, std::string* error) {
  DebugOffsets313 o;
  const uint64_t rt = reinterpret_cast<uint64_t>(runtime);
  if (!Peek(rt, &o, sizeof(o)) || memcmp(o.cookie, "xdebugpy", 8) != 0) {
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
  bool ok = true;
  uint64_t interp = Word(rt + o.runtime_state.interpreters_head, &ok);
  for (int i = 0; ok && interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t tstate = Word(interp + o.interpreter_state.threads_head, &ok);
    while (ok && tstate != 0 && threads->size() < static_cast<size_t>(kMaxThreads)) {
      threads->emplace_back();
      ReadThread(o, tstate, reinterpret_cast<uint64_t>(code_type), &threads->back());
      tstate = Word(tstate + o.thread_state.next, &ok);
    }
    interp = Word(interp + o.interpreter_state.next, &ok);
  }
  if (!ok && threads->empty()) {
    *error = "the interpreter's thread list could not be read";
    return false;
  }
  return true;
}

}  // namespace hook
}  // namespace xtimer
