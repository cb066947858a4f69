#include "test/gpusim/nccl/testing/scenarios.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "test/gpusim/nccl/testing/scenario_ctx.h"
#include "test/gpusim/sim_api_client.h"

namespace xtsim {
namespace nccl {
namespace testing {
namespace {

// ---- collectives
// ---------------------------------------------------------------------------------

enum class Coll {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kBcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter
};
constexpr int kPreMulHost = -1;
constexpr int kPreMulDevice = -2;

const char* CollName(Coll c) {
  static const char* names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Bcast",
                                "Reduce",    "AlltoAll",  "Gather",        "Scatter"};
  return names[static_cast<int>(c)];
}

struct Case {
  Coll coll;
  ncclDataType_t type;
  int op;  // ncclRedOp_t, kPreMulHost or kPreMulDevice
  size_t count;
  bool in_place;
};

// The reduction of input element k over all ranks, as the test understands the operator.
double Reduced(const Case& c, int nranks, size_t k) {
  double acc = 0;
  for (int r = 0; r < nranks; ++r) {
    double v = Input(r, k, c.type);
    if (c.op == kPreMulHost || c.op == kPreMulDevice) v *= r + 1;
    if (r == 0) {
      acc = v;
      continue;
    }
    switch (c.op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (c.op == ncclAvg) acc = IsInteger(c.type) ? std::trunc(acc / nranks) : acc / nranks;
  return acc;
}

bool SendsAllBlocks(Coll c) {
  return c == Coll::kReduceScatter || c == Coll::kAlltoAll || c == Coll::kScatter;
}
bool RecvsAllBlocks(Coll c) {
  return c == Coll::kAllGather || c == Coll::kAlltoAll || c == Coll::kGather;
}

// A case's buffers; in place, send and receive share one allocation laid out as nccl.h describes.
struct CaseBuffers {
  uint8_t* recv = nullptr;  // where the rank's result is checked
  const void* sendbuff = nullptr;  // what the call gets: NULL where the API allows it
  void* recvbuff = nullptr;
};

// False when an allocation failed (reported).
bool PrepareBuffers(Ctx& ctx, const Case& c, CaseBuffers* b) {
  const int n = ctx.nranks, me = ctx.rank, root = n - 1;
  const size_t es = ElemSize(c.type);
  const size_t send_elems = SendsAllBlocks(c.coll) ? n * c.count : c.count;
  const size_t recv_elems = RecvsAllBlocks(c.coll) ? n * c.count : c.count;
  uint8_t* recv = static_cast<uint8_t*>(ctx.Alloc(std::max(send_elems, recv_elems) * es));
  uint8_t* send = recv;
  if (!c.in_place) {
    send = static_cast<uint8_t*>(ctx.Alloc(send_elems * es));
  } else if (c.coll == Coll::kAllGather) {
    send = recv + me * c.count * es;
  }
  if (recv == nullptr || send == nullptr) return false;
  if (!c.in_place) memset(recv, 0, recv_elems * es);
  FillInputs(send, c.type, me, send_elems);
  if (c.in_place && c.coll == Coll::kReduceScatter) recv = send + me * c.count * es;
  if (c.coll == Coll::kBcast) FillInputs(recv, c.type, me, recv_elems);  // in place by definition
  bool root_only_send = c.coll == Coll::kBroadcast || c.coll == Coll::kScatter;
  bool root_only_recv = c.coll == Coll::kReduce || c.coll == Coll::kGather;
  b->recv = recv;
  b->sendbuff = root_only_send && me != root ? nullptr : send;  // NULL is allowed there
  b->recvbuff = root_only_recv && me != root ? nullptr : recv;
  if (c.count == 0) b->sendbuff = b->recvbuff = nullptr;
  return true;
}

// The case's operator: a PreMulSum made for it (with the rank's scalar), or a built-in one.
void MakeOp(Ctx& ctx, ncclComm_t comm, const Case& c, ncclRedOp_t* op) {
  *op = static_cast<ncclRedOp_t>(c.op);
  if (c.op != kPreMulHost && c.op != kPreMulDevice) return;
  const size_t es = ElemSize(c.type);
  uint8_t scalar[8];
  Set(c.type, scalar, 0, ctx.rank + 1);
  void* where = scalar;
  if (c.op == kPreMulDevice) {
    where = ctx.Alloc(es);
    if (where == nullptr) return;
    memcpy(where, scalar, es);
  }
  NCCL_OK(ctx, ncclRedOpCreatePreMulSum(
                   op, where, c.type,
                   c.op == kPreMulDevice ? ncclScalarDevice : ncclScalarHostImmediate, comm));
}

// Issues the case's collective on the rank's stream and waits for it.
void Launch(Ctx& ctx, ncclComm_t comm, const Case& c, const CaseBuffers& b, ncclRedOp_t op) {
  const int root = ctx.nranks - 1;
  const void* sendbuff = b.sendbuff;
  void* recvbuff = b.recvbuff;
  cudaStream_t s = ctx.stream();
  switch (c.coll) {
    case Coll::kAllReduce:
      NCCL_OK(ctx, ncclAllReduce(sendbuff, recvbuff, c.count, c.type, op, comm, s));
      break;
    case Coll::kAllGather:
      NCCL_OK(ctx, ncclAllGather(sendbuff, recvbuff, c.count, c.type, comm, s));
      break;
    case Coll::kReduceScatter:
      NCCL_OK(ctx, ncclReduceScatter(sendbuff, recvbuff, c.count, c.type, op, comm, s));
      break;
    case Coll::kBroadcast:
      NCCL_OK(ctx, ncclBroadcast(sendbuff, recvbuff, c.count, c.type, root, comm, s));
      break;
    case Coll::kBcast:
      NCCL_OK(ctx, ncclBcast(recvbuff, c.count, c.type, root, comm, s));
      break;
    case Coll::kReduce:
      NCCL_OK(ctx, ncclReduce(sendbuff, recvbuff, c.count, c.type, op, root, comm, s));
      break;
    case Coll::kAlltoAll:
      NCCL_OK(ctx, ncclAlltoAll(sendbuff, recvbuff, c.count, c.type, comm, s));
      break;
    case Coll::kGather:
      NCCL_OK(ctx, ncclGather(sendbuff, recvbuff, c.count, c.type, root, comm, s));
      break;
    case Coll::kScatter:
      NCCL_OK(ctx, ncclScatter(sendbuff, recvbuff, c.count, c.type, root, comm, s));
      break;
  }
  CUDA_OK(ctx, cudaStreamSynchronize(s));
  if (c.op == kPreMulHost || c.op == kPreMulDevice) NCCL_OK(ctx, ncclRedOpDestroy(op, comm));
}

// Compares what the rank received with what the test expects of the case.
void CheckCase(Ctx& ctx, const Case& c, const uint8_t* recv, const char* what) {
  const int n = ctx.nranks, me = ctx.rank, root = n - 1;
  const size_t cnt = c.count;
  switch (c.coll) {
    case Coll::kAllReduce:
      ExpectElements(ctx, what, c.type, recv, cnt, [&](size_t i) { return Reduced(c, n, i); });
      break;
    case Coll::kReduce:
      if (me == root) {
        ExpectElements(ctx, what, c.type, recv, cnt, [&](size_t i) { return Reduced(c, n, i); });
      }
      break;
    case Coll::kReduceScatter:
      ExpectElements(ctx, what, c.type, recv, cnt,
                     [&](size_t i) { return Reduced(c, n, me * cnt + i); });
      break;
    case Coll::kAllGather:
      ExpectElements(ctx, what, c.type, recv, n * cnt,
                     [&](size_t i) { return Input(static_cast<int>(i / cnt), i % cnt, c.type); });
      break;
    case Coll::kGather:
      if (me == root) {
        ExpectElements(ctx, what, c.type, recv, n * cnt,
                       [&](size_t i) { return Input(static_cast<int>(i / cnt), i % cnt, c.type); });
      }
      break;
    case Coll::kBroadcast:
      ExpectElements(ctx, what, c.type, recv, cnt,
                     [&](size_t i) { return Input(root, i, c.type); });
      break;
    case Coll::kBcast:
      if (me != root) {
        ExpectElements(ctx, what, c.type, recv, cnt,
                       [&](size_t i) { return Input(root, i, c.type); });
      }
      break;
    case Coll::kAlltoAll:
      ExpectElements(ctx, what, c.type, recv, n * cnt, [&](size_t i) {
        return Input(static_cast<int>(i / cnt), me * cnt + i % cnt, c.type);
      });
      break;
    case Coll::kScatter:
      ExpectElements(ctx, what, c.type, recv, cnt,
                     [&](size_t i) { return Input(root, me * cnt + i, c.type); });
      break;
  }
}

void RunCase(Ctx& ctx, ncclComm_t comm, const Case& c) {
  char what[160];
  snprintf(what, sizeof(what), "%s type %d op %d count %zu%s", CollName(c.coll), c.type, c.op,
           c.count, c.in_place ? " in place" : "");
  CaseBuffers b;
  if (!PrepareBuffers(ctx, c, &b)) return;
  const size_t failures = ctx.failure_count();
  ncclRedOp_t op;
  MakeOp(ctx, comm, c, &op);
  if (ctx.failure_count() != failures) return;
  Launch(ctx, comm, c, b, op);
  if (ctx.failure_count() != failures) return;
  CheckCase(ctx, c, b.recv, what);
}

std::vector<Case> CollectiveCases() {
  // Large enough to need many staging rounds (the tests set XTIMER_SIM_NCCL_CHUNK_BYTES=4096).
  constexpr size_t kLarge = 5003;
  std::vector<Case> cases;
  for (int t = 0; t < ncclNumTypes; ++t) {
    cases.push_back({Coll::kAllReduce, static_cast<ncclDataType_t>(t), ncclSum, 1000, false});
  }
  for (int op :
       {int{ncclProd}, int{ncclMax}, int{ncclMin}, int{ncclAvg}, kPreMulHost, kPreMulDevice}) {
    cases.push_back({Coll::kAllReduce, ncclFloat32, op, kLarge, false});
    cases.push_back({Coll::kAllReduce, ncclInt32, op, 257, false});
  }
  cases.push_back({Coll::kAllReduce, ncclUint8, ncclAvg, 99, false});
  cases.push_back({Coll::kAllReduce, ncclFloat64, ncclAvg, 99, false});
  cases.push_back({Coll::kAllReduce, ncclFloat16, ncclMax, 99, false});
  cases.push_back({Coll::kAllReduce, ncclBfloat16, kPreMulHost, 99, false});
  cases.push_back({Coll::kAllReduce, ncclFloat32, ncclSum, kLarge, true});
  cases.push_back({Coll::kAllReduce, ncclFloat32, ncclSum, 0, false});
  for (Coll coll : {Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kBcast,
                    Coll::kReduce, Coll::kAlltoAll, Coll::kGather, Coll::kScatter}) {
    for (ncclDataType_t t : {ncclFloat32, ncclInt8, ncclBfloat16}) {
      for (size_t count : {size_t{1}, kLarge}) cases.push_back({coll, t, ncclSum, count, false});
    }
  }
  cases.push_back({Coll::kReduceScatter, ncclFloat32, ncclAvg, 300, false});
  cases.push_back({Coll::kReduce, ncclInt32, ncclMax, 300, false});
  cases.push_back({Coll::kAllGather, ncclFloat32, ncclSum, kLarge, true});
  cases.push_back({Coll::kReduceScatter, ncclFloat32, ncclSum, kLarge, true});
  cases.push_back({Coll::kBroadcast, ncclFloat32, ncclSum, kLarge, true});
  return cases;
}

CommPtr InitWorld(Ctx& ctx) {
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
  if (r != ncclSuccess) ctx.Fail("ncclCommInitRank returned %d (%s)", r, ncclGetLastError(nullptr));
  return CommPtr(comm);
}

void Collectives(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  int count = 0, rank = -1;
  NCCL_OK(ctx, ncclCommCount(world.get(), &count));
  NCCL_OK(ctx, ncclCommUserRank(world.get(), &rank));
  EXPECT_THAT(ctx, count == ctx.nranks && rank == ctx.rank, "count %d rank %d", count, rank);
  for (const Case& c : CollectiveCases()) {
    RunCase(ctx, world.get(), c);
    if (ctx.failed()) return;
  }
}

// ---- send / recv
// -----------------------------------------------------------------------------------

void SendRecv(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  const int n = ctx.nranks, me = ctx.rank;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  constexpr size_t kCount = 30011;  // floats: several trips around an 8 KiB ring
  auto* send = static_cast<float*>(ctx.Alloc(kCount * 4));
  auto* recv = static_cast<float*>(ctx.Alloc(kCount * 4));
  auto* recv2 = static_cast<float*>(ctx.Alloc(kCount * 4));
  if (ctx.failed()) return;
  FillInputs(send, ncclFloat32, me, kCount);
  cudaStream_t s = ctx.stream();

  // A ring: everybody sends to the next rank and receives from the previous one, in one group.
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclSend(send, kCount, ncclFloat32, next, world.get(), s));
  NCCL_OK(ctx, ncclRecv(recv, kCount, ncclFloat32, prev, world.get(), s));
  NCCL_OK(ctx, ncclGroupEnd());
  CUDA_OK(ctx, cudaStreamSynchronize(s));
  ExpectElements(ctx, "ring", ncclFloat32, recv, kCount,
                 [&](size_t i) { return Input(prev, i, ncclFloat32); });

  // To myself, and two messages to the same peer (matched in call order).
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclSend(send, kCount, ncclFloat32, me, world.get(), s));
  NCCL_OK(ctx, ncclRecv(recv, kCount, ncclFloat32, me, world.get(), s));
  NCCL_OK(ctx, ncclSend(send, 100, ncclFloat32, next, world.get(), s));
  NCCL_OK(ctx, ncclSend(send + 100, 50, ncclFloat32, next, world.get(), s));
  NCCL_OK(ctx, ncclRecv(recv2, 100, ncclFloat32, prev, world.get(), s));
  NCCL_OK(ctx, ncclRecv(recv2 + 1000, 50, ncclFloat32, prev, world.get(), s));
  NCCL_OK(ctx, ncclGroupEnd());
  CUDA_OK(ctx, cudaStreamSynchronize(s));
  ExpectElements(ctx, "self", ncclFloat32, recv, kCount,
                 [&](size_t i) { return Input(me, i, ncclFloat32); });
  ExpectElements(ctx, "first message", ncclFloat32, recv2, 100,
                 [&](size_t i) { return Input(prev, i, ncclFloat32); });
  ExpectElements(ctx, "second message", ncclFloat32, recv2 + 1000, 50,
                 [&](size_t i) { return Input(prev, 100 + i, ncclFloat32); });

  // Send on one stream and receive on another within one group: the streams join.
  cudaStream_t s2 = ctx.NewStream();
  memset(recv, 0, kCount * 4);
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclSend(send, kCount, ncclFloat32, prev, world.get(), s));
  NCCL_OK(ctx, ncclRecv(recv, kCount, ncclFloat32, next, world.get(), s2));
  NCCL_OK(ctx, ncclGroupEnd());
  CUDA_OK(ctx, cudaStreamSynchronize(s2));
  CUDA_OK(ctx, cudaStreamSynchronize(s));
  ExpectElements(ctx, "two streams", ncclFloat32, recv, kCount,
                 [&](size_t i) { return Input(next, i, ncclFloat32); });

