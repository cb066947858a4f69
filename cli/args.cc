#include "cli/args.h"

#include <cstdio>

#include "util/version.h"

namespace xtimer {
namespace cli {

int BadArg(const char* command, const std::string& message) {
  std::fprintf(stderr, "xtimer %s: %s (see xtimer %s --help)\n", command, message.c_str(),
               command);
  return 2;
}

int ParseArgs(const char* command, const char* help, const CommandLine& cl, int argc,
              char** argv) {
  std::string error;
  switch (cl.Parse(argc, argv, &error)) {
    case CommandLine::Outcome::kHelp:
      std::fputs(help, stdout);
      return 0;
    case CommandLine::Outcome::kVersion:
      std::printf("%s\n", kVersion);
      return 0;
    case CommandLine::Outcome::kBad:
      return BadArg(command, error);
    case CommandLine::Outcome::kRun:
      break;
  }
  return -1;
}

CommandLine::Setter Seconds(double lo, double hi, bool open_lo, double* out) {
  return [=](const std::string& s, std::string* expected) {
    char range[64];
    std::snprintf(range, sizeof range, "seconds in %s%g, %g]", open_lo ? "(" : "[", lo, hi);
    *expected = range;
    double d = 0;
    if (!ParseNumber(s, lo, hi, &d) || (open_lo && d == lo)) return false;
    *out = d;
    return true;
  };
}

}  // namespace cli
}  // namespace xtimer
