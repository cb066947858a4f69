// The one front of `xtimer` commands' command lines: each command lists its flags in a
// util/command_line.h table and parses them here, so that every command answers --help and
// --version the same way and reports a bad argument the same way ("xtimer CMD: what (see xtimer
// CMD --help)", exit status 2).
#ifndef XTIMER_CLI_ARGS_H_
#define XTIMER_CLI_ARGS_H_

#include <string>

#include "util/command_line.h"

namespace xtimer {
namespace cli {

// Prints "xtimer COMMAND: MESSAGE (see xtimer COMMAND --help)" on stderr; returns 2, the exit
// status of bad arguments.
int BadArg(const char* command, const std::string& message);

// A command's --help around its flags: `usage` (the synopsis and what the command does) comes
// first, then "options:" with each flag of the command line and its help as the flag was
// registered (its default written where the default is set), -h/--help and --version, then
// `after` (the exit statuses).
struct Help {
  const char* usage;
  const char* after;
};

// The whole --help text of a command whose flags are `cl`.
std::string HelpText(const Help& help, const CommandLine& cl);

// Parses argv through `cl`. Returns -1 when the command should run; else the exit status: 0 after
// printing HelpText (-h, --help) or the version (--version), 2 after BadArg.
int ParseArgs(const char* command, const Help& help, const CommandLine& cl, int argc,
              char** argv);

// A number in flag help, as %g writes it: "300", "0.5".
std::string FormatNumber(double value);

// "(default X)" and "(default X; more)" ends of flag help (X: FormatNumber).
std::string DefaultIs(double value, const std::string& more = "");

// A flag's value in seconds: in (lo, hi] when `open_lo` (a timeout of 0 means nothing), else
// [lo, hi]. "--x must be seconds in (0, 30], not 'y'" otherwise.
CommandLine::Setter Seconds(double lo, double hi, bool open_lo, double* out);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_ARGS_H_
