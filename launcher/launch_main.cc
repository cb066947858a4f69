// xtimer-launch: runs a command with libxtimer.so preloaded and makes sure this node's xtimerd is
// running. See `xtimer-launch --help` and docs/launcher.md.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/registration.h"
#include "util/command_line.h"
#include "util/default_paths.h"
#include "util/default_ports.h"
#include "util/job_identity.h"
#include "util/version.h"

namespace {

constexpr char kUsage[] =
    "usage: xtimer-launch [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with libxtimer.so appended to LD_PRELOAD, after making sure the node daemon\n"
    "xtimerd runs for the run directory, and exits with COMMAND's status (signals it receives\n"
    "are passed to COMMAND). Works as a prefix of torchrun, mpirun, srun or a plain command.\n"
    "\n"
    "options (each defaults to the environment variable in brackets):\n"
    "  --run-dir DIR        daemon socket, lock and log directory [XTIMER_RUN_DIR; default:\n"
    "                       /run/xtimer as root or when root's daemon runs, else /tmp/xtimer-UID]\n"
    "  --metrics-port N     Prometheus port of a daemon started here [XTIMER_METRICS_PORT, 18889]\n"
    "  --control-port N     control port of a daemon started here [XTIMER_CONTROL_PORT, 18888]\n"
    "  --job NAME           job label of the metrics and dumps, the same for every rank\n"
    "                       [XTIMER_JOB; else torchrun's run id, the Slurm job, the MPI job,\n"
    "                       the Kubernetes JOB_NAME; else COMMAND's name] ([A-Za-z0-9._-],\n"
    "                       other bytes become '_', at most 63; see docs/launcher.md)\n"
    "  --lib PATH           libxtimer.so to preload [XTIMER_LIB; else found beside this program]\n"
    "  --daemon PATH        xtimerd to start [XTIMER_DAEMON_BIN; else beside this program]\n"
    "  --no-daemon          do not start xtimerd (the job still runs and retries registering)\n"
    "  --daemon-timeout S   seconds to wait for a started daemon's socket [5]\n"
    "  -h, --help           this text\n"
    "  --version            print the version and exit\n";

struct Options {
  std::string run_dir;
  std::string metrics_port;
  std::string control_port;
  std::string job;
  std::string lib;
  std::string daemon;
  bool start_daemon = true;
  double daemon_timeout_s = 5;
  std::vector<char*> command;
};

[[noreturn]] void Usage(const char* fmt, const char* arg) {
  fprintf(stderr, "xtimer-launch: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see xtimer-launch --help)\n");
  exit(2);
}

std::string Env(const char* name, const char* def) {
  const char* v = getenv(name);
  return (v != nullptr && *v != '\0') ? v : def;
}

// --job: a label of [A-Za-z0-9._-] (util/job_identity.h), not empty once sanitized.
xtimer::CommandLine::Setter JobLabel(std::string* out) {
  return [out](const std::string& t, std::string* expected) {
    *expected = "a name with some of [A-Za-z0-9._-] (this one leaves no label)";
    *out = xtimer::SanitizeJobId(t);
    return !out->empty();
  };
}

Options Parse(int argc, char** argv) {
  Options o;
  o.run_dir = xtimer::ClientRunDir(geteuid());
  int metrics_port = xtimer::kDefaultMetricsPort, control_port = xtimer::kDefaultControlPort;
  bool no_daemon = false;
  xtimer::CommandLine cl;
  cl.Text("--run-dir", &o.run_dir).Env("XTIMER_RUN_DIR");
  cl.Integer("--metrics-port", 1, 65535, &metrics_port).Env("XTIMER_METRICS_PORT");
  cl.Integer("--control-port", 1, 65535, &control_port).Env("XTIMER_CONTROL_PORT");
  cl.Custom("--job", "NAME", JobLabel(&o.job));
  cl.Text("--lib", &o.lib).Env("XTIMER_LIB");
  cl.Text("--daemon", &o.daemon).Env("XTIMER_DAEMON_BIN");
  cl.Switch("--no-daemon", &no_daemon);
  cl.Number("--daemon-timeout", 0, 86400, &o.daemon_timeout_s);
  cl.StopAtPositional();
  std::string error;
  int i = argc;
  if (!cl.ApplyEnvironment(getenv, &error)) Usage("%s", error.c_str());
  switch (cl.Parse(argc, argv, &error, &i)) {
    case xtimer::CommandLine::Outcome::kHelp:
      fputs(kUsage, stdout);
      exit(0);
    case xtimer::CommandLine::Outcome::kVersion:
      printf("%s\n", xtimer::kVersion);
      exit(0);
    case xtimer::CommandLine::Outcome::kBad:
      Usage("%s", error.c_str());
    case xtimer::CommandLine::Outcome::kRun:
      break;
  }
  o.start_daemon = !no_daemon;
  o.metrics_port = std::to_string(metrics_port);
  o.control_port = std::to_string(control_port);
  if (i >= argc) Usage("%s", "no command given");
  if (o.run_dir.empty() || o.run_dir[0] != '/') Usage("run dir '%s' must be absolute", o.run_dir.c_str());
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  o.command.push_back(nullptr);
  return o;
}

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string path(buf);
  return path.substr(0, path.rfind('/'));
}

