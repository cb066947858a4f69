// The simulated NCCL with ranks that are threads of this process, on the simulated runtime,
// through the public CUDA and NCCL APIs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test/gpusim/nccl/testing/scenarios.h"
#include "test/gpusim/sim_api_client.h"

namespace xtsim {
namespace nccl {
namespace testing {
namespace {

constexpr double kBwGbps = 2;  // XTIMER_SIM_INTRA_BW_GBPS below
constexpr double kLatUs = 5;   // XTIMER_SIM_INTRA_LAT_US below

// Before main: the model reads its knobs once. Small staging and rings make the tests cross many
// chunk boundaries with little data.
const bool kEnvironment = [] {
  setenv("XTIMER_SIM_INTRA_BW_GBPS", "2", 1);
  setenv("XTIMER_SIM_INTRA_LAT_US", "5", 1);
  setenv("XTIMER_SIM_NCCL_CHUNK_BYTES", "4096", 1);
  setenv("XTIMER_SIM_NCCL_P2P_BYTES", "8192", 1);
  return true;
}();

std::vector<ScenarioResult> RunThreads(const std::string& scenario, int nranks) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ScenarioResult> results(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);  // one simulated GPU per rank
      results[static_cast<size_t>(r)] = RunScenario(scenario, r, nranks, id);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const ScenarioResult& result : results) {
    for (const std::string& f : result.failures) ADD_FAILURE() << scenario << ": " << f;
  }
  return results;
}

double MinValue(const std::vector<ScenarioResult>& results, const std::string& key) {
  double v = 1e300;
  for (const ScenarioResult& r : results) v = std::min(v, r.values.at(key));
  return v;
}

TEST(NcclThreadTest, Collectives) { RunThreads("collectives", 4); }
TEST(NcclThreadTest, CollectivesOddRanks) { RunThreads("collectives", 3); }
TEST(NcclThreadTest, SendRecv) { RunThreads("sendrecv", 3); }
TEST(NcclThreadTest, Split) { RunThreads("split", 4); }
TEST(NcclThreadTest, Shrink) { RunThreads("shrink", 4); }

// Rank 0 arrives last (see the scenario): its operations take exactly the modelled time, the
// others' 30 ms more.
TEST(NcclThreadTest, TimingIsMaxArrivalPlusModel) {
  const int n = 4;
  std::vector<ScenarioResult> results = RunThreads("timing", n);
  if (HasFailure()) return;
  const double mib = 1 << 20;
  const double allreduce = ModelMs(mib, 2.0 * (n - 1) / n, kBwGbps, kLatUs);
  const double allgather = ModelMs(n * mib, (n - 1.0) / n, kBwGbps, kLatUs);
  const double sendrecv = ModelMs(mib, 1, kBwGbps, kLatUs);
  EXPECT_NEAR(results[0].values.at("allreduce_ms"), allreduce, 1e-3);
  EXPECT_NEAR(results[0].values.at("allgather_ms"), allgather, 1e-3);
  EXPECT_NEAR(MinValue(results, "sendrecv_ms"), sendrecv, 1e-3);
  // Two all-reduces of one communicator in one group follow each other.
  EXPECT_NEAR(results[0].values.at("grouped_ms"), 2 * allreduce, 1e-3);
  EXPECT_NEAR(results[0].values.at("simulated_allreduce_ms"), allreduce, 1e-3);
  for (int r = 1; r < n; ++r) {
    EXPECT_GT(results[r].values.at("allreduce_ms"), allreduce + 20) << "rank " << r;
    EXPECT_LT(results[r].values.at("allreduce_ms"), allreduce + 31) << "rank " << r;
  }
}

// ---- single-thread use: several ranks from one thread
// ---------------------------------------------

struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* buf = nullptr;
};

// Creates a stream and a buffer of `count` floats (set to rank + 1) on each rank's device.
std::vector<Rank> PrepareRanks(std::vector<ncclComm_t> comms, size_t count) {
  std::vector<Rank> ranks(comms.size());
  for (size_t r = 0; r < comms.size(); ++r) {
    int dev = -1;
    EXPECT_EQ(ncclCommCuDevice(comms[r], &dev), ncclSuccess);
    cudaSetDevice(dev);
    ranks[r].comm = comms[r];
    EXPECT_EQ(cudaStreamCreate(&ranks[r].stream), cudaSuccess);
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ranks[r].buf), count * sizeof(float)),
              cudaSuccess);
    for (size_t i = 0; i < count; ++i) ranks[r].buf[i] = static_cast<float>(r + 1);
  }
  cudaSetDevice(0);
  return ranks;
}

