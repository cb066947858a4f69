#include "daemon/model/aggregator.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <set>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/base/memory_return.h"
#include "daemon/model/aggregator_state.h"
#include "daemon/model/blocked_by.h"
#include "daemon/model/comm_progress.h"
#include "daemon/model/kernel_names.h"
#include "daemon/model/op_history.h"
#include "daemon/model/op_stats.h"
#include "daemon/model/job_scope.h"
#include "util/clock.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

// The time a valid in-flight table is known to hold: when it was read, or the hook's last
// heartbeat if older (its poller publishes the table, then beats, every cycle). A heartbeat in
// the future (a clock step, a forged ring) is ignored.
int64_t ObservedNs(const ProcessStatus& s) {
  if (s.read_ns <= 0) return 0;
  if (s.heartbeat_ns <= 0 || s.heartbeat_ns > s.read_ns) return s.read_ns;
  return s.heartbeat_ns;
}

}  // namespace

Aggregator::Aggregator(const AggregatorOptions& options, int64_t start_ns)
    : options_(options),
      start_ns_(start_ns),
      budget_(options.memory_budget_bytes, options.max_process_bytes) {
  RegisterBuiltinKinds();
  tap_ops_.reserve(1024);  // a read's ops, more than one ring read holds: grown once if not
}

Aggregator::~Aggregator() = default;

ProcessState* Aggregator::Find(ProcessId id) const {
  auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : it->second.get();
}

RankState* Aggregator::RankOfRow(const ProcessState& p, const format::InflightRow& row) {
  if (row.device >= 0 || p.ranks.size() == 1) return RankOf(p, row.device);
  for (const auto& r : p.ranks) {  // a row without a device (ring version 1)
    if (r->comms.count(row.comm_id) != 0) return r.get();
  }
  return p.ranks.front().get();
}

RankState* Aggregator::RankForComm(ProcessState* p, int device) {
  if (device < 0) return p->ranks.front().get();
  if (p->ranks.size() == 1) {
    if (p->comm_device < 0) p->comm_device = device;
    if (p->comm_device == device) return p->ranks.front().get();
    p->ranks.front()->device = p->comm_device;  // a second device: each becomes a rank
  }
  for (const auto& r : p->ranks) {
    if (r->device == device) return r.get();
  }
  if (p->ranks.size() >= options_.max_ranks_per_process || !Reserve(*p, RankBytes(options_))) {
    return p->ranks.front().get();
  }
  auto rank = std::make_unique<RankState>();
  rank->device = device;
  auto at = std::find_if(p->ranks.begin(), p->ranks.end(),
                         [device](const std::unique_ptr<RankState>& r) { return r->device > device; });
  RankState* added = p->ranks.insert(at, std::move(rank))->get();
  Charge(p, static_cast<int64_t>(RankBytes(options_)));
  return added;
}

namespace {

Claim ClaimOf(uint64_t id, uint32_t uid, const std::string& token, const format::Identity& i,
              bool live) {
  Claim c;
  c.id = id;
  c.uid = uid;
  c.token = token;
  c.job = i.job;  // as LabelSafe made them
  c.host = i.host;
  c.pod = i.pod;
  c.rank = i.rank;
  c.local_rank = i.local_rank;
  c.live = live;
  return c;
}

// The identity as the daemon keeps, compares and exports it (util/label.h): the job id under the
// job-id rule with its uid scope, host and pod under the free-text rule. Two raw identities with
// one such form are one identity (claims, control access and dumps compare these).
format::Identity LabelSafe(const format::Identity& raw) {
  format::Identity i = raw;
  i.job = SanitizeScopedJobId(raw.job);
  i.host = SanitizeLabelText(raw.host);
  i.pod = SanitizeLabelText(raw.pod);
  return i;
}

std::string PeerOf(int pid, uint32_t uid) {
  return "pid " + std::to_string(pid) + " uid " + std::to_string(uid);
}

}  // namespace

std::vector<Claim> Aggregator::ClaimsLocked(ProcessId except) const {
  std::vector<Claim> claims;
  claims.reserve(processes_.size());
  for (const auto& entry : processes_) {
    if (entry.first == except) continue;
    const ProcessState& p = *entry.second;
    claims.push_back(ClaimOf(entry.first, p.uid, p.token, p.identity, p.connected));
  }
  return claims;
}

