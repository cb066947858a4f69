// The cost of an NVTX push/pop pair to the application: NVTX v3 alone (no tool: no-ops), and
// with libxtimer.so as the injection library (see nvtx_cost.sh; docs/benchmarks.md).
//   nvtx_bench [Google Benchmark flags]   wall time per pair
//   nvtx_bench --calls=N OP               N pairs of OP, for callgrind (OP: push_pop,
//                                         domain_push_pop)
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

nvtxDomainHandle_t g_domain;
nvtxEventAttributes_t g_attr;

void Setup() {
  g_domain = nvtxDomainCreateA("bench");
  g_attr = nvtxEventAttributes_t{};
  g_attr.version = NVTX_VERSION;
  g_attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  g_attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  g_attr.message.registered = nvtxDomainRegisterStringA(g_domain, "forward");
}

inline void Pair(int op) {
  if (op == 0) {
    nvtxRangePushA("forward_backward_step");
    nvtxRangePop();
  } else {
    nvtxDomainRangePushEx(g_domain, &g_attr);
    nvtxDomainRangePop(g_domain);
  }
}

void BM_PushPop(benchmark::State& state) {
  for (auto _ : state) Pair(0);
}
void BM_DomainPushPopRegistered(benchmark::State& state) {
  for (auto _ : state) Pair(1);
}
BENCHMARK(BM_PushPop)->Threads(1)->Threads(2);
BENCHMARK(BM_DomainPushPopRegistered);

}  // namespace

int main(int argc, char** argv) {
  Setup();
  if (argc == 3 && std::strncmp(argv[1], "--calls=", 8) == 0) {
    const long n = std::atol(argv[1] + 8);
    const int op = std::strcmp(argv[2], "push_pop") == 0 ? 0 : 1;
    for (long i = 0; i < n; ++i) Pair(op);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
