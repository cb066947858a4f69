// The NCCL handlers (hook/nccl_handlers.h) with fake real functions passed in, the fake CUDA
// runtime and NCCL queries injected into g_api (hook/testing/fake_cuda.h), on a fresh process
// state per test: communicators registered by every init call (ids from the unique id, InitAll's
// counter, split and shrink counters), resolved at once or after the group that made them, and
// forgotten before destroy; sequence numbers per communicator (collectives) and per peer (p2p),
// also from threads at once (run it under --config=tsan); groups (nesting, one event pair per
// stream around the real ncclGroupEnd, followers, failures, the member and stream bounds, errno);
// the reentrancy guard; and the kernel-handle map of __cudaGetKernel.
#include "hook/nccl_handlers.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/cuda_api.h"
#include "hook/state.h"
#include "hook/testing/fake_cuda.h"

namespace xtimer {
namespace hook {
namespace {

using testing::Comm;
using testing::EventOf;
using testing::Fake;
using testing::FakeComm;
using testing::FakeStream;
using testing::Of;
using testing::LastError;


// What the fake real functions do; set by each test.
struct Script {
  ncclResult_t result = ncclSuccess;
  FakeComm* made = nullptr;  // what an init / split / shrink returns
  int errno_after = 0;       // errno the real call leaves (0: untouched)
  int calls = 0;
  long records_at_call = -1;  // Fake().event_records when the real call ran
  bool in_hook_at_call = false;
  CommEntry* lookup_at_call = nullptr;
  void (*inside)() = nullptr;  // run inside the real call
};
Script g_script;

ncclResult_t RealCall() {
  ++g_script.calls;
  g_script.records_at_call = Fake().event_records.load();
  g_script.in_hook_at_call = t_in_hook;
  if (g_script.inside != nullptr) g_script.inside();
  if (g_script.errno_after != 0) errno = g_script.errno_after;
  return g_script.result;
}

ncclResult_t RealGroup() { return RealCall(); }
ncclResult_t RealInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = Comm(g_script.made);
  return RealCall();
}
ncclResult_t RealInitRankConfig(ncclComm_t* comm, int, ncclUniqueId, int, ncclConfig_t*) {
  *comm = Comm(g_script.made);
  return RealCall();
}
ncclResult_t RealInitRankScalable(ncclComm_t* comm, int, int, int, ncclUniqueId*, ncclConfig_t*) {
  *comm = Comm(g_script.made);
  return RealCall();
}
ncclResult_t RealSplit(ncclComm_t, int, int, ncclComm_t* newcomm, ncclConfig_t*) {
  *newcomm = Comm(g_script.made);
  return RealCall();
}
ncclResult_t RealShrink(ncclComm_t, int*, int, ncclComm_t* newcomm, ncclConfig_t*, int) {
  *newcomm = Comm(g_script.made);
  return RealCall();
}
ncclResult_t RealEnd(ncclComm_t comm) {
  g_script.lookup_at_call = Comms().Lookup(comm);
  return RealCall();
}

ncclUniqueId UniqueId(char fill) {
  ncclUniqueId id;
  memset(&id, fill, sizeof(id));
  return id;
}

class NcclHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::InstallFakeCuda();
    hook_ = std::make_unique<testing::HookState>();
    g_script = Script();
    testing::InstallNcclQueries();
  }

  void TearDown() override {
    // A test that failed inside a group leaves it open: close it (nothing is timed any more).
    while (InGroup()) OnGroupEnd(RealGroup);
    hook_.reset();
    g_api.nccl_comm_user_rank.SetForTesting(nullptr);
    g_api.nccl_comm_count.SetForTesting(nullptr);
    g_api.nccl_comm_cu_device.SetForTesting(nullptr);
  }

  // A root communicator registered through ncclCommInitRank.
  CommEntry* Init(FakeComm* fc, char id_fill, int rank, int nranks) {
    g_script.made = fc;
    ncclComm_t comm = nullptr;
    EXPECT_EQ(OnCommInitRank(RealInitRank, &comm, nranks, UniqueId(id_fill), rank), ncclSuccess);
    return Comms().Lookup(fc);
  }

