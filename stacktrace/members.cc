// How a merge names its members: ranks as ranges, processes whose rank is not known by name
// (merge.h, kFirstProcessMember).
#include <algorithm>

#include "stacktrace/merge.h"

namespace xtimer {
namespace stacktrace {

std::string StackTree::ProcessName(int32_t member) const {
  const size_t k = static_cast<size_t>(member - kFirstProcessMember);
  return k < process_names_.size() ? process_names_[k] : "#" + std::to_string(k);
}

std::string StackTree::Members(const std::vector<int32_t>& members) const {
  const auto first_process =
      std::lower_bound(members.begin(), members.end(), kFirstProcessMember);
  const std::vector<int32_t> ranks(members.begin(), first_process);
  std::string out;
  if (!ranks.empty()) out = (ranks.size() == 1 ? "rank " : "ranks ") + RankRanges(ranks);
  if (first_process == members.end()) return out;
  out += (out.empty() ? "" : " and ") +
         std::string(members.end() - first_process == 1 ? "process " : "processes ");
  for (auto it = first_process; it != members.end(); ++it) {
    out += (it == first_process ? "" : ",") + ProcessName(*it);
  }
  return out;
}

std::string StackTree::Members(const RankSet& members) const {
  if (members.runs().empty() || members.runs().back().second < kFirstProcessMember) {
    return (members.size() == 1 ? "rank " : "ranks ") + RankRanges(members);
  }
  return Members(members.ToVector());
}

}  // namespace stacktrace
}  // namespace xtimer
