// The driver's own entry points by name, for cuGetProcAddress.
#ifndef XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_
#define XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_

namespace xtsim {
namespace driver {

// The definition in this library of the driver function `symbol` (a name such as
// "cuLaunchKernel" or "cuMemcpyHtoDAsync"): the export that cuda.h maps the name to (cuMemAlloc
// -> cuMemAlloc_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags), in its per-thread
// default stream variant (_ptsz / _ptds) when `per_thread` and cuda.h has one; a name cuda.h does
// not map is its own export. nullptr when the real library exports no such function.
// `cuda_version` does not select older ABIs: callers are taken to be built against these
// CUDA 13 headers.
void* LookupProc(const char* symbol, int cuda_version, bool per_thread);

}  // namespace driver
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_DRIVER_PROC_TABLE_H_