void Release(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    EXPECT_EQ(cudaStreamSynchronize(r.stream), cudaSuccess);
    EXPECT_EQ(ncclCommDestroy(r.comm), ncclSuccess);
    cudaStreamDestroy(r.stream);
    cudaFree(r.buf);
  }
}

// In-place sum of every rank's buffer, issued for all ranks from this thread in one group.
void GroupedAllReduce(std::vector<Rank>& ranks, size_t count) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (Rank& r : ranks) {
    ASSERT_EQ(ncclAllReduce(r.buf, r.buf, count, ncclFloat32, ncclSum, r.comm, r.stream),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (Rank& r : ranks) ASSERT_EQ(cudaStreamSynchronize(r.stream), cudaSuccess);
}

TEST(NcclSingleThreadTest, InitAllAndGroupedAllReduce) {
  const int n = 4;
  const size_t count = 3000;
  std::vector<ncclComm_t> comms(n);
  int devlist[n] = {3, 2, 1, 0};
  ASSERT_EQ(ncclCommInitAll(comms.data(), n, devlist), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    int rank = -1, count_out = -1, dev = -1;
    EXPECT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCount(comms[r], &count_out), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms[r], &dev), ncclSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(count_out, n);
    EXPECT_EQ(dev, devlist[r]);
  }
  std::vector<Rank> ranks = PrepareRanks(comms, count);
  GroupedAllReduce(ranks, count);
  for (Rank& r : ranks) EXPECT_EQ(r.buf[count - 1], 10.0f);
  Release(ranks);
}

