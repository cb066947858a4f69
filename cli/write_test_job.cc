// Writes cli/readers/test_job.h's job for shell tests and the analyze benchmark:
//   write_test_job DIR [--ranks N] [--nodes N] [--steps N] [--slow-rank R] [--stop-rank R
//                  --stop-step S] [--transfer-factor F] [--gemm-factor F] [--skew-ns NS]
//                  [--slow-factor F] [--noise-seed N] [--pipeline 0|1] [--step-marks 0|1]
//                  [--job LABEL]
//                  [--craft world|rank|job|duration|shape|time --craft-rank R]
// Prints the node directories, one per line.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/readers/test_job.h"

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: write_test_job DIR [--ranks N] [--nodes N] [--steps N] "
                         "[--slow-rank R] [--stop-rank R --stop-step S] [--transfer-factor F] "
                         "[--gemm-factor F] [--skew-ns NS] [--slow-factor F] [--noise-seed N] "
                         "[--pipeline 0|1] [--step-marks 0|1] [--job LABEL]\n");
    return 2;
  }
  xtimer::cli::TestJob job;
  int64_t skew = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--ranks") job.ranks = std::atoi(v);
    else if (a == "--nodes") job.nodes = std::atoi(v);
    else if (a == "--steps") job.steps = std::atoi(v);
    else if (a == "--slow-rank") job.slow_rank = std::atoi(v);
    else if (a == "--stop-rank") job.stop_rank = std::atoi(v);
    else if (a == "--stop-step") job.stop_step = std::atoi(v);
    else if (a == "--transfer-factor") job.transfer_factor = std::atof(v);
    else if (a == "--gemm-factor") job.gemm_factor = std::atof(v);
    else if (a == "--skew-ns") skew = std::atoll(v);
    else if (a == "--slow-factor") job.slow_factor = std::atof(v);
    else if (a == "--noise-seed") job.noise_seed = std::strtoull(v, nullptr, 10);
    else if (a == "--pipeline") job.pipeline = std::atoi(v) != 0;
    else if (a == "--step-marks") job.step_marks = std::atoi(v) != 0;
    else if (a == "--job") job.job = v;
    else if (a == "--craft") job.craft = v;
    else if (a == "--craft-rank") job.craft_rank = std::atoi(v);
    else {
      std::fprintf(stderr, "write_test_job: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (job.ranks <= 0 || job.nodes <= 0 || job.steps <= 0 || job.ranks % job.nodes != 0) {
    std::fprintf(stderr, "write_test_job: RANKS a positive multiple of NODES, STEPS > 0\n");
    return 2;
  }
  for (int n = 0; n < job.nodes; ++n) job.node_skew_ns.push_back(n % 2 ? skew : 0);
  std::string error;
  auto dirs = xtimer::cli::WriteTestJob(job, argv[1], &error);
  if (dirs.empty()) {
    std::fprintf(stderr, "write_test_job: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& d : dirs) std::printf("%s\n", d.c_str());
  return 0;
}
