#include "hook/log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace xtimer {
namespace hook {

void LogLine(const char* format, ...) {
  const int saved_errno = errno;
  char buf[512];
  int n = snprintf(buf, sizeof(buf), "xtimer[%d]: ", static_cast<int>(getpid()));
  if (n < 0) n = 0;
  va_list args;
  va_start(args, format);
  int m = vsnprintf(buf + n, sizeof(buf) - n - 1, format, args);
  va_end(args);
  size_t len = n + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof(buf) - 2) len = sizeof(buf) - 2;
  buf[len++] = '\n';
  ssize_t ignored = write(2, buf, len);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace hook
}  // namespace xtimer
