#include "util/kernel_name.h"

#include <string>

#include <gtest/gtest.h>

namespace xtimer {
namespace util {
namespace {

// Names as abi::__cxa_demangle spells PyTorch's, CUTLASS's and cuBLAS's kernels.
TEST(ShortKernelNameTest, FunctionAndTheTemplatesHead) {
  EXPECT_EQ(ShortKernelName("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, "
                            "at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "vectorized_elementwise_kernel<4, ...>");
  EXPECT_EQ(ShortKernelName("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_tn_align4>"
                            "(cutlass_80_tensorop_s1688gemm_64x64_tn_align4::Params)"),
            "Kernel2<cutlass_80_tensorop_s1688gemm_64x64_tn_align4>");
  EXPECT_EQ(ShortKernelName("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                            "at::native::MeanOps<float, float, float, float>, unsigned int, float, "
                            "4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, "
                            "float, float>, unsigned int, float, 4>)"),
            "reduce_kernel<512, ...>");
}

TEST(ShortKernelNameTest, TheFirstArgumentIsShortenedToo) {
  EXPECT_EQ(ShortKernelName("void at::native::unrolled_elementwise_kernel<"
                            "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
                            "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
                            "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, float)"),
            "unrolled_elementwise_kernel<{lambda(float)#1}, ...>");
  EXPECT_EQ(ShortKernelName("void ns::outer<ns::Functor<ns::Inner<float>, int>, 3>(int)"),
            "outer<Functor<Inner<...>, ...>, ...>");
}

TEST(ShortKernelNameTest, AnonymousNamespacesAndLambdasAreNotParameterLists) {
  EXPECT_EQ(ShortKernelName("void (anonymous namespace)::softmax_warp_forward<float, float, "
                            "float, 9, false, false>(float*, float const*, int, int, int)"),
            "softmax_warp_forward<float, ...>");
  EXPECT_EQ(ShortKernelName("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<"
                            "float, float, unsigned int, 1, 4, bool>(float*, float*)"),
            "fused_dropout_kernel_vec<float, ...>");
  EXPECT_EQ(ShortKernelName("(anonymous namespace)::kernel_without_parameters"),
            "kernel_without_parameters");
}

TEST(ShortKernelNameTest, PlainNamesStayAsTheyAre) {
  for (const char* name : {"triton_poi_fused_add_0", "ampere_sgemm_128x64_tn", "timed_kernel",
                           "kernel #12", "GemmEx", "void simple(int, float*)"}) {
    std::string expected = name;
    if (expected == "void simple(int, float*)") expected = "simple";
    EXPECT_EQ(ShortKernelName(name), expected) << name;
  }
  EXPECT_EQ(ShortKernelName("void f<>(int)"), "f<>");
  EXPECT_EQ(ShortKernelName(""), "");
}

TEST(ShortKernelNameTest, UnbalancedOrLongNamesAreCut) {
  EXPECT_EQ(ShortKernelName("void broken<int(float)"), "void broken<int(float)");
  EXPECT_EQ(ShortKernelName("void broken>(int)"), "void broken>(int)");
  std::string long_name(300, 'k');
  std::string s = ShortKernelName(long_name);
  EXPECT_EQ(s.size(), kMaxShortKernelName);
  EXPECT_EQ(s.substr(s.size() - 3), "...");
  std::string long_template = "void f<" + long_name + ">(int)";
  EXPECT_EQ(ShortKernelName(long_template).size(), kMaxShortKernelName);
}

}  // namespace
}  // namespace util
}  // namespace xtimer
