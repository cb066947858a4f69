#include "timeline/nvtx_tracks.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "format/record.h"

namespace xtimer {
namespace timeline {
namespace {

using format::NvtxEvent;

// Start/end ranges: paired by range id, then dealt to lanes that keep them apart.
void AddStartEnd(const Metadata& m, std::vector<NvtxTrack>* tracks) {
  std::unordered_map<uint64_t, int64_t> ends;  // range id -> end
  for (const NvtxEntry& e : m.nvtx) {
    if (e.event == static_cast<uint8_t>(NvtxEvent::kEnd)) ends[e.range_id] = e.end_ns;
  }
  std::vector<NvtxItem> ranges;
  for (uint32_t i = 0; i < m.nvtx.size(); ++i) {
    const NvtxEntry& e = m.nvtx[i];
    if (e.event != static_cast<uint8_t>(NvtxEvent::kStart)) continue;
    auto end = ends.find(e.range_id);
    const int64_t stop = end != ends.end() ? end->second : std::max(m.window_end_ns, e.start_ns);
    ranges.push_back({e.start_ns, std::max(stop, e.start_ns), i, false});
  }
  std::sort(ranges.begin(), ranges.end(), [](const NvtxItem& a, const NvtxItem& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.entry < b.entry;
  });
  std::vector<int64_t> lane_end;
  const size_t first = tracks->size();
  for (const NvtxItem& r : ranges) {
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > r.begin) ++lane;
    if (lane == lane_end.size()) {
      lane_end.push_back(r.end);
      tracks->push_back({"NVTX start/end " + std::to_string(lane + 1), {}});
    }
    lane_end[lane] = r.end;
    (*tracks)[first + lane].items.push_back(r);
  }
}

}  // namespace

std::vector<NvtxTrack> NvtxTracks(const Metadata& m) {
  std::vector<NvtxTrack> tracks;
  std::map<std::pair<uint32_t, uint32_t>, size_t> by_thread;  // (tid, domain) -> track
  for (uint32_t i = 0; i < m.nvtx.size(); ++i) {
    const NvtxEntry& e = m.nvtx[i];
    const bool mark = e.event == static_cast<uint8_t>(NvtxEvent::kMark);
    if (!mark && e.event != static_cast<uint8_t>(NvtxEvent::kRange)) continue;
    auto key = std::make_pair(e.tid, e.domain);
    auto at = by_thread.find(key);
    if (at == by_thread.end()) {
      const std::string& domain = NvtxString(m, e.domain);
      at = by_thread.emplace(key, tracks.size()).first;
      tracks.push_back({"NVTX thread " + std::to_string(e.tid) +
                            (domain.empty() ? "" : " domain " + domain),
                        {}});
    }
    tracks[at->second].items.push_back({e.start_ns, mark ? e.start_ns : e.end_ns, i, mark});
  }
  AddStartEnd(m, &tracks);
  return tracks;
}

}  // namespace timeline
}  // namespace xtimer