TEST(NcclSingleThreadTest, GroupedInitRank) {
  const int n = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(ncclCommInitRank(&comms[r], n, id, r), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::vector<Rank> ranks = PrepareRanks(comms, 10);
  GroupedAllReduce(ranks, 10);
  for (Rank& r : ranks) EXPECT_EQ(r.buf[0], 6.0f);

  // Split every rank from this thread inside one group: each creation waits for the others.
  std::vector<ncclComm_t> halves(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ncclCommSplit(comms[r], r == 0 ? 0 : 1, r, &halves[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  int count = 0;
  EXPECT_EQ(ncclCommCount(halves[0], &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommCount(halves[2], &count), ncclSuccess);
  EXPECT_EQ(count, 2);
  for (ncclComm_t c : halves) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  Release(ranks);
}

TEST(NcclSingleThreadTest, NonBlockingInit) {
  const int n = 2;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> comms(n);
  // The first rank cannot finish until the second arrives: ncclInProgress, not a deadlock.
  EXPECT_EQ(ncclCommInitRankConfig(&comms[0], n, id, 0, &config), ncclInProgress);
  ncclResult_t second = ncclCommInitRankConfig(&comms[1], n, id, 1, &config);
  EXPECT_TRUE(second == ncclSuccess || second == ncclInProgress) << second;
  for (ncclComm_t c : comms) {
    ncclResult_t state = ncclInProgress;
    for (int i = 0; i < 10000 && state == ncclInProgress; ++i) {
      ASSERT_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
    }
    EXPECT_EQ(state, ncclSuccess);
  }
  std::vector<Rank> ranks = PrepareRanks(comms, 5);
  GroupedAllReduce(ranks, 5);
  EXPECT_EQ(ranks[1].buf[4], 3.0f);
  Release(ranks);
}

// Communicators overlap in a group; operations of one communicator follow each other.
TEST(NcclSingleThreadTest, GroupTiming) {
  const int n = 2;
  const size_t count = 1 << 18;
  std::vector<ncclComm_t> a(n), b(n);
  ASSERT_EQ(ncclCommInitAll(a.data(), n, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(b.data(), n, nullptr), ncclSuccess);
  std::vector<Rank> ranks = PrepareRanks(a, count);
  const double one = ModelMs(count * 4.0, 1.0, kBwGbps, kLatUs);
  // Both streams wait for one event, so both ranks arrive at exactly the event's time.
  cudaStream_t gate_stream;
  ASSERT_EQ(cudaStreamCreate(&gate_stream), cudaSuccess);
  auto time_group = [&](const std::vector<ncclComm_t>& first,
                        const std::vector<ncclComm_t>& second) {
    cudaEvent_t gate, stop;
    EXPECT_EQ(cudaEventCreate(&gate), cudaSuccess);
    EXPECT_EQ(cudaEventCreate(&stop), cudaSuccess);
    // Far enough ahead that this thread issues the group before the gate time, even when loaded.
    EXPECT_EQ(Runtime().enqueue_busy(gate_stream, "busy", 1'000'000'000, 0), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(gate, gate_stream), cudaSuccess);
    for (Rank& r : ranks) EXPECT_EQ(cudaStreamWaitEvent(r.stream, gate, 0), cudaSuccess);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ncclAllReduce(ranks[r].buf, ranks[r].buf, count, ncclFloat32, ncclSum, first[r],
                              ranks[r].stream),
                ncclSuccess);
      EXPECT_EQ(ncclAllReduce(ranks[r].buf, ranks[r].buf, count, ncclFloat32, ncclSum, second[r],
                              ranks[r].stream),
                ncclSuccess);
    }
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(cudaEventRecord(stop, ranks[0].stream), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    float ms = -1;
    EXPECT_EQ(cudaEventElapsedTime(&ms, gate, stop), cudaSuccess);
    cudaEventDestroy(gate);
    cudaEventDestroy(stop);
    return ms;
  };
  EXPECT_NEAR(time_group(a, b), one, 1e-3);
  EXPECT_NEAR(time_group(a, a), 2 * one, 1e-3);
  cudaStreamDestroy(gate_stream);
  for (ncclComm_t c : b) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  Release(ranks);
}

// Every rank ends at the same time: max(arrivals) + model.
TEST(NcclSingleThreadTest, EveryRankEndsTogether) {
  const int n = 3;
  const size_t count = 1 << 16;
  std::vector<ncclComm_t> comms(n);
  ASSERT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
  std::vector<Rank> ranks = PrepareRanks(comms, count);
  // Arrivals at gate + 10, 17 and 24 ms exactly: every stream waits for one event first.
  cudaStream_t gate_stream;
  cudaEvent_t gate;
  ASSERT_EQ(cudaStreamCreate(&gate_stream), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&gate), cudaSuccess);
  ASSERT_EQ(Runtime().enqueue_busy(gate_stream, "busy", 1'000'000'000, 0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(gate, gate_stream), cudaSuccess);
  std::vector<cudaEvent_t> arrive(n), end(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(cudaEventCreate(&arrive[r]), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&end[r]), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(ranks[r].stream, gate, 0), cudaSuccess);
    ASSERT_EQ(Runtime().enqueue_busy(ranks[r].stream, "busy", (10 + 7 * r) * 1'000'000, 0),
              cudaSuccess);
    ASSERT_EQ(cudaEventRecord(arrive[r], ranks[r].stream), cudaSuccess);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (Rank& r : ranks) {
    ASSERT_EQ(ncclAllReduce(r.buf, r.buf, count, ncclFloat32, ncclSum, r.comm, r.stream),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(cudaEventRecord(end[r], ranks[r].stream), cudaSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(cudaEventSynchronize(end[r]), cudaSuccess);
  for (int r = 1; r < n; ++r) {
    float ms = -1;
    ASSERT_EQ(cudaEventElapsedTime(&ms, end[0], end[r]), cudaSuccess);
    EXPECT_NEAR(ms, 0, 1e-4) << "rank " << r;
  }
  float ms = -1;
  ASSERT_EQ(cudaEventElapsedTime(&ms, arrive[n - 1], end[0]), cudaSuccess);  // the last to arrive
  EXPECT_NEAR(ms, ModelMs(count * 4.0, 2.0 * (n - 1) / n, kBwGbps, kLatUs), 1e-3);
  ASSERT_EQ(cudaEventElapsedTime(&ms, gate, end[0]), cudaSuccess);
  EXPECT_NEAR(ms, 24 + ModelMs(count * 4.0, 2.0 * (n - 1) / n, kBwGbps, kLatUs), 1e-3);
  for (int r = 0; r < n; ++r) {
    cudaEventDestroy(arrive[r]);
    cudaEventDestroy(end[r]);
  }
  cudaEventDestroy(gate);
  cudaStreamDestroy(gate_stream);
  Release(ranks);
}

// A captured all-reduce runs once per graph launch, each time as a new collective.
TEST(NcclThreadTest, GraphReplays) {
  const int n = 2;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<float> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      ncclComm_t comm;
      ASSERT_EQ(ncclCommInitRank(&comm, n, id, r), ncclSuccess);
      cudaStream_t s;
      ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
      float* buf;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), 64 * sizeof(float)), cudaSuccess);
      for (int i = 0; i < 64; ++i) buf[i] = 1;
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, s), ncclSuccess);
      ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      results[r] = buf[63];
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      cudaFree(buf);
      cudaStreamDestroy(s);
    });
  }
  for (std::thread& t : threads) t.join();
  for (float v : results) EXPECT_EQ(v, 8.0f);  // 1 -> 2 -> 4 -> 8
}

// A rank whose peer never comes is released by ncclCommAbort.
TEST(NcclSingleThreadTest, AbortReleasesWaitingOperation) {
  std::vector<ncclComm_t> comms(2);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  std::vector<Rank> ranks = PrepareRanks(comms, 4);
  ASSERT_EQ(
      ncclAllReduce(ranks[0].buf, ranks[0].buf, 4, ncclFloat32, ncclSum, comms[0], ranks[0].stream),
      ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaStreamQuery(ranks[0].stream), cudaErrorNotReady);
  ASSERT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(ranks[0].stream), cudaSuccess);
  EXPECT_EQ(ranks[0].buf[0], 1.0f);  // nothing was reduced
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
  for (Rank& r : ranks) {
    cudaStreamDestroy(r.stream);
    cudaFree(r.buf);
  }
}

// ---- argument checking
// ---------------------------------------------------------------------------

class NcclArgumentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comm_, 1, id, 0), ncclSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf_, 1024), cudaSuccess);
  }
  void TearDown() override {
    cudaStreamSynchronize(stream_);
    EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    cudaStreamDestroy(stream_);
    cudaFree(buf_);
  }
  std::string LastError() { return ncclGetLastError(comm_); }

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* buf_ = nullptr;
};

