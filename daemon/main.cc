// xtimerd: the xtimer node daemon. main() owns the threads (the ring reader, the metrics
// server's, and itself waiting for signals and idleness); the logic lives in plain classes.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "daemon/aggregator.h"
#include "daemon/clock.h"
#include "daemon/control_handler.h"
#include "daemon/control_server.h"
#include "daemon/crash_report.h"
#include "daemon/diagnosis.h"
#include "daemon/diagnosis_metrics.h"
#include "daemon/dump_root.h"
#include "daemon/dump_writer.h"
#include "daemon/flags.h"
#include "daemon/hang_dumper.h"
#include "daemon/kernel_metrics.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/metrics_server.h"
#include "daemon/op_log_writer.h"
#include "daemon/port_owner.h"
#include "daemon/refusal_metrics.h"
#include "daemon/ring_server.h"
#include "daemon/run_dir.h"
#include "daemon/stack_capture.h"
#include "util/version.h"

namespace xtimer {
namespace daemon {
namespace {

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

// Checks the dump root (daemon/dump_root.h) and removes what interrupted dumps left in it.
bool PrepareDumps(const std::string& root, std::string* resolved, std::string* error) {
  if (!PrepareDumpRoot(root, resolved, error)) return false;
  const Leftovers left = RemoveDumpLeftovers(*resolved);
  if (left.tmp_files + left.empty_dirs + left.errors > 0) {
    Logf("dump root %s: removed %d unfinished file(s) and %d empty folder(s) of interrupted "
         "dumps; %d could not be removed", resolved->c_str(), left.tmp_files, left.empty_dirs,
         left.errors);
  }
  return true;
}

int Main(int argc, char** argv) {
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, [](const char* name) { return getenv(name); }, &flags, &error)) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 2;
  }
  if (flags.help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (flags.version) {
    printf("%s\n", kVersion);
    return 0;
  }
  flags.run_dir = Absolute(flags.run_dir);
  flags.socket = Absolute(flags.socket);
  const int run_fd = OpenRunDir(flags.run_dir, geteuid(), &error);
  if (run_fd < 0) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 1;
  }
  int lock_fd = -1;
  int holder = 0;
  switch (AcquireLock(run_fd, flags.run_dir, kLockName, &lock_fd, &holder, &error)) {
    case LockResult::kHeld:
      if (holder > 0) {
        printf("xtimerd: already running (pid %d) for %s\n", holder, flags.run_dir.c_str());
      } else {
        printf("xtimerd: already running for %s\n", flags.run_dir.c_str());
      }
      return 0;
    case LockResult::kError:
      fprintf(stderr, "xtimerd: %s\n", error.c_str());
      return 1;
    case LockResult::kAcquired:
      break;
  }
  int ready_fd = -1;
  if (flags.daemonize || !flags.log_file.empty()) {
    // Opened before detaching, so that a refused log file is reported on the caller's terminal.
    const std::string log_file = flags.log_file.empty() ? "" : Absolute(flags.log_file);
    const int log_fd = OpenLog(run_fd, flags.run_dir, log_file, &error);
    if (log_fd < 0) {
      fprintf(stderr, "xtimerd: %s\n", error.c_str());
      return 1;
    }
    const std::string log_name = log_file.empty() ? flags.run_dir + "/" + kLogName : log_file;
    if (!flags.daemonize) {
      RedirectOutput(log_fd);
    } else if (!Daemonize(log_fd, log_name, &ready_fd, &error)) {
      fprintf(stderr, "xtimerd: %s\n", error.c_str());
      return 1;
    }
  }
  auto fail = [&](const std::string& what) {
    Logf("%s", what.c_str());
    SignalReady(ready_fd, "error: " + what);
    return 1;
  };
  WritePidToLock(lock_fd);
  if (!WritePidFile(run_fd, flags.run_dir, kPidName, &error)) return fail(error);
  std::string dump_root;
  if (!PrepareDumps(Absolute(flags.dump_root), &dump_root, &error)) return fail(error);

