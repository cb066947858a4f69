#include "daemon/model/process_registry.h"

#include <unistd.h>

#include <utility>

#include "daemon/base/log.h"
#include "daemon/model/job_scope.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
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

ProcessRegistry::ProcessRegistry(const AggregatorOptions& options)
    : options_(options), budget_(options.memory_budget_bytes, options.max_process_bytes) {}

ProcessState* ProcessRegistry::Find(ProcessId id) const {
  auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : it->second.get();
}

std::vector<Claim> ProcessRegistry::ClaimsExcept(ProcessId except) const {
  std::vector<Claim> claims;
  claims.reserve(processes_.size());
  for (const auto& entry : processes_) {
    if (entry.first == except) continue;
    const ProcessState& p = *entry.second;
    claims.push_back(ClaimOf(entry.first, p.uid, p.token, p.identity, p.connected));
  }
  return claims;
}

ProcessId ProcessRegistry::Add(const Registrant& who, const format::Identity& raw,
                               std::vector<ProcessId>* evicted) {
  const format::Identity identity = LabelSafe(raw);
  const ClaimDecision d =
      DecideClaim(ClaimsExcept(0), ClaimOf(next_id_, who.uid, who.token, identity, true),
                  static_cast<uint32_t>(geteuid()));
  if (d.refusal != nullptr) {
    refusals_.Refuse(d.refusal, PeerOf(who.pid, who.uid) + " job " + identity.job + " rank " +
                                    std::to_string(identity.rank));
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
  auto p = std::make_unique<ProcessState>(options_.history, options_.nvtx_history);
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

bool ProcessRegistry::ClaimRank(ProcessId id, const format::Identity& identity) {
  ProcessState* p = Find(id);
  if (p == nullptr) return false;
  const ClaimDecision d =
      DecideClaim(ClaimsExcept(id), ClaimOf(id, p->uid, p->token, identity, true),
                  static_cast<uint32_t>(geteuid()), /*job_level=*/false);
  if (d.refusal == nullptr) return true;
  refusals_.Refuse(d.refusal, PeerOf(p->pid, p->uid) + " job " + identity.job + " rank " +
                                  std::to_string(identity.rank) + " (removed)");
  Erase(processes_.find(id));
  return false;
}

void ProcessRegistry::Remove(ProcessId id) {
  auto it = processes_.find(id);
  if (it != processes_.end()) Erase(it);
}

ProcessRegistry::Processes::iterator ProcessRegistry::Erase(Processes::iterator it) {
  ProcessState* p = it->second.get();
  if (p->connected) --live_;
  Charge(p, -static_cast<int64_t>(p->bytes));
  return processes_.erase(it);
}

void ProcessRegistry::MarkExited(ProcessId id, const ExitCause& cause, int64_t now_ns) {
  auto it = processes_.find(id);
  if (it == processes_.end() || !it->second->connected) return;
  if (options_.exited_grace_ns <= 0) {
    Erase(it);
    return;
  }
  ProcessState* p = it->second.get();
  --live_;
  p->connected = false;
  p->exit_cause = cause;
  p->exited_ns = now_ns;
  EnforceExitedBounds();
  EnforceBudget();
}

size_t ProcessRegistry::ExpireExited(int64_t now_ns) {
  size_t removed = 0;
  for (auto it = processes_.begin(); it != processes_.end();) {
    const ProcessState& p = *it->second;
    if (!p.connected && now_ns - p.exited_ns >= options_.exited_grace_ns) {
      it = Erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

void ProcessRegistry::EnforceExitedBounds() {
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

bool ProcessRegistry::Reserve(const ProcessState& p, size_t bytes) {
  while (!budget_.MayGrow(p.bytes, bytes, live_)) {
    if (!DropOldestExited()) return false;
  }
  return true;
}

bool ProcessRegistry::DropOldestExited() {
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

void ProcessRegistry::EnforceBudget() {
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

void ProcessRegistry::ChargeHistory(ProcessState* p, const OpHistory::Change& change) {
  const int64_t delta = budget_.NoteHistory(change);
  if (delta != 0) Charge(p, delta);
}

void ProcessRegistry::AppendHistory(ProcessState* p, const format::OpRecord& r) {
  const OpHistory::Change change =
      p->history.Append(r, [this, p] { return Reserve(*p, OpHistory::kChunkBytes); });
  if (change.allocated != 0 || change.freed != 0 || change.shrunk != 0) ChargeHistory(p, change);
}

}  // namespace daemon
}  // namespace xtimer
