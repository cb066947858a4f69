// Runs nvcc-built programs (hook/programs) on the GPU simulator with libxtimer.so preloaded and a
// fake daemon (testing/fake_daemon.h) on the socket, and checks the records against the
// simulator's time model (docs/gpusim*.md).
// Usage: program_test GPUSIM_RUN LIBXTIMER_SO WORKLOAD ERRORS WORKLOAD_PTSZ EXTRAS LOCAL_SCOPE
//                     LOCAL_COMM_MODULE LOCAL_GEMM_MODULE FIRST_CALLS CAPTURE
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/comm_registry.h"
#include "hook/testing/fake_daemon.h"
#include "hook/testing/program_runner.h"

namespace xtimer {
namespace hook {
namespace {

using format::DType;
using format::OpKind;
using format::Operation;
using format::OpRecord;
using testing::FakeDaemon;
using testing::NameOf;
using testing::ReapProgram;
using testing::SpawnProgram;
using testing::TmpDir;

std::string g_run, g_lib, g_workload, g_errors, g_workload_ptsz, g_extras;
std::string g_local_scope, g_local_comm, g_local_gemm, g_first_calls, g_capture;

// The bytes of an ncclUniqueId (nccl.h is not included here).
struct ncclUniqueIdBytes {
  char b[128];
};

// cudaStreamPerThread, as cuda_runtime_api.h defines it.
const void* cudaStreamPerThreadValue() { return reinterpret_cast<const void*>(0x2); }

// Runs argv with the extra environment; stdout and stderr go to *out. Returns the exit status
// (or 128 + signal).
int RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               std::string* out,
        FakeDaemon* kill_after = nullptr, int kill_ms = 0, std::unique_ptr<FakeDaemon>* restart = nullptr,
        const std::string& restart_path = "") {
  std::string out_path = TmpDir() + "/program.out";
  pid_t pid = SpawnProgram(argv, env, out_path);
  if (kill_after != nullptr) {
    // `kill_ms` after the hook registered (a loaded machine may take longer to get there).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (kill_after->registrations() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_ms));
    kill_after->ReadAll();  // as a real daemon would have: the new one reads on from there
    kill_after->Kill();
    std::string error;
    *restart = FakeDaemon::Start(restart_path, &error);
  }
  return ReapProgram(pid, out_path, out);
}

std::string SocketPath(const char* tag) {
  return TmpDir() + "/" + tag + ".sock";
}

std::string g_self;

// The program under gpusim-run with the hook preloaded (hook/testing/preloaded_exec.h).
std::vector<std::string> Hooked(std::vector<std::string> program_and_args) {
  std::vector<std::string> argv = {g_run, g_self, "--exec-preloaded"};
  argv.insert(argv.end(), program_and_args.begin(), program_and_args.end());
  return argv;
}

// The test's knobs for every hooked run: job, host, kernel filter and the simulator's model. The
// tests count and check every op, so the budget at 100% times them all: at the default budget the
// number timed depends on how long the hook's own work takes (under TSan, ten times longer).
std::vector<std::string> TestEnv() {
  return {"XTIMER_JOB=hooktest",
          "XTIMER_OVERHEAD_BUDGET=100%",
          "XTIMER_HOST=testhost",
          "XTIMER_KERNEL_FILTER=timed_k",
          "XTIMER_SIM_KERNEL_TIMES=timed_kernel=30;other_kernel=10;delay_kernel=500000",
          "XTIMER_SIM_TFLOPS_BF16=1000",
          "XTIMER_SIM_TFLOPS_FP32=50",
          "XTIMER_SIM_TFLOPS_TF32=200"};
}

std::vector<std::string> HookEnv(const std::string& socket) {
  std::vector<std::string> env = {"XT_HOOK_LIB=" + g_lib, "XTIMER_DAEMON_SOCKET=" + socket};
  for (const std::string& e : TestEnv()) env.push_back(e);
  return env;
}

// Model duration in ns, as the simulator rounds it.
int64_t Gemm(double m, double n, double k, double batch, double tflops) {
  return std::llround(2 * m * n * k * batch / (tflops * 1e12) * 1e9);
}
int64_t Copy(double bytes, double gbps) { return std::llround(2000 + bytes / gbps); }
int64_t Coll(double alg_bytes, double factor) {
  return std::llround(5000 + alg_bytes * factor / 150.0);
}

std::vector<OpRecord> Ops(const FakeDaemon::Ring& ring, Operation op) {
  std::vector<OpRecord> out;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kOp) &&
        r.op.op == static_cast<uint16_t>(op)) {
      out.push_back(r.op);
    }
  }
  // Completion order differs across streams: order by host launch time.
  std::stable_sort(out.begin(), out.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.cpu_launch_ns < b.cpu_launch_ns;
  });
  return out;
}

#define EXPECT_NS(actual, expected) EXPECT_NEAR(static_cast<double>(actual), (expected), 2.0)

// Runs a program with the hook and a fake daemon; returns its one ring (testing::Runner).
bool RunHooked(const std::vector<std::string>& program_and_args, const char* tag,
               const std::vector<std::string>& extra_env, FakeDaemon::Ring* ring,
               std::string* out) {
  std::vector<std::string> env = TestEnv();
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return testing::Runner{g_run, g_self, g_lib}.RunHooked(program_and_args, tag, env, ring, out);
}

