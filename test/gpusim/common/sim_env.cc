#include "test/gpusim/common/sim_env.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xtsim {
namespace {

void VPrint(const char* fmt, va_list ap) {
  char buf[1024];
  int n = snprintf(buf, sizeof(buf), "gpusim[%d]: ", static_cast<int>(getpid()));
  if (n < 0) n = 0;
  vsnprintf(buf + n, sizeof(buf) - static_cast<size_t>(n), fmt, ap);
  size_t len = strlen(buf);
  if (len + 1 < sizeof(buf)) {
    buf[len++] = '\n';
    buf[len] = '\0';
  }
  // One write so that lines of concurrent ranks do not interleave.
  ssize_t ignored = write(STDERR_FILENO, buf, len);
  (void)ignored;
}

bool ParseDouble(const char* s, double* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void Fatal(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  VPrint(fmt, ap);
  va_end(ap);
  _exit(2);
}

void Warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  VPrint(fmt, ap);
  va_end(ap);
}

void Debug(const char* fmt, ...) {
  static const bool verbose = [] {
    const char* v = getenv("XTIMER_SIM_VERBOSE");
    return v != nullptr && *v != '\0' && strcmp(v, "0") != 0;
  }();
  if (!verbose) return;
  va_list ap;
  va_start(ap, fmt);
  VPrint(fmt, ap);
  va_end(ap);
}

void NotImplemented(const char* function) {
  Warn("%s is not implemented by the GPU simulator; returning an error", function);
}

double EnvDouble(const char* name, double def) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return def;
  double out;
  if (!ParseDouble(v, &out)) Fatal("%s=%s is not a number", name, v);
  return out;
}

int64_t EnvInt(const char* name, int64_t def) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return def;
  char* end = nullptr;
  errno = 0;
  long long out = strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') Fatal("%s=%s is not an integer", name, v);
  return out;
}

int SimRank() {
  static const int rank = [] {
    for (const char* name :
         {"XTIMER_SIM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
      const char* v = getenv(name);
      if (v == nullptr || *v == '\0') continue;
      int64_t r = EnvInt(name, -1);
      if (r < 0 || r > (1 << 24)) Fatal("%s=%s is not a rank", name, v);
      return static_cast<int>(r);
    }
    return -1;
  }();
  return rank;
}

int SimNode() {
  static const int node = [] {
    int64_t n = EnvInt("XTIMER_SIM_NODE", 0);
    if (n < 0 || n > 65535) Fatal("XTIMER_SIM_NODE=%lld is out of range [0, 65535]",
                                  static_cast<long long>(n));
    return static_cast<int>(n);
  }();
  return node;
}

std::vector<RankSpec> ParseRankSpecs(const char* name, int min_fields, int max_fields) {
  std::vector<RankSpec> specs;
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return specs;
  std::string all(v);
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::vector<std::string> fields;
    size_t fpos = 0;
    while (true) {
      size_t colon = item.find(':', fpos);
      fields.push_back(item.substr(fpos, colon == std::string::npos ? std::string::npos
                                                                     : colon - fpos));
      if (colon == std::string::npos) break;
      fpos = colon + 1;
    }
    int numbers = static_cast<int>(fields.size()) - 1;
    if (numbers < min_fields || numbers > max_fields) {
      Fatal("%s: entry '%s' must be RANK followed by %d to %d ':'-separated numbers", name,
            item.c_str(), min_fields, max_fields);
    }
    RankSpec spec{0, NAN, NAN};
    double rank;
    if (!ParseDouble(fields[0].c_str(), &rank) || rank < 0 || rank != std::floor(rank)) {
      Fatal("%s: '%s' in entry '%s' is not a rank", name, fields[0].c_str(), item.c_str());
    }
    spec.rank = static_cast<int>(rank);
    for (int i = 1; i <= numbers; ++i) {
      double x;
      if (!ParseDouble(fields[i].c_str(), &x)) {
        Fatal("%s: '%s' in entry '%s' is not a number", name, fields[i].c_str(), item.c_str());
      }
      (i == 1 ? spec.a : spec.b) = x;
    }
    specs.push_back(spec);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return specs;
}

const RankSpec* FindRankSpec(const std::vector<RankSpec>& specs, int rank) {
  for (const RankSpec& s : specs) {
    if (s.rank == rank) return &s;
  }
  return nullptr;
}

void TakeDevicePriority() {
  constexpr int64_t kUnset = 1000;
  static const int64_t nice = EnvInt("XTIMER_SIM_DEVICE_NICE", kUnset);
  if (nice == kUnset) return;
  if (nice < -20 || nice > 19) {
    Fatal("XTIMER_SIM_DEVICE_NICE=%lld: not a niceness (-20..19)", static_cast<long long>(nice));
  }
  // Linux: a thread's own niceness, by its thread id (setpriority(2), NOTES).
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, tid, static_cast<int>(nice)) != 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      Warn("XTIMER_SIM_DEVICE_NICE=%lld: %s (the device's threads keep their priority)",
           static_cast<long long>(nice), strerror(errno));
    }
  }
}

}  // namespace xtsim
