#include "cli/args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace xtimer {
namespace cli {

int BadArg(const char* command, const std::string& message) {
  std::fprintf(stderr, "xtimer %s: %s (see xtimer %s --help)\n", command, message.c_str(),
               command);
  return 2;
}

bool ParseNumber(const std::string& s, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

bool ParseInteger(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace cli
}  // namespace xtimer
