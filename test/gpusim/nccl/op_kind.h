// The simulated NCCL's operations (NCCL's ncclFunc_t as far as the simulator models it): one
// list for the engine's table (ops.h) and the profiler's per-function names and sequence numbers
// (profiler_plugin.h).
#ifndef XTIMER_TEST_GPUSIM_NCCL_OP_KIND_H_
#define XTIMER_TEST_GPUSIM_NCCL_OP_KIND_H_

namespace xtsim {
namespace nccl {

enum class OpKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};
constexpr int kOpKinds = static_cast<int>(OpKind::kRecv) + 1;

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_OP_KIND_H_
