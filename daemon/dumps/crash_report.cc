#include "daemon/dumps/crash_report.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "analysis/analysis.h"
#include "daemon/base/log.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/export/metric_families.h"
#include "format/stack_request.h"
#include "stacktrace/raw_capture.h"
#include "stacktrace/stacks_file.h"
#include "util/json.h"

namespace xtimer {
namespace daemon {
namespace {

namespace st = stacktrace;

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The crashing thread's frames from a written .stacks file ("" or why not).
std::string CrashingFrames(const std::string& content, int tid, std::vector<st::Frame>* out) {
  st::StacksFile file;
  std::string error;
  if (!st::ParseStacksJson(content, &file, &error)) return "unreadable stacks: " + error;
  for (const st::Thread& t : file.threads) {
    if (t.tid != tid) continue;
    for (uint32_t i : t.frames) out->push_back(file.frames[i]);
    return t.error;
  }
  return "the crashing thread is not in the report";
}

std::vector<std::string> SplitCommand(const std::string& command) {
  std::vector<std::string> argv;
  std::istringstream in(command);
  for (std::string word; in >> word;) argv.push_back(word);
  return argv;
}

// A memfd holding `text`, at offset 0; -1 when it cannot be made.
int TextFile(const std::string& text) {
  const int fd = memfd_create("xtimer-exit-hook", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Waits for `pid` at most `timeout_ms`, then kills it. Returns "" or why it failed.
std::string Reap(pid_t pid, int timeout_ms) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  bool done = true;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int n;
    do {
      n = poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    done = n > 0;
    close(pidfd);
  }
  if (!done) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!done) return "killed after " + std::to_string(timeout_ms) + " ms";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace

std::string FrameText(const st::Frame& f) {
  const std::string name = f.function.empty() ? "??" : f.function;
  if (f.kind == st::Frame::kPython && !f.module.empty() && f.line > 0) {
    return name + " (" + BaseName(f.module) + ":" + std::to_string(f.line) + ")";
  }
  return f.module.empty() ? name : name + " (" + BaseName(f.module) + ")";
}

std::string CrashFrameText(const CrashReport& r) {
  return analysis::CrashFrameText(r.frames.empty() ? "" : FrameText(r.frames.front()),
                                  r.python_exception, r.exception_type, r.exception_message);
}

namespace {

// A crash.json frame: native {"function", "module"}; Python {"function", "file", "line"}.
std::string FrameJson(const st::Frame& f) {
  if (f.kind == st::Frame::kPython) {
    return "{\"function\": " + JsonQuote(f.function) + ", \"file\": " + JsonQuote(f.module) +
           ", \"line\": " + std::to_string(f.line) + "}";
  }
  return "{\"function\": " + JsonQuote(f.function) + ", \"module\": " + JsonQuote(f.module) + "}";
}

}  // namespace

std::string CrashJson(const CrashReport& r) {
  std::string j = "{\"format\": \"xtimer-crash\", \"version\": 1, \"job\": " + JsonQuote(r.job) +
                  ", \"host\": " + JsonQuote(r.host) + ", \"pid\": " + std::to_string(r.pid) +
                  ", \"ranks\": [";
  for (size_t i = 0; i < r.ranks.size(); ++i) j += (i ? ", " : "") + std::to_string(r.ranks[i]);
  j += "], \"world_size\": " + std::to_string(r.world_size) +
       ", \"time_ns\": " + std::to_string(r.time_ns) + ", \"signal\": " +
       std::to_string(r.signal) + ", \"signal_name\": " + JsonQuote(r.signal_name) +
       ", \"si_code\": " + std::to_string(r.si_code) +
       ", \"fault_address\": " + JsonQuote(r.fault_address) + ", \"tid\": " +
       std::to_string(r.tid) + ", \"thread\": " + JsonQuote(r.thread) +
       ", \"frame\": " + JsonQuote(r.frame) + ", \"frames\": [";
  for (size_t i = 0; i < r.frames.size(); ++i) j += (i ? ", " : "") + FrameJson(r.frames[i]);
  j += "]";
  if (r.python_exception) {
    j += ", \"exception\": {\"type\": " + JsonQuote(r.exception_type) +
         ", \"message\": " + JsonQuote(r.exception_message) + "}";
  }
  j += ", \"dir\": " + JsonQuote(r.dir) + ", \"stacks_files\": [";
  for (size_t i = 0; i < r.files.size(); ++i) j += (i ? ", " : "") + JsonQuote(r.files[i]);
  j += "]";
  if (!r.error.empty()) j += ", \"error\": " + JsonQuote(r.error);
  return j + "}\n";
}

std::string RunExitHook(const std::string& command, const std::string& input, uint32_t uid,
                        int timeout_ms) {
  const std::vector<std::string> words = SplitCommand(command);
  if (words.empty()) return "empty command";
  std::vector<char*> argv;
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  // Never as root for another user's job: the child takes the job's uid and primary group.
  const bool drop = geteuid() == 0 && uid != 0;
  gid_t gid = 0;
  if (drop) {
    passwd pw, *found = nullptr;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || found == nullptr) {
      return "uid " + std::to_string(uid) + " has no passwd entry: not run";
    }
    gid = pw.pw_gid;
  }
  const int in = TextFile(input);
  if (in < 0) return std::string("memfd: ") + strerror(errno);
  const pid_t pid = fork();
  if (pid == 0) {  // async-signal-safe calls only until exec
    if (dup2(in, 0) < 0) _exit(126);
    if (drop && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in);
  if (pid < 0) return std::string("fork: ") + strerror(errno);
  const std::string why = Reap(pid, timeout_ms);
  if (why == "exit status 127") return "exec " + words[0] + " failed (not an executable path?)";
  return why;
}

CrashReporter::CrashReporter(Aggregator* aggregator, StackCapturer* stacks, std::string exit_hook,
                             std::function<int64_t()> realtime_ns)
    : aggregator_(aggregator), stacks_(stacks), exit_hook_(std::move(exit_hook)),
      now_(std::move(realtime_ns)), thread_([this] { Run(); }) {}

CrashReporter::~CrashReporter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    for (const Job& j : queue_) close(j.memfd);
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void CrashReporter::Submit(uint64_t process_id, int memfd, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || queue_.size() >= kMaxQueuedCrashReports) {
    close(memfd);  // the process waits for its ack at most format::kCrashAckWaitMs
    return;
  }
  queue_.push_back({process_id, memfd, size});
  cv_.notify_one();
}

void CrashReporter::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = queue_.front();
      queue_.pop_front();
    }
    Handle(job);
    close(job.memfd);
  }
}

