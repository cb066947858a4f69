#include "daemon/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "util/command_line.h"
#include "util/default_paths.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kNsPerS = 1000000000;

// A flag's help line ending in the default it shows, e.g. "(default 300)".
std::string Help(const char *text, const std::string &value, const char *note = "") {
  std::string help = text;
  while (!help.empty() && help.back() == ' ') help.pop_back();
  return help + " (default " + value + note + ")";
}
std::string Help(const char *text, int64_t value, const char *note = "") {
  return Help(text, std::to_string(value), note);
}
std::string Octal(int mode) {
  char text[16];
  snprintf(text, sizeof(text), "%04o", mode);
  return text;
}

// --socket-mode: octal, 0 to 0777.
CommandLine::Setter OctalMode(int *mode) {
  return [mode](const std::string &text, std::string *expected) {
    *expected = "an octal mode from 0 to 0777 (e.g. 0660)";
    char *end = nullptr;
    errno = 0;
    const long v = strtol(text.c_str(), &end, 8);
    if (text.empty() || errno != 0 || *end != '\0' || v < 0 || v > 0777) return false;
    *mode = static_cast<int>(v);
    return true;
  };
}

// Where the daemon lives: its run directory and registration socket.
void SocketFlags(Flags *f, CommandLine *cl) {
  cl->Text("--run-dir", &f->run_dir,
           "directory for xtimerd.sock, .lock, .log and .pid; owned by the "
           "daemon's user, never group- or world-writable (default /run/xtimer "
           "as root, else /tmp/xtimer-UID)")
      .Env("XTIMER_RUN_DIR");
  cl->Text("--socket", &f->socket, "registration socket (default RUN_DIR/xtimerd.sock)")
      .Env("XTIMER_DAEMON_SOCKET");
  cl->Custom("--socket-mode", "MODE", OctalMode(&f->socket_mode),
             Help("permissions of the registration socket, octal", Octal(f->socket_mode),
                  ": every local user's jobs register, each bound to its uid; 0660 with "
                  "--socket-group limits it to a group")
                 .c_str())
      .Env("XTIMER_SOCKET_MODE");
  cl->Text("--socket-group", &f->socket_group,
           "group (name or gid) the registration socket is given (default: the "
           "daemon's)")
      .Env("XTIMER_SOCKET_GROUP");
}

// The metrics and control ports: addresses and connection limits.
void PortFlags(Flags *f, CommandLine *cl) {
  cl->Integer("--metrics-port", 0, 65535, &f->metrics_port,
              "Prometheus /metrics port (default 18889; 0 picks a free port, logged)")
      .Env("XTIMER_METRICS_PORT");
  cl->Text(
        "--metrics-address", &f->metrics_address,
        Help("address /metrics binds", f->metrics_address, "; 0.0.0.0 for every interface").c_str())
      .Env("XTIMER_METRICS_ADDRESS");
  cl->Integer("--metrics-max-connections", 1, 65536, &f->metrics_max_connections,
              Help("connections the metrics port keeps open at most; a new one "
                   "beyond closes the oldest",
                   f->metrics_max_connections)
                  .c_str())
      .Env("XTIMER_METRICS_MAX_CONNECTIONS");
  cl->Integer("--metrics-request-timeout-ms", 100, 600000, &f->metrics_request_timeout_ms,
              Help("a metrics-port client must send its whole request, and read the "
                   "whole answer, within this many milliseconds, or is disconnected",
                   f->metrics_request_timeout_ms)
                  .c_str())
      .Env("XTIMER_METRICS_REQUEST_TIMEOUT_MS");
  cl->Integer("--control-port", 0, 65535, &f->control_port,
              "control service port, gRPC and HTTP/JSON (default 18888; 0 "
              "picks a free port, logged)")
      .Env("XTIMER_CONTROL_PORT");
  cl->Text("--control-address", &f->control_address,
           "address the control port binds (default 127.0.0.1)")
      .Env("XTIMER_CONTROL_ADDRESS");
  cl->Switch("--control-allow-remote", &f->control_allow_remote,
             "callers not on this host (their user cannot be known) may dump "
             "and HangCheck every job; without it they see no job, and local "
             "callers see only their uid's jobs unless root (default false; "
             "docs/security.md)")
      .Env("XTIMER_CONTROL_ALLOW_REMOTE");
  cl->Integer("--control-idle-timeout", 1, 3600, &f->control_idle_timeout_s,
              Help("control port: seconds a connection may stay silent before its "
                   "request is complete; idle gRPC connections are closed after it "
                   "too",
                   f->control_idle_timeout_s)
                  .c_str())
      .Env("XTIMER_CONTROL_IDLE_TIMEOUT");
  cl->Integer("--control-request-timeout", 1, 3600, &f->control_request_timeout_s,
              Help("control port: seconds a whole HTTP request may take to arrive, "
                   "from connect",
                   f->control_request_timeout_s)
                  .c_str())
      .Env("XTIMER_CONTROL_REQUEST_TIMEOUT");
  cl->Integer("--control-max-connections", 1, 100000, &f->control_max_connections,
              Help("control port: connections open at once; at the cap the oldest "
                   "one without a complete request is closed",
                   f->control_max_connections)
                  .c_str())
      .Env("XTIMER_CONTROL_MAX_CONNECTIONS");
  cl->Integer("--control-max-connections-per-peer", 1, 100000, &f->control_max_per_peer,
              Help("control port: connections from one address at once, same policy",
                   f->control_max_per_peer)
                  .c_str())
      .Env("XTIMER_CONTROL_MAX_PER_PEER");
}

