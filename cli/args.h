// The one front of `xtimer` commands' argument errors and numbers: each command reports a bad
// argument the same way ("xtimer CMD: what (see xtimer CMD --help)", exit status 2) and reads
// numbers with the same range checks.
#ifndef XTIMER_CLI_ARGS_H_
#define XTIMER_CLI_ARGS_H_

#include <cstdint>
#include <string>

namespace xtimer {
namespace cli {

// Prints "xtimer COMMAND: MESSAGE (see xtimer COMMAND --help)" on stderr; returns 2, the exit
// status of bad arguments.
int BadArg(const char* command, const std::string& message);

// A whole decimal number in [lo, hi] (no trailing text, not NaN). False otherwise.
bool ParseNumber(const std::string& s, double lo, double hi, double* out);

// A whole integer in [lo, hi] (base 10, no trailing text). False otherwise.
bool ParseInteger(const std::string& s, int64_t lo, int64_t hi, int64_t* out);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_ARGS_H_