// The workload's records (`program` is workload or its per-thread default stream build).
void CheckWorkload(const std::string& program, FakeDaemon::Ring* ring_out) {
  std::string out;
  ASSERT_TRUE(RunHooked({program, "all"}, "w", {}, ring_out, &out));  // checks drops, validity
  const FakeDaemon::Ring& ring = *ring_out;
  EXPECT_EQ(ring.identity.job, "hooktest");
  EXPECT_EQ(ring.identity.host, "testhost");
  EXPECT_EQ(ring.identity.pod, "testhost");
  // No RANK variable: the rank is learned from the first root communicator (ranks are threads
  // here, so either may come first).
  EXPECT_TRUE(ring.identity.rank == 0 || ring.identity.rank == 1) << ring.identity.rank;
  EXPECT_GT(ring.heartbeat_ns, 0);

  // GEMMs.
  auto gemm_ex = Ops(ring, Operation::kGemmEx);
  ASSERT_EQ(gemm_ex.size(), 1u);
  EXPECT_EQ(gemm_ex[0].kind, static_cast<uint8_t>(OpKind::kMatmul));
  EXPECT_EQ(gemm_ex[0].dtype, static_cast<uint8_t>(DType::kBF16));
  EXPECT_EQ(gemm_ex[0].m, 4096);
  EXPECT_EQ(gemm_ex[0].n, 4096);
  EXPECT_EQ(gemm_ex[0].k, 4096);
  EXPECT_EQ(gemm_ex[0].batch, 1);
  EXPECT_TRUE(gemm_ex[0].flags & format::kFlagTransA);
  EXPECT_FALSE(gemm_ex[0].flags & format::kFlagTransB);
  EXPECT_NS(gemm_ex[0].duration_ns, Gemm(4096, 4096, 4096, 1, 1000));
  EXPECT_GE(gemm_ex[0].gpu_start_ns + 1000000, gemm_ex[0].cpu_launch_ns);

  auto sgemm = Ops(ring, Operation::kSgemm);
  ASSERT_EQ(sgemm.size(), 2u);
  EXPECT_EQ(sgemm[0].dtype, static_cast<uint8_t>(DType::kF32));
  EXPECT_EQ(sgemm[0].m, 1024);
  EXPECT_EQ(sgemm[0].n, 2048);
  EXPECT_EQ(sgemm[0].k, 512);
  EXPECT_TRUE(sgemm[0].flags & format::kFlagTransB);
  EXPECT_NS(sgemm[0].duration_ns, Gemm(1024, 2048, 512, 1, 50));
  EXPECT_EQ(sgemm[1].dtype, static_cast<uint8_t>(DType::kTF32));
  EXPECT_NS(sgemm[1].duration_ns, Gemm(1024, 1024, 1024, 1, 200));

  auto batched = Ops(ring, Operation::kSgemmStridedBatched);
  ASSERT_EQ(batched.size(), 1u);
  EXPECT_EQ(batched[0].batch, 4);
  EXPECT_NS(batched[0].duration_ns, Gemm(512, 512, 512, 4, 50));

  auto lt = Ops(ring, Operation::kLtMatmul);
  ASSERT_EQ(lt.size(), 1u);
  EXPECT_EQ(lt[0].dtype, static_cast<uint8_t>(DType::kBF16));
  EXPECT_EQ(lt[0].m, 1024);
  EXPECT_EQ(lt[0].n, 2048);
  EXPECT_EQ(lt[0].k, 512);
  EXPECT_EQ(lt[0].batch, 2);
  EXPECT_TRUE(lt[0].flags & format::kFlagTransA);
  EXPECT_NS(lt[0].duration_ns, Gemm(1024, 2048, 512, 2, 1000));

  // Copies and sets (the capture's memset is not recorded: one async memset only).
  auto htod = Ops(ring, Operation::kMemcpyHtoD);
  ASSERT_EQ(htod.size(), 1u);
  EXPECT_EQ(htod[0].bytes, 1u << 20);
  EXPECT_NS(htod[0].duration_ns, Copy(1 << 20, 25));
  auto dtoh = Ops(ring, Operation::kMemcpyDtoH);
  ASSERT_EQ(dtoh.size(), 1u);
  EXPECT_GE(dtoh[0].duration_ns, Copy(1 << 20, 25) - 2);
  auto memsets = Ops(ring, Operation::kMemset);
  ASSERT_EQ(memsets.size(), 2u);
  EXPECT_NS(memsets[0].duration_ns, Copy(1 << 20, 2000));
  EXPECT_TRUE(memsets[0].flags & format::kFlagAsync);
  EXPECT_EQ(memsets[1].bytes, 4096u);
  EXPECT_FALSE(memsets[1].flags & format::kFlagAsync);

  // Kernels: only the filtered one, once (the captured launch is not recorded), with its name.
  auto kernels = Ops(ring, Operation::kKernelLaunch);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_NS(kernels[0].duration_ns, 30000);
  ASSERT_NE(kernels[0].name_id, 0u);
  std::string name;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kName) &&
        r.name.name_id == kernels[0].name_id) {
      name.append(r.name.text, r.name.length);
    }
  }
  EXPECT_EQ(name, "timed_kernel(float*, int)");

  // The graph: one op for the replayed memset + kernel.
  auto graphs = Ops(ring, Operation::kGraphLaunch);
  ASSERT_EQ(graphs.size(), 1u);
  EXPECT_EQ(graphs[0].kind, static_cast<uint8_t>(OpKind::kGraph));
  EXPECT_NS(graphs[0].duration_ns, Copy(1 << 20, 2000) + 30000);

  // Host syncs.
  EXPECT_GE(Ops(ring, Operation::kStreamSynchronize).size(), 2u);
  EXPECT_EQ(Ops(ring, Operation::kDeviceSynchronize).size(), 1u);
  EXPECT_EQ(Ops(ring, Operation::kEventSynchronize).size(), 1u);

  // Communicators: root (2 ranks) and split child, same ids on both ranks.
  std::map<uint64_t, std::set<int>> comm_ranks;
  std::map<uint64_t, uint64_t> parent;
  for (const auto& r : ring.records) {
    if (r.header.type != static_cast<uint8_t>(format::RecordType::kComm)) continue;
    comm_ranks[r.comm.comm_id].insert(r.comm.rank);
    parent[r.comm.comm_id] = r.comm.parent_id;
    EXPECT_EQ(r.comm.size, 2);
    EXPECT_EQ(r.comm.global_rank, ring.identity.rank);
  }
  ASSERT_EQ(comm_ranks.size(), 2u);
  uint64_t root = 0, child = 0;
  for (auto& kv : comm_ranks) {
    EXPECT_EQ(kv.second, (std::set<int>{0, 1}));
    (parent[kv.first] == 0 ? root : child) = kv.first;
  }
  ASSERT_NE(root, 0u);
  ASSERT_NE(child, 0u);
  EXPECT_EQ(parent[child], root);

  // Collectives: per rank (device) seqs 1..6 on the root, identical across ranks; the
  // last-arriving rank's duration is the model's.
  struct Expect {
    Operation op;
    uint64_t seq;
    int64_t model;
    uint64_t bytes;
  };
  const double mib4 = 4 << 20;
  std::vector<Expect> expect = {
      {Operation::kAllReduce, 1, Coll(mib4, 1.0), 4u << 20},
      {Operation::kAllReduce, 2, Coll(mib4, 1.0), 4u << 20},
      {Operation::kAllReduce, 3, Coll(mib4, 1.0), 4u << 20},
      {Operation::kAllGather, 4, Coll(2 * (2 << 20), 0.5), 2u << 20},
      {Operation::kReduceScatter, 5, Coll(2 * (2 << 20), 0.5), 4u << 20},
      {Operation::kBroadcast, 6, Coll(mib4, 1.0), 4u << 20},
  };
  for (const Expect& e : expect) {
    std::vector<OpRecord> per_rank;
    for (const OpRecord& r : Ops(ring, e.op)) {
      if (r.comm_id == root && r.seq == e.seq) per_rank.push_back(r);
    }
    ASSERT_EQ(per_rank.size(), 2u) << format::OperationName(e.op) << " seq " << e.seq;
    EXPECT_NE(per_rank[0].device, per_rank[1].device);
    int64_t min_dur = std::min(per_rank[0].duration_ns, per_rank[1].duration_ns);
    EXPECT_NS(min_dur, e.model) << format::OperationName(e.op);
    for (const OpRecord& r : per_rank) {
      EXPECT_EQ(r.kind, static_cast<uint8_t>(OpKind::kCollective));
      EXPECT_EQ(r.comm_size, 2);
      EXPECT_EQ(r.bytes, e.bytes) << format::OperationName(e.op);
    }
  }
  auto child_ar = Ops(ring, Operation::kAllReduce);
  int on_child = 0;
  for (const OpRecord& r : child_ar) {
    if (r.comm_id == child) {
      ++on_child;
      EXPECT_EQ(r.seq, 1u);
    }
  }
  EXPECT_EQ(on_child, 2);

  // The group: per rank one send and one recv, p2p seq 1, same group id, group timing.
  auto sends = Ops(ring, Operation::kSend);
  auto recvs = Ops(ring, Operation::kRecv);
  ASSERT_EQ(sends.size(), 2u);
  ASSERT_EQ(recvs.size(), 2u);
  for (const OpRecord& s : sends) {
    EXPECT_EQ(s.kind, static_cast<uint8_t>(OpKind::kP2P));
    EXPECT_EQ(s.seq, 1u);
    EXPECT_TRUE(s.flags & format::kFlagInGroup);
    EXPECT_NE(s.group_id, 0u);
    EXPECT_EQ(s.peer, 1 - s.device);
    const OpRecord* r = nullptr;
    for (const OpRecord& x : recvs) {
      if (x.device == s.device) r = &x;
    }
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->group_id, s.group_id);
    EXPECT_EQ(r->gpu_start_ns, s.gpu_start_ns);
    EXPECT_EQ(r->duration_ns, s.duration_ns);
    EXPECT_GT(s.duration_ns, 0);
  }

  // In-flight table: everything completed.
  ASSERT_FALSE(ring.inflight.empty());
  for (const auto& row : ring.inflight) {
    EXPECT_EQ(row.last_issued_seq, row.last_completed_seq) << row.comm_id;
    EXPECT_EQ(row.oldest_launch_ns, 0);
  }
}