  // Empty messages still match.
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclSend(nullptr, 0, ncclFloat32, next, world.get(), s));
  NCCL_OK(ctx, ncclRecv(nullptr, 0, ncclFloat32, prev, world.get(), s));
  NCCL_OK(ctx, ncclGroupEnd());
  CUDA_OK(ctx, cudaStreamSynchronize(s));
}

// ---- split and shrink
// ------------------------------------------------------------------------------

// All-reduces rank+1 of the world over `comm` and checks the sum of `members`.
void ExpectMemberSum(Ctx& ctx, ncclComm_t comm, const std::vector<int>& members, const char* what) {
  auto* buf = static_cast<int32_t*>(ctx.Alloc(64 * 4));
  if (buf == nullptr) return;
  for (int i = 0; i < 64; ++i) buf[i] = ctx.rank + 1;
  NCCL_OK(ctx, ncclAllReduce(buf, buf, 64, ncclInt32, ncclSum, comm, ctx.stream()));
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  int want = 0;
  for (int m : members) want += m + 1;
  EXPECT_THAT(ctx, buf[0] == want && buf[63] == want, "%s: sum %d, expected %d", what, buf[0],
              want);
}

void ExpectShape(Ctx& ctx, ncclComm_t comm, int nranks, int rank, const char* what) {
  int count = -1, r = -1;
  NCCL_OK(ctx, ncclCommCount(comm, &count));
  NCCL_OK(ctx, ncclCommUserRank(comm, &r));
  EXPECT_THAT(ctx, count == nranks && r == rank, "%s: count %d rank %d, expected %d and %d", what,
              count, r, nranks, rank);
}

void Split(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  const int n = ctx.nranks, me = ctx.rank;
  // Tensor-parallel pairs: {0,1}, {2,3}, ... ordered by world rank.
  ncclComm_t tp = nullptr, dp = nullptr, rest = nullptr;
  NCCL_OK(ctx, ncclCommSplit(world.get(), me / 2, me, &tp, nullptr));
  CommPtr tp_owner(tp);
  std::vector<int> tp_members;
  for (int r = me / 2 * 2; r < std::min(n, me / 2 * 2 + 2); ++r) tp_members.push_back(r);
  ExpectShape(ctx, tp, static_cast<int>(tp_members.size()), me % 2, "tp");
  ExpectMemberSum(ctx, tp, tp_members, "tp");

  // Data-parallel groups by parity, keyed in reverse: the highest world rank becomes rank 0. Done
  // inside a group, as frameworks creating several communicators do.
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclCommSplit(world.get(), me % 2, -me, &dp, nullptr));
  NCCL_OK(ctx, ncclGroupEnd());
  CommPtr dp_owner(dp);
  std::vector<int> dp_members;
  for (int r = me % 2; r < n; r += 2) dp_members.push_back(r);
  int dp_rank = 0;
  for (int r : dp_members) dp_rank += r > me;
  ExpectShape(ctx, dp, static_cast<int>(dp_members.size()), dp_rank, "dp");
  ExpectMemberSum(ctx, dp, dp_members, "dp");

