#include "daemon/dump_writer.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "daemon/log.h"
#include "timeline/format.h"
#include "timeline/timeline_io.h"
#include "util/job_identity.h"

namespace xtimer {
namespace daemon {

namespace tl = ::xtimer::timeline;
using format::OpKind;
using format::OpRecord;

namespace {

bool KindSelected(uint32_t mask, uint8_t kind) {
  if (mask == 0) return true;
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kMatmul:
      return (mask & tl::kDumpMatmul) != 0;
    case OpKind::kCollective:
    case OpKind::kP2P:
      return (mask & tl::kDumpNccl) != 0;
    default:
      return (mask & tl::kDumpHostAndMemory) != 0;
  }
}

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

bool InsideRoot(const std::string& root, const std::string& path) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

// mkdir -p `dir` (absolute), then checks its real path is still inside `root` (a symlink may
// have appeared since the request was validated).
bool MakeDirInside(const std::string& root, const std::string& dir, std::string* error) {
  std::string cur;
  size_t i = 1;
  while (i <= dir.size()) {
    size_t j = dir.find('/', i);
    if (j == std::string::npos) j = dir.size();
    cur = dir.substr(0, j);
    if (j > i && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + cur + ": " + strerror(errno);
      return false;
    }
    i = j + 1;
  }
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) {
    *error = "cannot resolve " + dir + ": " + strerror(errno);
    return false;
  }
  if (!InsideRoot(root, real)) {
    *error = dir + " now resolves to " + real + ", outside the dump root " + root;
    return false;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory";
    return false;
  }
  return true;
}

}  // namespace

std::string JobDirName(const std::string& job) {
  const std::string out = SanitizeJobId(job);
  return out.empty() ? "_nojob" : out;
}

struct DumpManager::Capture {
  Aggregator::ProcessId id = 0;
  ProcessSnapshot process;
  DumpFileInfo file;
  std::vector<tl::CommInfo> comms;
  std::vector<OpRecord> history;
  uint64_t history_end = UINT64_MAX;  // op seq one past the history; UINT64_MAX until known
  std::vector<std::pair<uint64_t, OpRecord>> captured;  // guarded by DumpManager::mu_
  bool full = false;                                   // guarded by DumpManager::mu_
  std::unordered_map<uint32_t, std::string> names;     // kernel names, gathered as we go
};

struct DumpManager::Job {
  DumpRequest request;
  DumpStatus status;
  int64_t window_end_ns = INT64_MAX;  // records launched at or after this are not captured
  std::vector<std::unique_ptr<Capture>> captures;
  std::unordered_map<Aggregator::ProcessId, Capture*> by_id;
};

DumpManager::DumpManager(Aggregator* aggregator, std::string root, std::string node,
                         std::function<int64_t()> realtime_ns)
    : aggregator_(aggregator), root_(std::move(root)), node_(std::move(node)),
      now_(std::move(realtime_ns)) {
  aggregator_->SetOpTap([this](Aggregator::ProcessId id, uint64_t seq, const OpRecord& r) {
    Tap(id, seq, r);
  });
}

DumpManager::~DumpManager() {
  std::lock_guard<std::mutex> start(start_mu_);
  aggregator_->SetOpTap(nullptr);
  CancelAndJoin();
}

void DumpManager::CancelAndJoin() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  cancel_ = false;
}

void DumpManager::Tap(Aggregator::ProcessId id, uint64_t seq, const OpRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!running_ || !job_) return;
  auto it = job_->by_id.find(id);
  if (it == job_->by_id.end()) return;
  Capture* c = it->second;
  const DumpRequest& q = job_->request;
  if (c->full || r.cpu_launch_ns < q.dump_time_ns || r.cpu_launch_ns >= job_->window_end_ns ||
      !KindSelected(q.kinds, r.kind)) {
    return;
  }
  if (seq < c->history_end && c->history_end != UINT64_MAX) return;  // already in the history
  c->captured.emplace_back(seq, r);
  const int64_t limit = q.count > 0 ? q.count : kMaxDumpCount;
  if (static_cast<int64_t>(c->captured.size()) >= limit) c->full = true;
}

DumpStatus DumpManager::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!job_) return DumpStatus();
  return job_->status;
}

bool DumpManager::WaitIdle(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !running_; });
}

