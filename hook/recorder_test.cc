// The recorder's hot path and its error paths, driven through a fake CUDA runtime injected into
// g_api (hook/testing/fake_cuda.h) on a fresh process state per test, with no poller unless the
// test starts one: what CanTime refuses (pending application error, capture, failed query, no
// runtime), a timed op's events and queued record, a device's first op (its pool, on the right
// device, and each way its initialisation can fail), an empty event pool, a full queue, a full
// ring, followers, host syncs, kernel decisions, communicator resolution, the reentrancy guard,
// and threads timing ops at once (run it under --config=tsan). Throughout: the application's
// CUDA last error is never changed, and an error of the hook's own calls is always cleared.
#include "hook/recorder.h"

#include <atomic>
#include <cstring>
#include <ostream>
#include <thread>
#include <vector>

#include "format/record.h"
#include "format/ring.h"
#include "gtest/gtest.h"
#include "hook/capture_census.h"
#include "hook/cuda_api.h"
#include "hook/state.h"
#include "hook/testing/fake_cuda.h"

namespace xtimer {
namespace hook {
namespace {

using format::UntimedCause;
using testing::CallsOnThisThread;
using testing::CurrentDevice;
using testing::EventOf;
using testing::Fake;
using testing::FakeComm;
using testing::FakeStream;
using testing::InstallNcclQueries;
using testing::Of;
using testing::LastError;
using testing::SetCurrentDevice;
using testing::SetLastError;

constexpr cudaError_t kAppsError = cudaErrorInvalidValue;

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::InstallFakeCuda();
    hook_ = std::make_unique<testing::HookState>();
  }

  void TearDown() override {
    hook_.reset();
    g_api.stream_get_device.SetForTesting(nullptr);
    g_api.func_get_name.SetForTesting(nullptr);
    g_api.nccl_comm_user_rank.SetForTesting(nullptr);
    g_api.nccl_comm_count.SetForTesting(nullptr);
    g_api.nccl_comm_cu_device.SetForTesting(nullptr);
    SetLastError(cudaSuccess);
  }

  static OpDesc Gemm(cudaStream_t stream) {
    OpDesc d;
    d.kind = format::OpKind::kMatmul;
    d.op = format::Operation::kGemmEx;
    d.dtype = format::DType::kBF16;
    d.flags = format::kFlagAsync | format::kFlagTransA;
    d.stream = stream;
    d.m = 128;
    d.n = 256;
    d.k = 64;
    d.batch = 3;
    d.bytes = 4096;
    return d;
  }

  // CanTime and BeginTimed, as a shim does.
  static bool Begin(const OpDesc& d, Timing* t) {
    bool capturing;
    return CanTime(d.stream, &capturing) && BeginTimed(d, t);
  }

  uint64_t Untimed(UntimedCause c) { return hook_->untimed(c); }
  uint64_t UntimedTotal() {
    uint64_t n = 0;
    for (int i = 0; i < format::kUntimedSlots; ++i) n += hook_->state()->untimed[i].load();
    return n;
  }
  size_t PoolSize(int device) { return hook_->device(device)->pool.SizeApprox(); }

  std::unique_ptr<testing::HookState> hook_;
};

// ------------------------------------------------------------------------------------ CanTime

TEST_F(RecorderTest, CanTimeLeavesThePendingApplicationErrorAndMakesNoOtherCall) {
  SetLastError(kAppsError);
  const long calls = CallsOnThisThread();
  bool capturing = true;
  EXPECT_FALSE(CanTime(FakeStream(1), &capturing));
  EXPECT_FALSE(capturing);
  EXPECT_EQ(CallsOnThisThread() - calls, 1) << "only cudaPeekAtLastError";
  EXPECT_EQ(LastError(), kAppsError);
  EXPECT_EQ(Untimed(UntimedCause::kAppError), 1u);
}

TEST_F(RecorderTest, CanTimeRefusesACapturingStreamWithoutCountingIt) {
  Fake().capturing_stream = 7;
  GetState()->captures.store(1);  // the census saw the capture begin
  bool capturing = false;
  EXPECT_FALSE(CanTime(FakeStream(7), &capturing));
  EXPECT_TRUE(capturing);
  EXPECT_EQ(UntimedTotal(), 0u) << "a captured op is not an untimed one";
  EXPECT_TRUE(CanTime(FakeStream(8), &capturing));
  EXPECT_FALSE(capturing);
}

TEST_F(RecorderTest, CanTimeClearsTheErrorOfItsFailedCaptureQuery) {
  Fake().fail_is_capturing = true;
  GetState()->capture_unknown.store(true);  // a capture the census could not count
  bool capturing;
  EXPECT_FALSE(CanTime(FakeStream(1), &capturing));
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 1u);
}

