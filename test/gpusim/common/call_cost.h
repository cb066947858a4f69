// The host time a CUDA call costs the calling thread on a real GPU, charged by the simulator when
// XTIMER_SIM_CALL_COSTS asks for it (docs/gpusim.md, "Call costs"), so that a benchmark here
// predicts what xtimer costs a host-bound job on a GPU (hook/bench/overhead.sh). The simulator's
// own calls cost nanoseconds; a real driver's cost microseconds.
//
// XTIMER_SIM_CALL_COSTS: `off` (unset: the default) charges nothing; `h200` charges the host
// times measured on an NVIDIA H200 (driver 580, CUDA 13.0) through ctypes on the real libcudart,
// 100k calls each with the empty call's cost removed (issue 35's table; the project's real-GPU
// check measures the same calls, docs/benchmarks.md "The real-GPU check"):
//   cudaEventRecord, timing event         1,932 ns
//   cudaEventRecord, DisableTiming event    628 ns
//   cudaEventQuery, completed event         310 ns
//   cudaEventElapsedTime                    615 ns
//   cudaStreamIsCapturing                   432 ns
//   a launch (kernel, copy, set, graph, a cuBLAS GEMM's kernel, an NCCL collective's kernel)
//                                          2,500 ns
// Charged time is spent, not slept (the driver's work occupies the calling thread).
// `h200-serialized` charges the same times under one process-wide lock: every call of every thread
// waits for the others', as if the driver ran one call at a time. How much a real driver
// serializes two threads' calls (per context, per stream, per device) is not documented; this is
// the upper bound of that contention (the poller's queries delaying the application's launches),
// `h200` the lower (none), and a benchmark runs both (docs/gpusim.md, "Call costs").
#ifndef XTIMER_TEST_GPUSIM_COMMON_CALL_COST_H_
#define XTIMER_TEST_GPUSIM_COMMON_CALL_COST_H_

namespace xtsim {

enum class CallCost {
  kEventRecordTimed,
  kEventRecordUntimed,
  kEventQuery,
  kEventElapsedTime,
  kStreamIsCapturing,
  kLaunch,
};

// Spends the calibrated host time of `call` when XTIMER_SIM_CALL_COSTS is `h200`; nothing
// otherwise (one relaxed load once the variable was read). A malformed value is Fatal.
void ChargeCall(CallCost call);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_COMMON_CALL_COST_H_
