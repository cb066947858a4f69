// xtimerd's command line. Every flag has an XTIMER_* environment default; the command line wins.
#ifndef XTIMER_DAEMON_FLAGS_H_
#define XTIMER_DAEMON_FLAGS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

#include "util/default_ports.h"

namespace xtimer {
namespace daemon {

struct Flags {
  // --run-dir, XTIMER_RUN_DIR; empty here, ParseFlags fills util/default_paths.h's default
  std::string run_dir;
  std::string socket;                   // --socket, XTIMER_DAEMON_SOCKET (RUN_DIR/xtimerd.sock)
  int socket_mode = 0666;               // --socket-mode (octal), XTIMER_SOCKET_MODE
  std::string socket_group;             // --socket-group (name or gid), XTIMER_SOCKET_GROUP
  int metrics_port = kDefaultMetricsPort;             // --metrics-port, XTIMER_METRICS_PORT (0: any free port)
  std::string metrics_address = "127.0.0.1";  // --metrics-address, XTIMER_METRICS_ADDRESS
  // --metrics-max-connections, XTIMER_METRICS_MAX_CONNECTIONS
  int64_t metrics_max_connections = 256;
  // --metrics-request-timeout-ms, XTIMER_METRICS_REQUEST_TIMEOUT_MS
  int64_t metrics_request_timeout_ms = 5000;
  int control_port = kDefaultControlPort;             // --control-port, XTIMER_CONTROL_PORT (0: any free port)
  std::string control_address = "127.0.0.1";  // --control-address, XTIMER_CONTROL_ADDRESS
  bool control_allow_remote = false;    // --control-allow-remote, XTIMER_CONTROL_ALLOW_REMOTE
  int64_t control_idle_timeout_s = 5;   // --control-idle-timeout, XTIMER_CONTROL_IDLE_TIMEOUT
  int64_t control_request_timeout_s = 10;  // --control-request-timeout, XTIMER_CONTROL_REQUEST_TIMEOUT
  int64_t control_max_connections = 512;   // --control-max-connections, XTIMER_CONTROL_MAX_CONNECTIONS
  int64_t control_max_per_peer = 256;  // --control-max-connections-per-peer, XTIMER_CONTROL_MAX_PER_PEER
  std::string dump_root;  // --dump-root, XTIMER_DUMP_ROOT; empty: the default, as run_dir
  int64_t hang_timeout_s = 300;         // --hang-timeout, XTIMER_HANG_TIMEOUT
  int64_t hang_min_s = 10;              // --hang-min-seconds, XTIMER_HANG_MIN_SECONDS
  int64_t hang_early_s = 30;            // --hang-early-seconds, XTIMER_HANG_EARLY_SECONDS
  int64_t hang_cadence_factor = 10;     // --hang-cadence-factor, XTIMER_HANG_CADENCE_FACTOR
  bool hang_dump = true;                // --hang-dump, XTIMER_HANG_DUMP
  std::string exit_hook;                // --exit-hook, XTIMER_EXIT_HOOK (docs/crash.md)
  int64_t window_s = 60;                // --window, XTIMER_METRICS_WINDOW
  int64_t window_samples = 4096;        // --window-samples, XTIMER_WINDOW_SAMPLES
  int64_t history = 100000;             // --history, XTIMER_HISTORY
  int64_t kernel_metrics_top = 0;       // --kernel-metrics-top, XTIMER_KERNEL_METRICS_TOP (0: off)
  int64_t stale_timeout_s = 60;         // --stale-timeout, XTIMER_STALE_TIMEOUT (0: never)
  int64_t exited_grace_s = 600;         // --exited-grace, XTIMER_EXITED_GRACE (0: drop at once)
  int64_t exited_max = 64;              // --exited-max, XTIMER_EXITED_MAX
  int64_t exited_memory_mb = 1024;      // --exited-memory-mb, XTIMER_EXITED_MEMORY_MB
  int64_t memory_budget_mb = 512;       // --memory-budget-mb, XTIMER_MEMORY_BUDGET_MB
  int64_t process_memory_mb = 64;       // --process-memory-mb, XTIMER_PROCESS_MEMORY_MB
  int64_t max_registrations = 1024;     // --max-registrations, XTIMER_MAX_REGISTRATIONS
  int64_t max_registrations_per_uid = 256;  // --max-registrations-per-uid, XTIMER_..._PER_UID
  int64_t max_registrations_per_pid = 4;    // --max-registrations-per-pid, XTIMER_..._PER_PID
  int64_t registration_reserve = 64;    // --registration-reserve, XTIMER_REGISTRATION_RESERVE
  int64_t register_timeout_ms = 2000;   // --register-timeout-ms, XTIMER_REGISTER_TIMEOUT_MS
  int64_t max_ring_mb = 64;             // --max-ring-mb, XTIMER_MAX_RING_MB
  int64_t poll_ms = 5;                  // --poll-interval-ms, XTIMER_POLL_INTERVAL_MS
  bool daemonize = false;               // --daemonize, XTIMER_DAEMONIZE
  std::string log_file;                 // --log-file, XTIMER_LOG_FILE (RUN_DIR/xtimerd.log)
  int64_t exit_when_idle_s = -1;        // --exit-when-idle / --once, XTIMER_EXIT_WHEN_IDLE
  // The operation log (docs/oplog.md); the lists and numbers are parsed by
  // daemon/dumps/op_log_writer.h.
  std::string op_log = "job";           // --op-log, XTIMER_OP_LOG: job, off, jsonl, csv
  std::string op_log_sample = "1";      // --op-log-sample, XTIMER_OP_LOG_SAMPLE
  int64_t op_log_seed = 0;              // --op-log-seed, XTIMER_OP_LOG_SEED
  std::string op_log_kinds;             // --op-log-kinds, XTIMER_OP_LOG_KINDS
  std::string op_log_ops;               // --op-log-ops, XTIMER_OP_LOG_OPS
  std::string op_log_ranks;             // --op-log-ranks, XTIMER_OP_LOG_RANKS
  int64_t op_log_min_bytes = 0;         // --op-log-min-bytes, XTIMER_OP_LOG_MIN_BYTES
  int64_t op_log_max_bytes = -1;        // --op-log-max-bytes, XTIMER_OP_LOG_MAX_BYTES (-1: none)
  int64_t op_log_rotate_mb = 64;        // --op-log-rotate-mb, XTIMER_OP_LOG_ROTATE_MB
  int64_t op_log_max_mb = 1024;         // --op-log-max-mb, XTIMER_OP_LOG_MAX_MB
  int64_t op_log_flush_ms = 1000;       // --op-log-flush-ms, XTIMER_OP_LOG_FLUSH_MS
  std::string op_log_anomaly_factor = "3";  // --op-log-anomaly-factor, XTIMER_OP_LOG_ANOMALY_FACTOR
  bool help = false;
  bool version = false;  // --version
};

// Parses argv over environment defaults (`getenv` is injectable for tests). Returns false with
// *error naming the flag or variable on a bad value or unknown flag.
// Unset run_dir and dump_root get util/default_paths.h's defaults for effective user `euid`.
bool ParseFlags(int argc, const char* const* argv,
                const std::function<const char*(const char*)>& getenv_fn, Flags* flags,
                std::string* error, uid_t euid = geteuid());

// The --help text.
std::string Usage();

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_FLAGS_H_
