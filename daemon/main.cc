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

#include "daemon/base/log.h"
#include "daemon/control/control_handler.h"
#include "daemon/control/control_server.h"
#include "daemon/diagnosis/diagnosis.h"
#include "daemon/diagnosis/diagnosis_metrics.h"
#include "daemon/diagnosis/hang_dumper.h"
#include "daemon/dumps/crash_report.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/dumps/op_log_metrics.h"
#include "daemon/dumps/op_log_writer.h"
#include "daemon/dumps/stack_capture.h"
#include "daemon/export/kernel_metrics.h"
#include "daemon/export/python_metrics.h"
#include "daemon/export/metrics.h"
#include "daemon/export/metrics_server.h"
#include "daemon/export/refusal_metrics.h"
#include "daemon/flags.h"
#include "daemon/ingest/ring_server.h"
#include "daemon/model/aggregator.h"
#include "daemon/net/port_owner.h"
#include "daemon/run_dir.h"
#include "util/clock.h"
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

// Checks the dump root (daemon/dumps/dump_root.h) and removes what interrupted dumps left in it.
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

// Main's phases return this to go on, else the exit status.
constexpr int kGoOn = -1;

// What the process holds from its start to its end.
struct Resources {
  Flags flags;
  int run_fd = -1;
  int lock_fd = -1;       // holds the run directory's lock
  int ready_fd = -1;      // a --daemonize caller waits on it (SignalReady)
  std::string dump_root;  // resolved
  std::string hostname;
};

int ParseCommandLine(int argc, char** argv, Flags* flags) {
  std::string error;
  if (!ParseFlags(argc, argv, [](const char* name) { return getenv(name); }, flags, &error)) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 2;
  }
  if (flags->help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    printf("%s\n", kVersion);
    return 0;
  }
  flags->run_dir = Absolute(flags->run_dir);
  flags->socket = Absolute(flags->socket);
  return kGoOn;
}

// Opens the run directory and takes its lock; exits 0 when another daemon holds it.
int LockRunDir(Resources* p) {
  std::string error;
  p->run_fd = OpenRunDir(p->flags.run_dir, geteuid(), &error);
  if (p->run_fd < 0) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 1;
  }
  int holder = 0;
  switch (AcquireLock(p->run_fd, p->flags.run_dir, kLockName, &p->lock_fd, &holder, &error)) {
    case LockResult::kHeld:
      if (holder > 0) {
        printf("xtimerd: already running (pid %d) for %s\n", holder, p->flags.run_dir.c_str());
      } else {
        printf("xtimerd: already running for %s\n", p->flags.run_dir.c_str());
      }
      return 0;
    case LockResult::kError:
      fprintf(stderr, "xtimerd: %s\n", error.c_str());
      return 1;
    case LockResult::kAcquired:
      break;
  }
  return kGoOn;
}

// The log file (--log-file, or the run directory's with --daemonize), and detaching.
int StartLogging(Resources* p) {
  const Flags& flags = p->flags;
  if (!flags.daemonize && flags.log_file.empty()) return kGoOn;
  std::string error;
  // Opened before detaching, so that a refused log file is reported on the caller's terminal.
  const std::string log_file = flags.log_file.empty() ? "" : Absolute(flags.log_file);
  const int log_fd = OpenLog(p->run_fd, flags.run_dir, log_file, &error);
  if (log_fd < 0) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 1;
  }
  const std::string log_name = log_file.empty() ? flags.run_dir + "/" + kLogName : log_file;
  if (!flags.daemonize) {
    RedirectOutput(log_fd);
  } else if (!Daemonize(log_fd, log_name, &p->ready_fd, &error)) {
    fprintf(stderr, "xtimerd: %s\n", error.c_str());
    return 1;
  }
  return kGoOn;
}

// Logs `what` and hands it to a waiting --daemonize caller; returns the exit status.
int Fail(const Resources& p, const std::string& what) {
  Logf("%s", what.c_str());
  SignalReady(p.ready_fd, "error: " + what);
  return 1;
}

// Every thread started after this inherits the mask; main() takes the signals.
sigset_t BlockSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::string Hostname() {
  char hostname[256] = {0};
  gethostname(hostname, sizeof(hostname) - 1);
  return hostname;
}

