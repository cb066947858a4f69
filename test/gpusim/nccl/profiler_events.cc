#include "test/gpusim/nccl/profiler_events.h"

#include <cstddef>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/nccl/datatypes.h"
#include "test/gpusim/sim_api_client.h"

namespace xtsim {
namespace nccl {
namespace {

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerApiState (thread-local) and its GroupApi states.
enum class GroupApiState { kIdle, kStarted, kStopped };
struct ApiState {
  int mask = 0;
  void* group_api = nullptr;
  int depth = 0;  // profilerGroupDepth
  GroupApiState state = GroupApiState::kIdle;
};
thread_local ApiState t_api;

// The masks that gate each event (NCCL 2.28.9 src/plugin/profiler.cc): an event is made when
// the mask has its own bit or the bit of an event it parents.
constexpr int kBelowTask =
    ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin;
constexpr int kCollApiMask = ncclProfileCollApi | ncclProfileColl | kBelowTask;
constexpr int kP2pApiMask = ncclProfileP2pApi | ncclProfileP2p | kBelowTask;
constexpr int kGroupApiMask = ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi |
                              ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
                              ncclProfileP2p | kBelowTask;
constexpr int kGroupMask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | kBelowTask;
constexpr int kCollMask = ncclProfileColl | kBelowTask;
constexpr int kP2pMask = ncclProfileP2p | kBelowTask;
// ncclProfilerEventState_v5_t values the header leaves undeclared (NCCL 2.28.9
// src/include/plugin/nccl_profiler.h).
constexpr int kGroupStartApiStop = 23;
constexpr int kGroupEndApiStart = 24;

// NCCL 2.28.9 src/collectives.cc ncclFuncToString, indexed by OpKind.
const char* const kFuncNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                  "AlltoAll",  "Gather",    "Scatter",       "Send",      "Recv"};

// NCCL 2.28.9 src/collectives.cc ncclDatatypeToString (which has no case for ncclUint8).
const char* DatatypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "ncclInt8";
    case ncclInt32:
      return "ncclInt32";
    case ncclUint32:
      return "ncclUint32";
    case ncclInt64:
      return "ncclInt64";
    case ncclUint64:
      return "ncclUint64";
    case ncclFloat16:
      return "ncclFloat16";
    case ncclFloat32:
      return "ncclFloat32";
    case ncclFloat64:
      return "ncclFloat64";
    case ncclBfloat16:
      return "ncclBfloat16";
    case ncclFloat8e4m3:
      return "ncclFloat8e4m3";
    case ncclFloat8e5m2:
      return "ncclFloat8e5m2";
    default:
      return "Unknown";
  }
}

void RecordGroupApi(int state) {
  const ncclProfiler_v5_t* p = Profiler();
  if (p != nullptr && t_api.group_api != nullptr) {
    p->recordEventState(t_api.group_api, static_cast<ncclProfilerEventState_v5_t>(state), nullptr);
  }
}

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerStartGroupApiEvent and
// ncclProfilerRecordGroupApiEventState(ncclProfilerGroupStartApiStop).
void StartGroupApi(ProfilerComm* comm, const ProfCall& call, int group_depth) {
  const ncclProfiler_v5_t* p = Profiler();
  t_api.mask = ProfilerEventMask();
  if (p != nullptr && (t_api.mask & kGroupApiMask) != 0 && t_api.depth == 0) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileGroupApi;
    d.groupApi.graphCaptured = call.graph_captured ? 1 : 0;
    d.groupApi.groupDepth = group_depth;
    p->startEvent(comm->context(), &t_api.group_api, &d);
    t_api.depth = group_depth;
    t_api.state = GroupApiState::kStarted;
  }
  if (t_api.state == GroupApiState::kStarted) {
    t_api.state = GroupApiState::kStopped;
    RecordGroupApi(kGroupStartApiStop);
  }
}