  // Rank 0 opts out.
  NCCL_OK(ctx, ncclCommSplit(world.get(), me == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &rest, nullptr));
  CommPtr rest_owner(rest);
  if (me == 0) {
    EXPECT_THAT(ctx, rest == nullptr, "NOCOLOR gave a communicator");
  } else {
    std::vector<int> members;
    for (int r = 1; r < n; ++r) members.push_back(r);
    ExpectShape(ctx, rest, n - 1, me - 1, "rest");
    ExpectMemberSum(ctx, rest, members, "rest");
  }
  // The world still works after the splits.
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  ExpectMemberSum(ctx, world.get(), all, "world after split");
}

void Shrink(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  const int n = ctx.nranks, me = ctx.rank;
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  ExpectMemberSum(ctx, world.get(), all, "world");
  if (me == n - 1) return;  // the excluded rank leaves; only survivors shrink
  int exclude = n - 1;
  ncclComm_t small = nullptr;
  NCCL_OK(ctx, ncclCommShrink(world.get(), &exclude, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
  CommPtr small_owner(small);
  all.pop_back();
  ExpectShape(ctx, small, n - 1, me, "shrunk");
  ExpectMemberSum(ctx, small, all, "shrunk");
}

// ---- timing
// ----------------------------------------------------------------------------------------

// Timed operations are chained on the stream with no host synchronisation in between, after a
// lead-in that puts the stream's virtual time seconds ahead of the wall clock. Every operation
// then starts at its stream's tail, never at a host time that drifts with thread scheduling on a
// loaded machine, so arrivals (and elapsed times) are exact.
constexpr double kLeadInMs = 2000;

struct Timed {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
};

// Keeps the stream busy for `busy_ms`, then records `issue` between two events.
template <typename F>
Timed Mark(Ctx& ctx, double busy_ms, F issue) {
  cudaStream_t s = ctx.stream();
  Timed t;
  bool ok = cudaEventCreate(&t.start) == cudaSuccess && cudaEventCreate(&t.stop) == cudaSuccess &&
            xtsim::Runtime().enqueue_busy(s, "busy", static_cast<int64_t>(busy_ms * 1e6), 0) ==
                cudaSuccess &&
            cudaEventRecord(t.start, s) == cudaSuccess && issue(s) == ncclSuccess &&
            cudaEventRecord(t.stop, s) == cudaSuccess;
  if (!ok) ctx.Fail("issuing a timed operation failed: %s", ncclGetLastError(nullptr));
  return t;
}

// After the stream was synchronised.
double ElapsedMs(Ctx& ctx, Timed t) {
  float ms = -1;
  if (cudaEventElapsedTime(&ms, t.start, t.stop) != cudaSuccess) {
    ctx.Fail("cudaEventElapsedTime failed");
  }
  cudaEventDestroy(t.start);
  cudaEventDestroy(t.stop);
  return ms;
}

// A collective of one element after kLeadInMs of busy stream: it ends at the same virtual time on
// every rank, far enough ahead that the host issues everything after it before that time.
ncclResult_t LeadIn(Ctx& ctx, ncclComm_t comm, float* buf) {
  if (xtsim::Runtime().enqueue_busy(ctx.stream(), "lead-in", static_cast<int64_t>(kLeadInMs * 1e6),
                                    0) != cudaSuccess) {
    return ncclUnhandledCudaError;
  }
  return ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, ctx.stream());
}

// Rank 0 arrives 30 ms after everybody else: its operations take exactly the modelled time, the
// others' up to 30 ms more.
void Timing(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  const int n = ctx.nranks, me = ctx.rank;
  constexpr size_t kCount = 1 << 18;  // 1 MiB of floats
  auto* buf = static_cast<float*>(ctx.Alloc(kCount * 4 * n));
  auto* out = static_cast<float*>(ctx.Alloc(kCount * 4 * n));
  if (ctx.failed()) return;
  ncclComm_t comm = world.get();
  const double busy = 20 + (me == 0 ? 30 : 0);
  NCCL_OK(ctx, LeadIn(ctx, comm, buf));
  std::map<std::string, Timed> marks;
  marks["allreduce_ms"] = Mark(ctx, busy, [&](cudaStream_t s) {
    return ncclAllReduce(buf, out, kCount, ncclFloat32, ncclSum, comm, s);
  });
  marks["allgather_ms"] = Mark(ctx, busy, [&](cudaStream_t s) {
    return ncclAllGather(buf, out, kCount, ncclFloat32, comm, s);
  });
  marks["sendrecv_ms"] = Mark(ctx, busy, [&](cudaStream_t s) {
    ncclGroupStart();
    ncclSend(buf, kCount, ncclFloat32, (me + 1) % n, comm, s);
    ncclRecv(out, kCount, ncclFloat32, (me + n - 1) % n, comm, s);
    return ncclGroupEnd();
  });
  // Two all-reduces of one communicator in a group run one after the other.
  marks["grouped_ms"] = Mark(ctx, busy, [&](cudaStream_t s) {
    ncclGroupStart();
    ncclAllReduce(buf, out, kCount, ncclFloat32, ncclSum, comm, s);
    ncclAllReduce(buf, out, kCount, ncclFloat32, ncclSum, comm, s);
    return ncclGroupEnd();
  });
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  NCCL_OK(ctx, ncclGroupStart());
  NCCL_OK(ctx, ncclAllReduce(buf, out, kCount, ncclFloat32, ncclSum, comm, ctx.stream()));
  NCCL_OK(ctx, ncclGroupSimulateEnd(&info));
  ctx.Value("simulated_allreduce_ms", info.estimatedTime / 1e3);
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  for (auto& [key, t] : marks) ctx.Value(key, ElapsedMs(ctx, t));
}

// A world all-reduce and one in a two-rank child (ranks {0,1}, {2,3}, ...), timed.
void TimedSplit(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  constexpr size_t kCount = 1 << 18;
  auto* buf = static_cast<float*>(ctx.Alloc(kCount * 4));
  if (ctx.failed()) return;
  ncclComm_t pair = nullptr;
  NCCL_OK(ctx, ncclCommSplit(world.get(), ctx.rank / 2, ctx.rank, &pair, nullptr));
  CommPtr pair_owner(pair);
  NCCL_OK(ctx, LeadIn(ctx, world.get(), buf));
  Timed w = Mark(ctx, 20, [&](cudaStream_t s) {
    return ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, world.get(), s);
  });
  Timed p = Mark(ctx, 20, [&](cudaStream_t s) {
    return ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, pair, s);
  });
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  ctx.Value("world_ms", ElapsedMs(ctx, w));
  ctx.Value("pair_ms", ElapsedMs(ctx, p));
}