TEST_F(RecorderTest, CanTimeAsksNoCaptureStatusWhileNoCaptureIsUnderWay) {
  Fake().capturing_stream = 7;
  Fake().fail_is_capturing = true;  // would make CanTime refuse, were it asked
  bool capturing = true;
  EXPECT_TRUE(CanTime(FakeStream(8), &capturing));
  EXPECT_FALSE(capturing);
  GetState()->captures.store(1);
  EXPECT_FALSE(CanTime(FakeStream(8), &capturing)) << "a capture under way: the status is asked";
  GetState()->captures.store(0);
  CaptureEnded();  // an end the census never saw begin
  EXPECT_EQ(GetState()->captures.load(), 0);
  EXPECT_TRUE(GetState()->capture_unknown.load());
  EXPECT_FALSE(CanTime(FakeStream(8), &capturing)) << "after an unexplained end: always asked";
}

TEST_F(RecorderTest, CanTimeWithoutARuntimeCountsNoRuntime) {
  g_cudart_ready.store(false);  // no libcudart in this test: ResolveCudart finds nothing
  bool capturing;
  EXPECT_FALSE(CanTime(FakeStream(1), &capturing));
  EXPECT_EQ(Untimed(UntimedCause::kNoRuntime), 1u);
  g_cudart_ready.store(true);
}

// --------------------------------------------------------------------------------- timed ops

TEST_F(RecorderTest, ATimedOpRecordsItsEventsOnItsStreamAndQueuesItsRecord) {
  SetCurrentDevice(2);
  const OpDesc d = Gemm(FakeStream(0x77));
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  EXPECT_EQ(t.device, 2);
  EXPECT_GT(t.cpu_launch_ns, 0);
  // The device's first op made its pool (on that device) and anchored its clock.
  DeviceState* ds = hook_->device(2);
  ASSERT_NE(ds, nullptr);
  EXPECT_TRUE(ds->ok);
  EXPECT_EQ(ds->created.load(), kInitialEvents);
  EXPECT_EQ(PoolSize(2), kInitialEvents - 2);
  ASSERT_NE(ds->ref_event, nullptr);
  EXPECT_GT(ds->ref_host_ns, 0);
  EXPECT_EQ(EventOf(t.start)->device, 2);
  EXPECT_EQ(EventOf(t.start)->records.load(), 1);
  EXPECT_EQ(EventOf(t.start)->stream.load(), 0x77u);
  EXPECT_EQ(EventOf(t.end)->records.load(), 0);

  EndTimed(d, &t, /*call_ok=*/true, /*group_id=*/0);
  EXPECT_EQ(EventOf(t.end)->records.load(), 1);
  EXPECT_EQ(EventOf(t.end)->stream.load(), 0x77u);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  const Pending& p = queued[0];
  EXPECT_EQ(p.state, Pending::kTimed);
  EXPECT_EQ(p.start, t.start);
  EXPECT_EQ(p.end, t.end);
  EXPECT_EQ(p.device, 2);
  const format::OpRecord& r = p.rec.op;
  EXPECT_EQ(r.type, static_cast<uint8_t>(format::RecordType::kOp));
  EXPECT_EQ(r.version, format::kRecordVersion);
  EXPECT_EQ(r.kind, static_cast<uint8_t>(format::OpKind::kMatmul));
  EXPECT_EQ(r.op, static_cast<uint16_t>(format::Operation::kGemmEx));
  EXPECT_EQ(r.dtype, static_cast<uint8_t>(format::DType::kBF16));
  EXPECT_EQ(r.flags, format::kFlagAsync | format::kFlagTransA) << "no group flag";
  EXPECT_EQ(r.device, 2);
  EXPECT_EQ(r.stream, 0x77u);
  EXPECT_EQ(r.cpu_launch_ns, t.cpu_launch_ns);
  EXPECT_EQ(r.gpu_start_ns, 0);
  EXPECT_EQ(r.duration_ns, 0);
  EXPECT_EQ(r.m, 128);
  EXPECT_EQ(r.n, 256);
  EXPECT_EQ(r.k, 64);
  EXPECT_EQ(r.batch, 3);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.comm_id, 0u);
  EXPECT_EQ(r.group_id, 0u);
  EXPECT_EQ(GetStats().queued, 1u);
  EXPECT_EQ(UntimedTotal(), 0u);
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(CurrentDevice(), 2);
}

