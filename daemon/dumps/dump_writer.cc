#include "daemon/dumps/dump_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/base/memory_return.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/nvtx_entries.h"
#include "daemon/model/job_scope.h"
#include "timeline/format.h"
#include "timeline/timeline_io.h"

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

}  // namespace

std::string DescribeShortRanks(const std::vector<DumpFileInfo>& files) {
  std::string out;
  for (const DumpFileInfo& f : files) {
    if (!f.fell_short) continue;
    if (!out.empty()) out += ", ";
    out += (f.rank >= 0 ? "rank " + std::to_string(f.rank) : "pid " + std::to_string(f.pid)) +
           " (" + std::to_string(f.captured) + " of " +
           std::to_string(f.requested) + " events, " + f.ended + ")";
  }
  return out;
}

CommMembers CommMembersOf(const Snapshot& snap) {
  CommMembers members;
  for (const ProcessSnapshot& p : snap.processes) {
    for (const CommSnapshot& c : p.comms) {
      if (c.comm_id == 0 || c.comm_size <= 0 || c.comm_size > kMaxCommSize) continue;
      auto& m = members[{p.job, c.comm_id}];
      if (m.size() != static_cast<size_t>(c.comm_size)) m.assign(c.comm_size, -1);
      if (c.comm_rank >= 0 && c.comm_rank < c.comm_size) m[c.comm_rank] = p.rank;
    }
  }
  return members;
}

std::string JobDirName(const std::string& job) {
  const std::string out = SanitizeScopedJobId(job);
  return out.empty() ? "_nojob" : out;
}

struct DumpManager::Capture {
  ProcessId id = 0;
  int device = kWholeProcess;  // the rank's device (ProcessSnapshot::device): a file per rank
  ProcessSnapshot process;
  DumpFileInfo file;
  std::vector<tl::CommInfo> comms;
  std::vector<OpRecord> history;
  uint64_t history_end = UINT64_MAX;  // op seq one past the history; UINT64_MAX until known
  std::vector<std::pair<uint64_t, OpRecord>> captured;  // guarded by DumpManager::mu_
  bool full = false;                                   // guarded by DumpManager::mu_
  uint64_t ops_seen = 0;       // op records of the process tapped so far; guarded by mu_
  uint64_t idle_seen = 0;      // ops_seen when last checked (EndRanks); guarded by mu_
  int64_t active_mono_ns = 0;  // when ops_seen last changed (monotonic); guarded by mu_
  std::string ended;           // why its capture is over (DumpFileInfo::ended); guarded by mu_
  std::unordered_map<uint32_t, std::string> names;     // kernel names, gathered as we go

  // The heap memory it holds (an estimate, for the memory hand-back).
  size_t Bytes() const {
    return sizeof(*this) + comms.capacity() * sizeof(tl::CommInfo) +
           history.capacity() * sizeof(OpRecord) +
           captured.capacity() * sizeof(std::pair<uint64_t, OpRecord>) +
           names.size() * kHashNodeBytes;
  }
};

struct DumpManager::Job {
  DumpRequest request;
  DumpStatus status;
  int64_t started_mono_ns = 0;  // when it took the slot
  int64_t window_end_ns = INT64_MAX;  // records launched at or after this are not captured
  std::vector<std::unique_ptr<Capture>> captures;
  std::map<RankKey, Capture*> by_rank;
};

DumpManager::DumpManager(Aggregator* aggregator, std::string root, std::string node,
                         std::function<int64_t()> realtime_ns)
    : aggregator_(aggregator), root_(std::move(root)), node_(std::move(node)),
      now_(std::move(realtime_ns)) {
  tap_id_ =
      aggregator_->AddOpTap([this](ProcessId id, const TapOp* ops, size_t n) { Tap(id, ops, n); });
}

DumpManager::~DumpManager() {
  std::lock_guard<std::mutex> start(start_mu_);
  aggregator_->RemoveOpTap(tap_id_);
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

void DumpManager::Tap(ProcessId id, const TapOp* ops, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!running_ || !job_) return;
  for (size_t i = 0; i < n; ++i) TapLocked(id, ops[i].rank_device, ops[i].seq, *ops[i].op);
}

void DumpManager::TapLocked(ProcessId id, int rank_device, uint64_t seq, const OpRecord& r) {
  auto it = job_->by_rank.find(RankKey{id, rank_device});
  if (it == job_->by_rank.end()) return;
  Capture* c = it->second;
  c->ops_seen = seq + 1;
  const DumpRequest& q = job_->request;
  if (c->full || !c->ended.empty() || r.cpu_launch_ns < q.dump_time_ns ||
      r.cpu_launch_ns >= job_->window_end_ns || !KindSelected(q.kinds, r.kind)) {
    return;
  }
  if (seq < c->history_end && c->history_end != UINT64_MAX) return;  // already in the history
  c->captured.emplace_back(seq, r);
  const int64_t limit = q.count > 0 ? q.count : kMaxDumpCount;
  if (static_cast<int64_t>(c->captured.size()) >= limit) c->full = true;
}

