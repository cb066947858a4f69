// Scenarios that exercise the simulated NCCL from one rank's point of view, through the public
// CUDA and NCCL APIs only. The same code runs as threads of a test (nccl_thread_test) and as
// separate processes (nccl_worker, spawned by nccl_process_test), so both ways ranks can meet are
// checked with the same expectations.
#ifndef XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIOS_H_
#define XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIOS_H_

#include <nccl.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xtsim {
namespace nccl {
namespace testing {

struct ScenarioResult {
  std::vector<std::string> failures;     // empty when every check passed
  std::map<std::string, double> values;  // measurements for the caller to check (e.g. timings)
};

// Runs scenario `name` as `rank` of `nranks`; all ranks pass the same `id`. Thread-safe: ranks may
// be threads of one process. Unknown names fail.
ScenarioResult RunScenario(const std::string& name, int rank, int nranks, const ncclUniqueId& id);

// Called (from the rank's thread) as long-running scenarios pass milestones, so that a test can see
// how far a rank got before it hung. Pass an empty function to stop.
void SetProgressCallback(std::function<void(int rank, const std::string& step)> callback);

// Hex encoding of an id for command lines.
std::string IdToHex(const ncclUniqueId& id);
bool IdFromHex(const std::string& hex, ncclUniqueId* id);

// Bus factor and algorithm bytes of the model, written independently of the library's table.
double ModelMs(double bytes, double bus_factor, double bw_gbps, double lat_us);

}  // namespace testing
}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIOS_H_