  // What NcclOpCall does for a collective (or send/recv) inside a group.
  static OpDesc GroupMember(CommEntry* comm, cudaStream_t stream, format::Operation op,
                            int peer = -1) {
    OpDesc d;
    d.comm = comm;
    d.kind = op == format::Operation::kSend || op == format::Operation::kRecv
                 ? format::OpKind::kP2P
                 : format::OpKind::kCollective;
    d.op = op;
    d.stream = stream;
    d.peer = peer;
    AssignSeq(&d);
    AddGroupMember(d);
    return d;
  }

  std::vector<Pending> OpsQueued() {
    std::vector<Pending> ops;
    for (const Pending& p : hook_->TakeQueue()) {
      if (p.rec.header.type == static_cast<uint8_t>(format::RecordType::kOp)) ops.push_back(p);
    }
    return ops;
  }

  std::unique_ptr<testing::HookState> hook_;
};

// ---------------------------------------------------------------------------- communicators

TEST_F(NcclHandlersTest, InitRankRegistersTheCommunicatorUnderItsUniqueIdsHash) {
  FakeComm fc{/*rank=*/0, /*size=*/0, /*device=*/3};
  CommEntry* e = Init(&fc, 'a', /*rank=*/2, /*nranks=*/4);
  ASSERT_NE(e, nullptr);
  const ncclUniqueId id = UniqueId('a');
  EXPECT_EQ(e->id, CommIdFromUniqueId(&id, sizeof(id)));
  EXPECT_EQ(e->origin, CommOrigin::kInit);
  EXPECT_TRUE(e->resolved.load());
  EXPECT_EQ(e->rank, 2) << "the call's rank, not a query's";
  EXPECT_EQ(e->size, 4);
  EXPECT_EQ(e->device, 3);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  const format::CommRecord& r = queued[0].rec.comm;
  EXPECT_EQ(r.type, static_cast<uint8_t>(format::RecordType::kComm));
  EXPECT_EQ(r.comm_id, e->id);
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.device, 3);
  EXPECT_EQ(r.parent_id, 0u);
  EXPECT_EQ(r.global_rank, -2);
}

TEST_F(NcclHandlersTest, EveryInitVariantRegistersUnderTheSameId) {
  FakeComm a, b, c;
  const ncclUniqueId id = UniqueId('b');
  const uint64_t want = CommIdFromUniqueId(&id, sizeof(id));
  ncclComm_t comm;
  g_script.made = &a;
  EXPECT_EQ(OnCommInitRankConfig(RealInitRankConfig, &comm, 2, id, 1, nullptr), ncclSuccess);
  g_script.made = &b;
  ncclUniqueId ids[2] = {UniqueId('b'), UniqueId('z')};
  EXPECT_EQ(OnCommInitRankScalable(RealInitRankScalable, &comm, 2, 1, 2, ids, nullptr),
            ncclSuccess);
  g_script.made = &c;
  EXPECT_EQ(OnCommInitRankScalable(RealInitRankScalable, &comm, 2, 1, 0, nullptr, nullptr),
            ncclSuccess);
  ASSERT_NE(Comms().Lookup(&a), nullptr);
  ASSERT_NE(Comms().Lookup(&b), nullptr);
  EXPECT_EQ(Comms().Lookup(&a)->id, want);
  EXPECT_EQ(Comms().Lookup(&b)->id, want) << "the first of the unique ids";
  EXPECT_EQ(Comms().Lookup(&c), nullptr) << "no unique id: nothing to name it by";
}

TEST_F(NcclHandlersTest, AFailedInitRegistersNothingAndANonBlockingOneIsRegistered) {
  FakeComm failed, pending;
  g_script.result = ncclInternalError;
  g_script.made = &failed;
  ncclComm_t comm;
  EXPECT_EQ(OnCommInitRank(RealInitRank, &comm, 2, UniqueId('c'), 0), ncclInternalError);
  EXPECT_EQ(Comms().Lookup(&failed), nullptr);
  g_script.result = ncclInProgress;
  g_script.made = &pending;
  EXPECT_EQ(OnCommInitRank(RealInitRank, &comm, 2, UniqueId('d'), 1), ncclInProgress);
  CommEntry* e = Comms().Lookup(&pending);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->resolved.load());
  EXPECT_EQ(hook_->TakeQueue().size(), 1u);
}