// (record type, op kind, op) -> count.
std::map<std::tuple<int, int, int>, int> Kinds(const FakeDaemon::Ring& ring) {
  std::map<std::tuple<int, int, int>, int> out;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kOp)) {
      ++out[{r.header.type, r.op.kind, r.op.op}];
    } else {
      ++out[{r.header.type, 0, 0}];
    }
  }
  return out;
}

TEST(ProgramTest, WorkloadRecordsMatchTheModel) {
  FakeDaemon::Ring ring;
  CheckWorkload(g_workload, &ring);
}

// Issue 35: the hook reports its own time on the application's threads. With the simulator
// charging H200 call costs, every timed kernel cost the caller at least two timed event records
// (test/gpusim/common/call_cost.h: 2 x 1,932 ns; no capture check while no capture is under
// way): the reported time is at least that (a lower bound: charged time is spent, so it holds on
// a loaded machine).
TEST(ProgramTest, TheHookReportsItsOwnTimeOnTheApplicationsThreads) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked({g_workload, "all"}, "own", {"XTIMER_SIM_CALL_COSTS=h200"}, &ring, &out));
  size_t kernels = 0;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kOp) &&
        r.op.kind == static_cast<uint8_t>(OpKind::kKernel)) {
      ++kernels;
    }
  }
  ASSERT_GT(kernels, 0u);
  EXPECT_GE(ring.hook_own_ns, kernels * 2 * 1932) << kernels << " timed kernels";
}

// Built with --default-stream per-thread (//hook:ptsz_symbols_test checks that it calls the
// _ptsz / _ptds entry points): the same records, the per-thread-stream ops on cudaStreamPerThread.
TEST(ProgramTest, PerThreadDefaultStreamBuildGivesTheSameRecords) {
  FakeDaemon::Ring plain, ptsz;
  CheckWorkload(g_workload, &plain);
  CheckWorkload(g_workload_ptsz, &ptsz);
  auto a = Kinds(plain), b = Kinds(ptsz);
  EXPECT_EQ(a, b);
  // The synchronous copy and memset ran on the calling thread's default stream (the _ptds entry
  // points), the async ones on the stream passed.
  auto per_thread = reinterpret_cast<uint64_t>(cudaStreamPerThreadValue());
  auto dtoh = Ops(ptsz, Operation::kMemcpyDtoH);
  ASSERT_EQ(dtoh.size(), 1u);
  EXPECT_EQ(dtoh[0].stream, per_thread);
  auto memsets = Ops(ptsz, Operation::kMemset);
  ASSERT_EQ(memsets.size(), 2u);
  EXPECT_NE(memsets[0].stream, per_thread);
  EXPECT_NE(memsets[0].stream, 0u);
  EXPECT_EQ(memsets[1].stream, per_thread);
  auto plain_memsets = Ops(plain, Operation::kMemset);
  ASSERT_EQ(plain_memsets.size(), 2u);
  EXPECT_EQ(plain_memsets[1].stream, 0u);  // the legacy default stream
  EXPECT_GE(Ops(ptsz, Operation::kStreamSynchronize).size(), 2u);
}

// XTIMER_SAMPLE_RATE=4: per op signature, calls 1, 5, 9, ... are timed; collectives always.
TEST(ProgramTest, SampleRateTimesOneInNPerSignatureAndEveryCollective) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked({g_extras, "sample"}, "s", {"XTIMER_SAMPLE_RATE=4"}, &ring, &out));
  std::vector<OpRecord> big, small;
  for (const OpRecord& r : Ops(ring, Operation::kSgemm)) {
    (r.m == 1024 ? big : small).push_back(r);
  }
  // Shape A: 40 calls -> 10 records; the GEMMs queue behind the delay kernel, so the i-th call
  // starts i model durations after the first: the timed ones are calls 0, 4, 8, ...
  const int64_t a_dur = Gemm(1024, 512, 256, 1, 50);
  ASSERT_EQ(big.size(), 10u);
  for (size_t j = 0; j < big.size(); ++j) {
    EXPECT_EQ(big[j].n, 512);
    EXPECT_EQ(big[j].k, 256);
    EXPECT_NS(big[j].duration_ns, a_dur);
  }
  // Shape B (8 calls, one after calls 0, 5, 10, ... of A) -> 2 records: its calls 0 and 4.
  const int64_t b_dur = Gemm(256, 256, 256, 1, 50);
  ASSERT_EQ(small.size(), 2u);
  for (const OpRecord& r : small) EXPECT_NS(r.duration_ns, b_dur);
  // Stream position of A's call i: i A's before it, plus the B's issued before it.
  auto a_start = [&](int i) { return i * a_dur + ((i + 4) / 5) * b_dur; };
  for (size_t j = 1; j < big.size(); ++j) {
    EXPECT_NEAR(static_cast<double>(big[j].gpu_start_ns - big[0].gpu_start_ns),
                static_cast<double>(a_start(4 * j) - a_start(0)), 50.0)
        << "record " << j;
  }
  // B's call 4 is issued right after A's call 20.
  EXPECT_NEAR(static_cast<double>(small[1].gpu_start_ns - big[0].gpu_start_ns),
              static_cast<double>(a_start(21) - b_dur), 50.0);
  // Collectives: all 8 per rank, seqs 1..8, identical across ranks.
  auto ar = Ops(ring, Operation::kAllReduce);
  ASSERT_EQ(ar.size(), 16u);
  std::map<int, std::set<uint64_t>> seqs;
  std::set<uint64_t> comm_ids;
  for (const OpRecord& r : ar) {
    seqs[r.device].insert(r.seq);
    comm_ids.insert(r.comm_id);
    EXPECT_GT(r.duration_ns, 0);
  }
  std::set<uint64_t> one_to_eight = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(seqs.size(), 2u);
  for (auto& kv : seqs) EXPECT_EQ(kv.second, one_to_eight) << "device " << kv.first;
  EXPECT_EQ(comm_ids.size(), 1u);
}