size_t DumpManager::captures_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return job_ ? job_->captures.size() : 0;
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

std::unique_ptr<DumpManager::Capture> DumpManager::CaptureOf(const ProcessSnapshot& p,
                                                             const DumpRequest& request,
                                                             const CommMembers& members,
                                                             std::set<std::string>* used_paths) {
  auto c = std::make_unique<Capture>();
  c->id = p.id;
  c->device = p.device;
  c->process = p;
  c->process.series.clear();
  DumpFileInfo& f = c->file;
  f.job = p.job;
  f.host = p.host;
  f.pid = p.pid;
  f.rank = p.rank;
  f.local_rank = p.local_rank;
  f.world_size = p.world_size;
  f.requested = request.count;
  const std::string dir = request.dir + "/" + JobDirName(p.job);
  f.path = dir + "/" + tl::TimelineFileName(p.rank, p.world_size, p.pid, p.device);
  if (!used_paths->insert(f.path).second) {  // two live processes claim the same rank
    f.path = dir + "/" + tl::TimelineFileName(-1, p.world_size, p.pid, p.device);
    used_paths->insert(f.path);
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
  return c;
}

std::shared_ptr<DumpManager::Job> DumpManager::PlanJob(const DumpRequest& request, int64_t now) {
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
    st.deadline_ns = request.dump_time_ns + static_cast<int64_t>(request.timeout_s * 1e9);
  } else {
    st.deadline_ns = now;
  }
  // Who is dumped, and the communicator tables (members' global ranks from every process of the
  // same job on this node; other nodes' members stay -1).
  const Snapshot snap = aggregator_->TakeSnapshot(now, /*with_series=*/false);
  const CommMembers members = CommMembersOf(snap);
  std::set<std::string> used_paths;
  for (const ProcessSnapshot& p : snap.processes) {
    if (!request.ranks.empty() && request.ranks.count(p.rank) == 0) continue;
    if (!request.jobs.empty() && request.jobs.count(p.job) == 0) continue;
    std::unique_ptr<Capture> c = CaptureOf(p, request, members, &used_paths);
    job->by_rank[p.key()] = c.get();
    job->captures.push_back(std::move(c));
  }
  for (const auto& c : job->captures) st.files.push_back(c->file);
  return job;
}

void DumpManager::TakeHistory(Job* job) {
  const DumpRequest& request = job->request;
  if (request.history == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : job->captures) c->history_end = 0;
    return;
  }
  for (auto& c : job->captures) {
    uint64_t end = 0;
    std::vector<OpRecord> all = aggregator_->History(RankKey{c->id, c->device}, &end);
    std::vector<OpRecord> kept;
    for (const OpRecord& r : all) {
      if (KindSelected(request.kinds, r.kind)) kept.push_back(r);
    }
    const size_t n = std::min<size_t>(kept.size(), static_cast<size_t>(request.history));
    c->history.assign(kept.end() - static_cast<std::ptrdiff_t>(n), kept.end());
    std::lock_guard<std::mutex> lock(mu_);
    c->history_end = end;
  }
}

bool DumpManager::FairShareOverLocked(uint32_t uid, std::string* error) const {
  const DumpStatus& s = job_->status;
  const int64_t held = MonotonicNowNs() - job_->started_mono_ns;
  const bool other_user = uid != job_->request.owner_uid;
  if (other_user && held >= fair_share_ns_) {
    Logf("dump %s (uid %u) ended after %.1f s for uid %u's request (its files are written)",
         s.id.c_str(), job_->request.owner_uid, held * 1e-9, uid);
    return true;
  }
  *error = "dump " + s.id + " is already capturing into " + s.dir + " until " +
           std::to_string(s.deadline_ns / 1000000000) + " (Unix s) at the latest; ";
  if (other_user) {
    *error += "another user's capture gives way after " +
              std::to_string(fair_share_ns_ / 1000000000) + " s: retry in " +
              std::to_string((fair_share_ns_ - held + 999999999) / 1000000000) + " s";
  } else {
    *error += "wait for it, or send reset: true to cancel it (its files are written)";
  }
  return false;
}