TEST_F(NcclHandlersTest, InitAllRegistersEveryRankUnderOneIdPerCall) {
  FakeComm fcs[3];
  ncclComm_t comms[3];
  auto real = [](ncclComm_t* out, int ndev, const int*) -> ncclResult_t {
    for (int i = 0; i < ndev; ++i) out[i] = Comm(g_script.made + i);
    return RealCall();
  };
  g_script.made = fcs;
  for (int i = 0; i < 3; ++i) fcs[i].device = i;
  ASSERT_EQ(OnCommInitAll(real, comms, 3, nullptr), ncclSuccess);
  const uint64_t id = CommIdForInitAll(getpid(), 0);
  for (int i = 0; i < 3; ++i) {
    CommEntry* e = Comms().Lookup(&fcs[i]);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->id, id);
    EXPECT_EQ(e->rank, i);
    EXPECT_EQ(e->size, 3);
    EXPECT_EQ(e->device, i);
  }
  EXPECT_EQ(hook_->TakeQueue().size(), 3u) << "a CommRecord per rank (one per device)";
  FakeComm more[2];
  ncclComm_t more_comms[2];
  g_script.made = more;
  ASSERT_EQ(OnCommInitAll(real, more_comms, 2, nullptr), ncclSuccess);
  ASSERT_NE(Comms().Lookup(&more[0]), nullptr);
  EXPECT_EQ(Comms().Lookup(&more[0])->id, CommIdForInitAll(getpid(), 1));
}

TEST_F(NcclHandlersTest, SplitChildrenAreNamedByTheParentsSplitCounterAndColor) {
  FakeComm parent_fc;
  CommEntry* parent = Init(&parent_fc, 'e', 0, 4);
  hook_->TakeQueue();
  FakeComm first{/*rank=*/1, /*size=*/2, /*device=*/0}, second{0, 2, 0};
  ncclComm_t out;
  g_script.made = &first;
  ASSERT_EQ(OnCommSplit(RealSplit, Comm(&parent_fc), /*color=*/1, /*key=*/0, &out, nullptr),
            ncclSuccess);
  g_script.made = &second;
  ASSERT_EQ(OnCommSplit(RealSplit, Comm(&parent_fc), 1, 0, &out, nullptr), ncclSuccess);
  CommEntry* a = Comms().Lookup(&first);
  CommEntry* b = Comms().Lookup(&second);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->id, CommIdForSplit(parent->id, 0, 1));
  EXPECT_EQ(b->id, CommIdForSplit(parent->id, 1, 1));
  EXPECT_EQ(a->parent_id, parent->id);
  EXPECT_EQ(a->origin, CommOrigin::kSplit);
  EXPECT_TRUE(a->resolved.load()) << "resolved at once outside a group";
  EXPECT_EQ(a->rank, 1);
  EXPECT_EQ(a->size, 2);
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 2u);
  EXPECT_EQ(queued[0].rec.comm.parent_id, parent->id);
  EXPECT_EQ(queued[0].rec.comm.global_rank, -1);
}

TEST_F(NcclHandlersTest, ASplitOfAnUnknownParentOrThatFailedRegistersNothing) {
  FakeComm stranger, child;
  ncclComm_t out;
  g_script.made = &child;
  EXPECT_EQ(OnCommSplit(RealSplit, Comm(&stranger), 0, 0, &out, nullptr), ncclSuccess);
  EXPECT_EQ(Comms().Lookup(&child), nullptr);
  FakeComm parent_fc;
  Init(&parent_fc, 'f', 0, 2);
  g_script.result = ncclInvalidUsage;
  EXPECT_EQ(OnCommSplit(RealSplit, Comm(&parent_fc), 0, 0, &out, nullptr), ncclInvalidUsage);
  EXPECT_EQ(Comms().Lookup(&child), nullptr);
}