// Dumps and the hang diagnosis: the dump root, hang thresholds, automatic
// dumps, crash hooks.
void DiagnosisFlags(Flags *f, CommandLine *cl) {
  cl->Text("--dump-root", &f->dump_root,
           "dump paths must resolve inside this directory; owned by the "
           "daemon's user, never group- or world-writable (default "
           "/var/lib/xtimer/dumps as root, else /tmp/xtimer-dumps-UID)")
      .Env("XTIMER_DUMP_ROOT");
  cl->Integer("--hang-timeout", 1, 86400 * 7, &f->hang_timeout_s,
              Help("seconds an op may stay in flight before the hang gauges turn 1; "
                   "also the live diagnosis's longest hang threshold",
                   f->hang_timeout_s)
                  .c_str())
      .Env("XTIMER_HANG_TIMEOUT");
  cl->Integer("--hang-min-seconds", 1, 86400 * 7, &f->hang_min_s,
              Help("the live diagnosis's shortest hang threshold, seconds", f->hang_min_s).c_str())
      .Env("XTIMER_HANG_MIN_SECONDS");
  cl->Integer("--hang-early-seconds", 1, 86400 * 7, &f->hang_early_s,
              Help("the hang threshold of a communicator with fewer than 8 "
                   "completed instances (a job's first steps), and of one with none "
                   "when the stall carries its own evidence",
                   f->hang_early_s)
                  .c_str())
      .Env("XTIMER_HANG_EARLY_SECONDS");
  cl->Integer("--hang-cadence-factor", 1, 1000, &f->hang_cadence_factor,
              Help("a communicator's hang threshold is this many times its median "
                   "gap between completed collectives, within [--hang-min-seconds, "
                   "--hang-timeout]",
                   f->hang_cadence_factor)
                  .c_str())
      .Env("XTIMER_HANG_CADENCE_FACTOR");
  cl->Switch("--hang-dump", &f->hang_dump,
             "write an automatic history dump to DUMP_ROOT/hang-<comm>-<seq>/<job>/ "
             "on each hang verdict (default true; --hang-dump=false turns it off)")
      .Env("XTIMER_HANG_DUMP");
  cl->Text("--exit-hook", &f->exit_hook,
           "a command run on each crash report with the report as JSON on "
           "stdin (docs/crash.md): split on spaces, no shell, 10 s at most, as "
           "the crashed job's user when the daemon is root; read only from the "
           "daemon's flags or environment, never from a job's (default: none)")
      .Env("XTIMER_EXIT_HOOK");
}

