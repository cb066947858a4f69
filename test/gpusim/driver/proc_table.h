// The driver's own entry points by name, for cuGetProcAddress.
#ifndef XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_
#define XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_

namespace xtsim {
namespace driver {

// The definition in this library of the driver function `symbol` (a base name such as
// "cuLaunchKernel" or "cuMemcpyHtoDAsync"): its newest ABI version (`_v2`, `_v3` ...), in the
// per-thread default stream variant (`_ptsz` / `_ptds`) when `per_thread` and the function has
// one. nullptr when the real library exports no such function. `cuda_version` is not used to pick
// older ABIs (every caller of this simulator is built against CUDA 13 headers).
void* LookupProc(const char* symbol, int cuda_version, bool per_thread);

}  // namespace driver
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_
