// Driver API entry points of the simulated libcuda.so.1: initialization, devices, contexts,
// memory, streams, events, capture and graphs. Behaviour follows the CUDA Driver API reference
// (the documentation comments of /usr/local/cuda/include/cuda.h; sections named below). The
// work itself is the engine's, shared with the simulated runtime.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "test/gpusim/common/call_cost.h"
#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/capture_rules.h"
#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/memory.h"
#include "test/gpusim/cudart/stream_ops.h"
#include "test/gpusim/driver/driver_state.h"

using xtsim::Engine;
using xtsim::Stream;
using xtsim::driver::CheckInit;
using xtsim::driver::ContextStack;
using xtsim::driver::FromRuntime;
using xtsim::driver::ResolveStream;

namespace {

constexpr int kDriverVersion = 13000;

// The prologue of a potentially unsafe call (capture_rules.h, which the driver API's
// cuThreadExchangeStreamCaptureMode and cuStreamBeginCapture describe in the same words).
CUresult CheckUnsafe() { return FromRuntime(xtsim::CheckUnsafeCall()); }

bool ValidDevice(CUdevice d) { return d >= 0 && d < Engine::Get().device_count(); }

CUresult CheckDevice(CUdevice d) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  return ValidDevice(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// Device attributes that launchers query (Triton: shared memory opt-in, SM count, clocks);
// others fail loudly, as in the simulated runtime.
bool Attribute(CUdevice_attribute a, int* v) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return true;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; return true;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; return true;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; return true;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; return true;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; return true;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; return true;
    default: return false;
  }
}

CUresult SyncStreamImpl(CUstream stream, bool per_thread) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  r = FromRuntime(xtsim::CheckHostCallOn(s));
  if (r != CUDA_SUCCESS) return r;
  s->Synchronize();
  return CUDA_SUCCESS;
}

CUresult QueryStreamImpl(CUstream stream, bool per_thread) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  r = FromRuntime(xtsim::CheckHostCallOn(s));
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(s->Query());
}

CUresult EventRecordImpl(CUevent event, CUstream stream, bool per_thread) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  auto ev = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(event));
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return FromRuntime(xtsim::RecordEvent(s, ev));
}

CUresult WaitEventImpl(CUstream stream, CUevent event, unsigned flags, bool per_thread) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  if ((flags & ~CU_EVENT_WAIT_EXTERNAL) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto ev = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(event));
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return FromRuntime(xtsim::WaitEvent(s, ev));
}

CUresult IsCapturingImpl(CUstream stream, CUstreamCaptureStatus* status, bool per_thread) {
  xtsim::ChargeCall(xtsim::CallCost::kStreamIsCapturing);
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  *status = static_cast<CUstreamCaptureStatus>(s->CaptureStatus(nullptr));
  return CUDA_SUCCESS;
}

CUresult BeginCaptureImpl(CUstream stream, CUstreamCaptureMode mode, bool per_thread) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(s->BeginCapture(static_cast<cudaStreamCaptureMode>(mode)));
}

CUresult EndCaptureImpl(CUstream stream, CUgraph* graph, bool per_thread) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(s->EndCapture(reinterpret_cast<cudaGraph_t*>(graph)));
}

CUresult GraphLaunchImpl(CUgraphExec exec, CUstream stream, bool per_thread) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(xtsim::LaunchGraph(*reinterpret_cast<xtsim::GraphExec*>(exec), s));
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ initialization, devices

