// Parallel-group layouts for `xtimer timeline --groups` (docs/perfetto.md): the layout every
// command reads (util/parallel_groups.h: Megatron's rank order, tp fastest), and the label each
// rank's process gets in the trace.
#ifndef XTIMER_TIMELINE_GROUP_LAYOUT_H_
#define XTIMER_TIMELINE_GROUP_LAYOUT_H_

#include <string>

#include "util/parallel_groups.h"

namespace xtimer {
namespace timeline {

struct GroupLayout {
  bool given = false;  // --groups was given
  ParallelGroups groups;
  int world() const { return groups.world(); }
  // "pp1 dp0 tp1": slowest first, dimensions of size 1 left out.
  std::string Label(int rank) const { return ParallelLabel(groups, rank); }
};

// Returns false with *error naming the bad part.
bool ParseGroupLayout(const std::string& text, GroupLayout* layout, std::string* error);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_GROUP_LAYOUT_H_
