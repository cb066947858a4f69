// `xtimer timeline`: per-rank timeline files (format.h) -> one Perfetto trace (docs/perfetto.md).
#ifndef XTIMER_TIMELINE_CONVERTER_H_
#define XTIMER_TIMELINE_CONVERTER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "timeline/group_layout.h"

namespace xtimer {
namespace timeline {

struct ConvertOptions {
  std::vector<std::string> inputs;  // directories (or single .timeline files)
  std::string output;
  std::string groups;  // empty: no grouping
  int jobs = 0;        // 0: hardware threads
  bool quiet = false;
  bool progress = false;  // draw a progress line on `log`
  bool args = true;       // debug annotations on slices
  bool launches = true;   // host track with launch instants + launch->GPU flows
  bool flows = true;      // collective flows across ranks
  bool align_clocks = true;
  // Packets go into zlib-compressed `compressed_packets` at this libdeflate level (1 fastest ..
  // 12 smallest); 0 writes them uncompressed.
  int compression_level = 1;
};

struct ConvertStats {
  int files = 0;
  int ranks = 0;
  uint64_t events = 0;  // events converted (slices)
  uint64_t trace_bytes = 0;
  std::vector<std::string> skipped;  // "path: why"
  std::vector<std::string> warnings;  // missing ranks, mixed dumps, bad parts of files
  std::vector<std::string> notes;     // how inputs were read (a dump path's job folders)
  int missing_ranks = 0;              // ranks of the world (files' world size) without a file
  uint64_t rejected_events = 0;       // events out of the limits of timeline/format.h, left out
  std::vector<std::pair<std::string, int64_t>> offsets;  // node -> ns added to its times
  // (node, collective) end times clock alignment worked on: collectives with members on more than
  // one node only, one per node (0 with alignment off).
  uint64_t align_entries = 0;
  double seconds = 0;
};

// Converts; returns false with *error when nothing could be written. `log` (may be null) gets
// the skipped inputs, the clock offsets and progress unless quiet.
bool ConvertTimelines(const ConvertOptions& options, ConvertStats* stats, std::string* error,
                      FILE* log);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_CONVERTER_H_
