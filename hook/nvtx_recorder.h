// The NVTX recorder: the plain C++ API the NVTX injection (nvtx_injection.cc) calls, and the unit
// tests drive. It keeps each thread's stack of open push/pop ranges per domain (the levels NVTX
// functions return), and hands the poller one format::NvtxRecord per completed push/pop range,
// start, end and mark, through the queue the timed ops use.
//
// Hot path (every function but Strings().Intern's first sight of a string): no allocation, no
// lock, no system call (a thread's first NVTX call learns its thread id with gettid, once). The
// records are written only while timing is on (g_mode kOn); the levels are kept either way, so
// the values returned to the application do not depend on it. `now_ns` is the caller's
// CLOCK_REALTIME read at the start of its callback: the record's time, and where the callback's
// own time starts (budget::ChargeSince, which the callers call: the hook's own time).
#ifndef XTIMER_HOOK_NVTX_RECORDER_H_
#define XTIMER_HOOK_NVTX_RECORDER_H_

#include <cstdint>

namespace xtimer {
namespace hook {
namespace nvtx {

// What an NVTX event says besides its kind, decoded from nvtxEventAttributes_t (or a message).
struct Attrs {
  uint32_t name_id = 0;   // NvtxStrings id of the message (0: none)
  uint32_t category = 0;
  uint32_t color = 0;     // ARGB when flags has format::kNvtxHasColor
  uint8_t flags = 0;      // format::kNvtx*
  uint8_t payload_type = 0;
  uint64_t payload = 0;
};

// Open push/pop ranges a thread keeps (all domains together); deeper pushes are not recorded,
// their levels still returned.
constexpr int kMaxOpenRanges = 128;

// Opens a push/pop range of `domain_id` (0: the default domain) on this thread; returns its
// 0-based level in the domain.
int Push(uint32_t domain_id, const Attrs& attrs, int64_t now_ns);
// Closes this thread's innermost open range of `domain_id` and records it. Returns its level, or
// -1 when the thread has none open in the domain.
int Pop(uint32_t domain_id, int64_t now_ns);
// A start/end range: a new process-wide id for RangeStart when no other consumer gave one.
uint64_t NextRangeId();
void Start(uint32_t domain_id, const Attrs& attrs, uint64_t range_id, int64_t now_ns);
void End(uint32_t domain_id, uint64_t range_id, int64_t now_ns);
void Mark(uint32_t domain_id, const Attrs& attrs, int64_t now_ns);
// Interns a string (NvtxStrings::Intern of the process state); 0 before the hook initialised.
uint32_t Intern(const char* text);
// XTIMER_STEP_RANGE: push/pop ranges with this message are training steps (their records carry
// format::kNvtxStep). Null or "": none. Cold; call before the application's NVTX calls run.
void SetStepRange(const char* message);

}  // namespace nvtx
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_NVTX_RECORDER_H_