// The first existing file among `candidates`, or "".
std::string FirstExisting(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) return c;
  }
  return "";
}

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

bool DaemonAnswers(const std::string& socket_path) {
  std::string error;
  int fd = xtimer::format::ConnectToDaemon(socket_path, &error);
  if (fd < 0) return false;
  close(fd);
  return true;
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

// Starts xtimerd (it daemonizes itself and exits 0 when one already runs for the run dir) and
// waits for its socket. Failures are reported but never stop the job.
void EnsureDaemon(const Options& o) {
  const std::string socket_path = o.run_dir + "/xtimerd.sock";
  if (DaemonAnswers(socket_path)) return;
  if (o.daemon.empty()) {
    fprintf(stderr, "xtimer-launch: warning: xtimerd not found (use --daemon); running without it\n");
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "xtimer-launch: warning: fork: %s; running without xtimerd\n", strerror(errno));
    return;
  }
  if (pid == 0) {
    std::vector<std::string> args = {o.daemon, "--daemonize", "--run-dir", o.run_dir,
                                     "--metrics-port", o.metrics_port, "--control-port",
                                     o.control_port};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    execv(o.daemon.c_str(), argv.data());
    fprintf(stderr, "xtimer-launch: cannot run %s: %s\n", o.daemon.c_str(), strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "xtimer-launch: warning: %s failed to start (see %s/xtimerd.log); running"
            " without it\n", o.daemon.c_str(), o.run_dir.c_str());
    return;
  }
  for (int waited = 0; waited < o.daemon_timeout_s * 1000; waited += 20) {
    if (DaemonAnswers(socket_path)) return;
    SleepMs(20);
  }
  fprintf(stderr, "xtimer-launch: warning: xtimerd did not open %s within %.1f s; running"
          " without it\n", socket_path.c_str(), o.daemon_timeout_s);
}

std::string AppendPreload(const std::string& lib) {
  std::string current = Env("LD_PRELOAD", "");
  if (current.find(lib) != std::string::npos) return current;
  return current.empty() ? lib : current + ":" + lib;
}

// NVTX (docs/hook.md "NVTX"): libxtimer.so becomes the NVTX injection library. A library the
// user named already (Nsight Systems', ...) moves to XTIMER_NVTX_FORWARD, and the hook forwards
// every NVTX call to it, so both see the ranges (an XTIMER_NVTX_FORWARD already set stays).
void ExportNvtx(const std::string& lib) {
  const std::string user = Env("NVTX_INJECTION64_PATH", "");
  if (!user.empty() && user != lib && Env("XTIMER_NVTX_FORWARD", "").empty()) {
    setenv("XTIMER_NVTX_FORWARD", user.c_str(), 1);
  }
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
}

// NCCL's profiler plugin (docs/hook.md "Collective completion"), opt-in with
// XTIMER_NCCL_PROFILER=on|1: libxtimer.so, so that NCCL reports when each collective ends and
// the hook records no completion mark. A plugin the user chose stays (the hook then marks).
void ExportNcclProfiler(const std::string& lib) {
  const std::string on = Env("XTIMER_NCCL_PROFILER", "");
  if ((on != "on" && on != "1") || !Env("NCCL_PROFILER_PLUGIN", "").empty()) return;
  setenv("NCCL_PROFILER_PLUGIN", lib.c_str(), 1);
}

