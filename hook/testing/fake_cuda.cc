#include "hook/testing/fake_cuda.h"

#include <unistd.h>

#include <memory>
#include <mutex>
#include <utility>

#include "hook/budget.h"
#include "hook/config.h"
#include "hook/cuda_api.h"
#include "hook/poller.h"

namespace xtimer {
namespace hook {
namespace testing {
namespace {

thread_local int t_current = 0;
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;
thread_local cudaError_t t_error = cudaSuccess;
thread_local long t_calls = 0;

std::mutex g_events_mu;
std::vector<std::unique_ptr<FakeEvent>>* g_events = new std::vector<std::unique_ptr<FakeEvent>>;
std::atomic<uintptr_t> g_next_stream{0x5000};
std::atomic<long> g_record_clock{0};

cudaError_t Fail(cudaError_t e) {
  t_error = e;  // sticky until cudaGetLastError
  return e;
}

cudaError_t PeekAtLastError() {
  ++t_calls;
  return t_error;
}

cudaError_t GetLastError() {
  ++t_calls;
  cudaError_t e = t_error;
  t_error = cudaSuccess;
  return e;
}

cudaError_t StreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  ++t_calls;
  if (Fake().fail_is_capturing.load()) return Fail(cudaErrorInvalidResourceHandle);
  *status = reinterpret_cast<uintptr_t>(stream) == Fake().capturing_stream.load() &&
                    stream != nullptr
                ? cudaStreamCaptureStatusActive
                : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t GetDevice(int* device) {
  ++t_calls;
  Fake().get_device_calls.fetch_add(1);
  if (Fake().fail_get_device.load()) return Fail(cudaErrorNoDevice);
  *device = t_current;
  return cudaSuccess;
}

cudaError_t SetDevice(int device) {
  ++t_calls;
  Fake().set_device_calls.fetch_add(1);
  if (device == Fake().fail_set_device_to.load()) return Fail(cudaErrorInvalidDevice);
  t_current = device;
  return cudaSuccess;
}

cudaError_t EventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  ++t_calls;
  std::lock_guard<std::mutex> lock(g_events_mu);
  const long limit = Fake().event_limit.load();
  if (limit >= 0 && Fake().events_created.load() >= limit) {
    return Fail(cudaErrorMemoryAllocation);
  }
  g_events->push_back(std::make_unique<FakeEvent>());
  g_events->back()->device = t_current;
  Fake().events_created.fetch_add(1);
  *event = reinterpret_cast<cudaEvent_t>(g_events->back().get());
  return cudaSuccess;
}

cudaError_t EventRecord(cudaEvent_t event, cudaStream_t stream) {
  ++t_calls;
  if (Fake().fail_event_record.load()) return Fail(cudaErrorInvalidResourceHandle);
  FakeEvent* e = EventOf(event);
  Fake().event_records.fetch_add(1);
  e->records.fetch_add(1);
  e->stream.store(reinterpret_cast<uintptr_t>(stream));
  if (Fake().complete_on_record.load()) {
    e->ms.store(static_cast<float>(g_record_clock.fetch_add(1) + 1) * 0.01f);
    e->done.store(true);
  } else {
    e->done.store(false);
  }
  return cudaSuccess;
}

// A potentially unsafe call (a query or synchronization): counted when the calling thread is
// in the default global capture mode, or when the event's device is not the thread's current one.
void NoteUnsafeCall(cudaEvent_t event) {
  if (t_capture_mode == cudaStreamCaptureModeGlobal) Fake().unsafe_in_global_mode.fetch_add(1);
  if (EventOf(event)->device != t_current) Fake().queries_off_device.fetch_add(1);
}

cudaError_t ExchangeCaptureMode(cudaStreamCaptureMode* mode) {
  ++t_calls;
  std::swap(t_capture_mode, *mode);
  return cudaSuccess;
}

cudaError_t EventQuery(cudaEvent_t event) {
  ++t_calls;
  NoteUnsafeCall(event);
  return EventOf(event)->done.load() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t EventSynchronize(cudaEvent_t event) {
  ++t_calls;
  NoteUnsafeCall(event);
  if (Fake().fail_event_synchronize.load()) return Fail(cudaErrorLaunchFailure);
  return cudaSuccess;
}

cudaError_t EventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  ++t_calls;
  FakeEvent* s = EventOf(start);
  FakeEvent* e = EventOf(end);
  if (!s->done.load() || !e->done.load()) return cudaErrorNotReady;
  *ms = e->ms.load() - s->ms.load();
  return cudaSuccess;
}

cudaError_t StreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  ++t_calls;
  if (Fake().fail_stream_create.load()) return Fail(cudaErrorMemoryAllocation);
  *stream = FakeStream(g_next_stream.fetch_add(1));
  return cudaSuccess;
}

}  // namespace

FakeCuda& Fake() {
  static FakeCuda* fake = new FakeCuda;
  return *fake;
}

void InstallFakeCuda() {
  FakeCuda& f = Fake();
  f.event_limit = -1;
  f.fail_event_record = false;
  f.fail_event_synchronize = false;
  f.fail_get_device = false;
  f.fail_set_device_to = -1;
  f.fail_stream_create = false;
  f.fail_is_capturing = false;
  f.capturing_stream = 0;
  f.complete_on_record = false;
  f.events_created = 0;
  f.event_records = 0;
  f.get_device_calls = 0;
  f.set_device_calls = 0;
  f.unsafe_in_global_mode = 0;
  f.queries_off_device = 0;
  {
    std::lock_guard<std::mutex> lock(g_events_mu);
    g_events->clear();
  }
  t_current = 0;
  t_error = cudaSuccess;
  g_api.peek_at_last_error = PeekAtLastError;
  g_api.get_last_error = GetLastError;
  g_api.stream_is_capturing = StreamIsCapturing;
  g_api.get_device = GetDevice;
  g_api.set_device = SetDevice;
  g_api.event_create_with_flags = EventCreateWithFlags;
  g_api.event_record = EventRecord;
  g_api.event_query = EventQuery;
  g_api.event_synchronize = EventSynchronize;
  g_api.event_elapsed_time = EventElapsedTime;
  g_api.stream_create_with_flags = StreamCreateWithFlags;
  g_api.exchange_capture_mode = ExchangeCaptureMode;
  g_cudart_ready.store(true);
}

FakeEvent* EventOf(cudaEvent_t e) { return reinterpret_cast<FakeEvent*>(e); }

void SetLastError(cudaError_t e) { t_error = e; }
cudaError_t LastError() { return t_error; }
void SetCurrentDevice(int device) { t_current = device; }
int CurrentDevice() { return t_current; }
long CallsOnThisThread() { return t_calls; }

HookState::HookState(uint32_t ring_capacity) : state_(new State()) {
  state_->config.ring_capacity = ring_capacity;
  state_->config.job = "hook-unit-test";
  // The unit tests check every op: the budget at 100% times them all, from a fresh controller.
  state_->config.budget_ppm = kFullBudgetPpm;
  budget::ResetThreadForTesting();
  state_->pid = getpid();
  SetStateForTesting(state_);
  g_mode.store(kOn);
}

HookState::~HookState() {
  g_mode.store(kOff);  // not kUninit: Enter() would run the real InitSlow
  StopPoller();
  // The State stays allocated (and reachable from SetStateForTesting's pointer until the next
  // test installs its own; then from this list): communicator entries are never freed.
  static std::vector<State*>* retired = new std::vector<State*>;
  retired->push_back(state_);
}

void HookState::StartPoller() {
  state_->poller = new Poller(state_);
  state_->poller->Start();
}

void HookState::StopPoller() {
  if (state_->poller == nullptr) return;
  state_->poller->Stop();
  delete state_->poller;
  state_->poller = nullptr;
}

std::vector<Pending> HookState::TakeQueue() {
  std::vector<Pending> out;
  Pending p;
  while (state_->queue.Pop(&p)) out.push_back(p);
  return out;
}

void InstallNcclQueries() {
  g_api.nccl_comm_user_rank.SetForTesting([](ncclComm_t c, int* rank) -> ncclResult_t {
    if (!Of(c)->ready) return ncclInvalidArgument;
    *rank = Of(c)->rank;
    return ncclSuccess;
  });
  g_api.nccl_comm_count.SetForTesting([](ncclComm_t c, int* size) -> ncclResult_t {
    if (!Of(c)->ready) return ncclInvalidArgument;
    *size = Of(c)->size;
    return ncclSuccess;
  });
  g_api.nccl_comm_cu_device.SetForTesting([](ncclComm_t c, int* device) -> ncclResult_t {
    *device = Of(c)->device;
    return ncclSuccess;
  });
}

}  // namespace testing
}  // namespace hook
}  // namespace xtimer