DumpError DumpManager::Start(const DumpRequest& request, DumpStatus* out, std::string* error) {
  std::lock_guard<std::mutex> start(start_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && !request.reset && !FairShareOverLocked(request.owner_uid, error)) {
      return DumpError::kBusy;
    }
  }
  CancelAndJoin();  // reset or fair share: the running capture writes what it has

  std::shared_ptr<Job> job = PlanJob(request, now_());
  job->started_mono_ns = MonotonicNowNs();
  // A capture of ranks that have all exited already (a job that ended) is written at once.
  const bool capture = request.capture() && !job->captures.empty() &&
                       !EndRanks(job.get(), MonotonicNowNs());
  job->status.state = capture ? "capturing" : "written";
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    running_ = capture;
  }
  // The history after the tap is live: the capture drops records the history already holds.
  TakeHistory(job.get());
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

bool DumpManager::EndRanks(Job* job, int64_t mono_ns) {
  // The aggregator's lock is taken before ours by the tap: ask it first, without ours.
  std::vector<bool> connected;
  for (const auto& c : job->captures) connected.push_back(aggregator_->Connected(c->id));
  const int64_t idle_ns = static_cast<int64_t>(job->request.idle_s * 1e9);
  std::lock_guard<std::mutex> lock(mu_);
  bool all = true;
  for (size_t i = 0; i < job->captures.size(); ++i) {
    Capture* c = job->captures[i].get();
    if (c->ended.empty()) {
      if (c->active_mono_ns == 0 || c->ops_seen != c->idle_seen) {
        c->idle_seen = c->ops_seen;
        c->active_mono_ns = mono_ns;
      }
      if (c->full) {
        c->ended = "count";
      } else if (!connected[i]) {
        c->ended = "exited";  // its last records were ingested before its connection closed
      } else if (idle_ns > 0 && mono_ns - c->active_mono_ns >= idle_ns) {
        c->ended = "idle";
      }
    }
    all = all && !c->ended.empty();
  }
  return all;
}

void DumpManager::Run(std::shared_ptr<Job> job) {
  int64_t last_names = MonotonicNowNs();
  bool cancelled = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return cancel_; });
      if (cancel_) {
        cancelled = true;
        break;
      }
      if (now_() >= job->status.deadline_ns) break;
    }
    if (EndRanks(job.get(), MonotonicNowNs())) break;
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

// The timeline event of an op record; `names`: name_id -> string table index.
static tl::EventRecord EventOf(const OpRecord& r, const std::unordered_map<uint32_t, uint32_t>& names) {
  tl::EventRecord e;
  std::memset(&e, 0, sizeof(e));
  e.op = r.op;
  e.kind = r.kind;
  e.dtype = r.dtype;
  e.flags = r.flags;
  e.device = static_cast<int16_t>(std::max(-32768, std::min(32767, r.device)));
  auto n = names.find(r.name_id);
  e.name = n == names.end() ? 0 : n->second;
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
  return e;
}

std::vector<OpRecord> DumpManager::TakeRecords(Capture* c, const DumpRequest& q, bool cancelled,
                                               bool window_over, DumpFileInfo* f) {
  std::vector<OpRecord> records = std::move(c->history);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : c->captured) {
    if (e.first >= c->history_end || c->history_end == UINT64_MAX) {
      records.push_back(e.second);
      ++f->captured;
    }
  }
  c->captured.clear();
  c->captured.shrink_to_fit();
  if (q.capture()) {
    if (c->ended.empty()) c->ended = cancelled ? "cancelled" : window_over ? "duration" : "deadline";
    f->ended = c->ended;
    f->fell_short = q.count > 0 && f->ended != "duration" && f->ended != "count" &&
                    static_cast<double>(f->captured) < kShortFraction * static_cast<double>(q.count);
  }
  return records;
}

tl::Metadata DumpManager::MetadataOf(const Capture& c, const DumpRequest& q,
                                     const std::vector<OpRecord>& records,
                                     std::unordered_map<uint32_t, uint32_t>* names) {
  tl::Metadata md;
  const ProcessSnapshot& p = c.process;
  md.job = p.job;
  md.host = p.host;
  md.node = node_;
  md.pod = p.pod;
  md.pid = p.pid;
  md.rank = p.rank;
  md.local_rank = p.local_rank;
  md.world_size = p.world_size;
  md.device = p.device >= 0 ? p.device : records.empty() ? -1 : records.front().device;
  md.clock_realtime_ns = now_();
  md.clock_monotonic_ns = MonotonicNowNs();
  md.comms = c.comms;
  md.dump_time_ns = q.dump_time_ns;
  md.kinds = q.kinds;
  md.hook.present = true;
  md.hook.start_ns = p.timing.start_ns;
  md.hook.own_ns = p.hook_own_ns;
  md.hook.budget_ppm = p.timing.budget_ppm;
  md.hook.calls.assign(std::begin(p.timing.calls), std::end(p.timing.calls));
  md.hook.timed.assign(std::begin(p.timing.timed), std::end(p.timing.timed));
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const OpRecord& r : records) {
    lo = std::min(lo, r.cpu_launch_ns);
    hi = std::max(hi, r.cpu_launch_ns);
  }
  md.window_begin_ns = records.empty() ? q.dump_time_ns : lo;
  md.window_end_ns = records.empty() ? q.dump_time_ns : hi;
  for (const OpRecord& r : records) {
    if (r.name_id == 0 || names->count(r.name_id) != 0) continue;
    auto n = c.names.find(r.name_id);
    std::string name = n != c.names.end() ? n->second : aggregator_->KernelName(c.id, r.name_id);
    if (name.empty()) continue;
    (*names)[r.name_id] = static_cast<uint32_t>(md.strings.size());
    md.strings.push_back(std::move(name));
  }
  // The process's NVTX events that meet the window: host slices beside its ops.
  std::map<uint32_t, std::string> texts;
  AddNvtxEntries(aggregator_->NvtxEvents(c.id, md.window_begin_ns, md.window_end_ns, &texts),
                 texts, &md);
  return md;
}