// ---- fault injection
// -------------------------------------------------------------------------------

// XTIMER_SIM_NCCL_ERROR=0:2[:CODE]: rank 0's second collective, counted over all communicators
// (the first on the world, the second on a child), fails. Only rank 0 issues a second one.
void InjectedError(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  auto* buf = static_cast<float*>(ctx.Alloc(1024));
  if (buf == nullptr) return;
  NCCL_OK(ctx, ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, world.get(), ctx.stream()));
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  ncclComm_t child = nullptr;
  NCCL_OK(ctx, ncclCommSplit(world.get(), 0, ctx.rank, &child, nullptr));
  CommPtr child_owner(child);
  if (ctx.rank != 0) return;
  ncclResult_t r = ncclBroadcast(buf, buf, 16, ncclFloat32, 0, child, ctx.stream());
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ctx, ncclCommGetAsyncError(child, &async));
  ctx.Value("result", r);
  ctx.Value("async_error", async);
  ncclResult_t world_async = ncclSuccess;
  NCCL_OK(ctx, ncclCommGetAsyncError(world.get(), &world_async));
  ctx.Value("world_async_error", world_async);
  EXPECT_THAT(ctx, strstr(ncclGetLastError(nullptr), "XTIMER_SIM_NCCL_ERROR") != nullptr,
              "last error '%s' does not name the knob", ncclGetLastError(nullptr));
}

