#include "util/command_line.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "util/split.h"

namespace xtimer {
namespace {

std::string Shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

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

bool ParseSwitch(const std::string& s, bool* out) {
  if (s.empty() || s == "1" || s == "true" || s == "yes") {
    *out = true;
  } else if (s == "0" || s == "false" || s == "no") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

CommandLine& CommandLine::Add(const char* names, const char* placeholder, Setter set,
                              const char* help) {
  flags_.push_back(Flag{SplitList(names, ','), placeholder, "", help, std::move(set)});
  return *this;
}

CommandLine& CommandLine::Switch(const char* names, bool* out, const char* help) {
  return Add(names, "", [out](const std::string& t, std::string* expected) {
    *expected = "true or false";
    return ParseSwitch(t, out);
  }, help);
}

CommandLine& CommandLine::SwitchOff(const char* names, bool* out, const char* help) {
  return Add(names, "", [out](const std::string& t, std::string* expected) {
    *expected = "true or false";
    bool on = false;
    if (!ParseSwitch(t, &on)) return false;
    *out = !on;
    return true;
  }, help);
}

CommandLine& CommandLine::Text(const char* names, std::string* out, const char* help) {
  return Add(names, "S", [out](const std::string& t, std::string*) {
    *out = t;
    return true;
  }, help);
}

CommandLine& CommandLine::List(const char* names, std::vector<std::string>* out,
                               const char* help) {
  return Add(names, "S", [out](const std::string& t, std::string*) {
    out->push_back(t);
    return true;
  }, help);
}

CommandLine& CommandLine::Integer(const char* names, int64_t lo, int64_t hi, int64_t* out,
                                  const char* help) {
  return Add(names, "N", [lo, hi, out](const std::string& t, std::string* expected) {
    *expected = "a number from " + std::to_string(lo) + " to " + std::to_string(hi);
    return ParseInteger(t, lo, hi, out);
  }, help);
}

CommandLine& CommandLine::Integer(const char* names, int lo, int hi, int* out,
                                  const char* help) {
  return Add(names, "N", [lo, hi, out](const std::string& t, std::string* expected) {
    *expected = "a number from " + std::to_string(lo) + " to " + std::to_string(hi);
    int64_t v = 0;
    if (!ParseInteger(t, lo, hi, &v)) return false;
    *out = static_cast<int>(v);
    return true;
  }, help);
}

CommandLine& CommandLine::Number(const char* names, double lo, double hi, double* out,
                                 const char* help) {
  return Add(names, "X", [lo, hi, out](const std::string& t, std::string* expected) {
    *expected = "a number from " + Shortest(lo) + " to " + Shortest(hi);
    return ParseNumber(t, lo, hi, out);
  }, help);
}

CommandLine& CommandLine::Custom(const char* names, const char* placeholder, Setter set,
                                 const char* help) {
  return Add(names, placeholder, std::move(set), help);
}

CommandLine& CommandLine::Env(const char* variable) {
  if (!flags_.empty()) flags_.back().env = variable;
  return *this;
}

CommandLine& CommandLine::Placeholder(const char* name) {
  if (!flags_.empty()) flags_.back().placeholder = name;
  return *this;
}

const CommandLine::Flag* CommandLine::Find(const std::string& name) const {
  for (const Flag& f : flags_) {
    for (const std::string& n : f.names) {
      if (n == name) return &f;
    }
  }
  return nullptr;
}

bool CommandLine::Apply(const Flag& flag, const std::string& source, const std::string& text,
                        std::string* error) const {
  if (text.empty() && !flag.placeholder.empty()) {
    *error = source + " needs a value";
    return false;
  }
  std::string expected;
  if (flag.set(text, &expected)) return true;
  *error = source + " must be " + expected + ", not '" + text + "'";
  return false;
}

bool CommandLine::ApplyEnvironment(const std::function<const char*(const char*)>& getenv_fn,
                                   std::string* error) const {
  for (const Flag& f : flags_) {
    if (f.env.empty()) continue;
    const char* v = getenv_fn(f.env.c_str());
    if (v == nullptr || *v == '\0') continue;
    if (!Apply(f, "environment variable " + f.env, v, error)) return false;
  }
  return true;
}

CommandLine::Outcome CommandLine::Parse(int argc, const char* const* argv, std::string* error,
                                        int* next) const {
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return Outcome::kHelp;
    if (arg == "--version") return Outcome::kVersion;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {  // positional ("-" alone is one too)
      if (stop_at_positional_) break;
      if (positionals_ == nullptr) {
        *error = "unexpected argument '" + arg + "'";
        return Outcome::kBad;
      }
      positionals_->push_back(arg);
      continue;
    }
    std::string value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_value = true;
    }
    const Flag* flag = Find(arg);
    if (flag == nullptr) {
      *error = "unknown option '" + arg + "'";
      return Outcome::kBad;
    }
    if (!has_value && !flag->placeholder.empty()) {
      if (i + 1 >= argc) {
        *error = arg + " needs a value";
        return Outcome::kBad;
      }
      value = argv[++i];
    }
    if (!Apply(*flag, arg, value, error)) return Outcome::kBad;
  }
  if (stop_at_positional_) {
    if (next != nullptr) *next = i;
  } else if (positionals_ != nullptr) {
    for (; i < argc; ++i) positionals_->push_back(argv[i]);
  } else if (i < argc) {
    *error = "unexpected argument '" + std::string(argv[i]) + "'";
    return Outcome::kBad;
  }
  return Outcome::kRun;
}

namespace {

// `text` in lines of at most `width` columns (a longer word stands alone), each after `indent`
// spaces but the first, which follows `first` (padded to the indent, or alone on its line when
// it reaches it).
std::string Wrapped(std::string first, const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  if (first.size() < indent) {
    line = first + std::string(indent - first.size(), ' ');
  } else {
    out = first + "\n";
    line.assign(indent, ' ');
  }
  bool empty = true;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (!empty && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.assign(indent, ' ');
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  return out + line + "\n";
}

}  // namespace

std::string CommandLine::FlagHelp(size_t column, size_t width) const {
  std::string out;
  for (const Flag& f : flags_) {
    std::string left = " ";
    for (const std::string& n : f.names) left += (left.size() > 1 ? ", " : " ") + n;
    if (!f.placeholder.empty()) left += " " + f.placeholder;
    std::string help = f.help;
    if (!f.env.empty()) help += " [" + f.env + "]";
    if (width > 0) {
      out += Wrapped(left, help, column + 1, width);
      continue;
    }
    if (left.size() < column) left.resize(column, ' ');
    out += left + " " + help + "\n";
  }
  return out;
}

std::vector<std::string> CommandLine::Names() const {
  std::vector<std::string> out;
  for (const Flag& f : flags_) out.insert(out.end(), f.names.begin(), f.names.end());
  return out;
}

}  // namespace xtimer
