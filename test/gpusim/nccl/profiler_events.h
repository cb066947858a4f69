// The profiler events the application's calls produce, where and in the order NCCL 2.28.9 makes
// them (the source is cited per function; docs/gpusim-nccl.md, "Profiler plugin", lists the
// sequence). The API events (GroupApi, CollApi, P2pApi) come from the calling thread inside the
// NCCL call; the launch events (KernelLaunch, Group, Coll, P2p) from the thread that launches the
// group; kernel channels from the communicator's proxy thread (profiler_plugin.h).
#ifndef XTIMER_TEST_GPUSIM_NCCL_PROFILER_EVENTS_H_
#define XTIMER_TEST_GPUSIM_NCCL_PROFILER_EVENTS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "test/gpusim/nccl/profiler_plugin.h"

namespace xtsim {
namespace nccl {

// What one NCCL API call asks for, as the API events describe it.
struct ProfCall {
  OpKind func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t datatype;
  int root;  // root or peer
  int nranks;
  int rank;
  cudaStream_t stream;
  bool graph_captured;
};

// ncclEnqueueCheck, before its implicit ncclGroupStartInternal (NCCL 2.28.9 src/enqueue.cc).
void ProfApiEnter();
// taskAppend (NCCL 2.28.9 src/enqueue.cc): the tasks `call` becomes, each with its API events
// (the outermost GroupApi event on the first, then a CollApi or P2pApi event started and stopped).
// `group_depth` is ncclGroupDepth inside the call (the user's depth + 1). None for a collective of
// count 0 or on a 1-rank communicator (NCCL launches no kernel for those).
std::vector<ProfTask> ProfApiAppend(ProfilerComm* comm, const ProfCall& call, int group_depth);
// ncclGroupEndInternal's start and end (NCCL 2.28.9 src/group.cc): GroupEndApiStart when the
// outermost group ends, and the GroupApi event's stop.
void ProfGroupEndEnter();
void ProfGroupEndExit();

// The kernel-channel count of a task: XTIMER_SIM_NCCL_CHANNELS (default 2, 1..64).
uint8_t ProfChannels();

// Whether work enqueued on `stream` now is captured into a graph (NCCL 2.28.9 src/enqueue.cc
// ncclPlannerSetCapturingGraph).
bool StreamCapturing(cudaStream_t stream);

// Whether a plan has proxy work: a task that profiles kernel channels (NCCL 2.28.9
// src/plugin/profiler.cc ncclProfilerNeedsProxy). Without, nothing reaches the proxy thread.
// Captured into a graph, such a plan makes its task events at every graph launch, from a host
// function captured with the kernel (src/enqueue.cc ncclLaunchPrepare ->
// cudaLaunchHostFunc(hostStreamPlanCallback)); a plan without proxy work makes them once, at
// capture. ReplayCopy: the plan as a graph launch starts it (same tasks and API handles).
bool ProfNeedsProxy(const ProfPlan& plan);
std::shared_ptr<ProfPlan> ProfReplayCopy(const ProfPlan& plan);

// NCCL 2.28.9 src/enqueue.cc ncclLaunchKernel: the KernelLaunch event around the kernel launch.
void ProfKernelLaunchStart(ProfPlan& plan, cudaStream_t stream);
void ProfKernelLaunchStop(ProfPlan& plan);
// NCCL 2.28.9 src/enqueue.cc hostStreamPlanTask: Group and task (Coll, P2p) events start, the
// proxy gets the plan, the task events and the Group event stop. `persistent`: a captured plan.
void ProfPlanTask(const std::shared_ptr<ProfPlan>& plan, bool persistent);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_PROFILER_EVENTS_H_
