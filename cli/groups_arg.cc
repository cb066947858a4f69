#include "cli/groups_arg.h"

#include "cli/args.h"

namespace xtimer {
namespace cli {

void AddGroupsFlag(analysis::Groups* groups, std::string* text, CommandLine* cl) {
  cl->Custom("--groups", "LAYOUT", [groups, text](const std::string& t, std::string* expected) {
    std::string error;
    if (!analysis::ParseGroups(t, groups, &error)) {
      *expected = "a layout such as tp2-pp2-dp2 (" + error + ")";
      return false;
    }
    *text = t;
    return true;
  });
}

int CheckGroupsWorld(const char* command, const std::string& text,
                     const analysis::Groups& groups, int world) {
  if (groups.world() == world) return -1;
  return BadArg(command, "--groups " + text + " describes " + std::to_string(groups.world()) +
                             " ranks; the job has " + std::to_string(world));
}

}  // namespace cli
}  // namespace xtimer