TEST_F(RecorderTest, AGroupMembersRecordCarriesTheGroupAndItsFlag) {
  OpDesc d = Gemm(FakeStream(1));
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  EndTimed(d, &t, true, /*group_id=*/7);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].rec.op.group_id, 7u);
  EXPECT_EQ(queued[0].rec.op.flags, format::kFlagAsync | format::kFlagTransA |
                                        format::kFlagInGroup);
}

TEST_F(RecorderTest, ACommunicatorsOpTakesEventsOnTheCommunicatorsDevice) {
  CommEntry* comm = hook_->state()->comms.Insert(reinterpret_cast<void*>(0xC0), 42, 0,
                                                 CommOrigin::kInit);
  ASSERT_TRUE(hook_->state()->comms.Resolve(comm, /*rank=*/1, /*size=*/4, /*device=*/3));
  SetCurrentDevice(0);
  OpDesc d;
  d.kind = format::OpKind::kCollective;
  d.op = format::Operation::kAllReduce;
  d.stream = FakeStream(9);
  d.comm = comm;
  d.seq = 5;
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  EXPECT_EQ(t.device, 3);
  EXPECT_EQ(EventOf(t.start)->device, 3) << "events belong to the communicator's device";
  EXPECT_EQ(EventOf(hook_->device(3)->ref_event)->device, 3);
  EXPECT_EQ(CurrentDevice(), 0) << "the application's current device is restored";
  EXPECT_EQ(hook_->device(0), nullptr);
  EndTimed(d, &t, true, 0);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].device, 3);
  EXPECT_EQ(queued[0].rec.op.comm_id, 42u);
  EXPECT_EQ(queued[0].rec.op.comm_size, 4u);
  EXPECT_EQ(queued[0].rec.op.seq, 5u);
}

TEST_F(RecorderTest, AFailedCallReturnsBothEventsAndQueuesNothing) {
  const OpDesc d = Gemm(FakeStream(1));
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  EndTimed(d, &t, /*call_ok=*/false, 0);
  EXPECT_EQ(EventOf(t.end)->records.load(), 0) << "no end event for a call that failed";
  EXPECT_TRUE(hook_->TakeQueue().empty());
  EXPECT_EQ(PoolSize(0), kInitialEvents);
}

TEST_F(RecorderTest, AFailedStartRecordIsClearedAndReturnsBothEvents) {
  const OpDesc d = Gemm(FakeStream(1));
  Timing warm;
  ASSERT_TRUE(Begin(d, &warm));  // the device's pool exists
  EndTimed(d, &warm, false, 0);
  Fake().fail_event_record = true;
  Timing t;
  EXPECT_FALSE(Begin(d, &t));
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 1u);
  EXPECT_EQ(PoolSize(0), kInitialEvents);
}

TEST_F(RecorderTest, AFailedEndRecordIsClearedAndTheOpDropped) {
  const OpDesc d = Gemm(FakeStream(1));
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  Fake().fail_event_record = true;
  EndTimed(d, &t, true, 0);
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 1u);
  EXPECT_TRUE(hook_->TakeQueue().empty());
  EXPECT_EQ(PoolSize(0), kInitialEvents);
}