// Two all-reduces on the world, then two on a child; XTIMER_SIM_HANG stops one rank in one of
// them. Progress is reported as it happens, so the test sees where everybody is stuck.
void Hang(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  auto* buf = static_cast<float*>(ctx.Alloc(1024));
  if (buf == nullptr) return;
  ncclComm_t child = nullptr;
  NCCL_OK(ctx, ncclCommSplit(world.get(), 0, ctx.rank, &child, nullptr));
  CommPtr child_owner(child);
  ncclComm_t comms[] = {world.get(), world.get(), child, child};
  for (int i = 0; i < 4; ++i) {
    NCCL_OK(ctx, ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comms[i], ctx.stream()));
    ctx.Progress("issued " + std::to_string(i + 1));
    CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
    ctx.Progress("done " + std::to_string(i + 1));
  }
}

// XTIMER_SIM_CRASH=1:2: rank 1 dies in its second collective. The survivors' second all-reduce
// cannot complete: they notice the dead peer through ncclCommGetAsyncError (ncclRemoteError),
// abort the communicator, and their stream drains.
void Crash(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  auto* buf = static_cast<float*>(ctx.Alloc(1024));
  if (buf == nullptr) return;
  for (int i = 0; i < 2; ++i) {
    NCCL_OK(ctx, ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, world.get(), ctx.stream()));
  }
  ncclResult_t async = ncclSuccess;
  for (int i = 0; i < 1000 && async == ncclSuccess; ++i) {
    NCCL_OK(ctx, ncclCommGetAsyncError(world.get(), &async));
    usleep(10000);
  }
  ctx.Value("async_error", async);
  NCCL_OK(ctx, ncclCommAbort(world.release()));
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  ctx.Value("drained", 1);
}