// NCCL 2.28.9 src/enqueue.cc p2pTaskAppend with ncclProfilerStartP2pApiEvent / StopP2pApiEvent.
ProfTask AppendP2p(ProfilerComm* comm, const ProfCall& call, int group_depth, OpKind func,
                   void* buff, int peer) {
  StartGroupApi(comm, call, group_depth);
  const ncclProfiler_v5_t* p = Profiler();
  ProfTask t;
  t.p2p = true;
  t.func = func;
  t.recvbuff = buff;
  t.count = call.count;
  t.datatype = DatatypeName(call.datatype);
  t.root = peer;
  t.mask = t_api.mask;
  t.group_api = t_api.group_api;
  size_t bytes = call.count * KernelsFor(call.datatype)->size;
  // NCCL 2.28.9 src/enqueue.cc addP2pToPlan: one channel for an empty message.
  t.n_channels = bytes == 0 ? 1 : ProfChannels();
  // addP2pToPlan: a send/recv pair with oneself has no proxy operation (nProxyOps = 0), so no
  // profiler proxy operation and no kernel channel event, though its P2p event says nChannels.
  t.proxied = peer != call.rank;
  if (p != nullptr && (t.mask & kP2pApiMask) != 0) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileP2pApi;
    d.parentObj = t_api.group_api;
    d.p2pApi.func = kFuncNames[static_cast<int>(func)];
    d.p2pApi.count = call.count;
    d.p2pApi.datatype = t.datatype;
    d.p2pApi.stream = call.stream;
    d.p2pApi.graphCaptured = call.graph_captured;
    p->startEvent(comm->context(), &t.api, &d);
    if (t.api != nullptr) p->stopEvent(t.api);
  }
  return t;
}

// NCCL 2.28.9 src/enqueue.cc collTaskAppend with ncclProfilerStartCollApiEvent / Stop. The task
// of an AllGather or Broadcast counts bytes of ncclInt8; the API event keeps the caller's values.
ProfTask AppendColl(ProfilerComm* comm, const ProfCall& call, int group_depth) {
  StartGroupApi(comm, call, group_depth);
  const ncclProfiler_v5_t* p = Profiler();
  ProfTask t;
  t.func = call.func;
  t.sendbuff = call.sendbuff;
  t.recvbuff = call.recvbuff;
  t.count = call.count;
  t.datatype = DatatypeName(call.datatype);
  if (call.func == OpKind::kAllGather || call.func == OpKind::kBroadcast) {
    t.count *= KernelsFor(call.datatype)->size;
    t.datatype = DatatypeName(ncclInt8);
  }
  t.root = call.root;
  t.mask = t_api.mask;
  t.group_api = t_api.group_api;
  t.n_channels = ProfChannels();
  if (p != nullptr && (t.mask & kCollApiMask) != 0) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileCollApi;
    d.parentObj = t_api.group_api;
    d.collApi.func = kFuncNames[static_cast<int>(call.func)];
    d.collApi.count = call.count;
    d.collApi.datatype = DatatypeName(call.datatype);
    d.collApi.stream = call.stream;
    d.collApi.root = call.root;
    d.collApi.graphCaptured = call.graph_captured;
    p->startEvent(comm->context(), &t.api, &d);
    if (t.api != nullptr) p->stopEvent(t.api);
  }
  return t;
}

char* Offset(const void* base, size_t bytes) {
  return static_cast<char*>(const_cast<void*>(base)) + bytes;
}

}  // namespace

uint8_t ProfChannels() {
  static const uint8_t n = [] {
    int64_t v = EnvInt("XTIMER_SIM_NCCL_CHANNELS", 2);
    if (v < 1 || v > 64) Fatal("XTIMER_SIM_NCCL_CHANNELS must be 1..64, not %lld", (long long)v);
    return static_cast<uint8_t>(v);
  }();
  return n;
}

