// One rank of a scenario (testing/scenarios.h) in its own process, for nccl_process_test.
//
//   nccl_worker SCENARIO RANK NRANKS UNIQUE_ID_HEX
//
// Prints "PROGRESS <step>" lines as the scenario advances, "VALUE <key>=<number>" for each
// measurement and "FAIL <message>" (stderr) for each failed check; exits 0 when all checks passed.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/gpusim/nccl/testing/scenarios.h"

int main(int argc, char** argv) {
  using namespace xtsim::nccl::testing;
  ncclUniqueId id;
  if (argc != 5 || !IdFromHex(argv[4], &id)) {
    fprintf(stderr, "usage: %s SCENARIO RANK NRANKS UNIQUE_ID_HEX\n", argv[0]);
    return 2;
  }
  int rank = atoi(argv[2]), nranks = atoi(argv[3]);
  int devices = 1;
  cudaGetDeviceCount(&devices);
  cudaSetDevice(rank % (devices > 0 ? devices : 1));  // one GPU per rank, as launchers arrange
  SetProgressCallback([](int, const std::string& step) {
    printf("PROGRESS %s\n", step.c_str());
    fflush(stdout);
  });
  ScenarioResult result = RunScenario(argv[1], rank, nranks, id);
  for (const auto& [key, value] : result.values) printf("VALUE %s=%.9g\n", key.c_str(), value);
  for (const std::string& f : result.failures) fprintf(stderr, "FAIL %s\n", f.c_str());
  fflush(stdout);
  return result.failures.empty() ? 0 : 1;
}