  // Every thread started from here on inherits this mask; main() takes the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  AggregatorOptions ao;
  ao.window_ns = flags.window_s * 1000000000;
  ao.window_buckets = static_cast<int>(flags.window_s < 60 ? flags.window_s : 60);
  ao.window_samples = static_cast<size_t>(flags.window_samples);
  ao.history = static_cast<size_t>(flags.history);
  ao.hang_timeout_ns = flags.hang_timeout_s * 1000000000;
  ao.stale_heartbeat_ns = flags.stale_timeout_s * 1000000000;
  ao.exited_grace_ns = flags.exited_grace_s * 1000000000;
  ao.max_exited = static_cast<size_t>(flags.exited_max);
  ao.max_exited_bytes = static_cast<size_t>(flags.exited_memory_mb) << 20;
  ao.memory_budget_bytes = static_cast<size_t>(flags.memory_budget_mb) << 20;
  ao.max_process_bytes = static_cast<size_t>(flags.process_memory_mb) << 20;
  Aggregator aggregator(ao, RealtimeNs());

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
  // The operation log (docs/oplog.md): its tap is on before the first ring is read.
  OpLogOptions oo;
  if (!OpLogOptionsFromFlags(flags, dump_root, &oo, &error)) return fail(error);
  char hostname[256] = {0};
  gethostname(hostname, sizeof(hostname) - 1);
  auto op_log = std::make_unique<OpLogWriter>(&aggregator, oo, RealtimeNs, hostname);
  op_log->Start();
  auto server = std::make_unique<RingServer>(so, &aggregator);
  if (!server->Listen(&error)) return fail(error);

  MetricsServerOptions mo;
  mo.address = flags.metrics_address;
  mo.port = flags.metrics_port;
  mo.max_connections = static_cast<int>(flags.metrics_max_connections);
  mo.request_timeout_ms = static_cast<int>(flags.metrics_request_timeout_ms);
  // The live diagnosis; its automatic dumps go through the DumpManager made below.
  DiagnosisOptions dio;
  dio.hang_timeout_ns = flags.hang_timeout_s * 1000000000;
  dio.min_hang_ns = flags.hang_min_s * 1000000000;
  dio.early_hang_ns = flags.hang_early_s * 1000000000;
  dio.cadence_factor = static_cast<double>(flags.hang_cadence_factor);
  dio.max_comms = ao.max_comms_per_process;
  std::unique_ptr<HangDumper> dumper_owner;
  std::atomic<HangDumper*> dumper{nullptr};
  auto diagnosis = std::make_unique<LiveDiagnosis>(
      &aggregator, dio, RealtimeNs, [&dumper](LiveState* state) {
        HangDumper* d = dumper.load(std::memory_order_acquire);
        if (d != nullptr) d->Update(state);
      });

  // Stack captures (DumpStack, hang dumps) ask the ring server, which owns the connections.
  RingServer* ring = server.get();
  StackCapturer stacks(
      &aggregator,
      [ring](Aggregator::ProcessId id, int timeout_ms, StackSink sink) {
        ring->AskStacks(id, timeout_ms, std::move(sink));
      },
      dump_root, hostname, RealtimeNs);
  // Crash reports: taken from the ring thread, symbolized on the reporter's own thread.
  auto crashes = std::make_unique<CrashReporter>(&aggregator, &stacks, flags.exit_hook, RealtimeNs);
  CrashReporter* reporter = crashes.get();
  server->SetCrashSink([reporter](uint64_t id, int memfd, uint64_t size) {
    reporter->Submit(id, memfd, size);
  });
  auto metrics = std::make_unique<MetricsServer>(mo);
  metrics->RegisterCollectable(std::make_shared<MetricsCollector>(&aggregator, RealtimeNs));
  metrics->RegisterCollectable(std::make_shared<DiagnosisCollector>(diagnosis.get()));
  metrics->RegisterCollectable(std::make_shared<StackCaptureCollector>(&stacks));
  metrics->RegisterCollectable(std::make_shared<CrashCollector>(crashes.get()));
  if (flags.kernel_metrics_top > 0) {
    metrics->RegisterCollectable(std::make_shared<KernelMetrics>(
        &aggregator, static_cast<size_t>(flags.kernel_metrics_top), RealtimeNs));
  }
  // Every collectable is registered before the server starts; the control port's refusals join
  // this family once that port exists.
  auto refused = std::make_shared<RefusalCollector>(
      "xtimer_refused_connections_total",
      "Connections closed or refused by the daemon, by port and cause (docs/control.md).");
  refused->Add({"port", "metrics"}, &metrics->refusals());
  metrics->RegisterCollectable(refused);
  const int metrics_port = metrics->Start(&error);
  if (metrics_port < 0) {
    return fail(ExplainListenFailure("the metrics port", flags.metrics_address, flags.metrics_port,
                                     "--metrics-port", "XTIMER_METRICS_PORT", error));
  }