TEST_F(RecorderTest, AFailedGetDeviceIsClearedAndInitialisesNothing) {
  Fake().fail_get_device = true;
  Timing t;
  EXPECT_FALSE(Begin(Gemm(FakeStream(1)), &t));
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 1u);
  EXPECT_EQ(Fake().events_created.load(), 0);
  for (int i = 0; i < kMaxDevices; ++i) EXPECT_EQ(hook_->device(i), nullptr);
}

// ------------------------------------------------------------------- device initialisation

// Each way a device's first op can fail to set up its events: the device is marked untimed once
// (not retried at every op), the hook's error is cleared, the application's device restored.
struct InitFailure {
  const char* name;
  void (*arm)();
};
void PrintTo(const InitFailure& f, std::ostream* os) { *os << f.name; }

class DeviceInitFailureTest : public RecorderTest,
                              public ::testing::WithParamInterface<InitFailure> {};

TEST_P(DeviceInitFailureTest, TheDeviceIsNotTimedAndNothingIsLeftBehind) {
  // The op runs on device 5 (a communicator's) while device 1 is current: the hook switches.
  CommEntry* comm = hook_->state()->comms.Insert(reinterpret_cast<void*>(0xC1), 43, 0,
                                                 CommOrigin::kInit);
  ASSERT_TRUE(hook_->state()->comms.Resolve(comm, 0, 2, /*device=*/5));
  SetCurrentDevice(1);
  GetParam().arm();
  OpDesc d = Gemm(FakeStream(1));
  d.comm = comm;
  Timing t;
  EXPECT_FALSE(Begin(d, &t));
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(CurrentDevice(), 1);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 1u);
  ASSERT_NE(hook_->device(5), nullptr);
  EXPECT_FALSE(hook_->device(5)->ok);
  EXPECT_TRUE(hook_->TakeQueue().empty());

  const long created = Fake().events_created.load();
  const long set_device_calls = Fake().set_device_calls.load();
  EXPECT_FALSE(Begin(d, &t));
  EXPECT_EQ(Fake().events_created.load(), created) << "a failed device is not set up again";
  EXPECT_EQ(Fake().set_device_calls.load(), set_device_calls);
  EXPECT_EQ(Untimed(UntimedCause::kCudaError), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    EachStep, DeviceInitFailureTest,
    ::testing::Values(
        InitFailure{"SetDevice", [] { Fake().fail_set_device_to = 5; }},
        InitFailure{"EventCreation", [] { Fake().event_limit = 100; }},
        InitFailure{"ReferenceEventCreation",
                    [] { Fake().event_limit = static_cast<long>(kInitialEvents); }},
        InitFailure{"StreamCreation", [] { Fake().fail_stream_create = true; }},
        InitFailure{"AnchorRecord", [] { Fake().fail_event_record = true; }},
        InitFailure{"AnchorSynchronize", [] { Fake().fail_event_synchronize = true; }}),
    [](const ::testing::TestParamInfo<InitFailure>& info) { return info.param.name; });

// ------------------------------------------------------------------------------- event pool

TEST_F(RecorderTest, WhenThePoolIsEmptyTheOpIsNotTimedAndNoCallIsMade) {
  // No poller: the pool keeps its initial events, a pair per op in flight.
  const OpDesc d = Gemm(FakeStream(1));
  for (size_t i = 0; i < kInitialEvents / 2; ++i) {
    Timing t;
    ASSERT_TRUE(Begin(d, &t)) << "op " << i;
    EndTimed(d, &t, true, 0);
  }
  EXPECT_EQ(PoolSize(0), 0u);
  const long records = Fake().event_records.load();
  Timing t;
  EXPECT_FALSE(Begin(d, &t));
  EXPECT_EQ(Untimed(UntimedCause::kNoEvent), 1u);
  EXPECT_EQ(Fake().event_records.load(), records);
  EXPECT_EQ(LastError(), cudaSuccess);
  EXPECT_EQ(hook_->TakeQueue().size(), kInitialEvents / 2);
}

