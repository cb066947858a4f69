// The flags that set the analysis's options, each registered here once with its help and its
// default (read from analysis::Options): `--groups LAYOUT` (e.g. tp2-pp2-dp2) of `xtimer
// analyze`, `report` and `stacks`, read and held to the job's world size in one place so that
// every command says the same thing about a bad layout; `--hang-timeout S` of `analyze` and
// `report`.
#ifndef XTIMER_CLI_ANALYSIS_ARGS_H_
#define XTIMER_CLI_ANALYSIS_ARGS_H_

#include <string>

#include "analysis/analysis.h"
#include "util/command_line.h"

namespace xtimer {
namespace cli {

// Adds `--groups LAYOUT` to `cl`: parsed (analysis::ParseGroups) into *groups, its text kept in
// *text (empty when not given). A bad layout reads "--groups must be a layout such as
// tp2-pp2-dp2 (why), not 'VALUE'". `effect` ends its help: what the command does with it.
void AddGroupsFlag(analysis::Groups* groups, std::string* text, const char* effect,
                   CommandLine* cl);

// Adds `--hang-timeout S` to `cl`, into *seconds (0 when not given).
void AddHangTimeoutFlag(double* seconds, CommandLine* cl);

// The analysis's hang bound when the user gave one (seconds > 0): the longest threshold, and the
// shortest no longer than it.
void ApplyHangTimeout(double seconds, analysis::Options* options);

// Returns -1 when `groups` (parsed from `text`) describes `world` ranks, else reports
// "--groups TEXT describes N ranks; the job has WORLD" and returns 2.
int CheckGroupsWorld(const char* command, const std::string& text,
                     const analysis::Groups& groups, int world);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_ANALYSIS_ARGS_H_
