#include "stacktrace/cxx_name.h"

#include <cstddef>

namespace xtimer {
namespace stacktrace {
namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

int Opens(char c) { return c == '(' || c == '<' || c == '[' || c == '{'; }
int Closes(char c) { return c == ')' || c == '>' || c == ']' || c == '}'; }

// The index of the bracket that the one at s[from] opens (step +1) or closes (step -1), depth
// counted over (), <>, [] and {} alike; npos when they do not balance.
size_t Matching(const std::string& s, size_t from, int step) {
  int depth = 0;
  for (size_t i = from; i < s.size(); i += step) {
    depth += step * (Opens(s[i]) - Closes(s[i]));
    if (depth == 0) return i;
  }
  return std::string::npos;
}

}  // namespace

std::string ShortFunctionName(const std::string& function) {
  std::string s = function;
  for (bool cut = true; cut;) {  // trailing qualifiers: " const", " &&", "&"...
    cut = false;
    for (const char* q : {" const", " volatile", "&", " "}) {
      if (EndsWith(s, q)) {
        s.resize(s.size() - std::char_traits<char>::length(q));
        cut = true;
      }
    }
  }
  if (s.empty() || s.back() != ')') return function;  // a C name, or one it cannot read
  const size_t params = Matching(s, s.size() - 1, -1);
  if (params == std::string::npos || params == 0) return function;
  s.resize(params);
  const bool op = s.find("operator") != std::string::npos;  // operator< and the like: no <...>
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (Opens(c) && (c != '<' || !op)) {
      const size_t close = Matching(s, i, 1);
      if (close == std::string::npos) return function;
      out += c == '<' ? "<...>" : s.substr(i, close - i + 1);
      i = close;
    } else if (c == ' ' && out.find("operator") == std::string::npos) {
      out.clear();  // what came before a top-level space is the return type
    } else {
      out += c;
    }
  }
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at; (at = out.find(anonymous)) != std::string::npos;) out.erase(at, anonymous.size());
  return out.empty() ? function : out;
}

}  // namespace stacktrace
}  // namespace xtimer
