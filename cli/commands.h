// Subcommands of the `xtimer` CLI. Each takes argv from the subcommand's name on and returns the
// process exit status: 0 success, 1 failure, 2 bad arguments, 3 partial input or result.
#ifndef XTIMER_CLI_COMMANDS_H_
#define XTIMER_CLI_COMMANDS_H_

namespace xtimer {
namespace cli {

int TimelineMain(int argc, char** argv);
int DumpMain(int argc, char** argv);  // cli/dump.cc
int DiffMain(int argc, char** argv);  // cli/diff.cc
int AnalyzeMain(int argc, char** argv);  // cli/analyze.cc
int StacksMain(int argc, char** argv);  // cli/stacks.cc
int ReportMain(int argc, char** argv);  // cli/report.cc

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_COMMANDS_H_
