// libFuzzer entry for the timeline reader: any bytes must be rejected or read without crashing,
// reading out of bounds, or allocating more than the input justifies.
#include <cstddef>
#include <cstdint>

#include "timeline/timeline_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t sum = 0;
  xtimer::timeline::ReadResult r = xtimer::timeline::ReadTimelineBuffer(
      data, size, [&](const xtimer::timeline::EventRecord& e) { sum += e.duration_ns; });
  if (r.complete && !r.ok) __builtin_trap();
  if (r.ok && r.metadata.strings.empty()) __builtin_trap();
  (void)sum;
  return 0;
}
