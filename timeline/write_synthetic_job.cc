// Writes the synthetic job (synthetic_job.h) for shell tests and manual checks.
//   write_synthetic_job DIR RANKS NODES STEPS [--p2p]
// Prints the node directories, one per line.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "timeline/synthetic_job.h"

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6 || (argc == 6 && std::string(argv[5]) != "--p2p")) {
    std::fprintf(stderr,
                 "usage: write_synthetic_job DIR RANKS NODES STEPS [--p2p]\n"
                 "  --p2p: pipeline sends between nodes, some receives posted before their send\n");
    return 2;
  }
  xtimer::timeline::SyntheticJob job;
  job.ranks = std::atoi(argv[2]);
  job.nodes = std::atoi(argv[3]);
  job.steps = std::atoi(argv[4]);
  job.p2p = argc == 6;
  if (job.ranks <= 0 || job.nodes <= 0 || job.steps <= 0 || job.ranks % job.nodes != 0) {
    std::fprintf(stderr, "write_synthetic_job: RANKS, NODES and STEPS must be positive, and "
                         "RANKS a multiple of NODES\n");
    return 2;
  }
  for (int n = 0; n < job.nodes; ++n) job.node_skew_ns.push_back((n * 7919 % 2001 - 1000) * 1000);
  std::string error;
  auto dirs = xtimer::timeline::WriteSyntheticJob(job, argv[1], &error);
  if (dirs.empty()) {
    std::fprintf(stderr, "write_synthetic_job: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& d : dirs) std::printf("%s\n", d.c_str());
  return 0;
}
