// One process of profiler_test: NRANKS ranks as threads, each running SCENARIO through the public
// CUDA and NCCL APIs while the profiler plugin (NCCL_PROFILER_PLUGIN) records what it sees.
//
//   profiler_worker SCENARIO NRANKS
//
// Appends "app rank=R tid=T" for each rank thread to XTSIM_TEST_PROFILER_LOG (the plugin's log),
// prints "FAIL <message>" on stderr for each failed check, exits 0 when all passed. Scenarios:
//   none       init and destroy
//   allreduce  one ungrouped float AllReduce (sum of rank + 1), then destroy
//   group      one group of AllReduce, AllGather and Broadcast (root 0)
//   sendrecv   one group of Send and Recv with the next and previous rank
//   empty      an AllReduce of count 0, then a group of Send and Recv of count 0
//   simulate   a group of one AllReduce ended with ncclGroupSimulateEnd
//   repeat     ungrouped: AllReduce, AllGather, AllReduce
//   graph      an AllReduce captured into a graph, launched twice
//   abort      one AllReduce, then ncclCommAbort
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <nccl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kCount = 1024;

std::mutex g_fail_mu;
int g_failures = 0;

void Fail(int rank, const std::string& what) {
  std::lock_guard<std::mutex> lock(g_fail_mu);
  fprintf(stderr, "FAIL rank %d: %s\n", rank, what.c_str());
  ++g_failures;
}

#define CHECK_NCCL(rank, call)                                                             \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess) Fail(rank, std::string(#call) + ": " + ncclGetErrorString(r_)); \
  } while (0)

void LogApp(int rank) {
  const char* path = getenv("XTSIM_TEST_PROFILER_LOG");
  if (path == nullptr) return;
  char line[128];
  int n = snprintf(line, sizeof(line), "app rank=%d tid=%ld\n", rank, syscall(SYS_gettid));
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, static_cast<size_t>(n)) < 0) Fail(rank, "writing the log");
  close(fd);
}

float* DeviceFloats(size_t n, float value) {
  std::vector<float> host(n, value);
  void* p = nullptr;
  cudaMalloc(&p, n * sizeof(float));
  cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  return static_cast<float*>(p);
}

float FirstOf(const float* device) {
  float v = 0;
  cudaMemcpy(&v, device, sizeof(v), cudaMemcpyDeviceToHost);
  return v;
}

void RunRank(const std::string& scenario, int rank, int nranks, const ncclUniqueId& id) {
  cudaSetDevice(rank);
  LogApp(rank);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "xtsim-test-comm";
  ncclComm_t comm = nullptr;
  CHECK_NCCL(rank, ncclCommInitRankConfig(&comm, nranks, id, rank, &config));
  if (comm == nullptr) return;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  float* send = DeviceFloats(kCount * nranks, static_cast<float>(rank + 1));
  float* recv = DeviceFloats(kCount * nranks, -1.0f);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  if (scenario == "allreduce" || scenario == "abort") {
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
  } else if (scenario == "group") {
    CHECK_NCCL(rank, ncclGroupStart());
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(rank, ncclAllGather(send, recv, kCount, ncclFloat32, comm, stream));
    CHECK_NCCL(rank, ncclBroadcast(send, recv, kCount, ncclFloat32, 0, comm, stream));
    CHECK_NCCL(rank, ncclGroupEnd());
  } else if (scenario == "sendrecv") {
    CHECK_NCCL(rank, ncclGroupStart());
    CHECK_NCCL(rank, ncclSend(send, kCount, ncclFloat32, next, comm, stream));
    CHECK_NCCL(rank, ncclRecv(recv, kCount, ncclFloat32, prev, comm, stream));
    CHECK_NCCL(rank, ncclGroupEnd());
  } else if (scenario == "empty") {
    CHECK_NCCL(rank, ncclAllReduce(send, recv, 0, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(rank, ncclGroupStart());
    CHECK_NCCL(rank, ncclSend(send, 0, ncclFloat32, next, comm, stream));
    CHECK_NCCL(rank, ncclRecv(recv, 0, ncclFloat32, prev, comm, stream));
    CHECK_NCCL(rank, ncclGroupEnd());
  } else if (scenario == "repeat") {
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(rank, ncclAllGather(send, recv, kCount, ncclFloat32, comm, stream));
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
  } else if (scenario == "graph") {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    for (int i = 0; i < 2; ++i) cudaGraphLaunch(exec, stream);
    cudaStreamSynchronize(stream);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  } else if (scenario == "simulate") {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    CHECK_NCCL(rank, ncclGroupStart());
    CHECK_NCCL(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
    CHECK_NCCL(rank, ncclGroupSimulateEnd(&info));
  } else if (scenario != "none") {
    Fail(rank, "unknown scenario " + scenario);
  }
  cudaStreamSynchronize(stream);
  if (scenario == "allreduce") {
    float expected = static_cast<float>(nranks * (nranks + 1) / 2);
    if (FirstOf(recv) != expected) Fail(rank, "all-reduce result " + std::to_string(FirstOf(recv)));
  }
  if (scenario == "abort") {
    CHECK_NCCL(rank, ncclCommAbort(comm));
  } else {
    CHECK_NCCL(rank, ncclCommDestroy(comm));
  }
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SCENARIO NRANKS\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  int nranks = atoi(argv[2]);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] { RunRank(scenario, r, nranks, id); });
  }
  for (std::thread& t : threads) t.join();
  return g_failures == 0 ? 0 : 1;
}
