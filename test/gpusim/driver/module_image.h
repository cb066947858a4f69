// The kernel names in a module image handed to cuModuleLoadData: a cubin (an ELF object whose
// kernels are function symbols) or PTX text (NUL-terminated, kernels declared with `.entry`).
// Device code never runs on the simulator; only the names matter (cuModuleGetFunction finds
// kernels by name, cuFuncGetName reports it, XTIMER_SIM_KERNEL_TIMES times it).
#ifndef XTIMER_TEST_GPUSIM_DRIVER_MODULE_IMAGE_H_
#define XTIMER_TEST_GPUSIM_DRIVER_MODULE_IMAGE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace xtsim {
namespace driver {

enum class ImageKind { kInvalid, kCubin, kPtx, kFatbin };

// What kind of image `image` points at (the first bytes decide).
ImageKind KindOf(const void* image);

// The kernels of a cubin of `size` bytes (size 0: read the ELF header's section table, as the
// driver does for cuModuleLoadData, which takes no size). False when the ELF is malformed.
bool CubinKernels(const void* image, size_t size, std::vector<std::string>* names);
// The kernels of NUL-terminated PTX text.
bool PtxKernels(const char* ptx, std::vector<std::string>* names);

}  // namespace driver
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_DRIVER_MODULE_IMAGE_H_
