// Programs that reach CUDA the way Triton, XLA and CuPy do (hook/programs: the driver API, dlsym
// on library handles, cuGetProcAddress, no CUDA runtime) run on the GPU simulator with
// libxtimer.so preloaded: every kernel, copy, set, matmul and collective is recorded once, with
// its name, and timed by the simulator's model (docs/gpusim.md).
// Usage: driver_program_test GPUSIM_RUN LIBXTIMER_SO CUBIN TRITON_STYLE XLA_STYLE CUPY_STYLE
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "format/record.h"
#include "gtest/gtest.h"
#include "hook/testing/fake_daemon.h"
#include "hook/testing/program_runner.h"

namespace xtimer {
namespace hook {
namespace {

using format::OpKind;
using format::OpRecord;
using testing::FakeDaemon;
using testing::NameOf;
using testing::OpsOfKind;

testing::Runner g_runner;
std::string g_cubin, g_triton_style, g_xla_style, g_cupy_style;

// Kernel durations in µs (XTIMER_SIM_KERNEL_TIMES); hold_stream keeps the stream ahead of the
// host and is left out by the filter.
constexpr int kAddUs = 30, kSumUs = 20;
const std::vector<std::string> kEnv = {
    "XTIMER_JOB=drivertest",
    "XTIMER_HOST=testhost",
    "XTIMER_KERNEL_FILTER=^triton_",
    "XTIMER_SIM_KERNEL_TIMES=triton_poi=30;triton_red=20;hold_stream=300000",
    "XTIMER_SIM_TFLOPS_FP32=50",
};

// The simulator's model (docs/gpusim.md): copies 2 µs + bytes / 25 GB/s (PCIe) or 2000 GB/s
// (HBM, sets); an FP32 GEMM 2mnk / 50 TFLOPS.
int64_t PcieCopyNs(double bytes) { return std::llround(2000 + bytes / 25); }
int64_t HbmNs(double bytes) { return std::llround(2000 + bytes / 2000); }
int64_t GemmNs(double m, double n, double k) { return std::llround(2 * m * n * k / 50e3); }

// Kernel records by name: count, and the durations seen.
std::map<std::string, std::vector<int64_t>> KernelsByName(const FakeDaemon::Ring& ring) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const OpRecord& r : OpsOfKind(ring, OpKind::kKernel)) {
    out[NameOf(ring, r.name_id)].push_back(r.duration_ns);
  }
  return out;
}

TEST(DriverProgramTest, TritonStyleLaunchesAreRecordedOnceWithTheirNames) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(g_runner.RunHooked({g_triton_style, g_cubin, "5", "3"}, "triton", kEnv, &ring, &out));
  EXPECT_NE(out.find("OK"), std::string::npos) << out;
  auto kernels = KernelsByName(ring);
  ASSERT_EQ(kernels.size(), 2u) << out;
  // cuLaunchKernel linked directly, and cuLaunchKernelEx through dlsym on libcuda.so.1's handle.
  ASSERT_EQ(kernels["triton_poi_fused_add_0"].size(), 5u);
  ASSERT_EQ(kernels["triton_red_fused_sum_1"].size(), 3u);
  for (int64_t ns : kernels["triton_poi_fused_add_0"]) EXPECT_NEAR(ns, kAddUs * 1000, 2);
  for (int64_t ns : kernels["triton_red_fused_sum_1"]) EXPECT_NEAR(ns, kSumUs * 1000, 2);
}

TEST(DriverProgramTest, XlaStyleStubsAndGetProcAddressAreRecordedOnce) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(g_runner.RunHooked({g_xla_style, g_cubin, "2", "3", "4"}, "xla", kEnv, &ring, &out));
  EXPECT_NE(out.find("OK"), std::string::npos) << out;
  const double n = 256, bytes = n * n * 4;
  // cuBLAS and NCCL through dlsym on their handles.
  auto gemms = OpsOfKind(ring, OpKind::kMatmul);
  ASSERT_EQ(gemms.size(), 2u) << out;
  for (const OpRecord& g : gemms) {
    EXPECT_EQ(g.m, 256);
    EXPECT_EQ(g.n, 256);
    EXPECT_EQ(g.k, 256);
    EXPECT_NEAR(g.duration_ns, GemmNs(n, n, n), 2);
  }
  auto collectives = OpsOfKind(ring, OpKind::kCollective);
  ASSERT_EQ(collectives.size(), 3u) << out;
  for (const OpRecord& c : collectives) {
    EXPECT_EQ(c.op, static_cast<uint16_t>(format::Operation::kAllReduce));
    EXPECT_EQ(c.bytes, bytes);
  }
  // The driver: a copy and a set through dlsym, launches through cuGetProcAddress's pointer.
  auto copies = OpsOfKind(ring, OpKind::kMemcpy);
  ASSERT_EQ(copies.size(), 1u) << out;
  EXPECT_EQ(copies[0].op, static_cast<uint16_t>(format::Operation::kMemcpyHtoD));
  EXPECT_EQ(copies[0].bytes, bytes);
  EXPECT_NEAR(copies[0].duration_ns, PcieCopyNs(bytes), 2);
  auto sets = OpsOfKind(ring, OpKind::kMemset);
  ASSERT_EQ(sets.size(), 1u) << out;
  EXPECT_EQ(sets[0].bytes, bytes);
  EXPECT_NEAR(sets[0].duration_ns, HbmNs(bytes), 2);
  auto kernels = KernelsByName(ring);
  ASSERT_EQ(kernels.size(), 1u) << out;
  ASSERT_EQ(kernels["triton_poi_fused_add_0"].size(), 4u);
  for (int64_t ns : kernels["triton_poi_fused_add_0"]) EXPECT_NEAR(ns, kAddUs * 1000, 2);
}

