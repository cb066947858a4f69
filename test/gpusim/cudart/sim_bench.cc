// Host cost of the simulator's hot calls, so that measurements of the hook can subtract it.
//
//   sim_bench                      Google Benchmark: ns per call
//   sim_bench --calls=N OP         runs OP N times and exits (for callgrind: instructions per call
//                                  = (Ir at 2N - Ir at N) / N; see tools/bench/gpusim_cost.sh)
// OP is one of: launch, record, query.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*,
                                       dim3*, dim3*, int*);

namespace {

void KernelStub() {}

struct Fixture {
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  const void* kernel = reinterpret_cast<const void*>(&KernelStub);
  Fixture() {
    // Zero-length kernels keep the simulated tail at the host clock, as on an idle GPU.
    setenv("XTIMER_SIM_KERNEL_TIME_US", "0", 1);
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&KernelStub), nullptr,
                           "_Z10benchKernelv", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&event) != cudaSuccess) {
      fprintf(stderr, "sim_bench: setup failed\n");
      exit(1);
    }
  }
  void Launch() { cudaLaunchKernel(kernel, dim3(1), dim3(128), nullptr, 0, stream); }
  void Record() { cudaEventRecord(event, stream); }
  void Query() { cudaEventQuery(event); }
};

Fixture& F() {
  static Fixture* f = new Fixture();
  return *f;
}

void BM_KernelLaunch(benchmark::State& state) {
  Fixture& f = F();
  for (auto _ : state) f.Launch();
}
BENCHMARK(BM_KernelLaunch);

void BM_EventRecord(benchmark::State& state) {
  Fixture& f = F();
  for (auto _ : state) f.Record();
}
BENCHMARK(BM_EventRecord);

void BM_EventQuery(benchmark::State& state) {
  Fixture& f = F();
  f.Record();
  cudaStreamSynchronize(f.stream);
  for (auto _ : state) f.Query();
}
BENCHMARK(BM_EventQuery);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strncmp(argv[1], "--calls=", 8) == 0) {
    long calls = atol(argv[1] + 8);
    std::string op = argv[2];
    Fixture& f = F();
    f.Record();  // warm every path once
    f.Launch();
    f.Query();
    for (long i = 0; i < calls; ++i) {
      if (op == "launch") {
        f.Launch();
      } else if (op == "record") {
        f.Record();
      } else if (op == "query") {
        f.Query();
      } else {
        fprintf(stderr, "sim_bench: unknown op '%s' (launch, record, query)\n", op.c_str());
        return 2;
      }
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