TEST_F(NcclHandlersTest, ASplitInsideAGroupIsResolvedWhenTheGroupEnds) {
  FakeComm parent_fc;
  Init(&parent_fc, 'g', 0, 2);
  hook_->TakeQueue();
  FakeComm child{0, 1, 0, /*ready=*/false};  // NCCL creates it at ncclGroupEnd
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  ncclComm_t out;
  g_script.made = &child;
  ASSERT_EQ(OnCommSplit(RealSplit, Comm(&parent_fc), 0, 0, &out, nullptr), ncclSuccess);
  CommEntry* e = Comms().Lookup(&child);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->resolved.load());
  EXPECT_TRUE(hook_->TakeQueue().empty());
  child.ready = true;
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_TRUE(e->resolved.load());
  std::vector<Pending> queued = hook_->TakeQueue();
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].rec.comm.comm_id, e->id);
}

TEST_F(NcclHandlersTest, ShrinkChildrenAreNamedByTheExcludedRanks) {
  FakeComm parent_fc, child{0, 3, 0};
  CommEntry* parent = Init(&parent_fc, 'h', 0, 4);
  int exclude[] = {3};
  ncclComm_t out;
  g_script.made = &child;
  ASSERT_EQ(OnCommShrink(RealShrink, Comm(&parent_fc), exclude, 1, &out, nullptr, 0),
            ncclSuccess);
  CommEntry* e = Comms().Lookup(&child);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id, CommIdForShrink(parent->id, 0, exclude, 1));
  EXPECT_EQ(e->origin, CommOrigin::kShrink);
  EXPECT_EQ(e->parent_id, parent->id);
  EXPECT_TRUE(e->resolved.load());
  EXPECT_EQ(parent->shrink_counter.load(), 1u);
  EXPECT_EQ(parent->split_counter.load(), 0u);
}

TEST_F(NcclHandlersTest, ADestroyedCommunicatorIsForgottenBeforeTheRealCall) {
  FakeComm fc;
  ASSERT_NE(Init(&fc, 'i', 0, 2), nullptr);
  EXPECT_EQ(OnCommEnd(RealEnd, Comm(&fc)), ncclSuccess);
  EXPECT_EQ(g_script.calls, 2);  // the init and the destroy
  EXPECT_EQ(g_script.lookup_at_call, nullptr);
  EXPECT_EQ(LookupComm(&fc), nullptr);
}

// ------------------------------------------------------------------------ sequence numbers

TEST_F(NcclHandlersTest, CollectivesAreNumberedPerCommunicatorAndP2pPerPeer) {
  FakeComm fa, fb;
  CommEntry* a = Init(&fa, 'j', 0, 4);
  CommEntry* b = Init(&fb, 'k', 0, 2);
  auto seq = [](CommEntry* comm, format::OpKind kind, int peer) {
    OpDesc d;
    d.comm = comm;
    d.kind = kind;
    d.peer = peer;
    AssignSeq(&d);
    return d.seq;
  };
  using format::OpKind;
  EXPECT_EQ(seq(a, OpKind::kCollective, -1), 1u);
  EXPECT_EQ(seq(a, OpKind::kCollective, -1), 2u);
  EXPECT_EQ(seq(b, OpKind::kCollective, -1), 1u) << "each communicator counts on its own";
  EXPECT_EQ(seq(a, OpKind::kP2P, 1), 1u) << "p2p does not take a collective number";
  EXPECT_EQ(seq(a, OpKind::kP2P, 1), 2u);
  EXPECT_EQ(seq(a, OpKind::kP2P, 3), 1u) << "each peer counts on its own";
  EXPECT_EQ(seq(a, OpKind::kCollective, -1), 3u);
  EXPECT_EQ(seq(a, OpKind::kP2P, 4), 0u) << "a peer outside the communicator";
  EXPECT_EQ(seq(a, OpKind::kP2P, -1), 0u);
  EXPECT_EQ(seq(b, OpKind::kP2P, 1), 1u);

  FakeComm pending_fc{0, 2, 0, /*ready=*/false};
  CommEntry* pending = Comms().Insert(&pending_fc, 99, 0, CommOrigin::kSplit);
  EXPECT_EQ(seq(pending, OpKind::kP2P, 1), 0u) << "size unknown: no peer numbers yet";
  EXPECT_EQ(seq(pending, OpKind::kCollective, -1), 1u);
}

