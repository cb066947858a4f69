#include "test/gpusim/nccl/group.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "test/gpusim/nccl/backoff.h"
#include "test/gpusim/nccl/profiler_events.h"

namespace xtsim {
namespace nccl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<Op> ops;
  std::vector<std::shared_ptr<Comm>> creations;
  ncclResult_t error = ncclSuccess;
  std::string error_message;
};

thread_local GroupState t_group;

bool UsedBy(const Comm* comm, const std::vector<Op>& ops) {
  return std::any_of(ops.begin(), ops.end(), [&](const Op& op) { return op.comm.get() == comm; });
}

// Advances every creation in turn until each is done, except non-blocking ones that no operation
// of the group needs: those may finish later (ncclCommGetAsyncError polls them).
ncclResult_t CompleteCreations(std::vector<std::shared_ptr<Comm>> pending,
                               const std::vector<Op>& ops, std::string* error) {
  ncclResult_t result = ncclSuccess;
  Backoff backoff;
  while (!pending.empty()) {
    bool progressed = false, must_wait = false;
    for (auto it = pending.begin(); it != pending.end();) {
      ncclResult_t r = (*it)->TryAdvance();
      if (r == ncclInProgress) {
        must_wait |= (*it)->blocking() || UsedBy(it->get(), ops);
        ++it;
        continue;
      }
      if (r != ncclSuccess && result == ncclSuccess) {
        result = r;
        *error = (*it)->error();
      }
      it = pending.erase(it);
      progressed = true;
    }
    if (!must_wait) return pending.empty() || result != ncclSuccess ? result : ncclInProgress;
    if (progressed) {
      backoff.Reset();
    } else {
      backoff.Pause();
    }
  }
  return result;
}

}  // namespace

bool InGroup() { return t_group.depth > 0; }

int GroupDepth() { return t_group.depth; }

void GroupStart() { ++t_group.depth; }

void DeferOp(Op op) { t_group.ops.push_back(std::move(op)); }

void DeferCreation(std::shared_ptr<Comm> comm) { t_group.creations.push_back(std::move(comm)); }

void RecordGroupError(ncclResult_t error, const std::string& message) {
  if (t_group.error != ncclSuccess) return;
  t_group.error = error;
  t_group.error_message = message;
}

namespace {

ncclResult_t EndOutermost(ncclSimInfo_t* sim_info, std::string* error) {
  GroupState group = std::move(t_group);
  t_group = GroupState{};
  ncclResult_t created = CompleteCreations(std::move(group.creations), group.ops, error);
  if (group.error != ncclSuccess) {
    *error = group.error_message;
    return group.error;
  }
  if (created != ncclSuccess && created != ncclInProgress) return created;
  // Operations may use communicators created earlier, non-blocking and not finished yet.
  for (const Op& op : group.ops) {
    if (op.comm->state() == Comm::State::kReady) continue;
    ncclResult_t r = op.comm->Wait();
    if (r != ncclSuccess) {
      *error = "a communicator used in the group failed to initialise: " + op.comm->error();
      return r;
    }
  }
  if (sim_info != nullptr) {
    sim_info->estimatedTime = static_cast<float>(EstimateMicroseconds(group.ops));
    return created;
  }
  ncclResult_t launched = Launch(std::move(group.ops), error);
  return launched != ncclSuccess ? launched : created;
}

}  // namespace

ncclResult_t GroupEnd(ncclSimInfo_t* sim_info, std::string* error) {
  if (t_group.depth == 0) {
    *error = "ncclGroupEnd without a matching ncclGroupStart";
    ProfGroupEndExit();
    return ncclInvalidUsage;
  }
  ProfGroupEndEnter();
  ncclResult_t r = --t_group.depth > 0 ? ncclSuccess : EndOutermost(sim_info, error);
  ProfGroupEndExit();
  return r;
}

}  // namespace nccl
}  // namespace xtsim
