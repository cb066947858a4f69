#include "hook/nvtx_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "format/record.h"
#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {
namespace nvtx {

// Plain data (no initializers): the thread-local stack then needs no constructor, so reaching it
// is one instruction (no TLS wrapper or guard).
struct Frame {
  int64_t start_ns;
  uint64_t payload;
  uint32_t name_id, category, color, domain_id;
  int32_t level;
  uint8_t flags, payload_type;
};

struct ThreadRanges {
  uint32_t tid;
  int open;      // frames in use
  int overflow;  // pushes beyond kMaxOpenRanges still open (not recorded)
  Frame frames[kMaxOpenRanges];
};

// Initial-exec, hidden, external linkage, as the hook's other thread-local state (recorder.h
// t_in_hook): one instruction to reach, no __tls_get_addr call (libxtimer.so is preloaded, so
// its TLS is static); exports_test checks that no thread-local has internal linkage.
static_assert(std::is_trivially_default_constructible<ThreadRanges>::value, "no TLS constructor");
__thread ThreadRanges t_ranges __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace {

std::atomic<uint32_t> g_step_name{0};  // the step range's string id, 0: none

inline uint32_t ThreadId() {
  if (__builtin_expect(t_ranges.tid == 0, 0)) {
    t_ranges.tid = static_cast<uint32_t>(syscall(SYS_gettid));  // once per thread
  }
  return t_ranges.tid;
}

inline bool Recording() { return g_mode.load(std::memory_order_acquire) == kOn; }

// Hands a record to the poller; a full queue drops it (counted).
void Emit(const format::NvtxRecord& r) {
  State* s = GetState();
  const bool ok = s->queue.PushWith([&r](Pending* cell) {
    std::memcpy(&cell->rec.nvtx, &r, sizeof(r));
    cell->start = nullptr;
    cell->end = nullptr;
    cell->device = -1;
    cell->state = Pending::kReady;
  });
  if (ok) {
    s->queued.fetch_add(1, std::memory_order_relaxed);
  } else {
    s->nvtx_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

format::NvtxRecord MakeRecord(format::NvtxEvent event, uint32_t domain_id, const Attrs& a) {
  format::NvtxRecord r;
  std::memset(&r, 0, sizeof(r));
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  r.event = static_cast<uint8_t>(event);
  r.tid = ThreadId();
  r.name_id = a.name_id;
  r.domain_id = domain_id;
  r.category = a.category;
  r.color = a.color;
  r.flags = a.flags;
  r.payload_type = a.payload_type;
  r.payload = a.payload;
  return r;
}

// The level a new range of `domain_id` gets: one below the innermost open range of the domain.
int NextLevel(const ThreadRanges& t, uint32_t domain_id) {
  for (int i = t.open - 1; i >= 0; --i) {
    if (t.frames[i].domain_id == domain_id) return t.frames[i].level + 1;
  }
  return 0;
}

}  // namespace

int Push(uint32_t domain_id, const Attrs& attrs, int64_t now_ns) {
  ThreadRanges& t = t_ranges;
  if (t.open == kMaxOpenRanges) {
    ++t.overflow;
    return kMaxOpenRanges + t.overflow - 1;  // deeper than the frames kept
  }
  const int level = NextLevel(t, domain_id);
  Frame& f = t.frames[t.open++];
  f.start_ns = now_ns;
  f.payload = attrs.payload;
  f.name_id = attrs.name_id;
  f.category = attrs.category;
  f.color = attrs.color;
  f.domain_id = domain_id;
  f.level = level;
  f.flags = attrs.flags;
  f.payload_type = attrs.payload_type;
  return level;
}

int Pop(uint32_t domain_id, int64_t now_ns) {
  ThreadRanges& t = t_ranges;
  if (t.overflow > 0) {
    --t.overflow;
    return kMaxOpenRanges + t.overflow;
  }
  int i = t.open - 1;
  while (i >= 0 && t.frames[i].domain_id != domain_id) --i;
  if (i < 0) return -1;
  const Frame f = t.frames[i];
  // Ranges of other domains opened inside it stay open (domains nest independently).
  for (int j = i; j + 1 < t.open; ++j) t.frames[j] = t.frames[j + 1];
  --t.open;
  if (Recording()) {
    Attrs a;
    a.name_id = f.name_id;
    a.category = f.category;
    a.color = f.color;
    a.flags = f.flags;
    a.payload_type = f.payload_type;
    a.payload = f.payload;
    format::NvtxRecord r = MakeRecord(format::NvtxEvent::kRange, domain_id, a);
    r.start_ns = f.start_ns;
    r.end_ns = now_ns;
    r.depth = f.level;
    if (f.name_id != 0 && f.name_id == g_step_name.load(std::memory_order_relaxed)) {
      r.flags |= format::kNvtxStep;
    }
    Emit(r);
  }
  return f.level;
}

uint64_t NextRangeId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void Start(uint32_t domain_id, const Attrs& attrs, uint64_t range_id, int64_t now_ns) {
  if (!Recording()) return;
  format::NvtxRecord r = MakeRecord(format::NvtxEvent::kStart, domain_id, attrs);
  r.start_ns = now_ns;
  r.range_id = range_id;
  Emit(r);
}

void End(uint32_t domain_id, uint64_t range_id, int64_t now_ns) {
  if (!Recording()) return;
  format::NvtxRecord r = MakeRecord(format::NvtxEvent::kEnd, domain_id, Attrs());
  r.end_ns = now_ns;
  r.range_id = range_id;
  Emit(r);
}

void Mark(uint32_t domain_id, const Attrs& attrs, int64_t now_ns) {
  if (!Recording()) return;
  format::NvtxRecord r = MakeRecord(format::NvtxEvent::kMark, domain_id, attrs);
  r.start_ns = r.end_ns = now_ns;
  Emit(r);
}

uint32_t Intern(const char* text) {
  State* s = GetState();
  return s == nullptr ? 0 : s->nvtx_strings.Intern(text);
}

void SetStepRange(const char* message) {
  g_step_name.store(message == nullptr ? 0 : Intern(message), std::memory_order_relaxed);
}

}  // namespace nvtx
}  // namespace hook
}  // namespace xtimer
