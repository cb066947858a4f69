// Communication operations of the simulated NCCL and the engine that runs them on a stream.
//
// Every collective is one row of a table (OpSpec) read by one generic engine: each rank
// publishes one block (or nranks blocks) of its send buffer into its staging slot, and computes
// its receive buffer from the slots of all ranks, either by reducing one block of every rank or
// by copying blocks, chunk by chunk (see ops.cc). Send/recv flow through per-pair rings.
//
// Operations of one ncclGroupStart/End (or a single ungrouped call) become one Launch: one task
// per stream involved. The tasks of a launch wait for each other, then one of them runs all its
// operations, making progress on all of them at once, and every task ends at the same time, as
// the streams of a real NCCL group join before and after its kernel.
//
// Time. A task starts at its stream's virtual time. Within a launch, the operations of one
// communicator form a chain of phases: each collective is a phase, consecutive send/recv are one
// phase whose operations overlap; a phase's arrival is the end of the previous phase. Chains of
// different communicators overlap. An operation ends at max(arrival of every participant) +
// modelled duration (model.h), the same on every rank.
#ifndef XTIMER_TEST_GPUSIM_NCCL_OPS_H_
#define XTIMER_TEST_GPUSIM_NCCL_OPS_H_

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "test/gpusim/nccl/comm.h"
#include "test/gpusim/nccl/op_kind.h"
#include "test/gpusim/nccl/profiler_plugin.h"

namespace xtsim {
namespace nccl {

// One row of the operation table. "Block" is `count` elements; blocks are laid out back to back.
struct OpSpec {
  const char* name;      // the API function, e.g. "ncclAllReduce"
  bool p2p;              // ncclSend / ncclRecv (everything else is a collective)
  bool rooted;           // takes a root
  bool reduces;          // receivers reduce over ranks (else they copy)
  bool in_all_blocks;    // a publisher publishes nranks blocks (block i for rank i), else one
  bool out_all_blocks;   // a receiver fills nranks blocks (block i from rank i), else one
  bool root_sends_only;  // only the root publishes (its send buffer is the only input)
  bool root_recvs_only;  // only the root receives
  // nccl-tests' bus bandwidth factor, and whether the algorithm bytes cover nranks blocks.
  double (*bus_factor)(int nranks);
  bool bytes_times_nranks;
};

const OpSpec& SpecOf(OpKind kind);

// A reduction as the engine applies it: optionally scale every input (ncclAvg on floating-point
// types, PreMulSum), reduce with `base`, optionally divide by nranks (ncclAvg on integers).
struct Reduction {
  enum class Scale { kNone, kReciprocalOfNranks, kPreMulSum };
  ncclRedOp_t base = ncclSum;
  Scale scale = Scale::kNone;
  PreMulSum premulsum{};  // Scale::kPreMulSum
  bool divide_by_nranks = false;
};

struct Op {
  OpKind kind;
  std::shared_ptr<Comm> comm;
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // elements per block (see the API argument each collective maps to in nccl_api.cc)
  ncclDataType_t datatype;
  Reduction reduction;
  int peer;  // the root of rooted collectives, the peer of send/recv
  cudaStream_t stream;
  std::vector<ProfTask> prof;  // what the profiler plugin sees of it (profiler_events.h)
};

// Enqueues `ops` (in call order) on their streams as one launch. On failure returns the error and
// a message; operations already enqueued then complete without communicating.
ncclResult_t Launch(std::vector<Op> ops, std::string* error);

// ncclGroupSimulateEnd: the modelled time of `ops` in microseconds, assuming every peer arrives
// at once.
double EstimateMicroseconds(const std::vector<Op>& ops);

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_OPS_H_
