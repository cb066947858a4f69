#include "hook/python_spans.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "format/record.h"
#include "hook/budget.h"
#include "hook/nvtx_recorder.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {
namespace pyspans {
// Initial-exec TLS with external, hidden linkage, as the hook's other thread-local state
// (recorder.h t_in_hook): no __tls_get_addr call, and no local TLS symbol of the general-dynamic
// model beside the initial-exec ones of internal linkage (nccl_handlers.cc t_group,
// nvtx_recorder.cc t_ranges), which made binutils 2.40 relocate those to the wrong offsets.
namespace internal {

// Spans a thread keeps open: deeper calls are counted, not recorded.
constexpr int kMaxOpen = 64;
struct Open {
  uint32_t name_id;
  uint32_t folded;  // nested calls of the same name inside this span
};
struct ThreadSpans {
  int depth;
  int overflow;
  Open open[kMaxOpen];
};
__thread ThreadSpans t_spans __attribute__((tls_model("initial-exec"), visibility("hidden")));

}  // namespace internal

namespace {

using internal::kMaxOpen;
using internal::t_spans;
using internal::ThreadSpans;

constexpr uint32_t kSlots = 2048;  // open addressing, at most a quarter full
static_assert(kSlots >= 4 * kMaxTracedCodes, "the table stays sparse");

struct Slot {
  std::atomic<const void*> key{nullptr};
  Traced value;
};

Slot g_slots[kSlots];
std::mutex g_register_mu;  // writers (cold); readers probe published keys
int g_registered = 0;
std::atomic<uint32_t> g_domain{0};
std::atomic<uint32_t> g_gc_names[format::kPythonGcGenerations];


inline uint32_t SlotOf(const void* code) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(code) >> 4) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(h >> 40) & (kSlots - 1);
}

uint32_t Domain() {
  uint32_t d = g_domain.load(std::memory_order_acquire);
  if (d == 0) {
    d = nvtx::Intern(format::kPythonSpanDomain);
    g_domain.store(d, std::memory_order_release);
  }
  return d;
}

void Open(uint32_t name_id, format::PythonSpanKind kind, nvtx::Attrs attrs, int64_t now) {
  ThreadSpans& t = t_spans;
  if (t.depth > 0 && t.open[t.depth - 1].name_id == name_id) {
    ++t.open[t.depth - 1].folded;
    return;
  }
  if (t.depth == kMaxOpen) {
    ++t.overflow;
    return;
  }
  attrs.name_id = name_id;
  attrs.category = static_cast<uint32_t>(kind);
  // A step function's span is a training step, as a range named XTIMER_STEP_RANGE is: every
  // reader of steps (the daemon, dumps, the report) takes both.
  if (kind == format::PythonSpanKind::kStep) attrs.flags |= format::kNvtxStep;
  nvtx::Push(Domain(), attrs, now);
  t.open[t.depth++] = {name_id, 0};
}

void Close(uint32_t name_id, int64_t now) {
  ThreadSpans& t = t_spans;
  if (t.overflow > 0) {
    --t.overflow;
    return;
  }
  int i = t.depth - 1;
  while (i >= 0 && t.open[i].name_id != name_id) --i;
  if (i < 0) return;  // its start was not seen
  const uint32_t domain = Domain();
  for (; t.depth - 1 > i; --t.depth) nvtx::Pop(domain, now);  // returns not seen
  if (t.open[i].folded > 0) {
    --t.open[i].folded;
    return;
  }
  nvtx::Pop(domain, now);
  --t.depth;
}

}  // namespace

bool Register(const void* code, const char* name, format::PythonSpanKind kind) {
  if (code == nullptr) return false;
  std::lock_guard<std::mutex> lock(g_register_mu);
  uint32_t i = SlotOf(code);
  for (const void* k; (k = g_slots[i].key.load(std::memory_order_relaxed)) != nullptr;
       i = (i + 1) & (kSlots - 1)) {
    if (k == code) return true;
  }
  if (g_registered == kMaxTracedCodes || Domain() == 0) return false;
  const uint32_t name_id = nvtx::Intern(name);
  if (name_id == 0) return false;
  g_slots[i].value.name_id = name_id;
  g_slots[i].value.kind = kind;
  g_slots[i].key.store(code, std::memory_order_release);
  ++g_registered;
  return true;
}

const Traced* Find(const void* code) {
  for (uint32_t i = SlotOf(code);; i = (i + 1) & (kSlots - 1)) {
    const void* k = g_slots[i].key.load(std::memory_order_acquire);
    if (k == code) return &g_slots[i].value;
    if (k == nullptr) return nullptr;
  }
}

void Enter(const Traced& t) {
  const int64_t now = RealtimeNs();
  Open(t.name_id, t.kind, nvtx::Attrs(), now);
  budget::ChargeSince(now);
}

void Leave(const Traced& t) {
  const int64_t now = RealtimeNs();
  Close(t.name_id, now);
  budget::ChargeSince(now);
}

void GcStart(int generation) {
  const int64_t now = RealtimeNs();
  if (generation < 0 || generation >= format::kPythonGcGenerations) generation = 0;
  uint32_t name_id = g_gc_names[generation].load(std::memory_order_acquire);
  if (name_id == 0) {  // the first collection of this generation
    const char* names[] = {"gc gen0", "gc gen1", "gc gen2"};
    name_id = nvtx::Intern(names[generation]);
    g_gc_names[generation].store(name_id, std::memory_order_release);
  }
  nvtx::Attrs attrs;
  attrs.flags = format::kNvtxHasPayload;
  attrs.payload_type = format::kPythonGcPayloadType;
  attrs.payload = static_cast<uint64_t>(generation);
  Open(name_id, format::PythonSpanKind::kGc, attrs, now);
  budget::ChargeSince(now);
}

void GcStop() {
  const int64_t now = RealtimeNs();
  ThreadSpans& t = t_spans;
  if (t.overflow > 0) {
    --t.overflow;
  } else if (t.depth > 0) {
    for (int g = 0; g < format::kPythonGcGenerations; ++g) {
      const uint32_t id = g_gc_names[g].load(std::memory_order_acquire);
      if (id != 0 && t.open[t.depth - 1].name_id == id) {
        Close(id, now);
        break;
      }
    }
  }
  budget::ChargeSince(now);
}

void ResetForTest() {
  std::lock_guard<std::mutex> lock(g_register_mu);
  for (Slot& s : g_slots) s.key.store(nullptr);
  g_registered = 0;
  g_domain.store(0);
  for (auto& g : g_gc_names) g.store(0);
  t_spans.depth = 0;
  t_spans.overflow = 0;
}

}  // namespace pyspans
}  // namespace hook
}  // namespace xtimer
