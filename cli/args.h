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

// Parses argv through `cl`. Returns -1 when the command should run; else the exit status: 0 after
// printing `help` (-h, --help) or the version (--version), 2 after BadArg.
int ParseArgs(const char* command, const char* help, const CommandLine& cl, int argc,
              char** argv);

// A flag's value in seconds: in (lo, hi] when `open_lo` (a timeout of 0 means nothing), else
// [lo, hi]. "--x must be seconds in (0, 30], not 'y'" otherwise.
CommandLine::Setter Seconds(double lo, double hi, bool open_lo, double* out);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_ARGS_H_
