// libxtimer.so as NCCL's profiler plugin, interface v5 (docs/hook.md "Collective completion";
// the interface: third_party/nccl_profiler/nccl_profiler_v5.h). NCCL dlopen()s the library
// NCCL_PROFILER_PLUGIN names, which xtimer-launch sets to libxtimer.so: already loaded
// (LD_PRELOAD), so these entry points share the hook's state (nccl_profiler.h).
//
// We ask for the collective, p2p and kernel-channel events only. NCCL still offers the API and
// kernel-launch events on the application's thread (their gates include the kernel-channel
// bit): we return a null handle, which NCCL does not stop. The application thread's share is a
// few calls through pointers per NCCL call; the channel events run on NCCL's proxy thread.
#include <nccl.h>

#include "hook/nccl_profiler.h"
#include "third_party/nccl_profiler/nccl_profiler_v5.h"

namespace xtimer {
namespace hook {
namespace {

int g_context;  // NCCL wants a context per communicator: ours are all alike

ncclResult_t Init(void** context, uint64_t /*comm_id*/, int* activation_mask,
                  const char* /*comm_name*/, int /*n_nodes*/, int /*nranks*/, int /*rank*/,
                  ncclProfilerLogger_v5_t /*log*/) {
  *context = &g_context;
  *activation_mask = nccl_profiler::EnableForComm()
                         ? ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh
                         : 0;
  return ncclSuccess;
}

ncclResult_t StartEvent(void* /*context*/, void** handle, ncclProfilerEventDescr_v5_t* descr) {
  *handle = nullptr;
  switch (descr->type) {
    case ncclProfileColl:
      *handle = nccl_profiler::JoinEvent(descr->coll.nChannels);
      break;
    case ncclProfileP2p:
      *handle = nccl_profiler::JoinEvent(descr->p2p.nChannels);
      break;
    case ncclProfileKernelCh:
      *handle = nccl_profiler::StartChannel(descr->parentObj);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

ncclResult_t StopEvent(void* handle) {
  nccl_profiler::StopEvent(handle);
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* /*handle*/, ncclProfilerEventState_v5_t /*state*/,
                              ncclProfilerEventStateArgs_v5_t* /*args*/) {
  return ncclSuccess;  // a channel's end is counted at its stopEvent, which follows
}

ncclResult_t Finalize(void* /*context*/) { return ncclSuccess; }

}  // namespace
}  // namespace hook
}  // namespace xtimer

extern "C" {
// The symbol NCCL looks up in the plugin library.
__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
    "xtimer",
    &xtimer::hook::Init,
    &xtimer::hook::StartEvent,
    &xtimer::hook::StopEvent,
    &xtimer::hook::RecordEventState,
    &xtimer::hook::Finalize,
};
}  // extern "C"