DumpError DumpManager::Start(const DumpRequest& request, DumpStatus* out, std::string* error) {
  std::lock_guard<std::mutex> start(start_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && !request.reset) {
      const DumpStatus& s = job_->status;
      *error = "dump " + s.id + " is already capturing into " + s.dir + " until " +
               std::to_string(s.deadline_ns / 1000000000) +
               " (Unix s) at the latest; wait for it, or send reset: true to cancel it (its "
               "files are written)";
      return DumpError::kBusy;
    }
  }
  CancelAndJoin();  // reset: the running capture writes what it has

  const int64_t now = now_();
  auto job = std::make_shared<Job>();
  job->request = request;
  DumpStatus& st = job->status;
  st.id = std::to_string(now / 1000000000) + "-" + std::to_string(next_id_++);
  st.dir = request.dir;
  st.dump_time_ns = request.dump_time_ns;
  if (request.duration_s > 0) {
    job->window_end_ns = request.dump_time_ns + static_cast<int64_t>(request.duration_s * 1e9);
    st.deadline_ns = job->window_end_ns + kCaptureGraceNs;
  } else if (request.capture()) {
    st.deadline_ns = request.dump_time_ns + kMaxCaptureWaitS * 1000000000;
  } else {
    st.deadline_ns = now;
  }

  // Who is dumped, and the communicator tables (members' global ranks from every process of the
  // same job on this node; other nodes' members stay -1).
  const Snapshot snap = aggregator_->TakeSnapshot(now);
  std::map<std::pair<std::string, uint64_t>, std::vector<int32_t>> members;
  for (const ProcessSnapshot& p : snap.processes) {
    for (const CommSnapshot& c : p.comms) {
      if (c.comm_id == 0 || c.comm_size <= 0 || c.comm_size > (1 << 20)) continue;
      auto& m = members[{p.job, c.comm_id}];
      if (m.size() != static_cast<size_t>(c.comm_size)) m.assign(c.comm_size, -1);
      if (c.comm_rank >= 0 && c.comm_rank < c.comm_size) m[c.comm_rank] = p.rank;
    }
  }
  std::set<std::string> used_paths;
  for (const ProcessSnapshot& p : snap.processes) {
    if (!request.ranks.empty() && request.ranks.count(p.rank) == 0) continue;
    if (!request.jobs.empty() && request.jobs.count(p.job) == 0) continue;
    auto c = std::make_unique<Capture>();
    c->id = p.id;
    c->process = p;
    c->process.series.clear();
    DumpFileInfo& f = c->file;
    f.job = p.job;
    f.host = p.host;
    f.pid = p.pid;
    f.rank = p.rank;
    f.local_rank = p.local_rank;
    f.world_size = p.world_size;
    const std::string dir = request.dir + "/" + JobDirName(p.job);
    f.path = dir + "/" + tl::TimelineFileName(p.rank, p.world_size, p.pid);
    if (!used_paths.insert(f.path).second) {  // two live processes claim the same rank
      f.path = dir + "/" + tl::TimelineFileName(-1, p.world_size, p.pid);
      used_paths.insert(f.path);
    }
    for (const CommSnapshot& cs : p.comms) {
      if (cs.comm_id == 0) continue;
      tl::CommInfo ci;
      ci.id = cs.comm_id;
      ci.size = cs.comm_size;
      ci.rank = cs.comm_rank;
      ci.parent_id = cs.parent_id;
      ci.global_rank = p.rank;
      auto m = members.find({p.job, cs.comm_id});
      if (m != members.end()) ci.members = m->second;
      c->comms.push_back(std::move(ci));
    }
    job->by_id[p.id] = c.get();
    job->captures.push_back(std::move(c));
  }

  for (const auto& c : job->captures) st.files.push_back(c->file);
  const bool capture = request.capture() && !job->captures.empty();
  st.state = capture ? "capturing" : "written";
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    running_ = capture;
  }
  // The history after the tap is live: the capture drops records the history already holds.
  if (request.history > 0) {
    for (auto& c : job->captures) {
      uint64_t end = 0;
      std::vector<OpRecord> all = aggregator_->History(c->id, &end);
      std::vector<OpRecord> kept;
      for (const OpRecord& r : all) {
        if (KindSelected(request.kinds, r.kind)) kept.push_back(r);
      }
      const size_t n = std::min<size_t>(kept.size(), static_cast<size_t>(request.history));
      c->history.assign(kept.end() - static_cast<std::ptrdiff_t>(n), kept.end());
      std::lock_guard<std::mutex> lock(mu_);
      c->history_end = end;
    }
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : job->captures) c->history_end = 0;
  }
  if (capture) {
    thread_ = std::thread([this, job] { Run(job); });
    std::lock_guard<std::mutex> lock(mu_);
    *out = job->status;
    return DumpError::kNone;
  }
  Finish(job.get(), false);
  std::lock_guard<std::mutex> lock(mu_);
  *out = job->status;
  for (const DumpFileInfo& f : out->files) {
    if (!f.error.empty()) {
      *error = f.path + ": " + f.error;
      return DumpError::kIo;
    }
  }
  return DumpError::kNone;
}