TEST_F(NcclHandlersTest, ThreadsNumberingOneCommunicatorAtOnceGetDistinctNumbers) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'l', 0, 2);
  constexpr int kThreads = 4;
  constexpr int kEach = 500;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([comm, &seen, i] {
      for (int n = 0; n < kEach; ++n) {
        OpDesc d;
        d.comm = comm;
        d.kind = format::OpKind::kCollective;
        AssignSeq(&d);
        seen[i].push_back(d.seq);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), static_cast<uint64_t>(kThreads * kEach));
}

// ----------------------------------------------------------------------------------- groups

TEST_F(NcclHandlersTest, OnlyTheOutermostGroupEndEndsTheGroup) {
  EXPECT_FALSE(InGroup());
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  EXPECT_TRUE(InGroup());
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_TRUE(InGroup());
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_FALSE(InGroup());
  EXPECT_EQ(g_script.calls, 4) << "every call reaches NCCL";
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess) << "an unbalanced end is passed on";
  EXPECT_FALSE(InGroup());
}

TEST_F(NcclHandlersTest, AFailedGroupStartOpensNoGroup) {
  g_script.result = ncclInvalidUsage;
  EXPECT_EQ(OnGroupStart(RealGroup), ncclInvalidUsage);
  EXPECT_FALSE(InGroup());
}

TEST_F(NcclHandlersTest, AGroupIsTimedWithOneEventPairPerStreamAroundTheRealGroupEnd) {
  FakeComm fc{0, 4, /*device=*/1};
  CommEntry* comm = Init(&fc, 'm', 0, 4);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  const OpDesc a = GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  const OpDesc b = GroupMember(comm, FakeStream(1), format::Operation::kAllGather);
  const OpDesc c = GroupMember(comm, FakeStream(2), format::Operation::kSend, /*peer=*/2);
  EXPECT_EQ(a.seq, 1u);
  EXPECT_EQ(b.seq, 2u);
  EXPECT_EQ(c.seq, 1u);
  EXPECT_TRUE(OpsQueued().empty()) << "nothing before the group ends";
  const int calls = g_script.calls;
  const long records = Fake().event_records.load();
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_EQ(g_script.calls, calls + 1);
  EXPECT_EQ(g_script.records_at_call, records + 2 + /*the device's clock anchor*/ 8)
      << "both start events before the real ncclGroupEnd";
  EXPECT_EQ(Fake().event_records.load(), g_script.records_at_call + 2) << "both ends after it";

  std::vector<Pending> ops = OpsQueued();
  ASSERT_EQ(ops.size(), 3u);
  const uint32_t group = ops[0].rec.op.group_id;
  EXPECT_NE(group, 0u);
  for (const Pending& p : ops) {
    EXPECT_EQ(p.rec.op.group_id, group);
    EXPECT_NE(p.rec.op.flags & format::kFlagInGroup, 0);
    EXPECT_EQ(p.device, 1) << "the communicator's device";
  }
  // The leaders (first member of each stream) are timed, then the followers are queued.
  EXPECT_EQ(ops[0].state, Pending::kTimed);
  EXPECT_EQ(ops[0].rec.op.op, static_cast<uint16_t>(format::Operation::kAllReduce));
  EXPECT_EQ(EventOf(ops[0].start)->stream.load(), 1u);
  EXPECT_EQ(EventOf(ops[0].end)->stream.load(), 1u);
  EXPECT_EQ(ops[1].state, Pending::kTimed);
  EXPECT_EQ(ops[1].rec.op.op, static_cast<uint16_t>(format::Operation::kSend));
  EXPECT_EQ(ops[1].rec.op.peer, 2);
  EXPECT_EQ(EventOf(ops[1].start)->stream.load(), 2u);
  EXPECT_EQ(ops[2].state, Pending::kFollower);
  EXPECT_EQ(ops[2].rec.op.op, static_cast<uint16_t>(format::Operation::kAllGather));
  EXPECT_EQ(ops[2].rec.op.seq, 2u);
  EXPECT_EQ(ops[2].start, nullptr);
  EXPECT_EQ(LastError(), cudaSuccess);

  // The next group takes the next group id; an empty group takes none.
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  ops = OpsQueued();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].rec.op.group_id, group + 1);
}