// The _64 entry points: int64 sizes (one above INT32_MAX each) reach the record intact.
TEST(ProgramTest, Gemm64VariantsRecordTheirSizes) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked({g_extras, "gemm64"}, "g", {}, &ring, &out));
  auto ex = Ops(ring, Operation::kGemmEx);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].dtype, static_cast<uint8_t>(DType::kBF16));
  EXPECT_EQ(ex[0].m, 3000000000LL);
  EXPECT_EQ(ex[0].n, 16);
  EXPECT_EQ(ex[0].k, 32);
  EXPECT_EQ(ex[0].batch, 1);
  EXPECT_TRUE(ex[0].flags & format::kFlagTransA);
  EXPECT_FALSE(ex[0].flags & format::kFlagTransB);
  EXPECT_NS(ex[0].duration_ns, Gemm(3e9, 16, 32, 1, 1000));

  auto sgemm = Ops(ring, Operation::kSgemm);
  ASSERT_EQ(sgemm.size(), 1u);
  EXPECT_EQ(sgemm[0].dtype, static_cast<uint8_t>(DType::kF32));
  EXPECT_EQ(sgemm[0].m, 64);
  EXPECT_EQ(sgemm[0].n, 2200000000LL);
  EXPECT_EQ(sgemm[0].k, 2);
  EXPECT_EQ(sgemm[0].batch, 1);
  EXPECT_TRUE(sgemm[0].flags & format::kFlagTransB);
  EXPECT_NS(sgemm[0].duration_ns, Gemm(64, 2.2e9, 2, 1, 50));

  auto sbex = Ops(ring, Operation::kGemmStridedBatchedEx);
  ASSERT_EQ(sbex.size(), 1u);
  EXPECT_EQ(sbex[0].dtype, static_cast<uint8_t>(DType::kBF16));
  EXPECT_EQ(sbex[0].m, 8);
  EXPECT_EQ(sbex[0].n, 8);
  EXPECT_EQ(sbex[0].k, 2500000000LL);
  EXPECT_EQ(sbex[0].batch, 3);
  EXPECT_NS(sbex[0].duration_ns, Gemm(8, 8, 2.5e9, 3, 1000));

  auto sb = Ops(ring, Operation::kSgemmStridedBatched);
  ASSERT_EQ(sb.size(), 1u);
  EXPECT_EQ(sb[0].m, 1);
  EXPECT_EQ(sb[0].batch, 3000000000LL);
  EXPECT_NS(sb[0].duration_ns, Gemm(1, 1, 1, 3e9, 50));

  auto bex = Ops(ring, Operation::kGemmBatchedEx);
  ASSERT_EQ(bex.size(), 1u);
  EXPECT_EQ(bex[0].m, (1LL << 31) + 1);
  EXPECT_EQ(bex[0].n, 4);
  EXPECT_EQ(bex[0].k, 4);
  EXPECT_EQ(bex[0].batch, 1);
  EXPECT_NS(bex[0].duration_ns, Gemm((1LL << 31) + 1, 4, 4, 1, 1000));
}

// Comm records by comm id: rank -> record.
std::map<uint64_t, std::map<int, format::CommRecord>> CommsOf(const FakeDaemon::Ring& ring) {
  std::map<uint64_t, std::map<int, format::CommRecord>> out;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kComm)) {
      EXPECT_EQ(out[r.comm.comm_id].count(r.comm.rank), 0u) << "rank " << r.comm.rank;
      out[r.comm.comm_id][r.comm.rank] = r.comm;
    }
  }
  return out;
}

std::string Field(const std::string& out, const std::string& key) {
  size_t p = out.find(key + "=");
  if (p == std::string::npos) return "";
  p += key.size() + 1;
  return out.substr(p, out.find('\n', p) - p);
}

// One thread, ncclCommInitAll over 3 devices, two grouped all-reduces (current device: 2).
TEST(ProgramTest, CommInitAllRanksShareTheIdAndTheSeqs) {
  FakeDaemon::Ring ring;
  std::string out;
  // Each stream starts with a delay kernel, so the group's events and all-reduces queue behind
  // it and start together at its end, whatever the host's pace: 3 s (the value is in µs)
  // outlasts the setup after the first delay (devices initialised, buffers allocated), which
  // under TSan on a loaded machine took longer than the usual 0.5 s and let host time into the
  // durations.
  ASSERT_TRUE(RunHooked({g_extras, "initall"}, "a", {"XTIMER_SIM_KERNEL_TIMES=delay_kernel=3000000"},
                        &ring, &out));
  auto comms = CommsOf(ring);
  ASSERT_EQ(comms.size(), 1u);
  uint64_t id = comms.begin()->first;
  int pid = atoi(Field(out, "pid").c_str());
  ASSERT_GT(pid, 0) << out;
  EXPECT_EQ(id, CommIdForInitAll(pid, 0));  // docs/hook.md: hash(pid, per-process counter)
  ASSERT_EQ(comms[id].size(), 3u);
  for (auto& kv : comms[id]) {
    EXPECT_EQ(kv.second.size, 3);
    EXPECT_EQ(kv.second.device, kv.first);  // no device list: rank i on device i
    EXPECT_EQ(kv.second.parent_id, 0u);
  }
  auto ar = Ops(ring, Operation::kAllReduce);
  ASSERT_EQ(ar.size(), 6u);
  std::map<uint64_t, std::set<int>> devices_by_seq;
  std::map<uint64_t, std::set<uint32_t>> groups_by_seq;
  for (const OpRecord& r : ar) {
    EXPECT_EQ(r.comm_id, id);
    EXPECT_EQ(r.comm_size, 3);
    EXPECT_TRUE(r.flags & format::kFlagInGroup);
    EXPECT_GT(r.duration_ns, 0);
    devices_by_seq[r.seq].insert(r.device);
    groups_by_seq[r.seq].insert(r.group_id);
  }
  // Each rank's op is reported on its communicator's device, not the thread's current one.
  std::set<int> all = {0, 1, 2};
  EXPECT_EQ(devices_by_seq[1], all);
  EXPECT_EQ(devices_by_seq[2], all);
  EXPECT_EQ(groups_by_seq[1].size(), 1u);
  EXPECT_EQ(groups_by_seq[2].size(), 1u);
  EXPECT_NE(*groups_by_seq[1].begin(), *groups_by_seq[2].begin());
  // The last rank to arrive waits for nobody: the model's duration.
  int64_t min_dur = INT64_MAX;
  for (const OpRecord& r : ar) {
    if (r.seq == 1) min_dur = std::min(min_dur, r.duration_ns);
  }
  EXPECT_NS(min_dur, Coll(4 << 20, 2.0 * 2 / 3));
}

