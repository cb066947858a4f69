// `--groups LAYOUT` (e.g. tp2-pp2-dp2) of `xtimer analyze`, `report` and `stacks`: read and held
// to the job's world size in one place, so every command says the same thing about a bad layout.
#ifndef XTIMER_CLI_GROUPS_ARG_H_
#define XTIMER_CLI_GROUPS_ARG_H_

#include <string>

#include "analysis/analysis.h"
#include "util/command_line.h"

namespace xtimer {
namespace cli {

// Adds `--groups LAYOUT` to `cl`: parsed (analysis::ParseGroups) into *groups, its text kept in
// *text (empty when not given). A bad layout reads "--groups must be a layout such as
// tp2-pp2-dp2 (why), not 'VALUE'".
void AddGroupsFlag(analysis::Groups* groups, std::string* text, CommandLine* cl);

// Returns -1 when `groups` (parsed from `text`) describes `world` ranks, else reports
// "--groups TEXT describes N ranks; the job has WORLD" and returns 2.
int CheckGroupsWorld(const char* command, const std::string& text,
                     const analysis::Groups& groups, int world);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_GROUPS_ARG_H_