void DumpManager::Run(std::shared_ptr<Job> job) {
  const DumpRequest& q = job->request;
  int64_t last_names = MonotonicNowNs();
  bool cancelled = false;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return cancel_; });
    if (cancel_) {
      cancelled = true;
      break;
    }
    const int64_t now = now_();
    bool all_full = true;
    for (auto& c : job->captures) all_full = all_full && c->full;
    if (now >= job->status.deadline_ns || (q.count > 0 && all_full)) break;
    lock.unlock();
    // Kernel names, while the processes are alive (a process that exits takes its names along).
    if (MonotonicNowNs() - last_names > 500000000) {
      last_names = MonotonicNowNs();
      for (auto& c : job->captures) {
        std::vector<uint32_t> ids;
        {
          std::lock_guard<std::mutex> l(mu_);
          for (const auto& e : c->captured) {
            if (e.second.name_id != 0 && c->names.count(e.second.name_id) == 0) {
              ids.push_back(e.second.name_id);
            }
          }
        }
        for (uint32_t id : ids) {
          std::string name = aggregator_->KernelName(c->id, id);
          if (!name.empty()) c->names[id] = name;  // only this thread touches names
        }
      }
    }
  }
  Finish(job.get(), cancelled);
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
  cv_.notify_all();
}

void DumpManager::Finish(Job* job, bool cancelled) {
  const DumpRequest& q = job->request;
  std::vector<DumpFileInfo> files;
  for (auto& cptr : job->captures) {
    Capture* c = cptr.get();
    std::vector<OpRecord> records = std::move(c->history);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& e : c->captured) {
        if (e.first >= c->history_end || c->history_end == UINT64_MAX) records.push_back(e.second);
      }
      c->captured.clear();
      c->captured.shrink_to_fit();
    }
    DumpFileInfo f = c->file;
    tl::Metadata md;
    const ProcessSnapshot& p = c->process;
    md.job = p.job;
    md.host = p.host;
    md.node = node_;
    md.pod = p.pod;
    md.pid = p.pid;
    md.rank = p.rank;
    md.local_rank = p.local_rank;
    md.world_size = p.world_size;
    md.device = records.empty() ? -1 : records.front().device;
    md.clock_realtime_ns = now_();
    {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      md.clock_monotonic_ns = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    }
    md.comms = c->comms;
    md.dump_time_ns = q.dump_time_ns;
    md.kinds = q.kinds;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const OpRecord& r : records) {
      lo = std::min(lo, r.cpu_launch_ns);
      hi = std::max(hi, r.cpu_launch_ns);
    }
    md.window_begin_ns = records.empty() ? q.dump_time_ns : lo;
    md.window_end_ns = records.empty() ? q.dump_time_ns : hi;
    std::unordered_map<uint32_t, uint32_t> index;  // name_id -> string table index
    for (const OpRecord& r : records) {
      if (r.name_id == 0 || index.count(r.name_id) != 0) continue;
      auto n = c->names.find(r.name_id);
      std::string name =
          n != c->names.end() ? n->second : aggregator_->KernelName(c->id, r.name_id);
      if (name.empty()) continue;
      index[r.name_id] = static_cast<uint32_t>(md.strings.size());
      md.strings.push_back(std::move(name));
    }
    std::string error;
    const std::string dir = f.path.substr(0, f.path.rfind('/'));
    if (MakeDirInside(root_, dir, &error)) {
      auto w = tl::TimelineWriter::Create(f.path, md, &error);
      if (w) {
        for (const OpRecord& r : records) {
          tl::EventRecord e;
          std::memset(&e, 0, sizeof(e));
          e.op = r.op;
          e.kind = r.kind;
          e.dtype = r.dtype;
          e.flags = r.flags;
          e.device = static_cast<int16_t>(std::max(-32768, std::min(32767, r.device)));
          auto n = index.find(r.name_id);
          e.name = n == index.end() ? 0 : n->second;
          e.peer = r.peer;
          e.stream = r.stream;
          e.cpu_launch_ns = r.cpu_launch_ns;
          e.gpu_start_ns = r.gpu_start_ns;
          e.duration_ns = r.duration_ns;
          e.bytes = r.bytes;
          e.m = r.m;
          e.n = r.n;
          e.k = r.k;
          e.comm_id = r.comm_id;
          e.seq = r.seq;
          e.root = r.root;
          e.group_id = r.group_id;
          e.batch = r.batch;
          w->Append(e);
        }
        if (w->Finish(&error)) {
          f.events = w->events();
          error.clear();
        }
      }
    }
    f.error = error;
    if (!error.empty()) Logf("dump %s: %s: %s", job->status.id.c_str(), f.path.c_str(), error.c_str());
    files.push_back(std::move(f));
  }
  std::lock_guard<std::mutex> lock(mu_);
  job->status.files = std::move(files);
  job->status.state = cancelled ? "cancelled" : "written";
  Logf("dump %s %s: %zu files in %s", job->status.id.c_str(), job->status.state.c_str(),
       job->status.files.size(), job->status.dir.c_str());
}

}  // namespace daemon
}  // namespace xtimer
