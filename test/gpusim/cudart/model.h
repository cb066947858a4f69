// Modelled durations of copies, memsets and compute, and the slow-rank fault knob.
// The knobs (docs/gpusim.md): XTIMER_SIM_PCIE_GBPS (host<->device, default 25),
// XTIMER_SIM_HBM_GBPS (device<->device and memset, default 2000), XTIMER_SIM_COPY_LAT_US
// (per copy, default 2), XTIMER_SIM_SLOW_RANKS=R:F[,R:F] (compute on rank R takes F times longer).
#ifndef XTIMER_TEST_GPUSIM_CUDART_MODEL_H_
#define XTIMER_TEST_GPUSIM_CUDART_MODEL_H_

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace xtsim {

int64_t CopyDurationNs(const void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
int64_t MemsetDurationNs(size_t bytes);
// Scales a kernel or GEMM duration by the slow-rank factor of the rank that owns `device` (the
// process's rank, or the device ordinal when ranks are threads of one process).
int64_t ComputeDurationNs(int64_t ns, int device);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_MODEL_H_
