#include "timeline/group_layout.h"

namespace xtimer {
namespace timeline {

bool ParseGroupLayout(const std::string& text, GroupLayout* layout, std::string* error) {
  if (!ParseParallelGroups(text, &layout->groups, error)) return false;
  layout->given = true;
  return true;
}

}  // namespace timeline
}  // namespace xtimer
