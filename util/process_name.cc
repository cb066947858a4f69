#include "util/process_name.h"

namespace xtimer {

std::string RanklessName(int64_t pid, int device) {
  std::string name = "pid-" + std::to_string(pid);
  if (device >= 0) name += "-dev" + std::to_string(device);
  return name;
}

std::string RanklessProcessName(const std::string& host, int64_t pid, int device) {
  return host.empty() ? RanklessName(pid, device) : host + ":" + RanklessName(pid, device);
}

}  // namespace xtimer