TEST_F(RecorderTest, ALoneEventLeftInThePoolIsPutBack) {
  const OpDesc d = Gemm(FakeStream(1));
  Timing warm;
  ASSERT_TRUE(Begin(d, &warm));
  EndTimed(d, &warm, false, 0);
  DeviceState* ds = hook_->device(0);
  cudaEvent_t e;
  while (ds->pool.SizeApprox() > 1) ASSERT_TRUE(ds->pool.Pop(&e));
  Timing t;
  EXPECT_FALSE(Begin(d, &t));
  EXPECT_EQ(Untimed(UntimedCause::kNoEvent), 1u);
  EXPECT_EQ(PoolSize(0), 1u) << "the start event taken goes back";
}

// An untimed all-reduce takes a completion mark; when none is free (the poller has not refilled
// them), a timing event marks it; only when neither is free is it left untracked, and counted.
TEST_F(RecorderTest, AnUntimedCollectiveIsMarkedByATimingEventWhenNoMarkIsFree) {
  OpDesc d = Gemm(FakeStream(1));
  d.kind = format::OpKind::kCollective;
  d.op = format::Operation::kAllReduce;
  Timing warm;
  ASSERT_TRUE(Begin(d, &warm));  // the device's first op makes its pools
  EndTimed(d, &warm, false, 0);
  DeviceState* ds = hook_->device(0);
  cudaEvent_t e;
  while (ds->marks.Pop(&e)) {
  }
  const size_t pool = PoolSize(0);
  Timing t;
  ASSERT_TRUE(TrackCompletion(d, &t, 0));
  EXPECT_EQ(PoolSize(0), pool - 1);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].state, Pending::kTracked);
  EXPECT_TRUE(queued[0].mark_from_pool);
  EXPECT_EQ(queued[0].start, nullptr);
  EXPECT_EQ(Untimed(UntimedCause::kNoEvent), 0u);
  while (ds->pool.Pop(&e)) {
  }
  const long records = Fake().event_records.load();
  EXPECT_FALSE(TrackCompletion(d, &t, 0));
  EXPECT_EQ(Untimed(UntimedCause::kNoEvent), 1u);
  EXPECT_EQ(Fake().event_records.load(), records);
  EXPECT_EQ(LastError(), cudaSuccess);
}

// ------------------------------------------------------------------------ queue and ring full

TEST_F(RecorderTest, AFullQueueDropsTheOpCountsItAndReturnsItsEvents) {
  const OpDesc d = Gemm(FakeStream(1));
  Timing t;
  ASSERT_TRUE(Begin(d, &t));
  Pending filler{};
  size_t filled = 0;
  while (hook_->state()->queue.Push(filler)) ++filled;
  EXPECT_EQ(filled, kQueueCapacity);

  EndTimed(d, &t, true, 0);
  EXPECT_EQ(PoolSize(0), kInitialEvents) << "the dropped op's events are back in the pool";
  RecordHostSync(format::Operation::kDeviceSynchronize, nullptr, 1, 2);
  QueueFollower(d, 0, 1, 3, /*timed=*/true);
  EXPECT_EQ(Untimed(UntimedCause::kQueueFull), 3u);
  const Stats stats = GetStats();
  EXPECT_EQ(stats.queue_dropped, 3u);
  EXPECT_EQ(stats.queued, 0u);
}

TEST_F(RecorderTest, RecordsBeyondTheRingsCapacityAreDroppedAndCounted) {
  hook_.reset();
  hook_ = std::make_unique<testing::HookState>(/*ring_capacity=*/format::kMinCapacity);
  hook_->StartPoller();  // nobody reads its ring
  constexpr int kSyncs = format::kMinCapacity + 10;
  for (int i = 0; i < kSyncs; ++i) {
    RecordHostSync(format::Operation::kStreamSynchronize, nullptr, 1000 + i, 2000 + i);
  }
  ASSERT_TRUE(Flush(60000));
  const Stats stats = GetStats();
  EXPECT_EQ(stats.queued, static_cast<uint64_t>(kSyncs));
  EXPECT_EQ(stats.written, format::kMinCapacity);
  EXPECT_EQ(stats.ring_dropped, 10u);
  EXPECT_EQ(stats.queue_dropped, 0u);
}

// --------------------------------------------------------------------- followers, host syncs