Aggregator::ProcessId Aggregator::AddProcess(int pid, const format::Identity& identity) {
  return AddProcess(Registrant{pid, static_cast<uint32_t>(geteuid()), ""}, identity, nullptr);
}

Aggregator::ProcessId Aggregator::AddProcess(const Registrant& who,
                                             const format::Identity& raw,
                                             std::vector<ProcessId>* evicted) {
  const format::Identity identity = LabelSafe(raw);
  std::lock_guard<std::mutex> lock(mu_);
  const ClaimDecision d =
      DecideClaim(ClaimsLocked(0), ClaimOf(next_id_, who.uid, who.token, identity, true),
                  static_cast<uint32_t>(geteuid()));
  if (d.refusal != nullptr) {
    refusals_.Refuse(d.refusal, PeerOf(who.pid, who.uid) + " job " + identity.job +
                                    " rank " + std::to_string(identity.rank));
    return 0;
  }
  for (ProcessId gone : d.evict) {
    auto it = processes_.find(gone);
    if (it == processes_.end()) continue;
    refusals_.Refuse("identity_owner", PeerOf(it->second->pid, it->second->uid) +
                                           " (evicted: job " + identity.job +
                                           " belongs to uid " + std::to_string(who.uid) + ")");
    Erase(it);
    if (evicted != nullptr) evicted->push_back(gone);
  }
  auto p = std::make_unique<ProcessState>(options_.history);
  p->pid = who.pid;
  p->uid = who.uid;
  p->token = who.token;
  p->identity = identity;
  p->status.identity = identity;
  p->ranks.push_back(std::make_unique<RankState>());
  Charge(p.get(), static_cast<int64_t>(sizeof(ProcessState) + BaseBytes(options_)));
  const ProcessId id = next_id_++;
  processes_.emplace(id, std::move(p));
  ++registrations_;
  ++live_;
  EnforceBudget();
  return id;
}

void Aggregator::RemoveProcess(ProcessId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(id);
    if (it != processes_.end()) Erase(it);
  }
  MaybeTrimMalloc();
}

void Aggregator::Charge(ProcessState* p, int64_t delta) { budget_.Charge(&p->bytes, delta); }

std::map<Aggregator::ProcessId, std::unique_ptr<ProcessState>>::iterator Aggregator::Erase(
    std::map<ProcessId, std::unique_ptr<ProcessState>>::iterator it) {
  ProcessState* p = it->second.get();
  if (p->connected) --live_;
  Charge(p, -static_cast<int64_t>(p->bytes));
  return processes_.erase(it);
}

void Aggregator::NoteFreed(size_t bytes) { budget_.NoteFreed(bytes); }

void Aggregator::MaybeTrimMalloc() { budget_.MaybeReturn(MonotonicNs()); }

bool Aggregator::Reserve(const ProcessState& p, size_t bytes) {
  while (!budget_.MayGrow(p.bytes, bytes, live_)) {
    if (!DropOldestExited()) return false;
  }
  return true;
}

bool Aggregator::DropOldestExited() {
  auto oldest = processes_.end();
  for (auto it = processes_.begin(); it != processes_.end(); ++it) {
    if (it->second->connected) continue;
    if (oldest == processes_.end() || it->second->exited_ns < oldest->second->exited_ns) {
      oldest = it;
    }
  }
  if (oldest == processes_.end()) return false;
  Logf("dropping exited pid %d early: memory budget of %zu MiB reached", oldest->second->pid,
       options_.memory_budget_bytes >> 20);
  Erase(oldest);
  return true;
}

void Aggregator::EnforceBudget() {
  while (budget_.AboveHighWater() && DropOldestExited()) {
  }
  while (budget_.AboveHighWater()) {
    // Halve the longest history, dropping its oldest chunks; one chunk always stays.
    ProcessState* longest = nullptr;
    for (auto& entry : processes_) {
      ProcessState* p = entry.second.get();
      if (p->history.chunks() > 1 &&
          (longest == nullptr || p->history.chunks() > longest->history.chunks())) {
        longest = p;
      }
    }
    if (longest == nullptr) return;
    ChargeHistory(longest, longest->history.HalveForBudget());
  }
}

void Aggregator::ChargeHistory(ProcessState* p, const OpHistory::Change& change) {
  const int64_t delta = budget_.NoteHistory(change);
  if (delta != 0) Charge(p, delta);
}