// What the daemon keeps per process: metric windows, history, exited processes,
// memory.
void MemoryFlags(Flags *f, CommandLine *cl) {
  cl->Integer("--window", 1, 86400, &f->window_s,
              Help("sliding window of the latency, FLOP/s and bandwidth gauges, "
                   "seconds",
                   f->window_s)
                  .c_str())
      .Env("XTIMER_METRICS_WINDOW");
  cl->Integer("--window-samples", 1, 1 << 20, &f->window_samples,
              Help("raw durations kept per series for the p99", f->window_samples).c_str())
      .Env("XTIMER_WINDOW_SAMPLES");
  cl->Integer("--history", 0, 100000000, &f->history,
              Help("op records kept in memory per process for dumps", f->history).c_str())
      .Env("XTIMER_HISTORY");
  cl->Integer("--kernel-metrics-top", 0, 100, &f->kernel_metrics_top,
              "per-kernel metric families (xtimer_kernel_*) for each rank's N "
              "kernels of most total GPU time, labelled by kernel name; 0 "
              "leaves them out (default 0)")
      .Env("XTIMER_KERNEL_METRICS_TOP");
  cl->Integer("--stale-timeout", 0, 86400 * 7, &f->stale_timeout_s,
              Help("seconds without a ring heartbeat before rank_up turns 0; 0 "
                   "never",
                   f->stale_timeout_s)
                  .c_str())
      .Env("XTIMER_STALE_TIMEOUT");
  cl->Integer("--exited-grace", 0, 86400 * 7, &f->exited_grace_s,
              Help("seconds an exited process's series (rank_up 0, exit cause) and "
                   "history are kept; 0 drops them at once",
                   f->exited_grace_s)
                  .c_str())
      .Env("XTIMER_EXITED_GRACE");
  cl->Integer("--exited-max", 0, 100000, &f->exited_max,
              Help("exited processes kept at most; the oldest go first", f->exited_max).c_str())
      .Env("XTIMER_EXITED_MAX");
  cl->Integer("--exited-memory-mb", 1, 1 << 20, &f->exited_memory_mb,
              Help("memory (estimated, MiB) the kept exited processes may hold; the "
                   "oldest go first",
                   f->exited_memory_mb)
                  .c_str())
      .Env("XTIMER_EXITED_MEMORY_MB");
  cl->Integer("--memory-budget-mb", 16, 1 << 20, &f->memory_budget_mb,
              Help("estimated memory (MiB) all processes' series, names and "
                   "histories may hold; over it exited processes go first, then the "
                   "oldest history records",
                   f->memory_budget_mb)
                  .c_str())
      .Env("XTIMER_MEMORY_BUDGET_MB");
  cl->Integer(
        "--process-memory-mb", 1, 1 << 20, &f->process_memory_mb,
        Help("estimated memory (MiB) one process's state may hold", f->process_memory_mb).c_str())
      .Env("XTIMER_PROCESS_MEMORY_MB");
}

// Who may register and how rings are read.
void RegistrationFlags(Flags *f, CommandLine *cl) {
  cl->Integer(
        "--max-registrations", 1, 65536, &f->max_registrations,
        Help("registration connections open at once, all processes", f->max_registrations).c_str())
      .Env("XTIMER_MAX_REGISTRATIONS");
  cl->Integer(
        "--max-registrations-per-uid", 1, 65536, &f->max_registrations_per_uid,
        Help("registration connections open at once from one user id", f->max_registrations_per_uid)
            .c_str())
      .Env("XTIMER_MAX_REGISTRATIONS_PER_UID");
  cl->Integer(
        "--max-registrations-per-pid", 1, 65536, &f->max_registrations_per_pid,
        Help("registration connections open at once from one process", f->max_registrations_per_pid)
            .c_str())
      .Env("XTIMER_MAX_REGISTRATIONS_PER_PID");
  cl->Integer("--registration-reserve", 0, 65536, &f->registration_reserve,
              Help("the last N registration slots go only to user ids holding fewer "
                   "than max(1, N/4)",
                   f->registration_reserve)
                  .c_str())
      .Env("XTIMER_REGISTRATION_RESERVE");
  cl->Integer("--register-timeout-ms", 100, 60000, &f->register_timeout_ms,
              Help("a registration connection that sends no ring by then is closed",
                   f->register_timeout_ms)
                  .c_str())
      .Env("XTIMER_REGISTER_TIMEOUT_MS");
  cl->Integer("--max-ring-mb", 1, 512, &f->max_ring_mb,
              Help("largest ring accepted, MiB of records", f->max_ring_mb,
                   ": "
                   "XTIMER_RING_CAPACITY up to 524288")
                  .c_str())
      .Env("XTIMER_MAX_RING_MB");
  cl->Integer("--poll-interval-ms", 1, 10, &f->poll_ms,
              Help("ring read cycle, milliseconds", f->poll_ms).c_str())
      .Env("XTIMER_POLL_INTERVAL_MS");
}

