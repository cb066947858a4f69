#include "util/kernel_name.h"

#include <vector>

namespace xtimer {
namespace util {
namespace {

constexpr size_t kNpos = std::string_view::npos;

bool Opens(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool Closes(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

// A top-level bracketed group of a name: [begin, end), begin at its opening bracket.
struct Group {
  size_t begin;
  size_t end;
};

// The top-level groups of `s` in order; false when the brackets do not balance.
bool TopLevelGroups(std::string_view s, std::vector<Group>* groups) {
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (Opens(s[i])) {
      if (depth++ == 0) begin = i;
    } else if (Closes(s[i])) {
      if (--depth < 0) return false;
      if (depth == 0) groups->push_back({begin, i + 1});
    }
  }
  return depth == 0;
}

// The positions in `s` of `c` outside every bracket (or of the first char of "::" for ':').
std::vector<size_t> TopLevel(std::string_view s, char c) {
  std::vector<size_t> at;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (Opens(s[i])) ++depth;
    else if (Closes(s[i])) --depth;
    else if (depth == 0 && s[i] == c) {
      if (c != ':') {
        at.push_back(i);
      } else if (i + 1 < s.size() && s[i + 1] == ':') {
        at.push_back(i++);
      }
    }
  }
  return at;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string Cut(std::string_view s) {
  if (s.size() <= kMaxShortKernelName) return std::string(s);
  return std::string(s.substr(0, kMaxShortKernelName - 3)) + "...";
}

// The last component of a qualified name ("a::b<c>::f<x, y>" -> "f<x, y>").
std::string_view LastComponent(std::string_view qualified) {
  std::vector<size_t> colons = TopLevel(qualified, ':');
  return colons.empty() ? qualified : qualified.substr(colons.back() + 2);
}

// A component with its template's head: "f<x, y>" -> "f<x', ...>" where x' is x shortened the
// same way (`depth` levels deep at most).
std::string Head(std::string_view component, int depth) {
  component = Trim(component);
  if (component.empty() || component.back() != '>') return std::string(component);
  std::vector<Group> groups;
  if (!TopLevelGroups(component, &groups) || groups.empty() ||
      component[groups.back().begin] != '<' || groups.back().end != component.size()) {
    return std::string(component);
  }
  std::string_view base = component.substr(0, groups.back().begin);
  std::string_view inner = component.substr(groups.back().begin + 1,
                                            groups.back().end - groups.back().begin - 2);
  if (depth == 0) return std::string(base) + (Trim(inner).empty() ? "<>" : "<...>");
  std::vector<size_t> commas = TopLevel(inner, ',');
  std::string_view first = Trim(commas.empty() ? inner : inner.substr(0, commas.front()));
  std::string out = std::string(base) + "<" + Head(LastComponent(first), depth - 1);
  return out + (commas.empty() ? ">" : ", ...>");
}

}  // namespace

std::string ShortKernelName(std::string_view demangled) {
  std::string_view s = Trim(demangled);
  std::vector<Group> groups;
  if (s.empty() || !TopLevelGroups(s, &groups)) return Cut(s);
  // The parameter list: a top-level "(...)" that ends the name ("(anonymous namespace)" does not).
  // Only a signature has a return type: everything up to the last top-level space.
  if (!groups.empty() && s[groups.back().begin] == '(' && groups.back().end == s.size()) {
    s = Trim(s.substr(0, groups.back().begin));
    std::vector<size_t> spaces = TopLevel(s, ' ');
    if (!spaces.empty()) s = s.substr(spaces.back() + 1);
  }
  std::string out = Head(LastComponent(s), /*depth=*/2);
  return out.empty() ? Cut(Trim(demangled)) : Cut(out);
}

}  // namespace util
}  // namespace xtimer