// The daemon's parts, declared in the order they are made, so that what Stop leaves is destroyed
// in the reverse order.
struct Daemon {
  explicit Daemon(const Flags& flags) : aggregator(AggregatorOptionsOf(flags), RealtimeNs()) {}
  Aggregator aggregator;
  std::unique_ptr<OpLogWriter> op_log;
  std::unique_ptr<RingServer> server;
  std::unique_ptr<HangDumper> dumper_owner;
  std::atomic<HangDumper*> dumper{nullptr};
  std::unique_ptr<LiveDiagnosis> diagnosis;
  std::unique_ptr<StackCapturer> stacks;
  std::unique_ptr<CrashReporter> crashes;
  std::unique_ptr<MetricsServer> metrics;
  std::shared_ptr<RefusalCollector> refused;
  std::unique_ptr<DumpManager> dumps;
  std::unique_ptr<ControlHandler> handler;
  std::unique_ptr<ControlServer> control;
  int metrics_port = -1;
  int control_port = -1;
};

// The operation log (docs/oplog.md), whose tap is on before the first ring is read, and the
// registration socket.
bool StartIngest(const Resources& p, Daemon* d, std::string* error) {
  OpLogOptions oo;
  if (!OpLogOptionsFromFlags(p.flags.op_log, p.dump_root, &oo, error)) return false;
  d->op_log = std::make_unique<OpLogWriter>(&d->aggregator, oo, RealtimeNs, p.hostname);
  d->op_log->Start();
  d->server = std::make_unique<RingServer>(RingServerOptionsOf(p.flags), &d->aggregator);
  return d->server->Listen(error);
}

// The live diagnosis (its automatic dumps go through the HangDumper made in StartControl),
// stack captures and crash reports.
void StartDiagnosis(const Resources& p, Daemon* d) {
  d->diagnosis = std::make_unique<LiveDiagnosis>(
      &d->aggregator, DiagnosisOptionsOf(p.flags), RealtimeNs, [d](LiveState* state) {
        HangDumper* dumper = d->dumper.load(std::memory_order_acquire);
        if (dumper != nullptr) dumper->Update(state);
      });
  // Stack captures (DumpStack, hang dumps) ask the ring server, which owns the connections.
  RingServer* ring = d->server.get();
  d->stacks = std::make_unique<StackCapturer>(
      &d->aggregator,
      [ring](ProcessId id, int timeout_ms, StackSink sink) {
        ring->AskStacks(id, timeout_ms, std::move(sink));
      },
      p.dump_root, p.hostname, RealtimeNs);
  // Crash reports: taken from the ring thread, symbolized on the reporter's own thread.
  d->crashes = std::make_unique<CrashReporter>(&d->aggregator, d->stacks.get(), p.flags.exit_hook,
                                               RealtimeNs);
  CrashReporter* reporter = d->crashes.get();
  d->server->SetCrashSink(
      [reporter](uint64_t id, uint32_t uid, int memfd, uint64_t size) {
        reporter->Submit(id, uid, memfd, size);
      });
}

// The metrics port; every collectable is registered before it starts, and the control port's
// refusals join the refusal family once that port exists.
bool StartMetrics(const Resources& p, Daemon* d, std::string* error) {
  const Flags& flags = p.flags;
  d->metrics = std::make_unique<MetricsServer>(MetricsServerOptionsOf(flags));
  MetricsServer* m = d->metrics.get();
  m->RegisterCollectable(std::make_shared<MetricsCollector>(&d->aggregator, RealtimeNs));
  m->RegisterCollectable(std::make_shared<DiagnosisCollector>(d->diagnosis.get()));
  m->RegisterCollectable(std::make_shared<StackCaptureCollector>(d->stacks.get()));
  m->RegisterCollectable(std::make_shared<CrashCollector>(d->crashes.get()));
  m->RegisterCollectable(std::make_shared<OpLogCollector>(d->op_log.get()));
  m->RegisterCollectable(std::make_shared<PythonMetrics>(&d->aggregator, RealtimeNs));
  if (flags.kernel_metrics_top > 0) {
    m->RegisterCollectable(std::make_shared<KernelMetrics>(
        &d->aggregator, static_cast<size_t>(flags.kernel_metrics_top), RealtimeNs));
  }
  d->refused = std::make_shared<RefusalCollector>(
      "xtimer_refused_connections_total",
      "Connections closed or refused by the daemon, by port and cause (docs/control.md).");
  d->refused->Add({"port", "metrics"}, &m->refusals());
  m->RegisterCollectable(d->refused);
  d->metrics_port = m->Start(error);
  if (d->metrics_port >= 0) return true;
  *error = ExplainListenFailure("the metrics port", flags.metrics_address, flags.metrics_port,
                                "--metrics-port", "XTIMER_METRICS_PORT", *error);
  return false;
}