// The process's row of communicator `comm_id` on `device` in the in-flight table, or null.
const format::InflightRow* Row(const FakeDaemon::Ring& ring, uint64_t comm_id, int device) {
  for (const auto& r : ring.inflight) {
    if (r.comm_id == comm_id && r.device == device) return &r;
  }
  return nullptr;
}

// Polls the fake daemon while the program runs until `done(ring)` or `timeout_ms`; false when the
// program ended or time ran out first.
template <typename Pred>
bool WatchRing(FakeDaemon* daemon, pid_t pid, int timeout_ms, Pred done) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    daemon->ReadAll();
    auto rings = daemon->rings();
    if (rings.size() == 1 && done(rings[0])) return true;
    siginfo_t info = {};
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != 0) {
      return false;  // ended (or gone)
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t CommOf(const FakeDaemon::Ring& ring) {
  auto comms = CommsOf(ring);
  return comms.size() == 1 ? comms.begin()->first : 0;
}

// Rank 0 (device 0) launches a 6 s kernel before its second all-reduce: that all-reduce is queued
// behind it and its row names the kernel; rank 1 (device 1) is inside its all-reduce, waiting.
TEST(ProgramTest, InflightRowsSayQueuedBehindAKernelAndStartedForTheWaitingRank) {
  std::string sock = SocketPath("q");
  std::string error;
  auto daemon = FakeDaemon::Start(sock, &error);
  ASSERT_NE(daemon, nullptr) << error;
  std::vector<std::string> env = HookEnv(sock);
  env.push_back("XTIMER_KERNEL_FILTER=delay_kernel");
  env.push_back("XTIMER_SIM_KERNEL_TIMES=delay_kernel=6000000");
  const std::string out_path = TmpDir() + "/inflight.out";
  pid_t pid = SpawnProgram(Hooked({g_extras, "inflight"}), env, out_path);
  FakeDaemon::Ring seen;
  bool both = WatchRing(daemon.get(), pid, 60000, [&](const FakeDaemon::Ring& ring) {
    const uint64_t comm = CommOf(ring);
    const format::InflightRow* r0 = Row(ring, comm, 0);
    const format::InflightRow* r1 = Row(ring, comm, 1);
    if (comm == 0 || r0 == nullptr || r1 == nullptr) return false;
    if (r0->oldest.state != format::InflightState::kQueued || r0->oldest.seq != 2 ||
        r1->oldest.state != format::InflightState::kStarted || r1->oldest.seq != 2) {
      return false;
    }
    seen = ring;
    return true;
  });
  std::string out;
  int rc = ReapProgram(pid, out_path, &out);
  ASSERT_TRUE(both) << "never saw rank 0 queued and rank 1 started in seq 2\n" << out;
  EXPECT_EQ(rc, 0) << out;
  const uint64_t comm = CommOf(seen);
  const format::InflightCollective& q = Row(seen, comm, 0)->oldest;
  EXPECT_EQ(q.op, static_cast<uint16_t>(Operation::kAllReduce));
  EXPECT_EQ(q.dtype, static_cast<uint8_t>(DType::kF32));
  EXPECT_EQ(q.count, 1u << 20);
  EXPECT_EQ(q.bytes, 4u << 20);
  EXPECT_EQ(q.root, -1);
  EXPECT_EQ(q.comm_size, 2);
  EXPECT_EQ(q.gpu_start_ns, 0);
  EXPECT_EQ(q.blocker.op, static_cast<uint16_t>(Operation::kKernelLaunch));
  EXPECT_EQ(q.blocker.kind, static_cast<uint8_t>(OpKind::kKernel));
  EXPECT_LE(q.blocker.launch_ns, q.launch_ns);
  EXPECT_NE(NameOf(seen, q.blocker.name_id).find("delay_kernel"), std::string::npos)
      << "name id " << q.blocker.name_id;
  const format::InflightCollective& w = Row(seen, comm, 1)->oldest;
  EXPECT_GE(w.gpu_start_ns, w.launch_ns - 1000000);  // within the clock alignment
  EXPECT_EQ(w.blocker.op, 0);
  // Everything completed before the exit: nothing is described any more.
  daemon->ReadAll();
  const auto rings = daemon->rings();
  ASSERT_EQ(rings.size(), 1u);
  for (const auto& r : rings[0].inflight) {
    EXPECT_EQ(r.oldest.state, format::InflightState::kNone) << r.comm_id << " " << r.device;
  }
}

// Rank 0 hangs in its second all-reduce call (simulator fault): nothing of it is in flight, and
// rank 1 waits inside its own, started, for a peer that never comes.
TEST(ProgramTest, InflightRowSaysStartedWhenThePeerNeverArrives) {
  std::string sock = SocketPath("h");
  std::string error;
  auto daemon = FakeDaemon::Start(sock, &error);
  ASSERT_NE(daemon, nullptr) << error;
  std::vector<std::string> env = HookEnv(sock);
  env.push_back("XTIMER_SIM_HANG=0:2");
  const std::string out_path = TmpDir() + "/hang.out";
  pid_t pid = SpawnProgram(Hooked({g_extras, "inflight"}), env, out_path);
  FakeDaemon::Ring seen;
  bool waiting = WatchRing(daemon.get(), pid, 60000, [&](const FakeDaemon::Ring& ring) {
    const uint64_t comm = CommOf(ring);
    const format::InflightRow* r1 = Row(ring, comm, 1);
    // Seq 2 is the one rank 0 never issues (seq 1 may still be in flight on a loaded machine).
    if (comm == 0 || r1 == nullptr || r1->oldest.state != format::InflightState::kStarted ||
        r1->oldest.seq != 2) {
      return false;
    }
    // Long enough that rank 0's side is settled, not on its way.
    if (NowNs() - r1->oldest.launch_ns < 1000000000) return false;
    seen = ring;
    return true;
  });
  kill(pid, SIGKILL);
  std::string out;
  ReapProgram(pid, out_path, &out);
  ASSERT_TRUE(waiting) << "never saw rank 1 started in its all-reduce\n" << out;
  const uint64_t comm = CommOf(seen);
  const format::InflightRow* r1 = Row(seen, comm, 1);
  EXPECT_EQ(r1->oldest.seq, 2u);
  EXPECT_EQ(r1->last_issued_seq, 2u);
  EXPECT_EQ(r1->last_completed_seq, 1u);
  EXPECT_GT(r1->oldest.gpu_start_ns, 0);
  const format::InflightRow* r0 = Row(seen, comm, 0);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(r0->oldest.state, format::InflightState::kNone);
  EXPECT_EQ(r0->last_issued_seq, 1u);
  EXPECT_EQ(r0->oldest_launch_ns, 0);
}

// 3 ranks; 0 and 1 shrink 2 away and all-reduce on the child.
TEST(ProgramTest, CommShrinkChildIsSharedBySurvivorsWithItsParent) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked({g_extras, "shrink"}, "k", {}, &ring, &out));
  auto comms = CommsOf(ring);
  ASSERT_EQ(comms.size(), 2u);
  uint64_t root = 0, child = 0;
  for (auto& kv : comms) (kv.second.begin()->second.parent_id == 0 ? root : child) = kv.first;
  ASSERT_NE(root, 0u);
  ASSERT_NE(child, 0u);
  ASSERT_EQ(comms[root].size(), 3u);
  ASSERT_EQ(comms[child].size(), 2u);  // survivors only, renumbered 0 and 1
  int excluded[1] = {2};
  EXPECT_EQ(child, CommIdForShrink(root, 0, excluded, 1));
  for (auto& kv : comms[child]) {
    EXPECT_EQ(kv.second.parent_id, root);
    EXPECT_EQ(kv.second.size, 2);
    EXPECT_EQ(kv.second.device, kv.first);
    EXPECT_EQ(kv.second.global_rank, ring.identity.rank);
  }
  std::map<uint64_t, std::vector<OpRecord>> ar;
  for (const OpRecord& r : Ops(ring, Operation::kAllReduce)) ar[r.comm_id].push_back(r);
  ASSERT_EQ(ar[root].size(), 3u);
  ASSERT_EQ(ar[child].size(), 2u);
  std::set<int> devices;
  for (const OpRecord& r : ar[child]) {
    EXPECT_EQ(r.seq, 1u);
    EXPECT_EQ(r.comm_size, 2);
    devices.insert(r.device);
  }
  EXPECT_EQ(devices, (std::set<int>{0, 1}));
  EXPECT_NS(std::min(ar[child][0].duration_ns, ar[child][1].duration_ns), Coll(4 << 20, 1.0));
}