TEST_F(NcclArgumentTest, InvalidArguments) {
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, ncclSum, nullptr, stream_),
            ncclInvalidArgument);
  EXPECT_NE(LastError().find("comm is NULL"), std::string::npos) << LastError();
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, static_cast<ncclDataType_t>(99), ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_NE(LastError().find("datatype"), std::string::npos) << LastError();
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, static_cast<ncclRedOp_t>(42), comm_, stream_),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, buf_, 4, ncclFloat32, ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_NE(LastError().find("sendbuff"), std::string::npos) << LastError();
  EXPECT_EQ(ncclAllReduce(buf_, nullptr, 4, ncclFloat32, ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(buf_, buf_, 4, ncclFloat32, 1, comm_, stream_), ncclInvalidArgument);
  EXPECT_NE(LastError().find("root"), std::string::npos) << LastError();
  EXPECT_EQ(ncclSend(buf_, 4, ncclFloat32, -1, comm_, stream_), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(buf_, 4, ncclFloat32, 1, comm_, stream_), ncclInvalidArgument);
  // Zero elements need no buffers.
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, stream_), ncclSuccess);
}

TEST_F(NcclArgumentTest, InvalidStreamIsACudaError) {
  int not_a_stream = 0;
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, ncclSum, comm_,
                          reinterpret_cast<cudaStream_t>(&not_a_stream)),
            ncclUnhandledCudaError);
}