// Dumps, the automatic hang dumps, and the control port (gRPC + HTTP/JSON).
bool StartControl(const Resources& p, Daemon* d, std::string* error) {
  const Flags& flags = p.flags;
  d->dumps = std::make_unique<DumpManager>(&d->aggregator, p.dump_root, p.hostname, RealtimeNs);
  ControlOptions co;
  co.node = p.hostname;
  co.start_ns = RealtimeNs();
  co.now_ns = RealtimeNs;
  co.diagnosis = d->diagnosis.get();
  co.stacks = d->stacks.get();
  d->handler = std::make_unique<ControlHandler>(&d->aggregator, d->dumps.get(), co);
  if (flags.hang_dump) {
    d->dumper_owner =
        std::make_unique<HangDumper>(d->dumps.get(), p.hostname, flags.history, d->stacks.get());
    d->dumper.store(d->dumper_owner.get(), std::memory_order_release);
  }
  d->diagnosis->Start();
  d->control = std::make_unique<ControlServer>(d->handler.get(), ControlLimitsOf(flags));
  d->control_port = d->control->Start(flags.control_address, flags.control_port, error);
  if (d->control_port < 0) {
    *error = ExplainListenFailure("the control port", flags.control_address, flags.control_port,
                                  "--control-port", "XTIMER_CONTROL_PORT", *error);
    return false;
  }
  d->refused->Add({"port", "control"}, &d->control->refusals());
  return true;
}

void LogServing(const Resources& p, const Daemon& d) {
  const Flags& flags = p.flags;
  Logf("serving: socket %s, metrics http://%s:%d/metrics, control %s:%d (gRPC + HTTP/JSON, dump "
       "root %s), window %llds, hang timeout %llds (live threshold from %llds, %lldx cadence), "
       "history %lld records per process",
       flags.socket.c_str(), flags.metrics_address.c_str(), d.metrics_port,
       flags.control_address.c_str(), d.control_port, p.dump_root.c_str(),
       static_cast<long long>(flags.window_s), static_cast<long long>(flags.hang_timeout_s),
       static_cast<long long>(flags.hang_min_s), static_cast<long long>(flags.hang_cadence_factor),
       static_cast<long long>(flags.history));
}

// Returns on SIGTERM or SIGINT, or once no process has been registered for --exit-when-idle.
void WaitForStop(const Flags& flags, const sigset_t& signals, const RingServer& server) {
  const timespec tick{0, 200 * 1000000};
  for (;;) {
    siginfo_t info;
    int sig = sigtimedwait(&signals, &info, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      Logf("signal %d: shutting down", sig);
      return;
    }
    if (sig == SIGHUP) continue;
    if (flags.exit_when_idle_s >= 0 && server.registered() == 0 &&
        MonotonicNs() - server.last_active_ns() >= flags.exit_when_idle_s * 1000000000) {
      Logf("no registered process for %llds: exiting",
           static_cast<long long>(flags.exit_when_idle_s));
      return;
    }
  }
}

// Reads the rings on their own thread until WaitForStop returns, then stops the parts in order.
void Serve(const Resources& p, const sigset_t& signals, Daemon* d) {
  std::atomic<bool> stop{false};
  std::thread reader([&] { d->server->Run(&stop); });
  WaitForStop(p.flags, signals, *d->server);
  d->control->Shutdown();
  d->diagnosis->Stop();  // its automatic dumps use the DumpManager
  // A stack capture in progress ends by its deadline; it needs the ring server (still running).
  d->dumper.store(nullptr, std::memory_order_release);
  d->dumper_owner.reset();
  d->dumps.reset();  // a capture in progress writes what it has
  stop.store(true, std::memory_order_release);
  reader.join();
  d->op_log.reset();  // writes what is queued
  d->server.reset();  // closes connections, removes the socket
  d->metrics.reset();
  d->crashes.reset();  // after the ring thread (nothing submits) and the metrics (nothing reads)
}

int Main(int argc, char** argv) {
  Resources p;
  int rc = ParseCommandLine(argc, argv, &p.flags);
  if (rc == kGoOn) rc = LockRunDir(&p);
  if (rc == kGoOn) rc = StartLogging(&p);
  if (rc != kGoOn) return rc;
  std::string error;
  WritePidToLock(p.lock_fd);
  if (!WritePidFile(p.run_fd, p.flags.run_dir, kPidName, &error)) return Fail(p, error);
  if (!PrepareDumps(Absolute(p.flags.dump_root), &p.dump_root, &error)) return Fail(p, error);
  const sigset_t signals = BlockSignals();
  p.hostname = Hostname();
  Daemon d(p.flags);
  if (!StartIngest(p, &d, &error)) return Fail(p, error);
  StartDiagnosis(p, &d);
  if (!StartMetrics(p, &d, &error) || !StartControl(p, &d, &error)) return Fail(p, error);
  LogServing(p, d);
  SignalReady(p.ready_fd, "");
  Serve(p, signals, &d);
  unlinkat(p.run_fd, kPidName, 0);
  close(p.run_fd);
  close(p.lock_fd);  // releases the lock
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