TEST(DriverProgramTest, CupyStyleWithoutARuntimeIsTimedWithDriverEvents) {
  FakeDaemon::Ring ring;
  std::string out;
  ASSERT_TRUE(
      g_runner.RunHooked({g_cupy_style, g_cubin, "2", "3", "2"}, "cupy", kEnv, &ring, &out));
  EXPECT_NE(out.find("OK"), std::string::npos) << out;  // no libcudart was loaded
  const double n = 512, bytes = n * n * 4;
  auto gemms = OpsOfKind(ring, OpKind::kMatmul);
  ASSERT_EQ(gemms.size(), 2u) << out;
  for (const OpRecord& g : gemms) {
    EXPECT_EQ(g.m, 512);
    EXPECT_NEAR(g.duration_ns, GemmNs(n, n, n), 2);
  }
  // Copies and the set come from cuGetProcAddress, as a static runtime takes them.
  auto copies = OpsOfKind(ring, OpKind::kMemcpy);
  ASSERT_EQ(copies.size(), 2u) << out;
  EXPECT_EQ(copies[0].op, static_cast<uint16_t>(format::Operation::kMemcpyHtoD));
  EXPECT_EQ(copies[1].op, static_cast<uint16_t>(format::Operation::kMemcpyDtoH));
  for (const OpRecord& c : copies) {
    EXPECT_EQ(c.bytes, bytes);
    EXPECT_NEAR(c.duration_ns, PcieCopyNs(bytes), 2);
  }
  auto sets = OpsOfKind(ring, OpKind::kMemset);
  ASSERT_EQ(sets.size(), 1u) << out;
  EXPECT_NEAR(sets[0].duration_ns, HbmNs(bytes), 2);
  auto kernels = KernelsByName(ring);
  ASSERT_EQ(kernels.size(), 1u) << out;
  ASSERT_EQ(kernels["triton_poi_fused_add_0"].size(), 3u);  // the captured two are not
  for (int64_t ns : kernels["triton_poi_fused_add_0"]) EXPECT_NEAR(ns, kAddUs * 1000, 2);
  // Each replay of the graph of two launches: one op, the two kernels' time.
  auto graphs = OpsOfKind(ring, OpKind::kGraph);
  ASSERT_EQ(graphs.size(), 2u) << out;
  for (const OpRecord& g : graphs) EXPECT_NEAR(g.duration_ns, 2 * kAddUs * 1000, 2);
}

TEST(DriverProgramTest, WithoutTheHookTheProgramRunsTheSame) {
  std::string out_path = testing::TmpDir() + "/plain.out";
  std::string out;
  int rc = testing::ReapProgram(
      testing::SpawnProgram({g_runner.gpusim_run, g_triton_style, g_cubin, "5", "3"}, kEnv,
                            out_path),
      out_path, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("OK"), std::string::npos) << out;
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

int main(int argc, char** argv) {
  std::vector<std::string> p;
  const int rc = xtimer::hook::testing::StartProgramTest(
      &argc, argv, 4,
      "driver_program_test GPUSIM_RUN LIBXTIMER_SO CUBIN TRITON_STYLE XLA_STYLE CUPY_STYLE", &p);
  if (rc >= 0) return rc;
  xtimer::hook::g_runner.gpusim_run = p[0];
  xtimer::hook::g_runner.self = p[1];
  xtimer::hook::g_runner.hook_lib = p[2];
  xtimer::hook::g_cubin = p[3];
  xtimer::hook::g_triton_style = p[4];
  xtimer::hook::g_xla_style = p[5];
  xtimer::hook::g_cupy_style = p[6];
  const int status = RUN_ALL_TESTS();
  rmdir(xtimer::hook::testing::TmpDir().c_str());  // empty by now
  return status;
}