  // The control port (gRPC + HTTP/JSON) and dumps.
  auto dumps = std::make_unique<DumpManager>(&aggregator, dump_root, hostname, RealtimeNs);
  ControlOptions co;
  co.node = hostname;
  co.start_ns = RealtimeNs();
  co.now_ns = RealtimeNs;
  co.diagnosis = diagnosis.get();
  co.stacks = &stacks;
  ControlHandler handler(&aggregator, dumps.get(), co);
  if (flags.hang_dump) {
    dumper_owner = std::make_unique<HangDumper>(dumps.get(), hostname, flags.history, &stacks);
    dumper.store(dumper_owner.get(), std::memory_order_release);
  }
  diagnosis->Start();
  ControlLimits limits;
  limits.idle_timeout_ms = flags.control_idle_timeout_s * 1000;
  limits.request_timeout_ms = flags.control_request_timeout_s * 1000;
  limits.max_connections = static_cast<size_t>(flags.control_max_connections);
  limits.max_connections_per_peer = static_cast<size_t>(flags.control_max_per_peer);
  limits.allow_remote = flags.control_allow_remote;
  auto control = std::make_unique<ControlServer>(&handler, limits);
  const int control_port = control->Start(flags.control_address, flags.control_port, &error);
  if (control_port < 0) {
    return fail(ExplainListenFailure("the control port", flags.control_address, flags.control_port,
                                     "--control-port", "XTIMER_CONTROL_PORT", error));
  }

  refused->Add({"port", "control"}, &control->refusals());

  Logf("serving: socket %s, metrics http://%s:%d/metrics, control %s:%d (gRPC + HTTP/JSON, dump "
       "root %s), window %llds, hang timeout %llds (live threshold from %llds, %lldx cadence), "
       "history %lld records per process",
       flags.socket.c_str(), flags.metrics_address.c_str(), metrics_port,
       flags.control_address.c_str(), control_port, dump_root.c_str(),
       static_cast<long long>(flags.window_s), static_cast<long long>(flags.hang_timeout_s),
       static_cast<long long>(flags.hang_min_s), static_cast<long long>(flags.hang_cadence_factor),
       static_cast<long long>(flags.history));
  SignalReady(ready_fd, "");

  std::atomic<bool> stop{false};
  std::thread reader([&] { server->Run(&stop); });

  const timespec tick{0, 200 * 1000000};
  for (;;) {
    siginfo_t info;
    int sig = sigtimedwait(&signals, &info, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      Logf("signal %d: shutting down", sig);
      break;
    }
    if (sig == SIGHUP) continue;
    if (flags.exit_when_idle_s >= 0 && server->registered() == 0 &&
        MonotonicNs() - server->last_active_ns() >= flags.exit_when_idle_s * 1000000000) {
      Logf("no registered process for %llds: exiting",
           static_cast<long long>(flags.exit_when_idle_s));
      break;
    }
  }
  control->Shutdown();
  diagnosis->Stop();  // its automatic dumps use the DumpManager
  // A stack capture in progress ends by its deadline; it needs the ring server (still running).
  dumper.store(nullptr, std::memory_order_release);
  dumper_owner.reset();
  dumps.reset();  // a capture in progress writes what it has
  stop.store(true, std::memory_order_release);
  reader.join();
  op_log.reset();  // writes what is queued
  server.reset();  // closes connections, removes the socket
  metrics.reset();
  crashes.reset();  // after the ring thread (nothing submits) and the metrics (nothing reads)
  unlinkat(run_fd, kPidName, 0);
  close(run_fd);
  close(lock_fd);  // releases the lock
  Logf("stopped");
  return 0;
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

int main(int argc, char** argv) {
  xtimer::daemon::SetMallocPolicy();
  return xtimer::daemon::Main(argc, argv);
}
