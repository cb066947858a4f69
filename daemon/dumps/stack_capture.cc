#include "daemon/dumps/stack_capture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/export/metric_families.h"
#include "format/stack_request.h"
#include "stacktrace/raw_capture.h"
#include "stacktrace/stacks_file.h"
#include "util/process_name.h"

namespace xtimer {
namespace daemon {
namespace {

namespace st = stacktrace;

// Reads at most `max` bytes of a /proc file.
std::string ReadProcFile(const std::string& path, size_t max) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[65536];
  while (out.size() < max) {
    const ssize_t n = read(fd, buf, std::min(sizeof(buf), max - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The uids (or gids) of a "Uid:" or "Gid:" line of /proc/PID/status: real, effective, saved,
// filesystem; false when the line is missing or malformed.
bool StatusIds(const std::string& status, const char* field, uint32_t ids[4]) {
  const size_t at = status.find(std::string("\n") + field);
  if (at == std::string::npos) return false;
  const char* p = status.c_str() + at + 1 + strlen(field);
  for (int i = 0; i < 4; ++i) {
    char* end = nullptr;
    errno = 0;
    const unsigned long v = strtoul(p, &end, 10);
    if (end == p || errno != 0 || v > UINT32_MAX) return false;
    ids[i] = static_cast<uint32_t>(v);
    p = end;
  }
  return true;
}

}  // namespace

bool MayReadProcess(const std::string& proc_root, int pid, uint32_t uid, std::string* why) {
  if (uid == 0) return true;  // root reads every process
  const std::string dir = proc_root + "/" + std::to_string(pid);
  struct stat s;
  if (stat(dir.c_str(), &s) != 0) {
    *why = "not symbolized: " + dir + ": " + strerror(errno);
    return false;
  }
  const std::string who = "uid " + std::to_string(uid) + ", which registered it";
  // The kernel gives /proc/PID to the effective uid of a dumpable process and to root otherwise:
  // a process that ran a setuid or setgid program, or an unreadable one, or made itself
  // non-dumpable, is no longer the registrant's to read.
  if (s.st_uid != uid) {
    *why = "not symbolized: process " + std::to_string(pid) + " is no longer readable by " + who +
           " (" + dir + " belongs to uid " + std::to_string(s.st_uid) +
           ": it runs a setuid or setgid program, or is not dumpable); its memory is not that "
           "user's to read (docs/security.md)";
    return false;
  }
  uint32_t uids[4], gids[4];
  const std::string status = ReadProcFile(dir + "/status", 16384);
  if (!StatusIds(status, "Uid:", uids) || !StatusIds(status, "Gid:", gids)) {
    *why = "not symbolized: " + dir + "/status has no Uid and Gid lines";
    return false;
  }
  for (int i = 0; i < 4; ++i) {
    if (uids[i] != uid || gids[i] != gids[0]) {
      *why = "not symbolized: process " + std::to_string(pid) + " runs with uids " +
             std::to_string(uids[0]) + "/" + std::to_string(uids[1]) + "/" +
             std::to_string(uids[2]) + "/" + std::to_string(uids[3]) + " and gids " +
             std::to_string(gids[0]) + "/" + std::to_string(gids[1]) + "/" +
             std::to_string(gids[2]) + "/" + std::to_string(gids[3]) +
             " (real/effective/saved/fs), not only those of " + who +
             "; its memory is not that user's to read (docs/security.md)";
      return false;
    }
  }
  return true;
}

bool ReadStackAnswer(const StackAnswer& a, std::string* text, std::string* error) {
  struct stat s;
  if (fstat(a.memfd, &s) != 0 || !S_ISREG(s.st_mode) || fcntl(a.memfd, F_GET_SEALS) < 0) {
    *error = "bad reply: its file descriptor is not a memfd";
    return false;
  }
  if (!format::ReadRawStacks(a.memfd, a.size, text, error)) {
    *error = "bad reply: " + *error;
    return false;
  }
  return true;
}

namespace {

// Writes `text` as `name` in the folder `dir_fd` (`dir` for messages) through a temporary renamed
// into place, the file created with `mode`. The folder may be a user's: anything may have been
// planted at the temporary name (a FIFO would block the open, a symlink redirect it). O_EXCL
// creates a new regular file or fails at once, never following or opening what is there;
// O_NONBLOCK keeps even that open from waiting. A taken name is skipped for the next of a few.
bool WriteInDir(int dir_fd, const std::string& dir, const std::string& name,
                const std::string& text, mode_t mode, std::string* error) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    tmp = name + ".tmp." + std::to_string(getpid()) + (attempt ? "." + std::to_string(attempt) : "");
    fd = openat(dir_fd, tmp.c_str(),
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  bool ok = fd >= 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (ok && renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) ok = false;
  if (!ok) {
    *error = dir + "/" + name + ": " + strerror(errno);
    unlinkat(dir_fd, tmp.c_str(), 0);
  }
  return ok;
}

}  // namespace

bool WriteFileUnderRoot(const std::string& root, const std::string& dir, const std::string& name,
                        const std::string& text, uint32_t uid, std::string* error) {
  const int dir_fd = OpenDirUnderRoot(root, dir, error);
  if (dir_fd < 0) return false;
  const bool ok = GiveJobDirTo(dir_fd, dir, uid, error) &&
                  WriteInDir(dir_fd, dir, name, text, 0644, error);
  close(dir_fd);
  if (!ok) RemoveDirIfEmpty(root, dir);  // a failed write leaves no empty folder behind
  return ok;
}

bool WriteDaemonFile(const std::string& root, const std::string& dir, const std::string& name,
                     const std::string& text, std::string* error) {
  const int dir_fd = OpenDirUnderRoot(root, dir, error);
  if (dir_fd < 0) return false;
  const bool ok = WriteInDir(dir_fd, dir, name, text, 0600, error);
  close(dir_fd);
  return ok;
}

void RemoveDirIfEmpty(const std::string& root, const std::string& dir) {
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  std::string ignored;
  const int parent = OpenDirUnderRoot(root, dir.substr(0, slash), &ignored);
  if (parent < 0) return;
  unlinkat(parent, dir.c_str() + slash + 1, AT_REMOVEDIR);  // fails unless empty: fine
  close(parent);
}

std::string ProcessState(const std::string& proc_root, int pid) {
  const std::string stat = ReadProcFile(proc_root + "/" + std::to_string(pid) + "/stat", 4096);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return "";
  const char c = stat[paren + 2];
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ? std::string(1, c) : "";
}

struct StackCapturer::PendingAnswers {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<ProcessId, StackAnswer>> answers;
  ~PendingAnswers() {
    for (auto& a : answers) {
      if (a.second.memfd >= 0) close(a.second.memfd);
    }
  }
};

StackCapturer::StackCapturer(Aggregator* aggregator, AskFn ask, std::string root,
                             std::string node, std::function<int64_t()> realtime_ns,
                             std::string proc_root)
    : aggregator_(aggregator), ask_(std::move(ask)), root_(std::move(root)),
      node_(std::move(node)), now_(std::move(realtime_ns)), proc_root_(proc_root),
      symbolizer_(proc_root) {}

std::vector<StackFileInfo> StackCapturer::Capture(const StackDumpRequest& request) {
  const Snapshot snap = aggregator_->TakeSnapshot(now_(), /*with_series=*/false);
  std::vector<ProcessSnapshot> chosen;
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.exited || (!request.jobs.empty() && request.jobs.count(p.job) == 0) ||
        (!request.ranks.empty() && request.ranks.count(p.rank) == 0)) {
      continue;
    }
    chosen.push_back(p);
  }
  return CaptureProcesses(chosen, request.dir, request.timeout_ms);
}

std::vector<StackFileInfo> StackCapturer::CaptureProcesses(
    const std::vector<ProcessSnapshot>& processes, const std::string& dir, int timeout_ms) {
  // A process with several device ranks is asked once; each of its ranks gets the file.
  std::map<ProcessId, std::vector<ProcessSnapshot>> by_process;
  for (const ProcessSnapshot& p : processes) {
    if (!p.exited) by_process[p.id].push_back(p);
  }
  auto pending = std::make_shared<PendingAnswers>();
  for (const auto& entry : by_process) {
    const ProcessId id = entry.first;
    ask_(id, timeout_ms, [pending, id](StackAnswer a) {
      std::lock_guard<std::mutex> lock(pending->mu);
      pending->answers.emplace_back(id, std::move(a));
      pending->cv.notify_all();
    });
  }
  std::vector<StackFileInfo> out;
  // The ring server answers every ask by its deadline; the margin covers its cycle.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms + 1000);
  while (!by_process.empty()) {
    std::unique_lock<std::mutex> lock(pending->mu);
    if (!pending->cv.wait_until(lock, deadline, [&] { return !pending->answers.empty(); })) break;
    auto answer = std::move(pending->answers.front());
    pending->answers.pop_front();
    lock.unlock();
    if (by_process.count(answer.first) == 0) {  // answered twice: never, but hold no fd
      if (answer.second.memfd >= 0) close(answer.second.memfd);
      continue;
    }
    WriteAnswer(by_process[answer.first], dir, std::move(answer.second), &out);
    by_process.erase(answer.first);
  }
  for (const auto& entry : by_process) {  // never answered (the ring thread is stuck?)
    StackAnswer none;
    none.outcome = "no_answer";
    none.error = NoAnswerText(timeout_ms);
    WriteAnswer(entry.second, dir, std::move(none), &out);
  }
  return out;
}

std::string StackCapturer::Symbolize(int pid, uint32_t uid, StackAnswer answer,
                                    st::StacksFile* file, std::string* error) {
  file->pid = pid;
  file->process_state = ProcessState(proc_root_, pid);
  file->capture_time_ns = now_();
  std::string outcome = answer.outcome, text;
  *error = answer.error;
  if (answer.memfd < 0) return outcome;
  const bool read = ReadStackAnswer(answer, &text, error);
  close(answer.memfd);
  st::RawCapture raw;
  if (!read) return "bad_reply";
  if (!st::ParseRawCapture(text, &raw, error)) {
    *error = "bad raw capture: " + *error;
    return "bad_reply";
  }
  if (raw.capture_time_ns > 0) file->capture_time_ns = raw.capture_time_ns;
  // The daemon reads the process's module map and mapped files with its own rights: it answers
  // only while the registrant could read them itself, checked before the map is read and again
  // after the last file (a process that ran a setuid program in between is refused too).
  if (!MayReadProcess(proc_root_, pid, uid, error)) return "denied";
  // The module map comes from the kernel, never from the process.
  const auto maps = st::ParseMaps(
      ReadProcFile(proc_root_ + "/" + std::to_string(pid) + "/maps", st::kMaxMapsBytes));
  std::vector<std::string> problems;
  st::BuildThreads(raw, [&](const std::vector<uint64_t>& pcs) {
    return symbolizer_.Symbolize(pid, maps, pcs, &problems);
  }, file);
  if (!MayReadProcess(proc_root_, pid, uid, error)) {
    file->frames.clear();
    file->threads.clear();
    return "denied";
  }
  if (!raw.python_error.empty()) *error = "python: " + raw.python_error;
  for (const std::string& why : problems) Logf("stacks of pid %d: %s", pid, why.c_str());
  return "written";
}

void StackCapturer::WriteAnswer(const std::vector<ProcessSnapshot>& ranks, const std::string& dir,
                                StackAnswer answer, std::vector<StackFileInfo>* out,
                                bool count, st::StacksFile* built) {
  st::StacksFile file;
  std::string error;
  const std::string outcome =
      Symbolize(ranks.front().pid, ranks.front().uid, std::move(answer), &file, &error);
  file.error = error.substr(0, st::kMaxStringBytes);
  for (const ProcessSnapshot& r : ranks) {
    StackFileInfo info{"", r.job, r.host.empty() ? node_ : r.host, r.pid, r.rank, r.local_rank,
                       r.world_size, static_cast<int>(file.threads.size()), outcome, file.error};
    // A process that has not said its rank and world size is named by its pid (and device).
    const bool ranked = r.rank >= 0 && r.world_size > r.rank;
    file.job = r.job;
    file.rank = ranked ? r.rank : -1;
    file.world_size = ranked ? r.world_size : -1;
    file.local_rank = r.local_rank;
    file.device = ranked ? -1 : r.device;
    file.host = info.host.substr(0, st::kMaxLabelBytes);
    const std::string job_dir = dir + "/" + JobDirName(r.job);
    const std::string name = st::StacksFileName(file);
    std::string werror;
    std::string text = st::WriteStacksJson(file);
    if (WriteFileUnderRoot(root_, job_dir, name, text, r.uid, &werror)) {
      info.path = job_dir + "/" + name;
      info.content = std::move(text);
    } else {
      info.error = werror;
      info.outcome = "write_failed";  // never "written" for a file that is not there
      const std::string who =
          ranked ? "rank " + std::to_string(r.rank) : RanklessName(r.pid, r.device);
      Logf("stacks of %s (job %s): %s", who.c_str(), r.job.c_str(), werror.c_str());
    }
    if (count) Count(info.outcome);
    out->push_back(std::move(info));
  }
  if (built != nullptr) *built = std::move(file);
}

void StackCapturer::Count(const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++outcomes_[outcome];
}

std::map<std::string, uint64_t> StackCapturer::Outcomes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcomes_;
}

std::vector<prometheus::MetricFamily> StackCaptureCollector::Collect() const {
  static const FamilyInfo kFamily[] = {
      {"xtimer_stack_captures_total", prometheus::MetricType::Counter,
       "Ranks whose stacks the daemon asked for, by outcome: written, no_answer, bad_reply, "
       "exited, refused, denied (docs/stacks.md)."},
  };
  FamilyBuilder b(kFamily, 1);
  for (const auto& o : capturer_->Outcomes()) {
    b.Add(0, {{"outcome", o.first}}, static_cast<double>(o.second));
  }
  return b.Take();
}

}  // namespace daemon
}  // namespace xtimer
