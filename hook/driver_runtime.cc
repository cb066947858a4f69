#include "hook/driver_runtime.h"

#include <cuda.h>

#include <atomic>

#include "hook/real.h"

namespace xtimer {
namespace hook {
namespace {

Real<decltype(&::cuCtxGetDevice)> g_ctx_get_device{"cuCtxGetDevice"};
Real<decltype(&::cuCtxGetCurrent)> g_ctx_get_current{"cuCtxGetCurrent"};
Real<decltype(&::cuCtxSetCurrent)> g_ctx_set_current{"cuCtxSetCurrent"};
Real<decltype(&::cuEventCreate)> g_event_create{"cuEventCreate"};
Real<decltype(&::cuEventRecord)> g_event_record{"cuEventRecord"};
Real<decltype(&::cuEventQuery)> g_event_query{"cuEventQuery"};
Real<decltype(&::cuEventSynchronize)> g_event_synchronize{"cuEventSynchronize"};
Real<decltype(&::cuEventElapsedTime_v2)> g_event_elapsed{"cuEventElapsedTime_v2"};
Real<decltype(&::cuStreamCreate)> g_stream_create{"cuStreamCreate"};
Real<decltype(&::cuStreamIsCapturing)> g_stream_is_capturing{"cuStreamIsCapturing"};
Real<decltype(&::cuThreadExchangeStreamCaptureMode)> g_exchange_mode{
    "cuThreadExchangeStreamCaptureMode"};

// The context the application had current when the hook first met each device.
constexpr int kMaxDevices = 64;
std::atomic<CUcontext> g_context_of[kMaxDevices];

cudaError_t Err(CUresult r) { return static_cast<cudaError_t>(r); }

cudaError_t NoError() { return cudaSuccess; }

cudaError_t GetDevice(int* device) {
  CUdevice d;
  CUresult r = g_ctx_get_device.get_optional()(&d);
  if (r != CUDA_SUCCESS) return Err(r);
  CUcontext ctx = nullptr;
  if (d >= 0 && d < kMaxDevices && g_ctx_get_current.get_optional()(&ctx) == CUDA_SUCCESS &&
      ctx != nullptr) {
    CUcontext expected = nullptr;
    g_context_of[d].compare_exchange_strong(expected, ctx, std::memory_order_acq_rel);
  }
  *device = d;
  return cudaSuccess;
}

cudaError_t SetDevice(int device) {
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  CUcontext ctx = g_context_of[device].load(std::memory_order_acquire);
  if (ctx == nullptr) return cudaErrorInvalidDevice;
  return Err(g_ctx_set_current.get_optional()(ctx));
}

cudaError_t StreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  return Err(g_stream_is_capturing.get_optional()(
      stream, reinterpret_cast<CUstreamCaptureStatus*>(status)));
}

cudaError_t EventCreate(cudaEvent_t* event, unsigned int flags) {
  return Err(g_event_create.get_optional()(reinterpret_cast<CUevent*>(event), flags));
}

cudaError_t EventRecord(cudaEvent_t event, cudaStream_t stream) {
  return Err(g_event_record.get_optional()(event, stream));
}

cudaError_t EventQuery(cudaEvent_t event) { return Err(g_event_query.get_optional()(event)); }

cudaError_t EventSynchronize(cudaEvent_t event) {
  return Err(g_event_synchronize.get_optional()(event));
}

cudaError_t EventElapsed(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return Err(g_event_elapsed.get_optional()(ms, start, end));
}

cudaError_t StreamCreate(cudaStream_t* stream, unsigned int flags) {
  return Err(g_stream_create.get_optional()(reinterpret_cast<CUstream*>(stream), flags));
}

cudaError_t ExchangeMode(cudaStreamCaptureMode* mode) {
  return Err(g_exchange_mode.get_optional()(reinterpret_cast<CUstreamCaptureMode*>(mode)));
}

}  // namespace

bool FillFromDriver(CudartCore* core) {
  for (bool found : {g_ctx_get_device.get_optional() != nullptr,
                     g_ctx_get_current.get_optional() != nullptr,
                     g_ctx_set_current.get_optional() != nullptr,
                     g_event_create.get_optional() != nullptr,
                     g_event_record.get_optional() != nullptr,
                     g_event_query.get_optional() != nullptr,
                     g_event_synchronize.get_optional() != nullptr,
                     g_event_elapsed.get_optional() != nullptr,
                     g_stream_create.get_optional() != nullptr,
                     g_stream_is_capturing.get_optional() != nullptr,
                     g_exchange_mode.get_optional() != nullptr}) {
    if (!found) return false;
  }
  core->peek_at_last_error = NoError;
  core->get_last_error = NoError;
  core->stream_is_capturing = StreamIsCapturing;
  core->get_device = GetDevice;
  core->set_device = SetDevice;
  core->event_create_with_flags = EventCreate;
  core->event_record = EventRecord;
  core->event_query = EventQuery;
  core->event_synchronize = EventSynchronize;
  core->event_elapsed_time = EventElapsed;
  core->stream_create_with_flags = StreamCreate;
  core->exchange_capture_mode = ExchangeMode;
  return true;
}

}  // namespace hook
}  // namespace xtimer