// Two all-reduces of 16 floats on the world; in the second, rank 1 calls what
// XTIMER_TEST_MISMATCH says: "op" (an all-gather receiving the same bytes), "count" (half the
// count), anything else the same call. Each rank reports whether the second completed within 2 s
// ("completed"), then aborts the communicator, which releases a collective that never completes,
// and drains its stream ("drained").
void Mismatch(Ctx& ctx) {
  CommPtr world = InitWorld(ctx);
  if (!world) return;
  auto* buf = static_cast<float*>(ctx.Alloc(64 * sizeof(float)));
  auto* out = static_cast<float*>(ctx.Alloc(64 * sizeof(float)));
  if (buf == nullptr || out == nullptr) return;
  NCCL_OK(ctx, ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, world.get(), ctx.stream()));
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  const char* mode = getenv("XTIMER_TEST_MISMATCH");
  const std::string m = ctx.rank == 1 && mode != nullptr ? mode : "";
  if (m == "op") {
    NCCL_OK(ctx, ncclAllGather(buf, out, 16 / ctx.nranks, ncclFloat32, world.get(), ctx.stream()));
  } else {
    const size_t count = m == "count" ? 8 : 16;
    NCCL_OK(ctx, ncclAllReduce(buf, out, count, ncclFloat32, ncclSum, world.get(), ctx.stream()));
  }
  cudaError_t q = cudaErrorNotReady;
  for (int i = 0; i < 200 && q == cudaErrorNotReady; ++i) {
    q = cudaStreamQuery(ctx.stream());
    if (q == cudaErrorNotReady) usleep(10000);
  }
  ctx.Value("completed", q == cudaSuccess);
  NCCL_OK(ctx, ncclCommAbort(world.release()));
  CUDA_OK(ctx, cudaStreamSynchronize(ctx.stream()));
  ctx.Value("drained", 1);
}

