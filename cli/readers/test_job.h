// A training job with injectable faults, written as a dump (timeline files per node, and the
// hang-summary.json xtimerd writes beside them on a hang): the input of the analyze and diff
// tests and of the analyze benchmark.
//
// Every step each rank runs one GEMM (m=n=k=4096, bf16) and then one AllReduce (64 MiB fp32)
// over the world communicator, seq = step. The AllReduce ends at the same true time on every
// rank: the last arrival plus the transfer time.
//
// With `pipeline`, two stages: rank r of the first half and rank r + ranks/2 share a pipeline
// communicator (size 2, comm ranks 0 and 1). Between the GEMM and the AllReduce each rank issues
// one NCCL group with its partner (1F1B steady state): stage 0 sends the step's activations, then
// receives the previous step's gradients; stage 1 sends its gradients first, then receives. Both
// calls of a group carry the group's timing: from the rank's arrival to the later arrival of the
// two plus `p2p_ns`, so the first to arrive waits. Seqs are numbered per peer with one counter
// for both directions, as the hook numbers them, so a send and its receive carry different seqs.
#ifndef XTIMER_CLI_READERS_TEST_JOB_H_
#define XTIMER_CLI_READERS_TEST_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace cli {

constexpr uint64_t kTestWorldComm = 0xC0FFEE0000000002ull;
constexpr uint64_t kTestPipeComm = 0xC0FFEE0000001000ull;  // + the pair's stage-0 rank

struct TestJob {
  int ranks = 8;
  int nodes = 2;     // ranks split evenly; node n is written to root/node<n>
  int steps = 20;
  std::string job = "testjob";
  int64_t start_ns = 1767225600000000000;  // 2026-01-01 UTC
  std::vector<int64_t> node_skew_ns;       // added to node n's clock (default 0)
  int64_t compute_ns = 2000000;            // the GEMM
  int64_t transfer_ns = 1000000;           // the AllReduce after its last arrival
  double gemm_factor = 1.0;                // every rank's GEMM takes this much longer (diff)
  double transfer_factor = 1.0;            // every AllReduce transfer takes this much longer
  int slow_rank = -1;                      // this rank's GEMM takes slow_factor longer
  double slow_factor = 1.3;
  // Per (rank, step) noise of up to 20 us on the GEMM; another seed, other noise (the same job
  // run twice).
  uint64_t noise_seed = 0;
  // This rank's host keeps its GPU idle for host_gap_ns before every GEMM (a slow data loader);
  // with host_range set, its file carries an NVTX push/pop range of that name over each gap.
  int host_rank = -1;
  int64_t host_gap_ns = 1000000;
  std::string host_range;
  bool pipeline = false;     // see above; needs an even number of ranks
  // Each rank marks its steps (NVTX ranges flagged as steps, as XTIMER_STEP_RANGE makes them):
  // from the step's start to the end of its AllReduce.
  bool step_marks = false;
  int64_t p2p_ns = 500000;   // a pipeline transfer after the later of its two arrivals
  // Hang: this rank stops in host code before the AllReduce of stop_step; the others issue it
  // and wait. Its files end there, and root/node<n>/hang-summary.json (per node) holds each
  // rank's progress `hang_after_s` seconds after the last completion.
  int stop_rank = -1;
  int stop_step = -1;
  double hang_after_s = 60;
  // A crafted file for rank craft_rank (cli/bounded_inputs_test.sh): "world" (world size
  // 2^31-1), "rank" (rank 2^31-1), "job" (another job's label), "duration" (negative
  // durations), "shape" (m = 2^62), "time" (start times near INT64_MAX); "" writes none.
  std::string craft;
  int craft_rank = 0;
};

// Writes the job; returns the node directories, or an empty vector with *error.
std::vector<std::string> WriteTestJob(const TestJob& job, const std::string& root,
                                      std::string* error);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_TEST_JOB_H_
