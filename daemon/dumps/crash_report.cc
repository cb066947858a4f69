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
#include "stacktrace/frame_owner.h"
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

// The crashing thread's frames from the symbolized report ("" or why not).
std::string CrashingFrames(const st::StacksFile& file, int tid, std::vector<st::Frame>* out) {
  if (!file.error.empty() && file.threads.empty()) return file.error;
  for (const st::Thread& t : file.threads) {
    if (t.tid != tid) continue;
    for (uint32_t i : t.frames) out->push_back(file.frames[i]);
    return t.error;
  }
  return "the crashing thread is not in the report";
}

}  // namespace

std::string FrameText(const st::Frame& f) {
  const std::string name = f.function.empty() ? "??" : f.function;
  if (f.kind == st::Frame::kPython && !f.module.empty() && f.line > 0) {
    return name + " (" + BaseName(f.module) + ":" + std::to_string(f.line) + ")";
  }
  return f.module.empty() ? name : name + " (" + BaseName(f.module) + ")";
}

std::string AppFrameText(const std::vector<st::Frame>& frames) {
  for (const st::Frame& f : frames) {
    if (st::IsApplicationFrame(f)) return FrameText(f);
  }
  return "";
}

std::string CrashFrameText(const CrashReport& r) {
  return analysis::CrashFrameText(r.frames.empty() ? "" : FrameText(r.frames.front()),
                                  AppFrameText(r.frames), r.python_exception, r.exception_type,
                                  r.exception_message);
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
       ", \"frame\": " + JsonQuote(r.frame) + ", \"app_frame\": " + JsonQuote(r.app_frame) +
       ", \"frames\": [";
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

CrashReporter::CrashReporter(Aggregator* aggregator, StackCapturer* stacks, std::string exit_hook,
                             std::function<int64_t()> realtime_ns, int exit_hook_timeout_ms)
    : aggregator_(aggregator), stacks_(stacks), hooks_(std::move(exit_hook), exit_hook_timeout_ms),
      now_(std::move(realtime_ns)), thread_([this] { Run(); }) {}

CrashReporter::~CrashReporter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    for (auto& q : queues_) {
      for (const QueuedReport& j : q.second) close(j.memfd);
    }
    queues_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void CrashReporter::Submit(uint64_t process_id, uint32_t uid, int memfd, uint64_t size) {
  const char* why = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<QueuedReport>& q = queues_[uid];
    if (stop_) {
      why = "the daemon stops";
    } else if (queued_ >= kMaxQueuedCrashReports) {
      why = "the queue is full";
    } else if (q.size() >= kMaxQueuedCrashReportsPerUid) {
      why = "its user has too many reports waiting";
    }
    if (why == nullptr) {
      q.push_back({process_id, uid, memfd, size});
      ++queued_;
      cv_.notify_one();
      return;
    }
    if (q.empty()) queues_.erase(uid);
    ++dropped_;
  }
  close(memfd);  // the process waits for its ack at most format::kCrashAckWaitMs
  Logf("crash report of process %llu (uid %u) dropped: %s",
       static_cast<unsigned long long>(process_id), uid, why);
}

bool CrashReporter::NextLocked(QueuedReport* job) {
  if (queues_.empty()) return false;
  // Round robin over users: the first user after the last one served that has a report.
  auto it = queues_.upper_bound(last_uid_);
  if (it == queues_.end()) it = queues_.begin();
  *job = it->second.front();
  it->second.pop_front();
  last_uid_ = it->first;
  if (it->second.empty()) queues_.erase(it);
  --queued_;
  return true;
}

void CrashReporter::Run() {
  for (;;) {
    QueuedReport job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queues_.empty(); });
      if (stop_) return;
      NextLocked(&job);
    }
    Handle(job);
    close(job.memfd);
  }
}