void Aggregator::AppendHistory(ProcessState* p, const format::OpRecord& r) {
  const OpHistory::Change change =
      p->history.Append(r, [this, p] { return Reserve(*p, OpHistory::kChunkBytes); });
  if (change.allocated != 0 || change.freed != 0 || change.shrunk != 0) ChargeHistory(p, change);
}

void Aggregator::MarkExited(ProcessId id, const ExitCause& cause, int64_t now_ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(id);
    if (it == processes_.end() || !it->second->connected) return;
    ProcessState* p = it->second.get();
    if (options_.exited_grace_ns <= 0) {
      Erase(it);
    } else {
      --live_;
      p->connected = false;
      p->exit_cause = cause;
      p->exited_ns = now_ns;
      EnforceExitedBounds();
      EnforceBudget();
    }
  }
  MaybeTrimMalloc();
}

void Aggregator::SetCrashFrame(ProcessId id, const std::string& frame) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = processes_.find(id);
  if (it != processes_.end()) it->second->crash_frame = frame.substr(0, kMaxCrashFrameBytes);
}

void Aggregator::EnforceExitedBounds() {
  for (;;) {
    size_t count = 0, bytes = 0;
    auto oldest = processes_.end();
    for (auto it = processes_.begin(); it != processes_.end(); ++it) {
      const ProcessState& p = *it->second;
      if (p.connected) continue;
      ++count;
      bytes += p.bytes;
      if (oldest == processes_.end() || p.exited_ns < oldest->second->exited_ns) oldest = it;
    }
    if (count == 0 || (count <= options_.max_exited && bytes <= options_.max_exited_bytes)) return;
    Logf("dropping exited pid %d early (%zu exited processes kept, about %zu MiB; limits %zu and "
         "%zu MiB)",
         oldest->second->pid, count, bytes >> 20, options_.max_exited,
         options_.max_exited_bytes >> 20);
    Erase(oldest);
  }
}

size_t Aggregator::ExpireExited(int64_t now_ns) {
  size_t removed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = processes_.begin(); it != processes_.end();) {
      const ProcessState& p = *it->second;
      if (!p.connected && now_ns - p.exited_ns >= options_.exited_grace_ns) {
        it = Erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
  }
  MaybeTrimMalloc();
  return removed;
}

bool Aggregator::Connected(ProcessId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = Find(id);
  return p != nullptr && p->connected;
}

void Aggregator::RefuseRegistration(const std::string& cause, const std::string& peer) {
  refusals_.Refuse(cause, peer);
}

size_t Aggregator::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_.total();
}

uint64_t Aggregator::history_chunks_allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_.history_chunks_allocated();
}

uint64_t Aggregator::memory_returns() const { return budget_.returns(); }

size_t Aggregator::process_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_.size();
}

bool Aggregator::UpdateStatus(ProcessId id, const ProcessStatus& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = Find(id);
  if (p == nullptr || !p->connected) return p != nullptr;
  format::Identity identity = status.identity;  // the job, host, pod, op log stay as registered
  identity.job = p->identity.job;
  identity.host = p->identity.host;
  identity.pod = p->identity.pod;
  identity.op_log = p->identity.op_log;
  if (identity.rank != p->identity.rank || identity.local_rank != p->identity.local_rank) {
    const ClaimDecision d =
        DecideClaim(ClaimsLocked(id), ClaimOf(id, p->uid, p->token, identity, true),
                    static_cast<uint32_t>(geteuid()), /*job_level=*/false);
    if (d.refusal != nullptr) {
      refusals_.Refuse(d.refusal, PeerOf(p->pid, p->uid) + " job " +
                                      identity.job + " rank " +
                                      std::to_string(identity.rank) + " (removed)");
      Erase(processes_.find(id));
      return false;
    }
  }
  p->identity = identity;
  p->status.identity = identity;
  p->status.written = status.written;
  p->status.dropped = status.dropped;
  std::copy(std::begin(status.untimed), std::end(status.untimed), std::begin(p->status.untimed));
  p->status.hook_own_ns = status.hook_own_ns;
  p->status.timing = status.timing;
  p->status.invalid = status.invalid;
  p->status.lost = status.lost;
  p->status.fill = std::min(1.0, std::max(0.0, status.fill));
  p->status.heartbeat_ns = status.heartbeat_ns;
  if (!status.inflight_valid) return true;
  p->status.observed_ns = ObservedNs(status);
  for (auto& rank : p->ranks) {
    for (auto& c : rank->comms) c.second.has_row = false;
  }
  const size_t rows = std::min<size_t>(status.inflight.size(), format::kMaxInflight);
  for (size_t i = 0; i < rows; ++i) {
    const format::InflightRow& row = status.inflight[i];
    CommState* c = FindOrAddComm(&RankOfRow(*p, row)->comms, row.comm_id,
                            options_.max_comms_per_process + 1);
    if (c == nullptr) continue;
    if (c->has_row) {
      MergeRow(row, &c->row);
    } else {
      c->row = row;
    }
    c->has_row = true;
  }
  return true;
}

