// Internal to the converter: a rank's NVTX events (Metadata::nvtx, timeline/format.h kTagNvtx)
// laid out as host tracks. Push/pop ranges and marks go to one track per thread and domain (the
// ranges of one domain on one thread nest, by NVTX's rules); start/end ranges, paired by range id,
// to as few "NVTX start/end" tracks as keep them from overlapping (a start with no end runs to
// the dump window's end). Pass 1 counts the tracks, pass 2 encodes them: both build them here.
#ifndef XTIMER_TIMELINE_NVTX_TRACKS_H_
#define XTIMER_TIMELINE_NVTX_TRACKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

struct NvtxItem {
  int64_t begin;
  int64_t end;     // == begin for a mark
  uint32_t entry;  // index in Metadata::nvtx (a start/end range: its start's)
  bool instant;
};

struct NvtxTrack {
  std::string name;  // "NVTX thread 1234", "NVTX thread 1234 domain D", "NVTX start/end 1"
  std::vector<NvtxItem> items;
};

std::vector<NvtxTrack> NvtxTracks(const Metadata& m);

// The text of string-table index `i` of `m` ("" out of range).
inline const std::string& NvtxString(const Metadata& m, uint32_t i) {
  static const std::string kEmpty;
  return i < m.strings.size() ? m.strings[i] : kEmpty;
}

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_NVTX_TRACKS_H_
