// The launches behind NCCL-reported completion (hook/nccl_profiler.h) and the plugin entry's
// event handling, without NCCL: an armed thread's events join its launch, the launch is done
// when every channel stopped and only after its seal, a launch without events or with an event
// without channels is refused, references never underflow, a full table refuses, and a proxy
// thread stopping channels while the poller waits (run under --config=tsan).
#include "hook/nccl_profiler.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hook/testing/fake_cuda.h"

namespace xtimer {
namespace hook {
namespace nccl_profiler {
namespace {

class NcclProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::InstallFakeCuda();
    hook_ = std::make_unique<testing::HookState>();
    ResetForTesting();
  }
  void TearDown() override {
    ResetForTesting();
    hook_.reset();
  }
  std::unique_ptr<testing::HookState> hook_;
};

TEST_F(NcclProfilerTest, NothingIsArmedUntilNcclEnablesThePlugin) {
  EXPECT_FALSE(Active());
  EXPECT_EQ(Arm(), nullptr);
  EXPECT_EQ(JoinEvent(2), nullptr) << "an unarmed thread's events are not ours";
  hook_->state()->config.nccl_profiler = false;
  EXPECT_FALSE(EnableForComm()) << "XTIMER_NCCL_PROFILER=off";
  EXPECT_EQ(Arm(), nullptr);
  hook_->state()->config.nccl_profiler = true;
  EXPECT_TRUE(EnableForComm());
  EXPECT_TRUE(Active());
  Launch* l = Arm();
  ASSERT_NE(l, nullptr);
  EXPECT_FALSE(Seal(l, 1));
}

TEST_F(NcclProfilerTest, ALaunchIsDoneWhenEveryChannelOfEveryEventStopped) {
  ASSERT_TRUE(EnableForComm());
  Launch* l = Arm();
  ASSERT_NE(l, nullptr);
  void* coll = JoinEvent(2);
  void* p2p = JoinEvent(1);
  ASSERT_NE(coll, nullptr);
  ASSERT_NE(p2p, nullptr);
  std::vector<void*> channels = {StartChannel(coll), StartChannel(coll), StartChannel(p2p)};
  StopEvent(coll);  // NCCL stops the operation's event at enqueue: not its end
  ASSERT_TRUE(Seal(l, 2));
  EXPECT_EQ(JoinEvent(2), nullptr) << "sealed: the thread is disarmed";
  for (void* ch : channels) {
    ASSERT_NE(ch, nullptr);
    EXPECT_FALSE(Done(l));
    StopEvent(ch);
  }
  EXPECT_TRUE(Done(l));
  Release(l);
  EXPECT_TRUE(Done(l));
  Release(l);
  EXPECT_EQ(l->refs.load(), 0u) << "free again";
}

TEST_F(NcclProfilerTest, ChannelsThatStopBeforeTheSealDoNotEndTheLaunch) {
  ASSERT_TRUE(EnableForComm());
  Launch* l = Arm();
  void* first = JoinEvent(1);
  StopEvent(StartChannel(first));  // the first kernel of a long group already done
  EXPECT_FALSE(Done(l)) << "more events may still join";
  void* second = JoinEvent(1);
  void* ch = StartChannel(second);
  ASSERT_TRUE(Seal(l, 1));
  EXPECT_FALSE(Done(l));
  StopEvent(ch);
  EXPECT_TRUE(Done(l));
  Release(l);
  EXPECT_EQ(l->refs.load(), 0u);
}

TEST_F(NcclProfilerTest, AnEventWithoutChannelsOrALaunchWithoutEventsIsRefused) {
  ASSERT_TRUE(EnableForComm());
  Launch* none = Arm();
  EXPECT_FALSE(Seal(none, 1)) << "NCCL reported nothing: a completion mark instead";
  EXPECT_EQ(none->refs.load(), 0u);
  Launch* l = Arm();
  void* with = JoinEvent(1);
  EXPECT_EQ(JoinEvent(0), nullptr);
  void* ch = StartChannel(with);
  EXPECT_FALSE(Seal(l, 1)) << "an operation without channels would never end";
  EXPECT_NE(l->refs.load(), 0u) << "held until NCCL stops the channel it started";
  StopEvent(ch);
  EXPECT_EQ(l->refs.load(), 0u);
  Launch* failed = Arm();
  JoinEvent(1);
  EXPECT_FALSE(Seal(failed, 0)) << "a failed call: nobody waits";
  Launch* untrusted = Arm();
  EXPECT_EQ(JoinEvent(2, /*trusted=*/false), nullptr);
  EXPECT_FALSE(Seal(untrusted, 1)) << "after a send/recv to itself: its reports come early";
  EXPECT_EQ(untrusted->refs.load(), 0u);
}

TEST_F(NcclProfilerTest, ForeignOrRepeatedStopsNeverTakeAWaitersReference) {
  ASSERT_TRUE(EnableForComm());
  Launch* l = Arm();
  void* op = JoinEvent(1);
  void* ch = StartChannel(op);
  ASSERT_TRUE(Seal(l, 1));
  StopEvent(ch);
  StopEvent(ch);  // reported twice
  StopEvent(nullptr);
  StopEvent(op);
  int local;
  EXPECT_EQ(StartChannel(&local), nullptr) << "a parent that is not ours";
  EXPECT_EQ(StartChannel(nullptr), nullptr);
  EXPECT_TRUE(Done(l));
  EXPECT_EQ(l->refs.load(), kUserUnit) << "the waiter's reference is intact";
  Release(l);
  EXPECT_EQ(l->refs.load(), 0u);
}

TEST_F(NcclProfilerTest, AFullTableRefusesAndALaunchStaysTakenWhileNcclHoldsIt) {
  ASSERT_TRUE(EnableForComm());
  std::vector<Launch*> held;
  for (size_t i = 0; i < kLaunches; ++i) {
    Launch* l = Arm();
    ASSERT_NE(l, nullptr) << i;
    JoinEvent(1);
    ASSERT_TRUE(Seal(l, 1));
    held.push_back(l);
  }
  EXPECT_EQ(Arm(), nullptr) << "every launch waits for its kernel: a mark instead";
  Release(held[7]);  // its channel never stopped, but its waiter left (a later op completed)
  EXPECT_EQ(Arm(), nullptr) << "still held by NCCL's channel";
}

// An aborted communicator's running operations never get their channels stopped: its end
// (finalize) makes its launches done, and only its.
TEST_F(NcclProfilerTest, ACommunicatorsEndEndsItsLaunchesOnly) {
  ASSERT_TRUE(EnableForComm());
  int comm_a, comm_b;
  Launch* a = Arm();
  StartChannel(JoinEvent(2, true, &comm_a));
  ASSERT_TRUE(Seal(a, 1));
  Launch* b = Arm();
  void* b_op = JoinEvent(1, true, &comm_b);
  ASSERT_TRUE(Seal(b, 1));
  Launch* refused = Arm();
  JoinEvent(1, true, &comm_a);
  JoinEvent(0, true, &comm_a);
  ASSERT_FALSE(Seal(refused, 1));
  EndComm(&comm_a);
  EXPECT_TRUE(Done(a));
  EXPECT_FALSE(Done(b)) << "another communicator's";
  EXPECT_EQ(refused->refs.load(), 0u) << "a refused launch held only by its channels is free";
  Release(a);
  EXPECT_EQ(a->refs.load(), 0u);
  StopEvent(StartChannel(b_op));
  EXPECT_TRUE(Done(b));
  Release(b);
}

TEST_F(NcclProfilerTest, AProxyThreadEndsLaunchesWhileThePollerWaits) {
  ASSERT_TRUE(EnableForComm());
  constexpr int kLaunchesInFlight = 2000;
  std::vector<Launch*> launches;
  std::vector<void*> channels;
  for (int i = 0; i < kLaunchesInFlight; ++i) {
    Launch* l = Arm();
    ASSERT_NE(l, nullptr);
    void* op = JoinEvent(2);
    channels.push_back(StartChannel(op));
    channels.push_back(StartChannel(op));
    ASSERT_TRUE(Seal(l, 1));
    launches.push_back(l);
  }
  std::thread proxy([&channels] {
    for (void* ch : channels) StopEvent(ch);
  });
  for (Launch* l : launches) {  // the poller: in order, as a stream completes
    while (!Done(l)) std::this_thread::yield();
    Release(l);
  }
  proxy.join();
  for (Launch* l : launches) EXPECT_EQ(l->refs.load(), 0u);
}

}  // namespace
}  // namespace nccl_profiler
}  // namespace hook
}  // namespace xtimer
