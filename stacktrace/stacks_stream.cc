#include "stacktrace/stacks_stream.h"

#include <cstdint>
#include <cstring>

namespace xtimer {
namespace stacktrace {
namespace {

// The members seen in one object: one seen twice makes the fast path give up (the reference
// reads the first of them).
class Seen {
 public:
  bool First(int bit) {
    const uint32_t m = 1u << bit;
    if (bits_ & m) return false;
    bits_ |= m;
    return true;
  }
  bool Has(int bit) const { return (bits_ >> bit) & 1u; }

 private:
  uint32_t bits_ = 0;
};

bool Is(const char* s, size_t n, const char* name) {
  return n == std::strlen(name) && std::memcmp(s, name, n) == 0;
}

// The characters json_reader.cc takes into a number token.
bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

// The first '"', '\\' or control byte from p on (or end): 8 bytes at a time while none is in
// them (a word has such a byte exactly when one of the three tests below sets a high bit).
const char* StringEnd(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  auto has_zero = [&](uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  for (; end - p >= 8; p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    if (has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) |
        ((w - kOnes * 0x20) & ~w & kHighs)) {
      break;
    }
  }
  while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  return p;
}

// Members of the top-level object, by bit in Seen.
enum Top { kFormat, kVersion, kWorld, kRank, kLocalRank, kJob, kHost, kPid, kTime, kState,
           kError, kFrames, kThreads };

class Stream {
 public:
  explicit Stream(const std::string& text) : p_(text.data()), end_(p_ + text.size()) {}

  bool Document(StacksFile* out) {
    Seen seen;
    if (!Object([&](const char* k, size_t n) { return TopMember(k, n, &seen, out); })) {
      return false;
    }
    Space();
    const bool required = seen.Has(kFormat) && seen.Has(kVersion) && seen.Has(kWorld) &&
                          seen.Has(kRank) && seen.Has(kFrames) && seen.Has(kThreads);
    out->frames.resize(frames_used_);
    out->threads.resize(threads_used_);
    return p_ == end_ && required && Is(format_, format_n_, kStacksFormat) &&
           version_ == kStacksVersion && out->rank < out->world_size &&
           max_index_ < static_cast<int64_t>(out->frames.size());
  }

 private:
  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Take(char c) {
    Space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  // A string with no escape and no control character (the reference decodes or refuses those).
  bool Str(const char** s, size_t* n) {
    if (!Take('"')) return false;
    const char* start = p_;
    p_ = StringEnd(p_, end_);
    if (p_ == end_ || *p_ != '"') return false;
    *s = start;
    *n = static_cast<size_t>(p_++ - start);
    return true;
  }
  bool Str(size_t max_bytes, std::string* out) {
    const char* s;
    size_t n;
    if (!Str(&s, &n) || n > max_bytes) return false;
    out->assign(s, n);
    return true;
  }
  // A plain integer (-?[0-9]{1,19}, not followed by another character of a number) in [lo, hi].
  template <class T>
  bool Int(int64_t lo, int64_t hi, T* out) {
    Space();
    const bool negative = p_ < end_ && *p_ == '-';
    const char* digits = p_ + negative;
    const char* q = digits;
    uint64_t v = 0;
    while (q < end_ && *q >= '0' && *q <= '9' && q - digits < 20) v = v * 10 + (*q++ - '0');
    if (q == digits || q - digits > 19 || (q < end_ && IsNumberChar(*q))) return false;
    if (v > (negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX})) return false;
    const int64_t value = !negative ? static_cast<int64_t>(v)
                          : v == uint64_t{1} << 63 ? INT64_MIN : -static_cast<int64_t>(v);
    if (value < lo || value > hi) return false;
    p_ = q;
    *out = static_cast<T>(value);
    return true;
  }
  // '{' "name": value, ... '}', each member read by member(name, length) (false: give up).
  template <class F>
  bool Object(F member) {
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      const char* k;
      size_t n;
      if (!Str(&k, &n) || !Take(':') || !member(k, n)) return false;
    } while (Take(','));
    return Take('}');
  }
  template <class F>
  bool Array(F item) {
    if (!Take('[')) return false;
    if (Take(']')) return true;
    do {
      if (!item()) return false;
    } while (Take(','));
    return Take(']');
  }

  bool TopMember(const char* k, size_t n, Seen* seen, StacksFile* out);
  // The next element of *items, reused when the vector already has one from an earlier file
  // (its strings and vectors keep their memory), else appended; false past `max`.
  template <class T>
  static T* Next(std::vector<T>* items, size_t* used, size_t max);
  bool ReadFrame(Frame* f);
  bool ReadThread(Thread* t);
  bool ReadIndices(std::vector<uint32_t>* out);

