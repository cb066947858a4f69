// The one spelling of a process whose rank is not known (docs/ranks.md "Processes without a
// rank"): where a rank would name a file or a member of a merge, such a process is named by its
// pid, and by its device when the daemon knows it (one of several devices of a process):
//   pid-4242        pid-4242-dev1
// Stack files (pid-4242.stacks), operation logs (pid-4242.000.jsonl) and timeline dumps
// (pid-4242.timeline) take this name; `xtimer stacks` prints it after the host
// ("node-a:pid-4242"), never as a rank number.
#ifndef XTIMER_UTIL_PROCESS_NAME_H_
#define XTIMER_UTIL_PROCESS_NAME_H_

#include <cstdint>
#include <string>

namespace xtimer {

// "pid-PID", or "pid-PID-devD" when device >= 0.
std::string RanklessName(int64_t pid, int device);

// "HOST:pid-PID[-devD]" ("pid-PID[-devD]" when the host is empty): a process on its node.
std::string RanklessProcessName(const std::string& host, int64_t pid, int device);

}  // namespace xtimer

#endif  // XTIMER_UTIL_PROCESS_NAME_H_