bool StreamCapturing(cudaStream_t stream) {
  const XtsimApi& rt = Runtime();
  bool has = rt.struct_size >= offsetof(XtsimApi, stream_capturing) + sizeof(rt.stream_capturing);
  return has && rt.stream_capturing != nullptr && rt.stream_capturing(stream) != 0;
}

bool ProfNeedsProxy(const ProfPlan& plan) {
  for (const ProfTask& t : plan.tasks) {
    if ((t.mask & ncclProfileKernelCh) != 0) return true;
  }
  return false;
}

std::shared_ptr<ProfPlan> ProfReplayCopy(const ProfPlan& plan) {
  auto copy = std::make_shared<ProfPlan>();
  copy->comm = plan.comm;
  copy->tasks = plan.tasks;
  for (ProfTask& t : copy->tasks) t.event = nullptr;
  return copy;
}

void ProfApiEnter() {
  if (t_api.depth > 0) ++t_api.depth;
}

// NCCL 2.28.9 src/enqueue.cc taskAppend: empty collectives are dropped and a 1-rank
// communicator's collectives are copies (ncclLaunchOneRank), both before any event; AlltoAll,
// Gather and Scatter become send and receive tasks.
std::vector<ProfTask> ProfApiAppend(ProfilerComm* comm, const ProfCall& call, int group_depth) {
  std::vector<ProfTask> tasks;
  if (comm == nullptr) return tasks;
  bool p2p = call.func == OpKind::kSend || call.func == OpKind::kRecv;
  if (p2p) {
    void* buff = call.func == OpKind::kSend ? const_cast<void*>(call.sendbuff) : call.recvbuff;
    tasks.push_back(AppendP2p(comm, call, group_depth, call.func, buff, call.root));
    return tasks;
  }
  if (call.count == 0 || call.nranks == 1) return tasks;
  size_t block = call.count * KernelsFor(call.datatype)->size;
  if (call.func == OpKind::kAlltoAll) {
    for (int r = 0; r < call.nranks; ++r) {
      tasks.push_back(
          AppendP2p(comm, call, group_depth, OpKind::kSend, Offset(call.sendbuff, r * block), r));
      tasks.push_back(
          AppendP2p(comm, call, group_depth, OpKind::kRecv, Offset(call.recvbuff, r * block), r));
    }
  } else if (call.func == OpKind::kGather) {
    tasks.push_back(AppendP2p(comm, call, group_depth, OpKind::kSend,
                              const_cast<void*>(call.sendbuff), call.root));
    for (int r = 0; call.rank == call.root && r < call.nranks; ++r) {
      tasks.push_back(
          AppendP2p(comm, call, group_depth, OpKind::kRecv, Offset(call.recvbuff, r * block), r));
    }
  } else if (call.func == OpKind::kScatter) {
    for (int r = 0; call.rank == call.root && r < call.nranks; ++r) {
      tasks.push_back(
          AppendP2p(comm, call, group_depth, OpKind::kSend, Offset(call.sendbuff, r * block), r));
    }
    tasks.push_back(AppendP2p(comm, call, group_depth, OpKind::kRecv, call.recvbuff, call.root));
  } else {
    tasks.push_back(AppendColl(comm, call, group_depth));
  }
  return tasks;
}

void ProfGroupEndEnter() {
  if (t_api.depth > 0) --t_api.depth;
  if (t_api.depth == 0 && t_api.state == GroupApiState::kStopped) {
    t_api.state = GroupApiState::kIdle;
    RecordGroupApi(kGroupEndApiStart);
  }
}