std::string DumpManager::WriteFile(const Capture& c, const DumpRequest& q,
                                   const std::vector<OpRecord>& records, DumpFileInfo* f) {
  std::unordered_map<uint32_t, uint32_t> names;  // name_id -> string table index
  const tl::Metadata md = MetadataOf(c, q, records, &names);
  std::string error;
  const size_t slash = f->path.rfind('/');
  int dir_fd = OpenDirUnderRoot(root_, f->path.substr(0, slash), &error);
  if (dir_fd >= 0 && !GiveJobDirTo(dir_fd, f->path.substr(0, slash), c.process.uid, &error)) {
    close(dir_fd);
    return error;
  }
  if (dir_fd < 0) return error;
  auto w = tl::TimelineWriter::CreateAt(dir_fd, f->path.substr(slash + 1), md, &error);
  close(dir_fd);
  if (!w) return error;
  for (const OpRecord& r : records) w->Append(EventOf(r, names));
  if (!w->Finish(&error)) return error;
  f->events = w->events();
  return "";
}

void DumpManager::Finish(Job* job, bool cancelled) {
  const DumpRequest& q = job->request;
  const bool window_over = q.duration_s > 0 && now_() >= job->window_end_ns;
  std::vector<DumpFileInfo> files;
  for (auto& cptr : job->captures) {
    Capture* c = cptr.get();
    DumpFileInfo f = c->file;
    const std::vector<OpRecord> records = TakeRecords(c, q, cancelled, window_over, &f);
    f.error = WriteFile(*c, q, records, &f);
    if (!f.error.empty()) {
      Logf("dump %s: %s: %s", job->status.id.c_str(), f.path.c_str(), f.error.c_str());
    }
    files.push_back(std::move(f));
  }
  std::vector<std::unique_ptr<Capture>> written;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job->status.files = std::move(files);
    job->status.state = cancelled ? "cancelled" : "written";
    Logf("dump %s %s: %zu files in %s", job->status.id.c_str(), job->status.state.c_str(),
         job->status.files.size(), job->status.dir.c_str());
    // The last dump's status stays for Current(); its captures (the histories and ops copied,
    // communicator tables, names) are written and go: a dump of many ranks held hundreds of KiB
    // until the next one. The tap finds no rank to capture from here on.
    job->by_rank.clear();
    written.swap(job->captures);
  }
  size_t freed = 0;
  for (const auto& c : written) freed += c->Bytes();
  written.clear();
  aggregator_->NoteFreed(freed);
}

namespace {

bool EmptyDir(int dir_fd) {
  const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0) close(fd);
    return false;
  }
  bool empty = true;
  while (const dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = false;
  }
  closedir(d);
  return empty;
}

}  // namespace

bool GiveJobDirTo(int dir_fd, const std::string& dir, uint32_t uid, std::string* error) {
  struct stat st;
  if (fstat(dir_fd, &st) != 0) {
    *error = dir + ": " + strerror(errno);
    return false;
  }
  if (st.st_uid != uid && st.st_uid != geteuid()) {
    *error = dir + " belongs to uid " + std::to_string(st.st_uid) + ", not the job's uid " +
             std::to_string(uid) + ": choose another dump_path";
    return false;
  }
  if (st.st_uid != uid && !EmptyDir(dir_fd)) {  // the daemon's: it may hold another job's files
    *error = dir + " already holds files of another user's job: choose another dump_path";
    return false;
  }
  gid_t gid = static_cast<gid_t>(-1);
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) gid = pw.pw_gid;
  if ((st.st_uid != uid && fchown(dir_fd, uid, gid) != 0) || fchmod(dir_fd, 0700) != 0) {
    *error = dir + ": cannot give it to uid " + std::to_string(uid) + ": " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace daemon
}  // namespace xtimer
