// Short names for the kernels people read: PyTorch's and CUTLASS's demangled kernel names run to
// hundreds of characters of return type, namespaces, template arguments and parameters. Tables,
// trace slices and metric labels show the function and its template's head, as Nsight Systems
// shows a "short name", and keep the full name one column or one click away.
#ifndef XTIMER_UTIL_KERNEL_NAME_H_
#define XTIMER_UTIL_KERNEL_NAME_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace xtimer {
namespace util {

// The longest short name (bytes); a longer one is cut and ends in "...".
constexpr size_t kMaxShortKernelName = 96;

// The short name of a demangled kernel name: no return type, no namespaces or enclosing classes,
// no parameter list; of the template arguments, the first one (itself shortened) and "..." for
// the rest. Examples (docs/perfetto.md "Kernel names"):
//   "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,
//    at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, ...)"
//     -> "vectorized_elementwise_kernel<4, ...>"
//   "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_tn_align4>(Params)"
//     -> "Kernel2<cutlass_80_tensorop_s1688gemm_64x64_tn_align4>"
// A name that is not a C++ signature ("triton_poi_fused_add_0", "ampere_sgemm_128x64_tn", an
// unbalanced one) is returned as it is, cut to kMaxShortKernelName.
std::string ShortKernelName(std::string_view demangled);

}  // namespace util
}  // namespace xtimer

#endif  // XTIMER_UTIL_KERNEL_NAME_H_