TEST_F(NcclArgumentTest, GroupMisuse) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  // An error inside a group fails the group and discards its operations.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, ncclSum, comm_, stream_), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf_, nullptr, 4, ncclFloat32, ncclSum, comm_, stream_),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // nested
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, ncclSum, comm_, stream_), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclGroupSimulateEnd(&bad), ncclInvalidArgument);
}

TEST_F(NcclArgumentTest, Initialization) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  EXPECT_EQ(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument);
  ncclUniqueId foreign;
  memset(&foreign, 0x5a, sizeof(foreign));
  EXPECT_EQ(ncclCommInitRank(&c, 1, foreign, 0), ncclInvalidArgument);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &config), ncclInvalidArgument);
  config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 7;
  EXPECT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitAll(&c, 0, nullptr), ncclInvalidArgument);
  int dup[2] = {1, 1};
  ncclComm_t two[2];
  EXPECT_EQ(ncclCommInitAll(two, 2, dup), ncclInvalidUsage);
  EXPECT_EQ(ncclGetUniqueId(nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
}

TEST_F(NcclArgumentTest, SplitAndShrinkArguments) {
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comm_, -5, 0, &child, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommSplit(comm_, 0, 0, nullptr, nullptr), ncclInvalidArgument);
  int self = 0, out_of_range = 3;
  EXPECT_EQ(ncclCommShrink(comm_, &self, 1, &child, nullptr, NCCL_SHRINK_DEFAULT),
            ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comm_, &out_of_range, 1, &child, nullptr, NCCL_SHRINK_DEFAULT),
            ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comm_, nullptr, 0, &child, nullptr, 9), ncclInvalidArgument);
  // A split of one rank gives a communicator of one rank.
  ASSERT_EQ(ncclCommSplit(comm_, 3, 0, &child, nullptr), ncclSuccess);
  int count = 0;
  EXPECT_EQ(ncclCommCount(child, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
}

TEST_F(NcclArgumentTest, ReductionOperators) {
  float scalar = 2;
  ncclRedOp_t op;
  EXPECT_EQ(ncclRedOpCreatePreMulSum(nullptr, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32,
                                     static_cast<ncclScalarResidence_t>(5), comm_),
            ncclInvalidArgument);
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
            ncclSuccess);
  EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat64, op, comm_, stream_),
            ncclInvalidArgument);  // wrong type
  auto* f = static_cast<float*>(buf_);
  f[0] = 3;
  EXPECT_EQ(ncclAllReduce(f, f, 1, ncclFloat32, op, comm_, stream_), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(f[0], 6.0f);
  EXPECT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op, comm_), ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, comm_), ncclInvalidArgument);
}

TEST_F(NcclArgumentTest, MemoryAndRegistration) {
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, 4096), ncclSuccess);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(ncclMemAlloc(nullptr, 16), ncclInvalidArgument);
  EXPECT_EQ(ncclMemAlloc(&p, 0), ncclInvalidArgument);
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comm_, p, 4096, &handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm_, handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm_, handle), ncclInvalidArgument);
  ncclWindow_t win = nullptr;
  ASSERT_EQ(ncclCommWindowRegister(comm_, p, 4096, &win, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
  EXPECT_EQ(ncclCommWindowRegister(comm_, p, 4096, &win, 0x40), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowDeregister(comm_, win), ncclSuccess);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
}

TEST_F(NcclArgumentTest, InformationalCalls) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage),
               "invalid usage (run with NCCL_DEBUG=WARN for details)");
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm_, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comm_), ncclSuccess);
  // Revoked: operations are refused.
  EXPECT_EQ(ncclCommRevoke(comm_, 0), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf_, buf_, 4, ncclFloat32, ncclSum, comm_, stream_), ncclInvalidUsage);
}

}  // namespace
}  // namespace testing
}  // namespace nccl
}  // namespace xtsim
