// ncclGroupStart / ncclGroupEnd: per-thread deferral of operations and communicator creation.
//
// Between the outermost GroupStart and GroupEnd of a thread, operations are validated and kept;
// communicator creations (init, split, shrink) have already published themselves, so that one
// thread may create several ranks. GroupEnd first completes every creation, advancing all of them
// in turn (one rank's creation may wait for another rank's of the same thread), then launches
// the operations (ops.h). An error inside the group discards its operations and is returned again
// by GroupEnd, as in the real NCCL.
#ifndef XTIMER_TEST_GPUSIM_NCCL_GROUP_H_
#define XTIMER_TEST_GPUSIM_NCCL_GROUP_H_

#include <nccl.h>

#include <memory>
#include <string>

#include "test/gpusim/nccl/comm.h"
#include "test/gpusim/nccl/ops.h"

namespace xtsim {
namespace nccl {

bool InGroup();
// The calling thread's ncclGroupStart nesting depth (0 outside a group).
int GroupDepth();
void GroupStart();
// Ends a group level. At the outermost level completes creations and launches (or, with
// `sim_info`, only estimates) the operations. *error is set when the result is an error. The
// profiler's group-API events frame it as NCCL 2.28.9's ncclGroupEndInternal (profiler_events.h);
// ncclGroupSimulateEnd launches nothing, so it makes no launch or kernel-channel events.
ncclResult_t GroupEnd(ncclSimInfo_t* sim_info, std::string* error);

// Inside a group: keep an operation / a creation for GroupEnd, or remember an error.
void DeferOp(Op op);
void DeferCreation(std::shared_ptr<Comm> comm);
void RecordGroupError(ncclResult_t error, const std::string& message);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_GROUP_H_