using ScenarioFn = void (*)(Ctx&);
const std::map<std::string, ScenarioFn>& Scenarios() {
  static const auto* scenarios = new std::map<std::string, ScenarioFn>{
      {"collectives", Collectives}, {"sendrecv", SendRecv}, {"split", Split},
      {"shrink", Shrink},           {"timing", Timing},     {"timed_split", TimedSplit},
      {"error", InjectedError},     {"hang", Hang},         {"crash", Crash},
      {"mismatch", Mismatch},
  };
  return *scenarios;
}

}  // namespace

ScenarioResult RunScenario(const std::string& name, int rank, int nranks, const ncclUniqueId& id) {
  ScenarioResult result;
  auto it = Scenarios().find(name);
  if (it == Scenarios().end()) {
    result.failures.push_back("unknown scenario " + name);
    return result;
  }
  Ctx ctx(rank, nranks, id, &result);
  it->second(ctx);
  return result;
}

std::string IdToHex(const ncclUniqueId& id) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (char c : id.internal) {
    s += kHex[static_cast<uint8_t>(c) >> 4];
    s += kHex[static_cast<uint8_t>(c) & 15];
  }
  return s;
}

bool IdFromHex(const std::string& hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    unsigned v = 0;
    if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    id->internal[i] = static_cast<char>(v);
  }
  return true;
}

double ModelMs(double bytes, double bus_factor, double bw_gbps, double lat_us) {
  return (lat_us * 1e3 + bytes * bus_factor / bw_gbps) / 1e6;
}

}  // namespace testing
}  // namespace nccl
}  // namespace xtsim