// cuInit: flags must be 0 (CUDA_ERROR_INVALID_VALUE otherwise); with no device,
// CUDA_ERROR_NO_DEVICE.
CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Engine::InForkedChild()) return CUDA_ERROR_NOT_INITIALIZED;
  if (Engine::Get().device_count() == 0) return CUDA_ERROR_NO_DEVICE;
  xtsim::driver::MarkInitialized();
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  *count = Engine::Get().device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(ordinal);
  if (r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  snprintf(name, static_cast<size_t>(len), "%s", "NVIDIA H100 80GB HBM3 (gpusim)");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (Attribute(attrib, value)) return CUDA_SUCCESS;
  char what[64];
  snprintf(what, sizeof(what), "cuDeviceGetAttribute(attribute %d)", static_cast<int>(attrib));
  xtsim::NotImplemented(what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  *bytes = xtsim::DeviceCapacity();
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------ contexts

// cuDevicePrimaryCtxRetain: the device's one primary context, created on first retain.
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  *pctx = xtsim::driver::PrimaryContext(dev);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return CheckDevice(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  *flags = xtsim::driver::PrimaryContext(dev)->flags;
  *active = 1;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  xtsim::driver::PrimaryContext(dev)->flags = flags;
  return CUDA_SUCCESS;
}

// cuCtxCreate: a new context, pushed onto the calling thread's stack.
CUresult cuCtxCreate(CUcontext* pctx, CUctxCreateParams*, unsigned int flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  *pctx = xtsim::driver::NewContext(dev, flags);
  ContextStack().push_back(*pctx);
  xtsim::driver::SyncCurrentDevice();
  return CUDA_SUCCESS;
}

// cuCtxDestroy: also popped from the calling thread's stack when current there.
CUresult cuCtxDestroy(CUcontext ctx) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  std::vector<CUctx_st*>& stack = ContextStack();
  if (!stack.empty() && stack.back() == ctx) stack.pop_back();
  return xtsim::driver::DestroyContext(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// cuCtxSetCurrent: replaces the top of the thread's stack; NULL pops it (a no-op when empty).
CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  std::vector<CUctx_st*>& stack = ContextStack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
  } else if (!xtsim::driver::ValidContext(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  } else if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
  xtsim::driver::SyncCurrentDevice();
  return CUDA_SUCCESS;
}

// cuCtxGetCurrent: NULL when no context is bound to the thread.
CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  const std::vector<CUctx_st*>& stack = ContextStack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  if (!xtsim::driver::ValidContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  ContextStack().push_back(ctx);
  xtsim::driver::SyncCurrentDevice();
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  std::vector<CUctx_st*>& stack = ContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = stack.back();
  stack.pop_back();
  xtsim::driver::SyncCurrentDevice();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r == CUDA_SUCCESS) r = CheckUnsafe();
  if (r != CUDA_SUCCESS) return r;
  Engine::Get().SynchronizeDevice(ctx->device);
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------- memory

// cuMemAlloc: "If bytesize is 0, cuMemAlloc() returns CUDA_ERROR_INVALID_VALUE."
CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r == CUDA_SUCCESS) r = CheckUnsafe();
  if (r != CUDA_SUCCESS) return r;
  void* p = nullptr;
  r = FromRuntime(xtsim::Allocate(&p, bytesize, xtsim::MemKind::kDevice, ctx->device, 0));
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(xtsim::FreeAllocation(reinterpret_cast<void*>(dptr),
                                           xtsim::KindBit(xtsim::MemKind::kDevice)));
}

CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  *total = xtsim::DeviceCapacity();
  *free_bytes = *total - std::min(*total, xtsim::DeviceAllocated(ctx->device));
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------ streams

// cuStreamCreate: flags CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING.
CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  if (stream == nullptr || (flags & ~CU_STREAM_NON_BLOCKING) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  *stream = reinterpret_cast<CUstream>(Engine::Get().CreateStream(ctx->device, flags, priority));
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return cuStreamCreateWithPriority(stream, flags, 0);
}

CUresult cuStreamDestroy(CUstream stream) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  Stream* s = Engine::Get().Resolve(reinterpret_cast<cudaStream_t>(stream), false);
  if (s == nullptr || s->legacy()) return CUDA_ERROR_INVALID_HANDLE;
  return Engine::Get().DestroyStream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // extern "C"

XTSIM_CU_STREAM_API(cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream stream),
                    SyncStreamImpl(stream, false), SyncStreamImpl(stream, true))
XTSIM_CU_STREAM_API(cuStreamQuery, cuStreamQuery_ptsz, (CUstream stream),
                    QueryStreamImpl(stream, false), QueryStreamImpl(stream, true))