  const char* p_;
  const char* end_;
  const char* format_ = nullptr;
  size_t format_n_ = 0;
  int64_t version_ = 0;
  int64_t max_index_ = -1;  // the largest frame index of any thread
  size_t frames_used_ = 0, threads_used_ = 0;  // elements of out->frames/threads read
};

void Clear(Frame* f) {
  f->kind = Frame::kNative;
  f->function.clear();
  f->module.clear();
  f->line = 0;
  f->file.clear();
}

void Clear(Thread* t) {
  t->tid = 0;
  t->name.clear();
  t->frames.clear();
  t->error.clear();
}

template <class T>
T* Stream::Next(std::vector<T>* items, size_t* used, size_t max) {
  if (*used == max) return nullptr;
  if (*used == items->size()) items->emplace_back();
  T* item = &(*items)[(*used)++];
  Clear(item);
  return item;
}

// Empties *f but keeps the memory of its strings, frames and threads for the next file.
void Reset(StacksFile* f) {
  f->job.clear();
  f->rank = 0;
  f->world_size = 0;
  f->local_rank = -1;
  f->device = -1;
  f->host.clear();
  f->pid = 0;
  f->capture_time_ns = 0;
  f->process_state.clear();
  f->error.clear();
}

bool Stream::TopMember(const char* k, size_t n, Seen* seen, StacksFile* out) {
  if (Is(k, n, "format")) return seen->First(kFormat) && Str(&format_, &format_n_);
  if (Is(k, n, "version")) return seen->First(kVersion) && Int(1, INT32_MAX, &version_);
  if (Is(k, n, "world_size")) return seen->First(kWorld) && Int(1, kMaxWorldSize, &out->world_size);
  if (Is(k, n, "rank")) return seen->First(kRank) && Int(0, kMaxWorldSize, &out->rank);
  if (Is(k, n, "local_rank")) {
    return seen->First(kLocalRank) && Int(-1, kMaxWorldSize, &out->local_rank);
  }
  if (Is(k, n, "job")) return seen->First(kJob) && Str(kMaxLabelBytes, &out->job);
  if (Is(k, n, "host")) return seen->First(kHost) && Str(kMaxLabelBytes, &out->host);
  if (Is(k, n, "pid")) return seen->First(kPid) && Int(0, INT32_MAX, &out->pid);
  if (Is(k, n, "capture_time_ns")) {
    return seen->First(kTime) && Int(0, INT64_MAX, &out->capture_time_ns);
  }
  if (Is(k, n, "process_state")) {
    return seen->First(kState) && Str(kMaxLabelBytes, &out->process_state);
  }
  if (Is(k, n, "error")) return seen->First(kError) && Str(kMaxStringBytes, &out->error);
  if (Is(k, n, "frames")) {
    return seen->First(kFrames) && Array([&] {
             Frame* f = Next(&out->frames, &frames_used_, kMaxFrameTable);
             return f != nullptr && ReadFrame(f);
           });
  }
  if (Is(k, n, "threads")) {
    return seen->First(kThreads) && Array([&] {
             Thread* t = Next(&out->threads, &threads_used_, kMaxThreads);
             return t != nullptr && ReadThread(t);
           });
  }
  return false;  // a member the reference ignores: let it read the file
}

bool Stream::ReadFrame(Frame* f) {
  Seen seen;
  const char* kind = nullptr;
  size_t kind_n = 0;
  const bool ok = Object([&](const char* k, size_t n) {
    if (Is(k, n, "kind")) return seen.First(0) && Str(&kind, &kind_n);
    if (Is(k, n, "function")) return seen.First(1) && Str(kMaxStringBytes, &f->function);
    if (Is(k, n, "module")) return seen.First(2) && Str(kMaxStringBytes, &f->module);
    if (Is(k, n, "line")) return seen.First(3) && Int(0, INT32_MAX, &f->line);
    if (Is(k, n, "file")) return seen.First(4) && Str(kMaxStringBytes, &f->file);
    return false;
  });
  if (!ok || !seen.Has(0) || !seen.Has(1)) return false;
  if (Is(kind, kind_n, "native")) return f->kind = Frame::kNative, true;
  if (Is(kind, kind_n, "python")) return f->kind = Frame::kPython, true;
  return false;
}

bool Stream::ReadThread(Thread* t) {
  Seen seen;
  const bool ok = Object([&](const char* k, size_t n) {
    if (Is(k, n, "tid")) return seen.First(0) && Int(0, INT32_MAX, &t->tid);
    if (Is(k, n, "name")) return seen.First(1) && Str(kMaxStringBytes, &t->name);
    if (Is(k, n, "error")) return seen.First(2) && Str(kMaxStringBytes, &t->error);
    return Is(k, n, "frames") && seen.First(3) && ReadIndices(&t->frames);
  });
  return ok && seen.Has(0) && seen.Has(3);
}

// A thread's frame indices, the bulk of a file: a tight loop for [0-9]{1,5} items. The range
// against the frame table is checked at the end (the table may come after the threads).
bool Stream::ReadIndices(std::vector<uint32_t>* out) {
  if (!Take('[')) return false;
  if (Take(']')) return true;
  out->reserve(64);
  while (true) {
    Space();
    const char* q = p_;
    uint32_t v = 0;
    while (q < end_ && *q >= '0' && *q <= '9' && q - p_ <= 5) v = v * 10 + (*q++ - '0');
    if (q == p_ || q - p_ > 5 || (q < end_ && IsNumberChar(*q)) || v >= kMaxFrameTable ||
        out->size() == static_cast<size_t>(kMaxFramesPerThread)) {
      return false;
    }
    p_ = q;
    if (static_cast<int64_t>(v) > max_index_) max_index_ = v;
    out->push_back(v);
    if (Take(',')) continue;
    return Take(']');
  }
}

}  // namespace

bool ParseStacksStream(const std::string& text, StacksFile* out) {
  Reset(out);
  if (text.size() > kMaxFileBytes) return false;
  return Stream(text).Document(out);
}

}  // namespace stacktrace
}  // namespace xtimer