uint64_t CrashReporter::Dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void CrashReporter::WriteFiles(const std::vector<ProcessSnapshot>& ranks, const QueuedReport& job,
                               CrashReport* r) {
  StackAnswer answer;
  answer.memfd = fcntl(job.memfd, F_DUPFD_CLOEXEC, 0);  // WriteAnswer closes its copy
  answer.size = job.size;
  if (answer.memfd < 0) {
    answer.outcome = "bad_reply";
    answer.error = std::string("dup: ") + strerror(errno);
  }
  std::vector<StackFileInfo> infos;
  st::StacksFile symbolized;
  stacks_->WriteAnswer(ranks, r->dir, std::move(answer), &infos, /*count=*/false, &symbolized);
  format::AckCrashReport(job.memfd);  // symbolized: the process may go on dying
  // The frames come from the symbolized report itself, whether or not a file could be written
  // (a process without a rank once had no file, and so no frames).
  r->error = CrashingFrames(symbolized, r->tid, &r->frames);
  for (const StackFileInfo& info : infos) {
    if (!info.path.empty()) r->files.push_back(info.path);
    if (info.path.empty() && r->error.empty()) r->error = info.error;
  }
}

void CrashReporter::Handle(const QueuedReport& job) {
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
  for (const ProcessSnapshot& rank : ranks) {
    if (rank.rank >= 0 && rank.world_size > rank.rank) r.ranks.push_back(rank.rank);
  }
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
  r.app_frame = AppFrameText(r.frames);
  aggregator_->SetCrashFrame(job.id, CrashFrameText(r));
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A process without a rank counts as rank -1, as its other series are labelled.
    for (const ProcessSnapshot& rank : ranks) {
      ++counts_[std::make_tuple(r.job, rank.rank, r.signal_name)];
    }
  }
  const std::string json = CrashJson(r);
  // Two copies: the job's user reads its own in the job's folder; analysis of the job trusts the
  // daemon's, beside it in the crash folder, which no user can write (docs/security.md).
  std::string daemon_error;
  const bool written = WriteFileUnderRoot(stacks_->root(), r.dir + "/" + JobDirName(r.job),
                                          "crash.json", json, p.uid, &error);
  if (!WriteDaemonFile(stacks_->root(), r.dir, "crash.json", json, &daemon_error)) {
    Logf("crash report of pid %d: the daemon's copy: %s", r.pid, daemon_error.c_str());
  }
  if (!written) RemoveDirIfEmpty(stacks_->root(), r.dir);  // no empty crash folder stays
  const std::string who = r.ranks.empty() ? "without a rank" : "rank " + std::to_string(r.ranks[0]);
  const std::string where = written ? "report in " + r.dir : "no report written: " + error;
  Logf("pid %d (job %s %s) crashed: %s in %s; %s", r.pid, r.job.c_str(), who.c_str(),
       r.signal_name.c_str(), CrashFrameText(r).c_str(), where.c_str());
  if (hooks_.enabled()) hooks_.Submit(p.uid, r.pid, json);  // never waits for the hook
}

std::map<std::tuple<std::string, int, std::string>, uint64_t> CrashReporter::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

std::vector<prometheus::MetricFamily> CrashCollector::Collect() const {
  static const FamilyInfo kFamily[] = {
      {"xtimer_rank_crashes_total", prometheus::MetricType::Counter,
       "Crash reports of ranks, by job, rank and fatal signal (docs/crash.md)."},
      {"xtimer_crash_reports_dropped_total", prometheus::MetricType::Counter,
       "Crash reports not written because the queue was full, their user had too many waiting "
       "or the daemon was stopping (each also logged; docs/crash.md)."},
  };
  FamilyBuilder b(kFamily, 2);
  for (const auto& c : reporter_->Counts()) {
    b.Add(0,
          {{"job", std::get<0>(c.first)}, {"rank", std::to_string(std::get<1>(c.first))},
           {"signal", std::get<2>(c.first)}},
          static_cast<double>(c.second));
  }
  b.Add(1, {}, static_cast<double>(reporter_->Dropped()));
  std::vector<prometheus::MetricFamily> out = b.Take();
  for (prometheus::MetricFamily& f : ExitHookCollector(&reporter_->exit_hooks()).Collect()) {
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace daemon
}  // namespace xtimer