TEST_F(NcclHandlersTest, AFailedGroupEndQueuesNothingAndReturnsItsEvents) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'n', 0, 2);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  GroupMember(comm, FakeStream(2), format::Operation::kAllReduce);
  g_script.result = ncclUnhandledCudaError;
  EXPECT_EQ(OnGroupEnd(RealGroup), ncclUnhandledCudaError);
  EXPECT_FALSE(InGroup());
  EXPECT_TRUE(OpsQueued().empty());
  EXPECT_EQ(hook_->device(0)->pool.SizeApprox(), kInitialEvents);

  // Its members are gone: the next group holds only its own.
  g_script.result = ncclSuccess;
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(3), format::Operation::kBroadcast);
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  std::vector<Pending> ops = OpsQueued();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].rec.op.op, static_cast<uint16_t>(format::Operation::kBroadcast));
}

// NCCL's events for the operations a real call launches, as its profiler interface reports them
// on the calling thread (nccl_profiler.h): one collective event per member, 2 channels each.
std::vector<void*> g_ops_reported;
void NcclReportsTwoOperations() {
  g_ops_reported = {nccl_profiler::JoinEvent(2), nccl_profiler::JoinEvent(2)};
}

// A group keeps its completion marks (one per stream) where NCCL reports its operations: a
// member NCCL runs without a kernel (a copy-engine or symmetric-memory collective, count 0)
// reports nothing, and the others' channels would let the group read as done before it.
TEST_F(NcclHandlersTest, AGroupKeepsItsCompletionMarksWhereNcclReportsItsOperations) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'q', 0, 2);
  hook_->state()->config.budget_ppm = kDefaultBudgetPpm;
  comm->next_seq.store(2000);  // block 125 of 64: not a timed block (budget.h)
  ASSERT_TRUE(nccl_profiler::EnableForComm());
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  GroupMember(comm, FakeStream(2), format::Operation::kAllReduce);
  GroupMember(comm, FakeStream(2), format::Operation::kAllGather);
  g_script.inside = NcclReportsTwoOperations;
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_EQ(g_ops_reported, std::vector<void*>({nullptr, nullptr})) << "not armed";
  std::vector<Pending> ops = OpsQueued();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].state, Pending::kTracked);
  EXPECT_EQ(ops[1].state, Pending::kTracked);
  EXPECT_EQ(ops[2].state, Pending::kFollower);
  EXPECT_EQ(EventOf(ops[0].end)->stream.load(), 1u) << "a mark per stream";
  EXPECT_EQ(EventOf(ops[1].end)->stream.load(), 2u);
  nccl_profiler::ResetForTesting();
}

TEST_F(NcclHandlersTest, ANonBlockingGroupEndInProgressIsTimed) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'o', 0, 2);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  g_script.result = ncclInProgress;
  EXPECT_EQ(OnGroupEnd(RealGroup), ncclInProgress);
  EXPECT_EQ(OpsQueued().size(), 1u);
}

TEST_F(NcclHandlersTest, AGroupKeepsAtMost256MembersAndTimesAtMost32Streams) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'p', 0, 2);
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  for (int i = 0; i < 300; ++i) GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  std::vector<Pending> ops = OpsQueued();
  ASSERT_EQ(ops.size(), 256u);
  EXPECT_EQ(ops[0].state, Pending::kTimed);
  EXPECT_EQ(ops[255].state, Pending::kFollower);
  EXPECT_EQ(ops[255].rec.op.seq, 256u);

  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  for (int i = 0; i < 33; ++i) {
    GroupMember(comm, FakeStream(100 + i), format::Operation::kAllReduce);
  }
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  ops = OpsQueued();
  ASSERT_EQ(ops.size(), 32u) << "the 33rd stream's member is not timed";
  for (const Pending& p : ops) EXPECT_EQ(p.state, Pending::kTimed);
  EXPECT_EQ(ops[31].rec.op.stream, 131u);
  // Out of the pool (no poller returns them): the first group's pair and one per stream.
  EXPECT_EQ(hook_->device(0)->pool.SizeApprox(), kInitialEvents - 2 - 64);
}