// ncclCommInitRankScalable with 2 ids: the first names the communicator.
TEST(ProgramTest, CommInitRankScalableIsNamedByTheFirstId) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked({g_extras, "scalable"}, "c", {}, &ring, &out));
  std::string hex = Field(out, "id0");
  ASSERT_EQ(hex.size(), 2 * sizeof(ncclUniqueIdBytes)) << out;
  ncclUniqueIdBytes id0;
  for (size_t i = 0; i < sizeof(id0.b); ++i) {
    id0.b[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  auto comms = CommsOf(ring);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms.begin()->first, CommIdFromUniqueId(id0.b, sizeof(id0.b)));
  EXPECT_EQ(comms.begin()->second.size(), 2u);
  auto ar = Ops(ring, Operation::kAllReduce);
  ASSERT_EQ(ar.size(), 2u);
  for (const OpRecord& r : ar) {
    EXPECT_EQ(r.comm_id, comms.begin()->first);
    EXPECT_EQ(r.seq, 1u);
  }
  EXPECT_NE(ar[0].device, ar[1].device);
}

// ncclCommFinalize + Destroy and ncclCommAbort pass through: the same output (return values)
// with and without the hook, and the ops before them are recorded.
TEST(ProgramTest, CommFinalizeDestroyAbortPassThrough) {
  std::string plain;
  ASSERT_EQ(RunProgram({g_run, g_extras, "lifecycle"}, {}, &plain), 0) << plain;
  FakeDaemon::Ring ring;
  std::string hooked;
  ASSERT_TRUE(RunHooked({g_extras, "lifecycle"}, "l", {}, &ring, &hooked));
  auto lines = [](const std::string& s) {
    std::multiset<std::string> out;
    std::stringstream ss(s);
    std::string line;
    while (std::getline(ss, line)) out.insert(line);  // ranks print in any order
    return out;
  };
  EXPECT_EQ(lines(plain), lines(hooked));
  for (const char* expected : {"rank 0 finalize -> 0", "rank 1 finalize -> 0",
                               "rank 0 destroy -> 0", "rank 1 destroy -> 0",
                               "rank 0 abort -> 0", "rank 1 abort -> 0"}) {
    EXPECT_NE(plain.find(expected), std::string::npos) << expected << "\n" << plain;
  }
  EXPECT_NE(plain.find("finalize(null) -> "), std::string::npos) << plain;
  auto comms = CommsOf(ring);
  EXPECT_EQ(comms.size(), 2u);
  auto ar = Ops(ring, Operation::kAllReduce);
  ASSERT_EQ(ar.size(), 4u);
  std::map<uint64_t, int> per_comm;
  for (const OpRecord& r : ar) {
    EXPECT_EQ(r.seq, 1u);
    ++per_comm[r.comm_id];
  }
  EXPECT_EQ(per_comm.size(), 2u);
  for (const auto& row : ring.inflight) {
    EXPECT_EQ(row.last_issued_seq, row.last_completed_seq) << row.comm_id;
  }
}

// The hook never breaks a CUDA graph capture: in every capture mode, with a background thread's
// timed kernels in flight on its own stream (the poller queries their events throughout) and the
// capturing thread's own timed work on another stream, capturing kernels, a copy and an
// all-reduce succeeds and replays as without the hook (the simulator forbids, as CUDA does, a
// potentially unsafe call from any thread in the global interaction mode during a global
// capture: test/gpusim/cudart/capture_rules.h).
TEST(ProgramTest, GraphCaptureSucceedsInEveryModeBesideTimedWork) {
  for (const char* mode : {"global", "threadlocal", "relaxed"}) {
    SCOPED_TRACE(mode);
    std::string plain;
    ASSERT_EQ(RunProgram({g_run, g_capture, mode, "50"}, {}, &plain), 0) << plain;
    FakeDaemon::Ring ring;
    std::string out;
    ASSERT_TRUE(RunHooked({g_capture, mode, "50"}, "capture", {}, &ring, &out));
    EXPECT_NE(out.find("capture: cudaSuccess"), std::string::npos) << out;
    EXPECT_NE(out.find("replays: 50"), std::string::npos) << out;
    EXPECT_EQ(out.find("the poller wrote nothing"), std::string::npos) << out;
    // Every replay is timed as a graph launch; the background kernels were timed throughout.
    EXPECT_EQ(Ops(ring, Operation::kGraphLaunch).size(), 50u);
    EXPECT_GT(Ops(ring, Operation::kKernelLaunch).size(), 100u);
  }
}

