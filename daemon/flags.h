// xtimerd's command line. Every flag has an XTIMER_* environment default; the command line wins.
// A flag that sets a component's option takes its default from that component's options struct
// (Flags() reads them; the *OptionsOf functions convert back): no default is written here.
#ifndef XTIMER_DAEMON_FLAGS_H_
#define XTIMER_DAEMON_FLAGS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

#include "daemon/control/control_server.h"
#include "daemon/diagnosis/diagnosis.h"
#include "daemon/dumps/op_log_writer.h"
#include "daemon/export/metrics_server.h"
#include "daemon/ingest/ring_server.h"
#include "daemon/model/aggregator_options.h"
#include "util/default_ports.h"

namespace xtimer {
namespace daemon {

struct Flags {
  Flags();  // the components' defaults

  // --run-dir, XTIMER_RUN_DIR; empty here, ParseFlags fills util/default_paths.h's default
  std::string run_dir;
  std::string socket;                      // --socket, XTIMER_DAEMON_SOCKET (RUN_DIR/xtimerd.sock)
  int socket_mode;                         // --socket-mode (octal), XTIMER_SOCKET_MODE
  std::string socket_group;                // --socket-group (name or gid), XTIMER_SOCKET_GROUP
  int metrics_port = kDefaultMetricsPort;  // --metrics-port, XTIMER_METRICS_PORT (0: any free port)
  std::string metrics_address;             // --metrics-address, XTIMER_METRICS_ADDRESS
  // --metrics-max-connections, XTIMER_METRICS_MAX_CONNECTIONS
  int64_t metrics_max_connections;
  // --metrics-request-timeout-ms, XTIMER_METRICS_REQUEST_TIMEOUT_MS
  int64_t metrics_request_timeout_ms;
  int control_port = kDefaultControlPort;  // --control-port, XTIMER_CONTROL_PORT (0: any free port)
  std::string control_address = "127.0.0.1";  // --control-address, XTIMER_CONTROL_ADDRESS
  bool control_allow_remote;                  // --control-allow-remote, XTIMER_CONTROL_ALLOW_REMOTE
  int64_t control_idle_timeout_s;             // --control-idle-timeout, XTIMER_CONTROL_IDLE_TIMEOUT
  int64_t control_request_timeout_s;  // --control-request-timeout, XTIMER_CONTROL_REQUEST_TIMEOUT
  int64_t control_max_connections;    // --control-max-connections, XTIMER_CONTROL_MAX_CONNECTIONS
  int64_t control_max_per_peer;  // --control-max-connections-per-peer, XTIMER_CONTROL_MAX_PER_PEER
  std::string dump_root;         // --dump-root, XTIMER_DUMP_ROOT; empty: the default, as run_dir
  int64_t hang_timeout_s;        // --hang-timeout, XTIMER_HANG_TIMEOUT
  int64_t hang_min_s;            // --hang-min-seconds, XTIMER_HANG_MIN_SECONDS
  int64_t hang_early_s;          // --hang-early-seconds, XTIMER_HANG_EARLY_SECONDS
  int64_t hang_cadence_factor;   // --hang-cadence-factor, XTIMER_HANG_CADENCE_FACTOR
  bool hang_dump = true;         // --hang-dump, XTIMER_HANG_DUMP
  std::string exit_hook;         // --exit-hook, XTIMER_EXIT_HOOK (docs/crash.md)
  int64_t window_s;              // --window, XTIMER_METRICS_WINDOW
  int64_t window_samples;        // --window-samples, XTIMER_WINDOW_SAMPLES
  int64_t history;               // --history, XTIMER_HISTORY
  int64_t kernel_metrics_top = 0;     // --kernel-metrics-top, XTIMER_KERNEL_METRICS_TOP (0: off)
  int64_t stale_timeout_s;            // --stale-timeout, XTIMER_STALE_TIMEOUT (0: never)
  int64_t exited_grace_s;             // --exited-grace, XTIMER_EXITED_GRACE (0: drop at once)
  int64_t exited_max;                 // --exited-max, XTIMER_EXITED_MAX
  int64_t exited_memory_mb;           // --exited-memory-mb, XTIMER_EXITED_MEMORY_MB
  int64_t memory_budget_mb;           // --memory-budget-mb, XTIMER_MEMORY_BUDGET_MB
  int64_t process_memory_mb;          // --process-memory-mb, XTIMER_PROCESS_MEMORY_MB
  int64_t max_registrations;          // --max-registrations, XTIMER_MAX_REGISTRATIONS
  int64_t max_registrations_per_uid;  // --max-registrations-per-uid, XTIMER_..._PER_UID
  int64_t max_registrations_per_pid;  // --max-registrations-per-pid, XTIMER_..._PER_PID
  int64_t registration_reserve;       // --registration-reserve, XTIMER_REGISTRATION_RESERVE
  int64_t register_timeout_ms;        // --register-timeout-ms, XTIMER_REGISTER_TIMEOUT_MS
  int64_t max_ring_mb;                // --max-ring-mb, XTIMER_MAX_RING_MB
  int64_t poll_ms;                    // --poll-interval-ms, XTIMER_POLL_INTERVAL_MS
  bool daemonize = false;             // --daemonize, XTIMER_DAEMONIZE
  std::string log_file;               // --log-file, XTIMER_LOG_FILE (RUN_DIR/xtimerd.log)
  int64_t exit_when_idle_s = -1;      // --exit-when-idle / --once, XTIMER_EXIT_WHEN_IDLE
  // The operation log (docs/oplog.md), --op-log*, parsed by daemon/dumps/op_log_writer.h.
  OpLogFlags op_log;
  bool help = false;
  bool version = false;  // --version
};

// Parses argv over environment defaults (`getenv` is injectable for tests). Returns false with
// *error naming the flag or variable on a bad value or unknown flag.
// Unset run_dir and dump_root get util/default_paths.h's defaults for effective user `euid`.
bool ParseFlags(int argc, const char* const* argv,
                const std::function<const char*(const char*)>& getenv_fn, Flags* flags,
                std::string* error, uid_t euid = geteuid());

// The --help text; each default shown is Flags()'s.
std::string Usage();

// The components' options the flags ask for.
AggregatorOptions AggregatorOptionsOf(const Flags& flags);
RingServerOptions RingServerOptionsOf(const Flags& flags);
MetricsServerOptions MetricsServerOptionsOf(const Flags& flags);
DiagnosisOptions DiagnosisOptionsOf(const Flags& flags);
ControlLimits ControlLimitsOf(const Flags& flags);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_FLAGS_H_
