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
// Charged time is spent, not slept (the driver's work occupies the calling thread). Not modelled:
// contention between threads inside the driver (docs/gpusim.md says what that leaves out).
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
