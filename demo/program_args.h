// Usage errors and integer parsing for the demo programs' flags and environment variables
// (train_step, diag_job): one wording for every program.
#ifndef XTIMER_DEMO_PROGRAM_ARGS_H_
#define XTIMER_DEMO_PROGRAM_ARGS_H_

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

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

// Splits argv[*i] into a flag's name and value: "--name=value", or "--name" whose value is the
// next argument (taken only when the caller asks for it, with FlagValue). *value is null then.
inline std::string FlagName(char** argv, int i, const char** value) {
  const std::string arg = argv[i];
  *value = nullptr;
  const size_t eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos) return arg;
  *value = argv[i] + eq + 1;
  return arg.substr(0, eq);
}

// A usage error for an argument that is no known flag.
[[noreturn]] inline void UnknownArgument(const char* arg) {
  if (arg[0] == '-') UsageError("unknown flag '%s'", arg);
  UsageError("unexpected argument '%s'", arg);
}

// The value of the known flag `name` at argv[*i]: `value` from FlagName, else the next argument
// (*i advances); a usage error when there is none.
inline const char* FlagValue(int argc, char** argv, int* i, const std::string& name,
                             const char* value) {
  if (value != nullptr) return value;
  if (*i + 1 >= argc) UsageError("flag %s needs a value", name.c_str());
  return argv[++*i];
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