// How the daemon runs: detached, its log, when it exits by itself.
void ProcessFlags(Flags *f, CommandLine *cl) {
  cl->Switch("--daemonize", &f->daemonize,
             "detach (double fork, setsid, output to the log file); the caller "
             "returns once the daemon serves")
      .Env("XTIMER_DAEMONIZE");
  cl->Text("--log-file", &f->log_file,
           "log file (default RUN_DIR/xtimerd.log when daemonized, else stderr)")
      .Env("XTIMER_LOG_FILE");
  cl->Integer("--exit-when-idle,--once", 0, 86400 * 365, &f->exit_when_idle_s,
              "exit after SECONDS with no registered process (default: never); "
              "alias --once")
      .Env("XTIMER_EXIT_WHEN_IDLE");
}

// The operation log (docs/oplog.md).
void OpLogFlags(Flags *f, CommandLine *cl) {
  cl->Text("--op-log", &f->op_log.mode,
           "per-rank operation logs under DUMP_ROOT/oplog/JOB (docs/oplog.md): "
           "job (for the processes whose XTIMER_LOG is jsonl or csv), off, or "
           "jsonl / csv (every process) (default job)")
      .Env("XTIMER_OP_LOG");
  cl->Text("--op-log-sample", &f->op_log.sample,
           "fraction of operations the op log keeps, in (0, 1] (default 1; the "
           "anomaly log sees every operation)")
      .Env("XTIMER_OP_LOG_SAMPLE");
  cl->Integer("--op-log-seed", 0, INT64_MAX, &f->op_log.seed,
              Help("seed of the sampling: the same seed keeps the same operations", f->op_log.seed)
                  .c_str())
      .Env("XTIMER_OP_LOG_SEED");
  cl->Text("--op-log-kinds", &f->op_log.kinds,
           "op log keeps only these kinds, comma-separated "
           "(matmul,collective,...; default all)")
      .Env("XTIMER_OP_LOG_KINDS");
  cl->Text("--op-log-ops", &f->op_log.ops,
           "op log keeps only these operations, comma-separated "
           "(AllReduce,GemmEx,...; default all)")
      .Env("XTIMER_OP_LOG_OPS");
  cl->Text("--op-log-ranks", &f->op_log.ranks,
           "op log keeps only these ranks, e.g. 0,4-7 (default all)")
      .Env("XTIMER_OP_LOG_RANKS");
  cl->Integer("--op-log-min-bytes", 0, INT64_MAX, &f->op_log.min_bytes,
              "op log drops collectives, p2p, copies and sets smaller than "
              "this (default 0)")
      .Env("XTIMER_OP_LOG_MIN_BYTES");
  cl->Integer("--op-log-max-bytes", 0, INT64_MAX, &f->op_log.max_bytes,
              "op log drops collectives, p2p, copies and sets larger than this "
              "(default no limit)")
      .Env("XTIMER_OP_LOG_MAX_BYTES");
  cl->Integer("--op-log-rotate-mb", 1, 1 << 20, &f->op_log.rotate_mb,
              Help("an op log file is closed and the next segment begun at this "
                   "size, MiB",
                   f->op_log.rotate_mb)
                  .c_str())
      .Env("XTIMER_OP_LOG_ROTATE_MB");
  cl->Integer("--op-log-max-mb", 1, 1 << 30, &f->op_log.max_mb,
              Help("all op and anomaly log files together, MiB; the oldest closed "
                   "segments are deleted first",
                   f->op_log.max_mb)
                  .c_str())
      .Env("XTIMER_OP_LOG_MAX_MB");
  cl->Integer("--op-log-flush-ms", 10, 600000, &f->op_log.flush_ms,
              Help("op log lines reach their files at least this often, "
                   "milliseconds",
                   f->op_log.flush_ms)
                  .c_str())
      .Env("XTIMER_OP_LOG_FLUSH_MS");
  cl->Text("--op-log-anomaly-factor", &f->op_log.anomaly_factor,
           "the anomaly log names operations slower than this many times the "
           "median of their signature (default 3)")
      .Env("XTIMER_OP_LOG_ANOMALY_FACTOR");
}