TEST_F(RecorderTest, AFollowerIsQueuedWithoutEventsOnItsLeadersDevice) {
  OpDesc d = Gemm(FakeStream(4));
  QueueFollower(d, /*device=*/6, /*cpu_launch_ns=*/12345, /*group_id=*/9, /*timed=*/true);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].state, Pending::kFollower);
  EXPECT_EQ(queued[0].start, nullptr);
  EXPECT_EQ(queued[0].end, nullptr);
  EXPECT_EQ(queued[0].device, 6);
  EXPECT_EQ(queued[0].rec.op.device, 6);
  EXPECT_EQ(queued[0].rec.op.cpu_launch_ns, 12345);
  EXPECT_EQ(queued[0].rec.op.group_id, 9u);
  EXPECT_NE(queued[0].rec.op.flags & format::kFlagInGroup, 0);
  EXPECT_EQ(Fake().event_records.load(), 0);
}

TEST_F(RecorderTest, AStreamsHostSyncGoesToTheStreamsDevice) {
  g_api.stream_get_device.SetForTesting([](cudaStream_t s, int* device) -> cudaError_t {
    *device = s == FakeStream(0x55) ? 5 : 0;
    return cudaSuccess;
  });
  SetCurrentDevice(1);
  RecordHostSync(format::Operation::kStreamSynchronize, FakeStream(0x55), 1000, 4000);
  RecordHostSync(format::Operation::kDeviceSynchronize, nullptr, 5000, 5500);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 2u);
  const format::OpRecord& r = queued[0].rec.op;
  EXPECT_EQ(queued[0].state, Pending::kReady);
  EXPECT_EQ(r.kind, static_cast<uint8_t>(format::OpKind::kHostSync));
  EXPECT_EQ(r.op, static_cast<uint16_t>(format::Operation::kStreamSynchronize));
  EXPECT_EQ(r.device, 5);
  EXPECT_EQ(r.stream, 0x55u);
  EXPECT_EQ(r.cpu_launch_ns, 1000);
  EXPECT_EQ(r.gpu_start_ns, 1000);
  EXPECT_EQ(r.duration_ns, 3000);
  EXPECT_EQ(queued[1].rec.op.device, 1) << "a device sync: the current device";
  EXPECT_EQ(LastError(), cudaSuccess);
}

TEST_F(RecorderTest, AFailedStreamDeviceQueryFallsBackToTheCurrentDeviceAndIsCleared) {
  g_api.stream_get_device.SetForTesting([](cudaStream_t, int*) -> cudaError_t {
    SetLastError(cudaErrorInvalidResourceHandle);
    return cudaErrorInvalidResourceHandle;
  });
  SetCurrentDevice(3);
  RecordHostSync(format::Operation::kStreamSynchronize, FakeStream(0x56), 1, 2);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].rec.op.device, 3);
  EXPECT_EQ(LastError(), cudaSuccess);
}

TEST_F(RecorderTest, AHostSyncWithAnErrorPendingMakesNoCallAndUsesTheLastDeviceSeen) {
  SetCurrentDevice(2);
  RecordHostSync(format::Operation::kDeviceSynchronize, nullptr, 1, 2);  // the hook sees device 2
  SetCurrentDevice(4);
  SetLastError(kAppsError);
  const long calls = CallsOnThisThread();
  RecordHostSync(format::Operation::kDeviceSynchronize, nullptr, 3, 4);
  EXPECT_EQ(CallsOnThisThread() - calls, 1) << "only cudaPeekAtLastError";
  EXPECT_EQ(LastError(), kAppsError);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 2u);
  EXPECT_EQ(queued[1].rec.op.device, 2);
}

TEST_F(RecorderTest, AHostSyncWithoutARuntimeIsNotRecorded) {
  g_cudart_ready.store(false);
  RecordHostSync(format::Operation::kDeviceSynchronize, nullptr, 1, 2);
  g_cudart_ready.store(true);
  EXPECT_TRUE(hook_->TakeQueue().empty());
}

// ----------------------------------------------------------------------------------- kernels

std::atomic<int> g_name_calls{0};
void KernelA() {}
void KernelB() {}

