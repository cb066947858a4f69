// xtsim_get_api: the table through which the simulated cuBLAS and NCCL reach this runtime.
#include "test/gpusim/sim_api.h"

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/memory.h"
#include "test/gpusim/cudart/model.h"

namespace xtsim {
namespace {

cudaError_t StreamCheck(cudaStream_t stream, int* device) {
  if (Engine::Get().device_count() == 0) return cudaErrorNoDevice;
  Stream* s = Engine::Get().Resolve(stream, false);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (device != nullptr) *device = s->device();
  return cudaSuccess;
}

cudaError_t EnqueueBusy(cudaStream_t stream, const char*, int64_t duration_ns, unsigned flags) {
  Stream* s = Engine::Get().Resolve(stream, false);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (duration_ns < 0) return cudaErrorInvalidValue;
  Op op;
  op.kind = OpKind::kBusy;
  op.duration_ns = (flags & XTSIM_OP_COMPUTE) ? ComputeDurationNs(duration_ns, s->device())
                                              : duration_ns;
  return s->Submit(std::move(op));
}

cudaError_t EnqueueTask(cudaStream_t stream, const char*, XtsimTaskRun run,
                        XtsimTaskRelease release, void* ctx) {
  auto holder = std::make_shared<TaskHolder>();  // releases ctx on every path
  holder->run = run;
  holder->release = release;
  holder->ctx = ctx;
  Stream* s = Engine::Get().Resolve(stream, false);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (run == nullptr) return cudaErrorInvalidValue;
  Op op;
  op.kind = OpKind::kTask;
  op.task = std::move(holder);
  return s->Submit(std::move(op));
}

cudaError_t DeviceMalloc(void** ptr, size_t size) {
  return Allocate(ptr, size, MemKind::kDevice, CurrentDevice(), 0);
}

cudaError_t DeviceFree(void* ptr) {
  return FreeAllocation(ptr, KindBit(MemKind::kDevice) | KindBit(MemKind::kManaged));
}

int StreamCapturing(cudaStream_t stream) {
  Stream* s = Engine::Get().Resolve(stream, false);
  return s != nullptr && s->CaptureStatus(nullptr) == cudaStreamCaptureStatusActive ? 1 : 0;
}

const XtsimApi kApi = {
    XTSIM_API_VERSION, sizeof(XtsimApi), NowNs,        StreamCheck, CurrentDevice,
    EnqueueBusy,       EnqueueTask,      DeviceMalloc, DeviceFree,  StreamCapturing,
};

}  // namespace
}  // namespace xtsim

extern "C" const XtsimApi* xtsim_get_api(uint32_t version) {
  return version == XTSIM_API_VERSION ? &xtsim::kApi : nullptr;
}