TEST(ProgramTest, ErrorsAreIdenticalWithAndWithoutTheHook) {
  std::string plain, hooked;
  ASSERT_EQ(RunProgram({g_run, g_errors}, {}, &plain), 0) << plain;
  std::vector<std::string> env = HookEnv(SocketPath("absent"));
  env.push_back("XTIMER_KERNEL_FILTER=.");  // time every kernel: the timed path sees the errors
  ASSERT_EQ(RunProgram(Hooked({g_errors}), env, &hooked), 0) << hooked;
  // The hook may log to stderr only under XTIMER_VERBOSE; the program's output must match.
  EXPECT_EQ(plain, hooked);
  EXPECT_NE(plain.find("-> 9,"), std::string::npos);   // cudaErrorInvalidConfiguration seen
  EXPECT_NE(plain.find("-> 98,"), std::string::npos);  // cudaErrorInvalidDeviceFunction seen
}

// The program's line "checksum=N" (its results), or "" when absent.
std::string Checksum(const std::string& out) {
  size_t at = out.find("checksum=");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

TEST(ProgramTest, LibrariesInLocalScopesAreFoundAndTimed) {
  std::vector<std::string> program = {g_local_scope, g_local_comm, g_local_gemm};
  std::string plain;
  ASSERT_EQ(RunProgram([&] {
              std::vector<std::string> argv = {g_run};
              argv.insert(argv.end(), program.begin(), program.end());
              return argv;
            }(),
                       {}, &plain),
            0)
      << plain;
  ASSERT_NE(Checksum(plain), "") << plain;
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(RunHooked(program, "ls", {}, &ring, &out));
  EXPECT_EQ(Checksum(out), Checksum(plain)) << out;
  EXPECT_EQ(out.find("xtimer["), std::string::npos) << out;  // no resolution warnings
  // 2 ranks × (3 + 2) steps, each a kernel, an all-reduce and two copies; 4 late SGEMMs.
  EXPECT_EQ(Ops(ring, Operation::kKernelLaunch).size(), 10u);
  EXPECT_EQ(Ops(ring, Operation::kAllReduce).size(), 10u);
  EXPECT_EQ(Ops(ring, Operation::kMemcpyHtoD).size(), 10u);
  EXPECT_EQ(Ops(ring, Operation::kMemcpyDtoH).size(), 10u);
  std::vector<OpRecord> gemms = Ops(ring, Operation::kSgemm);
  ASSERT_EQ(gemms.size(), 4u);
  for (const OpRecord& g : gemms) {
    EXPECT_EQ(g.m, 256);
    EXPECT_EQ(g.k, 256);
    EXPECT_GE(g.duration_ns, Gemm(256, 256, 256, 1, 200));  // never faster than the model
  }
  for (const OpRecord& r : Ops(ring, Operation::kAllReduce)) EXPECT_EQ(r.comm_size, 2);
}

TEST(ProgramTest, LibrariesInLocalScopesPassThroughWhenDisabled) {
  std::vector<std::string> env = HookEnv(SocketPath("lsd"));
  env.push_back("XTIMER_DISABLE=1");
  std::string plain, disabled;
  ASSERT_EQ(RunProgram({g_run, g_local_scope, g_local_comm, g_local_gemm}, {}, &plain), 0)
      << plain;
  ASSERT_EQ(RunProgram(Hooked({g_local_scope, g_local_comm, g_local_gemm}), env, &disabled), 0)
      << disabled;
  EXPECT_EQ(disabled, plain);
}

// Launcher environments whose numeric variables the hook parses at its first call.
const std::vector<std::vector<std::string>>& LauncherEnvironments() {
  static const std::vector<std::vector<std::string>> envs = {
      {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "TORCHELASTIC_RUN_ID=run1",
       "XTIMER_RING_CAPACITY=4096", "XTIMER_EXIT_FLUSH_MS=500"},
      {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0", "SLURM_JOB_ID=77",
       "SLURM_STEP_ID=0", "XTIMER_SAMPLE_RATE=1"},
      {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "OMPI_COMM_WORLD_LOCAL_RANK=0",
       "PMIX_NAMESPACE=1234", "PMI_RANK=0", "PMI_SIZE=1"},
  };
  return envs;
}

TEST(ProgramTest, FirstCallOfEveryFamilyLeavesErrnoAndErrorsAlone) {
  const std::vector<std::string> families = {"copy", "kernel", "sync", "gemm", "lt", "nccl"};
  // Each family is the process's first hooked call once; each launcher environment runs once
  // with a daemon and once without.
  for (size_t i = 0; i < families.size(); ++i) {
    std::vector<std::string> argv = {g_first_calls, families[i]};
    for (const std::string& f : families) {
      if (f != families[i]) argv.push_back(f);
    }
    // The libraries themselves may read the launcher's variables (the simulator's NCCL parses
    // RANK): the run without the hook has the same environment.
    const std::vector<std::string>& launcher = LauncherEnvironments()[i / 2];
    std::string plain;
    std::vector<std::string> plain_argv = {g_run};
    plain_argv.insert(plain_argv.end(), argv.begin(), argv.end());
    ASSERT_EQ(RunProgram(plain_argv, launcher, &plain), 0) << plain;
    ASSERT_NE(plain.find("errno 4242"), std::string::npos) << plain;

    bool with_daemon = i % 2 == 0;
    std::string sock = SocketPath(with_daemon ? "fc" : "fc-absent");
    std::string error;
    std::unique_ptr<FakeDaemon> daemon;
    if (with_daemon) {
      daemon = FakeDaemon::Start(sock, &error);
      ASSERT_NE(daemon, nullptr) << error;
    }
    std::vector<std::string> env = HookEnv(sock);
    env.insert(env.end(), launcher.begin(), launcher.end());
    std::string hooked;
    ASSERT_EQ(RunProgram(Hooked(argv), env, &hooked), 0) << hooked;
    EXPECT_EQ(hooked, plain) << "first family " << families[i] << ", launcher env " << i / 2
                             << (with_daemon ? ", daemon" : ", no daemon");
    if (with_daemon) {
      // The daemon side counts the registration on its own thread.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (daemon->registrations() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_EQ(daemon->registrations(), 1);
    }
  }
}

TEST(ProgramTest, RunsWithoutADaemon) {
  std::string out;
  EXPECT_EQ(RunProgram(Hooked({g_workload, "all"}), HookEnv(SocketPath("none")), &out), 0) << out;
  EXPECT_NE(out.find("OK"), std::string::npos);
}

// A socket that is listening but never accepts, its backlog already full (a stopped daemon, or
// one swamped by clients): connecting to it would block.
class SaturatedSocket {
 public:
  explicit SaturatedSocket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    listener_ = socket(AF_UNIX, SOCK_STREAM, 0);
    unlink(path.c_str());
    ok_ = bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
          listen(listener_, 0) == 0;
    path_ = path;
    while (ok_ && clients_.size() < 64) {
      int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        full_ = errno == EAGAIN;
        close(c);
        break;
      }
      clients_.push_back(c);
    }
  }
  ~SaturatedSocket() {
    for (int c : clients_) close(c);
    close(listener_);
    unlink(path_.c_str());
  }
  bool full() const { return ok_ && full_; }

 private:
  int listener_ = -1;
  bool ok_ = false, full_ = false;
  std::string path_;
  std::vector<int> clients_;
};