// Every flag, in the order --help lists them, each bound to its field of *f.
CommandLine Table(Flags *f) {
  CommandLine cl;
  for (auto part : {SocketFlags, PortFlags, DiagnosisFlags, MemoryFlags, RegistrationFlags,
                    ProcessFlags, OpLogFlags}) {
    part(f, &cl);
  }
  return cl;
}

}  // namespace

Flags::Flags() {
  const RingServerOptions ring;
  socket_mode = ring.socket_mode;
  max_registrations = static_cast<int64_t>(ring.max_connections);
  max_registrations_per_uid = static_cast<int64_t>(ring.max_per_uid);
  max_registrations_per_pid = static_cast<int64_t>(ring.max_per_pid);
  registration_reserve = static_cast<int64_t>(ring.reserve);
  register_timeout_ms = ring.register_timeout_ms;
  max_ring_mb = static_cast<int64_t>(ring.max_ring_bytes >> 20);
  poll_ms = ring.poll_interval_ms;
  const MetricsServerOptions metrics;
  metrics_address = metrics.address;
  metrics_max_connections = metrics.max_connections;
  metrics_request_timeout_ms = metrics.request_timeout_ms;
  const ControlLimits control;
  control_allow_remote = control.allow_remote;
  control_idle_timeout_s = control.idle_timeout_ms / 1000;
  control_request_timeout_s = control.request_timeout_ms / 1000;
  control_max_connections = static_cast<int64_t>(control.max_connections);
  control_max_per_peer = static_cast<int64_t>(control.max_connections_per_peer);
  const DiagnosisOptions diagnosis;
  hang_timeout_s = diagnosis.hang_timeout_ns / kNsPerS;
  hang_min_s = diagnosis.min_hang_ns / kNsPerS;
  hang_early_s = diagnosis.early_hang_ns / kNsPerS;
  hang_cadence_factor = static_cast<int64_t>(diagnosis.cadence_factor);
  const AggregatorOptions aggregator;
  window_s = aggregator.window_ns / kNsPerS;
  window_samples = static_cast<int64_t>(aggregator.window_samples);
  history = static_cast<int64_t>(aggregator.history);
  stale_timeout_s = aggregator.stale_heartbeat_ns / kNsPerS;
  exited_grace_s = aggregator.exited_grace_ns / kNsPerS;
  exited_max = static_cast<int64_t>(aggregator.max_exited);
  exited_memory_mb = static_cast<int64_t>(aggregator.max_exited_bytes >> 20);
  memory_budget_mb = static_cast<int64_t>(aggregator.memory_budget_bytes >> 20);
  process_memory_mb = static_cast<int64_t>(aggregator.max_process_bytes >> 20);
}

bool ParseFlags(int argc, const char *const *argv,
                const std::function<const char *(const char *)> &getenv_fn, Flags *flags,
                std::string *error, uid_t euid) {
  const CommandLine cl = Table(flags);
  if (!cl.ApplyEnvironment(getenv_fn, error)) return false;
  switch (cl.Parse(argc, argv, error)) {
    case CommandLine::Outcome::kBad:
      *error += " (see --help)";
      return false;
    case CommandLine::Outcome::kHelp:
      flags->help = true;
      break;
    case CommandLine::Outcome::kVersion:
      flags->version = true;
      break;
    case CommandLine::Outcome::kRun:
      break;
  }
  if (flags->run_dir.empty()) flags->run_dir = DefaultRunDir(euid);
  if (flags->dump_root.empty()) flags->dump_root = DefaultDumpRoot(euid);
  if (flags->socket.empty()) flags->socket = flags->run_dir + "/" + kSocketName;
  return true;
}

