#include "hook/config.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "format/registration.h"
#include "util/default_paths.h"
#include "util/job_identity.h"

namespace xtimer {
namespace hook {
namespace {

const char* First(GetEnvFn get, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    const char* v = get(n);
    if (v != nullptr && *v != '\0') return v;
  }
  return nullptr;
}

bool ParseInt(const char* text, long long lo, long long hi, long long* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "1%", "1", "0.25%" -> ppm of a thread's time; (0, 100] percent.
bool ParseBudget(const char* text, uint32_t* ppm) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const double percent = strtod(text, &end);
  if (end != nullptr && *end == '%') ++end;
  if (errno != 0 || end == text || *end != '\0' || !(percent > 0) || percent > 100) return false;
  const double v = percent * 10000.0;
  *ppm = v < 1 ? 1u : static_cast<uint32_t>(v + 0.5);
  return true;
}

int IntFrom(GetEnvFn get, WarnFn warn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    const char* v = get(n);
    if (v == nullptr || *v == '\0') continue;
    long long x;
    if (ParseInt(v, 0, 1 << 30, &x)) return static_cast<int>(x);
    if (warn != nullptr) warn((std::string("ignoring malformed ") + n + "=" + v).c_str());
  }
  return -1;
}

}  // namespace

Config ReadConfig(GetEnvFn get, WarnFn warn) {
  Config c;
  const char* disable = get("XTIMER_DISABLE");
  c.disabled = disable != nullptr && *disable != '\0' && std::string(disable) != "0";

  long long v;
  if (const char* s = First(get, {"XTIMER_DAEMON_SOCKET"})) {
    c.socket_path = s;
  } else {
    const char* dir = First(get, {"XTIMER_RUN_DIR"});
    c.socket_path = (dir != nullptr ? std::string(dir) : ClientRunDir(geteuid())) + "/" + kSocketName;
  }

  if (const char* s = get("XTIMER_DAEMON_UID")) {
    if (ParseInt(s, 0, 0xfffffffeLL, &v)) {
      c.daemon_uid = v;
    } else if (warn != nullptr) {
      warn((std::string("ignoring malformed XTIMER_DAEMON_UID=") + s).c_str());
    }
  }
  if (const char* t = First(get, {"XTIMER_JOB_TOKEN"})) {
    if (strlen(t) <= format::kMaxJobToken) {
      c.job_token = t;
    } else if (warn != nullptr) {
      warn("ignoring XTIMER_JOB_TOKEN: longer than 48 bytes");
    }
  }

  c.job = DeriveJobIdentity(get).id;
  if (const char* h = First(get, {"XTIMER_HOST"})) {
    c.host = h;
  } else {
    char buf[256] = {};
    c.host = gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "unknown";
  }
  const char* pod = First(get, {"XTIMER_POD", "POD_NAME"});
  c.pod = pod != nullptr ? pod : c.host;

  if (const char* s = get("XTIMER_RING_CAPACITY")) {
    if (ParseInt(s, 1, 1 << 22, &v)) {
      c.ring_capacity = static_cast<uint32_t>(v);
    } else if (warn != nullptr) {
      warn((std::string("ignoring malformed XTIMER_RING_CAPACITY=") + s).c_str());
    }
  }
  if (const char* s = get("XTIMER_SAMPLE_RATE")) {
    if (ParseInt(s, 1, 1 << 30, &v)) {
      c.sample_rate = static_cast<uint32_t>(v);
    } else if (warn != nullptr) {
      warn((std::string("ignoring malformed XTIMER_SAMPLE_RATE=") + s).c_str());
    }
  }
  if (const char* s = get("XTIMER_OVERHEAD_BUDGET")) {
    if (!ParseBudget(s, &c.budget_ppm) && warn != nullptr) {
      warn((std::string("ignoring XTIMER_OVERHEAD_BUDGET=") + s +
            ": give a percentage in (0, 100], such as 1% or 0.5")
               .c_str());
    }
  }
  if (const char* s = get("XTIMER_EXIT_FLUSH_MS")) {
    if (ParseInt(s, 0, 600000, &v)) {
      c.exit_flush_ms = static_cast<int>(v);
    } else if (warn != nullptr) {
      warn((std::string("ignoring malformed XTIMER_EXIT_FLUSH_MS=") + s).c_str());
    }
  }
  if (const char* s = get("XTIMER_LOG")) {
    const std::string v = s;
    if (v == "jsonl") {
      c.op_log = format::OpLogRequest::kJsonl;
    } else if (v == "csv") {
      c.op_log = format::OpLogRequest::kCsv;
    } else if (!v.empty() && v != "off" && v != "0" && warn != nullptr) {
      warn(("ignoring XTIMER_LOG=" + v + ": use jsonl or csv").c_str());
    }
  }
  if (const char* f = get("XTIMER_KERNEL_FILTER")) {
    const std::string v = f;
    c.kernels = !v.empty() && v != "off" && v != "0";
    if (c.kernels) c.kernel_filter = v;
  }
  if (const char* f = get("XTIMER_NCCL_PROFILER")) {
    const std::string v = f;
    c.nccl_profiler = v != "off" && v != "0";
  }
  if (const char* f = get("XTIMER_PY_TRACE")) {
    const std::string v = f;
    c.python_trace = v == "off" || v == "0" ? "" : v;
    c.python_trace_explicit = true;
  }
  c.stack_signal = SIGRTMIN + 3;
  if (const char* s = get("XTIMER_STACK_SIGNAL")) {
    if (ParseInt(s, 0, SIGRTMAX, &v) && (v == 0 || v >= SIGRTMIN)) {
      c.stack_signal = static_cast<int>(v);
    } else if (warn != nullptr) {
      warn((std::string("ignoring XTIMER_STACK_SIGNAL=") + s + ": not 0 (off) or a real-time signal " +
            std::to_string(SIGRTMIN) + ".." + std::to_string(SIGRTMAX))
               .c_str());
    }
  }
  const char* verbose = get("XTIMER_VERBOSE");
  c.verbose = verbose != nullptr && *verbose != '\0' && std::string(verbose) != "0";

  c.rank = IntFrom(get, warn, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  c.local_rank = IntFrom(get, warn, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                     "MPI_LOCALRANKID", "SLURM_LOCALID"});
  c.world_size = IntFrom(get, warn, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                     "SLURM_NTASKS"});
  return c;
}

}  // namespace hook
}  // namespace xtimer
