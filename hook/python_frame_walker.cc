#include "hook/python_frame_walker.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace xtimer {
namespace hook {
namespace {

constexpr size_t kMaxLineTable = 1u << 20;   // bytes of a line table read at most
constexpr int kFrameOwnedByCStack = 3;        // 3.12+ pycore_frame.h: a shim (entry) frame

// Reads our own memory; false (never a fault) when any byte is unmapped. process_vm_readv and
// getpid are system calls: async-signal-safe.
bool Peek(uint64_t address, void* out, size_t n) {
  if (address == 0 || address == kNoField) return false;
  iovec local = {out, n};
  iovec remote = {reinterpret_cast<void*>(address), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

uint64_t Word(uint64_t address, bool* ok) {
  uint64_t v = 0;
  if (!Peek(address, &v, sizeof(v))) *ok = false;
  return v;
}

// Bytes of a table in our memory, read 256 at a time as a decoder walks forward.
class TableReader {
 public:
  TableReader(uint64_t address, size_t size) : address_(address), size_(size) {}
  size_t size() const { return size_; }
  // The byte at `i`, -1 past the end or when unreadable.
  int At(size_t i) {
    if (i >= size_) return -1;
    if (i < start_ || i >= start_ + len_) {
      start_ = i;
      len_ = size_ - i < sizeof(buf_) ? size_ - i : sizeof(buf_);
      if (!Peek(address_ + i, buf_, len_)) {
        len_ = 0;
        return -1;
      }
    }
    return buf_[i - start_];
  }

 private:
  uint64_t address_;
  size_t size_;
  size_t start_ = 0, len_ = 0;
  unsigned char buf_[256];
};

unsigned ScanVarint(TableReader* t, size_t* p) {
  int b = t->At((*p)++);
  unsigned read = b < 0 ? 0 : static_cast<unsigned>(b);
  unsigned val = read & 63, shift = 0;
  while ((read & 64) && shift < 28 && (b = t->At(*p)) >= 0) {
    ++*p;
    read = static_cast<unsigned>(b);
    shift += 6;
    val |= (read & 63) << shift;
  }
  return val;
}

int LineOfLnotab(TableReader* t, int first_line, int addrq) {
  int line = first_line, addr = 0;
  for (size_t i = 0; i + 1 < t->size(); i += 2) {
    const int step = t->At(i), delta = t->At(i + 1);
    if (step < 0 || delta < 0) return 0;
    addr += step;
    if (addr > addrq) break;
    line += static_cast<signed char>(delta);
  }
  return line;
}

int LineOfLinetable310(TableReader* t, int first_line, int addrq) {
  if (addrq < 0) return first_line;
  int line = first_line, start = 0;
  for (size_t i = 0; i + 1 < t->size(); i += 2) {
    const int step = t->At(i), raw = t->At(i + 1);
    if (step < 0 || raw < 0) return 0;
    const int delta = static_cast<signed char>(raw);
    const int end = start + step;
    if (delta != -128) line += delta;
    if (addrq >= start && addrq < end) return delta == -128 ? 0 : line;
    start = end;
  }
  return 0;
}

int LineOfLocations(TableReader* t, int first_line, int addrq) {
  int line = first_line, start = 0;  // start in bytes
  size_t p = 0;
  while (p < t->size()) {
    const int first = t->At(p);
    if (first < 0) return 0;
    const int code = (first >> 3) & 15;
    const int end = start + ((first & 7) + 1) * 2;  // code units of 2 bytes
    size_t q = p + 1;
    int delta = 0;
    if (code == 13 || code == 14) {  // no columns, long form: a signed varint first
      const unsigned u = ScanVarint(t, &q);
      delta = (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
    } else if (code == 11 || code == 12) {  // one line forms 1 and 2
      delta = code - 10;
    }
    line += delta;
    if (addrq >= start && addrq < end) return code == 15 ? 0 : line;  // 15: no location
    start = end;
    int next = 0;
    do {
      next = t->At(++p);
    } while (next >= 0 && (next & 128) == 0);
  }
  return 0;
}

// Appends code point `c` as UTF-8 to out[*n], keeping room for the NUL; false when full.
bool PutUtf8(uint32_t c, char* out, size_t cap, size_t* n) {
  char b[4];
  size_t k = 0;
  if (c < 0x80) {
    b[k++] = static_cast<char>(c);
  } else if (c < 0x800) {
    b[k++] = static_cast<char>(0xc0 | (c >> 6));
    b[k++] = static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    b[k++] = static_cast<char>(0xe0 | (c >> 12));
    b[k++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    b[k++] = static_cast<char>(0x80 | (c & 0x3f));
  } else {
    b[k++] = static_cast<char>(0xf0 | ((c >> 18) & 7));
    b[k++] = static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    b[k++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    b[k++] = static_cast<char>(0x80 | (c & 0x3f));
  }
  if (*n + k + 1 > cap) return false;
  memcpy(out + *n, b, k);
  *n += k;
  return true;
}

// A compact str object as UTF-8 into out (cap bytes with the NUL); "" when unreadable.
void ReadStr(const PythonLayout& l, uint64_t object, char* out, size_t cap) {
  out[0] = '\0';
  uint32_t state = 0;
  int64_t length = 0;
  if (!Peek(object + l.unicode_state, &state, sizeof(state)) ||
      !Peek(object + l.unicode_length, &length, sizeof(length)) || length < 0) {
    return;
  }
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return;
  const uint64_t data = object + (ascii ? l.unicode_ascii_data : l.unicode_compact_data);
  size_t n = 0;
  unsigned char chunk[256];
  const size_t per_chunk = sizeof(chunk) / kind;
  for (int64_t i = 0; i < length;) {
    const size_t take = static_cast<size_t>(length - i) < per_chunk
                            ? static_cast<size_t>(length - i) : per_chunk;
    if (!Peek(data + static_cast<uint64_t>(i) * kind, chunk, take * kind)) break;
    for (size_t j = 0; j < take; ++j) {
      uint32_t c = 0;
      memcpy(&c, chunk + j * kind, kind);  // little-endian: the low bytes
      if (!PutUtf8(c, out, cap, &n)) {
        out[n] = '\0';
        return;
      }
    }
    i += static_cast<int64_t>(take);
  }
  out[n] = '\0';
}

// The byte offset into the code's instructions that the frame is at.
int64_t AddrqOf(const PythonLayout& l, uint64_t frame, uint64_t code, bool* ok) {
  if (l.instr == PythonInstr::kPointer) {
    return static_cast<int64_t>(Word(frame + l.frame_instr, ok) - (code + l.code_instructions));
  }
  int32_t lasti = 0;
  if (!Peek(frame + l.frame_instr, &lasti, sizeof(lasti))) *ok = false;
  return l.instr == PythonInstr::kLastiUnits ? int64_t{lasti} * 2 : int64_t{lasti};
}

// One frame's function, file and line; false for frames without a code object (shims).
bool ReadFrame(const PythonRuntime& rt, uint64_t frame, RawPythonFrame* out) {
  const PythonLayout& l = rt.layout;
  bool ok = true;
  if (l.frame_owner != kNoField) {
    char owner = 0;
    if (!Peek(frame + l.frame_owner, &owner, 1) || owner == kFrameOwnedByCStack) return false;
  }
  const uint64_t code = Word(frame + l.frame_code, &ok);
  if (!ok || code == 0 || Word(code + l.object_type, &ok) != rt.code_type || !ok) return false;
  ReadStr(l, Word(code + l.code_name, &ok), out->function, sizeof(out->function));
  ReadStr(l, Word(code + l.code_filename, &ok), out->file, sizeof(out->file));
  int32_t first_line = 0;
  Peek(code + l.code_firstlineno, &first_line, sizeof(first_line));
  const int64_t addrq = AddrqOf(l, frame, code, &ok);
  const uint64_t table = Word(code + l.code_linetable, &ok);
  int64_t size = 0;
  if (!ok || !Peek(table + l.bytes_size, &size, sizeof(size)) || size < 0 ||
      static_cast<uint64_t>(size) > kMaxLineTable || addrq >= (1 << 30) || addrq < -2) {
    out->line = 0;
    return true;
  }
  out->line = PythonLineOf(l.lines, table + l.bytes_data, static_cast<size_t>(size), first_line,
                           static_cast<int>(addrq));
  return true;
}

}  // namespace

int PythonLineOf(PythonLineTable kind, uint64_t table, size_t size, int first_line, int addrq) {
  TableReader t(table, size);
  switch (kind) {
    case PythonLineTable::kLnotab:
      return LineOfLnotab(&t, first_line, addrq);
    case PythonLineTable::kLinetable310:
      return LineOfLinetable310(&t, first_line, addrq);
    case PythonLineTable::kLocations:
      return addrq < 0 ? first_line : LineOfLocations(&t, first_line, addrq);
  }
  return 0;
}

int PythonThreadStates(const PythonRuntime& rt, uint64_t* out, int max) {
  const PythonLayout& l = rt.layout;
  bool ok = true;
  int n = 0;
  uint64_t interp = Word(rt.runtime + l.interpreters_head, &ok);
  for (int i = 0; ok && interp != 0 && i < kMaxPythonWalkInterpreters; ++i) {
    uint64_t tstate = Word(interp + l.interp_threads_head, &ok);
    if (!ok && i == 0) return -1;
    for (int k = 0; ok && tstate != 0 && k < kMaxPythonWalkThreads && n < max; ++k) {
      out[n++] = tstate;
      tstate = Word(tstate + l.tstate_next, &ok);
    }
    interp = Word(interp + l.interp_next, &ok);
  }
  return !ok && n == 0 ? -1 : n;
}

uint64_t PythonThreadStateOf(const PythonRuntime& rt, uint64_t thread_id) {
  const PythonLayout& l = rt.layout;
  bool ok = true;
  uint64_t interp = Word(rt.runtime + l.interpreters_head, &ok);
  for (int i = 0; ok && interp != 0 && i < kMaxPythonWalkInterpreters; ++i) {
    uint64_t tstate = Word(interp + l.interp_threads_head, &ok);
    for (int k = 0; ok && tstate != 0 && k < kMaxPythonWalkThreads; ++k) {
      if (PythonThreadIdOf(rt, tstate) == thread_id) return tstate;
      tstate = Word(tstate + l.tstate_next, &ok);
    }
    interp = Word(interp + l.interp_next, &ok);
  }
  return 0;
}

uint64_t PythonThreadIdOf(const PythonRuntime& rt, uint64_t tstate) {
  bool ok = true;
  const uint64_t id = Word(tstate + rt.layout.tstate_thread_id, &ok);
  return ok ? id : 0;
}

int PythonNativeTidOf(const PythonRuntime& rt, uint64_t tstate) {
  if (rt.layout.tstate_native_thread_id == kNoField) return 0;
  bool ok = true;
  const uint64_t tid = Word(tstate + rt.layout.tstate_native_thread_id, &ok);
  return ok ? static_cast<int>(tid) : 0;
}

int ReadPythonFrames(const PythonRuntime& rt, uint64_t tstate, RawPythonFrame* out, int max) {
  const PythonLayout& l = rt.layout;
  bool ok = true;
  uint64_t frame = Word(tstate + l.tstate_frame, &ok);
  if (ok && frame != 0 && l.cframe_current_frame != kNoField) {
    frame = Word(frame + l.cframe_current_frame, &ok);  // 3.11-3.12: the _PyCFrame's frame
  }
  int n = 0;
  // Every frame, across the entry frames that separate C-level evaluations.
  for (int k = 0; ok && frame != 0 && k < kMaxPythonWalkFrames && n < max; ++k) {
    if (ReadFrame(rt, frame, &out[n])) ++n;
    frame = Word(frame + l.frame_previous, &ok);
  }
  return n;
}

}  // namespace hook
}  // namespace xtimer
