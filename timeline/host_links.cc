#include "timeline/host_links.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "format/record.h"

namespace xtimer {
namespace timeline {
namespace {

struct Range {
  int64_t begin;
  int64_t end;
  uint32_t tid;
  int32_t depth;
  uint32_t entry;
};

std::vector<Range> PushPopRanges(const Metadata& m) {
  std::vector<Range> ranges;
  for (uint32_t i = 0; i < m.nvtx.size(); ++i) {
    const NvtxEntry& e = m.nvtx[i];
    if (e.event != static_cast<uint8_t>(format::NvtxEvent::kRange) || e.end_ns <= e.start_ns) {
      continue;
    }
    ranges.push_back({e.start_ns, e.end_ns, e.tid, e.depth, i});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  return ranges;
}

// (launch time, event index) of the ops that have one, in time order.
std::vector<std::pair<int64_t, uint32_t>> Launches(const std::vector<EventRecord>& events) {
  std::vector<std::pair<int64_t, uint32_t>> launches;
  for (uint32_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    if (e.kind == static_cast<uint8_t>(format::OpKind::kHostSync) || e.cpu_launch_ns <= 0) continue;
    launches.push_back({std::min(e.cpu_launch_ns, e.gpu_start_ns), i});
  }
  std::sort(launches.begin(), launches.end());
  return launches;
}

}  // namespace

std::vector<HostLink> HostLinks(const std::vector<EventRecord>& events, const Metadata& m) {
  const std::vector<Range> ranges = PushPopRanges(m);
  std::vector<HostLink> links;
  if (ranges.empty()) return links;
  using Key = std::tuple<int64_t, int32_t, uint32_t>;  // begin, depth, entry: innermost last
  std::map<uint32_t, std::set<Key>> open;              // tid -> its open ranges
  using Closing = std::pair<int64_t, size_t>;           // end, index in ranges
  std::priority_queue<Closing, std::vector<Closing>, std::greater<Closing>> closing;
  size_t next = 0;
  for (const auto& [t, event] : Launches(events)) {
    for (; next < ranges.size() && ranges[next].begin <= t; ++next) {
      const Range& r = ranges[next];
      open[r.tid].insert({r.begin, r.depth, r.entry});
      closing.push({r.end, next});
    }
    while (!closing.empty() && closing.top().first <= t) {
      const Range& r = ranges[closing.top().second];
      closing.pop();
      auto thread = open.find(r.tid);
      thread->second.erase({r.begin, r.depth, r.entry});
      if (thread->second.empty()) open.erase(thread);
    }
    if (open.size() == 1) links.push_back({event, std::get<2>(*open.begin()->second.rbegin())});
  }
  std::sort(links.begin(), links.end(),
            [](const HostLink& a, const HostLink& b) { return a.event < b.event; });
  return links;
}

}  // namespace timeline
}  // namespace xtimer
