// Usage errors and integer parsing for the demo programs' flags and environment variables
// (train_step, diag_job): one wording for every program.
#ifndef XTIMER_DEMO_PROGRAM_ARGS_H_
#define XTIMER_DEMO_PROGRAM_ARGS_H_

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace demo {

// The program's name in error messages; main sets it first.
inline const char*& ProgramName() {
  static const char* name = "demo";
  return name;
}

// Prints "<program>: <message> (see --help)" and exits with status 2 (bad usage).
[[noreturn]] inline void UsageError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void UsageError(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s (see --help)\n", ProgramName(), msg);
  exit(2);
}

// A whole decimal integer in [min, max]; false for anything else.
inline bool ParseLong(const char* s, long min, long max, long* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

// The environment variable `name` as an integer in [min, INT_MAX], `def` when unset or empty;
// a usage error otherwise.
inline long EnvLong(const char* name, long def, long min) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return def;
  long out;
  if (!ParseLong(v, min, INT_MAX, &out)) {
    UsageError("environment variable %s=%s is not an integer >= %ld", name, v, min);
  }
  return out;
}

}  // namespace demo

#endif  // XTIMER_DEMO_PROGRAM_ARGS_H_