void Aggregator::MarkHidden(Snapshot* snap) const {
  // Label conflicts: live processes claim their labels first (in registration order), so a rank
  // restarted after a crash is exported and its exited predecessor is hidden.
  std::set<std::string> seen;
  for (int pass = 0; pass < 2; ++pass) {
    for (ProcessSnapshot& ps : snap->processes) {
      if (ps.exited == (pass == 0)) continue;
      const std::string key = ps.job + '\0' + ps.host + '\0' + ps.pod + '\0' +
                              std::to_string(ps.rank) + '\0' + std::to_string(ps.local_rank);
      if (seen.insert(key).second) continue;
      ps.hidden = true;
      if (ps.exited) continue;
      ++snap->identity_conflicts;
      const ProcessState* p = Find(ps.id);
      if (p != nullptr && !p->conflict_logged) {
        p->conflict_logged = true;
        Logf("pid %d has the same job/host/pod/rank/local_rank as another live process "
             "(rank %d); its series are not exported",
             ps.pid, ps.rank);
      }
    }
  }
}

void Aggregator::SnapshotRanks(const ProcessState& p, const ProcessSnapshot& base, int64_t now_ns,
                               bool with_series, std::vector<int64_t>* scratch,
                               std::vector<ProcessSnapshot>* out) const {
  const int64_t at_ns = base.observed_ns;
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    const RankState& rank = *p.ranks[i];
    ProcessSnapshot ps = base;
    ps.first_rank = i == 0;
    ps.unaggregated = rank.unaggregated;
    if (p.ranks.size() > 1) {
      ps.device = rank.device;
      ps.local_rank = rank.device;
      uint64_t naming_id = 0;
      if (const CommState* c = NamingComm(rank.comms, &naming_id)) {
        ps.rank = c->comm_rank;
        ps.world_size = c->comm_size;
      }
    }
    std::vector<uint64_t> keys;
    if (with_series) {
      keys.reserve(rank.series.size());
      rank.series.ForEach([&keys](uint64_t key, const Series&) { keys.push_back(key); });
    }
    std::sort(keys.begin(), keys.end());
    ps.series.reserve(keys.size());
    for (uint64_t k : keys) {
      const Series& s = *rank.series.Find(k);
      SeriesSnapshot ss;
      ss.kind = s.kind;
      ss.op = s.op;
      ss.dtype = s.dtype;
      ss.size_class = s.size_class;
      ss.count = s.count;
      ss.seconds = static_cast<double>(s.sum_ns) * 1e-9;
      ss.bytes = s.bytes;
      ss.flop = s.flop;
      ss.window = s.window.Compute(now_ns, scratch);
      ps.series.push_back(ss);
    }
    std::vector<uint64_t> comm_ids;
    for (const auto& c : rank.comms) comm_ids.push_back(c.first);
    std::sort(comm_ids.begin(), comm_ids.end());
    for (uint64_t cid : comm_ids) {
      const CommState& c = rank.comms.at(cid);
      CommSnapshot cs;
      cs.comm_id = cid;
      cs.last_completed_seq = c.completed_seq;
      if (c.has_row) {
        cs.last_completed_seq = std::max(cs.last_completed_seq, c.row.last_completed_seq);
        cs.last_issued_seq = c.row.last_issued_seq;
        cs.oldest_launch_ns = c.row.oldest_launch_ns;
        cs.device = c.row.device;
        cs.inflight = c.row.oldest;
        if (cs.inflight.state == format::InflightState::kQueued) {
          const format::InflightBlocker& b = cs.inflight.blocker;
          std::string name;
          if (b.name_id != 0) {
            if (const std::string* n = p.names.Find(b.name_id)) name = SanitizeLabelText(*n);
          }
          cs.blocked_by = DescribeBlocker(b, name, at_ns);
        }
      }
      cs.last_issued_seq = std::max(cs.last_issued_seq, cs.last_completed_seq);
      cs.last_completed_ns = c.last_completed_ns;
      cs.comm_rank = c.comm_rank;
      cs.comm_size = c.comm_size;
      cs.parent_id = c.parent_id;
      ps.comms.push_back(cs);
    }
    out->push_back(std::move(ps));
  }
}