TEST_F(NcclHandlersTest, GroupEndLeavesTheErrnoOfTheRealCall) {
  FakeComm fc;
  CommEntry* comm = Init(&fc, 'q', 0, 2);
  // The hook's own calls clobber errno here; the application must see NCCL's.
  g_api.event_record = [](cudaEvent_t, cudaStream_t) -> cudaError_t {
    errno = ENOMEM;
    return cudaSuccess;
  };
  ASSERT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  GroupMember(comm, FakeStream(1), format::Operation::kAllReduce);
  g_script.errno_after = EINTR;
  errno = 0;
  ASSERT_EQ(OnGroupEnd(RealGroup), ncclSuccess);
  EXPECT_EQ(errno, EINTR);
}

// ------------------------------------------------------------------------------- the guard

TEST_F(NcclHandlersTest, CallsInsideAHookArePassedThrough) {
  {
    HookScope scope;  // as when NCCL calls a hooked function from inside a hooked one
    EXPECT_EQ(OnGroupStart(RealGroup), ncclSuccess);
    EXPECT_FALSE(InGroup());
    FakeComm fc;
    g_script.made = &fc;
    ncclComm_t comm;
    EXPECT_EQ(OnCommInitRank(RealInitRank, &comm, 2, UniqueId('r'), 0), ncclSuccess);
    EXPECT_EQ(Comms().Lookup(&fc), nullptr);
  }
  EXPECT_EQ(g_script.calls, 2);
}

TEST_F(NcclHandlersTest, TheRealCallRunsInsideTheGuard) {
  // The real init calls another hooked init (say, NCCL's own use of a hooked function): only
  // the outer one registers.
  static FakeComm outer, inner;
  g_script.inside = [] {
    g_script.inside = nullptr;
    g_script.made = &inner;
    ncclComm_t comm;
    OnCommInitRank(RealInitRank, &comm, 2, UniqueId('t'), 0);
    g_script.made = &outer;
  };
  g_script.made = &outer;
  ncclComm_t comm;
  ASSERT_EQ(OnCommInitRank(RealInitRank, &comm, 2, UniqueId('s'), 0), ncclSuccess);
  EXPECT_TRUE(g_script.in_hook_at_call);
  EXPECT_FALSE(t_in_hook);
  EXPECT_NE(Comms().Lookup(&outer), nullptr);
  EXPECT_EQ(Comms().Lookup(&inner), nullptr);
}

TEST_F(NcclHandlersTest, NothingIsRegisteredWhileTimingIsOff) {
  g_mode.store(kOff);
  FakeComm fc;
  EXPECT_EQ(Init(&fc, 'u', 0, 2), nullptr);
  EXPECT_EQ(OnGroupStart(RealGroup), ncclSuccess);
  EXPECT_FALSE(InGroup());
  g_mode.store(kOn);
}

// -------------------------------------------------------------------------- kernel handles

TEST_F(NcclHandlersTest, GetKernelMapsTheHandleToItsFunction) {
  static int function_a, function_b;
  auto real = [](cudaKernel_t* kernel, const void* function) -> cudaError_t {
    if (function == &function_b) return cudaErrorInvalidDeviceFunction;
    *kernel = reinterpret_cast<cudaKernel_t>(0xA000);
    return cudaSuccess;
  };
  cudaKernel_t k = nullptr;
  EXPECT_EQ(OnGetKernel(real, &k, &function_a), cudaSuccess);
  EXPECT_EQ(Kernels().FunctionOf(k), &function_a);
  cudaKernel_t failed = reinterpret_cast<cudaKernel_t>(0xB000);
  EXPECT_EQ(OnGetKernel(real, &failed, &function_b), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(Kernels().FunctionOf(failed), nullptr);
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
