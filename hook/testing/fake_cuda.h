// A CUDA runtime without a GPU for the hook's unit tests, and a fresh process state per test.
//
// InstallFakeCuda() puts the fake runtime's functions into g_api (hook/cuda_api.h), as
// ResolveCudart puts the real ones, and marks the runtime ready. The fake keeps the per-thread
// state of CUDA that the hook must respect: the current device and the sticky last error (a
// failing call sets it; cudaGetLastError returns and clears it, cudaPeekAtLastError only returns
// it). Knobs make calls fail; counters say which calls were made. The cuBLAS, cuBLASLt and NCCL
// queries (Real<> entries of g_api) are set by each test with Real::SetForTesting.
//
// HookState installs a new State as InitSlow would (no environment read, no poller unless asked)
// and turns timing on; its destructor stops the poller and turns timing off. A State is never
// freed (as in the library: communicator entries are never freed either).
#ifndef XTIMER_HOOK_TESTING_FAKE_CUDA_H_
#define XTIMER_HOOK_TESTING_FAKE_CUDA_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "format/ring.h"
#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {
namespace testing {

struct FakeEvent {
  int device = -1;  // the creating thread's current device
  std::atomic<bool> done{false};
  std::atomic<float> ms{0};       // when it fired, on the device's clock
  std::atomic<int> records{0};    // cudaEventRecord calls on it
  std::atomic<uintptr_t> stream{0};  // the stream of its last record
};

struct FakeCuda {
  // Knobs (any thread; InstallFakeCuda resets them).
  std::atomic<long> event_limit{-1};  // events that can be created in all (-1: no limit)
  std::atomic<bool> fail_event_record{false};
  std::atomic<bool> fail_event_synchronize{false};
  std::atomic<bool> fail_get_device{false};
  std::atomic<int> fail_set_device_to{-1};  // cudaSetDevice of this device fails
  std::atomic<bool> fail_stream_create{false};
  std::atomic<bool> fail_is_capturing{false};
  std::atomic<uintptr_t> capturing_stream{0};  // this stream reports an active capture
  std::atomic<bool> complete_on_record{false};  // an instant GPU: a recorded event is done
  // Counters.
  std::atomic<long> events_created{0};
  std::atomic<long> event_records{0};
  std::atomic<long> get_device_calls{0};
  std::atomic<long> set_device_calls{0};
  // Event queries and synchronizations made by a thread in the default global capture mode
  // (they would invalidate another thread's global capture), and queries or synchronizations
  // of an event of a device other than the calling thread's current one (the runtime would make
  // that thread a context on its current device first).
  std::atomic<long> unsafe_in_global_mode{0};
  std::atomic<long> queries_off_device{0};
};

FakeCuda& Fake();
// Resets the knobs and counters, frees the events made so far, installs the fake runtime in
// g_api and marks it ready. Call with no poller running.
void InstallFakeCuda();

FakeEvent* EventOf(cudaEvent_t e);
inline cudaStream_t FakeStream(uintptr_t n) { return reinterpret_cast<cudaStream_t>(n); }

// The calling thread's CUDA state, read and set without counting as calls.
void SetLastError(cudaError_t e);
cudaError_t LastError();
void SetCurrentDevice(int device);
int CurrentDevice();
// Fake runtime calls this thread has made.
long CallsOnThisThread();

class HookState {
 public:
  // ring_capacity: the poller's ring, if StartPoller is called.
  explicit HookState(uint32_t ring_capacity = 1024);
  ~HookState();
  HookState(const HookState&) = delete;
  HookState& operator=(const HookState&) = delete;

  State* state() { return state_; }
  // The poller, on this state (the ring is not read by anyone: records beyond its capacity are
  // dropped).
  void StartPoller();
  // Stops and deletes it (after a Flush, the pools and counters are then stable).
  void StopPoller();
  // Null until the device was initialised.
  DeviceState* device(int d) { return state_->devices[d].load(); }
  uint64_t untimed(format::UntimedCause c) {
    return state_->untimed[static_cast<int>(c)].load();
  }
  // Everything queued for the poller so far (no poller running), in order.
  std::vector<Pending> TakeQueue();

 private:
  State* state_;
};

// A communicator as the fake NCCL queries see it; the tests' ncclComm_t values are FakeComm
// pointers. InstallNcclQueries puts ncclCommUserRank, ncclCommCount (both fail while the
// communicator is not `ready`, as for one still being created) and ncclCommCuDevice into g_api.
struct FakeComm {
  int rank = 0;
  int size = 1;
  int device = 0;
  bool ready = true;
};
inline FakeComm* Of(ncclComm_t c) { return reinterpret_cast<FakeComm*>(c); }
inline ncclComm_t Comm(FakeComm* c) { return reinterpret_cast<ncclComm_t>(c); }
void InstallNcclQueries();

}  // namespace testing
}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_TESTING_FAKE_CUDA_H_
