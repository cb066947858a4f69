// A profiler plugin (NCCL's interface v5) for profiler_test: it records every call NCCL makes,
// one line each, appended to the file named by XTSIM_TEST_PROFILER_LOG:
//
//   init ctx=C commId=H name=NAME nNodes=N nranks=N rank=R mask=M tid=T
//   start id=E type=TYPE parent=P ctx=C tid=T [the descriptor's fields as key=value]
//   record id=E state=S pTimer=NS tid=T
//   stop id=E tid=T [first=V: for a kernel channel, the first float of its parent's recvBuff]
//   finalize ctx=C tid=T
//
// Event and context ids are 1, 2, ... (parent=0: no parent or not one of ours). Events are kept
// until the library is unloaded, so a parent stays readable after its stop, as a plugin must keep
// it for its kernel channels.
//   XTSIM_TEST_PROFILER_MASK: the activation mask it sets (default: the API, launch, group, task
//     and kernel-channel events); XTSIM_TEST_PROFILER_INIT_FAIL=1: init() fails (no context);
//     XTSIM_TEST_PROFILER_READ=1: read `first` (only where no later operation writes the buffer).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "third_party/nccl_profiler/nccl_profiler_v5.h"

namespace {

struct Event {
  int id;
  uint64_t type;
  const Event* parent;
  const void* recvbuff;  // Coll: recvBuff; P2p: buff
  const char* datatype;
};

// Events and contexts live until the library is unloaded (after the last finalize()).
std::mutex g_mu;
std::deque<Event> g_events;
std::deque<int> g_contexts;
int g_fd = -1;

long Tid() { return syscall(SYS_gettid); }

__attribute__((format(printf, 1, 2))) void Log(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = std::min(static_cast<size_t>(n), sizeof(buf) - 2);
  buf[len++] = '\n';
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fd < 0) {
    const char* path = getenv("XTSIM_TEST_PROFILER_LOG");
    if (path == nullptr) return;
    g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (g_fd >= 0 && write(g_fd, buf, len) < 0) return;
}

int IdOf(const void* handle) {
  return handle != nullptr ? static_cast<const Event*>(handle)->id : 0;
}

const char* Str(const char* s) { return s != nullptr ? s : "(null)"; }

const char* TypeName(uint64_t type) {
  switch (type) {
    case ncclProfileGroup:
      return "Group";
    case ncclProfileColl:
      return "Coll";
    case ncclProfileP2p:
      return "P2p";
    case ncclProfileKernelCh:
      return "KernelCh";
    case ncclProfileGroupApi:
      return "GroupApi";
    case ncclProfileCollApi:
      return "CollApi";
    case ncclProfileP2pApi:
      return "P2pApi";
    case ncclProfileKernelLaunch:
      return "KernelLaunch";
    default:
      return "Other";
  }
}

// The descriptor's fields for the event types the simulator makes.
std::string Fields(const ncclProfilerEventDescr_v5_t* d) {
  char buf[512] = "";
  switch (d->type) {
    case ncclProfileGroupApi:
      snprintf(buf, sizeof(buf), "depth=%d captured=%d", d->groupApi.groupDepth,
               d->groupApi.graphCaptured);
      break;
    case ncclProfileCollApi:
      snprintf(buf, sizeof(buf), "func=%s count=%zu dtype=%s root=%d stream=%p captured=%d",
               Str(d->collApi.func), d->collApi.count, Str(d->collApi.datatype), d->collApi.root,
               d->collApi.stream, d->collApi.graphCaptured ? 1 : 0);
      break;
    case ncclProfileP2pApi:
      snprintf(buf, sizeof(buf), "func=%s count=%zu dtype=%s stream=%p captured=%d",
               Str(d->p2pApi.func), d->p2pApi.count, Str(d->p2pApi.datatype), d->p2pApi.stream,
               d->p2pApi.graphCaptured ? 1 : 0);
      break;
    case ncclProfileKernelLaunch:
      snprintf(buf, sizeof(buf), "stream=%p", d->kernelLaunch.stream);
      break;
    case ncclProfileColl:
      snprintf(buf, sizeof(buf),
               "rank=%d seq=%llu func=%s send=%p recv=%p count=%zu root=%d dtype=%s nch=%d "
               "algo=%s proto=%s group=%d",
               d->rank, static_cast<unsigned long long>(d->coll.seqNumber), Str(d->coll.func),
               d->coll.sendBuff, d->coll.recvBuff, d->coll.count, d->coll.root,
               Str(d->coll.datatype), d->coll.nChannels, Str(d->coll.algo), Str(d->coll.proto),
               IdOf(d->coll.parentGroup));
      break;
    case ncclProfileP2p:
      snprintf(buf, sizeof(buf),
               "rank=%d func=%s buff=%p count=%zu dtype=%s peer=%d nch=%d group=%d", d->rank,
               Str(d->p2p.func), d->p2p.buff, d->p2p.count, Str(d->p2p.datatype), d->p2p.peer,
               d->p2p.nChannels, IdOf(d->p2p.parentGroup));
      break;
    case ncclProfileKernelCh:
      snprintf(buf, sizeof(buf), "channel=%d pTimer=%llu", d->kernelCh.channelId,
               static_cast<unsigned long long>(d->kernelCh.pTimer));
      break;
    default:
      break;
  }
  return buf;
}

ncclResult_t Init(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes,
                  int nranks, int rank, ncclProfilerLogger_v5_t logfn) {
  if (getenv("XTSIM_TEST_PROFILER_INIT_FAIL") != nullptr) {
    *context = nullptr;
    Log("init-failed rank=%d tid=%ld", rank, Tid());
    return ncclInternalError;
  }
  const char* m = getenv("XTSIM_TEST_PROFILER_MASK");
  *mask = m != nullptr ? static_cast<int>(strtol(m, nullptr, 0))
                       : (ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi |
                          ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
                          ncclProfileP2p | ncclProfileKernelCh);
  int id;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_contexts.push_back(static_cast<int>(g_contexts.size()) + 1);
    id = g_contexts.back();
    *context = &g_contexts.back();
  }
  if (logfn != nullptr) logfn(3, 1, __FILE__, __LINE__, "recording profiler: context %d", id);
  Log("init ctx=%d commId=%llx name=%s nNodes=%d nranks=%d rank=%d mask=%d tid=%ld", id,
      static_cast<unsigned long long>(comm_id), Str(name), nnodes, nranks, rank, *mask, Tid());
  return ncclSuccess;
}

