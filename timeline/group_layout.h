// Parallel-group layouts for `xtimer timeline --groups` (docs/perfetto.md).
#ifndef XTIMER_TIMELINE_GROUP_LAYOUT_H_
#define XTIMER_TIMELINE_GROUP_LAYOUT_H_

#include <cstdint>
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

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_GROUP_LAYOUT_H_
