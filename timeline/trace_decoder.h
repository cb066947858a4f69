// Decodes a trace written by `xtimer timeline` the way trace_processor reads it (for the parts
// we write): track descriptors, per-sequence incremental state (interned strings, incremental
// clock), slices from begin/end pairs, instants, flows, and `compressed_packets` (zlib). Test
// support only: the converter never reads traces. Schema: timeline/perfetto_trace.proto.
#ifndef XTIMER_TIMELINE_TRACE_DECODER_H_
#define XTIMER_TIMELINE_TRACE_DECODER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "timeline/perfetto_trace.pb.h"

namespace xtimer {
namespace timeline {

struct DecodedSlice {
  uint64_t track = 0;
  int64_t ts = 0;
  int64_t dur = 0;  // 0 for instants
  std::string name;
  std::string category;
  std::map<std::string, std::string> args;  // numbers as decimal text
  std::vector<uint64_t> flows, terminating;
};

struct DecodedTrace {
  std::map<uint64_t, perfetto::protos::TrackDescriptor> tracks;
  std::vector<DecodedSlice> slices;  // completed slices, in the order they ended
  std::vector<DecodedSlice> instants;
  std::set<std::string> names;  // every interned event name
  bool primary_realtime = false;
  int compressed_packets = 0;       // compressed_packets fields inflated
  std::vector<std::string> errors;  // what a reader would reject or misread; empty when clean
};

DecodedTrace DecodeTrace(const std::string& bytes);

// Process id of a process or thread track (-1 if `uuid` is not a known track).
int PidOfTrack(const DecodedTrace& d, uint64_t uuid);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_TRACE_DECODER_H_
