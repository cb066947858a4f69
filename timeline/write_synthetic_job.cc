// Writes the synthetic job (synthetic_job.h) for shell tests and manual checks.
//   write_synthetic_job DIR RANKS NODES STEPS [--p2p] [--nvtx]
// Prints the node directories, one per line.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "timeline/synthetic_job.h"

int main(int argc, char** argv) {
  xtimer::timeline::SyntheticJob job;
  bool usage = argc < 5;
  for (int i = 5; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--p2p") {
      job.p2p = true;
    } else if (flag == "--nvtx") {
      job.nvtx = true;
    } else {
      usage = true;
    }
  }
  if (usage) {
    std::fprintf(stderr,
                 "usage: write_synthetic_job DIR RANKS NODES STEPS [--p2p] [--nvtx]\n"
                 "  --p2p: pipeline sends between nodes, some receives posted before their send\n"
                 "  --nvtx: nested NVTX ranges, marks and start/end ranges on every rank\n");
    return 2;
  }
  job.ranks = std::atoi(argv[2]);
  job.nodes = std::atoi(argv[3]);
  job.steps = std::atoi(argv[4]);
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
