#include "cli/readers/rank_clock.h"

#include <algorithm>
#include <map>

namespace xtimer {
namespace cli {

using timeline::CollectiveEnd;

std::vector<CollectiveEnd> EndsOf(const analysis::RankInput& in) {
  std::vector<CollectiveEnd> ends;
  ends.reserve(in.arrivals.size());
  for (const analysis::Arrival& a : in.arrivals) {
    if (a.end_ns > 0 && a.comm_id != 0) ends.push_back({{a.comm_id, a.seq}, a.end_ns});
  }
  return SortedEnds(std::move(ends));
}

std::vector<CollectiveEnd> SortedEnds(std::vector<CollectiveEnd> ends) {
  if (!std::is_sorted(ends.begin(), ends.end())) std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end(),
                         [](const CollectiveEnd& a, const CollectiveEnd& b) {
                           return a.first == b.first;
                         }),
             ends.end());
  return ends;
}

void ShiftArrival(int64_t offset, analysis::Arrival* a) {
  if (a->issue_ns != 0) a->issue_ns += offset;
  if (a->start_ns != 0) a->start_ns += offset;
  if (a->end_ns != 0) a->end_ns += offset;
  if (a->gap_begin_ns != 0) a->gap_begin_ns += offset;
}

void ShiftTimes(int64_t offset, analysis::RankInput* in) {
  if (offset == 0) return;
  auto shift = [offset](int64_t* t) {
    if (*t != 0) *t += offset;
  };
  auto shift_arrival = [offset](analysis::Arrival* a) { ShiftArrival(offset, a); };
  for (analysis::Arrival& a : in->arrivals) shift_arrival(&a);
  for (analysis::P2PCompletion& c : in->p2p_completions) shift(&c.end_ns);
  for (analysis::HostSpan& h : in->host_spans) {
    shift(&h.start_ns);
    shift(&h.end_ns);
  }
  for (analysis::Progress& p : in->progress) {
    shift(&p.oldest_issue_ns);
    if (p.has_inflight) shift_arrival(&p.inflight);
  }
  if (in->exit.exited) shift(&in->exit.at_ns);
  shift(&in->last_activity_ns);
}

std::vector<std::pair<std::string, int64_t>> DomainOffsets(
    std::map<std::string, std::vector<CollectiveEnd>> ends_by_domain,
    std::vector<std::string>* notes, std::vector<bool>* aligned) {
  std::vector<timeline::NodeEnds> nodes;
  for (auto& n : ends_by_domain) nodes.push_back({n.first, std::move(n.second)});
  const timeline::ClockAlignment alignment = timeline::AlignClocks(nodes);
  std::vector<std::pair<std::string, int64_t>> offsets;
  if (aligned != nullptr) aligned->clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    offsets.push_back({nodes[i].node, alignment.offset[i]});
    if (aligned != nullptr) aligned->push_back(alignment.reference_of[i] >= 0);
    if (notes != nullptr && nodes.size() > 1 && alignment.reference_of[i] < 0) {
      notes->push_back("node " + nodes[i].node +
                       " shares no collective with the other nodes: its clock is not aligned");
    }
  }
  return offsets;
}

}  // namespace cli
}  // namespace xtimer