Snapshot Aggregator::TakeSnapshot(int64_t now_ns, bool with_series) const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot snap;
  snap.registrations = registrations_;
  snap.registrations_refused = refusals_.counts();
  for (const auto& c : snap.registrations_refused) snap.registrations_rejected += c.second;
  snap.memory_bytes = budget_.total();
  snap.memory_budget_bytes = budget_.budget();
  snap.history_shrinks = budget_.history_shrinks();
  snap.start_ns = start_ns_;
  snap.now_ns = now_ns;
  std::vector<int64_t> scratch;
  snap.processes.reserve(processes_.size());
  for (const auto& entry : processes_) {
    const ProcessState& p = *entry.second;
    ProcessSnapshot ps;
    ps.id = entry.first;
    ps.pid = p.pid;
    ps.uid = p.uid;
    ps.job = p.identity.job;
    ps.host = p.identity.host;
    ps.pod = p.identity.pod;
    ps.rank = p.identity.rank;
    ps.local_rank = p.identity.local_rank;
    ps.world_size = p.identity.world_size;
    ps.op_log = p.identity.op_log;
    ps.exited = !p.connected;
    ps.exit_cause = p.exit_cause;
    ps.exited_ns = p.exited_ns;
    ps.crash_frame = p.crash_frame;
    if (p.connected) {
      ++snap.connected;
    } else {
      ++snap.exited;
    }
    ps.written = p.status.written;
    ps.dropped = p.status.dropped;
    std::copy(std::begin(p.status.untimed), std::end(p.status.untimed), std::begin(ps.untimed));
    ps.hook_own_ns = p.status.hook_own_ns;
    ps.timing = p.status.timing;
    ps.invalid = p.status.invalid;
    ps.lost = p.status.lost;
    ps.fill = p.status.fill;
    ps.heartbeat_ns = p.status.heartbeat_ns;
    // An exited process is frozen at its exit; in-flight ages run up to the last time its table
    // was seen (a reader or poller that stalls makes no hang).
    ps.observed_ns = p.connected ? now_ns : std::min(now_ns, p.exited_ns);
    if (p.status.observed_ns > 0) ps.observed_ns = std::min(ps.observed_ns, p.status.observed_ns);
    ps.up = p.connected &&
            (options_.stale_heartbeat_ns <= 0 ||
             AgeSeconds(now_ns, p.status.heartbeat_ns) * 1e9 <
                 static_cast<double>(options_.stale_heartbeat_ns));
    ps.history = p.history.size();
    SnapshotRanks(p, ps, now_ns, with_series, &scratch, &snap.processes);
  }
  MarkHidden(&snap);
  return snap;
}

int Aggregator::AddOpTap(OpTap tap) {
  std::lock_guard<std::mutex> lock(mu_);
  taps_.emplace_back(next_tap_, std::move(tap));
  return next_tap_++;
}

void Aggregator::RemoveOpTap(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  taps_.erase(std::remove_if(taps_.begin(), taps_.end(),
                             [id](const std::pair<int, OpTap>& t) { return t.first == id; }),
              taps_.end());
}

std::vector<format::OpRecord> Aggregator::History(ProcessId id, uint64_t* end_seq,
                                                  int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<format::OpRecord> out;
  ProcessState* p = Find(id);
  if (end_seq != nullptr) *end_seq = p == nullptr ? 0 : p->ops_seen;
  if (p == nullptr) return out;
  const bool all = device == kAllDevices || p->ranks.size() == 1;
  out.reserve(p->history.size());
  p->history.ForEach([&](const format::OpRecord& r) {
    if (all || RankOf(*p, r.device)->device == device) out.push_back(r);
  });
  return out;
}

std::string Aggregator::KernelName(ProcessId id, uint32_t name_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = Find(id);
  if (p == nullptr) return "";
  const std::string* name = p->names.Find(name_id);
  return name == nullptr ? "" : *name;
}

}  // namespace daemon
}  // namespace xtimer
