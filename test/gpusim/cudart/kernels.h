// Kernels that nvcc-compiled programs register (__cudaRegisterFunction) and their modelled
// durations on the simulated GPU (device code cannot run on the CPU).
#ifndef XTIMER_TEST_GPUSIM_CUDART_KERNELS_H_
#define XTIMER_TEST_GPUSIM_CUDART_KERNELS_H_

#include <cstdint>
#include <string>

namespace xtsim {

struct KernelInfo {
  const void* host_fun = nullptr;  // the host stub's address: what cudaLaunchKernel receives
  std::string mangled;             // the device name, as cudaFuncGetName reports it
  std::string demangled;
  int64_t duration_ns = 0;         // from XTIMER_SIM_KERNEL_TIMES or XTIMER_SIM_KERNEL_TIME_US
};

// Registers a kernel; returns the record (stable for the life of the process).
const KernelInfo* RegisterKernel(const void* host_fun, const char* device_name);
// Registers a kernel of a module loaded through the driver API (cuModuleLoadData): it has a device
// name but no host stub. A new record per call (each module has its own functions).
const KernelInfo* RegisterModuleKernel(const char* device_name);
// The kernel whose host stub is `host_fun`, or nullptr.
const KernelInfo* FindKernel(const void* host_fun);
// Validates a cudaKernel_t handle (a KernelInfo*) handed out by __cudaGetKernel.
const KernelInfo* FindKernelHandle(const void* handle);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_KERNELS_H_
