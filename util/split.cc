#include "util/split.h"

#include <cctype>

namespace xtimer {

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(sep, i);
    if (j == std::string::npos) j = s.size();
    size_t a = i, b = j;
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    if (b > a) out.push_back(s.substr(a, b - a));
    i = j + 1;
  }
  return out;
}

}  // namespace xtimer