cudaError_t FakeFuncGetName(const char** name, const void* function) {
  g_name_calls.fetch_add(1);
  if (function == reinterpret_cast<const void*>(&KernelA)) {
    *name = "_Z9gemm_tilePf";
  } else if (function == reinterpret_cast<const void*>(&KernelB)) {
    *name = "_Z4copyPf";
  } else {
    SetLastError(cudaErrorInvalidDeviceFunction);
    return cudaErrorInvalidDeviceFunction;
  }
  return cudaSuccess;
}

TEST_F(RecorderTest, KernelsAreNotTimedWhileKernelTimingIsOff) {
  g_api.func_get_name.SetForTesting(FakeFuncGetName);
  g_name_calls = 0;
  uint32_t name_id = 0;
  EXPECT_FALSE(KernelTimed(reinterpret_cast<const void*>(&KernelA), false, &name_id));
  EXPECT_EQ(g_name_calls.load(), 0);
}

TEST_F(RecorderTest, AKernelIsClassifiedByItsNameOnceAndCached) {
  ASSERT_TRUE(hook_->state()->kernels.SetFilter("gemm"));
  g_api.func_get_name.SetForTesting(FakeFuncGetName);
  g_name_calls = 0;
  const void* a = reinterpret_cast<const void*>(&KernelA);
  const void* b = reinterpret_cast<const void*>(&KernelB);
  uint32_t name_id = 0;
  EXPECT_TRUE(KernelTimed(a, false, &name_id));
  EXPECT_EQ(name_id, 1u);
  EXPECT_EQ(Kernels().Name(1), "gemm_tile(float*)");
  EXPECT_FALSE(KernelTimed(b, false, &name_id));
  EXPECT_EQ(g_name_calls.load(), 2);
  uint32_t again = 0;
  EXPECT_TRUE(KernelTimed(a, false, &again));
  EXPECT_EQ(again, 1u);
  EXPECT_EQ(g_name_calls.load(), 2) << "the decision is cached";
}

TEST_F(RecorderTest, AKernelIsNotClassifiedWhileTheApplicationHasAnErrorPending) {
  ASSERT_TRUE(hook_->state()->kernels.SetFilter(""));
  g_api.func_get_name.SetForTesting(FakeFuncGetName);
  g_name_calls = 0;
  const void* a = reinterpret_cast<const void*>(&KernelA);
  uint32_t name_id = 0;
  SetLastError(kAppsError);
  EXPECT_FALSE(KernelTimed(a, false, &name_id));
  EXPECT_EQ(g_name_calls.load(), 0);
  EXPECT_EQ(LastError(), kAppsError);
  SetLastError(cudaSuccess);
  EXPECT_TRUE(KernelTimed(a, false, &name_id)) << "decided later, once the error is gone";
  EXPECT_EQ(g_name_calls.load(), 1);
}

TEST_F(RecorderTest, AFailedNameQueryIsClearedAndTheKernelStillTimed) {
  ASSERT_TRUE(hook_->state()->kernels.SetFilter(""));
  g_api.func_get_name.SetForTesting(FakeFuncGetName);
  const void* unknown = reinterpret_cast<const void*>(0x1234);
  uint32_t name_id = 77;
  EXPECT_TRUE(KernelTimed(unknown, false, &name_id)) << "no filter: every kernel, named or not";
  EXPECT_EQ(Kernels().Name(name_id), "kernel@0x1234");
  EXPECT_EQ(LastError(), cudaSuccess);
}

TEST_F(RecorderTest, AKernelHandleIsTimedThroughItsFunction) {
  ASSERT_TRUE(hook_->state()->kernels.SetFilter("gemm"));
  g_api.func_get_name.SetForTesting(FakeFuncGetName);
  const void* handle = reinterpret_cast<const void*>(0xABC0);
  uint32_t name_id = 0;
  EXPECT_FALSE(KernelTimed(handle, true, &name_id)) << "a handle never mapped";
  Kernels().MapHandle(handle, reinterpret_cast<const void*>(&KernelA));
  EXPECT_TRUE(KernelTimed(handle, true, &name_id));
  EXPECT_EQ(name_id, 1u);
  bool known = false;
  uint32_t cached = 0;
  EXPECT_TRUE(Kernels().Cached(handle, &known, &cached)) << "the handle shares the decision";
  EXPECT_TRUE(known);
}

