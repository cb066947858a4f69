#include "daemon/diagnosis/hang_dumper.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/diagnosis/hang_check.h"
#include "daemon/dumps/dump_root.h"
#include "format/record.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

// Writes `text` to a new file `name` in the directory `dir` under `root` (no symlinks followed).
bool WriteNewFile(const std::string& root, const std::string& dir, const char* name,
                  const std::string& text, uint32_t uid, std::string* error) {
  const int dir_fd = OpenDirUnderRoot(root, dir, error);
  if (dir_fd < 0) return false;
  if (!GiveJobDirTo(dir_fd, dir, uid, error)) {  // the summary is the job user's, as its files
    close(dir_fd);
    return false;
  }
  const int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  const int open_errno = errno;
  close(dir_fd);
  if (fd < 0) {
    *error = dir + "/" + name + ": " + strerror(open_errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = dir + "/" + name + ": " + strerror(errno);
      close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    *error = dir + "/" + name + ": " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

std::string HangSummaryName(const std::string& host) {
  const std::string safe = SanitizeJobId(host);
  return safe.empty() ? "hang-summary.json" : "hang-summary-" + safe + ".json";
}

HangId HangIdOf(const JobLive& job) {
  std::map<uint64_t, uint64_t> world_comms;  // id -> the largest last completed seq
  for (const RankLive& r : job.ranks) {
    const int world = r.process.world_size;
    for (const CommSnapshot& c : r.process.comms) {
      if (c.comm_id == 0 || world <= 1 || c.comm_size != world) continue;
      uint64_t& done = world_comms[c.comm_id];
      done = std::max(done, c.last_completed_seq);
    }
  }
  HangId id;
  uint64_t most_done = 0;
  for (const auto& c : world_comms) {  // ascending id: a tie keeps the smaller
    if (id.world && c.second <= most_done) continue;
    most_done = c.second;
    id = {c.first, c.second + 1, true};
  }
  if (!id.world && !job.report.hangs.empty()) {
    id.comm_id = job.report.hangs.front().comm_id;
    id.seq = job.report.hangs.front().seq;
  }
  return id;
}

namespace {

// The threshold a local rank's idleness is measured against (IdleWithRemotePeers), in ns.
double IdleThresholdNs(const RankLive& r) {
  double with_cadence = 0, any = 0;
  for (const CommLive& c : r.comms) {
    any = std::max(any, c.threshold_s);
    if (c.cadence_samples > 0 && c.threshold_s > 0 &&
        (with_cadence == 0 || c.threshold_s < with_cadence)) {
      with_cadence = c.threshold_s;
    }
  }
  return (with_cadence > 0 ? with_cadence : any) * 1e9;
}

bool IdleRank(const RankLive& r, int64_t now_ns) {
  const analysis::RankInput& in = r.input;
  if (in.exit.exited || in.last_activity_ns <= 0) return false;
  for (const analysis::Progress& p : in.progress) {
    if (p.has_inflight || p.oldest_issue_ns > 0) return false;
  }
  const double threshold_ns = IdleThresholdNs(r);
  return threshold_ns > 0 && static_cast<double>(now_ns - in.last_activity_ns) > threshold_ns;
}

}  // namespace

bool IdleWithRemotePeers(const JobLive& job, int64_t now_ns) {
  bool remote = false;
  for (const RankLive& r : job.ranks) {
    if (!IdleRank(r, now_ns)) return false;
    for (const analysis::Communicator& c : r.input.comms) {
      remote |= c.size > static_cast<int32_t>(job.ranks.size());
    }
  }
  return remote;
}

namespace {

// The local rank's first collective in flight on a communicator with remote members and no
// completed instance, or nullptr.
const analysis::Progress* FirstRemoteWait(const RankLive& r, size_t local_ranks) {
  for (const analysis::Progress& p : r.input.progress) {
    if (!p.has_inflight) continue;
    auto comm = std::find_if(r.input.comms.begin(), r.input.comms.end(),
                             [&](const analysis::Communicator& c) { return c.id == p.comm_id; });
    auto live = std::find_if(r.comms.begin(), r.comms.end(),
                             [&](const CommLive& c) { return c.comm_id == p.comm_id; });
    if (comm == r.input.comms.end() || comm->size <= static_cast<int32_t>(local_ranks)) continue;
    if (live != r.comms.end() && live->cadence_samples > 0) continue;
    return &p;
  }
  return nullptr;
}

}  // namespace

bool WaitingOnRemotePeers(const JobLive& job, int64_t now_ns, int64_t early_ns) {
  if (job.ranks.empty() || early_ns <= 0) return false;
  for (const RankLive& r : job.ranks) {
    if (r.input.exit.exited) return false;
    const analysis::Progress* wait = FirstRemoteWait(r, job.ranks.size());
    if (wait == nullptr) return false;
    // Its last op, or the issue of the one it waits in when it completed none yet.
    const int64_t active_ns = std::max(r.input.last_activity_ns, wait->oldest_issue_ns);
    if (active_ns <= 0 || now_ns - active_ns <= early_ns) return false;
  }
  return true;
}

std::string HangDirName(const HangId& id, int repeat) {
  char comm[format::kCommIdTextSize];
  std::string name = std::string("hang-") + format::CommIdText(id.comm_id, comm) + "-" +
                     std::to_string(id.seq);
  if (repeat > 1) name += "-" + std::to_string(repeat);
  return name;
}

HangDumper::HangDumper(DumpManager* dumps, std::string node, int64_t history,
                       StackCapturer* stacks)
    : dumps_(dumps),
      stacks_(stacks),
      node_(std::move(node)),
      history_(std::max<int64_t>(1, std::min(history, kMaxDumpHistory))) {
  if (stacks_ != nullptr) stack_thread_ = std::thread([this] { StackLoop(); });
}

HangDumper::~HangDumper() {
  {
    std::lock_guard<std::mutex> lock(stack_mu_);
    stack_stop_ = true;
    stack_jobs_.clear();
  }
  stack_cv_.notify_all();
  if (stack_thread_.joinable()) stack_thread_.join();
}

void HangDumper::Update(LiveState* state) {
  std::map<std::string, Hang> still;
  for (JobLive& job : state->jobs) {
    // Progress resumed (or never stalled): reset. A node whose ranks are idle while peers
    // elsewhere may wait in them dumps too (IdleWithRemotePeers), and so does one whose ranks
    // all wait early on peers elsewhere (WaitingOnRemotePeers).
    if (job.report.hangs.empty() && !IdleWithRemotePeers(job, state->now_ns) &&
        !WaitingOnRemotePeers(job, state->now_ns, state->early_hang_ns)) {
      continue;
    }
    Hang hang = hangs_[job.job];
    if (hang.folder.empty()) {  // the first pass of this hang names it
      const HangId id = HangIdOf(job);
      hang.folder = HangDirName(id, ++dumped_[job.job + "/" + HangDirName(id)]);
    }
    if (!hang.done && Dump(*state, job, &hang)) hang.done = true;
    job.dump_dir = hang.dir;
    still[job.job] = hang;
  }
  hangs_ = std::move(still);
}

// The summary of `job`'s dump, named after its ranks' host label (the node as the timeline files
// and `xtimer analyze` name it), else the daemon's node; "-2", "-3", ... when a daemon sharing
// the dump root with the same label wrote one already.
bool HangDumper::WriteSummary(const std::string& job_dir, const JobLive& job,
                              const std::string& json, std::string* error) {
  const std::string label = !job.ranks.empty() && !job.ranks.front().process.host.empty()
                                ? job.ranks.front().process.host
                                : node_;
  const std::string base = HangSummaryName(label);
  for (int i = 1; i <= kMaxSummaryTries; ++i) {
    std::string name = base;
    if (i > 1) name.insert(name.size() - 5, "-" + std::to_string(i));  // before ".json"
    const uint32_t uid = !job.ranks.empty() ? job.ranks.front().process.uid : geteuid();
    if (WriteNewFile(dumps_->root(), job_dir, name.c_str(), json, uid, error)) return true;
    if (error->find(strerror(EEXIST)) == std::string::npos) return false;
  }
  return false;
}

bool HangDumper::Dump(const LiveState& state, const JobLive& job, Hang* hang) {
  DumpRequest request;
  request.dir = dumps_->root() + "/" + hang->folder;
  request.history = history_;
  request.jobs.insert(job.job);
  request.dump_time_ns = state.now_ns;
  DumpStatus status;
  std::string error;
  const DumpError result = dumps_->Start(request, &status, &error);
  if (result == DumpError::kBusy) return false;
  const std::string job_dir = request.dir + "/" + JobDirName(job.job);
  if (result == DumpError::kNone) {
    HangCheckResponse summary;
    JobLive with_dir = job;
    with_dir.dump_dir = job_dir;
    LiveState one;
    one.now_ns = state.now_ns;
    one.jobs.push_back(std::move(with_dir));
    HangCheckRequest only_job;  // the timelines beside it carry the collectives
    only_job.set_job(job.job);
    FillHangCheck(one, only_job, node_, &summary);
    std::string json;
    if (MessageToJson(summary, &json, &error) && WriteSummary(job_dir, job, json, &error)) {
      hang->dir = job_dir;
    }
  }
  if (!hang->dir.empty()) CaptureStacks(job, request.dir);
  if (job.report.hangs.empty()) {
    const char* why = IdleWithRemotePeers(job, state.now_ns)
                          ? "idle past its hang threshold"
                          : "waiting past --hang-early-seconds in a first collective";
    Logf("job %s: every local rank %s, with peers on other nodes (no local verdict): %s %s",
         job.job.c_str(), why, hang->dir.empty() ? "automatic dump failed:" : "dumped to",
         hang->dir.empty() ? error.c_str() : hang->dir.c_str());
    return true;
  }
  const analysis::HangVerdict& v = job.report.hangs.front();
  char comm[format::kCommIdTextSize];
  if (hang->dir.empty()) {
    Logf("hang verdict %s in job %s (comm %s seq %llu): automatic dump failed: %s",
         analysis::HangKindName(v.kind), job.job.c_str(), format::CommIdText(v.comm_id, comm),
         static_cast<unsigned long long>(v.seq), error.c_str());
  } else {
    Logf("hang verdict %s in job %s (comm %s seq %llu): dumped %zu ranks to %s",
         analysis::HangKindName(v.kind), job.job.c_str(), format::CommIdText(v.comm_id, comm),
         static_cast<unsigned long long>(v.seq), status.files.size(), hang->dir.c_str());
  }
  return true;
}

void HangDumper::CaptureStacks(const JobLive& job, const std::string& dir) {
  if (stacks_ == nullptr) return;
  StackJob j{job.job, dir, {}};
  for (const RankLive& r : job.ranks) j.processes.push_back(r.process);
  std::lock_guard<std::mutex> lock(stack_mu_);
  if (stack_jobs_.size() >= kMaxQueuedStacks) {
    Logf("hang in job %s: %zu stack captures queued already: this one is skipped", job.job.c_str(),
         stack_jobs_.size());
    return;
  }
  stack_jobs_.push_back(std::move(j));
  stack_cv_.notify_one();
}

void HangDumper::StackLoop() {
  for (;;) {
    StackJob j;
    {
      std::unique_lock<std::mutex> lock(stack_mu_);
      stack_cv_.wait(lock, [this] { return stack_stop_ || !stack_jobs_.empty(); });
      if (stack_stop_) return;
      j = std::move(stack_jobs_.front());
      stack_jobs_.pop_front();
    }
    int written = 0;
    const std::vector<StackFileInfo> files =
        stacks_->CaptureProcesses(j.processes, j.dir, kDefaultStackTimeoutMs);
    for (const StackFileInfo& f : files) written += f.outcome == "written" && !f.path.empty();
    Logf("hang in job %s: stacks of %d of %zu ranks written to %s/%s", j.job.c_str(), written,
         files.size(), j.dir.c_str(), JobDirName(j.job).c_str());
  }
}

}  // namespace daemon
}  // namespace xtimer