// The job label (util/job_identity.h). --job, or a source this launcher sees (XTIMER_JOB, a
// scheduler's or MPI launcher's job id), becomes XTIMER_JOB of every process of COMMAND. With none,
// COMMAND's name only becomes XTIMER_JOB_DEFAULT, the last source: what a launcher started here
// gives its ranks (torchrun's run id, mpirun's job) still names the job, the same for all ranks.
void ExportJob(const Options& o) {
  if (!o.job.empty()) {
    setenv("XTIMER_JOB", o.job.c_str(), 1);
    return;
  }
  const xtimer::JobIdentity j =
      xtimer::DeriveJobIdentity([](const char* name) -> const char* { return getenv(name); });
  if (j.source == "default") {
    std::string cmd = o.command[0];
    cmd = xtimer::SanitizeJobId(cmd.substr(cmd.rfind('/') + 1));
    setenv("XTIMER_JOB_DEFAULT", cmd.empty() ? j.id.c_str() : cmd.c_str(), 1);
  } else if (j.source != "XTIMER_JOB_DEFAULT") {  // an outer launcher's default stays as it is
    setenv("XTIMER_JOB", j.id.c_str(), 1);
  }
}

// The job token (docs/security.md "Peers and identity"): a secret that every rank of COMMAND
// sends with its ring, so that the daemon tells this job's ranks from another job of the same
// user with the same labels. An outer launcher's token (XTIMER_JOB_TOKEN) stays.
void ExportJobToken() {
  const char* outer = getenv("XTIMER_JOB_TOKEN");
  if (outer != nullptr && *outer != '\0') return;
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    fprintf(stderr, "xtimer-launch: no job token (getrandom: %s); ranks are told apart by uid "
            "only\n", strerror(errno));
    return;
  }
  char hex[2 * sizeof(bytes) + 1];
  for (size_t i = 0; i < sizeof(bytes); ++i) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  setenv("XTIMER_JOB_TOKEN", hex, 1);
}

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  const std::string self = SelfDir();
  if (o.lib.empty()) {
    o.lib = FirstExisting({self + "/libxtimer.so", self + "/../hook/libxtimer.so",
                           self + "/../lib/libxtimer.so"});
  }
  if (o.lib.empty() || access(o.lib.c_str(), R_OK) != 0) {
    fprintf(stderr, "xtimer-launch: libxtimer.so not found%s%s (use --lib PATH)\n",
            o.lib.empty() ? "" : " at ", o.lib.c_str());
    return 2;
  }
  o.lib = Absolute(o.lib);
  if (o.daemon.empty()) {
    o.daemon = FirstExisting({self + "/xtimerd", self + "/../daemon/xtimerd", self + "/../bin/xtimerd"});
  }
  if (!o.daemon.empty()) o.daemon = Absolute(o.daemon);
  if (mkdir(o.run_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "xtimer-launch: cannot create %s: %s\n", o.run_dir.c_str(), strerror(errno));
    return 2;
  }
  if (o.start_daemon) EnsureDaemon(o);

  setenv("LD_PRELOAD", AppendPreload(o.lib).c_str(), 1);
  ExportNcclProfiler(o.lib);
  ExportNvtx(o.lib);
  setenv("XTIMER_RUN_DIR", o.run_dir.c_str(), 1);
  setenv("XTIMER_DAEMON_SOCKET", (o.run_dir + "/xtimerd.sock").c_str(), 1);
  ExportJob(o);
  ExportJobToken();

  // Signals that would stop the job are passed on; the launcher itself waits for the child.
  struct sigaction sa{};
  sa.sa_handler = Forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);

  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "xtimer-launch: fork: %s\n", strerror(errno));
    return 2;
  }
  if (child == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) signal(sig, SIG_DFL);
    execvp(o.command[0], o.command.data());
    fprintf(stderr, "xtimer-launch: cannot run %s: %s\n", o.command[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  g_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "xtimer-launch: waitpid: %s\n", strerror(errno));
      return 2;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    // Die of the same signal, so that callers see the same status as without the launcher.
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  return 1;
}
