#include "daemon/flags.h"

#include "util/default_paths.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace xtimer {
namespace daemon {
namespace {

enum class Type { kString, kInt, kBool };

struct FlagSpec {
  const char* name;  // without the leading --
  const char* env;
  Type type;
  int64_t min, max;  // for kInt
  const char* help;
};

// Where the daemon lives: its run directory and registration socket.
std::vector<FlagSpec> SocketSpecs() {
  return {
      {"run-dir", "XTIMER_RUN_DIR", Type::kString, 0, 0,
       "directory for xtimerd.sock, .lock, .log and .pid; owned by the daemon's user, never "
       "group- or world-writable (default /run/xtimer as root, else /tmp/xtimer-UID)"},
      {"socket", "XTIMER_DAEMON_SOCKET", Type::kString, 0, 0,
       "registration socket (default RUN_DIR/xtimerd.sock)"},
      {"socket-mode", "XTIMER_SOCKET_MODE", Type::kString, 0, 0,
       "permissions of the registration socket, octal (default 0666: every local user's jobs "
       "register, each bound to its uid; 0660 with --socket-group limits it to a group)"},
      {"socket-group", "XTIMER_SOCKET_GROUP", Type::kString, 0, 0,
       "group (name or gid) the registration socket is given (default: the daemon's)"},
  };
}

// The metrics and control ports: addresses and connection limits.
std::vector<FlagSpec> PortSpecs() {
  return {
      {"metrics-port", "XTIMER_METRICS_PORT", Type::kInt, 0, 65535,
       "Prometheus /metrics port (default 18889; 0 picks a free port, logged)"},
      {"metrics-address", "XTIMER_METRICS_ADDRESS", Type::kString, 0, 0,
       "address /metrics binds (default 127.0.0.1; 0.0.0.0 for every interface)"},
      {"metrics-max-connections", "XTIMER_METRICS_MAX_CONNECTIONS", Type::kInt, 1, 65536,
       "connections the metrics port keeps open at most; a new one beyond closes the oldest "
       "(default 256)"},
      {"metrics-request-timeout-ms", "XTIMER_METRICS_REQUEST_TIMEOUT_MS", Type::kInt, 100, 600000,
       "a metrics-port client must send its whole request, and read the whole answer, within "
       "this many milliseconds, or is disconnected (default 5000)"},
      {"control-port", "XTIMER_CONTROL_PORT", Type::kInt, 0, 65535,
       "control service port, gRPC and HTTP/JSON (default 18888; 0 picks a free port, logged)"},
      {"control-address", "XTIMER_CONTROL_ADDRESS", Type::kString, 0, 0,
       "address the control port binds (default 127.0.0.1)"},
      {"control-allow-remote", "XTIMER_CONTROL_ALLOW_REMOTE", Type::kBool, 0, 0,
       "callers not on this host (their user cannot be known) may dump and HangCheck every "
       "job; without it they see no job, and local callers see only their uid's jobs unless "
       "root (default false; docs/security.md)"},
      {"control-idle-timeout", "XTIMER_CONTROL_IDLE_TIMEOUT", Type::kInt, 1, 3600,
       "control port: seconds a connection may stay silent before its request is complete; "
       "idle gRPC connections are closed after it too (default 5)"},
      {"control-request-timeout", "XTIMER_CONTROL_REQUEST_TIMEOUT", Type::kInt, 1, 3600,
       "control port: seconds a whole HTTP request may take to arrive, from connect (default "
       "10)"},
      {"control-max-connections", "XTIMER_CONTROL_MAX_CONNECTIONS", Type::kInt, 1, 100000,
       "control port: connections open at once; at the cap the oldest one without a complete "
       "request is closed (default 512)"},
      {"control-max-connections-per-peer", "XTIMER_CONTROL_MAX_PER_PEER", Type::kInt, 1, 100000,
       "control port: connections from one address at once, same policy (default 256)"},
  };
}

// Dumps and the hang diagnosis: the dump root, hang thresholds, automatic dumps, crash hooks.
std::vector<FlagSpec> DiagnosisSpecs() {
  return {
      {"dump-root", "XTIMER_DUMP_ROOT", Type::kString, 0, 0,
       "dump paths must resolve inside this directory; owned by the daemon's user, never group- "
       "or world-writable (default /var/lib/xtimer/dumps as root, else /tmp/xtimer-dumps-UID)"},
      {"hang-timeout", "XTIMER_HANG_TIMEOUT", Type::kInt, 1, 86400 * 7,
       "seconds an op may stay in flight before the hang gauges turn 1; also the live "
       "diagnosis's longest hang threshold (default 300)"},
      {"hang-min-seconds", "XTIMER_HANG_MIN_SECONDS", Type::kInt, 1, 86400 * 7,
       "the live diagnosis's shortest hang threshold, seconds (default 10)"},
      {"hang-early-seconds", "XTIMER_HANG_EARLY_SECONDS", Type::kInt, 1, 86400 * 7,
       "the hang threshold of a communicator with fewer than 8 completed instances (a job's "
       "first steps), and of one with none when the stall carries its own evidence (default "
       "30)"},
      {"hang-cadence-factor", "XTIMER_HANG_CADENCE_FACTOR", Type::kInt, 1, 1000,
       "a communicator's hang threshold is this many times its median gap between completed "
       "collectives, within [--hang-min-seconds, --hang-timeout] (default 10)"},
      {"hang-dump", "XTIMER_HANG_DUMP", Type::kBool, 0, 0,
       "write an automatic history dump to DUMP_ROOT/hang-<comm>-<seq>/<job>/ on each hang "
       "verdict (default true; --hang-dump=false turns it off)"},
      {"exit-hook", "XTIMER_EXIT_HOOK", Type::kString, 0, 0,
       "a command run on each crash report with the report as JSON on stdin (docs/crash.md): "
       "split on spaces, no shell, 10 s at most, as the crashed job's user when the daemon is "
       "root; read only from the daemon's flags or environment, never from a job's (default: "
       "none)"},
  };
}

// What the daemon keeps per process: metric windows, history, exited processes, memory.
std::vector<FlagSpec> MemorySpecs() {
  return {
      {"window", "XTIMER_METRICS_WINDOW", Type::kInt, 1, 86400,
       "sliding window of the latency, FLOP/s and bandwidth gauges, seconds (default 60)"},
      {"window-samples", "XTIMER_WINDOW_SAMPLES", Type::kInt, 1, 1 << 20,
       "raw durations kept per series for the p99 (default 4096)"},
      {"history", "XTIMER_HISTORY", Type::kInt, 0, 100000000,
       "op records kept in memory per process for dumps (default 100000)"},
      {"kernel-metrics-top", "XTIMER_KERNEL_METRICS_TOP", Type::kInt, 0, 100,
       "per-kernel metric families (xtimer_kernel_*) for each rank's N kernels of most total GPU "
       "time, labelled by kernel name; 0 leaves them out (default 0)"},
      {"stale-timeout", "XTIMER_STALE_TIMEOUT", Type::kInt, 0, 86400 * 7,
       "seconds without a ring heartbeat before rank_up turns 0; 0 never (default 60)"},
      {"exited-grace", "XTIMER_EXITED_GRACE", Type::kInt, 0, 86400 * 7,
       "seconds an exited process's series (rank_up 0, exit cause) and history are kept; 0 "
       "drops them at once (default 600)"},
      {"exited-max", "XTIMER_EXITED_MAX", Type::kInt, 0, 100000,
       "exited processes kept at most; the oldest go first (default 64)"},
      {"exited-memory-mb", "XTIMER_EXITED_MEMORY_MB", Type::kInt, 1, 1 << 20,
       "memory (estimated, MiB) the kept exited processes may hold; the oldest go first "
       "(default 1024)"},
      {"memory-budget-mb", "XTIMER_MEMORY_BUDGET_MB", Type::kInt, 16, 1 << 20,
       "estimated memory (MiB) all processes' series, names and histories may hold; over it "
       "exited processes go first, then the oldest history records (default 512)"},
      {"process-memory-mb", "XTIMER_PROCESS_MEMORY_MB", Type::kInt, 1, 1 << 20,
       "estimated memory (MiB) one process's state may hold (default 64)"},
  };
}

// Who may register and how rings are read.
std::vector<FlagSpec> RegistrationSpecs() {
  return {
      {"max-registrations", "XTIMER_MAX_REGISTRATIONS", Type::kInt, 1, 65536,
       "registration connections open at once, all processes (default 1024)"},
      {"max-registrations-per-uid", "XTIMER_MAX_REGISTRATIONS_PER_UID", Type::kInt, 1, 65536,
       "registration connections open at once from one user id (default 256)"},
      {"max-registrations-per-pid", "XTIMER_MAX_REGISTRATIONS_PER_PID", Type::kInt, 1, 65536,
       "registration connections open at once from one process (default 4)"},
      {"registration-reserve", "XTIMER_REGISTRATION_RESERVE", Type::kInt, 0, 65536,
       "the last N registration slots go only to user ids holding fewer than max(1, N/4) "
       "(default 64)"},
      {"register-timeout-ms", "XTIMER_REGISTER_TIMEOUT_MS", Type::kInt, 100, 60000,
       "a registration connection that sends no ring by then is closed (default 2000)"},
      {"max-ring-mb", "XTIMER_MAX_RING_MB", Type::kInt, 1, 512,
       "largest ring accepted, MiB of records (default 64: XTIMER_RING_CAPACITY up to 524288)"},
      {"poll-interval-ms", "XTIMER_POLL_INTERVAL_MS", Type::kInt, 1, 10,
       "ring read cycle, milliseconds (default 5)"},
  };
}

// How the daemon runs: detached, its log, when it exits by itself.
std::vector<FlagSpec> ProcessSpecs() {
  return {
      {"daemonize", "XTIMER_DAEMONIZE", Type::kBool, 0, 0,
       "detach (double fork, setsid, output to the log file); the caller returns once the "
       "daemon serves"},
      {"log-file", "XTIMER_LOG_FILE", Type::kString, 0, 0,
       "log file (default RUN_DIR/xtimerd.log when daemonized, else stderr)"},
      {"exit-when-idle", "XTIMER_EXIT_WHEN_IDLE", Type::kInt, 0, 86400 * 365,
       "exit after SECONDS with no registered process (default: never); alias --once"},
  };
}

// The operation log (docs/oplog.md).
std::vector<FlagSpec> OpLogSpecs() {
  return {
      {"op-log", "XTIMER_OP_LOG", Type::kString, 0, 0,
       "per-rank operation logs under DUMP_ROOT/oplog/JOB (docs/oplog.md): job (for the "
       "processes whose XTIMER_LOG is jsonl or csv), off, or jsonl / csv (every process) "
       "(default job)"},
      {"op-log-sample", "XTIMER_OP_LOG_SAMPLE", Type::kString, 0, 0,
       "fraction of operations the op log keeps, in (0, 1] (default 1; the anomaly log sees "
       "every operation)"},
      {"op-log-seed", "XTIMER_OP_LOG_SEED", Type::kInt, 0, INT64_MAX,
       "seed of the sampling: the same seed keeps the same operations (default 0)"},
      {"op-log-kinds", "XTIMER_OP_LOG_KINDS", Type::kString, 0, 0,
       "op log keeps only these kinds, comma-separated (matmul,collective,...; default all)"},
      {"op-log-ops", "XTIMER_OP_LOG_OPS", Type::kString, 0, 0,
       "op log keeps only these operations, comma-separated (AllReduce,GemmEx,...; default all)"},
      {"op-log-ranks", "XTIMER_OP_LOG_RANKS", Type::kString, 0, 0,
       "op log keeps only these ranks, e.g. 0,4-7 (default all)"},
      {"op-log-min-bytes", "XTIMER_OP_LOG_MIN_BYTES", Type::kInt, 0, INT64_MAX,
       "op log drops collectives, p2p, copies and sets smaller than this (default 0)"},
      {"op-log-max-bytes", "XTIMER_OP_LOG_MAX_BYTES", Type::kInt, 0, INT64_MAX,
       "op log drops collectives, p2p, copies and sets larger than this (default no limit)"},
      {"op-log-rotate-mb", "XTIMER_OP_LOG_ROTATE_MB", Type::kInt, 1, 1 << 20,
       "an op log file is closed and the next segment begun at this size, MiB (default 64)"},
      {"op-log-max-mb", "XTIMER_OP_LOG_MAX_MB", Type::kInt, 1, 1 << 30,
       "all op and anomaly log files together, MiB; the oldest closed segments are deleted "
       "first (default 1024)"},
      {"op-log-flush-ms", "XTIMER_OP_LOG_FLUSH_MS", Type::kInt, 10, 600000,
       "op log lines reach their files at least this often, milliseconds (default 1000)"},
      {"op-log-anomaly-factor", "XTIMER_OP_LOG_ANOMALY_FACTOR", Type::kString, 0, 0,
       "the anomaly log names operations slower than this many times the median of their "
       "signature (default 3)"},
  };
}

// Every flag, in the order --help lists them.
const std::vector<FlagSpec>& Specs() {
  static const std::vector<FlagSpec>* specs = [] {
    auto* all = new std::vector<FlagSpec>;
    for (auto part : {SocketSpecs, PortSpecs, DiagnosisSpecs, MemorySpecs, RegistrationSpecs,
                      ProcessSpecs, OpLogSpecs}) {
      const std::vector<FlagSpec> some = part();
      all->insert(all->end(), some.begin(), some.end());
    }
    return all;
  }();
  return *specs;
}

bool ParseInt(const std::string& text, int64_t min, int64_t max, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseBool(const std::string& text, bool* out) {
  if (text == "1" || text == "true" || text == "yes" || text.empty()) {
    *out = true;
  } else if (text == "0" || text == "false" || text == "no") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

bool ParseMode(const std::string& text, int* mode, std::string* error,
               const std::string& source) {
  char* end = nullptr;
  errno = 0;
  const long v = strtol(text.c_str(), &end, 8);
  if (errno != 0 || *end != '\0' || v < 0 || v > 0777) {
    *error = source + ": expected an octal mode from 0 to 0777 (e.g. 0660), got '" + text + "'";
    return false;
  }
  *mode = static_cast<int>(v);
  return true;
}

bool Apply(const FlagSpec& spec, const std::string& value, Flags* f, std::string* error,
           const std::string& source) {
  int64_t i = 0;
  bool b = false;
  switch (spec.type) {
    case Type::kInt:
      if (!ParseInt(value, spec.min, spec.max, &i)) {
        *error = source + ": expected an integer in [" + std::to_string(spec.min) + ", " +
                 std::to_string(spec.max) + "], got '" + value + "'";
        return false;
      }
      break;
    case Type::kBool:
      if (!ParseBool(value, &b)) {
        *error = source + ": expected true or false, got '" + value + "'";
        return false;
      }
      break;
    case Type::kString:
      if (value.empty()) {
        *error = source + ": empty value";
        return false;
      }
      break;
  }
  const std::string name = spec.name;
  if (name == "run-dir") f->run_dir = value;
  else if (name == "socket") f->socket = value;
  else if (name == "socket-mode") return ParseMode(value, &f->socket_mode, error, source);
  else if (name == "socket-group") f->socket_group = value;
  else if (name == "metrics-port") f->metrics_port = static_cast<int>(i);
  else if (name == "metrics-address") f->metrics_address = value;
  else if (name == "metrics-max-connections") f->metrics_max_connections = i;
  else if (name == "metrics-request-timeout-ms") f->metrics_request_timeout_ms = i;
  else if (name == "control-port") f->control_port = static_cast<int>(i);
  else if (name == "control-address") f->control_address = value;
  else if (name == "control-allow-remote") f->control_allow_remote = b;
  else if (name == "control-idle-timeout") f->control_idle_timeout_s = i;
  else if (name == "control-request-timeout") f->control_request_timeout_s = i;
  else if (name == "control-max-connections") f->control_max_connections = i;
  else if (name == "control-max-connections-per-peer") f->control_max_per_peer = i;
  else if (name == "dump-root") f->dump_root = value;
  else if (name == "hang-timeout") f->hang_timeout_s = i;
  else if (name == "hang-min-seconds") f->hang_min_s = i;
  else if (name == "hang-early-seconds") f->hang_early_s = i;
  else if (name == "hang-cadence-factor") f->hang_cadence_factor = i;
  else if (name == "hang-dump") f->hang_dump = b;
  else if (name == "exit-hook") f->exit_hook = value;
  else if (name == "window") f->window_s = i;
  else if (name == "window-samples") f->window_samples = i;
  else if (name == "history") f->history = i;
  else if (name == "kernel-metrics-top") f->kernel_metrics_top = i;
  else if (name == "stale-timeout") f->stale_timeout_s = i;
  else if (name == "exited-grace") f->exited_grace_s = i;
  else if (name == "exited-max") f->exited_max = i;
  else if (name == "exited-memory-mb") f->exited_memory_mb = i;
  else if (name == "memory-budget-mb") f->memory_budget_mb = i;
  else if (name == "process-memory-mb") f->process_memory_mb = i;
  else if (name == "max-registrations") f->max_registrations = i;
  else if (name == "max-registrations-per-uid") f->max_registrations_per_uid = i;
  else if (name == "max-registrations-per-pid") f->max_registrations_per_pid = i;
  else if (name == "registration-reserve") f->registration_reserve = i;
  else if (name == "register-timeout-ms") f->register_timeout_ms = i;
  else if (name == "max-ring-mb") f->max_ring_mb = i;
  else if (name == "poll-interval-ms") f->poll_ms = i;
  else if (name == "daemonize") f->daemonize = b;
  else if (name == "log-file") f->log_file = value;
  else if (name == "exit-when-idle") f->exit_when_idle_s = i;
  else if (name == "op-log") f->op_log = value;
  else if (name == "op-log-sample") f->op_log_sample = value;
  else if (name == "op-log-seed") f->op_log_seed = i;
  else if (name == "op-log-kinds") f->op_log_kinds = value;
  else if (name == "op-log-ops") f->op_log_ops = value;
  else if (name == "op-log-ranks") f->op_log_ranks = value;
  else if (name == "op-log-min-bytes") f->op_log_min_bytes = i;
  else if (name == "op-log-max-bytes") f->op_log_max_bytes = i;
  else if (name == "op-log-rotate-mb") f->op_log_rotate_mb = i;
  else if (name == "op-log-max-mb") f->op_log_max_mb = i;
  else if (name == "op-log-flush-ms") f->op_log_flush_ms = i;
  else if (name == "op-log-anomaly-factor") f->op_log_anomaly_factor = value;
  return true;
}

}  // namespace

bool ParseFlags(int argc, const char* const* argv,
                const std::function<const char*(const char*)>& getenv_fn, Flags* flags,
                std::string* error, uid_t euid) {
  for (const FlagSpec& spec : Specs()) {
    const char* v = getenv_fn(spec.env);
    if (v != nullptr && *v != '\0' &&
        !Apply(spec, v, flags, error, std::string("environment variable ") + spec.env)) {
      return false;
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      flags->help = true;
      continue;
    }
    if (arg == "--version") {
      flags->version = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "' (see --help)";
      return false;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "once") name = "exit-when-idle";
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : Specs()) {
      if (name == s.name) spec = &s;
    }
    if (spec == nullptr) {
      *error = "unknown flag --" + name + " (see --help)";
      return false;
    }
    if (!has_value && spec->type != Type::kBool) {
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!Apply(*spec, value, flags, error, "--" + name)) return false;
  }
  if (flags->run_dir.empty()) flags->run_dir = DefaultRunDir(euid);
  if (flags->dump_root.empty()) flags->dump_root = DefaultDumpRoot(euid);
  if (flags->socket.empty()) flags->socket = flags->run_dir + "/" + kSocketName;
  return true;
}

std::string Usage() {
  std::string out =
      "usage: xtimerd [flags]\n"
      "\n"
      "The xtimer node daemon: receives every local training process's timing ring over a Unix\n"
      "socket, aggregates the records and serves Prometheus metrics on\n"
      "http://METRICS_ADDRESS:METRICS_PORT/metrics. One daemon per run directory: a second one\n"
      "exits 0 saying \"already running (pid N)\". SIGTERM or SIGINT stops it cleanly.\n"
      "\n"
      "flags (--flag=value or --flag value; each has an environment default):\n";
  for (const FlagSpec& s : Specs()) {
    std::string left = std::string("  --") + s.name;
    if (s.type == Type::kInt) left += " N";
    if (s.type == Type::kString) left += " S";
    if (left.size() < 26) left.resize(26, ' ');
    out += left + " " + s.help + " [" + s.env + "]\n";
  }
  out += "  --once N                 same as --exit-when-idle N\n";
  out += "  -h, --help               this text\n";
  out += "  --version                print the version and exit\n";
  out += "\nSee docs/daemon.md and docs/metrics.md.\n";
  return out;
}

}  // namespace daemon
}  // namespace xtimer
