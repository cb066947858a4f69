// Handlers behind the NCCL shims that are more than "time one call": groups, communicator
// lifecycle, sequence numbers; and the kernel-handle map behind __cudaGetKernel.
#ifndef XTIMER_HOOK_NCCL_HANDLERS_H_
#define XTIMER_HOOK_NCCL_HANDLERS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "hook/recorder.h"

// CUDA 13's launch path for nvcc-built programs. Declared (as in crt/device_functions.h, which
// only nvcc-compiled code may include) so that the shims are typed like the other entries.
extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function);
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_mem, cudaStream_t stream);

namespace xtimer {
namespace hook {

// The registry entry of `comm` (resolving its rank/size if still pending), or null.
CommEntry* LookupComm(const void* comm);
// Inside ncclGroupStart/End on this thread.
bool InGroup();
// The next collective (or per-peer p2p) sequence number of d->comm.
void AssignSeq(OpDesc* d);
// The sequence number AssignSeq will give `d` if nothing else takes one first (the budget decides
// before the call).
uint64_t UpcomingSeq(const OpDesc& d);
// Keeps a group member until the outermost ncclGroupEnd times the group.
void AddGroupMember(const OpDesc& d);

ncclResult_t OnGroupStart(decltype(&::ncclGroupStart) real);
ncclResult_t OnGroupEnd(decltype(&::ncclGroupEnd) real);
ncclResult_t OnCommInitRank(decltype(&::ncclCommInitRank) real, ncclComm_t* comm, int nranks,
                            ncclUniqueId id, int rank);
ncclResult_t OnCommInitRankConfig(decltype(&::ncclCommInitRankConfig) real, ncclComm_t* comm,
                                  int nranks, ncclUniqueId id, int rank, ncclConfig_t* config);
ncclResult_t OnCommInitRankScalable(decltype(&::ncclCommInitRankScalable) real,
                                    ncclComm_t* comm, int nranks, int rank, int n_ids,
                                    ncclUniqueId* ids, ncclConfig_t* config);
ncclResult_t OnCommInitAll(decltype(&::ncclCommInitAll) real, ncclComm_t* comms, int ndev,
                           const int* devlist);
ncclResult_t OnCommSplit(decltype(&::ncclCommSplit) real, ncclComm_t comm, int color, int key,
                         ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t OnCommShrink(decltype(&::ncclCommShrink) real, ncclComm_t comm, int* exclude,
                          int exclude_count, ncclComm_t* newcomm, ncclConfig_t* config,
                          int flags);
// Destroy and Abort: the communicator is forgotten before the real call.
ncclResult_t OnCommEnd(ncclResult_t (*real)(ncclComm_t), ncclComm_t comm);

cudaError_t OnGetKernel(decltype(&::__cudaGetKernel) real, cudaKernel_t* kernel,
                        const void* function);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_NCCL_HANDLERS_H_
