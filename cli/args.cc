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

std::string HelpText(const Help& help, const CommandLine& cl) {
  constexpr size_t kColumn = 21, kWidth = 100;
  CommandLine standard;
  bool unused = false;
  standard.Switch("-h,--help", &unused, "this text");
  standard.Switch("--version", &unused, "print the version and exit");
  return std::string(help.usage) + "\noptions:\n" + cl.FlagHelp(kColumn, kWidth) +
         standard.FlagHelp(kColumn, kWidth) + "\n" + help.after;
}

int ParseArgs(const char* command, const Help& help, const CommandLine& cl, int argc,
              char** argv) {
  std::string error;
  switch (cl.Parse(argc, argv, &error)) {
    case CommandLine::Outcome::kHelp:
      std::fputs(HelpText(help, cl).c_str(), stdout);
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

std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string DefaultIs(double value, const std::string& more) {
  return "(default " + FormatNumber(value) + (more.empty() ? "" : "; " + more) + ")";
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