ncclResult_t StartEvent(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  const Event* parent = static_cast<const Event*>(d->parentObj);
  Event* e;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_events.push_back(
        Event{static_cast<int>(g_events.size()) + 1, d->type, parent, nullptr, nullptr});
    e = &g_events.back();
  }
  if (d->type == ncclProfileColl) {
    e->recvbuff = d->coll.recvBuff;
    e->datatype = d->coll.datatype;
  } else if (d->type == ncclProfileP2p) {
    e->recvbuff = d->p2p.buff;
    e->datatype = d->p2p.datatype;
  }
  *handle = e;
  Log("start id=%d type=%s parent=%d ctx=%d tid=%ld %s", e->id, TypeName(d->type), IdOf(parent),
      context != nullptr ? *static_cast<int*>(context) : 0, Tid(), Fields(d).c_str());
  return ncclSuccess;
}

ncclResult_t StopEvent(void* handle) {
  const Event* e = static_cast<const Event*>(handle);
  const Event* p = e->parent;
  if (getenv("XTSIM_TEST_PROFILER_READ") != nullptr && e->type == ncclProfileKernelCh &&
      p != nullptr && p->recvbuff != nullptr && p->datatype != nullptr &&
      strcmp(p->datatype, "ncclFloat32") == 0) {
    float first;
    memcpy(&first, p->recvbuff, sizeof(first));
    Log("stop id=%d tid=%ld first=%g", e->id, Tid(), first);
  } else {
    Log("stop id=%d tid=%ld", e->id, Tid());
  }
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* handle, ncclProfilerEventState_v5_t state,
                              ncclProfilerEventStateArgs_v5_t* args) {
  unsigned long long timer = 0;
  if (state == ncclProfilerKernelChStop && args != nullptr) timer = args->kernelCh.pTimer;
  Log("record id=%d state=%d pTimer=%llu tid=%ld", IdOf(handle), static_cast<int>(state), timer,
      Tid());
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  Log("finalize ctx=%d tid=%ld", *static_cast<int*>(context), Tid());
  return ncclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
    "xtsim-recording", Init, StartEvent, StopEvent, RecordEventState, Finalize,
};
