#include "daemon/base/log.h"

#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace xtimer {
namespace daemon {

void Logf(const char* fmt, ...) {
  char line[1024];
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ xtimerd[%d] ",
                   t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                   ts.tv_nsec / 1000000, static_cast<int>(getpid()));
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t unused = write(STDERR_FILENO, line, len);
  (void)unused;
}

}  // namespace daemon
}  // namespace xtimer