TEST(ProgramTest, ExitNeverWaitsForADaemonThatDoesNotAccept) {
  std::string sock = SocketPath("sat");
  SaturatedSocket saturated(sock);
  ASSERT_TRUE(saturated.full());
  // The program prints the time at which main returns; the test notes when the process is gone.
  std::string out;
  ASSERT_EQ(RunProgram(Hooked({g_workload, "loop", "300"}), HookEnv(sock), &out), 0) << out;
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t gone_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  size_t at = out.find("main_returns_ns=");
  ASSERT_NE(at, std::string::npos) << out;
  int64_t returned_ns = std::stoll(out.substr(at + strlen("main_returns_ns=")));
  double exit_s = (gone_ns - returned_ns) * 1e-9;
  printf("exit took %.3f s after main returned\n", exit_s);
  // Nothing was in flight at exit: the hook's exit path has nothing to wait for. A hook that
  // waited for the daemon would block here until the listener accepted (never).
  EXPECT_LT(exit_s, 5.0) << out;
}

TEST(ProgramTest, DisabledIsPassThrough) {
  std::string sock = SocketPath("d");
  std::string error;
  auto daemon = FakeDaemon::Start(sock, &error);
  ASSERT_NE(daemon, nullptr) << error;
  std::vector<std::string> env = HookEnv(sock);
  env.push_back("XTIMER_DISABLE=1");
  std::string out;
  EXPECT_EQ(RunProgram(Hooked({g_workload, "loop", "100"}), env, &out), 0) << out;
  EXPECT_EQ(daemon->registrations(), 0);
}

TEST(ProgramTest, ReconnectsToARestartedDaemon) {
  std::string sock = SocketPath("r");
  std::string error;
  auto first = FakeDaemon::Start(sock, &error);
  ASSERT_NE(first, nullptr) << error;
  std::unique_ptr<FakeDaemon> second;
  std::string out;
  // The daemon dies 700 ms after the registration, in a 3 s run; a new one listens at once on
  // the same path.
  ASSERT_EQ(RunProgram(Hooked({g_workload, "comm_loop", "3000"}), HookEnv(sock), &out, first.get(), 700,
                &second, sock),
            0)
      << out;
  EXPECT_EQ(first->registrations(), 1);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->registrations(), 1);
  second->ReadAll();
  auto rings = second->rings();
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_GT(Ops(rings[0], Operation::kMemset).size(), 50u);
  // The communicator was created before the new daemon started: the hook sends it again.
  std::vector<OpRecord> all_reduces = Ops(rings[0], Operation::kAllReduce);
  ASSERT_GT(all_reduces.size(), 10u);
  auto comm_records_in = [](const FakeDaemon::Ring& ring) {
    int n = 0;
    for (const auto& r : ring.records) n += r.header.type == static_cast<uint8_t>(format::RecordType::kComm);
    return n;
  };
  auto first_rings = first->rings();
  ASSERT_EQ(first_rings.size(), 1u);
  ASSERT_EQ(comm_records_in(first_rings[0]), 1);  // read by the first daemon
  int comm_records = 0;
  for (const auto& r : rings[0].records) {
    if (r.header.type != static_cast<uint8_t>(format::RecordType::kComm)) continue;
    EXPECT_EQ(r.comm.comm_id, all_reduces[0].comm_id);
    EXPECT_EQ(r.comm.rank, 0);
    EXPECT_EQ(r.comm.size, 1);
    ++comm_records;
  }
  EXPECT_EQ(comm_records, 1);
}

TEST(ProgramTest, ForkedChildPassesThroughAndParentKeepsTiming) {
  std::string out;
  FakeDaemon::Ring ring;
  // RunHooked requires exactly one ring: the child never registers.
  ASSERT_TRUE(RunHooked({g_workload, "fork"}, "f", {}, &ring, &out));
  auto memsets = Ops(ring, Operation::kMemset);
  // Parent: 100 + 200 + 100 ms of 4 KiB memsets every ~5 ms (about 80; 30 at load 15); the
  // child's 20 are not recorded.
  EXPECT_GT(memsets.size(), 20u);
  // The stream is idle: a duration also holds the host's launch gap after the start event.
  for (const OpRecord& r : memsets) {
    EXPECT_GE(r.duration_ns, Copy(4096, 2000) - 2);
    EXPECT_LT(r.duration_ns, Copy(4096, 2000) + 50000000);
  }
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kOp)) {
      EXPECT_EQ(format::Validate(r), nullptr);
    }
  }
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

int main(int argc, char** argv) {
  std::vector<std::string> p;
  const int start = xtimer::hook::testing::StartProgramTest(
      &argc, argv, 9,
      "program_test GPUSIM_RUN LIBXTIMER_SO WORKLOAD ERRORS WORKLOAD_PTSZ EXTRAS LOCAL_SCOPE "
      "LOCAL_COMM_MODULE LOCAL_GEMM_MODULE FIRST_CALLS CAPTURE",
      &p);
  if (start >= 0) return start;
  xtimer::hook::g_run = p[0];
  xtimer::hook::g_self = p[1];
  xtimer::hook::g_lib = p[2];
  xtimer::hook::g_workload = p[3];
  xtimer::hook::g_errors = p[4];
  xtimer::hook::g_workload_ptsz = p[5];
  xtimer::hook::g_extras = p[6];
  xtimer::hook::g_local_scope = p[7];
  xtimer::hook::g_local_comm = p[8];
  xtimer::hook::g_local_gemm = p[9];
  xtimer::hook::g_first_calls = p[10];
  xtimer::hook::g_capture = p[11];
  int rc = RUN_ALL_TESTS();
  rmdir(xtimer::hook::testing::TmpDir().c_str());  // empty by now (sockets and outputs are removed)
  return rc;
}
