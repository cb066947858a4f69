// Fault injection at NCCL calls (XTIMER_SIM_HANG, XTIMER_SIM_NCCL_ERROR, XTIMER_SIM_CRASH), and
// on the stream (XTIMER_SIM_STUCK; the slow link is part of the time model). See docs/gpusim-nccl.md for the knobs. "Rank" is the
// communicator member's global rank (Comm::global_rank); counts are of collective calls, 1-based,
// taken at the host call once the arguments are valid.
#ifndef XTIMER_TEST_GPUSIM_NCCL_FAULTS_H_
#define XTIMER_TEST_GPUSIM_NCCL_FAULTS_H_

#include <nccl.h>

#include <cstdint>
#include <vector>

namespace xtsim {
namespace nccl {

// Counts one collective call of `global_rank` that is its `comm_call`-th on the communicator
// created `comm_index`-th in this process. Crashes (SIGSEGV) or blocks forever when a knob says
// so; returns the injected error, or ncclSuccess.
ncclResult_t OnCollectiveCall(int global_rank, int comm_index, int64_t comm_call);

// XTIMER_SIM_STUCK=R:N[:C]: whether the collective with 0-based sequence `seq` on a communicator
// whose members have the global ranks `members`, created `comm_index`-th in this process, is the
// Nth on a communicator holding rank R (the C-th created, with C): every member then enters it
// and none completes it.
bool StuckCollective(const std::vector<int>& members, int comm_index, uint64_t seq);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_FAULTS_H_