void CrashReporter::WriteFiles(const std::vector<ProcessSnapshot>& ranks, const Job& job,
                               CrashReport* r) {
  StackAnswer answer;
  answer.memfd = fcntl(job.memfd, F_DUPFD_CLOEXEC, 0);  // WriteAnswer closes its copy
  answer.size = job.size;
  if (answer.memfd < 0) {
    answer.outcome = "bad_reply";
    answer.error = std::string("dup: ") + strerror(errno);
  }
  std::vector<StackFileInfo> infos;
  stacks_->WriteAnswer(ranks, r->dir, std::move(answer), &infos, /*count=*/false);
  format::AckCrashReport(job.memfd);  // symbolized: the process may go on dying
  for (const StackFileInfo& info : infos) {
    if (!info.path.empty()) r->files.push_back(info.path);
    if (r->frames.empty() && !info.content.empty()) {
      r->error = CrashingFrames(info.content, r->tid, &r->frames);
    } else if (info.content.empty() && r->error.empty()) {
      r->error = info.error;
    }
  }
}

void CrashReporter::Handle(const Job& job) {
  const Snapshot snap = aggregator_->TakeSnapshot(now_(), /*with_series=*/false);
  std::vector<ProcessSnapshot> ranks;
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.id == job.id) ranks.push_back(p);
  }
  std::string text, error;
  st::RawCapture raw;
  StackAnswer peek;
  peek.memfd = job.memfd;
  peek.size = job.size;
  if (ranks.empty() || !ReadStackAnswer(peek, &text, &error) ||
      !st::ParseRawCapture(text, &raw, &error) || !raw.crash.present) {
    format::AckCrashReport(job.memfd);
    Logf("crash report of process %llu dropped: %s", static_cast<unsigned long long>(job.id),
         ranks.empty() ? "not registered" : error.empty() ? "no crash object" : error.c_str());
    return;
  }
  const ProcessSnapshot& p = ranks.front();
  CrashReport r;
  r.job = p.job;
  r.host = p.host;
  r.pid = p.pid;
  r.world_size = p.world_size;
  for (const ProcessSnapshot& rank : ranks) r.ranks.push_back(rank.rank);
  r.time_ns = raw.capture_time_ns > 0 ? raw.capture_time_ns : now_();
  r.signal = static_cast<int>(raw.crash.signal);
  const char* name = analysis::SignalName(r.signal);
  r.signal_name = raw.crash.python_exception ? kPythonExceptionSignal
                  : name != nullptr          ? name
                                             : "signal " + std::to_string(r.signal);
  r.python_exception = raw.crash.python_exception;
  r.exception_type = raw.crash.exception_type;
  r.exception_message = raw.crash.exception_message;
  r.si_code = static_cast<int>(raw.crash.si_code);
  r.fault_address = raw.crash.fault_address;
  r.tid = static_cast<int>(raw.crash.tid);
  for (const st::RawThread& t : raw.threads) {
    if (t.tid == r.tid) r.thread = t.name;
  }
  r.dir = stacks_->root() + "/crash-" + std::to_string(r.time_ns / 1000000000) + "-" +
          std::to_string(r.pid);
  WriteFiles(ranks, job, &r);
  r.frame = r.frames.empty() ? "" : FrameText(r.frames.front());
  aggregator_->SetCrashFrame(job.id, CrashFrameText(r));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int rank : r.ranks) ++counts_[std::make_tuple(r.job, rank, r.signal_name)];
  }
  const std::string json = CrashJson(r);
  if (!WriteFileUnderRoot(stacks_->root(), r.dir + "/" + JobDirName(r.job), "crash.json", json,
                          p.uid, &error)) {
    Logf("crash report of pid %d: %s", r.pid, error.c_str());
  }
  Logf("pid %d (job %s rank %d) crashed: %s in %s; report in %s", r.pid, r.job.c_str(),
       r.ranks.front(), r.signal_name.c_str(), r.frame.empty() ? "??" : r.frame.c_str(),
       r.dir.c_str());
  if (exit_hook_.empty()) return;
  const std::string why = RunExitHook(exit_hook_, json, p.uid, kExitHookTimeoutMs);
  if (!why.empty()) Logf("--exit-hook for pid %d: %s", r.pid, why.c_str());
}

std::map<std::tuple<std::string, int, std::string>, uint64_t> CrashReporter::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

std::vector<prometheus::MetricFamily> CrashCollector::Collect() const {
  static const FamilyInfo kFamily[] = {
      {"xtimer_rank_crashes_total", prometheus::MetricType::Counter,
       "Crash reports of ranks, by job, rank and fatal signal (docs/crash.md)."},
  };
  FamilyBuilder b(kFamily, 1);
  for (const auto& c : reporter_->Counts()) {
    b.Add(0,
          {{"job", std::get<0>(c.first)}, {"rank", std::to_string(std::get<1>(c.first))},
           {"signal", std::get<2>(c.first)}},
          static_cast<double>(c.second));
  }
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
