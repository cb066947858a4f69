// One table-driven parser for every xtimer program's command line: the daemon, each `xtimer`
// command and the launcher. A program lists its flags once, each bound to where its value goes;
// the parser reads them, checks ranges, writes one kind of message for each kind of mistake, and
// (for the daemon) takes environment defaults and prints the flag list of --help.
//
// Spellings accepted: `--name value` and `--name=value` (a short name such as -j only as
// `-j value`); a switch takes no separate value (`--json`), but `--name=true|false|1|0|yes|no`
// sets it either way. `--` ends the flags: what follows is positional. -h/--help and --version are
// always known.
#ifndef XTIMER_UTIL_COMMAND_LINE_H_
#define XTIMER_UTIL_COMMAND_LINE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xtimer {

// A whole decimal number in [lo, hi] (no trailing text, not NaN). False otherwise.
bool ParseNumber(const std::string& s, double lo, double hi, double* out);

// A whole integer in [lo, hi] (base 10, no trailing text). False otherwise.
bool ParseInteger(const std::string& s, int64_t lo, int64_t hi, int64_t* out);

// true/1/yes/"" or false/0/no. False otherwise.
bool ParseSwitch(const std::string& s, bool* out);

class CommandLine {
 public:
  // Takes one value's text. False when it is not acceptable, with *expected saying what is
  // (e.g. "a list like 0,1,4-7"); the parser writes "--name must be EXPECTED, not 'TEXT'".
  using Setter = std::function<bool(const std::string& text, std::string* expected)>;

  enum class Outcome { kRun, kHelp, kVersion, kBad };

  // Each flag: `names` are its spellings, comma-separated ("-j,--jobs"); `help` is its line in
  // FlagHelp(). Each returns *this so that an environment variable can follow (Env).
  CommandLine& Switch(const char* names, bool* out, const char* help = "");
  // A switch that stores false when given (--no-align into `align`).
  CommandLine& SwitchOff(const char* names, bool* out, const char* help = "");
  CommandLine& Text(const char* names, std::string* out, const char* help = "");
  // A flag that may be given more than once: each value is appended to *out.
  CommandLine& List(const char* names, std::vector<std::string>* out, const char* help = "");
  CommandLine& Integer(const char* names, int64_t lo, int64_t hi, int64_t* out,
                       const char* help = "");
  CommandLine& Integer(const char* names, int lo, int hi, int* out, const char* help = "");
  CommandLine& Number(const char* names, double lo, double hi, double* out,
                      const char* help = "");
  // Any other value: `placeholder` names it in FlagHelp ("LIST", "MODE").
  CommandLine& Custom(const char* names, const char* placeholder, Setter set,
                      const char* help = "");
  // The environment variable that gives the last flag added its default (ApplyEnvironment).
  CommandLine& Env(const char* variable);
  // The last flag's value as FlagHelp names it ("FILE", "SECONDS") instead of S, N or X.
  CommandLine& Placeholder(const char* name);

  // Positional arguments go into *out (without this, one is a mistake).
  void Positionals(std::vector<std::string>* out) { positionals_ = out; }
  // The first positional argument (or `--`) ends the parse; Parse's *next is its index. For a
  // launcher: what follows is the command to run, whatever its own flags.
  void StopAtPositional() { stop_at_positional_ = true; }

  // Applies each flag's environment variable that is set and non-empty, through
  // getenv_fn. False with *error ("environment variable X must be ...") on a bad value.
  bool ApplyEnvironment(const std::function<const char*(const char*)>& getenv_fn,
                        std::string* error) const;
  // Reads argv[1..argc). kBad comes with *error, a sentence without the program's name.
  Outcome Parse(int argc, const char* const* argv, std::string* error, int* next = nullptr) const;

  // "  --name N     help [ENV]" per flag, in the order they were added. With `width`, each
  // flag's help is wrapped at that many columns, continued at `column` (a flag whose names
  // reach the column starts its help on the next line); 0 keeps each flag on one line.
  std::string FlagHelp(size_t column = 26, size_t width = 0) const;
  // Every spelling of every flag, for tests that check --help and the docs name them all.
  std::vector<std::string> Names() const;

 private:
  struct Flag {
    std::vector<std::string> names;
    std::string placeholder;  // empty for a switch
    std::string env;
    std::string help;
    Setter set;
  };
  CommandLine& Add(const char* names, const char* placeholder, Setter set, const char* help);
  const Flag* Find(const std::string& name) const;
  bool Apply(const Flag& flag, const std::string& source, const std::string& text,
             std::string* error) const;

  std::vector<Flag> flags_;
  std::vector<std::string>* positionals_ = nullptr;
  bool stop_at_positional_ = false;
};

}  // namespace xtimer

#endif  // XTIMER_UTIL_COMMAND_LINE_H_
