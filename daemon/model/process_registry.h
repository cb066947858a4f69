// The registered processes (docs/daemon.md): their ids, who may hold an identity (claims,
// daemon/model/identity_claims.h) and the refusals counted by cause, exits and how long exited
// processes are kept, and the memory budget's enforcement (docs/daemon.md "Memory budget"): it is
// the one that drops processes, so it charges, reserves and sheds. It owns each ProcessState; the
// rank model fills them and the snapshot builder reads them.
//
// Thread safety: none of its own (the budget's returner aside); the aggregator's lock guards it.
#ifndef XTIMER_DAEMON_MODEL_PROCESS_REGISTRY_H_
#define XTIMER_DAEMON_MODEL_PROCESS_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/base/refusal_log.h"
#include "daemon/model/aggregator_options.h"
#include "daemon/model/identity_claims.h"
#include "daemon/model/memory_budget.h"
#include "daemon/model/process_state.h"
#include "daemon/model/snapshot.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {

class ProcessRegistry {
 public:
  using Processes = std::map<ProcessId, std::unique_ptr<ProcessState>>;

  explicit ProcessRegistry(const AggregatorOptions& options);

  // Registers a process under `identity`, kept in its label-safe form (util/label.h), unless the
  // claims refuse it: then 0, and the refusal is counted. Holders of another uid that a privileged
  // registrant takes the job from are removed and appended to *evicted (may be null).
  ProcessId Add(const Registrant& who, const format::Identity& identity,
                std::vector<ProcessId>* evicted);
  // Forgets the process at once (no-op for an unknown id).
  void Remove(ProcessId id);
  // The process's connection closed: kept, frozen, for the grace period (removed at once when
  // it is 0); the exited bounds and the budget are applied.
  void MarkExited(ProcessId id, const ExitCause& cause, int64_t now_ns);
  // Removes exited processes past their grace period; returns how many.
  size_t ExpireExited(int64_t now_ns);
  // Whether process `id` may take the rank of `identity` (its job, host and pod as registered):
  // false when the claims refuse it, and then it is removed and the refusal counted.
  bool ClaimRank(ProcessId id, const format::Identity& identity);
  // Counts and logs (rate-limited) a registration refused with `cause`; `peer`: "pid P uid U".
  void Refuse(const std::string& cause, const std::string& peer) { refusals_.Refuse(cause, peer); }

  ProcessState* Find(ProcessId id) const;
  const Processes& processes() const { return processes_; }
  uint64_t registrations() const { return registrations_; }
  const RefusalLog& refusals() const { return refusals_; }

  // The memory budget. Charge adds `delta` (may be negative) to p's and the total estimate.
  // Reserve is MayGrow for p, dropping exited processes (oldest exit first) while that makes room.
  // EnforceBudget, above the high-water mark, drops exited processes oldest first, then halves the
  // longest histories (oldest records first). AppendHistory appends one record to p's history,
  // shrinking it oldest first rather than growing past the budget.
  void Charge(ProcessState* p, int64_t delta) { budget_.Charge(&p->bytes, delta); }
  bool Reserve(const ProcessState& p, size_t bytes);
  void EnforceBudget();
  void AppendHistory(ProcessState* p, const format::OpRecord& r);
  MemoryBudget& budget() { return budget_; }
  const MemoryBudget& budget() const { return budget_; }

 private:
  // The identity claims of every process but `except`.
  std::vector<Claim> ClaimsExcept(ProcessId except) const;
  Processes::iterator Erase(Processes::iterator it);
  // Drops the exited process that exited first; false when there is none.
  bool DropOldestExited();
  // Drops the oldest exited processes while there are too many or they hold too much memory.
  void EnforceExitedBounds();
  void ChargeHistory(ProcessState* p, const OpHistory::Change& change);

  const AggregatorOptions options_;
  ProcessId next_id_ = 1;
  Processes processes_;
  uint64_t registrations_ = 0;
  size_t live_ = 0;  // connected processes
  MemoryBudget budget_;
  RefusalLog refusals_{"registration"};
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_PROCESS_REGISTRY_H_
