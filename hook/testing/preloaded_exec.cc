#include "hook/testing/preloaded_exec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace xtimer {
namespace hook {
namespace testing {

int ExecPreloadedIfAsked(int argc, char** argv) {
  if (argc < 3 || strcmp(argv[1], "--exec-preloaded") != 0) return -1;
  const char* pre = getenv("LD_PRELOAD");
  const char* lib = getenv("XT_HOOK_LIB");
  const std::string value = (pre != nullptr && *pre != '\0' ? std::string(pre) + ":" : "") +
                            (lib != nullptr ? lib : "");
  setenv("LD_PRELOAD", value.c_str(), 1);
  execv(argv[2], argv + 2);
  perror("execv");
  return 127;
}

std::string AbsolutePath(const char* path, bool resolve) {
  char buf[PATH_MAX];
  if (resolve) return realpath(path, buf) != nullptr ? buf : path;
  if (path[0] == '/') return path;
  return std::string(getcwd(buf, sizeof(buf)) != nullptr ? buf : ".") + "/" + path;
}

}  // namespace testing
}  // namespace hook
}  // namespace xtimer