XTSIM_CU_STREAM_API(cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
                    (CUstream stream, CUevent event, unsigned int flags),
                    WaitEventImpl(stream, event, flags, false),
                    WaitEventImpl(stream, event, flags, true))
XTSIM_CU_STREAM_API(cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
                    (CUstream stream, CUstreamCaptureStatus* status),
                    IsCapturingImpl(stream, status, false), IsCapturingImpl(stream, status, true))
XTSIM_CU_STREAM_API(cuStreamBeginCapture, cuStreamBeginCapture_v2_ptsz,
                    (CUstream stream, CUstreamCaptureMode mode),
                    BeginCaptureImpl(stream, mode, false), BeginCaptureImpl(stream, mode, true))
XTSIM_CU_STREAM_API(cuStreamEndCapture, cuStreamEndCapture_ptsz, (CUstream stream, CUgraph* graph),
                    EndCaptureImpl(stream, graph, false), EndCaptureImpl(stream, graph, true))
XTSIM_CU_STREAM_API(cuGraphLaunch, cuGraphLaunch_ptsz, (CUgraphExec exec, CUstream stream),
                    GraphLaunchImpl(exec, stream, false), GraphLaunchImpl(exec, stream, true))
XTSIM_CU_STREAM_API(cuEventRecord, cuEventRecord_ptsz, (CUevent event, CUstream stream),
                    EventRecordImpl(event, stream, false), EventRecordImpl(event, stream, true))

extern "C" {

// cuThreadExchangeStreamCaptureMode: swaps the calling thread's capture interaction mode.
// One mode per thread for both APIs (the runtime's call is the driver's).
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  xtsim::ExchangeThreadCaptureMode(reinterpret_cast<cudaStreamCaptureMode*>(mode));
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------- events

// cuEventCreate: flags of CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS
// (which requires CU_EVENT_DISABLE_TIMING); the event belongs to the current context.
CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if ((flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) != 0 ||
      ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *event = reinterpret_cast<CUevent>(Engine::Get().NewEvent(flags, ctx->device).get());
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  return Engine::Get().DestroyEvent(reinterpret_cast<cudaEvent_t>(event))
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_HANDLE;
}

// cuEventQuery: CUDA_SUCCESS once the captured work is complete, else CUDA_ERROR_NOT_READY.
CUresult cuEventQuery(CUevent event) {
  CUresult r = CheckInit();
  if (r == CUDA_SUCCESS) r = CheckUnsafe();
  if (r != CUDA_SUCCESS) return r;
  auto ev = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(event));
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return FromRuntime(xtsim::QueryEvent(*ev));
}

CUresult cuEventSynchronize(CUevent event) {
  CUresult r = CheckInit();
  if (r == CUDA_SUCCESS) r = CheckUnsafe();
  if (r != CUDA_SUCCESS) return r;
  auto ev = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(event));
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  xtsim::SynchronizeEvent(*ev);
  return CUDA_SUCCESS;
}

// cuEventElapsedTime: CUDA_ERROR_NOT_READY while either record is pending;
// CUDA_ERROR_INVALID_HANDLE when either was never recorded or was created with
// CU_EVENT_DISABLE_TIMING. CUDA 13 exports it
// as cuEventElapsedTime_v2 (cuda.h), and keeps the unversioned name for older callers.
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  auto a = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(start));
  auto b = Engine::Get().FindEvent(reinterpret_cast<cudaEvent_t>(end));
  if (a == nullptr || b == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return FromRuntime(xtsim::ElapsedTime(*a, *b, ms));
}

#undef cuEventElapsedTime
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

// ------------------------------------------------------------------------------- graphs

CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  if (exec == nullptr || graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  const auto& g = *reinterpret_cast<std::shared_ptr<xtsim::Graph>*>(graph);
  auto* e = new xtsim::GraphExec();
  e->ops = g->ops;
  e->device = ctx->device;
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<xtsim::GraphExec*>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<std::shared_ptr<xtsim::Graph>*>(graph);
  return CUDA_SUCCESS;
}

}  // extern "C"
