// Configuration, identity, fault knobs and logging shared by every simulated library.
// Every knob is an XTIMER_SIM_* environment variable, documented in docs/gpusim.md. A malformed
// value is a fatal error with a message naming the variable (a simulator that silently ignores a
// fault knob would make tests pass for the wrong reason).
#ifndef XTIMER_TEST_GPUSIM_COMMON_SIM_ENV_H_
#define XTIMER_TEST_GPUSIM_COMMON_SIM_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xtsim {

// CLOCK_MONOTONIC in nanoseconds.
int64_t NowNs();

// Prints "gpusim: <message>" to stderr and exits with status 2.
[[noreturn]] void Fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints "gpusim: <message>" to stderr.
void Warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints "gpusim: <message>" to stderr when XTIMER_SIM_VERBOSE is set to a non-zero value.
void Debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// The message every unimplemented entry point prints before it returns an error.
void NotImplemented(const char* function);

// Numeric variables; unset or empty gives `def`, anything unparsable is Fatal.
double EnvDouble(const char* name, double def);
int64_t EnvInt(const char* name, int64_t def);

// Gives the calling thread, one that stands for the device (a stream's executor, NCCL's proxy),
// the niceness XTIMER_SIM_DEVICE_NICE asks (unset: nothing changes): a real GPU's work does not
// compete with the host's CPU load, the simulator's threads do. A niceness the process may not
// take (a negative one without CAP_SYS_NICE) is warned about once and ignored.
void TakeDevicePriority();

// The process's global rank: XTIMER_SIM_RANK, else RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
// SLURM_PROCID; -1 when none is set (ranks that are threads of one process).
int SimRank();
// The emulated node of this process: XTIMER_SIM_NODE (default 0).
int SimNode();

// One entry of a list knob "R:A[:B],R:A[:B]...", e.g. XTIMER_SIM_HANG=3:100 or
// XTIMER_SIM_SLOW_RANKS=1:2.5. `b` is NaN when absent.
struct RankSpec {
  int rank;
  double a;
  double b;
};
// Parses a list knob; `min_fields`..`max_fields` numbers follow each rank. Fatal on bad syntax.
std::vector<RankSpec> ParseRankSpecs(const char* name, int min_fields, int max_fields);
// The first entry for `rank` in the list knob, or nullptr.
const RankSpec* FindRankSpec(const std::vector<RankSpec>& specs, int rank);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_COMMON_SIM_ENV_H_
