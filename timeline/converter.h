// `xtimer timeline`: per-rank timeline files (format.h) -> one Perfetto trace (docs/perfetto.md).
#ifndef XTIMER_TIMELINE_CONVERTER_H_
#define XTIMER_TIMELINE_CONVERTER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace xtimer {
namespace timeline {

// A parallel layout such as "tp2-cp1-pp2-dp2": dimensions in rank order, the first varies
// fastest. Missing dimensions have size 1; the default layout is Megatron's tp-cp-ep-dp-pp.
struct GroupLayout {
  std::vector<std::pair<std::string, int>> dims;  // {"tp", 2}, ... fastest first
  int world() const;
  // Coordinates of a rank, in the order of dims.
  std::vector<int> Coordinates(int rank) const;
  // "pp1 dp0 tp1": slowest first.
  std::string Label(int rank) const;
  // Sort key grouping ranks: pp, dp, ep, cp, tp (canonical priority), tp fastest.
  int64_t OrderKey(int rank) const;
};
// Returns false with *error naming the bad part.
bool ParseGroupLayout(const std::string& text, GroupLayout* layout, std::string* error);

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
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, int64_t>> offsets;  // node -> ns added to its times
  double seconds = 0;
};

// Converts; returns false with *error when nothing could be written. `log` (may be null) gets
// the skipped inputs, the clock offsets and progress unless quiet.
bool ConvertTimelines(const ConvertOptions& options, ConvertStats* stats, std::string* error,
                      FILE* log);

// Clock alignment, exposed for tests. For each node, a map from (comm_id, seq) to the end time
// of that collective on that node. Returns the offset (ns) to add to each node's times so that
// shared collectives end together; node 0 with the most shared collectives is the reference.
struct NodeEnds {
  std::string node;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, int64_t>> ends;  // sorted by key
};
std::vector<int64_t> EstimateClockOffsets(const std::vector<NodeEnds>& nodes,
                                          std::vector<int>* reference_of);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_CONVERTER_H_
