#include "test/gpusim/cublas/fake_runtime.h"

#include <cstdlib>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/sim_api.h"

namespace xtsim {
namespace testing {

FakeRuntime& FakeRuntime::Get() {
  static FakeRuntime* runtime = new FakeRuntime;
  return *runtime;
}

cudaStream_t FakeRuntime::NewStream() {
  std::lock_guard<std::mutex> lock(mu_);
  auto stream = reinterpret_cast<cudaStream_t>(next_stream_);
  next_stream_ += 0x10;
  streams_.insert(stream);
  return stream;
}

void FakeRuntime::DestroyStream(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(stream);
}

std::vector<BusyOp> FakeRuntime::TakeOps() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BusyOp> ops;
  ops.swap(ops_);
  return ops;
}

void FakeRuntime::set_no_device(bool no_device) {
  std::lock_guard<std::mutex> lock(mu_);
  no_device_ = no_device;
}

cudaError_t FakeRuntime::StreamCheck(cudaStream_t stream) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (no_device_) return cudaErrorNoDevice;
  }
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.count(stream) != 0 ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t FakeRuntime::EnqueueBusy(cudaStream_t stream, const char* name, int64_t duration_ns,
                                     unsigned flags) {
  cudaError_t err = StreamCheck(stream);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back(BusyOp{stream, name, duration_ns, flags});
  return cudaSuccess;
}

namespace {

int64_t FakeNow() { return NowNs(); }

cudaError_t FakeStreamCheck(cudaStream_t stream, int* device) {
  if (device != nullptr) *device = 0;
  return FakeRuntime::Get().StreamCheck(stream);
}

int FakeCurrentDevice() { return 0; }

cudaError_t FakeEnqueueBusy(cudaStream_t stream, const char* name, int64_t duration_ns,
                            unsigned flags) {
  return FakeRuntime::Get().EnqueueBusy(stream, name, duration_ns, flags);
}

cudaError_t FakeEnqueueTask(cudaStream_t, const char*, XtsimTaskRun, XtsimTaskRelease release,
                            void* ctx) {
  if (release != nullptr) release(ctx);
  return cudaErrorNotSupported;  // cuBLAS never needs tasks
}

cudaError_t FakeMalloc(void** ptr, size_t size) {
  *ptr = malloc(size);
  return *ptr != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t FakeFree(void* ptr) {
  free(ptr);
  return cudaSuccess;
}

const XtsimApi kFakeApi = {
    XTSIM_API_VERSION, sizeof(XtsimApi), FakeNow,    FakeStreamCheck, FakeCurrentDevice,
    FakeEnqueueBusy,   FakeEnqueueTask,  FakeMalloc, FakeFree,
};

}  // namespace
}  // namespace testing
}  // namespace xtsim

extern "C" const XtsimApi* xtsim_get_api(uint32_t version) {
  return version == XTSIM_API_VERSION ? &xtsim::testing::kFakeApi : nullptr;
}