std::string Usage() {
  Flags defaults;
  return "usage: xtimerd [flags]\n"
         "\n"
         "The xtimer node daemon: receives every local training process's timing ring over a Unix\n"
         "socket, aggregates the records and serves Prometheus metrics on\n"
         "http://METRICS_ADDRESS:METRICS_PORT/metrics. One daemon per run directory: a second one\n"
         "exits 0 saying \"already running (pid N)\". SIGTERM or SIGINT stops it cleanly.\n"
         "\n"
         "flags (--flag=value or --flag value; each has an environment default):\n" +
         Table(&defaults).FlagHelp() +
         "  -h, --help               this text\n"
         "  --version                print the version and exit\n"
         "\nSee docs/daemon.md and docs/metrics.md.\n";
}

AggregatorOptions AggregatorOptionsOf(const Flags &flags) {
  AggregatorOptions ao;
  ao.window_ns = flags.window_s * kNsPerS;
  ao.window_buckets = static_cast<int>(flags.window_s < 60 ? flags.window_s : 60);
  ao.window_samples = static_cast<size_t>(flags.window_samples);
  ao.history = static_cast<size_t>(flags.history);
  ao.stale_heartbeat_ns = flags.stale_timeout_s * kNsPerS;
  ao.exited_grace_ns = flags.exited_grace_s * kNsPerS;
  ao.max_exited = static_cast<size_t>(flags.exited_max);
  ao.max_exited_bytes = static_cast<size_t>(flags.exited_memory_mb) << 20;
  ao.memory_budget_bytes = static_cast<size_t>(flags.memory_budget_mb) << 20;
  ao.max_process_bytes = static_cast<size_t>(flags.process_memory_mb) << 20;
  return ao;
}

RingServerOptions RingServerOptionsOf(const Flags &flags) {
  RingServerOptions so;
  so.socket_path = flags.socket;
  so.socket_mode = flags.socket_mode;
  so.socket_group = flags.socket_group;
  so.poll_interval_ms = static_cast<int>(flags.poll_ms);
  so.max_connections = static_cast<size_t>(flags.max_registrations);
  so.max_per_uid = static_cast<size_t>(flags.max_registrations_per_uid);
  so.max_per_pid = static_cast<size_t>(flags.max_registrations_per_pid);
  so.reserve = static_cast<size_t>(flags.registration_reserve);
  so.register_timeout_ms = static_cast<int>(flags.register_timeout_ms);
  so.max_ring_bytes = static_cast<size_t>(flags.max_ring_mb) << 20;
  return so;
}

MetricsServerOptions MetricsServerOptionsOf(const Flags &flags) {
  MetricsServerOptions mo;
  mo.address = flags.metrics_address;
  mo.port = flags.metrics_port;
  mo.max_connections = static_cast<int>(flags.metrics_max_connections);
  mo.request_timeout_ms = static_cast<int>(flags.metrics_request_timeout_ms);
  return mo;
}

DiagnosisOptions DiagnosisOptionsOf(const Flags &flags) {
  DiagnosisOptions dio;
  dio.hang_timeout_ns = flags.hang_timeout_s * kNsPerS;
  dio.min_hang_ns = flags.hang_min_s * kNsPerS;
  dio.early_hang_ns = flags.hang_early_s * kNsPerS;
  dio.cadence_factor = static_cast<double>(flags.hang_cadence_factor);
  dio.max_comms = AggregatorOptionsOf(flags).max_comms_per_process;
  return dio;
}

ControlLimits ControlLimitsOf(const Flags &flags) {
  ControlLimits limits;
  limits.idle_timeout_ms = flags.control_idle_timeout_s * 1000;
  limits.request_timeout_ms = flags.control_request_timeout_s * 1000;
  limits.max_connections = static_cast<size_t>(flags.control_max_connections);
  limits.max_connections_per_peer = static_cast<size_t>(flags.control_max_per_peer);
  limits.allow_remote = flags.control_allow_remote;
  return limits;
}

}  // namespace daemon
}  // namespace xtimer
