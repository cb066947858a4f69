// libxtimer.so as NCCL's profiler plugin, interface v5 (docs/hook.md "Collective completion";
// the interface: third_party/nccl_profiler/nccl_profiler_v5.h). NCCL dlopen()s the library
// NCCL_PROFILER_PLUGIN names, which xtimer-launch sets to libxtimer.so: already loaded
// (LD_PRELOAD), so these entry points share the hook's state (nccl_profiler.h).
//
// We ask for the collective, p2p and kernel-channel events only (a mask set once at init: NCCL
// 2.28.9's host and device channel counters assume it does not change). NCCL still offers the
// API and group events on the application's thread (their gates include the kernel-channel
// bit): we return a null handle, which NCCL does not stop. The application thread's share is
// four calls through pointers per ungrouped NCCL call; the channel events run on NCCL's proxy
// thread (facts and sources: docs/hook.md "Collective completion").
//
// A send/recv to the rank itself gets no kernel-channel event in NCCL 2.28.9 (addP2pToPlan
// makes no proxy op for it), yet its work advances the kernel's channel counters, so every
// later channel report of its communicator comes early (src/enqueue.cc addP2pToPlan,
// src/device/common.h, src/proxy.cc incWorkCounter, by reading). ncclAlltoAll always has one,
// ncclGather/ncclScatter at the root. From the first one on, the communicator's operations are
// not trusted: they keep their completion marks.
#include <nccl.h>

#include <atomic>
#include <new>

#include "hook/nccl_profiler.h"
#include "third_party/nccl_profiler/nccl_profiler_v5.h"

namespace xtimer {
namespace hook {
namespace {

// One per communicator (NCCL's init and finalize run on its cold paths).
struct CommContext {
  std::atomic<bool> self_p2p{false};  // a send/recv to itself happened: channel reports late
};

ncclResult_t Init(void** context, uint64_t /*comm_id*/, int* activation_mask,
                  const char* /*comm_name*/, int /*n_nodes*/, int /*nranks*/, int /*rank*/,
                  ncclProfilerLogger_v5_t /*log*/) {
  *activation_mask = 0;
  *context = nullptr;
  if (!nccl_profiler::EnableForComm()) return ncclSuccess;
  *context = new (std::nothrow) CommContext;
  if (*context != nullptr) {
    *activation_mask = ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;
  }
  return ncclSuccess;
}

// Whether the communicator's channel reports can still be trusted after this p2p event.
bool TrustP2p(void* context, const ncclProfilerEventDescr_v5_t& descr) {
  auto* comm = static_cast<CommContext*>(context);
  if (comm == nullptr) return false;
  if (descr.p2p.peer == descr.rank) comm->self_p2p.store(true, std::memory_order_relaxed);
  return !comm->self_p2p.load(std::memory_order_relaxed);
}

bool TrustColl(void* context) {
  auto* comm = static_cast<CommContext*>(context);
  return comm != nullptr && !comm->self_p2p.load(std::memory_order_relaxed);
}

ncclResult_t StartEvent(void* context, void** handle, ncclProfilerEventDescr_v5_t* descr) {
  *handle = nullptr;
  switch (descr->type) {
    case ncclProfileColl:
      *handle = nccl_profiler::JoinEvent(descr->coll.nChannels, TrustColl(context), context);
      break;
    case ncclProfileP2p:
      *handle = nccl_profiler::JoinEvent(descr->p2p.nChannels, TrustP2p(context, *descr), context);
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

ncclResult_t Finalize(void* context) {
  nccl_profiler::EndComm(context);
  delete static_cast<CommContext*>(context);
  return ncclSuccess;
}

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
