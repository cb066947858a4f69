// The one list splitter of flags and inputs: "a, b,,c" split on ',' is {"a", "b", "c"}.
#ifndef XTIMER_UTIL_SPLIT_H_
#define XTIMER_UTIL_SPLIT_H_

#include <string>
#include <vector>

namespace xtimer {

// The parts of `s` between each `sep`, each trimmed of white space; empty parts are dropped.
std::vector<std::string> SplitList(const std::string& s, char sep);

}  // namespace xtimer

#endif  // XTIMER_UTIL_SPLIT_H_