// ---------------------------------------------------------------------------- communicators

TEST_F(RecorderTest, AResolvedCommunicatorIsAnnouncedOnce) {
  InstallNcclQueries();
  FakeComm fc{/*rank=*/9, /*size=*/9, /*device=*/2, true};
  CommEntry* e = Comms().Insert(&fc, 77, 0, CommOrigin::kInit);
  ResolveComm(&fc, e, /*rank_hint=*/1, /*size_hint=*/4);  // hints win over the queries
  ResolveComm(&fc, e, 1, 4);
  EXPECT_TRUE(e->resolved.load());
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->size, 4);
  EXPECT_EQ(e->device, 2);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  const format::CommRecord& r = queued[0].rec.comm;
  EXPECT_EQ(r.type, static_cast<uint8_t>(format::RecordType::kComm));
  EXPECT_EQ(r.comm_id, 77u);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.device, 2);
  EXPECT_EQ(r.global_rank, -2) << "a root communicator: the poller learns the rank from it";
  EXPECT_GT(r.created_ns, 0);
}

TEST_F(RecorderTest, ACommunicatorNotReadyYetIsResolvedLater) {
  InstallNcclQueries();
  FakeComm fc{3, 8, 1, /*ready=*/false};
  CommEntry* e = Comms().Insert(&fc, 78, 77, CommOrigin::kSplit);
  ResolveComm(&fc, e, -1, -1);
  EXPECT_FALSE(e->resolved.load());
  EXPECT_TRUE(hook_->TakeQueue().empty());
  EXPECT_EQ(Comms().unresolved.load(), 1);
  fc.ready = true;
  ResolvePendingComms();
  EXPECT_TRUE(e->resolved.load());
  EXPECT_EQ(Comms().unresolved.load(), 0);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].rec.comm.rank, 3);
  EXPECT_EQ(queued[0].rec.comm.size, 8);
  EXPECT_EQ(queued[0].rec.comm.parent_id, 77u);
  EXPECT_EQ(queued[0].rec.comm.global_rank, -1) << "a child communicator";
}

// ---------------------------------------------------------------------------------- the guard

TEST_F(RecorderTest, EnterIsRefusedInsideAHookAndWhenTimingIsOff) {
  EXPECT_TRUE(Enter());
  {
    HookScope scope;
    EXPECT_TRUE(t_in_hook);
    EXPECT_FALSE(Enter()) << "a call the real library makes inside a hook passes through";
  }
  EXPECT_FALSE(t_in_hook);
  EXPECT_TRUE(Enter());
  g_mode.store(kOff);
  EXPECT_FALSE(Enter());
  g_mode.store(kOn);
}

// ------------------------------------------------------------------------------- concurrency

TEST_F(RecorderTest, ThreadsTimingOpsAtOnceLoseNoEventAndNoRecord) {
  hook_.reset();
  hook_ = std::make_unique<testing::HookState>(/*ring_capacity=*/8192);
  Fake().complete_on_record = true;  // an instant GPU: the poller completes ops as they come
  hook_->StartPoller();
  constexpr int kThreads = 4;
  constexpr int kOps = 300;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i] {
      const OpDesc d = Gemm(FakeStream(100 + i));
      for (int n = 0; n < kOps; ++n) {
        Timing t;
        if (Begin(d, &t)) EndTimed(d, &t, true, 0);
      }
      EXPECT_EQ(LastError(), cudaSuccess);
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(Flush(60000));
  const Stats stats = GetStats();
  hook_->StopPoller();  // the pool holds still from here
  EXPECT_EQ(stats.queued + Untimed(UntimedCause::kNoEvent), uint64_t{kThreads * kOps});
  EXPECT_EQ(UntimedTotal(), Untimed(UntimedCause::kNoEvent));
  EXPECT_EQ(stats.written, stats.queued);
  DeviceState* ds = hook_->device(0);
  EXPECT_EQ(ds->pool.SizeApprox(), ds->created.load()) << "every event is back in the pool";
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
