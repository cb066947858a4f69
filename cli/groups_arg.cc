#include "cli/groups_arg.h"

#include "cli/args.h"

namespace xtimer {
namespace cli {

int ParseGroupsArg(const char* command, const std::string& value, analysis::Groups* groups) {
  std::string error;
  if (value.empty()) return BadArg(command, "--groups needs a layout such as tp2-pp2-dp2");
  if (!analysis::ParseGroups(value, groups, &error)) {
    return BadArg(command, "--groups " + value + ": " + error);
  }
  return -1;
}

int CheckGroupsWorld(const char* command, const std::string& text,
                     const analysis::Groups& groups, int world) {
  if (groups.world() == world) return -1;
  return BadArg(command, "--groups " + text + " describes " + std::to_string(groups.world()) +
                             " ranks; the job has " + std::to_string(world));
}

}  // namespace cli
}  // namespace xtimer
