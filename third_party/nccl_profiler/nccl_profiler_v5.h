// NCCL's profiler-plugin interface, version 5 (NCCL 2.28 looks for `ncclProfiler_v5` first, then
// v4 ... v1), declared from the interface NVIDIA documents in NCCL's plugins/profiler/README.md
// ("API (v5)") for the fields we use. NCCL is not built from this header: it is ours, so its
// layout is pinned below against the documented structs (x86-64 offsets, computed from the
// documented member order and C's alignment rules), and both sides of the simulator use it.
//
// How NCCL uses it (README, "Operation overview" and "Profiling of collective and p2p
// operations"): NCCL dlopen()s the library named by NCCL_PROFILER_PLUGIN (a path, or NAME for
// libnccl-profiler-NAME.so; libnccl-profiler.so when unset) at the first communicator's init,
// looks up `ncclProfiler_v5`, calls init() once per communicator (the plugin sets the events it
// wants in *eActivationMask) and finalize() when the communicator is destroyed. startEvent()
// returns a handle that stopEvent()/recordEventState() later take; a null handle is allowed.
// Collective and p2p events stop when the operation is enqueued, not when it completes; the
// kernel-channel events (parent: the collective's or p2p's event) are started and stopped by
// NCCL's proxy progress thread as the kernel works on each channel, with GPU timestamps.
#ifndef XTIMER_THIRD_PARTY_NCCL_PROFILER_NCCL_PROFILER_V5_H_
#define XTIMER_THIRD_PARTY_NCCL_PROFILER_NCCL_PROFILER_V5_H_

#include <nccl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// Event types (ncclProfilerEventDescr_v5_t::type and the activation mask).
enum {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,
  ncclProfileCollApi = 1 << 9,
  ncclProfileP2pApi = 1 << 10,
  ncclProfileKernelLaunch = 1 << 11,
};

// The states recordEventState() reports. Only the kernel channel's stop is declared: the proxy,
// network and group-API states (0-21, 23, 24) are values xtimer ignores.
typedef enum {
  ncclProfilerKernelChStop = 22,
} ncclProfilerEventState_v5_t;

// NCCL's logger, as it passes it to init().
typedef void (*ncclProfilerLogger_v5_t)(int level, unsigned long flags, const char* file, int line,
                                         const char* fmt, ...);

typedef struct {
  uint64_t type;    // one of the event types above
  void* parentObj;  // the parent event's handle (a kernel channel's: its collective or p2p)
  int rank;         // the communicator rank it comes from
  union {
    struct {
      int graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;  // per communicator and collective function
      const char* func;    // "AllReduce", ...
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;  // kernel channels: one kernel-channel event each
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;  // "Send" or "Recv"
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // the GPU's global timer (ns) when the channel started
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // ncclProfilerKernelChStop: the GPU's global timer when the channel ended
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclProfilerLogger_v5_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

}  // extern "C"

// The documented layout (LP64): a mismatch here would misread every event NCCL sends.
static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.peer) == 56, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.nChannels) == 60, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32, "v5 layout");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.stream) == 56, "v5 layout");
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112, "v5 layout");
static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "v5 layout");
static_assert(sizeof(ncclProfiler_v5_t) == 48, "v5 layout");

#endif  // XTIMER_THIRD_PARTY_NCCL_PROFILER_NCCL_PROFILER_V5_H_