void ProfGroupEndExit() {
  const ncclProfiler_v5_t* p = Profiler();
  if (p != nullptr && t_api.group_api != nullptr && t_api.depth == 0) {
    p->stopEvent(t_api.group_api);
    t_api.group_api = nullptr;
  }
}

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerStartKernelLaunchEvent: gated by the mask of the
// plan's first task that has one; parent: that task's GroupApi event.
void ProfKernelLaunchStart(ProfPlan& plan, cudaStream_t stream) {
  const ncclProfiler_v5_t* p = Profiler();
  if (p == nullptr) return;
  for (const ProfTask& t : plan.tasks) {
    if (t.mask == 0) continue;
    if ((t.mask & ncclProfileKernelLaunch) != 0) {
      ncclProfilerEventDescr_v5_t d{};
      d.type = ncclProfileKernelLaunch;
      d.parentObj = t.group_api;
      d.kernelLaunch.stream = stream;
      p->startEvent(plan.comm->context(), &plan.kernel_launch_event, &d);
    }
    return;
  }
}

void ProfKernelLaunchStop(ProfPlan& plan) {
  const ncclProfiler_v5_t* p = Profiler();
  if (p != nullptr && plan.kernel_launch_event != nullptr) p->stopEvent(plan.kernel_launch_event);
}

namespace {

void StartTaskEvent(ProfPlan& plan, ProfTask& t, bool persistent) {
  const ncclProfiler_v5_t* p = Profiler();
  ProfilerComm& comm = *plan.comm;
  ncclProfilerEventDescr_v5_t d{};
  d.parentObj = t.api;
  d.rank = comm.rank();
  if (t.p2p) {
    if ((t.mask & kP2pMask) == 0) return;
    d.type = ncclProfileP2p;
    d.p2p.parentGroup = plan.group_event;
    d.p2p.func = kFuncNames[static_cast<int>(t.func)];
    d.p2p.buff = t.recvbuff;
    d.p2p.count = t.count;
    d.p2p.datatype = t.datatype;
    d.p2p.peer = t.root;
    d.p2p.nChannels = t.n_channels;
    p->startEvent(comm.context(), &t.event, &d);
    return;
  }
  // seqNumber: the communicator's count of this function, advanced for every launched task, but
  // for a captured one only when kernel channels are profiled (RAS consistency, same function).
  bool count = !persistent || ((plan.group_event != nullptr || t.api != nullptr) &&
                               (t.mask & ncclProfileKernelCh) != 0);
  uint64_t seq = count ? comm.NextSeq(t.func) : comm.PeekSeq(t.func);
  if ((t.mask & kCollMask) == 0) return;
  d.type = ncclProfileColl;
  d.coll.parentGroup = plan.group_event;
  d.coll.seqNumber = seq;
  d.coll.func = kFuncNames[static_cast<int>(t.func)];
  d.coll.sendBuff = t.sendbuff;
  d.coll.recvBuff = t.recvbuff;
  d.coll.count = t.count;
  d.coll.root = t.root;
  d.coll.datatype = t.datatype;
  d.coll.nChannels = t.n_channels;
  d.coll.nWarps = 16;  // gpusim's choice: a ring/simple kernel of 512 threads
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  p->startEvent(comm.context(), &t.event, &d);
}

}  // namespace

void ProfPlanTask(const std::shared_ptr<ProfPlan>& plan, bool persistent) {
  const ncclProfiler_v5_t* p = Profiler();
  if (p == nullptr) return;
  // ncclProfilerStartGroupEvent: gated by the first task that has a mask.
  for (const ProfTask& t : plan->tasks) {
    if (t.mask == 0) continue;
    if ((t.mask & kGroupMask) != 0) {
      ncclProfilerEventDescr_v5_t d{};
      d.type = ncclProfileGroup;
      p->startEvent(plan->comm->context(), &plan->group_event, &d);
    }
    break;
  }
  for (ProfTask& t : plan->tasks) StartTaskEvent(*plan, t, persistent);
  plan->comm->Arm(plan);  // uploadProxyOps + ncclProxyStart
  for (ProfTask& t : plan->tasks) {
    if (t.event != nullptr) p->stopEvent(t.event);
  }
  if (plan->group_event != nullptr) p->stopEvent(plan->group_event);
}

}  // namespace nccl
}  // namespace xtsim
