#include "cli/analysis_args.h"

#include <algorithm>
#include <cstdint>

#include "cli/args.h"

namespace xtimer {
namespace cli {

void AddGroupsFlag(analysis::Groups* groups, std::string* text, const char* effect,
                   CommandLine* cl) {
  const std::string help =
      std::string("parallel layout, e.g. tp2-pp2-dp2 (tp, cp, ep, dp, pp; Megatron order "
                  "tp-cp-ep-dp-pp, the first varying fastest; the sizes multiply to the world "
                  "size): ") + effect;
  cl->Custom("--groups", "LAYOUT", [groups, text](const std::string& t, std::string* expected) {
    std::string error;
    if (!analysis::ParseGroups(t, groups, &error)) {
      *expected = "a layout such as tp2-pp2-dp2 (" + error + ")";
      return false;
    }
    *text = t;
    return true;
  }, help.c_str());
}

void AddHangTimeoutFlag(double* seconds, CommandLine* cl) {
  const analysis::Options defaults;
  const std::string shorter = "shorter for jobs with a steady cadence: " +
                              FormatNumber(defaults.cadence_factor) +
                              " x the typical gap between collectives, at least " +
                              FormatNumber(defaults.min_hang_ns * 1e-9) + " s";
  cl->Number("--hang-timeout", 1, 86400, seconds,
             ("the longest stall that is not a hang " +
              DefaultIs(defaults.hang_timeout_ns * 1e-9, shorter)).c_str())
      .Placeholder("S");
}

void ApplyHangTimeout(double seconds, analysis::Options* options) {
  if (seconds <= 0) return;
  options->hang_timeout_ns = static_cast<int64_t>(seconds * 1e9);
  options->min_hang_ns = std::min(options->min_hang_ns, options->hang_timeout_ns);
}

int CheckGroupsWorld(const char* command, const std::string& text,
                     const analysis::Groups& groups, int world) {
  if (groups.world() == world) return -1;
  return BadArg(command, "--groups " + text + " describes " + std::to_string(groups.world()) +
                             " ranks; the job has " + std::to_string(world));
}

}  // namespace cli
}  // namespace xtimer
